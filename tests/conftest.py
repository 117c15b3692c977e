"""Shared test builders: small trainer configs, JSONL files, tiny models.

They import torch and transformers only when used, so the numpy-only tests
run without them.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

# A test run launched where SIGINT is ignored (a background job of a shell
# without job control, some CI runners) would leave it ignored here and in
# every subprocess, as Python and the trainer rightly keep an ignored SIGINT
# ignored; the Ctrl-C tests need it delivered, so the suite restores Python's
# own handler (children started from here then get the default disposition).
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)

#: The embedded demo model and data (a 0.8M-parameter Qwen2, character tokenizer).
DATA_DIR = Path(__file__).resolve().parents[1] / "python" / "grpo_fast" / "data"

#: What a small, fast training run in a test looks like (two steps of 4 x 4).
SMALL_RUN: dict[str, Any] = dict(
    max_steps=2,
    prompts_per_step=4,
    num_generations=4,
    eval_size=16,
    eval_every=0,
    progress=False,
    plot=False,
)


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    """Write ``rows`` as JSON lines to ``path`` and return it."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.fixture
def make_config(tmp_path: Path) -> Callable[..., Any]:
    """``make_config(**overrides)``: a :class:`TrainerConfig` of :data:`SMALL_RUN` writing
    into ``tmp_path / "run"``. Tests build several trainers there, so each replaces the
    last one's run (``overwrite``) unless it resumes it."""
    from grpo_fast.train.trainer import TrainerConfig

    def make(**kw: Any) -> Any:
        replace = kw.get("resume") is None
        return TrainerConfig(
            **{"output_dir": str(tmp_path / "run"), "overwrite": replace, **SMALL_RUN, **kw}
        )

    return make


@pytest.fixture
def jsonl(tmp_path: Path) -> Callable[[str, list[dict[str, Any]]], Path]:
    """``jsonl(name, rows)``: a JSONL file in ``tmp_path``."""
    return lambda name, rows: write_jsonl(tmp_path / name, rows)


def tiny_causal_lm(architecture: str = "qwen2", *, seed: int = 0, **overrides: Any) -> Any:
    """A randomly initialised causal LM with the embedded tokenizer's vocabulary
    (``qwen2``, ``llama`` or ``gpt2``), small enough for a CPU test."""
    import torch
    import transformers

    vocab = json.loads((DATA_DIR / "tiny_adder" / "config.json").read_text())["vocab_size"]
    common = dict(vocab_size=vocab, bos_token_id=1, eos_token_id=1, pad_token_id=0)
    if architecture == "gpt2":
        config: Any = transformers.GPT2Config(
            n_embd=32, n_layer=2, n_head=2, n_positions=64, **common, **overrides
        )
    else:
        kind = {"qwen2": transformers.Qwen2Config, "llama": transformers.LlamaConfig}[architecture]
        config = kind(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=2,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=64,
            **common,
            **overrides,
        )
    torch.manual_seed(seed)
    return transformers.AutoModelForCausalLM.from_config(config).float()


@pytest.fixture
def tiny_lm() -> Callable[..., Any]:
    """``tiny_lm(architecture="qwen2", **config_overrides)``: see :func:`tiny_causal_lm`."""
    return tiny_causal_lm


def save_tiny_model(path: Path, architecture: str = "qwen2", **overrides: Any) -> Path:
    """A :func:`tiny_causal_lm` saved with the embedded tokenizer (and its chat template)
    as a transformers model directory at ``path``."""
    import shutil

    model = tiny_causal_lm(architecture, **overrides)
    model.generation_config.pad_token_id = 0
    model.save_pretrained(path)
    for f in (DATA_DIR / "tiny_adder").iterdir():
        if f.name.startswith("tokenizer") or f.name == "chat_template.jinja":
            shutil.copy(f, path / f.name)
    return path


@pytest.fixture
def tiny_model_dir(tmp_path: Path) -> Callable[..., Path]:
    """``tiny_model_dir(architecture="qwen2", **config_overrides)``: a directory holding a
    :func:`tiny_causal_lm` and the embedded tokenizer (a model that is not the demo)."""
    return lambda architecture="qwen2", **kw: save_tiny_model(
        tmp_path / f"model-{architecture}", architecture, **kw
    )
