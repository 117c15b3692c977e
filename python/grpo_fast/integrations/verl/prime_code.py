"""verl's ``verl.utils.reward_score.prime_code.compute_score`` for
prime_code-style data (APPS / TACO / CodeContests ``{"inputs", "outputs",
"fn_name"?}``, a dict or its JSON), run in grpo-fast's sandbox.

Same signature and return shape as verl's: ``(success, metadata)``, where
``success`` is True/False, or with ``continuous=True`` the fraction of test
cases passed (verl scores at most the first 10 cases that way; this scores
all of them). One difference: the code is the completion's last
```` ```python ```` block and a completion without one scores False / 0.0,
where verl runs the whole text as code.

Examples
--------
>>> tests = {"inputs": ["3\\n"], "outputs": ["6\\n"]}
>>> compute_score("```python\\nprint(int(input()) * 2)\\n```", tests)
(True, [{'passed': 1, 'total': 1, 'reason': None}])
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from grpo_fast.code import verify_code_batch

__all__ = ["compute_score", "compute_score_batch"]


def compute_score(
    completion: str, test_cases: Any, continuous: bool = False
) -> tuple[bool | float, list[dict[str, Any]]]:
    """verl's prime_code ``compute_score``: ``(success, metadata)``."""
    return compute_score_batch([completion], [test_cases], continuous=continuous)[0]


def compute_score_batch(
    completions: Sequence[str], test_cases: Sequence[Any], continuous: bool = False
) -> list[tuple[bool | float, list[dict[str, Any]]]]:
    """:func:`compute_score` for a batch, every run in one sandbox call."""
    out: list[tuple[bool | float, list[dict[str, Any]]]] = []
    for v in verify_code_batch(list(completions), list(test_cases)):
        meta = [{"passed": v.passed, "total": v.total, "reason": v.reason}]
        out.append((v.fraction if continuous else v.ok, meta))
    return out
