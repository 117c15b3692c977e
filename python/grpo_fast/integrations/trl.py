"""Reward functions for TRL's ``GRPOTrainer``, scored in Rust.

Each takes every call form TRL's own functions and ``GRPOTrainer`` use:
keywords (``prompts``, ``completions``, ``completion_ids``, ``trainer_state``,
``log_extra``, ``log_metric`` and the dataset columns), TRL's positional order
(``accuracy_reward(completions, solution)``,
``soft_overlong_punishment(completion_ids)``), plain-text completions and
conversational ones (lists of messages, ``[{"role": "assistant", "content":
...}]``). It returns ``list[float | None]``, scores the whole batch in one
call into grpo-fast's core (the GIL released, no signals, so it also works
from threads and TRL's async reward path) and is picklable (TRL's async
rollout worker ships reward functions to a child process).

Swapping TRL's math reward is one import::

    # from trl.rewards import accuracy_reward
    from grpo_fast.integrations.trl import accuracy_reward

    trainer = GRPOTrainer(model=..., reward_funcs=accuracy_reward, train_dataset=dataset)

- :data:`accuracy_reward`: 1.0 when the completion's answer equals the gold in
  the ``solution`` column, else 0.0; ``None`` when the gold has no
  mathematical value (empty, unparseable, or words such as ``forty two``:
  TRL then leaves the example out), as TRL's ``accuracy_reward``. Like TRL's,
  only an anchored answer counts (a
  ``\\boxed{}``, ``The final answer is ...``, ``Answer: ...``, ``the answer is
  ...``); what counts as equal is grpo-fast's verifier (see
  ``docs/verify_semantics.md`` and ``docs/verify_differences.md``).
- :func:`get_accuracy_reward`: the same with other options.
- :data:`reasoning_accuracy_reward` / :func:`get_reasoning_accuracy_reward`:
  TRL's ``reasoning_accuracy_reward`` (only the text after ``</think>`` counts).
- :data:`think_format_reward`: TRL's ``think_format_reward`` (``<think>...</think>``
  first, a single ``<think>``).
- :func:`get_format_reward`: 1.0 when a regex matches (Rust ``regex`` syntax).
- :func:`get_soft_overlong_punishment`: DAPO's soft overlong punishment of the
  completion's token count, as TRL's function of that name.
- :func:`get_cosine_scaled_reward`: correctness scaled by the token count on a
  cosine schedule (Yeo et al. 2025), as TRL's function of that name.
- :func:`get_repetition_penalty_reward`: the n-gram repetition penalty over
  the completion's token ids, as TRL's function of that name
  (:class:`grpo_fast.rewards.RepetitionReward` is open-r1's, over words).
- :func:`as_trl_reward`: any :class:`grpo_fast.rewards.Rewards` as a TRL reward.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grpo_fast import rewards as _rewards
from grpo_fast.errors import InvalidInputError
from grpo_fast.verify import extract_answer
from grpo_fast.verify import parse as parse_value

__all__ = [
    "TRL_ANSWER_RULES",
    "AccuracyReward",
    "CosineScaledReward",
    "FormatReward",
    "ReasoningAccuracyReward",
    "RepetitionPenalty",
    "SoftOverlongPunishment",
    "TrlReward",
    "accuracy_reward",
    "as_trl_reward",
    "completion_texts",
    "get_accuracy_reward",
    "get_cosine_scaled_reward",
    "get_format_reward",
    "get_reasoning_accuracy_reward",
    "get_repetition_penalty_reward",
    "get_soft_overlong_punishment",
    "reasoning_accuracy_reward",
    "think_format_reward",
]

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
        scores = self.compiled.score_batch(texts, golds, lengths)
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


class AccuracyReward(TrlReward):
    """TRL's ``accuracy_reward``, in Rust; see :func:`get_accuracy_reward`."""

    __name__ = "accuracy_reward"

    def __init__(
        self,
        *,
        rel_tol: float = 1e-6,
        rules: Sequence[str] | None = TRL_ANSWER_RULES,
        think: bool = True,
        name: str = "accuracy_reward",
        gold_column: str = "solution",
        log_answers: bool = False,
    ) -> None:
        spec = _rewards.MathReward(rel_tol=rel_tol, rules=rules, think=think)
        super().__init__([spec], name=name, gold_column=gold_column, gold_must_parse=True)
        self.rules = None if rules is None else tuple(rules)
        self.think = think
        self.log_answers = log_answers

    @property
    def positional(self) -> tuple[str, ...]:
        # TRL: accuracy_reward(completions, solution, log_extra=None, **kwargs)
        return ("completions", self.gold_column or "solution", "log_extra")

    def _log(self, log_extra: Callable[[str, list[Any]], None] | None, texts: Any, kw: Any) -> None:
        if log_extra is None:
            return
        log_extra("solution", list(kw[self.gold_column]))
        if self.log_answers:
            found = [
                extract_answer(t, rules=self.rules, think=self.think)
                for t in completion_texts(texts)
            ]
            log_extra("answer_parsed", ["[unparseable]" if f is None else f.answer for f in found])

    def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        kw = self.bind(args, kwargs)
        log_extra = kw.pop("log_extra", None)
        kw.pop("log_metric", None)
        out = _to_list(self.score(**kw).total)
        self._log(log_extra, kw.get("completions"), kw)
        return out


