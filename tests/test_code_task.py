"""``--task code``: the embedded model writes a Python function, the code reward runs it
against the row's tests in the sandbox (docs/code.md, "Training").

The rewards the trainer logs and the accuracy ``eval`` reports are checked against
an independent judge: the completion's last ```` ```python ```` block run in a plain
Python subprocess (no sandbox), its function called on the row's inputs."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.cli import main  # noqa: E402
from grpo_fast.train.data import DATA_DIR, TASKS  # noqa: E402
from grpo_fast.train.tracking import read_metrics  # noqa: E402

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the code sandbox is Linux only"
)

FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```", re.S | re.M)

# Calls f on each input; a case whose call raises (or returns what JSON cannot hold)
# is a failure, the others still count, as the sandbox counts them.
HARNESS = """
import json, sys
out = []
for args in json.loads(sys.stdin.read()):
    try:
        out.append(json.dumps(f(*args)))
    except Exception:
        out.append(None)
print(json.dumps(out))
"""


def plain_fraction(completion: str, tests: dict) -> float:
    """The share of ``tests`` that the completion's function passes, run plainly."""
    blocks = FENCE.findall(completion)
    if not blocks:
        return 0.0
    run = subprocess.run(
        [sys.executable, "-c", blocks[-1] + "\n" + HARNESS],
        input=json.dumps(tests["inputs"]),
        capture_output=True,
        text=True,
        timeout=60,
    )
    if run.returncode != 0:  # it does not compile, or defines no f
        return 0.0
    got = json.loads(run.stdout.strip().splitlines()[-1])
    passed = sum(
        g is not None and json.loads(g) == want
        for g, want in zip(got, tests["outputs"], strict=True)
    )
    return passed / len(tests["outputs"])


def task_tests(split: str) -> dict[str, dict]:
    rows = (DATA_DIR / f"code_{split}.jsonl").read_text().splitlines()
    return {r["prompt"]: json.loads(r["answer"]) for r in map(json.loads, rows)}


def test_the_task_data_holds_function_call_tests_that_the_reference_passes():
    assert TASKS["code"]["reward"] == ({"name": "code", "all_or_nothing": True},)
    train, held_out = task_tests("train"), task_tests("eval")
    assert len(held_out) == 200 and len(train) > 1000 and not set(train) & set(held_out)
    prompt = "Write a Python function f(x) that returns 3*x + 7."
    tests = {**train, **held_out}[prompt]
    assert tests["fn_name"] == "f" and [-7] in tests["inputs"] and [7] in tests["inputs"]
    assert plain_fraction("```python\ndef f(x): return 3*x + 7\n```", tests) == 1.0
    assert plain_fraction("```python\ndef f(x): return 3*x + 8\n```", tests) == 0.0


def test_train_the_code_task_from_the_command_line(tmp_path, capsys):
    """The task's defaults train with the code reward (all or nothing); every logged
    completion's reward is what the plain run of its function against the row's tests
    gives: 1 when every test passes, else 0."""
    out = tmp_path / "run"
    argv = ["train", "--task", "code", "--max-steps", "2", "--prompts-per-step", "4"]
    argv += ["--eval-size", "16", "--log-completions", "--logging-steps", "1"]
    argv += ["--output-dir", str(out), "--no-plot", "--no-progress"]
    assert main(argv) == 0
    said = capsys.readouterr().out
    assert "rewards code," in said and "held-out accuracy" in said
    config = json.loads((out / "config.json").read_text())
    assert config["model"].endswith("tiny_code")
    assert config["reward"] == [{"name": "code", "all_or_nothing": True}]
    records = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2]
    assert all(0 <= r["eval_accuracy"] <= 1 for r in records if "eval_accuracy" in r)

    logged = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert len(logged) == 2 * 4 * 8  # 2 steps of 4 prompts x 8 samples
    train = task_tests("train")
    fractions = [plain_fraction(c["completion"], train[c["prompt"]]) for c in logged]
    plain = [float(f == 1.0) for f in fractions]
    assert [c["code"] for c in logged] == plain
    assert [c["reward"] for c in logged] == plain
    # The model is imperfect on purpose: something passes, something fails, and some
    # completions pass only part of their tests (which earns them nothing).
    assert max(plain) == 1.0 and min(plain) == 0.0 and any(0 < f < 1 for f in fractions)
    for step in (1, 2):
        mine = [p for p, c in zip(plain, logged, strict=True) if c["step"] == step]
        record = next(r for r in records if r["step"] == step)
        assert record["reward"] == pytest.approx(sum(mine) / len(mine), abs=1e-6)


