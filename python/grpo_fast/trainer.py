"""The GRPO training loop.

One step, as in DESIGN.md's data flow::

    prompts (curriculum) -> sampler: G completions each -> verifier: rewards
      -> advantages (Rust) -> token log-probs -> clipped policy loss (+ KL)
      -> optimizer step -> curriculum update

:meth:`Trainer.step` is that sequence, top to bottom. Everything else here is
bookkeeping: configuration, metrics, evaluation, checkpoints, multi-process.

Multi-process: under ``torchrun`` every rank samples and scores its own share
of the step's prompts; rewards are gathered from all ranks before the group
statistics, so every rank sees the same advantages, curriculum and metrics;
gradients are averaged with ``all_reduce`` (gloo on CPU, nccl on GPU).
"""

from __future__ import annotations

import copy
import json
import math
import os
import random
import shutil
import time
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import numpy as np

import grpo_fast
from grpo_fast.curriculum import Curriculum, UniformPrompts
from grpo_fast.errors import InvalidInputError
from grpo_fast.metrics import MetricsWriter, read_metrics

__all__ = ["DATA_DIR", "Trainer", "TrainerConfig", "load_tasks"]

DATA_DIR = Path(__file__).resolve().parent / "data"

LR_SCHEDULES = ("constant", "linear", "cosine")
LOSS_TYPES = ("grpo", "bnpo", "token_mean", "dapo", "dr_grpo")
VERIFIERS = ("math", "exact")
SAMPLERS = ("hf", "vllm")
OPTIMIZERS = ("adamw", "sgd")


def _doc(text: str) -> Any:
    return {"help": text}


