"""Answer verification: grpo-fast against math-verify on the same pairs, same run.

Workloads:
- the conformance suite (``tests/data/conformance/math_verify_suite.jsonl``,
  or ``GRPO_FAST_CONFORMANCE``): every (gold, pred) pair, one core;
- 2,000-character completions (prose, inline math, numbers) ending in a boxed
  answer, one core; grpo-fast's per-item median is reported in µs;
- batch throughput of ``verify_batch`` at 1, 2, ... threads (scaling).

- against verl's ``math_reward`` (``verl.utils.reward_score.math_reward``, the
  plain-string scorer a fast-but-wrong baseline sets), same run, one thread:
  2,000- and 16,000-character completions in GRPO groups of 8 (eight different
  completions share one gold, as a trainer scores them), through
  ``verify_batch`` and through ``verify`` one call each; a row with a different
  gold per completion (no group) is printed too.

Goals (issue "The verifier"): >= 1,000x math-verify's single-core throughput
on the suite; <= 5 µs median per 2,000-char completion on one core; batch
throughput scaling with threads. Issue 9 ("Speed"): ``verify_batch`` >= 3x
verl's ``math_reward`` at 2,000 characters and >= 8x at 16,000, per-item
``verify`` >= 1.5x.

Run with ``make bench`` (pytest-benchmark; ratios are printed by
benches/conftest.py), or ``python benches/bench_verify.py`` for a plain
summary with the ratios and per-item times.
"""

from __future__ import annotations

import json
import os
import random
import statistics
import time
from pathlib import Path

import pytest

import grpo_fast

SUITE = Path(
    os.environ.get(
        "GRPO_FAST_CONFORMANCE",
        Path(__file__).parents[1] / "tests" / "data" / "conformance" / "math_verify_suite.jsonl",
    )
)
WORDS = (
    "we first note that the sum of the two terms is equal to the product so "
    "dividing both sides gives us a cleaner form and then substituting back yields"
).split()


def suite_pairs() -> list[tuple[str, str]]:
    if not SUITE.exists():
        pytest.skip(f"conformance suite not found at {SUITE}")
    rows = [json.loads(line) for line in SUITE.read_text().splitlines() if line.strip()]
    return [(r["gold"], r["pred"]) for r in rows]


def long_completions(
    n: int, length: int = 2_000, seed: int = 0, group: int = 1
) -> tuple[list[str], list[str]]:
    """Completions of about ``length`` characters ending in a boxed fraction;
    each run of ``group`` completions (different texts) shares one gold."""
    rng = random.Random(seed)
    preds, golds = [], []
    a = b = 1
    for i in range(n):
        if i % group == 0:
            a, b = rng.randint(1, 999), rng.randint(1, 999)
        parts: list[str] = []
        size = 0
        while size < length - 40:
            r = rng.random()
            if r < 0.1:
                piece = (
                    f"${rng.randint(1, 99)} \\cdot {rng.randint(1, 99)} = x_{rng.randint(1, 9)}$"
                )
            elif r < 0.2:
                piece = str(rng.randint(0, 10_000))
            else:
                piece = rng.choice(WORDS)
            parts.append(piece)
            size += len(piece) + 1
        text = " ".join(parts) + f". Therefore the answer is $\\boxed{{\\frac{{{a}}}{{{b}}}}}$."
        preds.append(text)
        golds.append(f"\\frac{{{a}}}{{{b}}}")
    return golds, preds


