"""Process supervision: a deterministic step checker, and its steps on the sampled tokens.

:func:`check_steps` splits each completion into steps (lines by default;
blank-line paragraphs, ``Step k`` markers or a regex of your own) and decides,
in Rust with the GIL released, every equality between constants a step
claims, with the verifier's exact arithmetic: a step is :data:`CORRECT` (1),
:data:`WRONG` (0) or :data:`UNCHECKED` (-1, nothing to decide). Claims are
found inside prose (``so 37+45=82, then 82+19=101`` makes two); a side that
the text continues (``x + 2 = 7``, ``3 x 4 = 12``, ``half of 80 = 40``) is no
claim. The rules are in ``rust/core/src/steps.rs``.

:func:`token_ends` maps the steps' character spans onto the sampled token ids
(from the decoded tokens' lengths, for any tokenizer), and
:func:`grpo_fast.compute_process_advantages` turns step rewards into token
advantages (DeepSeekMath's process supervision). :class:`ProcessReward` is
the three together, as the trainer runs them (``--process-reward arithmetic``).

Examples
--------
>>> s = check_steps(["so 37+45=82, then 82+19=101\\n#### 101", "3 * 17 = 41"])
>>> s.labels.tolist(), s.offsets.tolist()
([1, -1, 0], [0, 2, 3])
>>> s.spans(0)
[(0, 27, 1), (28, 36, -1)]
"""

from __future__ import annotations

import importlib
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from grpo_fast import _core
from grpo_fast.errors import InvalidInputError
from grpo_fast.names import STEP_SPLITS
from grpo_fast.rewards import call_reward, trl_columns
from grpo_fast.verify import as_list

__all__ = [
    "CORRECT",
    "PROCESS_REWARDS",
    "STEP_SPLITS",
    "UNCHECKED",
    "WRONG",
    "ProcessReward",
    "Steps",
    "check_steps",
    "token_char_ends",
    "token_ends",
    "verified_pick",
]

#: Every decidable claim of the step holds.
CORRECT: int = _core.STEP_CORRECT
#: A claim of the step is false.
WRONG: int = _core.STEP_WRONG
#: The step makes no claim that can be decided.
UNCHECKED: int = _core.STEP_UNCHECKED

_DEFAULT_OPTIONS = _core.StepOptions()


