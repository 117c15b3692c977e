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
import math
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
    module, _, attr = path.rpartition(".")
    try:
        return getattr(importlib.import_module(module), attr)
    except (ImportError, AttributeError) as e:
        raise InvalidInputError(f"reward {path!r} cannot be imported: {e}") from None


def parse_reward(spec: str | Mapping[str, Any], *, max_new_tokens: int | None = None) -> RewardLike:
    """A reward from its command-line form.

    ``NAME[:WEIGHT]`` with ``NAME`` one of :data:`REWARD_NAMES` (``math``,
    ``exact``, ``choice``, ``format`` (:data:`THINK_ANSWER_FORMAT`),
    ``overlong`` (DAPO's soft punishment of lengths beyond
    ``max_new_tokens`` minus a fifth of it), ``cosine`` (correctness scaled
    by length, ``max_length`` defaulting to ``max_new_tokens``),
    ``repetition`` (the 3-gram repetition penalty), or a dotted import path to a
    reward spec, a compiled ``Rewards`` or a TRL-style function. A table
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
        name, sep, weight = spec.partition(":")
        options = {"weight": _weight(weight, spec)} if sep else {}
        where = spec
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
        except TypeError as e:
            raise InvalidInputError(f"reward {where!r}: {e}") from None
    if "." in name:
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
        f"unknown reward {name!r}; expected one of {list(REWARD_NAMES)} or a dotted import path"
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
    ) -> _rewards.RewardScores:
        """The rewards of ``completions``, one dataset row each (gold in ``answer``).

        ``truncated`` marks the completions cut off at the token limit: the
        built-in answer rewards read those only through their answer markers
        (:meth:`grpo_fast.rewards.Rewards.score_batch`); TRL-style functions
        are called as TRL calls them, without it.

        Returns the weighted total (NaN where a weighted reward is NaN) and
        the unweighted column of every reward.
        """
        texts = list(completions)
        if len(rows) != len(texts):
            raise InvalidInputError(f"{len(texts)} completions but {len(rows)} rows")
        for i, t in enumerate(texts):
            if not isinstance(t, str):
                raise InvalidInputError(f"completions[{i}] is {type(t).__name__}; expected a str")
        golds = [r.get("answer") for r in rows]
        lengths = (
            None
            if completion_ids is None
            else np.fromiter((len(c) for c in completion_ids), np.int64, len(texts))
        )
        total = np.zeros(len(texts), np.float32)
        columns: dict[str, npt.NDArray[np.float32]] = {}
        for part, names in zip(self.parts, self._names, strict=True):
            if isinstance(part, _rewards.Rewards):
                s = part.score_batch(texts, golds, lengths, truncated)
                total = total + s.total
                for name, col in zip(names, s.columns.values(), strict=True):
                    columns[name] = col
            else:
                col = self._call(part, names[0], texts, rows, completion_ids)
                if part.weight != 0:
                    total = total + np.float32(part.weight) * col
                columns[names[0]] = col
        return _rewards.RewardScores(total=total.astype(np.float32), columns=columns)

    @staticmethod
    def _call(
        part: _Function,
        name: str,
        texts: list[str],
        rows: Sequence[Mapping[str, Any]],
        completion_ids: Sequence[Sequence[int]] | None,
    ) -> npt.NDArray[np.float32]:
        """A TRL-style function, called as TRL's ``GRPOTrainer`` calls it."""
        # As TRL does: conversational prompts get their completions as assistant messages.
        chat = bool(rows) and isinstance(rows[0].get("prompt"), list)
        return _rewards.call_reward(
            part.fn,
            f"reward {name!r}",
            len(texts),
            completions=[[{"role": "assistant", "content": t}] for t in texts] if chat else texts,
            completion_ids=None if completion_ids is None else [list(c) for c in completion_ids],
            **_rewards.trl_columns(rows),
        )


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
