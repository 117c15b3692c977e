"""The parts of a run, each built by one small function from the config, so each can
be tested or replaced alone: the data, the model, the sampler, the optimizer and
its schedule, the prompt order.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling import HFSampler, SamplingParams, VLLMSampler
from grpo_fast.train.config import TrainerConfig, sampler_correction
from grpo_fast.train.curriculum import Curriculum, UniformPrompts
from grpo_fast.train.data import check_tasks, read_tasks
from grpo_fast.train.devices import device_type, set_cpu_threads
from grpo_fast.train.modeling import (
    DTYPES,
    MixedPrecision,
    load_model,
    prepare_model,
    reference_model,
)
from grpo_fast.train.schedules import lr_multiplier

__all__ = [
    "build_model",
    "build_optimizer",
    "build_prompt_order",
    "build_sampler",
    "build_scheduler",
    "load_rows",
    "sampling_params",
]


def load_rows(
    cfg: TrainerConfig,
    world: int,
    train_rows: Sequence[dict[str, Any]] | None = None,
    eval_rows: Sequence[dict[str, Any]] | None = None,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The training and held-out rows: the given ones checked, or read from the config's
    files; ``eval_size`` of the held-out ones."""
    columns = {"prompt_column": cfg.prompt_column, "answer_column": cfg.answer_column}
    train = (
        read_tasks(cfg.train_file, "train_file", **columns)
        if train_rows is None
        else check_tasks(train_rows, "train_rows", **columns)
    )
    if cfg.prompts_per_step * world > len(train):
        raise InvalidInputError(
            f"prompts_per_step ({cfg.prompts_per_step}) x {world} process(es) is "
            f"more than the {len(train)} training rows; lower --prompts-per-step"
        )
    held: list[dict[str, Any]] = []
    if eval_rows is not None:
        held = check_tasks(eval_rows, "eval_rows", **columns)
    elif cfg.eval_file:
        held = read_tasks(cfg.eval_file, "eval_file", **columns)
    return train, held[: cfg.eval_size or None]


def build_model(
    cfg: TrainerConfig, model: Any, device: torch.device
) -> tuple[Any, MixedPrecision, Any]:
    """The trained model on ``device`` (loaded from ``cfg.model`` when None is given; dtype,
    gradient checkpointing, LoRA), its precision, and the frozen reference (None when
    ``beta`` is 0)."""
    lora = cfg.lora()
    if model is None:  # LoRA's frozen base loads in its 16-bit dtype; trained weights in fp32
        model = load_model(cfg.model, dtype=DTYPES[cfg.dtype] if lora else torch.float32)
    model = prepare_model(
        model.to(device),
        dtype=cfg.dtype,
        lora=lora,
        gradient_checkpointing=cfg.gradient_checkpointing,
    )
    precision = MixedPrecision(cfg.dtype, device)
    set_cpu_threads(cfg.torch_threads, model, device)
    ref = reference_model(model, cfg.dtype) if cfg.beta > 0 else None
    return model, precision, ref


def sampling_params(cfg: TrainerConfig) -> SamplingParams:
    return SamplingParams(
        max_new_tokens=cfg.max_new_tokens,
        temperature=cfg.temperature,
        top_p=cfg.top_p,
        top_k=cfg.top_k,
    )


def build_sampler(cfg: TrainerConfig, model: Any, tokenizer: Any) -> Any:
    """``HFSampler`` on the training model itself, a colocated ``VLLMSampler`` or a
    ``VLLMServerSampler``; vLLM's precision is the trainer's unless ``vllm_dtype`` says."""
    dtype = cfg.dtype if cfg.vllm_dtype == "auto" else cfg.vllm_dtype
    eager = device_type(cfg.device) == "cpu"  # compiled graphs: minutes of start-up on a CPU
    if cfg.sampler == "vllm":
        return VLLMSampler(cfg.model, dtype=dtype, seed=cfg.seed, enforce_eager=eager)
    if cfg.sampler == "vllm-server":
        from grpo_fast.sampling.vllm_server import VLLMServerSampler

        args = ["--seed", str(cfg.seed), "--gpu-memory-utilization", "0.3"]
        args += ["--enforce-eager"] if eager else []
        return VLLMServerSampler(cfg.vllm_url, model=cfg.model, dtype=dtype, server_args=args)
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
    """The schedule of ``lr_schedule`` (:mod:`grpo_fast.train.schedules`), counted in
    optimizer steps."""
    total = cfg.max_steps * cfg.num_iterations
    multiplier = lr_multiplier(cfg.lr_schedule, cfg.warmup_steps, total)
    return torch.optim.lr_scheduler.LambdaLR(optimizer, multiplier)


def build_prompt_order(cfg: TrainerConfig, num_prompts: int) -> Curriculum | UniformPrompts:
    if cfg.curriculum:
        return Curriculum(num_prompts, floor=cfg.curriculum_floor, seed=cfg.seed)
    return UniformPrompts(num_prompts, seed=cfg.seed)
