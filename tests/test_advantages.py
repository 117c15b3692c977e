"""compute_advantages and group against plain numpy references written here."""

from __future__ import annotations

import copy
import decimal
import json
import multiprocessing
import os
import pickle
import subprocess
import sys
import uuid

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_fast
from grpo_fast import AdvantageResult, InvalidInputError, compute_advantages, group

# ---------------------------------------------------------------- references


def ref_groups(ids):
    """First-appearance group index, by a plain dict."""
    first: dict = {}
    index = np.array([first.setdefault(i, len(first)) for i in ids], dtype=np.int64)
    return index, len(first)


def ref_advantages(
    rewards, ids, estimator="grpo", scale="group", eps=1e-6, unbiased=True, threshold=1.0
):
    r = np.asarray(rewards, dtype=np.float64)
    index, ng = ref_groups(list(ids))
    ddof = 1 if unbiased else 0
    valid = ~np.isnan(r)
    adv = np.zeros(len(r))
    mean = np.full(ng, np.nan)
    std = np.zeros(ng)
    solve = np.full(ng, np.nan)
    signal = np.zeros(ng, dtype=bool)
    by_group = np.split(
        np.argsort(index, kind="stable"), np.cumsum(np.bincount(index, minlength=ng))[:-1]
    )
    members = [m[valid[m]] for m in by_group] if ng else []
    for g, m in enumerate(members):
        x = r[m]
        if len(x):
            mean[g] = x.mean()
            solve[g] = np.mean(x >= threshold)
        if len(x) >= 2:
            std[g] = x.std(ddof=ddof)
        signal[g] = len(x) >= 2 and x.min() < x.max()
    vr = r[valid]
    batch_std = vr.std(ddof=ddof) if len(vr) >= 2 else 0.0
    centred = np.zeros(len(r))
    for g, m in enumerate(members):
        if len(m):
            centred[m] = r[m] - mean[g]
    whiten_std = centred[valid].std(ddof=ddof) if valid.sum() >= 2 else 0.0
    for g, m in enumerate(members):
        if not signal[g]:
            continue
        x = r[m]
        if estimator == "grpo":
            div = {"group": std[g] + eps, "batch": batch_std + eps, "none": 1.0}[scale]
            adv[m] = (x - mean[g]) / div
        elif estimator == "rloo":
            adv[m] = x - (x.sum() - x) / (len(x) - 1)
        elif estimator == "reinforce_pp_baseline":
            c = centred[m]
            adv[m] = (c - centred[valid].mean()) / (whiten_std + eps)
        elif estimator == "grpo_passk":
            order = np.argsort(-x, kind="stable")
            gap = x[order[0]] - x[order[1]]
            div = {"group": std[g] + eps, "batch": batch_std + eps, "none": 1.0}[scale]
            if gap > 0:
                adv[m[order[0]]] = gap / div
    keep = valid & signal[index]
    return adv, keep, mean, std, solve, 1.0 - signal.mean() if ng else 0.0


