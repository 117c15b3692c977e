"""``import grpo_fast`` needs numpy alone; the torch modules load on first use."""

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
        "print(sorted(m for m in ('torch', 'transformers', 'vllm') if m in sys.modules))"
    )
    assert _run(code) == "[]"


def test_trainer_loads_on_first_access():
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    code = (
        "import sys, grpo_fast\n"
        "before = 'torch' in sys.modules\n"
        "cls = grpo_fast.TrainerConfig\n"
        "print(before, 'torch' in sys.modules, cls.__module__, 'Trainer' in dir(grpo_fast))"
    )
    assert _run(code) == "False True grpo_fast.trainer True"


def test_unknown_attribute_and_no_future_leak():
    import grpo_fast

    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        grpo_fast.nope  # noqa: B018
    assert not hasattr(grpo_fast, "annotations")
