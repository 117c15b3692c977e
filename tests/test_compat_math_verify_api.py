"""grpo_fast.compat.math_verify's API against math-verify's: names, fields, parse() shapes.

``data/peers/math_verify_api.json`` holds math-verify's README headline example
and ``parse()`` cases (string answers, ``boxed_match_priority``), each with the
list math-verify 0.9.0 returns (Apache-2.0; source in the file). Each case runs
through our compat module and, where math-verify is installed, through
math-verify itself, so the data stays what math-verify does.
"""

from __future__ import annotations

import dataclasses
import json
import threading
from pathlib import Path
from typing import Any

import pytest

from grpo_fast.compat import math_verify as compat
from grpo_fast.errors import InvalidInputError

DATA = json.loads((Path(__file__).parent / "data" / "peers" / "math_verify_api.json").read_text())
CASES = DATA["parse_cases"]


def _configs(lib: Any, case: dict[str, Any]) -> list[Any]:
    out = []
    for c in case["configs"]:
        kw = {k: tuple(v) if k == "strings" else v for k, v in c.items() if k != "type"}
        out.append(getattr(lib, c["type"])(**kw))
    return out


def _parse(lib: Any, case: dict[str, Any]) -> list[str]:
    found = lib.parse(case["pred"], _configs(lib, case), fallback_mode=case["fallback_mode"])
    return [str(x) for x in found]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_parse_returns_what_math_verify_returns(case):
    assert _parse(compat, case) == case["expected"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_data_is_what_math_verify_returns(case):
    mv = pytest.importorskip("math_verify")
    assert threading.current_thread() is threading.main_thread()
    assert _parse(mv, case) == case["expected"]


def test_math_verifys_own_config_objects_work_the_same():
    mv = pytest.importorskip("math_verify")
    for case in CASES:
        found = compat.parse(case["pred"], _configs(mv, case), fallback_mode=case["fallback_mode"])
        assert [str(x) for x in found] == case["expected"], case["name"]


def test_the_readme_headline_example_verbatim():
    # From math-verify's README, "Example Usage", with our import.
    from grpo_fast.compat.math_verify import parse, verify

    gold = parse("${1,3} \\cup {2,4}$")
    answer = parse("${1,2,3,4}$")

    # Order here is important!
    assert verify(gold, answer) is DATA["readme_example"]["expected"]


def test_the_readme_example_is_math_verifys():
    mv = pytest.importorskip("math_verify")
    ex = DATA["readme_example"]
    assert mv.verify(mv.parse(ex["gold"]), mv.parse(ex["answer"])) is ex["expected"]


@pytest.mark.parametrize(
    "name",
    [
        "LatexExtractionConfig",
        "ExprExtractionConfig",
        "StringExtractionConfig",
        "LatexNormalizationConfig",
    ],
)
def test_configs_have_math_verifys_fields_and_defaults(name):
    mv = pytest.importorskip("math_verify")
    ours, theirs = getattr(compat, name), getattr(mv, name)
    assert [f.name for f in dataclasses.fields(ours)] == [
        f.name for f in dataclasses.fields(theirs)
    ]
    mine, real = ours(), theirs()
    for f in dataclasses.fields(ours):
        a, b = getattr(mine, f.name), getattr(real, f.name)
        if dataclasses.is_dataclass(a):  # the nested normalization config
            assert dataclasses.asdict(a) == dataclasses.asdict(b), f.name
        else:
            assert a == b, f.name


def test_public_names_match_math_verifys():
    mv = pytest.importorskip("math_verify")
    assert set(mv.__all__) <= set(compat.__all__)
    import inspect

    for name in ("parse", "verify", "math_metric"):
        ours = list(inspect.signature(getattr(compat, name)).parameters)
        theirs = list(inspect.signature(getattr(mv, name)).parameters)
        assert ours[: len(theirs)] == theirs, name


@pytest.mark.parametrize(
    ("golds", "preds"),
    [
        (["1/2"], ["so it is 0.5", "it is 3"]),
        (["1/2"], ["it is 3"]),
        (["$3$", "3"], ["the answer is 3"]),
        (["12"], ["no number here"]),
        (["7"], ["Answer: 7", "Answer: 7.0", "answer 8"]),
    ],
)
def test_math_metric_scores_as_math_verifys(golds, preds):
    mv = pytest.importorskip("math_verify")
    theirs, _ = mv.math_metric()(golds, preds)
    ours, strs = compat.math_metric()(golds, preds)
    assert ours == theirs
    assert isinstance(strs, tuple) and all(isinstance(x, str) for x in strs[0] + strs[1])
    assert (
        compat.math_metric(aggregation_function=min)(golds, preds)[0]
        == (mv.math_metric(aggregation_function=min)(golds, preds)[0])
    )


def test_math_metric_without_a_gold_raises_a_value_error():
    with pytest.raises(ValueError, match="No gold targets found"):
        compat.math_metric()(["no gold"], ["3"])


def test_string_answers_verify_as_strings():
    s = [compat.StringExtractionConfig()]
    gold = compat.parse("B", s)
    assert compat.verify(gold, compat.parse("Because B is valid", s))
    assert not compat.verify(gold, compat.parse("So A is valid", s))
    assert not compat.verify(gold, [])
    assert compat.verify(["b", "B"], compat.parse("**B**", s))
    # A string answer never equals a number.
    assert not compat.verify(compat.parse("$1$"), compat.parse("B", s))


def test_boxed_priority_minus_one_never_reads_a_bare_box():
    no_box = [compat.LatexExtractionConfig(boxed_match_priority=-1), compat.ExprExtractionConfig()]
    for text in [r"\boxed{3}", r"We get \boxed{12} apples", r"so \boxed{\frac{1}{2}}"]:
        assert compat.parse(text, no_box) == [], text
    gold = compat.parse("$3$")
    assert not compat.verify(gold, compat.parse(r"\boxed{3}", no_box))
    assert compat.verify(gold, compat.parse(r"\boxed{4}, so 3", no_box))


def test_bad_configs_are_clear_errors():
    with pytest.raises(InvalidInputError, match="strings must be non-empty str"):
        compat.parse("A", [compat.StringExtractionConfig(strings="AB")])
    with pytest.raises(InvalidInputError, match="boxed_match_priority must be an int"):
        compat.parse("A", [compat.LatexExtractionConfig(boxed_match_priority="0")])
