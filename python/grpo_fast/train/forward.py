"""The loss's forward: completions packed once, and their token log-probs.

:func:`prefill_groups` is the one implementation of the shared-prompt cache:
the ``n`` rollouts of a prompt share its tokens, so the prompt runs through
the decoder once and its key/value cache, repeated ``n`` times, serves them
all. :class:`~grpo_fast.sampling.HFSampler` uses it before ``generate``, and
:func:`completion_logprobs` (the loss's forward, with gradients) before the
completion tokens: the prompt's share of the work drops by ``n``.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Any

import torch

from grpo_fast.logprobs import token_logprobs
from grpo_fast.train.modeling import AdaptersDisabled, checkpointing, is_peft_model

__all__ = [
    "Packed",
    "cache_argument",
    "completion_hidden",
    "completion_logprobs",
    "decoder_of",
    "pack",
    "positions",
    "prefill_groups",
]


@dataclass(frozen=True)
class Packed:
    """Prompts left-padded ``[N, Lp]`` and completions right-padded ``[N, Tc]``, with masks.

    Side by side they form one row per completion, ``[pad.. prompt |
    completion ..pad]``.
    """

    prompt_ids: torch.Tensor
    prompt_mask: torch.Tensor
    completion_ids: torch.Tensor
    completion_mask: torch.Tensor  # bool

    def rows(self, rows: slice) -> Packed:
        return Packed(
            self.prompt_ids[rows],
            self.prompt_mask[rows],
            self.completion_ids[rows],
            self.completion_mask[rows],
        )


def pack(
    prompt_ids: list[list[int]],
    completion_ids: list[list[int]],
    pad_token_id: int,
    device: torch.device | str = "cpu",
) -> Packed:
    """Pad token-id lists into the tensors of :class:`Packed`."""

    def pad(rows: list[list[int]], left: bool) -> tuple[torch.Tensor, torch.Tensor]:
        width = max(1, max((len(r) for r in rows), default=1))
        ids = torch.full((len(rows), width), pad_token_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for i, r in enumerate(rows):
            if r:
                cols = slice(width - len(r), width) if left else slice(0, len(r))
                ids[i, cols] = torch.tensor(r)
                mask[i, cols] = 1
        return ids.to(device), mask.to(device)

    pid, pmask = pad(prompt_ids, left=True)
    cid, cmask = pad(completion_ids, left=False)
    return Packed(pid, pmask, cid, cmask.bool())


def decoder_of(model: Any) -> Any:
    """The transformer under the LM head (``model.model`` for Qwen2 / Llama,
    ``model.transformer`` for GPT-2; under LoRA, the adapted base model's)."""
    if is_peft_model(model):
        model = model.get_base_model()
    return getattr(model, model.base_model_prefix, None)


_CACHE_ARGUMENT: dict[type, str | None] = {}


def cache_argument(decoder: Any) -> str | None:
    """The name of the decoder's key/value-cache argument (renamed ``cache`` in transformers
    5.x), or None when it has none."""
    kind = type(decoder)
    if kind not in _CACHE_ARGUMENT:
        params = inspect.signature(decoder.forward).parameters
        _CACHE_ARGUMENT[kind] = next((k for k in ("cache", "past_key_values") if k in params), None)
    return _CACHE_ARGUMENT[kind]


def positions(mask: torch.Tensor) -> torch.Tensor:
    """Position ids of a left-padded batch: 0 at each row's first real token."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


@dataclass(frozen=True)
class Prefill:
    """What :func:`prefill_groups` returns: the prompts' last hidden states ``[P, L, H]``
    and their cache repeated for the ``n`` rows of each prompt, under its argument name."""

    hidden: torch.Tensor
    cache: Any
    argument: str


def prefill_groups(
    decoder: Any, input_ids: torch.Tensor, attention_mask: torch.Tensor, n: int
) -> Prefill | None:
    """Run one row of every group of ``n`` equal rows through ``decoder`` and repeat
    its key/value cache ``n`` times (rows ``i * n .. (i + 1) * n - 1`` share a prompt).

    Returns None when the decoder has no cache to share (the caller then runs
    every row in full). Gradients flow unless the caller disables them.
    """
    name = None if decoder is None else cache_argument(decoder)
    if name is None:
        return None
    ids, attn = input_ids[::n], attention_mask[::n]
    out = decoder(input_ids=ids, attention_mask=attn, position_ids=positions(attn), use_cache=True)
    cache = getattr(out, name, None)
    if cache is None or not hasattr(cache, "batch_repeat_interleave"):
        return None
    cache.batch_repeat_interleave(n)
    return Prefill(out.last_hidden_state, cache, name)


def completion_hidden(
    model: Any, packed: Packed, *, group_size: int = 1, share_prompt_prefix: bool = True
) -> torch.Tensor:
    """The decoder's hidden states ``[N, Tc, H]`` that predict each completion token.

    With ``share_prompt_prefix`` and rows that are whole groups of
    ``group_size`` completions of one prompt, each prompt runs once
    (:func:`prefill_groups`); otherwise every row runs in full. Both give the
    same values.
    """
    decoder = decoder_of(model)
    pid, pmask, cid, cmask = (
        packed.prompt_ids,
        packed.prompt_mask,
        packed.completion_ids,
        packed.completion_mask.long(),
    )
    n, Tc = cid.shape
    G = group_size
    pre = None
    # Under gradient checkpointing the layers drop the cache while they record for the
    # backward (a recompute would write it twice): every row then runs in full.
    recomputed = torch.is_grad_enabled() and model.training and checkpointing(model)
    if share_prompt_prefix and G > 1 and n % G == 0 and not recomputed:
        pre = prefill_groups(decoder, pid, pmask, G)
    if pre is None:
        ids = torch.cat([pid, cid], dim=1)
        attn = torch.cat([pmask, cmask], dim=1)
        out = decoder(
            input_ids=ids, attention_mask=attn, position_ids=positions(attn), use_cache=False
        )
        Lp = pid.shape[1]
        return out.last_hidden_state[:, Lp - 1 : Lp - 1 + Tc]
    # The last prompt token predicts the first completion token; the cache
    # holds the whole prompt, so the completion's own tokens (but the last)
    # predict the rest.
    parts = [pre.hidden[:, -1:].repeat_interleave(G, 0)]
    if Tc > 1:
        attn = torch.cat([pmask, cmask], dim=1)[:, :-1]
        last = positions(pmask)[:, -1:]
        pos = last + 1 + torch.arange(Tc - 1, device=cid.device).expand(n, -1)
        rest = decoder(
            input_ids=cid[:, :-1],
            attention_mask=attn,
            position_ids=pos,
            use_cache=True,
            **{pre.argument: pre.cache},
        )
        parts.append(rest.last_hidden_state)
    return torch.cat(parts, dim=1)


def completion_logprobs(
    model: Any,
    packed: Packed,
    *,
    temperature: float = 1.0,
    group_size: int = 1,
    share_prompt_prefix: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Log-probs and entropies ``[N, Tc]`` of the completion tokens (0 where masked).

    Through the decoder's hidden states and the chunked
    :func:`~grpo_fast.logprobs.token_logprobs`, so the ``[N, T, V]`` logits
    never exist at once.
    """
    if isinstance(model, AdaptersDisabled):
        # The reference runs as a frozen copy would: adapters off, no dropout.
        policy, was_training = model.model, model.model.training
        policy.eval()
        try:
            with policy.disable_adapter():
                return completion_logprobs(
                    policy,
                    packed,
                    temperature=temperature,
                    group_size=group_size,
                    share_prompt_prefix=share_prompt_prefix,
                )
        finally:
            policy.train(was_training)
    hidden = completion_hidden(
        model, packed, group_size=group_size, share_prompt_prefix=share_prompt_prefix
    )
    head = model.get_output_embeddings()
    return token_logprobs(
        # Under autocast the last hidden state may come out in another dtype than the head.
        hidden.to(head.weight.dtype),
        head.weight,
        packed.completion_ids,
        bias=head.bias,
        temperature=temperature,
        mask=packed.completion_mask,
        return_entropy=True,
    )
