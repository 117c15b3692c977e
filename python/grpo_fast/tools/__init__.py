"""Tool use and multi-turn rollouts (docs/tools.md).

- :class:`Toolbox`: the user's functions, their JSON schemas (transformers'
  ``get_json_schema``), and each call run with a timeout, its errors caught
  and its output cut.
- :func:`parse_tool_calls`, :func:`tool_suffix_ids`: a turn's calls, and the
  tokens of the tool messages that answer them.
- :class:`ToolSampler`: multi-turn rollouts around any sampler, one exact
  token sequence per rollout with a ``tool_mask``.
- :mod:`grpo_fast.tools.environments`: stateful tasks (TRL's
  ``environment_factory``) and an example, :class:`GuessingGame`.
- :func:`~grpo_fast.tools.builtin.calc`: the calculator of the embedded
  ``multiply`` task.
"""

from __future__ import annotations

from grpo_fast.tools.builtin import calc
from grpo_fast.tools.calls import ToolCall, check_template, parse_tool_calls, tool_suffix_ids
from grpo_fast.tools.toolbox import Toolbox, ToolResult, load_tool

__all__ = [
    "ToolCall",
    "ToolResult",
    "Toolbox",
    "calc",
    "check_template",
    "load_tool",
    "parse_tool_calls",
    "tool_suffix_ids",
]
