"""CodeReward and the peers' code rewards (open-r1, verl prime_code) on small items."""

from __future__ import annotations

import json
import sys

import numpy as np
import pytest

from grpo_fast import rewards
from grpo_fast.integrations.trl.code import binary_code_reward, code_reward
from grpo_fast.integrations.verl.prime_code import compute_score

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the sandbox is Linux-only"
)

SQ = json.dumps({"fn_name": "sq", "inputs": [[2], [3], [-1]], "outputs": [4, 9, 1]})
SQ_LINES = json.dumps({"fn_name": "sq", "inputs": ["2", "3", "-1"], "outputs": ["4", "9", "1"]})
GOOD = "```python\ndef sq(x):\n    return x * x\n```"
# right for 2 and 3, wrong for -1
HALF = "```python\ndef sq(x):\n    return x * x if x > 2 else 4\n```"


def test_code_reward_fraction_and_all_or_nothing():
    got = rewards.combine(rewards.CodeReward()).score_batch([GOOD, HALF, "none"], [SQ, SQ, SQ])
    np.testing.assert_allclose(got.total, [1.0, 2 / 3, 0.0], rtol=1e-6)
    strict = rewards.combine(rewards.CodeReward(all_or_nothing=True, name="c"))
    np.testing.assert_array_equal(strict.score_batch([GOOD, HALF], [SQ, SQ]).total, [1.0, 0.0])


def test_code_reward_without_tests_is_unscorable():
    got = rewards.combine(rewards.CodeReward()).score_batch([GOOD, GOOD], [SQ, None])
    assert got.total[0] == 1.0 and np.isnan(got.total[1])


def test_open_r1_code_reward():
    info = {
        "language": "python",
        "test_cases": [
            {"input": "2\n", "output": "4\n", "type": "stdin_stdout"},
            {"input": "5\n", "output": "25\n", "type": "stdin_stdout"},
        ],
    }
    good = [{"role": "assistant", "content": "```python\nprint(int(input()) ** 2)\n```"}]
    half = [{"role": "assistant", "content": "```python\nprint(4)\n```"}]
    assert code_reward([good, half, "no code"], verification_info=[info] * 3) == [1.0, 0.5, 0.0]
    assert binary_code_reward([good, half], verification_info=[json.dumps(info)] * 2) == [1.0, 0.0]


def test_verl_prime_code_shape_and_agreement():
    tests = {"inputs": ["3\n", "4\n"], "outputs": ["6\n", "8\n"]}
    good = "```python\nprint(int(input()) * 2)\n```"
    wrong = "```python\nprint(6)\n```"
    assert compute_score(good, tests)[0] is True
    assert compute_score(wrong, json.dumps(tests))[0] is False
    assert compute_score(wrong, tests, continuous=True)[0] == 0.5
    prime_code = pytest.importorskip("verl.utils.reward_score.prime_code")
    # (verl's continuous=False path raises UnboundLocalError on a failing solution)
    for completion, expected in ((good, 1.0), (wrong, 0.5)):
        ours = compute_score(completion, tests, continuous=True)[0]
        theirs = prime_code.compute_score(completion, tests, continuous=True)[0]
        assert float(ours) == float(theirs) == expected, completion


@pytest.mark.parametrize("source", ["codecontests", "apps", "codeforces", "taco"])
def test_verl_top_level_compute_score_runs_code_sources_in_the_sandbox(source, monkeypatch):
    """verl's ``default_compute_score`` routes the code sources to prime_code (continuous);
    ours routes them to the sandbox, with the same float, and never calls verl."""
    from grpo_fast.integrations.verl import rewards as verl_rewards

    io = json.dumps({"inputs": ["3\n", "5\n"], "outputs": ["6\n", "10\n"]})
    items = [
        ("```python\nprint(int(input()) * 2)\n```", io, 1.0),
        ("```python\nprint(6)\n```", io, 0.5),
        ("```python\nprint(7)\n```", io, 0.0),
        # a call test in verl's JSON-lines layout (one JSON argument per line)
        (GOOD, SQ_LINES, 1.0),
        ("```python\ndef sq(x):\n    return 0\n```", SQ_LINES, 0.0),
    ]

    def no_verl(*args):
        raise AssertionError("a code source went to verl's own scorer")

    monkeypatch.setattr(verl_rewards, "_verl_default_score", no_verl)
    for completion, truth, expected in items:
        assert verl_rewards.compute_score(source, completion, truth) == expected
    batch = verl_rewards.compute_score_batch(
        [source] * len(items) + ["openai/gsm8k"],
        [c for c, _, _ in items] + ["#### 12"],
        [t for _, t, _ in items] + ["12"],
    )
    assert batch == [e for _, _, e in items] + [1.0]
    monkeypatch.undo()
    reward_score = pytest.importorskip("verl.utils.reward_score")
    for completion, truth, expected in items:
        theirs = reward_score.default_compute_score(source, completion, truth)
        assert theirs == expected, (completion, theirs)


def test_prime_code_json_lines_layout():
    # verl prime_code / TACO: each call input is one JSON argument per line, each output JSON.
    tests = {"fn_name": "f", "inputs": ['[1, 2]\n"x"', '[]\n""'], "outputs": ["3", "0"]}
    good = "```python\ndef f(a, s):\n    return sum(a)\n```"
    assert compute_score(good, tests)[0] is True
    assert compute_score("```python\ndef f(a, s):\n    return len(a)\n```", tests, True)[0] == 0.5


def test_cli_train_with_reward_code(tmp_path):
    # The trainer end to end with --reward code: the gold column holds each prompt's tests.
    # (The embedded adder writes no ```python block, so its reward is 0: the point is the path.)
    from grpo_fast.cli import main

    pytest.importorskip("torch")
    rows = [{"prompt": f"{a}+{b}=", "answer": SQ} for a in (11, 23) for b in (4, 40)]
    train = tmp_path / "train.jsonl"
    train.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "out"
    argv = ["train", "--train-file", str(train), "--eval-file", "none", "--output-dir", str(out)]
    argv += ["--max-steps", "1", "--prompts-per-step", "2", "--num-generations", "2"]
    argv += ["--reward", "code", "--no-plot", "--no-progress"]
    assert main(argv) == 0
    last = [json.loads(x) for x in (out / "metrics.jsonl").read_text().splitlines() if x.strip()][
        -1
    ]
    assert last["rewards/code/mean"] == 0.0
