"""The ``grpo-fast`` command line on small files."""

from __future__ import annotations

import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from grpo_fast.cli import main, pass_at_k
from grpo_fast.metrics import read_metrics

pytest.importorskip("torch")
pytest.importorskip("transformers")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_score_writes_rewards_and_group_advantages(tmp_path, capsys):
    # Hand-labelled: which completions answer their gold.
    rows = [
        ("q1", "The answer is 4.", "4", 1.0),
        ("q1", "I think \\boxed{5}", "4", 0.0),
        ("q1", "#### 4", "4", 1.0),
        ("q2", "so x = 1/2", "0.5", 1.0),
        ("q2", "no idea", "0.5", 0.0),
    ]
    inp = write_jsonl(
        tmp_path / "in.jsonl",
        [
            {"prompt": p, "completion": c, "answer": a, "extra": i}
            for i, (p, c, a, _) in enumerate(rows)
        ],
    )
    out = tmp_path / "out.jsonl"
    assert main(["score", str(inp), "-o", str(out)]) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    want_r = np.array([r[3] for r in rows])
    np.testing.assert_array_equal([g["reward"] for g in got], want_r)
    want_a = np.zeros(len(rows))
    for g in ("q1", "q2"):
        idx = [i for i, r in enumerate(rows) if r[0] == g]
        r = want_r[idx]
        want_a[idx] = (r - r.mean()) / (r.std(ddof=1) + 1e-6)
    np.testing.assert_allclose([g["advantage"] for g in got], want_a, rtol=1e-5)
    assert [g["extra"] for g in got] == list(range(5))
    assert "2 groups" in capsys.readouterr().err


def test_pass_at_k_matches_enumeration():
    for n, c, k in [(5, 2, 1), (5, 2, 3), (6, 0, 2), (6, 6, 4), (7, 3, 7), (8, 1, 5)]:
        subsets = list(itertools.combinations(range(n), k))
        brute = np.mean([any(i < c for i in s) for s in subsets])
        assert pass_at_k(n, c, k) == pytest.approx(brute)


def test_eval_reports_consistent_accuracies(tmp_path, capsys):
    data = write_jsonl(
        tmp_path / "d.jsonl", [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in range(10, 16)]
    )
    assert main(["eval", "--data", str(data), "-n", "4", "-k", "2"]) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["prompts"] == 6 and report["n"] == 4
    assert 0 <= report["pass@1"] <= report["pass@2"] <= report["best_of_4"] <= 1
    assert 0 <= report["maj@4"] <= report["best_of_4"]


def test_train_on_small_files_with_a_config_file(tmp_path, capsys):
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in (11, 23, 35) for b in (4, 40)]
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    ev = write_jsonl(tmp_path / "eval.jsonl", rows[:3])
    config = tmp_path / "run.toml"
    config.write_text(
        "max-steps = 5\nprompts_per_step = 2\nnum_generations = 4\nprogress = false\n"
    )
    out = tmp_path / "out"
    argv = ["train", "--config", str(config), "--max-steps", "2", "--train-file", str(train)]
    argv += ["--eval-file", str(ev), "--output-dir", str(out), "--no-plot"]
    assert main(argv) == 0
    records = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2]  # the flag beat the file's max-steps
    assert records[0]["eval_accuracy"] is not None and "eval_accuracy" in records[-1]
    assert json.loads((out / "config.json").read_text())["prompts_per_step"] == 2
    assert "held-out accuracy" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda d: ["--train-file", str(write_jsonl(d / "t.jsonl", [{"prompt": "1+1="}]))],
            "answer",
        ),
        (lambda d: ["--train-file", str(write_jsonl(d / "t.jsonl", []))], "empty"),
        (lambda d: ["--model", str(d)], "not readable"),
        (lambda d: ["--num-generations", "1"], "num_generations"),
        (lambda d: ["--train-file", str(d / "missing.jsonl")], "does not exist"),
        (lambda d: ["--config", str(write_jsonl(d / "c.json", []))], "not valid json"),
    ],
)
def test_bad_train_input_exits_2_with_a_message(tmp_path, capsys, make, message):
    rc = main(["train", "--output-dir", str(tmp_path / "o"), *make(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err.lower()
    assert "Traceback" not in err


def test_score_missing_column_exits_2(tmp_path, capsys):
    inp = write_jsonl(tmp_path / "in.jsonl", [{"prompt": "q", "answer": "1"}])
    assert main(["score", str(inp)]) == 2
    assert "completion" in capsys.readouterr().err


def test_console_script_exits_2_without_traceback(tmp_path):
    exe = Path(sys.executable).with_name("grpo-fast")
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "grpo_fast.cli"]
    proc = subprocess.run(
        [*cmd, "train", "--num-generations", "1", "--output-dir", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2
    assert "num_generations" in proc.stderr and "Traceback" not in proc.stderr
