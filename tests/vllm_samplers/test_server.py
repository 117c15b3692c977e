"""VLLMServerSampler (--sampler vllm-server): a vLLM OpenAI-compatible server in a child
process, sampled over HTTP on localhost, weights pushed through its development
endpoints; log-probs checked against the pushed model's own (a plain transformers
forward). One server for the module (the demo model); the last test kills it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: make test-vllm runs these")

import torch  # noqa: E402
import transformers  # noqa: E402
from vllm_helpers import DEMO, max_logprob_gap, perturb, read_metrics  # noqa: E402

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.sampling import SamplingParams  # noqa: E402
from grpo_fast.sampling.vllm_server import VLLMServerError, VLLMServerSampler  # noqa: E402

PROMPTS = ["12+34=", "7+58=", "90+9="]
SAMPLE = SamplingParams(max_new_tokens=6, temperature=1.0)
ARGS = ["--enforce-eager", "--max-model-len", "32"]


@pytest.fixture(scope="module")
def sampler(tmp_path_factory):
    log = tmp_path_factory.mktemp("server") / "server.log"
    s = VLLMServerSampler(model=str(DEMO), dtype="fp32", server_args=ARGS, server_log=str(log))
    yield s
    s.close()


@pytest.fixture
def model():
    return transformers.AutoModelForCausalLM.from_pretrained(DEMO, dtype=torch.float32).eval()


def test_samples_are_grouped_with_the_servers_logprobs(sampler, model):
    sampler.push_weights(model)
    comp = sampler.sample(PROMPTS, 4, SAMPLE)
    assert len(comp) == 12 and comp.n == 4
    tok = transformers.AutoTokenizer.from_pretrained(DEMO)
    expected = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS for _ in range(4)]
    assert comp.prompt_ids == expected
    assert comp.texts == tok.batch_decode(comp.completion_ids, skip_special_tokens=True)
    assert max_logprob_gap(model, comp, 1.0) < 5e-4


def test_pushes_reach_the_server_and_count(sampler, model):
    perturb(model, seed=1)
    assert max_logprob_gap(model, sampler.sample(PROMPTS, 4, SAMPLE), 1.0) > 0.05
    version = sampler.version
    assert sampler.push_weights(model) == version + 1 == sampler.version
    assert max_logprob_gap(model, sampler.sample(PROMPTS, 4, SAMPLE), 1.0) < 5e-4
    # A second client of the same server (--vllm-url) sees the server's version.
    other = VLLMServerSampler(sampler.url)
    assert other.version == sampler.version and other.server is None
    assert max_logprob_gap(model, other.sample(PROMPTS, 2, SAMPLE), 1.0) < 5e-4


def test_greedy_with_several_samples_is_refused_before_the_server(sampler):
    with pytest.raises(InvalidInputError, match="greedily .*only with n=1"):
        sampler.sample(PROMPTS, 4, SamplingParams(max_new_tokens=4, temperature=0.0))


def test_training_over_http_has_no_mismatch(sampler, tmp_path):
    """The demo through the command line, on this server (--vllm-url): every step's
    weights reach the server, so the sampler-mismatch KL stays at rounding level."""
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "grpo_fast", "train", "--sampler", "vllm-server"]
    cmd += ["--vllm-url", sampler.url, "--output-dir", str(run), "--max-steps", "3"]
    cmd += [
        "--prompts-per-step",
        "4",
        "--num-generations",
        "4",
        "--eval-every",
        "0",
        "--eval-size",
        "16",
    ]
    cmd += ["--no-plot", "--no-progress"]
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stderr[-3000:]
    kl = [m["mismatch_kl"] for m in read_metrics(run) if "mismatch_kl" in m]
    assert len(kl) == 3 and max(kl) < 1e-6


def test_a_crashed_server_is_reported_with_its_log(sampler):
    os.killpg(sampler.server.proc.pid, signal.SIGKILL)
    sampler.server.proc.wait(30)
    with pytest.raises(VLLMServerError, match=r"exited with code -9; its last log lines") as e:
        sampler.sample(PROMPTS, 2, SAMPLE)
    assert "Application startup complete" in str(e.value) or "INFO" in str(e.value)
