"""scripts/gpu_check.sh as far as a machine without a GPU can check it: its syntax, its
arguments and a dry run in which the CUDA tests skip."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "gpu_check.sh"

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def run(*args, env=None, timeout=300):
    return subprocess.run(
        ["bash", str(SCRIPT), *args],
        cwd=ROOT,
        env={**os.environ, "PYTHON": sys.executable, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_syntax_and_help():
    assert subprocess.run(["bash", "-n", str(SCRIPT)]).returncode == 0
    out = run("--help")
    assert out.returncode == 0 and "--cpu-dry-run" in out.stdout and "--wheels DIR" in out.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (["--frobnicate"], "unknown argument '--frobnicate'"),
        (["--wheels"], "--wheels needs a folder"),
        (["--out"], "--out needs a file name"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, message):
    out = run(*args)
    assert out.returncode == 2
    assert out.stderr.strip() == f"gpu_check.sh: {message} (see --help)" or (
        out.stderr.strip() == f"gpu_check.sh: {message}"
    )
    assert "Traceback" not in out.stderr and out.stdout == ""


def test_missing_wheels_and_python_exit_2(tmp_path):
    out = run("--cpu-dry-run", "--wheels", str(tmp_path / "nope"), "--out", str(tmp_path / "r"))
    assert out.returncode == 2 and "no wheel folder" in out.stderr and "make wheel" in out.stderr
    (tmp_path / "empty").mkdir()
    out = run("--cpu-dry-run", "--wheels", str(tmp_path / "empty"), "--out", str(tmp_path / "r"))
    assert out.returncode == 2 and "no grpo_fast-*-abi3-*.whl in" in out.stderr
    out = run("--cpu-dry-run", env={"PYTHON": str(tmp_path / "no-python")})
    assert out.returncode == 2 and "no python" in out.stderr


def test_without_a_gpu_it_asks_for_the_dry_run(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has a GPU")
    out = run("--no-install", "--out", str(tmp_path / "r.txt"))
    assert out.returncode == 2 and "no CUDA device" in out.stderr and "--cpu-dry-run" in out.stderr


@pytest.mark.slow  # one pytest process (torch import): ~15 s on the shared 2-core machine
def test_dry_run_skips_the_cuda_tests_and_writes_the_report(tmp_path):
    pytest.importorskip("torch")
    report = tmp_path / "out" / "gpu_check.txt"
    out = run("--cpu-dry-run", "--no-install", "--skip-bench", "--out", str(report))
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    text = report.read_text()
    assert text.startswith("grpo-fast GPU check, ") and "CPU DRY RUN" in text
    assert "GPU: none visible to torch" in text
    assert "5 skipped" in text and "needs a CUDA GPU" in text
    assert text.rstrip().endswith("gpu_check: done")
    assert out.stdout.rstrip().endswith("gpu_check: done")  # the report is also shown


def test_bench_says_why_liger_is_left_out_on_the_cpu(monkeypatch):
    """bench_logprobs --liger without CUDA (or without the package): a reason, not a crash."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "bench_logprobs", ROOT / "benches" / "bench_logprobs.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    reason = bench.liger_unavailable("cpu")
    if importlib.util.find_spec("liger_kernel") is None:
        assert "liger-kernel is not installed" in reason and "make wheel" in reason
    else:
        assert "need CUDA" in reason
    monkeypatch.setattr(importlib.util, "find_spec", lambda name: None)
    assert "not installed" in bench.liger_unavailable("cuda")
