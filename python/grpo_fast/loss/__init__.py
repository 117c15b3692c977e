"""The GRPO policy loss and its parts (torch).

- :mod:`~grpo_fast.loss.policy`: :func:`policy_loss`, the clipped-ratio
  objective with KL, aggregation and the sampler-mismatch weights;
- :mod:`~grpo_fast.loss.surrogates`: the per-token objectives other than PPO's
  clipped ratio (CISPO, SAPO, GMPO) and the high-entropy token mask;
- :mod:`~grpo_fast.loss.mismatch`: importance weights between the sampler's and
  the trainer's log-probs (TIS / MIS).
"""

from grpo_fast.loss.policy import IS_LEVELS, KL_ESTIMATORS, LOSS_TYPES, SURROGATES, policy_loss

__all__ = ["IS_LEVELS", "KL_ESTIMATORS", "LOSS_TYPES", "SURROGATES", "policy_loss"]
