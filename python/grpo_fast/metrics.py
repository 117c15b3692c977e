"""Per-step training metrics as JSON lines.

One JSON object per line, each with ``step``; evaluation steps add
``eval_accuracy``. The file is appended to as training goes, so a crashed run
keeps its curves; on resume the lines after the checkpoint's step are dropped
first, so the file reads as if the run had never stopped.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

__all__ = ["MetricsWriter", "read_metrics"]


def _clean(value: Any) -> Any:
    # JSON has no NaN/inf; null says "not measured" honestly.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


class MetricsWriter:
    """Appends one JSON object per step to ``path``."""

    def __init__(self, path: str | os.PathLike[str], *, truncate_after: int | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if truncate_after is None:
            self.path.write_text("")
        else:
            kept = [r for r in read_metrics(self.path) if r["step"] <= truncate_after]
            self.path.write_text("".join(json.dumps(r) + "\n" for r in kept))

    def write(self, record: dict[str, Any]) -> None:
        if "step" not in record:
            raise ValueError("a metrics record needs a 'step'")
        line = json.dumps({k: _clean(v) for k, v in record.items()})
        with open(self.path, "a") as f:
            f.write(line + "\n")


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file (missing file: none)."""
    p = Path(path)
    if not p.exists():
        return []
    return [json.loads(line) for line in p.read_text().splitlines() if line.strip()]
