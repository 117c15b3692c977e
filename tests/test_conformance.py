"""math-verify's own test suite, run through grpo-fast's verifier.

Each row of ``tests/data/conformance/math_verify_suite.jsonl`` (gold, pred,
what math-verify's tests expect, the config they ran with) is verified with
the config mapped to our options: ``float_rounding = k`` becomes
``rel_tol = 10**-k`` (math-verify rounds to k places; we compare within a
relative tolerance) and ``allow_set_relation_comp`` is passed through. Our
extraction follows docs/verify_semantics.md whatever ``match_types`` says.

Rows where we deliberately answer otherwise are listed in ``EXCEPTIONS`` with
the reason (docs/verify_differences.md explains each); every other row must
agree, and every listed row must still disagree, so the list cannot go stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grpo_fast.verify import verify_detailed

SUITE = Path(__file__).parent / "data" / "conformance" / "math_verify_suite.jsonl"

_MV = "tests/test_mixed_number_extraction.py::"

#: (source, first 40 characters of gold) -> why we disagree with the row's ``expected`` (a source
#: alone is not unique: some parametrised tests run several golds).
EXCEPTIONS: dict[tuple[str, str], str] = {
    (
        "tests/test_open_thoughts.py::test_open_thoughts"
        "[\\\\boxed{1} no no no no no \\\\boxed{2}-$\\\\boxed{1,2}$-0]",
        "\\boxed{1} no no no no no \\boxed{2}",
    ): ("several boxes form one collection answer whatever prose lies between them"),
    (
        "tests/test_yujianll.py::test_string_extraction"
        "[$1 - \\\\frac{1}{\\\\mathrm{e}}$-$1 + \\\\frac{1}{\\\\mathrm{e}}$-1]",
        "$1 - \\frac{1}{\\mathrm{e}}$",
    ): (
        "1 - 1/e and 1 + 1/e are different numbers; the newer revision of the "
        "suite expects False as well"
    ),
    (_MV + "test_line_separator_does_not_form_a_mixed_number[newline]", "5"): (
        "the last value of '11\\n5/6' is 5/6, which is not 5"
    ),
    (_MV + "test_line_separator_does_not_form_a_mixed_number[crlf]", "5"): (
        "the last value of '11\\r\\n5/6' is 5/6, which is not 5"
    ),
    ("tests/test_strict.py::test_strict_variable_comparison[$f(x)$-$f(y)$-False-1]", "$f(x)$"): (
        "non-strict mode (variables renamed freely) is not offered: f(x) and f(y) differ"
    ),
    (
        "tests/test_all.py::test_set_rel_assymetry"
        "[$x \\\\in [-2,7]$-$-2 \\\\\\\\le x \\\\\\\\le 7$-0-False]",
        "$x \\in [-2,7]$",
    ): (
        "an inequality chain and an interval are the same set (docs/verify_semantics.md), "
        "with or without allow_set_relation_comp"
    ),
    ("tests/test_all.py::test_math_extraction_additional_cases[$10455$-pred17-1]", "$10455$"): (
        "a \\boxed{} answer wins over 'The final answer is' (the box holds 255)"
    ),
}

# math-verify reads a percentage prediction only as its fraction, so `4 4/9%` is
# not the gold 40/9; docs/verify_semantics.md matches a percentage with its number
# and its fraction, whichever side carries the sign (the gold 40/900 agrees).
for _spelling in ("symbol", "percent", "percentage", "pct"):
    for _spaced in ("", "spaced-"):
        EXCEPTIONS[
            (
                _MV
                + f"test_mixed_number_percentage_applies_to_complete_value[{_spaced}{_spelling}]",
                "40/9",
            )
        ] = "a percentage matches its number (4 4/9) as well as its fraction (40/900)"


def _rows() -> list[dict[str, Any]]:
    if not SUITE.exists():
        return []
    return [json.loads(line) for line in SUITE.read_text().splitlines() if line.strip()]


ROWS = _rows()
pytestmark = pytest.mark.skipif(not ROWS, reason=f"{SUITE} is not available")


def _key(row: dict[str, Any]) -> tuple[str, str]:
    return row["source"], row["gold"][:40]


def _ours(row: dict[str, Any]) -> bool:
    config = row["config"]
    return verify_detailed(
        row["gold"],
        row["pred"],
        rel_tol=10.0 ** -int(config.get("float_rounding", 6)),
        allow_set_relation_comp=bool(config.get("allow_set_relation_comp", False)),
    ).matched


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}:{r['source']}" for i, r in enumerate(ROWS)])
def test_row(row: dict[str, Any]) -> None:
    ours = _ours(row)
    key = _key(row)
    if key in EXCEPTIONS:
        assert ours != row["expected"], f"listed as an exception ({EXCEPTIONS[key]}) but agrees"
    else:
        assert ours == row["expected"], f"gold={row['gold']!r} pred={row['pred'][-300:]!r}"


def test_agreement_rate() -> None:
    agree = sum(_ours(r) == r["expected"] for r in ROWS)
    rate = agree / len(ROWS)
    print(f"conformance: {agree}/{len(ROWS)} rows agree ({rate:.1%})")
    assert set(EXCEPTIONS) <= {_key(r) for r in ROWS}
    # Every row outside EXCEPTIONS agrees (test_row); this floor keeps the list short.
    assert len(EXCEPTIONS) <= 15
    assert agree >= 328