class ReasoningAccuracyReward(AccuracyReward):
    """TRL's ``reasoning_accuracy_reward``; see :func:`get_reasoning_accuracy_reward`."""

    __name__ = "reasoning_accuracy_reward"

    def __init__(
        self,
        reasoning_delimiters: Sequence[str] | None = None,
        *,
        name: str = "reasoning_accuracy_reward",
        **kwargs: Any,
    ) -> None:
        super().__init__(name=name, **kwargs)
        self.reasoning_delimiters = _delimiters(reasoning_delimiters)

    @property
    def positional(self) -> tuple[str, ...]:
        # TRL: reasoning_accuracy_reward(completions, solution, reasoning_delimiters=None,
        # log_extra=None, **kwargs)
        return ("completions", self.gold_column or "solution", "reasoning_delimiters", "log_extra")

    def __call__(self, *args: Any, **kwargs: Any) -> list[float | None]:
        kw = self.bind(args, kwargs)
        log_extra = kw.pop("log_extra", None)
        kw.pop("log_metric", None)
        given = kw.pop("reasoning_delimiters", None)
        delims = self.reasoning_delimiters if given is None else _delimiters(given)
        finals: list[str] = []
        complete: list[bool] = []
        completions = kw.pop("completions", None)
        if completions is None:
            raise InvalidInputError(f"{self.__name__} needs the completions (completions=...)")
        for text in completion_texts(completions):
            # As TRL: the first delimiter (in list order) present ends the reasoning.
            d = next((d for d in delims if d in text), None)
            complete.append(d is not None)
            finals.append(text.split(d)[-1] if d is not None else "")
        scored = _to_list(self.score(finals, **kw).total)
        out = [s if ok else 0.0 for s, ok in zip(scored, complete, strict=True)]
        self._log(log_extra, finals, kw)
        return out


def _delimiters(reasoning_delimiters: Sequence[str] | None) -> list[str]:
    delims = ["</think>"] if reasoning_delimiters is None else reasoning_delimiters
    if isinstance(delims, str) or not all(isinstance(d, str) and d for d in delims):
        raise InvalidInputError(
            f"reasoning_delimiters must be a list of non-empty str, not {reasoning_delimiters!r}"
        )
    return list(delims)


def get_accuracy_reward(
    *,
    rel_tol: float = 1e-6,
    rules: Sequence[str] | None = TRL_ANSWER_RULES,
    think: bool = True,
    name: str = "accuracy_reward",
    gold_column: str = "solution",
    log_answers: bool = False,
) -> AccuracyReward:
    """A math accuracy reward: 1.0 when the answer equals the gold, 0.0 when
    not, None when the gold has no usable answer.

    Parameters
    ----------
    rel_tol : float
        Relative tolerance for a decimal against an irrational or
        non-terminating exact value.
    rules : sequence of str or None
        Extraction rules (see :func:`grpo_fast.extract_answer`); the default
        accepts only anchored answers, as TRL's ``accuracy_reward``; ``None``
        is grpo-fast's full default list (GSM8K ``####``, ``<answer>``, the last
        value near the end, ...).
    think : bool
        Only the text after the last ``</think>`` counts, and a completion
        that opens ``<think>`` without closing it has no answer (default True;
        TRL's ``accuracy_reward`` reads the whole text, as ``think=False``).
    name : str
        The name TRL logs the reward under (``rewards/<name>/mean``).
    gold_column : str
        The dataset column holding the gold answers.
    log_answers : bool
        Also log the extracted answers to TRL's completions table
        (``answer_parsed``); off by default, as it costs one more pass.

    Examples
    --------
    >>> reward = get_accuracy_reward(rules=None)
    >>> reward(["So she has 12 left.\\n#### 12", "#### 11"], solution=["12", "12"])
    [1.0, 0.0]
    """
    return AccuracyReward(
        rel_tol=rel_tol,
        rules=rules,
        think=think,
        name=name,
        gold_column=gold_column,
        log_answers=log_answers,
    )


