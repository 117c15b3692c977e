"""CISPO, SAPO, GMPO, the entropy bonus and the high-entropy tokens of policy_loss.

Each against float64 formulas written here from the papers (values and
gradients), and against the peers installed in the venv: verl's
``compute_policy_loss_cispo`` / ``_sapo`` / ``_geo_mean`` and TRL's
``GRPOTrainer.get_high_entropy_mask``.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.loss import policy_loss  # noqa: E402
from grpo_fast.loss.surrogates import high_entropy_mask, quantile  # noqa: E402

B, T = 6, 8
LENGTHS = [8, 4, 1, 7, 5, 8]
LOSS_TYPES = ["grpo", "bnpo", "dapo", "dr_grpo"]


def make(seed=0, per_token_adv=False, spread=0.5):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    # Log-ratios of about +-spread: both sides of every clip band are reached.
    old = logp + (torch.rand(B, T, generator=g, dtype=torch.float64) - 0.5) * 2 * spread
    shape = (B, T) if per_token_adv else (B,)
    adv = torch.randn(shape, generator=g, dtype=torch.float64)
    mask = torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]
    entropy = torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    return logp, old, adv, mask, entropy


def aggregate(per_token, mask, loss_type):
    """The aggregations, written per sequence in float64."""
    m = mask.double()
    if loss_type == "grpo":
        rows = [(per_token[i] * m[i]).sum() / max(float(m[i].sum()), 1.0) for i in range(B)]
        return torch.stack(rows).mean()
    if loss_type in ("bnpo", "dapo"):
        return (per_token * m).sum() / m.sum()
    return (per_token * m).sum() / (B * T)


def value_and_grad(fn, logp):
    x = logp.detach().clone().requires_grad_(True)
    out = fn(x)
    out.backward()
    return out.detach(), x.grad


def full(adv):
    return adv if adv.dim() == 2 else adv[:, None].expand(B, T)


# --- CISPO -------------------------------------------------------------------------------


def ref_cispo(logp, old, adv, eps_low, eps_high):
    # MiniMax-M1 eq. (4): J = sg(r_hat) * A * log pi, r_hat = clip(r, 1 - eps_low, 1 + eps_high).
    r = torch.exp(logp.detach() - old)
    low = 1 - eps_low if eps_low < 1 else 0.0
    w = torch.clamp(r, low, 1 + eps_high)
    return -(w * full(adv) * logp)


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("eps", [(0.2, 0.28), (1.0, 0.1), (0.05, 4.0)])
@pytest.mark.parametrize("per_token_adv", [False, True])
def test_cispo_value_and_gradient(loss_type, eps, per_token_adv):
    logp, old, adv, mask, _ = make(seed=1, per_token_adv=per_token_adv)
    low, high = eps
    v, g = value_and_grad(
        lambda x: policy_loss(
            x, old, adv, mask, surrogate="cispo", eps_low=low, eps_high=high, loss_type=loss_type
        )[0],
        logp,
    )
    rv, rg = value_and_grad(
        lambda x: aggregate(ref_cispo(x, old, adv, low, high), mask, loss_type), logp
    )
    torch.testing.assert_close(v, rv, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g, rg, rtol=1e-12, atol=1e-12)
    # Every counted token gets a gradient, clipped or not (PPO's clip would cut some).
    assert (g[mask] != 0).all()


def test_cispo_gradient_of_a_clipped_token_is_its_clipped_weight():
    logp = torch.log(torch.tensor([[0.5, 0.5]], dtype=torch.float64))
    old = torch.log(torch.tensor([[0.25, 0.5]], dtype=torch.float64))  # ratios 2 and 1
    adv = torch.tensor([1.0], dtype=torch.float64)
    mask = torch.ones(1, 2, dtype=torch.bool)
    _, g = value_and_grad(
        lambda x: policy_loss(x, old, adv, mask, surrogate="cispo", eps_high=0.28)[0], logp
    )
    # d/dlogp of -sg(w) A logp, averaged over 2 tokens: -w / 2, with w = min(2, 1.28) and 1.
    assert g[0].tolist() == pytest.approx([-1.28 / 2, -1.0 / 2])
    _, m = policy_loss(logp, old, adv, mask, surrogate="cispo", eps_high=0.28)
    assert m["cispo_clip_frac"] == 0.5 and "clip_frac" not in m


# --- SAPO --------------------------------------------------------------------------------


def ref_sapo(logp, old, adv, tau_pos, tau_neg):
    # SAPO: f(r) = sigmoid(tau (r - 1)) * 4 / tau, tau by the sign of A.
    r = torch.exp(logp - old)
    a = full(adv)
    tau = torch.where(a > 0, torch.full_like(a, tau_pos), torch.full_like(a, tau_neg))
    return -(1 / (1 + torch.exp(-tau * (r - 1)))) * 4 / tau * a


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
@pytest.mark.parametrize("taus", [(1.0, 1.05), (0.5, 3.0)])
def test_sapo_value_and_gradient(loss_type, taus):
    logp, old, adv, mask, _ = make(seed=2, per_token_adv=True, spread=1.0)
    v, g = value_and_grad(
        lambda x: policy_loss(
            x,
            old,
            adv,
            mask,
            surrogate="sapo",
            sapo_tau_pos=taus[0],
            sapo_tau_neg=taus[1],
            loss_type=loss_type,
        )[0],
        logp,
    )
    rv, rg = value_and_grad(
        lambda x: aggregate(ref_sapo(x, old, adv, *taus), mask, loss_type), logp
    )
    torch.testing.assert_close(v, rv, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g, rg, rtol=1e-12, atol=1e-12)
    # The analytic gradient of -f(r) A w.r.t. logp is -A r f'(r), f'(r) = 4 s (1 - s).
    r = torch.exp(logp - old)
    tau = torch.where(adv > 0, torch.full_like(adv, taus[0]), torch.full_like(adv, taus[1]))
    s = torch.sigmoid(tau * (r - 1))
    per_token = -adv * r * 4 * s * (1 - s)
    if loss_type == "bnpo":
        torch.testing.assert_close(g, per_token * mask / mask.sum(), rtol=1e-12, atol=1e-12)


# --- GMPO --------------------------------------------------------------------------------


def ref_gmpo(logp, old, adv, mask, eps_low, eps_high):
    """GMPO's objective (Zhao et al. 2025, eq. 7) sequence by sequence, as a loss."""
    losses = []
    for i in range(B):
        n = int(mask[i].sum())
        if n == 0:
            losses.append(logp[i, 0] * 0)
            continue
        a = float(adv[i])
        terms = []
        for t in range(n):
            lr = logp[i, t] - old[i, t]
            clipped = torch.clamp(lr, -eps_low, eps_high)
            # min(r A, clip(r) A) in log space, for the sign of A.
            terms.append(torch.minimum(lr, clipped) if a > 0 else torch.maximum(lr, clipped))
        losses.append(-a * torch.exp(torch.stack(terms).mean()))
    return torch.stack(losses).mean()


