"""Build the embedded ``multiply`` task: a tiny Llama model that may call a calculator.

A prompt is a product of two 2-digit numbers (``23*17=``). The model answers
either directly (``391<eos>``) or through the ``calc`` tool, in the fallback
tool-call format of docs/tools.md::

    <tool_call>{"name": "calc", "arguments": {"expression": "23*17"}}</tool_call><eos>
    <tool_response>391</tool_response>391<eos>

(the second line is the tool's message, then the model's answer). The
tokenizer is character-level plus one token for each fixed piece of the call
(``<tool_call>``, the JSON head, ...), so a call is 9 tokens. The chat
template renders a ``tool`` message as ``<tool_response>...</tool_response>``.

The supervised warm start sees ``--tool-share`` (default 25%) of its examples
through the tool, the rest answered directly. Multiplying in its head is hard
for a 0.8M-parameter model, so greedy decoding (which answers directly) is
weak; the sampled rollouts that call the tool are right, and GRPO with the
tool can learn to call it. The tool's message is masked out of the warm
start's loss, as it is out of GRPO's. Writes ``python/grpo_fast/data/tiny_tool/``
and ``python/grpo_fast/data/multiply_{train,eval}.jsonl``. Reproducible on CPU
with one thread.

    .venv/bin/python scripts/make_tool_model.py [--seed 0] [--steps 1500]
"""

from __future__ import annotations

import argparse
import random
from pathlib import Path

import torch
from tiny_lm import char_tokenizer, teacher_forced_step, tiny_model, write_jsonl

DATA = Path(__file__).resolve().parent.parent / "python" / "grpo_fast" / "data"
PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "</tool_response>",
    '{"name": "calc", "arguments": {"expression": "',
    '"}}',
]
CHARS = list("0123456789+-*/=()., ")
TEMPLATE = (
    "{% for m in messages %}{% if m['role'] == 'tool' %}<tool_response>{{ m['content'] }}"
    "</tool_response>{% else %}{{ m['content'] }}{% if m['role'] == 'assistant' %}"
    "{{ eos_token }}{% endif %}{% endif %}{% endfor %}"
)


def make_task(seed: int, n_train: int = 4000, n_eval: int = 200) -> tuple[list[dict], list[dict]]:
    """Distinct products a*b with a, b in 10..99, split into RL-train and held-out eval."""
    rng = random.Random(seed)
    pairs = [(a, b) for a in range(10, 100) for b in range(10, 100)]
    rng.shuffle(pairs)
    rows = [{"prompt": f"{a}*{b}=", "answer": str(a * b)} for a, b in pairs[: n_train + n_eval]]
    return rows[n_eval:], rows[:n_eval]


def call_text(prompt: str) -> str:
    return f"<tool_call>{PIECES[4]}{prompt.rstrip('=')}{PIECES[5]}</tool_call>"


def example(tokenizer, row: dict, tool: bool) -> tuple[list[int], list[int]]:
    """Token ids of prompt + rollout, and the loss labels (-100: prompt and tool message)."""
    enc = lambda s: tokenizer(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    eos = [tokenizer.eos_token_id]
    prompt = enc(row["prompt"])
    if not tool:
        answer = enc(row["answer"]) + eos
        return prompt + answer, [-100] * len(prompt) + answer
    call = enc(call_text(row["prompt"])) + eos
    response = enc(f"<tool_response>{row['answer']}</tool_response>")
    answer = enc(row["answer"]) + eos
    ids = prompt + call + response + answer
    return ids, [-100] * len(prompt) + call + [-100] * len(response) + answer


def supervised(model, tokenizer, rows, steps: int, share: float, seed: int, batch: int = 64):
    rng = random.Random(seed + 1)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=0.0)
    model.train()
    for step in range(steps):
        pairs = [example(tokenizer, rng.choice(rows), rng.random() < share) for _ in range(batch)]
        loss = teacher_forced_step(model, opt, pairs)
        if step % 250 == 0:
            print(f"step {step}: loss {loss:.3f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--tool-share", type=float, default=0.25)
    parser.add_argument("--out", type=Path, default=DATA)
    args = parser.parse_args()
    torch.set_num_threads(1)

    tokenizer = char_tokenizer(CHARS, pieces=PIECES, chat_template=TEMPLATE)
    train, held_out = make_task(args.seed)
    model = tiny_model("llama", len(tokenizer), args.seed, max_positions=64)
    supervised(model, tokenizer, train, args.steps, args.tool_share, args.seed)
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    out = args.out / "tiny_tool"
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    from transformers import AutoTokenizer

    loaded = AutoTokenizer.from_pretrained(out)
    text = call_text(held_out[0]["prompt"]) + "<tool_response>391</tool_response>391"
    ids = loaded(text, add_special_tokens=False)["input_ids"]
    assert loaded.decode(ids) == text, f"the saved tokenizer does not round-trip {text!r}"
    assert loaded.chat_template == TEMPLATE
    write_jsonl(args.out / "multiply_train.jsonl", train)
    write_jsonl(args.out / "multiply_eval.jsonl", held_out)
    print(f"{sum(p.numel() for p in model.parameters()) / 1e6:.2f}M parameters, wrote {out}")


if __name__ == "__main__":
    main()
