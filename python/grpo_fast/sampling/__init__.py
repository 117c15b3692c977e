"""Samplers: G completions per prompt, with their token ids and log-probs.

Backends behind one :class:`Sampler` protocol, one module each, named in
:data:`BACKENDS`:

- ``"hf"``: :class:`HFSampler` runs transformers ``generate`` on the training
  model itself (CPU or GPU), so new weights are live at once.
- ``"vllm"``: :class:`VLLMSampler` runs a vLLM engine (``n=G`` per prompt) and
  gets the trainer's weights pushed after each optimizer step. vLLM is the
  optional extra ``grpo-fast[vllm]`` and is imported only when this class is
  built.
- ``"vllm-server"``: :class:`VLLMServerSampler` asks a vLLM OpenAI-compatible
  server over HTTP (the user's, or one it starts) and pushes the weights to it.
"""

from __future__ import annotations

from grpo_fast.sampling.base import (
    Completions,
    Episodes,
    Sampler,
    SamplingParams,
    check_prompts,
    truncated,
)
from grpo_fast.sampling.hf import HFSampler
from grpo_fast.sampling.vllm import VLLMSampler
from grpo_fast.sampling.vllm_server import VLLMServerSampler

# --sampler NAME -> the class that samples with it.
BACKENDS: dict[str, type] = {
    "hf": HFSampler,
    "vllm": VLLMSampler,
    "vllm-server": VLLMServerSampler,
}

__all__ = [
    "BACKENDS",
    "Completions",
    "Episodes",
    "HFSampler",
    "Sampler",
    "SamplingParams",
    "VLLMSampler",
    "VLLMServerSampler",
    "check_prompts",
    "truncated",
]
