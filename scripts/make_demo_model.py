"""Build the embedded demo: a tiny Qwen2 model warm-started on 2-digit addition.

Writes ``python/grpo_fast/data/tiny_adder/`` (config, safetensors weights,
character-level tokenizer with a small chat template) and
``python/grpo_fast/data/addition_{train,eval}.jsonl``.
Reproducible: the same seed gives the same files (CPU, one thread).

The supervised warm start is deliberately short so that the model solves
roughly a third of the sums: enough successes that GRPO groups carry signal,
enough failures to learn from. Accuracy climbs steeply around that point, so
instead of a fixed step count it stops at the first check (every 10 steps, on
200 rows of the *training* split, never the held-out one) at or above
``--target``; steps and checks are deterministic, so the result is too.

    .venv/bin/python scripts/make_demo_model.py [--seed 0] [--target 0.35]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch
from tiny_lm import char_tokenizer, supervised_step, tiny_model, write_jsonl

DATA = Path(__file__).resolve().parent.parent / "python" / "grpo_fast" / "data"
CHARS = list("0123456789+-*= ")
# A chat template in the tokenizer's own characters, so conversational prompts work end
# to end: a system message and a space, then the user's message; an assistant message
# ends with <eos>. The generation prompt is empty, so a one-message conversation is
# exactly its plain prompt.
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ m['content'] }}"
    "{% if m['role'] == 'system' %}{{ ' ' }}"
    "{% elif m['role'] == 'assistant' %}{{ eos_token }}{% endif %}"
    "{% endfor %}"
)


def make_task(seed: int, n_eval: int = 500) -> tuple[list[dict], list[dict]]:
    """All sums a+b with 0 <= a, b < 100, split into RL-train and held-out eval."""
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(100) for b in range(100)]
    random.Random(seed).shuffle(rows)
    return rows[n_eval:], rows[:n_eval]


@torch.no_grad()
def greedy_accuracy(model, tokenizer, rows: list[dict], max_new_tokens: int = 4) -> float:
    model.eval()
    enc = tokenizer([r["prompt"] for r in rows], return_tensors="pt", padding=True)
    out = model.generate(
        **enc,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    texts = tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
    return sum(t.strip() == r["answer"] for t, r in zip(texts, rows, strict=True)) / len(rows)


def warm_start(
    model, tokenizer, rows: list[dict], target: float, seed: int, batch: int = 64
) -> int:
    """Teacher-forced next-token training on ``prompt + answer + <eos>``, loss on the answer.

    Returns the number of steps taken.
    """
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    check = rows[:200]
    for step in range(2000):
        if step % 10 == 0 and step > 0 and greedy_accuracy(model, tokenizer, check) >= target:
            return step
        model.train()
        idx = torch.randint(len(rows), (batch,), generator=gen).tolist()
        prompts = [rows[i]["prompt"] for i in idx]
        answers = [rows[i]["answer"] + tokenizer.eos_token for i in idx]
        supervised_step(model, opt, tokenizer, prompts, answers)
    return 2000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.35, help="stop at this train accuracy")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    torch.set_num_threads(1)

    tokenizer = char_tokenizer(CHARS, chat_template=CHAT_TEMPLATE)
    train, held_out = make_task(args.seed)
    model = tiny_model("qwen2", len(tokenizer), args.seed, max_positions=32)
    steps = warm_start(model, tokenizer, train, args.target, args.seed)
    acc = greedy_accuracy(model, tokenizer, held_out)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{n_params / 1e6:.2f}M parameters, {steps} steps, held-out greedy accuracy {acc:.1%}")

    args.out.mkdir(parents=True, exist_ok=True)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(args.out / "tiny_adder")
    tokenizer.save_pretrained(args.out / "tiny_adder")
    write_jsonl(args.out / "addition_train.jsonl", train)
    write_jsonl(args.out / "addition_eval.jsonl", held_out)


if __name__ == "__main__":
    main()
