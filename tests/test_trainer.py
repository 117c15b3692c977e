"""The trainer against a hand computation, and exact resume.

The reference here is plain torch written in the test: full-vocabulary
log-softmax of the model's logits, numpy group advantages, and the clipped
GRPO objective (PPO clip, per-sequence token mean, k3 KL), differentiated by
autograd. With SGD and no clipping of the gradient, the trainer's parameter
update must equal ``-lr`` times that gradient.
"""

from __future__ import annotations

import copy
import json
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from grpo_fast.train.tracking import read_metrics  # noqa: E402
from grpo_fast.train.trainer import DATA_DIR, Trainer, TrainerConfig  # noqa: E402

TIMING = re.compile(r"^(time_|tokens_per_s)")


def reference_rewards(prompts: list[str], texts: list[str]) -> np.ndarray:
    """Correct sums, computed from the prompt text itself."""
    out = []
    for p, t in zip(prompts, texts, strict=True):
        a, b = p.rstrip("=").split("+")
        out.append(float(t.strip() == str(int(a) + int(b))))
    return np.array(out)


def reference_advantages(rewards: np.ndarray, G: int) -> np.ndarray:
    r = rewards.reshape(-1, G)
    return ((r - r.mean(1, keepdims=True)) / (r.std(1, ddof=1, keepdims=True) + 1e-6)).ravel()


def reference_logp(model, prompt_ids, completion_ids, temperature=1.0):
    """Per-row lists of completion-token log-probs, one unpadded sequence at a time."""
    out = []
    for p, c in zip(prompt_ids, completion_ids, strict=True):
        ids = torch.tensor([p + c])
        logits = model(input_ids=ids).logits[0, :-1].float() / temperature
        lp = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None])[:, 0]
        out.append(lp[len(p) - 1 :])
    return out


def reference_loss(logp, old_logp, ref_logp, adv, eps=0.2, beta=0.0):
    """GRPO: mean over sequences of the token mean of the clipped objective (+ beta * k3)."""
    per_seq = []
    for lp, old, ref, a in zip(logp, old_logp, ref_logp, adv, strict=True):
        ratio = torch.exp(lp - old)
        obj = torch.minimum(ratio * a, torch.clamp(ratio, 1 - eps, 1 + eps) * a)
        tok = -obj
        if beta > 0:
            # k3, clamped at 10 as verl does (DESIGN: "k3 clamped").
            tok = tok + beta * (torch.exp(ref - lp) - (ref - lp) - 1).clamp(max=10)
        per_seq.append(tok.mean())
    return torch.stack(per_seq).mean()


@pytest.mark.parametrize(("num_iterations", "beta"), [(1, 0.0), (2, 0.05)])
def test_one_step_matches_hand_computation(make_config, num_iterations, beta):
    lr = 0.02
    cfg = make_config(
        optimizer="sgd",
        learning_rate=lr,
        max_grad_norm=0.0,
        num_iterations=num_iterations,
        beta=beta,
        seed=3,
    )
    trainer = Trainer(cfg)
    start = copy.deepcopy(trainer.model)
    trainer.step()
    batch = trainer.last_batch
    comp = batch.completions
    prompts = [trainer.train_rows[i]["prompt"] for i in batch.prompt_index for _ in range(4)]

    rewards = reference_rewards(prompts, comp.texts)
    np.testing.assert_array_equal(batch.rewards, rewards)
    assert 0 < rewards.mean() < 1, "the seed should give a batch with signal"
    adv = reference_advantages(rewards, 4)
    np.testing.assert_allclose(batch.advantages, adv, rtol=1e-5, atol=1e-6)

    # Replay the update by hand: old log-probs from the starting weights, the
    # reference model frozen at the start, one SGD step per iteration.
    model = copy.deepcopy(start)
    with torch.no_grad():
        old = reference_logp(model, comp.prompt_ids, comp.completion_ids)
        ref = old
    for _ in range(num_iterations):
        logp = reference_logp(model, comp.prompt_ids, comp.completion_ids)
        loss = reference_loss(logp, old, ref, adv, beta=beta)
        model.zero_grad()
        loss.backward()
        with torch.no_grad():
            for p in model.parameters():
                if p.grad is not None:
                    p -= lr * p.grad
    moved = 0.0
    for (name, ours), theirs, first in zip(
        trainer.model.named_parameters(), model.parameters(), start.parameters(), strict=True
    ):
        torch.testing.assert_close(ours, theirs, rtol=1e-4, atol=1e-6, msg=name)
        moved = max(moved, float((ours - first).detach().abs().max()))
    assert moved > 1e-4, "the step did not change the weights"


