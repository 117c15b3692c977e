"""ReMax, OPO and GPG: grpo_fast.compute_advantages against float64 numpy written
from the papers, and the verl drop-ins against verl's own estimators."""

from __future__ import annotations

import uuid

import numpy as np
import pytest

import grpo_fast
from grpo_fast.errors import InvalidInputError
from grpo_fast.names import ESTIMATORS


def batch(seed, sizes, *, binary=False, nan=0.0, shuffle=True):
    rng = np.random.default_rng(seed)
    ids = np.repeat(np.arange(len(sizes)), sizes)
    if shuffle:
        ids = ids[rng.permutation(len(ids))]
    n = len(ids)
    r = rng.integers(0, 2, n).astype(np.float64) if binary else rng.uniform(-1, 2, n)
    r[rng.random(n) < nan] = np.nan
    lengths = rng.integers(0, 30, n).astype(np.float64)
    return r, ids, lengths


def groups_of(ids):
    return {g: np.flatnonzero(ids == g) for g in np.unique(ids)}


def has_signal(x):
    x = x[~np.isnan(x)]
    return len(x) >= 2 and x.min() < x.max()


def ref_remax(r, ids, b):
    adv = np.where(np.isnan(r - b), 0.0, r - b)
    keep = np.zeros(len(r), bool)
    without = 0
    for rows in groups_of(ids).values():
        d = r[rows] - b[rows]
        signal = np.any((d != 0) & ~np.isnan(d))
        keep[rows] = signal & ~np.isnan(d)
        without += not signal
    return adv, keep, without / len(groups_of(ids))


def ref_opo(r, ids, lengths):
    adv = np.zeros(len(r))
    for rows in groups_of(ids).values():
        x, w = r[rows], lengths[rows]
        if not has_signal(x):
            continue
        ok = ~np.isnan(x)
        base = (w[ok] * x[ok]).sum() / w[ok].sum() if w[ok].sum() > 0 else x[ok].mean()
        adv[rows[ok]] = x[ok] - base
    return adv


def ref_gpg(r, ids):
    """GPG: (r - mean_g) * B / (B - M), B scorable rollouts, M those in groups without signal."""
    adv = np.zeros(len(r))
    scorable = (~np.isnan(r)).sum()
    no_signal = 0
    for rows in groups_of(ids).values():
        x = r[rows]
        ok = ~np.isnan(x)
        if has_signal(x):
            adv[rows[ok]] = x[ok] - x[ok].mean()
        else:
            no_signal += ok.sum()
    return adv * (scorable / (scorable - no_signal) if scorable > no_signal else 0.0)


SIZES = [[8] * 10, [1, 4, 2, 8, 1, 3, 5, 16, 2], [1] * 5, [3]]


def test_names_come_from_the_rust_enum():
    assert ESTIMATORS[-3:] == ("remax", "opo", "gpg")


@pytest.mark.parametrize("sizes", SIZES)
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_against_float64_references(sizes, binary, seed, dtype):
    r, ids, lengths = batch(seed, sizes, binary=binary, nan=0.1)
    r = r.astype(dtype)
    rng = np.random.default_rng(seed + 7)
    b = rng.integers(0, 2, len(r)).astype(np.float64) if binary else rng.uniform(-1, 2, len(r))
    b[rng.random(len(r)) < 0.1] = np.nan
    x = r.astype(np.float64)
    tol = dict(rtol=1e-6, atol=1e-6) if dtype == np.float32 else dict(rtol=1e-6, atol=1e-7)

    out = grpo_fast.compute_advantages(r, ids, estimator="remax", baselines=b)
    adv, keep, frac = ref_remax(x, ids, b)
    np.testing.assert_allclose(out.advantages, adv, **tol)
    np.testing.assert_array_equal(out.keep, keep)
    assert out.frac_zero_std == pytest.approx(frac)

    out = grpo_fast.compute_advantages(r, ids, estimator="opo", lengths=lengths)
    np.testing.assert_allclose(out.advantages, ref_opo(x, ids, lengths), **tol)
    out = grpo_fast.compute_advantages(r, ids, estimator="gpg")
    np.testing.assert_allclose(out.advantages, ref_gpg(x, ids), **tol)
    # The group statistics are those of the group mean, as for every estimator.
    plain = grpo_fast.compute_advantages(r, ids, estimator="grpo", scale="none")
    np.testing.assert_array_equal(out.keep, plain.keep)
    np.testing.assert_allclose(out.mean, plain.mean)
    assert out.frac_zero_std == plain.frac_zero_std


def test_opo_with_equal_lengths_is_dr_grpo_and_gpg_without_dead_groups_too():
    r, ids, _ = batch(3, [6] * 5)
    plain = grpo_fast.compute_advantages(r, ids, estimator="grpo", scale="none").advantages
    opo = grpo_fast.compute_advantages(r, ids, estimator="opo", lengths=np.full(len(r), 7.0))
    np.testing.assert_allclose(opo.advantages, plain, rtol=1e-6, atol=1e-7)
    gpg = grpo_fast.compute_advantages(r, ids, estimator="gpg")
    np.testing.assert_allclose(gpg.advantages, plain, rtol=1e-6, atol=1e-7)


