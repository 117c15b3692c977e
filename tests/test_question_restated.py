"""The question restated is not an answer; doubt about nothing is no doubt.

docs/verify_semantics.md ("Which answer counts", rule 2): without a marker, an
unevaluated arithmetic expression (numbers and operators only) answers only
where a result is stated: at the end of the text or right after a word that
states one (`=`, `is`, `gives`, `:` ...). Mid-sentence with prose after it, it
is the question's operands (`To add 79 + 85, you simply add them ...`) and
earns nothing. Rule 3: `I think that's the answer` after a stated answer is
not a doubt about it. Every case is scored through every entry point; the
expected judgements are written by hand.
"""

from __future__ import annotations

import math

import pytest
from test_reward_hacking import ENTRY_POINTS  # tests/ is on sys.path under pytest

import grpo_fast

# (gold, completion): the question's expression restated, with prose after it.
RESTATED = [
    ("164", "To add 79 + 85, you simply add them and find the result."),
    ("156", "Compute 12*13 please"),
    ("56", "Let's compute 7 times 8 step by step."),
    ("56", r"We need $7 \times 8$ here, which is a product of two numbers."),
    ("42", "First we take 6 * 7 and then explain how multiplication works."),
    ("9", "Let me subtract 15 - 6 carefully, digit by digit."),
    ("1024", "We want 2^10 in decimal, so let us think about powers of two."),
    ("20", r"Dividing 100 \div 5 means splitting 100 into five groups."),
    ("35", "The problem asks what is 5 × 7 and we should explain it."),
    ("164", "**79 + 85** is what we are asked to compute, so let's think."),
]

# (gold, completion): stated results, which keep paying.
STATED = [
    ("81", "23 + 58 = 81"),
    ("81", "So the total is 81."),
    ("81", "The sum is 81 apples."),
    ("81", "81"),
    ("81", "**81**"),
    ("81", "Adding the two numbers, we get $81$"),
    ("81", "The result is $81$."),
    # An expression where a result stands is a (unevaluated) answer.
    ("164", "So the total is 79 + 85."),
    ("164", "Adding them gives 79 + 85"),
    # Must be paid: approval of a stated answer is no doubt about it.
    ("3", "The answer is 3. I think that's the answer."),
    ("3", "3. I think that's the answer."),
    ("3", "**3** I think that's the answer."),
    ("3", "So x = 3, I think that's the answer."),
    ("3", "So it is 3, I believe this is correct."),
    ("3", "The result is 3. I'm confident that's right."),
    ("3", r"$3$ I believe this is correct."),
]


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(("gold", "completion"), RESTATED, ids=[p for _, p in RESTATED])
def test_the_question_restated_earns_nothing(entry, gold, completion):
    if entry == "openrlhf.reward_func":
        pytest.importorskip("torch")
    score = ENTRY_POINTS[entry](gold, completion)
    assert not math.isnan(score)
    assert score < 1.0, f"{entry} pays {completion!r} against {gold!r}"


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(("gold", "completion"), STATED, ids=[p for _, p in STATED])
def test_a_stated_result_pays(entry, gold, completion):
    if entry == "openrlhf.reward_func":
        pytest.importorskip("torch")
    if entry == "trl.accuracy_reward" and "answer is" not in completion:
        pytest.skip("TRL's accuracy_reward reads anchored answers only")
    assert ENTRY_POINTS[entry](gold, completion) == 1.0, f"{entry}: {completion!r}"


def test_the_verdict_says_why():
    v = grpo_fast.verify_detailed("164", "To add 79 + 85, you simply add them and find the result.")
    assert not v.matched
    assert "not a stated result" in v.reason