def _mixed_answer(rng: random.Random, kind: str) -> tuple[str, str, str]:
    """(gold, a right answer, a wrong answer) of one kind. The right answer is
    the gold's text half the time and an equivalent spelling otherwise; the
    wrong one is a near miss of the same kind, as a policy early in training
    writes them."""
    a, b = rng.randint(2, 60), rng.randint(2, 60)
    c = a + rng.randint(1, 9)
    if kind == "integer":
        gold = str(a * b)
        return gold, rng.choice([gold, f"{a * b}.0"]), str(a * b + rng.choice([-2, -1, 1, 3]))
    if kind == "fraction":
        gold = f"\\frac{{{a}}}{{{c}}}"
        return gold, rng.choice([gold, f"\\dfrac{{{2 * a}}}{{{2 * c}}}"]), f"\\frac{{{c}}}{{{a}}}"
    if kind == "root":
        gold = f"{a}\\sqrt{{2}}"
        return gold, rng.choice([gold, f"\\sqrt{{{2 * a * a}}}"]), f"{a}\\sqrt{{3}}"
    if kind == "tuple":
        gold = f"({a}, {c})"
        return gold, rng.choice([gold, f"\\left({a},{c}\\right)"]), f"({c}, {a})"
    if kind == "interval":
        gold = f"[{a}, {c})"
        return gold, rng.choice([gold, f"\\left[{a}, {c}\\right)"]), f"({a}, {c}]"
    gold = f"\\frac{{{a}\\pi}}{{{c}}}"
    return gold, rng.choice([gold, f"\\frac{{{a}}}{{{c}}}\\pi"]), f"\\frac{{{c}\\pi}}{{{a}}}"


MIXED_KINDS = ("integer", "fraction", "root", "tuple", "interval", "pi")


