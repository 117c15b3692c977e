"""Reading datasets: rows from local files, their columns checked once at start-up,
and the prompt text a model sees.

Formats: JSONL (read here, line by line; ``-`` is standard input) and what
Hugging Face ``datasets`` reads from local files: JSON, Parquet, CSV, TSV,
Arrow (:data:`FORMATS`, by file suffix). Every way a file can be unusable
(missing, unreadable, a column missing, a completion that is not a string, a
null gold answer, no rows at all) is an
:class:`~grpo_fast.errors.InvalidInputError` naming the file and line or row,
so a run stops before it loads a model rather than an hour into training.

A task's prompt is text, or a conversation as TRL has it: a list of
``{"role", "content"}`` messages, which :func:`render_prompts` puts through
the tokenizer's chat template. ``prompt_column`` / ``answer_column`` read
other columns as the prompt and the gold answer (a GSM8K row's ``question``,
and its ``answer`` ending in ``#### 72``).

Examples
--------
>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "t.jsonl"
>>> _ = path.write_text('{"prompt": "1+1=", "answer": 2}\\n')
>>> read_tasks(path)
[{'prompt': '1+1=', 'answer': '2'}]
>>> check_tasks([{"question": "1+1=", "answer": "so 2\\n#### 2"}], prompt_column="question")
[{'question': '1+1=', 'answer': 'so 2\\n#### 2', 'prompt': '1+1='}]
"""

from __future__ import annotations

import csv
import json
import logging
import math
import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from grpo_fast.errors import InvalidInputError

__all__ = [
    "DATA_DIR",
    "FORMATS",
    "TASKS",
    "check_tasks",
    "read_jsonl",
    "read_rows",
    "read_tasks",
    "render_prompts",
]

#: The embedded demo: a tiny model (``tiny_adder``) and 2-digit addition prompts.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

#: The embedded tasks, as trainer options (``grpo-fast train --task NAME``; flags and a
#: config file override them): ``addition`` (the default: 2-digit sums, the answer
#: alone) and ``chain`` (sums of 4 or 5 two-digit numbers answered as a chain of
#: partial sums, ``37+45=82, 82+19=101 #### 101``, one step per partial sum; made by
#: ``scripts/make_chain_model.py``).
TASKS: dict[str, dict[str, Any]] = {
    "addition": {
        "model": str(DATA_DIR / "tiny_adder"),
        "train_file": str(DATA_DIR / "addition_train.jsonl"),
        "eval_file": str(DATA_DIR / "addition_eval.jsonl"),
        "max_new_tokens": 4,
    },
    "chain": {
        "model": str(DATA_DIR / "tiny_chain"),
        "train_file": str(DATA_DIR / "chain_train.jsonl"),
        "eval_file": str(DATA_DIR / "chain_eval.jsonl"),
        "max_new_tokens": 64,
        "process_split": "regex",
        "process_split_pattern": r",\s*",
    },
}

#: File suffixes and the ``datasets`` builder that reads each; JSONL (and any other
#: suffix, and ``-`` for standard input) is read here, line by line.
FORMATS: dict[str, str] = {
    ".json": "json",
    ".parquet": "parquet",
    ".csv": "csv",
    ".tsv": "csv",
    ".arrow": "arrow",
}


def _lines(path: str | os.PathLike[str], what: str) -> tuple[str, Iterable[str], TextIO | None]:
    if str(path) == "-":
        return "<stdin>", sys.stdin, None
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"{what} {str(p)!r} does not exist or is not a file")
    f = open(p)  # noqa: SIM115 (closed by the caller)
    return str(p), f, f


