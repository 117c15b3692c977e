"""grpo_fast.integrations.verl against verl's own estimators, on the same inputs."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

torch = pytest.importorskip("torch")
core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.integrations import verl as gf  # noqa: E402


def _batch(seed: int, sizes: list[int], length: int = 7, shuffle: bool = True):
    """verl-shaped inputs: outcome reward on the last valid token, uuid-string index."""
    rng = np.random.default_rng(seed)
    uids = [str(uuid.UUID(int=int(rng.integers(0, 2**63)))) for _ in sizes]
    index = np.array([u for u, n in zip(uids, sizes, strict=True) for _ in range(n)], dtype=object)
    bs = len(index)
    if shuffle:
        index = index[rng.permutation(bs)]
    lengths = rng.integers(1, length + 1, size=bs)
    mask = torch.from_numpy((np.arange(length)[None, :] < lengths[:, None]).astype(np.int64))
    scores = rng.uniform(-1.0, 2.0, size=bs).astype(np.float32)
    rewards = torch.zeros(bs, length, dtype=torch.float32)
    rewards[torch.arange(bs), torch.from_numpy(lengths - 1)] = torch.from_numpy(scores)
    return rewards, mask, index


def _binary_batch(seed: int, sizes: list[int], length: int = 5):
    """0/1 outcome rewards, so many groups are all-equal (no signal)."""
    rewards, mask, index = _batch(seed, sizes, length)
    rng = np.random.default_rng(seed + 1)
    rewards = (rewards != 0).float() * torch.from_numpy(
        rng.integers(0, 2, size=rewards.shape).astype(np.float32)
    )
    return rewards, mask, index


RAGGED = [1, 4, 2, 8, 1, 3, 5, 16, 2]
CASES = [
    ("uniform", lambda s: _batch(s, [8] * 12)),
    ("ragged+singletons", lambda s: _batch(s, RAGGED)),
    ("binary ragged", lambda s: _binary_batch(s, RAGGED * 3)),
    ("all singletons", lambda s: _batch(s, [1] * 6)),
]


def _close(ours, theirs, atol=2e-5, rtol=2e-5):
    a, r = ours
    va, vr = theirs
    assert a.shape == va.shape and a.dtype == va.dtype
    torch.testing.assert_close(a, va, atol=atol, rtol=rtol)
    torch.testing.assert_close(r, vr, atol=atol, rtol=rtol)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grpo_matches_verl(name, make, norm, seed):
    rewards, mask, index = make(seed)
    theirs = core_algos.compute_grpo_outcome_advantage(
        rewards.clone(), mask, index, norm_adv_by_std_in_grpo=norm
    )
    ours = gf.compute_grpo_outcome_advantage(rewards, mask, index, norm_adv_by_std_in_grpo=norm)
    _close(ours, theirs)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("norm", [True, False])
def test_grpo_vectorized_matches_verl(name, make, norm):
    rewards, mask, index = make(3)
    theirs = core_algos.compute_grpo_vectorized_outcome_advantage(
        rewards.clone(), mask, index, norm_adv_by_std_in_grpo=norm
    )
    ours = gf.compute_grpo_vectorized_outcome_advantage(
        rewards, mask, index, norm_adv_by_std_in_grpo=norm
    )
    _close(ours, theirs)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("seed", [0, 1])
def test_rloo_matches_verl(name, make, seed):
    rewards, mask, index = make(seed)
    theirs = core_algos.compute_rloo_outcome_advantage(rewards.clone(), mask, index)
    ours = gf.compute_rloo_outcome_advantage(rewards, mask, index)
    _close(ours, theirs)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_rloo_vectorized_matches_verl(name, make):
    rewards, mask, index = make(4)
    theirs = core_algos.compute_rloo_vectorized_outcome_advantage(rewards.clone(), mask, index)
    ours = gf.compute_rloo_vectorized_outcome_advantage(rewards, mask, index)
    _close(ours, theirs)


@pytest.mark.parametrize("name,make", CASES, ids=[c[0] for c in CASES])
def test_reinforce_pp_baseline_matches_verl(name, make):
    rewards, mask, index = make(5)
    theirs = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(
        rewards.clone(), mask, index
    )
    ours = gf.compute_reinforce_plus_plus_baseline_outcome_advantage(rewards, mask, index)
    _close(ours, theirs, atol=1e-4, rtol=1e-4)


@pytest.mark.parametrize("norm", [True, False])
@pytest.mark.parametrize("sizes", [[2] * 10, [4, 2, 8, 3, 5]], ids=["pairs", "ragged"])
def test_grpo_passk_matches_verl(norm, sizes):
    rewards, mask, index = _batch(6, sizes)
    config = {"norm_adv_by_std_in_grpo": norm}
    theirs = core_algos.compute_grpo_passk_outcome_advantage(
        rewards.clone(), mask, index, config=config
    )
    ours = gf.compute_grpo_passk_outcome_advantage(rewards, mask, index, config=config)
    _close(ours, theirs)


def test_grpo_passk_rejects_singletons_like_verl():
    rewards, mask, index = _batch(7, [3, 1, 2])
    with pytest.raises(ValueError):
        core_algos.compute_grpo_passk_outcome_advantage(rewards.clone(), mask, index, config={})
    with pytest.raises(InvalidInputError, match="at least 2 responses per group"):
        gf.compute_grpo_passk_outcome_advantage(rewards, mask, index, config={})


def test_integer_index_and_float64_rewards():
    rewards, mask, _ = _batch(8, [3, 5, 1, 4])
    rewards = rewards.double()
    index = np.repeat(np.array([10, 11, 12, 13]), [3, 5, 1, 4])
    theirs = core_algos.compute_grpo_outcome_advantage(rewards.clone(), mask, index)
    ours = gf.compute_grpo_outcome_advantage(rewards, mask, index)
    _close(ours, theirs, atol=1e-6, rtol=1e-6)


def test_input_is_not_modified():
    rewards, mask, index = _batch(9, RAGGED)
    before = rewards.clone()
    gf.compute_grpo_outcome_advantage(rewards, mask, index)
    gf.compute_reinforce_plus_plus_baseline_outcome_advantage(rewards, mask, index)
    assert torch.equal(rewards, before)


def test_bad_input_raises_clear_errors():
    rewards, mask, index = _batch(10, [2, 3])
    with pytest.raises(InvalidInputError, match="index has 4 entries but there are 5"):
        gf.compute_grpo_outcome_advantage(rewards, mask, index[:4])
    with pytest.raises(InvalidInputError, match="response_length"):
        gf.compute_rloo_outcome_advantage(rewards, mask[:, :3], index)
    with pytest.raises(InvalidInputError, match="index"):
        gf.compute_grpo_outcome_advantage(rewards, mask, None)
    with pytest.raises(InvalidInputError, match="at least 2"):
        gf.compute_reinforce_plus_plus_baseline_outcome_advantage(
            rewards[:1], torch.tensor([[1, 0, 0, 0, 0, 0, 0]]), index[:1]
        )


def test_registered_in_verl_registry():
    assert gf.register_verl_estimators()
    for name in gf.REGISTERED_NAMES:
        assert core_algos.get_adv_estimator_fn(name) is gf.REGISTERED_NAMES[name]
    assert gf.register_verl_estimators()  # idempotent


def test_registered_grpo_reads_config_like_verls_trainer():
    """verl's trainer passes only rewards, mask, index and config to a registered estimator."""
    rewards, mask, index = _batch(11, RAGGED)
    fn = core_algos.get_adv_estimator_fn("grpo_fast_grpo")
    for norm in (True, False):
        config = {"norm_adv_by_std_in_grpo": norm}
        ours = fn(token_level_rewards=rewards, response_mask=mask, index=index, config=config)
        theirs = core_algos.compute_grpo_outcome_advantage(
            rewards.clone(), mask, index, norm_adv_by_std_in_grpo=norm
        )
        _close(ours, theirs)