def get_reasoning_accuracy_reward(
    reasoning_delimiters: Sequence[str] | None = None,
    *,
    rel_tol: float = 1e-6,
    rules: Sequence[str] | None = TRL_ANSWER_RULES,
    name: str = "reasoning_accuracy_reward",
    gold_column: str = "solution",
) -> ReasoningAccuracyReward:
    """TRL's ``reasoning_accuracy_reward``: the accuracy of the text after the
    reasoning (after the first of ``reasoning_delimiters``, default
    ``["</think>"]``, that occurs); 0.0 when the reasoning never ends, None when
    the gold has no usable answer.

    Examples
    --------
    >>> reward = get_reasoning_accuracy_reward()
    >>> done, unfinished = "<think>maybe 2</think> so \\\\boxed{3}", "<think>\\\\boxed{3}"
    >>> reward([done, unfinished], solution=["3", "3"])
    [1.0, 0.0]
    """
    return ReasoningAccuracyReward(
        reasoning_delimiters, rel_tol=rel_tol, rules=rules, name=name, gold_column=gold_column
    )


accuracy_reward = AccuracyReward()
reasoning_accuracy_reward = ReasoningAccuracyReward()
accuracy_reward.__doc__ = """TRL's ``accuracy_reward`` signature, scored in Rust.

Examples
--------
>>> accuracy_reward(
...     [[{"role": "assistant", "content": r"My answer is \\boxed{\\frac{1}{3}}"}],
...      [{"role": "assistant", "content": r"My answer is \\boxed{\\frac{1}{2}}"}]],
...     solution=[r"\\frac{1}{3}", r"\\frac{1}{3}"],
... )
[1.0, 0.0]
"""


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


class CosineScaledReward(TrlReward):
    """Correctness scaled by the token count on a cosine schedule (Yeo et al.
    2025, Appendix C.1), as TRL's ``get_cosine_scaled_reward``: with ``p =
    min(len(completion_ids) / max_len, 1)``, a right answer earns from
    ``max_value_correct`` (``p = 0``) down to ``min_value_correct`` (``p =
    1``), a wrong one from ``min_value_wrong`` up to ``max_value_wrong``;
    None when the gold has no mathematical value. Correctness is
    :data:`accuracy_reward`'s (same ``rules``/``think`` options); called as
    TRL's, ``f(completions, solution, completion_ids)``. See
    :class:`grpo_fast.rewards.CosineReward`.

    Examples
    --------
    >>> reward = get_cosine_scaled_reward(max_len=100)
    >>> reward([r"\\boxed{\\frac{1}{3}}", r"\\boxed{\\frac{1}{2}}"], [r"\\frac{1}{3}"] * 2, [[1] * 50] * 2)
    [0.75, -0.75]

    :func:`get_cosine_scaled_reward` is this class, under TRL's name.
    """  # noqa: E501

    __name__ = "cosine_scaled_reward"

    def __init__(
        self,
        max_len: int,
        min_value_wrong: float = -1.0,
        max_value_wrong: float = -0.5,
        min_value_correct: float = 0.5,
        max_value_correct: float = 1.0,
        *,
        rel_tol: float = 1e-6,
        rules: Sequence[str] | None = TRL_ANSWER_RULES,
        think: bool = True,
        gold_column: str = "solution",
    ) -> None:
        spec = _rewards.CosineReward(
            max_len,
            min_value_wrong,
            max_value_wrong,
            min_value_correct,
            max_value_correct,
            rel_tol=rel_tol,
            rules=rules,
            think=think,
        )
        super().__init__(
            [spec],
            name="cosine_scaled_reward",
            gold_column=gold_column,
            needs_lengths=True,
            gold_must_parse=True,
        )


#: TRL's ``get_cosine_scaled_reward(max_len, ...)``: see :class:`CosineScaledReward`.
get_cosine_scaled_reward = CosineScaledReward


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
