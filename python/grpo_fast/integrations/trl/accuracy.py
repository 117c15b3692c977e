"""Correctness rewards with TRL's signatures: ``accuracy_reward``,
``reasoning_accuracy_reward`` and ``get_cosine_scaled_reward`` (correctness scaled by
the token count)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from grpo_fast import rewards as _rewards
from grpo_fast.errors import InvalidInputError
from grpo_fast.integrations.trl.base import TRL_ANSWER_RULES, TrlReward, _to_list, completion_texts
from grpo_fast.verify import extract_answer


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
