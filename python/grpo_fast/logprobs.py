"""Per-token log-probabilities without materialising ``[B, T, V]`` logits.

A policy-gradient step needs ``log pi(y_t | y_<t)`` of the sampled tokens only,
yet the usual ``log_softmax(lm_head(h)).gather(...)`` builds the whole
``[B, T, V]`` logit tensor (and autograd keeps it, plus its gradient): at
``V = 151,936`` that is 4.9 GB of fp32 for 8 x 1024 tokens. Here the lm_head
matmul, the log-softmax and the gather are fused and run over chunks of
tokens; the backward recomputes each chunk's logits instead of storing them
(the trade Liger-Kernel and Apple's Cut Cross-Entropy make), so only one
chunk of logits (and its log-softmax) lives at a time; the extra cost is one
more matmul.

Numerics: the matmul runs in the input dtype and accumulates in fp32 (on
CUDA its bf16/fp16 output is written as fp32 directly, ``torch.mm(...,
out_dtype=torch.float32)``; on CPU the logits are rounded to the input dtype
once, as ``lm_head(h).float()`` does); they are in fp32 before the bias, the
temperature, the log-sum-exp and the entropy, and the weight and bias
gradients are summed over chunks in fp32. The returned log-probs are fp32
(fp64 for fp64 inputs).

torch is imported here, not by ``import grpo_fast``.
"""

from __future__ import annotations

from typing import Any

import torch

from grpo_fast.errors import InvalidInputError

__all__ = ["selective_log_softmax", "token_logprobs"]

# Elements of fp32 logits per chunk when chunk_size is not given (64 MiB):
# 512 tokens at V = 32,768, 110 tokens at V = 151,936. The forward holds two
# such buffers, the backward one; matmuls of this size still run at full speed.
_CHUNK_ELEMENTS = 1 << 24


# Token chunks shorter than this make the weight-gradient matmul inefficient;
# the backward then walks blocks of the vocabulary instead.
_MIN_CHUNK_ROWS = 256


