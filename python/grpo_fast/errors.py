"""The exceptions grpo-fast raises.

Every error that blames the caller's input is an :class:`InvalidInputError`,
which is also a :class:`ValueError`, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = ["GrpoFastError", "InternalError", "InvalidInputError"]


class GrpoFastError(Exception):
    """Base class of every grpo-fast exception."""


class InvalidInputError(GrpoFastError, ValueError):
    """The input is at fault: wrong length, dtype, value or name."""


class InternalError(GrpoFastError, RuntimeError):
    """A bug in grpo-fast (a caught panic of the Rust core); please report it."""
