"""Which answer counts: more realistic completions per class of issue 22.

Written here by hand, as models write them (not taken from a public set), to
check the rules of docs/verify_semantics.md ("Which answer counts") on forms
tests/test_answer_rules.py does not spell: each class below is one rule, and
each case a different way of writing it. The reference is the reading a
careful human grader gives each completion; every case goes through every
entry point a trainer calls (tests/entry_points.py).
"""

from __future__ import annotations

import numpy as np
import pytest
from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

import grpo_fast
from grpo_fast import rewards
from grpo_fast.integrations import trl

# Class 1: a bound, a doubt or a negation, in prose, after a marker, in a box.
QUALIFIED = [
    ("5", "Therefore the number of solutions is at least $5$."),
    ("5", "So we need no fewer than 5 coins."),
    ("5", "Hence $n \\geq 5$, so the answer is at least 5."),
    ("5", "The minimum is not 5; it must be larger."),
    ("5", r"\boxed{\text{at most } 5}"),
    ("5", r"\boxed{5 \text{ or less}}"),
    ("5", "The final answer is probably not 5."),
    ("5", "I'm not sure, maybe the answer is 5?"),
    ("5", "Answer: approximately 5 or more"),
    ("5", "The answer is definitely not $5$."),
    ("5", "Answer: 5+ people"),
    ("5", "We need 5+ coins."),
    ("5", r"\boxed{5+}"),
    ("5", "The answer isn't \\(5\\)."),
    ("5", "It is impossible for the answer to be 5."),
    ("5", "**Answer:** more than 5"),
]

# Class 2: alternatives without ASCII digits, or several choice letters.
ALTERNATIVES = [
    ("2", "The answer is two or 3."),
    ("2", "The answer is 2 or three."),
    ("2", "The answer is 2 or ３."),
    ("2", r"\boxed{2 \text{ or } III}"),
    ("2", "The answer is 2 (or possibly III)."),
    ("2", "So x = 2, and the other solution is x = 7."),
    ("2", "The answer is 2, 3, ... depending on n"),
    ("2", r"The answer is 2 \ldots 3"),
    ("2", "The answer is 2\n\nor 3"),
    ("A", "The answer is A/C."),
    ("A", "The answer is (A), (C)."),
    ("A", r"\boxed{A \text{ and } C}"),
    ("A", "Answer: A and C"),
    ("A", "Answer: A or C"),
    ("A", r"\boxed{\text{A or C}}"),
    ("A", "The answer is A, C"),
    ("4", r"The answer is \(4\), though \(5\) is also possible."),
    ("4", "The answer is 4, but 5 is also valid."),
    # An answer for one case of several (a condition, then `otherwise`/`else`).
    ("3", "The answer is 3 if n is odd and 4 otherwise."),
    ("3", "The answer is 3 when n is odd, else 4."),
    ("3", "Answer: 3 if n is odd; otherwise it is 4."),
    ("3", r"\boxed{3 \text{ if } n \text{ is odd, otherwise } 4}"),
    ("3", "The answer is 3 for odd n, 4 for even n."),
    ("3", "The answer is 3 when n is odd and 4 when n is even."),
    # Other languages' `or` (issue 31, class 8).
    ("5", "The answer is 5 oder 6."),
    ("6", "The answer is 5 ou 6."),
    ("5", "The answer is 5 oppure 6."),
    ("6", "The answer is 5 или 6."),
    # Other languages' `maybe` and `not` before the value.
    ("5", "Answer: vielleicht 5"),
    ("5", "Answer: forse 5"),
    ("5", "Answer: talvez 5"),
    ("5", "Answer: возможно 5"),
    ("5", "Answer: nicht 5"),
    ("5", "Answer: não 5"),
    ("5", "Answer: не 5"),
]

