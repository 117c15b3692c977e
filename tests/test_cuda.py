"""The CUDA paths, against CPU references: ``pytest -m cuda`` (scripts/gpu_check.sh).

Without a GPU every test here is skipped with that reason. The references are
written here or in the CPU tests' modules (float64 on the CPU); the printed
lines are the figures scripts/gpu_check.sh keeps (run with ``-s``).
"""

from __future__ import annotations

import time

import numpy as np
import pytest

torch = pytest.importorskip("torch")

pytestmark = [
    pytest.mark.cuda,
    pytest.mark.skipif(
        not torch.cuda.is_available(),
        reason="needs a CUDA GPU (scripts/gpu_check.sh runs these on one)",
    ),
]


def test_policy_loss_on_cuda_equals_the_cpu_float64_formula():
    from test_loss import CLIPS, LOSS_TYPES, ref_aggregate, ref_token_losses
    from test_loss import make as make_loss_case
    from test_mismatch import make as make_mismatch_case
    from test_mismatch import ref_loss, ref_stats, ref_weights

    from grpo_fast.loss import policy_loss

    cuda = torch.device("cuda")
    for loss_type in LOSS_TYPES:
        for clip in CLIPS:
            opts = dict(eps_low=0.2, eps_high=0.2, dual_clip=None, delta=None) | clip
            logp, old, _, adv, mask, _ = make_loss_case(seed=3, adv_per_token=True)
            lp = logp.clone().requires_grad_(True)
            expected = ref_aggregate(ref_token_losses(lp, old, adv, **opts), mask, loss_type)
            expected.backward()
            g = logp.float().to(cuda).requires_grad_(True)
            loss, _ = policy_loss(
                g,
                old.float().to(cuda),
                adv.float().to(cuda),
                mask.to(cuda),
                loss_type=loss_type,
                **opts,
            )
            loss.backward()
            where = f"{loss_type} {clip}"
            torch.testing.assert_close(loss.double().cpu(), expected.detach(), msg=where)
            torch.testing.assert_close(
                g.grad.double().cpu(), lp.grad, rtol=1e-5, atol=1e-6, msg=where
            )
    for correction in ("tis", "mis"):
        for level in ("token", "sequence"):
            logp, old, sampler, adv, mask = make_mismatch_case(seed=4)
            w = ref_weights(old, sampler, mask, correction, level, 2.0)
            lp = logp.clone().requires_grad_(True)
            expected = ref_loss(lp, old, adv, mask, w, "grpo")
            expected.backward()
            g = logp.float().to(cuda).requires_grad_(True)
            loss, metrics = policy_loss(
                g,
                old.float().to(cuda),
                adv.float().to(cuda),
                mask.to(cuda),
                sampler_logp=sampler.float().to(cuda),
                sampler_correction=correction,
                sampler_level=level,
            )
            loss.backward()
            torch.testing.assert_close(loss.double().cpu(), expected.detach())
            torch.testing.assert_close(g.grad.double().cpu(), lp.grad, rtol=1e-5, atol=1e-6)
            for k, v in ref_stats(old, sampler, mask, correction, level, 2.0).items():
                assert metrics[k] == pytest.approx(v, rel=1e-4, abs=1e-6), k


@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_fused_logprobs_in_bf16_against_a_float32_reference(temperature):
    from grpo_fast.logprobs import token_logprobs

    g = torch.Generator(device="cuda").manual_seed(0)
    B, T, H, V = 4, 384, 1024, 32_768
    hidden = torch.randn(B, T, H, device="cuda", generator=g)
    weight = torch.randn(V, H, device="cuda", generator=g) / H**0.5
    targets = torch.randint(0, V, (B, T), device="cuda", generator=g)
    targets[:, -7:] = -100  # masked: log-prob 0, no gradient
    upstream = torch.randn(B, T, device="cuda", generator=g)

    # The reference: the bf16 inputs, upcast, through a full float32 log-softmax.
    h32 = hidden.bfloat16().float().requires_grad_(True)
    w32 = weight.bfloat16().float().requires_grad_(True)
    logits = (h32 @ w32.T) / temperature
    ref = torch.log_softmax(logits, -1).gather(-1, targets.clamp(min=0)[..., None])[..., 0]
    ref = ref.masked_fill(targets < 0, 0.0)
    ref_entropy = -(torch.softmax(logits, -1) * torch.log_softmax(logits, -1)).sum(-1)
    (ref * upstream).sum().backward()

    h16 = hidden.bfloat16().requires_grad_(True)
    w16 = weight.bfloat16().requires_grad_(True)
    torch.cuda.reset_peak_memory_stats()
    logp, entropy = token_logprobs(
        h16, w16, targets, temperature=temperature, chunk_size=512, return_entropy=True
    )
    (logp * upstream).sum().backward()
    peak = torch.cuda.max_memory_allocated() / 2**20
    assert logp.dtype == torch.float32 and h16.grad.dtype == torch.bfloat16

    err = (logp - ref.detach()).abs()
    ent_err = (entropy - ref_entropy.detach()).abs()[targets >= 0]

    def rel(a, b):
        return float((a.float() - b).norm() / b.norm())

    print(
        f"\nCUDA fused log-probs bf16 (T={temperature}): max |dlogp| {err.max():.3e}, "
        f"mean {err.mean():.3e}; entropy max err {ent_err.max():.3e}; grad rel err "
        f"hidden {rel(h16.grad, h32.grad):.3e}, weight {rel(w16.grad, w32.grad):.3e}; "
        f"peak {peak:.0f} MiB"
    )
    assert torch.all(logp[targets < 0] == 0)
    # bf16 matmul (fp32 accumulation) against the fp32 one: logits agree to ~2^-8 relative.
    assert err.max() < 0.1 and err.mean() < 0.01
    assert ent_err.max() < 0.1
    assert rel(h16.grad, h32.grad) < 0.02 and rel(w16.grad, w32.grad) < 0.02


