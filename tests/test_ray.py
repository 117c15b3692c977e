"""The verifier and a combined reward spec inside Ray workers (remote tasks and an actor).

A local Ray instance (2 CPUs, no dashboard) is started for the module and shut
down after it. The spec travels to the workers as an argument (it pickles);
the workers' results must equal the same calls made here.
"""

from __future__ import annotations

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import grpo_fast  # noqa: E402
from grpo_fast import rewards  # noqa: E402

COMPLETIONS = [
    r"so the answer is \boxed{\frac{1}{2}}",
    "<think>3*4</think> <answer>12</answer>",
    "#### 72",
    "I think it is 0.5",
    "The answer is 13",
    r"\boxed{x = 3}",
    "no idea",
    "<answer>1,000</answer>",
] * 4
GOLDS = ["0.5", "12", "72", r"\frac12", "12", "3", "7", "1000"] * 4
LENGTHS = np.arange(len(COMPLETIONS)) * 40


@pytest.fixture(scope="module")
def local_ray():
    try:
        ray.init(
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
    except Exception as e:  # pragma: no cover - depends on the machine
        pytest.skip(f"a local Ray instance cannot start here: {type(e).__name__}: {e}")
    yield ray
    ray.shutdown()


def spec():
    return rewards.combine(
        rewards.MathReward(),
        rewards.FormatReward(r"^<think>.*?</think>\s*<answer>.*?</answer>$", weight=0.5),
        rewards.OverlongReward(max_length=1000, cache_length=300),
    )


@pytest.mark.slow  # ray.init alone took 16 s on the shared, loaded 2-core dev machine
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
def test_verify_and_rewards_in_remote_tasks_and_an_actor(local_ray):
    @ray.remote
    def verify_remote(golds, preds):
        import grpo_fast

        return grpo_fast.verify_batch(golds, preds)

    @ray.remote
    def score_remote(r, completions, golds, lengths):
        s = r.score_batch(completions, golds, lengths)
        return s.total, dict(s.columns)

    @ray.remote
    class Scorer:
        def __init__(self, r):
            self.r = r

        def score(self, completions, golds, lengths):
            s = self.r.score_batch(completions, golds, lengths)
            return s.total, dict(s.columns)

        def pid(self):
            import os

            return os.getpid()

    expected_verify = grpo_fast.verify_batch(GOLDS, COMPLETIONS)
    r = spec()
    expected = r.score_batch(COMPLETIONS, GOLDS, LENGTHS)
    assert 0 < expected_verify.mean() < 1 and len(set(expected.total.tolist())) > 2

    # Remote tasks, the batch in halves, the spec as an argument.
    half = len(COMPLETIONS) // 2
    parts = [slice(0, half), slice(half, None)]
    got_verify = ray.get([verify_remote.remote(GOLDS[p], COMPLETIONS[p]) for p in parts])
    np.testing.assert_array_equal(np.concatenate(got_verify), expected_verify)
    got = ray.get([score_remote.remote(r, COMPLETIONS[p], GOLDS[p], LENGTHS[p]) for p in parts])
    np.testing.assert_array_equal(np.concatenate([t for t, _ in got]), expected.total)
    for name, col in expected.columns.items():
        np.testing.assert_array_equal(np.concatenate([c[name] for _, c in got]), col)

    # An actor that holds the spec and scores several batches.
    import os

    actor = Scorer.remote(r)
    assert ray.get(actor.pid.remote()) != os.getpid()
    for _ in range(2):
        total, columns = ray.get(actor.score.remote(COMPLETIONS, GOLDS, LENGTHS))
        np.testing.assert_array_equal(total, expected.total)
        for name, col in expected.columns.items():
            np.testing.assert_array_equal(columns[name], col)
