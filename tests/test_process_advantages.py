"""compute_process_advantages against the DeepSeekMath formula written here in numpy.

Shao et al. 2024, section 4.1.3: the step rewards of all G outputs of a
prompt are normalised together; a token's advantage is the sum of the
normalised rewards of the steps (of its own output) that end at or after it.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import grpo_fast
from grpo_fast.errors import InvalidInputError


def reference(
    rewards,
    ends,
    offsets,
    gids,
    lengths,
    width,
    *,
    outcome=None,
    weight=1.0,
    scale="group",
    eps=1e-6,
    unbiased=True,
):
    """The paper's formula, one loop at a time, in float64."""
    n = len(lengths)
    ddof = 1 if unbiased else 0
    by_group: dict = {}
    for i in range(n):
        for s in range(offsets[i], offsets[i + 1]):
            if not math.isnan(rewards[s]):
                by_group.setdefault(gids[i], []).append(float(rewards[s]))
    every = [r for rs in by_group.values() for r in rs]
    batch_std = float(np.std(every, ddof=ddof)) if len(every) > ddof else 0.0
    norm = np.zeros(len(rewards))
    for i in range(n):
        rs = by_group.get(gids[i], [])
        if len(rs) < 2 or max(rs) == min(rs):
            continue  # no signal
        mean, std = float(np.mean(rs)), float(np.std(rs, ddof=ddof))
        div = {"group": std + eps, "batch": batch_std + eps, "none": 1.0}[scale]
        for s in range(offsets[i], offsets[i + 1]):
            if not math.isnan(rewards[s]):
                norm[s] = (rewards[s] - mean) / div
    adv = np.zeros((n, width))
    for i in range(n):
        for t in range(lengths[i]):
            total = sum(norm[s] for s in range(offsets[i], offsets[i + 1]) if ends[s] >= t)
            adv[i, t] = (0.0 if outcome is None else outcome[i]) + weight * total
    return adv, norm


@st.composite
def batches(draw):
    """Ragged steps in ragged groups, ids in any order, some neutral (NaN) steps."""
    n = draw(st.integers(1, 10))
    gids = draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
    lengths = draw(st.lists(st.integers(0, 9), min_size=n, max_size=n))
    rewards, ends, offsets = [], [], [0]
    value = st.one_of(
        st.sampled_from([0.0, 1.0, float("nan")]),
        st.floats(-5, 5, allow_nan=False, width=32),
    )
    for length in lengths:
        k = draw(st.integers(0, 4)) if length else 0
        for _ in range(k):
            rewards.append(draw(value))
            ends.append(draw(st.integers(0, length - 1)))
        offsets.append(len(rewards))
    width = max(lengths) + draw(st.integers(0, 2))
    return rewards, ends, offsets, gids, lengths, width


