"""What a run reports: ``metrics.jsonl``, TensorBoard and Weights & Biases, and the
lines it prints for the person watching.

``metrics.jsonl`` holds one JSON object per line, each with ``step``;
evaluation steps add ``eval_accuracy``. The names are TRL's (``reward``,
``reward_std``, ``rewards/<name>/mean``, ``completions/mean_length``,
``frac_reward_zero_std``, ...); a file written before they were
(``reward_mean``, ``reward/<name>``, ...) reads with them too
(:data:`LEGACY_NAMES`). It is appended to as training goes, so a stopped run
keeps its curves; on resume the lines after the checkpoint's step are
dropped first (and a last line cut short, as a full disk leaves it, or any
line that is not a record), so the file reads as if the run had never
stopped: every step's row exactly once.

``completions.jsonl`` (``log_completions``) holds sampled prompts, their
completions and each reward's score, every ``logging_steps`` steps, and goes
to the trackers too (a W&B table, TensorBoard text).

``report_to`` adds TensorBoard (``tensorboard/`` beside the JSONL) and W&B
(``wandb/``; ``WANDB_MODE=offline`` works without a network), logged with
the JSONL's metric names at the same steps.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import logging
import math
import os
import sys
import warnings
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from grpo_fast.errors import InvalidInputError

__all__ = [
    "LEGACY_NAMES",
    "REPORT_TO",
    "CompletionLog",
    "MetricsWriter",
    "NoSignalWatch",
    "SayOnce",
    "Tracker",
    "parse_report_to",
    "quiet_libraries",
    "current_name",
    "log_line",
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


#: Metric names grpo-fast logged before it took TRL's, and TRL's name of each
#: (``reward/<name>`` became ``rewards/<name>/mean``): :func:`read_metrics` reads an
#: older file with the new names.
LEGACY_NAMES = {
    "reward_mean": "reward",
    "frac_zero_std": "frac_reward_zero_std",
    "completion_length": "completions/mean_length",
    "truncated_frac": "completions/clipped_ratio",
    "clip_frac_low": "clip_ratio/low_mean",
    "clip_frac_high": "clip_ratio/high_mean",
    "clip_frac": "clip_ratio/region_mean",
}


def current_name(key: str) -> str:
    """A metric's name as logged now: TRL's for one of :data:`LEGACY_NAMES`
    (``reward/<name>``: ``rewards/<name>/mean``), else itself.

    Examples
    --------
    >>> current_name("reward_mean"), current_name("reward/math"), current_name("kl")
    ('reward', 'rewards/math/mean', 'kl')
    """
    if key in LEGACY_NAMES:
        return LEGACY_NAMES[key]
    if key.startswith("reward/"):
        return f"rewards/{key[len('reward/') :]}/mean"
    return key


def _read_lines(
    path: Path, *, repair: bool = False
) -> tuple[list[tuple[str, dict[str, Any]]], list[str]]:
    """Each good line's text and record, and the lines that are not records: the last one
    if it is cut short; with ``repair``, any (else one in the middle is an error)."""
    if not path.exists():
        return [], []
    lines = path.read_bytes().decode("utf-8", errors="replace").splitlines()
    out, bad = [], []
    for i, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if not isinstance(record, dict) or not isinstance(record.get("step"), int):
            # The last: the write that was cut short (a full disk, a kill).
            if repair or i == len(lines) - 1:
                bad.append(line)
                continue
            raise InvalidInputError(
                f"{path}: line {i + 1} is not a metrics record (JSON with a 'step'): {line[:80]!r}"
            )
        out.append((line, record))
    return out, bad


def read_metrics(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """The records of a ``metrics.jsonl`` file (missing file: none; a last line cut
    short is left out), with TRL's metric names (an older file's are renamed:
    :data:`LEGACY_NAMES`)."""
    return [
        {current_name(k): v for k, v in record.items()} for _, record in _read_lines(Path(path))[0]
    ]


class MetricsWriter:
    """Appends one JSON object per step to ``path``.

    ``truncate_after=N`` (a resumed run) keeps the records up to step ``N``
    and drops the rest; otherwise the file starts empty. ``last_record``: the
    record of step ``N`` as the checkpoint kept it, written back when the file
    lost it (its line was the one cut short).
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        truncate_after: int | None = None,
        last_record: dict[str, Any] | None = None,
    ) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        kept: list[str] = []
        if truncate_after is not None:
            lines, bad = _read_lines(self.path, repair=True)
            for line in bad:
                say(
                    f"{self.path}: dropped a line that is not a record (cut short when the run "
                    f"stopped?): {line[:60]!r}"
                )
            # Each step once: the last row written for it (a step logged twice by an
            # earlier tool is not repeated).
            by_step: dict[int, str] = {}
            for line, r in lines:
                if r["step"] <= truncate_after:
                    by_step[r["step"]] = line
            if (
                last_record is not None
                and last_record.get("step") == truncate_after
                and truncate_after not in by_step
            ):
                by_step[truncate_after] = _line(last_record)
                say(f"{self.path}: wrote back the row of step {truncate_after} from its checkpoint")
            kept = [by_step[s] for s in sorted(by_step)]
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, self.path)

    def write(self, record: dict[str, Any]) -> None:
        if "step" not in record:
            raise ValueError("a metrics record needs a 'step'")
        with open(self.path, "a") as f:
            f.write(_line(record) + "\n")


