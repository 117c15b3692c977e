"""A run's output directory: its lock, the files an earlier run left there, and its
checkpoints found and verified against their manifests, with the options each was
written with compared on resume. Imports neither torch nor transformers (the
command line asks these questions before anything loads); writing and loading
checkpoints is :mod:`grpo_fast.train.checkpoint`'s.

Also where a command writes a file or a directory of its own (``score -o``,
``export OUT``): :func:`check_writable_file`, :func:`check_writable_dir`.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import re
import shutil
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.train.lock import check_output_lock, lock_output_dir, unlock_output_dir
from grpo_fast.train.tracking import WANDB_ID_FILE, read_metrics, say

if TYPE_CHECKING:
    from collections.abc import Iterable

    from grpo_fast.train.distributed import Distributed

__all__ = [
    "CONFIG",
    "MANIFEST",
    "RESUME_SAFE",
    "check_resume_config",
    "check_writable_dir",
    "check_writable_file",
    "checkpoint_problem",
    "default_output_dir",
    "file_sha256",
    "find_resume",
    "lock_output_dir",
    "never_trained",
    "newest_good_checkpoint",
    "prepare_output_dir",
    "remove_leftovers",
    "run_files",
    "saved_config",
    "step_dirs",
    "step_of",
    "unlock_output_dir",
    "verify_checkpoint",
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
_STEP_DIR = re.compile(r"^step-(\d+)$")
#: A checkpoint that did not verify, moved aside (``step-0000003.corrupt``), never deleted.
_CORRUPT_DIR = re.compile(r"^step-(\d+)\.corrupt(-\d+)?$")


def step_dirs(out_dir: Path) -> list[tuple[int, Path]]:
    """``checkpoints/step-N`` directories, oldest first."""
    root = out_dir / "checkpoints"
    if not root.is_dir():
        return []
    found = [(int(m[1]), p) for p in root.iterdir() if (m := _STEP_DIR.match(p.name))]
    return sorted(found)


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
        check_output_lock(out_dir)  # a run writing there now: its pid is the news
        steps = step_dirs(out_dir)
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
    for step, path in step_dirs(out_dir):
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


def file_sha256(path: Path, *, fsync: bool = False) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            h.update(chunk)
        if fsync:
            os.fsync(f.fileno())
    return h.hexdigest()


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
        if file_sha256(f) != want["sha256"]:
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


def check_resume_config(
    path: Path, config: dict[str, Any], *, force: bool, given: Iterable[str] = ()
) -> list[str]:
    """Compare the options of a run resuming from ``path`` with those it was written
    with; return the changes that are safe (:data:`RESUME_SAFE`), as lines to log.
    ``given`` names options the run does not take from ``config`` (the trainer was
    handed the rewards, the data or the model itself): they are not compared.

    Raises :class:`~grpo_fast.errors.InvalidInputError` when ``max_steps`` is below
    the checkpoint's step, or (without ``force``) when other options differ,
    listing each one.
    """
    step = step_of(path)
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
    skip = set(given)
    changed = {
        k: (saved[k], now[k]) for k in now if k in saved and k not in skip and saved[k] != now[k]
    }
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
        mine = -2 if error else (step_of(chosen) if chosen is not None else -1)
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
    for _, path in reversed(step_dirs(out_dir)):
        if checkpoint_problem(path) is None:
            return path
    return None


def step_of(path: Path) -> int:
    return int(json.loads((path / MANIFEST).read_text())["step"])


def _choose(out_dir: Path, resume: str) -> Path | None:
    if resume != "auto":
        path = Path(resume)
        problem = checkpoint_problem(path)
        if problem is not None:
            raise InvalidInputError(f"cannot resume from {resume!r}: {problem}")
        return path
    found = step_dirs(out_dir)
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


# ---------------------------------------------------------------------- the default directory
def default_output_dir(cfg: Any) -> tuple[Any, str | None]:
    """Where a run that names no output directory (nor ``--resume`` / ``--overwrite``)
    writes, when the default one already holds a run (``make demo`` a second time):
    the config to run and what to say of it (None: the default directory as it is).

    An unfinished run there whose options are these (as a resume compares them)
    is resumed (``resume="auto"``); anything else (a finished run, other options,
    no checkpoint to resume) leaves it alone: a new timestamped directory beside it.
    """
    from grpo_fast.train.config import sampler_correction

    out = Path(cfg.output_dir)
    if not out.is_dir() or not run_files(out) or never_trained(out):
        return cfg, None
    path = newest_good_checkpoint(out)
    step = step_of(path) if path is not None else None
    if path is not None and step is not None and step < cfg.max_steps:
        resumed = dataclasses.replace(cfg, resume="auto")
        # Compared as the trainer compares it: with "auto" resolved.
        resolved = dataclasses.replace(resumed, sampler_correction=sampler_correction(cfg))
        try:
            check_resume_config(path, dataclasses.asdict(resolved), force=False)
        except InvalidInputError:
            step = None  # other options: a new run
        else:
            return resumed, (
                f"{out} holds an unfinished run (step {step} of {cfg.max_steps}): resuming it "
                "(--resume auto; --overwrite starts over, --output-dir DIR starts another)"
            )
    fresh = out.with_name(f"{out.name}-{time.strftime('%Y%m%d-%H%M%S')}")
    if path is None:
        what = "a run without a checkpoint to resume"
    elif step is None:
        what = "a run with other options"
    else:
        what = f"a finished run (step {step})"
    return dataclasses.replace(cfg, output_dir=str(fresh)), (
        f"{out} holds {what}; this run writes a new directory, {fresh} (--resume auto "
        f"continues the one in {out}, --overwrite replaces it)"
    )


# ---------------------------------------------------------------------- other outputs
def check_writable_file(path: str, flag: str) -> None:
    """Raise unless a file can be written at ``path`` (its directory exists and is
    writable; it is not a directory, nor a file that cannot be written)."""
    p = Path(path)
    parent = p.parent
    if p.is_dir():
        raise InvalidInputError(f"{flag} {path!r} is a directory; name a file in it")
    if not parent.is_dir():
        raise InvalidInputError(
            f"cannot write {flag} {path!r}: the directory {str(parent)!r} does not exist "
            f"(mkdir -p {parent})"
        )
    if not os.access(parent, os.W_OK | os.X_OK) or (p.exists() and not os.access(p, os.W_OK)):
        where = path if p.exists() else str(parent)
        raise InvalidInputError(f"cannot write {flag} {path!r}: {where!r} is not writable")


def check_writable_dir(path: str, flag: str) -> None:
    """Raise unless a directory can be made (or written into) at ``path``: its nearest
    existing ancestor is a writable directory."""
    p = Path(path).absolute()
    existing = next(q for q in (p, *p.parents) if q.exists())
    if not existing.is_dir():
        raise InvalidInputError(f"cannot write {flag} {path!r}: {str(existing)!r} is a file")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise InvalidInputError(f"cannot write {flag} {path!r}: {str(existing)!r} is not writable")
