"""Defaults that fit the model: the embedded demo keeps its values, any other model
gets a real run's (TRL's GRPOConfig as the reference), and a value given
explicitly always stands, in Python, in a config file and on the command line.

The expected values are written out here, not read from TrainerConfig.
"""

from __future__ import annotations

import dataclasses
import json

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.cli import config_from_file, main  # noqa: E402
from grpo_fast.train.trainer import TrainerConfig  # noqa: E402

DEMO = dict(
    max_new_tokens=4,
    learning_rate=3e-5,
    lr_schedule="constant",
    adam_beta2=0.99,
    eval_size=500,
    save_every=0,
    dtype="fp32",
    gradient_checkpointing=False,
)
REAL = dict(
    max_new_tokens=256,
    learning_rate=1e-6,
    lr_schedule="linear",
    adam_beta2=0.999,
    eval_size=0,
    save_every=500,
    dtype="bf16",
    gradient_checkpointing=True,
)
SAME = dict(num_generations=8, temperature=1.0, prompts_per_step=8, beta=0.0, top_p=1.0)


def values(cfg, names):
    return {k: getattr(cfg, k) for k in names}


def test_the_demo_keeps_its_values_and_any_other_model_gets_a_real_runs():
    assert values(TrainerConfig(), DEMO) == DEMO
    assert values(TrainerConfig(), SAME) == SAME
    for model in ("Qwen/Qwen2.5-0.5B-Instruct", "/models/llama"):
        cfg = TrainerConfig(model=model)
        assert values(cfg, REAL) == REAL
        assert values(cfg, SAME) == SAME


def test_an_explicit_value_always_stands():
    # Equal to the other model's default, in both directions.
    assert TrainerConfig(max_new_tokens=256, dtype="bf16").max_new_tokens == 256
    assert TrainerConfig(model="org/m", max_new_tokens=4, dtype="fp32").dtype == "fp32"
    assert (
        TrainerConfig(model="org/m", gradient_checkpointing=False).gradient_checkpointing is False
    )
    cfg = TrainerConfig(model="org/m", learning_rate=3e-5)
    assert cfg.learning_rate == 3e-5 and cfg.max_new_tokens == 256
    # A run's config.json (all values explicit) reads back as the same config.
    again = TrainerConfig.from_dict(dataclasses.asdict(cfg))
    assert again == cfg


def test_a_config_file_value_stands_and_the_rest_follow_the_model(tmp_path):
    path = tmp_path / "run.toml"
    path.write_text('model = "org/m"\nmax_new_tokens = 4\n')
    cfg = TrainerConfig.from_dict(config_from_file(str(path), TrainerConfig))
    assert cfg.max_new_tokens == 4 and cfg.learning_rate == 1e-6 and cfg.dtype == "bf16"


def test_help_says_which_default_is_whose(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "(default: 256; embedded demo: 4)" in out
    assert "(default: 1e-06; embedded demo: 3e-05)" in out
    assert "(default: bf16; embedded demo: fp32)" in out
    assert "embedded demo: Y" in out  # the description explains the form
    with pytest.raises(SystemExit):
        main(["eval", "--help"])
    assert "(default: 256; embedded demo: 4)" in " ".join(capsys.readouterr().out.split())


def test_the_command_line_gives_the_config_python_gives(tmp_path, tiny_model_dir, jsonl):
    """grpo-fast train --model DIR and Trainer(TrainerConfig(model=DIR)) run the same
    configuration: real-run defaults, the flags given standing."""
    model = tiny_model_dir("qwen2")
    rows = [{"prompt": f"{a}+{a}=", "answer": str(2 * a)} for a in range(10, 14)]
    train = jsonl("train.jsonl", rows)
    out = tmp_path / "out"
    argv = ["train", "--model", str(model), "--train-file", str(train), "--eval-file", "none"]
    argv += ["--output-dir", str(out), "--max-steps", "1", "--prompts-per-step", "2"]
    argv += ["--num-generations", "2", "--max-new-tokens", "3", "--no-plot", "--no-progress"]
    assert main(argv) == 0
    written = json.loads((out / "config.json").read_text())
    python = TrainerConfig(
        model=str(model),
        train_file=str(train),
        eval_file=None,
        output_dir=str(out),
        max_steps=1,
        prompts_per_step=2,
        num_generations=2,
        max_new_tokens=3,
        plot=False,
        progress=False,
    )
    expected = json.loads(json.dumps(dataclasses.asdict(python)))
    expected["device"] = written["device"]  # the trainer records the device it resolved
    assert (expected["sampler_correction"], written["sampler_correction"]) == ("auto", "none")
    expected["sampler_correction"] = "none"  # and the correction 'auto' means with the HF sampler
    assert written == expected
    assert values(python, REAL | {"max_new_tokens": 3}) == REAL | {"max_new_tokens": 3}
