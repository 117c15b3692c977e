#!/usr/bin/env bash
# The GPU check: grpo-fast's CUDA paths on a machine with one GPU, in one go (< 8 minutes).
#
# On a development machine:   make wheel        (the abi3 wheel, Liger-Kernel's and pytest's, in .whl/)
# Copy the checkout with .whl/ to the GPU machine (torch, transformers and triton there; no Rust,
# no vLLM, no network needed), then in the checkout:
#                             bash scripts/gpu_check.sh [--wheels .whl] [--out FILE]
#
# Steps, each under its own time limit, all output into one report file:
#   1. install the wheels into a fresh folder put first on PYTHONPATH (pip --no-index --no-deps;
#      the machine's own packages are not touched),
#   2. pytest -m cuda (tests/test_cuda.py: policy_loss on CUDA vs CPU float64, fused log-probs in
#      bf16 vs float32, one trainer step of a random-init ~100M Qwen2 in bf16;
#      tests/test_distributed.py: FSDP2 over a one-GPU nccl group vs the unwrapped model),
#   3. benches/bench_logprobs.py --device cuda --liger, float32 and bfloat16 (fused vs naive vs
#      Liger-Kernel's fused linear cross-entropy; Liger is skipped with the reason if absent),
#   4. the vLLM samplers: tests/vllm_samplers (they skip where vLLM is not importable) and
#      benches/bench_sampler.py --device cuda (HF generate vs vLLM tokens/s on the demo and a
#      ~0.5B-shape model, push seconds per GB, demo training steps/s and accuracy per sampler;
#      without vLLM only the HF rows),
#   5. benches/bench_async.py --device cuda (synchronous vs --async-rollouts --max-staleness 1 on
#      the demo with HF sampling: steps/s, final held-out accuracy for 3 seeds, waiting times).
# --cpu-dry-run runs the same steps on a machine without a GPU (the CUDA tests skip, the bench
# runs tiny shapes on the CPU): the check of the check.
set -uo pipefail

usage() {
    cat <<'EOF'
usage: bash scripts/gpu_check.sh [--wheels DIR] [--out FILE] [--cpu-dry-run] [--no-install]
                                 [--skip-bench]

  --wheels DIR     folder with grpo_fast-*-abi3-*.whl (and optionally liger_kernel-*.whl,
                   pytest's wheels), as `make wheel` fills it (default: .whl)
  --out FILE       the report (default: $OUT/gpu_check.txt when $OUT is set, else gpu_check.txt)
  --cpu-dry-run    no GPU: the CUDA tests skip and the bench runs tiny shapes on the CPU
  --no-install     use the grpo_fast that python already imports (no wheel)
  --skip-bench     only the install and the CUDA tests
  -h, --help       this text

Environment: PYTHON (default python3).
EOF
}

die() { # a message on one line, exit status 2 (the input or the setup is at fault)
    echo "gpu_check.sh: $*" >&2
    exit 2
}

WHEELS=.whl
REPORT=""
DRY=0
INSTALL=1
BENCH_TOO=1
while [ $# -gt 0 ]; do
    case "$1" in
        --wheels) [ $# -ge 2 ] || die "--wheels needs a folder"; WHEELS=$2; shift 2 ;;
        --wheels=*) WHEELS=${1#*=}; shift ;;
        --out) [ $# -ge 2 ] || die "--out needs a file name"; REPORT=$2; shift 2 ;;
        --out=*) REPORT=${1#*=}; shift ;;
        --cpu-dry-run) DRY=1; shift ;;
        --no-install) INSTALL=0; shift ;;
        --skip-bench) BENCH_TOO=0; shift ;;
        -h|--help) usage; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
done
if [ -z "$REPORT" ]; then
    REPORT=${OUT:+$OUT/}gpu_check.txt
