"""Several processes under ``torchrun``: who this process is, gathers, gradient averaging.

Every rank samples and scores its own share of a step's prompts; the rewards
are gathered from all ranks before the group statistics, so every rank sees
the same advantages, curriculum and metrics; gradients are averaged with
``all_reduce`` (gloo on CPU, nccl on GPU). With one process (no
``WORLD_SIZE``) every method is a no-op.
"""

from __future__ import annotations

import os

import numpy as np
import torch
import torch.distributed as dist

__all__ = ["Distributed"]


class Distributed:
    """The process group torchrun describes in the environment (``WORLD_SIZE``, ``RANK``)."""

    def __init__(self, world: int = 1, rank: int = 0, local_rank: int = 0) -> None:
        self.world, self.rank, self.local_rank = world, rank, local_rank

    @classmethod
    def from_env(cls, device_type: str) -> Distributed:
        """Join the process group torchrun set up (initialising it if needed)."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        out = cls(world, int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0")))
        if world > 1 and not dist.is_initialized():
            dist.init_process_group("nccl" if device_type == "cuda" else "gloo")
        return out

    @property
    def enabled(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def gather(self, x: np.ndarray) -> np.ndarray:
        """Concatenate equal-shaped arrays from all ranks, in rank order."""
        if not self.enabled:
            return x
        t = torch.as_tensor(np.ascontiguousarray(x))
        out = [torch.empty_like(t) for _ in range(self.world)]
        dist.all_gather(out, t)
        return torch.cat(out).numpy()

    def all_min(self, value: int) -> int:
        if not self.enabled:
            return value
        t = torch.tensor([value])
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return int(t.item())

    def average_grads(self, params: list[torch.nn.Parameter]) -> None:
        if not self.enabled:
            return
        for p in params:
            if p.grad is not None:
                dist.all_reduce(p.grad)
                p.grad /= self.world

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()
