"""The sampler-mismatch correction (TIS / MIS) against float64 formulas written here.

The reference computes every weight with Python's ``math`` on plain floats,
token by token, and the loss with autograd on float64 tensors; the code under
test is ``grpo_fast.loss.policy_loss`` with ``sampler_logp``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.loss import policy_loss  # noqa: E402
from grpo_fast.loss.mismatch import pad_sampler_logprobs, sampler_weights  # noqa: E402

B, T = 6, 8
LENGTHS = [8, 5, 1, 7, 0, 3]  # one empty completion


def make(seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    logp = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    old = logp + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.3
    # The sampler's log-probs: token noise plus a per-sequence offset, so that
    # token and sequence ratios both fall on each side of every band tried.
    offset = torch.tensor([-1.0, 0.1, 0.9, -0.2, 0.0, 0.8], dtype=torch.float64)[:, None]
    sampler = old + torch.randn(B, T, generator=g, dtype=torch.float64) * 0.5 + offset
    adv = torch.randn(B, generator=g, dtype=torch.float64)
    mask = torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]
    return logp.to(dtype), old.to(dtype), sampler.to(dtype), adv.to(dtype), mask


def ref_weights(old, sampler, mask, correction, level, c):
    """w[i][t] as plain floats: TIS min(rho, C); MIS rho inside [1/C, C] else 0."""
    old, sampler, mask = old.tolist(), sampler.tolist(), mask.tolist()
    w = [[1.0] * T for _ in range(B)]
    for i in range(B):
        idx = [t for t in range(T) if mask[i][t]]
        seq = math.exp(sum(old[i][t] - sampler[i][t] for t in idx) / max(len(idx), 1))
        for t in range(T):
            rho = seq if level == "sequence" else math.exp(old[i][t] - sampler[i][t])
            if correction == "tis":
                w[i][t] = min(rho, c)
            elif correction == "mis":
                w[i][t] = rho if 1 / c <= rho <= c else 0.0
    return w


def ref_stats(old, sampler, mask, correction, level, c):
    o, s, m = old.tolist(), sampler.tolist(), mask.tolist()
    tokens = [(i, t) for i in range(B) for t in range(T) if m[i][t]]
    rho_tok = {(i, t): math.exp(o[i][t] - s[i][t]) for i, t in tokens}
    kl = sum(r - 1 - math.log(r) for r in rho_tok.values()) / len(tokens)
    if level == "token":
        units = list(rho_tok.values())
        rho = rho_tok
    else:
        seqs = {}
        for i in range(B):
            idx = [t for t in range(T) if m[i][t]]
            if idx:
                seqs[i] = math.exp(sum(o[i][t] - s[i][t] for t in idx) / len(idx))
        units = list(seqs.values())
        rho = {(i, t): seqs[i] for i, t in tokens}
    outside = sum(1 for r in rho.values() if not 1 / c <= r <= c) / len(tokens)
    above = sum(1 for r in rho.values() if r > c) / len(tokens)
    return {
        "mismatch_kl": kl,
        "mismatch_ratio_min": min(units),
        "mismatch_ratio_mean": sum(units) / len(units),
        "mismatch_ratio_max": max(units),
        "mismatch_masked_frac": outside if correction == "mis" else 0.0,
        "mismatch_truncated_frac": above if correction == "tis" else 0.0,
    }


def ref_loss(logp, old, adv, mask, w, loss_type, eps=0.2):
    """The clipped GRPO objective with each token's term times its weight, float64."""
    per_seq, total, count = [], 0.0, 0
    for i in range(B):
        terms = []
        for t in range(T):
            if not mask[i, t]:
                continue
            r = torch.exp(logp[i, t] - old[i, t])
            obj = torch.minimum(r * adv[i], torch.clamp(r, 1 - eps, 1 + eps) * adv[i])
            terms.append(-obj * w[i][t])
        count += len(terms)
        s = torch.stack(terms).sum() if terms else logp.new_zeros(())
        total = total + s
        per_seq.append(s / max(len(terms), 1))
    if loss_type == "grpo":
        return torch.stack(per_seq).mean()
    return total / count


CASES = [
    (c, lv, th) for c in ("tis", "mis", "none") for lv in ("token", "sequence") for th in (1.5, 2.0)
]


