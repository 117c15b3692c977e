"""The GRPO policy loss and its variants (DAPO, Dr. GRPO, GSPO, dual-clip PPO, TIS/MIS,
CISPO, SAPO, GMPO, entropy bonus and high-entropy tokens).

:func:`policy_loss` is the objective; the surrogates other than PPO's clip are
small functions in :mod:`grpo_fast.loss.surrogates`; the rest of the module checks inputs.

torch is imported here, not by ``import grpo_fast``.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import torch

from grpo_fast.errors import InvalidInputError
from grpo_fast.loss.mismatch import check_options as _check_sampler_options
from grpo_fast.loss.mismatch import sampler_weights
from grpo_fast.loss.surrogates import SURROGATES, cispo, gmpo, high_entropy_mask, sapo

__all__ = ["LOSS_TYPES", "SURROGATES", "policy_loss"]

LOSS_TYPES = ("grpo", "bnpo", "token_mean", "dapo", "dr_grpo")
KL_ESTIMATORS = ("k1", "k2", "k3")
IS_LEVELS = ("token", "sequence")

# exp() of a log-ratio beyond this overflows the loss; verl clamps at the same place.
_MAX_LOG_RATIO = 20.0
_MAX_K3 = 10.0


def policy_loss(
    logp: torch.Tensor,
    old_logp: torch.Tensor | None,
    advantages: Any,
    mask: Any,
    *,
    ref_logp: torch.Tensor | None = None,
    eps_low: float = 0.2,
    eps_high: float = 0.2,
    dual_clip: float | None = None,
    delta: float | None = None,
    importance_sampling_level: str = "token",
    beta: float = 0.0,
    kl: str = "k3",
    loss_type: str = "grpo",
    max_completion_length: int | None = None,
    normalizer: float | torch.Tensor | None = None,
    entropy: torch.Tensor | None = None,
    sampler_logp: torch.Tensor | None = None,
    sampler_correction: str = "tis",
    sampler_level: str = "token",
    sampler_threshold: float = 2.0,
    token_weights: torch.Tensor | None = None,
    surrogate: str = "ppo",
    sapo_tau_pos: float = 1.0,
    sapo_tau_neg: float = 1.05,
    entropy_coef: float = 0.0,
    top_entropy_quantile: float = 1.0,
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
    ref_logp : float tensor [B, T], optional
        Reference-model log-probs; needed only when ``beta > 0``.
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
    beta : float
        KL weight; the KL term is skipped entirely when 0.
    kl : "k3", "k1" or "k2"
        Schulman's estimators of KL(pi || ref): ``k1 = logp - ref``,
        ``k2 = (logp - ref)^2 / 2``, ``k3 = exp(ref - logp) - (ref - logp) - 1``
        (``ref - logp`` clamped to ±20 and k3 to at most 10, as verl does).
    loss_type : str
        How per-token losses ``l`` are averaged (``m`` the mask):
        "grpo": ``mean_i(sum_t l m / sum_t m)``; "bnpo" and "token_mean":
        ``sum l m / sum m``; "dapo": ``sum l m / normalizer``; "dr_grpo":
        ``sum l m / (B * max_completion_length)``.
    max_completion_length : int, optional
        For "dr_grpo"; defaults to T.
    normalizer : float or scalar tensor, optional
        For "dapo": the number of completion tokens in the whole global batch
        (all accumulation steps and ranks), so every token weighs the same;
        defaults to this batch's ``sum(mask)``. For "grpo": the number of
        sequences in the global batch (the sum of per-sequence means is divided
        by it); defaults to B.
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
    >>> logp = torch.randn(4, 6, requires_grad=True)
    >>> mask = torch.ones(4, 6, dtype=torch.bool)
    >>> loss, metrics = policy_loss(logp, logp.detach(), np.array([1.0, -1, 0.5, 0]), mask)
    >>> loss.backward()
    """
    old_logp, ref_logp, adv, m = _check_inputs(
        logp, old_logp, advantages, mask, ref_logp, beta, entropy
    )
    _check_options(
        eps_low, eps_high, dual_clip, delta, importance_sampling_level, kl, loss_type, surrogate
    )
    _check_entropy_options(logp, entropy, entropy_coef, top_entropy_quantile)
    if surrogate == "sapo" and not (sapo_tau_pos > 0 and sapo_tau_neg > 0):
        raise InvalidInputError(
            f"sapo_tau_pos and sapo_tau_neg must be > 0, got {sapo_tau_pos}, {sapo_tau_neg}"
        )
    if sampler_logp is not None:
        sampler_logp = _check_like("sampler_logp", sampler_logp, logp).detach()
        _check_sampler_options(sampler_correction, sampler_level, sampler_threshold)
    if token_weights is not None:
        token_weights = _check_like("token_weights", token_weights, logp).detach()

    # The importance ratio, per token or per sequence (GSPO).
    log_ratio = logp - old_logp
    if importance_sampling_level == "sequence":
        seq = (log_ratio * m).sum(-1, keepdim=True) / m.sum(-1, keepdim=True).clamp(min=1)
        log_ratio = logp - logp.detach() + seq.detach()
    ratio = torch.exp(log_ratio.clamp(max=_MAX_LOG_RATIO))

    bounds: tuple[float, float] | None = (1 - eps_low, 1 + eps_high)
    if surrogate == "ppo":
        # PPO's clipped surrogate: the pessimistic one of the raw and clipped ratio.
        clipped_ratio = ratio.clamp(1 - eps_low, 1 + eps_high)
        capped_ratio = ratio if delta is None else ratio.clamp(max=delta)
        per_token = torch.maximum(-adv * capped_ratio, -adv * clipped_ratio)
        if dual_clip is not None:  # bound the loss of a negative-advantage token at c * |A|
            per_token = torch.where(adv < 0, torch.minimum(per_token, -adv * dual_clip), per_token)
    elif surrogate == "cispo":
        per_token, bounds = cispo(logp, ratio, adv, eps_low, eps_high), None
    elif surrogate == "sapo":
        per_token, bounds = sapo(ratio, adv, sapo_tau_pos, sapo_tau_neg), None
    else:
        per_token = gmpo(log_ratio.clamp(max=_MAX_LOG_RATIO), adv, m, eps_low, eps_high)
        bounds = (math.exp(-eps_low), math.exp(eps_high))

    # Only the batch's highest-entropy tokens learn (Wang et al. 2025).
    learns = m
    if top_entropy_quantile < 1:
        assert entropy is not None
        learns = m * high_entropy_mask(entropy, m, top_entropy_quantile).to(m.dtype)
        per_token = per_token * learns

    # The sampler is not the trainer (vLLM): weigh each token by TIS / MIS of its ratio.
    mismatch: dict[str, torch.Tensor] = {}
    if sampler_logp is not None:
        w, mismatch = sampler_weights(
            old_logp,
            sampler_logp,
            m,
            correction=sampler_correction,
            level=sampler_level,
            threshold=sampler_threshold,
        )
        per_token = per_token * w
    if token_weights is not None:
        per_token = per_token * token_weights

    if beta != 0.0:
        per_token = per_token + beta * _kl(logp, ref_logp, kl)

    loss = _aggregate(per_token, m, loss_type, max_completion_length, normalizer)
    if entropy_coef != 0.0:
        # An entropy bonus: the mean entropy of the tokens that learn, whatever the loss_type (TRL).
        assert entropy is not None
        loss = loss - entropy_coef * (entropy * learns).sum() / learns.sum().clamp(min=1)

    extra = dict(mismatch)
    if surrogate == "cispo":
        low = 1 - eps_low if eps_low < 1 else -math.inf
        extra["cispo_clip_frac"] = ((ratio < low) | (ratio > 1 + eps_high)).detach()
    if top_entropy_quantile < 1:
        extra["top_entropy_frac"] = learns.sum() / m.sum().clamp(min=1)
    metrics = _metrics(ratio, adv, m, bounds, dual_clip, beta, logp, ref_logp, kl, entropy, extra)
    return loss, metrics


