"""What a TRL user reaches for: max_prompt_length, num_train_epochs, trainer_state for
reward functions, log_completions, a plain-text line per logging_steps, TRL's way of
summing rewards that cannot score an item; and a reward function that raises.

Each run is one or two steps of the embedded demo model (32 positions).
"""

from __future__ import annotations

import json
import math
import re

import numpy as np
import pytest
from conftest import SMALL_RUN, write_jsonl

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.cli import main  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.train.tracking import read_metrics  # noqa: E402
from grpo_fast.train.trainer import Trainer, TrainerConfig  # noqa: E402

QUICK = dict(SMALL_RUN, prompts_per_step=2, num_generations=2, eval_size=4, max_steps=1)
ROWS = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in (12, 34) for b in (5, 61)]


def test_max_prompt_length_cuts_from_the_left_and_the_positions_are_checked(tmp_path, capsys):
    from grpo_fast.train.modeling import load_tokenizer

    cfg = TrainerConfig(**{**QUICK, "output_dir": str(tmp_path / "run")})
    tok = load_tokenizer(cfg.model)
    long_prompt = "1+1=2 " * 6 + "12+5="  # 35 characters: the demo model has 32 positions
    rows = [*ROWS, {"prompt": long_prompt, "answer": "17"}]
    n = len(tok(long_prompt, add_special_tokens=False)["input_ids"])
    assert n + cfg.max_new_tokens > 32
    with pytest.raises(InvalidInputError, match=rf"longest prompt has {n} tokens .* 32 positions"):
        Trainer(cfg, train_rows=rows, eval_rows=rows)
    capsys.readouterr()
    cut = TrainerConfig(**{**QUICK, "output_dir": str(tmp_path / "run"), "max_prompt_length": 20})
    trainer = Trainer(cut, train_rows=rows, eval_rows=rows)
    err = capsys.readouterr().err
    assert "max_prompt_length 20: 1 of 5 train prompts were longer and lost their beginning" in err
    # The end stays (what the model continues from): the prompt's last 20 tokens.
    ids = tok(long_prompt, add_special_tokens=False)["input_ids"]
    assert trainer.train_prompts[-1] == tok.decode(ids[-20:])
    assert trainer.train_prompts[-1].endswith("12+5=") and trainer.train_prompts[:4] == [
        r["prompt"] for r in ROWS
    ]
    trainer.train()  # and it trains


def test_num_train_epochs_decides_max_steps(tmp_path):
    cfg = TrainerConfig(**{**QUICK, "output_dir": str(tmp_path / "run"), "num_train_epochs": 1.5})
    trainer = Trainer(cfg, train_rows=ROWS * 2, eval_rows=ROWS)  # 8 rows, 2 prompts a step
    assert trainer.config.max_steps == math.ceil(1.5 * 8 / 2)
    with pytest.raises(InvalidInputError, match="num_train_epochs must be > 0"):
        TrainerConfig(num_train_epochs=0).validate()


def test_reward_functions_get_trainer_state_and_a_raising_one_is_named(tmp_path, capsys):
    seen = []

    def watching(completions, trainer_state, **kwargs):
        state = (trainer_state.global_step, trainer_state.epoch, trainer_state.max_steps)
        seen.append(("train" if len(completions) == 4 else "eval", *state))
        return [0.0] * len(completions)

    cfg = TrainerConfig(**{**QUICK, "output_dir": str(tmp_path / "a"), "max_steps": 2})
    Trainer(cfg, train_rows=ROWS, eval_rows=ROWS[:1], rewards=["math", watching]).train()
    # TRL's TrainerState: the steps done when the batch is scored, epochs as a fraction.
    epoch = 2 / len(ROWS)  # 2 prompts a step
    assert seen == [
        ("eval", 0, 0.0, 2), ("train", 0, 0.0, 2), ("train", 1, epoch, 2), ("eval", 2, 2 * epoch, 2)
    ]  # fmt: skip

    def picky(completions, answer, **kwargs):
        if "bad" in answer:
            raise ValueError("cannot read the gold")
        return [1.0] * len(completions)

    rows = [{"prompt": "12+5=", "answer": "17"}, {"prompt": "34+5=", "answer": "bad"}]
    cfg = TrainerConfig(**{**QUICK, "output_dir": str(tmp_path / "b")})
    trainer = Trainer(cfg, train_rows=rows, eval_rows=rows[:1], rewards=[picky])
    before = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    with pytest.raises(InvalidInputError) as raised:
        trainer.train()
    message = str(raised.value)
    found = re.search(r"reward function 'picky' raised on sample (\d+) \(completion ", message)
    assert found and message.endswith("ValueError: cannot read the gold"), message
    # The first sample of the group whose gold is "bad" (groups of 2, in the drawn order).
    from grpo_fast.train.trainer import build_prompt_order

    drawn = build_prompt_order(cfg, len(rows)).draw(2)  # the trainer's first draw, again
    batch_golds = [rows[i]["answer"] for i in drawn]
    assert int(found[1]) == 2 * batch_golds.index("bad")
    # No partial step: no weight moved, no step counted.
    assert trainer.step_count == 0
    for k, v in trainer.model.state_dict().items():
        torch.testing.assert_close(v, before[k], rtol=0, atol=0)


