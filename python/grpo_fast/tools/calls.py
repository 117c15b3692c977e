"""Finding the tool calls in a model turn, and the tokens of the tool messages that answer them.

Parsing: the tokenizer's own (transformers' ``parse_response``) where its chat
template defines a response schema; otherwise the fallback format that Qwen,
Hermes and SmolLM templates use::

    <tool_call>{"name": "calc", "arguments": {"expression": "23*17"}}</tool_call>

(one JSON object per ``<tool_call>`` block, several blocks allowed). A block
whose JSON cannot be read is a call that fails: the model reads the error.

The tool messages' tokens (:func:`tool_suffix_ids`) are TRL's: the chat template
renders a dummy conversation with and without them and the difference is what
follows the model's end-of-turn token; a tokenizer without a chat template gets
``<tool_response>CONTENT</tool_response>`` per result. They are appended to the
exact sampled token ids; the decoded text is never tokenized again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from grpo_fast.errors import InvalidInputError

__all__ = ["ToolCall", "check_template", "parse_tool_calls", "tool_suffix_ids"]

_BLOCK = re.compile(r"<tool_call>\s*(.*?)\s*</tool_call>", re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    """One call: the tool's name and its arguments, or why the call could not be read."""

    name: str
    arguments: Any
    error: str | None = None


def parse_tool_calls(
    text: str, tokenizer: Any = None, ids: Sequence[int] | None = None
) -> list[ToolCall]:
    """The tool calls in one model turn (``text``; ``ids`` for the tokenizer's parser).

    Examples
    --------
    >>> call = '{"name": "calc", "arguments": {"expression": "2*3"}}'
    >>> parse_tool_calls(f"<tool_call>{call}</tool_call>")
    [ToolCall(name='calc', arguments={'expression': '2*3'}, error=None)]
    >>> parse_tool_calls("no call here")
    []
    >>> parse_tool_calls("<tool_call>{oops</tool_call>")[0].error
    'the tool call is not JSON: {oops'
    """
    if tokenizer is not None and ids is not None and _has_parser(tokenizer):
        try:
            parsed = tokenizer.parse_response(list(ids))
        except Exception:  # a turn the schema cannot read: the fallback may
            parsed = None
        if isinstance(parsed, dict):
            return [_from_message_call(c) for c in parsed.get("tool_calls") or []]
    calls = []
    for block in _BLOCK.findall(text):
        try:
            obj = json.loads(block)
        except ValueError:
            calls.append(ToolCall("", None, f"the tool call is not JSON: {block[:200]}"))
            continue
        if not isinstance(obj, dict) or not isinstance(obj.get("name"), str):
            calls.append(ToolCall("", None, f"a tool call needs a name: {block[:200]}"))
            continue
        args = obj.get("arguments", obj.get("parameters", {}))
        if isinstance(args, str):  # OpenAI's wire format: the arguments as a JSON string
            try:
                args = json.loads(args)
            except ValueError:
                pass
        calls.append(ToolCall(obj["name"], args))
    return calls


def _has_parser(tokenizer: Any) -> bool:
    return hasattr(tokenizer, "parse_response") and (
        getattr(tokenizer, "response_schema", None) is not None
        or getattr(tokenizer, "response_template", None) is not None
    )


def _from_message_call(call: Any) -> ToolCall:
    fn = call.get("function", call) if isinstance(call, dict) else {}
    name = fn.get("name")
    if not isinstance(name, str):
        return ToolCall("", None, f"a tool call needs a name: {call!r}"[:300])
    return ToolCall(name, fn.get("arguments", {}))


def tool_suffix_ids(tokenizer: Any, results: Sequence[tuple[str, str]]) -> list[int]:
    """The token ids that follow a model turn ending in tool calls: the tool messages
    ``(name, content)`` and the template's next assistant header (TRL's
    ``_get_tool_suffix_ids``)."""
    if getattr(tokenizer, "chat_template", None) is None:
        text = "".join(f"<tool_response>{content}</tool_response>" for _, content in results)
        return list(tokenizer(text, add_special_tokens=False)["input_ids"])
    call = [{"type": "function", "function": {"name": results[0][0], "arguments": {}}}]
    dummy = [
        {"role": "user", "content": "dummy"},
        {"role": "assistant", "content": "", "tool_calls": call},
    ]
    tools = [{"role": "tool", "name": n, "content": c} for n, c in results]
    prefix = _ids(tokenizer.apply_chat_template(dummy, tokenize=True, add_generation_prompt=False))
    full = _ids(
        tokenizer.apply_chat_template(dummy + tools, tokenize=True, add_generation_prompt=True)
    )
    eos = [i for i, t in enumerate(prefix) if t == tokenizer.eos_token_id]
    if eos:  # the sampled turn ends at EOS; what the template puts after it is the suffix's
        prefix = prefix[: eos[-1] + 1]
    if full[: len(prefix)] != prefix:
        raise InvalidInputError(
            "the chat template renders an assistant turn differently once tool messages follow "
            "it; tool results cannot be appended to the sampled tokens"
        )
    return full[len(prefix) :]


def _ids(out: Any) -> list[int]:
    if isinstance(out, dict) or hasattr(out, "keys"):
        out = out["input_ids"]
    return list(out)


def check_template(tokenizer: Any) -> None:
    """Refuse a chat template that drops tool messages (the model would never see a
    result), at start-up."""
    probe = "4913"
    try:
        suffix = tool_suffix_ids(tokenizer, [("calc", probe)])
    except InvalidInputError:
        raise
    except Exception as e:  # jinja2's TemplateError: the template refuses a tool message
        raise InvalidInputError(f"the chat template cannot render a tool message: {e}") from None
    if probe not in tokenizer.decode(suffix):
        raise InvalidInputError(
            "the tokenizer's chat template does not render tool messages (the model would "
            "never read a tool's result); use a model whose template supports tools, or set "
            "tokenizer.chat_template to one that does"
        )
