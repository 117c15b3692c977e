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

import math

import pytest

import grpo_fast
from grpo_fast import rewards
from grpo_fast.compat import math_verify as mv_compat
from grpo_fast.integrations import openrlhf, trl, verl

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

IDS = [p for _, p in HEDGES]
FAIR_IDS = [p for _, p in FAIR]


def _openrlhf_score(gold: str, completion: str) -> float:
    prompt = "Question: what is it?\n"
    out = openrlhf.reward_func([prompt + completion], [prompt], [gold])
    return float(out["rewards"][0])


def _entry_points():
    """name -> f(gold, completion) -> reward (1.0 for a paid answer)."""
    math_reward = rewards.combine([rewards.MathReward()])
    return {
        "verify": lambda g, p: float(grpo_fast.verify(g, p)),
        "verify_detailed": lambda g, p: float(grpo_fast.verify_detailed(g, p).matched),
        "verify_batch": lambda g, p: float(grpo_fast.verify_batch([g, g], [p, p])[1]),
        "MathReward.score_batch": lambda g, p: float(math_reward.score_batch([p], [g]).total[0]),
        "trl.accuracy_reward": lambda g, p: trl.accuracy_reward([p], solution=[g])[0] or 0.0,
        # judge="grpo_fast": the lenient judge reads every answer form, so it
        # is the one a hedge could slip through (verl's own judge for MATH
        # reads only boxes).
        "verl.compute_score": lambda g, p: float(
            verl.compute_score("lighteval/MATH", p, g, judge="grpo_fast")
        ),
        "openrlhf.reward_func": _openrlhf_score,
        "compat.math_verify": lambda g, p: float(
            mv_compat.verify(mv_compat.parse(g), mv_compat.parse(p))
        ),
    }


ENTRY_POINTS = _entry_points()


@pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))
@pytest.mark.parametrize(("gold", "completion"), HEDGES, ids=IDS)
def test_a_hedge_earns_nothing(entry, gold, completion):
    if entry == "openrlhf.reward_func":
        pytest.importorskip("torch")
    score = ENTRY_POINTS[entry](gold, completion)
    assert not math.isnan(score)
    assert score < 1.0, f"{entry} pays {completion!r} against {gold!r}"


@pytest.mark.parametrize(
    "entry",
    # TRL's accuracy_reward reads anchored answers only (no `####`); the other
    # entry points read every marker.
    sorted(ENTRY_POINTS),
)
@pytest.mark.parametrize(("gold", "completion"), FAIR, ids=FAIR_IDS)
def test_a_fair_answer_still_pays(entry, gold, completion):
    if entry == "openrlhf.reward_func":
        pytest.importorskip("torch")
    if entry == "trl.accuracy_reward" and completion.startswith("####"):
        pytest.skip("TRL's accuracy_reward does not read GSM8K's #### line")
    assert ENTRY_POINTS[entry](gold, completion) == 1.0, f"{entry}: {completion!r}"


@pytest.mark.parametrize(("gold", "completion"), HEDGES, ids=IDS)
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
