"""The package's layout holds: the top layer never imports the torch subpackages, no
module imports one that imports it back, the command line's cheap commands load
no torch, and the advantage epsilon is one constant."""

from __future__ import annotations

import ast
import inspect
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import grpo_fast

PACKAGE = Path(grpo_fast.__file__).parent
# The numpy-only top layer and the subpackages it must not import.
TOP = ("errors", "names", "verify", "rewards", "run_rewards", "steps", "advantages", "_ids")
BELOW = ("grpo_fast.train", "grpo_fast.loss", "grpo_fast.sampling", "grpo_fast.logprobs")


def _modules() -> dict[str, Path]:
    out = {}
    for path in [*PACKAGE.rglob("*.py"), *PACKAGE.rglob("*.pyi")]:
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def _nodes(tree: ast.AST):
    """Every node but those under ``if TYPE_CHECKING:`` (not run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and getattr(node.test, "id", None) == "TYPE_CHECKING":
            continue
        yield node
        yield from _nodes(node)


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    """Every grpo_fast module ``path`` imports, at its top or inside a function."""
    found = set()
    for node in _nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            subs = [f"{node.module}.{a.name}" for a in node.names]
            found.update(s for s in subs if s in modules)
            if not all(s in modules for s in subs):
                found.add(node.module)
    return {m for m in found if m in modules}


def test_no_import_cycles():
    """Tarjan's strongly connected components of the import graph: each one module.
    The package's own ``__init__`` modules are left out of the edges to their children
    (a package imports its submodules by being their parent)."""
    modules = _modules()
    graph = {m: _imports(p, modules) - {m} for m, p in modules.items()}
    for m in graph:  # importing a.b runs a's __init__ first: no cycle through it
        graph[m] = {t for t in graph[m] if not m.startswith(t + ".")}
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    cycles = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    assert cycles == []


def test_the_top_layer_imports_nothing_below_it():
    modules = _modules()
    for name in TOP:
        imported = _imports(modules[f"grpo_fast.{name}"], modules)
        below = sorted(m for m in imported if m.startswith(BELOW))
        assert below == [], f"grpo_fast.{name} imports {below}"


def _loaded_by(argv: list[str], modules: tuple[str, ...] = ("torch", "transformers", "peft")):
    code = (
        "import sys\nfrom grpo_fast.cli import main\n"
        "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
        f"print([m for m in {modules!r} if m in sys.modules])"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, *argv], capture_output=True, text=True, timeout=300
    )
    return proc.stdout.strip().splitlines()[-1:]


@pytest.mark.parametrize(
    "argv",
    [["--version"], ["score", "--help"], ["eval", "--help"], ["train", "--help"], ["--help"]],
)
def test_the_cheap_commands_import_no_torch(argv):
    assert _loaded_by(argv) == ["[]"]


TRAINER_OPTIONS = ("grpo_fast.train.config", "grpo_fast.loss")


@pytest.mark.parametrize(
    ("argv", "loaded"),
    [(["--version"], []), (["score", "--help"], []), (["train", "--help"], TRAINER_OPTIONS)],
)
def test_a_command_builds_only_its_own_flags(argv, loaded):
    """The trainer's options (``train.config`` and the loss options it checks) are
    imported for ``train``, not for ``--version`` or ``score``."""
    assert _loaded_by(argv, TRAINER_OPTIONS) == [str(list(loaded))]


def test_scoring_a_file_imports_no_torch(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"prompt": "p", "completion": "4", "answer": "4"}\n' * 2)
    assert _loaded_by(["score", str(path), "-o", str(tmp_path / "out.jsonl")]) == ["[]"]
    assert (tmp_path / "out.jsonl").read_text().count('"reward": 1.0') == 2


def test_every_advantage_epsilon_default_is_the_one_constant():
    """The estimators (ours and the verl drop-ins) default to names.ADVANTAGE_EPS, the
    core's; with it, grpo's advantage is (r - mean) / (std + 1e-6)."""
    from grpo_fast.integrations.verl import estimators

    functions = {grpo_fast.compute_advantages, grpo_fast.compute_process_advantages}
    functions |= {f for f in vars(estimators).values() if inspect.isfunction(f)}
    seen = 0
    for fn in functions:
        for name, p in inspect.signature(fn).parameters.items():
            if name in ("eps", "epsilon") and p.default is not p.empty:
                assert p.default is grpo_fast.names.ADVANTAGE_EPS, fn.__qualname__
                seen += 1
    assert seen == 12
    r = [1.0, 0.0, 0.0, 1.0, 1.0]
    out = grpo_fast.compute_advantages(r, [0] * 5).advantages
    x = np.array(r)
    np.testing.assert_allclose(out, (x - x.mean()) / (x.std(ddof=1) + 1e-6), rtol=1e-6)


@pytest.mark.parametrize("lora_r", [0, 4])
def test_peft_loads_only_for_lora(tmp_path, lora_r):
    """A training step without LoRA imports no peft (transformers' trainer utilities
    would); with LoRA it does, which shows the check can see it."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    if lora_r:
        pytest.importorskip("peft")
    code = (
        "import sys\nfrom grpo_fast.train.trainer import Trainer, TrainerConfig\n"
        f"cfg = TrainerConfig(output_dir={str(tmp_path / 'run')!r}, max_steps=1, "
        f"prompts_per_step=2, num_generations=2, eval_size=0, eval_every=0, progress=False, "
        f"plot=False, lora_r={lora_r})\n"
        "Trainer(cfg).train()\n"
        "print('peft' in sys.modules)"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=600, check=True
    )
    assert proc.stdout.strip().splitlines()[-1] == str(bool(lora_r))