def check(rewards, ids, **kw):
    out = compute_advantages(rewards, ids, **kw)
    ref_kw = {k: v for k, v in kw.items() if k != "success_threshold"}
    if "success_threshold" in kw:
        ref_kw["threshold"] = kw["success_threshold"]
    adv, keep, mean, std, solve, frac = ref_advantages(rewards, ids, **ref_kw)
    assert out.advantages.dtype == np.float32
    assert out.advantages.shape == (len(rewards),)
    np.testing.assert_allclose(out.advantages, adv, rtol=2e-5, atol=2e-5)
    np.testing.assert_array_equal(out.keep, keep)
    np.testing.assert_allclose(out.mean, mean, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out.std, std, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(out.solve_rate, solve)
    assert out.frac_zero_std == pytest.approx(frac)
    return out


# ---------------------------------------------------------------- properties

OPTIONS = [
    {"estimator": "grpo", "scale": "group"},
    {"estimator": "grpo", "scale": "batch"},
    {"estimator": "grpo", "scale": "none"},
    {"estimator": "grpo", "scale": "group", "unbiased": False, "eps": 1e-4},
    {"estimator": "rloo"},
    {"estimator": "reinforce_pp_baseline"},
    {"estimator": "grpo_passk", "scale": "group"},
    {"estimator": "grpo_passk", "scale": "none"},
]


@st.composite
def batches(draw):
    """Ragged groups, shuffled string or int ids, rewards with ties and NaNs."""
    sizes = draw(st.lists(st.integers(1, 9), min_size=1, max_size=12))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    kind = draw(st.sampled_from(["uuid", "int", "numpy-int", "numpy-str", "object"]))
    labels = [uuid.UUID(int=int(rng.integers(0, 2**63))).hex for _ in sizes]
    ids = [labels[g] for g, s in enumerate(sizes) for _ in range(s)]
    perm = rng.permutation(len(ids)) if draw(st.booleans()) else np.arange(len(ids))
    ids = [ids[i] for i in perm]
    n = len(ids)
    pool = draw(st.sampled_from(["binary", "partial", "continuous"]))
    if pool == "binary":
        rewards = rng.integers(0, 2, n).astype(np.float64)
    elif pool == "partial":
        rewards = rng.integers(0, 5, n) / 4.0
    else:
        rewards = rng.normal(size=n) * 10
    if draw(st.booleans()):
        rewards[rng.random(n) < 0.15] = np.nan
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rewards = rewards.astype(dtype)
    if kind == "int":
        as_int = dict(zip(labels, (rng.permutation(len(labels)) * 7 - 20).tolist(), strict=True))
        ids = [as_int[i] for i in ids]
    elif kind == "numpy-int":
        ids = np.array([labels.index(i) * 3 + 1 for i in ids], dtype=np.int32)
    elif kind == "numpy-str":
        ids = np.array(ids)
    elif kind == "object":
        ids = np.array(ids, dtype=object)
    return rewards, ids


@pytest.mark.parametrize("opts", OPTIONS, ids=lambda o: "-".join(map(str, o.values())))
@given(batch=batches())
@settings(max_examples=60, deadline=None)
def test_matches_numpy_reference(opts, batch):
    rewards, ids = batch
    check(rewards, ids, **opts)


@given(batch=batches(), shift=st.floats(-100, 100), seed=st.integers(0, 1000))
@settings(max_examples=60, deadline=None)
def test_shifting_a_group_changes_nothing(batch, shift, seed):
    rewards, ids = batch
    rewards = rewards.astype(np.float64)
    base = compute_advantages(rewards, ids).advantages
    # Shift every reward of one group by a constant: GRPO advantages are unchanged.
    index, ng = ref_groups(list(ids))
    g = seed % ng
    shifted = rewards.copy()
    shifted[index == g] += round(shift, 3)
    np.testing.assert_allclose(compute_advantages(shifted, ids).advantages, base, atol=1e-4)


@given(batch=batches(), seed=st.integers(0, 1000))
@settings(max_examples=40, deadline=None)
def test_permutation_equivariant(batch, seed):
    rewards, ids = batch
    perm = np.random.default_rng(seed).permutation(len(rewards))
    ids_list = list(ids)
    out = compute_advantages(rewards, ids)
    permuted = compute_advantages(rewards[perm], [ids_list[i] for i in perm])
    np.testing.assert_allclose(permuted.advantages, out.advantages[perm], rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(permuted.keep, out.keep[perm])


# ---------------------------------------------------------------- edge cases


def test_fixed_group_size_matches_reshape():
    rng = np.random.default_rng(0)
    g = 16
    r = rng.integers(0, 2, 4096 * g).astype(np.float32)
    ids = np.repeat(np.arange(4096), g)
    x = r.reshape(-1, g).astype(np.float64)
    expect = (x - x.mean(1, keepdims=True)) / (x.std(1, ddof=1, keepdims=True) + 1e-6)
    out = compute_advantages(r, ids)
    np.testing.assert_allclose(out.advantages, expect.ravel(), rtol=1e-5, atol=1e-5)
    assert out.num_groups == 4096
    np.testing.assert_array_equal(out.size, np.full(4096, g))


def test_equal_rewards_give_exactly_zero():
    r = np.array([0.1, 0.1, 0.1, 1e30, 1e30, 7.0], dtype=np.float32)
    ids = [1, 1, 1, 2, 2, 3]
    for est in ("grpo", "rloo", "reinforce_pp_baseline", "grpo_passk"):
        out = compute_advantages(r, ids, estimator=est)
        assert np.all(out.advantages == 0.0), est
        assert not out.keep.any()
        assert out.frac_zero_std == 1.0


def decimal_reference(rewards, ids, estimator, scale, eps=1e-6):
    """Advantages, means and stds in decimal arithmetic of 800 digits (every
    float exactly) and an exponent range that holds the squares of any float
    (float64 and numpy's float64 statistics overflow at ~1e154)."""
    with decimal.localcontext(decimal.Context(prec=800, Emax=10**6, Emin=-(10**6))):
        return _decimal_reference(rewards, ids, estimator, scale, decimal.Decimal(eps))


def _decimal_reference(rewards, ids, estimator, scale, eps):
    D = decimal.Decimal
    r = [None if np.isnan(x) else D(float(x)) for x in rewards]
    index, ng = ref_groups(list(ids))
    members = [[i for i in range(len(r)) if index[i] == g and r[i] is not None] for g in range(ng)]

    def stats(xs):
        mean = sum(xs, D(0)) / len(xs)
        return mean, (sum(((x - mean) ** 2 for x in xs), D(0)) / (len(xs) - 1)).sqrt()

    means, stds = [], []
    for m in members:
        mean, std = stats([r[i] for i in m]) if len(m) >= 2 else (r[m[0]], D(0))
        means.append(mean)
        stds.append(std)
    scored = [i for m in members for i in m]
    _, batch_std = stats([r[i] for i in scored])
    _, whiten_std = stats([r[i] - means[index[i]] for i in scored])
    adv = np.zeros(len(r))
    keep = np.zeros(len(r), dtype=bool)
    for g, m in enumerate(members):
        xs = [r[i] for i in m]
        if len(xs) < 2 or min(xs) == max(xs):
            continue
        keep[m] = True
        div = {"group": stds[g] + eps, "batch": batch_std + eps}[scale]
        if estimator == "reinforce_pp_baseline":
            div = whiten_std + eps
        if estimator == "grpo_passk":
            best = max(m, key=lambda i: (r[i], -i))  # the first of ties
            adv[best] = float((r[best] - max(r[i] for i in m if i != best)) / div)
        else:
            for i in m:
                adv[i] = float((r[i] - means[g]) / div)
    return adv, keep, np.array([float(x) for x in means]), np.array([float(x) for x in stds])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(
    ("estimator", "scale"),
    [
        ("grpo", "group"),
        ("grpo", "batch"),
        ("reinforce_pp_baseline", "group"),
        ("grpo_passk", "group"),
    ],
)
def test_huge_rewards_do_not_overflow(dtype, estimator, scale):
    # float64 rewards of ~1e300 square beyond float64; float32's largest
    # (~3e38) do not, but are checked alike. 1e300 once gave NaN advantages
    # with keep True.
    big = 1e300 if dtype == np.float64 else 1e37
    rng = np.random.default_rng(5)
    sizes = [4, 16, 1, 5, 8, 3, 2]
    ids = np.repeat(np.arange(len(sizes)), sizes)
    rewards = (rng.normal(size=len(ids)) * big).astype(dtype)
    rewards[[2, 9]] = np.nan
    rewards[-3:-1] = rewards[-1]  # a group of equal rewards
    out = compute_advantages(rewards, ids, estimator=estimator, scale=scale)
    adv, keep, mean, std = decimal_reference(rewards, ids, estimator, scale)
    assert np.isfinite(out.advantages).all()
    np.testing.assert_allclose(out.advantages, adv, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(out.mean, mean, rtol=1e-12)
    np.testing.assert_allclose(out.std, std, rtol=1e-9)
    np.testing.assert_array_equal(out.keep, keep)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_results_beyond_their_type_are_a_clear_error(dtype):
    # Dr. GRPO and RLOO keep the rewards' scale: beyond float32 there is no
    # advantage to return.
    big = 3e38  # float32 holds it, not 4e38 (its distance from the mean)
    rewards = np.array([1.0, 2.0, big, -big, -big], dtype=dtype)
    for kwargs in ({"scale": "none"}, {"estimator": "rloo"}):
        with pytest.raises(InvalidInputError, match="group 1 reach .* beyond float32"):
            compute_advantages(rewards, [0, 0, 1, 1, 1], **kwargs)
    # The same rewards, scaled by their std, fit.
    assert np.isfinite(compute_advantages(rewards, [0, 0, 1, 1, 1]).advantages).all()
    # A std beyond float64 itself.
    top = np.finfo(np.float64).max
    with pytest.raises(InvalidInputError, match="overflow float64"):
        compute_advantages(np.array([top, -top, 1.0]), [0, 0, 1])


def test_nan_and_none_are_unscorable():
    out = compute_advantages([1.0, None, 0.0, float("nan")], ["a", "a", "a", "a"])
    assert out.advantages[1] == 0 and out.advantages[3] == 0
    assert out.num_valid.tolist() == [2]
    assert out.size.tolist() == [4]
    assert out.keep.tolist() == [True, False, True, False]
    np.testing.assert_allclose(out.advantages[[0, 2]], [0.7071064, -0.7071064], rtol=1e-5)


def test_all_nan_group_has_nan_mean_and_no_signal():
    out = compute_advantages([np.nan, np.nan, 1.0, 0.0], [0, 0, 1, 1])
    assert np.isnan(out.mean[0]) and np.isnan(out.solve_rate[0])
    assert out.frac_zero_std == 0.5


def test_solve_rate_threshold():
    out = compute_advantages([0.2, 0.6, 0.9, 1.0], [0, 0, 0, 0], success_threshold=0.5)
    assert out.solve_rate.tolist() == [0.75]


def test_empty_batch():
    out = compute_advantages(np.zeros(0, dtype=np.float32), [])
    assert out.advantages.shape == (0,) and out.num_groups == 0 and out.frac_zero_std == 0.0


def test_accepts_torch_tensors_and_int_rewards():
    torch = pytest.importorskip("torch")
    out = compute_advantages(torch.tensor([1, 0, 1, 1]), torch.tensor([5, 5, 6, 6]))
    ref = compute_advantages(np.array([1.0, 0.0, 1.0, 1.0]), np.array([5, 5, 6, 6]))
    np.testing.assert_array_equal(out.advantages, ref.advantages)


def test_strided_input_is_accepted():
    r = np.arange(20, dtype=np.float32)[::2]
    ids = np.repeat(np.arange(5), 4)[::2]
    check(np.ascontiguousarray(r), ids)
    out = compute_advantages(r, ids)
    assert out.advantages.shape == (10,)


@pytest.mark.parametrize(
    ("rewards", "ids", "kwargs", "message"),
    [
        ([1.0, 2.0], [1], {}, "rewards has 2 entries but group_ids has 1"),
        ([1.0, np.inf], [1, 1], {}, r"rewards\[1\] is inf"),
        ([1.0, -np.inf], [1, 1], {}, r"rewards\[1\] is -inf"),
        ([[1.0], [2.0]], [1, 2], {}, r"rewards must be 1-D, got shape \(2, 1\)"),
        ([1.0], [[1]], {}, "group_ids must be 1-D"),
        ([1.0], [1], {"estimator": "ppo"}, "unknown estimator 'ppo'"),
        ([1.0], [1], {"scale": "tokens"}, "unknown scale 'tokens'"),
        ([1.0], [1], {"eps": -1.0}, "eps must be a finite number >= 0"),
        ([1.0], [1.5], {}, "group_ids must be ints or strings, got dtype float64"),
        ([1.0, 2.0], ["a", 1], {}, r"group_ids\[1\] is int; expected every id to be a str"),
        ([1.0, 2.0], [1, "a"], {}, "group_ids must be all str or all int"),
        ([1.0, 2.0], np.array([1, None], dtype=object), {}, "must be all str or all int"),
        (["x"], [1], {}, "rewards must hold numbers"),
    ],
)
def test_bad_input_is_a_clear_value_error(rewards, ids, kwargs, message):
    with pytest.raises(InvalidInputError, match=message) as info:
        compute_advantages(rewards, ids, **kwargs)
    assert isinstance(info.value, ValueError)


# ---------------------------------------------------------------- grouping


@given(ids=st.lists(st.sampled_from(["x", "y", "zz", "", "ü", "x\x00"]), max_size=40))
def test_group_against_dict(ids):
    g = grpo_fast.group(ids)
    index, ng = ref_groups(ids)
    np.testing.assert_array_equal(g.index, index)
    assert g.num_groups == ng
    np.testing.assert_array_equal(g.sizes, np.bincount(index, minlength=ng))
    np.testing.assert_array_equal(g.offsets, np.concatenate([[0], np.cumsum(g.sizes)]))
    np.testing.assert_array_equal(g.order, np.argsort(index, kind="stable"))


def test_numpy_unicode_and_bytes_ids_group_like_lists():
    ids = ["ab", "a", "ab", "b", "a"]
    for arr in (np.array(ids), np.array(ids, dtype="S"), np.array(ids, dtype=object)):
        np.testing.assert_array_equal(grpo_fast.group(arr).index, ref_groups(ids)[0])


def test_contiguous_flag():
    assert grpo_fast.group([3, 3, 1, 1]).contiguous
    assert not grpo_fast.group([3, 1, 3]).contiguous


# ---------------------------------------------------------------- tokens, threads


def test_broadcast_to_tokens_numpy_and_torch():
    adv = np.array([0.5, -2.0], dtype=np.float32)
    mask = np.array([[1, 1, 0], [1, 0, 0]])
    expect = adv[:, None] * mask
    np.testing.assert_array_equal(grpo_fast.broadcast_to_tokens(adv, mask), expect)
    torch = pytest.importorskip("torch")
    out = grpo_fast.broadcast_to_tokens(adv, torch.tensor(mask, dtype=torch.bool))
    assert isinstance(out, torch.Tensor)
    np.testing.assert_array_equal(out.numpy(), expect)
    with pytest.raises(InvalidInputError, match="must be"):
        grpo_fast.broadcast_to_tokens(adv, mask[:1])


def test_results_do_not_depend_on_thread_count():
    rng = np.random.default_rng(3)
    n = 200_000  # above the parallel threshold
    r = rng.integers(0, 2, n).astype(np.float32)
    ids = rng.integers(0, n // 8, n)
    before = grpo_fast.get_num_threads()
    try:
        grpo_fast.set_num_threads(1)
        one = compute_advantages(r, ids)
        grpo_fast.set_num_threads(2)
        two = compute_advantages(r, np.sort(ids))
        two_unsorted = compute_advantages(r, ids)
    finally:
        grpo_fast.set_num_threads(before)
    np.testing.assert_array_equal(one.advantages, two_unsorted.advantages)
    assert two.advantages.shape == (n,)
    for bad in (0, -1, 2**70, 10**6, True, 1.5, "2"):
        with pytest.raises(InvalidInputError, match=r"num_threads must be an int in \[1, 1024\]"):
            grpo_fast.set_num_threads(bad)
    assert grpo_fast.get_num_threads() == before


def test_env_var_sets_threads_and_fork_is_safe():
    code = """
import os, numpy as np, grpo_fast
assert grpo_fast.get_num_threads() == 3, grpo_fast.get_num_threads()
r = np.ones(100_000, dtype=np.float32); r[::2] = 0
ids = np.repeat(np.arange(50_000), 2)
parent = grpo_fast.compute_advantages(r, ids).advantages
pid = os.fork()
if pid == 0:
    child = grpo_fast.compute_advantages(r, ids).advantages
    os._exit(0 if np.array_equal(child, parent) else 1)
_, status = os.waitpid(pid, 0)
assert os.waitstatus_to_exitcode(status) == 0
print("ok")
"""
    env = {**os.environ, "GRPO_FAST_NUM_THREADS": "3"}
    res = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=60
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == "ok"


@pytest.mark.parametrize("ids", [[4, 4, 9, 9, 9], [4, 9, 4, 9, 9], ["b", "b", "a", "c", "c"]])
def test_group_index_matches_reference(ids):
    out = compute_advantages(np.arange(len(ids), dtype=np.float32), ids)
    np.testing.assert_array_equal(out.group_index, ref_groups(ids)[0])
    assert out.group_index.dtype == np.int64


@pytest.mark.parametrize("g", [2, 3, 4, 8, 32, 64, 128, 256])
@pytest.mark.parametrize("opts", OPTIONS[:5], ids=lambda o: "-".join(map(str, o.values())))
def test_equal_group_sizes_every_kernel(g, opts):
    # Equal sizes side by side take the const-size kernels (powers of two up to
    # 128), above the parallel threshold too.
    rng = np.random.default_rng(g)
    for n_groups in (5, 40_000 // g + 1):
        r = rng.integers(0, 3, n_groups * g).astype(np.float32) / 2
        r[: 2 * g] = 1.0  # two groups of equal rewards
        ids = np.repeat(rng.permutation(10 * n_groups)[:n_groups], g)
        check(r, ids, **opts)


# ---------------------------------------------------------------- boundary


def test_a_lone_surrogate_id_is_a_clear_error_naming_it():
    bad = json.loads('"\\ud83d"')
    for call in (lambda ids: compute_advantages([1.0, 0.0, 1.0], ids), group):
        with pytest.raises(InvalidInputError, match=r"group_ids\[2\] is not valid Unicode"):
            call(["a", "é", bad])


def test_non_ascii_ids_group_like_their_ascii_codes():
    ids = ["é", "a", "é", "ü", "a"]
    codes = [{"é": 0, "a": 1, "ü": 2}[i] for i in ids]
    assert group(ids).index.tolist() == codes


def test_estimator_names_are_the_core_table_with_its_aliases():
    assert grpo_fast.names.ESTIMATORS == (
        "grpo",
        "rloo",
        "reinforce_pp_baseline",
        "grpo_passk",
        "remax",
        "opo",
        "gpg",
    )
    assert grpo_fast.names.SCALES == ("group", "batch", "none")
    assert grpo_fast.advantages.ESTIMATORS is grpo_fast.names.ESTIMATORS
    r = [1.0, 0.0, 3.0, 5.0, 2.0, 2.5]
    ids = [0, 0, 0, 1, 1, 1]
    want = compute_advantages(r, ids, estimator="reinforce_pp_baseline").advantages
    for alias in ("reinforce_plus_plus_baseline", "reinforce++-baseline"):
        np.testing.assert_array_equal(compute_advantages(r, ids, estimator=alias).advantages, want)
    for bad in ("ppo", 3, None):
        with pytest.raises(InvalidInputError, match="estimator"):
            compute_advantages(r, ids, estimator=bad)


FIELDS = ("advantages", "keep", "group_index", "mean", "std", "size", "num_valid", "solve_rate")


def _assert_same_result(a, b):
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype, name
        np.testing.assert_array_equal(x, y, err_msg=name)
    assert (a.frac_zero_std, a.num_groups, len(a)) == (b.frac_zero_std, b.num_groups, len(b))


@pytest.mark.parametrize("touch_first", [False, True])
def test_advantage_result_pickles_and_deep_copies(touch_first):
    r = compute_advantages([1.0, 0.0, np.nan, 0.5, 0.5, 2.0], ["b", "a", "b", "b", "a", "c"])
    if touch_first:  # the lazily built arrays, before and after being built
        _ = (r.mean, r.group_index)
    for copy_of in (lambda x: pickle.loads(pickle.dumps(x)), copy.deepcopy):
        c = copy_of(r)
        assert type(c) is type(r)
        _assert_same_result(c, r)
    # The stored values are those of an independent computation.
    want = compute_advantages([1.0, 0.0, np.nan, 0.5, 0.5, 2.0], ["b", "a", "b", "b", "a", "c"])
    _assert_same_result(pickle.loads(pickle.dumps(r)), want)
    assert want.group_index.tolist() == [0, 1, 0, 0, 1, 2]


def _advantages_in_worker(r):
    return r


def test_advantage_result_through_a_spawned_worker():
    r = compute_advantages([1.0, 0.0, 0.5, 0.25], [7, 7, 8, 8])
    with multiprocessing.get_context("spawn").Pool(1) as pool:
        back = pool.apply(_advantages_in_worker, (r,))
    _assert_same_result(back, r)


def test_advantage_result_rebuilt_from_inconsistent_arrays_is_refused():
    r = compute_advantages([1.0, 0.0, 0.5], [7, 7, 8])
    args = [getattr(r, name) for name in FIELDS] + [r.frac_zero_std]
    args[1] = args[1][:2]
    with pytest.raises(InvalidInputError, match="keep has 2 entries but advantages has 3"):
        AdvantageResult(*args)


def test_only_documented_names_are_public():
    import types

    public = {n for n in dir(grpo_fast) if not n.startswith("_")}
    extra = {n for n in public - set(grpo_fast.__all__)
             if not isinstance(getattr(grpo_fast, n), types.ModuleType)}  # fmt: skip
    assert extra == set()
    assert not hasattr(grpo_fast, "annotations")