def test_sampler_logprobs_match_forward(make_config):
    from grpo_fast.sampling import HFSampler
    from grpo_fast.train.forward import completion_logprobs, pack

    trainer = Trainer(make_config(seed=1))
    prompts = [r["prompt"] for r in trainer.train_rows[:3]]
    sampler = HFSampler(trainer.model, trainer.tokenizer)
    comp = sampler.sample(prompts, 4, trainer.params)
    assert len(comp) == 12 and comp.n == 4
    packed = pack(comp.prompt_ids, comp.completion_ids, trainer.tokenizer.pad_token_id)
    mask = packed.completion_mask
    with torch.no_grad():
        ref = reference_logp(trainer.model, comp.prompt_ids, comp.completion_ids)
        shared, _ = completion_logprobs(trainer.model, packed, group_size=4)
        full, _ = completion_logprobs(trainer.model, packed, share_prompt_prefix=False)
    for i, (lp, r) in enumerate(zip(comp.logprobs, ref, strict=True)):
        np.testing.assert_allclose(lp, r.numpy(), rtol=1e-4, atol=1e-5)
        # Padded batch forwards (prompt KV shared per group, or one row each)
        # give the same values as unpadded rows.
        for packed in (shared, full):
            got = packed[i][mask[i]].numpy()
            np.testing.assert_allclose(got, r.numpy(), rtol=1e-4, atol=1e-5)


def _comparable(records):
    return [{k: v for k, v in r.items() if not TIMING.match(k)} for r in records]


def test_resume_equals_uninterrupted(tmp_path):
    common = dict(
        prompts_per_step=4,
        num_generations=4,
        eval_size=16,
        eval_every=2,
        save_every=2,
        progress=False,
        plot=False,
        curriculum=True,
        seed=5,
        max_refill_rounds=1,
        dynamic_sampling=True,
    )
    whole = tmp_path / "whole"
    Trainer(TrainerConfig(output_dir=str(whole), max_steps=4, **common)).train()

    split = tmp_path / "split"
    Trainer(TrainerConfig(output_dir=str(split), max_steps=2, **common)).train()
    assert (split / "checkpoints" / "step-0000002" / "trainer_state.pt").is_file()
    # A fresh process state: scramble the global RNGs before resuming.
    torch.manual_seed(1234)
    np.random.seed(1234)  # noqa: NPY002 (the global state the trainer restores)
    Trainer(TrainerConfig(output_dir=str(split), max_steps=4, resume="auto", **common)).train()

    a = _comparable(read_metrics(whole / "metrics.jsonl"))
    b = _comparable(read_metrics(split / "metrics.jsonl"))
    assert [r["step"] for r in a] == [0, 1, 2, 3, 4]
    assert a == b
    wa = Trainer(
        TrainerConfig(
            output_dir=str(tmp_path / "x"),
            resume=str(whole / "checkpoints" / "step-0000004"),
            **common,
        )
    ).model.state_dict()
    wb = Trainer(
        TrainerConfig(
            output_dir=str(tmp_path / "y"),
            resume=str(split / "checkpoints" / "step-0000004"),
            **common,
        )
    ).model.state_dict()
    for k in wa:
        torch.testing.assert_close(wa[k], wb[k], rtol=0, atol=0)


