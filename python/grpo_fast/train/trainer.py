"""The GRPO training loop.

One step, as in the data flow of ``docs/design.md``::

    prompts (curriculum) -> sampler: G completions each -> rewards (columns + total)
      -> advantages (Rust) -> token log-probs -> clipped policy loss (+ KL)
      -> optimizer step -> curriculum update

:meth:`Trainer.step` is that sequence, top to bottom: :meth:`Trainer.rollout`
(sample, score, advantages, an immutable :class:`~grpo_fast.train.rollout.Batch`)
then :meth:`Trainer.update` (log-probs, :func:`~grpo_fast.loss.policy_loss`,
optimizer). The parts come from small builders (:func:`build_optimizer`,
:func:`build_scheduler`, :func:`build_sampler`, ...); the rest is
bookkeeping: evaluation, metrics, checkpoints.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import signal
import sys
import time
import typing
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import numpy as np
import torch
import transformers

import grpo_fast
from grpo_fast.advantages import ESTIMATORS, SCALES
from grpo_fast.errors import InvalidInputError, TrainingInterrupted
from grpo_fast.loss import KL_ESTIMATORS, LOSS_TYPES, SURROGATES, policy_loss
from grpo_fast.loss.mismatch import CORRECTIONS, LEVELS, pad_sampler_logprobs
from grpo_fast.names import STEP_SPLITS
from grpo_fast.sampling import HFSampler, SamplingParams, VLLMSampler, truncated
from grpo_fast.steps import ProcessReward, check_steps
from grpo_fast.train.checkpoint import (
    check_resume_config,
    find_resume,
    is_sharded,
    load_checkpoint,
    lock_output_dir,
    prepare_output_dir,
    remove_leftovers,
    save_checkpoint,
    unlock_output_dir,
)
from grpo_fast.train.curriculum import Curriculum, UniformPrompts
from grpo_fast.train.data import (
    DATA_DIR,
    check_tasks,
    read_tasks,
    render_prompts,
    truncate_prompts,
)
from grpo_fast.train.defaults import by_model, is_demo_model, resolve
from grpo_fast.train.distributed import PARALLEL, Distributed, wrap_distributed
from grpo_fast.train.interrupt import StopRequest
from grpo_fast.train.modeling import (
    DTYPES,
    LoraOptions,
    MixedPrecision,
    Packed,
    check_model_name,
    load_config,
    load_model,
    load_tokenizer,
    max_positions,
    pack,
    prepare_model,
    reference_model,
)
from grpo_fast.train.rollout import Batch, RewardLike, RunRewards
from grpo_fast.train.tracking import (
    NoSignalWatch,
    Tracker,
    current_name,
    log_line,
    parse_report_to,
    read_metrics,
    say,
)

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
SAMPLER_CORRECTIONS = ("auto", *CORRECTIONS)


def _doc(text: str, **bounds: float) -> Any:
    """A field's metadata: its help, and bounds on its value (``ge``, ``gt``, ``le``)
    that the command line checks as it parses the flag and :meth:`TrainerConfig.validate`
    checks for a config built in Python."""
    return {"help": text, **bounds}


def out_of_bounds(metadata: Any, value: Any) -> str | None:
    """Why ``value`` is outside the field's bounds (``"must be > 0"``), or None."""
    if value is None or isinstance(value, bool) or not isinstance(value, int | float):
        return None
    for key, ok, word in (
        ("ge", lambda b: value >= b, ">="),
        ("gt", lambda b: value > b, ">"),
        ("le", lambda b: value <= b, "<="),
    ):
        if key in metadata and not ok(metadata[key]):
            return f"must be {word} {metadata[key]}"
    return None