@pytest.mark.parametrize("correction,level,threshold", CASES)
def test_weights_and_stats_equal_the_formula(correction, level, threshold):
    _, old, sampler, _, mask = make(seed=1)
    w, stats = sampler_weights(
        old, sampler, mask.double(), correction=correction, level=level, threshold=threshold
    )
    expected = ref_weights(old, sampler, mask, correction, level, threshold)
    got = w.tolist()
    for i in range(B):
        for t in range(T):
            if mask[i, t]:
                assert got[i][t] == pytest.approx(expected[i][t], rel=1e-12), (i, t)
    ref = ref_stats(old, sampler, mask, correction, level, threshold)
    for k, v in ref.items():
        assert float(stats[k]) == pytest.approx(v, rel=1e-12, abs=1e-15), k
    # The data reaches every branch: some ratios are cut or masked, some are kept.
    if correction == "mis":
        assert 0 < ref["mismatch_masked_frac"] < 1
    if correction == "tis":
        assert 0 < ref["mismatch_truncated_frac"] < 1


@pytest.mark.parametrize("correction,level,threshold", CASES)
@pytest.mark.parametrize("loss_type", ["grpo", "bnpo"])
@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_loss_and_gradient_equal_the_formula(correction, level, threshold, loss_type, dtype):
    logp, old, sampler, adv, mask = make(seed=2, dtype=dtype)
    w = ref_weights(old.double(), sampler.double(), mask, correction, level, threshold)

    lp_ref = logp.double().clone().requires_grad_(True)
    expected = ref_loss(lp_ref, old.double(), adv.double(), mask, w, loss_type)
    expected.backward()

    lp = logp.clone().requires_grad_(True)
    loss, metrics = policy_loss(
        lp,
        old,
        adv,
        mask,
        loss_type=loss_type,
        sampler_logp=sampler,
        sampler_correction=correction,
        sampler_level=level,
        sampler_threshold=threshold,
    )
    loss.backward()
    tol = dict(rtol=1e-10, atol=1e-12) if dtype == torch.float64 else dict(rtol=2e-5, atol=1e-6)
    torch.testing.assert_close(loss.double(), expected.detach(), **tol)
    torch.testing.assert_close(lp.grad.double(), lp_ref.grad, **tol)
    ref = ref_stats(old.double(), sampler.double(), mask, correction, level, threshold)
    for k, v in ref.items():
        assert metrics[k] == pytest.approx(v, rel=1e-4 if dtype == torch.float32 else 1e-10), k


def test_equal_log_probs_are_a_no_op():
    logp, old, _, adv, mask = make(seed=3)
    lp = logp.clone().requires_grad_(True)
    plain, _ = policy_loss(lp, old, adv, mask)
    plain.backward()
    g_plain = lp.grad.clone()
    for correction in ("tis", "mis", "none"):
        for level in ("token", "sequence"):
            lp.grad = None
            loss, m = policy_loss(
                lp,
                old,
                adv,
                mask,
                sampler_logp=old.clone(),
                sampler_correction=correction,
                sampler_level=level,
            )
            loss.backward()
            assert loss.item() == plain.item()
            assert torch.equal(lp.grad, g_plain)
            assert m["mismatch_kl"] == 0 and m["mismatch_ratio_max"] == 1.0
            assert m["mismatch_masked_frac"] == 0 and m["mismatch_truncated_frac"] == 0


def test_none_measures_without_changing_the_loss():
    logp, old, sampler, adv, mask = make(seed=4)
    plain, _ = policy_loss(logp, old, adv, mask)
    loss, m = policy_loss(logp, old, adv, mask, sampler_logp=sampler, sampler_correction="none")
    assert loss.item() == plain.item()
    assert m["mismatch_kl"] > 0.05 and m["mismatch_ratio_min"] < 1 < m["mismatch_ratio_max"]