# Class 3: another candidate after the final answer.
AFTER = [
    ("6", "\\boxed{6}\n\nHmm, but maybe it's 8."),
    ("6", "So the answer is 6. But it could also be 8."),
    ("6", r"\boxed{6}, or possibly \boxed{8}"),
    ("6", "Answer: 6\n\nAlternatively, 8."),
    ("6", "\\boxed{6}\nWait, let me recheck. Actually it should be 8."),
    ("6", "The answer is $6$. Or is it $8$?"),
    ("6", "<answer>6</answer>\nmaybe 8"),
    ("6", "#### 6\nOr perhaps 8"),
    ("6", r"\boxed{6} (or 8 if we count the endpoints)"),
    ("6", "The final answer is 6. Actually no, 8."),
]

# Class 5: output cut off where it shows.
CUT_OFF = [
    ("6", r"The answer is \boxed{6"),
    ("6", r"so \boxed{\dfrac{12}{2}"),
    ("6", r"\boxed{6}\boxed{6"),
    ("6", "<think>Let me compute: 2*3 = 6"),
    ("6", "<Think>\n2*3=6\n\\boxed{6}"),
    ("6", "The answer is 6 or"),
    ("6", r"\boxed{6 or"),
]

# Class 8, the letters the extraction hands ChoiceReward / ExactMatchReward.
LETTERS = [
    ("C", "The answer is not C."),
    ("C", "Answer: not (C)"),
    ("C", r"\boxed{\text{not } C}"),
    ("C", "C or D"),
    ("C", "The correct choice is C or D."),
    ("C", "The answer is C and D."),
    ("C", "Answer: maybe C"),
    ("C", "Answer: (C)?"),
]

# Real completions: the fallback takes the whole final expression or nothing;
# a unit is no choice letter.
EXPRESSIONS = [
    ("4", r"so it equals \sqrt{4}"),
    ("3", "which gives x^3"),
    ("7", "therefore the result is 2^7"),
    ("10", "so the total is 10x"),
    ("3", "so the count is 3n"),
    ("2", r"so the answer is \frac{1}{2}"),
    ("5", "we find 3+5i"),
    ("C", "The water is at 25°C"),
    ("C", r"The final temperature is $25^\circ C$"),
    ("C", r"It reaches 100^{\circ}C"),
    # A chain ending in another value.
    ("10", "so a + b = 10 = 12"),
]

NOT_PAID = QUALIFIED + ALTERNATIVES + AFTER + CUT_OFF + LETTERS + EXPRESSIONS

PAID = [
    # Markers as models write them.
    ("5", "**Final answer:** 5"),
    ("5", "### Answer:\n5"),
    ("5", "**Answer**: $5$"),
    ("5", "Final answer: **5**"),
    ("9999", r"The final answer is $9999$, \boxed{9999}"),
    # Choice letters as models write them.
    ("C", r"\boxed{(c)}"),
    ("C", r"Answer: (C) $\frac{1}{2}$"),
    (r"\frac{1}{2}", r"Answer: (C) $\frac{1}{2}$"),
    ("B", "So my answer is BBBB"),
    ("B", "Therefore, the answer is B, since the others fail."),
    ("B", "We get x = 4, y = 7.\n\nThe answer is B"),
    ("B", "x = 4 and y = 7.\n\n**Answer: B**"),
    ("C", "Answer: C (not D)"),
    ("C", "The answer is C, not D."),
    # Restating, repeating and judging the same answer.
    ("5", "5, i.e. five"),
    ("5", r"\boxed{5} (five)"),
    ("5", "\\boxed{5}\n\nThus \\boxed{5}."),
    ("5", r"\boxed{5}, which is correct since 2+3=5."),
    ("5", "The answer is 5. My answer is correct."),
    ("5", "The answer is 5, and I verified that my answer is right."),
    ("5", "Answer: 5 (not 3)"),
    ("5", "The answer is 5, not 4."),
    ("4", "The answer is 4, which is also the smallest even square."),
    # A condition alone, and `otherwise` in an explanation, take nothing back.
    ("3", "The answer is 3 if n is odd."),
    ("3", "The answer is 3 for n = 1 and n = 2."),
    ("5", "The answer is 5 because if x = 2 then y = 3, otherwise the sum fails."),
    ("3", "The answer is 3, since otherwise the sum would be odd."),
    # A blank box from the problem, then the real one.
    ("5", "Write the answer in \\boxed{\\phantom{00}}.\n\nSo we get \\boxed{5}"),
    # The whole final expression; a unit after a number is decoration.
    (r"\frac{639}{40}", r"So the average is \frac{639}{40}"),
    ("(2, 4)", "So the intersection point is (2, 4)."),
    ("10x", "so the total is 10x"),
    ("5", "so the rod is 5 m long"),
]


