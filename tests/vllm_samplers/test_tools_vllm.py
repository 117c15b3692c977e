"""Multi-turn tool rollouts on the vLLM samplers (grpo_fast.tools): the colocated engine
and the server continue from token ids, and every model token's log-prob is the one a
plain transformers forward gives it after exactly the tokens before it (tool tokens
included): the sequence the trainer sees is the one that was sampled."""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: make test-vllm runs these")

import torch  # noqa: E402
import transformers  # noqa: E402
from vllm_helpers import hf_logprobs  # noqa: E402

from grpo_fast.sampling import SamplingParams  # noqa: E402
from grpo_fast.tools import calc  # noqa: E402
from grpo_fast.tools.rollouts import ToolSampler  # noqa: E402
from grpo_fast.train.data import DATA_DIR  # noqa: E402

MODEL = DATA_DIR / "tiny_tool"
PROMPTS = ["23*17=", "45*67=", "12*98=", "76*54="]
SAMPLE = SamplingParams(max_new_tokens=24, temperature=1.0)


@pytest.fixture(scope="module")
def tok():
    return transformers.AutoTokenizer.from_pretrained(MODEL)


@pytest.fixture(scope="module")
def model():
    return transformers.AutoModelForCausalLM.from_pretrained(MODEL, dtype=torch.float32).eval()


def check_episodes(out, model, tok):
    called = [i for i, k in enumerate(out.episodes.tool_calls) if k]
    assert called, "the tiny tool model calls the tool in about a quarter of its samples"
    for i in range(len(out)):
        ids, mask = out.completion_ids[i], out.tool_mask[i]
        assert len(ids) == len(mask) == len(out.logprobs[i])
        ref = hf_logprobs(model, out.prompt_ids[i], ids, 1.0)
        own = torch.tensor(mask, dtype=torch.bool)
        gap = (torch.tensor(out.logprobs[i]) - ref)[own].abs().max()
        assert float(gap) < 5e-4, f"rollout {i}: {tok.decode(ids)!r}"
    for i in called:  # the tool's message follows the call, the right product after it
        tool = [t for t, m in zip(out.completion_ids[i], out.tool_mask[i], strict=True) if not m]
        assert tok.decode(tool).startswith("<tool_response>")


def test_colocated_multi_turn(model, tok):
    from grpo_fast.sampling.vllm import VLLMSampler

    with VLLMSampler(str(MODEL), dtype="fp32", enforce_eager=True, max_model_len=64) as engine:
        out = ToolSampler(engine, tok, [calc]).sample(PROMPTS, 8, SAMPLE)
    check_episodes(out, model, tok)


def test_server_multi_turn(model, tok, tmp_path):
    from grpo_fast.sampling.vllm_server import VLLMServerSampler

    args = ["--enforce-eager", "--max-model-len", "64"]
    log = str(tmp_path / "server.log")
    with VLLMServerSampler(
        model=str(MODEL), dtype="fp32", server_args=args, server_log=log
    ) as server:
        out = ToolSampler(server, tok, [calc]).sample(PROMPTS, 8, SAMPLE)
    check_episodes(out, model, tok)


def test_training_with_tools_on_the_engine_has_no_mismatch(tmp_path):
    """``grpo-fast train --task multiply --sampler vllm``: the trainer's log-probs of the
    multi-turn sequences (tool tokens masked) equal the engine's, step after step of
    pushed weights: the sampler-mismatch KL stays at rounding level."""
    import json
    import subprocess
    import sys

    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "grpo_fast", "train", "--task", "multiply", "--sampler", "vllm"]
    cmd += ["--max-steps", "3", "--eval-every", "0", "--eval-size", "16", "--no-progress"]
    cmd += ["--prompts-per-step", "2", "--sampler-correction", "tis", "-o", str(run), "--no-plot"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "rollouts that call a tool" in done.stdout
    records = [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in records if "mismatch_kl" in r]
    assert len(steps) == 3 and sum(r["tools/call_frequency"] for r in steps) > 0
    assert max(r["mismatch_kl"] for r in steps) < 1e-6
