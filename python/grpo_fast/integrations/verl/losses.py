"""grpo-fast's policy loss in verl's policy-loss registry.

verl's actor calls the loss named by ``actor_rollout_ref.actor.policy_loss.loss_mode``
with ``(old_log_prob, log_prob, advantages, response_mask, loss_agg_mode,
config, rollout_is_weights)`` and expects ``(loss, metrics)``. The functions
here take exactly that and compute :func:`grpo_fast.loss.policy_loss`:

- ``grpo_fast_vanilla`` (:func:`compute_policy_loss_vanilla`): PPO's clipped
  token ratio with ``clip_ratio_low`` / ``clip_ratio_high`` (each falling back
  to ``clip_ratio``) and the dual clip ``clip_ratio_c`` (default 3) for
  negative advantages, as verl's ``vanilla``;
- ``grpo_fast_gspo`` (:func:`compute_policy_loss_gspo`): GSPO's sequence ratio,
  ``exp(mean_t(log_prob - old_log_prob))`` in its straight-through token form,
  clipped the same way, no dual clip, as verl's ``gspo``.

verl's conventions are kept: ``loss_agg_mode`` is one of ``token-mean``,
``token-sum``, ``seq-mean-token-sum``, ``seq-mean-token-mean``,
``seq-mean-token-sum-norm``, normalised by the global batch that verl's actor
writes into ``config.global_batch_info`` (``dp_size``, ``batch_num_tokens``,
``global_batch_size``, ``loss_scale_factor``) so the loss is invariant to data
parallelism; responses whose mask is empty do not count as sequences; verl's
``rollout_is_weights`` (its rollout correction, ``algorithm.rollout_correction``)
multiply each token's policy-gradient term. The metrics are verl's
``actor/pg_clipfrac``, ``actor/ppo_kl`` and ``actor/pg_clipfrac_lower``.

Two differences, both out of the range training reaches: verl clamps the
token log-ratio to [-20, 20] where grpo-fast only bounds it above (below -20
verl's gradient is 0, ours the tiny true one), and verl's GSPO bounds the
sequence log-ratio at 10, ours at 20.

Registration: :func:`register_verl_policy_losses`, called by
:mod:`grpo_fast.integrations.verl.plugin` when it is imported (in every verl process,
through the package's ``verl.plugins`` entry point).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from grpo_fast.errors import InvalidInputError

__all__ = [
    "LOSS_AGG_MODES",
    "POLICY_LOSS_NAMES",
    "compute_policy_loss_gspo",
    "compute_policy_loss_vanilla",
    "register_verl_policy_losses",
]

#: verl's aggregation modes (``actor.loss_agg_mode``).
LOSS_AGG_MODES = (
    "token-mean",
    "token-sum",
    "seq-mean-token-sum",
    "seq-mean-token-mean",
    "seq-mean-token-sum-norm",
)


def _get(config: Any, key: str, default: Any = None) -> Any:
    """A field of verl's ``ActorConfig``, an OmegaConf ``DictConfig`` or a dict."""
    if config is None:
        return default
    if isinstance(config, Mapping) or hasattr(config, "get"):
        value = config.get(key, default)
    else:
        value = getattr(config, key, default)
    return default if value is None else value


def _aggregation(mode: str, mask: Any, info: Mapping[str, Any]) -> tuple[str, Any]:
    """verl's ``agg_loss`` as a grpo-fast ``loss_type`` and ``normalizer``.

    Every mode is a sum divided by a constant, or (seq-mean-token-mean) a sum
    of per-sequence token means divided by the number of sequences; verl's
    counts are global ones divided by ``dp_size`` (each rank's gradient is
    averaged by DDP / FSDP afterwards).
    """
    dp = info.get("dp_size") or 1
    tokens = info.get("batch_num_tokens")
    seqs = info.get("global_batch_size")
    if mode == "token-mean":
        if tokens is None:
            if dp > 1:
                raise InvalidInputError("token-mean needs batch_num_tokens when dp_size > 1")
            tokens = mask.sum().clamp(min=1)
        return "dapo", tokens / dp
    if mode == "token-sum":
        return "dapo", 1.0 / dp
    if mode not in LOSS_AGG_MODES:
        raise InvalidInputError(f"unknown loss_agg_mode {mode!r}; expected one of {LOSS_AGG_MODES}")
    if seqs is None:
        if dp > 1:
            raise InvalidInputError(f"{mode} needs global_batch_size when dp_size > 1")
        seqs = (mask.sum(-1) > 0).sum().clamp(min=1)  # empty responses are not sequences
    if mode == "seq-mean-token-mean":
        return "grpo", seqs / dp
    if mode == "seq-mean-token-sum":
        return "dapo", seqs / dp
    horizon = info.get("loss_scale_factor") or mask.shape[-1]  # seq-mean-token-sum-norm
    return "dapo", seqs / dp * horizon


