# Type stubs of the Rust extension grpo_fast._core, kept by hand and checked
# against the binary with mypy.stubtest (make lint / make test).
from collections.abc import Sequence
from typing import Any, final

import numpy as np
import numpy.typing as npt

__version__: str
# The name tables (rust/core/src/names.rs); grpo_fast.names re-exports them.
ESTIMATORS: tuple[str, ...]
SCALES: tuple[str, ...]
RULES: tuple[str, ...]
DEFAULT_RULES: tuple[str, ...]
REWARD_KINDS: tuple[str, ...]
STEP_SPLITS: tuple[str, ...]
# The advantage epsilon, the core's default (rust/core/src/advantage.rs: Params).
ADVANTAGE_EPS: float
# Step labels of check_steps (rust/core/src/steps.rs).
STEP_CORRECT: int
STEP_WRONG: int
STEP_UNCHECKED: int
# pyo3 sets __all__ at runtime; stubtest checks it against this list.
__all__ = [
    "ADVANTAGE_EPS",
    "AdvantageResult",
    "DEFAULT_RULES",
    "ESTIMATORS",
    "ExtractOptions",
    "REWARD_KINDS",
    "RULES",
    "RewardSet",
    "RewardSpec",
    "RunOutcome",
    "SCALES",
    "STEP_CORRECT",
    "STEP_SPLITS",
    "STEP_UNCHECKED",
    "STEP_WRONG",
    "StepOptions",
    "VerifyOptions",
    "__version__",
    "check_steps",
    "compute_advantages",
    "extract_answer",
    "extract_gold",
    "get_num_threads",
    "group_ids",
    "parse",
    "process_advantages",
    "sandbox_isolation",
    "sandbox_run",
    "set_num_threads",
    "verify",
    "verify_batch",
    "verify_match",
]

def set_num_threads(n: object) -> None: ...
def get_num_threads() -> int: ...
def group_ids(
    ids: Any,
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    bool,
]: ...
def compute_advantages(
    rewards: Any,
    group_ids: Any,
    estimator: object,
    scale: object,
    eps: float,
    unbiased: bool,
    success_threshold: float,
    baselines: npt.NDArray[np.float64] | None = None,
    lengths: npt.NDArray[np.float64] | None = None,
) -> AdvantageResult: ...

@final
class AdvantageResult:
    def __new__(
        cls,
        advantages: npt.NDArray[np.float32],
        keep: npt.NDArray[np.bool_],
        group_index: npt.NDArray[np.int64],
        mean: npt.NDArray[np.float64],
        std: npt.NDArray[np.float64],
        size: npt.NDArray[np.int64],
        num_valid: npt.NDArray[np.int64],
        solve_rate: npt.NDArray[np.float64],
        frac_zero_std: float,
    ) -> AdvantageResult: ...
    def __reduce__(self) -> tuple[type[AdvantageResult], tuple[Any, ...]]: ...
    @property
    def advantages(self) -> npt.NDArray[np.float32]: ...
    @property
    def keep(self) -> npt.NDArray[np.bool_]: ...
    @property
    def mean(self) -> npt.NDArray[np.float64]: ...
    @property
    def std(self) -> npt.NDArray[np.float64]: ...
    @property
    def size(self) -> npt.NDArray[np.int64]: ...
    @property
    def num_valid(self) -> npt.NDArray[np.int64]: ...
    @property
    def solve_rate(self) -> npt.NDArray[np.float64]: ...
    @property
    def group_index(self) -> npt.NDArray[np.int64]: ...
    @property
    def frac_zero_std(self) -> float: ...
    @property
    def num_groups(self) -> int: ...
    def __len__(self) -> int: ...

# Answer extraction, verification and reward specs (rust/python/src/verify.rs,
# options.rs). Texts are `object`: a non-str raises InvalidInputError.
@final
class ExtractOptions:
    def __new__(
        cls,
        rules: object = None,
        max_length: object = None,
        tail_length: object = None,
        think: object = None,
    ) -> ExtractOptions: ...
    @property
    def rules(self) -> list[str]: ...
    @property
    def max_length(self) -> int: ...
    @property
    def tail_length(self) -> int: ...
    @property
    def think(self) -> bool: ...

