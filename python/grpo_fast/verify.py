"""Find the final answer of a completion and decide whether it equals the gold.

Extraction, parsing and comparison run in Rust; a batch (:func:`verify_batch`)
runs across the core's threads with the GIL released. What counts as the
answer and as a match is the project's documented semantics (``\\boxed{}``
first, several boxes form one collection answer, a bare gold is the answer
itself, exact values compare exactly, decimals within ``rel_tol``). Every
item is decided within a fixed budget: over a limit it is a non-match whose
reason says why, never a hang or a crash, and no signals are used, so the
functions work unchanged from threads, asyncio executors and forked workers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from grpo_fast import _core
from grpo_fast.errors import InvalidInputError
from grpo_fast.names import DEFAULT_RULES
from grpo_fast.names import RULES as ALL_RULES

__all__ = [
    "RULES",
    "Answer",
    "Extraction",
    "Verdict",
    "as_list",
    "extract_answer",
    "extract_options",
    "extract_gold",
    "parse",
    "verify",
    "verify_batch",
    "verify_detailed",
    "verify_options",
]

#: The extraction rules, in the default priority (defined in Rust; see
#: :mod:`grpo_fast.names`).
RULES: tuple[str, ...] = DEFAULT_RULES
_ALL_RULES = ALL_RULES

# The options objects check every value once, in Rust, and carry the core's
# defaults; the common call (every option left alone) reuses these two.
_EXTRACT_DEFAULTS = _core.ExtractOptions()
_VERIFY_DEFAULTS = _core.VerifyOptions()
# Read once: each read of an option object's field is a call into the extension.
_DEFAULT_REL_TOL = _VERIFY_DEFAULTS.rel_tol
_DEFAULT_SET_RELATION = _VERIFY_DEFAULTS.allow_set_relation_comp
_DEFAULT_THINK = _VERIFY_DEFAULTS.think


@dataclass(frozen=True)
class Extraction:
    """An answer found in a text.

    Attributes
    ----------
    parts : tuple of str
        One part per ``\\boxed{}``; a single part for every other rule.
    rule : str
        The rule that found it (``"boxed"``, ``"gsm8k"``, ..., ``"bare"`` for
        a gold without markers).
    """

    parts: tuple[str, ...]
    rule: str

    @property
    def answer(self) -> str:
        """The parts joined by ``", "``."""
        return ", ".join(self.parts)


def extract_options(
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
    think: bool = _EXTRACT_DEFAULTS.think,
) -> _core.ExtractOptions:
    """The extraction keywords shared by every public function, checked."""
    if (
        rules is None
        and max_length is None
        and tail_length is None
        and think is _EXTRACT_DEFAULTS.think
    ):
        return _EXTRACT_DEFAULTS
    return _core.ExtractOptions(rules, max_length, tail_length, think)


def verify_options(
    rel_tol: float = _VERIFY_DEFAULTS.rel_tol,
    allow_set_relation_comp: bool = _VERIFY_DEFAULTS.allow_set_relation_comp,
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
    think: bool = _VERIFY_DEFAULTS.think,
) -> _core.VerifyOptions:
    """The keywords of :func:`verify`, checked."""
    if (
        rel_tol == _VERIFY_DEFAULTS.rel_tol
        and type(rel_tol) is float
        and allow_set_relation_comp is _VERIFY_DEFAULTS.allow_set_relation_comp
        and rules is None
        and max_length is None
        and tail_length is None
        and think is _VERIFY_DEFAULTS.think
    ):
        return _VERIFY_DEFAULTS
    return _core.VerifyOptions(
        rel_tol, allow_set_relation_comp, rules, max_length, tail_length, think
    )


def as_list(name: str, value: Any) -> list[Any]:
    """A list from a sequence or a 1-D numpy array (verl hands over arrays);
    the Rust side checks that every item is a str."""
    if isinstance(value, np.ndarray):
        if value.ndim != 1:
            raise InvalidInputError(f"{name} must be 1-D, got shape {value.shape}")
        return value.tolist()
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise InvalidInputError(f"{name} must be a list of str, not {type(value).__name__}")
    return list(value)


def extract_answer(
    completion: str,
    *,
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
    think: bool = _EXTRACT_DEFAULTS.think,
) -> Extraction | None:
    """The final answer of a completion and the rule that found it.

    Parameters
    ----------
    completion : str
        The model's text.
    rules : sequence of str, optional
        Rules to try, in priority order (default :data:`RULES`): ``boxed``
        (``\\boxed{}`` / ``\\fbox{}``, nested braces, every box a part),
        ``answer_tag`` (``<answer>…</answer>``), ``final_answer`` (``The final
        answer is X``), ``gsm8k`` (``#### X``), ``answer_colon`` (``Answer: X``,
        ``**Answer:** X``), ``answer_is`` (``the answer is X``), ``bare``
        (a short one-line text without prose is itself the answer:
        ``\\frac{0}{1}``, ``x \\ge 2``), then
        ``last_value``: the latest-ending of ``bold`` (``**X**``),
        ``math_span`` (``$…$``, ``\\(…\\)``, ``\\[…\\]``), ``choice`` (``(C)``)
        and ``last_number``, within ``tail_length`` bytes of the end. Each of
        those four can also be listed on its own. For every marker but the
        box, the last occurrence counts.
    max_length : int, optional
        Longer texts (in UTF-8 bytes) are not searched and have no answer
        (default 256 KiB).
    tail_length : int, optional
        How near the end, in bytes, a ``last_value`` must end (default 500).
    think : bool
        Reasoning is not the answer (default True): when the completion closes
        a reasoning block, only the text after its last ``</think>`` is
        searched, and one that opens ``<think>`` without closing it (cut off
        mid-thought) has no answer. A text without reasoning tags is searched
        whole either way. False searches the whole text, tags and all.

    Returns
    -------
    Extraction or None
        None when no rule finds an answer. The work is linear in the length.

    Examples
    --------
    >>> extract_answer(r"so the total is \\boxed{\\frac{1}{2}}.")
    Extraction(parts=('\\\\frac{1}{2}',), rule='boxed')
    >>> extract_answer("She pays 3 * 4 = 12 dollars.\\n#### 12").rule
    'gsm8k'
    >>> extract_answer("no value here") is None
    True
    >>> extract_answer(r"<think>maybe \\boxed{3}</think> so \\boxed{5}").parts
    ('5',)
    >>> extract_answer(r"<think>maybe \\boxed{3}", think=False).parts
    ('3',)
    """
    found = _core.extract_answer(completion, extract_options(rules, max_length, tail_length, think))
    return None if found is None else Extraction(tuple(found[0]), found[1])


def extract_gold(
    gold: str,
    *,
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
) -> Extraction | None:
    """The answer of a gold: marker rules as :func:`extract_answer`, and a
    gold without markers is the answer itself (rule ``"bare"``). A gold has
    no reasoning block: its ``<think>`` tags are not looked for.

    Examples
    --------
    >>> extract_gold(r"\\frac34")
    Extraction(parts=('\\\\frac34',), rule='bare')
    >>> extract_gold("Half of 144 is 72.\\n#### 72").parts
    ('72',)
    """
    found = _core.extract_gold(gold, extract_options(rules, max_length, tail_length))
    return None if found is None else Extraction(tuple(found[0]), found[1])


@dataclass(frozen=True)
class Answer:
    """A parsed answer (see :func:`parse`).

    Attributes
    ----------
    canonical : str
        Its canonical form (what :func:`verify_detailed` reports).
    kind : str
        ``"number"`` (no variables), ``"expression"``, ``"relation"``,
        ``"tuple"``, ``"set"``, ``"interval"``, ``"union"``, ``"list"``,
        ``"matrix"`` or ``"text"``.
    """

    canonical: str
    kind: str

    def __str__(self) -> str:
        return self.canonical


def parse(
    text: str,
    *,
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
) -> Answer | None:
    """The answer value of a text, read as :func:`verify` reads a gold: its
    marked answer (``\\boxed{}``, ``#### 72``, ...) or the text itself.

    Returns
    -------
    Answer or None
        None when there is no value (empty, unparseable or over a budget;
        :func:`verify_detailed` gives the reason).

    Examples
    --------
    >>> parse(r"\\dfrac{3}{4}")
    Answer(canonical='3/4', kind='number')
    >>> parse("She pays 12.\\n#### 12").kind
    'number'
    >>> parse(r"\\{1, 2\\}").kind
    'set'
    >>> parse("") is None
    True
    """
    canonical, kind, _reason = _core.parse(text, extract_options(rules, max_length, tail_length))
    if canonical is None or kind is None:
        return None
    return Answer(canonical, kind)


@dataclass(frozen=True)
class Verdict:
    """The detailed result of :func:`verify_detailed`.

    Attributes
    ----------
    matched : bool
        Whether the prediction answers the gold.
    reason : str
        ``"match"``, ``"no match"``, ``"no answer found"``, ``"no gold
        answer"``, ``"empty answer"``, ``"unparseable answer: ..."``,
        ``"over budget: ..."`` (a limit was hit: the item is a non-match),
        ``"not valid unicode"`` (a ``str`` holding a lone surrogate).
    gold, pred : str or None
        The canonical form of each parsed answer (None where it did not parse).
    """

    matched: bool
    reason: str
    gold: str | None
    pred: str | None

    def __bool__(self) -> bool:
        return self.matched


def prompt_text(prompt: Any) -> str | None:
    """The text of a prompt: a string as is, a chat (TRL's conversational
    format, a list of ``{"role", "content"}`` messages, content a string or a
    list of ``{"type": "text", "text"}`` parts) as its contents joined by
    newlines, None as None.

    Examples
    --------
    >>> prompt_text([{"role": "user", "content": "What is 79 + 85?"}])
    'What is 79 + 85?'
    """
    if prompt is None or isinstance(prompt, str):
        return prompt
    parts: list[str] = []
    for message in prompt:
        content = message.get("content") if isinstance(message, Mapping) else message
        if isinstance(content, str):
            parts.append(content)
        elif isinstance(content, Sequence):
            parts.extend(str(c.get("text", "")) for c in content if isinstance(c, Mapping))
    return "\n".join(parts)


def verify_detailed(
    gold: str,
    pred: str,
    *,
    rel_tol: float = _VERIFY_DEFAULTS.rel_tol,
    allow_set_relation_comp: bool = _VERIFY_DEFAULTS.allow_set_relation_comp,
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
    think: bool = _VERIFY_DEFAULTS.think,
    truncated: bool = False,
    prompt: str | Sequence[Mapping[str, Any]] | None = None,
) -> Verdict:
    """:func:`verify` with the reason and the parsed answers.

    Examples
    --------
    >>> verify_detailed(r"\\frac34", r"so \\boxed{0.75}")
    Verdict(matched=True, reason='match', gold='3/4', pred='0.75')
    >>> verify_detailed("72", "I do not know").reason
    'no answer found'
    """
    opts = verify_options(rel_tol, allow_set_relation_comp, rules, max_length, tail_length, think)
    return Verdict(*_core.verify(gold, pred, opts, truncated, prompt_text(prompt)))


def verify(
    gold: str,
    pred: str,
    *,
    rel_tol: float = _DEFAULT_REL_TOL,
    allow_set_relation_comp: bool = _DEFAULT_SET_RELATION,
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
    think: bool = _DEFAULT_THINK,
    truncated: bool = False,
    prompt: str | Sequence[Mapping[str, Any]] | None = None,
) -> bool:
    """Whether the completion ``pred`` answers ``gold``.

    Parameters
    ----------
    gold : str
        The gold answer: bare (``\\frac34``, ``x \\ge 2``, ``C``) or a
        solution with a marker (a GSM8K solution ending ``#### 72``, a boxed
        answer).
    pred : str
        The completion; its answer is found by :func:`extract_answer`.
    rel_tol : float
        Relative tolerance for a decimal against a value it can only
        approximate (``1.4142`` vs ``\\sqrt2``); exact values compare exactly.
    allow_set_relation_comp : bool
        Let a set or interval gold accept an inequality (``[-2, 7]`` vs
        ``-2 \\le x \\le 7``).
    rules, max_length, tail_length, think
        Extraction options, as for :func:`extract_answer` (applied to both;
        ``think`` to the completion only: a gold's tags are not looked for).
    truncated : bool
        The completion was cut off at the token limit (the trainer knows:
        vLLM's ``finish_reason == "length"``). It is then read only through
        its answer markers (``\\boxed{}``, ``Answer:``, ...): a number where
        it stopped is a step of unfinished reasoning, and paying it would
        reward running to the limit. Without the flag, ``verify`` sees the
        cut only where the text shows it (an unclosed ``\\boxed{`` or
        ``<think>``, an answer ending in ``or``) and reads a cut-off
        completion's last value like any other's.
    prompt : str or chat messages, optional
        The prompt the completion answers (a string, or TRL's list of
        ``{"role", "content"}`` messages). An answer that is an unevaluated
        arithmetic expression copied from it (``\\boxed{79+85}`` for "What is
        79 + 85?") is then no answer; a number, or an expression the prompt
        does not contain, is judged as without it. No prompt costs nothing.

    Returns
    -------
    bool
        Never raises for any pair of str: a pair that is unparseable, over
        a budget or not valid Unicode (a lone surrogate) is a non-match (see
        :func:`verify_detailed` for why). A text longer than ``max_length``
        is refused from its length alone, before it is converted.

    Examples
    --------
    >>> verify(r"\\frac{1}{2}", r"The answer is \\boxed{0.5}.")
    True
    >>> verify("Half of 144 is 72.\\n#### 72", "She has 72 apples.")
    True
    >>> verify("391", r"\\boxed{381} \\boxed{391}")
    False
    >>> verify("3", r"<think>\\boxed{3}?</think> no, \\boxed{4}")
    False
    >>> verify("3", r"<think>so it is \\boxed{3}", think=False)
    True
    >>> verify("3", "so we add 1 and 2 to get 3", truncated=True)
    False
    >>> verify("164", r"\\boxed{79+85}", prompt="What is 79 + 85?")
    False
    """
    # verify_detailed's `matched`, without rendering the answers. The default
    # call (TRL's: one per completion) skips the option and prompt helpers;
    # every test is an identity, against the defaults of the signature (a
    # default rel_tol passed as another float object takes the general path,
    # to the same verdict).
    if (
        rules is max_length is tail_length is prompt is None
        and truncated is False
        and think is _DEFAULT_THINK
        and allow_set_relation_comp is _DEFAULT_SET_RELATION
        and rel_tol is _DEFAULT_REL_TOL
    ):
        return _core.verify_match(gold, pred, _VERIFY_DEFAULTS)
    opts = verify_options(rel_tol, allow_set_relation_comp, rules, max_length, tail_length, think)
    return _core.verify_match(gold, pred, opts, truncated, prompt_text(prompt))


def verify_batch(
    golds: str | Sequence[str | None],
    preds: Sequence[str],
    *,
    rel_tol: float = _VERIFY_DEFAULTS.rel_tol,
    allow_set_relation_comp: bool = _VERIFY_DEFAULTS.allow_set_relation_comp,
    rules: Sequence[str] | None = None,
    max_length: int | None = None,
    tail_length: int | None = None,
    think: bool = _VERIFY_DEFAULTS.think,
    truncated: bool | Sequence[bool] | npt.NDArray[np.bool_] | None = None,
    prompts: Sequence[str | Sequence[Mapping[str, Any]] | None] | None = None,
) -> npt.NDArray[np.float32]:
    """:func:`verify` of many pairs in Rust, across threads, GIL released.

    Parameters
    ----------
    golds : str or sequence of (str or None)
        One gold for every prediction, or one each (None: no gold, 0.0).
    preds : sequence of str
        The completions.
    rel_tol, allow_set_relation_comp, rules, max_length, tail_length, think
        As for :func:`verify`.
    truncated : bool or sequence of bool, optional
        Which completions were cut off at the token limit (one flag each, or
        one for all); see :func:`verify`.
    prompts : sequence of (str or chat messages), optional
        The prompt of each completion; see :func:`verify`'s ``prompt``.

    Returns
    -------
    numpy.ndarray
        float32 ``[N]``: 1.0 for a match, else 0.0. The result does not
        depend on the number of threads (:func:`grpo_fast.set_num_threads`).

    Examples
    --------
    >>> verify_batch("4", [r"\\boxed{4}", "2+2=5", "#### 4"])
    array([1., 0., 1.], dtype=float32)
    >>> verify_batch("4", [r"\\boxed{4}", "so 2+2 = 4"], truncated=[True, True])
    array([1., 0.], dtype=float32)
    """
    texts = as_list("preds", preds)
    if not (golds is None or isinstance(golds, str)):
        golds = as_list("golds", golds)
    opts = verify_options(rel_tol, allow_set_relation_comp, rules, max_length, tail_length, think)
    texts_of_prompts = None
    if prompts is not None:
        texts_of_prompts = [prompt_text(p) or "" for p in as_list("prompts", prompts)]
    return _core.verify_batch(golds, texts, opts, truncated, texts_of_prompts)