@pytest.mark.parametrize("eps", [(0.4, 0.4), (0.1, 0.3)])
def test_gmpo_value_and_gradient(eps):
    logp, old, adv, mask, _ = make(seed=3, spread=0.6)
    v, g = value_and_grad(
        lambda x: policy_loss(x, old, adv, mask, surrogate="gmpo", eps_low=eps[0], eps_high=eps[1])[
            0
        ],
        logp,
    )
    rv, rg = value_and_grad(lambda x: ref_gmpo(x, old, adv, mask, *eps), logp)
    torch.testing.assert_close(v, rv, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g, rg, rtol=1e-12, atol=1e-12)
    # Some tokens are clipped (no gradient), others are not.
    assert (g[mask] == 0).any() and (g[mask] != 0).any()
    _, m = policy_loss(logp, old, adv, mask, surrogate="gmpo", eps_low=eps[0], eps_high=eps[1])
    lr, a = logp - old, adv[:, None].expand(B, T)
    n = mask.sum().item()
    assert m["clip_frac_high"] == pytest.approx(((lr > eps[1]) & (a > 0) & mask).sum().item() / n)
    assert m["clip_frac_low"] == pytest.approx(((lr < -eps[0]) & (a < 0) & mask).sum().item() / n)


@pytest.mark.parametrize("surrogate", ["cispo", "sapo", "gmpo"])
def test_on_policy_every_surrogate_has_ppos_gradient(surrogate):
    logp, _, adv, mask, _ = make(seed=4)
    _, g = value_and_grad(lambda x: policy_loss(x, None, adv, mask, surrogate=surrogate)[0], logp)
    m = mask.double()
    expected = -adv[:, None] * m / m.sum(-1, keepdim=True).clamp(min=1) / B
    torch.testing.assert_close(g, expected, rtol=1e-12, atol=1e-14)