def _qwen2_100m(vocab):
    import transformers

    config = transformers.Qwen2Config(
        vocab_size=vocab,
        hidden_size=768,
        intermediate_size=3072,
        num_hidden_layers=12,
        num_attention_heads=12,
        num_key_value_heads=4,
        max_position_embeddings=512,
        bos_token_id=1,
        eos_token_id=1,
        pad_token_id=0,
        tie_word_embeddings=True,
    )
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).to(torch.bfloat16)


def _text_reward(completions, **columns):
    # Random-init text carries no answer: a reward with variance within each group.
    return [float(sum(map(ord, c)) % 3) for c in completions]


def test_one_trainer_step_of_a_100m_qwen2_in_bf16(tmp_path):
    pytest.importorskip("transformers")
    from grpo_fast.train.modeling import load_tokenizer
    from grpo_fast.train.trainer import DATA_DIR, Trainer, TrainerConfig

    tok = load_tokenizer(str(DATA_DIR / "tiny_adder"))
    model = _qwen2_100m(len(tok))
    n_params = sum(p.numel() for p in model.parameters())
    assert 80e6 < n_params < 130e6
    cfg = TrainerConfig(
        model=str(DATA_DIR / "tiny_adder"),  # validated; the model object below is trained
        output_dir=str(tmp_path / "run"),
        max_steps=1,
        prompts_per_step=8,
        num_generations=8,
        max_new_tokens=32,
        learning_rate=1e-5,
        device="cuda",
        dtype="bf16",  # autocast in bf16 over fp32 master weights
        sampler_correction="tis",  # HFSampler's bf16 log-probs against the loss forward's
        progress=False,
        plot=False,
        eval_file=None,
        seed=0,
    )
    trainer = Trainer(cfg, model=model, tokenizer=tok, rewards=[(_text_reward, 1.0)])
    start = {k: v.detach().clone() for k, v in trainer.model.named_parameters()}
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.perf_counter()
    rec = trainer.step()
    torch.cuda.synchronize()
    seconds = time.perf_counter() - t0
    print(
        f"\nCUDA trainer step, Qwen2 {n_params / 1e6:.0f}M bf16, 8x8 rollouts of <= 32 tokens: "
        f"{seconds:.2f} s (sampling {rec['time_sampling']:.2f} s, loss {rec['time_loss']:.2f} s), "
        f"peak {torch.cuda.max_memory_allocated() / 2**30:.2f} GiB; loss {rec['loss']:.4g}, "
        f"grad_norm {rec['grad_norm']:.4g}; HF sampler vs trainer in bf16: mismatch_kl "
        f"{rec['mismatch_kl']:.3e}, ratio min/mean/max {rec['mismatch_ratio_min']:.4f} / "
        f"{rec['mismatch_ratio_mean']:.4f} / {rec['mismatch_ratio_max']:.4f}, truncated "
        f"{rec['mismatch_truncated_frac']:.4f}"
    )
    assert np.std(trainer.last_batch.rewards) > 0
    for k in ("loss", "grad_norm", "mismatch_kl", "mismatch_ratio_min", "mismatch_ratio_max"):
        assert np.isfinite(rec[k]), (k, rec[k])
    assert rec["grad_norm"] > 0
    moved = 0.0
    for name, p in trainer.model.named_parameters():
        # Trained weights are fp32 master weights (bf16 steps would round small updates away).
        assert p.dtype == torch.float32 and torch.isfinite(p).all(), name
        moved = max(moved, float((p.detach().float() - start[name].float()).abs().max()))
    assert moved > 0, "the step did not change the weights"
    # A second step on new samples, from the updated weights.
    assert np.isfinite(trainer.step()["loss"])
