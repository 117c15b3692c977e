"""Build the embedded ``code`` task: a tiny Llama model that writes a one-line Python function.

A prompt asks for a function of one integer in words, from six families::

    Write a Python function f(x) that returns 3*x + 7.
    Write a Python function f(x) that returns x times 12.
    Write a Python function f(x) that returns the remainder of x divided by 9.
    Write a Python function f(x) that returns x squared minus 4.
    Write a Python function f(x) that returns the larger of x and 25.
    Write a Python function f(x) that returns True when x is greater than 15.

and the model answers with a fenced block, which :class:`grpo_fast.rewards.CodeReward`
runs in the sandbox against the row's tests::

    ```python
    def f(x): return 3*x + 7
    ```

The answer column holds the tests in the function-call format of docs/code.md
(``{"fn_name": "f", "inputs": [[-7], [0], ...], "outputs": [-14, 7, ...]}``), the
expected values computed by running the reference body here: inputs -7, 0, 3,
10 and 123 and the prompt's constant and the next integer, so that a wrong
operator or a constant off by one fails at least one test.

The tokenizer is character-level plus one token for each fixed piece (the
prompt's head, the fence, ``def f(x): return ``), so an answer is about 12
tokens. The supervised warm start stops at the first check (every 5 steps,
greedy decoding of 200 rows of the *training* split, never the held-out one,
run in the sandbox) whose pass rate reaches ``--target``: the model then writes
the format but often gets an operator or a constant wrong, so GRPO groups
carry signal. Writes ``python/grpo_fast/data/tiny_code/`` and
``python/grpo_fast/data/code_{train,eval}.jsonl``. Reproducible on CPU with one
thread (the sandbox's verdicts are deterministic).

    .venv/bin/python scripts/make_code_model.py [--seed 0] [--target 0.3]
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import torch
from tiny_lm import char_tokenizer, greedy, supervised_step, tiny_model, write_jsonl

DATA = Path(__file__).resolve().parent.parent / "python" / "grpo_fast" / "data"
HEAD = "Write a Python function f(x) that returns "
OPEN, DEF, CLOSE = "```python\n", "def f(x): return ", "\n```"
PIECES = [HEAD, OPEN, DEF, CLOSE]
CHARS = [chr(c) for c in range(32, 127)] + ["\n"]
#: Every test runs these inputs, and the prompt's constant and the next integer.
INPUTS = (-7, 0, 3, 10, 123)
MAX_NEW_TOKENS = 24
WORDS = (("plus", "+"), ("minus", "-"), ("times", "*"))


def families() -> list[tuple[str, str, int]]:
    """Every distinct ``(description, body, constant)`` of the six families."""
    out = []
    for a in range(2, 10):
        for b in range(1, 31):
            out += [(f"{a}*x + {b}", f"{a}*x + {b}", b), (f"{a}*x - {b}", f"{a}*x - {b}", b)]
    for c in range(1, 100):
        out += [(f"x {word} {c}", f"x {op} {c}", c) for word, op in WORDS]
    out += [(f"the remainder of x divided by {c}", f"x % {c}", c) for c in range(2, 100)]
    for c in range(1, 100):
        out += [(f"x squared plus {c}", f"x*x + {c}", c), (f"x squared minus {c}", f"x*x - {c}", c)]
    for c in range(0, 100):
        out += [(f"the larger of x and {c}", f"max(x, {c})", c)]
        out += [(f"the smaller of x and {c}", f"min(x, {c})", c)]
        out += [(f"True when x is greater than {c}", f"x > {c}", c)]
        out += [(f"True when x is less than {c}", f"x < {c}", c)]
    return out


def answer(body: str) -> str:
    """The completion that writes ``body`` (without the end-of-sequence token)."""
    return f"{OPEN}{DEF}{body}{CLOSE}"


def tests(body: str, constant: int) -> str:
    """The row's tests (function-call format, as JSON): ``body`` evaluated here."""
    inputs = sorted({*INPUTS, constant, constant + 1})
    outputs = [eval(body, {"max": max, "min": min}, {"x": x}) for x in inputs]  # noqa: S307
    return json.dumps({"fn_name": "f", "inputs": [[x] for x in inputs], "outputs": outputs})


def make_task(seed: int, n_eval: int = 200) -> tuple[list[dict], list[dict]]:
    """Every prompt once, shuffled, split into RL-train and held-out eval; ``body`` is the
    reference solution (not read by the trainer)."""
    rows = [
        {"prompt": f"{HEAD}{desc}.", "answer": tests(body, c), "body": body}
        for desc, body, c in families()
    ]
    random.Random(seed).shuffle(rows)
    return rows[n_eval:], rows[:n_eval]


def pass_rate(model, tokenizer, rows: list[dict]) -> float:
    """The share of greedy completions that pass every test of their row (the sandbox)."""
    from grpo_fast import verify_code_batch

    texts = greedy(model, tokenizer, [r["prompt"] for r in rows], MAX_NEW_TOKENS)
    verdicts = verify_code_batch(texts, [r["answer"] for r in rows])
    return sum(v.ok for v in verdicts) / len(rows)


def warm_start(model, tokenizer, rows: list[dict], target: float, seed: int, batch: int = 64):
    """Teacher-forced next-token training on ``prompt + answer + <eos>``, loss on the answer,
    until the greedy pass rate on 200 training rows reaches ``target``; returns the steps."""
    gen = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    check = rows[:200]
    for step in range(6000):
        if step % 5 == 0 and step > 0:
            rate = pass_rate(model, tokenizer, check)
            print(f"step {step}: train pass rate {rate:.1%}", flush=True)
            if rate >= target:
                return step
        model.train()
        idx = torch.randint(len(rows), (batch,), generator=gen).tolist()
        prompts = [rows[i]["prompt"] for i in idx]
        answers = [answer(rows[i]["body"]) + tokenizer.eos_token for i in idx]
        supervised_step(model, opt, tokenizer, prompts, answers)
    return 6000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--target", type=float, default=0.3, help="stop at this train pass rate")
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    torch.set_num_threads(1)

    tokenizer = char_tokenizer(CHARS, pieces=PIECES)
    train, held_out = make_task(args.seed)
    model = tiny_model("llama", len(tokenizer), args.seed, max_positions=96)
    steps = warm_start(model, tokenizer, train, args.target, args.seed)
    rate = pass_rate(model, tokenizer, held_out)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{n_params / 1e6:.2f}M parameters, {steps} steps; held-out greedy pass rate {rate:.1%}")

    out = args.out / "tiny_code"
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(out)
    text = held_out[0]["prompt"] + answer(held_out[0]["body"])
    ids = loaded(text, add_special_tokens=False)["input_ids"]
    assert loaded.decode(ids) == text, f"the saved tokenizer does not round-trip {text!r}"
    assert 0 not in ids, f"a character of {text!r} is outside the vocabulary"
    strip = lambda rows: [{"prompt": r["prompt"], "answer": r["answer"]} for r in rows]  # noqa: E731
    write_jsonl(args.out / "code_train.jsonl", strip(train))
    write_jsonl(args.out / "code_eval.jsonl", strip(held_out))


if __name__ == "__main__":
    main()
