"""Run untrusted programs in the Rust core's sandbox (Linux only).

Each :class:`Job` runs in a fresh process tree: its own session and process
group, new PID, mount, network, IPC and UTS namespaces where the kernel
allows it (:func:`isolation` says which you get), an empty temporary working
directory, only the environment the job gives, rlimits on CPU seconds,
address space, processes, file size and open files, a seccomp filter
(sockets, ptrace, mounting, namespaces, signalling the parent: the process is
killed; creating or writing files by name: ``EACCES``) and, when the caller
is root, a uid of its own. Time is CPU time; the wall clock is only a
backstop against sleeping. At the end the whole process group is killed.
``GRPO_FAST_SANDBOX_NO_NAMESPACES=1`` forces the fallback (no namespaces).
See docs/code.md for what is isolated and what is not.

Examples
--------
>>> from grpo_fast import sandbox
>>> out = sandbox.run([sandbox.Job(argv=["/bin/cat"], stdin=b"hi")])[0]
>>> out.ending, out.stdout
('exited', b'hi')
"""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field

from grpo_fast import _core
from grpo_fast._core import RunOutcome
from grpo_fast.errors import InvalidInputError

__all__ = ["Job", "Limits", "RunOutcome", "isolation", "python_executable", "run"]

# Deterministic, minimal environment of every run (nothing is inherited).
BASE_ENV: dict[str, str] = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "LC_ALL": "C.UTF-8",
    "PYTHONHASHSEED": "0",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONIOENCODING": "utf-8",
    "PYTHONUNBUFFERED": "1",
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "TZ": "UTC",
    "HOME": ".",
    "TMPDIR": ".",
}


@dataclass(frozen=True)
class Limits:
    """Bounds of every run of a call.

    ``cpu_seconds`` is measured CPU time (user + system, all processes of the
    run); ``wall_seconds`` a backstop against sleeping; ``memory_bytes`` the
    address space of each process; ``processes`` the threads and processes
    the run may have; ``output_bytes`` the stdout kept (more ends the run).
    """

    cpu_seconds: float = 2.0
    wall_seconds: float | None = None
    memory_bytes: int = 512 << 20
    processes: int = 16
    file_size_bytes: int = 1 << 20
    open_files: int = 64
    output_bytes: int = 1 << 20

    def resolved(self) -> Limits:
        """Fill the wall-clock backstop: 3 x the CPU limit + 2 s unless given."""
        if self.wall_seconds is not None:
            return self
        return Limits(**{**self.__dict__, "wall_seconds": 3.0 * self.cpu_seconds + 2.0})


@dataclass(frozen=True)
class Job:
    """One program run: ``argv[0]`` an absolute path; ``files`` (name, bytes,
    executable) written into the empty working directory first; ``collect``
    names read back after the run."""

    argv: Sequence[str]
    stdin: bytes = b""
    env: dict[str, str] = field(default_factory=lambda: dict(BASE_ENV))
    files: Sequence[tuple[str, bytes, bool]] = ()
    allow_writes: bool = False
    collect: Sequence[str] = ()


@dataclass(frozen=True)
class _JobArg:
    argv: list[str]
    stdin: bytes
    env: list[tuple[str, str]]
    files: list[tuple[str, bytes, bool]]
    allow_writes: bool
    collect: list[str]


def _check_platform() -> None:
    if not sys.platform.startswith("linux"):
        raise InvalidInputError(f"the code sandbox runs on Linux only (this is {sys.platform})")


def isolation() -> str:
    """``"namespaces"`` or ``"fallback"``: what runs get on this machine."""
    _check_platform()
    if _force_fallback():
        return "fallback"
    return _core.sandbox_isolation()


def _force_fallback() -> bool:
    return os.environ.get("GRPO_FAST_SANDBOX_NO_NAMESPACES", "") not in ("", "0")


def run(
    jobs: Sequence[Job],
    limits: Limits | None = None,
    workers: int | None = None,
    *,
    fallback: bool = False,
) -> list[RunOutcome]:
    """Run ``jobs`` on ``workers`` threads (default: CPU count) with the GIL released.

    ``fallback=True`` (or ``GRPO_FAST_SANDBOX_NO_NAMESPACES=1``) skips the
    namespaces, as on a machine that does not allow them.
    """
    _check_platform()
    limits = (limits or Limits()).resolved()
    workers = workers if workers is not None else (os.cpu_count() or 1)
    if not isinstance(workers, int) or workers < 1:
        raise InvalidInputError(f"workers is {workers!r}; expected an int >= 1")
    args = [
        _JobArg(
            argv=list(j.argv),
            stdin=bytes(j.stdin),
            env=list(j.env.items()),
            files=[(n, bytes(b), bool(x)) for n, b, x in j.files],
            allow_writes=j.allow_writes,
            collect=list(j.collect),
        )
        for j in jobs
    ]
    return _core.sandbox_run(args, limits, workers, fallback or _force_fallback())


def python_executable() -> str:
    """The interpreter runs use: ``GRPO_FAST_SANDBOX_PYTHON``, else the
    system's ``python3`` (readable by the sandbox's own uid), else ours."""
    env = os.environ.get("GRPO_FAST_SANDBOX_PYTHON")
    if env:
        return env
    found = shutil.which("python3", path="/usr/local/bin:/usr/bin:/bin")
    return os.path.realpath(found or sys.executable)
