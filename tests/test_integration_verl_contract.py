"""The verl integration's contract with verl's driver (issue 22).

- Importing ``grpo_fast.integrations.verl`` imports nothing of verl (nor torch, ray,
  tensordict); the registrations still happen when verl is imported afterwards.
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


@pytest.mark.slow
def test_imported_before_verl_still_registers(tmp_path):
    """grpo-fast first, then verl: the package's ``verl.plugins`` entry point (from
    pyproject.toml, as an install writes it) registers the estimators, losses and reward
    manager although the package itself was imported before."""
    pytest.importorskip("verl")
    tomllib = pytest.importorskip("tomllib")
    pyproject = os.path.join(os.path.dirname(__file__), "..", "pyproject.toml")
    with open(pyproject, "rb") as f:
        plugins = tomllib.load(f)["project"]["entry-points"]["verl.plugins"]
    dist = tmp_path / "site" / "grpo_fast_order_probe-0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: grpo-fast-order-probe\nVersion: 0\n"
    )
    lines = "".join(f"{k} = {v}\n" for k, v in plugins.items())
    (dist / "entry_points.txt").write_text("[verl.plugins]\n" + lines)
    src = os.path.dirname(os.path.dirname(grpo_fast.__file__))
    out = _run(
        """
        import json, sys, warnings
        warnings.simplefilter("ignore")
        import grpo_fast.integrations.verl
        assert "verl" not in sys.modules
        import verl
        from verl.trainer.ppo import core_algos
        from verl.experimental.reward_loop.reward_manager import get_reward_manager_cls
        out = {
            "estimator": core_algos.get_adv_estimator_fn("grpo_fast_grpo").__name__,
            "loss": core_algos.get_policy_loss_fn("grpo_fast_vanilla").__name__,
            "manager": get_reward_manager_cls("grpo_fast").__name__,
        }
        print("RESULT " + json.dumps(out))
        """,
        {"PYTHONPATH": os.pathsep.join([src, str(tmp_path / "site")])},
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
