"""Rewards of a completion's form and length with TRL's signatures: a format regex,
``think_format_reward``, DAPO's soft overlong punishment and the token-id repetition
penalty."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from grpo_fast import rewards as _rewards
from grpo_fast.errors import InvalidInputError
from grpo_fast.integrations.trl.base import TrlReward, _id_lists


class FormatReward(TrlReward):
    """1.0 when a regex matches the completion; see :func:`get_format_reward`."""

    __name__ = "format_reward"

    def __init__(self, pattern: str, *, dot_all: bool = True, name: str = "format_reward") -> None:
        spec = _rewards.FormatReward(pattern, dot_all=dot_all)
        super().__init__([spec], name=name, gold_column=None)


def get_format_reward(
    pattern: str = r"^<think>.*?</think>\s*<answer>.*?</answer>$",
    *,
    dot_all: bool = True,
    name: str = "format_reward",
) -> FormatReward:
    """A format reward: 1.0 when ``pattern`` matches (searched, so anchor it
    with ``^...$`` for a whole-completion format), else 0.0.

    ``pattern`` is Rust ``regex`` syntax (linear-time: no look-around or
    back-references); ``dot_all`` lets ``.`` match newlines.

    Examples
    --------
    >>> reward = get_format_reward()
    >>> reward(["<think>\\n2+2\\n</think> <answer>4</answer>", "4"])
    [1.0, 0.0]
    """
    return FormatReward(pattern, dot_all=dot_all, name=name)


class _ThinkFormatReward(TrlReward):
    """TRL's ``think_format_reward``.

    TRL's pattern ``^<think>(?!.*<think>)(.*?)</think>.*$`` needs a look-ahead,
    which linear-time regexes do not have; it says: the text starts with
    ``<think>``, has no other ``<think>`` and has a ``</think>``. Two patterns
    scored in the same Rust call decide it: ``A`` (starts with ``<think>`` and
    closes it) and ``B`` (a second ``<think>``); the reward is ``A and not B``.
    """

    __name__ = "think_format_reward"

    def __init__(self) -> None:
        specs = [
            _rewards.FormatReward(r"\A<think>.*?</think>", dot_all=True, name="closed"),
            _rewards.FormatReward(r"\A<think>.*<think>", dot_all=True, name="reopened"),
        ]
        super().__init__(specs, name="think_format_reward", gold_column=None)

    def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        kw = self.bind(args, kwargs)
        cols = self.score(**kw).columns
        ok = (cols["closed"] == 1.0) & (cols["reopened"] == 0.0)
        return [1.0 if v else 0.0 for v in ok.tolist()]


think_format_reward = _ThinkFormatReward()


class _LengthReward(TrlReward):
    """A reward of the token ids alone: TRL's functions of that kind take
    ``completion_ids`` first (``f(completion_ids, **kwargs)``); the
    completions, when given, are not read. A call with the completions first
    and ``completion_ids`` by keyword, as grpo-fast's earlier versions took
    it, binds as such."""

    @property
    def positional(self) -> tuple[str, ...]:
        return ("completion_ids",)

    def bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
        if len(args) == 1 and "completion_ids" in kwargs and "completions" not in kwargs:
            return {**kwargs, "completions": args[0]}
        return super().bind(args, kwargs)

    def texts(self, ids: list[Any]) -> list[str]:
        """What the specs read for each completion."""
        return [""] * len(ids)

    def score(
        self, completions: Sequence[Any] | None = None, **kwargs: Any
    ) -> _rewards.RewardScores:
        ids = _id_lists(kwargs.get("completion_ids"), None)
        if completions is not None and len(completions) != len(ids):
            raise InvalidInputError(
                f"completion_ids has {len(ids)} entries but there are {len(completions)} "
                "completions"
            )
        lengths = np.fromiter((len(c) for c in ids), dtype=np.int64, count=len(ids))
        return self.compiled.score_batch(self.texts(ids), None, lengths)


class SoftOverlongPunishment(_LengthReward):
    """DAPO's soft overlong punishment; see :func:`get_soft_overlong_punishment`."""

    __name__ = "soft_overlong_punishment_reward"

    def __init__(self, max_completion_len: int, soft_punish_cache: int) -> None:
        if soft_punish_cache > max_completion_len:
            raise InvalidInputError(
                f"soft_punish_cache ({soft_punish_cache}) must not exceed "
                f"max_completion_len ({max_completion_len})"
            )
        spec = _rewards.OverlongReward(max_completion_len, soft_punish_cache)
        super().__init__(
            [spec], name="soft_overlong_punishment_reward", gold_column=None, needs_lengths=True
        )


def get_soft_overlong_punishment(
    max_completion_len: int, soft_punish_cache: int
) -> SoftOverlongPunishment:
    """DAPO's soft overlong punishment of the token count ``L`` (Yu et al. 2025,
    Eq. 13), as TRL's ``get_soft_overlong_punishment``: 0 up to
    ``max_completion_len - soft_punish_cache``, then falling linearly to -1 at
    ``max_completion_len``, -1 beyond. Reads ``completion_ids`` (first
    positional argument, as TRL's).

    Examples
    --------
    >>> punish = get_soft_overlong_punishment(max_completion_len=100, soft_punish_cache=20)
    >>> punish([[1] * 50, [1] * 90, [1] * 101])
    [0.0, -0.5, -1.0]
    """
    return SoftOverlongPunishment(max_completion_len, soft_punish_cache)


class RepetitionPenalty(_LengthReward):
    """TRL's token-id repetition penalty; see :func:`get_repetition_penalty_reward`."""

    __name__ = "repetition_penalty_reward"

    def __init__(self, ngram_size: int = 3, max_penalty: float = -1.0) -> None:
        spec = _rewards.RepetitionReward(ngram_size, max_penalty)
        super().__init__([spec], name="repetition_penalty_reward", gold_column=None)

    def texts(self, ids: list[Any]) -> list[str]:
        # The ids written as words: the spec's word n-grams are then the token n-grams.
        return [" ".join(map(str, c.tolist() if hasattr(c, "tolist") else c)) for c in ids]


def get_repetition_penalty_reward(
    ngram_size: int = 3, max_penalty: float = -1.0
) -> RepetitionPenalty:
    """The n-gram repetition penalty over the completion token ids (Yeo et al.
    2025, Appendix C.2), as TRL's ``get_repetition_penalty_reward``:
    ``max_penalty * (1 - unique / total)`` over the ``ngram_size``-grams of
    ``completion_ids``; 0 for fewer than ``ngram_size`` tokens. For open-r1's
    version over words, use :class:`grpo_fast.rewards.RepetitionReward` (with
    :func:`as_trl_reward`).

    Examples
    --------
    >>> get_repetition_penalty_reward(ngram_size=2)([[1, 2, 3, 4], [5, 5, 5, 5, 5]])
    [0.0, -0.75]
    """
    return RepetitionPenalty(ngram_size, max_penalty)
