"""The policy-gradient surrogates beside PPO's clip, and the choice of tokens by entropy.

:func:`grpo_fast.loss.policy_loss` computes PPO's clipped ratio itself (the
GRPO objective) and takes the others from here with ``surrogate=``. Each
function returns the per-token loss ``[B, T]`` (to be negated objective,
masked and aggregated by ``policy_loss``); ``ratio`` is
``exp(logp - old_logp)`` (GSPO's straight-through sequence ratio where the
caller asks for it) and ``adv`` the advantages broadcast to ``[B, T]``.

On policy (``old_logp = logp.detach()``, ratio 1) every surrogate has PPO's
gradient, ``-A * grad logp``; they differ once the ratio moves away from 1
(``num_iterations > 1``, or a sampler that is not the trainer).

torch is imported here, not by ``import grpo_fast``.
"""

from __future__ import annotations

import torch

__all__ = ["SURROGATES", "cispo", "gmpo", "high_entropy_mask", "quantile", "sapo"]

#: The values of ``policy_loss(surrogate=...)`` and ``TrainerConfig.surrogate``.
SURROGATES = ("ppo", "cispo", "sapo", "gmpo")


def cispo(
    logp: torch.Tensor, ratio: torch.Tensor, adv: torch.Tensor, eps_low: float, eps_high: float
) -> torch.Tensor:
    """CISPO (MiniMax-M1, Chen et al. 2025): ``-sg(clip(r, 1 - eps_low, 1 + eps_high)) * A * logp``.

    The importance weight is clipped and detached; the gradient flows through
    ``logp`` of every token, so no token's update is dropped (PPO's clip cuts
    the gradient of a token whose ratio left the band). ``eps_low >= 1``
    removes the lower bound, as the paper does (TRL's ``loss_type="cispo"``
    bounds only above, at ``epsilon_high``; verl's ``cispo`` on both sides).
    """
    low = 1 - eps_low if eps_low < 1 else None
    weight = ratio.detach().clamp(min=low, max=1 + eps_high)
    return -weight * adv * logp


def sapo(ratio: torch.Tensor, adv: torch.Tensor, tau_pos: float, tau_neg: float) -> torch.Tensor:
    """SAPO (Gao et al. 2025, "Soft Adaptive Policy Optimization"): ``-f(r) * A``.

    A sigmoid gate instead of a hard clip, ``f(r) = sigmoid(tau (r - 1)) * 4 / tau``,
    with ``tau = tau_pos`` where ``A > 0`` and ``tau_neg`` elsewhere (TRL's
    ``sapo_temperature_pos`` / ``_neg``, verl's ``tau_pos`` / ``tau_neg``, both
    1.0 / 1.05 by default). ``f(1) = 2 / tau`` and ``f'(1) = 1``: on policy it
    is PPO's gradient; off policy the gradient fades smoothly as ``r`` leaves 1
    (``f'(r) = 4 s (1 - s)`` with ``s = sigmoid(tau (r - 1))``).
    """
    tau = torch.where(adv > 0, adv.new_tensor(tau_pos), adv.new_tensor(tau_neg))
    return -(torch.sigmoid(tau * (ratio - 1)) * (4 / tau)) * adv


def gmpo(
    log_ratio: torch.Tensor,
    adv: torch.Tensor,
    m: torch.Tensor,
    eps_low: float,
    eps_high: float,
) -> torch.Tensor:
    """GMPO (Zhao et al. 2025, "Geometric-Mean Policy Optimization"): ``-A * gm_i``.

    ``gm_i = exp(mean_t(sign(A) * min(sign(A) * lr_t, sign(A) * clip(lr_t, -eps_low, eps_high))))``
    over the sequence's tokens (``m``), with ``lr_t = logp - old_logp``: the
    geometric mean of the token ratios, each clipped in log space
    (``[e^-eps_low, e^eps_high]``; the paper uses 0.4) and pessimistically as
    in PPO. An outlier token moves the geometric mean less than it moves the
    arithmetic one. The value is the same on every token of a sequence, so
    ``loss_type="grpo"`` (a mean over sequences of token means) gives the
    paper's ``mean_i(-A_i * gm_i)`` (and, with per-token advantages, verl's
    ``geo_mean``: ``A_i`` the sequence's mean advantage).
    """
    s = torch.sign(adv)
    clipped = log_ratio.clamp(-eps_low, eps_high)
    pessimistic = s * torch.minimum(s * log_ratio, s * clipped)
    seq = (pessimistic * m).sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp(min=1)
    return -adv * torch.exp(seq)


def quantile(values: torch.Tensor, q: float) -> torch.Tensor:
    """The ``q``-quantile of a 1-D tensor with linear interpolation (``torch.quantile``'s
    default), without its limit of 16M elements.

    Examples
    --------
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
    >>> h = torch.tensor([[0.1, 2.0, 0.3], [1.5, 0.2, 9.9]])
    >>> high_entropy_mask(h, torch.tensor([[1, 1, 1], [1, 1, 0]]), 0.4).int().tolist()
    [[0, 1, 0], [1, 0, 0]]
    """
    valid = mask.bool()
    values = entropy.detach()[valid]
    if values.numel() == 0:
        return valid
    threshold = quantile(values.to(torch.float64), 1.0 - top)
    return (entropy.detach().to(torch.float64) >= threshold) & valid
