"""The trainer tells the scorer which completions were cut off (issue 22).

A completion that hit ``max_new_tokens`` without an EOS token is paid only
through an answer marker: the last number of unfinished reasoning is no
answer, and paying it would reward running to the limit. The reference here
is written independently: a completion is cut off when it has
``max_new_tokens`` tokens and its last one is not EOS.
"""

from __future__ import annotations

import numpy as np
import pytest

from grpo_fast import rewards
from grpo_fast.run_rewards import RunRewards

# (completion, paid when complete, paid when cut off) against the gold 4.
CASES = [
    ("so 2 + 2 = 4", True, False),  # the last number of reasoning
    ("We add 2 and 2 and get 4", True, False),
    (r"so the answer is \boxed{4}", True, True),  # a marker: read either way
    ("The answer is 4", True, True),
    ("Answer: 4", True, True),
    (r"\boxed{4", False, False),  # an unclosed box is cut off either way
]


def test_run_rewards_pass_the_flag_to_the_answer_rewards():
    run = RunRewards.build(["math", "exact"])
    texts = [c for c, _, _ in CASES]
    rows = [{"answer": "4"}] * len(texts)
    whole = run.score(texts, rows)
    cut = run.score(texts, rows, truncated=np.ones(len(texts), bool))
    assert whole.columns["math"].tolist() == [float(p) for _, p, _ in CASES]
    assert cut.columns["math"].tolist() == [float(p) for _, _, p in CASES]
    # The same flag reaches every answer spec (exact reads the marker too).
    assert cut.columns["exact"][0] == 0.0
    # One flag per completion: only the flagged one loses its fallback.
    mixed = run.score(texts[:2], rows[:2], truncated=[True, False])
    assert mixed.columns["math"].tolist() == [0.0, 1.0]


def test_a_flag_per_completion_is_checked():
    run = RunRewards.build(["math"])
    with pytest.raises(ValueError, match="truncated"):
        run.score(["4", "4"], [{"answer": "4"}] * 2, truncated=[True])


class _Spy(rewards.Rewards):
    """A compiled reward set that records the flags it was given."""

    def __init__(self) -> None:
        super().__init__([rewards.MathReward()])
        self.seen: list[np.ndarray] = []

    def score_batch(self, completions, golds=None, lengths=None, truncated=None, prompts=None):
        self.seen.append(np.asarray(truncated, bool))
        return super().score_batch(completions, golds, lengths, truncated, prompts)


def test_the_trainer_passes_which_completions_hit_the_limit(make_config):
    from grpo_fast.train.trainer import Trainer

    spy = _Spy()
    trainer = Trainer(make_config(seed=3, max_steps=1, max_new_tokens=3), rewards=[spy])
    trainer.step()
    comp = trainer.last_batch.completions
    eos = trainer.tokenizer.eos_token_id
    eos_ids = {eos} if isinstance(eos, int) else set(eos or ())
    want = [len(ids) >= 3 and ids[-1] not in eos_ids for ids in comp.completion_ids]
    assert spy.seen[0].tolist() == want
