"""Models beyond the demo: three architectures, hub ids, dtypes, gradient
checkpointing and LoRA (adapters, the reference as the base with adapters
disabled, checkpoints of adapters, the merged export).

References are written here or come from the libraries themselves: a
full-vocabulary log-softmax of the model's own logits (``reference_logp``),
the hand-replayed SGD update of ``test_trainer``, peft's own forward, and
``from_pretrained`` of what the export wrote.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import DATA_DIR, SMALL_RUN

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from test_trainer import reference_advantages, reference_logp, reference_loss  # noqa: E402

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.train.tracking import read_metrics  # noqa: E402
from grpo_fast.train.trainer import Trainer, TrainerConfig  # noqa: E402

ARCHITECTURES = ["qwen2", "llama", "gpt2"]
# GPT-2's configs default to dropout 0.1: a hand replay needs the same forward.
NO_DROPOUT = {"gpt2": dict(resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)}
ROWS = [{"prompt": f"{a}+{b}=", "answer": str(a + b)} for a in range(10, 20) for b in range(3)]


def has_one(completions, **columns):
    """A reward a random model earns about half the time: the completion holds a '1'."""
    return [float("1" in c) for c in completions]


def reference_has_one(texts: list[str]) -> np.ndarray:
    return np.array([1.0 if any(ch == "1" for ch in t) else 0.0 for t in texts])


def run_config(tmp_path, model, **kw):
    """A small fp32 run on a model that is not the demo (so its defaults are a real
    run's: the test states what it needs)."""
    base = dict(SMALL_RUN, model=str(model), output_dir=str(tmp_path / "run"), max_new_tokens=4)
    return TrainerConfig(**{**base, **kw})


# ---------------------------------------------------------------------- architectures
@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_a_training_step_on_each_architecture_is_the_hand_computed_one(
    tmp_path, tiny_model_dir, architecture
):
    """One SGD step of the trainer (shared-prompt forward) equals the GRPO update
    replayed here one unpadded sequence at a time."""
    lr = 0.05
    cfg = run_config(
        tmp_path,
        tiny_model_dir(architecture, **NO_DROPOUT.get(architecture, {})),
        dtype="fp32",
        gradient_checkpointing=False,
        optimizer="sgd",
        learning_rate=lr,
        max_grad_norm=0.0,
        seed=1,
    )
    trainer = Trainer(cfg, train_rows=ROWS, eval_rows=ROWS[:2], rewards=[has_one])
    start = copy.deepcopy(trainer.model)
    trainer.step()
    comp = trainer.last_batch.completions
    rewards = reference_has_one(comp.texts)
    np.testing.assert_array_equal(trainer.last_batch.rewards, rewards)
    assert 0 < rewards.mean() < 1, "the seed should give a batch with signal"
    adv = reference_advantages(rewards, 4)

    model = copy.deepcopy(start).train()
    logp = reference_logp(model, comp.prompt_ids, comp.completion_ids)
    loss = reference_loss(logp, [lp.detach() for lp in logp], logp, adv)
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
    assert moved > 1e-5


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_a_lora_step_with_real_run_defaults_on_each_architecture(
    tmp_path, tiny_model_dir, architecture
):
    """bf16 autocast, gradient checkpointing (a real run's defaults) and LoRA on every
    linear layer (GPT-2's Conv1D too): only the adapters move, and the KL to the
    reference (the base, adapters off) starts at 0."""
    cfg = run_config(
        tmp_path,
        tiny_model_dir(architecture, **NO_DROPOUT.get(architecture, {})),
        lora_r=4,
        lora_target_modules=("all-linear",),
        learning_rate=1e-2,
        beta=0.1,
        seed=1,
    )
    assert (cfg.dtype, cfg.gradient_checkpointing) == ("bf16", True)
    trainer = Trainer(cfg, train_rows=ROWS, eval_rows=ROWS[:2], rewards=[has_one])
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    first = trainer.step()
    assert first["kl"] == pytest.approx(0.0, abs=1e-6)  # adapters start at zero (lora_B = 0)
    trainer.step()
    for n, p in trainer.model.named_parameters():
        assert torch.equal(p, before[n]) != ("lora_" in n), n


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("lora", [False, True])
def test_sampling_with_the_shared_prompt_cache_equals_one_prompt_at_a_time(
    tiny_lm, architecture, lora
):
    """HFSampler's shared prompt cache (also under LoRA adapters) samples exactly what
    generation without it does, and greedy decoding equals unpadded prompts one by one."""
    from grpo_fast.sampling import HFSampler, SamplingParams
    from grpo_fast.train.modeling import LoraOptions, load_tokenizer, prepare_model

    tok = load_tokenizer(str(DATA_DIR / "tiny_adder"))
    model = tiny_lm(architecture)
    if lora:
        model = prepare_model(model, lora=LoraOptions(r=4, target_modules=("all-linear",)))
        with torch.no_grad():  # non-zero adapters, so that they change the samples
            for name, p in model.named_parameters():
                if "lora_B" in name:
                    p.normal_(0, 0.5)
    prompts = ["12+34=", "7+8=", "99+1="]
    shared = HFSampler(model, tok)
    unshared = HFSampler(model, tok)
    unshared._shared_prompt_cache = lambda model, n, enc: {}  # type: ignore[method-assign]
    params = SamplingParams(max_new_tokens=6, temperature=1.0)
    torch.manual_seed(0)
    a = shared.sample(prompts, 3, params).completion_ids
    torch.manual_seed(0)
    b = unshared.sample(prompts, 3, params).completion_ids
    assert a == b
    greedy = SamplingParams(max_new_tokens=6, temperature=0.0)
    one_by_one = [shared.sample([p], 1, greedy).completion_ids[0] for p in prompts]
    assert shared.sample(prompts, 2, greedy).completion_ids == [
        c for c in one_by_one for _ in range(2)
    ]


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_lora_forward_and_reference_without_a_copy(tiny_lm, architecture):
    """Under LoRA, the shared-prompt and full forwards equal the peft model's own logits;
    the reference (adapters disabled) equals the base model before wrapping."""
    from grpo_fast.train.forward import completion_logprobs, pack
    from grpo_fast.train.modeling import (
        AdaptersDisabled,
        LoraOptions,
        prepare_model,
        reference_model,
    )

    base = tiny_lm(architecture).eval()
    before = copy.deepcopy(base)
    model = prepare_model(base, lora=LoraOptions(r=4)).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "lora_B" in name:
                p.normal_(0, 0.5)
    ref = reference_model(model)
    assert isinstance(ref, AdaptersDisabled) and ref.model is model  # no second copy
    rng = np.random.default_rng(0)
    G = 3
    prompt_ids = [p for p in (rng.integers(2, 17, 4).tolist(), [5, 6]) for _ in range(G)]
    completion_ids = [rng.integers(2, 17, n).tolist() for n in (3, 1, 5, 2, 4, 4)]
    packed = pack(prompt_ids, completion_ids, 0)
    mask = packed.completion_mask
    with torch.no_grad():
        shared, _ = completion_logprobs(model, packed, group_size=G)
        full, _ = completion_logprobs(model, packed, share_prompt_prefix=False)
        ref_shared, _ = completion_logprobs(ref, packed, group_size=G)
        want = reference_logp(model, prompt_ids, completion_ids)
        want_ref = reference_logp(before, prompt_ids, completion_ids)
    for i in range(len(want)):
        for got in (shared, full):
            np.testing.assert_allclose(got[i][mask[i]], want[i], rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(ref_shared[i][mask[i]], want_ref[i], rtol=1e-4, atol=1e-5)
        assert not np.allclose(want[i], want_ref[i], atol=1e-3), "the adapters should matter"
    assert model.training is False  # the reference restored the mode it found


# ---------------------------------------------------------------------- memory options
def test_gradient_checkpointing_gives_the_same_update(make_config, monkeypatch):
    """Recomputing activations changes nothing but memory: same weights after a step. The
    loss forward falls back from the shared prompt cache (the layers drop it); sampling,
    without gradients, still shares it."""
    from grpo_fast.sampling import hf
    from grpo_fast.train import forward, modeling

    plain = Trainer(make_config(seed=3, optimizer="sgd", learning_rate=0.05))
    plain.step()
    calls = []
    original = forward.prefill_groups

    def spy(*args, **kwargs):
        calls.append(torch.is_grad_enabled())
        return original(*args, **kwargs)

    monkeypatch.setattr(forward, "prefill_groups", spy)
    monkeypatch.setattr(hf, "prefill_groups", spy)
    ckpt = Trainer(
        make_config(seed=3, optimizer="sgd", learning_rate=0.05, gradient_checkpointing=True)
    )
    assert modeling.checkpointing(ckpt.model)
    ckpt.step()
    assert calls and not any(calls), "with gradients, the shared prompt cache must not be used"
    for (name, a), b in zip(plain.model.named_parameters(), ckpt.model.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7, msg=name)


@pytest.mark.parametrize("dtype", ["bf16", "fp16"])
def test_16_bit_runs_keep_fp32_master_weights_and_autocast(make_config, dtype):
    from grpo_fast.train import modeling

    trainer = Trainer(make_config(dtype=dtype, beta=0.05, seed=1))
    start = {k: v.clone() for k, v in trainer.model.state_dict().items()}
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    want = modeling.DTYPES[dtype]
    assert all(p.dtype == want for p in trainer.ref_model.parameters())
    seen = []
    hook = trainer.model.model.layers[0].mlp.down_proj.register_forward_hook(
        lambda m, i, o: seen.append(o.dtype)
    )
    record = trainer.step()
    hook.remove()
    assert seen and set(seen) == {want}, "the forward should run under autocast"
    assert all(p.dtype == torch.float32 for p in trainer.model.parameters())
    assert np.isfinite(record["loss"]) and np.isfinite(record["kl"])
    moved = max(float((v - start[k]).abs().max()) for k, v in trainer.model.state_dict().items())
    # fp16 may skip its first steps while the loss scale finds its level; bf16 never does.
    assert moved > 0 or dtype == "fp16"
    assert (trainer.precision.scaler.is_enabled()) == (dtype == "fp16")


def test_lora_with_a_16_bit_base_trains_only_the_fp32_adapters(make_config):
    trainer = Trainer(make_config(dtype="bf16", lora_r=4, lora_alpha=8, beta=0.1, seed=3))
    trainable = {n for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    dtypes = {n: p.dtype for n, p in trainer.model.named_parameters()}
    assert {dtypes[n] for n in trainable} == {torch.float32}
    assert {d for n, d in dtypes.items() if n not in trainable} == {torch.bfloat16}
    frozen = {n: p.clone() for n, p in trainer.model.named_parameters() if n not in trainable}
    adapters = {n: p.clone() for n, p in trainer.model.named_parameters() if n in trainable}
    for _ in range(2):
        trainer.step()
    for n, p in trainer.model.named_parameters():
        if n in frozen:
            assert torch.equal(p, frozen[n]), n
    assert any(
        not torch.equal(p, adapters[n])
        for n, p in trainer.model.named_parameters()
        if n in adapters
    )


def test_lora_checkpoints_hold_adapters_resume_exactly_and_export_merges(tmp_path, capsys):
    from grpo_fast.cli import main

    common = dict(
        SMALL_RUN,
        lora_r=4,
        lora_alpha=16,
        lora_target_modules=("q_proj,v_proj", "o_proj"),
        learning_rate=1e-3,
        beta=0.05,
        eval_every=2,
        save_every=2,
        seed=4,
    )
    whole = tmp_path / "whole"
    Trainer(TrainerConfig(output_dir=str(whole), **{**common, "max_steps": 4})).train()
    split = tmp_path / "split"
    Trainer(TrainerConfig(output_dir=str(split), **{**common, "max_steps": 2})).train()
    ckpt = split / "checkpoints" / "step-0000002"
    assert (ckpt / "adapter_model.safetensors").is_file()
    assert not (ckpt / "model.safetensors").exists()
    targets = json.loads((ckpt / "adapter_config.json").read_text())["target_modules"]
    assert sorted(targets) == ["o_proj", "q_proj", "v_proj"]
    torch.manual_seed(99)
    resumed = Trainer(
        TrainerConfig(output_dir=str(split), resume="auto", **{**common, "max_steps": 4})
    )
    resumed.train()

    def strip(rs):
        return [
            {k: v for k, v in r.items() if not k.startswith(("time_", "tokens_per_s"))} for r in rs
        ]  # noqa: E731

    assert strip(read_metrics(whole / "metrics.jsonl")) == strip(
        read_metrics(split / "metrics.jsonl")
    )

    # The merged export is a plain model whose logits are the adapted model's.
    final = split / "checkpoints" / "step-0000004"
    out = tmp_path / "merged"
    assert main(["export", str(final), str(out)]) == 0
    assert "wrote" in capsys.readouterr().out
    from transformers import AutoModelForCausalLM

    merged = AutoModelForCausalLM.from_pretrained(out).eval()
    assert not (out / "adapter_config.json").exists()
    ids = torch.tensor([[3, 4, 12, 5, 6, 15]])
    policy = resumed.model.eval()
    with torch.no_grad():
        want = policy(input_ids=ids).logits
        base = AutoModelForCausalLM.from_pretrained(DATA_DIR / "tiny_adder")(input_ids=ids).logits
        got = merged(input_ids=ids).logits
    torch.testing.assert_close(got, want, rtol=1e-4, atol=1e-4)
    assert not torch.allclose(want, base, atol=1e-4), "the adapters should have moved"
    # eval reads the merged directory and the adapter checkpoint itself.
    for model in (out, final):
        assert main(["eval", "--model", str(model), "-n", "2", "--limit", "4"]) == 0
        assert json.loads(capsys.readouterr().out.splitlines()[-1])["prompts"] == 4
    # Bad input: a directory that is no checkpoint, an output that already holds files.
    assert main(["export", str(tmp_path), str(tmp_path / "x")]) == 2
    assert main(["export", str(final), str(out)]) == 2
    err = capsys.readouterr().err
    assert "is not a checkpoint" in err and "not empty" in err


def test_a_full_checkpoint_does_not_resume_a_lora_run(tmp_path, make_config):
    Trainer(make_config(max_steps=1)).train()
    ckpt = tmp_path / "run" / "checkpoints" / "step-0000001"
    # The option check refuses first (lora_r differs); forced past it, the weights do.
    with pytest.raises(InvalidInputError, match=r"lora_r: 0 -> 2.*--resume-force"):
        Trainer(make_config(max_steps=2, lora_r=2, resume=str(ckpt)))
    with pytest.raises(InvalidInputError, match="no LoRA adapters"):
        Trainer(make_config(max_steps=2, lora_r=2, resume=str(ckpt), resume_force=True))
    with pytest.raises(InvalidInputError, match="holds LoRA adapters"):
        make_config(model=str(_lora_checkpoint(tmp_path, make_config))).validate()


def _lora_checkpoint(tmp_path, make_config):
    cfg = make_config(max_steps=1, lora_r=2, output_dir=str(tmp_path / "lora"))
    Trainer(cfg).train()
    return tmp_path / "lora" / "checkpoints" / "step-0000001"


# ---------------------------------------------------------------------- loading
def test_an_uncached_hub_id_offline_says_how_to_use_a_local_copy(tmp_path, monkeypatch, jsonl):
    name = "grpo-fast-tests/not-a-cached-model"
    train = jsonl("t.jsonl", ROWS)
    # The command line, as a user runs it: one line on stderr, exit 2.
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf")}
    proc = subprocess.run(
        [sys.executable, "-m", "grpo_fast", "train", "--model", name, "--train-file", str(train)]
        + ["--output-dir", str(tmp_path / "o"), "--no-progress"],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
    )
    assert proc.returncode == 2, proc.stderr
    error = [line for line in proc.stderr.splitlines() if line.startswith("grpo-fast train:")]
    assert len(error) == 1 and "Traceback" not in proc.stderr, proc.stderr
    assert name in error[0] and "cannot be reached" in error[0] and "--model DIR" in error[0]
    # The same from Python: an InvalidInputError, not an OSError.
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(InvalidInputError, match=r"cannot be reached .* \(--model DIR\)"):
        Trainer(TrainerConfig(model=name, train_file=str(train), max_new_tokens=4))


def test_a_local_model_is_recorded_by_its_absolute_path(tiny_model_dir, monkeypatch):
    """LoRA adapters name their base as it was loaded: from another working directory
    (export, eval) a relative name would not be found."""
    from grpo_fast.train.modeling import LoraOptions, load_model, prepare_model

    path = tiny_model_dir("llama")
    monkeypatch.chdir(path.parent)
    model = prepare_model(load_model(path.name), lora=LoraOptions(r=2))
    assert model.peft_config["default"].base_model_name_or_path == str(path.resolve())


def test_model_names_are_checked_before_loading(tmp_path):
    from grpo_fast.train.modeling import check_model_name

    check_model_name(str(DATA_DIR / "tiny_adder"))
    check_model_name("Qwen/Qwen2.5-0.5B-Instruct")  # a hub id: known only when loaded
    for name, message in [
        (str(tmp_path / "missing"), "does not exist"),
        ("./nope", "does not exist"),
        (str(tmp_path), "not readable"),
        (str(DATA_DIR / "addition_eval.jsonl"), "is a file"),
    ]:
        with pytest.raises(InvalidInputError, match=message):
            check_model_name(name)


def test_cuda_without_a_gpu_is_a_clear_error(tmp_path, capsys):
    if torch.cuda.is_available():
        pytest.skip("a GPU is here")
    from grpo_fast.cli import main

    assert main(["train", "--device", "cuda", "--output-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no CUDA GPU is available" in err and "Traceback" not in err
    assert main(["train", "--device", "tpu9", "--output-dir", str(tmp_path)]) == 2
    assert "device must be" in capsys.readouterr().err


def _bf16_reference(model):
    """A bf16 model from ``model`` as a user would make it (``.to``), with the fp32
    buffers (rotary frequencies) put back: what sampling from a 16-bit copy means."""
    ref = copy.deepcopy(model).to(torch.bfloat16).eval()
    buffers = dict(model.named_buffers())
    for name, b in ref.named_buffers():
        b.data = buffers[name].data.clone()
    return ref


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_sampling_from_a_16_bit_copy_follows_the_models_updates(tiny_lm, architecture):
    """HFSampler(weights_dtype=bf16) samples what a bf16 model made from the current
    weights samples, before and after the weights change (update_weights), and leaves
    the fp32 model, its gradients included, as it was."""
    from grpo_fast.sampling import HFSampler, SamplingParams
    from grpo_fast.train.modeling import load_tokenizer

    tok = load_tokenizer(str(DATA_DIR / "tiny_adder"))
    model = tiny_lm(architecture)
    for p in model.parameters():
        p.grad = torch.ones_like(p)
    sampler = HFSampler(model, tok, weights_dtype=torch.bfloat16)
    prompts = ["12+34=", "7+8="]
    params = SamplingParams(max_new_tokens=6, temperature=1.0)
    for _ in range(2):
        want = _bf16_reference(model)
        torch.manual_seed(0)
        got = sampler.sample(prompts, 3, params)
        torch.manual_seed(0)
        ref = HFSampler(want, tok).sample(prompts, 3, params)
        assert got.completion_ids == ref.completion_ids
        assert np.allclose(np.concatenate(got.logprobs), np.concatenate(ref.logprobs))
        assert all(p.dtype == torch.float32 for p in model.parameters())
        assert all(torch.equal(p.grad, torch.ones_like(p)) for p in model.parameters())
        with torch.no_grad():  # an update large enough to change the samples
            for p in model.parameters():
                p.add_(torch.randn_like(p) * 0.5)
        sampler.update_weights(model)
    copied = dict(sampler._copy.named_parameters())
    for name, p in model.named_parameters():
        assert copied[name].dtype == torch.bfloat16
        assert torch.equal(copied[name], p.detach().to(torch.bfloat16)), name


@pytest.mark.parametrize(
    ("options", "copied"),
    [
        ({"dtype": "bf16"}, True),
        ({"dtype": "bf16", "hf_sampling_copy": False}, False),
        ({"dtype": "fp32"}, False),
        ({"dtype": "bf16", "lora_r": 4}, False),  # the frozen base is bf16 already
    ],
)
def test_the_trainer_samples_from_a_16_bit_copy_only_where_it_pays(
    tiny_model_dir, make_config, options, copied
):
    """A bf16 run with fp32 weights samples from a bf16 copy refreshed after each step;
    fp32 runs, LoRA (16-bit base) and --no-hf-sampling-copy sample from the model."""
    model = str(tiny_model_dir("llama"))
    trainer = Trainer(make_config(model=model, max_new_tokens=4, **options))
    assert trainer.sampler.weights_dtype == (torch.bfloat16 if copied else None)
    trainer.step()
    if copied:
        copy_ = dict(trainer.sampler._copy.named_parameters())
        for name, p in trainer.model.named_parameters():
            assert torch.equal(copy_[name], p.detach().to(torch.bfloat16)), name
