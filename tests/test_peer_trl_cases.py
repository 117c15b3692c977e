"""TRL's own reward tests, run against our drop-ins.

``data/peers/trl_rewards.json`` holds every case of TRL's ``tests/test_rewards.py``
and the examples of its reward docstrings (Apache-2.0; source, commit and
version in the file), each as the call TRL's test makes: the same positional
and keyword arguments, the same expected values and tolerances. Each case runs
against ``grpo_fast.integrations.trl`` and, where TRL is installed, against
TRL itself (so the data stays what TRL asserts).
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

import pytest

from grpo_fast.integrations import trl as ours

DATA = json.loads((Path(__file__).parent / "data" / "peers" / "trl_rewards.json").read_text())
CASES = DATA["cases"]


def _function(lib: Any, case: dict[str, Any]) -> Any:
    fn = getattr(lib, case["function"])
    return fn(**case["factory_kwargs"]) if "factory_kwargs" in case else fn


def _call(lib: Any, case: dict[str, Any]) -> list[Any]:
    fn = _function(lib, case)
    if not case.get("thread"):
        return fn(*case["args"], **case["kwargs"])
    out: list[Any] = []
    errors: list[BaseException] = []

    def target() -> None:
        try:
            out.extend(fn(*case["args"], **case["kwargs"]))
        except Exception as e:  # the test reports it
            errors.append(e)

    t = threading.Thread(target=target)
    t.start()
    t.join()
    assert not errors, errors
    return out


def _check(got: list[Any], case: dict[str, Any]) -> None:
    want = case["expected"]
    assert len(got) == len(want), case["name"]
    for g, w in zip(got, want, strict=True):
        if w is None:
            assert g is None, case["name"]
        else:
            assert g == pytest.approx(w, abs=case.get("abs", 1e-12)), case["name"]


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_our_drop_in_passes_trls_case(case):
    _check(_call(ours, case), case)


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_the_data_is_what_trl_asserts(case):
    trl_rewards = pytest.importorskip("trl.rewards")
    pytest.importorskip("math_verify")
    _check(_call(trl_rewards, case), case)


def test_the_data_names_its_source():
    src = DATA["source"]
    assert src["repository"] == "huggingface/trl" and src["licence"] == "Apache-2.0"
    assert len(CASES) >= 30
