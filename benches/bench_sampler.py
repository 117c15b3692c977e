"""Samplers compared in one run: HF ``generate`` (HFSampler) against vLLM (VLLMSampler,
colocated), on this machine.

1. Tokens/s of sampling, the demo model and a random model of Qwen2-0.5B's shape
   (896 x 24 layers; the demo's 17-character vocabulary, so ~360M parameters, none
   of them embedding): ``--prompts`` prompts x ``--n`` samples, up to ``--tokens``
   new tokens; the generated tokens over the wall time of one ``sample`` call,
   after a warm-up call, median of ``--repeats``.
2. Seconds per GB of a weight push into the engine (the trainer's full weights
   written as safetensors, loaded by every vLLM worker, prefix cache dropped), on
   the big model.
3. The demo training with ``--sampler hf`` and ``--sampler vllm``, same steps and
   seeds: steps/s (``time_step``, which includes the push) and held-out greedy
   accuracy at the end (500 sums, so +-2.2 points of noise at one standard error).

Each measurement runs in a fresh subprocess (vLLM sets the process's threads), one
after the other, and the parent prints the ratios. Needs vLLM (on a CPU: ``make
vllm-venv``, then ``.venv-vllm/bin/python benches/bench_sampler.py``); ``--device
cuda`` for a GPU (scripts/gpu_check.sh). Without vLLM it says so and exits 0 after
the HF rows.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "python" / "grpo_fast" / "data" / "tiny_adder"


def build_big_model(path: Path, args: argparse.Namespace) -> Path:
    """A random Qwen2 of the requested shape with the demo's tokenizer (seed 0)."""
    import shutil

    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(DEMO)
    config.hidden_size = args.big_hidden
    config.intermediate_size = args.big_intermediate
    config.num_hidden_layers = args.big_layers
    config.layer_types = ["full_attention"] * args.big_layers
    config.num_attention_heads = args.big_heads
    config.num_key_value_heads = args.big_kv_heads
    config.max_position_embeddings = 512
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        shutil.copy(DEMO / name, path / name)
    return path


def prompts(k: int) -> list[str]:
    return [f"{(37 * i) % 90 + 10}+{(53 * i) % 90 + 10}=" for i in range(k)]


# ---------------------------------------------------------------------- children
def child_generate(a: dict) -> dict:
    import torch
    import transformers

    from grpo_fast.sampling import HFSampler, SamplingParams

    params = SamplingParams(max_new_tokens=a["tokens"], temperature=1.0)
    ps = prompts(a["prompts"])
    if a["backend"] == "hf":
        torch.set_num_threads(a["threads"])
        model = transformers.AutoModelForCausalLM.from_pretrained(a["model"], dtype=torch.float32)
        sampler = HFSampler(
            model.to(a["device"]),
            transformers.AutoTokenizer.from_pretrained(a["model"]),
            logprobs=False,
        )
    else:
        from grpo_fast.sampling.vllm import VLLMSampler

        # The model's own context length (the demo has 32 positions; vLLM refuses more).
        sampler = VLLMSampler(a["model"], dtype="fp32", enforce_eager=a["device"] == "cpu")
    sampler.sample(ps[:2], 2, params)  # warm-up
    runs = []
    tokens = 0
    for _ in range(a["repeats"]):
        t0 = time.perf_counter()
        out = sampler.sample(ps, a["n"], params)
        runs.append(time.perf_counter() - t0)
        tokens = sum(len(c) for c in out.completion_ids)
    result = {"tokens": tokens, "seconds": statistics.median(runs)}
    if a["backend"] == "vllm" and a.get("push"):
        model = transformers.AutoModelForCausalLM.from_pretrained(a["model"], dtype=torch.float32)
        pushes = []
        for _ in range(a["repeats"]):
            t0 = time.perf_counter()
            sampler.push_weights(model)
            pushes.append(time.perf_counter() - t0)
        size = sum(p.numel() * p.element_size() for p in model.parameters())
        result["push_seconds"] = statistics.median(pushes)
        result["push_gb"] = size / 1e9
    if hasattr(sampler, "close"):
        sampler.close()
    return result


def child_train(a: dict) -> dict:
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    with tempfile.TemporaryDirectory() as out:
        cfg = TrainerConfig(
            sampler=a["backend"],
            max_steps=a["steps"],
            eval_every=0,
            eval_size=500,
            output_dir=out,
            device=a["device"],
            progress=False,
            plot=False,
            seed=a["seed"],
        )
        history = Trainer(cfg).train()
    steps = [m["time_step"] for m in history if "time_step" in m]
    accuracy = [m["eval_accuracy"] for m in history if "eval_accuracy" in m]
    return {
        "steps": len(steps),
        "steps_per_s": len(steps) / sum(steps),
        "accuracy_start": accuracy[0],
        "accuracy": accuracy[-1],
    }


