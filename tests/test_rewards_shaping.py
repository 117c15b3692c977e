"""CosineReward and RepetitionReward against the formulas of their paper, written here.

Yeo et al. 2025, "Demystifying Long Chain-of-Thought Reasoning in LLMs",
Appendix C: the cosine schedule ``CosFn(t, T, eta_min, eta_max) = eta_min +
(eta_max - eta_min) * (1 + cos(t * pi / T)) / 2`` between a value at length 0
and one at ``T`` (clamped at ``T``, as TRL does), and the n-gram repetition
penalty ``P * (repeated n-grams / all n-grams)``, here over the lower-cased
whitespace-separated words as open-r1's ``get_repetition_penalty_reward``
documents it (0 for an empty text or fewer words than ``n``; ``P <= 0``).
"""

from __future__ import annotations

import math
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_fast
from grpo_fast import InvalidInputError
from grpo_fast.rewards import CosineReward, MathReward, RepetitionReward, combine
from grpo_fast.run_rewards import RunRewards, parse_reward


def cos_fn(t: float, big_t: float, at_zero: float, at_end: float) -> float:
    """The paper's CosFn, with the value at t = 0 and at t >= T."""
    t = min(t, big_t)
    return at_end + (at_zero - at_end) * (1 + math.cos(t * math.pi / big_t)) / 2


def cosine_reference(correct: bool, length: int, max_len: int, values: dict[str, float]) -> float:
    if correct:  # the shortest right answer earns most
        return cos_fn(length, max_len, values["max_value_correct"], values["min_value_correct"])
    # the shortest wrong answer is punished most
    return cos_fn(length, max_len, values["min_value_wrong"], values["max_value_wrong"])


def repetition_reference(text: str, n: int, max_penalty: float) -> float:
    words = text.lower().split()
    if len(words) < n:
        return 0.0
    grams = [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]
    return max_penalty * (len(grams) - len(set(grams))) / len(grams)


DEFAULTS = {
    "min_value_wrong": -1.0,
    "max_value_wrong": -0.5,
    "min_value_correct": 0.5,
    "max_value_correct": 1.0,
}


@settings(max_examples=60, deadline=None)
@given(
    lengths=st.lists(st.integers(0, 5000), min_size=1, max_size=20),
    max_len=st.integers(1, 4000),
    values=st.fixed_dictionaries(
        {k: st.floats(-5, 5, allow_nan=False, width=32) for k in DEFAULTS}
    ),
)
def test_cosine_matches_the_formula(lengths, max_len, values):
    texts = [r"\boxed{3}" if i % 2 else r"\boxed{4}" for i in range(len(lengths))]
    got = combine(CosineReward(max_len, **values)).score_batch(texts, golds="3", lengths=lengths)
    want = [
        cosine_reference(t == r"\boxed{3}", n, max_len, values)
        for t, n in zip(texts, lengths, strict=True)
    ]
    np.testing.assert_allclose(got.total, want, rtol=1e-5, atol=1e-5)


def test_cosine_correctness_is_the_math_rewards():
    texts = [r"so \boxed{\frac{1}{2}}", "0.5", r"\boxed{1/3}", "no answer", r"\boxed{0.50}"]
    correct = combine(MathReward()).score_batch(texts, golds=r"\frac12").total == 1.0
    got = combine(CosineReward(10)).score_batch(texts, golds=r"\frac12", lengths=[4] * 5).total
    want = [cosine_reference(bool(c), 4, 10, DEFAULTS) for c in correct]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert correct.tolist() == [True, True, False, False, True]


def test_cosine_landmarks_and_unusable_gold():
    s = combine(CosineReward(100)).score_batch(
        [r"\boxed{3}"] * 4 + [r"\boxed{4}"] * 3 + [r"\boxed{3}"],
        golds=["3"] * 7 + [""],
        lengths=[0, 50, 100, 1000, 0, 50, 100, 5],
    )
    got = s.total.tolist()
    assert got[:7] == pytest.approx([1.0, 0.75, 0.5, 0.5, -1.0, -0.75, -0.5], abs=1e-6)
    assert math.isnan(got[7]), "a gold without an answer is unscorable"


@settings(max_examples=100, deadline=None)
@given(
    words=st.lists(st.sampled_from(["a", "A", "b", "go", "Go", "x1", "é", "ß"]), max_size=30),
    seps=st.lists(st.sampled_from([" ", "  ", "\n", "\t", " \n "]), min_size=30, max_size=30),
    n=st.integers(1, 6),
    max_penalty=st.floats(-3, 0, allow_nan=False, width=32),
)
def test_repetition_matches_the_formula(words, seps, n, max_penalty):
    text = "".join(w + s for w, s in zip(words, seps, strict=False))
    got = combine(RepetitionReward(n, max_penalty)).score_batch([text]).total[0]
    assert got == pytest.approx(repetition_reference(text, n, max_penalty), rel=1e-5, abs=1e-6)


