"""Shared benchmark plumbing: after a run, print each benchmark group's
median times as ratios against the grpo-fast entry of the same group.

A benchmark takes part by naming its group (``@pytest.mark.benchmark(group=...)``)
and calling ``benchmark.extra_info["impl"] = "grpo-fast"`` (or the peer's name).
"""

from __future__ import annotations

from collections import defaultdict


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    groups: dict[str, dict[str, float]] = defaultdict(dict)
    for bench in session.benchmarks:
        impl = bench.extra_info.get("impl")
        if impl is None or bench.stats is None:
            continue
        groups[bench.group or bench.name][impl] = bench.stats.median
    if not groups:
        return
    tr = terminalreporter
    tr.section("ratios against grpo-fast (median time; >1 means grpo-fast is faster)")
    for name, impls in sorted(groups.items()):
        ours = impls.get("grpo-fast")
        tr.write_line(f"{name}:")
        for impl, median in sorted(impls.items(), key=lambda kv: kv[1]):
            ratio = f"{median / ours:8.1f}x" if ours else "        "
            tr.write_line(f"    {impl:<34} {median * 1e3:12.4f} ms {ratio}")