def test_remax_and_opo_need_their_inputs_and_refuse_others():
    r, ids = [1.0, 0.0], [0, 0]
    cases = [
        (dict(estimator="remax"), "needs baselines"),
        (dict(estimator="opo"), "needs lengths"),
        (dict(estimator="grpo", baselines=[0, 0]), "used by estimator 'remax' only"),
        (dict(estimator="remax", lengths=[1, 1], baselines=[0, 0]), "'opo' only"),
        (dict(estimator="remax", baselines=[0.0]), "baselines has 1 entries but rewards has 2"),
        (dict(estimator="remax", baselines=[0.0, np.inf]), r"baselines\[1\] is inf"),
        (dict(estimator="opo", lengths=[1.0, -2.0]), r"lengths\[1\] is -2"),
        (dict(estimator="opo", lengths=[1.0, np.nan]), r"lengths\[1\] is NaN"),
        (dict(estimator="opo", lengths=["a", 1]), "lengths must hold numbers"),
    ]
    for kwargs, message in cases:
        with pytest.raises(InvalidInputError, match=message):
            grpo_fast.compute_advantages(r, ids, **kwargs)


# --- verl ------------------------------------------------------------------------------

torch = pytest.importorskip("torch")
core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

from grpo_fast.integrations import verl as gf  # noqa: E402


def verl_batch(seed, sizes, length=7, binary=False):
    """Outcome reward on the last valid token, uuid-string index, as verl's trainer hands them."""
    rng = np.random.default_rng(seed)
    uids = [str(uuid.UUID(int=int(rng.integers(0, 2**63)))) for _ in sizes]
    index = np.array([u for u, n in zip(uids, sizes, strict=True) for _ in range(n)], dtype=object)
    index = index[rng.permutation(len(index))]
    bs = len(index)
    lengths = rng.integers(1, length + 1, size=bs)
    mask = torch.from_numpy((np.arange(length)[None, :] < lengths[:, None]).astype(np.int64))
    if binary:
        scores = rng.integers(0, 2, size=bs).astype(np.float32)
    else:
        scores = rng.uniform(-1.0, 2.0, size=bs).astype(np.float32)
    rewards = torch.zeros(bs, length, dtype=torch.float32)
    rewards[torch.arange(bs), torch.from_numpy(lengths - 1)] = torch.from_numpy(scores)
    return rewards, mask, index


VERL_CASES = [[8] * 6, [1, 4, 2, 8, 1, 3, 5, 16, 2], [1] * 4]


def close(ours, theirs):
    for a, b in zip(ours, theirs, strict=True):
        assert a.shape == b.shape and a.dtype == b.dtype
        torch.testing.assert_close(a, b, atol=2e-5, rtol=2e-5)


@pytest.mark.parametrize("sizes", VERL_CASES)
@pytest.mark.parametrize("binary", [False, True])
def test_remax_matches_verl(sizes, binary):
    rewards, mask, index = verl_batch(1, sizes, binary=binary)
    rng = np.random.default_rng(2)
    base = torch.from_numpy(rng.integers(0, 2, len(index)).astype(np.float32))
    theirs = core_algos.compute_remax_outcome_advantage(rewards.clone(), base, mask)
    ours = gf.compute_remax_outcome_advantage(rewards.clone(), base, mask)
    close(ours, theirs)
    assert ours[0].abs().max() > 0.5
    # Registered: verl's trainer calls it with keywords, and the index.
    fn = core_algos.get_adv_estimator_fn("grpo_fast_remax")
    again = fn(token_level_rewards=rewards, response_mask=mask, reward_baselines=base, index=index)
    close(again, theirs)


def test_remax_token_returns_like_verl():
    # Rewards on several tokens (not only an outcome): verl's per-token returns.
    g = torch.Generator().manual_seed(3)
    rewards = torch.randn(5, 6, generator=g)
    mask = (torch.arange(6)[None, :] < torch.tensor([6, 3, 1, 5, 4])[:, None]).long()
    base = torch.randn(5, generator=g)
    close(
        gf.compute_remax_outcome_advantage(rewards, base, mask),
        core_algos.compute_remax_outcome_advantage(rewards, base, mask),
    )


@pytest.mark.parametrize("sizes", VERL_CASES)
@pytest.mark.parametrize("binary", [False, True])
def test_opo_matches_verl(sizes, binary):
    rewards, mask, index = verl_batch(4, sizes, binary=binary)
    theirs = core_algos.compute_opo_outcome_advantage(rewards.clone(), mask, index)
    close(gf.compute_opo_outcome_advantage(rewards.clone(), mask, index), theirs)
    fn = core_algos.get_adv_estimator_fn("grpo_fast_opo")
    close(fn(token_level_rewards=rewards, response_mask=mask, index=index, config=None), theirs)


@pytest.mark.parametrize("sizes", VERL_CASES)
@pytest.mark.parametrize("binary", [False, True])
@pytest.mark.parametrize("f_norm", [1.0, 2.5])
def test_gpg_matches_verl(sizes, binary, f_norm):
    rewards, mask, index = verl_batch(5, sizes, binary=binary)
    theirs = core_algos.compute_gpg_outcome_advantage(rewards.clone(), mask, index, f_norm=f_norm)
    close(gf.compute_gpg_outcome_advantage(rewards.clone(), mask, index, f_norm=f_norm), theirs)


def test_verl_drop_ins_say_what_is_missing():
    rewards, mask, index = verl_batch(6, [4, 4])
    fn = core_algos.get_adv_estimator_fn("grpo_fast_remax")
    with pytest.raises(InvalidInputError, match="adv_estimator=remax"):
        fn(token_level_rewards=rewards, response_mask=mask, index=index, config=None)
    with pytest.raises(InvalidInputError, match="reward_baselines has 3 entries"):
        gf.compute_remax_outcome_advantage(rewards, torch.zeros(3), mask)
    with pytest.raises(InvalidInputError, match="index"):
        gf.compute_opo_outcome_advantage(rewards, mask, None)