def _line(record: dict[str, Any]) -> str:
    return json.dumps({k: _clean(v) for k, v in record.items()})


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

    def table(self, step: int, rows: list[dict[str, Any]]) -> None:
        self.writer.add_text("completions", _markdown(rows), global_step=step)
        self.writer.flush()

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

    def table(self, step: int, rows: list[dict[str, Any]]) -> None:
        import wandb

        columns = list(rows[0]) if rows else []
        data = [[r.get(c) for c in columns] for r in rows]
        self.run.log({"completions": wandb.Table(columns=columns, data=data)}, step=step)

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
        last_record: dict[str, Any] | None = None,
    ) -> None:
        self.out = Path(out_dir)
        self.metrics = MetricsWriter(
            self.out / "metrics.jsonl", truncate_after=resume_step, last_record=last_record
        )
        self.report_to = parse_report_to(report_to)
        self.config = config or {}
        self._last_step = resume_step
        self._open: list[Any] = []
        self._resume_step = resume_step
        self._completions: CompletionLog | None = None

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

    def log_completions(self, step: int, rows: list[dict[str, Any]]) -> None:
        """Sampled completions of ``step`` (``log_completions``): one dict per completion
        (``prompt``, ``completion``, each reward, ``advantage``), to ``completions.jsonl``
        and the backends (a W&B table, TensorBoard text)."""
        if self._completions is None:
            self._completions = CompletionLog(
                self.out / "completions.jsonl", truncate_after=self._resume_step
            )
        self._completions.write(step, rows)
        if not self.report_to:
            return
        self.open()
        for backend in self._open:
            backend.table(step, rows)

    def close(self) -> None:
        for backend in self._open:
            backend.close()
        self._open = []


class CompletionLog:
    """``completions.jsonl``: one JSON object per logged completion, with its ``step``.

    Like :class:`MetricsWriter`, a resumed run (``truncate_after=N``) keeps the
    rows up to step ``N`` and drops the rest (and a line cut short); otherwise
    the file starts empty. Opened at the first :meth:`write`.
    """

    def __init__(self, path: str | os.PathLike[str], *, truncate_after: int | None = None) -> None:
        self.path = Path(path)
        kept: list[str] = []
        if truncate_after is not None:
            lines, _bad = _read_lines(self.path, repair=True)
            kept = [line for line, r in lines if r["step"] <= truncate_after]
        tmp = self.path.with_name(f".{self.path.name}.tmp")
        tmp.write_text("".join(line + "\n" for line in kept))
        os.replace(tmp, self.path)

    def write(self, step: int, rows: list[dict[str, Any]]) -> None:
        with open(self.path, "a") as f:
            f.write("".join(_line({"step": step, **r}) + "\n" for r in rows))


def _markdown(rows: list[dict[str, Any]]) -> str:
    """``rows`` as a Markdown table (TensorBoard's text tab renders it)."""
    if not rows:
        return ""
    columns = list(rows[0])

    def cell(v: Any) -> str:
        if isinstance(v, str):
            text = v
        else:
            text = f"{v:.4g}" if isinstance(v, float) else json.dumps(v)
        return text.replace("|", "\\|").replace("\n", "<br>")

    head = "| " + " | ".join(columns) + " |\n|" + "---|" * len(columns) + "\n"
    return head + "".join("| " + " | ".join(cell(r.get(c)) for c in columns) + " |\n" for r in rows)