def test_metrics_and_curves_are_written(tmp_path, make_config):
    cfg = make_config(max_steps=3, eval_every=2, plot=True)
    Trainer(cfg).train()
    out = tmp_path / "run"
    records = read_metrics(out / "metrics.jsonl")
    assert [r["step"] for r in records] == [0, 1, 2, 3]
    assert "eval_accuracy" in records[0] and "reward" not in records[0]
    assert [("eval_accuracy" in r) for r in records] == [True, False, True, True]
    # TRL's names (trl/trainer/grpo_trainer.py logs these keys).
    for key in ("reward", "reward_std", "solve_rate", "frac_reward_zero_std", "entropy"):
        assert key in records[1]
    for key in ("clip_ratio/low_mean", "clip_ratio/high_mean", "clip_ratio/region_mean"):
        assert key in records[1]
    for key in ("completions/mean_length", "completions/min_length", "completions/max_length"):
        assert key in records[1]
    for key in ("completions/clipped_ratio", "tokens_per_s", "time_sampling", "time_verify"):
        assert records[1][key] >= 0
    assert (out / "curves.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert json.loads((out / "config.json").read_text())["max_steps"] == 3
    assert (out / "checkpoints" / "step-0000003" / "model.safetensors").is_file()
    assert not list((out / "checkpoints").glob(".tmp-*"))


def test_dynamic_sampling_trains_only_groups_with_signal(make_config):
    cfg = make_config(dynamic_sampling=True, max_refill_rounds=4, seed=2)
    trainer = Trainer(cfg)
    record = trainer.step()
    batch = trainer.last_batch
    r = batch.rewards.reshape(-1, 4)
    assert len(r) == record["groups_trained"] <= 4
    assert (r.std(1) > 0).all()
    assert record["sampling_rounds"] >= 1


def test_bad_config_is_rejected_with_a_message(tmp_path, make_config, jsonl):
    from grpo_fast.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="num_generations"):
        make_config(num_generations=1).validate()
    with pytest.raises(InvalidInputError, match="not readable"):
        make_config(model=str(tmp_path)).validate()
    with pytest.raises(InvalidInputError, match="loss_type"):
        make_config(loss_type="nope").validate()
    with pytest.raises(InvalidInputError, match="unknown reward 'nope'"):
        make_config(reward=("math", "nope")).validate()
    with pytest.raises(InvalidInputError, match="empty"):
        Trainer(make_config(train_file=str(jsonl("empty.jsonl", []))))
    with pytest.raises(InvalidInputError, match=r"'answer' is null"):
        Trainer(make_config(train_file=str(jsonl("n.jsonl", [{"prompt": "1+1=", "answer": None}]))))
    with pytest.raises(InvalidInputError, match=r"'prompt' must be a string, got int"):
        Trainer(make_config(train_file=str(jsonl("p.jsonl", [{"prompt": 3, "answer": "3"}]))))


def test_embedded_model_is_small_and_starts_between_20_and_50_percent(make_config):
    size = sum(f.stat().st_size for f in DATA_DIR.rglob("*") if f.is_file())
    # Four tiny models of about 3 MB (adder, chain, tool, code) and their data: the
    # package's size budget.
    assert size < 16 * 2**20
    trainer = Trainer(make_config(eval_size=500))
    assert 0.2 <= trainer.evaluate()["eval_accuracy"] <= 0.5


def test_vllm_sampler_without_vllm_says_how_to_get_it():
    import importlib.util

    from grpo_fast.errors import InvalidInputError
    from grpo_fast.sampling import VLLMSampler

    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vLLM is installed; the GPU test below covers it")
    with pytest.raises(InvalidInputError, match=r"grpo-fast\[vllm\]"):
        VLLMSampler(str(DATA_DIR / "tiny_adder"))


def test_vllm_sampler_generates_groups_and_takes_new_weights():
    pytest.importorskip("vllm", reason="vLLM cannot be imported here (make test-vllm runs it)")
    from transformers import AutoModelForCausalLM

    from grpo_fast.errors import InvalidInputError
    from grpo_fast.sampling import SamplingParams, VLLMSampler

    kw = {"gpu_memory_utilization": 0.1} if torch.cuda.is_available() else {}
    sampler = VLLMSampler(str(DATA_DIR / "tiny_adder"), dtype="fp32", enforce_eager=True, **kw)
    params = SamplingParams(max_new_tokens=4, temperature=0.0)
    with pytest.raises(InvalidInputError, match="only with n=1"):  # vLLM refuses it
        sampler.sample(["12+34="], 3, params)
    before = sampler.sample(["12+34=", "7+8="], 1, params)
    assert len(before) == 2 and sampler.sample(["12+34="], 1, params).texts == before.texts[:1]
    groups = sampler.sample(["12+34=", "7+8="], 3, SamplingParams(max_new_tokens=4))
    assert len(groups) == 6 and groups.prompt_ids[0] == groups.prompt_ids[2] != groups.prompt_ids[3]
    model = AutoModelForCausalLM.from_pretrained(str(DATA_DIR / "tiny_adder"))
    with torch.no_grad():
        for p in model.parameters():
            p.zero_()  # all-zero weights: uniform next-token distribution
    sampler.update_weights(model)
    after = sampler.sample(["12+34="], 1, params)
    assert after.completion_ids[0] != before.completion_ids[0]
    sampler.close()


