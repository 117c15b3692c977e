"""Chunked token log-probs against a plain float64 log_softmax written here."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from grpo_fast import logprobs  # noqa: E402
from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.logprobs import selective_log_softmax, token_logprobs  # noqa: E402

IGNORE = -100


@pytest.fixture(params=["vocab-blocks", "token-chunks"])
def backward(request, monkeypatch):
    """Force each of the fused backward's two strategies (chosen by chunk length)."""
    monkeypatch.setattr(
        logprobs, "_MIN_CHUNK_ROWS", 10**9 if request.param == "vocab-blocks" else 0
    )
    return request.param


def reference(logits, targets, temperature=1.0, keep=None):
    """Full float64 log_softmax, gather, and entropy; skipped positions give 0."""
    z = logits.double() / temperature
    logp_all = torch.log_softmax(z, dim=-1)
    keep = targets != IGNORE if keep is None else keep
    safe = torch.where(keep, targets, torch.zeros_like(targets))
    logp = logp_all.gather(-1, safe.unsqueeze(-1)).squeeze(-1)
    entropy = -(logp_all.exp() * logp_all).sum(-1)
    return logp * keep, entropy * keep


def make(b=3, t=7, h=16, v=50, dtype=torch.float32, seed=0, ignored=3):
    g = torch.Generator().manual_seed(seed)
    hidden = torch.randn(b, t, h, generator=g, dtype=torch.float64).to(dtype)
    weight = (torch.randn(v, h, generator=g, dtype=torch.float64) / h**0.5).to(dtype)
    bias = torch.randn(v, generator=g, dtype=torch.float64).to(dtype)
    targets = torch.randint(0, v, (b, t), generator=g)
    flat = targets.view(-1)
    flat[torch.randperm(flat.numel(), generator=g)[:ignored]] = IGNORE
    return hidden, weight, bias, targets


def leaves(*xs):
    return [x.detach().clone().requires_grad_(True) for x in xs]