@dataclass(frozen=True)
class Steps:
    """The steps of a batch of completions, as compressed sparse rows.

    Completion ``i``'s steps are ``offsets[i]:offsets[i + 1]`` of the flat
    arrays. Spans are ``str`` indices (code points): ``text[starts[k]:ends[k]]``
    is step ``k``, without surrounding whitespace.

    Attributes
    ----------
    offsets : int64 array [N + 1]
    starts, ends : int64 arrays [S]
    labels : int8 arrays [S]
        :data:`CORRECT`, :data:`WRONG` or :data:`UNCHECKED`.
    """

    offsets: npt.NDArray[np.int64]
    starts: npt.NDArray[np.int64]
    ends: npt.NDArray[np.int64]
    labels: npt.NDArray[np.int8]

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def spans(self, i: int) -> list[tuple[int, int, int]]:
        """``(start, end, label)`` of each step of completion ``i``."""
        if not -len(self) <= i < len(self):
            raise IndexError(f"completion {i} of {len(self)}")
        i %= len(self)
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return list(
            zip(
                self.starts[lo:hi].tolist(),
                self.ends[lo:hi].tolist(),
                self.labels[lo:hi].tolist(),
                strict=True,
            )
        )

    @property
    def num_steps(self) -> npt.NDArray[np.int64]:
        """Steps per completion, int64 [N]."""
        return np.diff(self.offsets)

    @property
    def completion_index(self) -> npt.NDArray[np.int64]:
        """The completion of each step, int64 [S]."""
        return np.repeat(np.arange(len(self), dtype=np.int64), self.num_steps)

    @property
    def has_wrong(self) -> npt.NDArray[np.bool_]:
        """Whether each completion has a wrong step, bool [N]."""
        wrong = np.zeros(len(self), bool)
        wrong[self.completion_index[self.labels == WRONG]] = True
        return wrong

    @property
    def first_error(self) -> npt.NDArray[np.int64]:
        """Index (within its completion) of each completion's first wrong step; -1 if none."""
        out = np.full(len(self), -1, np.int64)
        k = np.flatnonzero(self.labels == WRONG)
        comp = self.completion_index[k]
        first = np.unique(comp, return_index=True)[1]  # steps are in order: first per completion
        out[comp[first]] = k[first] - self.offsets[comp[first]]
        return out

    def rewards(
        self, correct: float = 1.0, wrong: float = 0.0, unchecked: float | None = None
    ) -> npt.NDArray[np.float32]:
        """One reward per step, float32 [S]; ``unchecked=None`` gives NaN (a neutral step).

        Examples
        --------
        >>> check_steps(["1+1=2\\nhello\\n2+2=5"]).rewards().tolist()
        [1.0, nan, 0.0]
        """
        table = np.array([wrong, correct, np.nan if unchecked is None else unchecked], np.float32)
        # Labels 0, 1, -1 index the table directly (-1 is its last entry).
        return table[self.labels.astype(np.int64)]

    def metrics(self) -> dict[str, float]:
        """``steps/per_completion``, ``steps/frac_wrong`` (of all steps),
        ``steps/frac_unchecked``, ``steps/frac_with_error`` (of completions) and
        ``steps/first_error`` (mean index of the first wrong step, NaN when none).
        """
        return _metrics(self.counts())

    def counts(self) -> npt.NDArray[np.float64]:
        """What :meth:`metrics` is made of, float64 [6]: completions, steps, wrong
        steps, unchecked steps, completions with a wrong step, and the sum of their
        first wrong steps' indices. Counts of several batches add up."""
        first = self.first_error
        has = first >= 0
        return np.array(
            [
                len(self),
                len(self.labels),
                np.sum(self.labels == WRONG),
                np.sum(self.labels == UNCHECKED),
                np.sum(has),
                np.sum(first[has]),
            ],
            np.float64,
        )


def _metrics(counts: npt.NDArray[np.float64]) -> dict[str, float]:
    n, s, wrong, unchecked, with_error, first = counts.tolist()
    nan = float("nan")
    return {
        "steps/per_completion": s / n if n else nan,
        "steps/frac_wrong": wrong / s if s else nan,
        "steps/frac_unchecked": unchecked / s if s else nan,
        "steps/frac_with_error": with_error / n if n else nan,
        "steps/first_error": first / with_error if with_error else nan,
    }


def _options(split: str, pattern: str | None, rel_tol: float | None, max_length: int | None) -> Any:
    if split == "lines" and pattern is None and rel_tol is None and max_length is None:
        return _DEFAULT_OPTIONS
    return _core.StepOptions(split, pattern, rel_tol, max_length)


def check_steps(
    completions: Sequence[str],
    split: str = "lines",
    *,
    pattern: str | None = None,
    rel_tol: float | None = None,
    max_length: int | None = None,
) -> Steps:
    """Split completions into steps and check the arithmetic each step claims.

    Parameters
    ----------
    completions : list of str
    split : {"lines", "paragraphs", "markers", "regex"}
        (:data:`grpo_fast.names.STEP_SPLITS`) Each non-blank line; blocks
        between blank lines; a step from each ``Step k`` marker (``Step 2:``,
        ``**Step 2.**``, ``## Step 2``) to the next, text before the first
        being a step of its own; or the pieces between matches of ``pattern``
        (as ``re.split``; Rust ``regex`` syntax, linear time).
    pattern : str, optional
        The separator regex for ``split="regex"`` (only then); it must not
        match the empty string.
    rel_tol : float, optional
        The verifier's tolerance for a decimal against a value it cannot write
        exactly (default 1e-6); a decimal also holds when it is the value
        rounded or truncated at its last digit with at least 4 significant
        digits (``1/3 = 0.3333`` holds, ``1/3 = 0.33`` does not).
    max_length : int, optional
        Bytes of UTF-8 (default 256 KiB); a longer completion has no steps, as
        has one that is not valid Unicode.

    Returns
    -------
    Steps
        Spans and labels as flat arrays with offsets (CSR).

    Every claim is bounded (length, tokens, nesting, digits and work of the
    math engine, 256 claims per completion): a power tower or a huge number is
    left unchecked within microseconds, never a hang or a crash.

    Examples
    --------
    >>> s = check_steps([r"\\frac{3}{4} + \\frac18 = \\frac78", "x + 2 = 7", "1/3 = 0.33"])
    >>> s.labels.tolist()
    [1, -1, 0]
    >>> s = check_steps(["37+45=82, 82+19=100 #### 100"], "regex", pattern=r",\\s*")
    >>> s.spans(0)
    [(0, 8, 1), (10, 28, 0)]
    """
    offsets, starts, ends, labels = _core.check_steps(
        as_list("completions", completions), _options(split, pattern, rel_tol, max_length)
    )
    return Steps(offsets, starts, ends, labels)


