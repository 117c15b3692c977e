"""Synchronous against asynchronous rollouts (``--async-rollouts``), in one run.

The demo training (the embedded tiny model, 2-digit addition, HF sampling) for
``--steps`` steps, once synchronous and once with ``--async-rollouts
--max-staleness K``, for each seed; per run:

- steps/s: steps over the summed ``time_step`` (sampling or waiting for it, plus
  the update; the evaluations at the start and the end are left out of both);
- the held-out greedy accuracy at the last step (``--eval-size`` sums: 500 give
  +-2.2 points of noise at one standard error);
- async only: the mean seconds per step the trainer waited for a batch
  (``perf/rollout_wait_s``) and the producer waited for the trainer
  (``rollout/backpressure_s``), and the mean staleness.

Then the ratio of the steps/s means and the accuracies' means and spreads.
``--device cuda`` for a GPU (scripts/gpu_check.sh). Prints a table and, with
``--json FILE``, writes the figures.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def run(args: argparse.Namespace, seed: int, async_rollouts: bool, out: Path) -> dict[str, Any]:
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    cfg = TrainerConfig(
        output_dir=str(out),
        overwrite=True,
        max_steps=args.steps,
        prompts_per_step=args.prompts_per_step,
        num_generations=args.num_generations,
        eval_size=args.eval_size,
        eval_every=0,
        save_every=0,
        keep_checkpoints=1,
        seed=seed,
        device=args.device,
        async_rollouts=async_rollouts,
        max_staleness=args.max_staleness,
        # The same loss both ways: the async default (TIS against the sampler's log-probs).
        sampler_correction="tis",
        progress=False,
        plot=False,
    )
    t0 = time.perf_counter()
    history = Trainer(cfg).train()
    wall = time.perf_counter() - t0
    steps = [r for r in history if r["step"] > 0]
    busy = sum(r["time_step"] for r in steps)
    mean = lambda key: statistics.fmean(r[key] for r in steps) if async_rollouts else None  # noqa: E731
    return {
        "seed": seed,
        "mode": f"async K={args.max_staleness}" if async_rollouts else "sync",
        "steps": len(steps),
        "steps_per_s": len(steps) / busy,
        "wall_s": wall,
        "eval_accuracy": history[-1]["eval_accuracy"],
        "trainer_wait_s": mean("perf/rollout_wait_s"),
        "producer_wait_s": mean("rollout/backpressure_s"),
        "staleness_mean": mean("sample/staleness_mean"),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--max-staleness", type=int, default=1)
    p.add_argument("--prompts-per-step", type=int, default=8)
    p.add_argument("--num-generations", type=int, default=8)
    p.add_argument("--eval-size", type=int, default=500)
    p.add_argument("--json", type=Path, default=None)
    args = p.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"cpus {os.cpu_count()}, load {load:.1f} at start; {args.steps} steps, seeds", args.seeds)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for seed in args.seeds:
            for mode in (False, True):
                r = run(args, seed, mode, Path(tmp) / f"{seed}-{int(mode)}")
                rows.append(r)
                waits = (
                    f"  trainer waited {r['trainer_wait_s']:.4f} s/step, producer "
                    f"{r['producer_wait_s']:.4f} s/step, staleness {r['staleness_mean']:.2f}"
                    if mode
                    else ""
                )
                print(
                    f"seed {seed} {r['mode']:>10}: {r['steps_per_s']:7.2f} steps/s, "
                    f"accuracy {r['eval_accuracy']:.3f}{waits}",
                    flush=True,
                )
    summary: dict[str, Any] = {}
    for mode in ("sync", f"async K={args.max_staleness}"):
        mine = [r for r in rows if r["mode"] == mode]
        acc = [r["eval_accuracy"] for r in mine]
        summary[mode] = {
            "steps_per_s": statistics.fmean(r["steps_per_s"] for r in mine),
            "accuracy_mean": statistics.fmean(acc),
            "accuracy_spread": max(acc) - min(acc),
        }
    s, a = summary["sync"], summary[f"async K={args.max_staleness}"]
    ratio = a["steps_per_s"] / s["steps_per_s"]
    print(
        f"steps/s: sync {s['steps_per_s']:.2f}, async {a['steps_per_s']:.2f} ({ratio:.2f}x); "
        f"accuracy: sync {s['accuracy_mean']:.3f} (spread {s['accuracy_spread']:.3f}), async "
        f"{a['accuracy_mean']:.3f} (spread {a['accuracy_spread']:.3f})"
    )
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"load {load:.1f} at the end")
    if args.json:
        args.json.write_text(json.dumps({"runs": rows, "summary": summary}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
