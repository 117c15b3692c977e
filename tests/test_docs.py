"""Docs are code: the docstring examples of every module, and the code blocks of
the README and of every ``docs/*.md`` page, run or are checked here; links
between the pages resolve, and every document and repository path they name
exists.

A Python block that uses names it does not define (``completions``,
``model``, ...) gets them from :data:`SETUP`, written here next to the block's
first line; a line ``expr  # value`` whose comment is a Python literal (or
starts with one, ``# True: because ...``) is checked: the expression must
equal it.

A shell block's commands are checked one by one (:func:`check_command`), without
a GPU or a network: cheap ``grpo-fast`` commands run, the others are parsed by
``grpo-fast``'s own argument parser; ``make`` targets, ``pip`` extras, verl
config overrides, OpenRLHF and torchrun flags, and scripts' flags are checked
against what defines them. A command of a kind not handled here fails the test:
add its check.
"""

from __future__ import annotations

import ast
import doctest
import importlib
import importlib.util
import json
import os
import pkgutil
import re
import shlex
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import grpo_fast

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PAGES = [README, *sorted((ROOT / "docs").glob("*.md"))]
FENCE = re.compile(r"^```(\w*)[^\n]*\n(.*?)^```", re.S | re.M)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def _blocks(languages: tuple[str, ...]) -> list[tuple[str, int, str]]:
    """(page, index among the page's blocks of these languages, code)."""
    found = []
    for page in PAGES:
        blocks = [code for lang, code in FENCE.findall(page.read_text()) if lang in languages]
        found += [(_name(page), i, code) for i, code in enumerate(blocks)]
    return found


PYTHON_BLOCKS = _blocks(("python",))
SHELL_BLOCKS = _blocks(("bash", "sh", "shell"))

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
    # docs/verifier.md, docs/process_rewards.md
    "import grpo_fast\n": """
completions = [r"so \\boxed{4}", "<think>2+2</think> <answer>4</answer>", "5"]
golds = ["4", "4", "4"]
token_lengths = [12, 3900, 4200]
def my_fn(completions, golds, lengths):
    return [float(len(c) < 20) for c in completions]
""",
    # docs/loss.md, "Token log-probs without the [B, T, V] logits"
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
    # docs/loss.md, "The loss"
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
    """An expected ``repr`` (a comment showing an object)."""


# Top-level modules a page may use that the test venv may lack (vLLM has its own venv).
OPTIONAL = {"vllm", "verl", "trl", "openrlhf", "math_verify", "peft", "ray", "wandb"}


@pytest.mark.parametrize(
    ("page", "index", "block"), PYTHON_BLOCKS, ids=[f"{p}:{i}" for p, i, _ in PYTHON_BLOCKS]
)
def test_python_blocks_run(page, index, block, tmp_path, monkeypatch):
    needs_torch = ("torch", "Trainer", "integrations.verl", "openrlhf", "logprobs", "loss")
    if any(word in block + _setup_for(block) for word in needs_torch):
        pytest.importorskip("torch")
    monkeypatch.chdir(tmp_path)  # blocks that write files (runs/...) write here
    namespace = {"__name__": "docs", "np": np, "grpo_fast": grpo_fast}
    exec(compile(_setup_for(block), "<setup>", "exec"), namespace)
    try:
        _run_block(block, namespace, f"{page} block {index}")
    except ModuleNotFoundError as e:
        if (e.name or "").split(".")[0] not in OPTIONAL:
            raise
        pytest.skip(f"{page} block {index} needs {e.name}")


def _run_block(block: str, namespace: dict, name: str) -> None:
    exec(compile(block, name, "exec"), namespace)
    for lineno, code, expected in _checked_lines(block):
        got = eval(code, namespace)
        where = f"{name}, line {lineno}"
        if isinstance(expected, Repr):
            assert repr(got) == expected, where
        else:
            assert _as_plain(got) == pytest.approx(expected, abs=1e-4), where


