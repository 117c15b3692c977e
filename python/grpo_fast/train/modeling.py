"""The model side: loading a causal LM and its tokenizer (local directory or hub id,
dtype, gradient checkpointing, LoRA), and the forward pass that gives the
log-probs of sampled completions.

:func:`prefill_groups` is the one implementation of the shared-prompt cache:
the ``n`` rollouts of a prompt share its tokens, so the prompt runs through
the decoder once and its key/value cache, repeated ``n`` times, serves them
all. :class:`~grpo_fast.sampling.HFSampler` uses it before ``generate``, and
:func:`completion_logprobs` (the loss's forward, with gradients) before the
completion tokens: the prompt's share of the work drops by ``n``.

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
import inspect
import json
import os
import shutil
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from grpo_fast.errors import InvalidInputError
from grpo_fast.logprobs import token_logprobs

__all__ = [
    "DTYPES",
    "AdaptersDisabled",
    "LoraOptions",
    "MixedPrecision",
    "Packed",
    "check_model_name",
    "completion_logprobs",
    "export_model",
    "is_peft_model",
    "load_model",
    "load_tokenizer",
    "load_weights",
    "pack",
    "prefill_groups",
    "prepare_model",
    "reference_model",
]

#: ``--dtype`` names and their torch dtypes.
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}


def _hub_error(name: str, what: str, error: BaseException, flag: str = "--model") -> str:
    """One line saying why ``name`` could not be loaded, and what to do about it."""
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    chain = []
    e: BaseException | None = error
    while e is not None and len(chain) < 20:
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any(isinstance(c, LocalEntryNotFoundError) for c in chain):
        return _offline_message(name, what, flag)
    if any(isinstance(c, GatedRepoError) for c in chain):
        return (
            f"{name!r} is a gated model on the Hugging Face Hub: accept its terms on the Hub and "
            f"log in (hf auth login), or pass a local copy ({flag} DIR)"
        )
    if any(isinstance(c, RepositoryNotFoundError) for c in chain):
        return (
            f"{name!r} is neither a local directory nor a model on the Hugging Face Hub (a "
            "private one needs hf auth login); pass a model directory or a hub id such as "
            "Qwen/Qwen2.5-0.5B-Instruct"
        )
    first = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
    return f"cannot load the {what} of {name!r}: {first}"


def _offline_message(name: str, what: str, flag: str) -> str:
    return (
        f"cannot load the {what} of {name!r}: it is not a local directory, the Hugging Face "
        "Hub cannot be reached (no network, or HF_HUB_OFFLINE=1) and it is not in the local "
        f"cache; download it where there is a network (hf download {name} --local-dir DIR) "
        f"and pass that directory ({flag} DIR)"
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the hub's endpoint opens within ``timeout`` seconds
    (True behind a proxy: it decides, not this check)."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def _check_hub(name: str, what: str, flag: str) -> None:
    """For a hub id: fail at once (not after a minute of download retries) when the hub
    cannot be reached, offline or without a network, and ``name`` is not in the local
    cache; when it is cached, read it from there without trying the network."""
    from huggingface_hub import constants, try_to_load_from_cache

    offline = constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in (
        "1",
        "ON",
        "YES",
        "TRUE",
    )
    if not offline and _hub_reachable():
        return
    try:
        cached = isinstance(try_to_load_from_cache(name, "config.json"), str)
    except ValueError:  # not a valid repo id: from_pretrained says so
        return
    if not cached:
        raise InvalidInputError(_offline_message(name, what, flag))
    if not offline:  # the cache, without retries against a hub out of reach
        os.environ["HF_HUB_OFFLINE"] = "1"
        constants.HF_HUB_OFFLINE = True


def _from_pretrained(
    load: Any, name: str, what: str, *, flag: str = "--model", **kwargs: Any
) -> Any:
    # A local directory by its absolute path: LoRA adapters record their base by the
    # name it was loaded from, and must find it from any working directory.
    path = Path(name).expanduser()
    source = str(path.resolve()) if path.is_dir() else name
    if not path.is_dir():
        _check_hub(name, what, flag)
    try:
        return load(source, **kwargs)
    except (OSError, ValueError) as e:
        raise InvalidInputError(_hub_error(name, what, e, flag)) from None


def check_model_name(name: str, *, adapters: bool = False) -> None:
    """Check, without loading anything, that ``name`` can name a model: a local directory
    with ``config.json`` (or, with ``adapters``, LoRA adapters), or a Hugging Face Hub id.

    Whether a hub id exists is known only when it is loaded (:func:`load_model`).
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    path = Path(name).expanduser()
    if path.is_dir():
        if (path / "config.json").is_file():
            return
        if (path / "adapter_config.json").is_file():
            if adapters:
                return
            raise InvalidInputError(
                f"model directory {name!r} holds LoRA adapters, not a model: resume its run "
                f"with --resume, or merge them first (grpo-fast export {name} OUT_DIR)"
            )
        raise InvalidInputError(
            f"model directory {name!r} is not readable: expected a transformers model "
            "directory with config.json (and weights, tokenizer)"
        )
    if path.exists():
        raise InvalidInputError(f"model {name!r} is a file; expected a model directory or hub id")
    looks_local = name.startswith((".", "/", "~")) or name.count("/") > 1
    try:
        validate_repo_id(name)
    except HFValidationError:
        looks_local = True
    if looks_local:
        raise InvalidInputError(
            f"model {name!r} does not exist: expected a local model directory or a Hugging Face "
            "Hub id such as Qwen/Qwen2.5-0.5B-Instruct"
        )


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
    """A causal LM (a local directory or a hub id) in ``dtype`` on ``device``, in training mode.

    A hub id is downloaded by ``from_pretrained`` (or read from its cache);
    when the hub cannot be reached, the error says how to use a local copy
    (given with ``flag``).
    """
    model = _from_pretrained(
        AutoModelForCausalLM.from_pretrained, path, "model", flag=flag, dtype=dtype
    )
    return model.to(device).train()