# --- Reward functions ------------------------------------------------------------------------

# (solution_str, ground_truth) where verl's own string-normalising MATH scorer is a fair
# reference: boxed answers written the way the gold is, or plainly wrong.
MATH_CASES = [
    (r"so the answer is \boxed{\frac{1}{2}}", r"\frac{1}{2}"),
    (r"so the answer is \boxed{\frac{1}{3}}", r"\frac{1}{2}"),
    (r"\boxed{\dfrac{3}{4}}", r"\frac{3}{4}"),
    (r"We find \boxed{12}.", "12"),
    (r"We find \boxed{13}.", "12"),
    (r"\boxed{2\sqrt{2}}", r"2\sqrt{2}"),
    (r"\boxed{(1,2)}", "(1,2)"),
    (r"\boxed{(2,1)}", "(1,2)"),
    (r"\boxed{\text{(C)}}", r"\text{(C)}"),
    (r"\boxed{x^2+1}", "x^2+1"),
    (r"\boxed{-5}", "-5"),
    (r"\boxed{-5}", "5"),
]
GSM8K_CASES = [
    ("Natalia sold 48 clips in April and half as many in May.\n#### 72", "72"),
    ("She earns 12 * 5 = 60 dollars.\n#### 60", "72"),
    ("#### 1000", "1000"),
    ("#### 999", "1000"),
]


def test_compute_score_agrees_with_verls_math_and_gsm8k_scorers():
    from verl.utils.reward_score import gsm8k, math_reward

    for pred, gold in MATH_CASES:
        assert gf.compute_score("lighteval/MATH", pred, gold) == math_reward.compute_score(
            pred, gold
        ), (pred, gold)
    for pred, gold in GSM8K_CASES:
        assert gf.compute_score("openai/gsm8k", pred, gold) == float(
            gsm8k.compute_score(pred, gold)
        ), (pred, gold)
    assert {gf.compute_score("lighteval/MATH", p, g) for p, g in MATH_CASES} == {0.0, 1.0}


