"""What every TRL reward function of :mod:`grpo_fast.integrations.trl` shares:
:class:`TrlReward` (TRL's call forms bound once, the batch scored in one Rust call),
the completions' texts and token ids read and checked, and :func:`as_trl_reward`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from grpo_fast import rewards as _rewards
from grpo_fast.errors import InvalidInputError
from grpo_fast.verify import parse as parse_value

#: The extraction rules of :data:`accuracy_reward`: the anchored answers TRL's
#: ``accuracy_reward`` accepts (math-verify with ``try_extract_without_anchor=False``).
TRL_ANSWER_RULES: tuple[str, ...] = ("boxed", "final_answer", "answer_colon", "answer_is")


def _message_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks: [{"type": "text", "text": ...}, ...]
        return "".join(
            b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"
        )
    if content is None:
        return ""
    raise InvalidInputError(f"message content must be a str, not {type(content).__name__}")


def completion_texts(completions: Sequence[Any]) -> list[str]:
    """The text of each completion: a str as it is; for a chat completion (a
    list of messages), the content of its last assistant message (of its only
    message, as TRL reads it, in the usual one-message case).

    Examples
    --------
    >>> completion_texts(["a", [{"role": "assistant", "content": "b"}]])
    ['a', 'b']
    """
    if isinstance(completions, str):
        raise InvalidInputError("completions must be a list of completions, not one str")
    out = []
    for i, c in enumerate(completions):
        if isinstance(c, str):
            out.append(c)
        elif isinstance(c, dict):
            out.append(_message_text(c.get("content")))
        elif isinstance(c, (list, tuple)):
            if not c:
                out.append("")
                continue
            msgs = [m for m in c if isinstance(m, dict) and m.get("role") == "assistant"]
            last = msgs[-1] if msgs else c[-1]
            if not isinstance(last, dict):
                raise InvalidInputError(
                    f"completions[{i}] is a list of {type(last).__name__}; expected messages "
                    '({"role": ..., "content": ...})'
                )
            out.append(_message_text(last.get("content")))
        else:
            raise InvalidInputError(
                f"completions[{i}] is {type(c).__name__}; expected a str or a list of messages"
            )
    return out


def _id_lists(completion_ids: Any, n: int | None) -> list[Any]:
    """``completion_ids`` checked: one sequence of token ids per completion."""
    if completion_ids is None:
        raise InvalidInputError(
            "completion_ids (the token ids of each completion) are required: GRPOTrainer "
            "passes them; pass them yourself when calling the reward directly"
        )
    if isinstance(completion_ids, (str, bytes)) or not hasattr(completion_ids, "__len__"):
        raise InvalidInputError(
            f"completion_ids must be a list of token-id lists, not {type(completion_ids).__name__}"
        )
    ids = list(completion_ids)
    if n is not None and len(ids) != n:
        raise InvalidInputError(
            f"completion_ids has {len(ids)} entries but there are {n} completions"
        )
    for i, c in enumerate(ids):
        if isinstance(c, (str, bytes)) or not hasattr(c, "__len__"):
            raise InvalidInputError(
                f"completion_ids[{i}] is {type(c).__name__}; expected a list of token ids"
            )
    return ids


def _lengths(completion_ids: Any, n: int) -> np.ndarray:
    ids = _id_lists(completion_ids, n)
    return np.fromiter((len(c) for c in ids), dtype=np.int64, count=n)


def _to_list(values: np.ndarray) -> list[float | None]:
    return [None if v != v else float(v) for v in values.tolist()]


def _no_math_value(golds: Sequence[str | None]) -> np.ndarray:
    """Where a gold has no mathematical value (None, empty, unparseable, or
    words such as ``forty two``): TRL's accuracy reward returns None there.
    Each distinct gold is parsed once (a group's completions share theirs)."""
    seen: dict[str, bool] = {}
    out = np.zeros(len(golds), dtype=bool)
    for i, g in enumerate(golds):
        if g is None:
            out[i] = True
            continue
        if g not in seen:
            value = parse_value(g)
            seen[g] = value is None or value.kind == "text"
        out[i] = seen[g]
    return out


class TrlReward:
    """A :class:`grpo_fast.rewards.Rewards` with TRL's reward-function signature.

    Golds come from the dataset column ``gold_column`` (None: no gold), token
    lengths from ``completion_ids`` when ``needs_lengths``. Positional
    arguments bind in TRL's order (:attr:`positional`): the completions, then
    the gold column, then ``completion_ids``. ``gold_must_parse`` makes an item
    whose gold has no mathematical value None, as TRL's accuracy reward does.
    Picklable: the compiled rewards are rebuilt from the specs after unpickling.
    """

    __name__ = "grpo_fast_reward"
    #: The keywords TRL's trainer passes that no spec reads.
    _TRAINER_KEYWORDS = ("log_extra", "log_metric")

    def __init__(
        self,
        specs: Sequence[_rewards.RewardSpec],
        *,
        name: str | None = None,
        gold_column: str | None = "solution",
        needs_lengths: bool = False,
        gold_must_parse: bool = False,
    ) -> None:
        self.specs = tuple(specs)
        self.gold_column = gold_column
        self.needs_lengths = needs_lengths
        self.gold_must_parse = gold_must_parse
        if name is not None:
            self.__name__ = name
        self.compiled = _rewards.combine(list(self.specs))

    @property
    def positional(self) -> tuple[str, ...]:
        """The names positional arguments bind to, in TRL's order."""
        names = ["completions"]
        if self.gold_column is not None:
            names.append(self.gold_column)
        if self.needs_lengths:
            names.append("completion_ids")
        return tuple(names)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        """The call's arguments by name (positional ones in :attr:`positional` order)."""
        names = self.positional
        if len(args) > len(names):
            raise InvalidInputError(
                f"{self.__name__} takes at most {len(names)} positional arguments "
                f"({', '.join(names)}), got {len(args)}"
            )
        bound = dict(kwargs)
        for name, value in zip(names, args, strict=False):
            if name in bound:
                raise InvalidInputError(
                    f"{self.__name__} got {name!r} both by position and by keyword"
                )
            bound[name] = value
        return bound

    def score(
        self, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> _rewards.RewardScores:
        """The scores of a batch, with the arguments by name."""
        if completions is None:
            raise InvalidInputError(f"{self.__name__} needs the completions (completions=...)")
        texts = completion_texts(completions)
        golds = None
        if self.gold_column is not None:
            if self.gold_column not in kwargs:
                raise InvalidInputError(
                    f"{self.__name__} reads the gold answers from the dataset column "
                    f"{self.gold_column!r}, which is missing (columns: {sorted(kwargs)})"
                )
            golds = list(kwargs[self.gold_column])
            if len(golds) != len(texts):
                raise InvalidInputError(
                    f"{self.gold_column} has {len(golds)} entries but there are "
                    f"{len(texts)} completions"
                )
            golds = [g if g is None or isinstance(g, str) else str(g) for g in golds]
        lengths = _lengths(kwargs.get("completion_ids"), len(texts)) if self.needs_lengths else None
        # TRL passes the prompts by keyword (strings, or conversations): an
        # expression copied from the prompt is no answer.
        prompts = kwargs.get("prompts")
        if prompts is not None and len(prompts) != len(texts):
            raise InvalidInputError(
                f"prompts has {len(prompts)} entries but there are {len(texts)} completions"
            )
        scores = self.compiled.score_batch(texts, golds, lengths, prompts=prompts)
        if self.gold_must_parse and golds is not None:
            unusable = _no_math_value(golds)
            if unusable.any():
                total = scores.total.copy()
                total[unusable] = np.nan
                scores = _rewards.RewardScores(total=total, columns=scores.columns)
        return scores

    def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        kw = self.bind(args, kwargs)
        for k in self._TRAINER_KEYWORDS:
            kw.pop(k, None)
        return _to_list(self.score(**kw).total)


def as_trl_reward(
    specs: _rewards.RewardSpec | Sequence[_rewards.RewardSpec],
    *,
    name: str = "grpo_fast_reward",
    gold_column: str | None = "solution",
) -> TrlReward:
    """Any grpo-fast reward specs, weighted and summed, as one TRL reward function.

    Golds come from ``gold_column`` (None when no spec needs one); token
    lengths from ``completion_ids`` (for :class:`grpo_fast.rewards.OverlongReward`
    and :class:`grpo_fast.rewards.CosineReward`). Positional arguments bind as
    ``f(completions, <gold_column>, completion_ids)``.

    Examples
    --------
    >>> from grpo_fast import rewards
    >>> reward = as_trl_reward([rewards.MathReward(), rewards.OverlongReward(8, 4, weight=0.5)])
    >>> reward(["#### 4", "#### 5"], solution=["4", "4"], completion_ids=[[1] * 6, [1] * 2])
    [0.75, 0.0]
    """
    if isinstance(specs, _rewards.RewardSpec):
        specs = [specs]
    specs = list(specs)
    needs_lengths = any(
        isinstance(s, (_rewards.OverlongReward, _rewards.CosineReward)) for s in specs
    )
    return TrlReward(specs, name=name, gold_column=gold_column, needs_lengths=needs_lengths)