def test_eval_the_code_task_from_the_command_line(capsys):
    """``eval --task code`` scores with the code reward: greedy pass@1 is the share of
    the greedy completions (made here with transformers) that pass when run plainly."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    argv = ["eval", "--task", "code", "-n", "1", "--temperature", "0", "--limit", "12"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["prompts"] == 12 and report["n"] == 1 and report["temperature"] == 0

    model_dir = DATA_DIR / "tiny_code"
    tok = AutoTokenizer.from_pretrained(model_dir)
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    held_out = list(task_tests("eval").items())[:12]
    passed = 0
    for prompt, tests in held_out:  # one at a time: no padding
        ids = tok(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
        new = model.generate(
            ids,
            attention_mask=ids.new_ones(ids.shape),
            max_new_tokens=TASKS["code"]["max_new_tokens"],
            do_sample=False,
            pad_token_id=tok.pad_token_id,
        )[0, ids.shape[1] :]
        passed += plain_fraction(tok.decode(new, skip_special_tokens=True), tests) == 1.0
    assert report["pass@1"] == pytest.approx(passed / 12)
    assert 0 < passed < 12  # imperfect on purpose


def test_eval_of_a_task_samples_at_the_tasks_temperature(capsys):
    """Without --temperature, ``eval --task code`` samples as ``train --task code`` does."""
    assert main(["eval", "--task", "code", "-n", "1", "--limit", "2"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["temperature"] == TASKS["code"]["temperature"] == 0.7
    assert main(["eval", "-n", "1", "--limit", "2"]) == 0  # the demo: 1.0, as before
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["temperature"] == 1.0


@pytest.mark.parametrize(
    ("argv", "said"),
    [
        (["train", "--task", "code", "--reward", "math"], "reward 'math' reads the answer column"),
        (["train", "--task", "code", "--reward", "code", "--reward", "exact:0.5"], "'exact'"),
        (["train", "--task", "addition", "--reward", "code"], "as each prompt's tests"),
        (["eval", "--task", "code", "--reward", "choice"], "reward 'choice'"),
    ],
)
def test_a_reward_that_cannot_read_the_tasks_answers_is_refused(argv, said, tmp_path, capsys):
    """``--task code``'s answer column holds tests: math would score every completion NaN
    and exact 0, so the run is refused at start-up, saying which reward to use."""
    out = tmp_path / "run"
    extra = ["--output-dir", str(out)] if argv[0] == "train" else []
    assert main([*argv, *extra]) == 2
    err = capsys.readouterr().err
    assert said in err and "use its reward (--reward " in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    assert not out.exists()


def test_rewards_that_read_no_answer_may_be_added_and_own_data_is_not_checked(tmp_path):
    """Format next to code trains; with a file of one's own the task's answers do not apply."""
    small = ["--max-steps", "1", "--prompts-per-step", "1", "--num-generations", "2"]
    small += ["--eval-every", "0", "--eval-size", "2", "--no-plot", "--no-progress"]
    argv = ["train", "--task", "code", "--reward", "code", "--reward", "format:0.1", *small]
    assert main([*argv, "--output-dir", str(tmp_path / "a")]) == 0
    record = read_metrics(tmp_path / "a" / "metrics.jsonl")[-1]
    assert "rewards/format/mean" in record and "rewards/code/mean" in record
    own = tmp_path / "sums.jsonl"
    own.write_text('{"prompt": "1+1=", "answer": "2"}\n{"prompt": "2+2=", "answer": "4"}\n')
    argv = ["train", "--task", "code", "--train-file", str(own), "--eval-file", str(own)]
    assert main([*argv, "--reward", "math", *small, "--output-dir", str(tmp_path / "b")]) == 0