def test_compute_score_batch_matches_single_calls_and_lists_of_answers():
    preds = [p for p, _ in MATH_CASES + GSM8K_CASES]
    golds = [g for _, g in MATH_CASES + GSM8K_CASES]
    batch = gf.compute_score_batch(
        data_sources=["x"] * len(preds), solution_strs=preds, ground_truths=golds, extra_infos=None
    )
    assert batch == [gf.compute_score("x", p, g) for p, g in zip(preds, golds, strict=True)]
    # A list of acceptable answers scores 1 when any of them matches.
    out = gf.compute_score_batch(
        data_sources=None,
        solution_strs=[r"\boxed{4}", r"\boxed{5}", r"\boxed{7}"],
        ground_truths=[["3", "4"], ["5"], 7],
    )
    assert out == [1.0, 1.0, 1.0]
    assert gf.compute_score(None, r"\boxed{1}", "") == 0.0  # unusable gold: 0, not NaN


def test_loaded_through_verls_custom_reward_function_config():
    """verl's own loader, both the pkg:// and the file path forms, with reward_kwargs."""
    from omegaconf import OmegaConf
    from verl.trainer.ppo.reward import get_custom_reward_fn

    for path in ("pkg://grpo_fast.integrations.verl", gf.__file__):
        config = OmegaConf.create(
            {
                "reward": {
                    "custom_reward_function": {
                        "path": path,
                        "name": "compute_score",
                        "reward_kwargs": {"rel_tol": 1e-3},
                    }
                }
            }
        )
        fn = get_custom_reward_fn(config)
        assert fn(data_source="x", solution_str=r"\boxed{3.1416}", ground_truth=r"\pi") == 1.0
        assert fn(data_source="x", solution_str=r"\boxed{3.2}", ground_truth=r"\pi") == 0.0
        out = fn(
            data_sources=np.array(["x", "y"], dtype=object),
            solution_strs=[r"\boxed{3.1416}", "#### 2"],
            ground_truths=[r"\pi", "3"],
            extra_infos=[{}, {}],
        )
        assert out == [1.0, 0.0]
    # Loading the file again re-ran the registration without clashing.
    assert (
        core_algos.get_adv_estimator_fn("grpo_fast_grpo") is gf.REGISTERED_NAMES["grpo_fast_grpo"]
    )


def test_compute_score_bad_input():
    with pytest.raises(
        InvalidInputError, match="solution_strs has 2 entries but ground_truths has 1"
    ):
        gf.compute_score_batch(solution_strs=["a", "b"], ground_truths=["1"])
    with pytest.raises(InvalidInputError, match="ground_truths\\[0\\] is dict"):
        gf.compute_score_batch(solution_strs=["a"], ground_truths=[{"x": 1}])
    with pytest.raises(InvalidInputError, match="solution_str must be a str"):
        gf.compute_score("x", None, "1")


def test_compute_score_from_executor_threads():
    """verl's reward loop runs compute_score in run_in_executor threads."""
    from concurrent.futures import ThreadPoolExecutor

    cases = MATH_CASES + GSM8K_CASES
    expected = [gf.compute_score("x", p, g) for p, g in cases]
    with ThreadPoolExecutor(4) as pool:
        got = list(pool.map(lambda pg: gf.compute_score("x", *pg), cases * 4))
    assert got == expected * 4


def test_low_precision_rewards_and_nan():
    rewards, mask, index = _batch(12, [4, 4, 2])
    theirs = core_algos.compute_grpo_outcome_advantage(rewards.clone(), mask, index)
    ours = gf.compute_grpo_outcome_advantage(rewards.to(torch.bfloat16), mask, index)
    assert ours[0].dtype == torch.bfloat16
    # bf16 keeps ~3 significant digits of the rewards themselves.
    torch.testing.assert_close(ours[0].float(), theirs[0], atol=0.05, rtol=0.05)
    # A NaN score is unscorable: advantage 0, and its group is normalised without it.
    scores = torch.tensor([1.0, 0.0, float("nan"), 0.5])
    adv, _ = gf.compute_grpo_outcome_advantage(
        scores[:, None], torch.ones(4, 1), np.array(["a", "a", "a", "b"], dtype=object)
    )
    expected = np.array(
        [
            (1 - 0.5) / (np.std([1, 0], ddof=1) + 1e-6),
            -0.5 / (np.std([1, 0], ddof=1) + 1e-6),
            0,
            0.5 / (1 + 1e-6),
        ]
    )
    np.testing.assert_allclose(adv[:, 0].numpy(), expected, rtol=1e-5)
    for fn in (
        gf.compute_grpo_outcome_advantage,
        gf.compute_rloo_outcome_advantage,
        gf.compute_reinforce_plus_plus_baseline_outcome_advantage,
    ):
        adv, _ = fn(torch.tensor([[float("nan")], [1.0], [2.0]]), torch.ones(3, 1), ["x", "y", "y"])
        assert adv[0, 0] == 0 and not torch.isnan(adv).any()
    # Whitening leaves the unscorable response out: the rest equals verl on the rest alone.
    rewards, mask, index = _batch(13, [3, 1, 4])
    with_nan = torch.cat([rewards, torch.full((1, rewards.shape[1]), float("nan"))])
    ours, _ = gf.compute_reinforce_plus_plus_baseline_outcome_advantage(
        with_nan, torch.cat([mask, torch.ones(1, mask.shape[1], dtype=mask.dtype)]), [*index, "z"]
    )
    theirs, _ = core_algos.compute_reinforce_plus_plus_baseline_outcome_advantage(
        rewards.clone(), mask, index
    )
    torch.testing.assert_close(ours[:-1], theirs, atol=1e-4, rtol=1e-4)
    assert torch.equal(ours[-1], torch.zeros_like(ours[-1]))