def test_weights_multiply_the_policy_term_not_the_kl():
    logp, old, sampler, adv, mask = make(seed=5)
    ref = logp + 0.3
    zero = torch.zeros(B, dtype=torch.float64)
    kl_only, _ = policy_loss(logp, old, zero, mask, ref_logp=ref, beta=0.5)
    weighted, _ = policy_loss(
        logp,
        old,
        zero,
        mask,
        ref_logp=ref,
        beta=0.5,
        sampler_logp=sampler,
        sampler_correction="mis",
    )
    assert weighted.item() == pytest.approx(kl_only.item(), rel=1e-12)


def test_token_weights_multiply_each_term():
    logp, old, _, adv, mask = make(seed=6)
    g = torch.Generator().manual_seed(0)
    weights = torch.rand(B, T, generator=g, dtype=torch.float64) * 2
    w = weights.tolist()
    lp_ref = logp.clone().requires_grad_(True)
    expected = ref_loss(lp_ref, old, adv, mask, w, "bnpo")
    expected.backward()
    lp = logp.clone().requires_grad_(True)
    loss, _ = policy_loss(lp, old, adv, mask, loss_type="bnpo", token_weights=weights)
    loss.backward()
    torch.testing.assert_close(loss, expected.detach(), rtol=1e-12, atol=0)
    torch.testing.assert_close(lp.grad, lp_ref.grad, rtol=1e-12, atol=1e-15)


def test_weights_are_constants():
    logp, old, sampler, adv, mask = make(seed=7)
    old = old.clone().requires_grad_(True)
    sampler = sampler.clone().requires_grad_(True)
    lp = logp.clone().requires_grad_(True)
    loss, _ = policy_loss(lp, old, adv, mask, sampler_logp=sampler)
    loss.backward()
    assert old.grad is None and sampler.grad is None and lp.grad is not None


def test_bad_input_raises_invalid_input():
    logp, old, sampler, adv, mask = make()
    with pytest.raises(InvalidInputError, match=r"sampler_logp is \(6, 7\).*logp is \(6, 8\)"):
        policy_loss(logp, old, adv, mask, sampler_logp=sampler[:, :7])
    with pytest.raises(InvalidInputError, match=r"sampler_logp .*float32"):
        policy_loss(logp, old, adv, mask, sampler_logp=sampler.float())
    with pytest.raises(InvalidInputError, match="unknown sampler_correction 'ice'"):
        policy_loss(logp, old, adv, mask, sampler_logp=sampler, sampler_correction="ice")
    with pytest.raises(InvalidInputError, match="unknown sampler_level 'seq'"):
        policy_loss(logp, old, adv, mask, sampler_logp=sampler, sampler_level="seq")
    for bad in (1.0, 0.5, -2, float("nan"), True, "2"):
        with pytest.raises(InvalidInputError, match="sampler_threshold must be a number > 1"):
            policy_loss(logp, old, adv, mask, sampler_logp=sampler, sampler_threshold=bad)
    with pytest.raises(InvalidInputError, match=r"token_weights is \(6, 2\)"):
        policy_loss(logp, old, adv, mask, token_weights=sampler[:, :2])
    nan = sampler.clone()
    nan[0, 3] = float("nan")
    with pytest.raises(InvalidInputError, match="sampler_logp is not finite"):
        policy_loss(logp, old, adv, mask, sampler_logp=nan)
    nan[0, 3] = sampler[0, 3]
    nan[4, 0] = float("-inf")  # row 4 is empty: a value off the mask does not matter
    policy_loss(logp, old, adv, mask, sampler_logp=nan)


def test_pad_sampler_logprobs_aligns_and_checks():
    padded = pad_sampler_logprobs([[-0.5, -1.5], [], [-2.0]], [[3, 4], [], [5]], 3)
    expected = np.array([[-0.5, -1.5, 0], [0, 0, 0], [-2.0, 0, 0]], np.float32)
    np.testing.assert_array_equal(padded.numpy(), expected)
    assert pad_sampler_logprobs(None, [[1]], 1) is None
    with pytest.raises(InvalidInputError, match="log-probs of completion 1 have 1 entries"):
        pad_sampler_logprobs([[-0.5], [-1.0]], [[3], [4, 5]], 2)
    with pytest.raises(InvalidInputError, match="log-probs for 1 completions, not 2"):
        pad_sampler_logprobs([[-0.5]], [[3], [4]], 2)
    with pytest.raises(InvalidInputError, match="completion 0 are not all finite"):
        pad_sampler_logprobs([[float("nan")]], [[3]], 1)


