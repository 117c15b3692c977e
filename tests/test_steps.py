"""The step checker: splitting, claim finding, exact arithmetic, bounds, spans on tokens.

Expected labels are written by hand or computed here with Python's own
``fractions.Fraction``; spans are compared with Python's ``str.split`` /
``re.split`` and ``str.strip``; token positions with prefix decoding.
"""

from __future__ import annotations

import re
import threading
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_fast
from grpo_fast.errors import InvalidInputError
from grpo_fast.steps import (
    CORRECT,
    UNCHECKED,
    WRONG,
    ProcessReward,
    check_steps,
    token_char_ends,
    token_ends,
    verified_pick,
)


def label(text: str) -> int:
    s = check_steps([text])
    assert len(s.labels) == 1, (text, s.spans(0))
    return int(s.labels[0])


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("12 + 34 = 46", CORRECT),
        (r"3 \cdot 17 = 41", WRONG),
        (r"\frac{3}{4} + \frac18 = \frac78", CORRECT),
        (r"\frac{3}{4} + \frac18 = \frac58", WRONG),
        ("so 37+45=82, then 82+19=101", CORRECT),
        ("so 37+45=82, then 82+19=102", WRONG),
        ("She pays $12 + $8 = $20 in total.", CORRECT),
        ("2 + 3 = 5 = 10/2", CORRECT),
        ("2 + 3 = 5 = 10/3", WRONG),
        ("1/3 = 0.3333", CORRECT),
        ("1/3 = 0.33", WRONG),  # a decimal needs 4 significant digits (the verifier's rule)
        (r"\sqrt{2} = 1.414", CORRECT),
        ("0.1 + 0.2 = 0.3", CORRECT),
        ("2^{10} = 1024", CORRECT),
        ("6! = 720", CORRECT),
        ("7 × 8 = 54", WRONG),
        ("1,250 + 750 = 2,000", CORRECT),
        ("50% = 0.5", CORRECT),
        ("**Step 2:** 12 * 3 = 36", CORRECT),
        ("3. 5 - 7 = -2", CORRECT),
        ("1/0 = 3", WRONG),
        ("x + 2 = 7", UNCHECKED),
        ("3 x 4 = 12", UNCHECKED),
        ("half of 80 = 40", UNCHECKED),
        ("the sum of 3 and 4 = 7", UNCHECKED),
        ("f(3) = 7", UNCHECKED),
        ("sin 30 = 0.5", UNCHECKED),
        ("Let n = 5.", UNCHECKED),
        ("We are done.", UNCHECKED),
        ("2 < 3", UNCHECKED),
    ],
)
def test_labels(text, want):
    assert label(text) == want


def test_any_wrong_claim_makes_the_step_wrong():
    assert label("3 + 4 = 7 and 7 + 5 = 13") == WRONG
    assert label("3 + 4 = 8, but x = 7") == WRONG
    assert label("x + 2 = 5 + 2 = 7") == CORRECT  # only the links between constants


# Chains like a model writes them, checked against Fraction arithmetic.
_glue = st.sampled_from(["", "so ", "then ", "We get ", "Next, ", "thus "])


@st.composite
def _claim(draw):
    kind = draw(st.sampled_from(["sum", "product", "frac"]))
    a = draw(st.integers(0, 999))
    b = draw(st.integers(1, 999))
    if kind == "sum":
        text, value = f"{a} + {b}", Fraction(a + b)
    elif kind == "product":
        text, value = f"{a} \\cdot {b}", Fraction(a * b)
    else:
        c = draw(st.integers(1, 50))
        text, value = f"\\frac{{{a}}}{{{b}}} + \\frac{{1}}{{{c}}}", Fraction(a, b) + Fraction(1, c)
    off = draw(st.sampled_from([0, 0, 1, -1, 10]))
    shown = value + off
    right = (
        str(shown.numerator)
        if shown.denominator == 1
        else f"\\frac{{{shown.numerator}}}{{{shown.denominator}}}"
    )
    return f"{text} = {right}", off == 0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(_glue, _claim()), min_size=1, max_size=4))
def test_generated_claims_match_fraction_arithmetic(parts):
    text = ", ".join(g + c for g, (c, _) in parts)
    want = CORRECT if all(ok for _, (_, ok) in parts) else WRONG
    assert label(text) == want, text


