"""The command line's clear errors: each a one-line message with exit status 2 (or the
conventional status of a signal), never a traceback.

Read-only directories are simulated through ``os.access`` where the tests run as
root (root may write anywhere); the checks ask ``os.access`` first and turn the
``OSError`` of a write that still fails into the same message.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import DATA_DIR, write_jsonl

pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.cli import main  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402

ROWS = [{"prompt": "q", "completion": c, "answer": "4"} for c in ("4", "5", "so 4", "x")]


def _read_only(monkeypatch, *dirs: Path) -> None:
    real = os.access
    monkeypatch.setattr(
        os, "access", lambda p, m: not (Path(p) in dirs and m & os.W_OK) and real(p, m)
    )


def _one_error(err: str, command: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith(f"grpo-fast {command}: error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# ---------------------------------------------------------------------- output paths
def test_score_output_into_a_missing_or_read_only_directory(tmp_path, capsys, monkeypatch):
    inp = write_jsonl(tmp_path / "in.jsonl", ROWS)
    missing = tmp_path / "no" / "such" / "out.jsonl"
    assert main(["score", str(inp), "-o", str(missing)]) == 2
    line = _one_error(capsys.readouterr().err, "score")
    assert f"the directory '{missing.parent}' does not exist" in line
    assert not missing.parent.exists()

    locked = tmp_path / "locked"
    locked.mkdir()
    _read_only(monkeypatch, locked)
    assert main(["score", str(inp), "-o", str(locked / "out.jsonl")]) == 2
    assert f"'{locked}' is not writable" in _one_error(capsys.readouterr().err, "score")
    assert main(["score", str(inp), "-o", str(tmp_path)]) == 2
    assert "is a directory" in _one_error(capsys.readouterr().err, "score")
    # The same command into a writable place works.
    assert main(["score", str(inp), "-o", str(tmp_path / "ok.jsonl")]) == 0
    assert len((tmp_path / "ok.jsonl").read_text().splitlines()) == len(ROWS)


def test_export_into_a_read_only_directory(tmp_path, capsys, monkeypatch):
    locked = tmp_path / "locked"
    locked.mkdir()
    _read_only(monkeypatch, locked)
    model = str(DATA_DIR / "tiny_adder")
    assert main(["export", model, str(locked / "model")]) == 2
    assert f"'{locked}' is not writable" in _one_error(capsys.readouterr().err, "export")
    assert not (locked / "model").exists()

    # A write that fails anyway (a read-only file system, where os.access cannot tell).
    def refuse(*args, **kwargs):
        raise OSError(30, "Read-only file system", str(tmp_path / "elsewhere"))

    monkeypatch.setattr("transformers.PreTrainedModel.save_pretrained", refuse)
    assert main(["export", model, str(tmp_path / "elsewhere")]) == 2
    line = _one_error(capsys.readouterr().err, "export")
    assert "cannot write the model to" in line and "Read-only file system" in line


# ---------------------------------------------------------------------- values at parse time
@pytest.mark.parametrize(
    "argv, flag",
    [
        (["eval", "--limit", "-1"], "--limit"),
        (["eval", "-n", "0"], "-n"),
        (["eval", "-k", "0"], "-k"),
        (["eval", "--temperature", "-0.5"], "--temperature"),
        (["eval", "--max-new-tokens", "0"], "--max-new-tokens"),
        (["eval", "--batch-size", "0"], "--batch-size"),
        (["eval", "--limit", "two"], "--limit"),
    ],
)
def test_out_of_range_eval_values_are_refused_at_parse_time_naming_the_flag(capsys, argv, flag):
    with pytest.raises(SystemExit) as stop:
        main(argv)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--num-generations", "1"], "--num-generations: must be >= 2, got 1"),
        (["--learning-rate", "0"], "--learning-rate: must be > 0, got 0"),
        (["--warmup-steps", "-1"], "--warmup-steps: must be >= 0, got -1"),
        (["--max-grad-norm", "-0.5"], "--max-grad-norm: must be >= 0, got -0.5"),
        (["--sapo-tau-pos", "0"], "--sapo-tau-pos: must be > 0, got 0"),
        (["--top-p", "1.5"], "--top-p: must be <= 1, got 1.5"),
        (["--learning-rate", "nan"], "--learning-rate: must be > 0, got nan"),
    ],
)
def test_out_of_range_train_values_are_refused_at_parse_time_naming_the_flag(
    tmp_path, capsys, argv, message
):
    with pytest.raises(SystemExit) as stop:
        main(["train", "--output-dir", str(tmp_path / "o"), *argv])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {message}" in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()  # refused before anything was made


def test_a_config_built_in_python_is_checked_against_the_same_bounds():
    from grpo_fast.train.config import TrainerConfig

    for field, value, why in (
        ("num_generations", 1, "must be >= 2"),
        ("learning_rate", 0.0, "must be > 0"),
        ("top_p", 1.5, "must be <= 1"),
        ("sapo_tau_pos", 0.0, "must be > 0"),
    ):
        with pytest.raises(InvalidInputError, match=f"^{field} {why}, got {value!r}$"):
            TrainerConfig(**{field: value}).validate()


# ---------------------------------------------------------------------- pipes and signals
def test_a_closed_pipe_ends_quietly(tmp_path):
    # Enough output to overrun the pipe's buffer after head has gone.
    inp = write_jsonl(tmp_path / "in.jsonl", [{**r, "pad": "x" * 200} for r in ROWS] * 3000)
    proc = subprocess.run(
        f"set -o pipefail; {sys.executable} -m grpo_fast score {inp} | head -n 2",
        shell=True,
        executable="/bin/bash",
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert len(proc.stdout.splitlines()) == 2
    assert "Traceback" not in proc.stderr and "BrokenPipeError" not in proc.stderr, proc.stderr
    assert proc.returncode == 141  # 128 + SIGPIPE, as cat or grep end there


def test_ctrl_c_during_start_up_imports_is_one_line(monkeypatch, capsys):
    import grpo_fast.cli as cli

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # where Ctrl-C lands while torch is being imported

    monkeypatch.setattr(cli, "build_parser", interrupted)
    assert main(["train"]) == 130
    err = capsys.readouterr().err
    assert err.strip() == "grpo-fast: stopped (Ctrl-C)"


# ---------------------------------------------------------------------- models
def test_a_hub_id_without_a_network_fails_at_once(tmp_path, monkeypatch, capsys):
    import socket

    import huggingface_hub.constants
    import transformers

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for proxy in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(proxy, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path / "hf" / "hub"))

    def no_route(*args, **kwargs):
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(socket, "create_connection", no_route)
    tried = []
    monkeypatch.setattr(
        transformers.AutoTokenizer, "from_pretrained", lambda *a, **k: tried.append(a)
    )
    argv = ["train", "--model", "grpo-fast-tests/not-cached", "-o", str(tmp_path / "o")]
    assert main(argv) == 2
    line = _one_error(capsys.readouterr().err, "train")
    assert "Hub cannot be reached" in line and "--model DIR" in line
    assert tried == []  # no download attempted, so no minute of retries


def test_eval_and_export_verify_a_checkpoint_as_resume_does(tmp_path, capsys):
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    out = tmp_path / "run"
    cfg = TrainerConfig(
        output_dir=str(out),
        max_steps=1,
        prompts_per_step=2,
        num_generations=2,
        eval_size=2,
        progress=False,
        plot=False,
    )
    Trainer(cfg).train()
    ckpt = out / "checkpoints" / "step-0000001"
    state = ckpt / "trainer_state.pt"
    state.write_bytes(state.read_bytes()[:-10])  # the weights are intact, the state is not
    data = write_jsonl(tmp_path / "d.jsonl", [{"prompt": "1+1=", "answer": "2"}])
    assert main(["eval", "--model", str(ckpt), "--data", str(data), "-n", "1"]) == 2
    line = _one_error(capsys.readouterr().err, "eval")
    assert "does not verify: trainer_state.pt has" in line
    assert main(["export", str(ckpt), str(tmp_path / "model")]) == 2
    assert "does not verify" in _one_error(capsys.readouterr().err, "export")
    assert not (tmp_path / "model").exists()
    # A model directory of one's own has no manifest, and is not checked.
    assert main(["export", str(DATA_DIR / "tiny_adder"), str(tmp_path / "copy")]) == 0
    assert json.loads((tmp_path / "copy" / "config.json").read_text())["model_type"] == "qwen2"


# ---------------------------------------------------------------------- rewards by name
def test_a_reward_module_in_the_current_directory_imports_as_python_m_would(
    tmp_path, monkeypatch, capsys
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    (tmp_path / "grpo_fast_test_cwd_rewards.py").write_text(
        "def short(completions, **kwargs):\n"
        "    return [1.0 if len(c) < 3 else 0.0 for c in completions]\n"
    )
    inp = write_jsonl(tmp_path / "in.jsonl", ROWS)
    want = [1.0 if len(r["completion"]) < 3 else 0.0 for r in ROWS]
    for spec, weight in (
        ("grpo_fast_test_cwd_rewards:short", 1.0),
        ("grpo_fast_test_cwd_rewards:short:0.5", 0.5),
    ):
        assert main(["score", str(inp), "--reward", spec]) == 0, capsys.readouterr().err
        got = [json.loads(line)["reward"] for line in capsys.readouterr().out.splitlines()]
        assert got == [weight * w for w in want]


@pytest.mark.parametrize(
    "spec",
    ["math:1:2:3", "format:0.5:^\\d+$", "x" * 300, "math:abc", "choice:1:letters"],
)
def test_a_malformed_reward_spec_is_one_line_without_python_internals(tmp_path, capsys, spec):
    inp = write_jsonl(tmp_path / "in.jsonl", ROWS)
    assert main(["score", str(inp), "--reward", spec]) == 2
    line = _one_error(capsys.readouterr().err, "score")
    assert len(line) < 400
    for leak in ("__init__", "positional argument", "keyword argument", "<lambda>", "x" * 80):
        assert leak not in line


def test_a_reward_table_with_an_unknown_option_names_the_options_it_takes(tmp_path, capsys):
    config = tmp_path / "run.toml"
    config.write_text('reward = [{name = "math", tolerance = 0.1}]\n')
    assert main(["train", "--config", str(config), "-o", str(tmp_path / "o")]) == 2
    line = _one_error(capsys.readouterr().err, "train")
    assert "reward 'math': unknown option(s) ['tolerance']; it takes [" in line
    assert "'rel_tol'" in line and "__init__" not in line
