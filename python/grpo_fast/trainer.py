"""The GRPO training loop.

One step, as in the data flow of ``docs/design.md``::

    prompts (curriculum) -> sampler: G completions each -> rewards (columns + total)
      -> advantages (Rust) -> token log-probs -> clipped policy loss (+ KL)
      -> optimizer step -> curriculum update

:meth:`Trainer.step` is that sequence, top to bottom: :meth:`Trainer.rollout`
(sample, score, advantages, an immutable :class:`~grpo_fast.rollout.Batch`)
then :meth:`Trainer.update` (log-probs, :func:`~grpo_fast.loss.policy_loss`,
optimizer). The parts come from small builders (:func:`build_optimizer`,
:func:`build_scheduler`, :func:`build_sampler`, ...); the rest is
bookkeeping: evaluation, metrics, checkpoints.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import random
import shutil
import time
import typing
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import transformers

import grpo_fast
from grpo_fast.advantages import ESTIMATORS, SCALES
from grpo_fast.curriculum import Curriculum, UniformPrompts
from grpo_fast.data import DATA_DIR, check_tasks, read_tasks
from grpo_fast.distributed import Distributed
from grpo_fast.errors import InvalidInputError
from grpo_fast.loss import KL_ESTIMATORS, LOSS_TYPES, policy_loss
from grpo_fast.metrics import MetricsWriter, read_metrics
from grpo_fast.modeling import Packed, completion_logprobs, load_model, load_tokenizer, pack
from grpo_fast.names import STEP_SPLITS
from grpo_fast.rollout import Batch, RewardLike, RunRewards
from grpo_fast.sampling import HFSampler, SamplingParams, VLLMSampler
from grpo_fast.steps import ProcessReward, check_steps

__all__ = [
    "DATA_DIR",
    "Trainer",
    "TrainerConfig",
    "build_optimizer",
    "build_process_reward",
    "build_prompt_order",
    "build_sampler",
    "build_scheduler",
]

# transformers.get_scheduler's names for the schedules after warmup.
_SCHEDULERS = {"constant": "constant_with_warmup", "linear": "linear", "cosine": "cosine"}
LR_SCHEDULES = tuple(_SCHEDULERS)


def _doc(text: str) -> Any:
    return {"help": text}


@dataclass
class TrainerConfig:
    """Every option of a training run (each one is a ``grpo-fast train`` flag).

    The defaults train the embedded tiny model on 2-digit addition on the CPU.
    Choices are ``Literal`` types: the command line, config files and
    :meth:`validate` read them from here.
    """

    # What to train on.
    model: str = field(
        default=str(DATA_DIR / "tiny_adder"),
        metadata=_doc("local transformers causal-LM directory (default: the embedded tiny model)"),
    )
    train_file: str = field(
        default=str(DATA_DIR / "addition_train.jsonl"),
        metadata=_doc("JSONL with 'prompt' and 'answer' columns"),
    )
    eval_file: str | None = field(
        default=str(DATA_DIR / "addition_eval.jsonl"),
        metadata=_doc("held-out JSONL with 'prompt' and 'answer' (none: skip evaluation)"),
    )
    reward: tuple[str | dict[str, Any], ...] = field(
        default=("math",),
        metadata={
            "help": "reward NAME[:WEIGHT], repeatable (--reward math --reward format:0.5): math, "
            "exact, choice, format, overlong, or a dotted path to a reward spec or TRL-style "
            "function",
            "metavar": "NAME[:WEIGHT]",
        },
    )
    output_dir: str = field(
        default="runs/demo",
        metadata=_doc("where metrics.jsonl, curves.png and checkpoints/ go"),
    )
    # Batch shape.
    max_steps: int = field(default=1000, metadata=_doc("generation batches to train on"))
    prompts_per_step: int = field(default=8, metadata=_doc("prompts per step (per rank)"))
    num_generations: int = field(default=8, metadata=_doc("group size G: samples per prompt"))
    # Sampling.
    sampler: Literal["hf", "vllm"] = field(default="hf", metadata=_doc("generation backend"))
    max_new_tokens: int = field(default=4, metadata=_doc("longest completion, EOS included"))
    temperature: float = field(default=1.0, metadata=_doc("sampling temperature"))
    top_p: float = field(default=1.0, metadata=_doc("nucleus sampling mass (1 = off)"))
    top_k: int = field(default=0, metadata=_doc("top-k sampling (0 = off)"))
    # Advantages.
    estimator: Literal[ESTIMATORS] = field(  # type: ignore[valid-type]
        default="grpo", metadata=_doc("advantage estimator (grpo_fast.compute_advantages)")
    )
    scale: Literal[SCALES] = field(  # type: ignore[valid-type]
        default="group", metadata=_doc("advantage std scaling")
    )
    process_reward: str | None = field(
        default=None,
        metadata=_doc(
            "step rewards turned into token advantages added to the outcome ones (process "
            "supervision): 'arithmetic' (grpo_fast.check_steps) or a dotted path to a step scorer"
        ),
    )
    process_reward_weight: float = field(
        default=1.0, metadata=_doc("weight of the process advantages")
    )
    process_split: Literal[STEP_SPLITS] = field(  # type: ignore[valid-type]
        default="lines", metadata=_doc("how a completion splits into steps")
    )
    process_split_pattern: str | None = field(
        default=None, metadata=_doc("the regex between steps, with --process-split regex")
    )
    # Loss.
    loss_type: Literal[LOSS_TYPES] = field(  # type: ignore[valid-type]
        default="grpo", metadata=_doc("loss aggregation (grpo_fast.loss.policy_loss)")
    )
    eps_low: float = field(default=0.2, metadata=_doc("lower clip range of the ratio"))
    eps_high: float = field(default=0.2, metadata=_doc("upper clip range (DAPO clip-higher: 0.28)"))
    beta: float = field(
        default=0.0, metadata=_doc("KL penalty weight; > 0 loads a frozen reference model")
    )
    kl: Literal[KL_ESTIMATORS] = field(  # type: ignore[valid-type]
        default="k3", metadata=_doc("KL estimator")
    )
    share_prompt_prefix: bool = field(
        default=True,
        metadata=_doc("run each prompt once per group and share its KV cache with its G samples"),
    )
    num_iterations: int = field(
        default=1, metadata=_doc("optimizer passes over each generation batch (old log-probs kept)")
    )
    # Optimisation.
    optimizer: Literal["adamw", "sgd"] = field(default="adamw", metadata=_doc("optimizer"))
    learning_rate: float = field(default=3e-5, metadata=_doc("peak learning rate"))
    lr_schedule: Literal[LR_SCHEDULES] = field(  # type: ignore[valid-type]
        default="constant", metadata=_doc("learning rate after warmup")
    )
    warmup_steps: int = field(default=0, metadata=_doc("linear warmup, in optimizer steps"))
    weight_decay: float = field(default=0.0, metadata=_doc("AdamW weight decay"))
    adam_beta1: float = field(default=0.9, metadata=_doc("AdamW beta1"))
    adam_beta2: float = field(default=0.99, metadata=_doc("AdamW beta2"))
    max_grad_norm: float = field(default=1.0, metadata=_doc("gradient clipping (0 = off)"))
    grad_accum_steps: int = field(
        default=1, metadata=_doc("micro-batches per optimizer step (splits the batch's rows)")
    )
    # Prompt selection.
    curriculum: bool = field(
        default=False, metadata=_doc("draw prompts with weight p(1-p) of their solve rate")
    )
    curriculum_floor: float = field(default=0.05, metadata=_doc("smallest curriculum weight"))
    dynamic_sampling: bool = field(
        default=False, metadata=_doc("DAPO: drop zero-variance groups and refill the batch")
    )
    max_refill_rounds: int = field(default=3, metadata=_doc("extra sampling rounds per step"))
    # Evaluation, logging, checkpoints.
    eval_every: int = field(default=100, metadata=_doc("evaluate every N steps (0 = start/end)"))
    eval_size: int = field(default=500, metadata=_doc("held-out prompts per evaluation"))
    save_every: int = field(default=0, metadata=_doc("checkpoint every N steps (0 = at the end)"))
    keep_checkpoints: int = field(default=2, metadata=_doc("newest checkpoints kept"))
    resume: str | None = field(
        default=None,
        metadata=_doc("checkpoint dir to resume from, or 'auto' (newest in output_dir)"),
    )
    seed: int = field(default=0, metadata=_doc("seed of prompt order, sampling and init"))
    device: str = field(default="auto", metadata=_doc("'auto', 'cpu', 'cuda', 'cuda:1', ..."))
    torch_threads: int = field(
        default=0,
        metadata=_doc(
            "torch CPU threads (0 = auto: 1 for a model under 10M parameters on the CPU)"
        ),
    )
    progress: bool = field(default=True, metadata=_doc("show a progress bar"))
    plot: bool = field(default=True, metadata=_doc("write curves.png at each evaluation"))

    def __post_init__(self) -> None:
        # One reward given alone (``reward="math"``) is a list of one.
        if isinstance(self.reward, (str, dict)):
            self.reward = (self.reward,)
        elif isinstance(self.reward, list):
            self.reward = tuple(self.reward)

    def validate(self) -> None:
        """Raise :class:`InvalidInputError` saying what to fix."""

        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise InvalidInputError(msg)

        for name, hint in typing.get_type_hints(type(self)).items():
            if typing.get_origin(hint) is Literal:
                allowed = typing.get_args(hint)
                value = getattr(self, name)
                need(value in allowed, f"{name} must be one of {allowed}, got {value!r}")
        need(
            self.num_generations >= 2,
            f"num_generations (group size) must be >= 2 for group-relative advantages, "
            f"got {self.num_generations}",
        )
        for name in ("max_steps", "prompts_per_step", "max_new_tokens", "num_iterations"):
            need(getattr(self, name) >= 1, f"{name} must be >= 1, got {getattr(self, name)}")
        need(self.grad_accum_steps >= 1, f"grad_accum_steps must be >= 1: {self.grad_accum_steps}")
        need(
            (self.prompts_per_step * self.num_generations) % self.grad_accum_steps == 0,
            f"prompts_per_step * num_generations ({self.prompts_per_step * self.num_generations})"
            f" must be divisible by grad_accum_steps ({self.grad_accum_steps})",
        )
        need(self.learning_rate > 0, f"learning_rate must be > 0, got {self.learning_rate}")
        need(self.beta >= 0, f"beta must be >= 0, got {self.beta}")
        need(self.eps_low >= 0 and self.eps_high >= 0, "eps_low and eps_high must be >= 0")
        need(self.temperature > 0, f"temperature must be > 0 for training: {self.temperature}")
        for name in ("eval_every", "save_every", "max_refill_rounds", "torch_threads"):
            need(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
        need(bool(self.reward), "reward: name at least one reward (e.g. 'math')")
        RunRewards.build(list(self.reward), max_new_tokens=self.max_new_tokens)
        build_process_reward(self)
        model = Path(self.model)
        need(
            (model / "config.json").is_file(),
            f"model directory {str(model)!r} is not readable: expected a transformers model "
            "directory with config.json (and weights, tokenizer)",
        )

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidInputError(f"unknown trainer option(s) {unknown}; known: {sorted(known)}")
        return cls(**values)


# ---------------------------------------------------------------------- builders
def resolve_device(name: str, dist: Distributed) -> torch.device:
    """``auto``: CUDA when there is one; under torchrun each rank takes its local GPU."""
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if dist.enabled and name == "cuda":
        name = f"cuda:{dist.local_rank}"
    return torch.device(name)


def set_cpu_threads(threads: int, model: Any, device: torch.device) -> None:
    if threads:
        torch.set_num_threads(threads)
    elif device.type == "cpu" and sum(p.numel() for p in model.parameters()) < 10_000_000:
        # A tiny model's ops are too small to split: extra threads only add
        # synchronisation (and contend with the Rust pool and other processes).
        torch.set_num_threads(1)


def build_sampler(cfg: TrainerConfig, model: Any, tokenizer: Any) -> Any:
    """``HFSampler`` on the training model itself, or a colocated ``VLLMSampler``."""
    if cfg.sampler == "vllm":
        return VLLMSampler(cfg.model, seed=cfg.seed)
    # The loss recomputes the log-probs in its own forward: the sampler's are not needed.
    return HFSampler(model, tokenizer, logprobs=False)


def build_optimizer(cfg: TrainerConfig, model: Any) -> torch.optim.Optimizer:
    trainable = [p for p in model.parameters() if p.requires_grad]
    if cfg.optimizer == "sgd":
        return torch.optim.SGD(trainable, lr=cfg.learning_rate)
    # The fused kernel: one call for all parameters instead of ~10 ops each.
    return torch.optim.AdamW(
        trainable,
        lr=cfg.learning_rate,
        betas=(cfg.adam_beta1, cfg.adam_beta2),
        weight_decay=cfg.weight_decay,
        fused=all(p.is_floating_point() for p in trainable),
    )


def build_scheduler(cfg: TrainerConfig, optimizer: torch.optim.Optimizer) -> Any:
    """transformers' schedule of ``lr_schedule``, counted in optimizer steps."""
    return transformers.get_scheduler(
        _SCHEDULERS[cfg.lr_schedule],
        optimizer,
        num_warmup_steps=cfg.warmup_steps,
        num_training_steps=cfg.max_steps * cfg.num_iterations,
    )