def _kl(logp: torch.Tensor, ref_logp: torch.Tensor | None, kind: str) -> torch.Tensor:
    assert ref_logp is not None
    if kind == "k1":
        return logp - ref_logp
    if kind == "k2":
        return 0.5 * (logp - ref_logp) ** 2
    d = (ref_logp - logp).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    return (torch.exp(d) - d - 1).clamp(max=_MAX_K3)


def _aggregate(
    per_token: torch.Tensor,
    m: torch.Tensor,
    loss_type: str,
    max_completion_length: int | None,
    normalizer: float | torch.Tensor | None,
) -> torch.Tensor:
    summed = per_token * m
    if loss_type == "grpo":
        per_seq = summed.sum(-1) / m.sum(-1).clamp(min=1)
        if normalizer is None:
            return per_seq.mean()
        return per_seq.sum() / _check_normalizer(normalizer)
    if loss_type in ("bnpo", "token_mean"):
        return summed.sum() / m.sum().clamp(min=1)
    if loss_type == "dapo":
        denom = m.sum().clamp(min=1) if normalizer is None else _check_normalizer(normalizer)
        return summed.sum() / denom
    # dr_grpo: a constant denominator, so no length bias (Liu et al. 2025)
    length = per_token.shape[1] if max_completion_length is None else max_completion_length
    if isinstance(length, bool) or not isinstance(length, int) or length < 1:
        raise InvalidInputError(f"max_completion_length must be a positive int, got {length!r}")
    return summed.sum() / (per_token.shape[0] * length)


