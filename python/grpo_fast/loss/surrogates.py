"""The per-token objectives of the policy loss (:data:`SURROGATE_REGISTRY`), and the
choice of tokens by entropy.

:func:`grpo_fast.loss.policy_loss` looks up ``options.surrogate`` here. Each
surrogate takes the :class:`Ratios` of a batch and the
:class:`~grpo_fast.loss.options.LossOptions` and returns a :class:`Term`: the
per-token loss ``[B, T]`` (the negated objective, before the mask and the
aggregation), the ratio band its clip fractions count, and its own flags to
report. On policy (``old_logp = logp.detach()``, ratio 1) every surrogate has
PPO's gradient, ``-A * grad logp``; they differ once the ratio moves away from
1 (``num_iterations > 1``, or a sampler that is not the trainer).

Written with tensor methods only: importing this module does not import torch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, NamedTuple

from grpo_fast.loss.registry import Registry

if TYPE_CHECKING:
    import torch

    from grpo_fast.loss.options import LossOptions

__all__ = [
    "SURROGATES",
    "SURROGATE_REGISTRY",
    "Ratios",
    "Term",
    "cispo",
    "gmpo",
    "high_entropy_mask",
    "ppo",
    "quantile",
    "sapo",
]


class Ratios(NamedTuple):
    """What a surrogate reads, each ``[B, T]``; ``adv`` broadcast to the tokens."""

    logp: torch.Tensor  # the policy's log-probs (with grad)
    log_ratio: torch.Tensor  # logp - old_logp (GSPO's straight-through sequence form if asked)
    ratio: torch.Tensor  # exp(log_ratio), bounded
    adv: torch.Tensor
    mask: torch.Tensor  # float 0/1


class Term(NamedTuple):
    """A surrogate's per-token loss, the ratio band of its clip fractions (None: it has
    no hard clip) and its own ``[B, T]`` flags to report as token means."""

    per_token: torch.Tensor
    band: tuple[float, float] | None = None
    flags: dict[str, Any] | None = None


#: ``options.surrogate`` -> the surrogate.
SURROGATE_REGISTRY: Registry[Any] = Registry("surrogate")


@SURROGATE_REGISTRY.register("ppo")
def ppo(x: Ratios, o: LossOptions) -> Term:
    """PPO's clipped ratio (the GRPO objective): ``max(-A r, -A clip(r, 1 - eps_low,
    1 + eps_high))``; ``delta`` caps the unclipped ratio (INTELLECT-2's two-sided clip),
    ``dual_clip`` caps a negative-advantage token's loss at ``dual_clip * |A|``."""
    clipped = x.ratio.clamp(1 - o.eps_low, 1 + o.eps_high)
    capped = x.ratio if o.delta is None else x.ratio.clamp(max=o.delta)
    per_token = (-x.adv * capped).maximum(-x.adv * clipped)
    flags = None
    if o.dual_clip is not None:
        per_token = per_token.minimum(-x.adv * o.dual_clip).where(x.adv < 0, per_token)
        flags = {"dual_clip_frac": (x.ratio > o.dual_clip) & (x.adv < 0)}
    return Term(per_token, (1 - o.eps_low, 1 + o.eps_high), flags)


@SURROGATE_REGISTRY.register("cispo")
def cispo(x: Ratios, o: LossOptions) -> Term:
    """CISPO (MiniMax-M1, Chen et al. 2025): ``-sg(clip(r, 1 - eps_low, 1 + eps_high)) * A * logp``.

    The importance weight is clipped and detached; the gradient flows through
    ``logp`` of every token, so no token's update is dropped (PPO's clip cuts
    the gradient of a token whose ratio left the band). ``eps_low >= 1``
    removes the lower bound, as the paper does (TRL's ``loss_type="cispo"``
    bounds only above, at ``epsilon_high``; verl's ``cispo`` on both sides).
    Reports ``cispo_clip_frac`` (weights clipped, either side, any advantage).
    """
    low = 1 - o.eps_low if o.eps_low < 1 else None
    weight = x.ratio.detach().clamp(min=low, max=1 + o.eps_high)
    outside = (x.ratio < (-math.inf if low is None else low)) | (x.ratio > 1 + o.eps_high)
    return Term(-weight * x.adv * x.logp, None, {"cispo_clip_frac": outside.detach()})


@SURROGATE_REGISTRY.register("sapo")
def sapo(x: Ratios, o: LossOptions) -> Term:
    """SAPO (Gao et al. 2025, "Soft Adaptive Policy Optimization"): ``-f(r) * A``.

    A sigmoid gate instead of a hard clip, ``f(r) = sigmoid(tau (r - 1)) * 4 / tau``,
    with ``tau = sapo_tau_pos`` where ``A > 0`` and ``sapo_tau_neg`` elsewhere (TRL's
    ``sapo_temperature_pos`` / ``_neg``, verl's ``tau_pos`` / ``tau_neg``, both
    1.0 / 1.05 by default). ``f(1) = 2 / tau`` and ``f'(1) = 1``: on policy it
    is PPO's gradient; off policy the gradient fades smoothly as ``r`` leaves 1
    (``f'(r) = 4 s (1 - s)`` with ``s = sigmoid(tau (r - 1))``). No clip fraction.
    """
    adv = x.adv
    tau = adv.new_tensor(o.sapo_tau_pos).where(adv > 0, adv.new_tensor(o.sapo_tau_neg))
    return Term(-((tau * (x.ratio - 1)).sigmoid() * (4 / tau)) * adv)


@SURROGATE_REGISTRY.register("gmpo")
def gmpo(x: Ratios, o: LossOptions) -> Term:
    """GMPO (Zhao et al. 2025, "Geometric-Mean Policy Optimization"): ``-A * gm_i``.

    ``gm_i = exp(mean_t(sign(A) * min(sign(A) * lr_t, sign(A) * clip(lr_t, -eps_low, eps_high))))``
    over the sequence's tokens, with ``lr_t = logp - old_logp``: the
    geometric mean of the token ratios, each clipped in log space
    (``[e^-eps_low, e^eps_high]``, the band of its clip fractions; the paper
    uses 0.4) and pessimistically as in PPO. An outlier token moves the
    geometric mean less than it moves the arithmetic one. The value is the
    same on every token of a sequence, so ``loss_type="grpo"`` (a mean over
    sequences of token means) gives the paper's ``mean_i(-A_i * gm_i)`` (and,
    with per-token advantages, verl's ``geo_mean``: ``A_i`` the sequence's mean
    advantage). Sequence-level by construction: token ``importance_sampling_level`` only.
    """
    m, s = x.mask, x.adv.sign()
    log_ratio = x.log_ratio.clamp(max=MAX_LOG_RATIO)
    clipped = log_ratio.clamp(-o.eps_low, o.eps_high)
    pessimistic = s * (s * log_ratio).minimum(s * clipped)
    seq = (pessimistic * m).sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp(min=1)
    return Term(-x.adv * seq.exp(), (math.exp(-o.eps_low), math.exp(o.eps_high)))


#: The values of ``surrogate`` (``policy_loss``, ``LossOptions``, ``TrainerConfig``).
SURROGATES = SURROGATE_REGISTRY.names

# exp() of a log-ratio beyond this overflows the loss; verl clamps at the same place.
MAX_LOG_RATIO = 20.0


def quantile(values: torch.Tensor, q: float) -> torch.Tensor:
    """The ``q``-quantile of a 1-D tensor with linear interpolation (``torch.quantile``'s
    default), without its limit of 16M elements.

    Examples
    --------
    >>> import torch
    >>> float(quantile(torch.tensor([4.0, 1.0, 3.0, 2.0]), 0.5))
    2.5
    """
    v = values.sort().values
    pos = q * (v.numel() - 1)
    lo = int(pos)
    hi = min(lo + 1, v.numel() - 1)
    return v[lo] + (v[hi] - v[lo]) * (pos - lo)


def high_entropy_mask(entropy: torch.Tensor, mask: torch.Tensor, top: float) -> torch.Tensor:
    """The tokens of ``mask`` whose entropy is among the highest ``top`` share of the batch.

    "Beyond the 80/20 rule" (Wang et al. 2025): training on the ~20% of
    tokens where the policy is most uncertain ("forking tokens") matches or
    beats training on all. As TRL's ``top_entropy_quantile``: one threshold
    over every token of the batch (not per sequence), the ``1 - top``
    quantile of their entropies, and a token is kept when its entropy is at or
    above it (ties kept; ``top = 0`` keeps the highest-entropy token(s)).

    Examples
    --------
    >>> import torch
    >>> h = torch.tensor([[0.1, 2.0, 0.3], [1.5, 0.2, 9.9]])
    >>> high_entropy_mask(h, torch.tensor([[1, 1, 1], [1, 1, 0]]), 0.4).int().tolist()
    [[0, 1, 0], [1, 0, 0]]
    """
    valid = mask.bool()
    values = entropy.detach()[valid]
    if values.numel() == 0:
        return valid
    threshold = quantile(values.double(), 1.0 - top)
    return (entropy.detach().double() >= threshold) & valid
