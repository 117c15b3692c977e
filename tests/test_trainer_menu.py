"""The trainer's algorithm options (surrogate, entropy bonus, high-entropy tokens,
mask_truncated_completions) against a replay written in plain torch, and on the
command line.

The replay recomputes everything from the batch the trainer sampled: rewards
from the prompts' own sums, numpy group advantages, full-vocabulary
log-softmax log-probs and entropies one unpadded row at a time, truncation
from the token ids, numpy's quantile for the entropy threshold, and the
papers' formulas; with SGD and no gradient clipping the trainer's weights
must equal the replay's.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
from conftest import write_jsonl

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_trainer import reference_advantages, reference_rewards  # noqa: E402

from grpo_fast.cli import main  # noqa: E402
from grpo_fast.sampling import Completions, truncated  # noqa: E402
from grpo_fast.train.tracking import read_metrics  # noqa: E402
from grpo_fast.train.trainer import Trainer  # noqa: E402

G = 4


def rows_logp_entropy(model, prompt_ids, completion_ids):
    """Per row: completion-token log-probs and entropies, from the full softmax."""
    out = []
    for p, c in zip(prompt_ids, completion_ids, strict=True):
        ids = torch.tensor([p + c])
        log_p = torch.log_softmax(model(input_ids=ids).logits[0, :-1].float(), -1)
        lp = log_p.gather(-1, ids[0, 1:, None])[:, 0]
        h = -(log_p.exp() * log_p).sum(-1)
        out.append((lp[len(p) - 1 :], h[len(p) - 1 :]))
    return out


def replay_loss(rows, old, adv, learns_row, *, top, coef, eps_low, eps_high):
    """CISPO per token, only the high-entropy tokens of the rows that learn, the grpo
    aggregation over every row, minus the entropy bonus over the tokens that learn."""
    pool = np.concatenate(
        [h.detach().numpy() for (lp, h), ok in zip(rows, learns_row, strict=True) if ok]
    )
    threshold = np.quantile(pool, 1 - top)
    per_seq, bonus, count = [], 0.0, 0
    for (lp, h), o, a, ok in zip(rows, old, adv, learns_row, strict=True):
        if not ok:  # a truncated completion: no loss, but still one of the sequences
            per_seq.append(lp.sum() * 0)
            continue
        keep = torch.from_numpy(h.detach().numpy() >= threshold).float()
        w = torch.clamp(torch.exp(lp.detach() - o), 1 - eps_low if eps_low < 1 else 0, 1 + eps_high)
        per_seq.append((-(w * a * lp) * keep).mean())
        bonus = bonus + (h * keep).sum()
        count += int(keep.sum())
    return torch.stack(per_seq).mean() - coef * bonus / max(count, 1)


def test_one_step_with_the_menu_matches_a_replay(make_config):
    lr, top, coef = 0.05, 0.5, 0.2
    cfg = make_config(
        optimizer="sgd",
        learning_rate=lr,
        max_grad_norm=0.0,
        num_iterations=2,  # the second pass is off policy: CISPO's weights differ from 1
        surrogate="cispo",
        eps_low=0.1,
        eps_high=0.1,
        top_entropy_quantile=top,
        entropy_coef=coef,
        mask_truncated_completions=True,
        max_new_tokens=3,  # three-digit sums need 4 tokens with EOS: some are cut
        prompts_per_step=6,
        seed=4,
    )
    trainer = Trainer(cfg)
    start = copy.deepcopy(trainer.model)
    record = trainer.step()
    comp = trainer.last_batch.completions
    prompts = [trainer.train_rows[i]["prompt"] for i in trainer.last_batch.prompt_index]
    prompts = [p for p in prompts for _ in range(G)]
    rewards = reference_rewards(prompts, comp.texts)
    assert 0 < rewards.mean() < 1
    adv = reference_advantages(rewards, G)
    eos = trainer.tokenizer.eos_token_id
    cut = np.array([len(c) == 3 and c[-1] != eos for c in comp.completion_ids])
    assert 0 < cut.mean() < 1, "the seed should give cut and whole completions"
    assert record["truncated_frac"] == pytest.approx(cut.mean())
    assert 0 < record["top_entropy_frac"] < 1 and "cispo_clip_frac" in record

    model = copy.deepcopy(start)
    with torch.no_grad():
        old = [lp for lp, _ in rows_logp_entropy(model, comp.prompt_ids, comp.completion_ids)]
    clipped = 0
    for _ in range(2):
        rows = rows_logp_entropy(model, comp.prompt_ids, comp.completion_ids)
        clipped += sum(
            int(((torch.exp(lp.detach() - o) - 1).abs() > 0.1).sum())
            for (lp, _), o in zip(rows, old, strict=True)
        )
        loss = replay_loss(rows, old, adv, ~cut, top=top, coef=coef, eps_low=0.1, eps_high=0.1)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p -= lr * p.grad
    assert clipped > 0, "the second pass should clip some CISPO weights"
    for (name, ours), theirs in zip(
        trainer.model.named_parameters(), model.parameters(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=2e-6, msg=name)


def test_truncated_marks_completions_cut_at_the_limit():
    c = Completions(["", "", "", ""], [[1]] * 4, [[5, 6, 9], [5, 6, 7], [5, 8], [7, 7, 8]], None, 4)
    assert truncated(c, 9, 3).tolist() == [False, True, False, True]
    assert truncated(c, [9, 8], 3).tolist() == [False, True, False, False]
    assert truncated(c, None, 3).tolist() == [True, True, False, True]


def test_all_truncated_means_no_update(make_config):
    trainer = Trainer(
        make_config(
            mask_truncated_completions=True, max_new_tokens=1, optimizer="sgd", learning_rate=0.5
        )
    )
    start = copy.deepcopy(trainer.model)
    record = trainer.step()
    eos = trainer.tokenizer.eos_token_id
    ids = trainer.last_batch.completions.completion_ids
    assert record["truncated_frac"] == np.mean([c[-1] != eos for c in ids]) == 1.0
    assert record["loss"] == 0.0
    for ours, first in zip(trainer.model.parameters(), start.parameters(), strict=True):
        assert torch.equal(ours, first)


def test_menu_flags_on_the_command_line(tmp_path):
    rows = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in (11, 23, 35) for b in (4, 40)]
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    out = tmp_path / "out"
    argv = ["train", "--max-steps", "2", "--prompts-per-step", "2", "--num-generations", "4"]
    argv += ["--train-file", str(train), "--eval-file", "none", "--output-dir", str(out)]
    argv += ["--no-plot", "--no-progress", "--surrogate", "sapo", "--sapo-tau-neg", "2.0"]
    argv += ["--entropy-coef", "0.01", "--top-entropy-quantile", "0.2"]
    argv += ["--mask-truncated-completions", "--num-iterations", "2"]
    assert main(argv) == 0
    records = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2]
    assert {"truncated_frac", "top_entropy_frac", "entropy"} <= set(records[-1])
    saved = json.loads((out / "config.json").read_text())
    assert saved["surrogate"] == "sapo" and saved["sapo_tau_neg"] == 2.0
    assert saved["mask_truncated_completions"] is True


@pytest.mark.parametrize(
    ("flags", "message"),
    [
        (["--top-entropy-quantile", "1.5"], "top_entropy_quantile must be in [0, 1]"),
        (["--sapo-tau-pos", "0"], "sapo_tau_pos and sapo_tau_neg must be > 0"),
        (["--eps-low", "1.0"], "eps_low must be < 1 with surrogate='ppo'"),
        (["--entropy-coef", "nan"], "entropy_coef must be finite"),
    ],
)
def test_bad_menu_flags_exit_2_with_a_message(tmp_path, capsys, flags, message):
    rc = main(["train", "--output-dir", str(tmp_path / "o"), *flags])
    err = capsys.readouterr().err
    assert rc == 2
    assert message in err
    assert "Traceback" not in err


def test_unknown_surrogate_is_refused_by_the_parser(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["train", "--surrogate", "nope"])
    assert exc.value.code == 2
    assert "surrogate must be one of ('ppo', 'cispo', 'sapo', 'gmpo'), got 'nope'" in (
        capsys.readouterr().err
    )


def test_remax_baseline_is_the_greedy_completions_reward(make_config):
    from grpo_fast.sampling import HFSampler, SamplingParams

    trainer = Trainer(make_config(estimator="remax", seed=5))
    start = copy.deepcopy(trainer.model)
    trainer.step()
    batch = trainer.last_batch
    prompts = [trainer.train_rows[i]["prompt"] for i in batch.prompt_index]
    # The greedy completion of each prompt under the weights that sampled the batch.
    greedy = HFSampler(start, trainer.tokenizer).sample(
        prompts, 1, SamplingParams(max_new_tokens=4, temperature=0.0)
    )
    baseline = np.repeat(reference_rewards(prompts, greedy.texts), G)
    rewards = reference_rewards([p for p in prompts for _ in range(G)], batch.completions.texts)
    np.testing.assert_array_equal(batch.advantages, rewards - baseline)
    assert (batch.advantages != 0).any()


def test_opo_baseline_weighs_the_group_by_completion_length(make_config):
    trainer = Trainer(make_config(estimator="opo", seed=8, prompts_per_step=6))
    trainer.step()
    batch = trainer.last_batch
    r = batch.rewards.reshape(-1, G).astype(np.float64)
    lengths = np.array([len(c) for c in batch.completions.completion_ids], float).reshape(-1, G)
    signal = r.max(1) > r.min(1)
    want = np.where(
        signal[:, None], r - (lengths * r).sum(1, keepdims=True) / lengths.sum(1, keepdims=True), 0
    )
    assert (signal & (lengths.min(1) < lengths.max(1))).any(), "no group where length matters"
    np.testing.assert_allclose(batch.advantages, want.ravel(), rtol=1e-6, atol=1e-7)
