"""Reward specs: built once in Python, applied to a whole batch in Rust.

A spec says what to reward (math equivalence, an exact string, a choice
letter, a regex format, DAPO's soft overlong punishment, the cosine
length-scaled correctness and the n-gram repetition penalty of Yeo et al.
2025, or your own Python function) and its weight; :func:`combine` compiles several into one
:class:`Rewards` whose :meth:`Rewards.score_batch` scores a batch in one call
across the core's threads, with the GIL released, and returns the weighted
total plus one column per spec. NaN marks an item a spec cannot score (no
gold, a gold without a choice letter, a Python function returning None); a
NaN in any weighted column makes the item's total NaN, so the advantages
leave it out of the group statistics instead of scoring it as a failure.

Examples
--------
>>> from grpo_fast import rewards
>>> r = rewards.combine(
...     rewards.MathReward(),
...     rewards.FormatReward(r"^<think>.*?</think>\\s*<answer>.*?</answer>$", weight=0.5),
... )
>>> s = r.score_batch(["<think>2+2</think> <answer>4</answer>", "5"], golds="4")
>>> s.total.tolist()
[1.5, 0.0]
>>> sorted(s.columns)
['format', 'math']
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
import numpy.typing as npt

from grpo_fast import _core
from grpo_fast.errors import InvalidInputError
from grpo_fast.verify import (
    _EXTRACT_DEFAULTS,
    _VERIFY_DEFAULTS,
    as_list,
    extract_options,
    prompt_text,
    verify_options,
)

__all__ = [
    "ChoiceReward",
    "CodeReward",
    "CosineReward",
    "ExactMatchReward",
    "FormatReward",
    "MathReward",
    "OverlongReward",
    "PythonReward",
    "RepetitionReward",
    "RewardScores",
    "RewardSpec",
    "Rewards",
    "combine",
    "overlong_penalty",
    "call_reward",
    "score_batch",
    "trl_columns",
    "unique_names",
]


class RewardSpec:
    """Base class of the reward specs; ``weight`` and ``name`` on every one.

    ``kind`` is the spec's name in :data:`grpo_fast.names.REWARD_KINDS` (or
    ``"python"``) and the default column name. ``gold`` is what the spec reads in
    each item's gold: ``"answer"`` (a final answer), ``"tests"`` (code tests) or
    None (no gold, or a function that may read anything). A spec pickles as its
    fields (a :class:`PythonReward` as far as its function does).
    """

    weight: float
    name: str | None
    kind: ClassVar[str] = ""
    gold: ClassVar[str | None] = None

    def _compile(self) -> _core.RewardSpec | None:
        """The checked Rust spec (None: scored in Python)."""
        raise NotImplementedError


@dataclass(frozen=True)
class MathReward(RewardSpec):
    """1 when the completion's answer is mathematically equal to the gold
    (:func:`grpo_fast.verify`, same options: ``think=False`` also reads the
    reasoning), else 0; NaN when the gold itself has no usable answer (the
    dataset's fault, not the model's).

    Examples
    --------
    >>> combine(MathReward()).score_batch([r"\\boxed{0.5}", "1/3"], golds=r"\\frac12").total
    array([1., 0.], dtype=float32)
    """

    rel_tol: float = _VERIFY_DEFAULTS.rel_tol
    allow_set_relation_comp: bool = _VERIFY_DEFAULTS.allow_set_relation_comp
    rules: Sequence[str] | None = None
    max_length: int | None = None
    tail_length: int | None = None
    think: bool = _VERIFY_DEFAULTS.think
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "math"
    gold: ClassVar[str | None] = "answer"

    def _compile(self) -> _core.RewardSpec:
        return _core.RewardSpec.math(
            verify_options(
                self.rel_tol,
                self.allow_set_relation_comp,
                self.rules,
                self.max_length,
                self.tail_length,
                self.think,
            )
        )


@dataclass(frozen=True)
class ExactMatchReward(RewardSpec):
    """1 when the answer equals the gold string (both stripped).

    ``extract=True`` compares the extracted answer (parts joined by ``", "``;
    ``rules``, ``max_length``, ``tail_length`` and ``think`` as for
    :func:`grpo_fast.extract_answer`); ``extract=False`` the whole completion.
    An extracted answer that its own line takes back earns 0, as for
    :class:`ChoiceReward` (``not Paris``, ``Paris, or maybe London``,
    ``Paris?``).

    Examples
    --------
    >>> combine(ExactMatchReward()).score_batch(["the answer is Paris."], golds="paris").total
    array([1.], dtype=float32)
    """

    extract: bool = True
    case_sensitive: bool = False
    rules: Sequence[str] | None = None
    max_length: int | None = None
    tail_length: int | None = None
    think: bool = _EXTRACT_DEFAULTS.think
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "exact"
    gold: ClassVar[str | None] = "answer"

    def _compile(self) -> _core.RewardSpec:
        opts = extract_options(self.rules, self.max_length, self.tail_length, self.think)
        return _core.RewardSpec.exact(bool(self.case_sensitive), opts if self.extract else None)


@dataclass(frozen=True)
class ChoiceReward(RewardSpec):
    """1 when the completion's choice letter (``C``, ``(C)``, ``\\text{(C)}``,
    ``C. text``; case ignored) equals the gold's; NaN for a gold without one.
    The extraction options are :func:`grpo_fast.extract_answer`'s.

    A letter its own line takes back earns 0: a negation or hedge before it
    (``not C``, ``maybe C``), a question mark or an alternative after it
    (``C?``, ``C or D``, ``C, or maybe D``, ``B/D``), or another letter listed
    with it (``A and C``, ``(B) and (D)``, ``C, D``). Prose that only goes on
    (``(C) 4.2 m``, ``C. Options A and B are wrong.``) does not.

    Examples
    --------
    >>> combine(ChoiceReward()).score_batch(["The answer is (b).", "A"], golds="B").total
    array([1., 0.], dtype=float32)
    """

    rules: Sequence[str] | None = None
    max_length: int | None = None
    tail_length: int | None = None
    think: bool = _EXTRACT_DEFAULTS.think
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "choice"
    gold: ClassVar[str | None] = "answer"

    def _compile(self) -> _core.RewardSpec:
        return _core.RewardSpec.choice(
            extract_options(self.rules, self.max_length, self.tail_length, self.think)
        )


@dataclass(frozen=True)
class FormatReward(RewardSpec):
    """1 when ``pattern`` matches the completion (Rust ``regex`` syntax,
    linear-time matching; anchor with ``^…$`` for a full match). ``dot_all``
    lets ``.`` match newlines, as TRL's format reward does with ``re.DOTALL``.

    Examples
    --------
    >>> fmt = FormatReward(r"^<think>.*?</think>\\s*<answer>.*?</answer>$")
    >>> combine(fmt).score_batch(["<think>a\\nb</think><answer>1</answer>", "1"]).total
    array([1., 0.], dtype=float32)
    """

    pattern: str
    dot_all: bool = True
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "format"

    def _compile(self) -> _core.RewardSpec:
        return _core.RewardSpec.format(self.pattern, bool(self.dot_all))


@dataclass(frozen=True)
class OverlongReward(RewardSpec):
    """DAPO's soft overlong punishment of the token length ``L`` (Yu et al.
    2025): 0 if ``L <= max_length - cache_length``, ``((max_length -
    cache_length) - L) / cache_length`` up to ``max_length``, -1 beyond.
    Needs ``lengths`` in :meth:`Rewards.score_batch`.

    Examples
    --------
    >>> combine(OverlongReward(20, 4)).score_batch(["a", "b", "c"], lengths=[16, 18, 30]).total
    array([ 0. , -0.5, -1. ], dtype=float32)
    """

    max_length: int
    cache_length: int
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "overlong"

    def _compile(self) -> _core.RewardSpec:
        return _core.RewardSpec.overlong(self.max_length, self.cache_length)


@dataclass(frozen=True)
class CosineReward(RewardSpec):
    """Correctness scaled by the token length ``L`` on a cosine schedule (Yeo
    et al. 2025, "Demystifying Long Chain-of-Thought Reasoning", Appendix C.1;
    open-r1's and TRL's ``get_cosine_scaled_reward``).

    With ``p = min(L / max_length, 1)`` the reward is ``short + (long - short)
    * (1 - cos(pi * p)) / 2``: a right answer goes from ``max_value_correct``
    (``L = 0``) down to ``min_value_correct`` (``L >= max_length``), a wrong
    one from ``min_value_wrong`` up to ``max_value_wrong``, so a short right
    answer earns most and a short wrong one is punished most. Correctness is
    :class:`MathReward`'s (same options); NaN when the gold has no usable
    answer. Needs ``lengths`` (tokens) in :meth:`Rewards.score_batch`.
    Lengths are clamped at ``max_length`` as TRL does (open-r1 lets the
    cosine climb back beyond it).

    Examples
    --------
    >>> s = combine(CosineReward(100)).score_batch(["4", "5"], golds="4", lengths=[50, 50])
    >>> s.total.round(3).tolist()
    [0.75, -0.75]
    """

    max_length: int
    min_value_wrong: float = -1.0
    max_value_wrong: float = -0.5
    min_value_correct: float = 0.5
    max_value_correct: float = 1.0
    rel_tol: float = _VERIFY_DEFAULTS.rel_tol
    allow_set_relation_comp: bool = _VERIFY_DEFAULTS.allow_set_relation_comp
    rules: Sequence[str] | None = None
    think: bool = _VERIFY_DEFAULTS.think
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "cosine"
    gold: ClassVar[str | None] = "answer"

    def _compile(self) -> _core.RewardSpec:
        opts = verify_options(
            self.rel_tol, self.allow_set_relation_comp, self.rules, None, None, self.think
        )
        return _core.RewardSpec.cosine(
            opts,
            self.max_length,
            self.min_value_wrong,
            self.max_value_wrong,
            self.min_value_correct,
            self.max_value_correct,
        )


@dataclass(frozen=True)
class RepetitionReward(RewardSpec):
    """The n-gram repetition penalty (Yeo et al. 2025, Appendix C.2; open-r1's
    ``get_repetition_penalty_reward``): ``max_penalty * (1 - unique / total)``
    over the n-grams of the completion's lower-cased whitespace-separated
    words; 0 for fewer than ``ngram_size`` words. ``max_penalty <= 0``.

    Examples
    --------
    >>> combine(RepetitionReward(2)).score_batch(["a b c d", "go go go go go"]).total
    array([ 0.  , -0.75], dtype=float32)
    """

    ngram_size: int = 3
    max_penalty: float = -1.0
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "repetition"

    def _compile(self) -> _core.RewardSpec:
        return _core.RewardSpec.repetition(self.ngram_size, self.max_penalty)


@dataclass(frozen=True)
class PythonReward(RewardSpec):
    """Your own reward, called from Python once per batch as
    ``fn(completions, golds, lengths)`` (lists of str, of str or None, and an
    int64 array or None); it returns one float (or None: unscorable) per item.

    Examples
    --------
    >>> short = PythonReward(lambda c, g, l: [float(len(x) < 5) for x in c], name="short")
    >>> combine(short).score_batch(["hi", "hello world"]).total
    array([1., 0.], dtype=float32)
    """

    fn: Callable[[list[str], list[str | None], np.ndarray | None], Sequence[float | None]]
    weight: float = 1.0
    name: str | None = None
    kind: ClassVar[str] = "python"

    def _compile(self) -> None:
        if not callable(self.fn):
            raise InvalidInputError(f"fn must be callable, not {type(self.fn).__name__}")
        return None


@dataclass(frozen=True)
class CodeReward(PythonReward):
    """Run the completion's code against its tests in the sandbox
    (:func:`grpo_fast.verify_code`); the gold of each item is its tests (a
    dict or its JSON: stdin/stdout, function-call or assert format).

    The reward is the fraction of tests passed, or with ``all_or_nothing``
    1.0 only when every test passes. An item without tests (gold None) is
    unscorable (NaN). ``limits`` bounds every run (:class:`grpo_fast.sandbox.Limits`).

    Examples
    --------
    >>> tests = '{"fn_name": "sq", "inputs": [[2], [3]], "outputs": [4, 9]}'
    >>> r = combine(CodeReward())
    >>> code = "```python\\ndef sq(x):\\n    return x * x\\n```"
    >>> r.score_batch([code, "no code"], [tests, tests]).total
    array([1., 0.], dtype=float32)
    """

    fn: Any = None
    weight: float = 1.0
    name: str | None = None
    all_or_nothing: bool = False
    language: str = "python"
    limits: Any = None
    workers: int | None = None
    kind: ClassVar[str] = "code"
    gold: ClassVar[str | None] = "tests"

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "fn", _CodeScorer(self.all_or_nothing, self.language, self.limits, self.workers)
        )


@dataclass(frozen=True)
class _CodeScorer:
    all_or_nothing: bool
    language: str
    limits: Any
    workers: int | None

    def __call__(
        self, completions: list[str], golds: list[Any], lengths: Any = None
    ) -> list[float | None]:
        from grpo_fast.code import verify_code_batch

        idx = [i for i, g in enumerate(golds) if g is not None]
        verdicts = verify_code_batch(
            [completions[i] for i in idx],
            [golds[i] for i in idx],
            language=self.language,
            limits=self.limits,
            workers=self.workers,
        )
        out: list[float | None] = [None] * len(completions)
        for i, v in zip(idx, verdicts, strict=True):
            out[i] = float(v.ok) if self.all_or_nothing else v.fraction
        return out


def overlong_penalty(length: int, max_length: int, cache_length: int) -> float:
    """DAPO's soft overlong punishment of one length (see :class:`OverlongReward`).

    Examples
    --------
    >>> overlong_penalty(18, 20, 4)
    -0.5
    """
    expected = max_length - cache_length
    if length <= expected:
        return 0.0
    if length <= max_length:
        return (expected - length) / cache_length
    return -1.0


@dataclass(frozen=True)
class RewardScores:
    """The rewards of a batch.

    Attributes
    ----------
    total : numpy.ndarray
        float32 ``[N]``: the weighted sum of the columns (NaN where any
        weighted column is NaN).
    columns : dict of str to numpy.ndarray
        float32 ``[N]`` per spec, unweighted, by spec name.
    """

    total: npt.NDArray[np.float32]
    columns: dict[str, npt.NDArray[np.float32]] = field(default_factory=dict)


class Rewards:
    """Several weighted reward specs, compiled once; see :func:`combine`.

    It pickles and deep-copies as its specs (compiled again on loading), so
    it can be sent to worker processes; a :class:`PythonReward` needs a
    picklable function (a module-level one, not a lambda).
    """

    def __init__(self, specs: Sequence[RewardSpec]) -> None:
        specs = list(specs)
        if not specs:
            raise InvalidInputError("combine needs at least one reward spec")
        for i, spec in enumerate(specs):
            if not isinstance(spec, RewardSpec):
                raise InvalidInputError(
                    f"specs[{i}] is {type(spec).__name__}; expected a reward spec "
                    "(MathReward, FormatReward, ...)"
                )
            w = spec.weight
            if isinstance(w, bool) or not isinstance(w, (int, float)) or not math.isfinite(w):
                raise InvalidInputError(f"specs[{i}].weight must be a finite number, not {w!r}")
        self.specs: tuple[RewardSpec, ...] = tuple(specs)
        self.names: tuple[str, ...] = unique_names(s.name or s.kind for s in specs)
        compiled = [s._compile() for s in specs]
        self._rust = [i for i, c in enumerate(compiled) if c is not None]
        self._set = _core.RewardSet(
            [(c, float(s.weight)) for s, c in zip(specs, compiled, strict=True) if c is not None]
        )

    def __reduce__(self) -> tuple[Any, ...]:
        # The compiled Rust set is rebuilt from the specs on unpickling.
        return (Rewards, (self.specs,))

    def __repr__(self) -> str:
        return f"Rewards({', '.join(self.names)})"

    def score_batch(
        self,
        completions: Sequence[str],
        golds: str | Sequence[str | None] | None = None,
        lengths: Sequence[int] | npt.ArrayLike | None = None,
        truncated: bool | Sequence[bool] | npt.ArrayLike | None = None,
        prompts: Sequence[Any] | None = None,
    ) -> RewardScores:
        """Score a batch.

        Parameters
        ----------
        completions : sequence of str
            The model's texts, ``N`` of them.
        golds : str, sequence of (str or None), or None
            One gold for every completion, or one each (None: no gold; specs
            that need one give NaN).
        lengths : sequence of int, optional
            Token lengths, required by :class:`OverlongReward`.
        truncated : bool or sequence of bool, optional
            Which completions were cut off at the token limit: the answer
            specs read those only through their answer markers, never the
            last number of unfinished reasoning (see :func:`grpo_fast.verify`).
        prompts : sequence of (str or chat messages), optional
            The prompt of each completion: the math specs then refuse an
            arithmetic expression copied from it (see :func:`grpo_fast.verify`).

        Returns
        -------
        RewardScores
        """
        texts = as_list("completions", completions)
        if golds is None or isinstance(golds, str):
            gold_arg: Any = golds
            gold_list: list[str | None] = [golds] * len(texts)
        else:
            gold_arg = gold_list = as_list("golds", golds)
        lens = None if lengths is None else _lengths(lengths)
        prompt_texts = None
        if prompts is not None:
            prompt_texts = [prompt_text(p) or "" for p in as_list("prompts", prompts)]
        total, grid = self._set.score(texts, gold_arg, lens, truncated, prompt_texts)
        columns = {self.names[i]: grid[j] for j, i in enumerate(self._rust)}
        for i, spec in enumerate(self.specs):
            if isinstance(spec, PythonReward):
                col = _call_python(spec, self.names[i], texts, gold_list, lens)
                if spec.weight != 0:
                    total = total + np.float32(spec.weight) * col
                columns[self.names[i]] = col
        return RewardScores(total=total.astype(np.float32, copy=False), columns=columns)


def _lengths(lengths: Any) -> npt.NDArray[np.int64]:
    arr = np.asarray(lengths)
    if arr.ndim != 1:
        raise InvalidInputError(f"lengths must be 1-D, got shape {arr.shape}")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise InvalidInputError(f"lengths must be integer token counts, got dtype {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def _call_python(
    spec: PythonReward,
    name: str,
    texts: list[str],
    golds: list[str | None],
    lengths: npt.NDArray[np.int64] | None,
) -> npt.NDArray[np.float32]:
    return call_reward(
        spec.fn, f"reward {name!r}", len(texts), texts, golds, lengths, samples=texts
    )


def call_reward(
    fn: Callable[..., Any],
    what: str,
    n: int,
    *args: Any,
    per: tuple[str, str] = ("values", "completions"),
    samples: Sequence[str] | None = None,
    **kwargs: Any,
) -> npt.NDArray[np.float32]:
    """The one call of a reward function written in Python, and the checks of what it
    returns: ``fn(*args, **kwargs)`` gives ``n`` numbers (None: unscorable, NaN), float32.

    Every Python reward goes through here: :class:`PythonReward`, TRL-style
    functions (:class:`grpo_fast.run_rewards.RunRewards`) and step scorers
    (:class:`grpo_fast.steps.ProcessReward`). ``what`` names it in errors, ``per``
    what it returned and what for ("values" for "completions"). With
    ``samples`` (the ``n`` completions), a function that raises is an
    :class:`InvalidInputError` naming the first sample it raises on, found by
    calling it on one sample at a time (each argument of ``n`` items cut to
    that sample's), and its exception.

    Examples
    --------
    >>> call_reward(lambda c: [1, None], "reward 'f'", 2, ["a", "b"])
    array([ 1., nan], dtype=float32)
    >>> call_reward(lambda c: [1 / len(x) for x in c], "reward 'f'", 2, ["a", ""],
    ...             samples=["a", ""])
    Traceback (most recent call last):
    ...
    grpo_fast.errors.InvalidInputError: reward 'f' raised on sample 1 (completion ''): ZeroDivisionError: division by zero
    """  # noqa: E501
    try:
        out = list(fn(*args, **kwargs))
    except Exception as e:
        if samples is None:
            raise
        raise InvalidInputError(_raised(fn, what, e, samples, args, kwargs)) from e
    if len(out) != n:
        raise InvalidInputError(f"{what} returned {len(out)} {per[0]} for {n} {per[1]}")
    try:
        return np.array([np.nan if v is None else float(v) for v in out], dtype=np.float32)
    except (TypeError, ValueError) as e:
        raise InvalidInputError(f"{what} returned a non-number: {e}") from None


def _raised(
    fn: Callable[..., Any],
    what: str,
    error: Exception,
    samples: Sequence[str],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
) -> str:
    """What to say when ``fn`` raised ``error`` on a batch: the first sample it raises on
    alone, and that exception."""
    n = len(samples)

    def one(x: Any, i: int) -> Any:
        per_sample = isinstance(x, list | tuple | np.ndarray) and len(x) == n
        return x[i : i + 1] if per_sample else x

    for i, text in enumerate(samples):
        try:
            fn(*(one(a, i) for a in args), **{k: one(v, i) for k, v in kwargs.items()})
        except Exception as e:  # noqa: BLE001 (the user's code: any exception)
            return f"{what} raised on sample {i} (completion {text[:60]!r}): {_exception(e)}"
    return f"{what} raised on the batch: {_exception(error)}"


def _exception(e: BaseException) -> str:
    return f"{type(e).__name__}: {e}"


def trl_columns(rows: Sequence[Mapping[str, Any]]) -> dict[str, list[Any]]:
    """The keyword arguments TRL's ``GRPOTrainer`` gives a reward function besides the
    completions: every dataset column but ``prompt``, and ``prompts``.

    Examples
    --------
    >>> trl_columns([{"prompt": "1+1=", "answer": "2"}])
    {'answer': ['2'], 'prompts': ['1+1=']}
    """
    columns = {k: [r.get(k) for r in rows] for k in rows[0] if k != "prompt"} if rows else {}
    columns["prompts"] = [r.get("prompt") for r in rows]
    return columns


def unique_names(bases: Iterable[str]) -> tuple[str, ...]:
    """Column names, in order: a repeated name gets ``_2``, ``_3``, ...

    Examples
    --------
    >>> unique_names(["math", "format", "math"])
    ('math', 'format', 'math_2')
    """
    names: list[str] = []
    for base in bases:
        name, k = base, 1
        while name in names:
            k += 1
            name = f"{base}_{k}"
        names.append(name)
    return tuple(names)


def combine(*specs: RewardSpec | Sequence[RewardSpec]) -> Rewards:
    """Compile reward specs (or one list of them) into one :class:`Rewards`.

    Examples
    --------
    >>> r = combine(ExactMatchReward(), OverlongReward(8, 4, weight=0.5))
    >>> r.score_batch(["Answer: yes"], golds="yes", lengths=[6]).total
    array([0.75], dtype=float32)
    """
    if len(specs) == 1 and isinstance(specs[0], Sequence):
        return Rewards(specs[0])
    return Rewards(specs)  # type: ignore[arg-type]


def score_batch(
    specs: RewardSpec | Sequence[RewardSpec] | Rewards,
    completions: Sequence[str],
    golds: str | Sequence[str | None] | None = None,
    lengths: Sequence[int] | npt.ArrayLike | None = None,
    truncated: bool | Sequence[bool] | npt.ArrayLike | None = None,
    prompts: Sequence[Any] | None = None,
) -> RewardScores:
    """One-shot :func:`combine` + :meth:`Rewards.score_batch` (prefer
    compiling once with :func:`combine` in a training loop).

    Examples
    --------
    >>> score_batch(FormatReward(r"^\\d+$"), ["12", "x"]).total
    array([1., 0.], dtype=float32)
    """
    if isinstance(specs, Rewards):
        rewards = specs
    elif isinstance(specs, RewardSpec):
        rewards = Rewards([specs])
    else:
        rewards = Rewards(specs)
    return rewards.score_batch(completions, golds, lengths, truncated, prompts)