fi
[ -n "$WHEELS" ] || die "--wheels needs a folder"

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
PY=${PYTHON:-python3}
command -v "$PY" >/dev/null 2>&1 || die "no python: '$PY' is not on PATH (set PYTHON)"
if [ "$INSTALL" = 1 ]; then
    [ -d "$WHEELS" ] || die "no wheel folder '$WHEELS': build one with 'make wheel'"
    WHEEL=""
    for w in "$WHEELS"/grpo_fast-*-abi3-*.whl; do [ -e "$w" ] && WHEEL=$w; done
    [ -n "$WHEEL" ] || die "no grpo_fast-*-abi3-*.whl in '$WHEELS': build one with 'make wheel'"
fi
"$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 3)" 2>/dev/null
case $? in
    0) ;;
    3) [ "$DRY" = 1 ] ||
        die "no CUDA device visible to torch; on a machine without a GPU use --cpu-dry-run" ;;
    *) die "torch is not importable by $PY" ;;
esac
mkdir -p "$(dirname "$REPORT")" || die "cannot create the folder of $REPORT"
: >"$REPORT" || die "cannot write $REPORT"
REPORT=$(cd "$(dirname "$REPORT")" && pwd)/$(basename "$REPORT")

START=$(date +%s)
FAILED=()
log() { echo "$*" | tee -a "$REPORT"; }
CHILD=""
interrupted() {
    # timeout runs its command in a process group of its own: pass the signal on.
    [ -n "$CHILD" ] && kill -TERM "$CHILD" 2>/dev/null && wait "$CHILD" 2>/dev/null
    log ""
    log "gpu_check: INTERRUPTED after $(($(date +%s) - START))s"
    exit 130
}
trap interrupted INT TERM
# run NAME SECONDS CMD...: output into the report; a failure or a timeout is recorded, not fatal.
run() {
    local name=$1 limit=$2
    shift 2
    log ""
    log "=== $name (limit ${limit}s): $*"
    local t0=$SECONDS
    # In the background, so that a signal to this script is handled at once (wait returns).
    timeout --kill-after=10 "$limit" "$@" > >(tee -a "$REPORT") 2>&1 &
    CHILD=$!
    wait "$CHILD"
    local rc=$?
    CHILD=""
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        log "=== $name: TIMED OUT after ${limit}s"
        FAILED+=("$name (timeout)")
    elif [ "$rc" != 0 ]; then
        log "=== $name: FAILED (exit $rc) after $((SECONDS - t0))s"
        FAILED+=("$name (exit $rc)")
    else
        log "=== $name: ok in $((SECONDS - t0))s"
    fi
}

cd "$ROOT" || die "cannot enter $ROOT"
log "grpo-fast GPU check, $(date -u +%Y-%m-%dT%H:%M:%SZ), host $(hostname)$([ "$DRY" = 1 ] && echo ', CPU DRY RUN')"

# 1. Install the wheels into a folder of our own, first on PYTHONPATH.
if [ "$INSTALL" = 1 ]; then
    SITE=$(mktemp -d "${TMPDIR:-/tmp}/gpu_check.XXXXXX")/site
    mkdir -p "$SITE"
    install_wheels() { # pip when there is one, else a wheel is a zip: unpack it
        if "$PY" -m pip --version >/dev/null 2>&1; then
            "$PY" -m pip install --quiet --no-index --no-deps --target "$SITE" "$@"
        else
            for w in "$@"; do "$PY" -m zipfile -e "$w" "$SITE" || return 1; done
        fi
    }
    EXTRA=()
    for w in "$WHEELS"/liger_kernel-*.whl; do [ -e "$w" ] && EXTRA+=("$w"); done
    if ! "$PY" -c "import pytest" 2>/dev/null; then
        for pat in pytest iniconfig pluggy packaging pygments; do
            for w in "$WHEELS"/"$pat"-*.whl; do [ -e "$w" ] && EXTRA+=("$w"); done
        done
    fi
    log ""
    log "=== install into $SITE: $(basename "$WHEEL")${EXTRA[*]:+ and ${#EXTRA[@]} more}"
    install_wheels "$WHEEL" "${EXTRA[@]}" 2>&1 | tee -a "$REPORT"
    [ "${PIPESTATUS[0]}" = 0 ] || { log "gpu_check: FAILED: the wheels did not install"; exit 1; }
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi

log ""
"$PY" - <<'EOF' 2>&1 | tee -a "$REPORT"
import importlib, platform, sys
import torch
import grpo_fast
print(f"python {platform.python_version()}, torch {torch.__version__} (CUDA {torch.version.cuda})")
if torch.cuda.is_available():
    p = torch.cuda.get_device_properties(0)
    print(f"GPU: {p.name}, {p.total_memory / 2**30:.0f} GiB, capability {p.major}.{p.minor}")
else:
    print("GPU: none visible to torch")
print(f"grpo_fast {grpo_fast.__version__} from {grpo_fast.__file__}")
from importlib.metadata import version
for name, dist in (("transformers",) * 2, ("triton",) * 2, ("liger_kernel", "liger-kernel"),
                   ("pytest",) * 2):
    try:
        importlib.import_module(name)
        print(f"{name} {version(dist)}")
    except Exception as e:  # reported, not fatal: each step says what it lacks
        print(f"{name}: not importable ({type(e).__name__}: {e})")
EOF
command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi --query-gpu=name,memory.total,driver_version \
    --format=csv,noheader 2>&1 | tee -a "$REPORT"

# 2. The CUDA tests (they skip, with the reason, where CUDA is absent).
run "pytest -m cuda" 200 "$PY" -m pytest -m cuda tests/test_cuda.py tests/test_distributed.py \
    -q -s -rs -p no:cacheprovider

# 3. Token log-probs: fused vs naive vs Liger-Kernel, float32 and bfloat16.
if [ "$DRY" = 1 ]; then
    BENCH=(--device cpu --batch 2 --tokens 64 --hidden 64 --vocab 2048 --repeats 1)
else
    BENCH=(--device cuda --repeats 5)
fi
# Each bench child is a fresh process (torch import, CUDA init, Triton compiling Liger's kernels).
for dtype in float32 bfloat16; do
    [ "$BENCH_TOO" = 1 ] || break
    run "bench_logprobs $dtype" 120 "$PY" benches/bench_logprobs.py --liger --dtype "$dtype" \
        "${BENCH[@]}"
done

# 4. The vLLM samplers: their tests, then HF generate vs vLLM (HF rows only without vLLM).
if [ "$BENCH_TOO" = 1 ]; then
    run "pytest tests/vllm_samplers" 300 "$PY" -m pytest tests/vllm_samplers -q -rs \
        -p no:cacheprovider -W ignore::DeprecationWarning -W ignore::FutureWarning
    if [ "$DRY" = 1 ]; then
        SAMPLER=(--device cpu --prompts 2 --n 2 --tokens 4 --repeats 1 --big-hidden 64
            --big-intermediate 128 --big-layers 2 --big-heads 2 --big-kv-heads 1 --big-prompts 2
            --big-n 2 --steps 0)
    else
        SAMPLER=(--device cuda --steps 100)
    fi
    run "bench_sampler" 300 "$PY" benches/bench_sampler.py "${SAMPLER[@]}"
fi

# 5. Asynchronous rollouts: synchronous vs async training steps/s and accuracy (docs/async.md).
if [ "$BENCH_TOO" = 1 ]; then
    if [ "$DRY" = 1 ]; then
        ASYNC=(--device cpu --steps 2 --seeds 0 --eval-size 4 --prompts-per-step 2
            --num-generations 2)
    else
        ASYNC=(--device cuda --steps 100)
    fi
    run "bench_async" 300 "$PY" benches/bench_async.py "${ASYNC[@]}"
fi

log ""
log "=== total $(($(date +%s) - START))s; report: $REPORT"
if [ ${#FAILED[@]} -gt 0 ]; then
    log "gpu_check: FAILED: ${FAILED[*]}"
    exit 1
fi
log "gpu_check: done"