def test_log_completions_and_a_plain_line_every_logging_steps(tmp_path, capsys):
    out = tmp_path / "run"
    cfg = TrainerConfig(
        **{**QUICK, "output_dir": str(out), "max_steps": 2, "logging_steps": 1},
        log_completions=True,
    )
    history = Trainer(cfg, train_rows=ROWS, eval_rows=ROWS).train()
    lines = [line for line in capsys.readouterr().out.splitlines() if line.startswith("step ")]
    assert [line.split(" | ")[0] for line in lines] == ["step 1/2", "step 2/2"]
    assert all(re.search(r"reward [-\d.e]+ .*s/step \| \d+s left", line) for line in lines)
    rows = [json.loads(line) for line in (out / "completions.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows] == [1] * 4 + [2] * 4  # P x G samples a step
    assert {"prompt", "completion", "math", "reward", "advantage"} <= set(rows[0])
    assert {r["prompt"] for r in rows} <= {r["prompt"] for r in ROWS}
    for step in (1, 2):
        mine = [r["reward"] for r in rows if r["step"] == step]
        assert np.mean(mine) == pytest.approx(history[step]["reward"])  # one process: all
    # Resumed from step 1: the completions of the replaced step 2 go, as its metrics do.
    cfg2 = TrainerConfig(
        **{**QUICK, "output_dir": str(out), "max_steps": 2, "save_every": 1},
        resume=str(out / "checkpoints" / "step-0000002"),
    )
    Trainer(cfg2, train_rows=ROWS, eval_rows=ROWS)
    assert [r["step"] for r in read_metrics(out / "metrics.jsonl")] == [0, 1, 2]


def test_rewards_that_cannot_score_an_item_are_left_out_of_its_total(tmp_path, capsys):
    rows = [
        {"prompt": "q1", "completion": "The answer is (B)", "answer": "B"},
        {"prompt": "q1", "completion": "I pick C", "answer": "B"},
        {"prompt": "q2", "completion": "42", "answer": "42"},
        {"prompt": "q2", "completion": "41", "answer": "42"},
    ]
    inp = write_jsonl(tmp_path / "in.jsonl", rows)
    assert main(["score", str(inp), "--reward", "choice", "--reward", "exact"]) == 0
    got = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    # choice cannot score a gold without a letter (null); the total is exact's alone there,
    # as TRL's nansum over reward functions makes it.
    assert [g["reward/choice"] for g in got][2:] == [None, None]
    assert [g["reward"] for g in got] == [
        g["reward/choice"] + g["reward/exact"] if g["reward/choice"] is not None else
        g["reward/exact"] for g in got
    ]  # fmt: skip
    # Where nothing scores, the total is null and the summary says why, without a nan.
    assert main(["score", str(inp), "--reward", "choice"]) == 0
    captured = capsys.readouterr()
    assert "2 of 4 without a reward (NaN; written as null): choice: 2" in captured.err
    assert "nan" not in captured.err.replace("NaN", "")
