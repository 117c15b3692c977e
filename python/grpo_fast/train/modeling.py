"""The model side: loading a causal LM and its tokenizer (local directory or hub id),
its weights from a checkpoint, and its setup for training (dtype, gradient
checkpointing, LoRA, the reference model, mixed precision).

The loss's forward (packing, the shared-prompt cache, completion log-probs) is
:mod:`grpo_fast.train.forward`; ``grpo-fast export`` is
:mod:`grpo_fast.train.export`; their names stay importable from here.

Precision (:func:`prepare_model`, :class:`MixedPrecision`): the weights the
optimizer updates stay fp32 (master weights: AdamW's update at a learning
rate of 1e-6 is below bf16's resolution of a weight), the forward runs under
``torch.autocast`` in bf16 or fp16, and fp16 scales the loss
(``torch.amp.GradScaler``). Frozen weights (the base model under LoRA
adapters, the reference model) are stored in the 16-bit dtype.
"""

from __future__ import annotations

import contextlib
import copy
import importlib
import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from grpo_fast.errors import InvalidInputError
from grpo_fast.train.config import DTYPE_NAMES, LoraOptions
from grpo_fast.train.gguf import model_source
from grpo_fast.train.hub import check_hub, check_model_name, hub_error

__all__ = [
    "DTYPES",
    "AdaptersDisabled",
    "LoraOptions",
    "MixedPrecision",
    "check_model_name",
    "is_peft_model",
    "load_config",
    "load_model",
    "load_tokenizer",
    "load_weights",
    "max_positions",
    "prepare_model",
    "reference_model",
    "refresh_copy",
    "weights_copy",
]

#: ``--dtype`` names and their torch dtypes.
DTYPES = dict(zip(DTYPE_NAMES, (torch.float32, torch.bfloat16, torch.float16), strict=True))


def _from_pretrained(
    load: Any, name: str, what: str, *, flag: str = "--model", **kwargs: Any
) -> Any:
    # A GGUF file: its converted directory (grpo_fast.train.gguf). A local directory by
    # its absolute path: LoRA adapters record their base by the name it was loaded from,
    # and must find it from any working directory.
    name = model_source(name)
    path = Path(name).expanduser()
    source = str(path.resolve()) if path.is_dir() else name
    if not path.is_dir():
        check_hub(name, what, flag)
    try:
        return load(source, **kwargs)
    except (OSError, ValueError) as e:
        raise InvalidInputError(hub_error(name, what, e, flag)) from None


def max_positions(config: Any) -> int | None:
    """The longest sequence (prompt + completion) a model's positions allow, from its
    config (``max_position_embeddings``; GPT-2's ``n_positions``); None when it names
    none (no limit known)."""
    for name in ("max_position_embeddings", "n_positions", "max_sequence_length", "n_ctx"):
        value = getattr(config, name, None)
        if isinstance(value, int) and value > 0:
            return value
    return None


def load_config(path: str) -> Any:
    """A model's configuration (``config.json``) alone: no weights are loaded."""
    from transformers import AutoConfig

    return _from_pretrained(AutoConfig.from_pretrained, path, "config")


def load_tokenizer(path: str) -> Any:
    """The tokenizer of a model directory or hub id, set up for batched generation
    (left padding; the EOS token as pad token when it has none)."""
    tok = _from_pretrained(AutoTokenizer.from_pretrained, path, "tokenizer")
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    tok.padding_side = "left"
    return tok


def load_model(
    path: str,
    device: torch.device | str = "cpu",
    *,
    dtype: torch.dtype = torch.float32,
    flag: str = "--model",
) -> Any:
    """A causal LM (a local directory, a GGUF file or a hub id) in ``dtype`` on ``device``,
    in training mode.

    A hub id is downloaded by ``from_pretrained`` (or read from its cache);
    when the hub cannot be reached, the error says how to use a local copy
    (given with ``flag``).
    """
    model = _from_pretrained(
        AutoModelForCausalLM.from_pretrained, path, "model", flag=flag, dtype=dtype
    )
    return model.to(device).train()


# ---------------------------------------------------------------------- precision, LoRA
def is_peft_model(model: Any) -> bool:
    """Whether ``model`` is a peft model (LoRA adapters over a base model)."""
    return hasattr(model, "disable_adapter") and hasattr(model, "get_base_model")


def _conv1d_targets(model: Any) -> bool:
    # GPT-2's attention and MLP are transformers' Conv1D (weights stored transposed).
    from transformers.pytorch_utils import Conv1D

    return any(isinstance(m, Conv1D) for m in model.modules())