# ---------------------------------------------------------------------- spans -> tokens
def _decode(tokenizer: Any, ids: Sequence[int]) -> str:
    return str(tokenizer.decode(list(ids), skip_special_tokens=True))


def token_char_ends(completion_ids: Sequence[int], tokenizer: Any) -> npt.NDArray[np.int64]:
    """Characters of the decoded text up to and including each token, int64 [T].

    Read from the decoded tokens themselves, not by tokenising the text again:
    each token's text when the pieces add up to the whole decoding (character
    and byte-level BPE tokenizers), otherwise incremental decoding (vLLM's),
    which gives a token that ends a multi-byte character that character and
    the tokens before it none.

    Examples
    --------
    >>> from transformers import AutoTokenizer
    >>> from grpo_fast.train.data import DATA_DIR
    >>> tok = AutoTokenizer.from_pretrained(DATA_DIR / "tiny_adder")  # one token per character
    >>> token_char_ends(tok("12+34").input_ids + [tok.eos_token_id], tok).tolist()
    [1, 2, 3, 4, 5, 5]
    """
    ids = list(completion_ids)
    if not ids:
        return np.zeros(0, np.int64)
    whole = _decode(tokenizer, ids)
    pieces = tokenizer.batch_decode([[t] for t in ids], skip_special_tokens=True)
    if "".join(pieces) == whole and "\ufffd" not in whole:
        return np.cumsum([len(p) for p in pieces], dtype=np.int64)
    ends = np.zeros(len(ids), np.int64)
    total, prefix, read = 0, 0, 0
    for k in range(1, len(ids) + 1):
        before = _decode(tokenizer, ids[prefix:read])
        now = _decode(tokenizer, ids[prefix:k])
        if len(now) > len(before) and not now.endswith("\ufffd"):
            total += len(now) - len(before)
            prefix, read = read, k
        ends[k - 1] = total
    return np.minimum(ends, len(whole))


def token_ends(
    steps: Steps, completion_ids: Sequence[Sequence[int]], tokenizer: Any
) -> npt.NDArray[np.int64]:
    """The token at which each step ends (the one holding its last character), int64 [S].

    ``completion_ids[i]`` are the sampled ids whose decoding (special tokens
    skipped) is the text ``steps`` were checked on. A step ending past the
    decoded text (a text that was not this decoding) ends at the last token.

    Examples
    --------
    >>> from transformers import AutoTokenizer
    >>> from grpo_fast.train.data import DATA_DIR
    >>> tok = AutoTokenizer.from_pretrained(DATA_DIR / "tiny_chain")  # one token per character
    >>> text = "37+45=82, 82+19=101"
    >>> s = check_steps([text], "regex", pattern=r",\\s*")
    >>> s.spans(0)
    [(0, 8, 1), (10, 19, 1)]
    >>> token_ends(s, [tok(text).input_ids + [tok.eos_token_id]], tok).tolist()
    [7, 18]
    """
    if len(completion_ids) != len(steps):
        raise InvalidInputError(
            f"completion_ids has {len(completion_ids)} rows but steps has {len(steps)} completions"
        )
    out = np.zeros(len(steps.ends), np.int64)
    for i, ids in enumerate(completion_ids):
        lo, hi = int(steps.offsets[i]), int(steps.offsets[i + 1])
        if lo == hi:
            continue
        char_ends = token_char_ends(ids, tokenizer)
        if len(char_ends) == 0:
            raise InvalidInputError(f"completion {i} has steps but no tokens")
        k = np.searchsorted(char_ends, steps.ends[lo:hi], side="left")
        out[lo:hi] = np.minimum(k, len(char_ends) - 1)
    return out


