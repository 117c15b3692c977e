"""grpo-fast: GRPO reinforcement learning with a Rust core.

The CPU-heavy parts (grouping, advantages, answer verification) run in Rust
across cores with the GIL released. ``import grpo_fast`` needs numpy alone:
the modules that need torch and transformers (``grpo_fast.trainer``,
``loss``, ``logprobs``, ``sampling``, ``modeling``, ...) load on first use,
``grpo_fast.Trainer`` included (PEP 562's module ``__getattr__``).
"""

import importlib as _importlib
from typing import Any as _Any

from grpo_fast import errors, names, rewards, steps
from grpo_fast._core import __version__, get_num_threads, set_num_threads
from grpo_fast.advantages import (
    AdvantageResult,
    Groups,
    ProcessAdvantageResult,
    broadcast_to_tokens,
    compute_advantages,
    compute_process_advantages,
    group,
)
from grpo_fast.errors import GrpoFastError, InternalError, InvalidInputError
from grpo_fast.rewards import Rewards, RewardScores, combine, score_batch
from grpo_fast.steps import Steps, check_steps
from grpo_fast.verify import (
    Answer,
    Extraction,
    Verdict,
    extract_answer,
    extract_gold,
    parse,
    verify,
    verify_batch,
    verify_detailed,
)

# Loaded on first access: they import torch / transformers.
_LAZY = {"Trainer": "grpo_fast.trainer", "TrainerConfig": "grpo_fast.trainer"}
_LAZY_MODULES = (
    "cli",
    "data",
    "distributed",
    "logprobs",
    "loss",
    "modeling",
    "rollout",
    "sampling",
    "trainer",
)


def __getattr__(name: str) -> _Any:
    if name in _LAZY:
        value = getattr(_importlib.import_module(_LAZY[name]), name)
    elif name in _LAZY_MODULES:
        value = _importlib.import_module(f"grpo_fast.{name}")
    else:
        raise AttributeError(f"module 'grpo_fast' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY) | set(_LAZY_MODULES))


__all__ = [
    "AdvantageResult",
    "GrpoFastError",
    "Groups",
    "InternalError",
    "InvalidInputError",
    "__version__",
    "broadcast_to_tokens",
    "compute_advantages",
    "compute_process_advantages",
    "check_steps",
    "ProcessAdvantageResult",
    "Steps",
    "steps",
    "errors",
    "names",
    "Answer",
    "Extraction",
    "RewardScores",
    "Rewards",
    "Verdict",
    "combine",
    "extract_answer",
    "extract_gold",
    "parse",
    "rewards",
    "score_batch",
    "verify",
    "verify_batch",
    "verify_detailed",
    "get_num_threads",
    "group",
    "set_num_threads",
    "Trainer",
    "TrainerConfig",
]
