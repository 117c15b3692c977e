"""Docs are code: the docstring examples of every module and the README's Python
blocks run here, and every document the code and README point to exists.

A README block that uses names it does not define (``completions``,
``model``, ...) gets them from :data:`SETUP`, written here next to the block's
first line; a line ``expr  # value`` whose comment is a Python literal (or
starts with one, ``# True: because ...``) is checked: the expression must
equal it.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import os
import pkgutil
import re
from pathlib import Path

import numpy as np
import pytest

import grpo_fast

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()
BLOCKS = re.findall(r"```python[^\n]*\n(.*?)```", README, re.S)

# Modules whose imports need something optional; they are skipped when it is missing.
MODULES = sorted(
    m.name
    for m in pkgutil.walk_packages(grpo_fast.__path__, "grpo_fast.")
    if not m.name.endswith("__main__")
)


# Examples known to be stale, each with what is wrong; not strict, so fixing one
# in its module needs no change here (remove the entry then).
STALE: dict[str, str] = {}


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(m, marks=pytest.mark.xfail(reason=STALE[m], strict=False)) if m in STALE else m
        for m in MODULES
    ],
)
def test_docstring_examples(name):
    try:
        module = importlib.import_module(name)
    except ImportError as e:  # an optional dependency (torch, verl, ...) is missing
        pytest.skip(f"{name}: {e}")
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = [t for t in finder.find(module, name) if t.examples]
    for t in tests:
        runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, f"{result.failed} docstring example(s) of {name} failed"


SETUP = {
    # "Verifying answers and scoring rewards"
    "import grpo_fast\n": """
completions = [r"so \\boxed{4}", "<think>2+2</think> <answer>4</answer>", "5"]
golds = ["4", "4", "4"]
token_lengths = [12, 3900, 4200]
def my_fn(completions, golds, lengths):
    return [float(len(c) < 20) for c in completions]
""",
    # "Token log-probs without the [B, T, V] logits"
    "from grpo_fast.logprobs import": """
import torch
from conftest import tiny_causal_lm
model = tiny_causal_lm("qwen2")
input_ids = torch.randint(2, 17, (2, 6))
attention_mask = torch.ones_like(input_ids)
completion_mask = torch.tensor([[0, 0, 0, 1, 1, 1], [0, 0, 1, 1, 1, 1]])
targets = input_ids[:, 1:]
logits = model(input_ids).logits[:, :-1]
""",
    # "The loss"
    "from grpo_fast.loss import": """
import torch
logp = torch.randn(3, 4, requires_grad=True)
old_logp = logp.detach() + 0.01
ref_logp = logp.detach() - 0.02
completion_mask = torch.ones(3, 4)
out = grpo_fast.compute_advantages(np.array([1.0, 0.0, 1.0], np.float32), [0, 0, 0])
""",
}


def _setup_for(block: str) -> str:
    return next((code for start, code in SETUP.items() if block.startswith(start)), "")


def _as_plain(value):
    if hasattr(value, "tolist"):
        return value.tolist()
    return value


def _checked_lines(block: str):
    """(line number, expression, expected) for lines ``expr  # literal``."""
    lines = block.splitlines()
    for node in ast.parse(block).body:
        if not isinstance(node, ast.Expr) or node.lineno != node.end_lineno:
            continue
        line = lines[node.lineno - 1]
        code, sep, comment = line.partition("  # ")
        if not sep:
            continue
        comment = comment.strip()
        # "# [1.0, 0.0]" or "# True: why" (the literal before a colon).
        for text in (comment, comment.split(":")[0].strip()):
            try:
                expected = ast.literal_eval(text)
            except (ValueError, SyntaxError):
                continue
            yield node.lineno, code.strip(), expected
            break
        else:
            # "# Answer(canonical='3/4', kind='number')": the result's repr, in full.
            if re.match(r"^[A-Z]\w*\(.*\)$", comment) and "..." not in comment:
                yield node.lineno, code.strip(), Repr(comment)


class Repr(str):
    """An expected ``repr`` (a README comment showing an object)."""


@pytest.mark.parametrize("index", range(len(BLOCKS)), ids=lambda i: f"block{i}")
def test_readme_python_blocks_run(index, tmp_path, monkeypatch):
    block = BLOCKS[index]
    needs_torch = ("torch", "Trainer", "integrations.verl", "openrlhf", "logprobs", "loss")
    if any(word in block + _setup_for(block) for word in needs_torch):
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)  # blocks that write files (runs/...) write here
    namespace = {"__name__": "readme", "np": np, "grpo_fast": grpo_fast}
    exec(compile(_setup_for(block), "<setup>", "exec"), namespace)
    _run_block(block, namespace, f"README block {index}")


def _run_block(block: str, namespace: dict, name: str) -> None:
    exec(compile(block, name, "exec"), namespace)
    for lineno, code, expected in _checked_lines(block):
        got = eval(code, namespace)
        where = f"{name}, line {lineno}"
        if isinstance(expected, Repr):
            assert repr(got) == expected, where
        else:
            assert _as_plain(got) == pytest.approx(expected, abs=1e-4), where


def test_readme_blocks_check_their_stated_values():
    # The README states values that the blocks then check, and a wrong one fails.
    assert sum(len(list(_checked_lines(b))) for b in BLOCKS) >= 10
    _run_block("x = [1.0, 2.0]\nx  # [1.0, 2.0]\nlen(x) == 2  # True: a reason", {}, "ok")
    with pytest.raises(AssertionError, match="wrong, line 2"):
        _run_block("x = [1.0, 2.0]\nx  # [1.0, 2.5]", {}, "wrong")


def test_documents_the_code_points_to_exist():
    pointed = set()
    for path in [ROOT / "README.md", *sorted((ROOT / "python").rglob("*.py"))]:
        pointed |= set(re.findall(r"docs/[\w.-]+\.md", path.read_text()))
    assert "docs/design.md" in pointed and "docs/verify_semantics.md" in pointed
    missing = sorted(p for p in pointed if not (ROOT / p).is_file())
    assert not missing, f"documents pointed to but not in the repository: {missing}"
    assert os.path.getsize(ROOT / "docs" / "verify_semantics.md") > 1000
