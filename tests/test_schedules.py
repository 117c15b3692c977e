"""The learning-rate schedules and the seeding against transformers' own (the trainer
no longer imports transformers' trainer utilities, which import peft)."""

from __future__ import annotations

import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from grpo_fast.train.build import build_scheduler  # noqa: E402
from grpo_fast.train.config import TrainerConfig  # noqa: E402
from grpo_fast.train.devices import set_seed  # noqa: E402
from grpo_fast.train.schedules import LR_SCHEDULES  # noqa: E402

TRANSFORMERS_NAME = {"constant": "constant_with_warmup", "linear": "linear", "cosine": "cosine"}


@pytest.mark.parametrize("name", LR_SCHEDULES)
@pytest.mark.parametrize(("warmup", "steps", "iterations"), [(0, 7, 1), (3, 10, 2), (12, 5, 2)])
def test_schedules_equal_transformers(name, warmup, steps, iterations):
    cfg = TrainerConfig(
        lr_schedule=name, warmup_steps=warmup, max_steps=steps, num_iterations=iterations
    )

    def lrs(make):
        opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=0.5)
        scheduler = make(opt)
        out = []
        for _ in range(steps * iterations + 3):  # past the end too
            out.append(scheduler.get_last_lr()[0])
            opt.step()
            scheduler.step()
        return out, scheduler.state_dict()

    ours, state = lrs(lambda opt: build_scheduler(cfg, opt))
    theirs, their_state = lrs(
        lambda opt: transformers.get_scheduler(
            TRANSFORMERS_NAME[name],
            opt,
            num_warmup_steps=warmup,
            num_training_steps=steps * iterations,
        )
    )
    assert ours == pytest.approx(theirs, rel=1e-12, abs=1e-15)
    assert state.keys() == their_state.keys()  # a checkpoint's scheduler state loads either way


def test_set_seed_seeds_as_transformers_does():
    def draws():
        return random.random(), np.random.random(), torch.rand(3).tolist()  # noqa: NPY002

    set_seed(7)
    ours = draws()
    transformers.set_seed(7)
    assert draws() == ours
