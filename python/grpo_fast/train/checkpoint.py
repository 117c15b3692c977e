"""A run's output directory and its checkpoints: refusing to mix runs, writing
``checkpoints/step-N`` so that a stop at any moment leaves only good ones,
and finding and loading the newest good one on resume.

A checkpoint directory holds the model and tokenizer (``save_pretrained``),
``trainer_state.pt`` (step, optimizer, scheduler, prompt order), one
``rng-rank{R}.pt`` per process and, written last, ``manifest.json``: the size
and SHA-256 of every other file. It is written into ``.tmp-step-N``, every
file and the directory are fsynced, and only then is it renamed to
``step-N``; a checkpoint is loaded only after its files match the manifest,
so a truncated, damaged or half-copied one is named and skipped, never
loaded.

A sharded run (``--parallel fsdp``) writes the model's and the optimizer's
state through ``torch.distributed.checkpoint`` instead: every rank writes its
shards into ``sharded/`` (one file per rank, and DCP's ``.metadata``), the
model directory holds only the model's ``config.json`` (and LoRA's
``adapter_config.json``), and the manifest covers the shards too. Such a
checkpoint loads onto any number of ranks (DCP reshards), or into one process
(``grpo-fast export``).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import fcntl
import hashlib
import json
import os
import random
import re
import shutil
import socket
import time
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import torch
from safetensors import SafetensorError

from grpo_fast.errors import CheckpointError, InvalidInputError
from grpo_fast.train.distributed import Distributed, LogProbs
from grpo_fast.train.modeling import is_peft_model, load_weights
from grpo_fast.train.tracking import WANDB_ID_FILE, read_metrics, say

__all__ = [
    "checkpoint_problem",
    "find_resume",
    "is_sharded",
    "load_checkpoint",
    "lock_output_dir",
    "never_trained",
    "newest_good_checkpoint",
    "load_sharded_model",
    "prepare_output_dir",
    "remove_leftovers",
    "run_files",
    "save_checkpoint",
    "unlock_output_dir",
    "verify_checkpoint",
    "check_resume_config",
    "saved_config",
]

MANIFEST = "manifest.json"
#: The run's options, as the checkpoint was written with them (compared on resume).
CONFIG = "trainer_config.json"
#: Options a resumed run may change: how long it trains, what it evaluates, logs and
#: keeps, where and on what it runs (device, DDP or FSDP: checkpoints reshard); none
#: changes what was learned so far. Any other
#: difference is refused without ``resume_force``.
RESUME_SAFE = frozenset(
    {
        "max_steps",
        "num_train_epochs",
        "eval_every",
        "eval_size",
        "eval_file",
        "save_every",
        "keep_checkpoints",
        "logging_steps",
        "log_completions",
        "progress",
        "plot",
        "report_to",
        "resume",
        "overwrite",
        "resume_force",
        "output_dir",
        "device",
        "parallel",
        "torch_threads",
    }
)
#: The directory of a sharded checkpoint's ``torch.distributed.checkpoint`` files.
SHARDED = "sharded"
# What a failed write raises: OSError (Python), RuntimeError (torch.save's zip writer),
# SafetensorError (safetensors' Rust writer).
_WRITE_ERRORS = (OSError, RuntimeError, SafetensorError)
_STEP_DIR = re.compile(r"^step-(\d+)$")
#: A checkpoint that did not verify, moved aside (``step-0000003.corrupt``), never deleted.
_CORRUPT_DIR = re.compile(r"^step-(\d+)\.corrupt(-\d+)?$")
#: The output directory's lock: held (``flock``) by the run writing into it, naming its pid.
LOCK_FILE = ".grpo-fast.lock"


def _step_dirs(out_dir: Path) -> list[tuple[int, Path]]:
    """``checkpoints/step-N`` directories, oldest first."""
    root = out_dir / "checkpoints"
    if not root.is_dir():
        return []
    found = [(int(m[1]), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name))]
    return sorted(found)


# ---------------------------------------------------------------------- the lock
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
            raise InvalidInputError(
                f"output_dir {str(out_dir)!r} is in use by another grpo-fast run "
                f"({_who(holder)}): two runs in one directory would mix their metrics and "
                "checkpoints. Wait for it to end or stop it (kill "
                f"{holder.get('pid', 'PID')}), or choose another --output-dir"
            ) from None
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


# ---------------------------------------------------------------------- the output directory
def _is_run_config(path: Path) -> bool:
    try:
        values = json.loads(path.read_text())
    except (OSError, ValueError):
        return False
    return isinstance(values, dict) and {"output_dir", "num_generations"} <= values.keys()


def run_files(out_dir: Path) -> list[Path]:
    """What an earlier run left in ``out_dir``, and nothing else: a model's
    ``config.json``, another tool's ``checkpoints/`` or ``wandb/`` are not a run's."""
    names = ("metrics.jsonl", "completions.jsonl", "curves.png")
    found = [out_dir / n for n in names if (out_dir / n).is_file()]
    if (out_dir / "config.json").is_file() and _is_run_config(out_dir / "config.json"):
        found.append(out_dir / "config.json")
    if (out_dir / "checkpoints").is_dir():
        found += sorted(
            p
            for p in (out_dir / "checkpoints").iterdir()
            if _STEP_DIR.match(p.name) or _CORRUPT_DIR.match(p.name) or p.name.startswith(".tmp-")
        )
    if (out_dir / "tensorboard").is_dir():
        found += sorted((out_dir / "tensorboard").glob("events.out.tfevents.*"))
    if (out_dir / "wandb" / WANDB_ID_FILE).is_file():
        found.append(out_dir / "wandb")
    return found


def _describe(out_dir: Path, files: list[Path]) -> str:
    tops = dict.fromkeys(
        p.relative_to(out_dir).parts[0] + ("/" if p.parent != out_dir or p.is_dir() else "")
        for p in files
    )
    return ", ".join(tops)


def prepare_output_dir(
    out_dir: Path, *, resume: str | None, overwrite: bool, create: bool = False
) -> None:
    """Check that a run may write into ``out_dir``; with ``create``, also make it
    (parents too) or, with ``overwrite``, clear the earlier run's files.

    Called twice: once before anything is loaded (``create=False``: only checks,
    so a bad data file cannot cost the earlier run) and once when the run starts
    writing. A directory that already holds a run is refused unless ``resume``
    (continue it) or ``overwrite`` (replace it) is given.
    """
    if resume and overwrite:
        raise InvalidInputError(
            "resume and overwrite contradict each other: --resume continues the run in "
            "output_dir, --overwrite deletes it"
        )
    if out_dir.exists() and not out_dir.is_dir():
        raise InvalidInputError(f"output_dir {str(out_dir)!r} exists and is not a directory")
    if not out_dir.exists():
        parent = next(p for p in out_dir.absolute().parents if p.exists())
        if not parent.is_dir() or not os.access(parent, os.W_OK | os.X_OK):
            why = "is not writable" if parent.is_dir() else "is not a directory"
            raise InvalidInputError(
                f"cannot create output_dir {str(out_dir)!r}: {str(parent)!r} {why}"
            )
        if create:
            out_dir.mkdir(parents=True, exist_ok=True)
            lock_output_dir(out_dir)
            say(f"created the output directory {out_dir}")
        return
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise InvalidInputError(f"output_dir {str(out_dir)!r} is not writable")
    if (out_dir / "config.json").exists() and not _is_run_config(out_dir / "config.json"):
        raise InvalidInputError(
            f"output_dir {str(out_dir)!r} has a config.json that is not a grpo-fast run's (a "
            "model directory?); a run would write over it: choose another --output-dir"
        )
    if create:  # before anything is removed: never the files of a run still writing
        lock_output_dir(out_dir)
    held = run_files(out_dir)
    if not held or resume:
        return
    failed_start = not overwrite and never_trained(out_dir)
    if failed_start:
        overwrite = True
        if not create:
            return
    if not overwrite:
        steps = _step_dirs(out_dir)
        newest = f", newest checkpoint {steps[-1][1].name}" if steps else ""
        raise InvalidInputError(
            f"output_dir {str(out_dir)!r} already holds a run ({_describe(out_dir, held)}"
            f"{newest}): continue it with --resume auto, replace it with --overwrite, or choose "
            "another --output-dir"
        )
    if create:
        what = _describe(out_dir, held)
        for path in held:
            if path.is_dir():
                shutil.rmtree(path)
            else:
                path.unlink()
        for name in ("checkpoints", "tensorboard"):  # emptied: gone too
            with contextlib.suppress(OSError):
                (out_dir / name).rmdir()
        if failed_start:
            say(
                f"starting over in {out_dir}: the run there never finished a step (a failed "
                f"start); removed its {what}"
            )
        else:
            say(f"starting over in {out_dir}: removed the earlier run's {what}")


def never_trained(out_dir: Path) -> bool:
    """Whether the run in ``out_dir`` stopped before its first step (a failed start:
    no checkpoint, no training step in ``metrics.jsonl``): nothing there is worth
    keeping, so a new run may replace it without ``--overwrite``."""
    root = out_dir / "checkpoints"
    if root.is_dir() and any(
        _STEP_DIR.match(p.name) or _CORRUPT_DIR.match(p.name) for p in root.iterdir()
    ):
        return False
    try:
        records = read_metrics(out_dir / "metrics.jsonl")
    except (InvalidInputError, OSError):
        return False
    return all(r["step"] < 1 for r in records)


def remove_leftovers(out_dir: Path, resumed_step: int | None) -> None:
    """Delete unfinished ``.tmp-step-*`` directories, and clear away the checkpoints
    newer than the one a run resumed from: they belong to the attempt being
    replaced (an ``--resume auto`` after them would otherwise mix the two). One
    that verifies is deleted (the run went back to an older one on purpose); one
    that does not (``--resume auto`` skipped it) is moved aside as
    ``step-N.corrupt``, never deleted."""
    root = out_dir / "checkpoints"
    if not root.is_dir():
        return
    for tmp in sorted(root.glob(".tmp-*")):
        shutil.rmtree(tmp, ignore_errors=True)
        say(f"removed {tmp}: an unfinished checkpoint (the run stopped while writing it)")
    if resumed_step is None:
        return
    for step, path in _step_dirs(out_dir):
        if step <= resumed_step:
            continue
        problem = checkpoint_problem(path)
        if problem == "it is empty":
            path.rmdir()
            say(f"removed {path}: an empty directory")
        elif problem is not None:
            # Never delete what could not be read: the damage may be mendable by hand.
            aside = _aside(path)
            os.replace(path, aside)
            say(
                f"moved {path} aside to {aside.name} ({problem}); resumed from step "
                f"{resumed_step} instead. Nothing was deleted: delete it yourself once you "
                "no longer need it"
            )
        else:
            shutil.rmtree(path, ignore_errors=True)
            say(f"removed {path}: it is newer than step {resumed_step}, the one resumed from")


def _aside(path: Path) -> Path:
    """A free name for a checkpoint that did not verify: ``step-N.corrupt`` (``-2``, ...)."""
    aside = path.with_name(f"{path.name}.corrupt")
    k = 1
    while aside.exists():
        k += 1
        aside = path.with_name(f"{path.name}.corrupt-{k}")
    return aside


# ---------------------------------------------------------------------- writing
def _rng_state() -> dict[str, Any]:
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),  # noqa: NPY002 (user code may use it)
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def _set_rng_state(rng: dict[str, Any]) -> None:
    random.setstate(rng["python"])
    np.random.set_state(rng["numpy"])  # noqa: NPY002
    torch.set_rng_state(rng["torch"])
    if rng["cuda"] is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(rng["cuda"])


def _sha256(path: Path, *, fsync: bool = False) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
        if fsync:
            os.fsync(f.fileno())
    return h.hexdigest()


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_manifest(tmp: Path, step: int, world: int) -> None:
    files = {
        str(p.relative_to(tmp)): {"bytes": p.stat().st_size, "sha256": _sha256(p, fsync=True)}
        for p in sorted(tmp.rglob("*"))
        if p.is_file()
    }
    manifest = {"format": 1, "step": step, "world": world, "files": files}
    with open(tmp / MANIFEST, "w") as f:
        json.dump(manifest, f, indent=1)
        f.flush()
        os.fsync(f.fileno())
    for d in {tmp, *((tmp / name).parent for name in files)}:
        _fsync_dir(d)


def _unwrap(error: BaseException) -> BaseException:
    """The exception inside DCP's ``CheckpointException`` (the first failed rank's)."""
    failures = getattr(error, "failures", None)
    if failures:
        return failures[min(failures)][0]
    return error


def _line(error: BaseException) -> str:
    """The first line of what went wrong (inside DCP's wrapper)."""
    error = _unwrap(error)
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


@contextlib.contextmanager
def _one_process_quiet() -> Iterator[None]:
    """DCP warns that it assumes one process whenever it runs without a process group."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "torch.distributed is disabled", UserWarning)
        yield


def _save_config(model: Any, path: Path) -> None:
    """What a sharded checkpoint says of its model: the architecture (``config.json``)
    and, under LoRA, the adapters' configuration."""
    base = model.get_base_model() if is_peft_model(model) else model
    base.config.save_pretrained(path)
    if is_peft_model(model):
        model.peft_config[model.active_adapter].save_pretrained(path)


def save_checkpoint(
    out_dir: Path,
    step: int,
    *,
    model: Any,
    tokenizer: Any,
    trainer_state: dict[str, Any],
    dist: Distributed,
    keep: int,
    sharded_state: dict[str, Any] | None = None,
    config: dict[str, Any] | None = None,
) -> Path:
    """Write ``out_dir/checkpoints/step-N`` and keep the ``keep`` newest checkpoints.

    ``sharded_state``: the model's and optimizer's state of a sharded run
    (:meth:`grpo_fast.train.distributed.Parallel.state_dict`), written by every rank
    through ``torch.distributed.checkpoint`` instead of ``model.save_pretrained``.

    Raises :class:`~grpo_fast.errors.CheckpointError` when the files cannot be
    written (a full disk, ...): the unfinished one is removed, the older ones
    stay.
    """
    from torch.distributed.checkpoint import CheckpointException

    root = out_dir / "checkpoints"
    final = root / f"step-{step:07d}"
    tmp = root / f".tmp-step-{step:07d}"
    error: Exception | None = None
    try:
        if dist.is_main:
            shutil.rmtree(tmp, ignore_errors=True)
            tmp.mkdir(parents=True)
    except _WRITE_ERRORS as e:
        error = e
    # Every rank learns whether the others could write (none waits on a failed one).
    if dist.all_min(int(error is None)):
        try:
            if sharded_state is not None:
                import torch.distributed.checkpoint as dcp

                # First: every rank takes part, and every rank hears of a failure.
                with _one_process_quiet():
                    dcp.save(sharded_state, checkpoint_id=tmp / SHARDED, no_dist=not dist.enabled)
            torch.save(_rng_state(), tmp / f"rng-rank{dist.rank}.pt")
            if dist.is_main:
                if sharded_state is None:
                    model.save_pretrained(tmp)
                else:
                    _save_config(model, tmp)
                tokenizer.save_pretrained(tmp)
                state = {"step": step, **trainer_state, "world": dist.world}
                torch.save(state, tmp / "trainer_state.pt")
                if config is not None:
                    (tmp / CONFIG).write_text(json.dumps(config, indent=2) + "\n")
        except _WRITE_ERRORS as e:
            error = e
        except CheckpointException as e:  # DCP's: every rank gets every rank's errors
            error = _unwrap(e)
    if dist.all_min(int(error is None)) and dist.is_main:
        try:
            _write_manifest(tmp, step, dist.world)
            if final.exists():  # written before at this step: replaced whole
                old = root / f".tmp-old-step-{step:07d}"
                os.replace(final, old)
                shutil.rmtree(old)
            os.replace(tmp, final)
            _fsync_dir(root)
        except _WRITE_ERRORS as e:
            error = e
    if not dist.all_min(int(error is None)):
        # torch.save reports a full disk as "unexpected pos ...": ask the disk too.
        free = shutil.disk_usage(root).free / 2**20 if root.exists() else float("inf")
        full = getattr(error, "errno", None) == errno.ENOSPC or "No space left" in str(error)
        if error is None:
            cause = "it failed on another process"
        elif full or free < 64:
            full = True
            cause = (
                f"no space left on device: {free:.0f} MiB free ({type(error).__name__}: {error})"
            )
        else:
            cause = f"{type(error).__name__}: {error}; {free:.0f} MiB free on that disk"
        then = "free some space" if full else "fix that"
        if dist.is_main:
            shutil.rmtree(tmp, ignore_errors=True)
        kept = ", ".join(p.name for _, p in _step_dirs(out_dir)) or "none"
        raise CheckpointError(
            f"checkpoint step {step} was not written ({cause}); the older checkpoints are "
            f"kept ({kept}): {then}, then resume with --resume auto"
        ) from error
    if dist.is_main:
        done = _step_dirs(out_dir)
        for _, old in done[: max(0, len(done) - max(1, keep))]:
            shutil.rmtree(old, ignore_errors=True)
    dist.barrier()
    return final


# ---------------------------------------------------------------------- checking and finding
def checkpoint_problem(path: Path) -> str | None:
    """Why ``path`` is not a complete, undamaged checkpoint (None: it is).

    Every file the manifest lists must be there with its size and SHA-256.
    """
    if not path.is_dir():
        return "it does not exist" if not path.exists() else "it is not a directory"
    try:
        manifest = json.loads((path / MANIFEST).read_text())
        files = manifest["files"]
        int(manifest["world"])
    except FileNotFoundError:
        if not any(path.iterdir()):
            return "it is empty"
        return (
            f"it has no {MANIFEST}: its writing did not finish (or it predates "
            "grpo-fast's checksummed checkpoints)"
        )
    except (OSError, ValueError, KeyError, TypeError):
        return f"its {MANIFEST} is damaged"
    for name in ("trainer_state.pt", "rng-rank0.pt"):
        if name not in files:
            return f"its {MANIFEST} lists no {name}"
    for name, want in sorted(files.items()):
        f = path / name
        if not f.is_file():
            return f"{name} is missing"
        size = f.stat().st_size
        if size != want["bytes"]:
            return f"{name} has {size} bytes where {want['bytes']} were written"
        if _sha256(f) != want["sha256"]:
            return f"{name} is damaged (its SHA-256 differs from the one written)"
    return None


def verify_checkpoint(path: Path) -> None:
    """Raise :class:`~grpo_fast.errors.InvalidInputError` naming the problem when ``path``
    is a grpo-fast checkpoint (a run's ``checkpoints/step-N``, or a directory with its
    ``manifest.json``) whose files do not match the manifest, as resume checks it
    (``grpo-fast export`` and ``grpo-fast eval --model`` call this). Anything else (a
    model directory, a hub id) passes: it has no manifest to check.
    """
    if not path.is_dir():
        return
    in_run = bool(_STEP_DIR.match(path.name)) and path.parent.name == "checkpoints"
    if not in_run:
        try:
            manifest = json.loads((path / MANIFEST).read_text())
        except FileNotFoundError:
            return
        except (OSError, ValueError):
            manifest = {"files": None}  # a damaged one of ours
        if not isinstance(manifest, dict) or "files" not in manifest:
            return  # another tool's manifest.json
    problem = checkpoint_problem(path)
    if problem is not None:
        raise InvalidInputError(
            f"checkpoint {str(path)!r} does not verify: {problem}. Use another checkpoint "
            "(the run's checkpoints/ keeps the newest ones)"
        )


def saved_config(path: Path) -> dict[str, Any] | None:
    """The options the checkpoint at ``path`` was written with: its own
    ``trainer_config.json``, else (an older checkpoint) its run's ``config.json``;
    None when neither is there."""
    for candidate in (path / CONFIG, path.parent.parent / "config.json"):
        try:
            values = json.loads(candidate.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(values, dict):
            return values
    return None


def check_resume_config(path: Path, config: dict[str, Any], *, force: bool) -> list[str]:
    """Compare the options of a run resuming from ``path`` with those it was written
    with; return the changes that are safe (:data:`RESUME_SAFE`), as lines to log.

    Raises :class:`~grpo_fast.errors.InvalidInputError` when ``max_steps`` is below
    the checkpoint's step, or (without ``force``) when other options differ,
    listing each one.
    """
    step = _step_of(path)
    if config["max_steps"] < step:
        raise InvalidInputError(
            f"max_steps is {config['max_steps']}, below step {step} of the checkpoint resumed "
            f"from ({path}): a resumed run trains on to max_steps; give --max-steps {step} or "
            "more (or start over with --overwrite)"
        )
    saved = saved_config(path)
    if saved is None:
        return []
    now = json.loads(json.dumps(config))  # tuples as lists, as the saved file has them
    # Options the saved file lacks (an older version) are not compared.
    changed = {k: (saved[k], now[k]) for k in now if k in saved and saved[k] != now[k]}
    unsafe = {k: v for k, v in changed.items() if k not in RESUME_SAFE}
    lines = [f"{k}: {old!r} -> {new!r}" for k, (old, new) in sorted(changed.items())]
    if unsafe and not force:
        listed = "; ".join(f"{k}: {old!r} -> {new!r}" for k, (old, new) in sorted(unsafe.items()))
        raise InvalidInputError(
            f"the options differ from those checkpoint {path} was written with ({listed}): "
            "resuming would continue another run than the one saved. Give the same options "
            "(its config: "
            + str(path / CONFIG if (path / CONFIG).is_file() else "config.json")
            + "), or --resume-force to resume with these anyway"
        )
    return [
        line
        for line in lines
        if line.split(":")[0] not in ("resume", "overwrite", "resume_force", "output_dir")
    ]


def find_resume(out_dir: Path, resume: str | None, dist: Distributed) -> Path | None:
    """The checkpoint to resume from: ``resume`` itself (it must be good), or with
    ``auto`` the newest good one in ``out_dir`` (None when there is none yet).

    With ``auto``, each newer checkpoint that is incomplete or damaged is skipped
    with a line that says why. The checks run on the main process; the others
    take its answer.
    """
    if not resume:
        return None
    chosen: Path | None = None
    error: InvalidInputError | None = None
    if dist.is_main:
        try:
            chosen = _choose(out_dir, resume)
        except InvalidInputError as e:
            error = e
    if dist.enabled:
        # The step (-1: start over, -2: failed) from rank 0; the others pass the maximum.
        mine = -2 if error else (_step_of(chosen) if chosen is not None else -1)
        step = dist.all_min(mine if dist.is_main else 2**62)
        if not dist.is_main:
            if step == -2:
                raise InvalidInputError("rank 0 found no checkpoint to resume from")
            if step >= 0:
                auto = out_dir / "checkpoints" / f"step-{step:07d}"
                chosen = auto if resume == "auto" else Path(resume)
    if error is not None:
        raise error
    return chosen


def newest_good_checkpoint(out_dir: Path) -> Path | None:
    """The newest checkpoint in ``out_dir`` that verifies (None: none), without a word."""
    for _, path in reversed(_step_dirs(out_dir)):
        if checkpoint_problem(path) is None:
            return path
    return None


def _step_of(path: Path) -> int:
    return int(json.loads((path / MANIFEST).read_text())["step"])


def _choose(out_dir: Path, resume: str) -> Path | None:
    if resume != "auto":
        path = Path(resume)
        problem = checkpoint_problem(path)
        if problem is not None:
            raise InvalidInputError(f"cannot resume from {resume!r}: {problem}")
        return path
    found = _step_dirs(out_dir)
    if not found:
        say(f"--resume auto: no checkpoint in {out_dir / 'checkpoints'} yet; starting at step 0")
        return None
    skipped = []
    for _, path in reversed(found):
        problem = checkpoint_problem(path)
        if problem is None:
            return path
        say(f"--resume auto: skipping {path}: {problem}")
        skipped.append(f"{path.name} ({problem})")
    raise InvalidInputError(
        f"no good checkpoint in {out_dir / 'checkpoints'} to resume from: {'; '.join(skipped)}. "
        "Start over with --overwrite, or resume from another checkpoint with --resume DIR"
    )


# ---------------------------------------------------------------------- loading
def is_sharded(path: Path) -> bool:
    """Whether ``path`` is a sharded run's checkpoint (``torch.distributed.checkpoint``)."""
    return (path / SHARDED / ".metadata").is_file()


def load_checkpoint(
    path: Path,
    *,
    model: Any,
    device: torch.device,
    dist: Distributed,
    sharded_state: Any = None,
) -> Any:
    """Load the weights of a checkpoint that :func:`find_resume` chose into ``model``
    and restore this rank's RNG states; return the trainer state (``step``,
    ``optimizer``, ``scheduler``, ``prompts``) for the caller to apply.

    A sharded checkpoint fills the state dict that ``sharded_state()`` returns
    (:meth:`grpo_fast.train.distributed.Parallel.state_dict`: model and optimizer)
    through ``torch.distributed.checkpoint``, resharded for this run's ranks;
    it is returned as ``state["sharded"]`` for the caller to apply. Written by
    another number of processes, the ranks' random streams are not restored.
    """
    from torch.distributed.checkpoint import CheckpointException

    manifest = json.loads((path / MANIFEST).read_text())
    sharded = is_sharded(path)
    if manifest["world"] != dist.world and not sharded:
        raise InvalidInputError(
            f"checkpoint {path} was written by {manifest['world']} processes, "
            f"this run has {dist.world} (a --parallel fsdp checkpoint resumes on any number)"
        )
    same_world = manifest["world"] == dist.world
    try:
        state = torch.load(path / "trainer_state.pt", weights_only=False)
        rng = None
        if same_world:
            rng = torch.load(path / f"rng-rank{dist.rank}.pt", weights_only=False)
    except (OSError, RuntimeError, ValueError, KeyError) as e:
        raise InvalidInputError(f"cannot read checkpoint {path}: {e}") from None
    if sharded:
        if sharded_state is None:
            raise InvalidInputError(
                f"checkpoint {path} is sharded (written with --parallel fsdp); this run cannot "
                "read it"
            )
        import torch.distributed.checkpoint as dcp

        state["sharded"] = sharded_state()
        try:
            with _one_process_quiet():
                dcp.load(state["sharded"], checkpoint_id=path / SHARDED, no_dist=not dist.enabled)
        except (OSError, RuntimeError, ValueError, KeyError, CheckpointException) as e:
            raise InvalidInputError(
                f"checkpoint {path} does not match this run's model and optimizer: {_line(e)}"
            ) from None
    else:
        try:
            load_weights(model, path, device)  # the full model, or a peft model's LoRA adapters
        except (OSError, SafetensorError) as e:
            raise InvalidInputError(f"cannot read checkpoint {path}: {e}") from None
    if rng is not None:
        _set_rng_state(rng)
    return state


def load_sharded_model(path: Path) -> Any:
    """The model of a sharded checkpoint, whole, in this process (on the CPU, fp32): the
    architecture from its ``config.json`` (and LoRA's ``adapter_config.json``: a peft
    model), the weights from its shards."""
    import torch.distributed.checkpoint as dcp
    from torch.distributed.checkpoint import CheckpointException
    from transformers import AutoConfig, AutoModelForCausalLM

    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError) as e:
        raise InvalidInputError(f"cannot read checkpoint {path}: {e}") from None
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    if (path / "adapter_config.json").is_file():
        import peft

        adapters = peft.PeftConfig.from_pretrained(str(path))
        model.name_or_path = adapters.base_model_name_or_path  # the base it was trained on
        with warnings.catch_warnings():
            # peft 0.21 reads transformers' deprecated is_gradient_checkpointing.
            warnings.filterwarnings("ignore", ".*is_gradient_checkpointing", FutureWarning)
            model = peft.get_peft_model(model, adapters)
    module = LogProbs(model)  # the names the trainer saved under
    state = module.state_dict()
    try:
        with _one_process_quiet():
            dcp.load({"model": state}, checkpoint_id=path / SHARDED, no_dist=True)
    except (OSError, RuntimeError, ValueError, KeyError, CheckpointException) as e:
        raise InvalidInputError(f"cannot read checkpoint {path}: {_line(e)}") from None
    module.load_state_dict(state)
    return model
