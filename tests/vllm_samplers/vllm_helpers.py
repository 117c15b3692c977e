"""Helpers of the vLLM samplers' tests. The tests run in .venv-vllm (``make test-vllm``: vLLM's CPU
build) and skip wherever vLLM cannot be imported (the plain ``make test-python``).

One engine per module (starting one dominates); tiny models, eager mode, 1 GiB of
KV cache (``VLLM_CPU_KVCACHE_SPACE``, set by the Makefile).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

DATA_DIR = Path(__file__).resolve().parents[2] / "python" / "grpo_fast" / "data"
#: The embedded demo model: 4 layers of 128, 17 characters, tied embeddings, 32 positions.
DEMO = DATA_DIR / "tiny_adder"


def long_context_model(path: Path, positions: int = 512) -> Path:
    """The demo model's architecture and tokenizer with ``positions`` positions and
    random weights (seed 0): long prompts fill whole KV-cache blocks (128 tokens on the
    CPU), which the prefix-cache tests need."""
    import torch
    import transformers

    config = transformers.AutoConfig.from_pretrained(DEMO)
    config.max_position_embeddings = positions
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(path)
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        if (DEMO / name).exists():
            shutil.copy(DEMO / name, path / name)
    return path


def hf_logprobs(model: Any, prompt_ids: list[int], completion_ids: list[int], temperature: float):
    """log_softmax(logits / T) of each completion token under ``model``: the reference."""
    import torch

    ids = torch.tensor([prompt_ids + completion_ids])
    with torch.no_grad():
        logits = model(ids).logits[0, len(prompt_ids) - 1 : -1].float() / temperature
    lp = torch.log_softmax(logits, -1)
    return lp.gather(-1, torch.tensor(completion_ids)[:, None])[:, 0]


def max_logprob_gap(model: Any, comp: Any, temperature: float) -> float:
    """The largest |sampler log-prob - model log-prob| over every token of ``comp``."""
    gaps = []
    import torch

    for p, c, lp in zip(comp.prompt_ids, comp.completion_ids, comp.logprobs, strict=True):
        ref = hf_logprobs(model, p, c, temperature)
        gaps.append(float((torch.tensor(lp) - ref).abs().max()))
    return max(gaps)


def perturb(model: Any, seed: int, scale: float = 0.05) -> None:
    """Add N(0, scale) noise to every weight (a stand-in for training steps)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * scale)


def read_metrics(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "metrics.jsonl").read_text().splitlines()]