# --- in the trainer ------------------------------------------------------------------


transformers = pytest.importorskip("transformers")


class PerturbedSampler:
    """An HFSampler whose reported log-probs are shifted by a fixed pattern, as a sampler
    with other kernels would report them (the samples themselves are HF's)."""

    SHIFTS = (0.9, -1.2, 0.1, -0.3)

    def __init__(self, inner):
        self.inner = inner

    def shift(self, i, t):
        row = 0.6 if i % 5 == 0 else -1.0 if i % 7 == 3 else 0.0  # whole sequences off too
        return self.SHIFTS[(i + 2 * t) % len(self.SHIFTS)] + row

    def sample(self, prompts, n, params):
        from grpo_fast.sampling import Completions

        c = self.inner.sample(prompts, n, params)
        lps = [
            [x + self.shift(i, t) for t, x in enumerate(row)] for i, row in enumerate(c.logprobs)
        ]
        return Completions(c.texts, c.prompt_ids, c.completion_ids, lps, c.n)

    def update_weights(self, model):
        self.inner.update_weights(model)


def _trainer(make_config, sampler_factory=None, **kw):
    from grpo_fast.train.modeling import load_model, load_tokenizer
    from grpo_fast.train.trainer import DATA_DIR, Trainer

    cfg = make_config(optimizer="sgd", learning_rate=0.05, max_grad_norm=0.0, seed=3, **kw)
    model, tok = (
        load_model(str(DATA_DIR / "tiny_adder")),
        load_tokenizer(str(DATA_DIR / "tiny_adder")),
    )
    sampler = None if sampler_factory is None else sampler_factory(model, tok)
    return Trainer(cfg, model=model, tokenizer=tok, sampler=sampler)


def test_hf_sampler_mismatch_is_zero_and_the_correction_a_no_op(make_config):
    """HFSampler samples with the training model: its log-probs are the trainer's, so
    a step with TIS or MIS gives the update of a step without correction."""
    plain = _trainer(make_config)
    assert plain.config.sampler_correction == "none"  # auto, with the HF sampler
    assert plain.sampler.logprobs is False
    plain.step()
    for correction in ("tis", "mis"):
        for level in ("token", "sequence"):
            t = _trainer(make_config, sampler_correction=correction, sampler_level=level)
            assert t.sampler.logprobs is True
            rec = t.step()
            assert t.last_batch.completions.texts == plain.last_batch.completions.texts
            assert rec["mismatch_kl"] < 1e-7  # float32 rounding of two forwards
            assert 1 - 1e-3 < rec["mismatch_ratio_min"] <= rec["mismatch_ratio_max"] < 1 + 1e-3
            assert rec["mismatch_masked_frac"] == 0 and rec["mismatch_truncated_frac"] == 0
            for (name, a), b in zip(
                t.model.named_parameters(), plain.model.parameters(), strict=True
            ):
                torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-7, msg=name)


def _reference_logp(model, prompt_ids, completion_ids):
    out = []
    for p, c in zip(prompt_ids, completion_ids, strict=True):
        ids = torch.tensor([p + c])
        logits = model(input_ids=ids).logits[0, :-1].double()
        lp = torch.log_softmax(logits, -1).gather(-1, ids[0, 1:, None])[:, 0]
        out.append(lp[len(p) - 1 :])
    return out