@pytest.mark.parametrize("use_bias", [False, True])
@pytest.mark.parametrize("temperature", [1.0, 0.6])
@pytest.mark.parametrize("chunk_size", [1, 4, None])
@pytest.mark.parametrize("entropy", [False, True])
def test_token_logprobs_values_and_grads(use_bias, temperature, chunk_size, entropy, backward):
    hidden, weight, bias, targets = make(seed=chunk_size or 0)
    h, w, b = leaves(hidden, weight, bias)
    out = token_logprobs(
        h,
        w,
        targets,
        bias=b if use_bias else None,
        temperature=temperature,
        chunk_size=chunk_size,
        return_entropy=entropy,
    )
    logp, ent = out if entropy else (out, None)
    assert logp.dtype == torch.float32 and logp.shape == targets.shape

    h64, w64, b64 = leaves(hidden.double(), weight.double(), bias.double())
    logits = h64 @ w64.T + (b64 if use_bias else 0)
    ref_logp, ref_ent = reference(logits, targets, temperature)
    torch.testing.assert_close(logp.double(), ref_logp, rtol=1e-5, atol=1e-5)

    # A random upstream gradient for both outputs.
    g = torch.Generator().manual_seed(1)
    up = torch.randn(targets.shape, generator=g, dtype=torch.float64)
    up_e = torch.randn(targets.shape, generator=g, dtype=torch.float64)
    obj = (logp.double() * up).sum()
    ref_obj = (ref_logp * up).sum()
    if entropy:
        torch.testing.assert_close(ent.double(), ref_ent, rtol=1e-5, atol=1e-5)
        obj = obj + (ent.double() * up_e).sum()
        ref_obj = ref_obj + (ref_ent * up_e).sum()
    obj.backward()
    ref_obj.backward()
    torch.testing.assert_close(h.grad.double(), h64.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(w.grad.double(), w64.grad, rtol=1e-4, atol=1e-5)
    if use_bias:
        torch.testing.assert_close(b.grad.double(), b64.grad, rtol=1e-4, atol=1e-5)
    else:
        assert b.grad is None
    # Ignored positions get no gradient.
    assert torch.all(h.grad[targets == IGNORE] == 0)


def test_token_logprobs_mask_and_custom_ignore_index():
    hidden, weight, _, targets = make(ignored=0, seed=3)
    keep = torch.rand(targets.shape, generator=torch.Generator().manual_seed(4)) > 0.3
    targets = targets.clone()
    targets[0, 0] = 7
    ignore = targets == 7
    logp = token_logprobs(hidden, weight, targets, mask=keep, ignore_index=7, chunk_size=5)
    ref, _ = reference(hidden @ weight.T, targets, keep=keep & ~ignore)
    torch.testing.assert_close(logp.double(), ref, rtol=1e-5, atol=1e-5)


def test_all_positions_ignored_gives_zeros_and_zero_grads(backward):
    hidden, weight, _, targets = make()
    h, w = leaves(hidden, weight)
    logp, ent = token_logprobs(
        h, w, torch.full_like(targets, IGNORE), return_entropy=True, chunk_size=2
    )
    assert torch.all(logp == 0) and torch.all(ent == 0)
    (logp.sum() + ent.sum()).backward()
    assert torch.all(h.grad == 0) and torch.all(w.grad == 0)


def test_gradcheck_fused_backward(backward):
    hidden, weight, bias, targets = make(b=2, t=4, h=5, v=9, dtype=torch.float64, ignored=2)
    h, w, b = leaves(hidden, weight, bias)

    def fn(h, w, b):
        return token_logprobs(
            h, w, targets, bias=b, temperature=0.8, chunk_size=3, return_entropy=True
        )

    assert torch.autograd.gradcheck(fn, (h, w, b))


def test_gradcheck_fused_logp_only(backward):
    hidden, weight, _, targets = make(b=2, t=3, h=4, v=7, dtype=torch.float64, ignored=1)
    h, w = leaves(hidden, weight)
    assert torch.autograd.gradcheck(
        lambda h, w: token_logprobs(h, w, targets, chunk_size=2), (h, w)
    )


def test_gradient_through_entropy_only(backward):
    hidden, weight, _, targets = make(ignored=0)
    h, w = leaves(hidden, weight)
    _, ent = token_logprobs(h, w, targets, return_entropy=True, chunk_size=4)
    ent.sum().backward()
    h64, w64 = leaves(hidden.double(), weight.double())
    reference(h64 @ w64.T, targets)[1].sum().backward()
    torch.testing.assert_close(h.grad.double(), h64.grad, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(w.grad.double(), w64.grad, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_half_precision_inputs(dtype, backward):
    # Large logits: a 16-bit log_softmax would lose them; ours runs in fp32.
    hidden, weight, bias, targets = make(b=2, t=9, h=32, v=300, dtype=dtype, seed=5)
    weight = (weight * 8).to(dtype)
    h, w, b = leaves(hidden, weight, bias)
    logp, ent = token_logprobs(h, w, targets, bias=b, chunk_size=4, return_entropy=True)
    assert logp.dtype == torch.float32 and torch.isfinite(logp).all()
    # Reference on the same 16-bit values, in float64; logits rounded to 16 bits once
    # (as the CPU matmul does) bound the error.
    h64, w64, b64 = leaves(hidden.double(), weight.double(), bias.double())
    ref_logp, ref_ent = reference(h64 @ w64.T + b64, targets)
    tol = 0.1 if dtype == torch.bfloat16 else 0.02
    torch.testing.assert_close(logp.double(), ref_logp, rtol=0.0, atol=tol)
    torch.testing.assert_close(ent.double(), ref_ent, rtol=0.0, atol=tol)
    logp.sum().backward()
    ref_logp.sum().backward()
    assert h.grad.dtype == dtype and w.grad.dtype == dtype and b.grad.dtype == dtype
    scale = w64.grad.abs().max()
    assert (w.grad.double() - w64.grad).abs().max() < 0.05 * scale
    assert (h.grad.double() - h64.grad).abs().max() < 0.05 * h64.grad.abs().max()


def test_chunking_does_not_change_results():
    hidden, weight, bias, targets = make(b=4, t=16, v=64, seed=9)
    outs = []
    for chunk in (1, 7, 64, 10_000):
        h, w = leaves(hidden, weight)
        logp = token_logprobs(h, w, targets, bias=bias, chunk_size=chunk)
        logp.sum().backward()
        outs.append((logp, h.grad, w.grad))
    for logp, gh, gw in outs[1:]:
        torch.testing.assert_close(logp, outs[0][0], rtol=1e-6, atol=1e-6)
        torch.testing.assert_close(gh, outs[0][1], rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(gw, outs[0][2], rtol=1e-5, atol=1e-6)


def test_no_grad_inputs_for_old_and_reference_logprobs():
    hidden, weight, _, targets = make()
    with torch.no_grad():
        logp = token_logprobs(hidden, weight, targets)
    assert not logp.requires_grad
    torch.testing.assert_close(
        logp.double(), reference(hidden @ weight.T, targets)[0], rtol=1e-5, atol=1e-5
    )


def test_frozen_weight_gets_no_grad():
    hidden, weight, _, targets = make()
    h = hidden.clone().requires_grad_(True)
    token_logprobs(h, weight, targets).sum().backward()
    assert weight.grad is None and h.grad is not None


# --- selective_log_softmax -----------------------------------------------------------


@pytest.mark.parametrize("temperature", [1.0, 1.7])
@pytest.mark.parametrize("entropy", [False, True])
def test_selective_log_softmax(temperature, entropy):
    hidden, weight, _, targets = make(seed=11)
    logits = (hidden @ weight.T).detach()
    x = logits.clone().requires_grad_(True)
    out = selective_log_softmax(
        x, targets, temperature=temperature, chunk_size=5, return_entropy=entropy
    )
    logp, ent = out if entropy else (out, None)
    x64 = logits.double().requires_grad_(True)
    ref_logp, ref_ent = reference(x64, targets, temperature)
    torch.testing.assert_close(logp.double(), ref_logp, rtol=1e-5, atol=1e-5)
    obj, ref_obj = logp.double().sum(), ref_logp.sum()
    if entropy:
        torch.testing.assert_close(ent.double(), ref_ent, rtol=1e-5, atol=1e-5)
        obj, ref_obj = obj + 0.5 * ent.double().sum(), ref_obj + 0.5 * ref_ent.sum()
    obj.backward()
    ref_obj.backward()
    torch.testing.assert_close(x.grad.double(), x64.grad, rtol=1e-4, atol=1e-6)


def test_selective_log_softmax_bf16_logits_keep_dtype_of_grad():
    logits = (torch.randn(3, 5, 40, generator=torch.Generator().manual_seed(2)) * 30).bfloat16()
    targets = torch.randint(0, 40, (3, 5), generator=torch.Generator().manual_seed(3))
    x = logits.clone().requires_grad_(True)
    logp = selective_log_softmax(x, targets)
    assert logp.dtype == torch.float32
    torch.testing.assert_close(
        logp.double(), reference(logits.double(), targets)[0], rtol=1e-5, atol=1e-5
    )
    logp.sum().backward()
    assert x.grad.dtype == torch.bfloat16


def test_gradcheck_selective_log_softmax():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, 6, generator=g, dtype=torch.float64, requires_grad=True)
    targets = torch.randint(0, 6, (2, 3), generator=g)
    targets[1, 2] = IGNORE

    def fn(x):
        return selective_log_softmax(x, targets, temperature=0.9, chunk_size=2, return_entropy=True)

    assert torch.autograd.gradcheck(fn, (x,))


# --- bad input -----------------------------------------------------------------------


def test_bad_inputs_raise_invalid_input():
    hidden, weight, bias, targets = make()
    with pytest.raises(InvalidInputError, match=r"hidden \(3, 7, 16\).*lm_head_weight \(50, 8\)"):
        token_logprobs(hidden, weight[:, :8], targets)
    with pytest.raises(InvalidInputError, match=r"targets \(3, 6\).*hidden \(3, 7, 16\)"):
        token_logprobs(hidden, weight, targets[:, :6])
    with pytest.raises(InvalidInputError, match="lm_head_weight.*float64.*hidden.*float32"):
        token_logprobs(hidden, weight.double(), targets)
    with pytest.raises(InvalidInputError, match=r"bias \(49,\)"):
        token_logprobs(hidden, weight, targets, bias=bias[:49])
    with pytest.raises(InvalidInputError, match="outside the vocabulary"):
        token_logprobs(hidden, weight, torch.full_like(targets, 50))
    with pytest.raises(InvalidInputError, match="outside the vocabulary"):
        token_logprobs(hidden, weight, torch.full_like(targets, -1))
    with pytest.raises(InvalidInputError, match="integer"):
        token_logprobs(hidden, weight, targets.float())
    with pytest.raises(InvalidInputError, match="chunk_size"):
        token_logprobs(hidden, weight, targets, chunk_size=0)
    with pytest.raises(InvalidInputError, match="temperature"):
        token_logprobs(hidden, weight, targets, temperature=0.0)
    with pytest.raises(InvalidInputError, match=r"mask \(3, 6\)"):
        token_logprobs(hidden, weight, targets, mask=torch.ones(3, 6, dtype=torch.bool))
    with pytest.raises(InvalidInputError, match="floating-point"):
        token_logprobs(hidden.long(), weight, targets)
    with pytest.raises(InvalidInputError, match=r"targets \(3, 6\).*logits \(3, 7, 50\)"):
        selective_log_softmax(hidden @ weight.T, targets[:, :6])
    with pytest.raises(ValueError):  # InvalidInputError is a ValueError
        selective_log_softmax(hidden @ weight.T, torch.full_like(targets, 99))


# --- the memory bound -----------------------------------------------------------------


@pytest.mark.parametrize("backward", ["vocab-blocks", "token-chunks"], indirect=True)
def test_no_tensor_of_logit_size_is_ever_created(backward):
    """Every tensor any op creates in forward + backward stays chunk-sized: none
    holds the [N, V] logits (or their gradient), which the naive path creates."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class LargestOutput(TorchDispatchMode):
        largest = 0

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            for x in out if isinstance(out, (tuple, list)) else (out,):
                if isinstance(x, torch.Tensor):
                    LargestOutput.largest = max(LargestOutput.largest, x.numel())
            return out

    n_tokens, vocab, chunk = 96, 2000, 8
    hidden, weight, _, targets = make(b=4, t=24, h=8, v=vocab, ignored=0)
    h, w = leaves(hidden, weight)
    with LargestOutput():
        logp, ent = token_logprobs(h, w, targets, chunk_size=chunk, return_entropy=True)
        (logp.sum() + ent.sum()).backward()
    bound = max(chunk * vocab, w.numel())  # one logit buffer, or the weight's gradient
    assert LargestOutput.largest <= bound < n_tokens * vocab

    LargestOutput.largest = 0
    with LargestOutput():  # the naive path, for contrast: the check can fail
        torch.log_softmax(h @ w.T, -1).gather(-1, targets[..., None]).sum().backward()
    assert LargestOutput.largest >= n_tokens * vocab