def test_blocks_check_their_stated_values():
    # The pages state values that the blocks then check, and a wrong one fails.
    assert sum(len(list(_checked_lines(b))) for _, _, b in PYTHON_BLOCKS) >= 10
    assert list(_checked_lines(PYTHON_BLOCKS[0][2])), "the README's first block checks nothing"
    _run_block("x = [1.0, 2.0]\nx  # [1.0, 2.0]\nlen(x) == 2  # True: a reason", {}, "ok")
    with pytest.raises(AssertionError, match="wrong, line 2"):
        _run_block("x = [1.0, 2.0]\nx  # [1.0, 2.5]", {}, "wrong")


# --- shell blocks -------------------------------------------------------------


def _commands(block: str) -> list[list[str]]:
    """The commands of a shell block as argv lists: continuation lines joined,
    comments dropped, ``;`` and ``&&`` separating commands, ``...`` (the
    options a reader adds) left out."""
    commands = []
    for line in block.replace("\\\n", " ").splitlines():
        if m := re.fullmatch(r"\s*(\w+)=\$\((.*)\)\s*", line):
            # VAR=$(command): kept whole, its command split on its own.
            commands.append([f"{m.group(1)}=$(", *shlex.split(m.group(2))])
            continue
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&")
        lexer.whitespace_split = True
        argv: list[str] = []
        for token in [*lexer, ";"]:
            if token in (";", "&&"):
                if argv:
                    commands.append(argv)
                argv = []
            elif token != "...":
                argv.append(token)
    return commands


SHELL_COMMANDS = [
    (page, index, argv) for page, index, block in SHELL_BLOCKS for argv in _commands(block)
]


def test_commands_are_split_as_a_shell_would():
    block = (
        "grpo-fast train --model m \\\n    --lr 1  # a comment\n"
        "grpo-fast --version; python -m grpo_fast --help\nmake a && make b\n"
        "python -m x ... --flag 'two words'\n"
        'V=$(python -c "import a; print(a)")\n'
    )
    assert _commands(block) == [
        ["grpo-fast", "train", "--model", "m", "--lr", "1"],
        ["grpo-fast", "--version"],
        ["python", "-m", "grpo_fast", "--help"],
        ["make", "a"],
        ["make", "b"],
        ["python", "-m", "x", "--flag", "two words"],
        ["V=$(", "python", "-c", "import a; print(a)"],
    ]


@pytest.fixture(scope="module")
def shell_dir(tmp_path_factory):
    """The files the pages' commands read, made small (``completions.jsonl``)."""
    d = tmp_path_factory.mktemp("shell")
    rows = [
        {"prompt": "2+2", "completion": r"so \boxed{4}", "answer": "4"},
        {"prompt": "2+2", "completion": "5", "answer": "4"},
    ]
    (d / "completions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    return d


# grpo-fast commands cheap enough to run as written (the others are parsed).
CHEAP = [
    ["--version"],
    ["--help"],
    ["train", "--help"],
    ["score", "completions.jsonl", "--reward", "math"],
]


def _grpo_fast(argv: list[str], cwd: Path) -> None:
    if argv in CHEAP:
        run = subprocess.run(
            [sys.executable, "-m", "grpo_fast", *argv], cwd=cwd, capture_output=True, text=True
        )
        assert run.returncode == 0, f"grpo-fast {shlex.join(argv)}: {run.stderr[-2000:]}"
        if argv[0] == "score":
            assert '"reward": 1.0' in run.stdout and '"advantage"' in run.stdout, run.stdout
        return
    from grpo_fast.cli import build_parser

    try:
        build_parser().parse_args(argv)
    except SystemExit as e:
        pytest.fail(f"grpo-fast {shlex.join(argv)}: the parser refuses it (exit {e.code})")


def _makefile_targets() -> set[str]:
    return set(re.findall(r"^([a-z][\w-]*):", (ROOT / "Makefile").read_text(), re.M))


def _extras() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["optional-dependencies"])


