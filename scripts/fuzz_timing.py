"""Time every input of the fuzz corpus through the release build: the slowest calls.

libFuzzer's own timings come from an instrumented build with debug assertions,
on a machine it shares (a starved run reports a slow unit that is not one).
This reads each input as the ``verify`` target does (``gold NUL completion``;
no NUL: the text is both) and times, in the installed ``grpo_fast``, what the
target calls: ``verify``, ``verify(..., think=False)`` when the text has a
reasoning tag, and ``check_steps`` on the whole input. It prints the slowest
inputs and the largest time per call (the verifier's goal: every call at most
50 ms). Each call first evicts the verifier's memo of the last gold (a repeated
pair is answered from it), and the slowest are timed again, best of three::

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


def forget() -> None:
    """Evict the verifier's memo of the last gold (its parse and verdicts), so
    the next call pays for everything: a repeated call on the same pair is
    answered from it, and timing a best of several would hide the cost."""
    grpo_fast.verify("0", "0")


def main(dirs: list[Path]) -> None:
    grpo_fast.set_num_threads(1)
    # Build the lazily made tables (automata, unit names) before any timing.
    warm = "Ответ: 5 答案是 5. So $1 + 1 = 2$ and the answer is \\boxed{\\frac{3}{4}} m."
    grpo_fast.verify("3/4", warm)
    grpo_fast.check_steps([warm])
    timings: list[tuple[float, str, Path]] = []
    n = 0
    for d in dirs:
        for path in sorted(d.iterdir()):
            n += 1
            for name, call in calls(path.read_bytes()):
                forget()
                t = time.perf_counter()
                call()
                timings.append((time.perf_counter() - t, name, path))
    if not timings:
        sys.exit(f"no inputs in {', '.join(map(str, dirs))}")
    timings.sort(reverse=True)
    # One timing is noisy on a shared machine: the slowest 30 again, best of 3.
    again = []
    for _, name, path in timings[:30]:
        call = dict(calls(path.read_bytes()))[name]
        best = float("inf")
        for _ in range(3):
            forget()
            t = time.perf_counter()
            call()
            best = min(best, time.perf_counter() - t)
        again.append((best, name, path))
    again.sort(reverse=True)
    print(f"{n:,} inputs, {len(timings):,} calls; slowest (best of 3):")
    for seconds, name, path in again[:10]:
        print(f"  {seconds * 1e3:8.2f} ms  {name:<20} {path.name} ({path.stat().st_size:,} bytes)")


if __name__ == "__main__":
    args = [Path(a) for a in sys.argv[1:]] or [ROOT / "rust" / "fuzz" / "corpus" / "verify"]
    main(args)
