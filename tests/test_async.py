"""Asynchronous rollouts (``--async-rollouts``): the producer thread, its staleness
bound, its faults, and the run it gives with ``max_staleness=0`` (the synchronous one).
"""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest
from conftest import SMALL_RUN

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.errors import InvalidInputError, RolloutError, TrainingInterrupted  # noqa: E402
from grpo_fast.train.build import build_prompt_order  # noqa: E402
from grpo_fast.train.config import sampler_correction  # noqa: E402
from grpo_fast.train.tracking import read_metrics  # noqa: E402
from grpo_fast.train.trainer import Trainer, TrainerConfig  # noqa: E402

#: Steps of a fraction of a second, an evaluation after each (it overlaps the producer).
RUN = dict(SMALL_RUN, prompts_per_step=2, num_generations=4, eval_size=4, eval_every=1, seed=5)
ASYNC_KEYS = (
    "sample/staleness_mean",
    "sample/staleness_max",
    "sample/dropped_stale_total",
    "sample/rollout_queue_size",
    "perf/rollout_wait_s",
    "rollout/backpressure_s",
)


def _comparable(records):
    return [
        {
            k: v
            for k, v in r.items()
            if not k.startswith("time_") and k != "tokens_per_s" and k not in ASYNC_KEYS
        }
        for r in records
    ]


def _producers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "grpo-fast-rollouts"]


def _exact(completions, **columns):
    return [float(c.strip() == a) for c, a in zip(completions, columns["answer"], strict=True)]


# ---------------------------------------------------------------------- options
def test_options_are_checked_and_async_turns_the_correction_on():
    with pytest.raises(InvalidInputError, match="max_staleness must be >= 0"):
        TrainerConfig(async_rollouts=True, max_staleness=-1).validate()
    with pytest.raises(InvalidInputError, match="use --sampler vllm-server"):
        TrainerConfig(async_rollouts=True, sampler="vllm").validate()
    assert sampler_correction(TrainerConfig()) == "none"
    assert sampler_correction(TrainerConfig(async_rollouts=True)) == "tis"
    assert sampler_correction(TrainerConfig(async_rollouts=True, sampler_correction="mis")) == "mis"


def test_the_flags_reach_the_config():
    from grpo_fast.cli import build_parser

    args = build_parser().parse_args(["train", "--async-rollouts", "--max-staleness", "3"])
    assert (args.async_rollouts, args.max_staleness) == (True, 3)


# ---------------------------------------------------------------------- determinism
def test_max_staleness_0_is_the_synchronous_run(tmp_path):
    """Same seed, same metrics: the producer draws from the same random stream in the
    same order, and every batch is sampled under the weights the trainer has."""
    common = dict(RUN, max_steps=3, sampler_correction="tis")
    sync_out, async_out = tmp_path / "sync", tmp_path / "async"
    Trainer(TrainerConfig(output_dir=str(sync_out), **common)).train()
    Trainer(
        TrainerConfig(output_dir=str(async_out), async_rollouts=True, max_staleness=0, **common)
    ).train()
    a = read_metrics(sync_out / "metrics.jsonl")
    b = read_metrics(async_out / "metrics.jsonl")
    assert [r["step"] for r in b] == [0, 1, 2, 3]
    assert _comparable(a) == _comparable(b)
    assert all(r["sample/staleness_max"] == 0 for r in b[1:])
    assert all(r["sample/dropped_stale_total"] == 0 for r in b[1:])
    assert not _producers()


def test_staleness_stays_within_the_bound(tmp_path):
    cfg = TrainerConfig(
        output_dir=str(tmp_path / "run"), async_rollouts=True, max_staleness=1, **RUN
    )
    history = Trainer(cfg).train()
    steps = [r for r in history if r["step"] > 0]
    assert [r["step"] for r in steps] == [1, 2]
    assert all(0 <= r["sample/staleness_max"] <= 1 for r in steps)
    assert all(r["perf/rollout_wait_s"] >= 0 and r["rollout/backpressure_s"] >= 0 for r in steps)
    assert all(r["mismatch_ratio_mean"] > 0 for r in steps)  # the correction is on
    assert not _producers()


# ---------------------------------------------------------------------- faults
def test_a_failing_reward_stops_the_run_naming_the_cause(tmp_path):
    calls = {"n": 0}
    size = RUN["prompts_per_step"] * RUN["num_generations"]

    def reward(completions, **columns):  # fails on the second training batch
        calls["n"] += len(completions) == size
        if calls["n"] == 2 and len(completions) == size:
            raise ValueError("the grader lost its table")
        return _exact(completions, **columns)

    cfg = TrainerConfig(
        output_dir=str(tmp_path / "run"), async_rollouts=True, **dict(RUN, max_steps=5)
    )
    with pytest.raises(RolloutError, match="ValueError: the grader lost its table") as info:
        Trainer(cfg, rewards=[reward]).train()
    assert isinstance(info.value.__cause__, ValueError)
    assert not _producers()


def _ctrl_c_at_batch(batch: int, size: int, trained: Any = None):
    """A reward that sends SIGINT (to the main thread) while the producer scores training
    batch ``batch`` (evaluations, of another size, are not counted); with ``trained``
    (a one-item list holding the trainer), only once the trainer has finished a step:
    on a loaded machine a producer running ahead could otherwise score that batch
    before the trainer has taken its first, and the run would stop at step 0."""
    calls = {"n": 0}

    def reward(completions, **columns):
        calls["n"] += len(completions) == size
        if calls["n"] == batch + 1 and len(completions) == size:
            deadline = time.monotonic() + 300
            while trained and trained[0].step_count < 1 and time.monotonic() < deadline:
                time.sleep(0.01)
            signal.raise_signal(signal.SIGINT)
        return _exact(completions, **columns)

    reward.__name__ = _exact.__name__  # logged as reward/_exact, as in the run compared with
    return reward


