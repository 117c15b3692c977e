"""Does process supervision help? Outcome-only GRPO against outcome + process GRPO.

Both train the embedded chain-of-sums task (``grpo-fast train --task chain``:
sums of 4 or 5 two-digit numbers answered as partial sums, ``37+45=82,
82+19=101 #### 101``) from the same warm-started tiny model, with the same
steps, batch, learning rate and seeds; they differ only in the advantages:

- outcome: GRPO's, one per completion (1 for the right final answer);
- process: the same plus ``--process-reward arithmetic``: every partial sum is
  a step checked by :func:`grpo_fast.check_steps`, and DeepSeekMath's
  step-level advantages (weight ``--weight``) are added on the tokens.

Each run logs the held-out accuracy (greedy decoding, ``--eval-size`` prompts
of ``chain_eval.jsonl``) every ``--eval-every`` steps. The script writes the
curves (mean and min-max over seeds) to one figure, the numbers to a JSON
file, and prints how many steps outcome + process needed to reach the
outcome-only run's final accuracy (the goal: at most 70% of them).

    .venv/bin/python benches/bench_process_reward.py [--steps 400] [--lr 3e-5] [--workers 2]

The defaults are the run in the README (``benches/process_reward.png``);
``benches/process_reward_short.json`` holds two shorter runs
(``--steps 150 --prompts 4 --eval-every 25 --eval-size 300`` with ``--lr 5e-5``
and ``--lr 3e-5``).

Runs are processes (``--workers`` at a time, one torch thread each), so the
wall time is about ``6 runs x per-run time / workers``.
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
VARIANTS = ("outcome", "process")


def run(variant: str, seed: int, args: argparse.Namespace, out: str) -> dict:
    """One training run; returns its held-out accuracy curve and step metrics."""
    os.environ.setdefault("GRPO_FAST_NUM_THREADS", "1")
    from grpo_fast.train.data import TASKS
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    cfg = TrainerConfig(
        **TASKS["chain"],
        max_steps=args.steps,
        prompts_per_step=args.prompts,
        num_generations=args.group,
        learning_rate=args.lr,
        warmup_steps=args.warmup,
        temperature=args.temperature,
        seed=seed,
        eval_every=args.eval_every,
        eval_size=args.eval_size,
        process_reward="arithmetic" if variant == "process" else None,
        process_reward_weight=args.weight,
        output_dir=str(Path(out) / f"{variant}-{seed}"),
        torch_threads=1,
        progress=False,
        plot=False,
    )
    t0 = time.perf_counter()
    history = Trainer(cfg).train()
    seconds = time.perf_counter() - t0
    curve = [[r["step"], r["eval_accuracy"]] for r in history if "eval_accuracy" in r]
    train = [r for r in history if "reward_mean" in r]
    return {
        "variant": variant,
        "seed": seed,
        "curve": curve,
        "seconds": seconds,
        # On-policy (sampled) share of right answers and, with process rewards, of wrong steps.
        "solve_rate": [r["solve_rate"] for r in train],
        "frac_wrong_steps": [r.get("steps/frac_wrong") for r in train],
    }


def steps_to_reach(steps: np.ndarray, acc: np.ndarray, target: float) -> int | None:
    """The first evaluated step whose accuracy is at least ``target``."""
    hit = np.flatnonzero(acc >= target - 1e-9)
    return int(steps[hit[0]]) if len(hit) else None


def summarise(results: list[dict], args: argparse.Namespace) -> dict:
    curves = {}
    for v in VARIANTS:
        runs = sorted((r for r in results if r["variant"] == v), key=lambda r: r["seed"])
        steps = np.array([s for s, _ in runs[0]["curve"]])
        acc = np.array([[a for _, a in r["curve"]] for r in runs])
        curves[v] = (steps, acc)
    steps, out_acc = curves["outcome"]
    _, pro_acc = curves["process"]
    target = float(out_acc.mean(0)[-1])
    reached = steps_to_reach(steps, pro_acc.mean(0), target)
    summary = {
        "config": {
            k: getattr(args, k)
            for k in (
                "steps",
                "prompts",
                "group",
                "lr",
                "warmup",
                "temperature",
                "weight",
                "eval_every",
                "eval_size",
            )
        },
        "seeds": args.seeds,
        "steps": steps.tolist(),
        "accuracy": {v: curves[v][1].tolist() for v in VARIANTS},
        "outcome_final_mean": target,
        "process_final_mean": float(pro_acc.mean(0)[-1]),
        "process_steps_to_outcome_final": reached,
        "fraction_of_steps": None if reached is None else reached / int(steps[-1]),
        "per_seed_steps_to_own_outcome_final": [
            steps_to_reach(steps, p, float(o[-1])) for o, p in zip(out_acc, pro_acc, strict=True)
        ],
        "seconds": {f"{r['variant']}-{r['seed']}": round(r["seconds"], 1) for r in results},
        # Per run, the sampled solve rate averaged over blocks of `eval_every` steps.
        "train_solve_rate": {
            f"{r['variant']}-{r['seed']}": [
                round(float(np.mean(r["solve_rate"][k : k + args.eval_every])), 4)
                for k in range(0, len(r["solve_rate"]), args.eval_every)
            ]
            for r in results
        },
    }
    return summary


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array(summary["steps"])
    fig, ax = plt.subplots(figsize=(6.4, 4.0), dpi=120)
    labels = {"outcome": "outcome only", "process": "outcome + process (arithmetic steps)"}
    for v, color in zip(VARIANTS, ("tab:blue", "tab:orange"), strict=True):
        acc = np.array(summary["accuracy"][v])
        ax.plot(steps, acc.mean(0), color=color, label=f"{labels[v]}, mean of {len(acc)} seeds")
        ax.fill_between(steps, acc.min(0), acc.max(0), color=color, alpha=0.2, lw=0)
    ax.axhline(summary["outcome_final_mean"], color="gray", ls=":", lw=1)
    c = summary["config"]
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(f"held-out accuracy (greedy, {c['eval_size']} prompts)")
    ax.set_title(
        f"chain-of-sums task: {c['prompts']} prompts x {c['group']} samples, lr {c['lr']:g}, "
        f"T {c['temperature']:g}, process weight {c['weight']:g}",
        fontsize=9,
    )
    ax.legend(loc="lower right", fontsize=8)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=400)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--group", type=int, default=8, help="samples per prompt")
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--warmup", type=int, default=10, help="linear warmup steps")
    parser.add_argument("--temperature", type=float, default=0.7, help="sampling temperature")
    parser.add_argument("--weight", type=float, default=1.0, help="process advantage weight")
    parser.add_argument("--eval-every", type=int, default=50)
    parser.add_argument("--eval-size", type=int, default=500)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "process_reward")
    args = parser.parse_args()

    jobs = [(v, s) for s in args.seeds for v in VARIANTS]
    results = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = get_context("spawn")
        with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool:
            futures = [pool.submit(run, v, s, args, tmp) for v, s in jobs]
            for f in futures:
                r = f.result()
                results.append(r)
                final = r["curve"][-1][1]
                print(
                    f"{r['variant']:8s} seed {r['seed']}: final {final:.3f} ({r['seconds']:.0f} s)"
                )
    summary = summarise(results, args)
    summary["wall_seconds"] = round(time.perf_counter() - t0, 1)
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(summary, args.out.with_suffix(".png"))
    steps = summary["steps"]
    for v in VARIANTS:
        acc = np.array(summary["accuracy"][v])
        row = " ".join(f"{a:.3f}" for a in acc.mean(0))
        print(f"{v:8s} mean accuracy at steps {steps[0]}..{steps[-1]}: {row}")
    reached = summary["process_steps_to_outcome_final"]
    frac = summary["fraction_of_steps"]
    print(
        f"outcome-only final accuracy {summary['outcome_final_mean']:.3f} at step {steps[-1]}; "
        + (
            f"outcome + process reached it at step {reached} ({frac:.0%} of the steps)"
            if reached is not None
            else "outcome + process did not reach it"
        )
        + f"; wall time {summary['wall_seconds'] / 60:.1f} min"
    )
    print(f"wrote {args.out.with_suffix('.png')} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