def test_repetition_as_open_r1_documents_it():
    r = combine(RepetitionReward(ngram_size=2, max_penalty=-1.0))
    texts = [
        "",  # empty: no penalty
        "one",  # fewer words than n: no penalty
        "the cat sat on the mat",  # no repeated bigram
        "go go go go go",  # 4 bigrams, 1 unique: 3/4 repeated
        "Go GO go",  # case does not matter
        "a b a b a b",  # 5 bigrams, 2 unique
    ]
    assert r.score_batch(texts).total.tolist() == pytest.approx(
        [0.0, 0.0, 0.0, -0.75, -0.5, -0.6], abs=1e-6
    )


def test_composes_with_accuracy_and_pickles():
    rewards = combine(
        MathReward(), CosineReward(8, weight=0.5), RepetitionReward(2, -0.2, weight=2.0)
    )
    texts = [r"\boxed{3}", r"\boxed{3} \boxed{3} \boxed{3}", "4"]
    s = rewards.score_batch(texts, golds="3", lengths=[2, 8, 4])
    want = [
        1 + 0.5 * cosine_reference(True, 2, 8, DEFAULTS) + 0.0,
        # three identical boxes are one answer, 3: right; bigrams 2, 1 unique
        1 + 0.5 * cosine_reference(True, 8, 8, DEFAULTS) + 2 * -0.2 * 0.5,
        0 + 0.5 * cosine_reference(False, 4, 8, DEFAULTS) + 0.0,
    ]
    np.testing.assert_allclose(s.total, want, rtol=1e-6)
    assert list(s.columns) == ["math", "cosine", "repetition"]
    clone = pickle.loads(pickle.dumps(rewards))
    np.testing.assert_array_equal(clone.score_batch(texts, "3", [2, 8, 4]).total, s.total)


def test_cli_names_and_config_tables():
    assert parse_reward("cosine", max_new_tokens=256) == CosineReward(256)
    assert parse_reward("cosine:0.5", max_new_tokens=64) == CosineReward(64, weight=0.5)
    assert parse_reward("repetition:0.1") == RepetitionReward(weight=0.1)
    table = {"name": "repetition", "ngram_size": 4, "max_penalty": -0.5}
    assert parse_reward(table) == RepetitionReward(4, -0.5)
    run = RunRewards.build(["math", "cosine", "repetition"], max_new_tokens=10)
    s = run.score(
        [r"\boxed{2}", "well well well well"],
        [{"answer": "2"}, {"answer": "2"}],
        completion_ids=[[1] * 5, [1] * 10],
    )
    assert run.names == ("math", "cosine", "repetition")
    assert s.columns["cosine"].tolist() == pytest.approx(
        [cosine_reference(True, 5, 10, DEFAULTS), cosine_reference(False, 10, 10, DEFAULTS)]
    )
    # 4 words: 2 trigrams, both "well well well": half of them repeated
    assert s.columns["repetition"].tolist() == pytest.approx([0.0, -0.5])
    assert "cosine" in grpo_fast.names.REWARD_KINDS and "repetition" in grpo_fast.names.REWARD_KINDS


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda: CosineReward(0), "max_length"),
        (lambda: CosineReward(-3), "max_length"),
        (lambda: CosineReward(10, min_value_wrong=float("nan")), "min_value_wrong"),
        (lambda: CosineReward(10, max_value_correct=float("inf")), "max_value_correct"),
        (lambda: CosineReward(10, min_value_correct=True), "min_value_correct"),
        (lambda: CosineReward(10, rules=["nope"]), "nope"),
        (lambda: RepetitionReward(0), "ngram_size"),
        (lambda: RepetitionReward(2, 0.5), "max_penalty"),
        (lambda: RepetitionReward(2, float("nan")), "max_penalty"),
        (lambda: RepetitionReward("3"), "ngram_size"),
    ],
)
def test_bad_options_are_clear_errors(make, what):
    with pytest.raises(InvalidInputError, match=what):
        combine(make())


def test_cosine_needs_lengths():
    with pytest.raises(InvalidInputError, match="cosine reward needs the token lengths"):
        combine(CosineReward(10)).score_batch(["3"], golds="3")
    with pytest.raises(InvalidInputError, match="lengths has 2 entries"):
        combine(CosineReward(10)).score_batch(["3"], golds="3", lengths=[1, 2])


def test_repetition_is_linear_on_a_long_text():
    text = " ".join(str(i % 97) for i in range(200_000))
    got = combine(RepetitionReward(3)).score_batch([text]).total[0]
    assert got == pytest.approx(repetition_reference(text, 3, -1.0), rel=1e-5)