# ---------------------------------------------------------------------- parent
def run_child(kind: str, a: dict, timeout: float) -> dict:
    cmd = [sys.executable, __file__, "--child", kind, json.dumps(a)]
    env = {
        "VLLM_CPU_KVCACHE_SPACE": "1",
        "VLLM_CPU_NUM_OF_RESERVED_CPU": "0",
        "TQDM_DISABLE": "1",
        **os.environ,
    }
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"timed out after {timeout:.0f} s"}
    if out.returncode != 0:
        return {"error": out.stderr.strip().splitlines()[-1] if out.stderr.strip() else "failed"}
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--device", default="cpu")
    p.add_argument("--prompts", type=int, default=32)
    p.add_argument("--n", type=int, default=8)
    p.add_argument("--tokens", type=int, default=32, help="max new tokens per completion")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    p.add_argument("--big-hidden", type=int, default=896)
    p.add_argument("--big-intermediate", type=int, default=4864)
    p.add_argument("--big-layers", type=int, default=24)
    p.add_argument("--big-heads", type=int, default=14)
    p.add_argument("--big-kv-heads", type=int, default=2)
    p.add_argument("--big-prompts", type=int, default=8)
    p.add_argument("--big-n", type=int, default=4)
    p.add_argument("--steps", type=int, default=150, help="demo training steps (0: skip)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=1200)
    p.add_argument("--out", help="write the results as JSON here")
    p.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        kind, payload = args.child
        fn = {"generate": child_generate, "train": child_train}[kind]
        print(json.dumps(fn(json.loads(payload))))
        return 0

    backends = ["hf", "vllm"]
    if importlib.util.find_spec("vllm") is None:
        print("vLLM is not importable here: only the HF rows (make vllm-venv for vLLM's CPU build)")
        backends = ["hf"]
    common = {"device": args.device, "threads": args.threads, "repeats": args.repeats}
    results: dict = {"config": vars(args), "generate": {}, "train": {}}
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        big = build_big_model(Path(tmp) / "big", args)
        shapes = {
            "demo": {"model": str(DEMO), "prompts": args.prompts, "n": args.n},
            "big": {"model": str(big), "prompts": args.big_prompts, "n": args.big_n},
        }
        for name, shape in shapes.items():
            for b in backends:
                a = {**common, **shape, "backend": b, "tokens": args.tokens, "push": name == "big"}
                r = run_child("generate", a, args.timeout)
                results["generate"][f"{name}/{b}"] = r
                print(f"generate {name:4} {b:4}: {fmt_gen(r)}", flush=True)
    if args.steps:
        for b in backends:
            a = {"backend": b, "steps": args.steps, "device": args.device, "seed": args.seed}
            r = run_child("train", a, args.timeout)
            results["train"][b] = r
            print(f"train {b:4}: {r}", flush=True)

    print("\nsummary (vLLM / HF):")
    for name in ("demo", "big"):
        hf, vl = results["generate"].get(f"{name}/hf"), results["generate"].get(f"{name}/vllm")
        if hf and vl and "error" not in hf and "error" not in vl:
            ratio = tps(vl) / tps(hf)
            print(f"  {name}: {tps(hf):,.0f} vs {tps(vl):,.0f} tokens/s, vLLM {ratio:.2f}x HF")
    big_vllm = results["generate"].get("big/vllm", {})
    if "push_seconds" in big_vllm:
        per_gb = big_vllm["push_seconds"] / big_vllm["push_gb"]
        print(
            f"  push: {big_vllm['push_seconds']:.2f} s for {big_vllm['push_gb']:.2f} GB "
            f"({per_gb:.2f} s/GB)"
        )
        results["push_seconds_per_gb"] = per_gb
    hf, vl = results["train"].get("hf"), results["train"].get("vllm")
    if hf and vl and "error" not in hf and "error" not in vl:
        print(
            f"  training, {args.steps} steps: {hf['steps_per_s']:.2f} vs "
            f"{vl['steps_per_s']:.2f} steps/s (vLLM {vl['steps_per_s'] / hf['steps_per_s']:.2f}x"
            f" HF); held-out accuracy {hf['accuracy']:.1%} vs {vl['accuracy']:.1%} "
            f"(from {hf['accuracy_start']:.1%})"
        )
    print(f"  total {time.perf_counter() - t_start:.0f} s")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=2) + "\n")
    failed = [k for k, v in {**results["generate"], **results["train"]}.items() if "error" in v]
    if failed:
        print(f"bench_sampler: FAILED: {failed}")
        return 1
    return 0


def tps(r: dict) -> float:
    return r["tokens"] / r["seconds"]


def fmt_gen(r: dict) -> str:
    if "error" in r:
        return f"ERROR {r['error']}"
    s = f"{r['tokens']} tokens in {r['seconds']:.2f} s = {tps(r):,.0f} tokens/s"
    if "push_seconds" in r:
        s += f"; push {r['push_seconds']:.2f} s for {r['push_gb']:.2f} GB"
    return s


if __name__ == "__main__":
    sys.exit(main())
