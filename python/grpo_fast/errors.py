"""The exceptions grpo-fast raises.

Every error that blames the caller's input is an :class:`InvalidInputError`,
which is also a :class:`ValueError`, so ``except ValueError`` keeps working.
"""

from __future__ import annotations

__all__ = [
    "CheckpointError",
    "GrpoFastError",
    "InternalError",
    "InvalidInputError",
    "RolloutError",
    "TrainingInterrupted",
]


class GrpoFastError(Exception):
    """Base class of every grpo-fast exception."""


class InvalidInputError(GrpoFastError, ValueError):
    """The input is at fault: wrong length, dtype, value or name."""


class InternalError(GrpoFastError, RuntimeError):
    """A bug in grpo-fast (a caught panic of the Rust core); please report it."""


class CheckpointError(GrpoFastError, OSError):
    """A checkpoint could not be written (a full disk, ...); the older ones are kept."""


class RolloutError(GrpoFastError, RuntimeError):
    """The background rollout producer of ``--async-rollouts`` failed (a reward function
    raised, the vLLM server went away, ...); ``__cause__`` is its exception."""


class TrainingInterrupted(KeyboardInterrupt):
    """Training stopped on SIGINT (Ctrl-C) or SIGTERM.

    A ``KeyboardInterrupt``, so ``except Exception`` does not swallow it.
    ``checkpoint`` is the checkpoint written at ``step`` (None when a second
    signal stopped the run at once, before one was written); ``signal`` is the
    signal's number (exit status ``128 + signal`` by convention).
    """

    def __init__(self, step: int, signal: int, checkpoint: object = None) -> None:
        super().__init__(step, signal, checkpoint)
        self.step, self.signal, self.checkpoint = step, signal, checkpoint

    def __str__(self) -> str:
        if self.checkpoint is None:
            return f"stopped at once at step {self.step}, without writing a checkpoint"
        return f"interrupted at step {self.step}; checkpoint {self.checkpoint}"