def _metrics(
    ratio: torch.Tensor,
    adv: torch.Tensor,
    m: torch.Tensor,
    bounds: tuple[float, float] | None,
    dual_clip: float | None,
    beta: float,
    logp: torch.Tensor,
    ref_logp: torch.Tensor | None,
    kl: str,
    entropy: torch.Tensor | None,
    extra: dict[str, torch.Tensor],
) -> dict[str, float]:
    """Token means over the mask; ``extra`` holds 0-d values, or ``[B, T]`` flags to average."""
    with torch.no_grad():
        count = m.sum().clamp(min=1)

        def mean(x: torch.Tensor) -> torch.Tensor:
            return (x.to(m.dtype) * m).sum() / count

        values: dict[str, torch.Tensor] = {}
        if bounds is not None:
            low = mean((ratio < bounds[0]) & (adv < 0))
            high = mean((ratio > bounds[1]) & (adv > 0))
            values.update(clip_frac_low=low, clip_frac_high=high, clip_frac=low + high)
        values["ratio_mean"] = mean(ratio)
        if dual_clip is not None:
            values["dual_clip_frac"] = mean((ratio > dual_clip) & (adv < 0))
        if beta != 0.0:
            values["kl_mean"] = mean(_kl(logp.detach(), ref_logp, kl))
        if entropy is not None:
            values["entropy_mean"] = mean(entropy.detach())
        for k, v in extra.items():
            values[k] = mean(v) if v.dim() else v.to(count.dtype)
        floats = torch.stack(list(values.values())).tolist()  # one sync
    out = dict(zip(values, floats, strict=True))
    if out.pop("_nonfinite", 0.0) > 0:
        raise InvalidInputError("sampler_logp is not finite on some tokens of the mask")
    return out


# ---------------------------------------------------------------------------
# Input checks.


def _describe(x: Any) -> str:
    if isinstance(x, (torch.Tensor, np.ndarray)):
        device = f" on {x.device}" if isinstance(x, torch.Tensor) else " (numpy)"
        return f"{tuple(x.shape)} {x.dtype}{device}"
    return type(x).__name__


def _check_like(name: str, x: Any, logp: torch.Tensor) -> torch.Tensor:
    if (
        not isinstance(x, torch.Tensor)
        or x.shape != logp.shape
        or x.dtype != logp.dtype
        or x.device != logp.device
    ):
        raise InvalidInputError(
            f"{name} is {_describe(x)} but logp is {_describe(logp)}: expected the same"
            " shape, dtype and device"
        )
    return x


