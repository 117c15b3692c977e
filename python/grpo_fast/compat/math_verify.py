"""math-verify's ``parse`` / ``verify`` API on grpo-fast's verifier.

For code written against Hugging Face math-verify::

    # from math_verify import parse, verify, LatexExtractionConfig
    from grpo_fast.compat.math_verify import parse, verify, LatexExtractionConfig

    verify(parse(gold), parse(answer))

The signatures are math-verify's; the judgement is grpo-fast's (Rust, bounded
work, no signals, so it also runs off the main thread), as documented in
``docs/verify_semantics.md``; ``docs/verify_differences.md`` lists where the two
disagree on math-verify's own test suite. What maps and what does not:

- ``parse`` returns ``[]`` when the text has no answer, else a two-item list
  like math-verify's ``[expression, extracted string]``: a :class:`Parsed`
  (which keeps the source text, so :func:`verify` judges gold and prediction
  exactly as :func:`grpo_fast.verify` does) and the extracted answer string.
- Extraction configs: math-verify's own config objects or the look-alikes
  here. When every config has ``try_extract_without_anchor=False`` only
  anchored answers count (``\\boxed{}``, ``The final answer is``,
  ``Answer:``, ``the answer is``); ``boxed_match_priority=-1`` on every LaTeX
  config drops ``\\boxed{}``. Otherwise the full default extraction is used
  whatever the configs: the boxed answer first, then the other markers, then
  the last value.
- ``float_rounding=k`` becomes a relative tolerance ``10**-k``.
  ``allow_set_relation_comp`` is passed through.
- Accepted and without effect: ``fallback_mode``, ``extraction_mode``,
  ``numeric_precision``, ``parsing_timeout`` / ``timeout_seconds`` (every
  item is decided within a fixed work budget instead), ``raise_on_error``
  (nothing raises for a str), ``strict=False`` (variables are never renamed
  freely: ``f(x)`` and ``f(y)`` stay different).
- One keyword of grpo-fast's own: ``parse(..., think=False)`` also reads the
  reasoning (by default only the text after the last ``</think>`` counts, and
  a ``<think>`` never closed has no answer; see :func:`grpo_fast.extract_answer`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.names import ANCHORED_RULES
from grpo_fast.verify import RULES, extract_answer, extract_gold, verify_detailed
from grpo_fast.verify import parse as parse_value

# The reason verify gives a completion whose `\\boxed{` never closes.
_UNCLOSED_BOX = verify_detailed("0", "\\boxed{0").reason

__all__ = [
    "ExprExtractionConfig",
    "LatexExtractionConfig",
    "Parsed",
    "StringExtractionConfig",
    "parse",
    "verify",
]


@dataclass(frozen=True)
class LatexExtractionConfig:
    """math-verify's LaTeX extraction config (``normalization_config`` is accepted and unused)."""

    try_extract_without_anchor: bool = True
    boxed_match_priority: int = 50
    normalization_config: Any = None


@dataclass(frozen=True)
class ExprExtractionConfig:
    """math-verify's plain-expression extraction config."""

    try_extract_without_anchor: bool = True


@dataclass(frozen=True)
class StringExtractionConfig:
    """math-verify's literal-string config (choice letters are compared case-insensitively)."""

    strings: tuple[str, ...] = field(default_factory=lambda: ("A", "B", "C", "D"))
    try_extract_without_anchor: bool = True
    lowercase: bool = True


@dataclass(frozen=True)
class Parsed:
    """An answer :func:`parse` found.

    Attributes
    ----------
    text : str
        The text it was found in (verify reads the answer from it again, as
        gold or as prediction depending on the side it is passed on).
    answer : str
        The extracted answer (several boxes joined by ``", "``).
    rule : str
        The extraction rule that found it.
    rules : tuple of str or None
        The extraction rules the configs mapped to (None: the defaults).
    think : bool
        Whether only the text after the reasoning counted (``parse(think=...)``).
    canonical : str
        The parsed value, written canonically (``str()`` gives it, as
        ``str()`` of math-verify's sympy expression does).
    kind : str
        What the value is: ``number``, ``expression``, ``set``, ...
    """

    text: str
    answer: str
    rule: str
    rules: tuple[str, ...] | None = None
    canonical: str = ""
    kind: str = ""
    think: bool = True

    def __str__(self) -> str:
        return self.canonical or self.answer


_DEFAULT_CONFIG = (LatexExtractionConfig(), ExprExtractionConfig())


def _rules(extraction_config: Any) -> tuple[str, ...] | None:
    if isinstance(extraction_config, (str, bytes)) or not isinstance(extraction_config, Iterable):
        raise InvalidInputError(
            "extraction_config must be a sequence of extraction configs "
            "(LatexExtractionConfig(), ExprExtractionConfig(), ...)"
        )
    configs = list(extraction_config)
    if not configs:
        raise InvalidInputError("extraction_config is empty: nothing could be extracted")
    for i, c in enumerate(configs):
        if not hasattr(c, "try_extract_without_anchor"):
            raise InvalidInputError(
                f"extraction_config[{i}] is {type(c).__name__}; expected LatexExtractionConfig, "
                "ExprExtractionConfig or StringExtractionConfig (ours or math-verify's)"
            )
    rules: tuple[str, ...] | None = None
    if all(not c.try_extract_without_anchor for c in configs):
        rules = ANCHORED_RULES
    latex = [c for c in configs if hasattr(c, "boxed_match_priority")]
    if latex and all(c.boxed_match_priority < 0 for c in latex):
        rules = tuple(r for r in (rules or RULES) if r != "boxed")
    return rules