@dataclass
class TrainerConfig:
    """Every option of a training run (each one is a ``grpo-fast train`` flag).

    The defaults train the embedded tiny model on 2-digit addition on the CPU.
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
    eval_file: str = field(
        default=str(DATA_DIR / "addition_eval.jsonl"),
        metadata=_doc("held-out JSONL with 'prompt' and 'answer' ('' to skip evaluation)"),
    )
    verifier: str = field(
        default="math", metadata=_doc(f"reward: one of {VERIFIERS} (1 if correct, else 0)")
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
    sampler: str = field(default="hf", metadata=_doc(f"generation backend: {SAMPLERS}"))
    max_new_tokens: int = field(default=4, metadata=_doc("longest completion, EOS included"))
    temperature: float = field(default=1.0, metadata=_doc("sampling temperature"))
    top_p: float = field(default=1.0, metadata=_doc("nucleus sampling mass (1 = off)"))
    top_k: int = field(default=0, metadata=_doc("top-k sampling (0 = off)"))
    # Advantages.
    estimator: str = field(default="grpo", metadata=_doc("advantage estimator (see advantages)"))
    scale: str = field(default="group", metadata=_doc("advantage std scaling: group/batch/none"))
    # Loss.
    loss_type: str = field(default="grpo", metadata=_doc(f"loss aggregation: {LOSS_TYPES}"))
    eps_low: float = field(default=0.2, metadata=_doc("lower clip range of the ratio"))
    eps_high: float = field(default=0.2, metadata=_doc("upper clip range (DAPO clip-higher: 0.28)"))
    beta: float = field(
        default=0.0, metadata=_doc("KL penalty weight; > 0 loads a frozen reference model")
    )
    kl: str = field(default="k3", metadata=_doc("KL estimator: k1, k2 or k3"))
    share_prompt_prefix: bool = field(
        default=True,
        metadata=_doc("run each prompt once per group and share its KV cache with its G samples"),
    )
    num_iterations: int = field(
        default=1, metadata=_doc("optimizer passes over each generation batch (old log-probs kept)")
    )
    # Optimisation.
    optimizer: str = field(default="adamw", metadata=_doc(f"{OPTIMIZERS}"))
    learning_rate: float = field(default=3e-5, metadata=_doc("peak learning rate"))
    lr_schedule: str = field(default="constant", metadata=_doc(f"{LR_SCHEDULES}, after warmup"))
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
    resume: str = field(
        default="", metadata=_doc("checkpoint dir to resume from, or 'auto' (newest in output_dir)")
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

    def validate(self) -> None:
        """Raise :class:`InvalidInputError` saying what to fix."""

        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise InvalidInputError(msg)

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
        for name, allowed in (
            ("lr_schedule", LR_SCHEDULES),
            ("loss_type", LOSS_TYPES),
            ("verifier", VERIFIERS),
            ("sampler", SAMPLERS),
            ("optimizer", OPTIMIZERS),
            ("kl", ("k1", "k2", "k3")),
            ("scale", grpo_fast.advantages.SCALES),
            ("estimator", grpo_fast.advantages.ESTIMATORS),
        ):
            value = getattr(self, name)
            need(value in allowed, f"{name} must be one of {allowed}, got {value!r}")
        for name in ("eval_every", "save_every", "max_refill_rounds", "torch_threads"):
            need(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
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


def read_jsonl(
    path: str | os.PathLike[str], columns: list[str], what: str = "dataset"
) -> list[dict[str, Any]]:
    """The rows of a JSONL file, each a JSON object holding every one of ``columns``.

    Every way the file can be unusable (missing, not JSON, a column missing,
    empty) is an :class:`InvalidInputError` naming the file and line.
    """
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"{what} {str(p)!r} does not exist or is not a file")
    rows = []
    with open(p) as f:
        for lineno, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InvalidInputError(f"{p}:{lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"{p}:{lineno}: expected a JSON object per line")
            missing = [c for c in columns if c not in row]
            if missing:
                raise InvalidInputError(
                    f"{p}:{lineno}: missing column(s) {missing}; each line needs {columns}"
                )
            rows.append(row)
    if not rows:
        raise InvalidInputError(f"{what} {str(p)!r} is empty: it needs at least one row")
    return rows


def load_tasks(path: str | os.PathLike[str], what: str = "dataset") -> list[dict[str, str]]:
    """Rows of a JSONL file with string-able ``prompt`` and ``answer`` columns."""
    return [
        {"prompt": str(row["prompt"]), "answer": str(row["answer"])}
        for row in read_jsonl(path, ["prompt", "answer"], what)
    ]


def score(verifier: str, golds: list[str], completions: list[str]) -> np.ndarray:
    """Rewards (float32, 1 = correct) of completions against gold answers.

    ``math``: :func:`grpo_fast.verify_batch` (answer extraction and math
    equivalence in Rust); ``exact``: the stripped strings are equal.
    """
    if verifier == "exact":
        return np.array(
            [c.strip() == g.strip() for g, c in zip(golds, completions, strict=True)], np.float32
        )
    if verifier == "math":
        return grpo_fast.verify_batch(golds, completions)
    raise InvalidInputError(f"unknown verifier {verifier!r}; expected one of {VERIFIERS}")


class _Dist:
    """torch.distributed when launched by torchrun (WORLD_SIZE > 1), else a no-op."""

    def __init__(self, device_type: str) -> None:
        import torch.distributed as dist

        self.dist = dist
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        if self.world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if device_type == "cuda" else "gloo")

    @property
    def enabled(self) -> bool:
        return self.world > 1

    def gather(self, x: np.ndarray) -> np.ndarray:
        """Concatenate equal-shaped arrays from all ranks, in rank order."""
        if not self.enabled:
            return x
        import torch

        t = torch.as_tensor(x)
        out = [torch.empty_like(t) for _ in range(self.world)]
        self.dist.all_gather(out, t)
        return torch.cat(out).numpy()

    def all_min(self, value: int) -> int:
        if not self.enabled:
            return value
        import torch

        t = torch.tensor([value])
        self.dist.all_reduce(t, op=self.dist.ReduceOp.MIN)
        return int(t.item())

    def average_grads(self, params: list[Any]) -> None:
        if not self.enabled:
            return
        for p in params:
            if p.grad is not None:
                self.dist.all_reduce(p.grad)
                p.grad /= self.world

    def barrier(self) -> None:
        if self.enabled:
            self.dist.barrier()


@dataclass
class Batch:
    """One generation batch on this rank, ready for the loss."""

    prompt_index: np.ndarray  # [P] dataset rows
    completions: Any  # sampling.Completions
    rewards: np.ndarray  # [P*G]
    advantages: np.ndarray  # [P*G]
    old_logp: Any = None  # torch [P*G, T] when num_iterations > 1
    ref_logp: Any = None  # torch [P*G, T] when beta > 0


class Trainer:
    """GRPO on a local causal LM with a verifier reward.

    Parameters
    ----------
    config : TrainerConfig
    model, tokenizer : optional
        Already-loaded transformers objects (default: loaded from ``config.model``).
    sampler : Sampler, optional
        Default: :class:`~grpo_fast.sampling.HFSampler` on the model, or
        :class:`~grpo_fast.sampling.VLLMSampler` with ``sampler="vllm"``.

    Examples
    --------
    >>> cfg = TrainerConfig(max_steps=100, output_dir="runs/x")  # doctest: +SKIP
    >>> history = Trainer(cfg).train()  # doctest: +SKIP
    """

    def __init__(
        self,
        config: TrainerConfig,
        *,
        model: Any = None,
        tokenizer: Any = None,
        sampler: Any = None,
    ) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        from grpo_fast.sampling import HFSampler, SamplingParams, VLLMSampler

        config.validate()
        self.config = cfg = config
        self.train_rows = load_tasks(cfg.train_file, "train_file")
        self.eval_rows = (
            load_tasks(cfg.eval_file, "eval_file")[: cfg.eval_size] if cfg.eval_file else []
        )
        if cfg.device == "auto":
            cfg.device = "cuda" if torch.cuda.is_available() else "cpu"
        self.dist = _Dist(torch.device(cfg.device).type)
        if self.dist.enabled and cfg.device == "cuda":
            cfg.device = f"cuda:{self.dist.local_rank}"
        self.device = torch.device(cfg.device)
        if cfg.torch_threads:
            torch.set_num_threads(cfg.torch_threads)
        # Every rank draws different samples; prompt order is shared (its own generator).
        self._seed_everything(cfg.seed + self.dist.rank)

        try:
            self.tokenizer = tokenizer or AutoTokenizer.from_pretrained(cfg.model)
            self.model = model or AutoModelForCausalLM.from_pretrained(
                cfg.model, dtype=torch.float32
            )
        except (OSError, ValueError) as e:
            raise InvalidInputError(f"cannot load model {cfg.model!r}: {e}") from None
        if self.tokenizer.pad_token is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.tokenizer.padding_side = "left"
        self.model.to(self.device).train()
        if not cfg.torch_threads and self.device.type == "cpu":
            # A tiny model's ops are too small to split: extra threads only add
            # synchronisation (and contend with the Rust pool and other processes).
            if sum(p.numel() for p in self.model.parameters()) < 10_000_000:
                torch.set_num_threads(1)
        self.ref_model = None
        if cfg.beta > 0:
            self.ref_model = copy.deepcopy(self.model).eval().requires_grad_(False)

        self.params = SamplingParams(
            max_new_tokens=cfg.max_new_tokens,
            temperature=cfg.temperature,
            top_p=cfg.top_p,
            top_k=cfg.top_k,
        )
        if sampler is not None:
            self.sampler = sampler
        elif cfg.sampler == "vllm":
            self.sampler = VLLMSampler(cfg.model, seed=cfg.seed)
        else:
            self.sampler = HFSampler(self.model, self.tokenizer, logprobs=False)

        trainable = [p for p in self.model.parameters() if p.requires_grad]
        if cfg.optimizer == "sgd":
            self.optimizer = torch.optim.SGD(trainable, lr=cfg.learning_rate)
        else:
            # The fused kernel: one call for all parameters instead of ~10 ops each.
            self.optimizer = torch.optim.AdamW(
                trainable,
                lr=cfg.learning_rate,
                betas=(cfg.adam_beta1, cfg.adam_beta2),
                weight_decay=cfg.weight_decay,
                fused=all(p.is_floating_point() for p in trainable),
            )
        total = cfg.max_steps * cfg.num_iterations
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, lambda s: _lr_factor(s, cfg.warmup_steps, total, cfg.lr_schedule)
        )
        n = len(self.train_rows)
        self.prompts: Curriculum | UniformPrompts = (
            Curriculum(n, floor=cfg.curriculum_floor, seed=cfg.seed)
            if cfg.curriculum
            else UniformPrompts(n, seed=cfg.seed)
        )
        self.step_count = 0
        self.out = Path(cfg.output_dir)
        self.is_main = self.dist.rank == 0
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
        """One generation batch: sample, verify, advantages, loss, update."""
        t0 = time.perf_counter()
        batch, stats = self._rollout()
        t_rollout = time.perf_counter()
        loss_stats = self._update(batch)
        t_end = time.perf_counter()
        self.step_count += 1
        self.last_batch = batch

        lengths = [len(c) for c in batch.completions.completion_ids]
        n_tokens = sum(lengths) + sum(len(p) for p in batch.completions.prompt_ids)
        record = {
            "step": self.step_count,
            **stats,
            **loss_stats,
            "completion_length": float(np.mean(lengths)) if lengths else 0.0,
            "lr": self.scheduler.get_last_lr()[0],
            "tokens_per_s": n_tokens * self.dist.world / max(t_end - t0, 1e-9),
            "time_step": t_end - t0,
            "time_loss": t_end - t_rollout,
        }
        return record

    def _rollout(self) -> tuple[Batch, dict[str, Any]]:
        """Sample and score groups; with dynamic sampling, refill groups that carry no signal."""
        cfg, G = self.config, self.config.num_generations
        P, rank, world = cfg.prompts_per_step, self.dist.rank, self.dist.world
        kept: list[tuple[np.ndarray, Any, np.ndarray, np.ndarray]] = []
        n_kept = 0
        stats: dict[str, Any] = {"time_sampling": 0.0, "time_verify": 0.0}
        rounds = 1 + (cfg.max_refill_rounds if cfg.dynamic_sampling else 0)
        for r in range(rounds):
            # The same draw on every rank; each takes its slice.
            idx_all = self.prompts.draw(P * world)
            idx = idx_all[rank * P : (rank + 1) * P]
            t0 = time.perf_counter()
            comp = self.sampler.sample([self.train_rows[i]["prompt"] for i in idx], G, self.params)
            t1 = time.perf_counter()
            golds = [self.train_rows[i]["answer"] for i in idx for _ in range(G)]
            rewards = score(cfg.verifier, golds, comp.texts)
            all_rewards = self.dist.gather(rewards)
            adv = grpo_fast.compute_advantages(
                all_rewards,
                np.repeat(np.arange(P * world), G),
                estimator=cfg.estimator,
                scale=cfg.scale,
            )
            t2 = time.perf_counter()
            stats["time_sampling"] += t1 - t0
            stats["time_verify"] += t2 - t1
            self.prompts.update(idx_all, adv.solve_rate)
            if r == 0:  # what the current policy does on fresh prompts
                stats.update(
                    reward_mean=float(np.nanmean(all_rewards)),
                    reward_std=float(np.nanstd(all_rewards)),
                    solve_rate=float(np.nanmean(adv.solve_rate)),
                    frac_zero_std=float(adv.frac_zero_std),
                )
            mine = slice(rank * P * G, (rank + 1) * P * G)
            advantages = adv.advantages[mine]
            if not cfg.dynamic_sampling:
                kept.append((idx, comp, rewards, advantages))
                break
            signal = adv.keep[mine].reshape(P, G).any(axis=1)
            rows = np.repeat(signal, G)
            if signal.any():
                sel = np.flatnonzero(rows).tolist()
                kept.append((idx[signal], _select(comp, sel), rewards[rows], advantages[rows]))
                n_kept += int(signal.sum())
            if self.dist.all_min(n_kept) >= P:
                break
        stats["sampling_rounds"] = r + 1
        batch = _concat(kept, P, G)
        stats["groups_trained"] = len(batch.prompt_index)
        return batch, stats

    def _update(self, batch: Batch) -> dict[str, Any]:
        """``num_iterations`` optimizer steps on a batch, each over ``grad_accum_steps`` chunks."""
        import torch

        from grpo_fast.loss import policy_loss

        cfg = self.config
        n = len(batch.rewards)
        if n == 0:  # dynamic sampling found nothing to learn from
            return {"loss": 0.0}
        packed = self._pack(batch.completions)
        adv = torch.as_tensor(batch.advantages, dtype=torch.float32, device=self.device)
        with torch.no_grad():
            if cfg.num_iterations > 1:
                batch.old_logp = self._logprobs(self.model, *packed)[0]
            if self.ref_model is not None:
                batch.ref_logp = self._logprobs(self.ref_model, *packed)[0]
        chunk = n // cfg.grad_accum_steps if n % cfg.grad_accum_steps == 0 else n
        sums: dict[str, float] = {}
        count = 0
        for _ in range(cfg.num_iterations):
            for s in range(0, n, chunk):
                rows = slice(s, s + chunk)
                logp, entropy, mask = self._logprobs(self.model, *packed, rows)
                old = logp.detach() if batch.old_logp is None else batch.old_logp[rows]
                ref = None if batch.ref_logp is None else batch.ref_logp[rows]
                loss, m = policy_loss(
                    logp,
                    old,
                    adv[rows],
                    mask,
                    ref_logp=ref,
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
                m = {"loss": float(loss.item()), **m}
                for k, v in m.items():
                    sums[k] = sums.get(k, 0.0) + v
                count += 1
            trainable = [p for p in self.model.parameters() if p.requires_grad]
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
        self.sampler.update_weights(self.model)
        out = {k: v / count for k, v in sums.items()}
        out["kl"] = out.pop("kl_mean", None)
        out["entropy"] = out.pop("entropy_mean", None)
        return out

    # ------------------------------------------------------------------ tensors
    def _pack(self, comp: Any) -> tuple[Any, Any, Any, Any]:
        """Prompts left-padded ``[N, Lp]`` and completions right-padded ``[N, Tc]``, with masks.

        Side by side they form one row per completion,
        ``[pad.. prompt | completion ..pad]``; all outputs of :meth:`_logprobs`
        are ``[N, Tc]``, aligned with the completion tensor.
        """
        import torch

        def pad(rows: list[list[int]], left: bool) -> tuple[Any, Any]:
            width = max(1, max(len(r) for r in rows))
            ids = torch.full((len(rows), width), self.tokenizer.pad_token_id, dtype=torch.long)
            mask = torch.zeros((len(rows), width), dtype=torch.long)
            for i, r in enumerate(rows):
                if r:
                    cols = slice(width - len(r), width) if left else slice(0, len(r))
                    ids[i, cols] = torch.tensor(r)
                    mask[i, cols] = 1
            return ids.to(self.device), mask.to(self.device)

        pid, pmask = pad(comp.prompt_ids, left=True)
        cid, cmask = pad(comp.completion_ids, left=False)
        return pid, pmask, cid, cmask.bool()

    def _logprobs(
        self, model: Any, pid: Any, pmask: Any, cid: Any, cmask: Any, rows: slice = slice(None)
    ) -> tuple[Any, Any, Any]:
        """Log-probs, entropies and mask ``[B, Tc]`` of the completion tokens of ``rows``.

        Goes through the decoder's last hidden state and the chunked
        ``token_logprobs``, so the ``[B, T, V]`` logits never exist at once.
        With ``share_prompt_prefix`` (and rows that are whole groups of G
        completions of one prompt, as the trainer's batches are) each prompt
        runs through the model once and its key/value cache, repeated G times,
        serves the G completions: the prompt's share of the forward and
        backward work drops by G.
        """
        from grpo_fast.logprobs import token_logprobs

        pid, pmask, cid, cmask = pid[rows], pmask[rows], cid[rows], cmask[rows]
        G = self.config.num_generations
        decoder = getattr(model, model.base_model_prefix)
        ppos = (pmask.cumsum(-1) - 1).clamp(min=0)
        n, Tc = cid.shape
        grouped = self.config.share_prompt_prefix and n % G == 0 and _cache_kwarg(decoder)
        if grouped:
            out = decoder(
                input_ids=pid[::G],
                attention_mask=pmask[::G],
                position_ids=ppos[::G],
                use_cache=True,
            )
            first = out.last_hidden_state[:, -1:].repeat_interleave(G, 0)
            parts = [first]
            if Tc > 1:
                cache = getattr(out, grouped)
                cache.batch_repeat_interleave(G)
                attn = torch_cat([pmask, cmask.long()])[:, :-1]
                cpos = ppos[:, -1:] + 1 + _arange_like(cid)[:, :-1]
                rest = decoder(
                    input_ids=cid[:, :-1],
                    attention_mask=attn,
                    position_ids=cpos,
                    use_cache=True,
                    **{grouped: cache},
                )
                parts.append(rest.last_hidden_state)
            hidden = torch_cat(parts)
        else:
            ids = torch_cat([pid, cid])
            attn = torch_cat([pmask, cmask.long()])
            pos = (attn.cumsum(-1) - 1).clamp(min=0)
            out = decoder(input_ids=ids, attention_mask=attn, position_ids=pos)
            Lp = pid.shape[1]
            hidden = out.last_hidden_state[:, Lp - 1 : Lp - 1 + Tc]
        head = model.get_output_embeddings()
        logp, entropy = token_logprobs(
            hidden,
            head.weight,
            cid,
            bias=head.bias,
            temperature=self.config.temperature,
            mask=cmask,
            return_entropy=True,
        )
        return logp, entropy, cmask

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> float:
        """Greedy accuracy on the held-out rows (NaN without an eval file)."""
        from grpo_fast.sampling import SamplingParams

        if not self.eval_rows:
            return float("nan")
        greedy = SamplingParams(max_new_tokens=self.config.max_new_tokens, temperature=0.0)
        comp = self.sampler.sample([r["prompt"] for r in self.eval_rows], 1, greedy)
        rewards = score(self.config.verifier, [r["answer"] for r in self.eval_rows], comp.texts)
        return float(np.mean(rewards >= 1.0))

    # ------------------------------------------------------------------ the loop
    def train(self) -> list[dict[str, Any]]:
        """Run until ``max_steps``; returns the metric records of this process's run."""
        from tqdm.auto import tqdm

        cfg = self.config
        history: list[dict[str, Any]] = []
        if self.step_count == 0:
            acc = self.evaluate() if self.is_main else float("nan")
            history.append(self._log({"step": 0, "eval_accuracy": acc}))
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
                record["eval_accuracy"] = self.evaluate()
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
        import torch

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

    def _find_resume(self, resume: str) -> Path | None:
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
        import torch
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

    @staticmethod
    def _seed_everything(seed: int) -> None:
        import torch

        random.seed(seed)
        np.random.seed(seed)  # noqa: NPY002 (user code may use it)
        torch.manual_seed(seed)


def torch_cat(parts: list[Any]) -> Any:
    import torch

    return torch.cat(parts, dim=1)


def _arange_like(ids: Any) -> Any:
    import torch

    return torch.arange(ids.shape[1], device=ids.device).expand(ids.shape[0], -1)


_CACHE_KWARG: dict[type, str | None] = {}


def _cache_kwarg(decoder: Any) -> str | None:
    """Name of the decoder's key/value-cache argument (renamed ``cache`` in transformers 5.x)."""
    import inspect

    kind = type(decoder)
    if kind not in _CACHE_KWARG:
        params = inspect.signature(decoder.forward).parameters
        _CACHE_KWARG[kind] = next((k for k in ("cache", "past_key_values") if k in params), None)
    return _CACHE_KWARG[kind]


def _lr_factor(step: int, warmup: int, total: int, schedule: str) -> float:
    if warmup and step < warmup:
        return (step + 1) / warmup
    progress = min(1.0, (step - warmup) / max(1, total - warmup))
    if schedule == "linear":
        return 1.0 - progress
    if schedule == "cosine":
        return 0.5 * (1.0 + math.cos(math.pi * progress))
    return 1.0


def _select(comp: Any, rows: list[int]) -> Any:
    from grpo_fast.sampling import Completions

    pick = lambda xs: None if xs is None else [xs[i] for i in rows]  # noqa: E731
    return Completions(
        pick(comp.texts),
        pick(comp.prompt_ids),
        pick(comp.completion_ids),
        pick(comp.logprobs),
        comp.n,
    )


def _concat(parts: list[tuple[np.ndarray, Any, np.ndarray, np.ndarray]], P: int, G: int) -> Batch:
    """Join sampling rounds, keeping at most ``P`` groups."""
    from grpo_fast.sampling import Completions

    idx: list[int] = []
    texts: list[str] = []
    pids: list[list[int]] = []
    cids: list[list[int]] = []
    lps: list[list[float]] | None = []
    rewards: list[np.ndarray] = []
    advs: list[np.ndarray] = []
    for pi, comp, r, a in parts:
        take = min(len(pi), P - len(idx))
        if take <= 0:
            break
        idx.extend(pi[:take].tolist())
        texts += comp.texts[: take * G]
        pids += comp.prompt_ids[: take * G]
        cids += comp.completion_ids[: take * G]
        if lps is not None and comp.logprobs is not None:
            lps += comp.logprobs[: take * G]
        else:
            lps = None
        rewards.append(r[: take * G])
        advs.append(a[: take * G])
    cat = lambda xs: np.concatenate(xs) if xs else np.zeros(0, np.float32)  # noqa: E731
    return Batch(
        np.asarray(idx, dtype=np.int64),
        Completions(texts, pids, cids, lps, G),
        cat(rewards),
        cat(advs),
    )