@dataclass
class TrainerConfig:
    """Every option of a training run (each one is a ``grpo-fast train`` flag).

    The defaults train the embedded tiny model on 2-digit addition on the CPU.
    A default written ``by_model(run, demo=...)`` depends on the model: the
    demo's value for the embedded model, the real run's for any other
    (:mod:`grpo_fast.train.defaults`); a value given explicitly always stands.
    Choices are ``Literal`` types: the command line, config files and
    :meth:`validate` read them from here.
    """

    # What to train on.
    model: str = field(
        default=str(DATA_DIR / "tiny_adder"),
        metadata=_doc(
            "causal LM to train: a local transformers directory or a Hugging Face Hub id; "
            "'embedded demo' defaults below apply to this embedded model only"
        ),
    )
    dtype: Literal[tuple(DTYPES)] = field(  # type: ignore[valid-type]
        default=by_model("bf16", demo="fp32"),
        metadata=_doc(
            "forward precision: bf16/fp16 autocast with fp32 trained weights (LoRA's frozen "
            "base and the reference model stored in it; fp16 scales the loss)"
        ),
    )
    gradient_checkpointing: bool = field(
        default=by_model(True, demo=False),
        metadata=_doc(
            "recompute layer activations in the backward (less memory; the loss forward then "
            "runs each prompt with every sample instead of sharing it)"
        ),
    )
    lora_r: int = field(default=0, metadata=_doc("LoRA rank (0: train every weight)", ge=0))
    lora_alpha: float = field(default=32.0, metadata=_doc("LoRA scale numerator (alpha / r)", gt=0))
    lora_dropout: float = field(default=0.0, metadata=_doc("dropout on the LoRA path"))
    lora_target_modules: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "modules LoRA adapts, repeatable or comma-separated (q_proj,v_proj; "
            "all-linear: every linear layer but the head; default: peft's choice for the "
            "architecture)",
            "metavar": "NAME",
        },
    )
    train_file: str = field(
        default=str(DATA_DIR / "addition_train.jsonl"),
        metadata=_doc("rows with a prompt and an answer: JSONL, JSON, Parquet, CSV, TSV, Arrow"),
    )
    eval_file: str | None = field(
        default=str(DATA_DIR / "addition_eval.jsonl"),
        metadata=_doc("held-out rows, same format (none: skip evaluation)"),
    )
    prompt_column: str = field(
        default="prompt",
        metadata=_doc("column of the prompts: text, or a list of {role, content} messages"),
    )
    answer_column: str = field(
        default="answer", metadata=_doc("column of the gold answers (GSM8K's '... #### 72' works)")
    )
    system_prompt: str | None = field(
        default=None,
        metadata=_doc(
            "system message put before every prompt that has none (a plain prompt then goes "
            "through the chat template as the user's message)"
        ),
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
        metadata={
            "help": "where metrics.jsonl, curves.png and checkpoints/ go (created if missing; "
            "one that holds a run needs --resume or --overwrite)",
            "aliases": ("-o",),
        },
    )
    # Batch shape.
    max_steps: int = field(default=1000, metadata=_doc("generation batches to train on", ge=1))
    num_train_epochs: float | None = field(
        default=None,
        metadata=_doc(
            "passes over the training prompts instead of max_steps (when set, it decides "
            "max_steps: ceil(epochs x rows / (prompts_per_step x processes)))",
            gt=0,
        ),
    )
    prompts_per_step: int = field(default=8, metadata=_doc("prompts per step (per rank)", ge=1))
    num_generations: int = field(default=8, metadata=_doc("group size G: samples per prompt", ge=2))
    # Sampling.
    sampler: Literal["hf", "vllm"] = field(default="hf", metadata=_doc("generation backend"))
    max_new_tokens: int = field(
        default=by_model(256, demo=4), metadata=_doc("longest completion, EOS included", ge=1)
    )
    max_prompt_length: int | None = field(
        default=None,
        metadata=_doc(
            "longest prompt in tokens: a longer one loses its beginning (TRL's truncation "
            "from the left; the count is logged); none: no limit. Prompt + max_new_tokens "
            "must fit the model's positions",
            ge=1,
        ),
    )
    temperature: float = field(default=1.0, metadata=_doc("sampling temperature", gt=0))
    top_p: float = field(default=1.0, metadata=_doc("nucleus sampling mass (1 = off)", gt=0, le=1))
    top_k: int = field(default=0, metadata=_doc("top-k sampling (0 = off)", ge=0))
    # Advantages.
    estimator: Literal[ESTIMATORS] = field(  # type: ignore[valid-type]
        default="grpo",
        metadata=_doc(
            "advantage estimator (grpo_fast.compute_advantages; remax also samples one greedy "
            "completion per prompt, its baseline)"
        ),
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
    eps_low: float = field(default=0.2, metadata=_doc("lower clip range of the ratio", ge=0))
    eps_high: float = field(
        default=0.2, metadata=_doc("upper clip range (DAPO clip-higher: 0.28)", ge=0)
    )
    beta: float = field(
        default=0.0, metadata=_doc("KL penalty weight; > 0 loads a frozen reference model", ge=0)
    )
    kl: Literal[KL_ESTIMATORS] = field(  # type: ignore[valid-type]
        default="k3", metadata=_doc("KL estimator")
    )
    surrogate: Literal[SURROGATES] = field(  # type: ignore[valid-type]
        default="ppo",
        metadata=_doc(
            "per-token objective: ppo (clipped ratio), cispo (clipped detached weight x logp), "
            "sapo (sigmoid gate), gmpo (geometric mean of the token ratios)"
        ),
    )
    sapo_tau_pos: float = field(
        default=1.0, metadata=_doc("SAPO gate temperature where A > 0", gt=0)
    )
    sapo_tau_neg: float = field(
        default=1.05, metadata=_doc("SAPO gate temperature where A <= 0", gt=0)
    )
    entropy_coef: float = field(
        default=0.0, metadata=_doc("entropy bonus weight (mean entropy of the tokens that learn)")
    )
    top_entropy_quantile: float = field(
        default=1.0,
        metadata=_doc("share of the batch's tokens, highest entropy first, that learn (1 = all)"),
    )
    mask_truncated_completions: bool = field(
        default=False,
        metadata=_doc("completions that hit max_new_tokens without EOS get no loss (DAPO)"),
    )
    share_prompt_prefix: bool = field(
        default=True,
        metadata=_doc("run each prompt once per group and share its KV cache with its G samples"),
    )
    num_iterations: int = field(
        default=1,
        metadata=_doc("optimizer passes over each generation batch (old log-probs kept)", ge=1),
    )
    sampler_correction: Literal[SAMPLER_CORRECTIONS] = field(  # type: ignore[valid-type]
        default="auto",
        metadata=_doc(
            "sampler-mismatch correction from the sampler's log-probs: tis (weights "
            "min(ratio, C)), mis (no loss outside [1/C, C]), none (only logged); auto: tis "
            "with vllm, none with hf"
        ),
    )
    sampler_level: Literal[LEVELS] = field(  # type: ignore[valid-type]
        default="token",
        metadata=_doc("one mismatch ratio per token, or per sequence (geometric mean)"),
    )
    sampler_threshold: float = field(
        default=2.0, metadata=_doc("C of the sampler correction: TIS cap, MIS band [1/C, C]", gt=1)
    )
    # Optimisation.
    optimizer: Literal["adamw", "sgd"] = field(default="adamw", metadata=_doc("optimizer"))
    learning_rate: float = field(
        default=by_model(1e-6, demo=3e-5), metadata=_doc("peak learning rate", gt=0)
    )
    lr_schedule: Literal[LR_SCHEDULES] = field(  # type: ignore[valid-type]
        default=by_model("linear", demo="constant"), metadata=_doc("learning rate after warmup")
    )
    warmup_steps: int = field(default=0, metadata=_doc("linear warmup, in optimizer steps", ge=0))
    weight_decay: float = field(default=0.0, metadata=_doc("AdamW weight decay", ge=0))
    adam_beta1: float = field(default=0.9, metadata=_doc("AdamW beta1"))
    adam_beta2: float = field(default=by_model(0.999, demo=0.99), metadata=_doc("AdamW beta2"))
    max_grad_norm: float = field(default=1.0, metadata=_doc("gradient clipping (0 = off)", ge=0))
    grad_accum_steps: int = field(
        default=1, metadata=_doc("micro-batches per optimizer step (splits the batch's rows)", ge=1)
    )
    # Prompt selection.
    curriculum: bool = field(
        default=False, metadata=_doc("draw prompts with weight p(1-p) of their solve rate")
    )
    curriculum_floor: float = field(default=0.05, metadata=_doc("smallest curriculum weight"))
    dynamic_sampling: bool = field(
        default=False, metadata=_doc("DAPO: drop zero-variance groups and refill the batch")
    )
    max_refill_rounds: int = field(default=3, metadata=_doc("extra sampling rounds per step", ge=0))
    # Evaluation, logging, checkpoints.
    eval_every: int = field(
        default=100, metadata=_doc("evaluate every N steps (0 = start/end)", ge=0)
    )
    eval_size: int = field(
        default=by_model(0, demo=500),
        metadata=_doc("held-out prompts per evaluation (0 = all)", ge=0),
    )
    save_every: int = field(
        default=by_model(500, demo=0),
        metadata=_doc("checkpoint every N steps (0 = at the end)", ge=0),
    )
    keep_checkpoints: int = field(default=2, metadata=_doc("newest checkpoints kept", ge=1))
    resume: str | None = field(
        default=None,
        metadata=_doc(
            "checkpoint dir to resume from, or 'auto' (the newest good one in output_dir; none "
            "yet: start at step 0)"
        ),
    )
    overwrite: bool = field(
        default=False, metadata=_doc("replace the run already in output_dir (its files only)")
    )
    resume_force: bool = field(
        default=False,
        metadata=_doc(
            "resume although options that change the training differ from the checkpoint's "
            "run (without it such a resume is refused, listing them)"
        ),
    )
    seed: int = field(default=0, metadata=_doc("seed of prompt order, sampling and init"))
    device: str = field(default="auto", metadata=_doc("'auto', 'cpu', 'cuda', 'cuda:1', ..."))
    parallel: Literal[PARALLEL] = field(  # type: ignore[valid-type]
        default="ddp",
        metadata=_doc(
            "several processes (torchrun): ddp (each holds the whole model and optimizer "
            "state), fsdp (FSDP2: parameters, gradients, optimizer state sharded; checkpoints "
            "through torch.distributed.checkpoint)"
        ),
    )
    torch_threads: int = field(
        default=0,
        metadata=_doc(
            "torch CPU threads (0 = auto: 1 for a model under 10M parameters on the CPU)", ge=0
        ),
    )
    progress: bool = field(default=True, metadata=_doc("show a progress bar"))
    logging_steps: int = field(
        default=10,
        metadata=_doc(
            "every N steps: a plain-text line on stdout when it is not a terminal (CI, "
            "nohup) or without a progress bar, and the completions of log_completions",
            ge=1,
        ),
    )
    log_completions: bool = field(
        default=False,
        metadata=_doc(
            "log sampled prompts, completions and each reward every logging_steps steps: "
            "completions.jsonl, a W&B table, TensorBoard text"
        ),
    )
    plot: bool = field(default=True, metadata=_doc("write curves.png at each evaluation"))
    report_to: tuple[str, ...] = field(
        default=("none",),
        metadata={
            "help": "also log the metrics to tensorboard, wandb (repeatable or comma-separated;"
            " extra grpo-fast[tracking]; none: metrics.jsonl only)",
            "metavar": "NAME",
        },
    )

    def __post_init__(self) -> None:
        # Defaults that depend on the model (grpo_fast.train.defaults): the demo's or a real run's.
        demo = is_demo_model(self.model)
        for f in fields(self):
            setattr(self, f.name, resolve(getattr(self, f.name), demo=demo))
        # One reward given alone (``reward="math"``) is a list of one.
        if isinstance(self.reward, (str, dict)):
            self.reward = (self.reward,)
        elif isinstance(self.reward, list):
            self.reward = tuple(self.reward)
        if isinstance(self.report_to, str):
            self.report_to = (self.report_to,)
        elif isinstance(self.report_to, list):
            self.report_to = tuple(self.report_to)
        # Target modules: repeated, comma-separated, or one string.
        targets = (
            (self.lora_target_modules,)
            if isinstance(self.lora_target_modules, str)
            else self.lora_target_modules
        )
        self.lora_target_modules = tuple(
            name.strip() for t in targets for name in str(t).split(",") if name.strip()
        )

    def validate(self) -> None:
        """Raise :class:`InvalidInputError` saying what to fix."""

        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise InvalidInputError(msg)

        for f in fields(self):
            why = out_of_bounds(f.metadata, getattr(self, f.name))
            need(why is None, f"{f.name} {why}, got {getattr(self, f.name)!r}")
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
        need(
            self.eps_low < 1 or self.surrogate in ("cispo", "gmpo"),
            f"eps_low must be < 1 with surrogate={self.surrogate!r}, got {self.eps_low}",
        )
        need(
            0 <= self.top_entropy_quantile <= 1,
            f"top_entropy_quantile must be in [0, 1], got {self.top_entropy_quantile}",
        )
        need(np.isfinite(self.entropy_coef), f"entropy_coef must be finite: {self.entropy_coef}")
        need(
            self.sapo_tau_pos > 0 and self.sapo_tau_neg > 0,
            f"sapo_tau_pos and sapo_tau_neg must be > 0, got {self.sapo_tau_pos}, "
            f"{self.sapo_tau_neg}",
        )
        need(
            self.sampler_threshold > 1,
            f"sampler_threshold must be > 1 (TIS cap, MIS band [1/C, C]), "
            f"got {self.sampler_threshold}",
        )
        need(self.temperature > 0, f"temperature must be > 0 for training: {self.temperature}")
        need(
            0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1,
            f"adam_beta1 and adam_beta2 must be in [0, 1), got {self.adam_beta1}, "
            f"{self.adam_beta2}",
        )
        for name in ("eval_every", "save_every", "max_refill_rounds", "torch_threads"):
            need(getattr(self, name) >= 0, f"{name} must be >= 0, got {getattr(self, name)}")
        need(self.eval_size >= 0, f"eval_size must be >= 0 (0 = all), got {self.eval_size}")
        need(bool(self.reward), "reward: name at least one reward (e.g. 'math')")
        RunRewards.build(list(self.reward), max_new_tokens=self.max_new_tokens)
        build_process_reward(self)
        parse_report_to(self.report_to)
        check_model_name(self.model)
        check_device(self.device)
        need(self.lora_r >= 0, f"lora_r must be >= 0 (0: no LoRA), got {self.lora_r}")
        need(self.lora_alpha > 0, f"lora_alpha must be > 0, got {self.lora_alpha}")
        need(0 <= self.lora_dropout < 1, f"lora_dropout must be in [0, 1): {self.lora_dropout}")
        if self.lora_r > 0:
            import importlib.util

            need(
                importlib.util.find_spec("peft") is not None,
                "LoRA (lora_r > 0) needs peft: pip install 'grpo-fast[peft]'",
            )
            need(
                self.sampler == "hf",
                "LoRA (lora_r > 0) samples with --sampler hf: the vLLM sampler takes full "
                "weights, not adapters",
            )
        if self.parallel == "fsdp":
            need(
                self.sampler == "hf",
                "--parallel fsdp samples with --sampler hf (the vLLM sampler would need the "
                "sharded weights gathered into its engine after every step); use --parallel ddp",
            )
            need(
                self.dtype != "fp16",
                "--parallel fsdp trains in fp32 or bf16: fp16's loss scaling would see only "
                "this rank's shard of the gradients; use --dtype bf16",
            )
        for name in ("prompt_column", "answer_column"):
            need(bool(getattr(self, name)), f"{name} must name a column")

    def lora(self) -> LoraOptions | None:
        """The LoRA adapters of this run (None: full fine-tuning)."""
        if self.lora_r == 0:
            return None
        return LoraOptions(
            r=self.lora_r,
            alpha=self.lora_alpha,
            dropout=self.lora_dropout,
            target_modules=self.lora_target_modules,
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


def check_device(name: str) -> None:
    """``auto``, ``cpu``, ``cuda[:N]``, ...: one that exists here, or an error saying so."""
    if name == "auto":
        return
    try:
        device = torch.device(name)
    except RuntimeError:
        raise InvalidInputError(
            f"device must be 'auto', 'cpu', 'cuda' or 'cuda:N', got {name!r}"
        ) from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise InvalidInputError(
                f"device {name!r}: no CUDA GPU is available here (torch.cuda.is_available() is "
                "False); use --device cpu (or auto)"
            )
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise InvalidInputError(
                f"device {name!r}: there are only {torch.cuda.device_count()} CUDA device(s)"
            )


def set_cpu_threads(threads: int, model: Any, device: torch.device) -> None:
    if threads:
        torch.set_num_threads(threads)
    elif device.type == "cpu" and sum(p.numel() for p in model.parameters()) < 10_000_000:
        # A tiny model's ops are too small to split: extra threads only add
        # synchronisation (and contend with the Rust pool and other processes).
        torch.set_num_threads(1)


def sampler_correction(cfg: TrainerConfig) -> str:
    """``cfg.sampler_correction`` with ``auto`` resolved: ``tis`` for vLLM, ``none`` for HF
    (it samples with the training model itself: the same log-probs)."""
    if cfg.sampler_correction != "auto":
        return cfg.sampler_correction
    return "tis" if cfg.sampler == "vllm" else "none"


def build_sampler(cfg: TrainerConfig, model: Any, tokenizer: Any) -> Any:
    """``HFSampler`` on the training model itself, or a colocated ``VLLMSampler``."""
    if cfg.sampler == "vllm":
        return VLLMSampler(cfg.model, seed=cfg.seed)
    # The loss recomputes the log-probs in its own forward: the sampler's are needed
    # only for a sampler correction asked for by name.
    return HFSampler(model, tokenizer, logprobs=sampler_correction(cfg) != "none")


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


def _nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if len(x) and not np.isnan(x).all() else float("nan")


def _finite(v: Any) -> float | None:
    return float(v) if np.isfinite(v) else None


def _nanstd(x: np.ndarray) -> float:
    """The Bessel-corrected std of the values that are not NaN (TRL's ``nanstd``)."""
    n = int(np.count_nonzero(~np.isnan(x)))
    return float(np.nanstd(x, ddof=1)) if n > 1 else float("nan")


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
        :class:`~grpo_fast.train.rollout.RunRewards`. Each is logged as
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
    ) -> None:
        config.validate()
        self.dist = Distributed.from_env(torch.device(_device_type(config.device)).type)
        self.device = resolve_device(config.device, self.dist)
        self.config = cfg = dataclasses.replace(
            config, device=str(self.device), sampler_correction=sampler_correction(config)
        )
        self.is_main = self.dist.is_main
        self.out = Path(cfg.output_dir)
        # Checked before anything loads: a refused directory or a bad checkpoint costs nothing.
        prepare_output_dir(self.out, resume=cfg.resume, overwrite=cfg.overwrite)
        resume = find_resume(self.out, cfg.resume, self.dist)
        # Every rank draws different samples; prompt order is shared (its own generator).
        transformers.set_seed(cfg.seed + self.dist.rank)

        columns = {"prompt_column": cfg.prompt_column, "answer_column": cfg.answer_column}
        self.train_rows = (
            read_tasks(cfg.train_file, "train_file", **columns)
            if train_rows is None
            else check_tasks(train_rows, "train_rows", **columns)
        )
        if cfg.prompts_per_step * self.dist.world > len(self.train_rows):
            raise InvalidInputError(
                f"prompts_per_step ({cfg.prompts_per_step}) x {self.dist.world} process(es) is "
                f"more than the {len(self.train_rows)} training rows; lower --prompts-per-step"
            )
        if eval_rows is not None:
            self.eval_rows = check_tasks(eval_rows, "eval_rows", **columns)
        elif cfg.eval_file:
            self.eval_rows = read_tasks(cfg.eval_file, "eval_file", **columns)
        else:
            self.eval_rows = []
        self.eval_rows = self.eval_rows[: cfg.eval_size or None]
        if cfg.num_train_epochs is not None:  # epochs, when given, decide max_steps
            per_step = cfg.prompts_per_step * self.dist.world
            steps = math.ceil(cfg.num_train_epochs * len(self.train_rows) / per_step)
            self.config = cfg = dataclasses.replace(cfg, max_steps=max(1, steps))
        # Compared before anything loads: a resume that would mix two runs costs nothing.
        self._resume_changes = (
            []
            if resume is None
            else check_resume_config(resume, asdict(cfg), force=cfg.resume_force)
        )
        self.rewards = RunRewards.build(
            list(cfg.reward) if rewards is None else rewards, max_new_tokens=cfg.max_new_tokens
        )
        self.process = build_process_reward(cfg)
        self.tokenizer = tokenizer if tokenizer is not None else load_tokenizer(cfg.model)
        # The text the sampler sees: conversations through the tokenizer's chat template.
        self.train_prompts = render_prompts(
            self.train_rows, self.tokenizer, system_prompt=cfg.system_prompt, what="train rows"
        )
        self.eval_prompts = render_prompts(
            self.eval_rows, self.tokenizer, system_prompt=cfg.system_prompt, what="eval rows"
        )
        self._fit_prompts(model)
        lora = cfg.lora()
        if model is None:  # LoRA's frozen base loads in its 16-bit dtype; trained weights in fp32
            model = load_model(cfg.model, dtype=DTYPES[cfg.dtype] if lora else torch.float32)
        self.model = prepare_model(
            model.to(self.device),
            dtype=cfg.dtype,
            lora=lora,
            gradient_checkpointing=cfg.gradient_checkpointing,
        )
        self.precision = MixedPrecision(cfg.dtype, self.device)
        set_cpu_threads(cfg.torch_threads, self.model, self.device)
        self.ref_model = reference_model(self.model, cfg.dtype) if cfg.beta > 0 else None
        # The policy under DDP / FSDP2 (the optimizer then takes FSDP2's shards).
        self.policy = wrap_distributed(self.model, cfg.parallel, self.dist)
        self.reference = None if self.ref_model is None else self.policy.reference(self.ref_model)
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
        self._in_step = False
        self.last_batch: Batch | None = None

        self._saved_step: int | None = None
        self._resumed_record: dict[str, Any] | None = None
        if resume is not None:
            self._load_checkpoint(resume)
            self._saved_step = self.step_count
        self.metrics = None
        if self.is_main:
            # --resume auto without a checkpoint yet starts over: the old files go.
            fresh = cfg.overwrite or (cfg.resume is not None and resume is None)
            prepare_output_dir(
                self.out, resume=None if fresh else cfg.resume, overwrite=fresh, create=True
            )
            remove_leftovers(self.out, self._saved_step)
            self.metrics = Tracker(
                self.out,
                report_to=cfg.report_to,
                resume_step=self._saved_step,
                config=asdict(cfg),
                last_record=self._resumed_record,
            )
            (self.out / "config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
            if resume is not None:
                say(f"resumed from step {self.step_count} ({resume})")
                if self._resume_changes:
                    forced = " (--resume-force)" if cfg.resume_force else ""
                    say(
                        f"options changed since the checkpoint{forced}: "
                        + "; ".join(self._resume_changes)
                    )
        self.dist.barrier()

    def _fit_prompts(self, model: Any) -> None:
        """``max_prompt_length``: cut longer prompts from the left, and say how many;
        then check that the longest prompt plus ``max_new_tokens`` fits the model's
        positions (a model given as an object, else its ``config.json``), before
        the weights load."""
        cfg = self.config
        limit = max_positions(model.config if model is not None else load_config(cfg.model))
        longest = 0
        for what in ("train", "eval"):
            prompts = getattr(self, f"{what}_prompts")
            if not prompts:
                continue
            fitted, cut, n = truncate_prompts(prompts, self.tokenizer, cfg.max_prompt_length)
            setattr(self, f"{what}_prompts", fitted)
            longest = max(longest, n)
            if cut and self.is_main:
                say(
                    f"max_prompt_length {cfg.max_prompt_length}: {cut} of {len(prompts)} {what} "
                    "prompts were longer and lost their beginning"
                )
        if limit is not None and longest + cfg.max_new_tokens > limit:
            fix = (
                f"set --max-prompt-length {max(1, limit - cfg.max_new_tokens)} (prompts then "
                "lose their beginning) or lower --max-new-tokens"
                if limit > cfg.max_new_tokens
                else "lower --max-new-tokens"
            )
            raise InvalidInputError(
                f"the longest prompt has {longest} tokens and max_new_tokens is "
                f"{cfg.max_new_tokens}: {longest + cfg.max_new_tokens} tokens, more than the "
                f"model's {limit} positions; {fix}"
            )

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
        every = self.dist.gather(np.array(lengths, np.float64))  # every rank's, as TRL logs
        return {
            "step": self.step_count,
            **stats,
            **losses,
            # TRL's names (grpo_fast.tracking: LEGACY_NAMES lists the older ones).
            "completions/mean_length": float(every.mean()) if len(every) else 0.0,
            "completions/min_length": float(every.min()) if len(every) else 0.0,
            "completions/max_length": float(every.max()) if len(every) else 0.0,
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
        # The whole step's groups (every rank's), and this rank's rows of them.
        group_ids = np.repeat(np.arange(P * dist.world), G)
        mine = slice(dist.rank * P * G, (dist.rank + 1) * P * G)
        for r in range(rounds):
            # The same draw on every rank; each takes its slice.
            idx_all = self.prompts.draw(P * dist.world)
            idx = idx_all[dist.rank * P : (dist.rank + 1) * P]
            rows = [self.train_rows[i] for i in idx for _ in range(G)]
            t0 = time.perf_counter()
            with self.precision.autocast():
                comp = self.policy.with_full_weights(
                    self.sampler.sample, [self.train_prompts[i] for i in idx], G, self.params
                )
            inputs = self._estimator_inputs(idx, comp)
            t1 = time.perf_counter()
            scores = self.rewards.score(
                comp.texts, rows, completion_ids=comp.completion_ids, trainer_state=self.state
            )
            total = dist.gather(scores.total)
            adv = grpo_fast.compute_advantages(
                total,
                group_ids,
                estimator=cfg.estimator,
                scale=cfg.scale,
                **inputs,
            )
            stats["time_sampling"] += t1 - t0
            stats["time_verify"] += time.perf_counter() - t1
            self.prompts.update(idx_all, adv.solve_rate)
            if r == 0:  # what the current policy does on fresh prompts
                # TRL's names and statistics (its std is Bessel-corrected).
                stats.update(reward=_nanmean(total), reward_std=_nanstd(total))
                self._say_unscored(total, scores.columns)
                for k, v in scores.columns.items():
                    column = dist.gather(v)
                    stats[f"rewards/{k}/mean"] = _nanmean(column)
                    stats[f"rewards/{k}/std"] = _nanstd(column)
                stats.update(
                    solve_rate=_nanmean(adv.solve_rate),
                    frac_reward_zero_std=float(adv.frac_zero_std),
                )
            advantages = adv.advantages[mine]
            if self.process is not None:  # [P * G, T]: outcome + weight * process
                advantages, step_stats = self.process.token_advantages(
                    comp.texts,
                    comp.completion_ids,
                    self.tokenizer,
                    group_ids[mine],
                    advantages,
                    rows,
                    scale=cfg.scale,
                    dist=dist,
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
        # Every rank trains as many groups: the engines need the same passes on each.
        groups = min(P, dist.all_min(len(batch.prompt_index)))
        if len(batch.prompt_index) > groups:
            batch = batch.take(np.arange(groups))
        stats["sampling_rounds"] = r + 1
        stats["groups_trained"] = len(batch.prompt_index)
        return batch, stats

    def _say_unscored(self, total: np.ndarray, columns: dict[str, np.ndarray]) -> None:
        """Once a run: completions that no reward could score (a NaN total), by reward;
        they get advantage 0 instead of a score."""
        unscored = int(np.isnan(total).sum())
        if not unscored or getattr(self, "_said_unscored", False) or not self.is_main:
            return
        self._said_unscored = True
        which = ", ".join(f"{k}: {int(np.isnan(v).sum())}" for k, v in columns.items())
        say(
            f"step {self.step_count + 1}: {unscored} of {len(total)} completions got no reward "
            f"(NaN; this process's counts by reward: {which}): each reward returned None or "
            "could not read the gold; they train with advantage 0 (said once)"
        )

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

    def _estimator_inputs(self, idx: np.ndarray, comp: Any) -> dict[str, np.ndarray]:
        """What ``remax`` and ``opo`` need besides the rewards, gathered from every rank:
        the total reward of each prompt's greedy completion (ReMax's baseline, sampled
        here), or the completions' token lengths."""
        cfg = self.config
        if cfg.estimator == "opo":
            lengths = np.array([len(c) for c in comp.completion_ids], np.float64)
            return {"lengths": self.dist.gather(lengths)}
        if cfg.estimator != "remax":
            return {}
        rows = [self.train_rows[i] for i in idx]
        greedy = SamplingParams(max_new_tokens=cfg.max_new_tokens, temperature=0.0)
        with self.precision.autocast():
            best = self.policy.with_full_weights(
                self.sampler.sample, [self.train_prompts[i] for i in idx], 1, greedy
            )
        reward = self.rewards.score(
            best.texts, rows, completion_ids=best.completion_ids, trainer_state=self.state
        ).total
        baselines = np.repeat(reward.astype(np.float64), cfg.num_generations)
        return {"baselines": self.dist.gather(baselines)}

    def logprobs(self, model: Any, packed: Packed) -> tuple[torch.Tensor, torch.Tensor]:
        """Token log-probs and entropies ``[rows, Tc]`` of a packed batch under ``model``
        (``self.policy`` or ``self.reference``)."""
        with self.precision.autocast():
            return model(
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
        sampler_logp = self._sampler_logp(batch, packed)
        cut = truncated(batch.completions, self.tokenizer.eos_token_id, cfg.max_new_tokens)
        # DAPO's overlong filtering: a cut-off answer is neither right nor wrong; no loss.
        loss_mask = packed.completion_mask
        if cfg.mask_truncated_completions:
            loss_mask = loss_mask & ~torch.from_numpy(cut).to(self.device)[:, None]
        with torch.no_grad():
            old_logp = self.logprobs(self.policy, packed)[0] if cfg.num_iterations > 1 else None
            ref_logp = None if self.reference is None else self.logprobs(self.reference, packed)[0]
        # Micro-batches of whole groups when the split allows it (prompt cache sharing).
        chunk = n // cfg.grad_accum_steps if n % cfg.grad_accum_steps == 0 else n
        sums: dict[str, float] = {}
        count = 0
        for _ in range(cfg.num_iterations):
            for s in range(0, n, chunk):
                rows = slice(s, s + chunk)
                part = packed.rows(rows)
                with self.policy.no_sync(s + chunk < n):  # DDP: averaged after the last one
                    logp, entropy = self.logprobs(self.policy, part)
                loss, m = policy_loss(
                    logp,
                    logp.detach() if old_logp is None else old_logp[rows],
                    adv[rows],
                    loss_mask[rows],
                    ref_logp=None if ref_logp is None else ref_logp[rows],
                    beta=cfg.beta,
                    kl=cfg.kl,
                    eps_low=cfg.eps_low,
                    eps_high=cfg.eps_high,
                    loss_type=cfg.loss_type,
                    max_completion_length=cfg.max_new_tokens,
                    entropy=entropy if cfg.entropy_coef else entropy.detach(),
                    sampler_logp=None if sampler_logp is None else sampler_logp[rows],
                    sampler_correction=cfg.sampler_correction,
                    sampler_level=cfg.sampler_level,
                    sampler_threshold=cfg.sampler_threshold,
                    surrogate=cfg.surrogate,
                    sapo_tau_pos=cfg.sapo_tau_pos,
                    sapo_tau_neg=cfg.sapo_tau_neg,
                    entropy_coef=cfg.entropy_coef,
                    top_entropy_quantile=cfg.top_entropy_quantile,
                )
                # Row-weighted: the accumulated gradient is the full batch's (per-sequence mean).
                self.precision.backward(loss * (logp.shape[0] / n))
                for k, v in {"loss": float(loss.item()), **m}.items():
                    sums[k] = _accumulate(k, sums.get(k), v)
                count += 1
            self.precision.unscale(self.optimizer)
            norm = self.policy.clip_grad_norm(cfg.max_grad_norm)  # 0: only measured
            sums["grad_norm"] = sums.get("grad_norm", 0.0) + norm * (count / cfg.num_iterations)
            if self.precision.step(self.optimizer):  # False: fp16 overflow, step skipped
                self.scheduler.step()
            self.optimizer.zero_grad(set_to_none=True)
        out = {k: v if k.endswith(_EXTREMES) else v / count for k, v in sums.items()}
        out["kl"] = out.pop("kl_mean", None)
        out["entropy"] = out.pop("entropy_mean", None)
        out["completions/clipped_ratio"] = float(cut.mean())
        # The loss's clip fractions under TRL's names (clip_ratio/low_mean, ...).
        return {current_name(k): v for k, v in out.items()}

    def _sampler_logp(self, batch: Batch, packed: Packed) -> torch.Tensor | None:
        """The sampler's log-probs ``[rows, Tc]`` carried by the batch (None without them)."""
        comp = batch.completions
        if comp.logprobs is None:
            if self.config.sampler_correction != "none":
                raise InvalidInputError(
                    f"sampler_correction={self.config.sampler_correction!r} needs the sampler's "
                    f"log-probs, but {type(self.sampler).__name__} returned none "
                    "(HFSampler(..., logprobs=True), or sampler_correction='none')"
                )
            return None
        width = packed.completion_ids.shape[1]
        return pad_sampler_logprobs(comp.logprobs, comp.completion_ids, width, self.device)

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
            comp = self.policy.with_full_weights(
                lambda: self.sampler.sample(prompts, 1, greedy) if prompts else None
            )
        first: list[float] = []
        total: list[float] = []
        if comp is not None:
            scores = self.rewards.score(
                comp.texts, rows, completion_ids=comp.completion_ids, trainer_state=self.state
            )
            first = scores.columns[self.rewards.names[0]].tolist()
            total = scores.total.tolist()
        return {
            "eval_accuracy": float(np.mean(np.array(self.dist.gather_lists(first)) >= 1.0)),
            "eval_reward": _nanmean(np.array(self.dist.gather_lists(total))),
        }

    # ------------------------------------------------------------------ the loop
    def train(self) -> list[dict[str, Any]]:
        """Run until ``max_steps``; returns the metric records of this process's run.

        SIGINT (Ctrl-C) or SIGTERM, when this runs in the main thread, ends the
        current step, writes a checkpoint and raises
        :class:`~grpo_fast.errors.TrainingInterrupted`; a second one stops at once.
        """
        with self._running() as stop:
            return self._train_loop(stop)

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

    def _train_loop(self, stop: StopRequest) -> list[dict[str, Any]]:
        from tqdm.auto import tqdm

        cfg = self.config
        history: list[dict[str, Any]] = []
        no_signal = NoSignalWatch()
        # Plain-text lines where no bar is seen (CI, nohup: stdout is not a terminal).
        lines = self.is_main and not (cfg.progress and sys.stdout.isatty())
        if self.step_count == 0:
            history.append(self._log({"step": 0, **self.evaluate()}))
        start, first = time.perf_counter(), self.step_count
        bar = tqdm(
            total=cfg.max_steps,
            initial=self.step_count,
            disable=not (cfg.progress and self.is_main),
            desc="grpo",
            dynamic_ncols=True,
        )
        while self.step_count < cfg.max_steps:
            if self.dist.all_min(int(stop.signal is None)) == 0:  # a signal on any rank
                bar.close()
                raise self._interrupted(stop.signal)
            self._in_step = True
            try:
                record = self.step()
            finally:
                self._in_step = False
            last = self.step_count == cfg.max_steps
            if last or (cfg.eval_every and self.step_count % cfg.eval_every == 0):
                record.update(self.evaluate())
            history.append(self._log(record))
            bar.update(1)
            every = self.step_count % cfg.logging_steps == 0
            if lines and (every or last):
                pace = (time.perf_counter() - start) / (self.step_count - first)
                print(log_line(record, cfg.max_steps, pace), flush=True)
            if cfg.log_completions and (every or last) and self.metrics is not None:
                self.metrics.log_completions(self.step_count, self._completion_rows())
            reward = record["reward"]
            post = {"reward": f"{reward:.2f}" if np.isfinite(reward) else "n/a"}
            if np.isfinite(record.get("eval_accuracy", np.nan)):  # nan: no eval set
                post["eval"] = f"{record['eval_accuracy']:.3f}"
            bar.set_postfix(post)
            warning = no_signal.update(self.last_batch.advantages, reward_mean=record.get("reward"))
            if warning and self.is_main:
                say(warning)
            if last or (cfg.save_every and self.step_count % cfg.save_every == 0):
                self.save_checkpoint()
        bar.close()
        return history

    def _interrupted(self, signum: int | None) -> TrainingInterrupted:
        """Checkpoint the finished steps (step 0 needs none: ``--resume auto`` then starts
        over) and say how to go on."""
        path = None
        if self.step_count > 0:
            if self._saved_step != self.step_count:
                self.save_checkpoint()
            path = self.out / "checkpoints" / f"step-{self.step_count:07d}"
        return TrainingInterrupted(self.step_count, signum or signal.SIGINT, path)

    def _completion_rows(self) -> list[dict[str, Any]]:
        """The last step's samples on this process, as TRL's completions table has them:
        prompt, completion, each reward's score, the total and the advantage (per-token
        advantages: their mean over the completion)."""
        batch = self.last_batch
        if batch is None:
            return []
        G = batch.group_size
        rows = []
        for i, text in enumerate(batch.completions.texts):
            adv = np.asarray(batch.advantages[i], np.float64)
            rows.append(
                {
                    "prompt": self.train_prompts[int(batch.prompt_index[i // G])],
                    "completion": text,
                    **{k: _finite(v[i]) for k, v in batch.reward_columns.items()},
                    "reward": _finite(batch.rewards[i]),
                    "advantage": float(adv.mean()) if adv.size else 0.0,
                }
            )
        return rows

    def _log(self, record: dict[str, Any]) -> dict[str, Any]:
        self._last_record = record
        if self.metrics is not None:
            self.metrics.write(record)
            if self.config.plot and "eval_accuracy" in record:
                from grpo_fast.train.plot import plot_curves

                plot_curves(read_metrics(self.metrics.path), self.out / "curves.png")
        return record

    # ------------------------------------------------------------------ checkpoints
    def save_checkpoint(self) -> Path:
        """Write ``checkpoints/step-N`` (:func:`grpo_fast.train.checkpoint.save_checkpoint`;
        ``--parallel fsdp``: model and optimizer through ``torch.distributed.checkpoint``)."""
        sharded = self.config.parallel == "fsdp"
        path = save_checkpoint(
            self.out,
            self.step_count,
            model=self.model,
            tokenizer=self.tokenizer,
            trainer_state={
                **({} if sharded else {"optimizer": self.optimizer.state_dict()}),
                "scheduler": self.scheduler.state_dict(),
                "prompts": self.prompts.state_dict(),
                "scaler": self.precision.state_dict(),
                # The step's metrics row: written back if the file loses it (a cut line).
                "last_record": getattr(self, "_last_record", None),
            },
            dist=self.dist,
            keep=self.config.keep_checkpoints,
            config=asdict(self.config),
            sharded_state=self.policy.state_dict(self.optimizer) if sharded else None,
        )
        self._saved_step = self.step_count
        return path

    def _load_checkpoint(self, path: Path) -> None:
        if self.policy.sharded and not is_sharded(path):
            raise InvalidInputError(
                f"checkpoint {path} holds whole weights (a run without --parallel fsdp): resume "
                "it with --parallel ddp, or in one process"
            )
        state = load_checkpoint(
            path,
            model=self.model,
            device=self.device,
            dist=self.dist,
            sharded_state=lambda: self.policy.state_dict(self.optimizer),
        )
        if "sharded" in state:
            self.policy.load_state_dict(state["sharded"], self.optimizer)
        else:
            self.optimizer.load_state_dict(state["optimizer"])
        if state["world"] != self.dist.world:  # new random streams, none seen before
            world, step = self.dist.world, state["step"]
            transformers.set_seed(self.config.seed + self.dist.rank + world * step)
            if self.is_main:
                say(
                    f"checkpoint {path} was written by {state['world']} process(es), this run "
                    f"has {world}: model and optimizer resharded; sampling starts new random "
                    "streams"
                )
        self.precision.load_state_dict(state.get("scaler", {}))
        self.scheduler.load_state_dict(state["scheduler"])
        self.prompts.load_state_dict(state["prompts"])
        self.step_count = int(state["step"])
        self._resumed_record = state.get("last_record")
        self.sampler.update_weights(self.model)


# Metrics whose micro-batch values combine by min / max rather than by the mean.
_EXTREMES = ("_min", "_max")


def _accumulate(name: str, acc: float | None, value: float) -> float:
    if acc is None:
        return value
    if name.endswith("_min"):
        return float(np.fmin(acc, value))
    if name.endswith("_max"):
        return float(np.fmax(acc, value))
    return acc + value


def _device_type(name: str) -> str:
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return name
