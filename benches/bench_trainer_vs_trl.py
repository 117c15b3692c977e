"""grpo-fast's Trainer against TRL's GRPOTrainer on the embedded demo.

Same tiny model (the shipped warm start), task (2-digit addition), reward
(``grpo_fast.verify_batch``), group size, prompts per step, learning rate,
loss aggregation (``grpo``), no KL, CPU. Reported: seconds per training step
(median over the steps after the first few, evaluation excluded), as wall
time and as the process's CPU time (with one thread the CPU time is the work
done, which stays meaningful on a machine shared with other jobs), and greedy
held-out accuracy after the same number of steps, measured by the same
function for both. Goal (issue 6): <= half of TRL's time per step with
accuracy >= TRL's.

Each implementation runs in its own subprocess with the same torch thread
count, one after the other.

    .venv/bin/python benches/bench_trainer_vs_trl.py --steps 300 [--threads 2]

Through pytest-benchmark (``make bench``) it runs a short version
(``GRPO_FAST_BENCH_TRAINER_STEPS``, default 40 steps) and prints the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import pytest

IMPLS = ("grpo-fast", "trl")


def _held_out_accuracy(model, tokenizer, rows) -> float:
    from grpo_fast.sampling import HFSampler, SamplingParams
    from grpo_fast.verify import verify_batch

    tokenizer.padding_side = "left"
    comp = HFSampler(model, tokenizer).sample(
        [r["prompt"] for r in rows], 1, SamplingParams(max_new_tokens=4, temperature=0.0)
    )
    return float(verify_batch([r["answer"] for r in rows], comp.texts).mean())


def _run_ours(args) -> dict:
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    out = tempfile.mkdtemp(prefix="bench-ours-")
    cfg = TrainerConfig(
        output_dir=out,
        max_steps=args.steps,
        prompts_per_step=args.prompts,
        num_generations=args.generations,
        learning_rate=args.lr,
        loss_type="grpo",
        beta=0.0,
        eval_every=0,
        progress=False,
        plot=False,
        seed=args.seed,
        device="cpu",
        torch_threads=args.threads,
    )
    trainer = Trainer(cfg)
    times, cpu = [], []
    for _ in range(args.steps):
        t0, c0 = time.perf_counter(), time.process_time()
        trainer.step()
        times.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return {
        "step_times": times,
        "cpu_times": cpu,
        "accuracy": _held_out_accuracy(trainer.model, trainer.tokenizer, trainer.eval_rows),
    }


def _run_trl(args) -> dict:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer, TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from grpo_fast.train.data import read_tasks
    from grpo_fast.train.trainer import TrainerConfig
    from grpo_fast.verify import verify_batch

    defaults = TrainerConfig()
    train = read_tasks(defaults.train_file)
    held_out = read_tasks(defaults.eval_file)
    tok = AutoTokenizer.from_pretrained(defaults.model)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(defaults.model, dtype=torch.float32)

    def accuracy_reward(completions, answer, **kwargs):
        return verify_batch(list(answer), list(completions)).tolist()

    times: list[float] = []
    cpu: list[float] = []

    class StepTimer(TrainerCallback):
        def on_step_begin(self, *a, **k):
            self.t0, self.c0 = time.perf_counter(), time.process_time()

        def on_step_end(self, *a, **k):
            times.append(time.perf_counter() - self.t0)
            cpu.append(time.process_time() - self.c0)

    config = GRPOConfig(
        output_dir=tempfile.mkdtemp(prefix="bench-trl-"),
        max_steps=args.steps,
        per_device_train_batch_size=args.prompts * args.generations,
        num_generations=args.generations,
        max_completion_length=4,
        learning_rate=args.lr,
        lr_scheduler_type="constant",
        warmup_steps=0,
        loss_type="grpo",
        beta=0.0,
        temperature=1.0,
        use_cpu=True,
        gradient_checkpointing=False,
        save_strategy="no",
        logging_steps=10**9,
        report_to="none",
        disable_tqdm=True,
        seed=args.seed,
        bf16=False,
        adam_beta2=0.99,
    )
    trainer = GRPOTrainer(
        model=model,
        reward_funcs=accuracy_reward,
        args=config,
        train_dataset=Dataset.from_list(train),
        processing_class=tok,
        callbacks=[StepTimer()],
    )
    trainer.train()
    acc = _held_out_accuracy(trainer.model, tok, held_out)
    return {"step_times": times, "cpu_times": cpu, "accuracy": acc}


def _child(impl: str, args) -> None:
    import torch

    torch.set_num_threads(args.threads)
    result = (_run_ours if impl == "grpo-fast" else _run_trl)(args)
    print("RESULT " + json.dumps(result))


def run(impl: str, steps: int, threads: int, extra: list[str] | None = None) -> dict:
    """Train one implementation in a fresh subprocess; returns its step times and accuracy."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", impl, "--steps", str(steps)]
    cmd += ["--threads", str(threads), *(extra or [])]
    env = {**os.environ, "TOKENIZERS_PARALLELISM": "false"}
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("RESULT ")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"{impl} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("RESULT ") :])


def per_step(times: list[float]) -> float:
    """Median step time, skipping warm-up steps."""
    skip = min(5, len(times) // 4)
    return statistics.median(times[skip:])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--threads", type=int, default=2, help="torch CPU threads per run")
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--generations", type=int, default=8)
    parser.add_argument("--lr", type=float, default=3e-5)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--child", choices=IMPLS, help=argparse.SUPPRESS)
    parser.add_argument("--only", choices=IMPLS)
    args = parser.parse_args()
    if args.child:
        _child(args.child, args)
        return
    extra = ["--prompts", str(args.prompts), "--generations", str(args.generations)]
    extra += ["--lr", str(args.lr), "--seed", str(args.seed)]
    results = {}
    for impl in [args.only] if args.only else IMPLS:
        t0 = time.perf_counter()
        r = run(impl, args.steps, args.threads, extra)
        results[impl] = r
        print(
            f"{impl:10s} {per_step(r['step_times']) * 1000:8.1f} ms/step wall, "
            f"{per_step(r['cpu_times']) * 1000:8.1f} ms/step CPU  "
            f"held-out accuracy {r['accuracy']:.3f} after {args.steps} steps  "
            f"(run {time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    if len(results) == 2:
        for key, what in (("step_times", "wall"), ("cpu_times", "CPU")):
            ratio = per_step(results["trl"][key]) / per_step(results["grpo-fast"][key])
            print(f"TRL / grpo-fast time per step ({what}): {ratio:.2f}x")


@pytest.mark.benchmark(group="trainer step (tiny model, CPU)")
@pytest.mark.parametrize("impl", IMPLS)
def test_trainer_step(benchmark, impl):
    steps = int(os.environ.get("GRPO_FAST_BENCH_TRAINER_STEPS", "40"))
    result = {}

    def once():
        result.update(run(impl, steps, 2))

    benchmark.pedantic(once, rounds=1, iterations=1)
    benchmark.extra_info["impl"] = impl
    benchmark.extra_info["s_per_step"] = per_step(result["step_times"])
    benchmark.extra_info["accuracy"] = result["accuracy"]
    ms = per_step(result["step_times"]) * 1000
    print(f"\n{impl}: {ms:.1f} ms/step, held-out accuracy {result['accuracy']:.3f}")


if __name__ == "__main__":
    main()