# ---------------------------------------------------------------------- precision, LoRA
@dataclass(frozen=True)
class LoraOptions:
    """LoRA adapters (peft's ``LoraConfig``): rank ``r``, scale ``alpha / r``, dropout, and
    the modules to adapt (empty: peft's default for the architecture; ``"all-linear"``:
    every linear layer but the output head)."""

    r: int
    alpha: float = 32.0
    dropout: float = 0.0
    target_modules: tuple[str, ...] = ()


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


def export_model(
    checkpoint: str | Path, out: str | Path, *, base: str | None = None, dtype: str | None = None
) -> Path:
    """Write a checkpoint as a plain transformers model directory (weights, config,
    tokenizer) that ``from_pretrained`` loads: LoRA adapters are merged into
    their base model (``base``: default, the one the adapters name; a sharded
    checkpoint holds its base).

    ``dtype`` (``fp32``, ``bf16``, ``fp16``): default, the dtype the base
    model is stored in. ``out`` must not hold files yet.
    """
    ckpt, out = Path(checkpoint), Path(out)
    adapters = (ckpt / "adapter_config.json").is_file()
    if not adapters and not (ckpt / "config.json").is_file():
        raise InvalidInputError(
            f"{str(ckpt)!r} is not a checkpoint: expected adapter_config.json (LoRA) or "
            "config.json in it"
        )
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        raise InvalidInputError(f"output directory {str(out)!r} already exists and is not empty")
    if dtype is not None and dtype not in DTYPES:
        raise InvalidInputError(f"dtype must be one of {tuple(DTYPES)}, got {dtype!r}")
    from grpo_fast.train.checkpoint import (  # (it imports this module)
        is_sharded,
        load_sharded_model,
    )

    if is_sharded(ckpt):  # --parallel fsdp: base and adapters inside
        model = load_sharded_model(ckpt)
        if is_peft_model(model):
            model = model.merge_and_unload()
        stored = _stored_dtype(str(ckpt))
    elif adapters:
        try:
            import peft
        except ImportError as e:
            raise InvalidInputError(
                f"merging LoRA adapters needs peft (pip install 'grpo-fast[peft]'): {e}"
            ) from None
        config = peft.PeftConfig.from_pretrained(str(ckpt))
        base = base or config.base_model_name_or_path
        if not base:
            raise InvalidInputError(
                f"{ckpt}: the adapters do not name their base model; pass it with --base-model"
            )
        model = load_model(base, flag="--base-model")
        stored = _stored_dtype(base, flag="--base-model")
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", ".*is_gradient_checkpointing", FutureWarning)
            model = peft.PeftModel.from_pretrained(model, str(ckpt)).merge_and_unload()
    else:
        model = load_model(str(ckpt))
        stored = _stored_dtype(str(ckpt))
    model = model.to(DTYPES[dtype] if dtype else stored).eval()
    tokenizer = _from_pretrained(AutoTokenizer.from_pretrained, str(ckpt), "tokenizer")
    # Written beside it and renamed: an interrupted export leaves no half model at ``out``.
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.parent / f".tmp-export-{out.name}"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    if out.exists():
        out.rmdir()  # empty (checked above)
    os.replace(tmp, out)
    return out


