"""Process rewards in the trainer and on the command line, on the embedded chain task.

The reference is written here: the chain format's partial sums checked with
Python ints, DeepSeekMath's formula from ``test_process_advantages.reference``,
and the clipped objective with per-token advantages from ``test_trainer``.
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from conftest import write_jsonl  # noqa: E402
from test_process_advantages import reference  # noqa: E402
from test_trainer import reference_logp  # noqa: E402

from grpo_fast.cli import main  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.sampling import Completions  # noqa: E402
from grpo_fast.train.data import TASKS  # noqa: E402
from grpo_fast.train.metrics import read_metrics  # noqa: E402
from grpo_fast.train.rollout import Batch  # noqa: E402
from grpo_fast.train.trainer import Trainer  # noqa: E402

CHAIN = {**TASKS["chain"], "max_new_tokens": 40}


def char_tokens(ids: list[int], special: list[int]) -> list[int]:
    """The token holding each character of the decoded text: the embedded chain
    tokenizer has one character per token, but special tokens (a ``<pad>`` the
    sampler may draw mid-completion, the final ``<eos>``) decode to nothing."""
    return [t for t, tok in enumerate(ids) if tok not in special]


def chain_steps(text: str) -> list[tuple[int, float]]:
    """(end character, reward) of each comma-separated step: 1.0 when every ``a+b=c``
    in it holds, 0.0 when one does not, NaN without one (a slip like ``107++67`` is
    107 + (+67))."""
    out = []
    for m in re.finditer(r"[^,]+", text):
        piece = m.group()
        if not piece.strip():
            continue
        end = m.start() + len(piece.rstrip())
        claims = re.findall(r"(\d+(?:\++\d+)+)=(\d+)", piece)
        holds = [sum(int(x) for x in re.split(r"\++", lhs)) == int(c) for lhs, c in claims]
        r = np.nan if not claims else float(all(holds))
        out.append((end, r))
    return out


def expected_advantages(batch, rewards, ends, offsets, weight):
    """DeepSeekMath's token advantages (``reference``) of the steps found in the test,
    over the outcome advantages of the batch's rewards (group z-scores; 0 for a group
    of equal rewards)."""
    G = batch.group_size
    r_out = batch.rewards.reshape(-1, G).astype(np.float64)
    outcome = (
        (r_out - r_out.mean(1, keepdims=True)) / (r_out.std(1, ddof=1, keepdims=True) + 1e-6)
    ).ravel()
    outcome[np.repeat(r_out.std(1) == 0, G)] = 0.0
    lengths = [len(ids) for ids in batch.completions.completion_ids]
    return reference(
        np.array(rewards),
        ends,
        offsets,
        np.repeat(np.arange(len(r_out)), G),
        lengths,
        max(lengths),
        outcome=outcome,
        weight=weight,
    )


def test_one_process_step_matches_hand_computation(make_config):
    lr, weight, G = 0.02, 0.5, 4
    cfg = make_config(
        **CHAIN,
        process_reward="arithmetic",
        process_reward_weight=weight,
        optimizer="sgd",
        learning_rate=lr,
        max_grad_norm=0.0,
        prompts_per_step=2,
        num_generations=G,
        seed=1,
    )
    trainer = Trainer(cfg)
    start = copy.deepcopy(trainer.model)
    trainer.step()
    batch = trainer.last_batch
    comp = batch.completions
    # One token per character (the embedded chain tokenizer), then <eos>.
    assert all(len(ids) >= len(t) for ids, t in zip(comp.completion_ids, comp.texts, strict=True))

    rewards, ends, offsets = [], [], [0]
    for text, ids in zip(comp.texts, comp.completion_ids, strict=True):
        holds = char_tokens(ids, trainer.tokenizer.all_special_ids)
        for end, r in chain_steps(text):
            rewards.append(r)
            ends.append(holds[end - 1])  # the token holding the step's last character
        offsets.append(len(rewards))
    assert 0 < np.nanmean(rewards) < 1, "the seed should give steps both right and wrong"
    want, _ = expected_advantages(batch, rewards, ends, offsets, weight)
    np.testing.assert_allclose(batch.advantages, want, rtol=1e-5, atol=1e-5)

    # Replay the update: per-sequence token mean of -A_t * ratio (ratio 1 in one pass).
    model = copy.deepcopy(start)
    logp = reference_logp(model, comp.prompt_ids, comp.completion_ids)
    loss = torch.stack(
        [-(lp * torch.tensor(want[i, : len(lp)], dtype=torch.float32)).mean() for i, lp in
         enumerate(logp)]
    ).mean()  # fmt: skip
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    for (name, ours), theirs in zip(
        trainer.model.named_parameters(), model.parameters(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-6, msg=name)


def _comparable(history):
    skip = re.compile(r"^(time_|tokens_per_s|steps/)")
    return [{k: v for k, v in r.items() if not skip.match(k)} for r in history]


def test_process_weight_zero_trains_exactly_as_outcome_only(make_config):
    common = dict(**CHAIN, max_steps=2, prompts_per_step=2, num_generations=4, seed=3, eval_size=4)
    outcome = Trainer(make_config(**common)).train()
    zero = Trainer(
        make_config(**common, process_reward="arithmetic", process_reward_weight=0.0)
    ).train()
    a, b = _comparable(outcome), _comparable(zero)
    assert [sorted(r) for r in a] == [sorted(r) for r in b]
    for ra, rb in zip(a, b, strict=True):
        for k in ra:
            if isinstance(ra[k], float):
                assert ra[k] == pytest.approx(rb[k], rel=1e-5, abs=1e-6, nan_ok=True), k
            else:
                assert ra[k] == rb[k], k
    steps = zero[1]
    for key in ("per_completion", "frac_wrong", "frac_unchecked", "frac_with_error"):
        assert 0 <= steps[f"steps/{key}"] <= (64 if key == "per_completion" else 1)
    assert "steps/frac_wrong" not in outcome[1]


#: What :func:`last_digit_steps` was called with, for the test below.
SEEN: list = []


def last_digit_steps(completions, steps, prompts, answer, **columns):
    """A step scorer of one's own (``--process-reward test_process_training.last_digit_steps``):
    1 for a step whose last digit is the answer's, else 0."""
    SEEN.append((completions, prompts, answer))
    return [
        float(completions[i][end - 1] == answer[i][-1])
        for i in range(len(steps))
        for _, end, _ in steps.spans(i)
    ]


