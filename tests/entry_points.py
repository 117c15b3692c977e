"""Every entry point a trainer scores an answer through, for the case files.

The "which answer counts" tests (docs/verify_semantics.md) write (gold,
completion) pairs by hand and score each one through every way a trainer
calls the verifier: the plain and batch APIs, the reward specs, the TRL /
verl / OpenRLHF drop-ins and the math-verify compatible API. A case that must
not be paid must score below 1.0 everywhere; a case that must be paid must
score 1.0 everywhere, so that a fix which voids too much fails too. A case
file reads (tests/ is on sys.path under pytest, so this module imports by its
plain name)::

    from entry_points import assert_not_paid, assert_paid, cases, each_entry_point

    @each_entry_point
    @cases(NOT_PAID)
    def test_not_paid(entry, gold, completion):
        assert_not_paid(entry, gold, completion)

    @each_entry_point
    @cases(PAID, ids="gold|completion")
    def test_paid(entry, gold, completion, request):
        assert_paid(entry, gold, completion, request)

- ``ENTRY_POINTS``: name -> ``f(gold, completion) -> reward`` (1.0 for a paid answer).
- ``each_entry_point``: parametrizes ``entry`` over the names, sorted.
- ``cases(rows, ids=...)``: parametrizes ``gold, completion`` over ``rows``; each case
  is named by its completion, or ``"gold|completion"`` where one completion comes
  with several golds.
- ``score(entry, gold, completion)``: the reward (skips OpenRLHF without torch).
- ``assert_not_paid`` / ``assert_paid``: the two verdicts; ``assert_paid`` first
  calls ``skip_if_not_read``, which skips or marks xfail what an entry point does
  not read by contract (TRL reads anchored answers only; the math-verify
  compatible parse drops text and a letter with its option's text).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Literal

import pytest

import grpo_fast
from grpo_fast import rewards
from grpo_fast.compat import math_verify as mv_compat
from grpo_fast.integrations import openrlhf, trl, verl
from grpo_fast.names import ANCHORED_RULES


def _openrlhf_score(gold: str, completion: str) -> float:
    prompt = "Question: what is it?\n"
    out = openrlhf.reward_func([prompt + completion], [prompt], [gold])
    return float(out["rewards"][0])


def _entry_points() -> dict[str, Callable[[str, str], float]]:
    """name -> f(gold, completion) -> reward (1.0 for a paid answer)."""
    math_reward = rewards.combine([rewards.MathReward()])
    return {
        "verify": lambda g, p: float(grpo_fast.verify(g, p)),
        "verify_detailed": lambda g, p: float(grpo_fast.verify_detailed(g, p).matched),
        "verify_batch": lambda g, p: float(grpo_fast.verify_batch([g, g], [p, p])[1]),
        "MathReward.score_batch": lambda g, p: float(math_reward.score_batch([p], [g]).total[0]),
        "trl.accuracy_reward": lambda g, p: trl.accuracy_reward([p], solution=[g])[0] or 0.0,
        # judge="grpo_fast": the lenient judge reads every answer form, so it
        # is the one a hedge could slip through (verl's own judge for MATH
        # reads only boxes).
        "verl.compute_score": lambda g, p: float(
            verl.compute_score("lighteval/MATH", p, g, judge="grpo_fast")
        ),
        "openrlhf.reward_func": _openrlhf_score,
        "compat.math_verify": lambda g, p: float(
            mv_compat.verify(mv_compat.parse(g), mv_compat.parse(p))
        ),
    }


ENTRY_POINTS = _entry_points()

each_entry_point = pytest.mark.parametrize("entry", sorted(ENTRY_POINTS))


def cases(
    rows: Sequence[tuple[str, str]], *, ids: Literal["completion", "gold|completion"] = "completion"
) -> pytest.MarkDecorator:
    """Parametrize ``gold, completion`` over ``rows``, each named as ``ids`` says."""
    if ids == "completion":
        names = [p for _, p in rows]
    else:
        names = [f"{g}|{p}" for g, p in rows]
    return pytest.mark.parametrize(("gold", "completion"), rows, ids=names)


def score(entry: str, gold: str, completion: str) -> float:
    """The reward ``entry`` gives ``completion`` against ``gold``."""
    if entry == "openrlhf.reward_func":
        pytest.importorskip("torch")
    return ENTRY_POINTS[entry](gold, completion)


def assert_not_paid(entry: str, gold: str, completion: str) -> None:
    """``entry`` scores ``completion`` below 1.0 (and not NaN)."""
    got = score(entry, gold, completion)
    assert not math.isnan(got)
    assert got < 1.0, f"{entry} pays {completion!r} against {gold!r}"


# The math-verify compatible parse() reads a gold as it reads a completion and
# keeps only what parses as one value, as math-verify does: a gold of several
# words and a letter with its option's text give no answer there.
COMPAT_PARSE = {
    "Answer: (C) 42",
    "the answer is (C) 4.2 m",
    r"\boxed{New York}",
    r"\boxed{\text{New York}}",
    "The answer is New York.",
    r"\boxed{\text{All odd positive integers.}}",
}


def skip_if_not_read(entry: str, completion: str, request: pytest.FixtureRequest) -> None:
    """Skip (or mark xfail) where ``entry`` does not read ``completion`` by contract."""
    if entry == "openrlhf.reward_func":
        pytest.importorskip("torch")
    if entry == "compat.math_verify" and completion in COMPAT_PARSE:
        reason = (
            "owner wt-compat: compat.math_verify.parse drops answers that are text or a "
            "letter with its option (math-verify's parse() shape); verify() pays them"
        )
        request.applymarker(pytest.mark.xfail(strict=False, reason=reason))
    if entry == "trl.accuracy_reward":
        found = grpo_fast.extract_answer(completion)
        if found is None or found.rule not in ANCHORED_RULES:
            pytest.skip("TRL's accuracy_reward reads anchored answers only")


def assert_paid(entry: str, gold: str, completion: str, request: pytest.FixtureRequest) -> None:
    """``entry`` scores ``completion`` 1.0, where it reads it (``skip_if_not_read``)."""
    skip_if_not_read(entry, completion, request)
    assert ENTRY_POINTS[entry](gold, completion) == 1.0, f"{entry}: {completion!r}"
