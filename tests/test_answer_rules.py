"""Which answer counts, round 3 (issue 22): every class through every entry point.

docs/verify_semantics.md ("Which answer counts") states each rule; the cases
here are written from those rules by hand, several realistic spellings per
class, in boxes and in prose, and each one is scored through every way a
trainer calls the verifier (the entry points of tests/entry_points.py:
the plain and batch APIs, the reward specs, TRL, verl, OpenRLHF and the
math-verify compatible API). A case that must not be paid must score below
1.0 everywhere; a case that must be paid must score 1.0 everywhere, so that
a fix which voids too much fails too.
"""

from __future__ import annotations

import math

import pytest
from entry_points import ENTRY_POINTS, assert_not_paid, cases, each_entry_point, skip_if_not_read

import grpo_fast
from grpo_fast import rewards
from grpo_fast.integrations import trl, verl

# Class 1: a bound, a doubt, a question or a negation is not the value.
QUALIFIED = [
    ("3", "The answer is at least 3."),
    ("3", "The answer is 3 or more."),
    ("3", "the answer is 3 or more apples"),
    ("3", "Answer: fewer than 3"),
    ("3", "So 3 is wrong."),
    ("3", "It can't be 3."),
    ("3", "The answer is maybe 3."),
    ("3", "The answer is 3?"),
    ("3", r"\boxed{3 \text{ or more}}"),
    ("3", r"\boxed{\text{at least } 3}"),
    ("3", r"\boxed{3?}"),
    ("12", "The number of ways is at most 12."),
    ("12", "Answer: 12 at most"),
    ("12", "Answer: no more than 12"),
    ("12", "Answer: up to 12"),
    ("12", r"\boxed{12 \text{ or fewer}}"),
    ("12", "The answer is 12 or so."),
    ("12", "Answer: greater than 12"),
    ("7", "Answer: 7 is not correct"),
    ("7", "The answer cannot be 7."),
    ("7", "7 is incorrect, I think."),
    ("7", "Perhaps the answer is 7."),
    ("7", "I don't think the answer is 7."),
    ("7", "If the answer is 7, the sum would be 14, which is too big"),
    ("7", "The answer might be 7."),
    ("7", "It could be 7"),
    ("7", r"$\boxed{7}$ is wrong."),
    ("7", r"\boxed{7}. Wait, that's not right."),
]

# Class 2: alternatives written without ASCII digits, or several letters.
ALTERNATIVES = [
    ("3", "The answer is 3 or four."),
    ("4", "The answer is three or 4."),
    ("3", "The answer is 3 or ４."),
    ("3", "The answer is 3 or ٤."),
    ("3", "The answer is 3 (or IV)."),
    ("3", r"\boxed{3 \text{ or } \text{four}}"),
    ("3", "The answer is 3 (the other root is 5)."),
    ("5", "The answer is 3 (the other root is 5)."),
    ("3", "The answers are 3 and 5, resp."),
    ("5", "The roots are 3 and 5 respectively."),
    ("3", "The answer is 3 … 4"),
    ("3", "The answer is 3 ... 4"),
    ("3", "The answer is 3\nor 4"),
    ("B", "The answer is (B) and (D)."),
    ("D", "The answer is (B) and (D)."),
    ("B", "Answer: B/D"),
    ("B", r"\boxed{B, D}"),
    ("B", r"\boxed{B \text{ or } D}"),
    ("3", "So it is 3 or 4."),
]

# Class 3: after the final answer, another candidate voids it.
AFTER = [
    ("3", "The answer is 3. Or maybe 4."),
    ("3", r"\boxed{3} or 4"),
    ("3", "\\boxed{3}\nWait, it could be 4."),
    ("3", "Answer: 3\nOr 4."),
    ("3", "#### 3\nor maybe 4"),
    ("3", r"The answer is $\boxed{3}$. Actually, maybe it's $4$."),
    ("3", r"\boxed{3}. Hmm, or perhaps \(4\)."),
    ("3", "<answer>3</answer> or possibly 4"),
    (
        "3",
        "Final Answer: The final answer is $3$. I hope it is correct. Alternatively, it is $4$.",
    ),
    ("3", r"\boxed{3}. Actually, the answer is 4."),
    ("3", "So the answer is 3.\n\nHmm, it might be 4 instead."),
    ("3", r"\boxed{3} or \boxed{4}"),
]