@final
class VerifyOptions:
    def __new__(
        cls,
        rel_tol: object = None,
        allow_set_relation_comp: object = None,
        rules: object = None,
        max_length: object = None,
        tail_length: object = None,
        think: object = None,
    ) -> VerifyOptions: ...
    @property
    def rel_tol(self) -> float: ...
    @property
    def allow_set_relation_comp(self) -> bool: ...
    @property
    def rules(self) -> list[str]: ...
    @property
    def max_length(self) -> int: ...
    @property
    def tail_length(self) -> int: ...
    @property
    def think(self) -> bool: ...

def extract_answer(text: object, options: ExtractOptions) -> tuple[list[str], str] | None: ...
def extract_gold(text: object, options: ExtractOptions) -> tuple[list[str], str] | None: ...
def parse(text: object, options: ExtractOptions) -> tuple[str | None, str | None, str]: ...
def verify(
    gold: object,
    pred: object,
    options: VerifyOptions,
    truncated: object = None,
    prompt: str | None = None,
) -> tuple[bool, str, str | None, str | None]: ...
def verify_batch(
    golds: object,
    preds: object,
    options: VerifyOptions,
    truncated: object = None,
    prompts: Sequence[str] | None = None,
) -> npt.NDArray[np.float32]: ...
def verify_match(
    gold: object,
    pred: object,
    options: VerifyOptions,
    truncated: object = None,
    prompt: str | None = None,
) -> bool: ...

@final
class RewardSpec:
    @staticmethod
    def math(options: VerifyOptions) -> RewardSpec: ...
    @staticmethod
    def exact(case_sensitive: bool, extract: ExtractOptions | None = None) -> RewardSpec: ...
    @staticmethod
    def choice(extract: ExtractOptions) -> RewardSpec: ...
    @staticmethod
    def format(pattern: object, dot_all: bool) -> RewardSpec: ...
    @staticmethod
    def overlong(max_length: object, cache_length: object) -> RewardSpec: ...
    @staticmethod
    def cosine(
        options: VerifyOptions,
        max_length: object,
        min_value_wrong: object,
        max_value_wrong: object,
        min_value_correct: object,
        max_value_correct: object,
    ) -> RewardSpec: ...
    @staticmethod
    def repetition(ngram_size: object, max_penalty: object) -> RewardSpec: ...
    @property
    def kind(self) -> str: ...

@final
class RewardSet:
    def __new__(cls, specs: list[tuple[RewardSpec, float]]) -> RewardSet: ...
    def score(
        self,
        completions: object,
        golds: object,
        lengths: npt.NDArray[np.int64] | None,
        truncated: object = None,
        prompts: Sequence[str] | None = None,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def __len__(self) -> int: ...

# Process supervision (rust/python/src/steps.rs).
@final
class StepOptions:
    def __new__(
        cls,
        split: object = None,
        pattern: object = None,
        rel_tol: object = None,
        max_length: object = None,
    ) -> StepOptions: ...
    @property
    def split(self) -> str: ...
    @property
    def pattern(self) -> str | None: ...
    @property
    def rel_tol(self) -> float: ...
    @property
    def max_length(self) -> int: ...

def check_steps(
    completions: object, options: StepOptions
) -> tuple[
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int64],
    npt.NDArray[np.int8],
]: ...
def process_advantages(
    step_rewards: npt.NDArray[np.float32],
    step_ends: npt.NDArray[np.int64],
    offsets: npt.NDArray[np.int64],
    group_ids: Any,
    lengths: npt.NDArray[np.int64],
    width: object,
    outcome: npt.NDArray[np.float32] | None,
    scale: object,
    eps: float,
    unbiased: bool,
    process_weight: float,
) -> tuple[
    npt.NDArray[np.float32],
    npt.NDArray[np.float32],
    npt.NDArray[np.float64],
    npt.NDArray[np.float64],
    npt.NDArray[np.int64],
]: ...

@final
class RunOutcome:
    @property
    def ending(self) -> str: ...
    @property
    def exit_code(self) -> int | None: ...
    @property
    def signal(self) -> int | None: ...
    @property
    def stdout(self) -> bytes: ...
    @property
    def stderr(self) -> bytes: ...
    @property
    def cpu_seconds(self) -> float: ...
    @property
    def wall_seconds(self) -> float: ...
    @property
    def max_rss_kib(self) -> int: ...
    @property
    def collected(self) -> list[bytes | None]: ...
    @property
    def message(self) -> str: ...

def sandbox_run(
    jobs: Sequence[Any], limits: Any, workers: int, force_fallback: bool = False
) -> list[RunOutcome]: ...
def sandbox_isolation() -> str: ...
