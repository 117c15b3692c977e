"""Peak memory and tokens/s of one GRPO training step of a randomly initialised
~100M-parameter Qwen2 on the CPU: fp32 full fine-tuning against bf16 with
gradient checkpointing, bf16 + LoRA, and bf16 + LoRA + checkpointing (rank 16
on peft's default modules for Qwen2, ``q_proj`` and ``v_proj``, what
``--lora-r 16`` gives), and the same on every linear layer (``all-linear``).

Goal (issue 11): bf16 + LoRA + gradient checkpointing at <= 35% of fp32 full
fine-tuning's peak.

Each configuration runs in a fresh subprocess (as ``bench_logprobs.py`` does),
so one's allocations cannot hide in another's high-water mark. The child
builds the model (fp32, or bf16 directly for a LoRA base), a
:class:`grpo_fast.Trainer` around it, and a fixed batch of ``--prompts`` x
``--generations`` rows (random prompt and completion tokens, advantages of
both signs), then calls ``Trainer.update`` twice: the trainer's own loss
forward (shared prompt cache, chunked log-probs), backward and AdamW step. The
first step allocates the optimizer state, the second is timed.

* Peak: ``ru_maxrss`` (the kernel's high-water mark of the process) minus the
  resident set after the imports, before the model exists: weights, gradients,
  optimizer state and the step's activations.
* Tokens/s: prompt + completion tokens of the batch over the second step's
  wall time (the trainer's ``tokens_per_s`` counts the same tokens).

Run it as a script (``python benches/bench_train_memory.py``; ``--help`` to
resize), or through pytest-benchmark (``make bench``).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import pytest

#: name -> (dtype, LoRA target modules (None: no LoRA; (): peft's default), checkpointing)
CONFIGS = {
    "fp32 full": ("fp32", None, False),
    "bf16 + checkpointing": ("bf16", None, True),
    "bf16 + LoRA": ("bf16", (), False),
    "bf16 + LoRA + checkpointing": ("bf16", (), True),
    "bf16 + LoRA all-linear + checkpointing": ("bf16", ("all-linear",), True),
}
#: The goal, for this configuration against fp32 full.
GOAL, GOAL_CONFIG = 0.35, "bf16 + LoRA + checkpointing"


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def qwen2_config(hidden: int, layers: int, vocab: int):
    from transformers import Qwen2Config

    return Qwen2Config(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=hidden * 8 // 3,
        num_hidden_layers=layers,
        num_attention_heads=hidden // 64,
        num_key_value_heads=max(1, hidden // 256),
        max_position_embeddings=4096,
        tie_word_embeddings=True,
    )


def child(name: str, a: argparse.Namespace) -> dict:
    """One configuration's step, in this fresh process."""
    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM

    from grpo_fast.sampling import Completions
    from grpo_fast.train.data import DATA_DIR
    from grpo_fast.train.modeling import DTYPES, load_tokenizer
    from grpo_fast.train.rollout import Batch
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    dtype, targets, checkpointing = CONFIGS[name]
    lora = targets is not None
    tok = load_tokenizer(str(DATA_DIR / "tiny_adder"))  # only its pad id is used
    rows = [{"prompt": "1+1=", "answer": "2"}] * a.prompts
    import peft  # noqa: F401 (imported before the baseline, as the modeling code is)
    import transformers.models.qwen2.modeling_qwen2  # noqa: F401

    base = _rss_bytes()
    if _maxrss_bytes() > base + (64 << 20):
        raise RuntimeError("the imports raised maxrss above the baseline")

    torch.manual_seed(0)
    config = qwen2_config(a.hidden, a.layers, a.vocab)
    # A LoRA base is created in bf16 directly, as from_pretrained(dtype=...) loads it.
    model = AutoModelForCausalLM.from_config(config, dtype=DTYPES[dtype] if lora else torch.float32)
    cfg = TrainerConfig(
        output_dir=a.out,
        prompts_per_step=a.prompts,
        num_generations=a.generations,
        max_new_tokens=a.completion,
        learning_rate=1e-6,
        dtype=dtype,
        gradient_checkpointing=checkpointing,
        lora_r=16 if lora else 0,
        lora_target_modules=targets or (),
        eval_file=None,
        progress=False,
        plot=False,
    )
    trainer = Trainer(cfg, model=model, tokenizer=tok, train_rows=rows)
    rng = np.random.default_rng(0)
    G, P = a.generations, a.prompts
    prompts = [rng.integers(3, a.vocab, a.prompt).tolist() for _ in range(P)]
    prompt_ids = [p for p in prompts for _ in range(G)]
    completion_ids = [rng.integers(3, a.vocab, a.completion).tolist() for _ in range(P * G)]
    comp = Completions([""] * (P * G), prompt_ids, completion_ids, None, G)
    rewards = rng.integers(0, 2, P * G).astype(np.float32)
    adv = (rewards - rewards.mean()).astype(np.float32)
    batch = Batch(np.arange(P), comp, rewards, {"math": rewards}, adv)
    trainer.update(batch)  # allocates the optimizer state
    start = time.perf_counter()
    out = trainer.update(batch)
    seconds = time.perf_counter() - start
    peak = _maxrss_bytes() - base
    n_params = sum(p.numel() for p in trainer.model.parameters())
    trainable = sum(p.numel() for p in trainer.model.parameters() if p.requires_grad)
    tokens = sum(len(p) + len(c) for p, c in zip(prompt_ids, completion_ids, strict=True))
    return {
        "name": name,
        "peak_bytes": peak,
        "step_s": seconds,
        "tokens_per_s": tokens / seconds,
        "params": n_params,
        "trainable": trainable,
        "loss": out["loss"],
    }


