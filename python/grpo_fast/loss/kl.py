"""Estimators of KL(policy || reference) per token (:data:`KL_REGISTRY`, ``options.kl``).

Schulman's estimators, from the policy's and the reference's log-probs of the
sampled tokens: ``k1 = logp - ref``, ``k2 = (logp - ref)^2 / 2``,
``k3 = exp(ref - logp) - (ref - logp) - 1`` (``ref - logp`` clamped to ±20
and k3 to at most 10, as verl does). Importing this module does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpo_fast.loss.registry import Registry

if TYPE_CHECKING:
    import torch

__all__ = ["KL_ESTIMATORS", "KL_REGISTRY", "k1", "k2", "k3"]

_MAX_LOG_RATIO = 20.0
_MAX_K3 = 10.0

#: ``options.kl`` -> the estimator ``(logp, ref_logp) -> [B, T]``.
KL_REGISTRY: Registry[Any] = Registry("kl")


@KL_REGISTRY.register("k1")
def k1(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """``logp - ref``: unbiased, high variance, negative on some tokens."""
    return logp - ref_logp


@KL_REGISTRY.register("k2")
def k2(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """``(logp - ref)^2 / 2``: biased, low variance, never negative."""
    return 0.5 * (logp - ref_logp) ** 2


@KL_REGISTRY.register("k3")
def k3(logp: torch.Tensor, ref_logp: torch.Tensor) -> torch.Tensor:
    """``exp(d) - d - 1`` with ``d = ref - logp``: unbiased, never negative (GRPO's)."""
    d = (ref_logp - logp).clamp(-_MAX_LOG_RATIO, _MAX_LOG_RATIO)
    return (d.exp() - d - 1).clamp(max=_MAX_K3)


#: The values of ``kl``.
KL_ESTIMATORS = KL_REGISTRY.names