# Class 5: output cut off, or reasoning never closed however the tag is written.
CUT_OFF = [
    ("3", r"\boxed{3"),
    ("3", r"So the answer is \boxed{3"),
    ("3", r"\boxed{2}, no wait, \boxed{3"),
    ("3", r"\boxed{\frac{3}{1}"),
    ("3", "<THINK>so \\boxed{3}"),
    ("3", "<think >so \\boxed{3}"),
    ("3", "<Thinking>hmm \\boxed{3}"),
    ("3", "< think>hmm \\boxed{3}"),
    ("3", "the answer is 3 or"),
    ("3", "Answer: 3 or"),
    ("3", r"\boxed{3 \text{ or}}"),
]

# Real completions: the whole final expression or nothing, and prose that is
# no marker.
EXPRESSIONS = [
    ("40", r"so it is \frac{639}{40}"),
    ("4", "so the point is (2, 4)"),
    ("2", "so z = 1+2i"),
    ("2", r"so it is \frac{3}{2}"),
    ("5", "the area is 5^2"),
    ("correct", "my answer is correct."),
    ("right", "I believe the answer is right."),
]

# Item 4: a gold of several words is compared whole, never as its first word.
WORDS = [
    ("New York", r"\boxed{New Jersey}"),
    ("New York", "The answer is New Jersey."),
    ("New York", r"\boxed{\text{New}}"),
    ("all odd positive integers", r"\boxed{\text{all odd integers}}"),
    ("the red one", r"\boxed{the blue one}"),
    ("Paris", r"\boxed{Paris, Texas}"),
    ("no solution", r"\boxed{\text{no real solution}}"),
]

NOT_PAID = QUALIFIED + ALTERNATIVES + AFTER + CUT_OFF + EXPRESSIONS + WORDS

PAID = [
    # Markers written as headings or bold with a colon.
    ("3", "**Final Answer**: 3"),
    ("3", "**Final Answer**: $3$"),
    ("3", "## Final Answer: 3"),
    ("3", "# Answer\n\n3"),
    ("3", "## Final Answer\n$3$"),
    ("3", "**Final Answer**\n\n3"),
    ("3", "**Answer**\n3"),
    ("3", "Answer:\n\n3"),
    (r"\frac{1}{2}", "### Final Answer\n\n$\\frac{1}{2}$"),
    # Choice letters as models write them.
    ("C", r"\boxed{c}"),
    ("C", "The answer is (c)."),
    ("C", "Answer: (C) 42"),
    ("42", "Answer: (C) 42"),
    ("C", "the answer is (C) 4.2 m"),
    ("D", "so my answer is DDDDD"),
    ("F", "the answer is F, and the response should be concise"),
    ("B", "We get 12 and 15.\n\nB"),
    ("B", "Checking: 12 + 3 = 15.\n**B**"),
    # Restating the answer is no hedge.
    ("3", "3, i.e. three"),
    ("3", "The answer is 3, i.e. three."),
    ("12", "Answer: $12$ (in words, twelve)"),
    ("3", "The answer is 3. So the answer is 3."),
    ("3", r"\boxed{3}. Therefore, the answer is 3."),
    ("3", r"\boxed{3} and \boxed{3}"),
    ("3", r"\boxed{3}. This is correct because 1+2=3."),
    ("12", "\\boxed{12}\n\nWe could also check: 3 \\times 4 = 12."),
    ("2", "\\boxed{2}\n\nThe equation x^2 = 4 gives x = 2 or x = -2, but x > 0."),
    ("3", "\\boxed{3}\n\nI hope this is correct."),
    ("3", r"The answer is 3, or equivalently 6/2."),
    # A blank box copied from the problem is no answer; the real box is.
    ("7", r"Fill in \boxed{\phantom{7}}. Then the answer is \boxed{7}"),
    ("7", r"Put the result in $\boxed{\quad}$. We get \boxed{7}."),
    # A judgement is no marker; the answer before it is.
    ("5", "The answer is 5. I believe my answer is correct."),
    # The whole final expression.
    (r"\frac{639}{40}", r"so it is \frac{639}{40}"),
    ("(2, 4)", "so the point is (2, 4)"),
    ("1+2i", "so z = 1+2i"),
    (r"\frac32", r"so it is \frac{3}{2}"),
    # Doubt that commits to the value, and reasoning tags in any case.
    ("3", "The answer is probably 3."),
    ("3", "I think the answer is 3."),
    ("3", "I'm not sure at first, but the answer is 3."),
    ("3", "<THINK>hmm</THINK>\\boxed{3}"),
    ("3", "<think >hmm</think >\n\\boxed{3}"),
    ("3", "< think>x</ think>The answer is 3"),
    # Text of several words, compared whole.
    ("New York", r"\boxed{New York}"),
    ("New York", r"\boxed{\text{New York}}"),
    ("New York", "The answer is New York."),
    ("all odd positive integers", r"\boxed{\text{All odd positive integers.}}"),
]