def _run_child(name: str, args: list[str], threads: int | None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--child", name, *args]
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{name} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(args: list[str], threads: int | None = None) -> list[dict]:
    """Every configuration in its own subprocess; ratios against fp32 full."""
    rows = [_run_child(name, args, threads) for name in CONFIGS]
    full = rows[0]
    for r in rows:
        r["peak_ratio"] = r["peak_bytes"] / full["peak_bytes"]
        r["speed_ratio"] = r["tokens_per_s"] / full["tokens_per_s"]
    return rows


def _print(rows: list[dict], shape: str) -> None:
    print(f"one training step, {shape}; peak = ru_maxrss - RSS after imports")
    print("| configuration | trainable | peak | peak / fp32 full | tokens/s | speed / fp32 full |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(
            f"| {r['name']} | {r['trainable'] / 1e6:.1f}M of {r['params'] / 1e6:.1f}M "
            f"| {r['peak_bytes'] / 2**20:.0f} MiB | {100 * r['peak_ratio']:.1f}% "
            f"| {r['tokens_per_s']:.0f} | {r['speed_ratio']:.2f}x |"
        )
    goal = next(r for r in rows if r["name"] == GOAL_CONFIG)
    verdict = "met" if goal["peak_ratio"] <= GOAL else "NOT met"
    print(f"goal: {GOAL_CONFIG} <= {GOAL:.0%} of fp32 full: {verdict}", flush=True)


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", choices=tuple(CONFIGS), help=argparse.SUPPRESS)
    p.add_argument("--out", default="/tmp/grpo-fast-bench-train-memory", help=argparse.SUPPRESS)
    p.add_argument("--hidden", type=int, default=768)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--vocab", type=int, default=32_768)
    p.add_argument("--prompts", type=int, default=2, help="prompts per step")
    p.add_argument("--generations", type=int, default=4, help="completions per prompt")
    p.add_argument("--prompt", type=int, default=64, help="prompt tokens")
    p.add_argument("--completion", type=int, default=128, help="completion tokens")
    p.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS of the children")
    return p


def _shape(a: argparse.Namespace) -> str:
    return (
        f"Qwen2 hidden {a.hidden} x {a.layers} layers, vocab {a.vocab}, {a.prompts} prompts x "
        f"{a.generations} completions, {a.prompt} + {a.completion} tokens, CPU"
    )


# --- pytest-benchmark -----------------------------------------------------------------


def test_train_step_memory(benchmark, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("peft")
    argv: list[str] = []
    rows = benchmark.pedantic(compare, args=(argv,), rounds=1, iterations=1)
    benchmark.extra_info.update({r["name"]: r for r in rows})
    with capsys.disabled():
        print()
        _print(rows, _shape(_parser().parse_args(argv)))


# --- script ---------------------------------------------------------------------------


def main(argv=None) -> None:
    a = _parser().parse_args(argv)
    if a.child:
        print(json.dumps(child(a.child, a)))
        return
    args = [f"--{k}={v}" for k, v in vars(a).items() if k not in ("child", "threads")]
    _print(compare(args, a.threads), _shape(a))


if __name__ == "__main__":
    main()
