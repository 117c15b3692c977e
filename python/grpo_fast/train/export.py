"""``grpo-fast export``: a checkpoint's model as one transformers model directory,
LoRA adapters merged into their base.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

from transformers import AutoTokenizer

from grpo_fast.errors import InvalidInputError
from grpo_fast.train.checkpoint import is_sharded, load_sharded_model
from grpo_fast.train.gguf import gguf_directory, is_gguf
from grpo_fast.train.modeling import (
    DTYPES,
    _from_pretrained,
    _stored_dtype,
    is_peft_model,
    load_model,
)

__all__ = ["export_model"]


def export_model(
    checkpoint: str | Path, out: str | Path, *, base: str | None = None, dtype: str | None = None
) -> Path:
    """Write a checkpoint as a plain transformers model directory (weights, config,
    tokenizer) that ``from_pretrained`` loads: LoRA adapters are merged into
    their base model (``base``: default, the one the adapters name; a sharded
    checkpoint holds its base); a GGUF file is written de-quantised.

    ``dtype`` (``fp32``, ``bf16``, ``fp16``): default, the dtype the base
    model is stored in. ``out`` must not hold files yet.
    """
    if is_gguf(checkpoint):  # a GGUF file: its de-quantised directory, written as it is
        checkpoint = gguf_directory(checkpoint)
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