# --- against verl's own losses -----------------------------------------------------------


def verl_config(low, high, mode, **extra):
    from verl.workers.config import FSDPActorConfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FSDPActorConfig(
            strategy="fsdp",
            rollout_n=1,
            ppo_micro_batch_size_per_gpu=1,
            clip_ratio=low,
            clip_ratio_low=low,
            clip_ratio_high=high,
            loss_agg_mode=mode,
            **extra,
        )


def run_verl(name, logp, old, adv, mask, mode, cfg):
    core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")
    fn = core_algos.get_policy_loss_fn(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return value_and_grad(
            lambda x: fn(
                old_log_prob=old,
                log_prob=x,
                advantages=full(adv).contiguous(),
                response_mask=mask.double(),
                loss_agg_mode=mode,
                config=cfg,
            )[0],
            logp,
        )


@pytest.mark.parametrize("mode,ours", [("token-mean", "bnpo"), ("seq-mean-token-mean", "grpo")])
def test_cispo_equals_verls(mode, ours):
    logp, old, adv, mask, _ = make(seed=5)
    rv, rg = run_verl("cispo", logp, old, adv, mask, mode, verl_config(0.2, 0.28, mode))
    v, g = value_and_grad(
        lambda x: policy_loss(
            x, old, adv, mask, surrogate="cispo", eps_low=0.2, eps_high=0.28, loss_type=ours
        )[0],
        logp,
    )
    torch.testing.assert_close(v, rv, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(g, rg, rtol=1e-7, atol=1e-9)


def test_sapo_equals_verls():
    logp, old, adv, mask, _ = make(seed=6, per_token_adv=True, spread=1.0)
    cfg = verl_config(0.2, 0.2, "seq-mean-token-mean", tau_pos=0.8, tau_neg=1.3)
    rv, rg = run_verl("sapo", logp, old, adv, mask, "seq-mean-token-mean", cfg)
    v, g = value_and_grad(
        lambda x: policy_loss(
            x, old, adv, mask, surrogate="sapo", sapo_tau_pos=0.8, sapo_tau_neg=1.3
        )[0],
        logp,
    )
    torch.testing.assert_close(v, rv, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(g, rg, rtol=1e-7, atol=1e-9)


@pytest.mark.parametrize("per_token_adv", [False, True])
def test_gmpo_equals_verls_geo_mean(per_token_adv):
    logp, old, adv, mask, _ = make(seed=7, per_token_adv=per_token_adv, spread=0.6)
    rv, rg = run_verl(
        "geo_mean", logp, old, adv, mask, "token-mean", verl_config(0.3, 0.4, "token-mean")
    )
    v, g = value_and_grad(
        lambda x: policy_loss(x, old, adv, mask, surrogate="gmpo", eps_low=0.3, eps_high=0.4)[0],
        logp,
    )
    torch.testing.assert_close(v, rv, rtol=1e-7, atol=1e-9)
    torch.testing.assert_close(g, rg, rtol=1e-7, atol=1e-9)


# --- entropy: the bonus and the high-entropy tokens ---------------------------------------


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_entropy_bonus_value_and_gradient(loss_type):
    logp, old, adv, mask, entropy = make(seed=8)
    coef = 0.03
    h = entropy.clone().requires_grad_(True)
    loss, _ = policy_loss(logp, old, adv, mask, entropy=h, entropy_coef=coef, loss_type=loss_type)
    base, _ = policy_loss(logp, old, adv, mask, loss_type=loss_type)
    m = mask.double()
    # TRL: loss - coef * (sum H m / sum m), whatever the loss_type.
    expected = base - coef * (entropy * m).sum() / m.sum()
    torch.testing.assert_close(loss, expected, rtol=1e-12, atol=1e-12)
    loss.backward()
    torch.testing.assert_close(h.grad, -coef * m / m.sum(), rtol=1e-12, atol=1e-15)


def test_entropy_bonus_reaches_the_logits_through_token_logprobs():
    from grpo_fast.logprobs import token_logprobs

    g = torch.Generator().manual_seed(9)
    hidden = torch.randn(B, T, 5, generator=g, dtype=torch.float64, requires_grad=True)
    weight = torch.randn(11, 5, generator=g, dtype=torch.float64)
    targets = torch.randint(0, 11, (B, T), generator=g)
    _, _, adv, mask, _ = make(seed=9)
    coef = 0.5

    logp, entropy = token_logprobs(hidden, weight, targets, return_entropy=True)
    loss, _ = policy_loss(logp, None, adv, mask, entropy=entropy, entropy_coef=coef)
    loss.backward()
    ours = hidden.grad.clone()

    # The same objective on plain torch logits.
    x = hidden.detach().clone().requires_grad_(True)
    log_p = torch.log_softmax(x @ weight.T, -1)
    lp = log_p.gather(-1, targets[..., None])[..., 0]
    h = -(log_p.exp() * log_p).sum(-1)
    m = mask.double()
    pg = -(torch.exp(lp - lp.detach()) * adv[:, None] * m).sum(-1) / m.sum(-1).clamp(min=1)
    (pg.mean() - coef * (h * m).sum() / m.sum()).backward()
    torch.testing.assert_close(ours, x.grad, rtol=1e-10, atol=1e-12)


def test_quantile_equals_torch_and_numpy():
    g = torch.Generator().manual_seed(10)
    for n in (1, 2, 7, 100):
        v = torch.rand(n, generator=g, dtype=torch.float64)
        for q in (0.0, 0.2, 0.5, 0.8, 1.0):
            assert float(quantile(v, q)) == pytest.approx(float(np.quantile(v.numpy(), q)))
            assert float(quantile(v, q)) == pytest.approx(float(torch.quantile(v, q)))


class _OneProcess:
    """What TRL's get_high_entropy_mask reads from ``self``: a one-process accelerator."""

    class accelerator:  # noqa: N801
        @staticmethod
        def pad_across_processes(x, dim=0, pad_index=0):
            return x

        @staticmethod
        def gather(x):
            return x


@pytest.mark.parametrize("top", [0.0, 0.2, 0.5, 0.9, 1.0])
def test_high_entropy_mask_equals_trls(top):
    trl = pytest.importorskip("trl")
    _, _, _, mask, entropy = make(seed=11)
    ours = high_entropy_mask(entropy.float(), mask, top)
    theirs = trl.GRPOTrainer.get_high_entropy_mask(_OneProcess(), entropy.float(), mask, 1 - top)
    assert torch.equal(ours, theirs)
    kept = ours.sum().item()
    n = mask.sum().item()
    # The top share of the tokens, by entropy, over the whole batch.
    assert kept >= max(1, math.floor(top * n)) and kept <= math.ceil(top * n) + 1
    rest = entropy[mask & ~ours]
    if rest.numel():
        assert entropy[ours].min() >= rest.max()


@pytest.mark.parametrize("loss_type", LOSS_TYPES)
def test_top_entropy_tokens_value_and_gradient(loss_type):
    logp, old, adv, mask, entropy = make(seed=12)
    ref = logp + 0.3
    top = 0.2
    v, g = value_and_grad(
        lambda x: policy_loss(
            x,
            old,
            adv,
            mask,
            ref_logp=ref,
            beta=0.04,
            entropy=entropy,
            top_entropy_quantile=top,
            loss_type=loss_type,
        )[0],
        logp,
    )
    # The reference: numpy's quantile of the masked entropies; only those tokens' PPO term,
    # the KL term on every token, the denominators unchanged.
    threshold = np.quantile(entropy[mask].numpy(), 1 - top)
    keep = (entropy.numpy() >= threshold) & mask.numpy()
    keep = torch.from_numpy(keep).double()

    def reference(x):
        r = torch.exp(x - old)
        a = adv[:, None]
        ppo = -torch.minimum(r * a, torch.clamp(r, 0.8, 1.2) * a)
        d = ref - x
        kl = torch.exp(d) - d - 1
        return aggregate(ppo * keep + 0.04 * kl, mask, loss_type)

    rv, rg = value_and_grad(reference, logp)
    torch.testing.assert_close(v, rv, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(g, rg, rtol=1e-12, atol=1e-12)
    _, m = policy_loss(logp, old, adv, mask, entropy=entropy, top_entropy_quantile=top)
    assert m["top_entropy_frac"] == pytest.approx(keep.sum().item() / mask.sum().item())


def test_top_entropy_quantile_one_changes_nothing():
    logp, old, adv, mask, entropy = make(seed=13)
    a, _ = policy_loss(logp, old, adv, mask, entropy=entropy, top_entropy_quantile=1.0)
    b, _ = policy_loss(logp, old, adv, mask)
    assert torch.equal(a, b)


def test_bonus_counts_only_the_tokens_that_learn():
    logp, old, adv, mask, entropy = make(seed=14)
    both, _ = policy_loss(
        logp, old, adv, mask, entropy=entropy, entropy_coef=0.1, top_entropy_quantile=0.3
    )
    only_mask, _ = policy_loss(logp, old, adv, mask, entropy=entropy, top_entropy_quantile=0.3)
    keep = high_entropy_mask(entropy, mask, 0.3)
    expected = only_mask - 0.1 * entropy[keep].mean()
    torch.testing.assert_close(both, expected, rtol=1e-12, atol=1e-12)


# --- bad input ---------------------------------------------------------------------------


def test_bad_options_raise_invalid_input():
    logp, old, adv, mask, entropy = make(seed=15)
    logp = logp.requires_grad_(True)
    bad = [
        (dict(surrogate="nope"), "unknown surrogate 'nope'"),
        (dict(surrogate="cispo", dual_clip=3.0), "dual_clip and delta bound PPO"),
        (dict(surrogate="sapo", delta=2.0), "dual_clip and delta bound PPO"),
        (dict(surrogate="gmpo", importance_sampling_level="sequence"), "already a sequence"),
        (dict(surrogate="sapo", sapo_tau_neg=0.0), "sapo_tau_pos and sapo_tau_neg must be > 0"),
        (dict(surrogate="ppo", eps_low=1.0), "eps_low < 1"),
        (dict(surrogate="cispo", eps_low=-0.1), "0 <= eps_low"),
        (dict(entropy_coef=0.1), "entropy_coef needs the per-token entropy"),
        (dict(top_entropy_quantile=0.2), "top_entropy_quantile needs the per-token entropy"),
        (dict(entropy=entropy, top_entropy_quantile=1.5), r"must be in \[0, 1\]"),
        (dict(entropy=entropy, entropy_coef=float("nan")), "finite"),
        (dict(entropy=entropy, entropy_coef=0.1), "does not require grad"),
    ]
    for kwargs, message in bad:
        with pytest.raises(InvalidInputError, match=message):
            policy_loss(logp, old, adv, mask, **kwargs)


def test_cispo_without_lower_bound_and_gmpo_wide_band_are_accepted():
    logp, old, adv, mask, _ = make(seed=16)
    for kwargs in (dict(surrogate="cispo", eps_low=5.0), dict(surrogate="gmpo", eps_low=1.5)):
        loss, _ = policy_loss(logp, old, adv, mask, **kwargs)
        assert torch.isfinite(loss)