# ---------------------------------------------------------------------- plain-text lines
#: The values a plain-text log line shows, in order, and their short names.
_LINE = (
    ("reward", "reward"),
    ("reward_std", "reward_std"),
    ("loss", "loss"),
    ("kl", "kl"),
    ("entropy", "entropy"),
    ("completions/mean_length", "length"),
    ("frac_reward_zero_std", "zero_std"),
    ("tools/call_frequency", "tool_calls"),  # runs with tools only (docs/tools.md)
    ("eval_accuracy", "eval_accuracy"),
)


def _duration(seconds: float) -> str:
    seconds = int(round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}h{m:02d}m" if h else f"{m}m{s:02d}s" if m else f"{s}s"


def log_line(record: dict[str, Any], max_steps: int, seconds_per_step: float | None = None) -> str:
    """One plain-text line for a step's record, for logs without a progress bar (CI,
    ``nohup``): the step, the main metrics, the pace and the time left.

    Examples
    --------
    >>> log_line({"step": 20, "reward": 0.4123, "kl": None, "eval_accuracy": 0.5}, 100, 1.5)
    'step 20/100 | reward 0.4123 | eval_accuracy 0.5 | 1.50 s/step | 2m00s left'
    """
    parts = [f"step {record['step']}/{max_steps}"]
    for key, short in _LINE:
        v = record.get(key)
        if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            parts.append(f"{short} {v:.4g}")
        elif isinstance(v, float):  # NaN: not measured this step, said so
            parts.append(f"{short} n/a")
    if seconds_per_step is not None and math.isfinite(seconds_per_step):
        parts.append(f"{seconds_per_step:.2f} s/step")
        left = max(0, max_steps - int(record["step"]))
        parts.append(f"{_duration(left * seconds_per_step)} left")
    return " | ".join(parts)


# ---------------------------------------------------------------------- warnings
#: The libraries whose log messages :func:`quiet_libraries` lets through once each.
NOISY_LOGGERS = ("transformers", "datasets", "peft", "huggingface_hub", "accelerate")


class _Once(logging.Filter):
    """Lets each distinct (logger, level, message) through once."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: set[tuple[str, int, str]] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        key = (record.name, record.levelno, record.getMessage())
        if key in self.seen:
            return False
        self.seen.add(key)
        return True


@contextlib.contextmanager
def quiet_libraries(*, transformers: bool = False) -> Iterator[None]:
    """Within the block, what libraries print that a user cannot act on comes once:
    each distinct log message of :data:`NOISY_LOGGERS` once, each other package's
    Python warning once (its first occurrence); and where stderr is not a terminal
    (a log file, CI), no loading bars. All undone afterwards.

    ``transformers``: the block will use transformers, so its logging is set up
    here (its handler then gets the filter); without it nothing is imported.
    """
    if transformers:
        from transformers.utils import logging as hf_logging

        hf_logging.get_logger("transformers")  # adds transformers' own handler now
    # One filter per handler (a record passes each handler once) and per logger (the
    # records logged on the library's logger itself).
    filters: list[tuple[Any, _Once]] = []
    for name in NOISY_LOGGERS:
        logger = logging.getLogger(name)
        for target in [*logger.handlers, logger]:
            once = _Once()
            target.addFilter(once)
            filters.append((target, once))
    bars = None
    hub_bars = os.environ.get("HF_HUB_DISABLE_PROGRESS_BARS")
    if not sys.stderr.isatty():
        os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"  # read by what imports later
        if "transformers" in sys.modules:
            from transformers.utils import logging as hf_logging

            bars = hf_logging.is_progress_bar_enabled()
            hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            # Other packages' warnings (grpo-fast's own keep their filters).
            warnings.filterwarnings("once", module=r"(?!grpo_fast)")
            yield
    finally:
        for target, once in filters:
            target.removeFilter(once)
        if hub_bars is None:
            os.environ.pop("HF_HUB_DISABLE_PROGRESS_BARS", None)
        else:
            os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = hub_bars
        if bars:
            from transformers.utils import logging as hf_logging

            hf_logging.enable_progress_bar()


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


class SayOnce:
    """Says each kind of message once a run (:func:`say`), by key; ``quiet``: never
    (processes other than the main one).

    Examples
    --------
    >>> once = SayOnce()
    >>> once("nan", "2 completions got no reward"), once("nan", "3 completions ...")
    (True, False)
    """

    def __init__(self, *, quiet: bool = False) -> None:
        self.quiet = quiet
        self.said: set[str] = set()

    def __call__(self, key: str, message: str) -> bool:
        """Say ``message`` unless a message of ``key`` was said; whether it was new."""
        if key in self.said:
            return False
        self.said.add(key)
        if not self.quiet:
            say(f"{message} (said once)")
        return True
