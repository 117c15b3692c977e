"""Every option of a training run: :class:`TrainerConfig`.

Each field is a ``grpo-fast train`` flag (the command line is generated from
the field types, ``Literal`` choices included) and a config-file key; its
checks are :meth:`TrainerConfig.validate`, the loss's through
:class:`~grpo_fast.loss.LossOptions`. This module imports neither torch nor
transformers: the command line builds its parser from it cheaply.
"""

from __future__ import annotations

import typing
from dataclasses import dataclass, field, fields
from typing import Any, Literal

from grpo_fast.advantages import ESTIMATORS, SCALES
from grpo_fast.errors import InvalidInputError
from grpo_fast.flags import out_of_bounds
from grpo_fast.loss import KL_ESTIMATORS, LOSS_TYPES, SURROGATES, LossOptions
from grpo_fast.loss.mismatch import CORRECTIONS, LEVELS
from grpo_fast.names import STEP_SPLITS
from grpo_fast.run_rewards import RunRewards
from grpo_fast.steps import ProcessReward, check_steps
from grpo_fast.train.data import DATA_DIR
from grpo_fast.train.defaults import by_model, is_demo_model, resolve
from grpo_fast.train.devices import check_device
from grpo_fast.train.hub import check_model_name
from grpo_fast.train.schedules import LR_SCHEDULES
from grpo_fast.train.tracking import parse_report_to

__all__ = [
    "DTYPE_NAMES",
    "LR_SCHEDULES",
    "PARALLEL",
    "SAMPLER_CORRECTIONS",
    "LoraOptions",
    "TrainerConfig",
    "build_process_reward",
    "sampler_correction",
]

#: ``--sampler-correction``: a correction of the loss, or ``auto`` (by sampler).
SAMPLER_CORRECTIONS = ("auto", *CORRECTIONS)
#: ``--dtype``: the forward's precision (:data:`grpo_fast.train.modeling.DTYPES`).
DTYPE_NAMES = ("fp32", "bf16", "fp16")
#: ``--parallel``: how several processes share the model (:mod:`grpo_fast.train.distributed`).
PARALLEL = ("ddp", "fsdp")