def test_several_rewards_are_scored_and_logged_per_column(make_config):
    """Specs, a compiled combine(...) and a TRL-style function at once: each column
    equals the rewards module called directly and a reference written here."""
    from grpo_fast import rewards

    seen = []

    def longer_than_one(completions, prompts, completion_ids, answer, **columns):
        seen.append((prompts, completion_ids, answer))
        return [float(len(c.strip()) > 1) for c in completions]

    digits = rewards.combine(rewards.FormatReward(r"^\d+$", name="digits", weight=0.5))
    trainer = Trainer(
        make_config(seed=3),
        rewards=[rewards.MathReward(), digits, (longer_than_one, 0.25)],
    )
    assert trainer.rewards.names == ("math", "digits", "longer_than_one")
    record = trainer.step()
    batch = trainer.last_batch
    texts = batch.completions.texts
    rows = [trainer.train_rows[i] for i in batch.prompt_index for _ in range(4)]
    prompts, golds = [r["prompt"] for r in rows], [r["answer"] for r in rows]

    cols = batch.reward_columns
    math_ref = reference_rewards(prompts, texts)
    digits_ref = np.array([float(re.fullmatch(r"\d+", t) is not None) for t in texts])
    longer_ref = np.array([float(len(t.strip()) > 1) for t in texts])
    np.testing.assert_array_equal(cols["math"], math_ref)
    np.testing.assert_array_equal(cols["digits"], digits_ref)
    np.testing.assert_array_equal(cols["longer_than_one"], longer_ref)
    direct = rewards.combine(
        rewards.MathReward(), rewards.FormatReward(r"^\d+$", name="digits")
    ).score_batch(texts, golds)
    np.testing.assert_array_equal(cols["math"], direct.columns["math"])
    np.testing.assert_array_equal(cols["digits"], direct.columns["digits"])
    total = math_ref + 0.5 * digits_ref + 0.25 * longer_ref
    np.testing.assert_allclose(batch.rewards, total, rtol=1e-6)
    np.testing.assert_allclose(batch.advantages, reference_advantages(total, 4), atol=1e-5)
    from trl.trainer.utils import nanstd  # TRL's own statistic, as its reward_std logs it

    def trl_std(x):
        return nanstd(torch.as_tensor(np.asarray(x, np.float64))).item()

    for name, ref in (("math", math_ref), ("digits", digits_ref), ("longer_than_one", longer_ref)):
        assert record[f"rewards/{name}/mean"] == pytest.approx(ref.mean())
        assert record[f"rewards/{name}/std"] == pytest.approx(trl_std(ref), nan_ok=True)
    assert record["reward"] == pytest.approx(total.mean())
    assert record["reward_std"] == pytest.approx(trl_std(total))
    # The TRL-style function got TRL's keyword arguments.
    got_prompts, got_ids, got_answers = seen[0]
    assert got_prompts == prompts and got_answers == golds
    assert [len(x) for x in got_ids] == [len(x) for x in batch.completions.completion_ids]


def test_exact_reward_is_the_rewards_module_one():
    """The trainer's "exact" is rewards.ExactMatchReward (extraction, case ignored)."""
    from grpo_fast import rewards
    from grpo_fast.train.rollout import RunRewards

    texts = ["The answer is Paris.", "paris", "Lyon"]
    got = RunRewards.build(["exact"]).score(texts, [{"answer": "Paris"}] * 3)
    want = rewards.combine(rewards.ExactMatchReward()).score_batch(texts, golds="Paris")
    np.testing.assert_array_equal(got.total, want.total)
    assert got.total.tolist() == [1.0, 1.0, 0.0]


