"""grpo_fast.integrations.openrlhf: the reward_func module, loaded the way OpenRLHF loads it.

OpenRLHF itself is heavy (ray, deepspeed, vLLM) and not installed; the contract it
relies on is reproduced here: the file is imported with importlib from its path,
``reward_func(queries, prompts, labels)`` is called on decoded texts, and the
returned dict holds float tensors ``rewards`` and ``scores`` and a dict of
tensors ``extra_logs``. Correctness is checked against math-verify.
"""

from __future__ import annotations

import importlib.util

import pytest

torch = pytest.importorskip("torch")
math_verify = pytest.importorskip("math_verify")

from grpo_fast import rewards  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.integrations import openrlhf as gf  # noqa: E402


def load_like_openrlhf():
    """openrlhf: spec_from_file_location(--remote_rm_url) + exec_module, then .reward_func."""
    spec = importlib.util.spec_from_file_location("reward_func", gf.__file__)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.reward_func


PROMPT = "Solve. Example: 3 + 4 = ?\n#### 7\nNow: 4 + 5 = ?\n"
CASES = [  # (response, label): answers as a policy writes them
    (r"We add: 4 + 5 = 9, so the answer is \boxed{9}.", "9"),
    (r"so \boxed{\frac{1}{2}}", r"\frac12"),
    (r"so \boxed{0.5}", r"\frac{1}{2}"),
    (r"so \boxed{\frac{1}{3}}", r"\frac{1}{2}"),
    (r"I get \boxed{2\sqrt{2}}", r"\sqrt{8}"),
    (r"the result is \boxed{(1, 2)}", "(1,2)"),
    (r"the result is \boxed{(2, 1)}", "(1,2)"),
    (r"hence \boxed{-3}", "3"),
]


def test_reward_func_contract_and_agreement_with_math_verify():
    reward_func = load_like_openrlhf()
    responses = [r for r, _ in CASES]
    labels = [g for _, g in CASES]
    out = reward_func([PROMPT + r for r in responses], [PROMPT] * len(CASES), labels)
    assert set(out) == {"rewards", "scores", "extra_logs"}
    for key in ("rewards", "scores"):
        assert isinstance(out[key], torch.Tensor) and out[key].dtype == torch.float32
        assert out[key].shape == (len(CASES),)
    assert all(
        isinstance(v, torch.Tensor) and v.shape == (len(CASES),) for v in out["extra_logs"].values()
    )
    reference = [
        float(math_verify.verify(math_verify.parse(f"${g}$"), math_verify.parse(r)))
        for r, g in CASES
    ]
    assert out["rewards"].tolist() == reference
    assert out["scores"].tolist() == reference
    assert 0 < sum(reference) < len(reference)


def test_only_the_response_is_scored():
    """The prompt's few-shot '#### 7' must not be taken as the response's answer."""
    queries = [PROMPT + "the answer is 9", PROMPT + "the answer is 7"]
    out = gf.reward_func(queries, [PROMPT, PROMPT], ["7", "7"])
    assert out["rewards"].tolist() == [0.0, 1.0]
    # A query that does not start with its prompt (spacing changed) is cut after the prompt.
    assert gf.responses_of(["<s> Q? A: 2"], ["Q?"]) == [" A: 2"]
    assert gf.responses_of(["unrelated 5"], ["Q?"]) == ["unrelated 5"]


def test_unusable_labels_give_zero_reward_and_are_counted():
    out = gf.reward_func(["Q 5", "Q \\boxed{5}"], ["Q", "Q"], ["", "5"])
    assert out["rewards"].tolist() == [0.0, 1.0]
    assert out["extra_logs"]["unscorable"].tolist() == [1.0, 0.0]
    assert not torch.isnan(out["rewards"]).any()


def test_make_reward_func_weights_specs():
    fn = gf.make_reward_func(
        rewards.MathReward(), rewards.FormatReward(r"^<think>.*</think>", weight=0.5, name="think")
    )
    out = fn(
        ["P<think>x</think> \\boxed{2}", "P<think>x</think> \\boxed{3}", "P \\boxed{2}"],
        ["P"] * 3,
        ["2", "2", "2"],
    )
    assert out["rewards"].tolist() == [1.5, 0.5, 1.0]
    assert out["scores"].tolist() == [1.0, 0.0, 1.0]  # the first spec: math
    assert out["extra_logs"]["think"].tolist() == [1.0, 1.0, 0.0]
    with pytest.raises(InvalidInputError, match="success_column"):
        gf.make_reward_func(rewards.MathReward(), success_column="nope")


def test_bad_input_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="queries has 2 entries but prompts has 1"):
        gf.reward_func(["a", "b"], ["a"], ["1", "2"])
    with pytest.raises(InvalidInputError, match="labels has 1 entries but there are 2"):
        gf.reward_func(["a", "b"], ["a", "b"], ["1"])
    with pytest.raises(InvalidInputError, match="lists of str"):
        gf.reward_func("a", "a", ["1"])
