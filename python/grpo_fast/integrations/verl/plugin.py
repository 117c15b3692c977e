"""Registration in verl's registries: what verl's ``verl.plugins`` entry point runs.

verl imports every ``verl.plugins`` entry point in ``import verl``, so in the
driver that runs ``compute_advantage`` and in every Ray worker; the entry point
of this package imports this module, which registers the estimators of
:mod:`~grpo_fast.integrations.verl.estimators` in verl's registry as
``grpo_fast_grpo``, ``grpo_fast_grpo_vectorized``, ``grpo_fast_rloo``,
``grpo_fast_rloo_vectorized``, ``grpo_fast_reinforce_plus_plus_baseline``,
``grpo_fast_grpo_passk``, ``grpo_fast_remax``, ``grpo_fast_opo`` and
``grpo_fast_gpg`` (``algorithm.adv_estimator=grpo_fast_grpo``), the reward
manager of :mod:`~grpo_fast.integrations.verl.reward_manager` in verl's
reward-loop registry as ``grpo_fast`` (``reward.reward_manager.name=grpo_fast``),
and the policy losses of :mod:`~grpo_fast.integrations.verl.losses` in verl's
policy-loss registry as ``grpo_fast_vanilla`` and ``grpo_fast_gspo``
(``actor_rollout_ref.actor.policy_loss.loss_mode=grpo_fast_vanilla``).
Without the installed entry point,
``VERL_USE_EXTERNAL_MODULES=grpo_fast.integrations.verl`` does the same (the
package imports this module when verl is imported).
"""

from __future__ import annotations

from grpo_fast.integrations.verl.estimators import register_verl_estimators
from grpo_fast.integrations.verl.losses import register_verl_policy_losses
from grpo_fast.integrations.verl.reward_manager import register_verl_reward_manager


def _verl_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("verl") is not None
    except (ImportError, ValueError):
        return False


def _register_all() -> None:
    """Registration on import: by verl's ``verl.plugins`` entry point in every
    process that imports verl, or by importing this module. verl swallows a
    plugin's errors (logged at DEBUG), so failures are logged here as warnings."""
    import logging

    for register in (
        register_verl_estimators,
        register_verl_reward_manager,
        register_verl_policy_losses,
    ):
        try:
            register()
        except Exception as exc:  # pragma: no cover - depends on the installed verl
            logging.getLogger(__name__).warning(
                "grpo_fast: %s failed: %s: %s", register.__name__, type(exc).__name__, exc
            )


if _verl_installed():
    _register_all()
