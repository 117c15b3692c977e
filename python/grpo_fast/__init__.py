"""grpo-fast: GRPO reinforcement learning with a Rust core.

The CPU-heavy parts (grouping, advantages, answer verification) run in Rust
across cores with the GIL released; torch, transformers and vLLM are imported
only by the modules that need them, so ``import grpo_fast`` needs numpy alone.
"""

# No `from __future__ import annotations` here: it would be a public
# attribute (`grpo_fast.annotations`), and this module annotates nothing.
from grpo_fast import errors, names, rewards
from grpo_fast._core import __version__, get_num_threads, set_num_threads
from grpo_fast.advantages import (
    AdvantageResult,
    Groups,
    broadcast_to_tokens,
    compute_advantages,
    group,
)
from grpo_fast.errors import GrpoFastError, InternalError, InvalidInputError
from grpo_fast.rewards import Rewards, RewardScores, combine, score_batch
from grpo_fast.trainer import Trainer, TrainerConfig
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

__all__ = [
    "AdvantageResult",
    "GrpoFastError",
    "Groups",
    "InternalError",
    "InvalidInputError",
    "__version__",
    "broadcast_to_tokens",
    "compute_advantages",
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
