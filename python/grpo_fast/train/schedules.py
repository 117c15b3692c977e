"""The learning rate after warmup (``--lr-schedule``): each schedule a function of the
optimizer step giving the multiplier of the peak learning rate, registered by name.

The same schedules as transformers' ``get_scheduler`` (``constant_with_warmup``,
``linear``, ``cosine``), written here so that a run does not import transformers'
trainer utilities (and peft with them). Importing this module does not import torch.

Examples
--------
>>> [round(SCHEDULE_REGISTRY["linear"](s, warmup=2, total=6), 2) for s in range(7)]
[0.0, 0.5, 1.0, 0.75, 0.5, 0.25, 0.0]
"""

from __future__ import annotations

import math
from typing import Any

from grpo_fast.loss.registry import Registry

__all__ = ["LR_SCHEDULES", "SCHEDULE_REGISTRY", "lr_multiplier"]

#: ``lr_schedule`` -> ``(step, *, warmup, total) -> multiplier``.
SCHEDULE_REGISTRY: Registry[Any] = Registry("lr_schedule")


def _warmup(step: int, warmup: int) -> float:
    """Linear from 0 to 1 over the first ``warmup`` steps."""
    return step / max(1, warmup)


@SCHEDULE_REGISTRY.register("constant")
def constant(step: int, *, warmup: int, total: int) -> float:
    """1 after warmup."""
    return _warmup(step, warmup) if step < warmup else 1.0


@SCHEDULE_REGISTRY.register("linear")
def linear(step: int, *, warmup: int, total: int) -> float:
    """From 1 down to 0 at the last step."""
    if step < warmup:
        return _warmup(step, warmup)
    return max(0.0, (total - step) / max(1, total - warmup))


@SCHEDULE_REGISTRY.register("cosine")
def cosine(step: int, *, warmup: int, total: int) -> float:
    """Half a cosine period from 1 down to 0 at the last step."""
    if step < warmup:
        return _warmup(step, warmup)
    progress = (step - warmup) / max(1, total - warmup)
    return max(0.0, 0.5 * (1.0 + math.cos(math.pi * progress)))


#: The values of ``lr_schedule``.
LR_SCHEDULES = SCHEDULE_REGISTRY.names


def lr_multiplier(name: str, warmup: int, total: int) -> Any:
    """The schedule ``name`` as a function of the step alone (for ``LambdaLR``)."""
    schedule = SCHEDULE_REGISTRY[name]
    return lambda step: schedule(step, warmup=warmup, total=total)
