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

import contextlib
import errno
import hashlib
import json
import os
import random
import re
import shutil
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
from grpo_fast.train.tracking import WANDB_ID_FILE, say

__all__ = [
    "checkpoint_problem",
    "find_resume",
    "is_sharded",
    "load_checkpoint",
    "load_sharded_model",
    "prepare_output_dir",
    "remove_leftovers",
    "rng_state",
    "run_files",
    "save_checkpoint",
    "set_rng_state",
]

MANIFEST = "manifest.json"
#: The directory of a sharded checkpoint's ``torch.distributed.checkpoint`` files.
SHARDED = "sharded"
# What a failed write raises: OSError (Python), RuntimeError (torch.save's zip writer),
# SafetensorError (safetensors' Rust writer).
_WRITE_ERRORS = (OSError, RuntimeError, SafetensorError)
_STEP_DIR = re.compile(r"^step-(\d+)$")


def _step_dirs(out_dir: Path) -> list[tuple[int, Path]]:
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
    found = [out_dir / n for n in ("metrics.jsonl", "curves.png") if (out_dir / n).is_file()]
    if (out_dir / "config.json").is_file() and _is_run_config(out_dir / "config.json"):
        found.append(out_dir / "config.json")
    if (out_dir / "checkpoints").is_dir():
        found += sorted(
            p
            for p in (out_dir / "checkpoints").iterdir()
            if _STEP_DIR.match(p.name) or p.name.startswith(".tmp-")
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
            say(f"created the output directory {out_dir}")
        return
    if not os.access(out_dir, os.W_OK | os.X_OK):
        raise InvalidInputError(f"output_dir {str(out_dir)!r} is not writable")
    if (out_dir / "config.json").exists() and not _is_run_config(out_dir / "config.json"):
        raise InvalidInputError(
            f"output_dir {str(out_dir)!r} has a config.json that is not a grpo-fast run's (a "
            "model directory?); a run would write over it: choose another --output-dir"
        )
    held = run_files(out_dir)
    if not held or resume:
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
        say(f"starting over in {out_dir}: removed the earlier run's {what}")


def remove_leftovers(out_dir: Path, resumed_step: int | None) -> None:
    """Delete unfinished ``.tmp-step-*`` directories, and the checkpoints newer than the
    one a run resumed from: they belong to the attempt being replaced (an
    ``--resume auto`` after them would otherwise mix the two)."""
    root = out_dir / "checkpoints"
    if not root.is_dir():
        return
    for tmp in sorted(root.glob(".tmp-*")):
        shutil.rmtree(tmp, ignore_errors=True)
        say(f"removed {tmp}: an unfinished checkpoint (the run stopped while writing it)")
    if resumed_step is None:
        return
    for step, path in _step_dirs(out_dir):
        if step > resumed_step:
            shutil.rmtree(path, ignore_errors=True)
            say(f"removed {path}: it is newer than step {resumed_step}, the one resumed from")


# ---------------------------------------------------------------------- writing
def rng_state() -> dict[str, Any]:
    """Python's, numpy's and torch's (CPU, every GPU) random states, as a checkpoint
    stores them."""
    return {
        "python": random.getstate(),
        "numpy": np.random.get_state(),  # noqa: NPY002 (user code may use it)
        "torch": torch.get_rng_state(),
        "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None,
    }


def set_rng_state(rng: dict[str, Any]) -> None:
    """Put back the random states :func:`rng_state` took."""
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
    rng: dict[str, Any] | None = None,
) -> Path:
    """Write ``out_dir/checkpoints/step-N`` and keep the ``keep`` newest checkpoints.

    ``rng``: the random states to store (default: the current ones,
    :func:`rng_state`); asynchronous rollouts pass those of the last trained batch.

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
            torch.save(rng_state() if rng is None else rng, tmp / f"rng-rank{dist.rank}.pt")
            if dist.is_main:
                if sharded_state is None:
                    model.save_pretrained(tmp)
                else:
                    _save_config(model, tmp)
                tokenizer.save_pretrained(tmp)
                state = {"step": step, **trainer_state, "world": dist.world}
                torch.save(state, tmp / "trainer_state.pt")
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
        set_rng_state(rng)
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
