"""Every option of the policy loss, its default and its check, once.

:class:`LossOptions` is what :func:`~grpo_fast.loss.policy_loss` computes
with; the trainer (``TrainerConfig.loss_options()``), the verl integration and
direct callers build one, and it checks itself when built. Importing this
module does not import torch.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.loss.aggregation import AGGREGATION_REGISTRY
from grpo_fast.loss.kl import KL_REGISTRY
from grpo_fast.loss.mismatch import check_options as check_sampler_options
from grpo_fast.loss.surrogates import SURROGATE_REGISTRY

__all__ = ["IS_LEVELS", "LossOptions"]

#: ``importance_sampling_level``: one ratio per token, or per sequence (GSPO).
IS_LEVELS = ("token", "sequence")


@dataclass(frozen=True)
class LossOptions:
    """The options of :func:`~grpo_fast.loss.policy_loss` (see it for each one's meaning).

    Examples
    --------
    >>> LossOptions(surrogate="cispo", eps_high=5.0).eps_low
    0.2
    >>> LossOptions(loss_type="ppo")
    Traceback (most recent call last):
    ...
    grpo_fast.errors.InvalidInputError: unknown loss_type 'ppo'; expected one of ('grpo', 'bnpo', 'token_mean', 'dapo', 'dr_grpo')
    """  # noqa: E501

    # The per-token objective and its ratio.
    surrogate: str = "ppo"
    eps_low: float = 0.2
    eps_high: float = 0.2
    dual_clip: float | None = None
    delta: float | None = None
    importance_sampling_level: str = "token"
    sapo_tau_pos: float = 1.0
    sapo_tau_neg: float = 1.05
    # Aggregation.
    loss_type: str = "grpo"
    max_completion_length: int | None = None
    # KL to the reference.
    beta: float = 0.0
    kl: str = "k3"
    # Entropy.
    entropy_coef: float = 0.0
    top_entropy_quantile: float = 1.0
    # The sampler's log-probs (used when they are given).
    sampler_correction: str = "tis"
    sampler_level: str = "token"
    sampler_threshold: float = 2.0

    def __post_init__(self) -> None:
        self._check_surrogate()
        for name, value, choices in (
            ("importance_sampling_level", self.importance_sampling_level, IS_LEVELS),
            ("kl", self.kl, KL_REGISTRY.names),
            ("loss_type", self.loss_type, AGGREGATION_REGISTRY.names),
        ):
            if value not in choices:
                raise InvalidInputError(f"unknown {name} {value!r}; expected one of {choices}")
        if not self.beta >= 0:
            raise InvalidInputError(f"beta must be >= 0, got {self.beta}")
        length = self.max_completion_length
        if length is not None and (isinstance(length, bool) or not isinstance(length, int)):
            raise InvalidInputError(f"max_completion_length must be a positive int, got {length!r}")
        if length is not None and length < 1:
            raise InvalidInputError(f"max_completion_length must be a positive int, got {length!r}")
        if not 0 <= self.top_entropy_quantile <= 1:
            raise InvalidInputError(
                f"top_entropy_quantile must be in [0, 1], got {self.top_entropy_quantile}"
            )
        if not math.isfinite(self.entropy_coef):
            raise InvalidInputError(f"entropy_coef must be finite, got {self.entropy_coef}")
        check_sampler_options(self.sampler_correction, self.sampler_level, self.sampler_threshold)

    def _check_surrogate(self) -> None:
        s = self.surrogate
        SURROGATE_REGISTRY[s]  # unknown: InvalidInputError naming the choices
        # CISPO's eps_low >= 1 means no lower bound; GMPO's range is in log space.
        top = math.inf if s in ("cispo", "gmpo") else 1
        got = f"got eps_low={self.eps_low}, eps_high={self.eps_high}"
        if not self.eps_low < top:
            raise InvalidInputError(
                f"eps_low must be < 1 with surrogate={s!r}: need 0 <= eps_low < 1 and "
                f"eps_high >= 0, {got}"
            )
        if not (self.eps_low >= 0 and self.eps_high >= 0):
            bound = "" if top == math.inf else " < 1"
            raise InvalidInputError(f"need 0 <= eps_low{bound} and eps_high >= 0, {got}")
        if s != "ppo" and (self.dual_clip is not None or self.delta is not None):
            raise InvalidInputError(
                f"dual_clip and delta bound PPO's clipped ratio; surrogate={s!r} has none"
            )
        if s == "gmpo" and self.importance_sampling_level != "token":
            raise InvalidInputError(
                "surrogate='gmpo' is already a sequence-level ratio (a geometric mean of the "
                "token ratios); use importance_sampling_level='token'"
            )
        if self.dual_clip is not None and not self.dual_clip > 1:
            raise InvalidInputError(f"dual_clip must be > 1, got {self.dual_clip}")
        if self.delta is not None and not self.delta > 1:
            raise InvalidInputError(f"delta must be > 1, got {self.delta}")
        if not (self.sapo_tau_pos > 0 and self.sapo_tau_neg > 0):
            raise InvalidInputError(
                f"sapo_tau_pos and sapo_tau_neg must be > 0, got {self.sapo_tau_pos}, "
                f"{self.sapo_tau_neg}"
            )

    def replace(self, **changes: Any) -> LossOptions:
        """A copy with ``changes``, checked again."""
        return dataclasses.replace(self, **changes)


#: The option names, for callers that take them as keywords (``policy_loss(eps_low=...)``).
OPTION_NAMES = frozenset(f.name for f in dataclasses.fields(LossOptions))
