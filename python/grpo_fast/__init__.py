"""grpo-fast: GRPO reinforcement learning with a Rust core.

The CPU-heavy parts (grouping, advantages, answer verification) run in Rust
across cores with the GIL released. ``import grpo_fast`` needs numpy alone:
this top layer (verify, rewards, steps, advantages, names, errors) imports
nothing from the subpackages that need torch: :mod:`grpo_fast.loss`,
:mod:`grpo_fast.sampling`, :mod:`grpo_fast.train` (the trainer, its config,
rollout, data, modeling, checkpoints) and :mod:`grpo_fast.logprobs` are
imported by name; ``grpo_fast.Trainer`` loads the trainer on first use.
"""

import importlib as _importlib
from importlib.util import find_spec as _find_spec
from typing import Any as _Any

from grpo_fast import _moved, errors, names, rewards, steps
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
from grpo_fast.code import CodeVerdict, verify_code, verify_code_batch
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

_moved.install()  # grpo_fast.trainer, grpo_fast.loss.surrogates, ... as they were before round 2


def _is_submodule(name: str) -> bool:
    return not name.startswith("__") and _find_spec(f"grpo_fast.{name}") is not None


def __getattr__(name: str) -> _Any:
    # The trainer (torch, transformers) and its config (neither) are imported on first
    # use of their names, a subpackage (grpo_fast.loss, .train, ...) on first use of its.
    if name == "Trainer":
        from grpo_fast.train.trainer import Trainer as value
    elif name == "TrainerConfig":
        from grpo_fast.train.config import TrainerConfig as value
    elif f"grpo_fast.{name}" in _moved.MOVED or _is_submodule(name):
        value = _importlib.import_module(f"grpo_fast.{name}")
    else:
        raise AttributeError(f"module 'grpo_fast' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | {"Trainer", "TrainerConfig"})


__all__ = [
    "AdvantageResult",
    "CodeVerdict",
    "verify_code",
    "verify_code_batch",
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