_alphabet = st.sampled_from(list("0123456789+-*/^=().,{}[]!% \n\r\t\\$xé×漢😀frac"))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=_alphabet, max_size=80), st.sampled_from(["lines", "paragraphs"]))
def test_any_text_gives_ordered_stripped_spans_and_valid_labels(text, split):
    s = check_steps([text, text, ""], split)
    assert s.offsets[0] == 0 and s.offsets[-1] == len(s.labels)
    assert s.offsets[1] * 2 == s.offsets[2] and s.offsets[3] == s.offsets[2]
    assert set(s.labels.tolist()) <= {CORRECT, WRONG, UNCHECKED}
    assert np.all(s.starts < s.ends) and np.all(s.ends <= len(text))
    assert np.all(s.starts[1 : s.offsets[1]] >= s.ends[: s.offsets[1] - 1])
    for a, b, _ in s.spans(0):
        assert text[a:b] == text[a:b].strip() != ""
    assert s.spans(0) == s.spans(1)


def _pieces(text: str, pattern: str) -> list[str]:
    return [p.strip() for p in re.split(pattern, text) if p.strip()]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab1=+ ,;\n\t\u00a0\x1cé漢😀")), max_size=60))
def test_splits_agree_with_python(text):
    cases = [
        ("lines", None, r"\n"),
        ("paragraphs", None, r"\n(?:[ \t\r]*\n)+"),
        ("regex", r"[,;]", r"[,;]"),
    ]
    for split, pattern, reference in cases:
        s = check_steps([text], split, pattern=pattern)
        got = [text[a:b] for a, b, _ in s.spans(0)]
        assert got == _pieces(text, reference), (split, text)


def test_markers_split_before_each_step_marker():
    text = "Let us add.\nStep 1: 2+2=4\nand carry\n**Step 2.** 4+3=8\n## Step 3 done"
    s = check_steps([text], "markers")
    got = [(text[a:b], lab) for a, b, lab in s.spans(0)]
    assert got == [
        ("Let us add.", UNCHECKED),
        ("Step 1: 2+2=4\nand carry", CORRECT),
        ("**Step 2.** 4+3=8", WRONG),
        ("## Step 3 done", UNCHECKED),
    ]


def test_spans_are_str_indices_not_bytes():
    text = "π ≈ 3.14\né😀 1+1=2\n漢字 2·3=7"
    s = check_steps([text])
    got = [(text[a:b], lab) for a, b, lab in s.spans(0)]
    assert got == [("π ≈ 3.14", UNCHECKED), ("é😀 1+1=2", CORRECT), ("漢字 2·3=7", WRONG)]


def test_steps_methods():
    s = check_steps(["1+1=2\nhello\n2+2=5\n3+3=7", "nothing", "4+4=8"])
    assert s.num_steps.tolist() == [4, 1, 1]
    assert s.has_wrong.tolist() == [True, False, False]
    assert s.first_error.tolist() == [2, -1, -1]
    r = s.rewards(correct=2.0, wrong=-1.0, unchecked=0.25)
    assert r.dtype == np.float32 and r.tolist() == [2.0, 0.25, -1.0, -1.0, 0.25, 2.0]
    assert np.isnan(s.rewards()[1])
    m = s.metrics()
    assert m["steps/per_completion"] == 2.0
    assert m["steps/frac_wrong"] == pytest.approx(2 / 6)
    assert m["steps/frac_unchecked"] == pytest.approx(2 / 6)
    assert m["steps/frac_with_error"] == pytest.approx(1 / 3)
    assert m["steps/first_error"] == 2.0
    assert s.spans(-1) == [(0, 5, CORRECT)]
    with pytest.raises(IndexError):
        s.spans(3)


def test_bad_input_is_named():
    with pytest.raises(InvalidInputError, match=r"completions\[1\] is int"):
        check_steps(["1=1", 3])
    with pytest.raises(InvalidInputError, match="list of str"):
        check_steps("1=1")
    with pytest.raises(InvalidInputError, match="unknown split 'sentences'"):
        check_steps(["1=1"], "sentences")
    with pytest.raises(InvalidInputError, match="needs a pattern"):
        check_steps(["1=1"], "regex")
    with pytest.raises(InvalidInputError, match="only used with split"):
        check_steps(["1=1"], "lines", pattern=",")
    with pytest.raises(InvalidInputError, match=r"^bad split pattern \"\(\": unclosed group$"):
        check_steps(["1=1"], "regex", pattern="(")
    with pytest.raises(InvalidInputError, match="matches the empty string"):
        check_steps(["1=1"], "regex", pattern=",*")
    with pytest.raises(InvalidInputError, match="rel_tol"):
        check_steps(["1=1"], rel_tol=-1)
    with pytest.raises(InvalidInputError, match="max_length"):
        check_steps(["1=1"], max_length=-1)