@each_entry_point
@cases(NOT_PAID)
def test_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(PAID)
def test_paid(entry, gold, completion, request):
    if entry == "compat.math_verify" and completion.startswith("Answer: (C)"):
        pytest.skip("math-verify's parse() keeps no letter with its option's text")
    assert_paid(entry, gold, completion, request)


# Equation chains end in their value. The math engine decides them
# ("calculation chains answer their last side"); the extraction hands it the
# whole chain.
CHAINS = [
    ("10", "a + b + c = 4 + 5 + 1 = 10"),
    ("10", "so a + b + c = 4 + 5 + 1 = 10"),
    ("10", "Therefore $x + y = 3 + 7 = 10$."),
    ("10", r"\boxed{a + b + c = 4 + 5 + 1 = 10}"),
    (r"\frac{3}{4}", r"so p = \frac{6}{8} = \frac{3}{4}"),
]


@pytest.mark.parametrize(("gold", "completion"), CHAINS, ids=[p for _, p in CHAINS])
def test_an_equation_chain_answers_its_last_side(gold, completion):
    found = grpo_fast.extract_answer(completion)
    assert found is not None and "=" in found.answer, found
    assert grpo_fast.verify(gold, completion)


CHOICE = rewards.combine(rewards.ChoiceReward(), rewards.ExactMatchReward())


@pytest.mark.parametrize(("gold", "completion"), LETTERS, ids=[p for _, p in LETTERS])
def test_choice_and_exact_rewards_pay_no_hedged_letter(gold, completion):
    s = CHOICE.score_batch([completion], golds=gold)
    assert s.columns["choice"].tolist() == [0.0], completion
    assert s.columns["exact"].tolist() == [0.0], completion


# Cut off at the token limit in the middle of the reasoning: the last number
# is a step, not an answer. (completion, gold): paid when finished, not when cut.
MID_REASONING = [
    ("First, 12 apples cost $3 each, so 12 * 3 = 36", "36"),
    ("We have x + 2 = 7, hence x = 5", "5"),
    ("Let's check the case n = 4: 4^2 = 16", "16"),
    (r"Substituting, we get $\frac{3}{4}$", r"\frac34"),
]


@pytest.mark.parametrize(("completion", "gold"), MID_REASONING)
def test_a_completion_cut_mid_reasoning_is_not_paid_when_flagged(completion, gold):
    assert grpo_fast.verify(gold, completion)
    assert not grpo_fast.verify(gold, completion, truncated=True)
    v = grpo_fast.verify_detailed(gold, completion, truncated=True)
    assert v.reason.startswith("no answer"), v
    got = grpo_fast.verify_batch(gold, [completion, completion], truncated=[True, False])
    assert got.tolist() == [0.0, 1.0]
    s = rewards.combine(rewards.MathReward()).score_batch(
        [completion, completion], gold, truncated=np.array([True, False])
    )
    assert s.total.tolist() == [0.0, 1.0]


@pytest.mark.parametrize(
    "completion",
    [
        "Let me think. 2 + 2 = 4, so the answer is 4",
        r"... so \boxed{4}",
        "Answer: 4",
        "<answer>4</answer>",
    ],
)
def test_a_cut_off_completion_with_a_marker_is_read_through_it(completion):
    assert grpo_fast.verify("4", completion, truncated=True)


def test_trl_accuracy_reward_has_no_truncation_flag_to_read():
    # TRL's GRPOTrainer passes no such flag; a column named `truncated` is a
    # dataset column like any other and changes nothing.
    text = "so 2 + 2 = 4"
    assert trl.accuracy_reward([r"\boxed{4}"], solution=["4"], truncated=[True]) == [1.0]
    assert trl.accuracy_reward([text], solution=["4"]) == trl.accuracy_reward(
        [text], solution=["4"], truncated=[True]
    )