@dataclass(frozen=True)
class Packed:
    """Prompts left-padded ``[N, Lp]`` and completions right-padded ``[N, Tc]``, with masks.

    Side by side they form one row per completion, ``[pad.. prompt |
    completion ..pad]``.
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor  # bool

    def rows(self, rows: slice) -> Packed:
        return Packed(
            self.prompt_ids[rows],
            self.prompt_mask[rows],
            self.completion_ids[rows],
            self.completion_mask[rows],
        )


def pack(
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    pad_token_id: int,
    device: torch.device | str = "cpu",
) -> Packed:
    """Pad token-id lists into the tensors of :class:`Packed`."""

    def pad(rows: list[list[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(1, max((len(r) for r in rows), default=1))
        ids = torch.full((len(rows), width), pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            if r:
                cols = slice(width - len(r), width) if left else slice(0, len(r))
                ids[i, cols] = torch.tensor(r)
                mask[i, cols] = 1
        return ids.to(device), mask.to(device)

    pid, pmask = pad(prompt_ids, left=True)
    cid, cmask = pad(completion_ids, left=False)
    return Packed(pid, pmask, cid, cmask.bool())


def decoder_of(model: Any) -> Any:
    """The transformer under the LM head (``model.model`` for Qwen2 / Llama,
    ``model.transformer`` for GPT-2; under LoRA, the adapted base model's)."""
    if is_peft_model(model):
        model = model.get_base_model()
    return getattr(model, model.base_model_prefix, None)


_CACHE_ARGUMENT: dict[type, str | None] = {}


def cache_argument(decoder: Any) -> str | None:
    """The name of the decoder's key/value-cache argument (renamed ``cache`` in transformers
    5.x), or None when it has none."""
    kind = type(decoder)
    if kind not in _CACHE_ARGUMENT:
        params = inspect.signature(decoder.forward).parameters
        _CACHE_ARGUMENT[kind] = next((k for k in ("cache", "past_key_values") if k in params), None)
    return _CACHE_ARGUMENT[kind]


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids of a left-padded batch: 0 at each row's first real token."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


@dataclass(frozen=True)
class Prefill:
    """What :func:`prefill_groups` returns: the prompts' last hidden states ``[P, L, H]``
    and their cache repeated for the ``n`` rows of each prompt, under its argument name."""

    hidden: torch.Tensor
    cache: Any
    argument: str


def prefill_groups(
    decoder: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, n: int
) -> Prefill | None:
    """Run one row of every group of ``n`` equal rows through ``decoder`` and repeat
    its key/value cache ``n`` times (rows ``i * n .. (i + 1) * n - 1`` share a prompt).

    Returns None when the decoder has no cache to share (the caller then runs
    every row in full). Gradients flow unless the caller disables them.
    """
    name = None if decoder is None else cache_argument(decoder)
    if name is None:
        return None
    ids, attn = input_ids[::n], attention_mask[::n]
    out = decoder(input_ids=ids, attention_mask=attn, position_ids=positions(attn), use_cache=True)
    cache = getattr(out, name, None)
    if cache is None or not hasattr(cache, "batch_repeat_interleave"):
        return None
    cache.batch_repeat_interleave(n)
    return Prefill(out.last_hidden_state, cache, name)


def completion_hidden(
    model: Any, packed: Packed, *, group_size: int = 1, share_prompt_prefix: bool = True
) -> torch.Tensor:
    """The decoder's hidden states ``[N, Tc, H]`` that predict each completion token.

    With ``share_prompt_prefix`` and rows that are whole groups of
    ``group_size`` completions of one prompt, each prompt runs once
    (:func:`prefill_groups`); otherwise every row runs in full. Both give the
    same values.
    """
    decoder = decoder_of(model)
    pid, pmask, cid, cmask = (
        packed.prompt_ids,
        packed.prompt_mask,
        packed.completion_ids,
        packed.completion_mask.long(),
    )
    n, Tc = cid.shape
    G = group_size
    pre = None
    # Under gradient checkpointing the layers drop the cache while they record for the
    # backward (a recompute would write it twice): every row then runs in full.
    recomputed = torch.is_grad_enabled() and model.training and checkpointing(model)
    if share_prompt_prefix and G > 1 and n % G == 0 and not recomputed:
        pre = prefill_groups(decoder, pid, pmask, G)
    if pre is None:
        ids = torch.cat([pid, cid], dim=1)
        attn = torch.cat([pmask, cmask], dim=1)
        out = decoder(
            input_ids=ids, attention_mask=attn, position_ids=positions(attn), use_cache=False
        )
        Lp = pid.shape[1]
        return out.last_hidden_state[:, Lp - 1 : Lp - 1 + Tc]
    # The last prompt token predicts the first completion token; the cache
    # holds the whole prompt, so the completion's own tokens (but the last)
    # predict the rest.
    parts = [pre.hidden[:, -1:].repeat_interleave(G, 0)]
    if Tc > 1:
        attn = torch.cat([pmask, cmask], dim=1)[:, :-1]
        last = positions(pmask)[:, -1:]
        pos = last + 1 + torch.arange(Tc - 1, device=cid.device).expand(n, -1)
        rest = decoder(
            input_ids=cid[:, :-1],
            attention_mask=attn,
            position_ids=pos,
            use_cache=True,
            **{pre.argument: pre.cache},
        )
        parts.append(rest.last_hidden_state)
    return torch.cat(parts, dim=1)


def completion_logprobs(
    model: Any,
    packed: Packed,
    *,
    temperature: float = 1.0,
    group_size: int = 1,
    share_prompt_prefix: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies ``[N, Tc]`` of the completion tokens (0 where masked).

    Through the decoder's hidden states and the chunked
    :func:`~grpo_fast.logprobs.token_logprobs`, so the ``[N, T, V]`` logits
    never exist at once.
    """
    if isinstance(model, AdaptersDisabled):
        # The reference runs as a frozen copy would: adapters off, no dropout.
        policy, was_training = model.model, model.model.training
        policy.eval()
        try:
            with policy.disable_adapter():
                return completion_logprobs(
                    policy,
                    packed,
                    temperature=temperature,
                    group_size=group_size,
                    share_prompt_prefix=share_prompt_prefix,
                )
        finally:
            policy.train(was_training)
    hidden = completion_hidden(
        model, packed, group_size=group_size, share_prompt_prefix=share_prompt_prefix
    )
    head = model.get_output_embeddings()
    return token_logprobs(
        # Under autocast the last hidden state may come out in another dtype than the head.
        hidden.to(head.weight.dtype),
        head.weight,
        packed.completion_ids,
        bias=head.bias,
        temperature=temperature,
        mask=packed.completion_mask,
        return_entropy=True,
    )
