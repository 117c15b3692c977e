"""The GRPO policy loss and its variants (DAPO, Dr. GRPO, GSPO, dual-clip PPO, TIS/MIS,
CISPO, SAPO, GMPO, entropy bonus and high-entropy tokens).

:func:`policy_loss` is a composition: the importance ratio, the surrogate
(:mod:`~grpo_fast.loss.surrogates`), the tokens that learn, the sampler's
weights (:mod:`~grpo_fast.loss.mismatch`), the KL term
(:mod:`~grpo_fast.loss.kl`), the aggregation (:mod:`~grpo_fast.loss.aggregation`),
the entropy bonus; each part is looked up by name in its registry, with the
:class:`~grpo_fast.loss.options.LossOptions` checked once. The inputs'
checks are in :mod:`~grpo_fast.loss.inputs`, the metrics below.

torch is imported when a loss is computed, not by importing this module.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpo_fast.loss.aggregation import AGGREGATION_REGISTRY, LOSS_TYPES
from grpo_fast.loss.inputs import Inputs, check_inputs
from grpo_fast.loss.kl import KL_ESTIMATORS, KL_REGISTRY
from grpo_fast.loss.mismatch import sampler_weights
from grpo_fast.loss.options import IS_LEVELS, OPTION_NAMES, LossOptions
from grpo_fast.loss.surrogates import (
    MAX_LOG_RATIO,
    SURROGATE_REGISTRY,
    SURROGATES,
    Ratios,
    Term,
    high_entropy_mask,
)

if TYPE_CHECKING:
    import torch

__all__ = ["IS_LEVELS", "KL_ESTIMATORS", "LOSS_TYPES", "SURROGATES", "policy_loss"]


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    advantages: Any,
    mask: Any,
    options: LossOptions | None = None,
    *,
    ref_logp: torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
    sampler_logp: torch.Tensor | None = None,
    token_weights: torch.Tensor | None = None,
    normalizer: float | torch.Tensor | None = None,
    **option_values: Any,
) -> tuple[torch.Tensor, dict[str, float]]:
    """Clipped-ratio policy-gradient loss with an optional KL penalty to a reference.

    Parameters
    ----------
    logp : float tensor [B, T]
        Log-probs of the sampled tokens under the policy being trained (with grad).
    old_logp : float tensor [B, T] or None
        Log-probs under the policy that sampled them; None means on-policy
        (``logp.detach()``: the ratio is 1 and only its gradient matters).
    advantages : numpy array or tensor, [B] or [B, T]
        Used zero-copy when it is a CPU numpy array of ``logp``'s dtype.
    mask : bool or 0/1 tensor [B, T]
        Completion tokens that count.
    options : LossOptions, optional
        The options below, checked once; or give them as keywords
        (``policy_loss(..., eps_high=0.28)``), not both.
    ref_logp : float tensor [B, T], optional
        Reference-model log-probs; needed only when ``beta > 0``.
    entropy : float tensor [B, T], optional
        Per-token entropy of the policy (``token_logprobs(..., return_entropy=True)``):
        reported (``entropy_mean``), and needed by ``entropy_coef`` (then with
        its gradient) and ``top_entropy_quantile``.
    sampler_logp : float tensor [B, T], optional
        The sampler's log-probs of the tokens (vLLM's); each token's
        policy-gradient term is then weighted by :func:`grpo_fast.loss.mismatch.sampler_weights`
        of ``rho = exp(old_logp - sampler_logp)``: ``sampler_correction="tis"``
        ``min(rho, C)``, ``"mis"`` ``rho`` inside ``[1/C, C]`` and 0 outside,
        ``"none"`` 1 (only measured), with ``C = sampler_threshold``, per token
        or per sequence (``sampler_level="sequence"``: the geometric mean of
        the sequence's ratios).
    token_weights : float tensor [B, T], optional
        Constant weights of each token's policy-gradient term, computed by the
        caller (verl's ``rollout_is_weights``).
    normalizer : float or scalar tensor, optional
        For "dapo": the number of completion tokens in the whole global batch
        (all accumulation steps and ranks), so every token weighs the same;
        defaults to this batch's ``sum(mask)``. For "grpo": the number of
        sequences in the global batch (the sum of per-sequence means is divided
        by it); defaults to B.

    Options
    -------
    eps_low, eps_high : float
        Ratio clipped to ``[1 - eps_low, 1 + eps_high]`` (DAPO's clip-higher: eps_high > eps_low).
    dual_clip : float > 1, optional
        For negative advantages the loss is also capped at ``dual_clip * |A|``
        (Ye et al. 2020, dual-clip PPO).
    delta : float > 1, optional
        Upper cap on the unclipped ratio (INTELLECT-2's two-sided clipping, TRL ``delta``).
    importance_sampling_level : "token" or "sequence"
        "sequence" is GSPO (Zheng et al. 2025): one ratio per sequence,
        ``exp(mean_t(logp - old_logp))``, in its token-level straight-through form
        ``sg[s_i] * exp(logp_t - sg[logp_t])`` so advantages may be per token.
    beta : float >= 0
        KL weight; the KL term is skipped entirely when 0.
    kl : "k3", "k1" or "k2"
        Schulman's estimators of KL(pi || ref) (:mod:`grpo_fast.loss.kl`).
    loss_type : "grpo", "bnpo", "token_mean", "dapo" or "dr_grpo"
        How per-token losses ``l`` are averaged (``m`` the mask,
        :mod:`grpo_fast.loss.aggregation`): "grpo": ``mean_i(sum_t l m / sum_t m)``;
        "bnpo" and "token_mean": ``sum l m / sum m``; "dapo": ``sum l m / normalizer``;
        "dr_grpo": ``sum l m / (B * max_completion_length)``.
    max_completion_length : int, optional
        For "dr_grpo"; defaults to T.
    surrogate : "ppo", "cispo", "sapo" or "gmpo"
        The per-token objective (:mod:`grpo_fast.loss.surrogates`): "ppo", the
        clipped ratio above; "cispo" (MiniMax-M1), ``-sg(clip(r, 1 - eps_low,
        1 + eps_high)) * A * logp``, a clipped, detached importance weight, the
        gradient through every token's ``logp`` (``eps_low >= 1``: no lower
        bound); "sapo" (Gao et al. 2025), ``-sigmoid(tau (r - 1)) * 4 / tau * A``,
        a soft gate instead of a hard clip; "gmpo" (Zhao et al. 2025), the
        geometric mean of the sequence's token ratios, each clipped in log
        space to ``[-eps_low, eps_high]``, times ``-A`` (use ``loss_type="grpo"``
        for the paper's mean over sequences). ``dual_clip`` and ``delta`` are
        PPO's; "gmpo" is sequence-level by construction (token
        ``importance_sampling_level`` only).
    sapo_tau_pos, sapo_tau_neg : float > 0
        SAPO's gate temperatures where ``A > 0`` and elsewhere (TRL's and verl's defaults).
    entropy_coef : float
        Entropy bonus: ``entropy_coef * mean(entropy)`` over the tokens that
        learn is subtracted from the loss (TRL's ``entropy_coef``: a token
        mean whatever the ``loss_type``). Needs ``entropy`` with its gradient.
    top_entropy_quantile : float in [0, 1]
        Only the tokens whose entropy is in the top ``top_entropy_quantile``
        share of the batch's tokens get a policy-gradient term (Wang et al.
        2025, "Beyond the 80/20 rule"; TRL's option of the same name, one
        threshold over all tokens of ``mask`` in this call: the trainer's
        micro-batch, per rank, where TRL gathers the ranks' tokens first);
        the KL term and the denominators keep every token. 1 keeps all.
    sampler_correction, sampler_level, sampler_threshold
        See ``sampler_logp``.

    Returns
    -------
    loss : scalar tensor
    metrics : dict of plain Python floats (one device sync for all of them)
        ``clip_frac_low`` (ratio below ``1 - eps_low`` with A < 0, gradient cut),
        ``clip_frac_high`` (above ``1 + eps_high`` with A > 0), ``clip_frac``
        (their sum), ``ratio_mean``, plus ``dual_clip_frac``, ``kl_mean``,
        ``entropy_mean`` when those options are used; token means over the mask.
        The clip fractions are PPO's and GMPO's (its band is ``[e^-eps_low,
        e^eps_high]``); CISPO reports ``cispo_clip_frac`` (weights clipped,
        either side, any advantage) instead, SAPO no clip fraction.
        ``top_entropy_frac``: the share of tokens ``top_entropy_quantile`` kept.
        With ``sampler_logp``: ``mismatch_kl``, ``mismatch_ratio_min`` /
        ``_mean`` / ``_max``, ``mismatch_masked_frac``, ``mismatch_truncated_frac``
        (see :func:`~grpo_fast.loss.mismatch.sampler_weights`).

    Examples
    --------
    >>> import numpy as np, torch
    >>> logp = torch.randn(4, 6, requires_grad=True)
    >>> mask = torch.ones(4, 6, dtype=torch.bool)
    >>> loss, metrics = policy_loss(logp, logp.detach(), np.array([1.0, -1, 0.5, 0]), mask)
    >>> loss.backward()
    >>> loss, _ = policy_loss(logp, None, np.ones(4), mask, LossOptions(surrogate="cispo"))
    """
    o = _options(options, option_values)
    x = check_inputs(
        logp, old_logp, advantages, mask, o, ref_logp, entropy, sampler_logp, token_weights
    )
    ratios = importance_ratios(x, o.importance_sampling_level)
    term: Term = SURROGATE_REGISTRY[o.surrogate](ratios, o)
    learns, per_token = x.m, term.per_token
    if o.top_entropy_quantile < 1:  # only the batch's highest-entropy tokens learn
        learns = x.m * high_entropy_mask(x.entropy, x.m, o.top_entropy_quantile).to(x.m.dtype)
        per_token = per_token * learns
    mismatch: dict[str, Any] = {}
    if x.sampler_logp is not None:  # the sampler is not the trainer: TIS / MIS weights
        w, mismatch = sampler_weights(
            x.old_logp,
            x.sampler_logp,
            x.m,
            correction=o.sampler_correction,
            level=o.sampler_level,
            threshold=o.sampler_threshold,
        )
        per_token = per_token * w
    if x.token_weights is not None:
        per_token = per_token * x.token_weights
    if o.beta != 0.0:
        per_token = per_token + o.beta * KL_REGISTRY[o.kl](x.logp, x.ref_logp)
    loss = AGGREGATION_REGISTRY[o.loss_type](per_token * x.m, x.m, o, normalizer)
    if o.entropy_coef != 0.0:  # the mean entropy of the tokens that learn, any loss_type (TRL)
        loss = loss - o.entropy_coef * (x.entropy * learns).sum() / learns.sum().clamp(min=1)
    flags = {**mismatch, **(term.flags or {})}
    if o.top_entropy_quantile < 1:
        flags["top_entropy_frac"] = learns.sum() / x.m.sum().clamp(min=1)
    return loss, _metrics(x, ratios, term, o, flags)


def _options(options: LossOptions | None, values: dict[str, Any]) -> LossOptions:
    unknown = sorted(set(values) - OPTION_NAMES)
    if unknown:
        raise TypeError(f"policy_loss() got unexpected keyword argument(s) {unknown}")
    if options is None:
        return LossOptions(**values)
    if values:
        return options.replace(**values)
    return options


def importance_ratios(x: Inputs, level: str) -> Ratios:
    """The importance ratio per token, or per sequence (GSPO's straight-through form)."""
    log_ratio = x.logp - x.old_logp
    if level == "sequence":
        m = x.m
        seq = (log_ratio * m).sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp(min=1)
        log_ratio = x.logp - x.logp.detach() + seq.detach()
    ratio = log_ratio.clamp(max=MAX_LOG_RATIO).exp()
    return Ratios(x.logp, log_ratio, ratio, x.adv, x.m)


def _metrics(
    x: Inputs, r: Ratios, term: Term, o: LossOptions, flags: dict[str, Any]
) -> dict[str, float]:
    """Token means over the mask; ``flags`` holds 0-d values, or ``[B, T]`` flags to average."""
    import torch

    with torch.no_grad():
        m = x.m
        count = m.sum().clamp(min=1)

        def mean(v: torch.Tensor) -> torch.Tensor:
            return (v.to(m.dtype) * m).sum() / count

        values: dict[str, torch.Tensor] = {}
        if term.band is not None:
            low = mean((r.ratio < term.band[0]) & (r.adv < 0))
            high = mean((r.ratio > term.band[1]) & (r.adv > 0))
            values.update(clip_frac_low=low, clip_frac_high=high, clip_frac=low + high)
        values["ratio_mean"] = mean(r.ratio)
        if o.beta != 0.0:
            values["kl_mean"] = mean(KL_REGISTRY[o.kl](x.logp.detach(), x.ref_logp))
        if x.entropy is not None:
            values["entropy_mean"] = mean(x.entropy.detach())
        for k, v in flags.items():
            values[k] = mean(v) if v.dim() else v.to(count.dtype)
        floats = torch.stack(list(values.values())).tolist()  # one sync
    out = dict(zip(values, floats, strict=True))
    if out.pop("_nonfinite", 0.0) > 0:
        from grpo_fast.errors import InvalidInputError

        raise InvalidInputError("sampler_logp is not finite on some tokens of the mask")
    return out