def add_lora(model: Any, options: LoraOptions) -> Any:
    """``model`` with trainable LoRA adapters (fp32) over its frozen weights."""
    try:
        import peft
    except ImportError as e:
        raise InvalidInputError(f"LoRA needs peft (pip install 'grpo-fast[peft]'): {e}") from None
    targets: Any = list(options.target_modules) or None
    if targets == ["all-linear"]:
        targets = "all-linear"
    config = peft.LoraConfig(
        r=options.r,
        lora_alpha=options.alpha,
        lora_dropout=options.dropout,
        target_modules=targets,
        fan_in_fan_out=_conv1d_targets(model),
        task_type="CAUSAL_LM",
    )
    try:
        with warnings.catch_warnings():
            # peft 0.21 reads transformers' deprecated is_gradient_checkpointing.
            warnings.filterwarnings("ignore", ".*is_gradient_checkpointing", FutureWarning)
            wrapped = peft.get_peft_model(model, config)
    except ValueError as e:
        raise InvalidInputError(f"LoRA: {e}") from None
    head = wrapped.get_output_embeddings()
    if hasattr(head, "base_layer"):
        raise InvalidInputError(
            "LoRA on the output head is not supported (the log-probs read its weight "
            "directly); leave lm_head out of lora_target_modules"
        )
    return wrapped


def enable_gradient_checkpointing(model: Any) -> None:
    """Recompute each decoder layer's activations in the backward (non-reentrant)."""
    kwargs = {"use_reentrant": False}
    base = model.get_base_model() if is_peft_model(model) else model
    if hasattr(base, "activation_checkpointing_enable"):  # transformers >= 5.x
        base.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
    else:
        base.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)


def checkpointing(model: Any) -> bool:
    """Whether gradient checkpointing is on in any of ``model``'s layers."""
    return any(getattr(m, "gradient_checkpointing", False) is True for m in model.modules())


def prepare_model(
    model: Any,
    *,
    dtype: str = "fp32",
    lora: LoraOptions | None = None,
    gradient_checkpointing: bool = False,
) -> Any:
    """Set a loaded causal LM up for training.

    Full fine-tuning keeps every weight fp32 (the optimizer's master weights;
    ``dtype`` is then the autocast dtype of :class:`MixedPrecision`). With
    ``lora``, the base weights are frozen and stored in ``dtype`` and the
    adapters, the only trainable weights, are fp32 (peft's default).
    """
    if dtype not in DTYPES:
        raise InvalidInputError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    if lora is not None and not is_peft_model(model):
        model = add_lora(model.to(DTYPES[dtype]), lora)
    elif lora is None and not is_peft_model(model):
        model = model.float()
    if gradient_checkpointing:
        enable_gradient_checkpointing(model)
    return model.train()


@dataclass(frozen=True)
class AdaptersDisabled:
    """A LoRA model's base: the policy itself with its adapters switched off, the
    reference model of a LoRA run (no second copy of the weights)."""

    model: Any


def reference_model(model: Any, dtype: str = "fp32") -> Any:
    """The frozen starting policy for the KL penalty: the base under LoRA adapters
    (:class:`AdaptersDisabled`), or a copy stored in ``dtype``."""
    if is_peft_model(model):
        return AdaptersDisabled(model)
    return copy.deepcopy(model).to(DTYPES[dtype]).eval().requires_grad_(False)


def weights_copy(model: Any, dtype: torch.dtype) -> Any:
    """A frozen copy of ``model`` for sampling, its floating-point weights stored in
    ``dtype``; buffers (rotary frequencies, ...) and gradients are not copied as 16-bit
    weights: buffers keep their dtype, gradients are dropped."""
    grads = [p.grad for p in model.parameters()]
    for p in model.parameters():
        p.grad = None  # not deep-copied
    try:
        dup = copy.deepcopy(model)
    finally:
        for p, g in zip(model.parameters(), grads, strict=True):
            p.grad = g
    with torch.no_grad():
        for p in dup.parameters():
            if p.is_floating_point():
                p.data = p.data.to(dtype)
    return dup.eval().requires_grad_(False)


def refresh_copy(dup: Any, model: Any) -> None:
    """``model``'s current weights into its :func:`weights_copy` (cast to its dtype)."""
    with torch.no_grad():
        for d, p in zip(dup.parameters(), model.parameters(), strict=True):
            d.copy_(p)