@pytest.mark.parametrize("staleness", [0, 1])
def test_ctrl_c_stops_the_producer_and_resume_trains_each_step_once(tmp_path, staleness):
    common = dict(RUN, max_steps=4, eval_every=0, seed=2, sampler_correction="tis")
    size = common["prompts_per_step"] * common["num_generations"]
    whole = tmp_path / "whole"
    Trainer(TrainerConfig(output_dir=str(whole), **common), rewards=[_exact]).train()

    split = tmp_path / "split"
    opts = dict(async_rollouts=True, max_staleness=staleness, **common)
    trained: list[Any] = []
    trainer = Trainer(
        TrainerConfig(output_dir=str(split), **opts),
        rewards=[_ctrl_c_at_batch(1, size, trained)],
    )
    trained.append(trainer)
    with pytest.raises(TrainingInterrupted) as info:
        trainer.train()
    assert not _producers()
    done = info.value.step
    assert 1 <= done < 4
    # The checkpoint holds the prompt order as it was after the last trained batch's draw,
    # not the producer's, which is ahead: what `done` draws of P prompts leave.
    order = build_prompt_order(trainer.config, len(trainer.train_rows))
    for _ in range(done):
        order.draw(common["prompts_per_step"])
    saved = torch.load(info.value.checkpoint / "trainer_state.pt", weights_only=False)
    assert saved["prompts"] == order.state_dict()
    torch.manual_seed(99)  # a fresh process would not have the old random state
    Trainer(TrainerConfig(output_dir=str(split), resume="auto", **opts), rewards=[_exact]).train()
    b = read_metrics(split / "metrics.jsonl")
    assert [r["step"] for r in b] == [0, 1, 2, 3, 4]
    if staleness == 0:  # the very run an uninterrupted synchronous one is
        assert _comparable(read_metrics(whole / "metrics.jsonl")) == _comparable(b)


def test_async_refuses_several_processes(monkeypatch, tmp_path):
    from grpo_fast.train import trainer as trainer_module

    class TwoRanks(trainer_module.Distributed):
        @classmethod
        def from_env(cls, device_type):
            return cls(world=2, rank=0)

    monkeypatch.setattr(trainer_module, "Distributed", TwoRanks)
    with pytest.raises(InvalidInputError, match="--async-rollouts runs in one process"):
        Trainer(TrainerConfig(output_dir=str(tmp_path / "run"), async_rollouts=True, **RUN))


class _FakeServer:
    """A stand-in for ``VLLMServerSampler``: samples with a model of its own, which only a
    weight push changes; records where and when pushes and samples happen."""

    def __init__(self, model, tokenizer):
        import copy

        from grpo_fast.sampling import HFSampler

        self.model = copy.deepcopy(model)
        self.hf = HFSampler(self.model, tokenizer, logprobs=True)
        self.sampling = False
        self.events: list[tuple[str, str]] = []

    def update_weights(self, model):
        assert not self.sampling, "a push while a batch was being sampled"
        self.model.load_state_dict(model.state_dict())
        self.events.append(("push", threading.current_thread().name))

    def sample(self, prompts, n, params):
        self.sampling = True
        try:
            self.events.append(("sample", threading.current_thread().name))
            return self.hf.sample(prompts, n, params)
        finally:
            self.sampling = False


def test_server_mode_pushes_between_batches_from_the_producer(tmp_path):
    cfg = TrainerConfig(
        output_dir=str(tmp_path / "run"),
        async_rollouts=True,
        sampler="vllm-server",
        **dict(RUN, max_steps=3),
    )
    from grpo_fast.train.modeling import load_model, load_tokenizer

    model, tokenizer = load_model(cfg.model), load_tokenizer(cfg.model)
    server = _FakeServer(model, tokenizer)
    trainer = Trainer(cfg, model=model, tokenizer=tokenizer, sampler=server)
    history = trainer.train()
    assert [r["step"] for r in history] == [0, 1, 2, 3]
    after_start = server.events[1:]  # the first push: the trainer's, at construction
    # Every sample (training batches only: evaluations use the trainer's own model) and
    # every later push come from the producer, a push before each batch of a new version.
    assert {thread for _, thread in after_start} == {"grpo-fast-rollouts"}
    assert sum(kind == "sample" for kind, _ in after_start) == 3
    assert all(0 <= r["sample/staleness_max"] <= 1 for r in history[1:])


def test_a_second_train_call_goes_on_from_the_last_trained_batch(tmp_path):
    """After an interrupt, train() again on the same trainer: the prompt order continues
    from the last trained batch's draw, not from the producer's (which was ahead)."""
    size = RUN["prompts_per_step"] * RUN["num_generations"]
    opts = dict(RUN, max_steps=3, eval_every=0, async_rollouts=True, max_staleness=1)
    trainer = Trainer(
        TrainerConfig(output_dir=str(tmp_path / "run"), **opts), rewards=[_ctrl_c_at_batch(0, size)]
    )
    with pytest.raises(TrainingInterrupted):
        trainer.train()
    trainer.train()
    assert [r["step"] for r in read_metrics(tmp_path / "run" / "metrics.jsonl")] == [0, 1, 2, 3]
    order = build_prompt_order(trainer.config, len(trainer.train_rows))
    for _ in range(3):
        order.draw(RUN["prompts_per_step"])
    final = tmp_path / "run" / "checkpoints" / "step-0000003" / "trainer_state.pt"
    assert torch.load(final, weights_only=False)["prompts"] == order.state_dict()
