"""What a run reports: ``metrics.jsonl``, TensorBoard and Weights & Biases, and the
lines it prints for the person watching.

``metrics.jsonl`` holds one JSON object per line, each with ``step``;
evaluation steps add ``eval_accuracy``. It is appended to as training goes,
so a stopped run keeps its curves; on resume the lines after the
checkpoint's step are dropped first (and a last line cut short, as a full
disk leaves it), so the file reads as if the run had never stopped.

``report_to`` adds TensorBoard (``tensorboard/`` beside the JSONL) and W&B
(``wandb/``; ``WANDB_MODE=offline`` works without a network), logged with
the JSONL's metric names at the same steps.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from grpo_fast.errors import InvalidInputError

__all__ = [
    "REPORT_TO",
    "MetricsWriter",
    "NoSignalWatch",
    "Tracker",
    "parse_report_to",
    "read_metrics",
    "say",
]

#: Where a run's W&B directory keeps its run id (and so is known to be the run's).
WANDB_ID_FILE = "grpo-fast-run-id"
#: ``report_to`` names and the package each needs.
REPORT_TO = {"tensorboard": "tensorboard", "wandb": "wandb"}


def say(message: str) -> None:
    """One line on stderr for the person running training, drawn above a progress bar
    instead of through it."""
    from tqdm.auto import tqdm

    tqdm.write(message, file=sys.stderr)


# ---------------------------------------------------------------------- metrics.jsonl
def _clean(value: Any) -> Any:
    # JSON has no NaN/inf; null says "not measured" honestly.
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _read_lines(path: Path) -> tuple[list[tuple[str, dict[str, Any]]], str | None]:
    """Each line's text and record, and the last line if it is cut short (else None)."""
    if not path.exists():
        return [], None
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    out = []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            if i == len(lines) - 1:  # the write that was cut short (a full disk, a kill)
                return out, line
            raise InvalidInputError(
                f"{path}: line {i + 1} is not a metrics record (JSON with a 'step'): {line[:80]!r}"
            )
        out.append((line, record))
    return out, None


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file (missing file: none; a last line cut
    short is left out)."""
    return [record for _, record in _read_lines(Path(path))[0]]


class MetricsWriter:
    """Appends one JSON object per step to ``path``.

    ``truncate_after=N`` (a resumed run) keeps the records up to step ``N``
    and drops the rest; otherwise the file starts empty.
    """

    def __init__(self, path: str | os.PathLike[str], *, truncate_after: int | None = None) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept: list[str] = []
        if truncate_after is not None:
            lines, cut = _read_lines(self.path)
            if cut is not None:
                say(f"{self.path}: dropped its last line, cut short when the run stopped")
            kept = [line for line, r in lines if r["step"] <= truncate_after]
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, self.path)

    def write(self, record: dict[str, Any]) -> None:
        if "step" not in record:
            raise ValueError("a metrics record needs a 'step'")
        line = json.dumps({k: _clean(v) for k, v in record.items()})
        with open(self.path, "a") as f:
            f.write(line + "\n")


# ---------------------------------------------------------------------- TensorBoard, W&B
def parse_report_to(values: str | Iterable[str] | None) -> tuple[str, ...]:
    """``report_to`` as a tuple of backend names: repeated or comma-separated,
    ``none`` for none; a missing package is an error naming the extra.

    Examples
    --------
    >>> parse_report_to("none")
    ()
    >>> parse_report_to(["tensorboard,wandb", "tensorboard"])
    ('tensorboard', 'wandb')
    """
    items = [values] if isinstance(values, str) else list(values or ())
    names: list[str] = []
    for item in items:
        for name in str(item).split(","):
            name = name.strip().lower()
            if name in ("", "none"):
                continue
            if name not in REPORT_TO:
                raise InvalidInputError(
                    f"report_to: unknown tracker {name!r}; choose from "
                    f"{', '.join(['none', *REPORT_TO])}"
                )
            if name not in names:
                names.append(name)
    for name in names:
        if importlib.util.find_spec(REPORT_TO[name]) is None:
            raise InvalidInputError(
                f"report_to {name} needs the {REPORT_TO[name]!r} package: "
                f"pip install 'grpo-fast[tracking]' (or pip install {REPORT_TO[name]})"
            )
    return tuple(names)


def _scalars(record: dict[str, Any]) -> dict[str, float]:
    return {
        k: float(v)
        for k, v in record.items()
        if k != "step"
        and isinstance(v, int | float)
        and not isinstance(v, bool)
        and math.isfinite(v)
    }


class _TensorBoard:
    def __init__(self, log_dir: Path, resume_step: int | None) -> None:
        from torch.utils.tensorboard import SummaryWriter

        # purge_step hides what an earlier attempt logged after the checkpoint.
        purge = None if resume_step is None else resume_step + 1
        self.writer = SummaryWriter(str(log_dir), purge_step=purge)

    def log(self, step: int, values: dict[str, float]) -> None:
        for k, v in values.items():
            self.writer.add_scalar(k, v, global_step=step)
        self.writer.flush()  # a killed run keeps its curves up to here

    def close(self) -> None:
        self.writer.close()


class _Wandb:
    def __init__(self, out_dir: Path, config: dict[str, Any], resume_step: int | None) -> None:
        import wandb

        # One W&B run per output directory: a resumed run continues it.
        id_file = out_dir / "wandb" / WANDB_ID_FILE
        resumed = resume_step is not None and id_file.exists()
        run_id = id_file.read_text().strip() if resumed else None
        id_file.parent.mkdir(parents=True, exist_ok=True)
        try:
            self.run = wandb.init(
                project=os.environ.get("WANDB_PROJECT", "grpo-fast"),
                name=out_dir.resolve().name,
                dir=str(out_dir),
                config=config,
                id=run_id,
                resume="allow" if run_id else None,
            )
        except wandb.errors.Error as e:  # no API key, ...
            raise InvalidInputError(
                f"report_to wandb: W&B did not start ({e}); run `wandb login`, or set "
                "WANDB_MODE=offline to keep the run on disk"
            ) from None
        id_file.write_text(self.run.id + "\n")

    def log(self, step: int, values: dict[str, float]) -> None:
        self.run.log(values, step=step)

    def close(self) -> None:
        self.run.finish()


class Tracker:
    """``metrics.jsonl`` and the ``report_to`` backends, written record by record.

    The backends start at :meth:`open` or the first record (building a trainer
    starts no W&B run) and stop at :meth:`close`.
    """

    def __init__(
        self,
        out_dir: str | os.PathLike[str],
        *,
        report_to: Iterable[str] = (),
        resume_step: int | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        self.out = Path(out_dir)
        self.metrics = MetricsWriter(self.out / "metrics.jsonl", truncate_after=resume_step)
        self.report_to = parse_report_to(report_to)
        self.config = config or {}
        self._last_step = resume_step
        self._open: list[Any] = []

    @property
    def path(self) -> Path:
        return self.metrics.path

    def open(self) -> None:
        """Start the backends (done by the first :meth:`write` too). Opened again after
        :meth:`close` (another ``train()`` call), they continue the run."""
        if self._open or not self.report_to:
            return
        for name in self.report_to:
            if name == "tensorboard":
                self._open.append(_TensorBoard(self.out / "tensorboard", self._last_step))
            else:
                self._open.append(_Wandb(self.out, self.config, self._last_step))

    def write(self, record: dict[str, Any]) -> None:
        self.metrics.write(record)
        if not self.report_to:
            return
        self.open()
        values = _scalars(record)
        for backend in self._open:
            backend.log(int(record["step"]), values)
        self._last_step = int(record["step"])

    def close(self) -> None:
        for backend in self._open:
            backend.close()
        self._open = []


# ---------------------------------------------------------------------- warnings
class NoSignalWatch:
    """Says once when ``steps`` steps in a row trained on no signal (every advantage
    0: within each group all rewards were equal): the reward or the answers are
    probably wrong.

    Examples
    --------
    >>> watch = NoSignalWatch(steps=2)
    >>> [watch.update([0.0, 0.0], reward_mean=0.0) is None for _ in range(3)]
    [True, False, True]
    """

    def __init__(self, steps: int = 20) -> None:
        self.steps = steps
        self.run = 0

    def update(self, advantages: Any, *, reward_mean: float | None = None) -> str | None:
        """The warning (once per streak) after a step that trained on ``advantages``,
        else None."""
        if np.any(np.asarray(advantages) != 0):
            self.run = 0
            return None
        self.run += 1
        if self.run != self.steps:
            return None
        mean = "" if reward_mean is None else f" (mean reward {reward_mean:.3g})"
        return (
            f"warning: no learning signal for {self.steps} steps in a row: within every group "
            f"all rewards were equal{mean}, so every advantage was 0. Check that the answers "
            "and the reward fit each other (answer format, --reward, a --max-new-tokens long "
            "enough to finish) and that the task suits the model."
        )
