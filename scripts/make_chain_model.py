"""Build the embedded chain-of-sums task: a tiny Llama model warm-started to write partial sums.

A prompt is a sum of 4 or 5 two-digit numbers (``37+45+19+23=``); the answer
is written as a chain of partial sums, then the total in GSM8K's format::

    37+45=82, 82+19=101, 101+23=124 #### 124

Every partial sum is a claim :func:`grpo_fast.check_steps` can decide, so a
completion that slips one addition has a wrong step where the slip is. Writes
``python/grpo_fast/data/tiny_chain/`` (config, safetensors weights,
character-level tokenizer) and ``python/grpo_fast/data/chain_{train,eval}.jsonl``.
Reproducible: the same seed gives the same files (CPU, one thread).

The architecture is Llama, not the demo's Qwen2: transformers 5 loads a Qwen2
directory's tokenizer as ``Qwen2Tokenizer`` whatever its ``tokenizer.json``
says, and that byte-level tokenizer has no token for this vocabulary's space.
The script checks that the saved directory round-trips the format through
``AutoTokenizer``, as the trainer loads it.

The supervised warm start stops at the first check (every 10 steps, greedy
decoding of 200 rows of the *training* split, never the held-out one) whose
final-answer accuracy reaches ``--target``: the model then writes the format
but often slips a step, so GRPO groups carry signal and there is something to
learn.

    .venv/bin/python scripts/make_chain_model.py [--seed 0] [--target 0.2]
"""

from __future__ import annotations

import argparse
import random
import re
from pathlib import Path

import torch
from tiny_lm import char_tokenizer, greedy, supervised_step, tiny_model, write_jsonl

DATA = Path(__file__).resolve().parent.parent / "python" / "grpo_fast" / "data"
CHARS = list("0123456789+=,# ")
MAX_NEW_TOKENS = 64


def solution(numbers: list[int]) -> str:
    """The chain of partial sums of ``numbers``, then ``#### total``."""
    steps, acc = [], numbers[0]
    for x in numbers[1:]:
        steps.append(f"{acc}+{x}={acc + x}")
        acc += x
    return ", ".join(steps) + f" #### {acc}"


def make_task(seed: int, n_train: int = 8000, n_eval: int = 500) -> tuple[list[dict], list[dict]]:
    """Distinct prompts of 4 or 5 numbers in 10..99, split into RL-train and held-out eval."""
    rng = random.Random(seed)
    seen: set[str] = set()
    rows = []
    while len(rows) < n_train + n_eval:
        numbers = [rng.randint(10, 99) for _ in range(rng.choice((4, 5)))]
        prompt = "+".join(map(str, numbers)) + "="
        if prompt not in seen:
            seen.add(prompt)
            rows.append({"prompt": prompt, "answer": str(sum(numbers))})
    return rows[n_eval:], rows[:n_eval]


def numbers_of(prompt: str) -> list[int]:
    return [int(x) for x in prompt.rstrip("=").split("+")]


def report(model, tokenizer, rows: list[dict]) -> dict[str, float]:
    """Final-answer accuracy, share in the format, and share of true partial sums."""
    texts = greedy(model, tokenizer, [r["prompt"] for r in rows], MAX_NEW_TOKENS)
    right = formatted = claims = true = 0
    for text, row in zip(texts, rows, strict=True):
        m = re.search(r"#### (\d+)$", text.strip())
        formatted += m is not None
        right += m is not None and m.group(1) == row["answer"]
        for a, b, c in re.findall(r"(\d+)\+(\d+)=(\d+)", text):
            claims += 1
            true += int(a) + int(b) == int(c)
    n = len(rows)
    return {"accuracy": right / n, "format": formatted / n, "step_accuracy": true / max(claims, 1)}


def warm_start(
    model, tokenizer, rows: list[dict], target: float, seed: int, batch: int = 64
) -> int:
    """Teacher-forced next-token training on ``prompt + solution + <eos>``, loss on the solution.

    Returns the number of steps taken.
    """
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    check = rows[:200]
    for step in range(6000):
        if step % 10 == 0 and step > 0:
            r = report(model, tokenizer, check)
            print(f"step {step}: {r}", flush=True)
            if r["accuracy"] >= target:
                return step
        model.train()
        idx = torch.randint(len(rows), (batch,), generator=gen).tolist()
        prompts = [rows[i]["prompt"] for i in idx]
        answers = [solution(numbers_of(p)) + tokenizer.eos_token for p in prompts]
        supervised_step(model, opt, tokenizer, prompts, answers)
    return 6000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.2, help="stop at this train accuracy")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    torch.set_num_threads(1)

    tokenizer = char_tokenizer(CHARS)
    train, held_out = make_task(args.seed)
    model = tiny_model("llama", len(tokenizer), args.seed, max_positions=96)
    steps = warm_start(model, tokenizer, train, args.target, args.seed)
    r = report(model, tokenizer, held_out)
    n_params = sum(p.numel() for p in model.parameters())
    print(
        f"{n_params / 1e6:.2f}M parameters, {steps} steps; held-out greedy: "
        f"accuracy {r['accuracy']:.1%}, in format {r['format']:.1%}, "
        f"true partial sums {r['step_accuracy']:.1%}"
    )

    args.out.mkdir(parents=True, exist_ok=True)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.save_pretrained(args.out / "tiny_chain")
    tokenizer.save_pretrained(args.out / "tiny_chain")
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(args.out / "tiny_chain")
    text = solution(numbers_of(held_out[0]["prompt"]))
    ids = loaded(text, add_special_tokens=False)["input_ids"]
    assert loaded.decode(ids) == text, f"the saved tokenizer does not round-trip {text!r}"
    write_jsonl(args.out / "chain_train.jsonl", train)
    write_jsonl(args.out / "chain_eval.jsonl", held_out)


if __name__ == "__main__":
    main()