def parse(
    pred: str,
    extraction_config: Sequence[Any] = _DEFAULT_CONFIG,
    fallback_mode: str = "first_match",
    extraction_mode: str = "any_match",
    parsing_timeout: int | None = 5,
    raise_on_error: bool = False,
    *,
    think: bool = True,
) -> list[Any]:
    """Find the answer in a text, with math-verify's signature (plus ``think``,
    as for :func:`grpo_fast.extract_answer`).

    Returns
    -------
    list
        ``[]`` when no answer is found or it has no value (an empty box, an
        unparseable or over-budget answer), else ``[Parsed, answer string]``.

    Examples
    --------
    >>> found = parse(r"so the answer is $\\boxed{\\dfrac{1}{2}}$")
    >>> found[1], str(found[0]), found[0].kind
    ('\\\\dfrac{1}{2}', '1/2', 'number')
    >>> parse(r"so \\boxed{}")
    []
    >>> parse("no answer here, sorry")
    []
    >>> parse(r"<think>\\boxed{3}"), parse(r"<think>\\boxed{3}", think=False)[1]
    ([], '3')
    """
    if not isinstance(pred, str):
        raise InvalidInputError(f"pred must be a str, not {type(pred).__name__}")
    if fallback_mode not in ("no_fallback", "first_match"):
        raise InvalidInputError(
            f"fallback_mode must be 'no_fallback' or 'first_match', not {fallback_mode!r}"
        )
    if extraction_mode not in ("first_match", "any_match"):
        raise InvalidInputError(
            f"extraction_mode must be 'first_match' or 'any_match', not {extraction_mode!r}"
        )
    rules = _rules(extraction_config)
    found = extract_answer(pred, rules=rules, think=think)
    if found is None and verify_detailed("0", pred).reason == _UNCLOSED_BOX:
        # math-verify parses golds and completions alike: an unclosed
        # `\\boxed{` is no completion's answer (cut off) but may be a
        # dataset's gold; verify() reads each side again as what it is.
        found = extract_gold(pred, rules=rules)
    if found is None:
        return []
    value = parse_value(found.answer)
    if value is None:
        return []
    return [
        Parsed(pred, found.answer, found.rule, rules, value.canonical, value.kind, think),
        found.answer,
    ]


def _items(side: Any, name: str) -> list[Parsed]:
    """One side of verify (Parsed, str, or a list of them) as Parsed; a str
    has the default options."""
    if isinstance(side, Parsed):
        return [side]
    if isinstance(side, str):
        return [Parsed(side, side, "")]
    if isinstance(side, (list, tuple)):
        parsed = [x for x in side if isinstance(x, Parsed)]
        if parsed:  # parse()'s own list: the str after the Parsed is the same answer
            return parsed
        out = []
        for x in side:
            if not isinstance(x, str):
                raise InvalidInputError(
                    f"{name} holds a {type(x).__name__}; expected parse() results or str"
                )
            out.append(Parsed(x, x, ""))
        return out
    raise InvalidInputError(
        f"{name} is {type(side).__name__}; expected what parse() returns, or a str"
    )


def verify(
    gold: Any,
    target: Any,
    float_rounding: int = 6,
    numeric_precision: int = 15,
    strict: bool = True,
    allow_set_relation_comp: bool = False,
    timeout_seconds: int | None = 5,
    raise_on_error: bool = False,
) -> bool:
    """Whether ``target`` answers ``gold``, with math-verify's signature.

    ``gold`` and ``target`` are what :func:`parse` returned (or plain str); as in
    math-verify, gold comes first and any gold/target pair matching is a match.

    Examples
    --------
    >>> verify(parse(r"$\\frac{1}{2}$"), parse(r"The answer is $\\boxed{0.5}$"))
    True
    >>> verify(parse("$3$"), parse(r"\\boxed{4}"))
    False
    >>> verify(parse("$3$"), [])
    False
    """
    if isinstance(float_rounding, bool) or not isinstance(float_rounding, int):
        raise InvalidInputError(f"float_rounding must be an int, not {float_rounding!r}")
    if not 0 <= float_rounding <= 300:
        raise InvalidInputError(f"float_rounding must be in [0, 300], not {float_rounding}")
    golds = _items(gold, "gold")
    targets = _items(target, "target")
    rel_tol = 10.0**-float_rounding
    for g in golds:
        for t in targets:
            verdict = verify_detailed(
                g.text,
                t.text,
                rel_tol=rel_tol,
                allow_set_relation_comp=bool(allow_set_relation_comp),
                rules=t.rules if t.rules is not None else g.rules,
                think=t.think,
            )
            if verdict.matched:
                return True
    return False
