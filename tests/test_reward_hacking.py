"""Answers a policy could learn to game: hedges earn nothing through every entry point.

docs/verify_semantics.md ("Which answer counts", rule 3): values offered as
alternatives, a list of candidates against a single-valued gold and a negated
answer earn nothing, after every marker and inside boxes. Each hedge is scored
through every way a trainer calls the verifier (the plain API, the batch API,
the reward specs, the TRL / verl / OpenRLHF integrations and the math-verify
compatible API); the expected judgement is the semantics', written here by
hand, and the legitimate answers next to them must keep paying, so that a
fix which scores everything 0 fails too.
"""

from __future__ import annotations

import pytest
from entry_points import assert_not_paid, cases, each_entry_point, score

import grpo_fast

# (gold, hedging completion): each must earn nothing.
HEDGES = [
    ("3", "the answer is 1, 2, or 3"),
    ("C", "The answer is (A) or (C)"),
    ("3", "Answer: 4 or 3"),
    ("3", "#### 4 or 3"),
    ("3", "the answer is not 3"),
    ("3", "The answer is not $3$."),
    ("3", "the answer isn't 3"),
    ("3", "Final Answer: The final answer is $4$ or $3$. I hope it is correct."),
    ("391", r"\boxed{381 or 391}"),
    ("391", r"\boxed{381} \boxed{391} \boxed{401}"),
    ("3", "<answer>4 or 3</answer>"),
    ("2", "Answer: x = 2 or x = -2"),
    ("3", "Answer: 5, not 3"),
    # A first answer in `$...$` with alternatives after it in the sentence.
    ("3", "The answer is $3$, or $4$"),
    ("3", "The answer is $3$ (or $4$)"),
    ("4", "The answer is $3$ (or $4$)"),
    ("3", "The answer is $3$ and/or $4$."),
    ("3", "Final Answer: The final answer is $3$ (or $4$). I hope it is correct."),
    ("3", "The answer is 3, or perhaps 4."),
    ("3", "The answer is $3$, or maybe $4$"),
    ("3", "The answer is $3$ (possibly $4$)"),
    ("3", "Answer: 3, probably 4"),
    ("3", r"\boxed{3 \text{ (alternatively } 4)}"),
    # Without a marker: digit groups joined by commas are one list, not their last number.
    ("3", "so we get 1,2,3"),
    ("4", "so the point is (3,4)"),
]

# (gold, completion): legitimate answers near the hedges; each must pay.
FAIR = [
    ("3", "the answer is 3"),
    ("C", "The answer is (C)"),
    ("3", "Answer: 3 or 3"),
    ("4", "the answer is not 3 but 4"),
    ("5", "Answer: 5, not 3"),
    ("3", r"so \boxed{3}"),
    ("2, -2", "Answer: x = 2 or x = -2"),
    ("18", r"The final answer is $\$18$. I hope it is correct."),
    ("72", "#### 72<|im_end|>"),
    ("42", "The answer is 42</s>"),
    ("(3,4)", "The answer is (3,4)"),
    ("5", "The answer is $5$ because $x = 2$."),
    ("5", "The answer is $5$, not $4$."),
    ("12", "Answer: $12$ (or, in words, twelve)"),
    ("3", "The answer is $3$, or equivalently $6/2$."),
    ("3", "The answer is probably $3$."),
]


@each_entry_point
@cases(HEDGES)
def test_a_hedge_earns_nothing(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(FAIR)
def test_a_fair_answer_still_pays(entry, gold, completion):
    # TRL's accuracy_reward reads anchored answers only (no `####`); the other
    # entry points read every marker.
    if entry == "trl.accuracy_reward" and completion.startswith("####"):
        pytest.skip("TRL's accuracy_reward does not read GSM8K's #### line")
    assert score(entry, gold, completion) == 1.0, f"{entry}: {completion!r}"


@cases(HEDGES)
def test_the_verdict_names_the_hedge(gold, completion):
    v = grpo_fast.verify_detailed(gold, completion)
    assert not v.matched
    # Two are plain wrong answers: 5, and the point (3, 4).
    if completion not in ("Answer: 5, not 3", "so the point is (3,4)"):
        assert v.reason.startswith("hedge: "), v


def test_a_union_of_relations_is_not_a_hedge_of_values():
    # `or` between relations describes one set; the verifier reads it as the
    # same value whichever form writes it (the math engine decides unions).
    a = grpo_fast.verify_detailed("x < 1 \\text{ or } x > 3", "The answer is $x<1$ or $x>3$.")
    b = grpo_fast.verify_detailed("x < 1 \\text{ or } x > 3", "x < 1 \\text{ or } x > 3")
    assert a.pred == b.pred
    assert a.matched == b.matched
    ours = grpo_fast.extract_answer("The answer is $x<1$ or $x>3$.")
    assert ours is not None and ours.answer == "$x<1$ or $x>3$"
