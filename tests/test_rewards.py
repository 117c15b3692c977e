"""grpo_fast.rewards against independent references.

Format: Python's ``re`` (DOTALL, full match) on the same patterns. Overlong:
TRL's ``get_soft_overlong_punishment`` (DAPO eq. 13) on the same lengths.
Math: the scalar ``grpo_fast.verify``, one pair at a time. Weighting and NaN
propagation: numpy, written here.
"""

from __future__ import annotations

import copy
import json
import multiprocessing
import pickle
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_fast
from grpo_fast import InvalidInputError, rewards
from grpo_fast.rewards import (
    ChoiceReward,
    CosineReward,
    ExactMatchReward,
    FormatReward,
    MathReward,
    OverlongReward,
    PythonReward,
    RepetitionReward,
    combine,
    score_batch,
)

THINK = r"^<think>.*?</think>\s*<answer>.*?</answer>$"

pieces = st.lists(
    st.sampled_from(["<think>", "</think>", "<answer>", "</answer>", "\n", " ", "x", "42", "é"]),
    max_size=12,
).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=pieces)
def test_format_matches_python_re(text):
    want = float(re.match(THINK, text, re.DOTALL) is not None)
    got = score_batch(FormatReward(THINK), [text]).total[0]
    assert got == want


@pytest.mark.parametrize(
    ("pattern", "dot_all"),
    [(r"\d{3}", False), (r"^Answer: \w+$", False), (r"(?i)^final.*$", True), ("a.b", False)],
)
def test_format_patterns_match_python_re(pattern, dot_all):
    texts = ["123", "x12", "Answer: yes", "answer: yes\n", "FINAL\nx", "a\nb", "axb", ""]
    flags = re.DOTALL if dot_all else 0
    want = [float(re.search(pattern, t, flags) is not None) for t in texts]
    got = score_batch(FormatReward(pattern, dot_all=dot_all), texts).total
    assert got.tolist() == want


def test_overlong_matches_trl():
    trl_rewards = pytest.importorskip("trl.rewards")
    lengths = list(range(0, 130, 3))
    for max_len, cache in [(100, 20), (64, 64), (50, 1)]:
        peer = trl_rewards.get_soft_overlong_punishment(max_len, cache)
        want = peer(completion_ids=[[0] * n for n in lengths])
        got = score_batch(OverlongReward(max_len, cache), ["x"] * len(lengths), lengths=lengths)
        np.testing.assert_allclose(got.total, np.array(want, dtype=np.float32), rtol=1e-6)
        py = [rewards.overlong_penalty(n, max_len, cache) for n in lengths]
        np.testing.assert_allclose(got.total, np.array(py, dtype=np.float32), rtol=1e-6)


def test_math_reward_matches_scalar_verify():
    golds = [r"\frac12", "72", "3", None, "   "]
    preds = [r"\boxed{0.5}", "Total: 72 apples.\n#### 72", r"\boxed{4}", "3", "3"]
    got = score_batch(MathReward(), preds, golds).total
    want = [1.0 if grpo_fast.verify(golds[i], preds[i]) else 0.0 for i in range(3)]
    assert got[:3].tolist() == want
    assert np.isnan(got[3]) and np.isnan(got[4])  # no gold / unusable gold: unscorable


def test_math_reward_options_reach_the_verifier():
    preds = [r"\boxed{1.41}"]
    assert score_batch(MathReward(), preds, r"\sqrt2").total.tolist() == [0.0]
    assert score_batch(MathReward(rel_tol=1e-2), preds, r"\sqrt2").total.tolist() == [1.0]
    only_gsm = MathReward(rules=["gsm8k"])
    assert score_batch(only_gsm, [r"\boxed{4}", "#### 4"], "4").total.tolist() == [0.0, 1.0]


@pytest.mark.parametrize(
    ("pred", "gold", "want"),
    [
        ("the answer is Paris.", "paris", 1.0),
        ("Answer: London", "Paris", 0.0),
        (r"\boxed{New York}", "new york", 1.0),
        ("no marker here", "here", 0.0),
    ],
)
def test_exact_match(pred, gold, want):
    assert score_batch(ExactMatchReward(), [pred], gold).total.tolist() == [want]


def test_exact_match_whole_text_and_case():
    r = ExactMatchReward(extract=False, case_sensitive=True)
    got = score_batch(r, ["  Paris \n", "paris", "Paris!"], "Paris").total
    assert got.tolist() == [1.0, 0.0, 0.0]


