"""grpo-fast's policy losses under verl's names against verl's own compute_policy_loss_*.

Values, gradients and metrics, on verl's own ``ActorConfig``, for every
``loss_agg_mode``, several clip settings, with and without the global batch
information verl's actor sets and verl's ``rollout_is_weights``.
"""

from __future__ import annotations

import itertools
import warnings

import pytest

torch = pytest.importorskip("torch")
core_algos = pytest.importorskip("verl.trainer.ppo.core_algos")

from grpo_fast.errors import InvalidInputError  # noqa: E402
from grpo_fast.integrations import verl as gf_verl  # noqa: E402
from grpo_fast.integrations.verl import losses as verl_loss  # noqa: E402

B, T = 7, 9
LENGTHS = [9, 4, 1, 7, 0, 6, 9]  # one empty response: verl does not count it as a sequence
MODES = verl_loss.LOSS_AGG_MODES
CLIPS = [(0.2, 0.2, 3.0), (0.2, 0.28, 3.0), (0.1, 0.3, 1.5)]
GLOBAL = [{}, {"dp_size": 2, "batch_num_tokens": 75, "global_batch_size": 13, "lsf": 16}]


def make(seed=0, per_token_adv=True):
    g = torch.Generator().manual_seed(seed)
    log_prob = -torch.rand(B, T, generator=g, dtype=torch.float64) * 3
    # Log-ratios within +-1.2: every clip branch, none of the +-20 / 10 bounds.
    old = log_prob + (torch.rand(B, T, generator=g, dtype=torch.float64) - 0.5) * 2.4
    adv = torch.randn(B, T if per_token_adv else 1, generator=g, dtype=torch.float64)
    adv = adv.expand(B, T).contiguous()
    mask = (torch.arange(T)[None, :] < torch.tensor(LENGTHS)[:, None]).double()
    weights = torch.rand(B, T, generator=g, dtype=torch.float64) * 2
    return log_prob, old, adv, mask, weights


def actor_config(low, high, c, mode, info):
    from verl.workers.config import FSDPActorConfig

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cfg = FSDPActorConfig(
            strategy="fsdp",
            rollout_n=1,
            ppo_micro_batch_size_per_gpu=1,
            clip_ratio=low,
            clip_ratio_low=low,
            clip_ratio_high=high,
            clip_ratio_c=c,
            loss_agg_mode=mode,
        )
    if info:
        # What verl's actor (workers/utils/losses.py: ppo_loss) writes before the call.
        cfg.global_batch_info["dp_size"] = info["dp_size"]
        cfg.global_batch_info["batch_num_tokens"] = info["batch_num_tokens"]
        cfg.global_batch_info["global_batch_size"] = info["global_batch_size"]
        cfg.global_batch_info["loss_scale_factor"] = info["lsf"]
    return cfg


def run(fn, log_prob, old, adv, mask, mode, cfg, weights):
    lp = log_prob.clone().requires_grad_(True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss, metrics = fn(
            old_log_prob=old,
            log_prob=lp,
            advantages=adv,
            response_mask=mask,
            loss_agg_mode=mode,
            config=cfg,
            rollout_is_weights=weights,
        )
    loss.backward()
    return loss.detach(), lp.grad, metrics


CASES = list(itertools.product(MODES, CLIPS, range(len(GLOBAL)), [False, True]))


@pytest.mark.parametrize("name,theirs", [("vanilla", "vanilla"), ("gspo", "gspo")])
@pytest.mark.parametrize("mode,clip,info,weighted", CASES)
def test_equals_verls_own_loss(name, theirs, mode, clip, info, weighted):
    log_prob, old, adv, mask, weights = make(seed=MODES.index(mode) * 10 + CLIPS.index(clip))
    if name == "gspo":  # GSPO's advantage is one per sequence
        adv = adv[:, :1].expand(B, T).contiguous()
    cfg = actor_config(*clip, mode, GLOBAL[info])
    w = weights if weighted else None
    ours = core_algos.get_policy_loss_fn(f"grpo_fast_{name}")
    v, g, m = run(ours, log_prob, old, adv, mask, mode, cfg, w)
    cfg2 = actor_config(*clip, mode, GLOBAL[info])
    rv, rg, rm = run(core_algos.get_policy_loss_fn(theirs), log_prob, old, adv, mask, mode, cfg2, w)
    # verl's seq-mean-token-mean divides by (length + 1e-8): agreement to ~1e-8 of each term.
    torch.testing.assert_close(v, rv, rtol=1e-6, atol=1e-9)
    torch.testing.assert_close(g, rg, rtol=1e-6, atol=1e-9)
    assert abs(float(v)) > 1e-3 and g.abs().max() > 1e-4, "a test that cannot fail"
    assert set(m) == set(rm)
    for k in m:
        assert m[k] == pytest.approx(float(rm[k]), rel=1e-6, abs=1e-9), k


def test_metrics_see_every_clip_branch():
    log_prob, old, adv, mask, _ = make(seed=5)
    cfg = actor_config(0.1, 0.1, 1.2, "token-mean", {})
    _, _, m = run(
        verl_loss.compute_policy_loss_vanilla, log_prob, old, adv, mask, "token-mean", cfg, None
    )
    assert 0 < m["actor/pg_clipfrac"] < 1 and 0 < m["actor/pg_clipfrac_lower"] < 1


def test_registered_under_grpo_fast_names():
    assert gf_verl.register_verl_policy_losses() is True
    for name, fn in verl_loss.POLICY_LOSS_NAMES.items():
        assert name.startswith("grpo_fast_")
        assert core_algos.get_policy_loss_fn(name) is fn


def test_dict_config_and_bad_input():
    log_prob, old, adv, mask, _ = make(seed=6)
    cfg = {"clip_ratio": 0.2, "clip_ratio_c": 3.0}
    loss, _ = verl_loss.compute_policy_loss_vanilla(old, log_prob, adv, mask, "token-mean", cfg)
    verl_cfg = actor_config(0.2, 0.2, 3.0, "token-mean", {})
    theirs, _ = core_algos.compute_policy_loss_vanilla(
        old, log_prob, adv, mask, "token-mean", verl_cfg
    )
    torch.testing.assert_close(loss, theirs)
    with pytest.raises(InvalidInputError, match="unknown loss_agg_mode 'seq-mean'"):
        verl_loss.compute_policy_loss_vanilla(old, log_prob, adv, mask, "seq-mean", cfg)
    with pytest.raises(InvalidInputError, match="needs batch_num_tokens when dp_size > 1"):
        verl_loss.compute_policy_loss_vanilla(
            old, log_prob, adv, mask, "token-mean", {"global_batch_info": {"dp_size": 2}}
        )
    with pytest.raises(InvalidInputError, match=r"advantages is \(7, 3\)"):
        verl_loss.compute_policy_loss_vanilla(old, log_prob, adv[:, :3], mask, "token-mean", cfg)