# --- verl's own code paths: conventions, plugin, reward loop, trainer ------------------------


def _quiet_import(name: str):
    """Import a verl module whose import warns (missing optional engines, Ray deprecations);
    the suite turns warnings into errors."""
    import importlib
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return importlib.import_module(name)


# (data_source, response, ground truth): answers written as verl's scorer for the source
# reads them, where its string comparison is a fair reference for equality.
CONVENTION_CASES = [
    ("openai/gsm8k", "She sells 16 - 3 - 4 = 9 eggs.\n#### 18", "18"),
    ("openai/gsm8k", "#### 17", "18"),
    ("openai/gsm8k", "So the answer is 72.", "72"),  # no #### line: 0 in verl
    ("openai/gsm8k", r"so \boxed{72}", "72"),
    ("lighteval/MATH", r"so \boxed{\frac{1}{2}}", r"\frac{1}{2}"),
    ("HuggingFaceH4/MATH-500", "The answer is 12.", "12"),  # no box: 0 in verl
    ("HuggingFaceH4/MATH-500", r"\boxed{13}", "12"),
    ("math_dapo", "Let me think.\nAnswer: 34", "34"),
    ("math_dapo", "Answer: 35", "34"),  # wrong: -1 in verl
    ("math_dapo", r"so \boxed{34}", "34"),  # no Answer: line, the box counts
    ("math_dapo", r"\boxed{34}. Answer: 35", "34"),  # Answer: first
    ("math_dapo", "I do not know", "34"),
    ("aime_2024", "Answer: 204", "204"),
    ("math", "Answer: 7", "8"),
    ("openai/gsm8k", "#### 72\n" + "and we check it again. " * 20, "72"),  # verl reads 300 chars
    ("math_dapo", "Answer: 34\n" + "and we check it again. " * 20, "34"),
]


def test_scores_follow_verls_conventions_per_data_source():
    """verl's default_compute_score, per source, against compute_score on the same items."""
    from verl.utils.reward_score import default_compute_score

    batch = gf.compute_score_batch(
        data_sources=[c[0] for c in CONVENTION_CASES],
        solution_strs=[c[1] for c in CONVENTION_CASES],
        ground_truths=[c[2] for c in CONVENTION_CASES],
    )
    for (source, pred, gold), ours_batch in zip(CONVENTION_CASES, batch, strict=True):
        theirs = default_compute_score(source, pred, gold)
        ours = gf.compute_score(source, pred, gold)
        assert isinstance(ours, dict) == isinstance(theirs, dict), (source, pred)
        if isinstance(theirs, dict):
            assert set(ours) == {"score", "acc", "pred"}
            assert (ours["score"], ours["acc"]) == (theirs["score"], theirs["acc"]), (source, pred)
            theirs = theirs["score"]
            ours = ours["score"]
        assert ours == ours_batch == float(theirs), (source, pred, gold)
    assert {s for s in batch} == {-1.0, 0.0, 1.0}


def test_grpo_fast_judgement_is_a_named_option():
    cases = [
        ("openai/gsm8k", "So the answer is 72.", "72"),
        ("HuggingFaceH4/MATH-500", "The answer is 12.", "12"),
        ("math_dapo", "The final answer is $34$.", "34"),
        ("math_dapo", "Answer: 35", "34"),
    ]
    args = ([c[0] for c in cases], [c[1] for c in cases], [c[2] for c in cases])
    assert gf.compute_score_batch(*args) == [0.0, 0.0, -1.0, -1.0]
    # Any answer form grpo-fast extracts; the wrong-answer score stays the source's.
    assert gf.compute_score_batch(*args, judge="grpo_fast") == [1.0, 1.0, 1.0, -1.0]
    with pytest.raises(InvalidInputError, match="judge must be one of"):
        gf.compute_score_batch(*args, judge="lenient")


def test_sources_verl_scores_otherwise_go_to_verls_scorer():
    from verl.utils.reward_score import default_compute_score

    pred, gold = "<answer>Paris</answer>", {"target": ["Paris"]}
    theirs = default_compute_score("searchR1_nq", pred, gold)
    assert gf.compute_score("searchR1_nq", pred, gold) == theirs == 1.0
    assert gf.compute_score_batch(["searchR1_nq"], ["<answer>Rome</answer>"], [gold]) == [0.0]