@pytest.mark.parametrize(
    ("pred", "gold", "want"),
    [
        ("The answer is (b).", "B", 1.0),
        (r"so \boxed{\text{(C)}}", "C", 1.0),
        ("Answer: D. 42", "(D)", 1.0),
        ("I pick (A)", "B", 0.0),
        (r"\boxed{A} \boxed{B}", "B", 0.0),  # hedging earns nothing
    ],
)
def test_choice(pred, gold, want):
    assert score_batch(ChoiceReward(), [pred], gold).total.tolist() == [want]


def test_choice_gold_without_letter_is_nan():
    assert np.isnan(score_batch(ChoiceReward(), ["A"], "42").total[0])


def test_combination_is_the_weighted_sum():
    specs = [
        MathReward(weight=1.0),
        FormatReward(THINK, weight=0.5),
        OverlongReward(10, 4, weight=0.25),
        PythonReward(lambda c, g, n: [float(len(x) % 2) for x in c], weight=-2.0, name="odd"),
    ]
    completions = [
        "<think>2+2</think> <answer>4</answer>",
        "<think>hm</think><answer>5</answer>",
        r"\boxed{4}",
        "nothing",
    ]
    golds = ["4", "4", "4", None]
    lengths = np.array([3, 7, 9, 30])
    s = combine(*specs).score_batch(completions, golds, lengths=lengths)
    assert list(s.columns) == ["math", "format", "overlong", "odd"]
    cols = {
        "math": [1.0, 0.0, 1.0, np.nan],
        "format": [1.0, 1.0, 0.0, 0.0],
        "overlong": [rewards.overlong_penalty(int(n), 10, 4) for n in lengths],
        "odd": [float(len(x) % 2) for x in completions],
    }
    for name, want in cols.items():
        np.testing.assert_array_equal(s.columns[name], np.array(want, dtype=np.float32))
    w = np.array([1.0, 0.5, 0.25, -2.0], dtype=np.float32)
    want_total = np.stack([np.array(cols[k], dtype=np.float32) for k in cols]).T @ w
    np.testing.assert_allclose(s.total, want_total, rtol=1e-6)
    assert np.isnan(s.total[3])
    assert s.total.dtype == np.float32


def test_zero_weight_column_does_not_poison_the_total():
    s = combine(MathReward(weight=0.0), FormatReward("x")).score_batch(["x"], None)
    assert np.isnan(s.columns["math"][0]) and s.total.tolist() == [1.0]


def test_python_reward_is_called_once_per_batch_with_the_batch():
    calls = []

    def fn(completions, golds, lengths):
        calls.append((list(completions), list(golds), lengths))
        return [None if c == "skip" else 1.0 for c in completions]

    s = combine(PythonReward(fn, name="mine")).score_batch(["a", "skip"], "g", lengths=[1, 2])
    assert len(calls) == 1
    assert calls[0][0] == ["a", "skip"] and calls[0][1] == ["g", "g"]
    assert calls[0][2].tolist() == [1, 2]
    assert s.total[0] == 1.0 and np.isnan(s.total[1])


def test_duplicate_names_are_numbered():
    r = combine(FormatReward("a"), FormatReward("b"), FormatReward("c", name="format"))
    assert r.names == ("format", "format_2", "format_3")


@settings(max_examples=25, deadline=None)
@given(n=st.integers(65, 300), threads=st.integers(1, 4))
def test_batch_independent_of_thread_count(n, threads):
    completions = [rf"<answer>{i}</answer> \boxed{{{i % 7}}}" for i in range(n)]
    golds = [str(i % 5) for i in range(n)]
    r = combine(MathReward(), FormatReward(r"<answer>\d*[05]</answer>"), ExactMatchReward())
    before = grpo_fast.get_num_threads()
    try:
        grpo_fast.set_num_threads(1)
        a = r.score_batch(completions, golds)
        grpo_fast.set_num_threads(threads)
        b = r.score_batch(completions, golds)
    finally:
        grpo_fast.set_num_threads(before)
    np.testing.assert_array_equal(a.total, b.total)
    want = [float(i % 7 == i % 5) for i in range(n)]
    assert a.columns["math"].tolist() == want


