"""The Python verifier API: verify / verify_detailed / verify_batch.

References: the scalar ``verify`` for the batch form (computed one pair at a
time, in the test), Python's ``fractions`` for generated exact values, and
math-verify (the peer) on pairs both libraries decide the same by the
documented semantics. Properties: no exception escapes for any str pair,
``verify(x, x)`` for every generated answer, results independent of the
thread count and of the calling context (threads, asyncio, a forked worker).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import multiprocessing
import os
import sys
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_fast
from grpo_fast import InvalidInputError, verify, verify_batch, verify_detailed

# ---------------------------------------------------------------- the basics


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        (r"\frac34", r"so \boxed{0.75}"),
        (r"\frac{1}{2}", r"The answer is $\frac{2}{4}$."),
        ("Natalia sold 48/2 = 24 clips in May.\n#### 72", "In total she sold 72 clips."),
        ("72", "#### 72"),
        ("1080", r"\boxed{1,080}"),
        ("(2,2), (6,2)", r"\boxed{(2,2)} and \boxed{(6,2)}"),
        ("C", r"the answer is \boxed{C}"),
        ("10\\%", r"\boxed{0.1}"),
    ],
)
def test_matches(gold, pred):
    v = verify_detailed(gold, pred)
    assert v.matched, v
    assert verify(gold, pred) is True
    assert bool(v) is True and v.reason == "match"


@pytest.mark.parametrize(
    ("gold", "pred", "reason"),
    [
        ("391", r"\boxed{381} \boxed{391} \boxed{401}", None),
        ("72", "I do not know", "no answer found"),
        ("0", r"\boxed{}", "no answer found"),
        ("0", "Answer: $$", "no answer found"),
        (r"\frac13", r"\boxed{0.33}", None),
        ("   ", r"\boxed{1}", "no gold answer"),
    ],
)
def test_non_matches(gold, pred, reason):
    v = verify_detailed(gold, pred)
    assert not v.matched and verify(gold, pred) is False
    if reason is not None:
        assert v.reason == reason


def test_rel_tol_is_a_parameter():
    assert not verify(r"\sqrt2", r"\boxed{1.41}")
    assert verify(r"\sqrt2", r"\boxed{1.41}", rel_tol=1e-2)
    with pytest.raises(InvalidInputError, match="rel_tol"):
        verify("1", "1", rel_tol=-1)


def test_the_default_call_builds_no_options(monkeypatch):
    # TRL's pattern (one call per completion, no option) goes straight to the
    # core with the default options; an option, even equal to its default
    # but another object, goes through the options helper to the same verdict.
    module = sys.modules["grpo_fast.verify"]  # the package's `verify` is the function
    calls = []
    real = module.verify_options
    monkeypatch.setattr(module, "verify_options", lambda *a: calls.append(a) or real(*a))
    assert verify("3/4", r"so \boxed{0.75}")
    assert calls == []
    assert verify("3/4", r"so \boxed{0.75}", rel_tol=float("1e-6"), think=True)
    assert len(calls) == 1


def test_batch_matches_the_scalar_function_and_broadcasts():
    golds = ["4", r"\frac12", "72", None, "x"]
    preds = [r"\boxed{4}", "0.5", "#### 71", r"\boxed{1}", "y"]
    want = [float(g is not None and verify(g, p)) for g, p in zip(golds, preds, strict=True)]
    got = verify_batch(golds, preds)
    assert got.dtype == np.float32 and got.shape == (5,)
    assert got.tolist() == want
    one = verify_batch("4", preds)
    assert one.tolist() == [float(verify("4", p)) for p in preds]
    assert verify_batch("4", []).shape == (0,)
    # numpy arrays of str (as verl hands them over) work like lists
    arr = verify_batch(np.array(golds[:3]), np.array(preds[:3], dtype=object))
    assert arr.tolist() == want[:3]


@pytest.mark.parametrize(
    ("golds", "preds", "what"),
    [
        (["1", "2"], ["1"], "golds has 2 entries but completions has 1"),
        ("1", ["1", 2], r"preds\[1\]"),
        ([1], ["1"], r"golds\[0\]"),
        ("1", "abc", "preds must be a list"),
        (3, ["1"], "golds must be"),
        ("1", np.array([["1"]]), "preds must be 1-D"),
    ],
)
def test_batch_bad_input(golds, preds, what):
    with pytest.raises(InvalidInputError, match=what):
        verify_batch(golds, preds)


@pytest.mark.parametrize(("gold", "pred"), [(1, "1"), ("1", None), ("1", b"1")])
def test_scalar_bad_input(gold, pred):
    with pytest.raises(InvalidInputError, match="must be a str"):
        verify(gold, pred)


# ---------------------------------------------------------------- properties


@st.composite
def exact_values(draw):
    """An exact rational written one of several ways, and its Fraction."""
    n = draw(st.integers(-(10**9), 10**9))
    d = draw(st.integers(1, 10**4))
    form = draw(st.sampled_from(["int", "frac", "dfrac", "slash", "dec"]))
    if form == "int":
        return str(n), Fraction(n)
    if form == "dec":
        k = draw(st.integers(0, 6))
        sign, a = ("-" if n < 0 else ""), abs(n)
        text = f"{sign}{a // 10**k}.{a % 10**k:0{k}d}" if k else str(n)
        return text, Fraction(n, 10**k)
    sign = "-" if n < 0 else ""
    a = abs(n)
    text = {
        "frac": f"{sign}\\frac{{{a}}}{{{d}}}",
        "dfrac": f"{sign}\\dfrac{{{a}}}{{{d}}}",
        "slash": f"{sign}{a}/{d}",
    }[form]
    return text, Fraction(n, d)


@settings(max_examples=300, deadline=None)
@given(a=exact_values(), b=exact_values())
def test_exact_values_match_iff_equal(a, b):
    (ta, fa), (tb, fb) = a, b
    assert verify(ta, f"\\boxed{{{tb}}}") == (fa == fb), (ta, tb)


@settings(max_examples=200, deadline=None)
@given(x=exact_values())
def test_verify_x_x(x):
    text, _ = x
    assert verify(text, text)
    assert verify(text, f"The answer is \\boxed{{{text}}}.")


answers = st.one_of(
    exact_values().map(lambda t: t[0]),
    st.sampled_from(
        [
            r"\sqrt{2}",
            r"2\sqrt2",
            r"\pi",
            r"(1,2)",
            r"\{1,2,3\}",
            r"[0, 1)",
            r"x = 5",
            r"x^2+2x+1",
            r"\text{yes}",
            r"y = 2x + 3",
            r"x \ge 2",
            r"\begin{pmatrix}1&2\\3&4\end{pmatrix}",
        ]
    ),
)


@settings(max_examples=200, deadline=None)
@given(x=answers)
def test_every_parseable_answer_matches_itself(x):
    v = verify_detailed(x, f"\\boxed{{{x}}}")
    if v.gold is not None and v.pred is not None:
        assert v.matched, v


@settings(max_examples=300, deadline=None)
@given(gold=st.text(max_size=60), pred=st.text(max_size=200))
def test_no_exception_escapes(gold, pred):
    v = verify_detailed(gold, pred)
    assert isinstance(v.matched, bool) and isinstance(v.reason, str)


_prompt_words = st.sampled_from(
    ["multiplied", "divided", "times", "plus", "minus", "by", "12", "+"]
)


@settings(max_examples=300, deadline=None)
@given(
    pred=st.text(max_size=80),
    prompt=st.lists(st.one_of(_prompt_words, st.text(max_size=3)), max_size=12).map(" ".join),
)
def test_no_exception_escapes_with_a_prompt(pred, prompt):
    # An answer is read against its prompt's arithmetic (rule 2): any prompt
    # text. `12 multiplied 中 13` sliced the wide character (found by fuzzing).
    for p in (pred, f"\\boxed{{12 \\cdot 13}} {pred}"):
        assert isinstance(verify("156", p, prompt=prompt), bool)
        assert isinstance(verify_detailed("156", p, prompt=prompt).reason, str)
    assert verify_batch(["156"], [pred], prompts=[prompt]).shape == (1,)


def test_a_prompt_with_a_wide_character_after_a_word():
    for wide in ["é", "中", "😀"]:
        prompt = f"What is 12 multiplied {wide} 13?"
        assert verify("156", r"\boxed{156}", prompt=prompt)
        assert not verify("156", r"\boxed{12 - 13}", prompt=prompt)


@settings(max_examples=30, deadline=None)
@given(
    pairs=st.lists(st.tuples(answers, answers), min_size=65, max_size=200),
    threads=st.integers(1, 4),
)
def test_batch_independent_of_thread_count(pairs, threads):
    golds = [g for g, _ in pairs]
    preds = [f"\\boxed{{{p}}}" for _, p in pairs]
    before = grpo_fast.get_num_threads()
    try:
        grpo_fast.set_num_threads(1)
        serial = verify_batch(golds, preds)
        grpo_fast.set_num_threads(threads)
        parallel = verify_batch(golds, preds)
    finally:
        grpo_fast.set_num_threads(before)
    np.testing.assert_array_equal(serial, parallel)
    assert serial.tolist() == [float(verify(g, p)) for g, p in zip(golds, preds, strict=True)]


# ---------------------------------------------------------------- adversarial


ADVERSARIAL = [
    "\\boxed{" + "{" * 100_000 + "1" + "}" * 100_000 + "}",
    "\\boxed{" + "(" * 50_000 + "1" + ")" * 50_000 + "}",
    "\\boxed{" + "2^" * 5_000 + "2}",
    "\\boxed{9^{9^{9^{9^{9}}}}}",
    "\\boxed{" + "9" * 1_000_000 + "}",
    "\\boxed{" + "9" * 200_000 + "}",
    "\\boxed{10^{10^{10}}}",
    "\\boxed{1000000!}",
    "\\boxed{" + "\\frac{1}{" * 3_000 + "2" + "}" * 3_000 + "}",
    "\\boxed{" + "x+" * 20_000 + "x}",
    "\\boxed{" + "\\sqrt{" * 5_000 + "2" + "}" * 5_000 + "}",
    "\\boxed{(x+1)^{100000}}",
    "\\boxed{\\sum_{k=1}^{10^{12}} k}",
    "$" * 200_000,
    "\\boxed{" * 100_000,
    "#### " + "1," * 100_000,
]


@pytest.mark.parametrize("pred", ADVERSARIAL, ids=range(len(ADVERSARIAL)))
def test_adversarial_inputs_are_non_matches(pred):
    v = verify_detailed("7", pred)
    assert v.matched is False
    assert isinstance(v.reason, str) and v.reason
    # The gold side is bounded the same way.
    assert verify_detailed(pred, "7").matched is False


def test_over_length_limit_reason():
    pred = "x" * 100 + r"\boxed{7}"
    v = verify_detailed("7", pred, max_length=50)
    assert not v.matched and v.reason.startswith("over budget")


def test_adversarial_batch_is_all_zero():
    out = verify_batch("7", ADVERSARIAL * 5)
    assert out.tolist() == [0.0] * (len(ADVERSARIAL) * 5)


# ---------------------------------------------------------------- contexts

PAIRS = [(r"\frac12", r"\boxed{0.5}"), ("3", "#### 4"), ("72", "so 72"), ("x", "y")] * 40
WANT = [float(verify(g, p)) for g, p in PAIRS]


def _batch():
    return verify_batch([g for g, _ in PAIRS], [p for _, p in PAIRS]).tolist()


def test_from_a_thread_pool():
    with ThreadPoolExecutor(8) as ex:
        batches = list(ex.map(lambda _: _batch(), range(16)))
        singles = list(ex.map(lambda gp: float(verify(*gp)), PAIRS))
    assert all(b == WANT for b in batches)
    assert singles == WANT


def test_from_an_asyncio_executor():
    async def main():
        loop = asyncio.get_running_loop()
        return await asyncio.gather(*(loop.run_in_executor(None, _batch) for _ in range(8)))

    assert all(b == WANT for b in asyncio.run(main()))


def _child(q):
    q.put(_batch())


@pytest.mark.skipif(sys.platform != "linux", reason="fork start method")
@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_from_a_forked_worker():
    assert _batch() == WANT  # the parent's pool is up before the fork
    ctx = multiprocessing.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_child, args=(q,))
    p.start()
    got = q.get(timeout=60)
    p.join(timeout=60)
    assert p.exitcode == 0
    assert got == WANT


def test_no_signal_handlers_installed():
    import signal

    before = signal.getsignal(signal.SIGALRM)
    verify_batch("1", ["1"] * 100)
    assert signal.getsignal(signal.SIGALRM) == before
    assert os.getpid() > 0


# ---------------------------------------------------------------- the peer


def _math_verify():
    return pytest.importorskip("math_verify")


@pytest.mark.parametrize(
    ("gold", "pred"),
    [
        ("$\\frac{1}{2}$", "The answer is $\\boxed{\\frac{1}{2}}$"),
        ("$5$", "So $\\boxed{5}$."),
        ("$\\sqrt{2}$", "\\boxed{\\sqrt{2}}"),
        ("$3$", "\\boxed{4}"),
        ("$(1,2)$", "\\boxed{(2,1)}"),
        ("$\\frac{3}{4}$", "\\boxed{0.75}"),
        ("$12$", "\\boxed{13}"),
    ],
)
def test_agrees_with_math_verify_on_plain_pairs(gold, pred):
    mv = _math_verify()
    want = mv.verify(mv.parse(gold), mv.parse(pred))
    assert verify(gold, pred) == want


# ---------------------------------------------------------------- parse


@settings(max_examples=200, deadline=None)
@given(x=exact_values())
def test_parse_gives_a_number_whose_canonical_form_verifies(x):
    text, value = x
    a = grpo_fast.parse(text)
    assert a is not None and a.kind == "number"
    assert str(a) == a.canonical
    assert verify(a.canonical, f"\\boxed{{{text}}}")
    assert verify(text, f"\\boxed{{{a.canonical}}}")
    # and it is the same rational as the one the text was written from
    assert verify(f"{value.numerator}/{value.denominator}", f"\\boxed{{{a.canonical}}}")


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        (r"\{1, 2\}", "set"),
        ("(1, 2)", "tuple"),
        ("[0, 1)", "interval"),
        ("x = 5", "relation"),
        ("x^2 + 1", "expression"),
        ("Half of 144 is 72.\n#### 72", "number"),
    ],
)
def test_parse_kinds(text, kind):
    a = grpo_fast.parse(text)
    assert a is not None and a.kind == kind


@pytest.mark.parametrize("text", ["", "   ", "\\boxed{" + "9" * 100_000 + "}"])
def test_parse_no_value(text):
    assert grpo_fast.parse(text) is None


def test_parse_bad_input():
    with pytest.raises(InvalidInputError, match="text must be a str"):
        grpo_fast.parse(3)  # type: ignore[arg-type]


# ---------------------------------------------------------------- the str boundary

# A lone surrogate: valid in a Python str (JSON data holds them), not Unicode.
SURROGATE = json.loads('"\\ud83d"')
BAD_TEXTS = [SURROGATE, "so \\boxed{7}" + SURROGATE, SURROGATE + "#### 7"]


@pytest.mark.parametrize("pred", BAD_TEXTS)
def test_a_lone_surrogate_is_a_non_match_not_an_exception(pred):
    v = verify_detailed("7", pred)
    assert v == grpo_fast.Verdict(False, "not valid unicode", "7", None)
    assert verify("7", pred) is False
    g = verify_detailed(pred, "7")
    assert (g.matched, g.reason, g.pred) == (False, "not valid unicode: gold", None)
    assert grpo_fast.extract_answer(pred) is None
    assert grpo_fast.extract_gold(pred) is None
    assert grpo_fast.parse(pred) is None


def test_the_gold_reason_comes_first_for_an_unreadable_prediction():
    assert verify_detailed("", SURROGATE).reason == "no gold answer"


def test_a_batch_with_bad_strings_scores_the_others():
    preds = ["\\boxed{7}", SURROGATE, "#### 7", BAD_TEXTS[1], "é 7", "8"]
    golds = ["7", "7", SURROGATE, "7", "7", "8"]
    want = [1.0, 0.0, 0.0, 0.0, float(verify("7", "é 7")), 1.0]
    assert verify_batch(golds, preds).tolist() == want
    # One gold for all: the same, pair by pair.
    assert verify_batch("7", preds).tolist() == [float(verify("7", p)) for p in preds]
    assert verify_batch(SURROGATE, preds).tolist() == [0.0] * len(preds)


def test_the_length_limit_counts_utf8_bytes():
    # "é" is 2 bytes: 30 of them (60 bytes) are over a 50-byte limit although
    # they are 30 characters; 20 (40 bytes) plus the box are within it.
    over = "é" * 30 + r"\boxed{7}"
    within = "é" * 20 + r"\boxed{7}"
    assert verify_detailed("7", over, max_length=50).reason.startswith("over budget")
    assert verify("7", within, max_length=len(within.encode())) is True
    assert verify("7", within, max_length=len(within.encode()) - 1) is False
    assert verify_batch("7", [over, within], max_length=50).tolist() == [0.0, 1.0]


def test_no_utf8_copy_outlives_the_call():
    # CPython caches the UTF-8 form of a non-ASCII str inside the str object
    # (sys.getsizeof grows by its size); the binding must use its own
    # temporary instead, so the caller's strings stay as they were.
    texts = ["é" * 1000 + rf"\boxed{{{i}}}" for i in range(50)]
    before = [sys.getsizeof(t) for t in texts]
    verify_batch("3", texts)
    verify("3", texts[0])
    grpo_fast.extract_answer(texts[1])
    grpo_fast.score_batch(grpo_fast.rewards.MathReward(), texts, golds="3")
    assert [sys.getsizeof(t) for t in texts] == before


def test_an_over_long_text_is_refused_before_it_is_converted():
    # 4 million non-ASCII characters: encoding them would allocate 8 MB.
    huge = "é" * 4_000_000 + r"\boxed{7}"
    tracemalloc.start()
    try:
        v = verify_detailed("7", huge)
        out = verify_batch("7", [huge, huge])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert v.reason == "over budget: completion longer than the extraction limit"
    assert out.tolist() == [0.0, 0.0]
    assert peak < 1_000_000, peak


@pytest.mark.parametrize("name", ["max_length", "tail_length"])
@pytest.mark.parametrize("value", [2**70, -1, True, 1.5, "10", 2**64])
def test_bad_length_options_are_invalid_input(name, value):
    with pytest.raises(InvalidInputError, match=name):
        verify("1", "1", **{name: value})
    with pytest.raises(InvalidInputError, match=name):
        verify_batch("1", ["1"], **{name: value})
    with pytest.raises(InvalidInputError, match=name):
        grpo_fast.extract_answer("1", **{name: value})


@pytest.mark.parametrize("value", [-1.0, float("nan"), float("inf"), True, "0.1", [0.1]])
def test_bad_rel_tol_is_invalid_input(value):
    with pytest.raises(InvalidInputError, match="rel_tol"):
        verify("1", "1", rel_tol=value)


@pytest.mark.parametrize("rules", ["boxed", ["boxed", 3], ["nope"], 5])
def test_bad_rules_are_invalid_input(rules):
    with pytest.raises(InvalidInputError, match="rule"):
        verify("1", "1", rules=rules)


def test_defaults_are_the_documented_ones_and_defined_once():
    from grpo_fast import _core
    from grpo_fast.verify import RULES

    core = _core.VerifyOptions()
    # The README's defaults: 256 KiB, 500 bytes, 1e-6, the rule priority.
    assert (core.max_length, core.tail_length, core.rel_tol) == (256 * 1024, 500, 1e-6)
    assert core.allow_set_relation_comp is False
    assert tuple(core.rules) == RULES == grpo_fast.names.DEFAULT_RULES
    for fn in (verify, verify_detailed, verify_batch):
        params = inspect.signature(fn).parameters
        assert params["rel_tol"].default == core.rel_tol
        assert params["allow_set_relation_comp"].default is core.allow_set_relation_comp
    opts = _core.VerifyOptions(0.5, True, ("gsm8k",), 10, 20)
    assert (opts.rel_tol, opts.allow_set_relation_comp, opts.rules) == (0.5, True, ["gsm8k"])
    assert (opts.max_length, opts.tail_length) == (10, 20)


def test_every_rule_name_is_accepted_and_reported():
    documented = {
        "boxed", "answer_tag", "final_answer", "gsm8k", "answer_colon", "answer_is",
        "bare", "last_value", "bold", "choice", "math_span", "last_number",
    }  # fmt: skip
    assert set(grpo_fast.names.RULES) == documented
    for rule in grpo_fast.names.RULES:
        assert grpo_fast.extract_answer("x", rules=[rule]) is None or rule in ("bare",)
    assert grpo_fast.extract_answer("#### 4", rules=["gsm8k"]).rule == "gsm8k"