class MixedPrecision:
    """Autocast and loss scaling for ``dtype`` (``fp32``: neither).

    ``fp16`` needs the loss scaled (``torch.amp.GradScaler``) so small
    gradients survive in 16 bits; a step whose gradients overflowed is
    skipped, and :meth:`step` says so (the LR schedule then does not move).
    """

    def __init__(self, dtype: str, device: torch.device | str) -> None:
        if dtype not in DTYPES:
            raise InvalidInputError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
        self.dtype = DTYPES[dtype]
        self.device_type = torch.device(device).type
        self.scaler = torch.amp.GradScaler(self.device_type, enabled=dtype == "fp16")

    def autocast(self) -> Any:
        """The forward's context: ``torch.autocast`` in the 16-bit dtype."""
        if self.dtype == torch.float32:
            return contextlib.nullcontext()
        return torch.autocast(self.device_type, dtype=self.dtype)

    def backward(self, loss: torch.Tensor) -> None:
        self.scaler.scale(loss).backward()

    def unscale(self, optimizer: torch.optim.Optimizer) -> None:
        """Bring the gradients back to their true scale (before clipping them)."""
        self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> bool:
        """The optimizer step; False when fp16 gradients overflowed and it was skipped."""
        if not self.scaler.is_enabled():
            optimizer.step()
            return True
        scale = self.scaler.get_scale()
        self.scaler.step(optimizer)
        self.scaler.update()
        return self.scaler.get_scale() >= scale

    def state_dict(self) -> dict[str, Any]:
        return self.scaler.state_dict()

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state:
            self.scaler.load_state_dict(state)


# ---------------------------------------------------------------------- checkpoints
def load_weights(model: Any, path: str | Path, device: torch.device | str = "cpu") -> None:
    """Load a checkpoint's weights into ``model``: LoRA adapters
    (``adapter_model.safetensors``) into a peft model, else the full state
    (``model.safetensors``; tied weights saved once may be missing)."""
    from safetensors.torch import load_file

    path = Path(path)
    if is_peft_model(model):
        from peft import set_peft_model_state_dict

        file = path / "adapter_model.safetensors"
        if not file.is_file():
            raise InvalidInputError(
                f"checkpoint {path} has no LoRA adapters (adapter_model.safetensors) but this "
                "run trains LoRA adapters (lora_r > 0)"
            )
        result = set_peft_model_state_dict(model, load_file(file, device=str(device)))
        unexpected = getattr(result, "unexpected_keys", [])
        if unexpected:
            raise InvalidInputError(f"checkpoint {path} does not match the adapters: {unexpected}")
        return
    index = path / "model.safetensors.index.json"
    if index.is_file():  # save_pretrained shards large models
        files = sorted(set(json.loads(index.read_text())["weight_map"].values()))
    elif (path / "model.safetensors").is_file():
        files = ["model.safetensors"]
    else:
        what = "LoRA adapters" if (path / "adapter_model.safetensors").is_file() else "no weights"
        raise InvalidInputError(
            f"checkpoint {path} holds {what}, not the full model.safetensors this run needs"
        )
    weights: dict[str, torch.Tensor] = {}
    for name in files:
        weights.update(load_file(path / name, device=str(device)))
    try:
        missing, unexpected = model.load_state_dict(weights, strict=False)
    except RuntimeError as e:  # shapes differ
        raise InvalidInputError(f"checkpoint {path} does not match the model: {e}") from None
    # Tied embeddings are saved once; anything else missing is a real mismatch.
    if unexpected or any("lm_head" not in k for k in missing):
        raise InvalidInputError(
            f"checkpoint {path} does not match the model: missing {missing}, "
            f"unexpected {unexpected}"
        )


def _stored_dtype(name: str, flag: str = "--model") -> torch.dtype:
    """The dtype a model's weights are stored in (its config says), fp32 when unsaid."""
    from transformers import AutoConfig

    config = _from_pretrained(AutoConfig.from_pretrained, name, "config", flag=flag)
    stored = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if isinstance(stored, str):
        stored = getattr(torch, stored, None)
    return stored if isinstance(stored, torch.dtype) else torch.float32


# Names that moved to the loss's forward and to the export command.
_MOVED = {
    **dict.fromkeys(("Packed", "completion_logprobs", "pack", "prefill_groups"), "forward"),
    **dict.fromkeys(("decoder_of", "cache_argument", "positions", "completion_hidden"), "forward"),
    "Prefill": "forward",
    "export_model": "export",
}


def __getattr__(name: str) -> Any:
    if name in _MOVED:
        return getattr(importlib.import_module(f"grpo_fast.train.{_MOVED[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
