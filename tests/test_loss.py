"""policy_loss against float64 formulas written here, and against verl's own loss."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.loss import policy_loss  # noqa: E402

B, T = 5, 9


def make(seed=0, adv_per_token=False, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    # Ratios spread over ~[0.5, 2] so every clipping branch is taken.
    old = logp + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.4
    ref = logp + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.6
    shape = (B, T) if adv_per_token else (B,)
    adv = torch.randn(shape, generator=g, dtype=torch.float64)
    lengths = torch.tensor([9, 4, 1, 7, 0])  # one empty completion
    mask = torch.arange(T)[None, :] < lengths[:, None]
    entropy = torch.rand(B, T, generator=g, dtype=torch.float64) * 2
    return logp.to(dtype), old.to(dtype), ref.to(dtype), adv.to(dtype), mask, entropy.to(dtype)


# --- the reference: the papers' formulas, token by token -------------------------------


def ref_token_losses(logp, old, adv, eps_low, eps_high, dual_clip, delta):
    """Per-token loss as the negated PPO objective, written objective-side."""
    a = adv if adv.dim() == 2 else adv[:, None].expand(B, T)
    r = torch.exp(logp - old)
    r_raw = r if delta is None else torch.clamp(r, max=delta)
    objective = torch.minimum(r_raw * a, torch.clamp(r, 1 - eps_low, 1 + eps_high) * a)
    if dual_clip is not None:
        # Ye et al. 2020: for A < 0 the objective is floored at c * A.
        objective = torch.where(a < 0, torch.maximum(objective, dual_clip * a), objective)
    return -objective


def ref_kl(logp, ref, kind):
    if kind == "k1":
        return logp - ref
    if kind == "k2":
        return (logp - ref) ** 2 / 2
    x = torch.clamp(ref - logp, -20, 20)
    return torch.clamp(torch.exp(x) - x - 1, max=10)


def ref_aggregate(loss, mask, loss_type, max_len=None, normalizer=None):
    m = mask.double()
    if loss_type == "grpo":
        per_seq = [
            (loss[i] * m[i]).sum() / max(float(m[i].sum()), 1.0) for i in range(loss.shape[0])
        ]
        return torch.stack(per_seq).mean()
    total = (loss * m).sum()
    if loss_type in ("bnpo", "token_mean"):
        return total / m.sum()
    if loss_type == "dapo":
        return total / (m.sum() if normalizer is None else normalizer)
    return total / (loss.shape[0] * (T if max_len is None else max_len))


def grads(fn, *tensors):
    xs = [t.detach().clone().requires_grad_(True) for t in tensors]
    out = fn(*xs)
    out.backward()
    return out.detach(), [x.grad for x in xs]


LOSS_TYPES = ["grpo", "bnpo", "token_mean", "dapo", "dr_grpo"]
CLIPS = [
    dict(),
    dict(dual_clip=3.0),
    dict(delta=1.5),
    dict(dual_clip=2.0, delta=1.5),
    dict(eps_low=0.2, eps_high=0.28),  # DAPO clip-higher
]


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("clip", CLIPS, ids=lambda c: "-".join(f"{k}={v}" for k, v in c.items()))
@pytest.mark.parametrize("adv_per_token", [False, True])
def test_token_level_loss_and_grad(loss_type, clip, adv_per_token):
    logp, old, _, adv, mask, _ = make(seed=len(loss_type), adv_per_token=adv_per_token)
    opts = dict(eps_low=0.2, eps_high=0.2, dual_clip=None, delta=None) | clip
    extra = {"max_completion_length": 12} if loss_type == "dr_grpo" else {}
    if loss_type == "dapo":
        extra["normalizer"] = 40.0

    loss, g = grads(
        lambda lp: policy_loss(lp, old, adv, mask, loss_type=loss_type, **opts, **extra)[0], logp
    )
    ref, g_ref = grads(
        lambda lp: ref_aggregate(
            ref_token_losses(lp, old, adv, **opts),
            mask,
            loss_type,
            max_len=extra.get("max_completion_length"),
            normalizer=extra.get("normalizer"),
        ),
        logp,
    )
    torch.testing.assert_close(loss, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g[0], g_ref[0], rtol=1e-12, atol=1e-12)
    assert torch.all(g[0][~mask] == 0)


@pytest.mark.parametrize("kl", ["k1", "k2", "k3"])
@pytest.mark.parametrize("loss_type", ["grpo", "bnpo"])
def test_kl_penalty(kl, loss_type):
    logp, old, ref_logp, adv, mask, _ = make(seed=7)
    ref_logp = ref_logp.clone()
    ref_logp[0, 0] = logp[0, 0] + 30  # exercises the k3 clamps
    beta = 0.04

    def ours(lp):
        return policy_loss(
            lp, old, adv, mask, ref_logp=ref_logp, beta=beta, kl=kl, loss_type=loss_type
        )

    _, metrics = ours(logp)
    loss, g = grads(lambda lp: ours(lp)[0], logp)
    ref, g_ref = grads(
        lambda lp: ref_aggregate(
            ref_token_losses(lp, old, adv, 0.2, 0.2, None, None) + beta * ref_kl(lp, ref_logp, kl),
            mask,
            loss_type,
        ),
        logp,
    )
    torch.testing.assert_close(loss, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g[0], g_ref[0], rtol=1e-12, atol=1e-12)
    kl_ref = ref_kl(logp, ref_logp, kl)[mask].mean().item()
    assert metrics["kl_mean"] == pytest.approx(kl_ref, rel=1e-12)


def test_beta_zero_skips_kl_and_needs_no_reference():
    logp, old, _, adv, mask, _ = make()
    loss, metrics = policy_loss(logp, old, adv, mask, beta=0.0)
    assert "kl_mean" not in metrics
    nan_ref = torch.full_like(logp, float("nan"))
    loss2, _ = policy_loss(logp, old, adv, mask, ref_logp=nan_ref, beta=0.0)
    assert torch.equal(loss, loss2)  # the reference is not even looked at


def test_gspo_matches_the_sequence_level_objective():
    """GSPO-token with per-sequence advantages and sequence-mean aggregation has
    the value and gradient of GSPO's sequence objective (Zheng et al. 2025, sec. 4.3)."""
    logp, old, _, adv, mask, _ = make(seed=3)
    eps_low, eps_high = 3e-4, 4e-4  # GSPO's own clip range

    def ours(lp):
        return policy_loss(
            lp,
            old,
            adv,
            mask,
            importance_sampling_level="sequence",
            eps_low=eps_low,
            eps_high=eps_high,
            loss_type="grpo",
        )[0]

    def sequence_objective(lp):
        m = mask.double()
        losses = []
        for i in range(B):
            n = m[i].sum()
            if n == 0:
                losses.append(lp.sum() * 0)
                continue
            s = torch.exp(((lp[i] - old[i]) * m[i]).sum() / n)
            losses.append(
                -torch.minimum(s * adv[i], torch.clamp(s, 1 - eps_low, 1 + eps_high) * adv[i])
            )
        return torch.stack(losses).mean()

    # Some sequences clipped, some not: shrink the drift of two rows.
    old = old.clone()
    old[1] = logp[1] + 1e-5
    old[3] = logp[3] - 1e-5
    loss, g = grads(ours, logp)
    ref, g_ref = grads(sequence_objective, logp)
    torch.testing.assert_close(loss, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g[0], g_ref[0], rtol=1e-10, atol=1e-12)
    assert (g_ref[0].abs().sum(-1) > 0).sum() >= 2  # not a vacuous gradient


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_gspo_value_with_token_advantages(loss_type):
    logp, old, _, adv, mask, _ = make(seed=4, adv_per_token=True)
    loss, _ = policy_loss(
        logp, old, adv, mask, importance_sampling_level="sequence", loss_type=loss_type
    )
    m = mask.double()
    s = torch.exp(((logp - old) * m).sum(-1) / m.sum(-1).clamp(min=1))[:, None].expand(B, T)
    per_token = -torch.minimum(s * adv, torch.clamp(s, 0.8, 1.2) * adv)
    torch.testing.assert_close(
        loss, ref_aggregate(per_token, mask, loss_type), rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("loss_type", ["bnpo", "grpo"])
def test_gspo_token_gradient_is_straight_through(loss_type):
    """GSPO-token: d s_it / d logp_it = s_i for that token alone (sg[s_i] * pi / sg[pi])."""
    logp, old, _, adv, mask, _ = make(seed=12, adv_per_token=True)
    old = old.clone()
    old[0] = logp[0] + 0.01  # one sequence inside the clip range
    _, g = grads(
        lambda lp: policy_loss(
            lp, old, adv, mask, importance_sampling_level="sequence", loss_type=loss_type
        )[0],
        logp,
    )
    m = mask.double()
    s = torch.exp(((logp - old) * m).sum(-1) / m.sum(-1).clamp(min=1))[:, None].expand(B, T)
    clipped = ((s > 1.2) & (adv > 0)) | ((s < 0.8) & (adv < 0))
    if loss_type == "bnpo":
        weight = m / m.sum()
    else:
        weight = m / m.sum(-1, keepdim=True).clamp(min=1) / B
    expected = torch.where(clipped, 0.0, -adv * s) * weight
    torch.testing.assert_close(g[0], expected, rtol=1e-12, atol=1e-12)
    assert (expected != 0).any()


def test_metrics_are_floats_matching_counts():
    logp, old, _, adv, mask, entropy = make(seed=5, adv_per_token=True)
    _, metrics = policy_loss(
        logp, old, adv, mask, eps_low=0.2, eps_high=0.28, dual_clip=3.0, entropy=entropy
    )
    assert all(type(v) is float for v in metrics.values())
    r = torch.exp(logp - old)[mask]
    a = adv[mask]
    n = mask.sum().item()
    low = ((r < 0.8) & (a < 0)).sum().item() / n
    high = ((r > 1.28) & (a > 0)).sum().item() / n
    assert low > 0 and high > 0
    assert metrics["clip_frac_low"] == pytest.approx(low)
    assert metrics["clip_frac_high"] == pytest.approx(high)
    assert metrics["clip_frac"] == pytest.approx(low + high)
    assert metrics["ratio_mean"] == pytest.approx(r.mean().item())
    assert metrics["dual_clip_frac"] == pytest.approx(((r > 3.0) & (a < 0)).sum().item() / n)
    assert metrics["entropy_mean"] == pytest.approx(entropy[mask].mean().item())


def test_dapo_normalizer_makes_accumulation_exact():
    """Micro-batches normalised by the global token count sum to the full-batch loss."""
    logp, old, _, adv, mask, _ = make(seed=6)
    total_tokens = mask.sum().item()
    full, g_full = grads(lambda lp: policy_loss(lp, old, adv, mask, loss_type="dapo")[0], logp)

    def accumulated(lp):
        parts = [
            policy_loss(lp[s], old[s], adv[s], mask[s], loss_type="dapo", normalizer=total_tokens)[
                0
            ]
            for s in (slice(0, 2), slice(2, B))
        ]
        return parts[0] + parts[1]

    acc, g_acc = grads(accumulated, logp)
    torch.testing.assert_close(acc, full, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g_acc[0], g_full[0], rtol=1e-12, atol=1e-12)


def test_on_policy_ratio_is_one_and_gradient_is_advantage_weighted():
    logp, _, _, adv, mask, _ = make(seed=8)
    loss, g = grads(lambda lp: policy_loss(lp, None, adv, mask, loss_type="bnpo")[0], logp)
    m = mask.double()
    torch.testing.assert_close(loss, -(adv[:, None] * m).sum() / m.sum())
    torch.testing.assert_close(g[0], -adv[:, None] * m / m.sum())


def test_old_and_reference_logp_are_constants():
    logp, old, ref, adv, mask, _ = make(seed=13)
    lp = logp.clone().requires_grad_(True)
    # old_logp and ref_logp that carry a graph back to lp
    loss, _ = policy_loss(lp, lp + (old - logp), adv, mask, ref_logp=lp + (ref - logp), beta=0.1)
    loss.backward()
    _, g = grads(lambda x: policy_loss(x, old, adv, mask, ref_logp=ref, beta=0.1)[0], logp)
    torch.testing.assert_close(lp.grad, g[0], rtol=1e-12, atol=1e-12)
    assert lp.grad.abs().sum() > 0


def test_numpy_advantages_and_mask_float32():
    logp, old, _, adv, mask, _ = make(seed=9, dtype=torch.float32)
    adv_np = adv.numpy().astype(np.float32)
    a, _ = policy_loss(logp, old, adv_np, mask.numpy())
    b, _ = policy_loss(logp, old, adv, mask.float())
    assert a.dtype == torch.float32
    torch.testing.assert_close(a, b)


def test_empty_mask_gives_finite_zero():
    logp, old, _, adv, mask, _ = make()
    for loss_type in LOSS_TYPES:
        lp = logp.clone().requires_grad_(True)
        loss, metrics = policy_loss(lp, old, adv, torch.zeros_like(mask), loss_type=loss_type)
        loss.backward()
        assert loss.item() == 0 and torch.all(lp.grad == 0)
        assert metrics["ratio_mean"] == 0


# --- the peer: verl's PPO loss with its dual clip ---------------------------------------


class _VerlConfig:
    """The fields of verl's ActorConfig that compute_policy_loss_vanilla reads."""

    def __init__(self, low, high, c):
        self.clip_ratio, self.clip_ratio_low, self.clip_ratio_high = low, low, high
        self._c = c
        self.global_batch_info = {}

    def get(self, key, default=None):
        return self._c if key == "clip_ratio_c" else default


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("agg, ours", [("token-mean", "bnpo"), ("seq-mean-token-mean", "grpo")])
def test_against_verl_vanilla_dual_clip(agg, ours):
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    logp, old, _, adv, mask, _ = make(seed=10, adv_per_token=True)
    mask = mask.clone()
    mask[4, :3] = True  # verl leaves fully masked rows out of its seq-mean: avoid them
    cfg = _VerlConfig(0.2, 0.28, 3.0)
    theirs, g_theirs = grads(
        lambda lp: core_algos.compute_policy_loss_vanilla(old, lp, adv, mask.double(), agg, cfg)[0],
        logp,
    )
    mine, g_mine = grads(
        lambda lp: policy_loss(
            lp, old, adv, mask, eps_low=0.2, eps_high=0.28, dual_clip=3.0, loss_type=ours
        )[0],
        logp,
    )
    torch.testing.assert_close(mine, theirs, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(g_mine[0], g_theirs[0], rtol=1e-6, atol=1e-9)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.parametrize("ours, theirs", [("k1", "kl"), ("k2", "mse"), ("k3", "low_var_kl")])
def test_kl_against_verl(ours, theirs):
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    logp, old, ref_logp, _, mask, _ = make(seed=11)
    ref_logp = ref_logp.clone()
    ref_logp[0, :2] = logp[0, :2] + torch.tensor([30.0, -30.0], dtype=torch.float64)
    zero = torch.zeros(B, dtype=torch.float64)
    _, metrics = policy_loss(logp, old, zero, mask, ref_logp=ref_logp, beta=1.0, kl=ours)
    kl = core_algos.kl_penalty(logp, ref_logp, theirs)
    assert metrics["kl_mean"] == pytest.approx(kl[mask].mean().item(), rel=1e-9)


# --- bad input ------------------------------------------------------------------------


def test_bad_inputs_raise_invalid_input():
    logp, old, ref, adv, mask, _ = make()
    with pytest.raises(InvalidInputError, match=r"old_logp is \(5, 8\).*logp is \(5, 9\)"):
        policy_loss(logp, old[:, :8], adv, mask)
    with pytest.raises(InvalidInputError, match=r"old_logp .*float32.*logp .*float64"):
        policy_loss(logp, old.float(), adv, mask)
    with pytest.raises(InvalidInputError, match=r"mask is \(5, 8\).*logp is \(5, 9\)"):
        policy_loss(logp, old, adv, mask[:, :8])
    with pytest.raises(InvalidInputError, match=r"advantages is \(4,\) but logp is \(5, 9\)"):
        policy_loss(logp, old, adv[:4], mask)
    with pytest.raises(InvalidInputError, match=r"advantages must be floating"):
        policy_loss(logp, old, np.ones(B, dtype=np.int64), mask)
    with pytest.raises(InvalidInputError, match="needs ref_logp"):
        policy_loss(logp, old, adv, mask, beta=0.1)
    with pytest.raises(InvalidInputError, match=r"ref_logp is \(5, 3\)"):
        policy_loss(logp, old, adv, mask, beta=0.1, ref_logp=ref[:, :3])
    with pytest.raises(InvalidInputError, match=r"entropy is \(5, 3\)"):
        policy_loss(logp, old, adv, mask, entropy=ref[:, :3])
    with pytest.raises(InvalidInputError, match="logp must be a float tensor"):
        policy_loss(logp[0], old[0], adv, mask[0])
    with pytest.raises(InvalidInputError, match="unknown loss_type 'ppo'"):
        policy_loss(logp, old, adv, mask, loss_type="ppo")
    with pytest.raises(InvalidInputError, match="unknown kl"):
        policy_loss(logp, old, adv, mask, beta=0.1, ref_logp=ref, kl="k4")
    with pytest.raises(InvalidInputError, match="unknown importance_sampling_level"):
        policy_loss(logp, old, adv, mask, importance_sampling_level="seq")
    with pytest.raises(InvalidInputError, match="dual_clip must be > 1"):
        policy_loss(logp, old, adv, mask, dual_clip=0.5)
    with pytest.raises(InvalidInputError, match="delta must be > 1"):
        policy_loss(logp, old, adv, mask, delta=1.0)
    with pytest.raises(InvalidInputError, match="eps_low"):
        policy_loss(logp, old, adv, mask, eps_low=1.0)
    with pytest.raises(InvalidInputError, match="normalizer"):
        policy_loss(logp, old, adv, mask, loss_type="dapo", normalizer=0)
    with pytest.raises(InvalidInputError, match="max_completion_length"):
        policy_loss(logp, old, adv, mask, loss_type="dr_grpo", max_completion_length=0)
