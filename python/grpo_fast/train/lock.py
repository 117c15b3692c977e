"""The lock of a run's output directory: held (``flock``) by the run writing into it,
so that two runs never write into one directory; a lock left by a run that died
is taken over with a line that says so."""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.train.tracking import say

__all__ = ["LOCK_FILE", "check_output_lock", "lock_output_dir", "unlock_output_dir"]

#: The output directory's lock file, naming the pid of the run that holds it.
LOCK_FILE = ".grpo-fast.lock"

#: The output directories this process holds, and the open lock file of each.
_HELD: dict[Path, int] = {}


def _holder(fd: int) -> dict[str, Any]:
    """What the lock file says of the run that holds (or held) it."""
    try:
        os.lseek(fd, 0, os.SEEK_SET)
        values = json.loads(os.read(fd, 4096).decode() or "{}")
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    return values if isinstance(values, dict) else {}


def _who(holder: dict[str, Any]) -> str:
    pid = holder.get("pid", "?")
    host = holder.get("host")
    here = host in (None, socket.gethostname())
    since = holder.get("started")
    when = f", since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))}" if since else ""
    return f"pid {pid}{'' if here else f' on {host}'}{when}"


def _pid_alive(pid: Any) -> bool:
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's process: alive
        return True
    return True


def _in_use(out_dir: Path, holder: dict[str, Any]) -> InvalidInputError:
    return InvalidInputError(
        f"output_dir {str(out_dir)!r} is in use by another grpo-fast run "
        f"({_who(holder)}): two runs in one directory would mix their metrics and "
        "checkpoints. Wait for it to end or stop it (kill "
        f"{holder.get('pid', 'PID')}), or choose another --output-dir"
    )


def check_output_lock(out_dir: Path) -> None:
    """Raise, naming the holder's pid, when another process holds ``out_dir``'s lock
    (a look only: nothing is taken or written)."""
    if out_dir.resolve() in _HELD:
        return
    try:
        fd = os.open(out_dir / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        raise _in_use(out_dir, _holder(fd)) from None
    except OSError:
        pass
    finally:
        os.close(fd)


def lock_output_dir(out_dir: Path) -> None:
    """Take ``out_dir``'s lock for this process (held until :func:`unlock_output_dir`
    or the process ends), so that two runs never write into one directory.

    The lock is an ``flock`` on ``out_dir/.grpo-fast.lock``, which names the
    holder's pid: a second run is refused with that pid; a lock file left by a
    run that died (``kill -9``, a crash) holds no ``flock`` and is taken over,
    with a line that says so. Taking it again in the same process is a no-op.
    Where the file system has no ``flock`` (some network file systems), the pid
    alone decides: alive on this host, the directory is in use.
    """
    key = out_dir.resolve()
    if key in _HELD:
        return
    path = out_dir / LOCK_FILE
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            locked = True
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise _in_use(out_dir, holder) from None
        except OSError:  # no flock here (ENOLCK, ...): the pid decides
            locked = False
        # The file may have been removed by the holder releasing it between our open and
        # our flock: then the lock we got is on a file nobody else sees; take the new one.
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    holder = _holder(fd)
    pid = holder.get("pid")
    if pid is not None and pid != os.getpid():
        if not locked and holder.get("host") == socket.gethostname() and _pid_alive(pid):
            os.close(fd)
            raise InvalidInputError(
                f"output_dir {str(out_dir)!r} is in use by another grpo-fast run "
                f"({_who(holder)}); wait for it to end or stop it, or choose another --output-dir"
            )
        say(
            f"{out_dir}: took over the lock of {_who(holder)}, a run that is no longer running "
            "(it stopped without releasing it: killed, or crashed)"
        )
    mine = {"pid": os.getpid(), "host": socket.gethostname(), "started": time.time()}
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    os.write(fd, (json.dumps(mine) + "\n").encode())
    if not _HELD:
        atexit.register(_release_all)
    _HELD[key] = fd


def unlock_output_dir(out_dir: Path) -> None:
    """Release ``out_dir``'s lock if this process holds it (the lock file goes too)."""
    fd = _HELD.pop(out_dir.resolve(), None)
    if fd is None:
        return
    with contextlib.suppress(OSError):
        (out_dir / LOCK_FILE).unlink()
    os.close(fd)


def _release_all() -> None:
    for key in list(_HELD):
        unlock_output_dir(key)
