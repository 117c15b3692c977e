"""VLLMSampler (--sampler vllm): a vLLM engine in this process, weights pushed from the
trainer's model, log-probs checked against that model's own (a plain transformers
forward). One engine for the module, serving a random long-context copy of the demo
model; the training runs use the demo model through the command line."""

from __future__ import annotations

import copy
import subprocess
import sys

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: make test-vllm runs these")

import torch  # noqa: E402
import transformers  # noqa: E402
from vllm_helpers import (  # noqa: E402
    DEMO,
    long_context_model,
    max_logprob_gap,
    perturb,
    read_metrics,
)

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.sampling import SamplingParams  # noqa: E402
from grpo_fast.sampling.vllm import VLLMSampler  # noqa: E402

PROMPTS = ["12+34=", "7+58=", "90+9="]
# Past one KV-cache block (128 tokens on the CPU): the prefix cache then holds whole blocks.
LONG = "".join(f"{i % 90 + 10}+{(7 * i) % 90 + 10}=" for i in range(40))
SAMPLE = SamplingParams(max_new_tokens=6, temperature=1.0)


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    return long_context_model(tmp_path_factory.mktemp("model"))


@pytest.fixture(scope="module")
def sampler(model_dir):
    s = VLLMSampler(str(model_dir), dtype="fp32", enforce_eager=True, max_model_len=512)
    yield s
    s.close()


@pytest.fixture
def model(model_dir):
    return transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()


def test_logprobs_follow_pushed_weights_and_only_them(sampler, model):
    # The engine's start: the checkpoint itself.
    sampler.update_weights(model)
    assert max_logprob_gap(model, sampler.sample(PROMPTS, 4, SAMPLE), 1.0) < 5e-4

    # New weights, not pushed: the engine still samples from the old ones.
    perturb(model, seed=1)
    assert max_logprob_gap(model, sampler.sample(PROMPTS, 4, SAMPLE), 1.0) > 0.05

    version = sampler.version
    sampler.update_weights(model)
    assert sampler.version == version + 1
    comp = sampler.sample(PROMPTS, 4, SAMPLE)
    assert max_logprob_gap(model, comp, 1.0) < 5e-4
    # Grouped by prompt, as HFSampler: n rows per prompt, prompt ids without specials.
    tok = transformers.AutoTokenizer.from_pretrained(DEMO)
    expected = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS for _ in range(4)]
    assert comp.prompt_ids == expected and comp.n == 4 and len(comp) == 12
    assert all(1 <= len(c) <= SAMPLE.max_new_tokens for c in comp.completion_ids)


def test_temperature_is_in_the_logprobs(sampler, model):
    sampler.update_weights(model)
    hot = SamplingParams(max_new_tokens=6, temperature=0.7)
    assert max_logprob_gap(model, sampler.sample(PROMPTS, 2, hot), 0.7) < 5e-4
    assert max_logprob_gap(model, sampler.sample(PROMPTS, 2, hot), 1.0) > 1e-2


def test_prefix_cache_is_dropped_after_a_push(sampler, model):
    sampler.update_weights(model)
    sampler.sample([LONG], 2, SAMPLE)  # the long prompt's blocks now cached (old weights)
    perturb(model, seed=2)
    sampler.update_weights(model)
    assert max_logprob_gap(model, sampler.sample([LONG], 2, SAMPLE), 1.0) < 5e-4


def test_lora_pushes_merged_weights(sampler, model):
    pytest.importorskip("peft")
    from grpo_fast.train.modeling import LoraOptions, add_lora

    targets = ("q_proj", "v_proj", "down_proj")
    lora = add_lora(copy.deepcopy(model), LoraOptions(r=4, alpha=8, target_modules=targets))
    with torch.no_grad():  # B starts at 0 (no change): make the adapters matter
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    sampler.update_weights(lora)
    comp = sampler.sample(PROMPTS, 4, SAMPLE)
    assert max_logprob_gap(lora, comp, 1.0) < 5e-4
    assert max_logprob_gap(model, comp, 1.0) > 0.05  # the adapters are in


def test_greedy_with_several_samples_is_refused_before_the_engine(sampler):
    with pytest.raises(InvalidInputError, match="greedily .*only with n=1"):
        sampler.sample(PROMPTS, 4, SamplingParams(max_new_tokens=4, temperature=0.0))
    greedy = sampler.sample(PROMPTS, 1, SamplingParams(max_new_tokens=4, temperature=0.0))
    assert len(greedy) == 3


def test_a_model_vllm_cannot_load_is_named(tmp_path):
    (tmp_path / "weights.bin").write_bytes(b"not a model")
    with pytest.raises(InvalidInputError, match="config.json"):
        VLLMSampler(str(tmp_path), dtype="fp32")


def train(tmp_path, *args):
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "grpo_fast", "train", "--sampler", "vllm", "--output-dir"]
    cmd += [str(run), "--max-steps", "3", "--prompts-per-step", "4", "--num-generations", "4"]
    cmd += ["--eval-every", "0", "--eval-size", "16", "--no-plot", "--no-progress", *args]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    return read_metrics(run)


def test_training_with_vllm_sampler_has_no_mismatch(tmp_path):
    """The demo through the command line: the engine follows every step, so the
    sampler-mismatch KL stays at rounding level."""
    rows = [m for m in train(tmp_path) if "mismatch_kl" in m]
    assert len(rows) == 3
    assert max(m["mismatch_kl"] for m in rows) < 1e-6
    assert rows[-1]["step"] == 3


def test_training_without_pushes_shows_the_mismatch(tmp_path, sampler, model_dir):
    """A training run on the module's engine with the push switched off after the
    first one: the engine keeps the first weights, and the trainer measures the gap
    (the reward, the completion's length, moves the random model at once)."""
    from grpo_fast.train.trainer import Trainer, TrainerConfig

    cfg = TrainerConfig(
        model=str(model_dir),
        sampler="vllm",
        output_dir=str(tmp_path / "run"),
        max_steps=4,
        prompts_per_step=4,
        num_generations=4,
        max_new_tokens=6,
        eval_file=None,
        learning_rate=1e-2,
        progress=False,
        plot=False,
    )
    by_length = lambda completions, **_: [float(len(c)) for c in completions]  # noqa: E731
    trainer = Trainer(cfg, sampler=sampler, rewards=[by_length])
    sampler.update_weights(trainer.model)  # the engine starts where the trainer does
    sampler.update_weights = lambda model: None  # then the push is off
    try:
        history = trainer.train()
    finally:
        del sampler.update_weights
    kl = [m["mismatch_kl"] for m in history if "mismatch_kl" in m]
    assert len(kl) == 4 and kl[0] < 1e-6 and kl[-1] > 1e-3