def test_unreadable_and_overlong_completions_have_no_steps():
    s = check_steps(["1+1=2", "\ud800 1+1=3", "1+1=3\n" * 10, "2+2=4"], max_length=20)
    assert s.offsets.tolist() == [0, 1, 1, 1, 2]
    assert s.labels.tolist() == [CORRECT, CORRECT]


def test_adversarial_claims_end_unchecked_or_wrong():
    texts = [
        "2^" * 300 + "2 = 4",
        "9^9^9^9 = 1",
        "10^{10^{10}} = 5",
        "(" * 3000 + "1 = 1",
        "(" * 100 + "1" + ")" * 100 + " = 1",
        "9" * 20000 + " = 9",
        "1000000! = 1",
        ", ".join([r"\frac{1}{\frac{1}{\frac{1}{\frac{1}{2}}}} = 2"] * 50),
        "1=1, " * 5000 + "1=2",  # past the claim budget: the last claim is not decided
        "1+1=2\n" * 10_000,
    ]
    s = check_steps(texts)
    firsts = [s.spans(i)[0][2] for i in range(len(texts))]
    assert firsts[:8] == [UNCHECKED] * 7 + [CORRECT]
    assert firsts[8] == CORRECT
    assert s.num_steps[9] == 4096  # at most 4,096 steps


def test_threads_agree_with_one_call():
    texts = [f"{i} + {i} = {2 * i + (i % 3 == 0)}\nso {i}*2 = {2 * i}" for i in range(500)]
    want = check_steps(texts).labels
    results = [None] * 4

    def work(k):
        results[k] = check_steps(texts).labels

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for r in results:
        np.testing.assert_array_equal(r, want)
    before = grpo_fast.get_num_threads()
    grpo_fast.set_num_threads(1)
    try:
        np.testing.assert_array_equal(check_steps(texts).labels, want)
    finally:
        grpo_fast.set_num_threads(before)


# ---------------------------------------------------------------------- spans -> tokens
def _char_tokenizer():
    from transformers import AutoTokenizer

    from grpo_fast.train.data import DATA_DIR

    return AutoTokenizer.from_pretrained(DATA_DIR / "tiny_chain")