def build_process_reward(cfg: TrainerConfig) -> ProcessReward | None:
    """The run's process reward (``--process-reward``), or None for outcome rewards only."""
    if cfg.process_reward is None:
        check_steps([], cfg.process_split, pattern=cfg.process_split_pattern)  # the split's checks
        return None
    return ProcessReward(
        cfg.process_reward,
        weight=cfg.process_reward_weight,
        split=cfg.process_split,
        pattern=cfg.process_split_pattern,
    )


def build_prompt_order(cfg: TrainerConfig, num_prompts: int) -> Curriculum | UniformPrompts:
    if cfg.curriculum:
        return Curriculum(num_prompts, floor=cfg.curriculum_floor, seed=cfg.seed)
    return UniformPrompts(num_prompts, seed=cfg.seed)


def reference_model(model: Any) -> Any:
    """A frozen copy of the starting policy, for the KL penalty."""
    return copy.deepcopy(model).eval().requires_grad_(False)


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if len(x) and not np.isnan(x).all() else float("nan")


class Trainer:
    """GRPO on a local causal LM, rewarded by :mod:`grpo_fast.rewards`.

    Parameters
    ----------
    config : TrainerConfig
    model, tokenizer : optional
        Already-loaded transformers objects (default: loaded from ``config.model``).
    sampler : Sampler, optional
        Default: :func:`build_sampler`.
    train_rows, eval_rows : list of dict, optional
        The data itself (``prompt`` and ``answer`` per row, other columns kept),
        instead of ``config.train_file`` / ``eval_file``.
    rewards : optional
        What to reward (default: ``config.reward``): reward specs,
        ``rewards.combine(...)``, TRL-style functions ``f(completions,
        **columns)`` (or ``(f, weight)``), names, or a list of them; see
        :class:`~grpo_fast.rollout.RunRewards`. Each is logged as
        ``reward/<name>``.

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
    ) -> None:
        config.validate()
        self.dist = Distributed.from_env(torch.device(_device_type(config.device)).type)
        self.device = resolve_device(config.device, self.dist)
        self.config = cfg = dataclasses.replace(config, device=str(self.device))
        self.is_main = self.dist.is_main
        self.out = Path(cfg.output_dir)
        # Every rank draws different samples; prompt order is shared (its own generator).
        transformers.set_seed(cfg.seed + self.dist.rank)

        self.train_rows = (
            read_tasks(cfg.train_file, "train_file")
            if train_rows is None
            else check_tasks(train_rows, "train_rows")
        )
        if eval_rows is not None:
            self.eval_rows = check_tasks(eval_rows, "eval_rows")[: cfg.eval_size]
        elif cfg.eval_file:
            self.eval_rows = read_tasks(cfg.eval_file, "eval_file")[: cfg.eval_size]
        else:
            self.eval_rows = []
        self.rewards = RunRewards.build(
            list(cfg.reward) if rewards is None else rewards, max_new_tokens=cfg.max_new_tokens
        )
        self.process = build_process_reward(cfg)
        self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(cfg.model)
        self.model = (model if model is not None else load_model(cfg.model)).to(self.device).train()
        set_cpu_threads(cfg.torch_threads, self.model, self.device)
        self.ref_model = reference_model(self.model) if cfg.beta > 0 else None
        self.params = SamplingParams(
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            top_k=cfg.top_k,
        )
        self.sampler = (
            sampler if sampler is not None else build_sampler(cfg, self.model, self.tokenizer)
        )
        self.optimizer = build_optimizer(cfg, self.model)
        self.scheduler = build_scheduler(cfg, self.optimizer)
        self.prompts = build_prompt_order(cfg, len(self.train_rows))
        self.step_count = 0
        self.last_batch: Batch | None = None

        resume = self._find_resume(cfg.resume)
        if resume is not None:
            self._load_checkpoint(resume)
        self.metrics = (
            MetricsWriter(
                self.out / "metrics.jsonl",
                truncate_after=self.step_count if resume is not None else None,
            )
            if self.is_main
            else None
        )
        if self.is_main:
            (self.out / "config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")

    # ------------------------------------------------------------------ the step
    def step(self) -> dict[str, Any]:
        """One generation batch: sample, reward, advantages, loss, update."""
        t0 = time.perf_counter()
        batch, stats = self.rollout()
        t1 = time.perf_counter()
        losses = self.update(batch)
        self.sampler.update_weights(self.model)
        t2 = time.perf_counter()
        self.step_count += 1
        self.last_batch = batch

        lengths = [len(c) for c in batch.completions.completion_ids]
        n_tokens = sum(lengths) + sum(len(p) for p in batch.completions.prompt_ids)
        return {
            "step": self.step_count,
            **stats,
            **losses,
            "completion_length": float(np.mean(lengths)) if lengths else 0.0,
            "lr": self.scheduler.get_last_lr()[0],
            "tokens_per_s": n_tokens * self.dist.world / max(t2 - t0, 1e-9),
            "time_step": t2 - t0,
            "time_loss": t2 - t1,
        }

    def rollout(self) -> tuple[Batch, dict[str, Any]]:
        """Sample and score groups of this rank's prompts; with dynamic sampling, refill
        the batch with new groups while some carry no signal.

        Rewards are gathered from every rank before the advantages, so each
        rank's advantages (and the curriculum, and the metrics) are those of
        the whole step.
        """
        cfg, G, dist = self.config, self.config.num_generations, self.dist
        P = cfg.prompts_per_step
        kept: list[Batch] = []
        stats: dict[str, Any] = {"time_sampling": 0.0, "time_verify": 0.0}
        rounds = 1 + (cfg.max_refill_rounds if cfg.dynamic_sampling else 0)
        for r in range(rounds):
            # The same draw on every rank; each takes its slice.
            idx_all = self.prompts.draw(P * dist.world)
            idx = idx_all[dist.rank * P : (dist.rank + 1) * P]
            rows = [self.train_rows[i] for i in idx for _ in range(G)]
            t0 = time.perf_counter()
            comp = self.sampler.sample([self.train_rows[i]["prompt"] for i in idx], G, self.params)
            t1 = time.perf_counter()
            scores = self.rewards.score(comp.texts, rows, completion_ids=comp.completion_ids)
            total = dist.gather(scores.total)
            adv = grpo_fast.compute_advantages(
                total,
                np.repeat(np.arange(P * dist.world), G),
                estimator=cfg.estimator,
                scale=cfg.scale,
            )
            stats["time_sampling"] += t1 - t0
            stats["time_verify"] += time.perf_counter() - t1
            self.prompts.update(idx_all, adv.solve_rate)
            if r == 0:  # what the current policy does on fresh prompts
                stats.update(
                    reward_mean=_nanmean(total),
                    reward_std=float(np.nanstd(total)),
                    **{f"reward/{k}": _nanmean(dist.gather(v)) for k, v in scores.columns.items()},
                    solve_rate=_nanmean(adv.solve_rate),
                    frac_zero_std=float(adv.frac_zero_std),
                )
            mine = slice(dist.rank * P * G, (dist.rank + 1) * P * G)
            advantages = adv.advantages[mine]
            if self.process is not None:  # [P * G, T]: outcome + weight * process
                groups = np.repeat(np.arange(P), G)
                advantages, step_stats = self.process.token_advantages(
                    comp.texts, comp.completion_ids, self.tokenizer, groups, advantages, rows
                )
                stats.update(step_stats if r == 0 else {})
            batch = Batch(idx, comp, scores.total, scores.columns, advantages)
            if not cfg.dynamic_sampling:
                kept.append(batch)
                break
            kept.append(batch.take(adv.keep[mine].reshape(P, G).any(axis=1)))
            if dist.all_min(sum(len(b.prompt_index) for b in kept)) >= P:
                break
        batch = Batch.concat(kept, G)
        if len(batch.prompt_index) > P:
            batch = batch.take(np.arange(P))
        stats["sampling_rounds"] = r + 1
        stats["groups_trained"] = len(batch.prompt_index)
        return batch, stats

    def logprobs(self, model: Any, packed: Packed) -> tuple[torch.Tensor, torch.Tensor]:
        """Token log-probs and entropies ``[rows, Tc]`` of a packed batch under ``model``."""
        return completion_logprobs(
            model,
            packed,
            temperature=self.config.temperature,
            group_size=self.config.num_generations,
            share_prompt_prefix=self.config.share_prompt_prefix,
        )

    def update(self, batch: Batch) -> dict[str, Any]:
        """``num_iterations`` optimizer steps on a batch, each over ``grad_accum_steps`` chunks."""
        cfg = self.config
        n = len(batch)
        if n == 0:  # dynamic sampling found nothing to learn from
            return {"loss": 0.0}
        packed = pack(
            batch.completions.prompt_ids,
            batch.completions.completion_ids,
            self.tokenizer.pad_token_id,
            self.device,
        )
        adv = torch.from_numpy(batch.token_advantages(packed.completion_mask.shape[1]))
        adv = adv.to(self.device)
        with torch.no_grad():
            old_logp = self.logprobs(self.model, packed)[0] if cfg.num_iterations > 1 else None
            ref_logp = None if self.ref_model is None else self.logprobs(self.ref_model, packed)[0]
        # Micro-batches of whole groups when the split allows it (prompt cache sharing).
        chunk = n // cfg.grad_accum_steps if n % cfg.grad_accum_steps == 0 else n
        trainable = [p for p in self.model.parameters() if p.requires_grad]
        sums: dict[str, float] = {}
        count = 0
        for _ in range(cfg.num_iterations):
            for s in range(0, n, chunk):
                rows = slice(s, s + chunk)
                part = packed.rows(rows)
                logp, entropy = self.logprobs(self.model, part)
                loss, m = policy_loss(
                    logp,
                    logp.detach() if old_logp is None else old_logp[rows],
                    adv[rows],
                    part.completion_mask,
                    ref_logp=None if ref_logp is None else ref_logp[rows],
                    beta=cfg.beta,
                    kl=cfg.kl,
                    eps_low=cfg.eps_low,
                    eps_high=cfg.eps_high,
                    loss_type=cfg.loss_type,
                    max_completion_length=cfg.max_new_tokens,
                    entropy=entropy.detach(),
                )
                # Row-weighted: the accumulated gradient is the full batch's (per-sequence mean).
                (loss * (logp.shape[0] / n)).backward()
                for k, v in {"loss": float(loss.item()), **m}.items():
                    sums[k] = sums.get(k, 0.0) + v
                count += 1
            self.dist.average_grads(trainable)
            if cfg.max_grad_norm > 0:
                norm = torch.nn.utils.clip_grad_norm_(trainable, cfg.max_grad_norm)
            else:
                norm = torch.linalg.vector_norm(
                    torch.stack([p.grad.norm() for p in trainable if p.grad is not None])
                )
            sums["grad_norm"] = sums.get("grad_norm", 0.0) + float(norm) * (
                count / cfg.num_iterations
            )
            self.optimizer.step()
            self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        out = {k: v / count for k, v in sums.items()}
        out["kl"] = out.pop("kl_mean", None)
        out["entropy"] = out.pop("entropy_mean", None)
        return out

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, float]:
        """Greedy decoding on the held-out rows.

        ``eval_accuracy``: the share whose first reward is >= 1 (the default
        ``math``: correct); ``eval_reward``: the mean total reward. NaN
        without an eval file.
        """
        if not self.eval_rows:
            return {"eval_accuracy": float("nan")}
        greedy = SamplingParams(max_new_tokens=self.config.max_new_tokens, temperature=0.0)
        comp = self.sampler.sample([r["prompt"] for r in self.eval_rows], 1, greedy)
        scores = self.rewards.score(comp.texts, self.eval_rows, completion_ids=comp.completion_ids)
        first = scores.columns[self.rewards.names[0]]
        return {
            "eval_accuracy": float(np.mean(first >= 1.0)),
            "eval_reward": _nanmean(scores.total),
        }

    # ------------------------------------------------------------------ the loop
    def train(self) -> list[dict[str, Any]]:
        """Run until ``max_steps``; returns the metric records of this process's run."""
        from tqdm.auto import tqdm

        cfg = self.config
        history: list[dict[str, Any]] = []
        if self.step_count == 0:
            evals = self.evaluate() if self.is_main else {"eval_accuracy": float("nan")}
            history.append(self._log({"step": 0, **evals}))
        bar = tqdm(
            total=cfg.max_steps,
            initial=self.step_count,
            disable=not (cfg.progress and self.is_main),
            desc="grpo",
            dynamic_ncols=True,
        )
        while self.step_count < cfg.max_steps:
            record = self.step()
            last = self.step_count == cfg.max_steps
            if self.is_main and (
                last or (cfg.eval_every and self.step_count % cfg.eval_every == 0)
            ):
                record.update(self.evaluate())
            history.append(self._log(record))
            bar.update(1)
            post = {"reward": f"{record['reward_mean']:.2f}"}
            if "eval_accuracy" in record:
                post["eval"] = f"{record['eval_accuracy']:.3f}"
            bar.set_postfix(post)
            if last or (cfg.save_every and self.step_count % cfg.save_every == 0):
                self.save_checkpoint()
        bar.close()
        return history

    def _log(self, record: dict[str, Any]) -> dict[str, Any]:
        if self.metrics is not None:
            self.metrics.write(record)
            if self.config.plot and "eval_accuracy" in record:
                from grpo_fast.plot import plot_curves

                plot_curves(read_metrics(self.metrics.path), self.out / "curves.png")
        return record

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        """Write ``checkpoints/step-N`` atomically (temp dir, then rename)."""
        ckpt_root = self.out / "checkpoints"
        final = ckpt_root / f"step-{self.step_count:07d}"
        tmp = ckpt_root / f".tmp-step-{self.step_count:07d}"
        rank_state = {
            "python": random.getstate(),
            "numpy": np.random.get_state(),  # noqa: NPY002 (user code may use it)
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
        }
        if self.is_main:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
        self.dist.barrier()
        torch.save(rank_state, tmp / f"rng-rank{self.dist.rank}.pt")
        if self.is_main:
            self.model.save_pretrained(tmp)
            self.tokenizer.save_pretrained(tmp)
            torch.save(
                {
                    "step": self.step_count,
                    "optimizer": self.optimizer.state_dict(),
                    "scheduler": self.scheduler.state_dict(),
                    "prompts": self.prompts.state_dict(),
                    "world": self.dist.world,
                },
                tmp / "trainer_state.pt",
            )
        self.dist.barrier()
        if self.is_main:
            shutil.rmtree(final, ignore_errors=True)
            os.replace(tmp, final)
            done = sorted(ckpt_root.glob("step-*"))
            for old in done[: max(0, len(done) - max(1, self.config.keep_checkpoints))]:
                shutil.rmtree(old, ignore_errors=True)
        self.dist.barrier()
        return final

    def _find_resume(self, resume: str | None) -> Path | None:
        if not resume:
            return None
        if resume == "auto":
            done = sorted((self.out / "checkpoints").glob("step-*"))
            return done[-1] if done else None
        path = Path(resume)
        if not (path / "trainer_state.pt").is_file():
            raise InvalidInputError(f"{resume!r} is not a checkpoint (no trainer_state.pt)")
        return path

    def _load_checkpoint(self, path: Path) -> None:
        from safetensors.torch import load_file

        state = torch.load(path / "trainer_state.pt", weights_only=False)
        if state["world"] != self.dist.world:
            raise InvalidInputError(
                f"checkpoint {path} was written by {state['world']} processes, "
                f"this run has {self.dist.world}"
            )
        weights = load_file(path / "model.safetensors", device=str(self.device))
        missing, unexpected = self.model.load_state_dict(weights, strict=False)
        # Tied embeddings are saved once; anything else missing is a real mismatch.
        if unexpected or any("lm_head" not in k for k in missing):
            raise InvalidInputError(f"checkpoint {path} does not match the model: {missing}")
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.prompts.load_state_dict(state["prompts"])
        self.step_count = int(state["step"])
        rng = torch.load(path / f"rng-rank{self.dist.rank}.pt", weights_only=False)
        random.setstate(rng["python"])
        np.random.set_state(rng["numpy"])  # noqa: NPY002
        torch.set_rng_state(rng["torch"])
        if rng["cuda"] is not None and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(rng["cuda"])
        self.sampler.update_weights(self.model)


def _device_type(name: str) -> str:
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name
