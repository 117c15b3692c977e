"""Which options help? One option changed at a time against the default, on the CPU.

Trains the embedded demo (the 0.8M-parameter Qwen2 warm start on 2-digit
addition, ``grpo-fast train``'s defaults: 8 prompts x 8 samples, lr 3e-5,
``grpo`` loss, no KL) once per configuration and seed, each run a
``python -m grpo_fast train`` subprocess with one torch thread, and reports
per configuration:

- held-out accuracy at the last step (greedy, the 500 held-out sums): mean
  and sample std over the seeds;
- the first evaluated step at which the seed-mean accuracy reaches the
  default's final mean (``-`` when it never does);
- the share of fresh groups that carried signal (``1 - frac_zero_std``, the
  quantity the curriculum and dynamic sampling are meant to raise);
- wall time per step (``time_step`` of the metrics) and CPU time per step
  (``time.process_time()`` around ``Trainer.step``, all the process's
  threads): both exclude start-up and evaluation; on a shared machine the
  wall time moves with the load, the CPU time much less;

and the machine load (1-minute load average sampled every 15 s) while it ran.
Runs are interleaved seed by seed, so a change of load hits every
configuration alike. A finished run (its ``metrics.jsonl`` has the last
step) is reused: the command can be interrupted (Ctrl-C stops the running
jobs) and run again, and ``--report`` only rebuilds the table and figure.

    .venv/bin/python benches/ablations.py --steps 200 --seeds 0 1 2 --jobs 2
    .venv/bin/python benches/ablations.py --report          # table + figure from runs/ablations
    .venv/bin/python benches/ablations.py --only default cispo --steps 20 --seeds 0

Writes ``<out>/summary.json``, ``<out>/table.md`` and the figure
(``--figure``, default ``docs/ablations.png``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: One option changed at a time (the flags of ``grpo-fast train``).
CONFIGS: dict[str, list[str]] = {
    "default": [],
    "curriculum": ["--curriculum"],
    "dynamic_sampling": ["--dynamic-sampling"],
    "clip_higher_0.28": ["--eps-high", "0.28"],
    "dr_grpo": ["--scale", "none", "--loss-type", "dr_grpo"],
    "dapo_token_loss": ["--loss-type", "dapo"],
    "rloo": ["--estimator", "rloo"],
    # CISPO as MiniMax-M1 / ScaleRL set it: no lower bound, weights capped at 5.
    "cispo": ["--surrogate", "cispo", "--eps-low", "1.0", "--eps-high", "4.0"],
    "top_entropy_0.2": ["--top-entropy-quantile", "0.2"],
    "kl_0.04": ["--beta", "0.04"],
    # The curriculum weighs prompts by their tracked solve rate, which needs prompts seen
    # before: on the demo's 9,500 prompts a short run draws almost only new ones. Here the
    # first 400 (each drawn ~3 times in 150 steps), without and with it.
    "400_prompts": ["--train-file", "{subset}"],
    "400_prompts+curriculum": ["--train-file", "{subset}", "--curriculum"],
}
SUBSET = 400


class UsageError(Exception):
    """Bad command-line input: one line on stderr, exit status 2."""


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--steps", type=int, help="training steps per run (200; --report: those of the runs)"
    )
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--eval-every", type=int, default=25, help="held-out evaluation every N steps")
    p.add_argument("--eval-size", type=int, default=500, help="held-out prompts per evaluation")
    p.add_argument("--jobs", type=int, default=2, help="runs at once (one torch thread each)")
    p.add_argument("--only", nargs="+", metavar="NAME", help=f"a subset of {list(CONFIGS)}")
    p.add_argument("--out", type=Path, default=ROOT / "runs" / "ablations")
    p.add_argument("--figure", type=Path, default=ROOT / "docs" / "ablations.png")
    p.add_argument("--report", action="store_true", help="no training: table and figure only")
    p.add_argument("--force", action="store_true", help="train again even where a run finished")
    args = p.parse_args(argv)
    names = args.only or list(CONFIGS)
    unknown = [n for n in names if n not in CONFIGS]
    if unknown:
        raise UsageError(f"unknown configuration(s) {unknown}; known: {list(CONFIGS)}")
    if "default" not in names:
        names = ["default", *names]  # the reference of every comparison
    args.names = names
    if args.steps is None:
        args.steps = 200
        config = run_dir(args.out, "default", args.seeds[0]) / "config.json"
        if args.report and config.is_file():
            args.steps = json.loads(config.read_text())["max_steps"]
    for name in ("steps", "eval_every", "eval_size", "jobs"):
        if getattr(args, name) < 1:
            raise UsageError(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if len(set(args.seeds)) != len(args.seeds):
        raise UsageError(f"--seeds must be distinct, got {args.seeds}")
    return args


def run_dir(out: Path, name: str, seed: int) -> Path:
    return out / name / f"seed-{seed}"


def read_records(path: Path) -> list[dict]:
    from grpo_fast.train.tracking import read_metrics

    return read_metrics(path / "metrics.jsonl")


def finished(path: Path, steps: int) -> bool:
    records = read_records(path)
    done = (path / "cpu.json").is_file() and (path / "cpu_steps.json").is_file()
    return done and bool(records) and records[-1].get("step") == steps


# Runs ``grpo-fast train`` with the CPU time of each ``Trainer.step`` summed, and
# writes it to ``cpu_steps.json`` in the output directory (argv[1]).
_RUN = """
import json, sys, time
from pathlib import Path
from grpo_fast.train import trainer
from grpo_fast.cli import main

