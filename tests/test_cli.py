"""The ``grpo-fast`` command line on small files."""

from __future__ import annotations

import dataclasses
import itertools
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import write_jsonl

pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.cli import check_value, main, parse_text, pass_at_k  # noqa: E402
from grpo_fast.train.tracking import read_metrics  # noqa: E402


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


def _cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "grpo_fast", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_version_module_entry_and_bare_command_prints_help():
    import grpo_fast

    proc = _cli("--version")
    assert proc.returncode == 0 and proc.stdout.strip() == f"grpo-fast {grpo_fast.__version__}"
    proc = _cli()
    assert proc.returncode == 0
    assert "usage: grpo-fast" in proc.stdout and "train" in proc.stdout


def test_score_reads_stdin(tmp_path):
    rows = [{"prompt": "q", "completion": c, "answer": "4"} for c in ("4", "5")]
    proc = _cli("score", "-", stdin="".join(json.dumps(r) + "\n" for r in rows))
    assert proc.returncode == 0, proc.stderr
    assert [json.loads(line)["reward"] for line in proc.stdout.splitlines()] == [1.0, 0.0]


def test_score_with_several_rewards_writes_their_columns(tmp_path, capsys):
    from grpo_fast import rewards

    texts = ["The answer is Paris.", "paris", "Lyon", "\\boxed{PARIS}"]
    rows = [{"prompt": "capital", "completion": t, "answer": "Paris"} for t in texts]
    inp = write_jsonl(tmp_path / "in.jsonl", rows)
    out = tmp_path / "out.jsonl"
    argv = ["score", str(inp), "-o", str(out), "--reward", "exact", "--reward", "format:0.5"]
    assert main(argv) == 0
    got = [json.loads(line) for line in out.read_text().splitlines()]
    direct = rewards.combine(
        rewards.ExactMatchReward(), rewards.FormatReward(rewards_format(), weight=0.5)
    ).score_batch(texts, golds="Paris")
    np.testing.assert_array_equal([g["reward/exact"] for g in got], direct.columns["exact"])
    np.testing.assert_array_equal([g["reward/format"] for g in got], direct.columns["format"])
    np.testing.assert_allclose([g["reward"] for g in got], direct.total)
    # Hand-labelled: the exact reward extracts the answer and ignores case.
    assert [g["reward/exact"] for g in got] == [1.0, 1.0, 0.0, 1.0]


def rewards_format() -> str:
    from grpo_fast.train.rollout import THINK_ANSWER_FORMAT

    return THINK_ANSWER_FORMAT


def test_train_with_named_rewards_logs_each_column(tmp_path):
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in (11, 23) for b in (4, 40)]
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    out = tmp_path / "out"
    argv = ["train", "--train-file", str(train), "--eval-file", "none", "--output-dir", str(out)]
    argv += ["--max-steps", "1", "--prompts-per-step", "2", "--num-generations", "2"]
    argv += ["--reward", "math", "--reward", "format:0.5", "--no-plot", "--no-progress"]
    assert main(argv) == 0
    record = read_metrics(out / "metrics.jsonl")[-1]
    assert record["reward/format"] == 0.0  # no <think> tags from an adder
    assert record["reward_mean"] == pytest.approx(record["reward/math"])
    assert json.loads((out / "config.json").read_text())["reward"] == ["math", "format:0.5"]


@pytest.mark.parametrize(
    ("toml", "flag"),
    [
        ('max_steps = "abc"', ["--max-steps", "abc"]),
        ("learning_rate = true", ["--learning-rate", "true"]),
        ('loss_type = "nope"', ["--loss-type", "nope"]),
    ],
)
def test_config_file_values_are_checked_like_flags(tmp_path, capsys, toml, flag):
    config = tmp_path / "run.toml"
    config.write_text(toml + "\n")
    rc = main(["train", "--config", str(config), "--output-dir", str(tmp_path / "o")])
    file_err = capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["train", *flag])
    flag_err = capsys.readouterr().err
    assert rc == 2 and exc.value.code == 2
    # One message for both: "<name> must be <type>, got <value>" (TOML's true is True).
    file_msg = file_err.split(f"{config}: ")[-1].strip()
    assert "must be" in file_msg and "Traceback" not in file_err
    assert file_msg.split(", got")[0] + ", got" in flag_err, (file_err, flag_err)


def test_yaml_config_is_refused_clearly(tmp_path, capsys):
    config = tmp_path / "run.yaml"
    config.write_text("max_steps: 3\n")
    assert main(["train", "--config", str(config)]) == 2
    assert "YAML is not supported" in capsys.readouterr().err


def test_negative_numbers_parse_as_values(tmp_path, capsys):
    assert main(["train", "--learning-rate", "-1e-5", "--output-dir", str(tmp_path)]) == 2
    assert "learning_rate must be > 0, got -1e-05" in capsys.readouterr().err


