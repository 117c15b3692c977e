"""Turning user-supplied rewards and group ids into what the Rust core takes."""

from __future__ import annotations

from typing import Any

import numpy as np

from grpo_fast.errors import InvalidInputError


def _to_numpy(x: Any) -> Any:
    """torch tensors (on any device) become numpy without importing torch."""
    if type(x).__module__.startswith("torch") and hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x


def as_float_array(values: Any, name: str) -> np.ndarray:
    """A contiguous 1-D float32/float64 array; ``None`` entries become NaN."""
    values = _to_numpy(values)
    if isinstance(values, np.ndarray) and values.dtype in (np.float32, np.float64):
        arr = values
    else:
        if isinstance(values, (list, tuple)) and any(v is None for v in values):
            values = [np.nan if v is None else v for v in values]
        try:
            arr = np.asarray(values)
        except (TypeError, ValueError) as e:
            raise InvalidInputError(f"{name} must be an array of numbers: {e}") from None
        if arr.dtype.kind in "biuf":
            arr = arr.astype(np.float32 if arr.dtype == np.float16 else np.float64)
        elif arr.dtype == object or arr.dtype.kind not in "biuf":
            try:
                arr = arr.astype(np.float64)
            except (TypeError, ValueError):
                raise InvalidInputError(
                    f"{name} must hold numbers (or None/NaN for unscorable items), "
                    f"got dtype {arr.dtype}"
                ) from None
    if arr.ndim != 1:
        raise InvalidInputError(f"{name} must be 1-D, got shape {arr.shape}")
    return np.ascontiguousarray(arr)


def as_group_ids(ids: Any) -> Any:
    """An int64 array, a list of str, or a 2-D uint8 view of fixed-width strings.

    No Python-level loop over the ids: a list whose first id is a str goes to
    the core as it is (which checks every element and names the first that is
    not a str); anything else goes through numpy.
    """
    ids = _to_numpy(ids)
    if isinstance(ids, np.ndarray) and ids.dtype == object:
        ids = ids.tolist()
    if isinstance(ids, (list, tuple)):
        if len(ids) == 0:
            return np.zeros(0, dtype=np.int64)
        if isinstance(ids[0], str):
            return ids if isinstance(ids, list) else list(ids)
        try:
            arr = np.asarray(ids)
        except (ValueError, OverflowError) as e:
            raise InvalidInputError(
                f"group_ids must be a 1-D sequence of ints or str: {e}"
            ) from None
        if arr.dtype.kind in "USO":
            raise InvalidInputError(
                f"group_ids must be all str or all int; the first is a "
                f"{type(ids[0]).__name__} but they convert to dtype {arr.dtype}"
            )
    else:
        arr = np.asarray(ids)
    if arr.ndim != 1:
        raise InvalidInputError(f"group_ids must be 1-D, got shape {arr.shape}")
    kind = arr.dtype.kind
    if kind in "iub":
        return np.ascontiguousarray(arr, dtype=np.int64)
    if kind in "US":
        arr = np.ascontiguousarray(arr)
        return arr.view(np.uint8).reshape(len(arr), arr.dtype.itemsize)
    if kind == "O":
        return as_group_ids(arr.tolist())
    raise InvalidInputError(f"group_ids must be ints or strings, got dtype {arr.dtype}")
