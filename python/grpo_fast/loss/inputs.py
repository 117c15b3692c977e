"""The tensors of one :func:`~grpo_fast.loss.policy_loss` call, checked once.

Every way an input can be unusable (a shape, dtype or device that does not
match ``logp``'s, a missing reference or entropy an option needs) is an
:class:`~grpo_fast.errors.InvalidInputError` naming it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np

from grpo_fast.errors import InvalidInputError

if TYPE_CHECKING:
    import torch

    from grpo_fast.loss.options import LossOptions

__all__ = ["Inputs", "check_inputs", "describe"]


class Inputs(NamedTuple):
    """``[B, T]`` each: the policy's log-probs (with grad), the sampling policy's (detached),
    the advantages broadcast to the tokens, the mask as ``logp``'s float dtype, and the
    optional ones (detached but the entropy)."""

    logp: torch.Tensor
    old_logp: torch.Tensor
    adv: torch.Tensor
    m: torch.Tensor
    ref_logp: Any = None
    entropy: Any = None
    sampler_logp: Any = None
    token_weights: Any = None


def describe(x: Any) -> str:
    import torch

    if isinstance(x, (torch.Tensor, np.ndarray)):
        device = f" on {x.device}" if isinstance(x, torch.Tensor) else " (numpy)"
        return f"{tuple(x.shape)} {x.dtype}{device}"
    return type(x).__name__


def like(name: str, x: Any, logp: torch.Tensor) -> torch.Tensor:
    """``x`` when it has ``logp``'s shape, dtype and device; an error saying so otherwise."""
    import torch

    if (
        not isinstance(x, torch.Tensor)
        or x.shape != logp.shape
        or x.dtype != logp.dtype
        or x.device != logp.device
    ):
        raise InvalidInputError(
            f"{name} is {describe(x)} but logp is {describe(logp)}: expected the same"
            " shape, dtype and device"
        )
    return x


def check_inputs(
    logp: Any,
    old_logp: Any,
    advantages: Any,
    mask: Any,
    o: LossOptions,
    ref_logp: Any = None,
    entropy: Any = None,
    sampler_logp: Any = None,
    token_weights: Any = None,
) -> Inputs:
    import torch

    if not isinstance(logp, torch.Tensor) or logp.dim() != 2 or not logp.is_floating_point():
        raise InvalidInputError(f"logp must be a float tensor [B, T], got {describe(logp)}")
    # The sampling policy is a constant of the objective: never backpropagate into it.
    old = (logp if old_logp is None else like("old_logp", old_logp, logp)).detach()
    if o.beta != 0.0:
        if ref_logp is None:
            raise InvalidInputError(f"beta={o.beta} needs ref_logp (or set beta=0)")
        ref_logp = like("ref_logp", ref_logp, logp).detach()
    if entropy is not None:
        like("entropy", entropy, logp)
    _check_entropy(logp, entropy, o)
    if sampler_logp is not None:
        sampler_logp = like("sampler_logp", sampler_logp, logp).detach()
    if token_weights is not None:
        token_weights = like("token_weights", token_weights, logp).detach()
    m = _mask(mask, logp)
    adv = _advantages(advantages, logp)
    return Inputs(logp, old, adv, m, ref_logp, entropy, sampler_logp, token_weights)


def _check_entropy(logp: torch.Tensor, entropy: Any, o: LossOptions) -> None:
    coef, top = o.entropy_coef, o.top_entropy_quantile
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


def _mask(mask: Any, logp: torch.Tensor) -> torch.Tensor:
    import torch

    if isinstance(mask, np.ndarray):
        mask = torch.from_numpy(mask).to(logp.device)
    if not isinstance(mask, torch.Tensor) or mask.shape != logp.shape:
        raise InvalidInputError(
            f"mask is {describe(mask)} but logp is {describe(logp)}: expected the same shape"
        )
    if mask.device != logp.device:
        raise InvalidInputError(f"mask is on {mask.device} but logp is on {logp.device}")
    return mask.to(logp.dtype)


def _advantages(advantages: Any, logp: torch.Tensor) -> torch.Tensor:
    import torch

    adv = advantages
    if isinstance(adv, np.ndarray):
        if not np.issubdtype(adv.dtype, np.floating):
            raise InvalidInputError(f"advantages must be floating point, got {adv.dtype}")
        adv = torch.from_numpy(adv)  # zero-copy
    if not isinstance(adv, torch.Tensor) or not adv.is_floating_point():
        raise InvalidInputError(f"advantages must be a float array or tensor, got {describe(adv)}")
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
    return adv.to(device=logp.device, dtype=logp.dtype)