def test_score_where_every_group_has_one_row_exits_2(tmp_path, capsys):
    rows = [{"prompt": f"q{i}", "completion": "4", "answer": "4"} for i in range(3)]
    assert main(["score", str(write_jsonl(tmp_path / "in.jsonl", rows))]) == 2
    assert "every group has one row" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("row", "message"),
    [
        ({"prompt": "q", "completion": 4, "answer": "4"}, "'completion' must be a string, got int"),
        ({"prompt": "q", "completion": "4", "answer": None}, "'answer' is null"),
    ],
)
def test_non_str_completions_and_null_answers_are_errors(tmp_path, capsys, row, message):
    good = {"prompt": "q", "completion": "4", "answer": "4"}
    inp = write_jsonl(tmp_path / "in.jsonl", [good, row])
    assert main(["score", str(inp)]) == 2
    assert message in capsys.readouterr().err
    if row["answer"] is None:
        data = write_jsonl(tmp_path / "d.jsonl", [{"prompt": "1+1=", "answer": None}])
        assert main(["eval", "--data", str(data), "-n", "2"]) == 2
        assert message in capsys.readouterr().err
        assert main(["train", "--train-file", str(data), "--output-dir", str(tmp_path)]) == 2
        assert message in capsys.readouterr().err


def test_score_and_eval_help_show_defaults(capsys):
    for command, expected in (("score", "(default: grpo)"), ("eval", "(default: 8)")):
        with pytest.raises(SystemExit):
            main([command, "--help"])
        out = capsys.readouterr().out
        assert expected in out and "samples per prompt" in out if command == "eval" else True
        assert "--reward NAME[:WEIGHT]" in out


def test_flag_types_optional_literal_and_repeated():
    from typing import Literal

    assert parse_text("x", int | None, "none") is None
    assert parse_text("x", int | None, "3") == 3
    assert parse_text("x", Literal["a", "b"], "b") == "b"
    with pytest.raises(ValueError, match=r"x must be one of \('a', 'b'\), got 'c'"):
        parse_text("x", Literal["a", "b"], "c")
    with pytest.raises(ValueError, match="x must be an int, got 1.5"):
        check_value("x", int, 1.5)
    assert check_value("x", float, 2) == 2.0 and isinstance(check_value("x", float, 2), float)
    assert check_value("x", tuple[str | dict, ...], ["math", {"name": "format"}]) == (
        "math",
        {"name": "format"},
    )
    assert check_value("x", str | None, None) is None
    with pytest.raises(ValueError, match="x must be true or false, got 1"):
        check_value("x", bool, 1)


def test_rewards_from_a_config_file_table_and_a_dotted_path(tmp_path):
    from grpo_fast import rewards
    from grpo_fast.cli import config_from_file
    from grpo_fast.integrations.trl import think_format_reward
    from grpo_fast.train.rollout import RunRewards
    from grpo_fast.train.trainer import TrainerConfig

    config = tmp_path / "run.toml"
    config.write_text(
        'reward = ["math", {name = "format", pattern = "^\\\\d+$", weight = 0.5},\n'
        '          "grpo_fast.integrations.trl.think_format_reward:0.25"]\n'
    )
    cfg = TrainerConfig.from_dict(config_from_file(str(config), TrainerConfig))
    run = RunRewards.build(cfg.reward)
    assert run.names == ("math", "format", "think_format_reward")
    texts = ["12", "<think>x</think>12", "x"]
    got = run.score(texts, [{"answer": "12"}] * 3)
    direct = rewards.combine(
        rewards.MathReward(), rewards.FormatReward(r"^\d+$", weight=0.5)
    ).score_batch(texts, golds="12")
    trl = np.array(think_format_reward(texts), np.float32)
    np.testing.assert_array_equal(got.columns["math"], direct.columns["math"])
    np.testing.assert_array_equal(got.columns["format"], direct.columns["format"])
    np.testing.assert_array_equal(got.columns["think_format_reward"], trl)
    np.testing.assert_allclose(got.total, direct.total + 0.25 * trl)
    assert TrainerConfig(reward="exact").reward == ("exact",)


def test_toml_falls_back_to_tomli_without_tomllib(tmp_path, monkeypatch):
    """Python 3.10 has no tomllib: the config reader uses the tomli backport."""
    import types as _types

    from grpo_fast.cli import config_from_file
    from grpo_fast.train.trainer import TrainerConfig

    tomllib = pytest.importorskip("tomllib")  # the real parser, to stand in for tomli
    calls = []
    fake = _types.ModuleType("tomli")
    fake.loads = lambda text: calls.append(text) or tomllib.loads(text)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "tomllib", None)  # import tomllib -> ModuleNotFoundError
    monkeypatch.setitem(sys.modules, "tomli", fake)
    config = tmp_path / "run.toml"
    config.write_text("max_steps = 7\n")
    assert config_from_file(str(config), TrainerConfig) == {"max_steps": 7}
    assert calls == ["max_steps = 7\n"]


def test_a_runs_config_json_is_a_valid_config_file(tmp_path):
    """config.json of a run reads back with --config (same options, same types)."""
    from grpo_fast.cli import config_from_file
    from grpo_fast.train.trainer import TrainerConfig

    cfg = TrainerConfig(reward=("math", "format:0.5"), resume=None, eval_file=None)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(dataclasses.asdict(cfg)))
    assert TrainerConfig.from_dict(config_from_file(str(path), TrainerConfig)) == cfg
