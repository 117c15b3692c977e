"""Multi-turn rollouts: a sampler's turns, the tools' results between them, one token sequence.

:class:`ToolSampler` wraps a backend (one with ``continue_ids``: every sampler
here has it) and is itself a :class:`~grpo_fast.sampling.Sampler`, so the
trainer, evaluation and asynchronous rollouts use it unchanged. An episode:

1. the backend samples the first turn of every rollout (``sample``);
2. a turn that calls tools (:func:`~grpo_fast.tools.calls.parse_tool_calls`)
   has them run (:class:`~grpo_fast.tools.toolbox.Toolbox`: registered
   functions only, a timeout, the output cut); the tool messages' tokens
   (:func:`~grpo_fast.tools.calls.tool_suffix_ids`) are appended to the
   *sampled token ids*, and the backend continues from exactly that sequence
   (``continue_ids``);
3. until a turn calls no tool, ``max_tool_calls`` would be passed (the calls
   are then not run: TRL's ``max_tool_calling_iterations`` stops the same
   way), or the next tool message would not fit ``max_new_tokens``, which
   counts every token after the prompt, the tools' included (TRL's
   ``max_completion_length``).

The result's ``completion_ids`` are every token after the prompt, in order;
``tool_mask`` marks the model's own (1) and the tools' (0): only the model's
get a loss, a KL and an entropy, and the forward of the loss sees each model
turn after exactly the tokens it was sampled after. ``texts`` (what rewards
read) are the model's last turn decoded, as TRL's reward functions read the
last assistant message (``completion[-1]["content"]``): a tool's output is
never taken for the model's answer, and neither is the call's own text.

Environments (TRL's ``environment_factory``): one object per rollout, made by
the factory and ``reset(**row)`` with its dataset row; its public methods are
that rollout's tools, and the rewards can read it afterwards
(``Episodes.environments``; :func:`environment_reward`).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling.base import Completions, Episodes, SamplingParams, check_prompts
from grpo_fast.tools.calls import check_template, parse_tool_calls, tool_suffix_ids
from grpo_fast.tools.toolbox import Toolbox

__all__ = [
    "RolloutFuncSampler",
    "ToolSampler",
    "Tools",
    "build_tools",
    "environment_reward",
    "environment_rewards",
    "environment_tools",
]


def environment_tools(env: Any) -> list[Callable[..., Any]]:
    """An environment's tools: its public methods but ``reset`` and ``get_reward``."""
    out = []
    for name, member in inspect.getmembers(env, inspect.ismethod):
        if not name.startswith("_") and name not in ("reset", "get_reward"):
            out.append(member)
    return out


def environment_rewards(factory: Callable[[], Any] | None) -> list[Callable[..., Any]]:
    """The reward an environment owns (a ``get_reward`` method), as a list of one, or none."""
    if factory is None or not callable(getattr(factory(), "get_reward", None)):
        return []
    return [environment_reward(factory)]


def environment_reward(factory: Callable[[], Any]) -> Callable[..., list[float | None]]:
    """A TRL-style reward function reading each rollout's environment (``get_reward()``),
    named after its class, as TRL logs it."""

    def reward(completions: Any, environments: Sequence[Any], **_: Any) -> list[float | None]:
        return [float(e.get_reward()) for e in environments]

    probe = factory()
    reward.__name__ = type(probe).__name__
    return reward


