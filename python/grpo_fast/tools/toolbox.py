"""The user's tools: plain Python functions, their JSON schemas, and running one call safely.

A tool is a function with type hints and a Google-style docstring, as TRL's
``GRPOTrainer(tools=[...])`` takes it; its schema is made by transformers' own
``get_json_schema`` (the one ``apply_chat_template(tools=...)`` uses), so a
function the chat template accepts is one the run accepts. A function whose
schema cannot be made is refused when the :class:`Toolbox` is built, naming it.

Only the functions registered here run: a call names a tool, and a name that
is not in the box is an error message back to the model, never a lookup
anywhere else. Each call runs in its own daemon thread and is waited for
``timeout`` seconds; a call that hangs is abandoned (Python cannot stop a
thread: its result is dropped when it comes) and the model reads
``error: timed out``. A call that raises becomes the error's text. The
output, as text, is cut to ``max_output_chars`` before it enters the context.
"""

from __future__ import annotations

import importlib
import json
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from grpo_fast.errors import InvalidInputError

__all__ = ["ToolResult", "Toolbox", "load_tool"]


@dataclass(frozen=True)
class ToolResult:
    """What one call gave: the text the model reads (cut), and whether it failed."""

    name: str
    content: str
    error: bool


def load_tool(spec: str) -> Callable[..., Any]:
    """The function ``module:name`` names (``--tool``); ``module.name`` works too.

    Examples
    --------
    >>> load_tool("grpo_fast.tools.builtin:calc").__name__
    'calc'
    """
    module, sep, name = spec.partition(":")
    if not sep:
        module, _, name = spec.rpartition(".")
    if not module or not name:
        raise InvalidInputError(f"--tool {spec!r}: expected module:function")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise InvalidInputError(f"--tool {spec!r}: cannot import it ({e})") from None
    if not callable(fn):
        raise InvalidInputError(f"--tool {spec!r} is a {type(fn).__name__}, not a function")
    return fn  # type: ignore[no-any-return]


def _schema(fn: Callable[..., Any]) -> dict[str, Any]:
    from transformers.utils import get_json_schema

    name = getattr(fn, "__name__", repr(fn))
    try:
        return get_json_schema(fn)  # type: ignore[no-any-return]
    except Exception as e:  # transformers' TypeHintParsingException / DocstringParsingException
        raise InvalidInputError(
            f"tool {name!r}: no JSON schema can be made of it ({e}); a tool needs type hints "
            "on every argument and a docstring with an Args: section describing each one"
        ) from None


class Toolbox:
    """The tools of a run, by name, and how their calls run.

    Parameters
    ----------
    tools : sequence of callables
        The user's functions (or an environment's bound methods).
    timeout : float
        Seconds one call may take (``--tool-timeout``).
    max_output_chars : int
        Longest tool output, in characters, that enters the context
        (``--max-tool-output``); longer ones are cut and end with ``...``.

    Examples
    --------
    >>> from grpo_fast.tools.builtin import calc
    >>> box = Toolbox([calc])
    >>> box.call("calc", {"expression": "23*17"})
    ToolResult(name='calc', content='391', error=False)
    >>> box.call("rm", {}).content
    "error: no tool named 'rm' (tools: calc)"
    """

    def __init__(
        self,
        tools: Sequence[Callable[..., Any]],
        *,
        timeout: float = 10.0,
        max_output_chars: int = 1000,
    ) -> None:
        if timeout <= 0:
            raise InvalidInputError(f"tool timeout must be > 0 seconds, got {timeout}")
        if max_output_chars < 1:
            raise InvalidInputError(
                f"max tool output must be >= 1 character, got {max_output_chars}"
            )
        self.functions: dict[str, Callable[..., Any]] = {}
        self.schemas: list[dict[str, Any]] = []
        for fn in tools:
            if not callable(fn):
                raise InvalidInputError(f"tool {fn!r} is a {type(fn).__name__}, not a function")
            schema = _schema(fn)
            name = schema["function"]["name"]
            if name in self.functions:
                raise InvalidInputError(f"two tools are named {name!r}")
            self.functions[name] = fn
            self.schemas.append(schema)
        self.timeout = float(timeout)
        self.max_output_chars = int(max_output_chars)

    def __len__(self) -> int:
        return len(self.functions)

    @property
    def names(self) -> list[str]:
        return list(self.functions)

    def call(self, name: str, arguments: Any) -> ToolResult:
        """Run one call; never raises (a failure is the result's text, ``error=True``)."""
        fn = self.functions.get(name)
        if fn is None:
            return self._error(name, f"no tool named {name!r} (tools: {', '.join(self.names)})")
        if not isinstance(arguments, dict):
            return self._error(name, f"arguments must be a JSON object, got {arguments!r}")
        box: dict[str, Any] = {}

        def run() -> None:
            try:
                box["value"] = fn(**arguments)
            except BaseException as e:  # noqa: BLE001 - the user's code: any failure is a message
                box["error"] = f"{type(e).__name__}: {e}"

        worker = threading.Thread(target=run, name=f"tool-{name}", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            return self._error(name, f"timed out after {self.timeout:g} s")
        if "error" in box:
            return self._error(name, box["error"])
        value = box.get("value")
        text = value if isinstance(value, str) else _as_text(value)
        return ToolResult(name, self._cut(text), False)

    def _error(self, name: str, message: str) -> ToolResult:
        return ToolResult(name, self._cut(f"error: {message}"), True)

    def _cut(self, text: str) -> str:
        if len(text) <= self.max_output_chars:
            return text
        return text[: max(self.max_output_chars - 3, 0)] + "..."


def _as_text(value: Any) -> str:
    try:
        return json.dumps(value)
    except (TypeError, ValueError):
        return str(value)
