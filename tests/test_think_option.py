"""The ``think`` keyword: where the answer region starts, on every path that extracts.

docs/verify_semantics.md, rule 6: when a completion closes a reasoning block,
only the text after the last ``</think>`` is searched; a completion that opens
``<think>`` and never closes it, or says nothing after it, has no answer; a
text without reasoning tags is searched whole. ``think=False`` turns this off
(the whole text is searched, tags and all). The expected rewards below follow
from those sentences, for the three completions of ``TEXTS`` against the gold 3:

- ``<think>so it is \\boxed{3}`` (cut off mid-thought): no answer; off: 3;
- ``<think>so it is \\boxed{3}</think>`` (nothing after): no answer; off: 3;
- ``<think>draft 4</think> \\boxed{3}``: 3 either way (the box is after).
"""

from __future__ import annotations

import copy
import inspect
import pickle

import numpy as np
import pytest

import grpo_fast
from grpo_fast import _core, rewards
from grpo_fast.errors import InvalidInputError

TEXTS = [
    r"<think>so it is \boxed{3}",
    r"<think>so it is \boxed{3}</think>",
    r"<think>draft 4</think> \boxed{3}",
]
ON = [0.0, 0.0, 1.0]
OFF = [1.0, 1.0, 1.0]


def test_verify_and_verify_detailed():
    assert [float(grpo_fast.verify("3", t)) for t in TEXTS] == ON
    assert [float(grpo_fast.verify("3", t, think=True)) for t in TEXTS] == ON
    assert [float(grpo_fast.verify("3", t, think=False)) for t in TEXTS] == OFF
    cut = grpo_fast.verify_detailed("3", TEXTS[0])
    assert (cut.matched, cut.reason) == (
        False,
        "no answer: the reasoning never closes (<think> without </think>)",
    )
    assert grpo_fast.verify_detailed("3", TEXTS[0], think=False).reason == "match"


def test_think_does_not_read_the_golds_tags():
    # A gold has no reasoning block: the same answer whatever the option says.
    gold = r"<think>so it is \boxed{3}"
    for think in (True, False):
        assert grpo_fast.verify(gold, r"\boxed{3}", think=think)
        assert not grpo_fast.verify(gold, r"\boxed{4}", think=think)


def test_verify_batch_one_gold_and_one_each():
    assert grpo_fast.verify_batch("3", TEXTS).tolist() == ON
    assert grpo_fast.verify_batch("3", TEXTS, think=False).tolist() == OFF
    assert grpo_fast.verify_batch(["3"] * 3, TEXTS, think=False).tolist() == OFF
    assert grpo_fast.verify_batch(["3", "4", "3"], TEXTS, think=False).tolist() == [1.0, 0.0, 1.0]


def test_extract_answer():
    assert [grpo_fast.extract_answer(t) for t in TEXTS[:2]] == [None, None]
    assert grpo_fast.extract_answer(TEXTS[2]).parts == ("3",)
    for t in TEXTS:
        found = grpo_fast.extract_answer(t, think=False)
        assert (found.parts, found.rule) == (("3",), "boxed")
    # Off, a box inside the reasoning and one after it are one collection answer.
    both = grpo_fast.extract_answer(r"<think>\boxed{2}</think> \boxed{3}", think=False)
    assert both.parts == ("2", "3")


@pytest.mark.parametrize(
    ("spec", "gold", "texts"),
    [
        (rewards.MathReward, "3", TEXTS),
        (rewards.ExactMatchReward, "3", TEXTS),
        (
            rewards.ChoiceReward,
            "C",
            ["<think>it is (C)", "<think>it is (C)</think>", "<think>hmm</think> (C)"],
        ),
    ],
)
def test_reward_specs(spec, gold, texts):
    assert rewards.score_batch(spec(), texts, gold).total.tolist() == ON
    off = spec(think=False)
    assert rewards.score_batch(off, texts, gold).total.tolist() == OFF
    for clone in (pickle.loads(pickle.dumps(off)), copy.deepcopy(off)):
        assert clone.think is False
        assert rewards.score_batch(clone, texts, gold).total.tolist() == OFF


def test_exact_match_of_the_whole_text_ignores_think():
    # extract=False compares the whole completion: there is no answer region.
    spec = rewards.ExactMatchReward(extract=False, think=True)
    assert rewards.score_batch(spec, ["<think>x"], "<think>x").total.tolist() == [1.0]


def test_trl_accuracy_reward():
    trl = pytest.importorskip("grpo_fast.integrations.trl")
    golds = {"solution": ["3"] * 3}
    assert trl.accuracy_reward(TEXTS, **golds) == ON
    assert trl.get_accuracy_reward(think=False)(TEXTS, **golds) == OFF
    chat = [[{"role": "assistant", "content": t}] for t in TEXTS]
    assert trl.get_accuracy_reward(think=False)(chat, **golds) == OFF
    logged: dict[str, list[object]] = {}
    reward = trl.get_accuracy_reward(think=False, log_answers=True)
    reward(TEXTS, log_extra=logged.__setitem__, **golds)
    assert logged["answer_parsed"] == ["3", "3", "3"]
    reward = pickle.loads(pickle.dumps(trl.get_accuracy_reward(think=False)))
    assert reward(TEXTS, **golds) == OFF


