"""Time every input of the fuzz corpus through the release build: the slowest calls.

libFuzzer's own timings come from an instrumented build with debug assertions,
on a machine it shares (a starved run reports a slow unit that is not one).
This reads each input as the ``verify`` target does (``gold NUL completion``;
no NUL: the text is both) and times, in the installed ``grpo_fast``, what the
target calls: ``verify``, ``verify(..., think=False)`` when the text has a
reasoning tag, and ``check_steps`` on the whole input. It prints the slowest
inputs and the largest time per call (the verifier's goal: every call at most
50 ms)::

    python scripts/fuzz_timing.py [CORPUS_DIR ...]   # default: rust/fuzz/corpus/verify
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import grpo_fast

ROOT = Path(__file__).resolve().parents[1]


def calls(data: bytes):
    """The calls the fuzz target makes on one input, as (name, thunk) pairs."""
    text = data.decode("utf-8", "replace")
    gold, sep, pred = text.partition("\0")
    if not sep:
        gold = pred = text
    yield "verify", lambda: grpo_fast.verify(gold, pred)
    if "think>" in pred:
        yield "verify think=False", lambda: grpo_fast.verify(gold, pred, think=False)
    yield "check_steps", lambda: grpo_fast.check_steps([text])


def main(dirs: list[Path]) -> None:
    grpo_fast.set_num_threads(1)
    timings: list[tuple[float, str, Path]] = []
    n = 0
    for d in dirs:
        for path in sorted(d.iterdir()):
            n += 1
            for name, call in calls(path.read_bytes()):
                t = time.perf_counter()
                call()
                timings.append((time.perf_counter() - t, name, path))
    if not timings:
        sys.exit(f"no inputs in {', '.join(map(str, dirs))}")
    timings.sort(reverse=True)
    print(f"{n:,} inputs, {len(timings):,} calls; slowest:")
    for seconds, name, path in timings[:10]:
        print(f"  {seconds * 1e3:8.2f} ms  {name:<20} {path.name} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]] or [ROOT / "rust" / "fuzz" / "corpus" / "verify"]
    main(args)