def mixed_completions(
    n: int, length: int = 2_000, seed: int = 0, group: int = 8
) -> tuple[list[str], list[str], list[bool]]:
    """Completions of about ``length`` characters ending in a boxed answer of a
    mixed kind (integers, fractions, roots, tuples, intervals, multiples of
    pi), half of them wrong; each run of ``group`` completions shares one gold.
    Returns golds, completions and whether each completion is right."""
    rng = random.Random(seed)
    golds, preds, right = [], [], []
    gold = good = bad = ""
    for i in range(n):
        if i % group == 0:
            gold, good, bad = _mixed_answer(rng, MIXED_KINDS[(i // group) % len(MIXED_KINDS)])
        ok = i % 2 == 0
        prose, _ = long_completions(1, length, seed=rng.randrange(1 << 30))[1][0].rsplit(
            "Therefore", 1
        )
        preds.append(f"{prose}Therefore the answer is $\\boxed{{{good if ok else bad}}}$.")
        golds.append(gold)
        right.append(ok)
    return golds, preds, right


def _math_verify():
    return pytest.importorskip("math_verify")


def mv_verify_all(mv, pairs):
    out = []
    for g, p in pairs:
        try:
            out.append(bool(mv.verify(mv.parse(g), mv.parse(p))))
        except Exception:
            out.append(False)
    return out


@pytest.fixture(autouse=True)
def _one_thread():
    before = grpo_fast.get_num_threads()
    grpo_fast.set_num_threads(1)
    yield
    grpo_fast.set_num_threads(before)


@pytest.mark.parametrize("impl", ["grpo-fast", "grpo-fast scalar loop", "math-verify"])
def test_suite_one_core(benchmark, impl):
    pairs = suite_pairs()
    golds, preds = [g for g, _ in pairs], [p for _, p in pairs]
    benchmark.group = f"conformance suite, {len(pairs)} pairs, one core"
    benchmark.extra_info["impl"] = impl
    if impl == "grpo-fast":
        benchmark(grpo_fast.verify_batch, golds, preds)
    elif impl == "grpo-fast scalar loop":
        benchmark(lambda: [grpo_fast.verify(g, p) for g, p in pairs])
    else:
        mv = _math_verify()
        benchmark.pedantic(mv_verify_all, args=(mv, pairs), rounds=2, iterations=1)


@pytest.mark.parametrize("impl", ["grpo-fast", "math-verify"])
def test_long_completions_one_core(benchmark, impl):
    # The same 1,000 completions for both, so the printed ratio is per item.
    n = 1_000
    golds, preds = long_completions(n)
    benchmark.group = "2,000-char completions ending in a box, per item, one core"
    benchmark.extra_info["impl"] = impl
    if impl == "grpo-fast":
        out = benchmark(grpo_fast.verify_batch, golds, preds)
        assert out.tolist() == [1.0] * n
    else:
        mv = _math_verify()
        out = benchmark.pedantic(
            mv_verify_all, args=(mv, list(zip(golds, preds, strict=True))), rounds=1, iterations=1
        )
    benchmark.extra_info["items"] = n


@pytest.mark.parametrize("impl", ["grpo-fast", "grpo-fast scalar loop", "verl math_reward"])
@pytest.mark.parametrize("length", [2_000, 16_000])
def test_vs_verl_one_core(benchmark, impl, length):
    # GRPO groups of 8 completions per gold, the same items for every impl.
    golds, preds = long_completions(800, length, group=8)
    benchmark.group = f"{length:,}-char completions, groups of 8, vs verl math_reward, one core"
    benchmark.extra_info["impl"] = impl
    if impl == "grpo-fast":
        out = benchmark(grpo_fast.verify_batch, golds, preds)
        assert out.tolist() == [1.0] * len(preds)
    elif impl == "grpo-fast scalar loop":
        benchmark(lambda: [grpo_fast.verify(g, p) for g, p in zip(golds, preds, strict=True)])
    else:
        math_reward = pytest.importorskip("verl.utils.reward_score.math_reward")
        out = benchmark(
            lambda: [math_reward.compute_score(p, g) for g, p in zip(golds, preds, strict=True)]
        )
        assert out == [1.0] * len(preds)


@pytest.mark.parametrize("impl", ["grpo-fast", "grpo-fast scalar loop", "verl math_reward"])
@pytest.mark.parametrize(("length", "group"), [(2_000, 8), (16_000, 8), (2_000, 1)])
def test_mixed_vs_verl_one_core(benchmark, impl, length, group):
    # Mixed answer kinds, half of them wrong (the non-match path), the same
    # items for every impl; group 1 is a different gold per completion.
    golds, preds, right = mixed_completions(480, length, group=group)
    shape = "groups of 8" if group > 1 else "one gold each"
    benchmark.group = f"{length:,}-char mixed answers, half wrong, {shape}, vs verl, one core"
    benchmark.extra_info["impl"] = impl
    if impl == "grpo-fast":
        out = benchmark(grpo_fast.verify_batch, golds, preds)
        assert out.tolist() == [float(r) for r in right]
    elif impl == "grpo-fast scalar loop":
        benchmark(lambda: [grpo_fast.verify(g, p) for g, p in zip(golds, preds, strict=True)])
    else:
        math_reward = pytest.importorskip("verl.utils.reward_score.math_reward")
        benchmark(
            lambda: [math_reward.compute_score(p, g) for g, p in zip(golds, preds, strict=True)]
        )


@pytest.mark.parametrize("threads", [1, 2, 4])
def test_batch_thread_scaling(benchmark, threads):
    golds, preds = long_completions(4_000)
    grpo_fast.set_num_threads(threads)
    benchmark.group = "verify_batch, 4,000 x 2,000-char completions, threads"
    benchmark.extra_info["impl"] = "grpo-fast" if threads == 1 else f"grpo-fast {threads} threads"
    benchmark(grpo_fast.verify_batch, golds, preds)


# ---------------------------------------------------------------- script mode


def _median(fn, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _row(name: str, seconds_per_item: float, note: str = "") -> None:
    rate = 1 / seconds_per_item
    print(f"  {name:<28} {seconds_per_item * 1e6:10.2f} µs/item {rate:12,.0f}/s  {note}")


def main() -> None:
    import math_verify as mv

    grpo_fast.set_num_threads(1)
    pairs = suite_pairs()
    golds, preds = [g for g, _ in pairs], [p for _, p in pairs]
    ours = _median(lambda: grpo_fast.verify_batch(golds, preds), 21) / len(pairs)
    theirs = _median(lambda: mv_verify_all(mv, pairs), 3) / len(pairs)
    print(f"conformance suite ({len(pairs)} pairs), one core:")
    _row("grpo-fast verify_batch", ours)
    _row("math-verify", theirs)
    print(f"  ratio {theirs / ours:,.0f}x (goal >= 1,000x)")

    n = 2_000
    golds, preds = long_completions(n)
    batch = _median(lambda: grpo_fast.verify_batch(golds, preds), 11) / n
    extract = _median(lambda: [grpo_fast.extract_answer(p) for p in preds], 5) / n
    single = []
    for g, p in zip(golds[:500], preds[:500], strict=True):
        t = time.perf_counter_ns()
        grpo_fast.verify(g, p)
        single.append((time.perf_counter_ns() - t) * 1e-9)
    mv_n = 100
    sub = list(zip(golds[:mv_n], preds[:mv_n], strict=True))
    mv_time = _median(lambda: mv_verify_all(mv, sub), 1) / mv_n
    print(f"2,000-char completions ending in a box ({n}), one core:")
    _row("grpo-fast verify_batch", batch, "(goal <= 5 µs)")
    _row("grpo-fast verify, median", statistics.median(single), "(one call each, Python)")
    _row("grpo-fast extract_answer", extract, "(one call each, Python)")
    _row("math-verify", mv_time)
    print(f"  ratio {mv_time / batch:,.0f}x")

    vs_verl()

    golds, preds = long_completions(8_000)
    base = None
    print("verify_batch thread scaling (8,000 x 2,000 chars):")
    for threads in sorted({1, 2, 4, os.cpu_count() or 1}):
        grpo_fast.set_num_threads(threads)
        t = _median(lambda: grpo_fast.verify_batch(golds, preds), 7)
        base = base or t
        print(f"  {threads:3d} threads {len(preds) / t:12,.0f} items/s  speedup {base / t:5.2f}x")


def vs_verl() -> None:
    """grpo-fast against verl's math_reward on the same items, one thread."""
    try:
        from verl.utils.reward_score import math_reward
    except ImportError:
        print("verl not installed: no comparison with its math_reward")
        return

    def verl_all(golds, preds):
        return [math_reward.compute_score(p, g) for g, p in zip(golds, preds, strict=True)]

    def one_call_each(golds, preds):
        return [grpo_fast.verify(g, p) for g, p in zip(golds, preds, strict=True)]

    def per_item(fn, golds, preds, rounds):
        return _median(lambda: fn(golds, preds), rounds) / len(preds)

    def compare(title, golds, preds, group, length):
        theirs = per_item(verl_all, golds, preds, 5)
        batch = per_item(grpo_fast.verify_batch, golds, preds, 11)
        single = per_item(one_call_each, golds, preds, 5)
        shape = "groups of 8" if group > 1 else "one gold each"
        print(f" {length:,} chars, {title}{shape}:")
        _row("verl math_reward", theirs)
        _row("grpo-fast verify_batch", batch, f"ratio {theirs / batch:5.2f}x")
        _row("grpo-fast verify (per item)", single, f"ratio {theirs / single:5.2f}x")

    print("against verl's math_reward, one thread (same items, same run):")
    goals = {2_000: 3.0, 16_000: 8.0}
    shapes = [(2_000, 8), (16_000, 8), (2_000, 1), (16_000, 1)]
    for length, group in shapes:
        golds, preds = long_completions(2_000, length, seed=1, group=group)
        compare("", golds, preds, group, length)
        if group > 1:
            print(f"  (goal: verify_batch >= {goals[length]:.0f}x, verify >= 1.5x)")
    for length, group in shapes:
        golds, preds, right = mixed_completions(2_000, length, seed=1, group=group)
        got = grpo_fast.verify_batch(golds, preds).tolist()
        assert got == [float(r) for r in right], "mixed workload: a wrong verdict"
        compare("mixed kinds, half wrong, ", golds, preds, group, length)
        if group > 1:
            print(f"  (goal: verify_batch >= {goals[length]:.0f}x, verify >= 1.5x)")
        else:
            print("  (goal: verify >= 1.5x)")


if __name__ == "__main__":
    main()