def test_batch_take_and_concat_build_new_read_only_batches():
    from grpo_fast.sampling import Completions
    from grpo_fast.train.rollout import Batch

    def batch(idx, base):
        n = len(idx) * 2
        comp = Completions(
            [f"t{base + i}" for i in range(n)], [[1]] * n, [[2, i] for i in range(n)], None, 2
        )
        r = np.arange(n, dtype=np.float32) + base
        return Batch(np.array(idx), comp, r, {"math": r * 2}, -r)

    a, b = batch([5, 6], 0), batch([7], 10)
    both = Batch.concat([a, b], 2)
    assert both.prompt_index.tolist() == [5, 6, 7]
    assert both.completions.texts == ["t0", "t1", "t2", "t3", "t10", "t11"]
    sub = both.take(np.array([False, True, True]))
    assert sub.prompt_index.tolist() == [6, 7]
    assert sub.rewards.tolist() == [2, 3, 10, 11]
    assert sub.reward_columns["math"].tolist() == [4, 6, 20, 22]
    assert sub.advantages.tolist() == [-2, -3, -10, -11]
    assert a.rewards.tolist() == [0, 1, 2, 3]  # the parts are unchanged
    with pytest.raises(ValueError, match="read-only"):
        sub.rewards[0] = 1.0
    with pytest.raises(AttributeError):
        sub.rewards = None  # type: ignore[misc]
    assert len(Batch.concat([], 2)) == 0


@pytest.mark.parametrize("architecture", ["qwen2", "llama", "gpt2"])
def test_prefix_shared_forward_equals_the_full_one(tiny_lm, architecture):
    """forward.completion_logprobs: the shared-prompt cache path, the full path and
    one unpadded sequence at a time agree, on three architectures."""
    from grpo_fast.train.forward import completion_logprobs, decoder_of, pack, prefill_groups

    model = tiny_lm(architecture).eval()
    rng = np.random.default_rng(0)
    G = 3
    prompts = [rng.integers(2, 17, size=n).tolist() for n in (4, 2)]
    prompt_ids = [p for p in prompts for _ in range(G)]
    completion_ids = [rng.integers(2, 17, size=n).tolist() for n in (3, 1, 5, 2, 4, 4)]
    packed = pack(prompt_ids, completion_ids, pad_token_id=0)
    with torch.no_grad():
        shared, _ = completion_logprobs(model, packed, group_size=G)
        full, _ = completion_logprobs(model, packed, share_prompt_prefix=False)
        ref = reference_logp(model, prompt_ids, completion_ids)
        # The shared path really ran (it falls back to the full one when it cannot).
        pre = prefill_groups(decoder_of(model), packed.prompt_ids, packed.prompt_mask, G)
    assert pre is not None and pre.hidden.shape[0] == len(prompts)
    mask = packed.completion_mask
    for i, r in enumerate(ref):
        np.testing.assert_allclose(shared[i][mask[i]].numpy(), r.numpy(), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(full[i][mask[i]].numpy(), r.numpy(), rtol=1e-4, atol=1e-5)
        assert (shared[i][~mask[i]] == 0).all()


def test_rows_given_in_python_are_checked_and_used(make_config):
    from grpo_fast.errors import InvalidInputError

    rows = [{"prompt": f"{a}+{a}=", "answer": 2 * a, "level": a % 3} for a in range(10, 30)]
    seen = []

    def level_seen(completions, level, **columns):
        seen.extend(level)
        return [0.0] * len(completions)

    trainer = Trainer(
        make_config(), train_rows=rows, eval_rows=rows[:4], rewards=["math", level_seen]
    )
    assert trainer.train_rows[0] == {"prompt": "10+10=", "answer": "20", "level": 1}
    assert len(trainer.eval_rows) == 4
    trainer.step()
    by_prompt = {r["prompt"]: r["level"] for r in rows}
    idx = trainer.last_batch.prompt_index
    assert seen == [by_prompt[trainer.train_rows[i]["prompt"]] for i in idx for _ in range(4)]
    with pytest.raises(InvalidInputError, match=r"train_rows\[1\]: 'answer' is null"):
        Trainer(
            make_config(overwrite=True), train_rows=[rows[0], {"prompt": "1+1=", "answer": None}]
        )
