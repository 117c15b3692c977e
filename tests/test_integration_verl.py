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
