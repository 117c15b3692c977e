"""grpo_fast.compat.math_verify against the real math-verify, on math-verify's own test suite.

Each row of the conformance suite is run twice with the same calls math-verify's
tests make (``parse`` with the row's extraction configs, ``verify`` with its
``float_rounding`` / ``strict`` / ``allow_set_relation_comp``): through the real
math-verify and through our compat layer. They must agree on every row except

- the deliberate differences, listed (with reasons) in the conformance test's
  ``EXCEPTIONS`` and in docs/verify_differences.md: reused here, not restated;
- rows where math-verify 0.9.0 contradicts its own test's expectation (the
  suite records both); there we follow the expectation, as the conformance test does.

The compat layer must also answer exactly what ``grpo_fast.verify`` answers.
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

mv = pytest.importorskip("math_verify")

from test_conformance import EXCEPTIONS  # noqa: E402  (tests/ is on sys.path under pytest)

import grpo_fast  # noqa: E402
from grpo_fast.compat import math_verify as compat  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402

SUITE = Path(__file__).parent / "data" / "conformance" / "math_verify_suite.jsonl"
ROWS = (
    [json.loads(line) for line in SUITE.read_text().splitlines() if line.strip()]
    if SUITE.exists()
    else []
)
suite = pytest.mark.skipif(not ROWS, reason=f"{SUITE} is not available")


def _run(lib: Any, row: dict[str, Any]) -> bool:
    """The call math-verify's tests make for this row, against ``lib`` (math_verify or compat)."""
    config = row["config"]
    mode = config["mode"]
    if mode == "compare_strings":
        targets = []
        if "latex" in config["match_types"]:
            targets.append(
                lib.LatexExtractionConfig(boxed_match_priority=config["latex_boxed_match_priority"])
            )
        if "expr" in config["match_types"]:
            targets.append(lib.ExprExtractionConfig())
        return lib.verify(
            lib.parse(row["gold"], targets),
            lib.parse(row["pred"], targets),
            float_rounding=config["float_rounding"],
            strict=config["strict"],
            allow_set_relation_comp=config["allow_set_relation_comp"],
        )
    if mode == "expr_only":
        targets = (lib.ExprExtractionConfig(),)
        return lib.verify(lib.parse(row["gold"], targets), lib.parse(row["pred"], targets))
    return lib.verify(lib.parse(row["gold"]), lib.parse(row["pred"]))


def _key(row: dict[str, Any]) -> tuple[str, str]:
    return row["source"], row["gold"][:40]


@pytest.fixture(scope="module")
def results() -> list[tuple[dict[str, Any], bool, bool]]:
    """(row, real math-verify, compat) for every row; math-verify runs once for all tests."""
    assert threading.current_thread() is threading.main_thread()  # its signal timeouts need it
    return [(row, bool(_run(mv, row)), bool(_run(compat, row))) for row in ROWS]


@suite
def test_real_math_verify_is_the_recorded_one(results):
    """The calls above reproduce what the suite recorded for math-verify 0.9.0."""
    assert [r for r, real, _ in results if real != r["math_verify_0_9_0"]] == []


@suite
def test_agrees_with_math_verify_except_documented_differences(results):
    disagree = []
    for row, real, ours in results:
        if ours == real:
            continue
        if _key(row) in EXCEPTIONS:
            continue  # a deliberate difference (docs/verify_differences.md)
        if real != row["expected"] and ours == row["expected"]:
            continue  # math-verify 0.9.0 against its own test; we side with the test
        disagree.append((row["source"], row["gold"], row["pred"][-200:], real, ours))
    agree = sum(ours == real for _, real, ours in results)
    print(f"compat vs math-verify 0.9.0: {agree}/{len(results)} rows agree")
    assert disagree == []


@suite
def test_same_answers_as_grpo_fast_verify(results):
    """The compat layer changes the signatures, not the judgement."""
    mismatched = []
    for row, _, ours in results:
        config = row["config"]
        direct = grpo_fast.verify(
            row["gold"],
            row["pred"],
            rel_tol=10.0 ** -int(config.get("float_rounding", 6)),
            allow_set_relation_comp=bool(config.get("allow_set_relation_comp", False)),
        )
        if direct != ours:
            mismatched.append((row["source"], row["gold"], row["pred"][-200:], direct, ours))
    assert mismatched == []


def test_parse_shape_like_math_verify():
    found = compat.parse(r"so the answer is $\boxed{\frac{1}{2}}$")
    real = mv.parse(r"so the answer is $\boxed{\frac{1}{2}}$")
    assert len(found) == len(real) == 2
    assert isinstance(found[1], str) and found[1] == real[1]
    assert compat.parse("no answer here, sorry") == [] == mv.parse("no answer here, sorry")


def test_accepts_math_verifys_own_config_objects():
    anchored = [mv.LatexExtractionConfig(try_extract_without_anchor=False, boxed_match_priority=0)]
    gold = compat.parse("$7$")
    assert compat.verify(gold, compat.parse(r"thus \boxed{7}", anchored))
    # Without an anchor nothing counts, as math-verify with try_extract_without_anchor=False.
    assert not compat.verify(gold, compat.parse("thus 7", anchored))
    assert not mv.verify(mv.parse("$7$"), mv.parse("thus 7", anchored))


def test_lists_and_strings_like_math_verify():
    assert compat.verify(compat.parse("$3$"), [compat.parse(r"\boxed{4}"), compat.parse("$3$")][1])
    assert compat.verify("3", "the answer is 3")
    assert not compat.verify([], compat.parse("$3$"))
    assert not compat.verify(compat.parse("$3$"), [])


def test_works_off_the_main_thread():
    """math-verify's signal.alarm timeouts fail in threads; the compat layer has none."""
    out = []
    t = threading.Thread(
        target=lambda: out.append(compat.verify(compat.parse(r"$\frac12$"), compat.parse("0.5")))
    )
    t.start()
    t.join()
    assert out == [True]


def test_bad_input_is_a_clear_error():
    with pytest.raises(InvalidInputError, match="pred must be a str"):
        compat.parse(3)
    with pytest.raises(InvalidInputError, match="extraction_config\\[0\\] is int"):
        compat.parse("1", [1])
    with pytest.raises(InvalidInputError, match="extraction_mode"):
        compat.parse("1", extraction_mode="all")
    with pytest.raises(InvalidInputError, match="float_rounding"):
        compat.verify("1", "1", float_rounding=1.5)
    with pytest.raises(InvalidInputError, match="target is int"):
        compat.verify("1", 1)