@pytest.mark.parametrize(
    ("make", "what"),
    [
        (lambda: combine(FormatReward("(")), "bad format regex"),
        (lambda: combine(FormatReward("a{1000000}")), "bad format regex"),
        (lambda: combine(OverlongReward(10, 11)), "cache_len"),
        (lambda: combine(OverlongReward(-1, 0)), "max_length"),
        (lambda: combine(), "at least one"),
        (lambda: combine("math"), "expected a reward spec"),
        (lambda: combine(FormatReward("a", weight=float("nan"))), "weight"),
        (lambda: combine(MathReward(rules=["nope"])), "nope"),
        (lambda: combine(PythonReward(3)), "callable"),
    ],
)
def test_bad_specs(make, what):
    with pytest.raises(InvalidInputError, match=what):
        make()


@pytest.mark.parametrize(
    ("args", "what"),
    [
        ((["a", 1], "g"), r"completions\[1\]"),
        ("abc", "completions must be a list"),
        ((["a"], ["g", "h"]), "golds has 2 entries but completions has 1"),
        ((["a"], [3]), r"golds\[0\]"),
        ((["a"], "g", [1, 2]), "lengths has 2 entries"),
        ((["a"], "g", [[1]]), "lengths must be 1-D"),
        ((["a"], "g", [1.5]), "integer"),
        ((["a"], "g", [-1]), "lengths"),
        ((["a"], "g"), "needs the token lengths"),
    ],
)
def test_bad_batches(args, what):
    r = combine(MathReward(), OverlongReward(10, 2))
    if isinstance(args, str):
        args = (args,)
    with pytest.raises(InvalidInputError, match=what):
        r.score_batch(*args)


def test_python_reward_bad_return():
    r = combine(PythonReward(lambda c, g, n: [1.0], name="short"))
    with pytest.raises(InvalidInputError, match="returned 1 values for 2"):
        r.score_batch(["a", "b"])
    r = combine(PythonReward(lambda c, g, n: ["x"], name="word"))
    with pytest.raises(InvalidInputError, match="non-number"):
        r.score_batch(["a"])


@settings(max_examples=200, deadline=None)
@given(
    pred=st.text(alphabet="abcXYZéΣσ 12\n\t.", max_size=20),
    gold=st.text(alphabet="abcXYZéΣσ 12\n\t.", max_size=20),
)
def test_exact_whole_text_matches_python_reference(pred, gold):
    ci = score_batch(ExactMatchReward(extract=False), [pred], gold).total[0]
    cs = score_batch(ExactMatchReward(extract=False, case_sensitive=True), [pred], gold).total[0]
    assert cs == float(pred.strip() == gold.strip())
    assert ci == float(pred.strip().lower() == gold.strip().lower())


@settings(max_examples=200, deadline=None)
@given(
    completions=st.lists(st.text(max_size=120), min_size=1, max_size=8),
    gold=st.one_of(st.none(), st.text(max_size=30)),
)
def test_no_exception_escapes_for_any_text(completions, gold):
    r = combine(MathReward(), ChoiceReward(), ExactMatchReward(), FormatReward(THINK))
    s = r.score_batch(completions, gold)
    assert s.total.shape == (len(completions),) and s.total.dtype == np.float32
    for col in s.columns.values():
        finite = col[~np.isnan(col)]
        assert set(finite.tolist()) <= {0.0, 1.0}


# ---------------------------------------------------------------- the str boundary

SURROGATE = json.loads('"\\ud83d"')  # a lone surrogate: valid str, not Unicode

ALL_SPECS = [
    MathReward(),
    ExactMatchReward(),
    ExactMatchReward(extract=False),
    ChoiceReward(),
    FormatReward(r"^.*$"),
    OverlongReward(8, 4),
    PythonReward(lambda c, g, n: [float(len(x)) for x in c], name="len"),
]


@pytest.mark.parametrize("spec", ALL_SPECS, ids=lambda s: s.name or type(s).__name__)
def test_a_lone_surrogate_completion_earns_nothing_and_fails_no_batch(spec):
    good = ["Answer: B", "#### 7"]
    bad = [SURROGATE, "Answer: B" + SURROGATE]
    golds = ["B", "7", "B", "B"]
    lengths = [10, 6, 6, 7]
    both = score_batch(spec, good + bad, golds, lengths)
    alone = score_batch(spec, good, golds[:2], lengths[:2])
    # The good items score as they do without the bad ones.
    np.testing.assert_array_equal(both.total[:2], alone.total)
    if isinstance(spec, OverlongReward):
        # Overlong reads the token length, not the text.
        assert both.total[2:].tolist() == [(4 - 6) / 4, (4 - 7) / 4]
    elif isinstance(spec, PythonReward):
        # The user's function gets the str as it is.
        assert both.total[2:].tolist() == [1.0, 10.0]
    else:
        assert both.total[2:].tolist() == [0.0, 0.0]


