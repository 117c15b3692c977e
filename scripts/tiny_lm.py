"""What the scripts that build the embedded tiny models share.

``make_demo_model.py`` (``tiny_adder``), ``make_chain_model.py`` (``tiny_chain``) and
``make_tool_model.py`` (``tiny_tool``) each build a character-level tokenizer, a
0.8M-parameter causal LM and a teacher-forced warm start; they differ in the
vocabulary, the architecture and the examples they teach. A script imports this
module by its plain name (the script's folder is on ``sys.path`` when it runs)::

    tokenizer = char_tokenizer(list("0123456789+= "), chat_template=TEMPLATE)
    model = tiny_model("qwen2", len(tokenizer), seed, max_positions=32)
    supervised_step(model, opt, tokenizer, ["2+3="], ["5" + tokenizer.eos_token])
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

import torch

#: Token 0 pads (and stands for an unknown character); token 1 ends an answer.
SPECIALS = ["<pad>", "<eos>"]


def char_tokenizer(
    chars: Sequence[str], *, pieces: Sequence[str] = (), chat_template: str | None = None
):
    """One token per character of ``chars`` and one per fixed string of ``pieces``
    (a piece is matched before its characters), after :data:`SPECIALS`; pads on the left."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {tok: i for i, tok in enumerate([*SPECIALS, *pieces, *chars])}
    pattern = "|".join([*(re.escape(p) for p in pieces), "."])
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<pad>"))
    tok.pre_tokenizer = pre_tokenizers.Split(Regex(pattern), behavior="isolated")
    tok.decoder = decoders.Fuse()
    out = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", eos_token="<eos>", padding_side="left"
    )
    if chat_template is not None:
        out.chat_template = chat_template
    return out


def tiny_model(architecture: str, vocab_size: int, seed: int, *, max_positions: int):
    """A randomly initialised 4-layer, 128-wide ``qwen2`` or ``llama`` causal LM (seeded),
    tied embeddings, ``<pad>`` 0 and ``<eos>`` 1 as :func:`char_tokenizer` numbers them."""
    if architecture == "qwen2":
        from transformers import Qwen2Config as Config
        from transformers import Qwen2ForCausalLM as Model
    elif architecture == "llama":
        from transformers import LlamaConfig as Config
        from transformers import LlamaForCausalLM as Model
    else:
        raise ValueError(f"architecture is {architecture!r}; expected 'qwen2' or 'llama'")
    config = Config(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=384,
        num_hidden_layers=4,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=max_positions,
        tie_word_embeddings=True,
        pad_token_id=0,
        eos_token_id=1,
        bos_token_id=1,
    )
    torch.manual_seed(seed)
    return Model(config)


def teacher_forced_step(model, opt, examples: list[tuple[list[int], list[int]]]) -> float:
    """One optimizer step of teacher forcing on ``(ids, labels)`` pairs of equal length,
    padded on the right; a label of -100 is not learned. Returns the loss."""
    width = max(len(ids) for ids, _ in examples)
    ids = torch.zeros(len(examples), width, dtype=torch.long)
    labels = torch.full((len(examples), width), -100, dtype=torch.long)
    attn = torch.zeros(len(examples), width, dtype=torch.long)
    for i, (x, y) in enumerate(examples):
        ids[i, : len(x)] = torch.tensor(x)
        labels[i, : len(y)] = torch.tensor(y)
        attn[i, : len(x)] = 1
    loss = model(input_ids=ids, attention_mask=attn, labels=labels).loss
    opt.zero_grad()
    loss.backward()
    opt.step()
    return loss.item()


def supervised_step(model, opt, tokenizer, prompts: list[str], answers: list[str]) -> float:
    """One step of :func:`teacher_forced_step` on ``prompt + answer``, the loss on the answer."""
    p = tokenizer(prompts, add_special_tokens=False)["input_ids"]
    a = tokenizer(answers, add_special_tokens=False)["input_ids"]
    examples = [(x + y, [-100] * len(x) + y) for x, y in zip(p, a, strict=True)]
    return teacher_forced_step(model, opt, examples)


def write_jsonl(path: Path, rows: list[dict]) -> None:
    """``rows`` as JSON lines (a task's train or eval split)."""
    with open(path, "w") as f:
        f.writelines(json.dumps(r) + "\n" for r in rows)


@torch.no_grad()
def greedy(model, tokenizer, prompts: list[str], max_new_tokens: int) -> list[str]:
    """Greedy completions of ``prompts`` (left-padded batch), special tokens dropped."""
    model.eval()
    enc = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    out = model.generate(
        **enc,
        max_new_tokens=max_new_tokens,
        do_sample=False,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    return tokenizer.batch_decode(out[:, enc["input_ids"].shape[1] :], skip_special_tokens=True)
