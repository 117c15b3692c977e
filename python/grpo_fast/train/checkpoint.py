"""A run's checkpoints: writing ``checkpoints/step-N`` so that a stop at any moment
leaves only good ones, and loading the one resume chose. The output directory
(its lock, finding and verifying checkpoints, the resume's option check) is
:mod:`grpo_fast.train.run_dir`'s; its names stay importable from here.

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
import json
import os
import random
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
from grpo_fast.train.run_dir import (
    CONFIG,
    MANIFEST,
    check_resume_config,
    checkpoint_problem,
    file_sha256,
    find_resume,
    lock_output_dir,
    never_trained,
    newest_good_checkpoint,
    prepare_output_dir,
    remove_leftovers,
    run_files,
    saved_config,
    step_dirs,
    unlock_output_dir,
    verify_checkpoint,
)

__all__ = [
    "check_resume_config",
    "checkpoint_problem",
    "find_resume",
    "is_sharded",
    "load_checkpoint",
    "load_sharded_model",
    "lock_output_dir",
    "never_trained",
    "newest_good_checkpoint",
    "prepare_output_dir",
    "remove_leftovers",
    "rng_state",
    "run_files",
    "save_checkpoint",
    "set_rng_state",
    "saved_config",
    "unlock_output_dir",
    "verify_checkpoint",
]

#: The directory of a sharded checkpoint's ``torch.distributed.checkpoint`` files.
SHARDED = "sharded"
# What a failed write raises: OSError (Python), RuntimeError (torch.save's zip writer),
# SafetensorError (safetensors' Rust writer).
_WRITE_ERRORS = (OSError, RuntimeError, SafetensorError)


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


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _write_manifest(tmp: Path, step: int, world: int) -> None:
    files = {
        str(p.relative_to(tmp)): {"bytes": p.stat().st_size, "sha256": file_sha256(p, fsync=True)}
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
    config: dict[str, Any] | None = None,
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
        if dist.is_main:
            shutil.rmtree(tmp, ignore_errors=True)
        raise _not_written(out_dir, step, error) from error
    if dist.is_main:
        done = step_dirs(out_dir)
        for _, old in done[: max(0, len(done) - max(1, keep))]:
            shutil.rmtree(old, ignore_errors=True)
    dist.barrier()
    return final


def _not_written(out_dir: Path, step: int, error: Exception | None) -> CheckpointError:
    """What a failed checkpoint write says: the cause (another process's failure, a full
    disk, or the error itself), the checkpoints kept, and what to do."""
    root = out_dir / "checkpoints"
    # torch.save reports a full disk as "unexpected pos ...": ask the disk too.
    free = shutil.disk_usage(root).free / 2**20 if root.exists() else float("inf")
    full = getattr(error, "errno", None) == errno.ENOSPC or "No space left" in str(error)
    if error is None:
        cause = "it failed on another process"
    elif full or free < 64:
        full = True
        cause = f"no space left on device: {free:.0f} MiB free ({type(error).__name__}: {error})"
    else:
        cause = f"{type(error).__name__}: {error}; {free:.0f} MiB free on that disk"
    then = "free some space" if full else "fix that"
    kept = ", ".join(p.name for _, p in step_dirs(out_dir)) or "none"
    return CheckpointError(
        f"checkpoint step {step} was not written ({cause}); the older checkpoints are "
        f"kept ({kept}): {then}, then resume with --resume auto"
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
