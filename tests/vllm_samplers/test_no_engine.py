"""What the vLLM samplers check and compute without an engine (these run in both venvs):
the errors for vLLM missing, an unreachable server and options vLLM refuses; the
pushed weights (LoRA merged, tied weights once) against peft's own merge."""

from __future__ import annotations

import importlib.util
import socket

import pytest

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling import SamplingParams
from grpo_fast.sampling.vllm import check_vllm_params, engine_dtype, vllm_sampling_kwargs

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="vLLM is installed here")
def test_vllm_missing_names_the_extra():
    from grpo_fast.sampling import VLLMSampler
    from grpo_fast.sampling.vllm_server import VLLMServer

    with pytest.raises(InvalidInputError, match=r"pip install 'grpo-fast\[vllm\]'"):
        VLLMSampler("any-model")
    with pytest.raises(InvalidInputError, match=r"grpo-fast\[vllm\].*--vllm-url"):
        VLLMServer("any-model")


def test_greedy_with_several_samples_is_refused():
    greedy = SamplingParams(max_new_tokens=4, temperature=0.0)
    with pytest.raises(InvalidInputError, match="greedily .*only with n=1, got n=8"):
        check_vllm_params(greedy, 8)
    check_vllm_params(greedy, 1)
    check_vllm_params(SamplingParams(temperature=0.5), 8)


def test_request_options_leave_nothing_to_the_models_defaults():
    kw = vllm_sampling_kwargs(SamplingParams(max_new_tokens=7, top_p=0.9, top_k=0), 4)
    assert kw["n"] == 4 and kw["max_tokens"] == 7 and kw["top_p"] == 0.9
    assert kw["top_k"] == -1 and kw["repetition_penalty"] == 1.0 and kw["min_p"] == 0.0


def test_engine_dtype_follows_the_trainers_names():
    assert [engine_dtype(d) for d in ("fp32", "bf16", "fp16", "auto")] == [
        "float32",
        "bfloat16",
        "float16",
        "auto",
    ]
    with pytest.raises(InvalidInputError, match="vLLM dtype must be one of"):
        engine_dtype("int8")


def test_a_url_that_does_not_answer_is_named():
    from grpo_fast.sampling.vllm_server import VLLMServerSampler

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    with pytest.raises(InvalidInputError, match=rf"no vLLM server answers at {url}"):
        VLLMServerSampler(url)
    with pytest.raises(InvalidInputError, match="must start with http"):
        VLLMServerSampler("localhost:8000")


def test_pushed_weights_are_peft_merged_and_tied_once(tmp_path):
    torch = pytest.importorskip("torch")
    pytest.importorskip("peft")
    safetensors = pytest.importorskip("safetensors.torch")
    import copy

    import transformers

    from grpo_fast.sampling.vllm import save_weights

    config = transformers.Qwen2Config(
        vocab_size=32,
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    base = transformers.Qwen2ForCausalLM(config)
    from grpo_fast.train.modeling import LoraOptions, add_lora

    lora = add_lora(copy.deepcopy(base), LoraOptions(r=2, alpha=4, target_modules=("q_proj",)))
    with torch.no_grad():
        for name, p in lora.named_parameters():
            if "lora_B" in name:
                p.normal_()
    before = {k: v.clone() for k, v in lora.state_dict().items()}
    size = save_weights(lora, tmp_path / "w.safetensors", torch.bfloat16)
    pushed = safetensors.load_file(tmp_path / "w.safetensors")
    assert size == (tmp_path / "w.safetensors").stat().st_size
    merged = copy.deepcopy(lora).merge_and_unload().state_dict()
    # Checkpoint names, the tied head once (as the embedding), every tensor in bf16.
    assert set(pushed) == set(merged) - {"lm_head.weight"}
    assert all(t.dtype == torch.bfloat16 for t in pushed.values())
    for name, t in pushed.items():
        torch.testing.assert_close(t, merged[name].to(torch.bfloat16))
    q = "model.layers.0.self_attn.q_proj.weight"
    assert not torch.equal(pushed[q], base.state_dict()[q].to(torch.bfloat16))  # adapters in
    after = lora.state_dict()  # the model itself is not touched (no merge in place)
    assert set(after) == set(before) and all(torch.equal(after[k], before[k]) for k in before)


def test_trainer_options_for_vllm_are_checked_before_anything_loads():
    pytest.importorskip("torch")
    from grpo_fast.train.config import TrainerConfig, sampler_correction

    with pytest.raises(InvalidInputError, match="--vllm-url is for --sampler vllm-server"):
        TrainerConfig(sampler="vllm", vllm_url="http://127.0.0.1:8000").validate()
    assert sampler_correction(TrainerConfig(sampler="vllm-server")) == "tis"
    assert sampler_correction(TrainerConfig(sampler="hf")) == "none"
    if importlib.util.find_spec("peft") is not None:  # LoRA: the merged weights are pushed
        TrainerConfig(sampler="vllm", lora_r=8).validate()


def test_a_samplers_weight_folder_goes_with_it():
    # The folder a sampler makes for pushed weights is removed by close(), when the
    # sampler is collected, and at the exit of a script that never closed it (each such
    # run left an empty folder in /dev/shm); a folder the caller gave is kept.
    import gc
    import subprocess
    import sys
    import tempfile
    from pathlib import Path

    from grpo_fast.sampling.vllm import weights_folder

    class Owner:
        pass

    owner = Owner()
    path, remove = weights_folder(owner, None)
    assert path.is_dir()
    (path / "weights.safetensors").write_bytes(b"x")
    remove()
    assert not path.exists()

    owner = Owner()
    path, _ = weights_folder(owner, None)
    del owner
    gc.collect()
    assert not path.exists()

    script = (
        "from grpo_fast.sampling.vllm import weights_folder\n"
        "class Owner: pass\n"
        "keep = Owner()\n"
        "print(weights_folder(keep, None)[0])\n"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    made = Path(out.stdout.strip())
    assert made.name.startswith("grpo_fast_vllm_") and not made.exists()

    with tempfile.TemporaryDirectory() as given:
        owner = Owner()
        path, remove = weights_folder(owner, given)
        assert remove is None and path == Path(given)
        del owner
        gc.collect()
        assert Path(given).is_dir()
