"""Checkpoints of a training run: writing, finding and loading ``checkpoints/step-N``.

A checkpoint directory holds the model and tokenizer (``save_pretrained``),
``trainer_state.pt`` (step, optimizer, scheduler, prompt order, world size)
and one ``rng-rank{R}.pt`` per process. It is written into a temporary
directory and renamed, so a ``step-N`` directory is never half-written.
"""

from __future__ import annotations

import os
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import torch

from grpo_fast.distributed import Distributed
from grpo_fast.errors import InvalidInputError

__all__ = ["find_resume", "load_checkpoint", "save_checkpoint"]


def _rng_state() -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),  # noqa: NPY002 (user code may use it)
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def _set_rng_state(rng: dict[str, Any]) -> None:
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])  # noqa: NPY002
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])


def save_checkpoint(
    out_dir: Path,
    step: int,
    *,
    model: Any,
    tokenizer: Any,
    trainer_state: dict[str, Any],
    dist: Distributed,
    keep: int,
) -> Path:
    """Write ``out_dir/checkpoints/step-N`` atomically (temp dir, then rename) and
    delete all but the ``keep`` newest checkpoints."""
    ckpt_root = out_dir / "checkpoints"
    final = ckpt_root / f"step-{step:07d}"
    tmp = ckpt_root / f".tmp-step-{step:07d}"
    if dist.is_main:
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
    dist.barrier()
    torch.save(_rng_state(), tmp / f"rng-rank{dist.rank}.pt")
    if dist.is_main:
        model.save_pretrained(tmp)
        tokenizer.save_pretrained(tmp)
        torch.save({"step": step, **trainer_state, "world": dist.world}, tmp / "trainer_state.pt")
    dist.barrier()
    if dist.is_main:
        shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
        done = sorted(ckpt_root.glob("step-*"))
        for old in done[: max(0, len(done) - max(1, keep))]:
            shutil.rmtree(old, ignore_errors=True)
    dist.barrier()
    return final


def find_resume(out_dir: Path, resume: str | None) -> Path | None:
    """The checkpoint ``resume`` names: a directory, or ``auto`` (the newest in
    ``out_dir``; none yet: None)."""
    if not resume:
        return None
    if resume == "auto":
        done = sorted((out_dir / "checkpoints").glob("step-*"))
        return done[-1] if done else None
    path = Path(resume)
    if not (path / "trainer_state.pt").is_file():
        raise InvalidInputError(f"{resume!r} is not a checkpoint (no trainer_state.pt)")
    return path


def load_checkpoint(path: Path, *, model: Any, device: torch.device, dist: Distributed) -> Any:
    """Load the weights into ``model`` and restore this rank's RNG states; return the
    trainer state (``step``, ``optimizer``, ``scheduler``, ``prompts``) for the caller
    to apply."""
    from safetensors.torch import load_file

    state = torch.load(path / "trainer_state.pt", weights_only=False)
    if state["world"] != dist.world:
        raise InvalidInputError(
            f"checkpoint {path} was written by {state['world']} processes, "
            f"this run has {dist.world}"
        )
    weights = load_file(path / "model.safetensors", device=str(device))
    missing, unexpected = model.load_state_dict(weights, strict=False)
    # Tied embeddings are saved once; anything else missing is a real mismatch.
    if unexpected or any("lm_head" not in k for k in missing):
        raise InvalidInputError(f"checkpoint {path} does not match the model: {missing}")
    _set_rng_state(torch.load(path / f"rng-rank{dist.rank}.pt", weights_only=False))
    return state