@pytest.mark.parametrize("correction", ["tis", "mis"])
@pytest.mark.parametrize("level", ["token", "sequence"])
def test_trainer_step_with_a_perturbed_sampler_equals_the_formula(make_config, correction, level):
    import copy

    from grpo_fast.sampling import HFSampler

    lr, C = 0.05, 2.0
    t = _trainer(
        make_config,
        lambda model, tok: PerturbedSampler(HFSampler(model, tok)),
        sampler_correction=correction,
        sampler_level=level,
        sampler_threshold=C,
    )
    start = copy.deepcopy(t.model)
    rec = t.step()
    comp = t.last_batch.completions
    adv = t.last_batch.advantages.astype(np.float64)
    assert np.abs(adv).max() > 0, "the seed should give a batch with signal"

    # By hand, in float64: the trainer's log-probs at the start are the old ones.
    model = copy.deepcopy(start).double()
    logp = _reference_logp(model, comp.prompt_ids, comp.completion_ids)
    old = [x.detach() for x in logp]
    per_seq, kl, n_tok, masked, cut, ratios = [], 0.0, 0, 0, 0, []
    for lp, o, s, a in zip(logp, old, comp.logprobs, adv, strict=True):
        d = [float(o[k]) - s[k] for k in range(len(s))]
        kl += sum(math.exp(x) - 1 - x for x in d)
        n_tok += len(d)
        if level == "sequence":
            rho = [math.exp(sum(d) / len(d))] * len(d) if d else []
            ratios += rho[:1]
        else:
            rho = [math.exp(x) for x in d]
            ratios += rho
        if correction == "tis":
            w = [min(r, C) for r in rho]
            cut += sum(r > C for r in rho)
        else:
            w = [r if 1 / C <= r <= C else 0.0 for r in rho]
            masked += sum(not 1 / C <= r <= C for r in rho)
        r = torch.exp(lp - o)
        obj = torch.minimum(r * a, torch.clamp(r, 0.8, 1.2) * a) * torch.tensor(w, dtype=r.dtype)
        per_seq.append(-obj.mean())
    loss = torch.stack(per_seq).mean()
    loss.backward()
    with torch.no_grad():
        for p in model.parameters():
            if p.grad is not None:
                p -= lr * p.grad
    for (name, ours), theirs in zip(t.model.named_parameters(), model.parameters(), strict=True):
        torch.testing.assert_close(ours.double(), theirs, rtol=1e-4, atol=1e-6, msg=name)
    assert rec["loss"] == pytest.approx(loss.item(), rel=1e-4, abs=1e-6)
    assert rec["mismatch_kl"] == pytest.approx(kl / n_tok, rel=1e-4)
    assert rec["mismatch_ratio_min"] == pytest.approx(min(ratios), rel=1e-4)
    assert rec["mismatch_ratio_max"] == pytest.approx(max(ratios), rel=1e-4)
    assert rec["mismatch_masked_frac"] == pytest.approx(masked / n_tok, abs=1e-6)
    assert rec["mismatch_truncated_frac"] == pytest.approx(cut / n_tok, abs=1e-6)
    assert masked + cut > 0, "the perturbation should reach the correction"


def test_metrics_jsonl_has_the_mismatch_columns(make_config, tmp_path):
    from grpo_fast.sampling import HFSampler
    from grpo_fast.train.tracking import read_metrics

    t = _trainer(
        make_config,
        lambda model, tok: PerturbedSampler(HFSampler(model, tok)),
        sampler_correction="mis",
        grad_accum_steps=2,
        max_steps=1,
    )
    t.train()
    rows = [r for r in read_metrics(t.out / "metrics.jsonl") if r["step"] == 1]
    keys = ["mismatch_kl", "mismatch_ratio_min", "mismatch_ratio_mean", "mismatch_ratio_max"]
    assert all(k in rows[0] for k in [*keys, "mismatch_masked_frac"]), rows[0].keys()
    assert rows[0]["mismatch_ratio_min"] < rows[0]["mismatch_ratio_mean"]
    assert rows[0]["mismatch_ratio_mean"] < rows[0]["mismatch_ratio_max"]


def test_a_correction_without_sampler_log_probs_is_refused(make_config):
    from grpo_fast.sampling import HFSampler

    t = _trainer(
        make_config,
        lambda model, tok: HFSampler(model, tok, logprobs=False),
        sampler_correction="tis",
    )
    with pytest.raises(InvalidInputError, match="needs the sampler's log-probs.*HFSampler"):
        t.step()


def test_bad_sampler_options_are_refused(make_config):
    from grpo_fast.train.trainer import TrainerConfig

    with pytest.raises(InvalidInputError, match="sampler_threshold must be > 1, got 1.0"):
        make_config(sampler_threshold=1.0).validate()
    with pytest.raises(InvalidInputError, match="sampler_correction must be one of"):
        make_config(sampler_correction="icepop").validate()
    assert TrainerConfig(sampler="vllm").sampler_correction == "auto"
