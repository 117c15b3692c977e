"""``import grpo_fast`` needs numpy alone: the torch code is in subpackages
(``grpo_fast.train``, ``grpo_fast.loss``, ``grpo_fast.sampling``) that the top
layer never imports; the module paths from before they moved keep working."""

from __future__ import annotations

import subprocess
import sys

import pytest


def _run(code: str) -> str:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True
    )
    return proc.stdout.strip()


def test_import_grpo_fast_does_not_import_torch():
    code = (
        "import sys, grpo_fast\n"
        "grpo_fast.verify_batch('4', ['4']); grpo_fast.compute_advantages([1.0, 0.0], [0, 0])\n"
        "import grpo_fast.verify, grpo_fast.rewards, grpo_fast.steps, grpo_fast.advantages\n"
        "heavy = ('torch', 'transformers', 'vllm', 'grpo_fast.train', 'grpo_fast.loss',\n"
        "         'grpo_fast.sampling', 'grpo_fast.logprobs')\n"
        "print(sorted(m for m in heavy if m in sys.modules))"
    )
    assert _run(code) == "[]"


def test_the_module_paths_from_before_the_subpackages_still_import():
    """``grpo_fast.trainer`` and the other moved paths are the new modules themselves."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    import importlib

    import grpo_fast
    import grpo_fast.train.trainer
    from grpo_fast._moved import MOVED

    for old, new in MOVED.items():
        if old.startswith("grpo_fast.integrations.verl"):
            continue  # needs verl's torch stack only when used; checked below
        assert importlib.import_module(old) is importlib.import_module(new), old
        assert importlib.import_module(new).__spec__.name == new  # the alias left it alone
    from grpo_fast.surrogates import cispo  # an old `from` import
    from grpo_fast.trainer import TrainerConfig

    assert TrainerConfig is grpo_fast.train.trainer.TrainerConfig
    assert cispo.__module__ == "grpo_fast.loss.surrogates"
    assert grpo_fast.checkpoint is importlib.import_module("grpo_fast.train.checkpoint")
    assert grpo_fast.loss.policy_loss.__module__ == "grpo_fast.loss.policy"
    from grpo_fast.integrations import verl_loss

    assert verl_loss.compute_policy_loss_vanilla.__module__ == "grpo_fast.integrations.verl.losses"


def test_trainer_loads_on_first_access():
    """``grpo_fast.TrainerConfig`` is the config module's (no torch); ``grpo_fast.Trainer``
    loads the trainer, torch with it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    code = (
        "import sys, grpo_fast\n"
        "cls = grpo_fast.TrainerConfig\n"
        "config = 'torch' in sys.modules\n"
        "trainer = grpo_fast.Trainer\n"
        "print(config, 'torch' in sys.modules, cls.__module__, trainer.__module__,\n"
        "      'Trainer' in dir(grpo_fast))"
    )
    assert _run(code) == "False True grpo_fast.train.config grpo_fast.train.trainer True"


def test_unknown_attribute_and_no_future_leak():
    import grpo_fast

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        grpo_fast.nope  # noqa: B018
    assert not hasattr(grpo_fast, "annotations")
