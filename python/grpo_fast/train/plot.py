"""Training curves from ``metrics.jsonl`` as a PNG (matplotlib, Agg backend).

Per-step metrics are noisy (a step sees a few dozen samples): each panel with
enough points draws the raw values faintly and an exponential moving average
over them, as TensorBoard's smoothing does.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np

__all__ = ["plot_curves", "smooth"]

#: Panels with at least this many points get a smoothed line.
MIN_POINTS_TO_SMOOTH = 10

PANELS = (
    ("reward_mean", "train reward (mean)"),
    ("eval_accuracy", "held-out accuracy"),
    ("frac_zero_std", "groups without signal"),
    ("completion_length", "completion length (tokens)"),
    ("entropy", "entropy (nats/token)"),
    ("kl", "KL to reference"),
)


def smooth(values: list[float] | np.ndarray, span: float | None = None) -> np.ndarray:
    """Exponential moving average with weight ``2 / (span + 1)`` on each new value,
    debiased at the start (each output is a weighted mean of the values so far, as
    TensorBoard's smoothing and pandas' ``ewm(span=..., adjust=True)``); the default
    span is a tenth of the points (at least 2).

    Examples
    --------
    >>> smooth([0.0, 1.0, 1.0], span=3).round(3).tolist()
    [0.0, 0.667, 0.857]
    """
    x = np.asarray(values, dtype=np.float64)
    if span is None:
        span = max(2.0, len(x) / 10)
    keep = 1.0 - 2.0 / (span + 1.0)
    out = np.empty_like(x)
    num = den = 0.0
    for i, v in enumerate(x):
        num = keep * num + v
        den = keep * den + 1.0
        out[i] = num / den
    return out


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
        steps, values = [s for s, _ in pts], [v for _, v in pts]
        if len(pts) >= MIN_POINTS_TO_SMOOTH:
            (raw,) = ax.plot(steps, values, alpha=0.3, linewidth=0.8, label="raw")
            ax.plot(steps, smooth(values), color=raw.get_color(), label="smoothed")
        else:
            ax.plot(steps, values, marker="o")
        ax.set_title(title)
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    for ax in list(axes.flat)[len(panels) :]:
        ax.axis("off")
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
