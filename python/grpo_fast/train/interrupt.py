"""Ctrl-C (SIGINT) and SIGTERM during training: finish the step, checkpoint, stop.

A scheduler sends SIGTERM some time before it kills a job; a person presses
Ctrl-C. Either way the work since the last checkpoint should not be lost, so
while :class:`StopRequest` is active the first signal only asks the loop to
stop after the current step (which then writes a checkpoint); a second one
stops at once, by raising where the program is, as Ctrl-C normally does. A
checkpoint cut short that way is never renamed into place
(:func:`grpo_fast.train.checkpoint.save_checkpoint`).
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any

from grpo_fast.errors import TrainingInterrupted
from grpo_fast.train.tracking import say

__all__ = ["StopRequest"]

_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class StopRequest:
    """Within ``with StopRequest(...) as stop``, SIGINT and SIGTERM set ``stop.signal``
    instead of stopping the program.

    Handlers can only be installed in the main thread; elsewhere this does
    nothing (and the signals keep their usual effect). The previous handlers are
    back after the ``with`` block.

    Parameters
    ----------
    step : callable
        Returns the step a first signal lets finish, for the messages.
    done : callable, optional
        Returns the last finished step, for a second signal (default: ``step() - 1``).
    quiet : bool
        Print nothing (ranks other than the main one).
    """

    def __init__(self, step: Any = lambda: 0, *, done: Any = None, quiet: bool = False) -> None:
        self.signal: int | None = None
        self._step = step
        self._done = done if done is not None else (lambda: step() - 1)
        self._quiet = quiet
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> StopRequest:
        if threading.current_thread() is threading.main_thread():
            for sig in _SIGNALS:
                # An ignored signal stays ignored (nohup, a shell's background job).
                if signal.getsignal(sig) is not signal.SIG_IGN:
                    self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._restore()

    def _restore(self) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}

    def _handle(self, signum: int, frame: FrameType | None) -> None:
        name = signal.Signals(signum).name
        if self.signal is not None:
            # Asked twice: stop now, as an unhandled Ctrl-C would.
            self._restore()
            raise TrainingInterrupted(self._done(), signum)
        self.signal = signum
        if not self._quiet:
            say(
                f"{name}: finishing step {self._step()} and writing a checkpoint "
                f"({'press Ctrl-C' if signum == signal.SIGINT else 'send it'} again to stop "
                "at once)"
            )
