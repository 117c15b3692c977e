"""TRL's ``accuracy_reward`` (math-verify, sympy) against grpo-fast's drop-in, same run.

1,024 chat-format completions of about 2,000 characters (reasoning prose, then
a boxed answer: integers, fractions, roots, multiples of pi; half right), the
gold in a ``solution`` column, as GRPOTrainer passes them. Every round scores
fresh strings, so math-verify's parse caches do not carry over between rounds.
Both functions must return the same rewards: a benchmark of a wrong answer is
no benchmark. Run with ``make bench`` or
``pytest benches/bench_trl_reward.py --benchmark-only``; the summary prints
the ratio (>1: grpo-fast is faster).
"""

from __future__ import annotations

import itertools
import random

import pytest

pytest.importorskip("trl")
pytest.importorskip("math_verify")

N = 1_024
LENGTH = 2_000
GROUP = "TRL accuracy_reward, 1,024 completions of ~2,000 chars"

_PROSE = (
    "Let us reason step by step. We expand the expression, collect the terms and "
    "substitute $x = 3$, then simplify $\\frac{a+b}{2}$ carefully and check each case "
    "against the constraint $a^2 + b^2 = 25$. "
)
_seeds = itertools.count()


def _answer(rng: random.Random) -> tuple[str, str]:
    """A gold and an equal prediction written differently."""
    kind = rng.randrange(4)
    if kind == 0:
        n = rng.randrange(1, 10_000)
        return str(n), str(n)
    if kind == 1:
        p, q = rng.randrange(1, 50), rng.randrange(2, 50)
        return f"\\frac{{{p}}}{{{q}}}", f"\\frac{{{2 * p}}}{{{2 * q}}}"
    if kind == 2:
        n = rng.randrange(2, 30)
        return f"2\\sqrt{{{n}}}", f"\\sqrt{{{4 * n}}}"
    n = rng.randrange(1, 99)
    return f"{n}\\pi", f"{n} \\pi"


def make_batch(seed: int) -> tuple[list[list[dict[str, str]]], list[str]]:
    rng = random.Random(seed)
    completions, solution = [], []
    for i in range(N):
        gold, pred = _answer(rng)
        if i % 2:
            pred = str(rng.randrange(10**6))  # wrong
        tail = f" Therefore the answer is $\\boxed{{{pred}}}$."
        prose = (_PROSE * (LENGTH // len(_PROSE) + 1))[: LENGTH - len(tail)]
        prose = f"[{seed}:{i}] " + prose  # unique text every round
        completions.append([{"role": "assistant", "content": prose + tail}])
        solution.append(f"${gold}$")
    return completions, solution


def _setup():
    completions, solution = make_batch(next(_seeds))
    return (completions,), {"solution": solution}


_results: dict[str, list[float | None]] = {}


@pytest.mark.parametrize("impl", ["grpo-fast", "trl accuracy_reward (math-verify)"])
def test_accuracy_reward(benchmark, impl):
    if impl == "grpo-fast":
        from grpo_fast.integrations.trl import accuracy_reward

        rounds = 10
    else:
        from trl.rewards import accuracy_reward

        rounds = 2
    benchmark.group = GROUP
    benchmark.extra_info["impl"] = impl
    out = benchmark.pedantic(accuracy_reward, setup=_setup, rounds=rounds, iterations=1)
    assert len(out) == N
    assert sum(out) == N // 2  # every right answer found, no wrong one accepted
    completions, solution = make_batch(10**6)
    _results[impl] = accuracy_reward(completions, solution=solution)
    if len(_results) == 2:
        a, b = _results.values()
        assert a == b, "the two rewards disagree on the same batch"
