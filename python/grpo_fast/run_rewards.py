"""The rewards of a run: names, specs and TRL-style functions, assembled once.

The trainer and the ``score`` and ``eval`` commands score completions with
what :mod:`grpo_fast.rewards` builds, the one reward system of the package.
:class:`RunRewards` takes any mix of

- reward specs (``MathReward()``, ``FormatReward(...)``, ...; compiled
  together by :func:`grpo_fast.rewards.combine`, scored in one Rust call),
- a compiled :class:`grpo_fast.rewards.Rewards` (its weights kept),
- a function with TRL's signature, ``f(completions, **columns) ->
  list[float | None]`` (weight 1, or ``(f, weight)``), which gets the
  dataset's columns (``answer``, ...) and ``prompts`` and ``completion_ids``
  as keyword arguments, as TRL's ``GRPOTrainer`` passes them (for
  conversational prompts, each completion as ``[{"role": "assistant",
  "content": ...}]``),
- names from the command line (:func:`parse_reward`: ``"math"``,
  ``"format:0.5"``, ``"my_pkg.rewards.fn:0.1"``),

and returns the weighted total and one column per reward, by name, which the
trainer logs as ``reward/<name>``.

Examples
--------
>>> from grpo_fast import rewards
>>> r = RunRewards.build(["math", rewards.FormatReward(r"^\\d+$", weight=0.5)])
>>> s = r.score(["4", "so 4", "5"], [{"answer": "4"}] * 3)
>>> s.total.tolist(), s.columns["math"].tolist(), s.columns["format"].tolist()
([1.5, 1.0, 0.5], [1.0, 1.0, 0.0], [1.0, 0.0, 1.0])
"""

from __future__ import annotations

import importlib
import inspect
import math
import os
import re
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from grpo_fast import rewards as _rewards
from grpo_fast.errors import InvalidInputError

__all__ = ["REWARD_NAMES", "THINK_ANSWER_FORMAT", "RewardLike", "RunRewards", "parse_reward"]

#: DeepSeek-R1's format: reasoning in ``<think>`` tags, then the answer in ``<answer>`` tags.
THINK_ANSWER_FORMAT = r"^<think>.*?</think>\s*<answer>.*?</answer>$"

#: The rewards the command line knows by name (``--reward NAME[:WEIGHT]``); a
#: table in a config file passes its other keys to the spec's constructor.
REWARD_NAMES: dict[str, Callable[..., _rewards.RewardSpec]] = {
    "math": _rewards.MathReward,
    "exact": _rewards.ExactMatchReward,
    "choice": _rewards.ChoiceReward,
    "format": lambda pattern=THINK_ANSWER_FORMAT, **kw: _rewards.FormatReward(pattern, **kw),
    "overlong": _rewards.OverlongReward,
    "cosine": _rewards.CosineReward,
    "repetition": _rewards.RepetitionReward,
    # The gold column holds each prompt's tests (docs/code.md); run in the sandbox.
    "code": _rewards.CodeReward,
}

RewardLike = (
    _rewards.RewardSpec
    | _rewards.Rewards
    | Callable[..., Sequence[Any]]
    | tuple[Callable[..., Sequence[Any]], float]
    | str
    | Mapping[str, Any]
)


def _weight(text: str, where: str) -> float:
    try:
        w = float(text)
    except ValueError:
        w = math.nan
    if not math.isfinite(w):
        raise InvalidInputError(f"reward {where!r}: the weight after ':' must be a number")
    return w


def _import(path: str) -> Any:
    """``pkg.module.attr`` or ``pkg.module:attr``, importable from the current directory
    too (as ``python -m`` makes it: a ``myrewards.py`` beside the command works)."""
    module, sep, attr = path.partition(":")
    if not sep:
        module, _, attr = path.rpartition(".")
    if os.getcwd() not in sys.path and "" not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise InvalidInputError(f"reward {path!r} cannot be imported: {e}") from None


_IDENTIFIER = re.compile(r"^[A-Za-z_][\w.]*$")


def _shown(spec: str) -> str:
    return spec if len(spec) <= 60 else spec[:57] + "..."