ALGO_ESTIMATOR_CASES = [
    # (ours, verl's), both as verl's trainer calls them
    ("grpo_fast_grpo", "grpo"),
    ("grpo_fast_grpo_vectorized", "grpo_vectorized"),
    ("grpo_fast_rloo", "rloo"),
    ("grpo_fast_rloo_vectorized", "rloo_vectorized"),
    ("grpo_fast_reinforce_plus_plus_baseline", "reinforce_plus_plus_baseline"),
]


def _algorithm_config(**overrides):
    """The ``algorithm`` section of verl's generated PPO config, as the trainer passes it."""
    import os

    import verl
    from omegaconf import OmegaConf

    path = os.path.join(
        os.path.dirname(verl.__file__), "trainer/config/_generated_ppo_trainer.yaml"
    )
    algo = OmegaConf.load(path).algorithm
    for k, v in overrides.items():
        algo[k] = v
    return algo


def _proto(rewards, mask, index):
    from verl import DataProto

    return DataProto.from_dict(
        tensors={"token_level_rewards": rewards.clone(), "response_mask": mask},
        non_tensors={"uid": np.asarray(index, dtype=object)},
    )


@pytest.mark.parametrize(
    "ours,theirs", ALGO_ESTIMATOR_CASES, ids=[c[1] for c in ALGO_ESTIMATOR_CASES]
)
@pytest.mark.parametrize("norm", [True, False])
def test_verls_compute_advantage_with_our_estimator_names(ours, theirs, norm):
    """ray_trainer.compute_advantage, as verl's trainer calls it, with our name and verl's."""
    ray_trainer = _quiet_import("verl.trainer.ppo.ray_trainer")
    rewards, mask, index = _batch(21, RAGGED)
    cfg = _algorithm_config(norm_adv_by_std_in_grpo=norm)

    def run(name):
        out = ray_trainer.compute_advantage(
            _proto(rewards, mask, index),
            adv_estimator=name,
            norm_adv_by_std_in_grpo=cfg.norm_adv_by_std_in_grpo,
            config=cfg,
        )
        return out.batch["advantages"], out.batch["returns"]

    _close(run(ours), run(theirs), atol=1e-4, rtol=1e-4)


def test_grpo_vectorized_under_verl_ignores_norm_adv_by_std_like_verls():
    """verl's trainer hands grpo_vectorized only the config, which it does not read: it
    divides by the std even with norm_adv_by_std_in_grpo=False; ours does the same."""
    ray_trainer = _quiet_import("verl.trainer.ppo.ray_trainer")
    rewards, mask, index = _batch(22, [4, 4, 3])
    cfg = _algorithm_config(norm_adv_by_std_in_grpo=False)
    out = {}
    for name in ("grpo_vectorized", "grpo_fast_grpo_vectorized", "grpo_fast_grpo"):
        data = ray_trainer.compute_advantage(
            _proto(rewards, mask, index),
            adv_estimator=name,
            norm_adv_by_std_in_grpo=False,
            config=cfg,
        )
        out[name] = data.batch["advantages"]
    torch.testing.assert_close(out["grpo_fast_grpo_vectorized"], out["grpo_vectorized"])
    dr_grpo, _ = core_algos.compute_grpo_outcome_advantage(
        rewards.clone(), mask, index, norm_adv_by_std_in_grpo=False
    )
    torch.testing.assert_close(out["grpo_fast_grpo"], dr_grpo)
    assert not torch.allclose(out["grpo_vectorized"], dr_grpo)


def _load_verl_v1_utils(monkeypatch):
    """verl's v1 trainer utils, from its file: the v1 package's __init__ and its
    replay_buffer import TransferQueue (not installed here), so stand-ins are put in
    their place; utils.py only takes a constant from replay_buffer."""
    import importlib.util
    import os
    import sys
    import types

    import verl

    _quiet_import("verl.trainer.ppo.ray_trainer")
    root = os.path.join(os.path.dirname(verl.__file__), "trainer/ppo/v1")
    v1 = types.ModuleType("verl.trainer.ppo.v1")
    v1.__path__ = [root]
    replay = types.ModuleType("verl.trainer.ppo.v1.replay_buffer")
    replay.DAPO_FILTERED_REWARD_COUNTS_KEY = "dapo_filtered_reward_counts"
    monkeypatch.setitem(sys.modules, "verl.trainer.ppo.v1", v1)
    monkeypatch.setitem(sys.modules, "verl.trainer.ppo.v1.replay_buffer", replay)
    spec = importlib.util.spec_from_file_location(
        "verl.trainer.ppo.v1.utils", os.path.join(root, "utils.py")
    )
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "verl.trainer.ppo.v1.utils", module)
    spec.loader.exec_module(module)
    return module


