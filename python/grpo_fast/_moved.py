"""The import paths of modules that moved into subpackages keep working.

``grpo_fast.trainer`` is :mod:`grpo_fast.train.trainer` itself (the same module
object, so a patch through either name is seen by both), imported when the
old name is first imported or read as an attribute of :mod:`grpo_fast`.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any

#: old module path -> the module it is now.
MOVED = {
    **{
        f"grpo_fast.{name}": f"grpo_fast.train.{name}"
        for name in (
            "checkpoint",
            "curriculum",
            "data",
            "defaults",
            "distributed",
            "interrupt",
            "metrics",
            "modeling",
            "plot",
            "rollout",
            "tracking",
            "trainer",
        )
    },
    "grpo_fast.mismatch": "grpo_fast.loss.mismatch",
    "grpo_fast.surrogates": "grpo_fast.loss.surrogates",
    "grpo_fast.integrations.verl_loss": "grpo_fast.integrations.verl.losses",
}


class _Alias(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path first and loads it as the module at its new path."""

    def find_spec(self, name: str, path: Any = None, target: Any = None) -> Any:
        if name not in MOVED:
            return None
        return importlib.util.spec_from_loader(name, self)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        module = importlib.import_module(MOVED[spec.name])
        self._spec = module.__spec__  # the import system overwrites it next
        return module

    def exec_module(self, module: ModuleType) -> None:
        module.__spec__ = self._spec


def install() -> None:
    if not any(isinstance(f, _Alias) for f in sys.meta_path):
        sys.meta_path.insert(0, _Alias())
