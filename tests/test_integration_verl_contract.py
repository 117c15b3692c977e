"""The verl integration's contract with verl's driver (issue 22).

- Importing ``grpo_fast.integrations.verl`` imports nothing of verl (nor torch, ray,
  tensordict); the registrations happen when verl's registry modules are imported,
  whichever is imported first.
- The ``grpo_fast`` reward-loop manager's results carry ``score`` and ``acc`` in
  ``reward_extra_info``, the keys ``algorithm.filter_groups.metric`` reads, with the
  values verl's own DAPO manager gives on the same samples.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import grpo_fast

HEAVY = ("verl", "torch", "ray", "tensordict")


def _run(code: str, env_extra: dict[str, str] | None = None) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith("VERL_USE_EXTERNAL")}
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(grpo_fast.__file__))
    env.update(env_extra or {})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    line = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    assert proc.returncode == 0 and line, proc.stderr[-3000:]
    return json.loads(line[-1][len("RESULT ") :])


def test_importing_the_integration_imports_no_verl():
    out = _run(
        f"""
        import json, sys
        import grpo_fast.integrations.verl as gf
        gf.compute_score("openai/gsm8k", "#### 3", "3")
        heavy = sorted({{m.split(".")[0] for m in sys.modules}} & set({HEAVY!r}))
        print("RESULT " + json.dumps({{"heavy": heavy}}))
        """
    )
    assert out["heavy"] == []


def test_registration_waits_for_verls_registries(tmp_path, monkeypatch):
    """The watcher runs a module's registrations right after that module is imported,
    once, and at once for a module imported before it was installed."""
    from grpo_fast.integrations.verl import plugin

    (tmp_path / "gf_watch_probe.py").write_text("VALUE = 1\n")
    (tmp_path / "gf_watch_probe_early.py").write_text("VALUE = 2\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    seen = []

    def record(name):
        def register():
            seen.append((name, sys.modules[name].VALUE))
            return True

        register.__name__ = f"register_{name}"
        return register

    import gf_watch_probe_early  # noqa: F401  (imported before it is watched)

    monkeypatch.setitem(plugin.WATCHED, "gf_watch_probe", (record("gf_watch_probe"),))
    monkeypatch.setitem(plugin.WATCHED, "gf_watch_probe_early", (record("gf_watch_probe_early"),))
    monkeypatch.delitem(sys.modules, "gf_watch_probe", raising=False)
    plugin.install()
    assert seen == [("gf_watch_probe_early", 2)]
    import gf_watch_probe

    assert seen[-1] == ("gf_watch_probe", 1) and len(seen) == 2
    assert gf_watch_probe.__loader__.__class__.__name__ == "SourceFileLoader"
    import gf_watch_probe as again  # cached: no second registration

    assert again is gf_watch_probe and len(seen) == 2
    assert sum(isinstance(f, plugin._Watch) for f in sys.meta_path) == 1


@pytest.mark.slow
def test_imported_before_verl_still_registers():
    """grpo-fast first, then verl's registries, without verl's plugin discovery: the
    watcher registers the estimators, losses and reward manager."""
    pytest.importorskip("verl")
    out = _run(
        """
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import grpo_fast.integrations.verl
        assert "verl" not in sys.modules
        from verl.trainer.ppo import core_algos
        from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
        out = {
            "estimator": core_algos.get_adv_estimator_fn("grpo_fast_grpo").__name__,
            "loss": core_algos.get_policy_loss_fn("grpo_fast_vanilla").__name__,
            "manager": get_reward_manager_cls("grpo_fast").__name__,
        }
        print("RESULT " + json.dumps(out))
        """,
        {"VERL_USE_EXTERNAL_PLUGINS": "none"},
    )
    from grpo_fast.integrations.verl import estimators, losses

    assert out == {
        "estimator": estimators.REGISTERED_NAMES["grpo_fast_grpo"].__name__,
        "loss": losses.POLICY_LOSS_NAMES["grpo_fast_vanilla"].__name__,
        "manager": "GrpoFastRewardManager",
    }


DAPO_ITEMS = [  # (data_source, response, ground truth): math_dapo's own conventions
    ("math_dapo", "Let me think.\nAnswer: 34", "34"),
    ("math_dapo", "Answer: 35", "34"),
    ("math_dapo", r"so \boxed{34}", "34"),
    ("math_dapo", "I do not know", "34"),
    ("math_dapo", r"\boxed{34}. Answer: 35", "34"),
]


@pytest.mark.slow
def test_manager_results_carry_the_keys_filter_groups_reads(tmp_path):
    pytest.importorskip("verl.experimental.reward_loop.reward_loop")
    pytest.importorskip("torch")
    from test_integration_verl import _byte_tokenizer, _ppo_config, _reward_batch, _worker_scores

    tokenizer = _byte_tokenizer()
    tokenizer.save_pretrained(tmp_path)
    _, _, _, dapo = _worker_scores(
        _ppo_config(tmp_path, manager="dapo"), _reward_batch(tokenizer, DAPO_ITEMS)
    )
    _, scores, _, ours = _worker_scores(
        _ppo_config(tmp_path, manager="grpo_fast"), _reward_batch(tokenizer, DAPO_ITEMS)
    )
    for metric in ("score", "acc"):  # algorithm.filter_groups.metric=score or acc
        theirs = [float(o["reward_extra_info"][metric]) for o in dapo]
        assert [float(o["reward_extra_info"][metric]) for o in ours] == theirs, metric
    assert [o["reward_extra_info"]["score"] for o in ours] == scores
    assert set(scores) == {-1.0, 1.0}