def test_verl_compute_score_and_options():
    pytest.importorskip("verl")
    from grpo_fast.integrations import verl as gf

    src = "HuggingFaceH4/MATH-500"  # verl's MATH convention: boxes only
    assert [gf.compute_score(src, t, "3") for t in TEXTS] == ON
    assert [gf.compute_score(src, t, "3", think=False) for t in TEXTS] == OFF
    batch = {"data_sources": [src] * 3, "solution_strs": TEXTS, "ground_truths": ["3"] * 3}
    assert gf.compute_score_batch(**batch) == ON
    assert gf.compute_score_batch(**batch, think=False) == OFF
    assert gf.compute_score(**batch, think=False) == OFF
    dapo = gf.compute_score("math_dapo", TEXTS[0], "3", think=False)
    assert dapo == {"score": 1.0, "acc": True, "pred": "3"}
    assert gf.compute_score("math_dapo", TEXTS[0], "3")["score"] == -1.0


def test_verl_reward_manager_accepts_think_from_reward_kwargs():
    pytest.importorskip("verl")
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    from grpo_fast.integrations.verl import reward_manager

    def loaded(kwargs):
        return get_custom_reward_fn(
            OmegaConf.create(
                {
                    "reward": {
                        "custom_reward_function": {
                            "path": "pkg://grpo_fast.integrations.verl",
                            "name": "compute_score",
                            "reward_kwargs": kwargs,
                        }
                    }
                }
            )
        )

    fn = loaded({"think": False})
    assert reward_manager._reward_options(fn) == {"think": False}
    assert fn(data_source="x", solution_str=TEXTS[0], ground_truth="3") == 1.0
    with pytest.raises(InvalidInputError, match=r"\['thinking'\].*think\)"):
        reward_manager._reward_options(loaded({"thinking": False}))


def test_compat_math_verify_parse():
    compat = pytest.importorskip("grpo_fast.compat.math_verify")
    assert [compat.parse(t) != [] for t in TEXTS] == [False, False, True]
    found = [compat.parse(t, think=False) for t in TEXTS]
    assert [f[1] for f in found] == ["3", "3", "3"]
    assert all(f[0].think is False for f in found)
    # verify re-reads the target with the options parse used.
    assert [compat.verify(compat.parse("3"), f) for f in found] == [True, True, True]
    assert compat.verify(compat.parse("3"), TEXTS[0]) is False


def test_openrlhf_reward_func_with_a_spec_that_reads_the_reasoning():
    gf = pytest.importorskip("grpo_fast.integrations.openrlhf")
    fn = gf.make_reward_func(rewards.MathReward(think=False))
    out = fn(["Q" + t for t in TEXTS], ["Q"] * 3, ["3"] * 3)
    assert np.asarray(out["rewards"]).tolist() == OFF
    out = gf.make_reward_func(rewards.MathReward())(["Q" + t for t in TEXTS], ["Q"] * 3, ["3"] * 3)
    assert np.asarray(out["rewards"]).tolist() == ON


@pytest.mark.parametrize("value", ["no", "False", 0, 1, 0.5, [True]])
def test_a_think_that_is_not_a_bool_is_invalid_input(value):
    calls = [
        lambda: grpo_fast.verify("3", "3", think=value),
        lambda: grpo_fast.verify_detailed("3", "3", think=value),
        lambda: grpo_fast.verify_batch("3", ["3"], think=value),
        lambda: grpo_fast.extract_answer("3", think=value),
        lambda: rewards.combine(rewards.MathReward(think=value)),
        lambda: rewards.combine(rewards.ChoiceReward(think=value)),
        lambda: _core.ExtractOptions(think=value),
    ]
    for call in calls:
        with pytest.raises(InvalidInputError, match="think must be True or False"):
            call()


def test_numpy_bools_are_bools():
    assert grpo_fast.verify("3", TEXTS[0], think=np.False_)
    assert not grpo_fast.verify("3", TEXTS[0], think=np.True_)


def test_the_default_is_the_cores_and_defined_once():
    assert _core.VerifyOptions().think is True
    assert _core.ExtractOptions().think is True
    assert _core.VerifyOptions(think=False).think is False
    assert "think=False" in repr(_core.VerifyOptions(think=False))
    for fn in (grpo_fast.verify, grpo_fast.verify_detailed, grpo_fast.verify_batch):
        assert inspect.signature(fn).parameters["think"].default is True
    assert inspect.signature(grpo_fast.extract_answer).parameters["think"].default is True
    for spec in (rewards.MathReward, rewards.ExactMatchReward, rewards.ChoiceReward):
        assert spec().think is True
