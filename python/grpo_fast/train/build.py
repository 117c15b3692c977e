"""The parts of a run, each built by one small function from the config, so each can
be tested or replaced alone: the data, the model, the sampler, the optimizer and
its schedule, the prompt order.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import torch

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling import HFSampler, SamplingParams, VLLMSampler
from grpo_fast.train.config import TrainerConfig, sampler_correction
from grpo_fast.train.curriculum import Curriculum, UniformPrompts
from grpo_fast.train.data import check_tasks, read_tasks, truncate_prompts
from grpo_fast.train.devices import device_type, set_cpu_threads
from grpo_fast.train.gguf import model_source
from grpo_fast.train.modeling import (
    DTYPES,
    MixedPrecision,
    load_config,
    load_model,
    max_positions,
    prepare_model,
    reference_model,
)
from grpo_fast.train.schedules import lr_multiplier
from grpo_fast.train.tracking import say

__all__ = [
    "fit_max_steps",
    "fit_prompts",
    "build_model",
    "build_optimizer",
    "build_prompt_order",
    "build_sampler",
    "build_scheduler",
    "hf_sampling_dtype",
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


def fit_max_steps(cfg: TrainerConfig, num_rows: int, world: int) -> TrainerConfig:
    """``cfg`` with ``max_steps`` from ``num_train_epochs`` when it is set (TRL's
    alternative): ``ceil(epochs x rows / (prompts_per_step x processes))``."""
    if cfg.num_train_epochs is None:
        return cfg
    steps = math.ceil(cfg.num_train_epochs * num_rows / (cfg.prompts_per_step * world))
    return dataclasses.replace(cfg, max_steps=max(1, steps))


def fit_prompts(
    cfg: TrainerConfig,
    tokenizer: Any,
    model: Any,
    prompts: dict[str, list[str]],
    *,
    verbose: bool,
) -> dict[str, list[str]]:
    """The rendered prompts (``{"train": [...], "eval": [...]}``) cut from the left to
    ``max_prompt_length`` tokens (how many were cut is said when ``verbose``); then
    the longest one plus ``max_new_tokens`` is checked against the model's positions
    (from a given model's config, else its ``config.json``: before the weights load)."""
    fitted, longest = {}, 0
    for what, texts in prompts.items():
        if not texts:  # no eval file
            fitted[what] = texts
            continue
        fitted[what], cut, n = truncate_prompts(texts, tokenizer, cfg.max_prompt_length)
        longest = max(longest, n)
        if cut and verbose:
            say(
                f"max_prompt_length {cfg.max_prompt_length}: {cut} of {len(texts)} {what} "
                "prompts were longer and lost their beginning"
            )
    limit = max_positions(model.config if model is not None else load_config(cfg.model))
    if limit is not None and longest + cfg.max_new_tokens > limit:
        fix = (
            f"set --max-prompt-length {limit - cfg.max_new_tokens} (prompts then lose their "
            "beginning) or lower --max-new-tokens"
            if limit > cfg.max_new_tokens
            else "lower --max-new-tokens"
        )
        raise InvalidInputError(
            f"the longest prompt has {longest} tokens and max_new_tokens is "
            f"{cfg.max_new_tokens}: {longest + cfg.max_new_tokens} tokens, more than the "
            f"model's {limit} positions; {fix}"
        )
    return fitted


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


def hf_sampling_dtype(cfg: TrainerConfig, model: Any, *, sharded: bool = False) -> Any:
    """The dtype of HF sampling's copy of the weights (``hf_sampling_copy``), or None:
    sample from the model itself (fp32 runs, weights mostly 16-bit already as LoRA's
    frozen base, or FSDP2's shards)."""
    dtype = DTYPES[cfg.dtype]
    if not cfg.hf_sampling_copy or dtype == torch.float32 or sharded:
        return None
    sizes = {True: 0, False: 0}
    for p in model.parameters():
        sizes[p.dtype == torch.float32] += p.numel()
    return dtype if sizes[True] > sizes[False] else None


def build_sampler(cfg: TrainerConfig, model: Any, tokenizer: Any, *, sharded: bool = False) -> Any:
    """``HFSampler`` on the training model (or its 16-bit copy, :func:`hf_sampling_dtype`),
    a colocated ``VLLMSampler`` or a ``VLLMServerSampler``; vLLM's precision is the
    trainer's unless ``vllm_dtype`` says; ``sharded``: the model is FSDP2's."""
    dtype = cfg.dtype if cfg.vllm_dtype == "auto" else cfg.vllm_dtype
    eager = device_type(cfg.device) == "cpu"  # compiled graphs: minutes of start-up on a CPU
    model_dir = model_source(cfg.model)  # a GGUF file: its converted directory
    if cfg.sampler == "vllm":
        return VLLMSampler(model_dir, dtype=dtype, seed=cfg.seed, enforce_eager=eager)
    if cfg.sampler == "vllm-server":
        from grpo_fast.sampling.vllm_server import VLLMServerSampler

        args = ["--seed", str(cfg.seed), "--gpu-memory-utilization", "0.3"]
        args += ["--enforce-eager"] if eager else []
        return VLLMServerSampler(cfg.vllm_url, model=model_dir, dtype=dtype, server_args=args)
    # The loss recomputes the log-probs in its own forward: the sampler's are needed
    # only for a sampler correction asked for by name.
    return HFSampler(
        model,
        tokenizer,
        logprobs=sampler_correction(cfg) != "none",
        weights_dtype=hf_sampling_dtype(cfg, model, sharded=sharded),
    )


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