def _split_spec(spec: str) -> tuple[str, str | None]:
    """``NAME[:WEIGHT]`` or ``MODULE:FUNCTION[:WEIGHT]`` as (name, weight text or None);
    anything else is an error that shows the forms (and only the start of a long spec)."""
    parts = spec.split(":")
    if len(parts) == 1:
        return parts[0], None
    module, rest = parts[0].strip(), [p.strip() for p in parts[1:]]
    if len(parts) == 2:
        if _IDENTIFIER.match(rest[0]) and module not in REWARD_NAMES:
            return f"{module}:{rest[0]}", None  # module:function
        return parts[0], parts[1]
    if len(parts) == 3 and _IDENTIFIER.match(module) and _IDENTIFIER.match(rest[0]):
        if module not in REWARD_NAMES:
            return f"{module}:{rest[0]}", parts[2]
    raise InvalidInputError(
        f"reward {_shown(spec)!r}: expected NAME[:WEIGHT] (NAME one of {list(REWARD_NAMES)} or "
        "a dotted import path) or MODULE:FUNCTION[:WEIGHT]; a built-in reward's options go in "
        "a config file table ({name = ..., weight = ...})"
    )


def _options_error(where: str, factory: Any, options: Mapping[str, Any]) -> InvalidInputError:
    """A reward's unknown options, named with the ones it takes (not Python's signature)."""
    try:
        known = [
            p for p in inspect.signature(factory).parameters if p not in ("self", "args", "kw")
        ]
    except (TypeError, ValueError):
        known = []
    unknown = sorted(set(options) - set(known)) if known else sorted(options)
    return InvalidInputError(
        f"reward {where!r}: unknown option(s) {unknown}" + (f"; it takes {known}" if known else "")
    )