class ToolSampler:
    """Multi-turn sampling with tools, around a backend sampler.

    Parameters
    ----------
    sampler : Sampler with ``continue_ids``
        The backend (:class:`~grpo_fast.sampling.HFSampler`, the vLLM ones).
    tokenizer : transformers tokenizer
        The model's: it decodes turns and renders tool messages.
    tools : sequence of callables, or Toolbox
        The tools every rollout may call.
    environment_factory : callable, optional
        Makes one environment per rollout (TRL's ``environment_factory``); its
        methods are added to ``tools`` for that rollout.
    max_tool_calls : int
        Most tool calls in one rollout (``--max-tool-calls``).
    timeout, max_output_chars :
        Per call (:class:`~grpo_fast.tools.toolbox.Toolbox`).

    Examples
    --------
    >>> from grpo_fast.tools.builtin import calc
    >>> sampler = ToolSampler(HFSampler(model, tok), tok, [calc])  # doctest: +SKIP
    >>> params = SamplingParams(max_new_tokens=48)  # doctest: +SKIP
    >>> out = sampler.sample(["23*17="], n=8, params=params)  # doctest: +SKIP
    >>> out.tool_mask[0]  # 1: the model's tokens, 0: the tool's  # doctest: +SKIP
    """

    def __init__(
        self,
        sampler: Any,
        tokenizer: Any,
        tools: Sequence[Callable[..., Any]] | Toolbox = (),
        *,
        environment_factory: Callable[[], Any] | None = None,
        max_tool_calls: int = 4,
        timeout: float = 10.0,
        max_output_chars: int = 1000,
    ) -> None:
        if not hasattr(sampler, "continue_ids"):
            raise InvalidInputError(
                f"{type(sampler).__name__} cannot continue a rollout from token ids "
                "(no continue_ids): tool use needs a sampler that can"
            )
        if max_tool_calls < 1:
            raise InvalidInputError(f"max_tool_calls must be >= 1, got {max_tool_calls}")
        self.sampler = sampler
        self.tokenizer = tokenizer
        self.functions = (
            list(tools.functions.values()) if isinstance(tools, Toolbox) else list(tools)
        )
        self.options = {"timeout": timeout, "max_output_chars": max_output_chars}
        self.toolbox = Toolbox(self.functions, **self.options)  # checks every schema now
        self.environment_factory = environment_factory
        if environment_factory is not None:
            probe = environment_factory()
            if not callable(getattr(probe, "reset", None)):
                raise InvalidInputError(
                    f"environment {type(probe).__name__} has no reset(**row) method"
                )
            Toolbox([*self.functions, *environment_tools(probe)], **self.options)
        elif not self.functions:
            raise InvalidInputError("ToolSampler needs tools or an environment_factory")
        self.max_tool_calls = max_tool_calls
        check_template(tokenizer)

    @property
    def wants_rows(self) -> bool:
        """Whether :meth:`sample` needs the dataset rows (an environment's ``reset``)."""
        return self.environment_factory is not None

    @property
    def schemas(self) -> list[dict[str, Any]]:
        """The JSON schemas the chat template gets (``tools=``)."""
        if self.environment_factory is None:
            return self.toolbox.schemas
        probe = self.environment_factory()
        return Toolbox([*self.functions, *environment_tools(probe)], **self.options).schemas

    def update_weights(self, model: Any) -> None:
        self.sampler.update_weights(model)

    def __getattr__(self, name: str) -> Any:  # the backend's own attributes (model, ...)
        if name == "sampler":
            raise AttributeError(name)
        return getattr(self.sampler, name)

    def sample(
        self,
        prompts: list[str],
        n: int,
        params: SamplingParams,
        rows: Sequence[dict[str, Any]] | None = None,
    ) -> Completions:
        """``n`` multi-turn rollouts of every prompt, grouped by prompt (``rows``: each
        prompt's dataset row, for the environments' ``reset``)."""
        check_prompts(prompts, n)
        N = len(prompts) * n
        envs: list[Any] | None = None
        boxes = [self.toolbox] * N
        if self.environment_factory is not None:
            if rows is None or len(rows) != len(prompts):
                raise InvalidInputError("an environment needs each prompt's dataset row (rows=)")
            envs = []
            for i in range(N):
                env = self.environment_factory()
                said = env.reset(**rows[i // n])
                if said is not None:  # TRL appends it to the prompt; that is not done here
                    raise InvalidInputError(
                        f"{type(env).__name__}.reset returned {type(said).__name__} {said!r:.60}; "
                        "grpo-fast does not append reset's text to the prompt (TRL does): put "
                        "it in the dataset's prompt and return None"
                    )
                envs.append(env)
            boxes = [
                Toolbox([*self.functions, *environment_tools(e)], **self.options) for e in envs
            ]
        first = self.sampler.sample(prompts, n, params)
        ids = [list(c) for c in first.completion_ids]
        mask = [[1] * len(c) for c in ids]
        lps = None if first.logprobs is None else [list(x) for x in first.logprobs]
        calls, errors, turns, cut = [0] * N, [0] * N, [1] * N, [False] * N
        last = list(range(N))  # rows whose latest turn may call a tool
        segment = {i: ids[i] for i in last}
        start = [0] * N  # where each rollout's last model turn begins in ids
        budget = params.max_new_tokens
        tok = self.tokenizer
        while last:
            go_on: list[int] = []
            for i in last:
                seg = segment[i]
                found = parse_tool_calls(tok.decode(seg, skip_special_tokens=False), tok, seg)
                if not found:
                    continue
                if calls[i] + len(found) > self.max_tool_calls:
                    cut[i] = True
                    continue
                results = []
                for call in found:
                    calls[i] += 1
                    if call.error is not None:
                        result_name, content, failed = (
                            call.name or "tool",
                            f"error: {call.error}",
                            True,
                        )
                    else:
                        r = boxes[i].call(call.name, call.arguments)
                        result_name, content, failed = r.name, r.content, r.error
                    errors[i] += int(failed)
                    results.append((result_name, content))
                suffix = tool_suffix_ids(tok, results)
                if len(ids[i]) + len(suffix) >= budget:  # no room for the result and an answer
                    cut[i] = True
                    continue
                ids[i] += suffix
                mask[i] += [0] * len(suffix)
                if lps is not None:
                    lps[i] += [0.0] * len(suffix)
                go_on.append(i)
            if not go_on:
                break
            room = max(budget - len(ids[i]) for i in go_on)
            more = SamplingParams(
                max_new_tokens=room,
                temperature=params.temperature,
                top_p=params.top_p,
                top_k=params.top_k,
            )
            new, new_lps = self.sampler.continue_ids(
                [first.prompt_ids[i] + ids[i] for i in go_on], more
            )
            for j, i in enumerate(go_on):
                part = new[j][: budget - len(ids[i])]
                ids[i] += part
                mask[i] += [1] * len(part)
                if lps is not None:
                    lps[i] += (
                        list(new_lps[j][: len(part)]) if new_lps is not None else [0.0] * len(part)
                    )
                turns[i] += 1
                start[i] = len(ids[i]) - len(part)
                segment[i] = part
            last = go_on
        texts = tok.batch_decode(
            [c[s:] for c, s in zip(ids, start, strict=True)], skip_special_tokens=True
        )
        return Completions(
            texts,
            [list(p) for p in first.prompt_ids],
            ids,
            lps,
            n,
            mask,
            Episodes(calls, errors, turns, cut, envs),
        )


class Tools:
    """A run's tools, checked once: the functions, an environment factory, the limits.
    :meth:`wrap` puts a backend sampler into a :class:`ToolSampler`."""

    def __init__(
        self,
        functions: Sequence[Callable[..., Any]],
        environment_factory: Callable[[], Any] | None,
        *,
        max_tool_calls: int,
        timeout: float,
        max_output_chars: int,
    ) -> None:
        self.functions = list(functions)
        self.environment_factory = environment_factory
        self.limits: dict[str, Any] = {
            "max_tool_calls": max_tool_calls,
            "timeout": timeout,
            "max_output_chars": max_output_chars,
        }
        box = [*self.functions]
        if environment_factory is not None:
            box += environment_tools(environment_factory())
        self.schemas = Toolbox(box, timeout=timeout, max_output_chars=max_output_chars).schemas

    def wrap(self, sampler: Any, tokenizer: Any) -> ToolSampler:
        return ToolSampler(
            sampler,
            tokenizer,
            self.functions,
            environment_factory=self.environment_factory,
            **self.limits,
        )


def build_tools(
    cfg: Any, tools: Sequence[Callable[..., Any]] | None, environment_factory: Any
) -> Tools | None:
    """The run's tools: ``cfg.tool`` (``--tool module:function``) and those handed to
    the trainer; None when there are none (single-turn sampling)."""
    from grpo_fast.tools.toolbox import load_tool

    functions = [*(load_tool(spec) for spec in cfg.tool), *(tools or [])]
    if not functions and environment_factory is None:
        return None
    return Tools(
        functions,
        environment_factory,
        max_tool_calls=cfg.max_tool_calls,
        timeout=cfg.tool_timeout,
        max_output_chars=cfg.max_tool_output,
    )


class RolloutFuncSampler:
    """TRL's ``rollout_func``: the user's function generates, the trainer trains on it.

    ``rollout_func(prompts, trainer)`` gets this step's prompts (the rendered
    texts, each once) and returns a dict with ``prompt_ids``, ``completion_ids``
    and ``logprobs`` (None allowed), ``num_generations`` rows per prompt, grouped
    by prompt, as TRL's does; optionally ``tool_mask`` (1: the model's token, 0:
    an environment's, masked out of the loss) and ``texts`` (what the rewards
    read; default: the model's tokens decoded). ``trainer.sampler.backend`` is the
    run's own sampler, with ``sample`` and ``continue_ids``, for functions that
    generate with it.
    """

    def __init__(self, fn: Callable[[list[str], Any], dict[str, Any]], trainer: Any, backend: Any):
        self.fn, self.trainer, self.backend = fn, trainer, backend

    def update_weights(self, model: Any) -> None:
        self.backend.update_weights(model)

    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        check_prompts(prompts, n)
        out = self.fn(list(prompts), self.trainer)
        if not isinstance(out, dict):
            raise InvalidInputError(f"rollout_func returned a {type(out).__name__}, not a dict")
        missing = sorted({"prompt_ids", "completion_ids", "logprobs"} - out.keys())
        if missing:
            raise InvalidInputError(f"rollout_func must return keys {missing} in its output dict")
        rows = len(prompts) * n
        for key in ("prompt_ids", "completion_ids", "logprobs", "tool_mask", "texts"):
            value = out.get(key)
            if value is not None and len(value) != rows:
                raise InvalidInputError(
                    f"rollout_func returned {len(value)} {key} for {len(prompts)} prompts x "
                    f"{n} generations = {rows}"
                )
        ids = [list(c) for c in out["completion_ids"]]
        mask = out.get("tool_mask")
        if mask is not None:
            mask = [list(m) for m in mask]
            for i, (m, c) in enumerate(zip(mask, ids, strict=True)):
                if len(m) != len(c):
                    raise InvalidInputError(
                        f"rollout_func: tool_mask[{i}] has {len(m)} entries but "
                        f"completion_ids[{i}] has {len(c)}"
                    )
        texts = out.get("texts")
        if texts is None:
            own = (
                ids
                if mask is None
                else [
                    [t for t, k in zip(c, m, strict=True) if k]
                    for c, m in zip(ids, mask, strict=True)
                ]
            )
            texts = self.trainer.tokenizer.batch_decode(own, skip_special_tokens=True)
        lps = out["logprobs"]
        return Completions(
            list(texts),
            [list(p) for p in out["prompt_ids"]],
            ids,
            None if lps is None else [list(x) for x in lps],
            n,
            mask,
        )
