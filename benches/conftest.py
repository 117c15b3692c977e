"""Shared benchmark plumbing: after a run, print each benchmark group's
median times as ratios against the grpo-fast entry of the same group, and
against the machine's memory bandwidth where a benchmark says how many bytes
it moves.

A benchmark takes part by naming its group (``@pytest.mark.benchmark(group=...)``)
and calling ``benchmark.extra_info["impl"] = "grpo-fast"`` (or the peer's name).
One that sets ``extra_info["moved_bytes"]`` (bytes read plus bytes written)
also gets "x of the copy floor": its time over the time the bandwidth of a
plain ``np.copyto`` of the same run (a benchmark with
``extra_info["copy_floor"] = True``) would take for those bytes.
"""

from __future__ import annotations

import os
from collections import defaultdict


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    session = getattr(config, "_benchmarksession", None)
    if session is None or not session.benchmarks:
        return
    groups: dict[str, dict[str, tuple[float, int | None]]] = defaultdict(dict)
    bandwidth = None
    for bench in session.benchmarks:
        impl = bench.extra_info.get("impl")
        if impl is None or bench.stats is None:
            continue
        moved = bench.extra_info.get("moved_bytes")
        groups[bench.group or bench.name][impl] = (bench.stats.median, moved)
        if bench.extra_info.get("copy_floor"):
            bandwidth = moved / bench.stats.median
    if not groups:
        return
    tr = terminalreporter
    tr.section("ratios against grpo-fast (median time; >1 means grpo-fast is faster)")
    if bandwidth:
        tr.write_line(
            f"copy floor: {bandwidth / 1e9:.1f} GB/s read + written by np.copyto in this run; "
            f"'x floor' = time / (bytes moved / that bandwidth)"
        )
    for name, impls in sorted(groups.items()):
        ours = impls.get("grpo-fast", (None, None))[0]
        tr.write_line(f"{name}:")
        for impl, (median, moved) in sorted(impls.items(), key=lambda kv: kv[1][0]):
            ratio = f"{median / ours:8.1f}x" if ours else "         "
            floor = ""
            if bandwidth and moved:
                floor = f"   {median / (moved / bandwidth):5.2f}x floor ({moved / 1e6:.1f} MB)"
            tr.write_line(f"    {impl:<34} {median * 1e3:12.4f} ms {ratio}{floor}")
    tr.write_line(f"load average (1, 5, 15 min): {os.getloadavg()}")