def _verl_policy_loss(
    old_log_prob: Any,
    log_prob: Any,
    advantages: Any,
    response_mask: Any,
    loss_agg_mode: str,
    config: Any,
    rollout_is_weights: Any,
    *,
    level: str,
    dual_clip: bool,
) -> tuple[Any, dict[str, Any]]:
    import torch

    from grpo_fast.loss import LossOptions, policy_loss

    clip = float(_get(config, "clip_ratio", 0.2))
    info = _get(config, "global_batch_info", None) or {}
    like = dict(dtype=log_prob.dtype, device=log_prob.device)
    old = old_log_prob.to(**like)
    mask = response_mask.bool()
    loss_type, normalizer = _aggregation(loss_agg_mode, mask, info)
    options = LossOptions(
        eps_low=float(_get(config, "clip_ratio_low", clip)),
        eps_high=float(_get(config, "clip_ratio_high", clip)),
        dual_clip=float(_get(config, "clip_ratio_c", 3.0)) if dual_clip else None,
        importance_sampling_level=level,
        loss_type=loss_type,
    )
    weights = None if rollout_is_weights is None else rollout_is_weights.to(**like)
    loss, m = policy_loss(
        log_prob,
        old,
        advantages.to(**like),
        mask,
        options,
        normalizer=normalizer,
        token_weights=weights,
    )
    with torch.no_grad():
        ppo_kl = ((old - log_prob.detach()) * mask).sum() / mask.sum().clamp(min=1)
    metrics = {
        "actor/pg_clipfrac": m["clip_frac"],
        "actor/ppo_kl": float(ppo_kl),
        "actor/pg_clipfrac_lower": m.get("dual_clip_frac", 0.0),
    }
    return loss, metrics


def compute_policy_loss_vanilla(
    old_log_prob: Any,
    log_prob: Any,
    advantages: Any,
    response_mask: Any,
    loss_agg_mode: str = "token-mean",
    config: Any = None,
    rollout_is_weights: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """PPO's clipped token ratio with verl's dual clip, verl's signature (``grpo_fast_vanilla``).

    Examples
    --------
    >>> import torch
    >>> old = torch.log(torch.tensor([[0.5, 0.5], [0.2, 0.9]]))
    >>> new = (old + torch.tensor([[0.3, -0.1], [0.0, 0.3]])).requires_grad_(True)
    >>> adv = torch.tensor([[1.0, 1.0], [-1.0, -1.0]])
    >>> cfg = {"clip_ratio": 0.2, "clip_ratio_c": 3.0}
    >>> loss, metrics = compute_policy_loss_vanilla(old, new, adv, torch.ones(2, 2), config=cfg)
    >>> round(loss.item(), 4), metrics["actor/pg_clipfrac"]
    (0.0613, 0.25)
    """
    return _verl_policy_loss(
        old_log_prob,
        log_prob,
        advantages,
        response_mask,
        loss_agg_mode,
        config,
        rollout_is_weights,
        level="token",
        dual_clip=True,
    )


def compute_policy_loss_gspo(
    old_log_prob: Any,
    log_prob: Any,
    advantages: Any,
    response_mask: Any,
    loss_agg_mode: str = "seq-mean-token-mean",
    config: Any = None,
    rollout_is_weights: Any = None,
) -> tuple[Any, dict[str, Any]]:
    """GSPO's clipped sequence ratio, verl's signature (``grpo_fast_gspo``)."""
    return _verl_policy_loss(
        old_log_prob,
        log_prob,
        advantages,
        response_mask,
        loss_agg_mode,
        config,
        rollout_is_weights,
        level="sequence",
        dual_clip=False,
    )


#: The names under which :func:`register_verl_policy_losses` registers the losses.
POLICY_LOSS_NAMES = {
    "grpo_fast_vanilla": compute_policy_loss_vanilla,
    "grpo_fast_gspo": compute_policy_loss_gspo,
}


def register_verl_policy_losses() -> bool:
    """Register the losses in verl's policy-loss registry; False when verl is not importable.

    A name already registered (by another copy of this module) is left as it is.
    """
    try:
        from verl.trainer.ppo import core_algos
    except ImportError:
        return False
    registry = getattr(core_algos, "POLICY_LOSS_REGISTRY", {})
    for name, fn in POLICY_LOSS_NAMES.items():
        if name not in registry:
            core_algos.register_policy_loss(name)(fn)
    return True
