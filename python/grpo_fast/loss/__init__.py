"""The GRPO policy loss and its parts.

- :mod:`~grpo_fast.loss.policy`: :func:`policy_loss`, the composition
  surrogate -> tokens that learn -> sampler weights -> KL -> aggregation;
- :mod:`~grpo_fast.loss.options`: :class:`LossOptions`, every option's
  default and check, once;
- the registries of interchangeable parts, each member registered by name
  next to its code (:class:`~grpo_fast.loss.registry.Registry`):
  :mod:`~grpo_fast.loss.surrogates` (``ppo``, ``cispo``, ``sapo``, ``gmpo``),
  :mod:`~grpo_fast.loss.aggregation` (the ``loss_type``\\ s),
  :mod:`~grpo_fast.loss.kl` (``k1``, ``k2``, ``k3``) and
  :mod:`~grpo_fast.loss.mismatch` (``tis``, ``mis``, ``none``: the sampler is
  not the trainer);
- :mod:`~grpo_fast.loss.inputs`: the checks of the tensors.

Importing the package does not import torch (its tables are what the
command line reads); computing a loss does.
"""

from grpo_fast.loss.aggregation import AGGREGATION_REGISTRY, LOSS_TYPES
from grpo_fast.loss.kl import KL_ESTIMATORS, KL_REGISTRY
from grpo_fast.loss.mismatch import CORRECTION_REGISTRY, CORRECTIONS
from grpo_fast.loss.options import IS_LEVELS, LossOptions
from grpo_fast.loss.policy import policy_loss
from grpo_fast.loss.surrogates import SURROGATE_REGISTRY, SURROGATES

__all__ = [
    "AGGREGATION_REGISTRY",
    "CORRECTIONS",
    "CORRECTION_REGISTRY",
    "IS_LEVELS",
    "KL_ESTIMATORS",
    "KL_REGISTRY",
    "LOSS_TYPES",
    "LossOptions",
    "SURROGATES",
    "SURROGATE_REGISTRY",
    "policy_loss",
]