@settings(max_examples=300, deadline=None)
@given(
    batches(),
    st.sampled_from(["group", "batch", "none"]),
    st.booleans(),
    st.sampled_from([0.0, 1e-6, 0.1]),
    st.sampled_from([1.0, 0.5, 0.0]),
    st.booleans(),
)
def test_matches_the_paper_formula(batch, scale, unbiased, eps, weight, with_outcome):
    rewards, ends, offsets, gids, lengths, width = batch
    outcome = [0.25 * (i % 5) - 0.5 for i in range(len(lengths))] if with_outcome else None
    out = grpo_fast.compute_process_advantages(
        np.array(rewards, np.float32),
        ends,
        offsets,
        gids,
        lengths,
        width=width,
        outcome=outcome,
        process_weight=weight,
        scale=scale,
        eps=eps,
        unbiased=unbiased,
    )
    want, norm = reference(
        np.array(rewards, np.float32).astype(np.float64),
        ends,
        offsets,
        gids,
        lengths,
        width,
        outcome=outcome,
        weight=weight,
        scale=scale,
        eps=eps,
        unbiased=unbiased,
    )
    assert out.advantages.dtype == np.float32 and out.advantages.shape == (len(lengths), width)
    np.testing.assert_allclose(out.advantages, want, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(out.step_advantages, norm, rtol=1e-5, atol=1e-4)


@settings(max_examples=100, deadline=None)
@given(batches(), st.integers(-100, 100))
def test_shifting_a_group_changes_nothing(batch, shift):
    rewards, ends, offsets, gids, lengths, width = batch
    # Multiples of 1/16 stay exact in float32 (the step rewards' type) after the shift;
    # differences below float32's resolution at 100 would vanish in the sum.
    r = np.round(np.array(rewards, np.float64) * 16) / 16
    a = grpo_fast.compute_process_advantages(r, ends, offsets, gids, lengths, width=width)
    b = grpo_fast.compute_process_advantages(r + shift, ends, offsets, gids, lengths, width=width)
    np.testing.assert_allclose(a.advantages, b.advantages, rtol=1e-4, atol=1e-3)


def test_one_final_step_is_the_outcome_advantage():
    # One step per output, ending on its last token: every token carries the
    # step's normalised reward, which is compute_advantages' GRPO advantage.
    rng = np.random.default_rng(0)
    rewards = rng.integers(0, 2, 32).astype(np.float32)
    ids = np.repeat(np.arange(4), 8)
    lengths = rng.integers(1, 6, 32)
    out = grpo_fast.compute_process_advantages(
        rewards, lengths - 1, np.arange(33), ids, lengths, width=6
    )
    outcome = grpo_fast.compute_advantages(rewards, ids).advantages
    mask = np.arange(6)[None, :] < lengths[:, None]
    np.testing.assert_allclose(out.advantages, outcome[:, None] * mask, rtol=1e-6, atol=1e-6)


def test_unchecked_steps_are_neutral_or_given_a_reward():
    rewards = [1.0, np.nan, 0.0, 1.0]  # output 0: two steps, output 1: two steps
    kw = dict(step_ends=[0, 1, 0, 1], offsets=[0, 2, 4], group_ids=[0, 0], lengths=[2, 2])
    neutral = grpo_fast.compute_process_advantages(rewards, eps=0.0, **kw)
    want, _ = reference(np.array(rewards), [0, 1, 0, 1], [0, 2, 4], [0, 0], [2, 2], 2, eps=0.0)
    np.testing.assert_allclose(neutral.advantages, want, rtol=1e-6)
    assert neutral.num_valid.tolist() == [3]
    filled = grpo_fast.compute_process_advantages(rewards, unchecked_reward=0.5, eps=0.0, **kw)
    filled_in = np.array([1.0, 0.5, 0.0, 1.0])
    want, _ = reference(filled_in, [0, 1, 0, 1], [0, 2, 4], [0, 0], [2, 2], 2, eps=0.0)
    np.testing.assert_allclose(filled.advantages, want, rtol=1e-6)
    assert filled.num_valid.tolist() == [4]


def test_checker_steps_to_loss():
    torch = pytest.importorskip("torch")
    from grpo_fast.loss import policy_loss

    texts = ["1+1=2\n2+2=5", "1+1=2\n2+2=4", "1+1=3", "7"]
    steps = grpo_fast.check_steps(texts)
    lengths = np.array([len(t) for t in texts])
    out = grpo_fast.compute_process_advantages(
        steps.rewards(), steps.ends - 1, steps.offsets, [0, 0, 0, 0], lengths
    )
    assert out.advantages.shape == (4, 11)
    # The wrong second step of output 0 pulls its tokens below output 1's.
    assert out.advantages[0, 8] < 0 < out.advantages[1, 8]
    logp = torch.zeros(4, 11, requires_grad=True)
    mask = torch.as_tensor(np.arange(11)[None, :] < lengths[:, None])
    loss, _ = policy_loss(logp, logp.detach(), out.advantages, mask)
    loss.backward()
    assert torch.isfinite(logp.grad).all()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (dict(step_rewards=[1.0]), "step_ends has 2 entries but step_rewards has 1"),
        (dict(step_ends=[0, 5]), r"step_ends\[1\] is 5, outside completion 0's 2 tokens"),
        (dict(step_ends=[0, -1]), r"step_ends\[1\] is -1"),
        (dict(offsets=[0, 2]), "offsets has 2 entries"),
        (dict(offsets=[0, 2, 2, 3]), "must start at 0 and end at the number of steps"),
        (dict(offsets=[0, 2, 1, 2]), "must not decrease"),
        (dict(lengths=[2, 1]), "lengths has 2 entries but group_ids has 3"),
        (dict(lengths=[2, 1, 9]), r"lengths\[2\] is 9"),
        (dict(step_rewards=[1.0, np.inf]), r"step_rewards\[1\] is inf"),
        (dict(outcome=[0.0, np.nan, 0.0]), r"outcome\[1\] is NaN"),
        (dict(outcome=[0.0]), "outcome has 1 entries"),
        (dict(scale="huge"), "unknown scale 'huge'"),
        (dict(step_ends=[[0, 1]]), "step_ends must be a 1-D array of ints"),
        (dict(step_ends=[0.5, 1.0]), "step_ends must be a 1-D array of ints"),
        (dict(group_ids=[0, "a", 1]), "group_ids"),
        (dict(eps=-1.0), "eps must be a finite number"),
        (dict(unchecked_reward=np.inf), "unchecked_reward must be finite"),
    ],
)
def test_bad_input_is_named(change, message):
    kw = dict(
        step_rewards=[1.0, 0.0],
        step_ends=[0, 1],
        offsets=[0, 2, 2, 2],
        group_ids=[0, 0, 1],
        lengths=[2, 1, 0],
        width=2,
    )
    kw.update(change)
    with pytest.raises(InvalidInputError, match=message):
        grpo_fast.compute_process_advantages(**kw)


def test_empty_batch():
    out = grpo_fast.compute_process_advantages([], [], [0], [], [])
    assert out.advantages.shape == (0, 0)
