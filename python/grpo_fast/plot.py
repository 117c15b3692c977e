"""Training curves from ``metrics.jsonl`` as a PNG (matplotlib, Agg backend)."""

from __future__ import annotations

import os
from typing import Any

__all__ = ["plot_curves"]

PANELS = (
    ("reward_mean", "train reward (mean)"),
    ("eval_accuracy", "held-out accuracy"),
    ("frac_zero_std", "groups without signal"),
    ("completion_length", "completion length (tokens)"),
    ("entropy", "entropy (nats/token)"),
    ("kl", "KL to reference"),
)


def plot_curves(records: list[dict[str, Any]], path: str | os.PathLike[str]) -> None:
    """Draw the curves that were measured (a panel per metric) into ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [(k, t) for k, t in PANELS if any(r.get(k) is not None for r in records)]
    if not panels:
        return
    cols = min(3, len(panels))
    rows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.0 * rows), squeeze=False)
    for ax, (key, title) in zip(axes.flat, panels, strict=False):
        pts = [(r["step"], r[key]) for r in records if r.get(key) is not None]
        ax.plot([s for s, _ in pts], [v for _, v in pts], marker="o" if len(pts) < 30 else None)
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