def test_a_step_scorer_on_conversational_prompts(make_config):
    """Conversations (the embedded chat template): the step scorer gets the messages as
    ``prompts`` and the completions as text (the steps' spans index them), and the
    advantages are DeepSeekMath's over its scores."""
    G = 4
    rows = [
        {"prompt": [{"role": "user", "content": f"{a}+{b}="}], "answer": str(a + b)}
        for a in (12, 23, 31)
        for b in (4, 40)
    ]
    cfg = make_config(
        process_reward="test_process_training.last_digit_steps",
        process_reward_weight=0.5,
        prompts_per_step=2,
        num_generations=G,
        seed=2,
        eval_size=2,
    )
    trainer = Trainer(cfg, train_rows=rows, eval_rows=rows[:2])
    SEEN.clear()
    trainer.step()
    batch = trainer.last_batch
    comp = batch.completions
    completions, prompts, answer = SEEN[-1]
    assert completions == comp.texts
    assert prompts == [rows[i]["prompt"] for i in batch.prompt_index for _ in range(G)]
    assert answer == [rows[i]["answer"] for i in batch.prompt_index for _ in range(G)]

    # The reference: each non-blank line, trimmed, is a step; one token per character.
    rewards, ends, offsets = [], [], [0]
    prompt_of = np.repeat(batch.prompt_index, G)
    for i, text, ids in zip(prompt_of, comp.texts, comp.completion_ids, strict=True):
        holds = char_tokens(ids, trainer.tokenizer.all_special_ids)
        for m in re.finditer(r"[^\n]+", text):
            piece = m.group().strip()
            if piece:
                end = m.start() + len(m.group().rstrip())
                rewards.append(float(piece[-1] == rows[i]["answer"][-1]))
                ends.append(holds[end - 1])
        offsets.append(len(rewards))
    want, norm = expected_advantages(batch, rewards, ends, offsets, 0.5)
    assert np.any(norm != 0), "the seed should give steps scored 1 and 0 in a group"
    np.testing.assert_allclose(batch.advantages, want, rtol=1e-5, atol=1e-5)