def _pip(argv: list[str]) -> None:
    sub, *args = argv
    assert sub in ("install", "wheel"), f"pip {sub}: no check for it"
    for arg in args:
        if arg.startswith("-") or arg == "dist":  # -w dist
            continue
        m = re.fullmatch(r"(\.|[\w./*-]+\.whl)(?:\[([\w,-]+)\])?", arg)
        assert m, f"pip {sub} {arg}: install from the clone ('.') or a built wheel, not PyPI"
        extras = set(filter(None, (m.group(2) or "").split(",")))
        assert extras <= _extras(), f"pip {sub} {arg}: no such extra {extras - _extras()}"


def _verl_override(item: str) -> None:
    """``key=value``: the key is in verl's generated PPO config (``+key`` adds one)
    and the value names what grpo-fast registers there."""
    verl = pytest.importorskip("verl")
    from omegaconf import OmegaConf

    with warnings.catch_warnings():  # verl's imports warn (Ray deprecations); tests error on it
        warnings.simplefilter("ignore")
        core_algos = importlib.import_module("verl.trainer.ppo.core_algos")
        managers = importlib.import_module("verl.experimental.reward_loop.reward_manager")

    key, _, value = item.lstrip("+").partition("=")
    if not item.startswith("+"):
        path = Path(verl.__file__).parent / "trainer/config/_generated_ppo_trainer.yaml"
        config = OmegaConf.load(path)
        missing = object()
        assert OmegaConf.select(config, key, default=missing) is not missing, f"verl: no {key}"
    from grpo_fast.integrations import verl as gf_verl

    gf_verl.register_verl_estimators()
    gf_verl.register_verl_policy_losses()
    gf_verl.register_verl_reward_manager()
    if key == "reward.reward_manager.name":
        managers.get_reward_manager_cls(value)
    elif key == "algorithm.adv_estimator":
        core_algos.get_adv_estimator_fn(value)
    elif key == "actor_rollout_ref.actor.policy_loss.loss_mode":
        core_algos.get_policy_loss_fn(value)
    elif key == "reward.custom_reward_function.path":
        assert value.startswith("pkg://"), value
        importlib.import_module(value.removeprefix("pkg://"))
    elif key.startswith("reward.custom_reward_function.reward_kwargs."):
        kwarg = key.rpartition(".")[2]
        gf_verl.compute_score("openai/gsm8k", "#### 12", "12", **{kwarg: value})
    else:
        pytest.fail(f"verl override {item}: no check for it")


def _flags_in_source(module: str, argv: list[str]) -> None:
    """Each ``--flag`` of ``argv`` is an argument ``module`` adds (read, not imported)."""
    name = module.split(".")[0]
    if importlib.util.find_spec(name) is None:
        pytest.skip(f"{name} is not installed")
    spec = importlib.util.find_spec(module)
    assert spec is not None and spec.origin, module
    source = Path(spec.origin).read_text()
    for flag in (a for a in argv if a.startswith("--")):
        assert f'"{flag}"' in source, f"{module} has no flag {flag}"