@each_entry_point
@cases(NOT_PAID)
def test_not_paid(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(PAID)
def test_paid(entry, gold, completion, request):
    skip_if_not_read(entry, completion, request)
    gold_value = grpo_fast.parse(gold)
    if entry == "trl.accuracy_reward" and (gold_value is None or gold_value.kind == "text"):
        # TRL's contract: a gold math-verify cannot parse (words) is unscorable.
        assert trl.accuracy_reward([completion], solution=[gold]) == [None]
        return
    assert ENTRY_POINTS[entry](gold, completion) == 1.0, f"{entry}: {completion!r}"


@pytest.mark.parametrize(
    ("gold", "completion"),
    QUALIFIED + ALTERNATIVES + AFTER,
    ids=[p for _, p in QUALIFIED + ALTERNATIVES + AFTER],
)
def test_the_verdict_names_the_hedge(gold, completion):
    v = grpo_fast.verify_detailed(gold, completion)
    assert not v.matched
    assert v.reason.startswith("hedge: "), v


@pytest.mark.parametrize(("gold", "completion"), CUT_OFF, ids=[p for _, p in CUT_OFF])
def test_a_cut_off_answer_says_so(gold, completion):
    reason = grpo_fast.verify_detailed(gold, completion).reason
    assert reason.startswith(("no answer: ", "hedge: an answer that breaks off")), reason


# A completion cut off at the token limit in the middle of its reasoning.
CUT_MID_REASONING = [
    ("12", "First, 3 * 4 = 12. Then we need to add the remaining 12"),
    ("5", "Let me try x = 5. Substituting, we get 25, then 5"),
    ("7", "So far the count is 7"),
]


@pytest.mark.parametrize(("gold", "completion"), CUT_MID_REASONING)
def test_a_truncated_completion_is_not_paid_through_the_last_number(gold, completion):
    # Read as finished, the last value answers; flagged as cut off, it does not.
    assert grpo_fast.verify(gold, completion)
    assert not grpo_fast.verify(gold, completion, truncated=True)
    v = grpo_fast.verify_detailed(gold, completion, truncated=True)
    assert v.reason == "no answer: the completion was cut off and has no answer marker"
    flags = [False, True]
    got = grpo_fast.verify_batch(gold, [completion, completion], truncated=flags)
    assert got.tolist() == [1.0, 0.0]
    r = rewards.combine([rewards.MathReward()])
    assert r.score_batch([completion] * 2, gold, truncated=flags).total.tolist() == [1.0, 0.0]
    assert (
        rewards.score_batch(rewards.MathReward(), [completion], gold, truncated=True).total[0] == 0
    )


def test_a_truncated_completion_keeps_its_marked_answer():
    text = r"So \boxed{12}. Let me double-check by recomputing 3 * 4 ="
    assert grpo_fast.verify("12", text, truncated=True)
    flags = grpo_fast.verify_batch(["12", "12"], [text, "so 12"], truncated=True)
    assert flags.tolist() == [1.0, 0.0]


@pytest.mark.parametrize("bad", ["yes", 1.5, [True, "no"], object()])
def test_truncated_must_be_bools(bad):
    with pytest.raises(grpo_fast.InvalidInputError, match="truncated"):
        grpo_fast.verify_batch("3", ["3", "3"], truncated=bad)


def test_truncated_needs_one_flag_per_completion():
    with pytest.raises(grpo_fast.InvalidInputError, match="truncated has 1"):
        grpo_fast.verify_batch("3", ["3", "3"], truncated=[True])


PROSE_GOLDS = [
    "The answer depends on the initial conditions of the whole system",
    "It is the largest city in the state of New York",
]


@pytest.mark.parametrize("gold", PROSE_GOLDS)
def test_a_gold_that_is_a_sentence_is_unscorable(gold):
    # Never its first word: a sentence is no answer, so no completion is
    # scored against it (None in TRL's contract, NaN in the reward specs).
    first = gold.split()[0]
    for completion in (rf"\boxed{{{first}}}", rf"\boxed{{\text{{{gold}}}}}"):
        v = grpo_fast.verify_detailed(gold, completion)
        assert not v.matched and v.reason.startswith("unscorable gold"), v
        assert trl.accuracy_reward([completion], solution=[gold]) == [None]
        r = rewards.combine([rewards.MathReward()])
        assert math.isnan(r.score_batch([completion], gold).total[0])
        assert verl.compute_score("math_dapo", completion, gold)["score"] == -1.0
        assert grpo_fast.verify_batch(gold, [completion]).tolist() == [0.0]


def test_a_multi_word_gold_is_compared_whole_in_verl_math_dapo():
    # verl's math_dapo reads `Answer:` lines; the gold's words count whole.
    assert verl.compute_score("math_dapo", "Answer: New Jersey", "New York")["score"] == -1.0
    assert verl.compute_score("math_dapo", "Answer: New York", "New York")["score"] == 1.0


# Hostile shapes: long, nested and hedge-heavy inputs end in their verdict
# (the time each takes is measured by benches/, not asserted here).
def _hostile():
    or_chain = " or ".join(str(k) for k in range(20_000))
    words = " ".join(["maybe", "not", "at", "least", "or", "more", "than"] * 5_000)
    return [
        ("3", "The answer is " + or_chain, False),
        ("3", r"\boxed{3}" + " or maybe 4" * 10_000, False),
        # More offers than are compared is a hedge of itself, even restatements.
        ("3", r"\boxed{3}" + " Or 3." * 10_000, False),
        ("3", "the answer is 3 " + words, False),
        ("3", "<think>" * 20_000 + r"\boxed{3}", False),
        ("3", "< think >" * 10_000 + "</think>" + r"\boxed{3}", True),
        ("3", r"\boxed{" * 20_000 + "3", False),
        ("3", r"\boxed{\phantom{" * 5_000 + "}" * 5_000 + r"\boxed{3}", False),
        ("3", "answer answer answer\n" * 10_000 + "# Answer\n3", True),
        ("3", "my answer is correct. " * 10_000 + "The answer is 3.", True),
        ("3", "i.e. " * 30_000 + "3", True),
        ("3", "1+" * 50_000 + "3", False),
        ("3", "(" * 50_000 + "3", True),
        ("3", r"\frac{" * 20_000 + "3", False),
        ("New York", "New " * 40_000, False),
        ("3", "The answer is 3, " + "i.e. three, " * 5_000, False),
        ("B", "The answer is " + "(B) and " * 10_000 + "(B)", False),
        ("3", "three or " * 20_000 + "3", False),
    ]


@pytest.mark.parametrize(("gold", "completion", "paid"), _hostile(), ids=range(len(_hostile())))
def test_hostile_inputs_end_in_their_verdict(gold, completion, paid):
    assert grpo_fast.verify(gold, completion) is paid
    assert grpo_fast.verify_batch(gold, [completion]).tolist() == [float(paid)]