def test_the_chain_task_resumes_as_if_uninterrupted(tmp_path):
    """Process rewards, dynamic sampling (per-token advantages concatenated) and a
    checkpoint in the middle: the resumed run logs what the uninterrupted one does."""
    from grpo_fast.train.trainer import TrainerConfig

    common = dict(
        **CHAIN,
        process_reward="arithmetic",
        prompts_per_step=2,
        num_generations=4,
        eval_size=8,
        eval_every=2,
        save_every=2,
        dynamic_sampling=True,
        max_refill_rounds=1,
        seed=4,
        progress=False,
        plot=False,
    )
    whole, split = tmp_path / "whole", tmp_path / "split"
    Trainer(TrainerConfig(output_dir=str(whole), max_steps=3, **common)).train()
    Trainer(TrainerConfig(output_dir=str(split), max_steps=2, **common)).train()
    torch.manual_seed(99)  # a fresh process's global RNGs
    np.random.seed(99)  # noqa: NPY002 (the global state the trainer restores)
    Trainer(TrainerConfig(output_dir=str(split), max_steps=3, resume="auto", **common)).train()

    skip = re.compile(r"^(time_|tokens_per_s)")
    a, b = (
        [
            {k: v for k, v in r.items() if not skip.match(k)}
            for r in read_metrics(d / "metrics.jsonl")
        ]
        for d in (whole, split)
    )
    assert [r["step"] for r in a] == [0, 1, 2, 3]
    assert all("steps/frac_wrong" in r for r in a[1:])
    assert a == b


def test_process_options_are_checked(make_config):
    with pytest.raises(InvalidInputError, match="needs a pattern"):
        Trainer(make_config(process_reward="arithmetic", process_split="regex"))
    with pytest.raises(InvalidInputError, match="unknown process reward"):
        Trainer(make_config(process_reward="vibes"))
    with pytest.raises(InvalidInputError, match="process_split must be one of"):
        Trainer(make_config(process_split="sentences"))
    with pytest.raises(InvalidInputError, match="weight must be a finite number"):
        Trainer(make_config(process_reward="arithmetic", process_reward_weight=float("inf")))


def test_train_and_eval_the_chain_task_from_the_command_line(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["train", "--task", "chain", "--process-reward", "arithmetic", "--max-steps", "1"]
    argv += ["--prompts-per-step", "2", "--num-generations", "2", "--eval-size", "4"]
    argv += ["--max-new-tokens", "40", "--output-dir", str(out), "--no-plot", "--no-progress"]
    assert main(argv) == 0
    records = read_metrics(out / "metrics.jsonl")
    assert "steps/frac_wrong" in records[1]
    config = json.loads((out / "config.json").read_text())
    assert config["model"].endswith("tiny_chain") and config["process_split"] == "regex"
    capsys.readouterr()

    argv = ["eval", "--task", "chain", "-n", "3", "--limit", "4", "--max-new-tokens", "40"]
    assert main(argv) == 0
    report = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert report["prompts"] == 4 and report["n"] == 3
    assert 0 <= report["verified_best_of_3"] <= report["best_of_3"] <= 1
    assert 0 <= report["frac_wrong_step"] <= 1


def test_process_flags_that_cannot_work_exit_2(tmp_path, capsys):
    rc = main(["train", "--process-reward", "arithmetic", "--process-split", "regex",
               "--output-dir", str(tmp_path)])  # fmt: skip
    err = capsys.readouterr().err
    assert rc == 2 and "needs a pattern" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1
    rc = main(["train", "--process-split", "lines", "--process-split-pattern", ",",
               "--output-dir", str(tmp_path)])  # fmt: skip
    assert rc == 2 and "only used with split" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # argparse: an unknown choice
        main(["train", "--task", "sums"])
    assert e.value.code == 2
    rows = [{"prompt": "1+1=", "answer": "2"}]
    data = write_jsonl(tmp_path / "d.jsonl", rows)
    with pytest.raises(SystemExit) as e:  # a bound checked as the flag parses
        main(["eval", "--data", str(data), "-n", "1", "--max-new-tokens", "0"])
    assert e.value.code == 2
    assert "argument --max-new-tokens: must be >= 1, got 0" in capsys.readouterr().err


def test_batches_of_token_advantages_take_and_concat():
    c = Completions(["a", "b", "c", "d"], [[1]] * 4, [[2, 3]] * 4, None, 2)
    a = Batch(np.array([0, 1]), c, np.zeros(4), {}, np.arange(12.0).reshape(4, 3))
    b = Batch(np.array([2]), c.take([0, 1]), np.zeros(2), {}, np.ones((2, 1)))
    both = Batch.concat([a, b.take([0])], 2)
    assert both.advantages.shape == (6, 3)
    np.testing.assert_array_equal(both.advantages[4:], [[1, 0, 0], [1, 0, 0]])
    np.testing.assert_array_equal(a.take([1]).advantages, [[6, 7, 8], [9, 10, 11]])
    assert a.token_advantages(2).tolist() == [[0, 1], [3, 4], [6, 7], [9, 10]]
    assert a.token_advantages(4)[:, 3].tolist() == [0, 0, 0, 0]
    flat = Batch(np.array([0, 1]), c, np.zeros(4), {}, np.arange(4.0))
    assert flat.token_advantages(7).tolist() == [0, 1, 2, 3]
