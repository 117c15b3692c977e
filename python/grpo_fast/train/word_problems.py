"""Arithmetic word problems, seeded: the data of ``--task smollm2`` (a real pretrained
chat model, SmolLM2-135M-Instruct).

One operation (a sum, a difference, a product of a small factor) or two (a sum then
a difference, a product then a sum, ...), small numbers, a named person and a
countable thing; the gold answer is a whole number, never negative. Each row is a
conversation (the model's chat template renders it) and its answer::

    {"prompt": [{"role": "user", "content": "Mia has 23 apples. She buys 58 more. ..."}],
     "answer": "81", "kind": "add"}

``python -m grpo_fast.train.word_problems OUT_DIR`` writes the task's two files
(``word_problems_train.jsonl``, ``word_problems_eval.jsonl``); the package ships them,
and ``tests/test_real_task.py`` checks that this module still writes them.

Examples
--------
>>> rows = generate(3, seed=1)
>>> [sorted(r) for r in rows] == [["answer", "kind", "prompt"]] * 3
True
>>> rows == generate(3, seed=1)
True
"""

from __future__ import annotations

import json
import random
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["INSTRUCTION", "generate", "write_task"]

#: Appended to every question: where the answer goes.
INSTRUCTION = "Give the final answer as a number in \\boxed{}."

_NAMES = (
    "Mia", "Liam", "Emma", "Noah", "Ava", "Lucas", "Sofia", "Omar", "Yuki", "Ines",
    "Ravi", "Lena", "Tom", "Zoe", "Ben", "Nora",
)  # fmt: skip
_THINGS = (
    "apples", "books", "marbles", "stickers", "pencils", "cookies", "stamps", "shells",
    "cards", "coins", "toy cars", "balloons",
)  # fmt: skip


def _add(r: random.Random, who: str, what: str) -> tuple[str, int]:
    a, b = r.randint(2, 20), r.randint(2, 9)
    return (
        f"{who} has {a} {what}. Then {who} gets {b} more. How many {what} does {who} have now?",
        a + b,
    )


def _sub(r: random.Random, who: str, what: str) -> tuple[str, int]:
    a = r.randint(8, 20)
    b = r.randint(2, 7)
    return f"{who} has {a} {what} and gives away {b}. How many {what} are left?", a - b


def _mul(r: random.Random, who: str, what: str) -> tuple[str, int]:
    boxes, each = r.randint(2, 5), r.randint(2, 6)
    return (
        f"{who} has {boxes} boxes with {each} {what} in each box. How many {what} is that?",
        boxes * each,
    )


def _add_sub(r: random.Random, who: str, what: str) -> tuple[str, int]:
    a, b = r.randint(3, 12), r.randint(2, 8)
    c = r.randint(1, min(a + b - 1, 6))
    question = (
        f"{who} has {a} {what}, finds {b} more, and then loses {c}. "
        f"How many {what} does {who} have now?"
    )
    return question, a + b - c


def _mul_add(r: random.Random, who: str, what: str) -> tuple[str, int]:
    bags, each, extra = r.randint(2, 4), r.randint(2, 5), r.randint(1, 9)
    question = (
        f"{who} buys {bags} bags of {what} with {each} in each bag, and already had {extra}. "
        f"How many {what} does {who} have in total?"
    )
    return question, bags * each + extra


def _sub_sub(r: random.Random, who: str, what: str) -> tuple[str, int]:
    a = r.randint(12, 20)
    b = r.randint(2, 5)
    c = r.randint(1, 5)
    question = (
        f"{who} starts with {a} {what}, gives {b} to a friend and {c} to a sister. "
        f"How many {what} does {who} keep?"
    )
    return question, a - b - c


#: The kinds of problem: one operation, then two.
KINDS: dict[str, Callable[[random.Random, str, str], tuple[str, int]]] = {
    "add": _add,
    "sub": _sub,
    "mul": _mul,
    "add_sub": _add_sub,
    "mul_add": _mul_add,
    "sub_sub": _sub_sub,
}


def generate(n: int, *, seed: int) -> list[dict[str, Any]]:
    """``n`` problems (the kinds in turn), the same for the same ``seed``."""
    r = random.Random(seed)
    kinds = list(KINDS.items())
    rows = []
    for i in range(n):
        kind, make = kinds[i % len(kinds)]
        question, answer = make(r, r.choice(_NAMES), r.choice(_THINGS))
        content = f"{question} {INSTRUCTION}"
        rows.append(
            {"prompt": [{"role": "user", "content": content}], "answer": str(answer), "kind": kind}
        )
    r.shuffle(rows)
    return rows


def write_task(out: str | Path, *, train: int = 2000, held_out: int = 200) -> list[Path]:
    """Write the task's train and held-out files into ``out`` (seeds 0 and 1; a held-out
    question that is also a training question is dropped and replaced)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    train_rows = generate(train, seed=0)
    seen = {json.dumps(r["prompt"]) for r in train_rows}
    held: list[dict[str, Any]] = []
    seed = 1
    while len(held) < held_out:
        fresh = [r for r in generate(held_out, seed=seed) if json.dumps(r["prompt"]) not in seen]
        held += fresh[: held_out - len(held)]
        seed += 1000
    paths = []
    for name, rows in (("train", train_rows), ("eval", held)):
        path = out / f"word_problems_{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
        paths.append(path)
    return paths


if __name__ == "__main__":
    for p in write_task(sys.argv[1] if len(sys.argv) > 1 else "."):
        print(p)
