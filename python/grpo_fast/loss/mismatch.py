"""The sampler is not the trainer: importance weights from the sampler's log-probs.

vLLM samples with its own kernels and precision (bf16 attention, its own
sampler), so the log-prob it gives a token differs from the trainer's for the
same weights: the rollouts are slightly off-policy. The correction weighs
each token's policy-gradient term by the ratio of the trainer's to the
sampler's probability, ``rho = exp(old_logp - sampler_logp)`` (Yao et al.
2025, "Your efficient RL framework secretly brings you off-policy RL
training"; TRL's ``vllm_importance_sampling_correction``, verl's rollout
correction, OpenRLHF's ``--is_correction_type`` do the same):

- ``"tis"``, truncated importance sampling: ``w = min(rho, C)``;
- ``"mis"``, masked importance sampling: ``w = rho`` inside the band
  ``[1/C, C]``, ``w = 0`` outside (the token, or the whole sequence, gets no
  policy-gradient loss);
- ``"none"``: ``w = 1``; the mismatch is only measured.

``level="token"`` uses each token's own ratio; ``level="sequence"`` one
ratio per sequence, the geometric mean of its tokens' ratios,
``exp(mean_t(old_logp - sampler_logp))``, the same length-normalised form as
GSPO's sequence ratio. The product of the ratios (TRL's and verl's sequence
level) grows with the length: with a per-token mismatch of 1e-2 a 4,000-token
answer's product leaves any band of width 2 by chance, so a threshold would
mean something different for every length; the mean does not.

The weights are constants (no gradient flows through them) and multiply the
clipped policy-gradient term only; the KL penalty and the aggregation's
denominators are unchanged, as in TRL, verl and OpenRLHF.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from grpo_fast.errors import InvalidInputError
from grpo_fast.loss.registry import Registry

if TYPE_CHECKING:
    import torch

__all__ = [
    "CORRECTIONS",
    "CORRECTION_REGISTRY",
    "LEVELS",
    "pad_sampler_logprobs",
    "sampler_weights",
]

#: ``sampler_correction`` -> ``(rho, outside, threshold) -> weights``; ``outside``: rho
#: out of the band ``[1/C, C]``.
CORRECTION_REGISTRY: Registry[Any] = Registry("sampler_correction")


@CORRECTION_REGISTRY.register("tis")
def tis(rho: torch.Tensor, outside: torch.Tensor, threshold: float) -> torch.Tensor:
    """Truncated importance sampling: ``min(rho, C)``."""
    return rho.clamp(max=threshold)


@CORRECTION_REGISTRY.register("mis")
def mis(rho: torch.Tensor, outside: torch.Tensor, threshold: float) -> torch.Tensor:
    """Masked importance sampling: ``rho`` inside ``[1/C, C]``, 0 outside."""
    return rho.new_zeros(()).where(outside, rho)


@CORRECTION_REGISTRY.register("none")
def none(rho: torch.Tensor, outside: torch.Tensor, threshold: float) -> torch.Tensor:
    """No correction: 1 (the mismatch is only measured)."""
    return rho.new_ones(rho.shape)


#: What to do with the ratio (``sampler_correction`` of ``policy_loss`` and the trainer).
CORRECTIONS = CORRECTION_REGISTRY.names
#: One ratio per token, or per sequence.
LEVELS = ("token", "sequence")

# exp() of a log-ratio beyond this overflows; verl's rollout correction bounds it the same way.
_MAX_LOG_RATIO = 20.0


def sampler_weights(
    old_logp: torch.Tensor,
    sampler_logp: torch.Tensor,
    mask: torch.Tensor,
    *,
    correction: str = "tis",
    level: str = "token",
    threshold: float = 2.0,
) -> tuple[torch.Tensor, dict[str, torch.Tensor]]:
    """Per-token weights for the sampler mismatch, and its statistics.

    Parameters
    ----------
    old_logp : float tensor [B, T]
        The trainer's log-probs of the sampled tokens under the weights that sampled them.
    sampler_logp : float tensor [B, T]
        The sampler's log-probs of the same tokens (same shape, dtype, device).
    mask : float 0/1 tensor [B, T]
        Completion tokens that count.
    correction : "tis", "mis" or "none"
    level : "token" or "sequence"
    threshold : float > 1
        ``C``: the TIS cap, or the MIS band ``[1/C, C]``.

    Returns
    -------
    weights : tensor [B, T], detached
    stats : dict of 0-d tensors (not synchronised)
        ``mismatch_kl`` (token mean of ``k3 = rho - 1 - log rho``, an unbiased,
        non-negative estimate of KL(sampler || trainer) on the sampler's tokens),
        ``mismatch_ratio_min`` / ``_mean`` / ``_max`` (of ``rho`` at ``level``:
        over tokens, or over non-empty sequences; NaN when there are none),
        ``mismatch_masked_frac`` (tokens MIS gives no loss), ``mismatch_truncated_frac``
        (tokens whose ratio TIS capped), and ``_nonfinite`` (counted tokens whose
        sampler log-prob is not finite; the caller raises).

    Examples
    --------
    >>> import torch
    >>> old = torch.log(torch.tensor([[0.5, 0.5, 0.9]]))
    >>> sampler = torch.log(torch.tensor([[0.5, 0.1, 0.9]]))
    >>> w, _ = sampler_weights(old, sampler, torch.ones(1, 3), correction="tis", threshold=2.0)
    >>> [round(x, 4) for x in w[0].tolist()]
    [1.0, 2.0, 1.0]
    >>> w, _ = sampler_weights(old, sampler, torch.ones(1, 3), correction="mis", threshold=2.0)
    >>> [round(x, 4) for x in w[0].tolist()]
    [1.0, 0.0, 1.0]
    """
    import torch

    check_options(correction, level, threshold)
    with torch.no_grad():
        m = mask.to(old_logp.dtype)
        valid = m > 0
        finite = torch.isfinite(sampler_logp)
        diff = torch.where(finite, old_logp.detach() - sampler_logp, 0.0)
        log_ratio = diff.clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
        if level == "sequence":
            lengths = m.sum(-1, keepdim=True)
            seq = (log_ratio * m).sum(-1, keepdim=True) / lengths.clamp(min=1)
            rho = torch.exp(seq).expand_as(log_ratio)
            units, unit_valid = torch.exp(seq[:, 0]), lengths[:, 0] > 0
        else:
            rho = torch.exp(log_ratio)
            units, unit_valid = rho, valid

        outside = (rho < 1 / threshold) | (rho > threshold)
        weights = CORRECTION_REGISTRY[correction](rho, outside, threshold)

        count = m.sum()
        n = count.clamp(min=1)
        units_n = unit_valid.sum()
        nan = torch.tensor(float("nan"), dtype=rho.dtype, device=rho.device)
        k3 = torch.exp(log_ratio) - 1 - log_ratio
        stats = {
            "mismatch_kl": (k3 * m).sum() / n,
            "mismatch_ratio_min": torch.where(
                units_n > 0, units.masked_fill(~unit_valid, float("inf")).min(), nan
            ),
            "mismatch_ratio_mean": torch.where(
                units_n > 0, (units * unit_valid).sum() / units_n.clamp(min=1), nan
            ),
            "mismatch_ratio_max": torch.where(
                units_n > 0, units.masked_fill(~unit_valid, float("-inf")).max(), nan
            ),
            "mismatch_masked_frac": (
                ((outside & valid).to(m.dtype).sum() / n) if correction == "mis" else 0 * count
            ),
            "mismatch_truncated_frac": (
                (((rho > threshold) & valid).to(m.dtype).sum() / n)
                if correction == "tis"
                else 0 * count
            ),
            "_nonfinite": (~finite & valid).to(m.dtype).sum(),
        }
    return weights, stats


def check_options(correction: str, level: str, threshold: float) -> None:
    """Raise :class:`InvalidInputError` for an unknown correction or level, or a bad threshold."""
    CORRECTION_REGISTRY[correction]  # unknown: InvalidInputError naming the choices
    if level not in LEVELS:
        raise InvalidInputError(f"unknown sampler_level {level!r}; expected one of {LEVELS}")
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not threshold > 1:
        raise InvalidInputError(
            f"sampler_threshold must be a number > 1 (TIS cap C, MIS band [1/C, C]), "
            f"got {threshold!r}"
        )


def pad_sampler_logprobs(
    logprobs: Sequence[Sequence[float]] | None,
    completion_ids: Sequence[Sequence[int]],
    width: int,
    device: torch.device | str = "cpu",
) -> torch.Tensor | None:
    """The sampler's per-completion log-probs as a right-padded float32 tensor ``[N, width]``
    (0 past each completion), aligned with :func:`grpo_fast.train.modeling.pack`'s completions.

    None when the sampler reported none. A row whose length differs from its
    completion's, or with a value that is not finite, raises
    :class:`InvalidInputError`.

    Examples
    --------
    >>> pad_sampler_logprobs([[-0.5, -1.0], [-2.0]], [[4, 5], [6]], 3)
    tensor([[-0.5000, -1.0000,  0.0000],
            [-2.0000,  0.0000,  0.0000]])
    """
    import torch

    if logprobs is None:
        return None
    if len(logprobs) != len(completion_ids):
        raise InvalidInputError(
            f"the sampler returned log-probs for {len(logprobs)} completions, "
            f"not {len(completion_ids)}"
        )
    out = np.zeros((len(completion_ids), width), np.float32)
    for i, (lp, ids) in enumerate(zip(logprobs, completion_ids, strict=True)):
        if len(lp) != len(ids):
            raise InvalidInputError(
                f"the sampler's log-probs of completion {i} have {len(lp)} entries but it has "
                f"{len(ids)} tokens (the sampler must report one log-prob per sampled token)"
            )
        row = np.asarray(lp, np.float32)
        if not np.isfinite(row).all():
            raise InvalidInputError(
                f"the sampler's log-probs of completion {i} are not all finite: {row.tolist()}"
            )
        out[i, : len(row)] = row
    return torch.from_numpy(out).to(device)