total = [0.0, 0]
step = trainer.Trainer.step

def timed(self):
    t = time.process_time()
    out = step(self)
    total[0] += time.process_time() - t
    total[1] += 1
    return out

trainer.Trainer.step = timed
rc = main(sys.argv[2:])
if rc == 0:
    cpu = {"cpu_s": total[0], "steps": total[1]}
    Path(sys.argv[1], "cpu_steps.json").write_text(json.dumps(cpu))
sys.exit(rc)
"""


def command(args: argparse.Namespace, name: str, seed: int) -> list[str]:
    return [
        sys.executable,
        "-c",
        _RUN,
        str(run_dir(args.out, name, seed)),
        "train",
        "--max-steps",
        str(args.steps),
        "--eval-every",
        str(args.eval_every),
        "--eval-size",
        str(args.eval_size),
        "--seed",
        str(seed),
        "--torch-threads",
        "1",
        "--no-progress",
        "--no-plot",
        "--keep-checkpoints",
        "1",
        "--output-dir",
        str(run_dir(args.out, name, seed)),
        *(flag.format(subset=subset(args.out)) for flag in CONFIGS[name]),
    ]


def subset(out: Path) -> Path:
    """The first ``SUBSET`` training prompts of the demo, written once into ``out``."""
    from grpo_fast.train.data import DATA_DIR

    path = out / f"train_{SUBSET}.jsonl"
    if not path.is_file():
        lines = (DATA_DIR / "addition_train.jsonl").read_text().splitlines(keepends=True)
        path.write_text("".join(lines[:SUBSET]))
    return path


class LoadSampler(threading.Thread):
    """The 1-minute load average every ``period`` seconds while the runs go."""

    def __init__(self, period: float = 15.0) -> None:
        super().__init__(daemon=True)
        self.period = period
        self.samples: list[float] = []
        self._stop = threading.Event()

    def run(self) -> None:
        while not self._stop.is_set():
            self.samples.append(os.getloadavg()[0])
            self._stop.wait(self.period)

    def stop(self) -> None:
        self._stop.set()


def train_all(args: argparse.Namespace) -> dict:
    """Run every missing (configuration, seed), ``args.jobs`` at a time; returns the load."""
    todo = [
        (name, seed)
        for seed in args.seeds
        for name in args.names
        if args.force or not finished(run_dir(args.out, name, seed), args.steps)
    ]
    env = {**os.environ, "GRPO_FAST_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    load = LoadSampler()
    load.start()
    running: dict[int, tuple[subprocess.Popen, str, int, float]] = {}
    failed: list[str] = []
    done: list[tuple[str, int]] = []
    start = time.time()
    try:
        while todo or running:
            while todo and len(running) < args.jobs:
                name, seed = todo.pop(0)
                path = run_dir(args.out, name, seed)
                path.mkdir(parents=True, exist_ok=True)
                log = open(path / "train.log", "w")  # noqa: SIM115 (closed with the process)
                proc = subprocess.Popen(
                    command(args, name, seed), stdout=log, stderr=subprocess.STDOUT, env=env
                )
                log.close()
                running[proc.pid] = (proc, name, seed, time.time())
                print(f"[{time.time() - start:6.0f}s] start {name} seed {seed}", flush=True)
            # Reap whichever run ends first, with its CPU time.
            pid, status, usage = os.wait4(-1, 0)
            if pid not in running:
                continue
            proc, name, seed, t0 = running.pop(pid)
            proc.returncode = os.waitstatus_to_exitcode(status)
            path = run_dir(args.out, name, seed)
            if proc.returncode != 0:
                failed.append(f"{name} seed {seed} (exit {proc.returncode}, see {path}/train.log)")
                continue
            cpu = {"cpu_s": usage.ru_utime + usage.ru_stime, "wall_s": time.time() - t0}
            done.append((name, seed))
            (path / "cpu.json").write_text(json.dumps(cpu) + "\n")
            print(
                f"[{time.time() - start:6.0f}s] done  {name} seed {seed}: "
                f"{cpu['wall_s']:.0f} s wall, {cpu['cpu_s']:.0f} s CPU",
                flush=True,
            )
    except KeyboardInterrupt:
        for proc, *_ in running.values():
            proc.send_signal(signal.SIGINT)
        for proc, *_ in running.values():
            proc.wait()
        raise
    finally:
        load.stop()
    if failed:
        raise RuntimeError("runs failed: " + "; ".join(failed))
    samples = load.samples or [os.getloadavg()[0]]
    session = {
        "runs": len(done),
        "load_mean": statistics.fmean(samples),
        "load_min": min(samples),
        "load_max": max(samples),
        "cpus": os.cpu_count(),
        "jobs": args.jobs,
        "wall_s": time.time() - start,
    }
    if done:  # one record per session that trained, so an interrupted ablation adds up
        with open(args.out / "load.jsonl", "a") as f:
            f.write(json.dumps(session) + "\n")
    return session


def curve(records: list[dict]) -> dict[int, float]:
    return {r["step"]: r["eval_accuracy"] for r in records if r.get("eval_accuracy") is not None}


def summarise(args: argparse.Namespace) -> dict:
    runs: dict[str, list[dict]] = {}
    for name in args.names:
        for seed in args.seeds:
            path = run_dir(args.out, name, seed)
            if not finished(path, args.steps):
                raise UsageError(
                    f"{path} has no finished run of {args.steps} steps: train it first"
                )
            records = read_records(path)
            train = [r for r in records if "time_step" in r]
            cpu = json.loads((path / "cpu_steps.json").read_text())
            runs.setdefault(name, []).append(
                {
                    "seed": seed,
                    "curve": curve(records),
                    "time_step": statistics.fmean(r["time_step"] for r in train),
                    "cpu_per_step": cpu["cpu_s"] / cpu["steps"],
                    "signal": 1 - statistics.fmean(r["frac_zero_std"] for r in train),
                    "signal_curve": [1 - r["frac_zero_std"] for r in train],
                }
            )
    steps = sorted(set.intersection(*(set(r["curve"]) for rs in runs.values() for r in rs)))

    def mean_curve(rs: list[dict]) -> list[float]:
        return [statistics.fmean(r["curve"][s] for r in rs) for s in steps]

    target = mean_curve(runs["default"])[-1]
    rows = []
    for name, rs in runs.items():
        finals = [r["curve"][steps[-1]] for r in rs]
        mc = mean_curve(rs)
        reach = next((s for s, a in zip(steps, mc, strict=True) if a >= target - 1e-12), None)
        rows.append(
            {
                "name": name,
                "flags": " ".join(CONFIGS[name]).replace("{subset}", f"<first {SUBSET}>")
                or "(none)",
                "final_mean": statistics.fmean(finals),
                "final_std": statistics.stdev(finals) if len(finals) > 1 else 0.0,
                "finals": finals,
                "steps_to_default_final": reach,
                "signal": statistics.fmean(r["signal"] for r in rs),
                "time_step_ms": 1000 * statistics.fmean(r["time_step"] for r in rs),
                "cpu_step_ms": 1000 * statistics.fmean(r["cpu_per_step"] for r in rs),
                "mean_curve": mc,
                "signal_curve": [
                    statistics.fmean(v) for v in zip(*(r["signal_curve"] for r in rs), strict=True)
                ],
            }
        )
    load_file = args.out / "load.jsonl"
    sessions = (
        [json.loads(x) for x in load_file.read_text().splitlines()] if load_file.is_file() else []
    )
    load = None
    if sessions:
        wall = sum(x["wall_s"] for x in sessions)
        load = {
            "load_mean": sum(x["load_mean"] * x["wall_s"] for x in sessions) / wall,
            "load_min": min(x["load_min"] for x in sessions),
            "load_max": max(x["load_max"] for x in sessions),
            "cpus": sessions[-1]["cpus"],
            "jobs": max(x["jobs"] for x in sessions),
            "wall_s": wall,
            "sessions": len(sessions),
        }
    return {
        "steps": args.steps,
        "seeds": args.seeds,
        "eval_size": args.eval_size,
        "eval_steps": steps,
        "default_final": target,
        "load": load,
        "rows": rows,
    }


def table(summary: dict) -> str:
    lines = [
        "| configuration | flags | final held-out accuracy | steps to default's final "
        "| groups with signal | wall ms/step | CPU ms/step |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in summary["rows"]:
        reach = "-" if r["steps_to_default_final"] is None else str(r["steps_to_default_final"])
        lines.append(
            f"| {r['name']} | `{r['flags']}` | {100 * r['final_mean']:.1f}% "
            f"± {100 * r['final_std']:.1f} | {reach} | {100 * r['signal']:.0f}% "
            f"| {r['time_step_ms']:.0f} | {r['cpu_step_ms']:.0f} |"
        )
    load = summary["load"]
    note = (
        f"{summary['steps']} steps, seeds {summary['seeds']}, greedy accuracy on "
        f"{summary['eval_size']} held-out sums "
        f"(mean ± sample std over seeds); default's final: {100 * summary['default_final']:.1f}%. "
        "Groups with signal: the share of each step's freshly sampled groups whose rewards are "
        "not all equal (dynamic sampling then trains on those only)."
    )
    if load:
        note += (
            f" Load average {load['load_mean']:.1f} (min {load['load_min']:.1f}, max "
            f"{load['load_max']:.1f}) on {load['cpus']} CPUs, {load['jobs']} runs at once, "
            f"{load['wall_s'] / 60:.0f} min of training in all ({load['sessions']} session(s))."
        )
    return "\n".join(lines) + "\n\n" + note + "\n"


def figure(summary: dict, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.6))
    colors = plt.get_cmap("tab10").colors
    for i, r in enumerate(summary["rows"]):
        style = dict(
            color=colors[i % 10],
            lw=2.4 if r["name"] == "default" else 1.3,
            ls="--" if i >= 10 else "-",
            zorder=3 if r["name"] == "default" else 2,  # on top of the runs equal to it
        )
        left.plot(
            summary["eval_steps"], [100 * a for a in r["mean_curve"]], label=r["name"], **style
        )
        s = np.asarray(r["signal_curve"])
        k = min(20, len(s))
        smooth = np.convolve(s, np.ones(k) / k, mode="valid")
        right.plot(np.arange(k, len(s) + 1), 100 * smooth, **style)
    left.set(xlabel="step", ylabel="held-out accuracy (%), mean of seeds")
    left.set_title(f"greedy accuracy on {summary['eval_size']} held-out sums")
    right.set(xlabel="step", ylabel="groups with signal (%), 20-step mean")
    right.set_title("fresh groups whose rewards are not all equal")
    left.legend(fontsize=8, ncol=2)
    for ax in (left, right):
        ax.grid(alpha=0.3)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    try:
        args = parse_args(argv)
        args.out.mkdir(parents=True, exist_ok=True)
        if not args.report:
            train_all(args)
        summary = summarise(args)
    except UsageError as e:
        print(f"ablations: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("ablations: interrupted; finished runs are kept, rerun to go on", file=sys.stderr)
        return 130
    except RuntimeError as e:
        print(f"ablations: {e}", file=sys.stderr)
        return 1
    (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    text = table(summary)
    (args.out / "table.md").write_text(text)
    figure(summary, args.figure)
    print(text)
    print(f"figure: {args.figure}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
