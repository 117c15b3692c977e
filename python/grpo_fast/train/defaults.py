"""Defaults that depend on the model: the embedded demo's, or a real run's.

The embedded demo (a 0.8M-parameter adder that answers in 4 tokens) learns in
a minute on a CPU with a high learning rate, 4 new tokens, fp32 and a 500-sum
evaluation. None of that suits a real model, so a :class:`TrainerConfig
<grpo_fast.train.trainer.TrainerConfig>` field whose default differs declares both
with :func:`by_model`, and ``TrainerConfig.__post_init__`` picks one: the
demo's when ``model`` is the embedded demo, the real run's otherwise (TRL's
``GRPOConfig`` is the reference: learning rate 1e-6, 256 new tokens, bf16,
gradient checkpointing). A value given explicitly (flag, config file, Python
argument) is never replaced. The command line's ``--help`` shows both.

Examples
--------
>>> d = by_model(256, demo=4)
>>> str(d), resolve(d, demo=True), resolve(d, demo=False), resolve(7, demo=True)
('256; embedded demo: 4', 4, 256, 7)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["DEMO_MODEL", "DEMO_MODELS", "ByModel", "by_model", "is_demo_model", "resolve"]

#: The embedded demo model (``python/grpo_fast/data/tiny_adder``).
DEMO_MODEL = Path(__file__).resolve().parent.parent / "data" / "tiny_adder"
#: Every embedded model that takes the demo's defaults: the adder, the chain-of-sums
#: model of ``--task chain`` (``tiny_chain``), the calculator-calling model of
#: ``--task multiply`` (``tiny_tool``) and the function-writing model of ``--task code``
#: (``tiny_code``), as small and trained the same way.
DEMO_MODELS = tuple(
    DEMO_MODEL.parent / name for name in ("tiny_adder", "tiny_chain", "tiny_tool", "tiny_code")
)


@dataclass(frozen=True)
class ByModel:
    """A field's default for any model (``run``) and for the embedded demo (``demo``)."""

    run: Any
    demo: Any

    def __str__(self) -> str:
        return f"{self.run}; embedded demo: {self.demo}"


def by_model(run: Any, *, demo: Any) -> Any:
    """A dataclass default resolved by :func:`resolve` once the model is known (typed
    ``Any`` so a field keeps its own annotation)."""
    return ByModel(run, demo)


def resolve(value: Any, *, demo: bool) -> Any:
    """``value`` itself, or the default of :func:`by_model` that fits the model."""
    if isinstance(value, ByModel):
        return value.demo if demo else value.run
    return value


def is_demo_model(model: Any) -> bool:
    """Whether ``model`` (a path or hub id) names an embedded demo model (:data:`DEMO_MODELS`)."""
    try:
        return Path(str(model)).expanduser().resolve() in DEMO_MODELS
    except (OSError, RuntimeError, ValueError):
        return False