def _bpe_tokenizer(kind: str):
    """A tokenizer trained here: byte-level BPE (GPT-2 style) or Metaspace (SentencePiece
    style, whose lone tokens drop their leading space, so piecewise decoding does not add up)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    corpus = [
        "so 37+45=82, then 82+19=101 #### 101",
        "café au lait: 3·4=12 €, naïve 漢字 and 😀 emoji",
        "Step 1: ½ of 80 = 40\nStep 2: 40 × 2 = 80",
    ] * 20
    tok = Tokenizer(models.BPE(unk_token="<unk>" if kind == "metaspace" else None))
    if kind == "bytelevel":
        tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
        tok.decoder = decoders.ByteLevel()
        trainer = trainers.BpeTrainer(
            vocab_size=120,
            special_tokens=["<eos>"],
            initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        )
    else:
        tok.pre_tokenizer = pre_tokenizers.Metaspace()
        tok.decoder = decoders.Metaspace()
        trainer = trainers.BpeTrainer(vocab_size=200, special_tokens=["<eos>", "<unk>"])
    tok.train_from_iterator(corpus, trainer)
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<eos>")


def _prefix_reference(ids, tok):
    """Characters decoded by each prefix, where it ends on a whole character."""
    out = []
    for k in range(1, len(ids) + 1):
        text = tok.decode(ids[:k], skip_special_tokens=True)
        out.append(None if text.endswith("\ufffd") else len(text))
    return out


@pytest.mark.parametrize("kind", ["char", "bytelevel", "metaspace"])
def test_token_char_ends_match_prefix_decoding(kind):
    tok = _char_tokenizer() if kind == "char" else _bpe_tokenizer(kind)
    texts = (
        ["37+45=82, 82+19=101 #### 101", "12+3=15"]
        if kind == "char"
        else [
            "so 37+45=82, then 82+19=101",
            "café 3·4=12 €, naïve 漢字 😀 and",
            "Step 1: ½ of 80 = 40\nStep 2: 40 × 2 = 80",
        ]
    )
    for text in texts:
        ids = tok(text, add_special_tokens=False)["input_ids"] + [tok.eos_token_id]
        assert tok.decode(ids, skip_special_tokens=True) == text
        ends = token_char_ends(ids, tok)
        assert ends.dtype == np.int64 and ends[-1] == len(text)
        assert np.all(np.diff(ends) >= 0)
        for got, want in zip(ends.tolist(), _prefix_reference(ids, tok), strict=True):
            if want is not None:
                assert got == want, (text, ends.tolist())


@pytest.mark.parametrize("kind", ["char", "bytelevel", "metaspace"])
def test_each_step_ends_on_the_token_holding_its_last_character(kind):
    tok = _char_tokenizer() if kind == "char" else _bpe_tokenizer(kind)
    texts = (
        ["37+45=82, 82+19=101, 101+3=105 #### 105", "1+1=2, 2+2=5"]
        if kind == "char"
        else ["café 3·4=12, naïve 1+1=2\n漢字 2+2=5 😀", "so 37+45=82, then 82+19=101"]
    )
    ids = [tok(t, add_special_tokens=False)["input_ids"] + [tok.eos_token_id] for t in texts]
    steps = check_steps(texts, "regex", pattern=r",\s*|\n")
    ends = token_ends(steps, ids, tok)
    for i, text in enumerate(texts):
        for k in range(int(steps.offsets[i]), int(steps.offsets[i + 1])):
            t, char_end = int(ends[k]), int(steps.ends[k])
            through = tok.decode(ids[i][: t + 1], skip_special_tokens=True).rstrip("\ufffd")
            before = tok.decode(ids[i][:t], skip_special_tokens=True).rstrip("\ufffd")
            assert len(before) < char_end <= len(through), (text, k, t)


def test_token_ends_checks_its_input():
    tok = _char_tokenizer()
    steps = check_steps(["1+1=2", "2+2=4"])
    with pytest.raises(InvalidInputError, match="2 completions"):
        token_ends(steps, [[1]], tok)
    with pytest.raises(InvalidInputError, match="no tokens"):
        token_ends(steps, [[], [1]], tok)
    assert token_ends(check_steps(["", " "]), [[], []], tok).tolist() == []


# ---------------------------------------------------------------------- best of n, spec
def test_verified_pick_prefers_samples_without_a_wrong_step():
    texts = ["2+2=5 #### 5", "2+2=5 #### 5", "2+2=4 #### 4", "so #### 7"]
    answers = ["5", "5", "4", "7"]
    # Unchecked and correct samples are kept; the majority among them, first one giving it.
    assert verified_pick(answers, check_steps(texts).has_wrong) == 2
    all_wrong = check_steps(["1=2 #### 3", "1=3 #### 3", "1=4 #### 4"]).has_wrong
    assert verified_pick(["3", "3", "4"], all_wrong) == 0  # no clean sample: plain majority
    assert verified_pick(["4", "3", "3"], [True, False, True]) == 1
    with pytest.raises(InvalidInputError, match="1 answers but 3"):
        verified_pick(["3"], all_wrong)
    with pytest.raises(InvalidInputError, match="no samples"):
        verified_pick([], [])


def test_process_reward_spec_checks_its_options():
    with pytest.raises(InvalidInputError, match="unknown process reward"):
        ProcessReward("vibes")
    with pytest.raises(InvalidInputError, match="weight must be a finite number"):
        ProcessReward(weight=float("nan"))
    with pytest.raises(InvalidInputError, match="needs a pattern"):
        ProcessReward(split="regex")
    with pytest.raises(InvalidInputError, match="cannot be imported"):
        ProcessReward("no_such_module.scorer")
    with pytest.raises(InvalidInputError, match="is not a function"):
        ProcessReward("grpo_fast.steps.PROCESS_REWARDS")


def _half_points(completions, steps, **columns):
    """A stand-in process reward model: 0.5 per step, None for the first."""
    return [None] + [0.5] * (len(steps.labels) - 1)


def test_process_reward_takes_a_user_scorer():
    seen = {}

    def scorer(completions, steps, **columns):
        seen.update(columns)
        return _half_points(completions, steps)

    p = ProcessReward(scorer)
    steps, r = p.step_rewards(["a\nb", "c"], rows=[{"prompt": "q", "answer": "1"}] * 2)
    assert np.isnan(r[0]) and r[1:].tolist() == [0.5, 0.5]
    assert seen == {"prompts": ["q", "q"], "answer": ["1", "1"]}
    p = ProcessReward(f"{__name__}._half_points")  # a dotted path, as the command line names it
    assert np.isnan(p.step_rewards(["a"])[1]).tolist() == [True]
    bad = ProcessReward(lambda completions, steps, **kw: [1.0])
    with pytest.raises(InvalidInputError, match="returned 1 scores for 2 steps"):
        bad.step_rewards(["a\nb"])