def test_an_unreadable_completion_is_not_an_empty_match():
    # An empty completion would match `^$` and the empty gold; an unreadable
    # one matches nothing.
    for spec in (FormatReward("^$"), ExactMatchReward(extract=False)):
        assert score_batch(spec, ["", SURROGATE], "").total.tolist() == [1.0, 0.0]


def test_a_lone_surrogate_gold_is_unscorable():
    s = combine(MathReward(), ExactMatchReward(), ChoiceReward()).score_batch(
        ["#### 7", "(B)"], [SURROGATE, "B" + SURROGATE]
    )
    for col in s.columns.values():
        assert np.isnan(col).all()
    assert np.isnan(s.total).all()


def test_an_over_long_completion_scores_as_one_without_an_answer():
    long = "é" * 300 + r"\boxed{7}"
    r = combine(MathReward(max_length=100), ExactMatchReward(max_length=100))
    assert r.score_batch([long, r"\boxed{7}"], "7").total.tolist() == [0.0, 2.0]
    # A format spec reads the whole text, whatever the other specs' limits.
    r = combine(MathReward(max_length=100), FormatReward("7}$", name="fmt"))
    assert r.score_batch([long], "7").columns["fmt"].tolist() == [1.0]


@pytest.mark.parametrize("value", [2**70, 2**32, -1, True, 2.0])
def test_bad_overlong_lengths_are_invalid_input(value):
    with pytest.raises(InvalidInputError, match="max_length"):
        combine(OverlongReward(value, 0))


@pytest.mark.parametrize("value", [2**70, -1, 1.5])
def test_bad_extraction_options_of_specs_are_invalid_input(value):
    for make in (MathReward, ExactMatchReward, ChoiceReward):
        with pytest.raises(InvalidInputError, match="max_length"):
            combine(make(max_length=value))


def test_a_weight_beyond_float32_is_invalid_input():
    with pytest.raises(InvalidInputError, match="weight"):
        combine(MathReward(weight=1e300))


def test_spec_kinds_are_the_core_kinds():
    from grpo_fast import _core

    specs = [
        MathReward(),
        ExactMatchReward(),
        ChoiceReward(),
        FormatReward("x"),
        OverlongReward(4, 1),
        CosineReward(4),
        RepetitionReward(),
    ]
    assert [s.kind for s in specs] == list(grpo_fast.names.REWARD_KINDS)
    assert [s._compile().kind for s in specs] == [s.kind for s in specs]
    assert grpo_fast.names.REWARD_KINDS == _core.REWARD_KINDS == (
        "math", "exact", "choice", "format", "overlong", "cosine", "repetition",
    )  # fmt: skip


# ---------------------------------------------------------------- pickling


def short(completions, golds, lengths):
    """A module-level PythonReward function (picklable, unlike a lambda)."""
    return [float(len(c) < 5) for c in completions]


BATCH = (
    ["<think>a</think> 4", r"\boxed{4}", "(C) 4", "hello"],
    ["4", "4", "C", None],
    [3, 9, 12, 2],
)


def _rewards():
    return combine(
        MathReward(rel_tol=1e-3),
        FormatReward(r"^<think>", weight=0.5),
        ChoiceReward(weight=0.25),
        OverlongReward(10, 4, weight=2.0),
        PythonReward(short, weight=-1.0),
    )


def _assert_same_scores(a, b):
    np.testing.assert_array_equal(a.total, b.total)
    assert a.columns.keys() == b.columns.keys()
    for k in a.columns:
        np.testing.assert_array_equal(a.columns[k], b.columns[k])


def test_rewards_pickle_and_deepcopy():
    r = _rewards()
    want = r.score_batch(*BATCH)
    for copy_of in (lambda x: pickle.loads(pickle.dumps(x)), copy.deepcopy, copy.copy):
        c = copy_of(r)
        assert c.names == r.names and c.specs == r.specs
        _assert_same_scores(c.score_batch(*BATCH), want)


def _score_in_worker(r):
    return r.score_batch(*BATCH)


def test_rewards_through_a_spawned_worker():
    r = _rewards()
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        got = pool.apply(_score_in_worker, (r,))
    _assert_same_scores(got, r.score_batch(*BATCH))