def test_v1_trainer_several_outputs_per_session(monkeypatch):
    """verl's v1 trainer special-cases the name ``grpo``: with several outputs per agent
    session, only each session's final output enters the group and its advantage is copied
    to the session's other outputs. A registered estimator gets no session keys, so
    ``grpo_fast_grpo`` groups every output (README: the difference and its reason)."""
    v1 = _load_verl_v1_utils(monkeypatch)
    cfg = _algorithm_config()
    rng = np.random.default_rng(23)
    # 3 prompts x 4 sessions; session s of prompt p has 1 + (s % 2) outputs.
    keys, uids = [], []
    for p in range(3):
        for s in range(4):
            for k in range(1 + s % 2):
                keys.append(f"uid{p}_{s}_{k}")
                uids.append(f"uid{p}")
    n, length = len(keys), 5
    rewards = torch.zeros(n, length)
    rewards[:, -1] = torch.from_numpy(rng.integers(0, 2, n).astype(np.float32))
    mask = torch.ones(n, length, dtype=torch.int64)

    def run(name, rows):
        data = _proto(rewards[rows], mask[rows], np.asarray(uids)[rows])
        out = v1.compute_advantage_for_multi_trajectories(
            data,
            [keys[i] for i in rows],
            adv_estimator=name,
            norm_adv_by_std_in_grpo=True,
            config=cfg,
        )
        return out.batch["advantages"]

    single = [i for i, k in enumerate(keys) if k.endswith("_0") and int(k.split("_")[1]) % 2 == 0]
    torch.testing.assert_close(run("grpo_fast_grpo", single), run("grpo", single))
    every = list(range(n))
    theirs, ours = run("grpo", every), run("grpo_fast_grpo", every)
    assert not torch.allclose(theirs, ours)
    # verl's numbers are ours on the final outputs, copied over each session.
    final = [i for i, k in enumerate(keys) if int(k.split("_")[2]) == int(k.split("_")[1]) % 2]
    on_final = run("grpo_fast_grpo", final)
    session_of_final = {"_".join(keys[i].split("_")[:2]): j for j, i in enumerate(final)}
    expected = torch.stack([on_final[session_of_final["_".join(k.split("_")[:2])]] for k in keys])
    torch.testing.assert_close(theirs, expected)


PYPROJECT_PLUGIN_PROBE = """
import json, sys, warnings
warnings.simplefilter("ignore")
import numpy as np, torch
import verl  # nothing else: the plugin must register in verl's own import
from verl.trainer.ppo import core_algos
from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
out = {"gf_imported": "grpo_fast.integrations.verl" in sys.modules}
try:
    fn = core_algos.get_adv_estimator_fn("grpo_fast_grpo")
    r = torch.zeros(4, 2); r[:, -1] = torch.tensor([1.0, 0.0, 0.0, 2.0])
    a, _ = fn(token_level_rewards=r, response_mask=torch.ones(4, 2),
              index=np.array(["a", "a", "a", "b"], dtype=object), config={})
    v, _ = core_algos.compute_grpo_outcome_advantage(
        r, torch.ones(4, 2), np.array(["a", "a", "a", "b"], dtype=object))
    out["max_abs_diff"] = float((a - v).abs().max())
except ValueError as e:
    out["estimator_error"] = str(e)
try:
    out["manager"] = get_reward_manager_cls("grpo_fast").__name__
except ValueError as e:
    out["manager_error"] = str(e)
try:
    from omegaconf import OmegaConf
    cfg = OmegaConf.create({"clip_ratio": 0.2, "clip_ratio_low": 0.2, "clip_ratio_high": 0.28,
                            "clip_ratio_c": 3.0, "global_batch_info": {}})
    lp, adv = torch.tensor([[-1.0, -2.0, -0.5]]), torch.tensor([[1.0, -1.0, 1.0]])
    old = lp + torch.tensor([[-0.4, -0.3, 0.1]])
    args = (old, lp, adv, torch.ones(1, 3), "token-mean", cfg)
    a, _ = core_algos.get_policy_loss_fn("grpo_fast_vanilla")(*args)
    v, _ = core_algos.get_policy_loss_fn("vanilla")(*args)
    out["loss_diff"] = float((a - v).abs())
except ValueError as e:
    out["loss_error"] = str(e)
print("RESULT " + json.dumps(out))
"""


