"""Registration in verl's registries: what verl's ``verl.plugins`` entry point runs.

verl imports every ``verl.plugins`` entry point in ``import verl``, so in the
driver that runs ``compute_advantage`` and in every Ray worker; the entry point
of this package imports :mod:`grpo_fast.integrations.verl`, which imports this
module, which registers the estimators of
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
``VERL_USE_EXTERNAL_MODULES=grpo_fast.integrations.verl`` does the same.

Registration is lazy: importing this module imports nothing of verl. Each
registry is filled when verl's module holding it is imported (at once if it
already is): ``verl.trainer.ppo.core_algos`` for the estimators and losses,
``verl.experimental.reward_loop.reward_manager`` (the package of its
registry) for the reward manager. A process that uses grpo-fast's verl
drop-ins without verl's trainer (``compute_score``, the estimators called
directly) never pays for importing verl (seconds and tens of MB: torch, ray,
tensordict), and the order of the imports does not matter.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import logging
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

from grpo_fast.integrations.verl.estimators import register_verl_estimators
from grpo_fast.integrations.verl.losses import register_verl_policy_losses
from grpo_fast.integrations.verl.reward_manager import register_verl_reward_manager

#: verl's module holding each registry -> what registers in it.
WATCHED: dict[str, tuple[Callable[[], bool], ...]] = {
    "verl.trainer.ppo.core_algos": (register_verl_estimators, register_verl_policy_losses),
    "verl.experimental.reward_loop.reward_manager": (register_verl_reward_manager,),
}


def _register(name: str) -> None:
    """Run the registrations of verl's module ``name``. verl swallows a plugin's
    errors (logged at DEBUG), so failures are logged here as warnings."""
    for register in WATCHED[name]:
        try:
            register()
        except Exception as exc:  # pragma: no cover - depends on the installed verl
            logging.getLogger(__name__).warning(
                "grpo_fast: %s failed: %s: %s", register.__name__, type(exc).__name__, exc
            )


class _RegisterAfter(importlib.abc.Loader):
    """A watched module's own loader, then its registrations."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self.loader.exec_module(module)
        module.__loader__ = self.loader  # the module keeps its real loader
        _register(module.__name__)

    def __getattr__(self, name: str) -> Any:  # get_source, get_filename, is_package, ...
        return getattr(self.loader, name)


class _Watch(importlib.abc.MetaPathFinder):
    """Finds a watched module with the other finders and registers after it loads."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in WATCHED or name in _pending:
            return None
        _pending.add(name)
        try:
            spec = importlib.util.find_spec(name)
        finally:
            _pending.discard(name)
        if spec is None or spec.loader is None:
            return None
        spec.loader = _RegisterAfter(spec.loader)
        return spec


_pending: set[str] = set()


def install() -> None:
    """Register now in the watched modules already imported; watch for the others."""
    if not any(isinstance(f, _Watch) for f in sys.meta_path):
        sys.meta_path.insert(0, _Watch())
    for name in WATCHED:
        if name in sys.modules:
            _register(name)


install()
