"""The GRPO training loop.

One step, as in the data flow of ``docs/design.md``, each stage one call into the
module that owns it::

    rollout.collect   prompts (curriculum) -> sampler: G completions each -> rewards
                      -> advantages (Rust) -> curriculum update: an immutable Batch
    update.apply      the batch shaped once -> token log-probs -> policy loss (+ KL)
                      -> optimizer step
    sampler.update_weights

:meth:`Trainer.step` is that sequence. With ``async_rollouts``, :meth:`Trainer.train`
has a :class:`~grpo_fast.train.async_rollouts.RolloutProducer` run ``rollout.collect``
for the next batches in a background thread while ``update.apply`` steps. The
trainer holds the run's parts, built by :mod:`grpo_fast.train.build` from the
:class:`~grpo_fast.train.config.TrainerConfig`; the rest here is bookkeeping:
evaluation, metrics, the loop, checkpoints (:mod:`grpo_fast.train.state`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import signal
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import transformers

from grpo_fast.errors import InvalidInputError, TrainingInterrupted
from grpo_fast.run_rewards import RewardLike, RunRewards
from grpo_fast.sampling import HFSampler, SamplingParams, truncated
from grpo_fast.tools.rollouts import RolloutFuncSampler, build_tools, environment_rewards
from grpo_fast.train import rollout, state, update
from grpo_fast.train.async_rollouts import RolloutProducer
from grpo_fast.train.build import (
    build_model,
    build_optimizer,
    build_prompt_order,
    build_sampler,
    build_scheduler,
    fit_max_steps,
    fit_prompts,
    load_rows,
    sampling_params,
)
from grpo_fast.train.checkpoint import (
    check_resume_config,
    find_resume,
    lock_output_dir,
    prepare_output_dir,
    rng_state,
    set_rng_state,
    unlock_output_dir,
)
from grpo_fast.train.config import (
    LR_SCHEDULES,
    SAMPLER_CORRECTIONS,
    TrainerConfig,
    build_process_reward,
    sampler_correction,
)
from grpo_fast.train.data import DATA_DIR, plain_prompt_warning, render_prompts
from grpo_fast.train.devices import (
    check_device,
    device_type,
    resolve_device,
    set_cpu_threads,
    set_seed,
)
from grpo_fast.train.distributed import Distributed, wrap_distributed
from grpo_fast.train.interrupt import StopRequest
from grpo_fast.train.modeling import load_tokenizer
from grpo_fast.train.rollout import Batch, completion_rows, nanmean
from grpo_fast.train.tracking import NoSignalWatch, SayOnce, log_line, read_metrics, say

__all__ = [
    "DATA_DIR",
    "LR_SCHEDULES",
    "SAMPLER_CORRECTIONS",
    "Trainer",
    "TrainerConfig",
    "build_optimizer",
    "build_process_reward",
    "build_prompt_order",
    "build_sampler",
    "build_scheduler",
    "check_device",
    "resolve_device",
    "sampler_correction",
    "set_cpu_threads",
]


class Trainer:
    """GRPO on a causal LM (a local directory or a hub id), rewarded by
    :mod:`grpo_fast.rewards`.

    Parameters
    ----------
    config : TrainerConfig
    model, tokenizer : optional
        Already-loaded transformers objects (default: loaded from ``config.model``);
        a given model is set up as a loaded one is (dtype, checkpointing, LoRA:
        :func:`~grpo_fast.train.modeling.prepare_model`).
    sampler : Sampler, optional
        Default: :func:`build_sampler`.
    train_rows, eval_rows : list of dict, optional
        The data itself (``prompt`` and ``answer`` per row, other columns kept),
        instead of ``config.train_file`` / ``eval_file``.
    rewards : optional
        What to reward (default: ``config.reward``): reward specs,
        ``rewards.combine(...)``, TRL-style functions ``f(completions,
        **columns)`` (or ``(f, weight)``), names, or a list of them; see
        :class:`~grpo_fast.run_rewards.RunRewards`. Each is logged as
        ``rewards/<name>/mean`` and ``rewards/<name>/std``, as TRL logs them.

    Examples
    --------
    >>> from grpo_fast import rewards
    >>> cfg = TrainerConfig(max_steps=100, output_dir="runs/x")  # doctest: +SKIP
    >>> history = Trainer(cfg, rewards=[rewards.MathReward()]).train()  # doctest: +SKIP
    """

    def __init__(
        self,
        config: TrainerConfig,
        *,
        model: Any = None,
        tokenizer: Any = None,
        sampler: Any = None,
        rewards: RewardLike | Sequence[RewardLike] | None = None,
        train_rows: Sequence[dict[str, Any]] | None = None,
        eval_rows: Sequence[dict[str, Any]] | None = None,
        tools: Sequence[Callable[..., Any]] | None = None,
        environment_factory: Callable[[], Any] | None = None,
        rollout_func: Callable[[list[str], Any], dict[str, Any]] | None = None,
    ) -> None:
        config.validate()
        self.dist = Distributed.from_env(device_type(config.device))
        _check_async(config, self.dist)
        self.device = resolve_device(config.device, self.dist)
        self.config = cfg = dataclasses.replace(
            config, device=str(self.device), sampler_correction=sampler_correction(config)
        )
        self.loss_options = cfg.loss_options()
        self.is_main = self.dist.is_main
        self.out = Path(cfg.output_dir)
        # Checked before anything loads: a refused directory or a bad checkpoint costs nothing.
        prepare_output_dir(self.out, resume=cfg.resume, overwrite=cfg.overwrite)
        resume = find_resume(self.out, cfg.resume, self.dist)
        # Every rank draws different samples; prompt order is shared (its own generator).
        set_seed(cfg.seed + self.dist.rank)

        self.train_rows, self.eval_rows = load_rows(cfg, self.dist.world, train_rows, eval_rows)
        self.config = cfg = fit_max_steps(cfg, len(self.train_rows), self.dist.world)
        # Compared before anything loads: a resume that would mix two runs costs nothing.
        # Options handed over as objects are not the config's to compare.
        given = {
            "reward": rewards,
            "train_file": train_rows,
            "eval_file": eval_rows,
            "tool": tools or environment_factory,
        }
        self.resume_changes = _resume_changes(cfg, resume, {**given, "model": model})
        self.tools = build_tools(cfg, tools, environment_factory)
        self.rewards = RunRewards.build(
            [
                *(list(cfg.reward) if rewards is None else _as_list(rewards)),
                *environment_rewards(environment_factory),
            ],
            max_new_tokens=cfg.max_new_tokens,
        )
        self.process = build_process_reward(cfg)
        self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(cfg.model)
        self.train_prompts, self.eval_prompts = self._prompts(model)
        self.model, self.precision, self.ref_model = build_model(cfg, model, self.device)
        # The policy under DDP / FSDP2 (the optimizer then takes FSDP2's shards).
        self.policy = wrap_distributed(self.model, cfg.parallel, self.dist)
        self.reference = None if self.ref_model is None else self.policy.reference(self.ref_model)
        self.params = sampling_params(cfg)
        self.sampler = (
            sampler
            if sampler is not None
            else build_sampler(cfg, self.model, self.tokenizer, sharded=self.policy.sharded)
        )
        if rollout_func is not None:  # the user drives generation (TRL's rollout_func)
            self.sampler = RolloutFuncSampler(rollout_func, self, self.sampler)
        elif self.tools is not None:  # multi-turn rollouts around the backend
            self.sampler = self.tools.wrap(self.sampler, self.tokenizer)
        self.optimizer = build_optimizer(cfg, self.model)
        self.scheduler = build_scheduler(cfg, self.optimizer)
        self.prompts = build_prompt_order(cfg, len(self.train_rows))
        self.step_count = 0
        self._in_step = False
        # Step 0 (the model before any update) is logged once per trainer: a train()
        # interrupted before step 1 and called again does not log it a second time.
        self._step0_logged = False
        self.last_batch: Batch | None = None
        # Asynchronous rollouts: the random and prompt-order states right after the last
        # trained batch was drawn (what a checkpoint stores; None: the current ones).
        self.rollout_state: dict[str, Any] | None = None
        self._eval_sampler: Any = None
        self.last_record: dict[str, Any] | None = None  # kept in checkpoints (a cut line's repair)
        self.once = SayOnce(quiet=not self.is_main)
        self._saved_step: int | None = None
        if resume is not None:
            state.load(self, resume)
            self._saved_step = self.step_count
        else:  # a vLLM engine or server may hold other weights (a given model, a running server)
            self.sampler.update_weights(self.model)
        self.metrics = state.open_run(self, resume) if self.is_main else None
        self.dist.barrier()

    def _prompts(self, model: Any) -> tuple[list[str], list[str]]:
        """The text the sampler sees (conversations through the tokenizer's chat
        template), cut to ``max_prompt_length`` and checked with the completion against
        the model's positions before its weights load."""
        cfg = self.config
        template: dict[str, Any] = {
            "system_prompt": cfg.system_prompt,
            "chat_template": cfg.chat_template,
        }
        warning = plain_prompt_warning(self.train_rows, self.tokenizer, **template)
        if warning and self.is_main:
            say(warning)
        schemas = None if self.tools is None else self.tools.schemas
        rendered = {
            what: render_prompts(rows, self.tokenizer, **template, tools=schemas, what=what)
            for what, rows in (("train", self.train_rows), ("eval", self.eval_rows))
        }
        if schemas and self.is_main:
            plain = render_prompts(self.train_rows[:1], self.tokenizer, **template)
            if plain == rendered["train"][:1] and not isinstance(self.train_rows[0]["prompt"], str):
                say(
                    "the chat template ignores tools= (the prompts do not show the tools' "
                    "schemas; SmolLM2's is one such): the model learns of the tools only from "
                    "the prompt's own text; docs/tools.md"
                )
        fitted = fit_prompts(cfg, self.tokenizer, model, rendered, verbose=self.is_main)
        return fitted["train"], fitted["eval"]

    # ------------------------------------------------------------------ the step
    def step(self) -> dict[str, Any]:
        """One generation batch: sample -> score -> advantages (-> curriculum) -> loss ->
        optimizer; the sampler then gets the new weights."""
        t0 = time.perf_counter()
        batch, stats = rollout.collect(self)
        t1 = time.perf_counter()
        losses = update.apply(self, batch)
        t_push = time.perf_counter()
        self.sampler.update_weights(self.model)
        t2 = time.perf_counter()
        self.step_count += 1
        return {**self._record(batch, stats, losses, t0, t1, t2), "time_weight_push": t2 - t_push}

    def _async_step(self, producer: RolloutProducer) -> dict[str, Any]:
        """A step on the producer's next batch (:mod:`grpo_fast.train.async_rollouts`):
        the weights change under its lock, then the new version is published."""
        t0 = time.perf_counter()
        item = producer.get(self.step_count)
        t1 = time.perf_counter()
        with producer.weights_lock:
            losses = update.apply(self, item.batch)
            self.step_count += 1
            producer.publish(self.step_count)
        t2 = time.perf_counter()
        self.rollout_state = {"rng": item.rng, "prompts": item.prompts}
        staleness = float(self.step_count - 1 - item.version)
        return {
            **self._record(item.batch, item.stats, losses, t0, t1, t2),
            # TRL's AsyncGRPOTrainer's names.
            "sample/staleness_mean": staleness,
            "sample/staleness_max": staleness,
            "sample/dropped_stale_total": producer.dropped,
            "sample/rollout_queue_size": producer.queue_size(),
            "perf/rollout_wait_s": t1 - t0,
            "rollout/backpressure_s": producer.backpressure(),
        }

    def _record(
        self,
        batch: Batch,
        stats: dict[str, Any],
        losses: dict[str, Any],
        t0: float,
        t1: float,
        t2: float,
    ) -> dict[str, Any]:
        self.last_batch = batch
        lengths = [len(c) for c in batch.completions.completion_ids]
        n_tokens = sum(lengths) + sum(len(p) for p in batch.completions.prompt_ids)
        every = self.dist.gather(np.array(lengths, np.float64))  # every rank's, as TRL logs
        # Nothing but whitespace (or no token at all): a chat model prompted without its
        # template, a broken stop token.
        empty = self.dist.gather(np.array([not t.strip() for t in batch.completions.texts], float))
        empty_ratio = float(empty.mean()) if len(empty) else 0.0
        if empty_ratio > 0.5:
            self.once(
                "empty",
                f"step {self.step_count}: {empty_ratio:.0%} of the completions are empty "
                "(completions/empty_ratio); plain-text prompts to a chat model? see "
                "--chat-template",
            )
        return {
            "step": self.step_count,
            **stats,
            **losses,
            **self._episode_stats(batch),
            # TRL's names (grpo_fast.train.tracking: LEGACY_NAMES lists the older ones).
            "completions/mean_length": float(every.mean()) if len(every) else 0.0,
            "completions/min_length": float(every.min()) if len(every) else 0.0,
            "completions/max_length": float(every.max()) if len(every) else 0.0,
            "completions/empty_ratio": empty_ratio,
            "lr": self.scheduler.get_last_lr()[0],
            "tokens_per_s": n_tokens * self.dist.world / max(t2 - t0, 1e-9),
            "time_step": t2 - t0,
            "time_loss": t2 - t1,
        }

    def _episode_stats(self, batch: Batch) -> dict[str, float]:
        """Tool use of the step's rollouts, every rank's: TRL's ``tools/call_frequency``
        (calls per rollout) and ``tools/failure_frequency`` (failed calls per call), and
        ours: the share of rollouts that call a tool, errors, turns, and rollouts a limit
        ended while they were calling tools (``--max-tool-calls``, the token budget)."""
        ep = batch.completions.episodes
        if ep is None:
            return {}
        calls = self.dist.gather(np.array(ep.tool_calls, np.float64))
        errors = self.dist.gather(np.array(ep.tool_errors, np.float64))
        turns = self.dist.gather(np.array(ep.turns, np.float64))
        cut = self.dist.gather(np.array(ep.cut, np.float64))
        if not len(calls):
            return {}
        return {
            "tools/call_frequency": float(calls.mean()),
            "tools/failure_frequency": float(errors.sum() / calls.sum()) if calls.sum() else 0.0,
            "tools/episodes_with_call": float((calls > 0).mean()),
            "tools/errors": float(errors.sum()),
            "tools/turns_mean": float(turns.mean()),
            "tools/cut_ratio": float(cut.mean()),
        }

    @property
    def state(self) -> transformers.TrainerState:
        """Where training is, as TRL's reward functions get it (``trainer_state``): the
        steps done (``global_step``), the epochs (a fraction: prompts drawn over
        training rows) and ``max_steps``."""
        cfg = self.config
        drawn = self.step_count * cfg.prompts_per_step * self.dist.world
        return transformers.TrainerState(
            global_step=self.step_count,
            epoch=drawn / len(self.train_rows),
            max_steps=cfg.max_steps,
        )

    def rollout(self) -> tuple[Batch, dict[str, Any]]:
        """The first half of a step (:func:`grpo_fast.train.rollout.collect`)."""
        return rollout.collect(self)

    def update(self, batch: Batch) -> dict[str, Any]:
        """The second half (:func:`grpo_fast.train.update.apply`)."""
        return update.apply(self, batch)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, float]:
        """Greedy decoding on the held-out rows (with several processes, every rank
        decodes its share; all must call this).

        ``eval_accuracy``: the share whose first reward is >= 1 (the default
        ``math``: correct); ``eval_reward``: the mean total reward. NaN
        without an eval file.
        """
        if not self.eval_rows:
            return {"eval_accuracy": float("nan")}
        greedy = SamplingParams(max_new_tokens=self.config.max_new_tokens, temperature=0.0)
        mine = slice(self.dist.rank, None, self.dist.world)
        rows, prompts = self.eval_rows[mine], self.eval_prompts[mine]
        with self.precision.autocast():
            sampler = self._eval_sampler or self.sampler
            extra = {"rows": rows} if getattr(sampler, "wants_rows", False) else {}
            comp = self.policy.with_full_weights(
                lambda: sampler.sample(prompts, 1, greedy, **extra) if prompts else None
            )
        first: list[float] = []
        total: list[float] = []
        if comp is not None:
            cut = truncated(comp, self.tokenizer.eos_token_id, self.config.max_new_tokens)
            scores = self.rewards.score(
                comp.texts,
                rollout.with_environments(rows, comp),
                completion_ids=comp.completion_ids,
                truncated=cut,
                # transformers' TrainerState imports peft: built for functions only.
                trainer_state=self.state if self.rewards.has_functions else None,
            )
            first = scores.columns[self.rewards.names[0]].tolist()
            total = scores.total.tolist()
        return {
            "eval_accuracy": float(np.mean(np.array(self.dist.gather_lists(first)) >= 1.0)),
            "eval_reward": nanmean(np.array(self.dist.gather_lists(total))),
        }

    # ------------------------------------------------------------------ the loop
    def train(self) -> list[dict[str, Any]]:
        """Run until ``max_steps``; returns the metric records of this process's run.

        With ``async_rollouts``, a :class:`~grpo_fast.train.async_rollouts.RolloutProducer`
        samples the next batches meanwhile (only here: :meth:`step` stays synchronous).

        SIGINT (Ctrl-C) or SIGTERM, when this runs in the main thread, ends the
        current step, writes a checkpoint and raises
        :class:`~grpo_fast.errors.TrainingInterrupted`; a second one stops at once.
        """
        with self._running() as stop:
            if not self.config.async_rollouts:
                return self._train_loop(stop)
            if self.rollout_state is not None:  # a second train(): on from the last trained batch
                self.prompts.load_state_dict(self.rollout_state["prompts"])
                set_rng_state(self.rollout_state["rng"])
            else:
                # Before the producer draws: a train() stopped before its first trained
                # batch goes on from here, not from where the producer had drawn to.
                self.rollout_state = {
                    "rng": rng_state(),
                    "prompts": copy.deepcopy(self.prompts.state_dict()),
                }
            if self.config.sampler != "hf":  # the server is some versions behind: evaluate here
                self._eval_sampler = HFSampler(self.model, self.tokenizer, logprobs=False)
                if self.tools is not None:
                    self._eval_sampler = self.tools.wrap(self._eval_sampler, self.tokenizer)
            with RolloutProducer(self) as producer:
                return self._train_loop(stop, producer)

    @contextlib.contextmanager
    def _running(self) -> Iterator[StopRequest]:
        """Signals caught, transformers' own bars off (shard writing would break through
        the training bar), trackers started (one that cannot start fails before any
        work); all undone afterwards."""

        # The step a signal lets finish: the one running, or the one just done (its
        # evaluation and logging) between steps.
        def finishing() -> int:
            return self.step_count + int(self._in_step)

        with StopRequest(finishing, done=lambda: self.step_count, quiet=not self.is_main) as stop:
            bars = transformers.utils.logging.is_progress_bar_enabled()
            transformers.utils.logging.disable_progress_bar()
            try:
                if self.is_main:  # the directory is this run's while it trains
                    lock_output_dir(self.out)
                if self.metrics is not None:
                    self.metrics.open()
                yield stop
            finally:
                if bars:
                    transformers.utils.logging.enable_progress_bar()
                if self.metrics is not None:
                    self.metrics.close()
                if self.is_main:
                    unlock_output_dir(self.out)

    def _train_loop(
        self, stop: StopRequest, producer: RolloutProducer | None = None
    ) -> list[dict[str, Any]]:
        from tqdm.auto import tqdm

        cfg = self.config
        history: list[dict[str, Any]] = []
        no_signal = NoSignalWatch()
        if self.step_count == 0 and not self._step0_logged:
            history.append(self._log({"step": 0, **self.evaluate()}))
            self._step0_logged = True
        bar = tqdm(
            total=cfg.max_steps,
            initial=self.step_count,
            disable=not (cfg.progress and self.is_main),
            desc="grpo",
            dynamic_ncols=True,
        )
        pace = _Pace(self.step_count)
        while self.step_count < cfg.max_steps:
            if self.dist.all_min(int(stop.signal is None)) == 0:  # a signal on any rank
                bar.close()
                raise self._interrupted(stop.signal)
            self._in_step = True
            try:
                record = self.step() if producer is None else self._async_step(producer)
            finally:
                self._in_step = False
            last = self.step_count == cfg.max_steps
            if last or (cfg.eval_every and self.step_count % cfg.eval_every == 0):
                record.update(self.evaluate())
            history.append(self._log(record))
            self._report(record, bar, pace(self.step_count), last=last)
            warning = no_signal.update(self.last_batch.advantages, reward_mean=record.get("reward"))
            if warning and self.is_main:
                say(warning)
            if last or (cfg.save_every and self.step_count % cfg.save_every == 0):
                self.save_checkpoint()
        bar.close()
        return history

    def _report(self, record: dict[str, Any], bar: Any, pace: float, *, last: bool) -> None:
        """A step's progress: the bar, a plain-text line every ``logging_steps`` where no
        bar is seen (stdout not a terminal: CI, nohup), ``log_completions``."""
        cfg = self.config
        bar.update(1)
        reward = record["reward"]
        post = {"reward": f"{reward:.2f}" if np.isfinite(reward) else "n/a"}
        if np.isfinite(record.get("eval_accuracy", np.nan)):  # nan: no eval set
            post["eval"] = f"{record['eval_accuracy']:.3f}"
        bar.set_postfix(post)
        if not (last or self.step_count % cfg.logging_steps == 0):
            return
        if self.is_main and not (cfg.progress and sys.stdout.isatty()):
            print(log_line(record, cfg.max_steps, pace), flush=True)
        if cfg.log_completions and self.metrics is not None:
            self.metrics.log_completions(
                self.step_count, completion_rows(self.last_batch, self.train_prompts)
            )

    def _interrupted(self, signum: int | None) -> TrainingInterrupted:
        """Checkpoint the finished steps (step 0 needs none: ``--resume auto`` then starts
        over) and say how to go on."""
        path = None
        if self.step_count > 0:
            if self._saved_step != self.step_count:
                self.save_checkpoint()
            path = self.out / "checkpoints" / f"step-{self.step_count:07d}"
        return TrainingInterrupted(self.step_count, signum or signal.SIGINT, path)

    def _log(self, record: dict[str, Any]) -> dict[str, Any]:
        self.last_record = record
        if self.metrics is not None:
            self.metrics.write(record)
            if self.config.plot and "eval_accuracy" in record:
                from grpo_fast.train.plot import plot_curves

                plot_curves(read_metrics(self.metrics.path), self.out / "curves.png")
        return record

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        """Write ``checkpoints/step-N`` (:func:`grpo_fast.train.state.save`)."""
        path = state.save(self)
        self._saved_step = self.step_count
        return path


class _Pace:
    """Seconds per step since the loop started (the step-0 evaluation left out)."""

    def __init__(self, first_step: int) -> None:
        self.start, self.first = time.perf_counter(), first_step

    def __call__(self, step: int) -> float:
        return (time.perf_counter() - self.start) / max(step - self.first, 1)


def _check_async(config: TrainerConfig, dist: Distributed) -> None:
    if config.async_rollouts and dist.enabled:
        raise InvalidInputError(
            "--async-rollouts runs in one process: the producer thread would need every "
            "rank's sampling and weight pushes kept in step; train without it under "
            "torchrun"
        )


def _resume_changes(cfg: TrainerConfig, resume: Path | None, handed: dict[str, Any]) -> list[str]:
    """The options a resume changes (:func:`check_resume_config`); those handed to the
    Trainer as objects (``handed``: not None) are not compared."""
    if resume is None:
        return []
    given = [name for name, value in handed.items() if value is not None]
    return check_resume_config(resume, dataclasses.asdict(cfg), force=cfg.resume_force, given=given)


def _as_list(rewards: Any) -> list[Any]:
    """A run's rewards as a list (one reward, or a list of them)."""
    return list(rewards) if isinstance(rewards, list | tuple) else [rewards]