def _run_probe(tmp_path, env_extra, extra_path=None):
    import json
    import os
    import subprocess
    import sys

    import grpo_fast

    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_USE_EXTERNAL")}
    src = os.path.dirname(os.path.dirname(grpo_fast.__file__))
    env["PYTHONPATH"] = os.pathsep.join([src] + ([str(extra_path)] if extra_path else []))
    env.update(env_extra)
    proc = subprocess.run(
        [sys.executable, "-c", PYPROJECT_PLUGIN_PROBE],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and line, proc.stderr[-3000:]
    return json.loads(line[-1][len("RESULT ") :])


def _pyproject_plugins():
    import os

    tomllib = pytest.importorskip("tomllib")
    path = os.path.join(os.path.dirname(__file__), "..", "pyproject.toml")
    with open(path, "rb") as f:
        project = tomllib.load(f)["project"]
    return project["entry-points"]["verl.plugins"]


def test_pyproject_plugin_entry_point_registers_in_a_fresh_verl_process(tmp_path):
    """The ``verl.plugins`` table of pyproject.toml, as an install writes it
    (``*.dist-info/entry_points.txt``), in a process that only imports verl."""
    plugins = _pyproject_plugins()
    assert plugins == {"grpo_fast": "grpo_fast.integrations.verl.plugin"}
    dist = tmp_path / "site" / "grpo_fast_plugin_probe-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: grpo-fast-plugin-probe\nVersion: 0\n"
    )
    lines = "".join(f"{k} = {v}\n" for k, v in plugins.items())
    (dist / "entry_points.txt").write_text("[verl.plugins]\n" + lines)
    out = _run_probe(tmp_path, {}, tmp_path / "site")
    assert out["gf_imported"] and out["manager"] == "GrpoFastRewardManager", out
    assert out["max_abs_diff"] < 1e-6 and out["loss_diff"] < 1e-7, out
    # The control: with verl's plugin discovery off, the driver does not know the name.
    off = _run_probe(tmp_path, {"VERL_USE_EXTERNAL_PLUGINS": "none"}, tmp_path / "site")
    assert "Unknown advantage estimator" in off["estimator_error"], off
    assert "Unknown reward manager" in off["manager_error"], off
    assert "Unsupported loss mode: grpo_fast_vanilla" in off["loss_error"], off


def test_verl_use_external_modules_registers_in_a_fresh_process(tmp_path):
    """The documented alternative to the entry point (no install needed)."""
    out = _run_probe(
        tmp_path,
        {
            "VERL_USE_EXTERNAL_PLUGINS": "none",
            "VERL_USE_EXTERNAL_MODULES": "grpo_fast.integrations.verl",
        },
    )
    assert out["gf_imported"] and out["manager"] == "GrpoFastRewardManager", out
    assert out["max_abs_diff"] < 1e-6 and out["loss_diff"] < 1e-7, out


def test_installed_grpo_fast_declares_the_plugin(tmp_path):
    """The installed distribution: ``make develop`` (maturin develop) writes pyproject's
    entry points into the venv's grpo_fast-*.dist-info; until it reruns after the entry
    point was added, the installed metadata lacks it and this test is skipped."""
    from importlib.metadata import PackageNotFoundError, distribution

    try:
        dist = distribution("grpo-fast")
    except PackageNotFoundError:
        pytest.skip("grpo-fast is not installed (PYTHONPATH only)")
    eps = [ep for ep in dist.entry_points if ep.group == "verl.plugins"]
    if not eps:
        pytest.skip(
            "installed grpo-fast metadata predates its verl.plugins entry point: rerun make develop"
        )
    assert {ep.name: ep.value for ep in eps} == _pyproject_plugins()
    out = _run_probe(tmp_path, {})
    assert out["gf_imported"] and out["manager"] == "GrpoFastRewardManager", out
    assert out["loss_diff"] < 1e-7, out


# --- verl's reward loop: RewardLoopWorker -> load_reward_manager -> the managers -------------


def _byte_tokenizer():
    """A byte-level tokenizer (decoding gives back the exact text), built here: no download."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    tok = Tokenizer(models.BPE(vocab={c: i for i, c in enumerate(alphabet)}, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", eos_token="<|im_end|>")


def _reward_batch(tokenizer, items, prompt="Q: solve it.\n"):
    """A DataProto as verl's rollout hands it to the reward loop (left-padded prompts,
    right-padded responses ending in EOS)."""
    from verl import DataProto

    p_ids = tokenizer(prompt, add_special_tokens=False)["input_ids"]
    r_ids = [
        tokenizer(r, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
        for _, r, _ in items
    ]
    width = max(map(len, r_ids)) + 3
    pad = tokenizer.pad_token_id
    responses = torch.tensor([r + [pad] * (width - len(r)) for r in r_ids])
    prompts = torch.tensor([p_ids] * len(items))
    attention = torch.tensor(
        [[1] * len(p_ids) + [1] * len(r) + [0] * (width - len(r)) for r in r_ids]
    )
    return DataProto.from_dict(
        tensors={"prompts": prompts, "responses": responses, "attention_mask": attention},
        non_tensors={
            "data_source": np.array([s for s, _, _ in items], dtype=object),
            "reward_model": np.array([{"ground_truth": g} for _, _, g in items], dtype=object),
            "extra_info": np.array([{"index": i} for i in range(len(items))], dtype=object),
        },
    )


def _ppo_config(tokenizer_dir, manager="naive", custom_path=None, reward_kwargs=None):
    """verl's generated PPO trainer config, with the fields the reward loop reads set."""
    import os

    import verl
    from omegaconf import OmegaConf

    path = os.path.join(
        os.path.dirname(verl.__file__), "trainer/config/_generated_ppo_trainer.yaml"
    )
    config = OmegaConf.load(path)
    config.actor_rollout_ref.model.path = str(tokenizer_dir)
    config.reward.reward_manager.name = manager
    config.reward.custom_reward_function.path = custom_path
    if reward_kwargs is not None:
        config.reward.custom_reward_function.reward_kwargs = reward_kwargs
    return config


