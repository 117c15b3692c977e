# Type stubs of the Rust extension grpo_fast._core, kept by hand and checked
# against the binary with mypy.stubtest (make lint / make test).
from typing import Any

import numpy as np
import numpy.typing as npt

__version__: str

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
) -> dict[str, Any]: ...
