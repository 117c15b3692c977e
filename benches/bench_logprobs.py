"""Token log-probs, forward + backward: the fused chunked kernel against the naive
``log_softmax(h @ W.T).gather(...)``, peak memory and time, in the same run.

Goals (issue 4): B=8, T=1024, H=1024, V=32,768 (and V=151,936 at a smaller T):
peak memory <= 25% of naive, time within 1.3x of naive on the CPU.

Peak memory is measured in a fresh subprocess per implementation, so one run's
allocations cannot hide in another's high-water mark:

* CPU: ``resource.getrusage(RUSAGE_SELF).ru_maxrss`` after the step minus the
  resident set right before it (inputs allocated and touched). torch's CPU
  allocator returns large blocks to the OS, and ``ru_maxrss`` is the kernel's
  own high-water mark, so the delta is the step's peak working memory.
* CUDA: ``torch.cuda.max_memory_allocated()`` during the step minus
  ``torch.cuda.memory_allocated()`` before it.

Time is measured in one more subprocess that alternates the two
implementations step by step (one warm-up step each, then the median of
``--repeats``), so a busy machine slows both alike. The memory children also
report checksums of the outputs and gradients, and the parent checks that both
implementations agree.

``--liger`` adds Liger-Kernel's fused linear cross-entropy
(``liger_kernel.transformers.LigerFusedLinearCrossEntropyLoss`` with
``reduction="none"``: the per-token loss is ``-logp``) as a third
implementation, measured the same way. It needs the ``liger-kernel`` package
and CUDA (its kernels are Triton); without them the row says why it was left
out.

Run it as a script (``python benches/bench_logprobs.py``, ``--device cuda``,
``--liger``, ``--tokens``/``--vocab`` to resize, ``--help``), or through
pytest-benchmark (``make bench``), where ``GRPO_FAST_BENCH_T`` shrinks T
(default 1024 and 256).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time

import pytest

IMPLS = ("fused", "naive")
LIGER = "liger"
H = 1024
B = 8


def _naive(h, w, t):
    import torch

    logits = h @ w.t()
    return torch.log_softmax(logits.float(), dim=-1).gather(-1, t.unsqueeze(-1)).squeeze(-1)


def _fused(h, w, t):
    from grpo_fast.logprobs import token_logprobs

    return token_logprobs(h, w, t)


def _liger(h, w, t):
    from liger_kernel.transformers import LigerFusedLinearCrossEntropyLoss

    # reduction="none": the per-token cross-entropy, -logp, with a backward for any upstream.
    loss = LigerFusedLinearCrossEntropyLoss(reduction="none")
    return -loss(w, h.reshape(-1, h.shape[-1]), t.reshape(-1)).view(t.shape)


_STEPS = {"fused": _fused, "naive": _naive, LIGER: _liger}


def liger_unavailable(device: str) -> str | None:
    """Why Liger-Kernel cannot be measured here (None when it can)."""
    import importlib.util

    try:
        found = importlib.util.find_spec("liger_kernel") is not None
    except (ImportError, ValueError):
        found = False
    if not found:
        return (
            "liger-kernel is not installed (pip install liger-kernel; offline: "
            "pip install --no-index --no-deps .whl/liger_kernel-*.whl, from make wheel)"
        )
    if not device.startswith("cuda"):
        return f"Liger-Kernel's kernels are Triton, they need CUDA (device {device})"
    return None


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _maxrss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def _setup(b, t, h, v, device, dtype):
    import torch

    torch.manual_seed(0)
    dt = getattr(torch, dtype)
    hidden = torch.randn(b, t, h, device=device, dtype=dt).requires_grad_(True)
    # In place: a temporary [V, H] copy would raise maxrss above the baseline.
    weight = torch.randn(v, h, device=device, dtype=dt).div_(h**0.5).requires_grad_(True)
    targets = torch.randint(0, v, (b, t), device=device)
    upstream = torch.randn(b, t, device=device)

    def step(impl):
        hidden.grad = weight.grad = None
        logp = _STEPS[impl](hidden, weight, targets)
        (logp * upstream).sum().backward()
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        return logp

    return hidden, weight, step


def child_memory(impl: str, b: int, t: int, h: int, v: int, device: str, dtype: str) -> dict:
    """Peak memory of one forward + backward of ``impl``, in this fresh process."""
    import torch

    hidden, weight, step = _setup(b, t, h, v, device, dtype)
    cuda = device.startswith("cuda")
    if cuda:
        torch.cuda.synchronize()
        before = torch.cuda.memory_allocated()
        torch.cuda.reset_peak_memory_stats()
    else:
        before = _rss_bytes()
        if _maxrss_bytes() > before + (64 << 20):
            raise RuntimeError("allocations before the step raised maxrss above the baseline")
    logp = step(impl)
    peak = (torch.cuda.max_memory_allocated() if cuda else _maxrss_bytes()) - before
    checks = [
        float(logp.double().sum()),
        float(hidden.grad.double().norm()),
        float(weight.grad.double().norm()),
    ]
    return {"impl": impl, "peak_bytes": peak, "checks": checks}


def child_time(
    b: int, t: int, h: int, v: int, device: str, dtype: str, repeats: int, impls=IMPLS
) -> dict:
    """The implementations in one process, alternating, so a noisy machine
    slows them alike; one warm-up step each."""
    _, _, step = _setup(b, t, h, v, device, dtype)
    impls = tuple(impls)
    times: dict[str, list[float]] = {impl: [] for impl in impls}
    for rnd in range(repeats + 1):
        for impl in impls if rnd % 2 == 0 else impls[::-1]:
            start = time.perf_counter()
            step(impl)
            if rnd > 0:
                times[impl].append(time.perf_counter() - start)
    return times


def _child(args: list[str], threads: int | None) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), *args]
    env = dict(os.environ)
    if threads:
        env["OMP_NUM_THREADS"] = str(threads)
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"{' '.join(args)} failed:\n{out.stderr[-4000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def compare(
    b, t, h, v, device="cpu", dtype="float32", repeats=2, threads=None, liger=False
) -> dict:
    """Peak memory of each implementation in a fresh subprocess, then all timed
    in one more subprocess. ``liger``: Liger-Kernel too, where it can run."""
    shape = [f"--batch={b}", f"--tokens={t}", f"--hidden={h}", f"--vocab={v}"]
    shape += [f"--device={device}", f"--dtype={dtype}"]
    skipped = liger_unavailable(device) if liger else None
    impls = IMPLS + ((LIGER,) if liger and skipped is None else ())
    mem = {impl: _child(["--child", impl, *shape], threads) for impl in impls}
    naive = mem["naive"]
    for impl in impls[:1] + impls[2:]:
        # Sums over thousands of tokens: agree to fp32 (or 16-bit) accumulation error.
        tol = 1e-3 if dtype == "float32" else 3e-2
        for a, n in zip(mem[impl]["checks"], naive["checks"], strict=True):
            if abs(a - n) > tol * max(1.0, abs(n)):
                raise AssertionError(f"{impl} {mem[impl]['checks']} != naive {naive['checks']}")
    timing = ["--child", "time", f"--repeats={repeats}", f"--impls={','.join(impls)}", *shape]
    times = _child(timing, threads)
    med = {impl: statistics.median(times[impl]) for impl in impls}
    row = {
        "shape": f"B={b} T={t} H={h} V={v} {dtype} {device}",
        "fused_peak_mib": mem["fused"]["peak_bytes"] / 2**20,
        "naive_peak_mib": naive["peak_bytes"] / 2**20,
        "memory_ratio": mem["fused"]["peak_bytes"] / naive["peak_bytes"],
        "fused_s": med["fused"],
        "naive_s": med["naive"],
        "time_ratio": med["fused"] / med["naive"],
    }
    if LIGER in impls:
        row.update(
            liger_peak_mib=mem[LIGER]["peak_bytes"] / 2**20,
            liger_s=med[LIGER],
            fused_vs_liger_memory=mem["fused"]["peak_bytes"] / mem[LIGER]["peak_bytes"],
            fused_vs_liger_time=med["fused"] / med[LIGER],
        )
    elif liger:
        row["liger_skipped"] = skipped
    return row


def _print(row: dict) -> None:
    print(
        f"{row['shape']}: peak fused {row['fused_peak_mib']:.0f} MiB, naive "
        f"{row['naive_peak_mib']:.0f} MiB ({100 * row['memory_ratio']:.1f}% of naive;"
        " goal <= 25%); "
        f"fwd+bwd fused {row['fused_s']:.2f} s, naive {row['naive_s']:.2f} s "
        f"({row['time_ratio']:.2f}x naive; goal <= 1.3x)",
        flush=True,
    )
    if "liger_s" in row:
        print(
            f"{row['shape']}: Liger-Kernel peak {row['liger_peak_mib']:.0f} MiB, fwd+bwd "
            f"{row['liger_s']:.3f} s; fused / liger: memory {row['fused_vs_liger_memory']:.2f}x, "
            f"time {row['fused_vs_liger_time']:.2f}x",
            flush=True,
        )
    elif "liger_skipped" in row:
        print(f"{row['shape']}: Liger-Kernel skipped: {row['liger_skipped']}", flush=True)


# --- pytest-benchmark -----------------------------------------------------------------

_T = int(os.environ.get("GRPO_FAST_BENCH_T", "0"))
CONFIGS = [(B, _T or 1024, H, 32_768), (B, _T or 256, H, 151_936)]


@pytest.mark.parametrize("cfg", CONFIGS, ids=lambda c: f"T={c[1]}-V={c[3]}")
def test_logprobs_memory_and_time(benchmark, cfg, capsys):
    torch = pytest.importorskip("torch")
    device = "cuda" if torch.cuda.is_available() else "cpu"
    # The timed call is the whole comparison (subprocesses included); the figures
    # that matter are the ratios printed here and stored in extra_info.
    row = benchmark.pedantic(compare, args=(*cfg, device), rounds=1, iterations=1)
    benchmark.extra_info.update(row)
    with capsys.disabled():
        print()
        _print(row)


# --- script ---------------------------------------------------------------------------


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--child", choices=(*IMPLS, LIGER, "time"), help=argparse.SUPPRESS)
    p.add_argument("--impls", default=",".join(IMPLS), help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, default=B)
    p.add_argument("--tokens", type=int, default=None, help="T (default 1024 and 256)")
    p.add_argument("--hidden", type=int, default=H)
    p.add_argument("--vocab", type=int, default=None, help="V (default 32768 and 151936)")
    p.add_argument("--device", default=None, help="cpu or cuda (default: cuda if available)")
    p.add_argument("--dtype", default="float32", help="float32, bfloat16, float16")
    p.add_argument("--repeats", type=int, default=2, help="timed steps of each implementation")
    p.add_argument("--threads", type=int, default=None, help="OMP_NUM_THREADS of the children")
    p.add_argument(
        "--liger", action="store_true", help="also Liger-Kernel's fused linear cross-entropy"
    )
    a = p.parse_args(argv)
    if a.child == "time":
        impls = a.impls.split(",")
        r = child_time(a.batch, a.tokens, a.hidden, a.vocab, a.device, a.dtype, a.repeats, impls)
        print(json.dumps(r))
        return
    if a.child:
        print(
            json.dumps(
                child_memory(a.child, a.batch, a.tokens, a.hidden, a.vocab, a.device, a.dtype)
            )
        )
        return
    import torch

    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    if a.tokens or a.vocab:
        configs = [(a.batch, a.tokens or 1024, a.hidden, a.vocab or 32_768)]
    else:
        configs = [(a.batch, 1024, a.hidden, 32_768), (a.batch, 256, a.hidden, 151_936)]
    for cfg in configs:
        row = compare(
            *cfg, device=device, dtype=a.dtype, repeats=a.repeats, threads=a.threads, liger=a.liger
        )
        _print(row)


if __name__ == "__main__":
    main()