def _worker_scores(config, data):
    """RewardLoopWorker.compute_score_batch (what RewardLoopManager runs in each Ray actor),
    then the rm_scores tensor as RewardLoopManager assembles it."""
    import asyncio
    import warnings

    reward_loop = _quiet_import("verl.experimental.reward_loop.reward_loop")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # Importing gf registered the manager, unless verl's reward loop warned on the
        # way in under this suite's warnings-as-errors: register again, quietly.
        assert gf.register_verl_reward_manager()
        worker = reward_loop.RewardLoopWorker(config)
    loop = worker.loop
    asyncio.set_event_loop(loop)
    try:
        outputs = loop.run_until_complete(worker.compute_score_batch(data))
    finally:
        loop.run_until_complete(loop.shutdown_default_executor())
        loop.close()
        asyncio.set_event_loop(None)
    scores = [o["reward_score"] for o in outputs]
    rm = type(worker.reward_manager).assemble_rm_scores(data, scores)
    return worker.reward_manager, scores, rm, outputs


def test_reward_loop_worker_with_grpo_fast_manager_matches_naive(tmp_path):
    """Same batch, verl's RewardLoopWorker twice: the naive manager with verl's default
    scorer, and reward_manager.name=grpo_fast."""
    tokenizer = _byte_tokenizer()
    tokenizer.save_pretrained(tmp_path)
    items = CONVENTION_CASES * 3
    naive, naive_scores, naive_rm, _ = _worker_scores(
        _ppo_config(tmp_path), _reward_batch(tokenizer, items)
    )
    assert type(naive).__name__ == "NaiveRewardManager"
    ours, our_scores, our_rm, outputs = _worker_scores(
        _ppo_config(tmp_path, manager="grpo_fast"), _reward_batch(tokenizer, items)
    )
    assert type(ours).__name__ == "GrpoFastRewardManager"
    assert our_scores == [float(s) for s in naive_scores]
    torch.testing.assert_close(our_rm, naive_rm)
    assert {o["reward_extra_info"]["acc"] for o in outputs} == {0.0, 1.0}
    assert set(our_scores) == {-1.0, 0.0, 1.0}


def test_grpo_fast_manager_scores_each_batch_in_one_call(tmp_path, monkeypatch):
    tokenizer = _byte_tokenizer()
    tokenizer.save_pretrained(tmp_path)
    from grpo_fast.integrations.verl import reward_manager

    calls = []
    real = reward_manager.score_items

    def counting(*args, **kwargs):
        calls.append(len(args[1]))
        return real(*args, **kwargs)

    monkeypatch.setattr(reward_manager, "score_items", counting)
    items = CONVENTION_CASES * 5
    _worker_scores(_ppo_config(tmp_path, manager="grpo_fast"), _reward_batch(tokenizer, items))
    assert calls == [len(items)]


def test_grpo_fast_manager_options_from_verls_custom_reward_function(tmp_path):
    """judge=grpo_fast through reward.custom_reward_function.reward_kwargs; a scorer that is
    not grpo-fast's is refused, not silently skipped."""
    tokenizer = _byte_tokenizer()
    tokenizer.save_pretrained(tmp_path)
    items = [("openai/gsm8k", "So the answer is 72.", "72"), ("openai/gsm8k", "#### 72", "72")]
    cfg = _ppo_config(
        tmp_path,
        manager="grpo_fast",
        custom_path="pkg://grpo_fast.integrations.verl",
        reward_kwargs={"judge": "grpo_fast"},
    )
    _, scores, _, _ = _worker_scores(cfg, _reward_batch(tokenizer, items))
    assert scores == [1.0, 1.0]
    cfg = _ppo_config(tmp_path, manager="grpo_fast", custom_path=gf.__file__)
    _, scores, _, _ = _worker_scores(cfg, _reward_batch(tokenizer, items))
    assert scores == [0.0, 1.0]
    other = tmp_path / "my_reward.py"
    other.write_text(
        "def compute_score(data_source, solution_str, ground_truth, extra_info=None):\n"
        "    return 0.5\n"
    )
    cfg = _ppo_config(tmp_path, manager="grpo_fast", custom_path=str(other))
    with pytest.raises(InvalidInputError, match="scores with grpo-fast"):
        _worker_scores(cfg, _reward_batch(tokenizer, items))
    # The same custom function with verl's naive manager: verl's own route, untouched.
    cfg = _ppo_config(tmp_path, manager="naive", custom_path="pkg://grpo_fast.integrations.verl")
    _, scores, _, _ = _worker_scores(cfg, _reward_batch(tokenizer, items))
    assert scores == [0.0, 1.0]
