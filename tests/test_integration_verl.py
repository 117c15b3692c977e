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


def test_batch_reward_manager_end_to_end():
    """verl's BatchRewardManager decodes the responses and calls compute_score_batch."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast
    from verl import DataProto
    from verl.workers.reward_manager.batch import BatchRewardManager

    words = ["<pad>", "What", "is", "6*7", "?", "\\boxed{42}", "\\boxed{41}", "####", "42"]
    tok = Tokenizer(models.WordLevel(vocab={w: i for i, w in enumerate(words)}, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>")

    def ids(text, width):
        t = [words.index(w) for w in text.split()]
        return t + [0] * (width - len(t)), [1] * len(t) + [0] * (width - len(t))

    prompts = ["What is 6*7 ?"] * 4
    responses = ["\\boxed{42}", "\\boxed{41}", "#### 42", "What is"]
    p = [ids(x, 4) for x in prompts]
    r = [ids(x, 3) for x in responses]
    data = DataProto.from_dict(
        tensors={
            "prompts": torch.tensor([a for a, _ in p]),
            "responses": torch.tensor([a for a, _ in r]),
            "attention_mask": torch.tensor(
                [m1 + m2 for (_, m1), (_, m2) in zip(p, r, strict=True)]
            ),
        },
        non_tensors={
            "data_source": np.array(["demo"] * 4, dtype=object),
            "reward_model": np.array([{"ground_truth": "42"}] * 4, dtype=object),
            "extra_info": np.array([{} for _ in range(4)], dtype=object),
        },
    )
    manager = BatchRewardManager(tokenizer, num_examine=0, compute_score=gf.compute_score_batch)
    reward_tensor = manager(data)
    lengths = [len(x.split()) for x in responses]
    expected = torch.zeros(4, 3)
    for i, (n, v) in enumerate(zip(lengths, [1.0, 0.0, 1.0, 0.0], strict=True)):
        expected[i, n - 1] = v
    torch.testing.assert_close(reward_tensor, expected)


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