def _type_name(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def read_jsonl(
    path: str | os.PathLike[str],
    columns: Sequence[str] = (),
    what: str = "dataset",
    *,
    text_columns: Sequence[str] = (),
    answer_columns: Sequence[str] = (),
    prompt_columns: Sequence[str] = (),
    hint: str = "",
) -> list[dict[str, Any]]:
    """The rows of a JSONL file (``"-"``: standard input), each a JSON object.

    Parameters
    ----------
    path : str or path
        The file; ``"-"`` reads standard input.
    columns : sequence of str
        Columns every row must have.
    what : str
        What the file is, for messages (``"train_file"``, ``"input"``).
    text_columns : sequence of str
        Columns that must hold a string (a completion, a prompt).
    answer_columns : sequence of str
        Gold answers: a string, or a number (returned as its text); ``null``
        is an error, since a row without a gold cannot be scored.
    prompt_columns : sequence of str
        Prompts: a string, or a list of ``{"role", "content"}`` messages.
    hint : str
        Added to the message about a missing column (how to name another).

    Raises
    ------
    InvalidInputError
        Naming the file, the line and what was expected.
    """
    name, lines, handle = _lines(path, what)
    need = list(dict.fromkeys([*columns, *prompt_columns, *text_columns, *answer_columns]))
    rows = []
    try:
        for lineno, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise InvalidInputError(f"{name}:{lineno}: not valid JSON ({e.msg})") from None
            if not isinstance(row, dict):
                raise InvalidInputError(f"{name}:{lineno}: expected a JSON object per line")
            rows.append(
                _checked(
                    row,
                    f"{name}:{lineno}",
                    need,
                    text_columns,
                    answer_columns,
                    "line",
                    prompt_columns,
                    hint,
                )
            )
    finally:
        if handle is not None:
            handle.close()
    if not rows:
        raise InvalidInputError(f"{what} {name!r} is empty: it needs at least one row")
    return rows


def _is_conversation(value: Any) -> bool:
    return (
        isinstance(value, list)
        and len(value) > 0
        and all(
            isinstance(m, dict)
            and isinstance(m.get("role"), str)
            and isinstance(m.get("content"), str)
            for m in value
        )
    )


def _checked(
    row: dict[str, Any],
    where: str,
    need: Sequence[str],
    text_columns: Sequence[str],
    answer_columns: Sequence[str],
    unit: str,
    prompt_columns: Sequence[str] = (),
    hint: str = "",
) -> dict[str, Any]:
    missing = [c for c in need if c not in row]
    if missing:
        raise InvalidInputError(
            f"{where}: missing column(s) {missing}; each {unit} needs {need} "
            f"(its columns: {list(row)}){hint}"
        )
    for c in text_columns:
        if not isinstance(row[c], str):
            raise InvalidInputError(f"{where}: {c!r} must be a string, got {_type_name(row[c])}")
    for c in prompt_columns:
        if not isinstance(row[c], str) and not _is_conversation(row[c]):
            got = _type_name(row[c])
            if isinstance(row[c], list):
                got += " " + json.dumps(row[c], default=str)[:80]
            raise InvalidInputError(
                f"{where}: {c!r} must be a string, got {got} (or a conversation: a list of "
                "{'role', 'content'} messages with string values)"
            )
    out = dict(row)
    for c in answer_columns:
        v = row[c]
        if v is None or (isinstance(v, float) and math.isnan(v)):
            raise InvalidInputError(f"{where}: {c!r} is null; every row needs a gold answer")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise InvalidInputError(
                f"{where}: {c!r} must be a string or a number, got {_type_name(v)}"
            )
        if not isinstance(v, str):
            out[c] = json.dumps(v)
    return out


def read_rows(
    path: str | os.PathLike[str],
    columns: Sequence[str] = (),
    what: str = "dataset",
    *,
    text_columns: Sequence[str] = (),
    answer_columns: Sequence[str] = (),
    prompt_columns: Sequence[str] = (),
    hint: str = "",
) -> list[dict[str, Any]]:
    """The rows of a local file in any of :data:`FORMATS` (JSONL otherwise), each
    checked as :func:`read_jsonl` checks a line.

    CSV and TSV cells are read as text (``"007"`` stays ``"007"``); an empty
    cell is null.
    """
    p = Path(path)
    builder = FORMATS.get(p.suffix.lower()) if str(path) != "-" else None
    if builder is None:
        return read_jsonl(
            path,
            columns,
            what,
            text_columns=text_columns,
            answer_columns=answer_columns,
            prompt_columns=prompt_columns,
            hint=hint,
        )
    if not p.is_file():
        raise InvalidInputError(f"{what} {str(p)!r} does not exist or is not a file")
    records = _read_with_datasets(p, builder, what)
    need = list(dict.fromkeys([*columns, *prompt_columns, *text_columns, *answer_columns]))
    rows = [
        _checked(
            r, f"{p}: row {n}", need, text_columns, answer_columns, "row", prompt_columns, hint
        )
        for n, r in enumerate(records, 1)
    ]
    if not rows:
        raise InvalidInputError(f"{what} {str(p)!r} is empty: it needs at least one row")
    return rows


def _read_with_datasets(path: Path, builder: str, what: str) -> list[dict[str, Any]]:
    try:
        import datasets
    except ImportError as e:
        raise InvalidInputError(
            f"{what} {str(path)!r}: reading {path.suffix} files needs the datasets package "
            f"(pip install datasets); JSONL needs nothing ({e})"
        ) from None
    options: dict[str, Any] = {}
    if builder == "csv":
        # Every column as text: pandas would turn "007" into 7 and "2" next to an empty
        # cell into 2.0.
        sep = "\t" if path.suffix.lower() == ".tsv" else ","
        with open(path, newline="") as f:
            header = next(csv.reader(f, delimiter=sep), [])
        features = datasets.Features({name: datasets.Value("string") for name in header})
        options = {"sep": sep, "features": features}
    # Quiet: no progress bars, and no log line of datasets' own before our one-line error.
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    log = logging.getLogger("datasets")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        # A throwaway cache: the rows become Python objects at once.
        with tempfile.TemporaryDirectory(prefix="grpo-fast-data-") as cache:
            table = datasets.load_dataset(
                builder, data_files=str(path), split="train", cache_dir=cache, **options
            )
            return table.to_list()
    except Exception as e:  # pyarrow, pandas and datasets each raise their own
        first = next((x for x in str(e).splitlines() if x.strip()), type(e).__name__)
        if "corresponds to no data" in first:  # datasets' words for a file without rows
            raise InvalidInputError(
                f"{what} {str(path)!r} is empty: it needs at least one row"
            ) from None
        raise InvalidInputError(
            f"{what} {str(path)!r} cannot be read as {builder}: {first}"
        ) from None
    finally:
        log.setLevel(level)
        if bars:
            datasets.enable_progress_bars()


_COLUMN_HINT = "; --prompt-column / --answer-column name other columns"


def _as_task(row: dict[str, Any], prompt_column: str, answer_column: str) -> dict[str, Any]:
    return {**row, "prompt": row[prompt_column], "answer": row[answer_column]}


def check_tasks(
    rows: Sequence[Any],
    what: str = "rows",
    *,
    prompt_column: str = "prompt",
    answer_column: str = "answer",
) -> list[dict[str, Any]]:
    """Rows given in Python checked as :func:`read_tasks` checks a file's (a prompt
    that is a string or a list of messages, a string or number answer); returns
    new dicts, with ``prompt`` and ``answer`` read from the named columns.

    Examples
    --------
    >>> check_tasks([{"prompt": "1+1=", "answer": 2}])
    [{'prompt': '1+1=', 'answer': '2'}]
    """
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InvalidInputError(f"{what}[{i}] is {type(row).__name__}; expected a dict")
        need = [prompt_column, answer_column]
        checked = _checked(
            row, f"{what}[{i}]", need, [], [answer_column], "row", [prompt_column], _COLUMN_HINT
        )
        out.append(_as_task(checked, prompt_column, answer_column))
    if not out:
        raise InvalidInputError(f"{what} is empty: it needs at least one row")
    return out


def read_tasks(
    path: str | os.PathLike[str],
    what: str = "dataset",
    *,
    prompt_column: str = "prompt",
    answer_column: str = "answer",
) -> list[dict[str, Any]]:
    """Training or evaluation rows of a file in any of :data:`FORMATS` (or JSONL): a
    prompt (text or messages) and a gold answer, read from ``prompt_column`` and
    ``answer_column`` into ``prompt`` and ``answer``.

    The other columns are kept: reward functions with TRL's signature get
    them as keyword arguments.
    """
    rows = read_rows(
        path,
        what=what,
        prompt_columns=[prompt_column],
        answer_columns=[answer_column],
        hint=_COLUMN_HINT,
    )
    return [_as_task(r, prompt_column, answer_column) for r in rows]


def render_prompts(
    rows: Sequence[dict[str, Any]],
    tokenizer: Any,
    *,
    system_prompt: str | None = None,
    what: str = "rows",
) -> list[str]:
    """The text the model is prompted with for each row's ``prompt``.

    Plain text stays as it is. A conversation (a list of ``{"role",
    "content"}`` messages, as TRL has it) goes through the tokenizer's chat
    template with ``add_generation_prompt=True``. ``system_prompt`` is put
    first in every conversation that has no system message, and turns a
    plain prompt into one (``[system, user]``).
    """
    out = []
    for i, row in enumerate(rows):
        prompt = row["prompt"]
        if isinstance(prompt, str) and system_prompt is None:
            out.append(prompt)
            continue
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        if system_prompt is not None and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": system_prompt}, *messages]
        if getattr(tokenizer, "chat_template", None) is None:
            why = "is a conversation" if isinstance(prompt, list) else "gets a system prompt"
            raise InvalidInputError(
                f"{what}[{i}]: the prompt {why}, but the model's tokenizer has no chat template "
                "to render it; give plain-text prompts without --system-prompt, or a model "
                "whose tokenizer has one"
            )
        try:
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True
            )
        except Exception as e:  # jinja2's TemplateError: the template refused the messages
            raise InvalidInputError(f"{what}[{i}]: the chat template failed: {e}") from None
        out.append(text)
    return out
