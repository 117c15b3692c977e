"""verl drop-ins: advantage estimators, reward functions, a reward manager and
policy losses with verl's signatures, one module per role:

- :mod:`~grpo_fast.integrations.verl.estimators`: ``compute_*_outcome_advantage``
  with verl's arguments and conventions, the group statistics from the Rust core;
- :mod:`~grpo_fast.integrations.verl.rewards`: :func:`compute_score` (verl's
  ``custom_reward_function`` form) and :func:`compute_score_batch`, with verl's
  conventions per ``data_source``::

      reward.custom_reward_function.path=pkg://grpo_fast.integrations.verl
      reward.custom_reward_function.name=compute_score

- :mod:`~grpo_fast.integrations.verl.reward_manager`: the reward-loop manager
  ``grpo_fast`` (``reward.reward_manager.name=grpo_fast``);
- :mod:`~grpo_fast.integrations.verl.losses`: the policy losses
  ``grpo_fast_vanilla`` and ``grpo_fast_gspo``;
- :mod:`~grpo_fast.integrations.verl.plugin`: their registration in verl's
  registries, which the package's ``verl.plugins`` entry point runs in every
  process that imports verl (or ``VERL_USE_EXTERNAL_MODULES=grpo_fast.integrations.verl``).

Importing this package imports neither verl nor torch: in a process that has
not imported verl (a reward server, a test), :func:`compute_score` and the
estimators are at hand without verl's trainer stack; once verl is imported,
this package registers itself (and verl's plugin loading imports the plugin).
"""

from __future__ import annotations

import sys
from typing import Any

from grpo_fast.integrations.verl.estimators import (
    REGISTERED_NAMES,
    compute_gpg_outcome_advantage,
    compute_grpo_outcome_advantage,
    compute_grpo_passk_outcome_advantage,
    compute_grpo_vectorized_outcome_advantage,
    compute_opo_outcome_advantage,
    compute_reinforce_plus_plus_baseline_outcome_advantage,
    compute_remax_outcome_advantage,
    compute_rloo_outcome_advantage,
    compute_rloo_vectorized_outcome_advantage,
    register_verl_estimators,
)
from grpo_fast.integrations.verl.losses import register_verl_policy_losses
from grpo_fast.integrations.verl.reward_manager import (
    REWARD_MANAGER_NAME,
    register_verl_reward_manager,
)
from grpo_fast.integrations.verl.rewards import (
    JUDGES,
    Convention,
    compute_score,
    compute_score_batch,
    convention,
    score_items,
)

__all__ = [
    "JUDGES",
    "REGISTERED_NAMES",
    "REWARD_MANAGER_NAME",
    "Convention",
    "GrpoFastRewardManager",
    "compute_grpo_outcome_advantage",
    "compute_grpo_passk_outcome_advantage",
    "compute_gpg_outcome_advantage",
    "compute_grpo_vectorized_outcome_advantage",
    "compute_opo_outcome_advantage",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_rloo_vectorized_outcome_advantage",
    "compute_score",
    "compute_score_batch",
    "convention",
    "register_verl_estimators",
    "register_verl_policy_losses",
    "register_verl_reward_manager",
    "score_items",
]


if "verl" in sys.modules:  # imported by verl (VERL_USE_EXTERNAL_MODULES) or after it
    from grpo_fast.integrations.verl import plugin  # noqa: F401  (registers)


def __getattr__(name: str) -> Any:
    # The manager class is made when it is registered (it subclasses verl's base).
    if name == "GrpoFastRewardManager":
        from grpo_fast.integrations.verl import reward_manager

        return reward_manager.GrpoFastRewardManager
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
