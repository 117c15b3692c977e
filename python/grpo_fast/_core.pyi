# Type stubs of the Rust extension grpo_fast._core, kept by hand and checked
# against the binary with mypy.stubtest (make lint / make test).
from typing import Any, final

import numpy as np
import numpy.typing as npt

__version__: str
# pyo3 sets __all__ at runtime; stubtest checks it against this list.
__all__ = [
    "AdvantageResult",
    "RewardSet",
    "__version__",
    "compute_advantages",
    "extract_answer",
    "extract_gold",
    "get_num_threads",
    "group_ids",
    "parse",
    "set_num_threads",
    "verify",
    "verify_batch",
]

def set_num_threads(n: int) -> None: ...
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
    estimator: str,
    scale: str,
    eps: float,
    unbiased: bool,
    success_threshold: float,
) -> AdvantageResult: ...

@final
class AdvantageResult:
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

# Answer extraction, verification and reward specs (rust/python/src/verify.rs).
def extract_answer(
    text: str, rules: list[str] | None, max_length: int | None, tail_length: int | None
) -> tuple[list[str], str] | None: ...
def extract_gold(
    text: str, rules: list[str] | None, max_length: int | None, tail_length: int | None
) -> tuple[list[str], str] | None: ...
def parse(
    text: str, rules: list[str] | None, max_length: int | None, tail_length: int | None
) -> tuple[str | None, str | None, str]: ...
def verify(
    gold: str,
    pred: str,
    rel_tol: float,
    allow_set_relation_comp: bool,
    rules: list[str] | None,
    max_length: int | None,
    tail_length: int | None,
) -> tuple[bool, str, str | None, str | None]: ...
def verify_batch(
    golds: str | list[str | None] | None,
    preds: list[str],
    rel_tol: float,
    allow_set_relation_comp: bool,
    rules: list[str] | None,
    max_length: int | None,
    tail_length: int | None,
) -> npt.NDArray[np.float32]: ...

@final
class RewardSet:
    def __new__(cls, specs: list[tuple[str, dict[str, Any], float]]) -> RewardSet: ...
    def score(
        self,
        completions: list[str],
        golds: str | list[str | None] | None,
        lengths: npt.NDArray[np.int64] | None,
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32]]: ...
    def __len__(self) -> int: ...
