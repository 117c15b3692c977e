"""How per-token losses become the loss (:data:`AGGREGATION_REGISTRY`, ``options.loss_type``).

Each takes the masked per-token loss ``l * m`` ``[B, T]``, the mask ``m``
(float 0/1), the options and the caller's ``normalizer`` (the global batch's
count, or None). Importing this module does not import torch.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.loss.registry import Registry

if TYPE_CHECKING:
    import torch

    from grpo_fast.loss.options import LossOptions

__all__ = ["AGGREGATION_REGISTRY", "LOSS_TYPES", "check_normalizer"]

#: ``options.loss_type`` -> ``(summed, m, options, normalizer) -> scalar``.
AGGREGATION_REGISTRY: Registry[Any] = Registry("loss_type")


@AGGREGATION_REGISTRY.register("grpo")
def grpo(summed: torch.Tensor, m: torch.Tensor, o: LossOptions, normalizer: Any) -> torch.Tensor:
    """``mean_i(sum_t l m / sum_t m)``: each sequence's token mean, averaged (DeepSeekMath);
    with ``normalizer`` (the global batch's sequences) the sum divided by it."""
    per_seq = summed.sum(-1) / m.sum(-1).clamp(min=1)
    if normalizer is None:
        return per_seq.mean()
    return per_seq.sum() / check_normalizer(normalizer)


@AGGREGATION_REGISTRY.register("bnpo", "token_mean")
def token_mean(
    summed: torch.Tensor, m: torch.Tensor, o: LossOptions, normalizer: Any
) -> torch.Tensor:
    """``sum l m / sum m``: every token of the batch weighs the same."""
    return summed.sum() / m.sum().clamp(min=1)


@AGGREGATION_REGISTRY.register("dapo")
def dapo(summed: torch.Tensor, m: torch.Tensor, o: LossOptions, normalizer: Any) -> torch.Tensor:
    """``sum l m / normalizer``: the global batch's token count (all accumulation steps and
    ranks), so every token weighs the same; this batch's ``sum m`` by default (DAPO)."""
    denom = m.sum().clamp(min=1) if normalizer is None else check_normalizer(normalizer)
    return summed.sum() / denom


@AGGREGATION_REGISTRY.register("dr_grpo")
def dr_grpo(summed: torch.Tensor, m: torch.Tensor, o: LossOptions, normalizer: Any) -> torch.Tensor:
    """``sum l m / (B * max_completion_length)``: a constant denominator, so no length
    bias (Liu et al. 2025); ``max_completion_length`` defaults to T."""
    length = summed.shape[1] if o.max_completion_length is None else o.max_completion_length
    return summed.sum() / (summed.shape[0] * length)


#: The values of ``loss_type``.
LOSS_TYPES = AGGREGATION_REGISTRY.names


def check_normalizer(normalizer: Any) -> Any:
    value = float(normalizer)
    if not value > 0 or value == float("inf"):
        raise InvalidInputError(f"normalizer must be a positive token count, got {value}")
    return normalizer
