"""One step's rollouts: the rewards of a run and the immutable :class:`Batch`.

The trainer scores completions with what :mod:`grpo_fast.rewards` builds, the
one reward system of the package. :class:`RunRewards` takes any mix of

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
from grpo_fast.sampling import Completions

__all__ = ["REWARD_NAMES", "Batch", "RewardLike", "RunRewards", "parse_reward"]

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


def _split_spec(spec: str) -> tuple[str, str | None]:
    """``NAME[:WEIGHT]`` or ``MODULE:FUNCTION[:WEIGHT]`` as (name, weight text or None);
    anything else is an error that shows the forms (and only the start of a long spec)."""
    parts = spec.split(":")
    shown = spec if len(spec) <= 60 else spec[:57] + "..."
    forms = (
        f"reward {shown!r}: expected NAME[:WEIGHT] (NAME one of {list(REWARD_NAMES)} or a "
        "dotted import path) or MODULE:FUNCTION[:WEIGHT]; a built-in reward's options go in "
        "a config file table ({name = ..., weight = ...})"
    )
    if len(parts) == 1:
        return parts[0], None
    if len(parts) == 2:
        if _IDENTIFIER.match(parts[1].strip()) and parts[0].strip() not in REWARD_NAMES:
            return f"{parts[0].strip()}:{parts[1].strip()}", None  # module:function
        return parts[0], parts[1]
    if len(parts) == 3 and all(_IDENTIFIER.match(p.strip()) for p in parts[:2]):
        if parts[0].strip() not in REWARD_NAMES:
            return f"{parts[0].strip()}:{parts[1].strip()}", parts[2]
    raise InvalidInputError(forms)


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
    ``max_new_tokens`` minus a fifth of it), or a dotted import path to a
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
        name, weight = _split_spec(spec)
        options = {"weight": _weight(weight, spec)} if weight is not None else {}
        where = spec if len(spec) <= 60 else spec[:57] + "..."
    else:
        raise InvalidInputError(
            f"a reward name must be a str or a table, not {type(spec).__name__}"
        )
    name = name.strip()
    if name in REWARD_NAMES:
        if name == "overlong" and max_new_tokens is not None:
            options.setdefault("max_length", max_new_tokens)
            options.setdefault("cache_length", max(1, max_new_tokens // 5))
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
        names: list[str] = []
        self._names: list[tuple[str, ...]] = []
        for part in self.parts:
            own = part.names if isinstance(part, _rewards.Rewards) else (part.name,)
            unique = []
            for base in own:
                name, k = base, 1
                while name in names:
                    k += 1
                    name = f"{base}_{k}"
                names.append(name)
                unique.append(name)
            self._names.append(tuple(unique))
        #: Column names, in order; the first is the one ``eval_accuracy`` reads.
        self.names: tuple[str, ...] = tuple(names)

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
        trainer_state: Any = None,
    ) -> _rewards.RewardScores:
        """The rewards of ``completions``, one dataset row each (gold in ``answer``).

        Returns the weighted total and the unweighted column of every reward. As
        TRL sums them, a reward that cannot score an item (NaN: a gold without a
        choice letter for ``choice``, a function's None) is left out of its
        total; the total is NaN only where no weighted reward scored the item.
        ``trainer_state`` (``global_step``, ``epoch``, ``max_steps``: a
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
        lengths = (
            None
            if completion_ids is None
            else np.fromiter((len(c) for c in completion_ids), np.int64, len(texts))
        )
        total = np.zeros(len(texts), np.float32)
        scored = np.zeros(len(texts), bool)
        columns: dict[str, npt.NDArray[np.float32]] = {}
        for part, names in zip(self.parts, self._names, strict=True):
            if isinstance(part, _rewards.Rewards):
                s = part.score_batch(texts, golds, lengths)
                weights = [spec.weight for spec in part.specs]
                for name, col in zip(names, s.columns.values(), strict=True):
                    columns[name] = col
                cols = list(zip(s.columns.values(), weights, strict=True))
            else:
                col = self._call(part, names[0], texts, rows, completion_ids, trainer_state)
                columns[names[0]] = col
                cols = [(col, part.weight)]
            for col, weight in cols:
                if weight != 0:  # TRL's nansum: an item a reward cannot score adds nothing
                    ok = ~np.isnan(col)
                    total = total + np.where(ok, np.float32(weight) * col, np.float32(0))
                    scored |= ok
        total = np.where(scored, total, np.float32(np.nan))
        return _rewards.RewardScores(total=total.astype(np.float32), columns=columns)

    @staticmethod
    def _call(
        part: _Function,
        name: str,
        texts: list[str],
        rows: Sequence[Mapping[str, Any]],
        completion_ids: Sequence[Sequence[int]] | None,
        trainer_state: Any = None,
    ) -> npt.NDArray[np.float32]:
        keys = [k for k in rows[0] if k != "prompt"] if rows else []

        def call(idx: Sequence[int]) -> Any:
            # As TRL does: conversational prompts get their completions as assistant messages.
            chat = bool(rows) and isinstance(rows[0].get("prompt"), list)
            picked = [texts[i] for i in idx]
            extra = {} if trainer_state is None else {"trainer_state": trainer_state}
            return part.fn(
                completions=[[{"role": "assistant", "content": t}] for t in picked]
                if chat
                else picked,
                prompts=[rows[i].get("prompt") for i in idx],
                completion_ids=None
                if completion_ids is None
                else [list(completion_ids[i]) for i in idx],
                **{k: [rows[i].get(k) for i in idx] for k in keys},
                **extra,
            )

        everything = range(len(texts))
        try:
            out = list(call(everything))
        except Exception as e:  # the user's code: name it, and the sample it fails on
            raise InvalidInputError(_raised(name, e, call, texts)) from e
        if len(out) != len(texts):
            raise InvalidInputError(
                f"reward {name!r} returned {len(out)} values for {len(texts)} completions"
            )
        try:
            return np.array([np.nan if v is None else float(v) for v in out], np.float32)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"reward {name!r} returned a non-number: {e}") from None


def _raised(name: str, error: Exception, call: Callable[..., Any], texts: list[str]) -> str:
    """What to say when the reward function ``name`` raised ``error`` on a batch: the
    first sample it raises on alone (called one at a time to find it), and the error."""
    for i in range(len(texts)):
        try:
            call([i])
        except Exception as e:  # noqa: BLE001 (the user's code: any exception)
            return (
                f"reward function {name!r} raised on sample {i} (completion "
                f"{texts[i][:60]!r}): {type(e).__name__}: {e}"
            )
    return f"reward function {name!r} raised on the batch: {type(error).__name__}: {error}"


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


def _frozen(a: np.ndarray) -> np.ndarray:
    # A read-only view: the batch cannot be written through, the caller's array is untouched.
    v = np.asarray(a).view()
    v.flags.writeable = False
    return v


@dataclass(frozen=True)
class Batch:
    """One generation batch on this rank: whole groups of ``G`` rollouts, ready for the loss.

    Immutable: its arrays are read-only, :meth:`take` and :meth:`concat`
    build new batches, and nothing later in the step writes into it.

    Attributes
    ----------
    prompt_index : numpy.ndarray
        int64 ``[P]``: the dataset row of each group's prompt.
    completions : Completions
        ``P * G`` completions, grouped by prompt.
    rewards : numpy.ndarray
        float32 ``[P * G]``: the weighted total reward.
    reward_columns : dict of str to numpy.ndarray
        float32 ``[P * G]`` per reward, unweighted.
    advantages : numpy.ndarray
        float32 ``[P * G]``, or ``[P * G, T]`` per token (process rewards).
    """

    prompt_index: np.ndarray
    completions: Completions
    rewards: np.ndarray
    reward_columns: Mapping[str, np.ndarray]
    advantages: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.completions)
        if len(self.prompt_index) * self.completions.n != n:
            raise InvalidInputError(
                f"{len(self.prompt_index)} groups of {self.completions.n} but {n} completions"
            )
        for name in ("rewards", "advantages"):
            if len(getattr(self, name)) != n:
                raise InvalidInputError(f"{name} has {len(getattr(self, name))} entries, not {n}")
        object.__setattr__(self, "prompt_index", _frozen(self.prompt_index))
        object.__setattr__(self, "rewards", _frozen(self.rewards))
        object.__setattr__(self, "advantages", _frozen(self.advantages))
        object.__setattr__(
            self, "reward_columns", {k: _frozen(v) for k, v in self.reward_columns.items()}
        )

    def __len__(self) -> int:
        return len(self.completions)

    @property
    def group_size(self) -> int:
        return self.completions.n

    def token_advantages(self, width: int) -> npt.NDArray[np.float32]:
        """float32 advantages for completions padded to ``width`` tokens: ``[P * G]`` as they
        are, ``[P * G, T]`` cut or zero-padded to ``[P * G, width]``.

        Examples
        --------
        >>> c = Completions(["a", "b"], [[1]] * 2, [[2]] * 2, None, 2)
        >>> Batch(np.array([0]), c, np.zeros(2), {}, np.ones((2, 3))).token_advantages(2).shape
        (2, 2)
        """
        adv = np.asarray(self.advantages, np.float32)
        if adv.ndim == 1:
            return adv.copy()
        out = np.zeros((adv.shape[0], width), np.float32)
        w = min(width, adv.shape[1])
        out[:, :w] = adv[:, :w]
        return out

    def take(self, groups: npt.ArrayLike) -> Batch:
        """The batch of the given groups (indices or a boolean mask over the ``P`` groups).

        Examples
        --------
        >>> c = Completions(["a", "b", "c", "d"], [[1]] * 4, [[2]] * 4, None, 2)
        >>> b = Batch(np.array([7, 9]), c, np.array([0., 1, 1, 1]), {}, np.array([-1., 1, 0, 0]))
        >>> b.take(np.array([False, True])).completions.texts
        ['c', 'd']
        """
        g = np.asarray(groups)
        g = np.flatnonzero(g) if g.dtype == bool else g.astype(np.int64)
        G = self.group_size
        rows = (g[:, None] * G + np.arange(G)).ravel()
        return Batch(
            self.prompt_index[g],
            self.completions.take(rows.tolist()),
            self.rewards[rows],
            {k: v[rows] for k, v in self.reward_columns.items()},
            self.advantages[rows],
        )

    @staticmethod
    def concat(batches: Sequence[Batch], group_size: int) -> Batch:
        """The batches one after the other (no batch: an empty one of ``group_size``)."""
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
        names = batches[0].reward_columns.keys() if batches else ()
        advantages = [b.advantages for b in batches]
        if advantages and advantages[0].ndim == 2:  # per token: pad to the longest
            width = max(a.shape[1] for a in advantages)
            advantages = [b.token_advantages(width) for b in batches]
        return Batch(
            cat([b.prompt_index for b in batches], np.int64),
            Completions.concat([b.completions for b in batches], group_size),
            cat([b.rewards for b in batches], np.float32),
            {k: cat([b.reward_columns[k] for b in batches], np.float32) for k in names},
            cat(advantages, np.float32),
        )
