"""GGUF model files (llama.cpp's format) as transformers model directories.

``--model path/to/model.gguf`` (train, eval, score's model options, export) and
``Trainer(model="....gguf")`` read the file through transformers (``gguf_file=``: the
quantised weights de-quantised, the tokenizer and its chat template from the file's
metadata) once, and write it as a plain fp32 safetensors directory in a cache
(``$GRPO_FAST_CACHE``, default ``~/.cache/grpo-fast``, under ``gguf/``), named by the
file's content hash. Everything after that (the trainer's model at the run's dtype,
vLLM's engine, checkpoints, ``export``) sees a normal model directory: transformers
cannot save a model loaded from GGUF ("quantized with gguf and is not serializable"),
and vLLM loads a directory on every platform.

Reading the file needs the ``gguf`` package (the ``gguf`` extra).

Examples
--------
>>> is_gguf("models/SmolLM2-135M-Instruct.Q4_1.gguf"), is_gguf("HuggingFaceTB/SmolLM2")
(True, False)
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from grpo_fast.errors import InvalidInputError

__all__ = ["GGUF_MAGIC", "cache_dir", "check_gguf", "gguf_directory", "is_gguf", "model_source"]

#: The first four bytes of every GGUF file.
GGUF_MAGIC = b"GGUF"
#: Written last into a converted directory: its presence means the conversion finished.
_DONE = ".grpo-fast-gguf-done"


def is_gguf(name: str | os.PathLike[str]) -> bool:
    """Whether ``name`` names a GGUF file (by its suffix; the file need not exist)."""
    return str(name).lower().endswith(".gguf")


def cache_dir() -> Path:
    """Where converted GGUF models are kept: ``$GRPO_FAST_CACHE/gguf`` (default
    ``~/.cache/grpo-fast/gguf``)."""
    root = os.environ.get("GRPO_FAST_CACHE") or Path("~/.cache/grpo-fast").expanduser()
    return Path(root) / "gguf"


def check_gguf(name: str | os.PathLike[str]) -> Path:
    """The GGUF file ``name`` names, checked without reading its tensors: it exists, is
    a file and starts with the GGUF magic bytes; and the ``gguf`` package is there."""
    path = Path(name).expanduser()
    if not path.is_file():
        what = "a directory" if path.is_dir() else "not there"
        raise InvalidInputError(f"GGUF model {str(name)!r} is {what}; expected a .gguf file")
    try:
        with path.open("rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise InvalidInputError(f"cannot read GGUF model {str(name)!r}: {e.strerror}") from None
    if magic != GGUF_MAGIC:
        raise InvalidInputError(
            f"{str(name)!r} is not a GGUF file (it starts with {magic!r}, not {GGUF_MAGIC!r})"
        )
    if importlib.util.find_spec("gguf") is None:
        raise InvalidInputError(
            f"reading the GGUF model {str(name)!r} needs the gguf package: "
            "pip install 'grpo-fast[gguf]' (or pip install gguf)"
        )
    return path


def _digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(1 << 22):
            h.update(chunk)
    return h.hexdigest()[:16]


def gguf_directory(name: str | os.PathLike[str], *, verbose: bool = True) -> Path:
    """The transformers model directory of the GGUF file ``name``: converted on first
    use (de-quantised to fp32, with its tokenizer and chat template), then read from the
    cache. A damaged or unsupported file raises :class:`InvalidInputError` with the
    reason, and leaves nothing in the cache."""
    path = check_gguf(name)
    dest = cache_dir() / f"{path.stem}-{_digest(path)}"
    if (dest / _DONE).is_file():
        return dest
    if verbose:
        print(f"converting {path} to a transformers directory in {dest} (once)", flush=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}-", dir=dest.parent))
    try:
        _convert(path, tmp)
        (tmp / _DONE).write_text(str(path.resolve()) + "\n")
        try:
            tmp.rename(dest)
        except OSError:  # another process converted it meanwhile
            if not (dest / _DONE).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _convert(path: Path, out: Path) -> None:
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    where, file = str(path.parent.resolve()), path.name
    try:
        tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=file)
        loaded = AutoModelForCausalLM.from_pretrained(where, gguf_file=file, dtype=torch.float32)
    except Exception as e:  # gguf's and transformers' readers raise many kinds
        first = next((x for x in str(e).splitlines() if x.strip()), type(e).__name__)
        raise InvalidInputError(
            f"cannot read GGUF model {str(path)!r} (damaged, or an architecture or "
            f"quantisation transformers {transformers.__version__} does not read): {first}"
        ) from None
    # A model loaded from GGUF refuses save_pretrained: the same weights in a model built
    # from its config (without the quantisation entry) save as any other.
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    missing, unexpected = model.load_state_dict(loaded.state_dict(), strict=False)
    if unexpected or any("lm_head" not in k for k in missing):
        raise InvalidInputError(
            f"GGUF model {str(path)!r}: its weights do not fit its config "
            f"(missing {missing[:3]}, unexpected {unexpected[:3]})"
        )
    model.tie_weights()
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    if getattr(loaded, "generation_config", None) is not None:
        loaded.generation_config.save_pretrained(out)


def model_source(name: Any) -> Any:
    """``name`` itself, or the converted directory (a ``str``) when it is a GGUF file."""
    if isinstance(name, str | os.PathLike) and is_gguf(name):
        return str(gguf_directory(name))
    return name