def _check_inputs(
    logp: Any,
    old_logp: Any,
    advantages: Any,
    mask: Any,
    ref_logp: Any,
    beta: float,
    entropy: Any,
) -> tuple[torch.Tensor, torch.Tensor | None, torch.Tensor, torch.Tensor]:
    if not isinstance(logp, torch.Tensor) or logp.dim() != 2 or not logp.is_floating_point():
        raise InvalidInputError(f"logp must be a float tensor [B, T], got {_describe(logp)}")
    # The sampling policy is a constant of the objective: never backpropagate into it.
    old = (logp if old_logp is None else _check_like("old_logp", old_logp, logp)).detach()
    if beta != 0.0:
        if ref_logp is None:
            raise InvalidInputError(f"beta={beta} needs ref_logp (or set beta=0)")
        ref_logp = _check_like("ref_logp", ref_logp, logp).detach()
    if entropy is not None:
        _check_like("entropy", entropy, logp)

    if isinstance(mask, np.ndarray):
        mask = torch.from_numpy(mask).to(logp.device)
    if not isinstance(mask, torch.Tensor) or mask.shape != logp.shape:
        raise InvalidInputError(
            f"mask is {_describe(mask)} but logp is {_describe(logp)}: expected the same shape"
        )
    if mask.device != logp.device:
        raise InvalidInputError(f"mask is on {mask.device} but logp is on {logp.device}")
    m = mask.to(logp.dtype)

    adv = advantages
    if isinstance(adv, np.ndarray):
        if not np.issubdtype(adv.dtype, np.floating):
            raise InvalidInputError(f"advantages must be floating point, got {adv.dtype}")
        adv = torch.from_numpy(adv)  # zero-copy
    if not isinstance(adv, torch.Tensor) or not adv.is_floating_point():
        raise InvalidInputError(f"advantages must be a float array or tensor, got {_describe(adv)}")
    if adv.shape == logp.shape[:1]:
        adv = adv.unsqueeze(-1)
    elif adv.shape != logp.shape:
        raise InvalidInputError(
            f"advantages is {tuple(adv.shape)} but logp is {tuple(logp.shape)}:"
            " expected [B] or [B, T]"
        )
    if adv.device != logp.device and adv.device.type != "cpu":
        raise InvalidInputError(f"advantages is on {adv.device} but logp is on {logp.device}")
    # From numpy/CPU to logp's device and dtype (Rust hands f32 advantages).
    adv = adv.to(device=logp.device, dtype=logp.dtype)
    return old, ref_logp, adv, m


def _check_options(
    eps_low: float,
    eps_high: float,
    dual_clip: float | None,
    delta: float | None,
    is_level: str,
    kl: str,
    loss_type: str,
    surrogate: str,
) -> None:
    if surrogate not in SURROGATES:
        raise InvalidInputError(f"unknown surrogate {surrogate!r}; expected one of {SURROGATES}")
    # CISPO's eps_low >= 1 means no lower bound; GMPO's range is in log space.
    top = math.inf if surrogate in ("cispo", "gmpo") else 1
    if not (0 <= eps_low < top) or not (eps_high >= 0):
        bound = "" if top == math.inf else " < 1"
        raise InvalidInputError(
            f"need 0 <= eps_low{bound} and eps_high >= 0, got eps_low={eps_low}, "
            f"eps_high={eps_high}"
        )
    if surrogate != "ppo" and (dual_clip is not None or delta is not None):
        raise InvalidInputError(
            f"dual_clip and delta bound PPO's clipped ratio; surrogate={surrogate!r} has none"
        )
    if surrogate == "gmpo" and is_level != "token":
        raise InvalidInputError(
            "surrogate='gmpo' is already a sequence-level ratio (a geometric mean of the token "
            "ratios); use importance_sampling_level='token'"
        )
    if dual_clip is not None and not dual_clip > 1:
        raise InvalidInputError(f"dual_clip must be > 1, got {dual_clip}")
    if delta is not None and not delta > 1:
        raise InvalidInputError(f"delta must be > 1, got {delta}")
    for name, value, allowed in (
        ("importance_sampling_level", is_level, IS_LEVELS),
        ("kl", kl, KL_ESTIMATORS),
        ("loss_type", loss_type, LOSS_TYPES),
    ):
        if value not in allowed:
            raise InvalidInputError(f"unknown {name} {value!r}; expected one of {allowed}")


def _check_entropy_options(
    logp: torch.Tensor, entropy: torch.Tensor | None, coef: float, top: float
) -> None:
    if not (0 <= top <= 1):
        raise InvalidInputError(f"top_entropy_quantile must be in [0, 1], got {top}")
    if not math.isfinite(coef):
        raise InvalidInputError(f"entropy_coef must be a finite number, got {coef}")
    if entropy is None and (coef != 0 or top < 1):
        option = "entropy_coef" if coef != 0 else "top_entropy_quantile"
        raise InvalidInputError(
            f"{option} needs the per-token entropy: pass entropy= "
            "(token_logprobs(..., return_entropy=True))"
        )
    if coef != 0 and logp.requires_grad and entropy is not None and not entropy.requires_grad:
        raise InvalidInputError(
            "entropy_coef needs the entropy's gradient, but entropy does not require grad "
            "(computed under no_grad, or detached): the bonus would change nothing"
        )


def _check_normalizer(normalizer: float | torch.Tensor) -> float | torch.Tensor:
    value = float(normalizer)
    if not value > 0 or value == float("inf"):
        raise InvalidInputError(f"normalizer must be a positive token count, got {value}")
    return normalizer
