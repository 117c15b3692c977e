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

import pytest
from entry_points import assert_not_paid, cases, each_entry_point, score

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
    # At the end of the text, touched by a word of the task.
    ("164", "What is 79 + 85? Let's compute 79 + 85."),
    ("156", r"We need 12 \times 13."),
    ("56", "Next, calculate $7 \\cdot 8$."),
    ("21", "Now we evaluate 3*7"),
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
    ("164", "We compute 79 + 85 = 164."),
    ("164", "Adding, we find 164."),
    # Must be paid: approval of a stated answer is no doubt about it.
    ("3", "The answer is 3. I think that's the answer."),
    ("3", "3. I think that's the answer."),
    ("3", "**3** I think that's the answer."),
    ("3", "So x = 3, I think that's the answer."),
    ("3", "So it is 3, I believe this is correct."),
    ("3", "The result is 3. I'm confident that's right."),
    ("3", r"$3$ I believe this is correct."),
]


@each_entry_point
@cases(RESTATED)
def test_the_question_restated_earns_nothing(entry, gold, completion):
    assert_not_paid(entry, gold, completion)


@each_entry_point
@cases(STATED)
def test_a_stated_result_pays(entry, gold, completion):
    if entry == "trl.accuracy_reward" and "answer is" not in completion:
        pytest.skip("TRL's accuracy_reward reads anchored answers only")
    assert score(entry, gold, completion) == 1.0, f"{entry}: {completion!r}"


def test_the_verdict_says_why():
    v = grpo_fast.verify_detailed("164", "To add 79 + 85, you simply add them and find the result.")
    assert not v.matched
    assert "not a stated result" in v.reason


# With the prompt: an unevaluated arithmetic expression copied from it is no
# answer, in every marker; a number, or an expression the prompt does not
# contain, is judged as without it. (prompt, gold, completion, paid)
PROMPTED = [
    ("What is 79 + 85?", "164", r"\boxed{79+85}", False),
    ("What is 79 + 85?", "164", "The answer is 79 + 85", False),
    ("What is 79 + 85?", "164", r"\boxed{85 + 79}", False),
    ("Compute $12 \\times 13$.", "156", r"The answer is $12 \cdot 13$.", False),
    ("What is 7 times 8?", "56", r"\boxed{7 \times 8}", False),
    # Decoration and padding that change nothing: still the prompt's expression.
    ("What is 79 + 85?", "164", r"\boxed{(79+85)}", False),
    ("What is 79 + 85?", "164", r"\boxed{79 \, + \, 85}", False),
    ("What is 79 + 85?", "164", r"\boxed{\text{79 + 85}}", False),
    ("What is 79 + 85?", "164", r"\boxed{79 + 85 + 0}", False),
    ("What is 79 + 85?", "164", r"\boxed{(79 + 85) \cdot 1}", False),
    ("What is 12 + 30 + 7?", "49", r"\boxed{7 + 30 + 12}", False),
    ("What is 79 + 85?", "164", r"\boxed{164}", True),
    ("What is 79 + 85?", "164", "The answer is 164", True),
    ("What is 79 + 85?", "164", r"\boxed{80 + 84}", True),
    ("What is 179 + 85?", "264", r"\boxed{264}", True),
    ("What is 79 + 85?", "164", r"\boxed{79 + 85 = 164}", True),
]
PROMPTED_IDS = [f"{p}|{c}" for p, _, c, _ in PROMPTED]


def _chat(prompt):
    return [{"role": "user", "content": prompt}]


def _prompted_entry_points():
    """name -> f(prompt, gold, completion) -> reward (1.0 for a paid answer)."""
    from grpo_fast import rewards
    from grpo_fast.integrations import openrlhf, trl, verl

    math_reward = rewards.combine([rewards.MathReward()])

    def _openrlhf(q, g, p):
        pytest.importorskip("torch")
        return float(openrlhf.reward_func([q + "\n" + p], [q + "\n"], [g])["rewards"][0])

    return {
        "verify": lambda q, g, p: float(grpo_fast.verify(g, p, prompt=q)),
        "verify(chat)": lambda q, g, p: float(grpo_fast.verify(g, p, prompt=_chat(q))),
        "verify_detailed": lambda q, g, p: float(grpo_fast.verify_detailed(g, p, prompt=q).matched),
        "verify_batch": lambda q, g, p: float(
            grpo_fast.verify_batch([g, g], ["x", p], prompts=["x", q])[1]
        ),
        "MathReward.score_batch": lambda q, g, p: float(
            math_reward.score_batch([p], [g], prompts=[q]).total[0]
        ),
        "trl.accuracy_reward": lambda q, g, p: (
            trl.accuracy_reward(
                [[{"role": "assistant", "content": p}]], solution=[g], prompts=[_chat(q)]
            )[0]
            or 0.0
        ),
        "verl.compute_score": lambda q, g, p: float(
            verl.compute_score(
                "lighteval/MATH", p, g, extra_info={"question": q}, judge="grpo_fast"
            )
        ),
        "openrlhf.reward_func": _openrlhf,
    }


PROMPTED_ENTRY_POINTS = _prompted_entry_points()


@pytest.mark.parametrize("entry", sorted(PROMPTED_ENTRY_POINTS))
@pytest.mark.parametrize(("prompt", "gold", "completion", "paid"), PROMPTED, ids=PROMPTED_IDS)
def test_an_expression_copied_from_the_prompt_is_no_answer(entry, prompt, gold, completion, paid):
    score = PROMPTED_ENTRY_POINTS[entry](prompt, gold, completion)
    assert (score == 1.0) == paid, f"{entry}: {completion!r} for {prompt!r} scored {score}"


def test_without_the_prompt_a_stated_expression_pays():
    # The verifier cannot tell the question's expression from a result
    # without the prompt (docs/verify_semantics.md, rule 2).
    assert grpo_fast.verify("164", r"\boxed{79+85}")
    assert not grpo_fast.verify("164", r"\boxed{79+85}", prompt="What is 79 + 85?")
    v = grpo_fast.verify_detailed("164", r"\boxed{79+85}", prompt="What is 79 + 85?")
    assert "not a stated result" in v.reason


def test_prompts_must_match_the_completions():
    with pytest.raises(ValueError):
        grpo_fast.verify_batch("164", ["a", "b"], prompts=["q"])


def test_the_trainer_passes_each_rows_prompt():
    from grpo_fast.run_rewards import RunRewards

    r = RunRewards.build(["math"])
    rows = [
        {"prompt": _chat("What is 79 + 85?"), "answer": "164"},
        {"prompt": "What is 79 + 85?", "answer": "164"},
        {"prompt": "What is 79 + 85?", "answer": "164"},
    ]
    got = r.score([r"\boxed{79+85}", "The answer is 79 + 85", r"\boxed{164}"], rows).total
    assert got.tolist() == [0.0, 0.0, 1.0]
    # Rows without a prompt are judged as before.
    bare = r.score([r"\boxed{79+85}"], [{"answer": "164"}]).total
    assert bare.tolist() == [1.0]
