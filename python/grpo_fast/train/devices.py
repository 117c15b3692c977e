"""The device of a run: ``auto``, ``cpu``, ``cuda``, ``cuda:N``; torch's CPU threads; seeds.

torch is imported by the functions that need it: ``auto`` is checked without it.
"""

from __future__ import annotations

from typing import Any

from grpo_fast.errors import InvalidInputError

__all__ = ["check_device", "device_type", "resolve_device", "set_cpu_threads", "set_seed"]


def resolve_device(name: str, dist: Any) -> Any:
    """``auto``: CUDA when there is one; under torchrun each rank takes its local GPU."""
    import torch

    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if dist.enabled and name == "cuda":
        name = f"cuda:{dist.local_rank}"
    return torch.device(name)


def check_device(name: str) -> None:
    """``auto``, ``cpu``, ``cuda[:N]``, ...: one that exists here, or an error saying so."""
    if name == "auto":
        return
    import torch

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


def set_cpu_threads(threads: int, model: Any, device: Any) -> None:
    import torch

    if threads:
        torch.set_num_threads(threads)
    elif device.type == "cpu" and sum(p.numel() for p in model.parameters()) < 10_000_000:
        # A tiny model's ops are too small to split: extra threads only add
        # synchronisation (and contend with the Rust pool and other processes).
        torch.set_num_threads(1)


def device_type(name: str) -> str:
    """``cpu`` or ``cuda`` (``auto``: CUDA when there is one)."""
    import torch

    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return torch.device(name).type


def set_seed(seed: int) -> None:
    """Seed Python's, numpy's and torch's generators (CPU and every GPU), as
    ``transformers.set_seed`` does, without importing transformers' trainer utilities."""
    import random

    import numpy as np
    import torch

    random.seed(seed)
    np.random.seed(seed)  # noqa: NPY002 (the global generator, as transformers seeds it)
    torch.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