# ---------------------------------------------------------------------- the trainer's spec
#: Step scorers known by name (``--process-reward NAME``).
PROCESS_REWARDS: tuple[str, ...] = ("arithmetic",)

StepScorer = Callable[..., Sequence[float]]


@dataclass(frozen=True)
class ProcessReward:
    """Step rewards for process supervision, turned into token advantages.

    ``scorer="arithmetic"`` rewards each step by :func:`check_steps`: ``correct``
    (1) or ``wrong`` (0), and ``unchecked`` for a step with nothing to check
    (None: neutral, left out of the statistics with no contribution). Any
    other scorer is a function (or its dotted import path) called as
    ``f(completions, steps=Steps, prompts=..., **columns)`` (the dataset's
    other columns, ``answer``, ...; ``completions`` are the texts the steps'
    spans index, also for conversational prompts, which come as their
    messages) that returns one score per step
    (``len(steps.labels)`` floats, NaN or None for neutral): a process reward
    model of your own.

    The token advantages are ``outcome + weight * process``, the process part
    by :func:`grpo_fast.compute_process_advantages` (DeepSeekMath: step
    rewards normalised over each prompt's group, a token gets the sum over the
    steps ending at or after it).

    Examples
    --------
    >>> p = ProcessReward(split="regex", pattern=r",\\s*", weight=0.5)
    >>> p.step_rewards(["1+1=2, 2+2=5", "1+1=2, 2+2=4"])[1].tolist()
    [1.0, 0.0, 1.0, 1.0]
    """

    scorer: str | StepScorer = "arithmetic"
    weight: float = 1.0
    split: str = "lines"
    pattern: str | None = None
    correct: float = 1.0
    wrong: float = 0.0
    unchecked: float | None = None

    def __post_init__(self) -> None:
        if isinstance(self.scorer, str) and self.scorer not in PROCESS_REWARDS:
            if "." not in self.scorer:
                raise InvalidInputError(
                    f"unknown process reward {self.scorer!r}; expected one of "
                    f"{list(PROCESS_REWARDS)} or a dotted import path to a step scorer"
                )
        elif not isinstance(self.scorer, str) and not callable(self.scorer):
            raise InvalidInputError(
                f"scorer must be a name or a function, not {type(self.scorer).__name__}"
            )
        values = {"weight": self.weight, "correct": self.correct, "wrong": self.wrong}
        if self.unchecked is not None:
            values["unchecked"] = self.unchecked
        for name, v in values.items():
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
                raise InvalidInputError(f"{name} must be a finite number, got {v!r}")
        _options(self.split, self.pattern, None, None)  # checks split and pattern
        self._scorer()  # a dotted path that does not import fails here, at start-up

    def _scorer(self) -> StepScorer | None:
        if not isinstance(self.scorer, str):
            return self.scorer
        if self.scorer in PROCESS_REWARDS:
            return None
        module, _, attr = self.scorer.rpartition(".")
        try:
            fn = getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as e:
            raise InvalidInputError(
                f"process reward {self.scorer!r} cannot be imported: {e}"
            ) from None
        if not callable(fn):
            raise InvalidInputError(f"process reward {self.scorer!r} is not a function")
        return fn  # type: ignore[no-any-return]

    def step_rewards(
        self, completions: Sequence[str], rows: Sequence[Mapping[str, Any]] | None = None
    ) -> tuple[Steps, npt.NDArray[np.float32]]:
        """The steps of ``completions`` and one reward per step (NaN: neutral)."""
        steps = check_steps(completions, self.split, pattern=self.pattern)
        fn = self._scorer()
        if fn is None:
            return steps, steps.rewards(self.correct, self.wrong, self.unchecked)
        columns = trl_columns(rows) if rows else {}  # as the trainer calls TRL-style rewards
        scores = call_reward(
            fn,
            f"process reward {self.scorer!r}",
            len(steps.labels),
            list(completions),
            steps=steps,
            per=("scores", "steps"),
            **columns,
        )
        return steps, scores

    def token_advantages(
        self,
        completions: Sequence[str],
        completion_ids: Sequence[Sequence[int]],
        tokenizer: Any,
        group_ids: Any,
        outcome: Any = None,
        rows: Sequence[Mapping[str, Any]] | None = None,
        *,
        scale: str = "group",
        dist: Any = None,
    ) -> tuple[npt.NDArray[np.float32], dict[str, float]]:
        """``[N, T]`` advantages (``T`` the longest completion) and the step metrics.

        ``outcome`` ([N], the outcome advantages) is added on each row's tokens;
        ``scale`` normalises the step rewards as
        :func:`grpo_fast.compute_process_advantages` does.

        ``dist`` (a :class:`grpo_fast.train.distributed.Distributed`, torchrun's
        process group) makes the call collective: each rank passes its own
        completions, with group ids that are unique across ranks; the steps of
        every rank are gathered, the advantages computed over the whole step
        (``scale="batch"``: one std over every rank's steps), and each rank gets
        its own rows back, with the whole step's metrics.
        """
        from grpo_fast.advantages import compute_process_advantages

        steps, rewards = self.step_rewards(completions, rows)
        lengths = np.array([len(c) for c in completion_ids], np.int64)
        part = {
            "rewards": rewards,
            "ends": token_ends(steps, completion_ids, tokenizer),
            "num_steps": steps.num_steps,
            "lengths": lengths,
            "groups": np.asarray(group_ids),
            "outcome": None if outcome is None else np.asarray(outcome, np.float64),
            "counts": steps.counts(),
        }
        many = dist is not None and dist.enabled
        parts = dist.gather_lists([part]) if many else [part]
        start = sum(len(q["lengths"]) for q in parts[: dist.rank if many else 0])
        cat = lambda key: np.concatenate([q[key] for q in parts])  # noqa: E731
        offsets = np.concatenate([[0], np.cumsum(cat("num_steps"))])
        out = compute_process_advantages(
            cat("rewards"),
            cat("ends"),
            offsets,
            cat("groups"),
            cat("lengths"),
            outcome=None if outcome is None else cat("outcome"),
            process_weight=self.weight,
            scale=scale,
        )
        width = int(lengths.max()) if lengths.size else 0
        mine = np.ascontiguousarray(out.advantages[start : start + len(lengths), :width])
        return mine, _metrics(sum(q["counts"] for q in parts))


# ---------------------------------------------------------------------- test time
def verified_pick(answers: Sequence[str], has_wrong: Sequence[bool]) -> int:
    """Verified best-of-n: the sample to answer with, among one prompt's ``n``.

    Samples with no wrong step (``has_wrong``, from :attr:`Steps.has_wrong`)
    are preferred: the pick is the majority answer among them (among all
    samples when every one has a wrong step), the first sample giving it. No
    gold is needed.

    Examples
    --------
    >>> s = check_steps(["2+2=5 #### 5", "2+2=5 #### 5", "2+2=4 #### 4"])
    >>> verified_pick(["5", "5", "4"], s.has_wrong)
    2
    """
    wrong = np.asarray(has_wrong, bool)
    if len(answers) != len(wrong):
        raise InvalidInputError(f"{len(answers)} answers but {len(wrong)} has_wrong flags")
    if not len(answers):
        raise InvalidInputError("no samples to pick from")
    pool = np.flatnonzero(~wrong) if not wrong.all() else np.arange(len(answers))
    top, _ = Counter(answers[i] for i in pool).most_common(1)[0]
    return int(next(i for i in pool if answers[i] == top))
