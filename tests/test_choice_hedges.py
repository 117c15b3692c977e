"""ChoiceReward and ExactMatchReward pay no hedged letter (issue 22, class 8).

Every form is written here, by class, in prose, after a marker and in a box;
the reference is the plain reading a careful grader gives it: a negated,
questioned, qualified or several-letter answer names no single option. The
forms that only continue the sentence must keep paying (a letter with its
option text, a letter followed by an explanation).
"""

from __future__ import annotations

import pytest

from grpo_fast.rewards import ChoiceReward, ExactMatchReward, combine

SPECS = combine(ChoiceReward(), ExactMatchReward())

# (statement of the answer, with {x} where the letter goes).
FRAMES = [
    "The answer is {x}",
    "Answer: {x}",
    "**Answer:** {x}",
    "Therefore, the final answer is {x}.",
    "<answer>{x}</answer>",
]

# Each item: the answer as written, with the gold C among the letters offered.
NEGATED = ["not C", "NOT C", "never C", "definitely not C", "isn't C"]
QUALIFIED = ["maybe C", "perhaps (C)", "possibly C", "C?", "(C)?", "either C"]
SEVERAL = [
    "C or D",
    "A or C",
    "A and C",
    "C and D",
    "(B) and (C)",
    "(C) or (D)",
    "B/C",
    "C/D",
    "C, or maybe D",
    "C, or possibly D",
    "C, D",
    "A, C",
    "C & D",
    "C (or D)",
    "C \\lor D",
    "c or d",
    "either A or C",
    "C, and possibly D",
]


@pytest.mark.parametrize("frame", FRAMES)
@pytest.mark.parametrize("answer", NEGATED + QUALIFIED + SEVERAL)
def test_hedged_letters_earn_nothing(frame, answer):
    text = frame.format(x=answer)
    s = SPECS.score_batch([text], golds="C")
    assert s.columns["choice"].tolist() == [0.0], text
    assert s.columns["exact"].tolist() == [0.0], text


@pytest.mark.parametrize(
    "text",
    [
        r"\boxed{C} or D",
        r"\boxed{C}, or maybe \boxed{D}",
        r"so $\boxed{\text{C or D}}$",
        r"\boxed{C \text{ or } D}",
        r"\boxed{A, C}",
        r"\boxed{B/C}",
        r"\boxed{\text{not } C}",
        r"The answer is $C$ or $D$.",
        r"The answer is \textbf{C} and \textbf{D}.",
        "The answer is C. Or maybe D.",
        "The answer is C, D is also possible",
        "The correct options are A and C.",
        "Answer: C\uff0cD",  # a full-width comma
    ],
)
def test_hedged_letters_in_boxes_and_prose(text):
    s = SPECS.score_batch([text], golds="C")
    assert s.columns["choice"].tolist() == [0.0], text
    assert s.columns["exact"].tolist() == [0.0], text


@pytest.mark.parametrize(
    "text",
    [
        "The answer is C",
        "The answer is (C).",
        "Answer: C",
        "The answer is C. I hope it is correct.",
        "The answer is (C) 4.2 m",
        "The answer is C. Options A and B are wrong because the sum is odd.",
        "The answer is C, not D",
        "Answer: C (not D)",
        "A is out and B is out, so the answer is C",
        "Neither A nor B works; the answer is C",
        r"so \boxed{C}",
        r"\boxed{\text{(C)}}",
        r"\boxed{c}",
        "<answer>C</answer>",
        "The answer is C<|im_end|>",
        "A or B? No.\nThe answer is C",
    ],
)
def test_plain_letters_keep_paying(text):
    assert SPECS.score_batch([text], golds="C").columns["choice"].tolist() == [1.0], text


@pytest.mark.parametrize(
    ("text", "gold"),
    [
        ("The answer is Paris, or maybe London", "Paris"),
        ("The answer is not Paris", "Paris"),
        ("The answer is maybe Paris", "Paris"),
        ("The answer is Paris?", "Paris"),
        (r"\boxed{Paris} or London", "Paris"),
    ],
)
def test_exact_match_pays_no_hedged_word(text, gold):
    assert SPECS.score_batch([text], golds=gold).columns["exact"].tolist() == [0.0], text


def test_exact_match_keeps_a_plain_word():
    texts = ["The answer is Paris.", "The answer is Paris. It is the capital."]
    got = combine(ExactMatchReward()).score_batch(texts, golds="Paris").total
    assert got.tolist() == [1.0, 1.0]


def test_long_lines_are_read_in_bounded_windows():
    # An answer on a huge line: only its neighbourhood is read, and the verdict
    # is the same as on a short line.
    pad = "word " * 50_000
    texts = [pad + "The answer is C or D", pad + "The answer is C", "C" + " and" * 50_000]
    got = combine(ChoiceReward()).score_batch(texts, golds="C").total
    assert got.tolist()[:2] == [0.0, 1.0]