def parse_reward(spec: str | Mapping[str, Any], *, max_new_tokens: int | None = None) -> RewardLike:
    """A reward from its command-line form.

    ``NAME[:WEIGHT]`` with ``NAME`` one of :data:`REWARD_NAMES` (``math``,
    ``exact``, ``choice``, ``format`` (:data:`THINK_ANSWER_FORMAT`),
    ``overlong`` (DAPO's soft punishment of lengths beyond
    ``max_new_tokens`` minus a fifth of it), ``cosine`` (correctness scaled
    by length, ``max_length`` defaulting to ``max_new_tokens``),
    ``repetition`` (the 3-gram repetition penalty), or a dotted import path
    (``pkg.module.fn``, or ``module:fn``; a module in the current directory
    imports as ``python -m`` would find it) to a reward spec, a compiled
    ``Rewards`` or a TRL-style function. A table
    (from a config file) has ``name``, optional ``weight``, and the spec's
    own options: ``{name = "format", pattern = "^\\\\d+$", weight = 0.5}``.

    Examples
    --------
    >>> parse_reward("format:0.5")
    FormatReward(pattern='^<think>.*?</think>\\\\s*<answer>.*?</answer>$', dot_all=True, weight=0.5, name=None)
    >>> parse_reward({"name": "math", "rel_tol": 0.01}).rel_tol
    0.01
    """  # noqa: E501
    if isinstance(spec, Mapping):
        options = dict(spec)
        name = options.pop("name", None)
        if not isinstance(name, str):
            raise InvalidInputError(f"a reward table needs a 'name' (one of {list(REWARD_NAMES)})")
        where = name
    elif isinstance(spec, str):
        name, weight = _split_spec(spec)
        options = {"weight": _weight(weight, spec)} if weight is not None else {}
        where = _shown(spec)
    else:
        raise InvalidInputError(
            f"a reward name must be a str or a table, not {type(spec).__name__}"
        )
    name = name.strip()
    if name in REWARD_NAMES:
        if name == "overlong" and max_new_tokens is not None:
            options.setdefault("max_length", max_new_tokens)
            options.setdefault("cache_length", max(1, max_new_tokens // 5))
        if name == "cosine" and max_new_tokens is not None:
            options.setdefault("max_length", max_new_tokens)
        try:
            return REWARD_NAMES[name](**options)
        except TypeError:
            raise _options_error(where, REWARD_NAMES[name], options) from None
    if "." in name or ":" in name:
        obj = _import(name)
        w = options.pop("weight", None)
        if options:
            raise InvalidInputError(f"reward {where!r}: options {sorted(options)} are not used")
        if w is None:
            return obj
        if isinstance(obj, _rewards.RewardSpec):
            import dataclasses

            return dataclasses.replace(obj, weight=w)
        return (obj, w)
    raise InvalidInputError(
        f"unknown reward {where!r}; expected one of {list(REWARD_NAMES)}, a dotted import "
        "path or MODULE:FUNCTION"
    )


@dataclass(frozen=True)
class _Function:
    name: str
    fn: Callable[..., Sequence[Any]]
    weight: float


class RunRewards:
    """The rewards of a run, built once; :meth:`score` scores a batch.

    Use :meth:`build`; see the module docstring for what it takes.
    """

    def __init__(self, parts: Sequence[_rewards.Rewards | _Function]) -> None:
        self.parts = tuple(parts)
        own = [p.names if isinstance(p, _rewards.Rewards) else (p.name,) for p in self.parts]
        #: Column names, in order; the first is the one ``eval_accuracy`` reads.
        self.names: tuple[str, ...] = _rewards.unique_names(n for names in own for n in names)
        ends = np.cumsum([len(names) for names in own])
        self._names = [self.names[e - len(o) : e] for e, o in zip(ends, own, strict=True)]

    @property
    def golds(self) -> dict[str, str | None]:
        """What each reward reads in a row's gold (its ``answer``), by column name:
        ``"answer"`` (a final answer: math, exact, choice, cosine), ``"tests"`` (code
        tests: code) or None (nothing, or a function: it may read anything).

        Examples
        --------
        >>> RunRewards.build(["code", "format:0.1"]).golds
        {'code': 'tests', 'format': None}
        """
        out: dict[str, str | None] = {}
        for part, names in zip(self.parts, self._names, strict=True):
            specs = part.specs if isinstance(part, _rewards.Rewards) else (None,)
            out.update((n, getattr(s, "gold", None)) for n, s in zip(names, specs, strict=True))
        return out

    @property
    def has_functions(self) -> bool:
        """Whether a TRL-style function is among the rewards (only those take
        ``trainer_state``: the trainer builds one for them alone)."""
        return any(not isinstance(p, _rewards.Rewards) for p in self.parts)

    @classmethod
    def build(
        cls, rewards: RewardLike | Sequence[RewardLike], *, max_new_tokens: int | None = None
    ) -> RunRewards:
        """Compile what the user gave (a single reward or a list; see the module docstring)."""
        if isinstance(rewards, RunRewards):
            return rewards
        items = (
            list(rewards)
            if isinstance(rewards, (list, tuple)) and not _is_weighted_fn(rewards)
            else [rewards]
        )
        if not items:
            raise InvalidInputError("no rewards given: name at least one (e.g. 'math')")
        parsed = [
            parse_reward(x, max_new_tokens=max_new_tokens) if isinstance(x, (str, Mapping)) else x
            for x in items
        ]
        specs = [x for x in parsed if isinstance(x, _rewards.RewardSpec)]
        parts: list[_rewards.Rewards | _Function] = []
        for i, x in enumerate(parsed):
            if isinstance(x, _rewards.RewardSpec):
                if x is specs[0]:  # all specs compiled together, scored in one Rust call
                    parts.append(_rewards.combine(specs))
            elif isinstance(x, _rewards.Rewards):
                parts.append(x)
            elif _is_weighted_fn(x):
                fn, w = x  # type: ignore[misc]
                parts.append(_Function(_fn_name(fn), fn, _weight(str(w), _fn_name(fn))))
            elif callable(x):
                parts.append(_Function(_fn_name(x), x, 1.0))
            else:
                raise InvalidInputError(
                    f"rewards[{i}] is {type(x).__name__}; expected a reward spec, a Rewards, "
                    "a function f(completions, **columns), a (function, weight) pair or a name"
                )
        return cls(parts)

    def __repr__(self) -> str:
        return f"RunRewards({', '.join(self.names)})"

    def score(
        self,
        completions: Sequence[str],
        rows: Sequence[Mapping[str, Any]],
        *,
        completion_ids: Sequence[Sequence[int]] | None = None,
        truncated: Sequence[bool] | npt.ArrayLike | None = None,
        trainer_state: Any = None,
    ) -> _rewards.RewardScores:
        """The rewards of ``completions``, one dataset row each (gold in ``answer``).

        Returns the weighted total and the unweighted column of every reward. As
        TRL sums them, a reward that cannot score an item (NaN: a gold without a
        choice letter for ``choice``, a function's None) is left out of its
        total; the total is NaN only where no weighted reward scored the item.
        ``truncated`` marks the completions cut off at the token limit: the
        built-in answer rewards read those only through their answer markers
        (:meth:`grpo_fast.rewards.Rewards.score_batch`); TRL-style functions
        are called as TRL calls them, without it. Each row's ``prompt`` goes to
        the built-in answer rewards (an arithmetic expression copied from it is
        no answer). ``trainer_state``
        (``global_step``, ``epoch``, ``max_steps``: a
        ``transformers.TrainerState``, as TRL passes it) goes to functions with
        TRL's signature.
        """
        texts = list(completions)
        if len(rows) != len(texts):
            raise InvalidInputError(f"{len(texts)} completions but {len(rows)} rows")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InvalidInputError(f"completions[{i}] is {type(t).__name__}; expected a str")
        golds = [r.get("answer") for r in rows]
        # The rows' prompts (a string or a conversation): an expression copied
        # from its prompt is no answer (docs/verify_semantics.md, rule 2).
        prompt_list = [r.get("prompt") for r in rows]
        prompts = None if all(p is None for p in prompt_list) else prompt_list
        lengths = (
            None
            if completion_ids is None
            else np.fromiter((len(c) for c in completion_ids), np.int64, len(texts))
        )
        columns: dict[str, npt.NDArray[np.float32]] = {}
        weights: list[float] = []
        for part, names in zip(self.parts, self._names, strict=True):
            if isinstance(part, _rewards.Rewards):
                s = part.score_batch(texts, golds, lengths, truncated, prompts=prompts)
                columns.update(zip(names, s.columns.values(), strict=True))
                weights += [spec.weight for spec in part.specs]
            else:
                columns[names[0]] = self._call(
                    part, names[0], texts, rows, completion_ids, trainer_state
                )
                weights.append(part.weight)
        total = _nansum(list(columns.values()), weights, len(texts))
        return _rewards.RewardScores(total=total, columns=columns)

    @staticmethod
    def _call(
        part: _Function,
        name: str,
        texts: list[str],
        rows: Sequence[Mapping[str, Any]],
        completion_ids: Sequence[Sequence[int]] | None,
        trainer_state: Any = None,
    ) -> npt.NDArray[np.float32]:
        """A TRL-style function, called as TRL's ``GRPOTrainer`` calls it (``trainer_state``
        too, when the trainer gives one)."""
        # As TRL does: conversational prompts get their completions as assistant messages.
        chat = bool(rows) and isinstance(rows[0].get("prompt"), list)
        state = {} if trainer_state is None else {"trainer_state": trainer_state}
        return _rewards.call_reward(
            part.fn,
            f"reward function {name!r}",
            len(texts),
            completions=[[{"role": "assistant", "content": t}] for t in texts] if chat else texts,
            completion_ids=None if completion_ids is None else [list(c) for c in completion_ids],
            samples=texts,
            **_rewards.trl_columns(rows),
            **state,
        )


def _nansum(
    columns: Sequence[npt.NDArray[np.float32]], weights: Sequence[float], n: int
) -> npt.NDArray[np.float32]:
    """The weighted total, as TRL's ``nansum`` over reward functions makes it: a reward that
    cannot score an item (NaN) adds nothing to it; NaN where no weighted reward scored it.

    Examples
    --------
    >>> nan = float("nan")
    >>> _nansum([np.array([1, nan, nan], np.float32), np.array([1, 1, nan], np.float32)],
    ...         [2.0, 0.5], 3).tolist()
    [2.5, 0.5, nan]
    """
    total = np.zeros(n, np.float32)
    scored = np.zeros(n, bool)
    for col, weight in zip(columns, weights, strict=True):
        if weight != 0:
            ok = ~np.isnan(col)
            total += np.where(ok, np.float32(weight) * col, np.float32(0))
            scored |= ok
    return np.where(scored, total, np.float32(np.nan)).astype(np.float32)


def _is_weighted_fn(x: Any) -> bool:
    return (
        isinstance(x, tuple)
        and len(x) == 2
        and callable(x[0])
        and not isinstance(x[0], (_rewards.RewardSpec, _rewards.Rewards))
        and isinstance(x[1], (int, float))
        and not isinstance(x[1], bool)
    )


def _fn_name(fn: Any) -> str:
    return str(getattr(fn, "__name__", type(fn).__name__))