def _script(path: str, argv: list[str]) -> None:
    """A repository script: parsed by its ``parse_args(argv)``, or its flags found in it."""
    file = ROOT / path
    assert file.is_file(), f"{path}: no such script"
    if file.suffix == ".py" and "def parse_args(" in file.read_text():
        spec = importlib.util.spec_from_file_location(f"docs_{file.stem}", file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        try:
            module.parse_args(argv)
        except SystemExit as e:
            pytest.fail(f"{path} {shlex.join(argv)}: its parser refuses it (exit {e.code})")
        return
    for flag in (a for a in argv if a.startswith("--")):
        assert flag in file.read_text(), f"{path} has no flag {flag}"


def check_command(argv: list[str], cwd: Path, env: dict[str, str]) -> None:
    for k, v in env.items():
        argv = [a.replace(f"${k}", v) for a in argv]
    head, *rest = argv
    if head.endswith("=$("):
        # VAR=$(python -c CODE): run it (cheap by rule), keep its output for what follows.
        assert rest[:2] == ["python", "-c"] and len(rest) == 3, f"{argv}: no check for it"
        run = subprocess.run([sys.executable, "-c", rest[2]], capture_output=True, text=True)
        assert run.returncode == 0, run.stderr[-2000:]
        env[head.removesuffix("=$(")] = run.stdout.strip()
        return
    if head == "grpo-fast":
        return _grpo_fast(rest, cwd)
    if head == "make":
        targets = [a for a in rest if "=" not in a]
        assert set(targets) <= _makefile_targets(), f"make {targets}: not all are targets"
        return
    if head == "pip":
        return _pip(rest)
    if head == "torchrun":
        pytest.importorskip("torch")
        from torch.distributed.run import get_args_parser

        args = get_args_parser().parse_args(rest)
        assert args.module and args.training_script == "grpo_fast", argv
        return _grpo_fast(args.training_script_args, cwd)
    if head in ("python", ".venv/bin/python", ".venv-vllm/bin/python"):
        if rest[:2] == ["-m", "grpo_fast"]:
            return _grpo_fast(rest[2:], cwd)
        if rest[:2] == ["-m", "verl.trainer.main_ppo"]:
            for item in rest[2:]:
                _verl_override(item)
            return
        if rest[0] == "-m" and rest[1].startswith("openrlhf."):
            return _flags_in_source(rest[1], rest[2:])
        return _script(rest[0], rest[1:])
    if head == "bash":
        return _script(rest[0], rest[1:])
    if re.fullmatch(r"\+?[\w.]+=\S+", head):  # a fragment of a verl command: overrides
        for item in argv:
            _verl_override(item)
        return
    pytest.fail(f"{shlex.join(argv)}: no check for this command; add one to tests/test_docs.py")


@pytest.mark.parametrize(
    ("page", "index"),
    sorted({(p, i) for p, i, _ in SHELL_BLOCKS}),
    ids=[f"{p}:{i}" for p, i in sorted({(p, i) for p, i, _ in SHELL_BLOCKS})],
)
def test_shell_commands_are_right(page, index, shell_dir, monkeypatch):
    monkeypatch.chdir(shell_dir)
    env: dict[str, str] = {}  # a block's VAR=$(...) for its later commands
    for p, i, argv in SHELL_COMMANDS:
        if (p, i) == (page, index):
            check_command(argv, shell_dir, env)


def test_command_checks_can_fail(shell_dir):
    with pytest.raises(pytest.fail.Exception, match="refuses"):
        check_command(["grpo-fast", "train", "--no-such-flag"], shell_dir, {})
    with pytest.raises(AssertionError, match="not all are targets"):
        check_command(["make", "no-such-target"], shell_dir, {})
    with pytest.raises(AssertionError, match="no such extra"):
        check_command(["pip", "install", ".[train,nope]"], shell_dir, {})
    with pytest.raises(AssertionError, match="not PyPI"):
        check_command(["pip", "install", "grpo-fast[train]"], shell_dir, {})
    with pytest.raises(pytest.fail.Exception, match="no check"):
        check_command(["curl", "https://example.com"], shell_dir, {})
    with pytest.raises(AssertionError, match="no flag --nope"):
        check_command(["bash", "scripts/gpu_check.sh", "--nope"], shell_dir, {})


# --- install -------------------------------------------------------------------


def _pins(name: str) -> set[str]:
    lines = (ROOT / "requirements" / name).read_text().splitlines()
    return {line.strip() for line in lines if line.strip() and not line.startswith("#")}


def test_demo_requirements_are_a_subset_of_the_full_set():
    # make demo installs demo.txt, make test dev.txt into the same venv: one pin each.
    demo, dev = _pins("demo.txt"), _pins("dev.txt")
    assert demo and all("==" in p for p in demo)
    assert demo <= dev, f"pinned differently from dev.txt: {sorted(demo - dev)}"
    # What the demo imports: the train extra's packages but `datasets` (other file formats).
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    train = {re.split(r"[<>=;\s]", d)[0] for d in project["optional-dependencies"]["train"]}
    names = {p.split("==")[0] for p in demo}
    assert names == (train - {"datasets", "tomli"}) | {"maturin", "numpy"}


def test_readme_starts_with_the_two_commands_and_stays_short():
    lines = README.read_text().splitlines()
    assert lines[2:6] == [
        "```bash",
        "make demo   # sets up .venv, builds the Rust core, runs a GRPO training of the "
        "embedded tiny model on the CPU",
        "make test   # sets up .venv, then cargo fmt/clippy/test, ruff, stubtest and pytest "
        "(what CI runs)",
        "```",
    ]
    assert len(lines) <= 250, f"README.md has {len(lines)} lines; move detail into docs/"


# --- links and paths -----------------------------------------------------------


def _prose(text: str) -> str:
    """``text`` without its fenced code blocks."""
    return FENCE.sub("", text)


def _slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    headings = re.findall(r"^#{1,6} +(.+?) *$", _prose(page.read_text()), re.M)
    return {_slug(h) for h in headings}


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def _links() -> list[tuple[str, str]]:
    return [
        (_name(page), target)
        for page in PAGES
        for target in LINK.findall(_prose(page.read_text()))
        if not re.match(r"[a-z]+:", target)  # http(s):, mailto:
    ]


@pytest.mark.parametrize(("page", "target"), _links())
def test_links_resolve(page, target):
    path, _, anchor = target.partition("#")
    file = (ROOT / page).parent / path if path else ROOT / page
    assert file.exists(), f"{page}: {target} does not exist"
    if anchor:
        assert file.suffix == ".md", f"{page}: {target}: an anchor into a non-page"
        assert anchor in _anchors(file), f"{page}: {target}: no such heading"


def test_link_checks_can_fail():
    assert _slug("Several GPUs or nodes: DDP and FSDP2") == "several-gpus-or-nodes-ddp-and-fsdp2"
    assert _slug("math-verify's API") == "math-verifys-api"
    assert _slug("Token log-probs without the `[B, T, V]` logits") == (
        "token-log-probs-without-the-b-t-v-logits"
    )
    with pytest.raises(AssertionError, match="no such heading"):
        test_links_resolve("docs/training.md", "loss.md#no-such-section")
    with pytest.raises(AssertionError, match="does not exist"):
        test_links_resolve("README.md", "docs/nope.md")


# `python/...`, `grpo_fast/...`, `tests/...`: a path in the repository, named in prose.
TOP = "python|rust|tests|benches|scripts|docs|requirements|grpo_fast"
REPO_PATH = re.compile(rf"`((?:{TOP})/[^`\s]*)`")


def test_repository_paths_named_in_the_pages_exist():
    missing = []
    for page in PAGES:
        for path in REPO_PATH.findall(_prose(page.read_text())):
            path = path.rstrip("/")
            if path.startswith("grpo_fast/"):
                path = "python/" + path
            if not list(ROOT.glob(path)):
                missing.append(f"{_name(page)}: {path}")
    assert not missing, f"paths named but not in the repository: {missing}"


def test_documents_the_code_points_to_exist():
    pointed = set()
    for path in [*PAGES, *sorted((ROOT / "python").rglob("*.py"))]:
        pointed |= set(re.findall(r"docs/[\w.-]+\.md", path.read_text()))
    assert "docs/design.md" in pointed and "docs/verify_semantics.md" in pointed
    missing = sorted(p for p in pointed if not (ROOT / p).is_file())
    assert not missing, f"documents pointed to but not in the repository: {missing}"
    assert os.path.getsize(ROOT / "docs" / "verify_semantics.md") > 1000
