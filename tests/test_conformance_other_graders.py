"""The grader test suites of 14 other projects, run through grpo-fast's verifier.

Each row of ``tests/data/conformance/other_graders.jsonl`` (gold, pred, what
that project's suite asserts, what math-verify 0.9.0 returns; the folder's
README says more) is verified with the default options. Where a suite's house
rule conflicts with docs/verify_semantics.md (ordered comma lists, unreduced
fractions rejected, ``52_8`` read as the digits 52, a numeric tolerance, its own
reasoning delimiter), the semantics decide: those rows are listed in
``EXCEPTIONS`` with the reason (docs/verify_differences.md, second table, says
the same). Every other row must agree, and every listed row must still
disagree, so the list cannot go stale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from grpo_fast.verify import verify_detailed

SUITE = Path(__file__).parent / "data" / "conformance" / "other_graders.jsonl"

_MARIO = "MARIO-Math-Reasoning/MARIO_EVAL:math_evaluation/tests/test_is_equiv.py"
_MATH = "hendrycks/math:modeling/math_equivalence_test.py"
_TUNIX = "google/tunix:tests/utils/math_utils_test.py"
_SLIME = "THUDM/slime:tests/test_rm_"

#: (origin, gold, pred) -> why we answer otherwise than the suite's ``expected``.
EXCEPTIONS: dict[tuple[str, str, str], str] = {
    (_MATH, "4, 10, -2", "10, 4, -2"): (
        "a bare comma list ignores order (the MATH grader compares the strings)"
    ),
    (_MATH, "4, .1, 2", "0.1, 4, 2"): "a bare comma list ignores order",
    (_MARIO, "20:34", "20:34:00"): (
        "a:b is the ratio a/b; clock times are not read (20:34:00 is no ratio of 20/34)"
    ),
    (_MARIO, "20:34", r"08:34 \text{P.M.}"): "a:b is the ratio a/b; clock times are not read",
    (_MARIO, "10cm", "10"): (
        "a trailing unit is decoration on either side, with or without a space "
        "(the suite itself accepts 10 \\text{cm} and 10 cm^2)"
    ),
    (_TUNIX, r"2.\overline{3}", "2.33"): (
        "a decimal matches a value it cannot write with at least 4 significant digits (2.33 has 3)"
    ),
    (_TUNIX, r"2.\overline{3}", "2.3"): "a decimal needs at least 4 significant digits (2.3 has 2)",
    (
        "EleutherAI/lm-evaluation-harness:tests/test_hendrycks_math.py",
        r"Thus, the answer is $\boxed{52_8}.$",
        "Thus, the product is:\n\n$$\n\\boxed{52}\n$$",
    ): "52_8 is 52 in base 8, the number 42, not 52",
    ("Ascend/MindSpeed-RL:tests/ut/utils/test_grader.py", "1.0001", "1"): (
        "two exact values that differ never match (the suite grades with rel_tol=1e-4; "
        "our rel_tol only widens a decimal against a value it cannot write)"
    ),
    (_MARIO, r"[1,+\infty)", r"[2^{\frac{1}{2^{1000}}}, \infty)"): (
        "constants that differ by a tiny amount are different: 2^(2^-1000) is not 1 "
        "(it exceeds 1 by about 10^-302); the suite grades with a numeric tolerance"
    ),
    (_SLIME + "math.py", r"\frac{1}{2}", r"\frac{2}{4}"): (
        "equal values match however they are written (the suite rejects unreduced fractions)"
    ),
    (_SLIME + "deepscaler.py", "42", r"Scratch work \boxed{wrong}###Response\boxed{42}"): (
        "only </think> ends the reasoning; two boxes with different values are a hedge"
    ),
    (
        "NVIDIA-NeMo/RL:tests/unit/environments/test_math_environment.py",
        "5",
        "<think>10 - 5 = 5\n<answer>5</answer>",
    ): "a <think> that never closes leaves no answer (cut off mid-thought)",
}


def _rows() -> list[dict[str, Any]]:
    if not SUITE.exists():
        return []
    return [json.loads(line) for line in SUITE.read_text().splitlines() if line.strip()]


ROWS = _rows()
pytestmark = pytest.mark.skipif(not ROWS, reason=f"{SUITE} is not available")


def _key(row: dict[str, Any]) -> tuple[str, str, str]:
    return row["origin"], row["gold"], row["pred"]


def _ours(row: dict[str, Any]) -> bool:
    return verify_detailed(row["gold"], row["pred"]).matched


@pytest.mark.parametrize("row", ROWS, ids=[f"{i}:{r['origin'][:40]}" for i, r in enumerate(ROWS)])
def test_row(row: dict[str, Any]) -> None:
    ours = _ours(row)
    key = _key(row)
    if key in EXCEPTIONS:
        assert ours != row["expected"], f"listed as an exception ({EXCEPTIONS[key]}) but agrees"
    else:
        assert ours == row["expected"], f"gold={row['gold']!r} pred={row['pred'][-300:]!r}"


def test_agreement_rate() -> None:
    agree = sum(_ours(r) == r["expected"] for r in ROWS)
    peer = sum(r["math_verify_0_9_0"] == r["expected"] for r in ROWS)
    print(
        f"other graders: {agree}/{len(ROWS)} rows agree ({agree / len(ROWS):.1%}); "
        f"math-verify 0.9.0: {peer}/{len(ROWS)}"
    )
    assert set(EXCEPTIONS) <= {_key(r) for r in ROWS}
    assert len(ROWS) == 282
    # Every row outside EXCEPTIONS agrees (test_row); this keeps the list short.
    # Issue 22 (class 6) made one more row an exception: a tiny difference
    # between constants is a difference, where MARIO_EVAL grades numerically.
    assert len(EXCEPTIONS) <= 13
    assert agree >= 269
