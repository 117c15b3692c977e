"""What a run writes and reads back: its output directory opened, the trainer's state
saved to ``checkpoints/step-N`` and loaded from one (the files themselves are
:mod:`grpo_fast.train.checkpoint`'s). Each function reads the run's parts from
the trainer.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.train.checkpoint import (
    is_sharded,
    load_checkpoint,
    prepare_output_dir,
    remove_leftovers,
    save_checkpoint,
)
from grpo_fast.train.devices import set_seed
from grpo_fast.train.tracking import Tracker, say

__all__ = ["load", "open_run", "save"]


def open_run(t: Any, resume: Path | None) -> Tracker:
    """The main process's output directory made ready (a fresh run's old files gone,
    a resumed run's leftovers past its checkpoint removed), ``config.json`` written,
    and the metrics' tracker."""
    cfg = t.config
    # --resume auto without a checkpoint yet starts over: the old files go.
    fresh = cfg.overwrite or (cfg.resume is not None and resume is None)
    prepare_output_dir(t.out, resume=None if fresh else cfg.resume, overwrite=fresh, create=True)
    remove_leftovers(t.out, t._saved_step)
    tracker = Tracker(t.out, report_to=cfg.report_to, resume_step=t._saved_step, config=asdict(cfg))
    (t.out / "config.json").write_text(json.dumps(asdict(cfg), indent=2) + "\n")
    if resume is not None:
        say(f"resumed from step {t.step_count} ({resume})")
    return tracker


def save(t: Any) -> Path:
    """Write ``checkpoints/step-N`` (:func:`grpo_fast.train.checkpoint.save_checkpoint`;
    ``--parallel fsdp``: model and optimizer through ``torch.distributed.checkpoint``)."""
    sharded = t.config.parallel == "fsdp"
    # Asynchronous rollouts: the producer is ahead; the states right after the last
    # trained batch was drawn are the ones a resumed run continues from.
    drawn = getattr(t, "rollout_state", None)
    return save_checkpoint(
        t.out,
        t.step_count,
        model=t.model,
        tokenizer=t.tokenizer,
        trainer_state={
            **({} if sharded else {"optimizer": t.optimizer.state_dict()}),
            "scheduler": t.scheduler.state_dict(),
            "prompts": t.prompts.state_dict() if drawn is None else drawn["prompts"],
            "scaler": t.precision.state_dict(),
        },
        dist=t.dist,
        keep=t.config.keep_checkpoints,
        sharded_state=t.policy.state_dict(t.optimizer) if sharded else None,
        rng=None if drawn is None else drawn["rng"],
    )


def load(t: Any, path: Path) -> None:
    """The trainer's state from the checkpoint at ``path``: weights, optimizer, schedule,
    prompt order, loss scale and step; the sampler gets the weights."""
    if t.policy.sharded and not is_sharded(path):
        raise InvalidInputError(
            f"checkpoint {path} holds whole weights (a run without --parallel fsdp): resume "
            "it with --parallel ddp, or in one process"
        )
    state = load_checkpoint(
        path,
        model=t.model,
        device=t.device,
        dist=t.dist,
        sharded_state=lambda: t.policy.state_dict(t.optimizer),
    )
    if "sharded" in state:
        t.policy.load_state_dict(state["sharded"], t.optimizer)
    else:
        t.optimizer.load_state_dict(state["optimizer"])
    if state["world"] != t.dist.world:  # new random streams, none seen before
        world, step = t.dist.world, state["step"]
        set_seed(t.config.seed + t.dist.rank + world * step)
        if t.is_main:
            say(
                f"checkpoint {path} was written by {state['world']} process(es), this run "
                f"has {world}: model and optimizer resharded; sampling starts new random "
                "streams"
            )
    t.precision.load_state_dict(state.get("scaler", {}))
    t.scheduler.load_state_dict(state["scheduler"])
    t.prompts.load_state_dict(state["prompts"])
    t.step_count = int(state["step"])
    t.sampler.update_weights(t.model)