def _auto_chunk(vocab: int) -> int:
    return max(1, _CHUNK_ELEMENTS // max(vocab, 1))


# ---------------------------------------------------------------------------
# The per-chunk math, shared by both entry points. `z` is fp32 [n, V] logits
# already divided by the temperature.


def _chunk_forward(
    z: torch.Tensor, t: torch.Tensor, want_entropy: bool
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """Log-sum-exp, target log-prob and (optionally) entropy of each row."""
    # log_softmax is one fused kernel; logsumexp is slower on CPUs.
    log_p = torch.log_softmax(z, dim=-1)
    z_t = z.gather(-1, t.unsqueeze(-1)).squeeze(-1)
    logp = log_p.gather(-1, t.unsqueeze(-1)).squeeze(-1)
    entropy = None
    if want_entropy:
        entropy = -(log_p.exp() * log_p).sum(-1)
    return z_t - logp, logp, entropy


def _chunk_grad(
    z: torch.Tensor,
    t: torch.Tensor,
    lse: torch.Tensor,
    entropy: torch.Tensor | None,
    g_logp: torch.Tensor | None,
    g_ent: torch.Tensor | None,
    col_offset: int | None = None,
) -> torch.Tensor:
    """Gradient w.r.t. ``z`` given the upstream gradients of logp and entropy.

    ``z`` holds whole rows, or, with ``col_offset``, the vocabulary columns
    ``[col_offset, col_offset + z.shape[1])`` of every row (``lse`` and the
    entropy being those of the whole rows).

    d logp_t / dz = onehot(t) - p;  d H / dz = -p * (log p + H). Overwrites ``z``
    (each pass over the chunk is in place: on a CPU these passes, not the
    matmuls, are what a fused kernel can save).
    """
    if g_ent is None or entropy is None:
        assert g_logp is not None
        grad = z.sub_(lse.unsqueeze(-1)).exp_().mul_(g_logp.neg().unsqueeze(-1))  # -g p
    else:
        # -p * (g_logp + g_ent * (log p + H))
        log_p = z.sub_(lse.unsqueeze(-1))
        p = log_p.exp()
        scale = log_p.add_(entropy.unsqueeze(-1)).mul_(g_ent.unsqueeze(-1))
        if g_logp is not None:
            scale.add_(g_logp.unsqueeze(-1))
        grad = p.mul_(scale.neg_())
    if g_logp is not None:
        rows = torch.arange(grad.shape[0], device=grad.device)
        if col_offset is None:
            grad[rows, t] += g_logp
        else:  # only the targets inside this block; no host sync to find them
            cols = t - col_offset
            inside = (cols >= 0) & (cols < grad.shape[1])
            grad.index_put_(
                (rows, cols.clamp(0, grad.shape[1] - 1)), g_logp * inside, accumulate=True
            )
    return grad


def _chunks(n: int, size: int) -> list[tuple[int, int]]:
    return [(s, min(s + size, n)) for s in range(0, n, size)]


# ---------------------------------------------------------------------------
# Fused lm_head + log-softmax + gather.


def _forward_chunks(
    x: torch.Tensor,
    t: torch.Tensor,
    chunk: int,
    want_entropy: bool,
    logits_of: Any,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(logp, lse, entropy)`` over rows of ``x``, one chunk of fp32 logits
    (``logits_of(start, end)``) alive at a time; shared by both forwards."""
    n = x.shape[0]
    out_dtype = _acc_dtype(x.dtype)
    logp = torch.empty(n, dtype=out_dtype, device=x.device)
    lse = torch.empty_like(logp)
    entropy = torch.empty(n if want_entropy else 0, dtype=out_dtype, device=x.device)
    for s, e in _chunks(n, chunk):
        lse[s:e], logp[s:e], ent = _chunk_forward(logits_of(s, e), t[s:e], want_entropy)
        if ent is not None:
            entropy[s:e] = ent
    return logp, lse, entropy


class _FusedLinearLogProbs(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        h: torch.Tensor,
        weight: torch.Tensor,
        bias: torch.Tensor | None,
        t: torch.Tensor,
        temperature: float,
        chunk: int,
        want_entropy: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logp, lse, entropy = _forward_chunks(
            h, t, chunk, want_entropy, lambda s, e: _logits(h[s:e], weight, bias, temperature)
        )
        ctx.save_for_backward(h, weight, bias, t, lse, entropy if want_entropy else None)
        ctx.temperature, ctx.chunk = temperature, chunk
        ctx.set_materialize_grads(False)
        if not want_entropy:
            ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g_logp: torch.Tensor | None, g_ent: torch.Tensor | None) -> Any:
        h, weight, bias, t, lse, entropy = ctx.saved_tensors
        if entropy is None:
            g_ent = None
        if g_logp is None and g_ent is None:
            return None, None, None, None, None, None, None
        need_h, need_w, need_b = ctx.needs_input_grad[:3]
        need_b = need_b and bias is not None
        acc = _acc_dtype(h.dtype)
        g_logp = None if g_logp is None else g_logp.to(acc) / ctx.temperature
        g_ent = None if g_ent is None else g_ent.to(acc) / ctx.temperature
        n, vocab = h.shape[0], weight.shape[0]
        budget = ctx.chunk * vocab  # elements of one logit buffer
        if ctx.chunk < _MIN_CHUNK_ROWS and n > ctx.chunk:
            # Blocks of the vocabulary over all tokens: each block's weight and
            # bias gradient is written once, and only the [n, H] hidden gradient
            # is accumulated. Chunks of few tokens would instead re-read and
            # re-write the whole [V, H] weight gradient in matmuls with a short
            # inner dimension (110 tokens at V = 151,936), which run slowly.
            grad_h = torch.zeros(h.shape, dtype=acc, device=h.device) if need_h else None
            grad_w = torch.empty_like(weight) if need_w else None
            grad_b = torch.empty_like(bias) if need_b else None
            for vs, ve in _chunks(vocab, max(1, budget // max(n, 1))):
                w_blk = weight[vs:ve]
                b_blk = None if bias is None else bias[vs:ve]
                z = _logits(h, w_blk, b_blk, ctx.temperature)
                gz = _chunk_grad(z, t, lse, entropy, g_logp, g_ent, col_offset=vs)
                if grad_b is not None:
                    grad_b[vs:ve] = gz.sum(0)
                gz_low = gz.to(h.dtype)
                if grad_h is not None:
                    if h.dtype == acc:
                        grad_h.addmm_(gz_low, w_blk)
                    else:
                        grad_h += _mm_acc(gz_low, w_blk)
                if grad_w is not None:
                    if h.dtype == acc:
                        torch.mm(gz_low.t(), h, out=grad_w[vs:ve])
                    else:
                        grad_w[vs:ve] = _mm_acc(gz_low.t(), h)
            if grad_h is not None:
                grad_h = grad_h.to(h.dtype)
            return grad_h, grad_w, grad_b, None, None, None, None

        # Chunks of tokens: the [n, H] hidden gradient is written once per chunk,
        # the weight and bias gradients are summed over chunks in fp32.
        grad_h = torch.empty_like(h) if need_h else None
        grad_w = torch.zeros(weight.shape, dtype=acc, device=h.device) if need_w else None
        grad_b = torch.zeros(vocab, dtype=acc, device=h.device) if need_b else None
        for s, e in _chunks(n, ctx.chunk):
            z = _logits(h[s:e], weight, bias, ctx.temperature)
            gz = _chunk_grad(
                z,
                t[s:e],
                lse[s:e],
                None if entropy is None else entropy[s:e],
                None if g_logp is None else g_logp[s:e],
                None if g_ent is None else g_ent[s:e],
            )
            if grad_b is not None:
                grad_b += gz.sum(0)
            gz_low = gz.to(h.dtype)
            if grad_h is not None:
                torch.mm(gz_low, weight, out=grad_h[s:e])
            if grad_w is not None:
                if h.dtype == acc:
                    grad_w.addmm_(gz_low.t(), h[s:e])
                else:
                    grad_w += _mm_acc(gz_low.t(), h[s:e])
        if grad_w is not None:
            grad_w = grad_w.to(weight.dtype)
        if grad_b is not None:
            grad_b = grad_b.to(bias.dtype)
        return grad_h, grad_w, grad_b, None, None, None, None


def _acc_dtype(dtype: torch.dtype) -> torch.dtype:
    # fp64 stays fp64 (gradcheck, references); everything else runs in fp32.
    return torch.float64 if dtype == torch.float64 else torch.float32


def _mm_acc(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """``a @ b`` returned in the accumulation dtype (fp32, or fp64 for fp64)."""
    if a.is_cuda and a.dtype in (torch.bfloat16, torch.float16):
        # fp32 output straight from the tensor cores, no rounding to 16 bits.
        try:
            return torch.mm(a, b, out_dtype=torch.float32)
        except (TypeError, RuntimeError, NotImplementedError):  # torch < 2.8
            pass
    return (a @ b).to(_acc_dtype(a.dtype))


def _logits(
    h: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None, temperature: float
) -> torch.Tensor:
    z = _mm_acc(h, weight.t())
    if bias is not None:
        z += bias.to(z.dtype)
    if temperature != 1.0:
        z /= temperature
    return z


def token_logprobs(
    hidden: torch.Tensor,
    lm_head_weight: torch.Tensor,
    targets: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    temperature: float = 1.0,
    chunk_size: int | None = None,
    ignore_index: int = -100,
    mask: torch.Tensor | None = None,
    return_entropy: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """Log-probability of each target token under ``softmax((hidden @ W.T + b) / temperature)``.

    Parameters
    ----------
    hidden : float tensor [..., H]
        Final hidden states (after the last norm), e.g. ``hidden_states[-1][:, :-1]``.
    lm_head_weight : tensor [V, H]
        ``model.lm_head.weight`` (tied embeddings work the same), same dtype and device.
    targets : int tensor [...]
        Next-token ids, ``input_ids[:, 1:]``.
    bias : tensor [V], optional
    temperature : float
        The sampling temperature, so the log-probs match what the sampler drew from.
    chunk_size : int, optional
        Tokens per chunk; by default as many as fit 64 MiB of fp32 logits.
    ignore_index : int
        Targets equal to it are skipped (log-prob and entropy 0, no gradient).
    mask : bool tensor [...], optional
        Positions to compute; False positions are treated as ignored.
    return_entropy : bool
        Also return the entropy of each position's distribution (differentiable).

    Returns
    -------
    fp32 tensor [...], or ``(logp, entropy)`` when ``return_entropy``.
    Gradients flow to ``hidden``, ``lm_head_weight`` and ``bias``.

    Examples
    --------
    >>> h = torch.randn(2, 5, 16, requires_grad=True)
    >>> w = torch.randn(100, 16, requires_grad=True)
    >>> y = torch.randint(0, 100, (2, 5))
    >>> token_logprobs(h, w, y).sum().backward()
    """
    _check_float("hidden", hidden)
    _check_float("lm_head_weight", lm_head_weight)
    if lm_head_weight.dim() != 2 or hidden.dim() < 1 or hidden.shape[-1] != lm_head_weight.shape[1]:
        raise InvalidInputError(
            f"hidden {tuple(hidden.shape)} and lm_head_weight {tuple(lm_head_weight.shape)}"
            " do not fit: expected hidden [..., H] and lm_head_weight [V, H]"
        )
    _check_same("lm_head_weight", lm_head_weight, "hidden", hidden)
    if bias is not None:
        _check_float("bias", bias)
        if tuple(bias.shape) != (lm_head_weight.shape[0],):
            raise InvalidInputError(
                f"bias {tuple(bias.shape)} does not fit lm_head_weight "
                f"{tuple(lm_head_weight.shape)}: expected [V]"
            )
        _check_same("bias", bias, "hidden", hidden)
    if tuple(targets.shape) != tuple(hidden.shape[:-1]):
        raise InvalidInputError(
            f"targets {tuple(targets.shape)} does not match hidden {tuple(hidden.shape)}:"
            " expected targets to be hidden.shape[:-1]"
        )
    vocab = lm_head_weight.shape[0]
    h = hidden.reshape(-1, hidden.shape[-1])
    select = _valid_positions(targets, mask, ignore_index, vocab, hidden.device)
    chunk = _check_chunk(chunk_size, vocab)
    temperature = _check_temperature(temperature)

    idx = select.nonzero().squeeze(-1)
    t = targets.reshape(-1)[idx]
    rows = h if idx.numel() == h.shape[0] else h[idx]
    logp_sel, ent_sel = _FusedLinearLogProbs.apply(
        rows, lm_head_weight, bias, t, temperature, chunk, return_entropy
    )
    n = targets.numel()
    logp = logp_sel.new_zeros(n).index_put((idx,), logp_sel).view(targets.shape)
    if not return_entropy:
        return logp
    entropy = ent_sel.new_zeros(n).index_put((idx,), ent_sel).view(targets.shape)
    return logp, entropy


# ---------------------------------------------------------------------------
# The same, for callers that already hold logits.


class _SelectiveLogSoftmax(torch.autograd.Function):
    @staticmethod
    def forward(  # type: ignore[override]
        ctx: Any,
        logits: torch.Tensor,
        t: torch.Tensor,
        temperature: float,
        chunk: int,
        want_entropy: bool,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        logp, lse, entropy = _forward_chunks(
            logits, t, chunk, want_entropy, lambda s, e: _scaled(logits[s:e], temperature)
        )
        ctx.save_for_backward(logits, t, lse, entropy if want_entropy else None)
        ctx.temperature, ctx.chunk = temperature, chunk
        ctx.set_materialize_grads(False)
        if not want_entropy:
            ctx.mark_non_differentiable(entropy)
        return logp, entropy

    @staticmethod
    @torch.autograd.function.once_differentiable
    def backward(ctx: Any, g_logp: torch.Tensor | None, g_ent: torch.Tensor | None) -> Any:
        logits, t, lse, entropy = ctx.saved_tensors
        if entropy is None:
            g_ent = None
        if g_logp is None and g_ent is None:
            return None, None, None, None, None
        grad = torch.empty_like(logits)
        for s, e in _chunks(logits.shape[0], ctx.chunk):
            z = _scaled(logits[s:e], ctx.temperature)
            gz = _chunk_grad(
                z,
                t[s:e],
                lse[s:e],
                None if entropy is None else entropy[s:e],
                None if g_logp is None else g_logp[s:e].to(z.dtype) / ctx.temperature,
                None if g_ent is None else g_ent[s:e].to(z.dtype) / ctx.temperature,
            )
            grad[s:e] = gz
        return grad, None, None, None, None


def _scaled(logits: torch.Tensor, temperature: float) -> torch.Tensor:
    # A fresh fp32 (or fp64) copy: _chunk_grad overwrites it.
    z = logits.to(_acc_dtype(logits.dtype), copy=True)
    if temperature != 1.0:
        z /= temperature
    return z


def selective_log_softmax(
    logits: torch.Tensor,
    targets: torch.Tensor,
    *,
    temperature: float = 1.0,
    chunk_size: int | None = None,
    ignore_index: int = -100,
    mask: torch.Tensor | None = None,
    return_entropy: bool = False,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``log_softmax(logits / temperature).gather(-1, targets)``, chunked, in fp32.

    No fp32 copy of all the logits is made (bf16 logits stay bf16) and the
    backward writes the logits' gradient chunk by chunk.

    Parameters
    ----------
    logits : float tensor [..., V]
    targets : int tensor [...]
    temperature, chunk_size, ignore_index, mask, return_entropy
        As in :func:`token_logprobs`.

    Returns
    -------
    fp32 (fp64 for fp64 logits) tensor [...], or ``(logp, entropy)``.

    Examples
    --------
    >>> logits = torch.randn(2, 3, 10)
    >>> selective_log_softmax(logits, torch.zeros(2, 3, dtype=torch.long)).shape
    torch.Size([2, 3])
    """
    _check_float("logits", logits)
    if logits.dim() < 1 or tuple(targets.shape) != tuple(logits.shape[:-1]):
        raise InvalidInputError(
            f"targets {tuple(targets.shape)} does not match logits {tuple(logits.shape)}:"
            " expected targets to be logits.shape[:-1]"
        )
    vocab = logits.shape[-1]
    flat = logits.reshape(-1, vocab)
    select = _valid_positions(targets, mask, ignore_index, vocab, logits.device)
    chunk = _check_chunk(chunk_size, vocab)
    temperature = _check_temperature(temperature)
    idx = select.nonzero().squeeze(-1)
    t = targets.reshape(-1)[idx]
    rows = flat if idx.numel() == flat.shape[0] else flat[idx]
    logp_sel, ent_sel = _SelectiveLogSoftmax.apply(rows, t, temperature, chunk, return_entropy)
    n = targets.numel()
    logp = logp_sel.new_zeros(n).index_put((idx,), logp_sel).view(targets.shape)
    if not return_entropy:
        return logp
    entropy = ent_sel.new_zeros(n).index_put((idx,), ent_sel).view(targets.shape)
    return logp, entropy


# ---------------------------------------------------------------------------
# Input checks.


def _check_float(name: str, x: Any) -> None:
    if not isinstance(x, torch.Tensor) or not x.is_floating_point():
        what = x.dtype if isinstance(x, torch.Tensor) else type(x).__name__
        raise InvalidInputError(f"{name} must be a floating-point torch tensor, got {what}")


def _check_same(name: str, x: torch.Tensor, ref_name: str, ref: torch.Tensor) -> None:
    if x.dtype != ref.dtype or x.device != ref.device:
        raise InvalidInputError(
            f"{name} {tuple(x.shape)} is {x.dtype} on {x.device} but {ref_name} "
            f"{tuple(ref.shape)} is {ref.dtype} on {ref.device}: they must match"
        )


def _valid_positions(
    targets: Any, mask: Any, ignore_index: int, vocab: int, device: torch.device
) -> torch.Tensor:
    if not isinstance(targets, torch.Tensor) or targets.is_floating_point() or targets.is_complex():
        what = targets.dtype if isinstance(targets, torch.Tensor) else type(targets).__name__
        raise InvalidInputError(f"targets must be an integer torch tensor, got {what}")
    if targets.device != device:
        raise InvalidInputError(f"targets is on {targets.device} but the inputs are on {device}")
    valid = targets != ignore_index
    if mask is not None:
        if not isinstance(mask, torch.Tensor) or tuple(mask.shape) != tuple(targets.shape):
            shape = tuple(mask.shape) if isinstance(mask, torch.Tensor) else type(mask).__name__
            raise InvalidInputError(f"mask {shape} does not match targets {tuple(targets.shape)}")
        if mask.device != device:
            raise InvalidInputError(f"mask is on {mask.device} but the inputs are on {device}")
        valid &= mask.bool()
    valid = valid.reshape(-1)
    if valid.any():
        live = targets.reshape(-1)[valid]
        lo, hi = int(live.min()), int(live.max())
        if lo < 0 or hi >= vocab:
            bad = lo if lo < 0 else hi
            raise InvalidInputError(
                f"target id {bad} is outside the vocabulary [0, {vocab})"
                f" (and is not ignore_index={ignore_index})"
            )
    return valid


def _check_chunk(chunk_size: int | None, vocab: int) -> int:
    if chunk_size is None:
        return _auto_chunk(vocab)
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise InvalidInputError(f"chunk_size must be a positive int, got {chunk_size!r}")
    return chunk_size


def _check_temperature(temperature: float) -> float:
    temperature = float(temperature)
    if not temperature > 0 or temperature == float("inf"):
        raise InvalidInputError(f"temperature must be positive and finite, got {temperature}")
    return temperature
