"""Does the tool pay? GRPO with the ``calc`` tool against GRPO without it.

Both train the embedded ``multiply`` task (``grpo-fast train --task multiply``:
products of two 2-digit numbers, ``23*17=``) from the same warm-started tiny
model (``scripts/make_tool_model.py``), with the same steps, batch, learning
rate and seeds; they differ only in ``--tool``:

- tool: ``calc`` is registered; a rollout that writes a ``<tool_call>`` gets
  the tool's result and goes on (multi-turn, tool tokens masked from the loss);
- no tool: the same model, no tool registered; a call is just text that ends
  the turn unanswered, so the model must multiply in its head.

Each run logs the held-out accuracy (greedy decoding, ``--eval-size`` prompts
of ``multiply_eval.jsonl``) every ``--eval-every`` steps and, with the tool,
the share of rollouts that call it (``tools/episodes_with_call``). Writes the
curves to a PNG and the numbers to a JSON file.

    .venv/bin/python benches/bench_tools.py [--steps 30] [--seeds 0 1] [--workers 2]
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
VARIANTS = ("tool", "no_tool")


def run(variant: str, seed: int, args: argparse.Namespace, out: str) -> dict:
    """One training run; its held-out accuracy curve and tool-use share per step."""
    os.environ.setdefault("GRPO_FAST_NUM_THREADS", "1")
    from grpo_fast.train.data import task_options
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    options = task_options("multiply")
    if variant == "no_tool":
        options["tool"] = ()
    cfg = TrainerConfig(
        **{
            **options,
            "max_steps": args.steps,
            "prompts_per_step": args.prompts,
            "num_generations": args.group,
            "learning_rate": args.lr,
            "temperature": args.temperature,
            "seed": seed,
            "eval_every": args.eval_every,
            "eval_size": args.eval_size,
            "output_dir": str(Path(out) / f"{variant}-{seed}"),
            "torch_threads": 1,
            "progress": False,
            "plot": False,
        }
    )
    t0 = time.perf_counter()
    history = Trainer(cfg).train()
    seconds = time.perf_counter() - t0
    curve = [[r["step"], r["eval_accuracy"]] for r in history if "eval_accuracy" in r]
    train = [r for r in history if "reward" in r]
    return {
        "variant": variant,
        "seed": seed,
        "curve": curve,
        "seconds": seconds,
        "solve_rate": [r["solve_rate"] for r in train],
        "episodes_with_call": [r.get("tools/episodes_with_call") for r in train],
        "call_frequency": [r.get("tools/call_frequency") for r in train],
    }


def summarise(results: list[dict], args: argparse.Namespace) -> dict:
    by = {
        v: sorted((r for r in results if r["variant"] == v), key=lambda r: r["seed"])
        for v in VARIANTS
    }
    steps = [s for s, _ in by["tool"][0]["curve"]]
    acc = {v: [[a for _, a in r["curve"]] for r in by[v]] for v in VARIANTS}
    return {
        "config": {
            k: getattr(args, k)
            for k in ("steps", "prompts", "group", "lr", "temperature", "eval_every", "eval_size")
        },
        "seeds": args.seeds,
        "steps": steps,
        "accuracy": acc,
        "final_mean": {v: float(np.mean([a[-1] for a in acc[v]])) for v in VARIANTS},
        "start_mean": {v: float(np.mean([a[0] for a in acc[v]])) for v in VARIANTS},
        # Per step (training rollouts, sampled): the share of rollouts that called the tool.
        "episodes_with_call": [r["episodes_with_call"] for r in by["tool"]],
        "solve_rate": {v: [r["solve_rate"] for r in by[v]] for v in VARIANTS},
        "seconds": {f"{r['variant']}-{r['seed']}": round(r["seconds"], 1) for r in results},
    }


def plot(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = np.array(summary["steps"])
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(10, 4.0), dpi=120)
    labels = {"tool": "GRPO with the calc tool", "no_tool": "GRPO without it"}
    for v, color in zip(VARIANTS, ("tab:green", "tab:gray"), strict=True):
        acc = np.array(summary["accuracy"][v])
        ax.plot(steps, acc.mean(0), color=color, label=f"{labels[v]} ({len(acc)} seeds)")
        ax.fill_between(steps, acc.min(0), acc.max(0), color=color, alpha=0.2, lw=0)
    c = summary["config"]
    ax.set_xlabel("GRPO step")
    ax.set_ylabel(f"held-out accuracy (greedy, {c['eval_size']} prompts)")
    ax.set_title(
        f"2-digit products: {c['prompts']} prompts x {c['group']}, lr {c['lr']:g}", fontsize=9
    )
    ax.legend(loc="center right", fontsize=8)
    ax.grid(alpha=0.3)
    share = np.array(summary["episodes_with_call"], dtype=float)
    x = np.arange(1, share.shape[1] + 1)
    bx.plot(x, share.mean(0), color="tab:green")
    bx.fill_between(x, share.min(0), share.max(0), color="tab:green", alpha=0.2, lw=0)
    bx.set_xlabel("GRPO step")
    bx.set_ylabel("share of sampled rollouts that call the tool")
    bx.set_ylim(0, 1.05)
    bx.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--prompts", type=int, default=8, help="prompts per step")
    parser.add_argument("--group", type=int, default=8, help="samples per prompt")
    parser.add_argument("--lr", type=float, default=3e-4)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--eval-every", type=int, default=5)
    parser.add_argument("--eval-size", type=int, default=200)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--out", type=Path, default=HERE / "tools")
    args = parser.parse_args()

    jobs = [(v, s) for s in args.seeds for v in VARIANTS]
    results = []
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        ctx = get_context("spawn")
        with ProcessPoolExecutor(max_workers=args.workers, mp_context=ctx) as pool:
            for f in [pool.submit(run, v, s, args, tmp) for v, s in jobs]:
                r = f.result()
                results.append(r)
                print(f"{r['variant']:8s} seed {r['seed']}: {r['curve']} ({r['seconds']:.0f} s)")
    summary = summarise(results, args)
    summary["wall_seconds"] = round(time.perf_counter() - t0, 1)
    args.out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    plot(summary, args.out.with_suffix(".png"))
    for v in VARIANTS:
        print(
            f"{v:8s} held-out accuracy {summary['start_mean'][v]:.3f} -> "
            f"{summary['final_mean'][v]:.3f}"
        )
    print(f"wrote {args.out.with_suffix('.png')} and {args.out.with_suffix('.json')}")


if __name__ == "__main__":
    main()