def _doc(text: str, **bounds: float) -> Any:
    """A field's metadata: its help, and bounds on its value (``ge``, ``gt``, ``le``)
    that the command line checks as it parses the flag and :meth:`TrainerConfig.validate`
    checks for a config built in Python."""
    return {"help": text, **bounds}


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
            "causal LM to train: a local transformers directory, a .gguf file (de-quantised "
            "once into a cache; needs the gguf extra) or a Hugging Face Hub id; "
            "'embedded demo' defaults below apply to this embedded model only"
        ),
    )
    dtype: Literal[DTYPE_NAMES] = field(  # type: ignore[valid-type]
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
    chat_template: Literal["auto", "always", "never"] = field(
        default="auto",
        metadata=_doc(
            "the tokenizer's chat template: auto (TRL's way: conversations go through it, "
            "plain-text prompts stay as they are, with a warning when the tokenizer has a "
            "template), always (a plain prompt becomes the user's message), never (plain text "
            "only; a conversation is an error)"
        ),
    )
    reward: tuple[str | dict[str, Any], ...] = field(
        default=("math",),
        metadata={
            "help": "reward NAME[:WEIGHT], repeatable (--reward math --reward format:0.5): math, "
            "exact, choice, format, overlong, cosine, repetition, code (the answer column holds "
            "tests, docs/code.md), or a dotted path to a reward spec or TRL-style function",
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
    sampler: Literal["hf", "vllm", "vllm-server"] = field(
        default="hf",
        metadata=_doc(
            "generation backend: hf (transformers generate on the training model), vllm (a "
            "vLLM engine in this process), vllm-server (a vLLM server over HTTP: --vllm-url, "
            "or one started here); docs/vllm.md"
        ),
    )
    async_rollouts: bool = field(
        default=False,
        metadata=_doc(
            "sample the next batches in a background producer while the optimizer steps "
            "(--sampler hf or vllm-server, one process; off-policy by up to --max-staleness "
            "versions, corrected by --sampler-correction: tis by default); docs/training.md"
        ),
    )
    max_staleness: int = field(
        default=1,
        metadata=_doc(
            "with --async-rollouts: how many optimizer steps older than the trained policy a "
            "batch's sampling policy may be (0: no overlap, the same run as without async)"
        ),
    )
    vllm_url: str | None = field(
        default=None,
        metadata=_doc(
            "a running vLLM server for --sampler vllm-server, on this machine (default: start "
            "one and stop it with the run)"
        ),
    )
    hf_sampling_copy: bool = field(
        default=True,
        metadata=_doc(
            "--sampler hf with bf16/fp16 --dtype and fp32 trained weights: sample from a "
            "16-bit copy of the weights refreshed after each update (as a vLLM engine holds "
            "them), instead of the training model under autocast, which casts every weight "
            "again at every generated token; costs the weights' size in 16 bits (off under "
            "FSDP2)"
        ),
    )
    vllm_dtype: Literal["auto", "fp32", "bf16", "fp16"] = field(
        default="auto", metadata=_doc("the vLLM engine's precision (auto: --dtype's)")
    )
    max_new_tokens: int = field(
        default=by_model(256, demo=4), metadata=_doc("longest completion, EOS included", ge=1)
    )
    tool: tuple[str, ...] = field(
        default=(),
        metadata={
            "help": "a tool the model may call, module:function, repeatable (--tool "
            "grpo_fast.tools.builtin:calc): a plain function with type hints and a docstring, "
            "its JSON schema given to the chat template (TRL's tools=); docs/tools.md",
            "metavar": "MODULE:FUNCTION",
        },
    )
    max_tool_calls: int = field(
        default=4,
        metadata=_doc(
            "most tool calls in one rollout; a turn that would pass it is not run and ends "
            "the rollout (TRL's max_tool_calling_iterations counts turns)",
            ge=1,
        ),
    )
    tool_timeout: float = field(
        default=10.0,
        metadata=_doc(
            "seconds one tool call may run; a slower one is abandoned and the model reads "
            "'error: timed out'",
            gt=0,
        ),
    )
    max_tool_output: int = field(
        default=1000,
        metadata=_doc("longest tool output, in characters, that enters the context", ge=1),
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
            "with vllm, vllm-server and --async-rollouts, none with hf"
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

        for f in fields(self):  # the bounds in each field's metadata (also checked by the flags)
            why = out_of_bounds(f.metadata, getattr(self, f.name))
            need(why is None, f"{f.name} {why}, got {getattr(self, f.name)!r}")
        for name, hint in typing.get_type_hints(type(self)).items():
            if typing.get_origin(hint) is Literal:
                allowed = typing.get_args(hint)
                value = getattr(self, name)
                need(value in allowed, f"{name} must be one of {allowed}, got {value!r}")
        need(
            (self.prompts_per_step * self.num_generations) % self.grad_accum_steps == 0,
            f"prompts_per_step * num_generations ({self.prompts_per_step * self.num_generations})"
            f" must be divisible by grad_accum_steps ({self.grad_accum_steps})",
        )
        self.loss_options()  # every loss option's check (LossOptions)
        need(
            0 <= self.adam_beta1 < 1 and 0 <= self.adam_beta2 < 1,
            f"adam_beta1 and adam_beta2 must be in [0, 1), got {self.adam_beta1}, "
            f"{self.adam_beta2}",
        )
        need(bool(self.reward), "reward: name at least one reward (e.g. 'math')")
        if self.tool:
            from grpo_fast.tools import Toolbox, load_tool

            Toolbox([load_tool(spec) for spec in self.tool])  # a bad schema: refused, named
        RunRewards.build(list(self.reward), max_new_tokens=self.max_new_tokens)
        build_process_reward(self)
        parse_report_to(self.report_to)
        check_model_name(self.model)
        check_device(self.device)
        need(0 <= self.lora_dropout < 1, f"lora_dropout must be in [0, 1): {self.lora_dropout}")
        if self.lora_r > 0:
            import importlib.util

            need(
                importlib.util.find_spec("peft") is not None,
                "LoRA (lora_r > 0) needs peft: pip install 'grpo-fast[peft]'",
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
        need(self.max_staleness >= 0, f"max_staleness must be >= 0, got {self.max_staleness}")
        need(
            not self.async_rollouts or self.sampler != "vllm",
            "--async-rollouts samples beside the optimizer, which the colocated vLLM engine "
            "(--sampler vllm, in the trainer's process and memory) cannot: use --sampler "
            "vllm-server, or --sampler hf",
        )
        need(
            self.vllm_url is None or self.sampler == "vllm-server",
            f"--vllm-url is for --sampler vllm-server (this run samples with {self.sampler})",
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

    def loss_options(self) -> LossOptions:
        """The policy loss's options of this run (checked as it is built)."""
        return LossOptions(
            surrogate=self.surrogate,
            eps_low=self.eps_low,
            eps_high=self.eps_high,
            sapo_tau_pos=self.sapo_tau_pos,
            sapo_tau_neg=self.sapo_tau_neg,
            loss_type=self.loss_type,
            max_completion_length=self.max_new_tokens,
            beta=self.beta,
            kl=self.kl,
            entropy_coef=self.entropy_coef,
            top_entropy_quantile=self.top_entropy_quantile,
            sampler_correction=sampler_correction(self),
            sampler_level=self.sampler_level,
            sampler_threshold=self.sampler_threshold,
        )

    @classmethod
    def from_dict(cls, values: dict[str, Any]) -> TrainerConfig:
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise InvalidInputError(f"unknown trainer option(s) {unknown}; known: {sorted(known)}")
        return cls(**values)


@dataclass(frozen=True)
class LoraOptions:
    """LoRA adapters (peft's ``LoraConfig``): rank ``r``, scale ``alpha / r``, dropout, and
    the modules to adapt (empty: peft's default for the architecture; ``"all-linear"``:
    every linear layer but the output head)."""

    r: int
    alpha: float = 32.0
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ()


def sampler_correction(cfg: TrainerConfig) -> str:
    """``cfg.sampler_correction`` with ``auto`` resolved: ``tis`` for vLLM and for
    asynchronous rollouts (sampled by an older policy), ``none`` for synchronous HF
    sampling (the training model itself: the same log-probs)."""
    if cfg.sampler_correction != "auto":
        return cfg.sampler_correction
    return "none" if cfg.sampler == "hf" and not cfg.async_rollouts else "tis"


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
