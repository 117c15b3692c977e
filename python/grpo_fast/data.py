"""Reading datasets: JSONL rows, their columns checked once at start-up.

Every way a file can be unusable (missing, not JSON, a column missing, a
completion that is not a string, a null gold answer, no rows at all) is an
:class:`~grpo_fast.errors.InvalidInputError` naming the file and line, so a
run stops before it loads a model rather than an hour into training.

Examples
--------
>>> import tempfile
>>> path = Path(tempfile.mkdtemp()) / "t.jsonl"
>>> _ = path.write_text('{"prompt": "1+1=", "answer": 2}\\n')
>>> read_tasks(path)
[{'prompt': '1+1=', 'answer': '2'}]
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

from grpo_fast.errors import InvalidInputError

__all__ = ["DATA_DIR", "TASKS", "check_tasks", "read_jsonl", "read_tasks"]

#: The embedded demo: a tiny model (``tiny_adder``) and 2-digit addition prompts.
DATA_DIR = Path(__file__).resolve().parent / "data"

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

    Raises
    ------
    InvalidInputError
        Naming the file, the line and what was expected.
    """
    name, lines, handle = _lines(path, what)
    need = list(dict.fromkeys([*columns, *text_columns, *answer_columns]))
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
                _checked(row, f"{name}:{lineno}", need, text_columns, answer_columns, "line")
            )
    finally:
        if handle is not None:
            handle.close()
    if not rows:
        raise InvalidInputError(f"{what} {name!r} is empty: it needs at least one row")
    return rows


def _checked(
    row: dict[str, Any],
    where: str,
    need: Sequence[str],
    text_columns: Sequence[str],
    answer_columns: Sequence[str],
    unit: str,
) -> dict[str, Any]:
    missing = [c for c in need if c not in row]
    if missing:
        raise InvalidInputError(f"{where}: missing column(s) {missing}; each {unit} needs {need}")
    for c in text_columns:
        if not isinstance(row[c], str):
            raise InvalidInputError(f"{where}: {c!r} must be a string, got {_type_name(row[c])}")
    out = dict(row)
    for c in answer_columns:
        v = row[c]
        if v is None:
            raise InvalidInputError(f"{where}: {c!r} is null; every row needs a gold answer")
        if isinstance(v, bool) or not isinstance(v, (str, int, float)):
            raise InvalidInputError(
                f"{where}: {c!r} must be a string or a number, got {_type_name(v)}"
            )
        if not isinstance(v, str):
            out[c] = json.dumps(v)
    return out


def check_tasks(rows: Sequence[Any], what: str = "rows") -> list[dict[str, Any]]:
    """Rows given in Python checked as :func:`read_tasks` checks a file's (a string
    ``prompt``, a string or number ``answer``); returns new dicts.

    Examples
    --------
    >>> check_tasks([{"prompt": "1+1=", "answer": 2}])
    [{'prompt': '1+1=', 'answer': '2'}]
    """
    out = []
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InvalidInputError(f"{what}[{i}] is {type(row).__name__}; expected a dict")
        need = ["prompt", "answer"]
        out.append(_checked(row, f"{what}[{i}]", need, ["prompt"], ["answer"], "row"))
    if not out:
        raise InvalidInputError(f"{what} is empty: it needs at least one row")
    return out


def read_tasks(path: str | os.PathLike[str], what: str = "dataset") -> list[dict[str, Any]]:
    """Training or evaluation rows: a string ``prompt`` and a gold ``answer``.

    The other columns are kept: reward functions with TRL's signature get
    them as keyword arguments.
    """
    return read_jsonl(path, what=what, text_columns=["prompt"], answer_columns=["answer"])
