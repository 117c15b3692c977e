"""math-verify's ``parse`` / ``verify`` API on grpo-fast's verifier.

For code written against Hugging Face math-verify::

    # from math_verify import parse, verify, LatexExtractionConfig
    from grpo_fast.compat.math_verify import parse, verify, LatexExtractionConfig

    verify(parse(gold), parse(answer))

The signatures are math-verify's; the judgement is grpo-fast's (Rust, bounded
work, no signals, so it also runs off the main thread), as documented in
``docs/verify_semantics.md``; ``docs/verify_differences.md`` lists where the two
disagree on math-verify's own test suite. Importable with math-verify's names
and fields: :func:`parse`, :func:`verify`, :func:`math_metric`,
:class:`LatexExtractionConfig`, :class:`ExprExtractionConfig`,
:class:`StringExtractionConfig`, :class:`LatexNormalizationConfig`; math-verify's
own config objects work too. What maps and what does not:

- ``parse`` returns ``[]`` when the text has no answer, else math-verify's
  ``[value, extracted string]`` (``fallback_mode="no_fallback"``: ``[value]``).
  The value is a :class:`Parsed`, not a sympy object: ``str()`` gives its
  canonical form (``1/2`` where sympy prints ``1/2``; a string answer
  lower-cased as math-verify's), it keeps the source text so :func:`verify`
  judges gold and prediction exactly as :func:`grpo_fast.verify` does, and it
  has no sympy methods (``.evalf()``, ``.free_symbols``, arithmetic).
- Extraction configs choose the rules. When every config has
  ``try_extract_without_anchor=False`` only anchored answers count
  (``\\boxed{}``, ``The final answer is``, ``Answer:``, ``the answer is``).
  ``boxed_match_priority`` places ``\\boxed{}`` among them as in math-verify
  (0: first; the default 50: with ``final answer``; above 100: after
  ``Answer:``; above 200: after ``the answer is``; -1 on every LaTeX config: never,
  and a bare box's number is not read by the last-value fallback either, while
  a box inside ``$...$`` is read as that math span, as math-verify's plain
  LaTeX pattern does). Otherwise grpo-fast's default extraction is used:
  the boxed answer first, then the other markers, then the last value.
- :class:`StringExtractionConfig` looks for its ``strings`` as math-verify
  does: after ``final answer ... is``, after ``answer:`` / ``answer``, at the
  start of the text, then anywhere (``try_extract_without_anchor``), each
  standing alone (space or start before; ``.``, ``,``, ``:``, space or end
  after; ``**`` around allowed), the match ending last winning at each level;
  ``lowercase=True`` lower-cases the value (``Because B is valid`` gives
  ``["b", "B"]``). With LaTeX or expression configs too, the level of the
  string match is compared with that of the math answer (boxed at its
  priority, ``final answer`` 50, ``Answer:`` 100, ``the answer is`` 200, the
  rest 300); the lower wins, the later one on a tie. Strings compare as
  strings, as math-verify's (``verify`` of a string answer is equality of the
  stripped parsed or extracted strings).
- ``float_rounding=k`` becomes a relative tolerance ``10**-k``.
  ``allow_set_relation_comp`` is passed through.
- Accepted and without effect: ``normalization_config`` (grpo-fast's
  normalisation is fixed), ``extraction_mode``, ``numeric_precision``,
  ``parsing_timeout`` / ``timeout_seconds`` (every item is decided within a
  fixed work budget instead), ``raise_on_error`` (nothing raises for a str),
  ``strict=False`` (variables are never renamed freely: ``f(x)`` and ``f(y)``
  stay different).
- One keyword of grpo-fast's own: ``parse(..., think=False)`` also reads the
  reasoning (by default only the text after the last ``</think>`` counts, and
  a ``<think>`` never closed has no answer; see :func:`grpo_fast.extract_answer`).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.names import ANCHORED_RULES
from grpo_fast.verify import RULES, extract_answer, extract_gold, verify_detailed
from grpo_fast.verify import parse as parse_value

# Choice letters as the core writes them: `B`, `A, B`.
_LETTERS = re.compile("[A-Za-z](, [A-Za-z])*")

# The reason verify gives a completion whose `\\boxed{` never closes.
_UNCLOSED_BOX = verify_detailed("0", "\\boxed{0").reason

__all__ = [
    "ExprExtractionConfig",
    "LatexExtractionConfig",
    "LatexNormalizationConfig",
    "Parsed",
    "StringExtractionConfig",
    "math_metric",
    "parse",
    "verify",
]

_log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LatexNormalizationConfig:
    """math-verify's (latex2sympy2's) ``NormalizationConfig``: the same fields,
    accepted and without effect (grpo-fast's normalisation is fixed)."""

    basic_latex: bool = True
    units: bool = False
    malformed_operators: bool = False
    nits: bool = False
    boxed: str = "all"
    equations: bool = False


@dataclass(frozen=True)
class LatexExtractionConfig:
    """math-verify's LaTeX extraction config: ``try_extract_without_anchor``
    and ``boxed_match_priority`` choose the rules (see the module docstring);
    ``normalization_config`` is accepted and unused."""

    try_extract_without_anchor: bool = True
    boxed_match_priority: int = 50
    normalization_config: LatexNormalizationConfig = field(
        default_factory=lambda: LatexNormalizationConfig(
            basic_latex=True, units=True, malformed_operators=True, nits=True, boxed="all"
        )
    )


@dataclass(frozen=True)
class ExprExtractionConfig:
    """math-verify's plain-expression extraction config."""

    try_extract_without_anchor: bool = True


@dataclass(frozen=True)
class StringExtractionConfig:
    """math-verify's literal-string config: ``strings`` are the answers looked
    for (choice letters by default); ``lowercase`` lower-cases the parsed value."""

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
        The extraction rule that found it (``"string"`` for a
        :class:`StringExtractionConfig` match).
    rules : tuple of str or None
        The extraction rules the configs mapped to (None: the defaults).
    canonical : str
        The parsed value, written canonically (``str()`` gives it, as
        ``str()`` of math-verify's sympy expression does).
    kind : str
        What the value is: ``number``, ``expression``, ``set``, ...,
        ``string`` for a string answer.
    think : bool
        Whether only the text after the reasoning counted (``parse(think=...)``).
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

# math-verify's priority levels of its anchors (lower is tried first).
_LEVEL = {
    "final_answer": 50,
    "answer_tag": 50,
    "gsm8k": 60,
    "answer_colon": 100,
    "answer_is": 200,
    "bare": 250,
}
_PLAIN = 300


@dataclass(frozen=True)
class _Plan:
    """What the extraction configs ask for."""

    math: bool  # a LaTeX or expression config is present
    rules: tuple[str, ...] | None
    boxed_level: int  # -1: boxes are not answers
    strings: tuple[Any, ...]  # the StringExtractionConfigs


def _plan(extraction_config: Any) -> _Plan:
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
    strings = tuple(c for c in configs if hasattr(c, "strings"))
    for c in strings:
        if isinstance(c.strings, str) or not all(isinstance(x, str) and x for x in c.strings):
            raise InvalidInputError(
                f"StringExtractionConfig.strings must be non-empty str, not {c.strings!r}"
            )
    math_configs = [c for c in configs if not hasattr(c, "strings")]
    latex = [c for c in math_configs if hasattr(c, "boxed_match_priority")]
    for c in latex:
        p = c.boxed_match_priority
        if isinstance(p, bool) or not isinstance(p, int):
            raise InvalidInputError(f"boxed_match_priority must be an int, not {p!r}")
    levels = [c.boxed_match_priority for c in latex if c.boxed_match_priority >= 0]
    boxed_level = min(levels) if levels else (-1 if latex else 50)
    anchored = all(not c.try_extract_without_anchor for c in math_configs)
    base = ANCHORED_RULES if anchored else RULES
    rules: tuple[str, ...] | None = None
    if anchored or boxed_level != 50:
        # The default order, with the box moved to its level (a stable sort keeps the
        # default order among equal levels: the box first at 50).
        keep = [r for r in base if r != "boxed" or boxed_level >= 0]
        rules = tuple(
            sorted(keep, key=lambda r: boxed_level if r == "boxed" else _LEVEL.get(r, _PLAIN))
        )
    return _Plan(bool(math_configs), rules, boxed_level, strings)


def _math_spans(text: str) -> list[tuple[int, int]]:
    """The ``$...$``, ``$$...$$``, ``\\(...\\)``, ``\\[...\\]`` spans, paired from the start."""
    spans = []
    i, n = 0, len(text)
    opened: tuple[str, int] | None = None
    while i < n:
        c = text[i]
        if c == "\\" and i + 1 < n:
            two = text[i : i + 2]
            if opened is None and two in ("\\(", "\\["):
                opened = (")" if two == "\\(" else "]", i)
            elif opened is not None and two == "\\" + opened[0]:
                spans.append((opened[1], i + 2))
                opened = None
            i += 2
            continue
        if c == "$":
            tok = "$$" if text.startswith("$$", i) else "$"
            if opened is None:
                opened = (tok, i)
            elif opened[0] == tok:
                spans.append((opened[1], i + len(tok)))
                opened = None
            i += len(tok)
            continue
        i += 1
    return spans


_BOX = re.compile(r"\\(?:boxed|fbox)\s*\{")


def _mask_bare_boxes(text: str) -> str:
    """The text with every ``\\boxed{...}`` outside a math span blanked out
    (same length), so that no rule reads the answer inside it."""
    spans = _math_spans(text)
    out = list(text)
    pos = 0
    for m in _BOX.finditer(text):
        if m.start() < pos or any(s <= m.start() < e for s, e in spans):
            continue
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        out[m.start() : j] = " " * (j - m.start())
        pos = j
    return "".join(out)


def _string_patterns(config: Any) -> list[tuple[int, re.Pattern[str]]]:
    """math-verify's string anchors, by level, for one StringExtractionConfig."""
    key = "(?P<key>" + "|".join(re.escape(x) for x in config.strings) + ")"
    alone = r"(?:^|(?<=\s))(?:\*\*)?" + key + r"(?:\*\*)?(?=[.,:\s]|$)"
    pats = [
        (0, r"(?i:final answer is):?\s*" + key + r"\.?\s?I hope"),
        (50, r"(?i:final answer).{0,100}?\s+is:?\s*" + key),
        (100, r"(?i:answer):.{0,50}?" + alone),
        (200, r"(?i:answer).{0,50}?" + alone),
    ]
    if config.try_extract_without_anchor:
        pats.append((250, r"\A(?:\*\*)?" + key + r"(?:\*\*)?(?=[.,:\s]|$)"))
        pats.append((_PLAIN, alone))
    return [(level, re.compile(p)) for level, p in pats]


def _find_string(text: str, configs: Sequence[Any]) -> tuple[int, int, str, Any] | None:
    """(level, end, matched string, config) of the string answer, or None."""
    found: dict[int, list[tuple[int, int, str, Any]]] = {}
    for config in configs:
        for level, pat in _string_patterns(config):
            for m in pat.finditer(text):
                hit = (m.end(), -m.start(), m.group("key"), config)
                found.setdefault(level, []).append(hit)
    if not found:
        return None
    level = min(found)
    end, _, key, config = max(found[level], key=lambda x: (x[0], x[1]))
    return level, end, key, config


def _reasoning_free(pred: str, think: bool) -> str | None:
    """The text the answer is looked for in (None: no answer region)."""
    if not think:
        return pred
    if "</think>" in pred:
        return pred.rsplit("</think>", 1)[1]
    return None if "<think>" in pred else pred


def _unwrap(answer: str) -> str:
    """An answer without the math delimiters or the one box around it, as
    math-verify's strings (``$\\boxed{1}$`` gives ``1``)."""
    a = answer.strip()
    for open_, close in (("$$", "$$"), ("$", "$"), ("\\(", "\\)"), ("\\[", "\\]")):
        if a.startswith(open_) and a.endswith(close) and len(a) >= len(open_) + len(close):
            a = a[len(open_) : len(a) - len(close)].strip()
            break
    m = _BOX.match(a)
    if m and a.endswith("}") and _mask_bare_boxes(a).strip() == "":
        return a[m.end() : -1].strip()
    return a


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
        unparseable or over-budget answer), else ``[Parsed, answer string]``
        (``[Parsed]`` with ``fallback_mode="no_fallback"``).

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
    >>> found = parse("Because B is valid", [StringExtractionConfig()])
    >>> str(found[0]), found[1]
    ('b', 'B')
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
    plan = _plan(extraction_config)
    found: list[Any] = []
    math_level, math_end = _PLAIN + 1, -1
    text, rules = pred, plan.rules
    if plan.boxed_level < 0:
        text = _mask_bare_boxes(pred)
        if text != pred and rules is not None:
            # What is left around a blanked box is not a text that is only an answer.
            rules = tuple(r for r in rules if r != "bare")
    if plan.math:
        got = extract_answer(text, rules=rules, think=think)
        if got is None and verify_detailed("0", text).reason == _UNCLOSED_BOX:
            # math-verify parses golds and completions alike: an unclosed
            # `\\boxed{` is no completion's answer (cut off) but may be a
            # dataset's gold; verify() reads each side again as what it is.
            got = extract_gold(text, rules=rules)
        value = None if got is None else parse_value(got.answer)
        # With string configs, a lone letter is a string answer (math-verify's LaTeX
        # and expression patterns never take one), and so are letters the core
        # reads as alternatives (`A and B`): the string configs decide them.
        if value is not None and plan.strings and _LETTERS.fullmatch(value.canonical):
            value = None
        if got is not None and value is not None:
            math_level = plan.boxed_level if got.rule == "boxed" else _LEVEL.get(got.rule, _PLAIN)
            math_end = text.rfind(got.parts[-1]) + len(got.parts[-1])
            parsed = Parsed(text, got.answer, got.rule, rules, value.canonical, value.kind, think)
            found = [parsed, _unwrap(got.answer)]
    region = _reasoning_free(pred, think) if plan.strings else None
    string = _find_string(region, plan.strings) if region is not None else None
    if string is not None:
        level, end, key, config = string
        end += len(pred) - len(region or "")  # the region is a suffix of pred
        if (level, -end) < (math_level, -math_end):
            value = key.lower() if getattr(config, "lowercase", True) else key
            found = [Parsed(pred, key, "string", None, value, "string", think), key]
    if fallback_mode == "no_fallback":
        return found[:1]
    return found


def math_metric(
    gold_extraction_target: Sequence[Any] = (ExprExtractionConfig(),),
    pred_extraction_target: Sequence[Any] = (ExprExtractionConfig(),),
    aggregation_function: Callable[[list[float]], float] = max,
    precision: int = 6,
) -> Callable[[list[str], list[str]], tuple[float, tuple[list[str], list[str]] | None]]:
    """math-verify's ``math_metric``: a sample-level function ``(golds,
    predictions) -> (score, (gold strings, prediction strings))`` scoring each
    prediction 1.0 when any gold matches it (``float_rounding=precision``) and
    aggregating the scores with ``aggregation_function``.

    Raises :class:`~grpo_fast.InvalidInputError` (a ``ValueError``, as
    math-verify's) when a gold has no answer.

    Examples
    --------
    >>> metric = math_metric()
    >>> metric(["1/2"], ["it is 0.5", "it is 3"])
    (1.0, (['1/2', '1/2'], ['0.5', '0.5', '3', '3']))
    """

    def sample_level_fn(
        golds: list[str], predictions: list[str]
    ) -> tuple[float, tuple[list[str], list[str]] | None]:
        extracted_preds = [parse(p, pred_extraction_target) for p in predictions]
        extracted_golds = [parse(g, gold_extraction_target) for g in golds]
        if any(len(g) == 0 for g in extracted_golds):
            raise InvalidInputError(
                f"No gold targets found for at least one gold. Gold: {golds}, Pred: {predictions}"
            )
        if all(len(p) == 0 for p in extracted_preds):
            _log.warning("No prediction could be extracted. Gold: %s, Pred: %s", golds, predictions)
        scores = [
            1.0 if any(verify(g, p, precision) for g in extracted_golds) else 0.0
            for p in extracted_preds
        ]
        strs = (
            [str(x) for g in extracted_golds for x in g],
            [str(x) for p in extracted_preds for x in p],
        )
        return aggregation_function(scores), strs

    return sample_level_fn


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


def _strings(p: Parsed) -> set[str]:
    return {x.strip() for x in (p.canonical, p.answer) if x.strip()}


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
            if "string" in (g.kind, t.kind):
                # As math-verify: strings compare as strings (its parsed value or the
                # extracted text, stripped), never as math.
                if _strings(g) & _strings(t):
                    return True
                continue
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
