"""A real pretrained model learning: SmolLM2-135M-Instruct (``--task smollm2``) trained by
grpo-fast (HF sampling, colocated vLLM, asynchronous rollouts from a vLLM server) and by
TRL's ``GRPOTrainer``, with the same model, data, reward, batch and learning rate.

Each implementation runs in its own invocation (vLLM's live in ``.venv-vllm``) and adds
its entry to the JSON file; ``--plot`` draws every entry's held-out curve:

    .venv/bin/python benches/bench_real_model.py --impl hf --steps 40
    .venv/bin/python benches/bench_real_model.py --impl trl --steps 40
    .venv-vllm/bin/python benches/bench_real_model.py --impl trl-vllm --steps 40  # trl importable
    .venv-vllm/bin/python benches/bench_real_model.py --impl vllm --steps 40
    .venv-vllm/bin/python benches/bench_real_model.py --impl async-vllm-server --steps 40
    .venv/bin/python benches/bench_real_model.py --plot

Held-out accuracy is measured by one function for every implementation, on the trained
model itself (HF generate, bf16 autocast): greedy, and pass@1 at the task's temperature
(the mean over ``--eval-samples`` samples per prompt), at step 0 and every
``--eval-every`` steps, scored by ``grpo_fast.integrations.trl.accuracy_reward`` (the
reward both trainers train on). Per step: sampling, reward, loss (log-probs, backward,
optimizer), weight push, total, and the process's CPU seconds over all its threads
(``cpu``: on a shared machine it moves less with the load than wall time does);
evaluation time excluded. docs/real_model.md has the
results and the commands that made them.
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

HERE = Path(__file__).resolve().parent
LABELS = {
    "hf": "grpo-fast, HF sampling",
    "vllm": "grpo-fast, colocated vLLM",
    "async-vllm-server": "grpo-fast, async vLLM server",
    "trl": "TRL GRPOTrainer",
    "trl-vllm": "TRL GRPOTrainer + vLLM",
}
IMPLS = ("hf", "vllm", "async-vllm-server", "trl", "trl-vllm")


def _rows(path: str) -> list[dict[str, Any]]:
    from grpo_fast.train.data import read_tasks

    # TRL's accuracy_reward reads the gold answers from the ``solution`` column.
    return [{**r, "solution": r["answer"]} for r in read_tasks(path)]


def evaluate(model: Any, tok: Any, rows: list[dict[str, Any]], opts: dict[str, Any], n: int):
    """Greedy accuracy and pass@1 (``n`` samples per prompt at the task's temperature)."""
    import numpy as np
    import torch

    from grpo_fast.integrations.trl import accuracy_reward
    from grpo_fast.sampling import HFSampler, SamplingParams
    from grpo_fast.train.data import render_prompts

    prompts = render_prompts(rows, tok)
    sampler = HFSampler(model, tok, logprobs=False)
    was_training = model.training
    model.eval()
    out = {}
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        for name, count, params in (
            ("greedy", 1, SamplingParams(max_new_tokens=opts["max_new_tokens"], temperature=0.0)),
            (
                "pass@1",
                n,
                SamplingParams(
                    max_new_tokens=opts["max_new_tokens"],
                    temperature=opts["temperature"],
                    top_p=opts["top_p"],
                ),
            ),
        ):
            comp = sampler.sample(prompts, count, params)
            gold = [r["solution"] for r in rows for _ in range(count)]
            scores = accuracy_reward(list(comp.texts), solution=gold)
            out[name] = float(np.mean([s is not None and s >= 1.0 for s in scores]))
    model.train(was_training)
    return out


def _curve_point(step: int, model: Any, tok: Any, held: list, opts: dict, args) -> dict:
    t0 = time.perf_counter()
    point = {"step": step, **evaluate(model, tok, held, opts, args.eval_samples)}
    point["eval_s"] = time.perf_counter() - t0
    print(f"  step {step}: {point}", flush=True)
    return point


def _save(args, opts: dict[str, Any], result: dict[str, Any], *, partial: bool) -> None:
    """Add this run to the JSON file (after each evaluation too: a run cut short keeps
    what it measured, marked ``partial``)."""
    import resource

    entry = {**result, "partial": partial, "argv": sys.argv[1:]}
    # Peak resident memory of this process so far (Linux reports KiB).
    entry["peak_rss_gib"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    entry["options"] = {k: v for k, v in opts.items() if k != "model"}
    if result["steps"]:
        entry["per_step"] = summary(result["steps"])
    results = json.loads(args.json.read_text()) if args.json.is_file() else {"runs": {}}
    results["runs"][args.impl] = entry
    args.json.write_text(json.dumps(results, indent=1) + "\n")


def run_ours(args, opts: dict[str, Any]) -> dict[str, Any]:
    from grpo_fast.integrations.trl import accuracy_reward
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    sampler = {"hf": "hf", "vllm": "vllm", "async-vllm-server": "vllm-server"}[args.impl]
    skip = ("eval_every", "eval_size", "save_every", "max_steps", "output_dir")
    options = {k: v for k, v in opts.items() if k not in skip}
    cfg = TrainerConfig(
        **options,
        output_dir=_run_dir(args),
        overwrite=True,  # the bench's own folder
        max_steps=args.steps,
        eval_every=0,
        save_every=0,
        progress=False,
        plot=False,
        seed=args.seed,
        sampler=sampler,
        async_rollouts=args.impl.startswith("async"),
        torch_threads=args.threads,
    )
    train = _rows(opts["train_file"])
    held = _rows(opts["eval_file"])[: args.eval_prompts]
    trainer = Trainer(cfg, rewards=[accuracy_reward], train_rows=train, eval_rows=held)
    curve = [_curve_point(0, trainer.model, trainer.tokenizer, held, opts, args)]
    steps: list[dict[str, float]] = []
    if cfg.async_rollouts:
        # The producer runs inside train(): evaluate between segments of eval_every steps.
        import dataclasses

        done = 0
        while done < args.steps:
            done = min(args.steps, done + args.eval_every)
            trainer.config = dataclasses.replace(trainer.config, max_steps=done)
            t0 = time.perf_counter()
            history = trainer.train()
            steps += [_times(r) for r in history if r.get("step", 0) > 0 and "time_step" in r]
            curve.append(_curve_point(done, trainer.model, trainer.tokenizer, held, opts, args))
            _save(args, opts, {"curve": curve, "steps": steps}, partial=True)
            print(f"  segment to step {done}: {time.perf_counter() - t0:.0f} s", flush=True)
    else:
        for step in range(1, args.steps + 1):
            c0 = time.process_time()
            record = trainer.step()
            steps.append({**_times(record), "cpu": time.process_time() - c0})
            print(f"  step {step}: reward {record['reward']:.3f} {steps[-1]}", flush=True)
            if step % args.eval_every == 0 or step == args.steps:
                curve.append(_curve_point(step, trainer.model, trainer.tokenizer, held, opts, args))
                _save(args, opts, {"curve": curve, "steps": steps}, partial=True)
    return {"curve": curve, "steps": steps}


def _run_dir(args) -> str:
    """Where the trainer writes: ``--run-dir``/IMPL, kept; or a temporary folder removed
    when the bench exits."""
    if args.run_dir is not None:
        path = args.run_dir / args.impl
        path.mkdir(parents=True, exist_ok=True)
        return str(path)
    import atexit
    import shutil

    path = tempfile.mkdtemp(prefix=f"bench-real-{args.impl}-")
    atexit.register(shutil.rmtree, path, ignore_errors=True)
    return path


def _times(record: dict[str, Any]) -> dict[str, float]:
    push = record.get("time_weight_push", 0.0)
    return {
        "sampling": record.get("time_sampling", 0.0),
        "reward": record.get("time_verify", 0.0),
        "loss": record.get("time_loss", 0.0) - push,
        "push": push,
        "total": record.get("time_step", 0.0),
        "reward_mean": record.get("reward", float("nan")),
    }


def run_trl(args, opts: dict[str, Any]) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from grpo_fast.integrations.trl import accuracy_reward
    from grpo_fast.train.modeling import load_model, load_tokenizer

    model_dir = opts["model"]
    tok = load_tokenizer(model_dir)
    model = load_model(model_dir, dtype=torch.float32)
    train = _rows(opts["train_file"])
    held = _rows(opts["eval_file"])[: args.eval_prompts]
    reward_time = [0.0]

    def timed_accuracy_reward(completions, **kwargs):
        t0 = time.perf_counter()
        out = accuracy_reward(completions, **kwargs)
        reward_time[0] += time.perf_counter() - t0
        return out

    timed_accuracy_reward.__name__ = "accuracy_reward"
    steps: list[dict[str, float]] = []
    curve = [_curve_point(0, model, tok, held, opts, args)]

    class Probe(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t0 = time.perf_counter()
            self.c0 = time.process_time()

        def on_step_end(self, args_, state, control, **k):
            total = time.perf_counter() - self.t0
            s = timing["sampling"]
            r = reward_time[0]
            steps.append(
                {
                    "sampling": s - r,
                    "reward": r,
                    "loss": total - s,
                    "push": 0.0,
                    "total": total,
                    "cpu": time.process_time() - self.c0,
                }
            )
            timing["sampling"] = reward_time[0] = 0.0
            print(f"  step {state.global_step}: {steps[-1]}", flush=True)
            if state.global_step % args.eval_every == 0 or state.global_step == args.steps:
                curve.append(_curve_point(state.global_step, trainer.model, tok, held, opts, args))
                _save(args, opts, {"curve": curve, "steps": steps}, partial=True)

    timing = {"sampling": 0.0}
    config = GRPOConfig(
        output_dir=_run_dir(args),
        max_steps=args.steps,
        per_device_train_batch_size=opts["prompts_per_step"] * opts["num_generations"],
        num_generations=opts["num_generations"],
        max_completion_length=opts["max_new_tokens"],
        temperature=opts["temperature"],
        top_p=opts["top_p"],
        learning_rate=opts["learning_rate"],
        lr_scheduler_type="constant",
        warmup_steps=0,
        loss_type="grpo",
        beta=0.0,
        use_cpu=True,
        bf16=opts["dtype"] == "bf16",
        gradient_checkpointing=False,
        save_strategy="no",
        logging_steps=10**9,
        report_to="none",
        disable_tqdm=True,
        seed=args.seed,
        adam_beta2=0.99,
        # trl-vllm: TRL's own colocated vLLM engine (in .venv-vllm, with trl on the path).
        **(
            {"use_vllm": True, "vllm_mode": "colocate", "vllm_gpu_memory_utilization": 0.3}
            if args.impl == "trl-vllm"
            else {}
        ),
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=timed_accuracy_reward,
        args=config,
        train_dataset=Dataset.from_list(
            [{"prompt": r["prompt"], "solution": r["solution"]} for r in train]
        ),
        processing_class=tok,
        callbacks=[Probe()],
    )
    generate = trainer._generate_and_score_completions

    def timed_generate(*a, **k):
        t0 = time.perf_counter()
        out = generate(*a, **k)
        timing["sampling"] += time.perf_counter() - t0
        return out

    trainer._generate_and_score_completions = timed_generate
    torch.set_num_threads(args.threads)
    trainer.train()
    return {"curve": curve, "steps": steps}


def summary(steps: list[dict[str, float]]) -> dict[str, float]:
    """Medians per stage, skipping the first steps (warm-up)."""
    skip = min(2, len(steps) // 4)
    rest = steps[skip:] or steps
    return {k: statistics.median(s[k] for s in rest) for k in rest[0] if k != "reward_mean"}


def plot(path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    results = json.loads(path.read_text())
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, key in zip(axes, ("greedy", "pass@1"), strict=True):
        for impl, r in sorted(results["runs"].items()):
            xs = [p["step"] for p in r["curve"]]
            label = LABELS.get(impl, impl) + (" (stopped early)" if r.get("partial") else "")
            ax.plot(xs, [100 * p[key] for p in r["curve"]], marker="o", label=label)
        ax.set_title(f"held-out accuracy, {key}")
        ax.set_xlabel("step")
        ax.grid(alpha=0.3)
    axes[0].set_ylabel("% correct")
    axes[0].legend()
    fig.suptitle("SmolLM2-135M-Instruct, arithmetic word problems (--task smollm2)")
    fig.tight_layout()
    out = path.with_suffix(".png")
    fig.savefig(out, dpi=100)
    return out


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument(
        "--impl",
        choices=IMPLS,
        action="append",
        help="repeat it to run several one after the other (each in its own process) and "
        "compare their step times: TRL's / the first's",
    )
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--eval-every", type=int, default=10)
    p.add_argument("--eval-prompts", type=int, default=64, help="held-out prompts evaluated")
    p.add_argument("--eval-samples", type=int, default=2, help="samples per prompt for pass@1")
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=JSON",
        help="override a task option (--set learning_rate=2e-5)",
    )
    p.add_argument("--json", type=Path, default=HERE / "real_model.json")
    p.add_argument("--plot", action="store_true", help="draw the JSON's curves (PNG beside it)")
    p.add_argument(
        "--run-dir",
        type=Path,
        help="keep each implementation's run folder here (metrics, logged completions with "
        "--set log_completions=true); default: a temporary folder, removed at the end",
    )
    args = p.parse_args()
    if args.plot:
        print(plot(args.json))
        return
    if not args.impl:
        p.error("--impl or --plot")
    if len(args.impl) > 1:
        compare(args)
        return
    args.impl = args.impl[0]
    from grpo_fast.train.data import task_options

    opts = task_options("smollm2")
    opts["model"] = str(_model_dir(opts["model"]))
    for item in args.set:
        key, value = item.split("=", 1)
        opts[key] = json.loads(value)
    t0 = time.perf_counter()
    result = (run_trl if args.impl.startswith("trl") else run_ours)(args, opts)
    result["minutes"] = (time.perf_counter() - t0) / 60
    _save(args, opts, result, partial=False)
    print(json.dumps(summary(result["steps"])), f"{result['minutes']:.1f} min")
    print(plot(args.json))


def compare(args) -> None:
    """Each ``--impl`` in a child process of this one, back to back (the same machine,
    load and arguments), then their per-step medians side by side and each one's step
    time over the first's, kept in the JSON's ``comparisons``."""
    import subprocess

    rest, argv = [], iter(sys.argv[1:])
    for a in argv:  # every argument but the --impl ones
        if a == "--impl":
            next(argv)
        elif not a.startswith("--impl="):
            rest.append(a)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    for impl in args.impl:
        print(f"== {LABELS[impl]}", flush=True)
        subprocess.run([sys.executable, __file__, "--impl", impl, *rest], check=True)
    runs = json.loads(args.json.read_text())["runs"]
    rows = {impl: runs[impl]["per_step"] for impl in args.impl}
    first = rows[args.impl[0]]
    parts = ("sampling", "reward", "loss", "push", "total", "cpu")
    print("| implementation | " + " | ".join(parts) + " | total / first's | cpu / first's |")
    for impl, row in rows.items():
        cells = " | ".join(f"{row.get(k, float('nan')):.1f}" for k in parts)
        ratios = f"{row['total'] / first['total']:.2f} | {row['cpu'] / first['cpu']:.2f}"
        print(f"| {LABELS[impl]} | {cells} | {ratios} |")
    results = json.loads(args.json.read_text())
    results.setdefault("comparisons", []).append(
        {"started": started, "argv": sys.argv[1:], "per_step": rows}
    )
    args.json.write_text(json.dumps(results, indent=1) + "\n")


def _model_dir(gguf_path: str) -> Path:
    """The de-quantised directory both trainers load (the same weights)."""
    from grpo_fast.train.gguf import gguf_directory

    return gguf_directory(gguf_path)


if __name__ == "__main__":
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    main()
