"""Grouping rollouts by prompt and GRPO-family advantages, computed in Rust.

The formulas, with their papers, are in ``rust/core/src/advantage.rs``; this
module prepares the inputs and documents the conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from grpo_fast import _core
from grpo_fast._ids import as_float_array, as_group_ids
from grpo_fast.errors import InvalidInputError
from grpo_fast.names import ESTIMATORS, SCALES

__all__ = [
    "ESTIMATORS",
    "SCALES",
    "AdvantageResult",
    "Groups",
    "broadcast_to_tokens",
    "compute_advantages",
    "group",
]

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INT64 = (np.dtype(np.int64),)


def _is_ready(x: Any, dtypes: tuple[np.dtype, ...]) -> bool:
    return type(x) is np.ndarray and x.dtype in dtypes and x.ndim == 1 and x.flags.c_contiguous


@dataclass(frozen=True)
class Groups:
    """Rollouts grouped by id, as compressed sparse rows.

    Attributes
    ----------
    index : int64 array [N]
        Group of each rollout; groups are numbered in order of first appearance.
    sizes : int64 array [num_groups]
    offsets : int64 array [num_groups + 1]
        Group ``g``'s rollouts are ``order[offsets[g]:offsets[g + 1]]``.
    order : int64 array [N]
        Rollout indices sorted by group, input order kept within a group.
    contiguous : bool
        Every group is one run of consecutive rollouts.
    """

    index: np.ndarray
    sizes: np.ndarray
    offsets: np.ndarray
    order: np.ndarray
    contiguous: bool

    @property
    def num_groups(self) -> int:
        return len(self.sizes)


def group(group_ids: Any) -> Groups:
    """Group rollouts by their prompt ids.

    Parameters
    ----------
    group_ids : int array, list of str, or numpy str/object array
        One id per rollout, in any order (verl's uuid strings work as they are).

    Examples
    --------
    >>> g = group(["b", "a", "b"])
    >>> g.index.tolist(), g.sizes.tolist()
    ([0, 1, 0], [2, 1])
    """
    index, sizes, offsets, order, contiguous = _core.group_ids(as_group_ids(group_ids))
    return Groups(index, sizes, offsets, order, contiguous)


# Built in Rust; its arrays become numpy on first access, so a caller that
# reads only `advantages` pays for one array. It pickles as its arrays.
# Documented in its docstring.
AdvantageResult = _core.AdvantageResult


def compute_advantages(
    rewards: Any,
    group_ids: Any,
    *,
    estimator: str = "grpo",
    scale: str = "group",
    eps: float = 1e-6,
    unbiased: bool = True,
    success_threshold: float = 1.0,
    baselines: Any = None,
    lengths: Any = None,
) -> AdvantageResult:
    """GRPO-family advantages of rewards grouped by prompt.

    Parameters
    ----------
    rewards : array-like [N]
        float32 or float64 (other numbers are converted). NaN or ``None`` marks
        an unscorable rollout: it is left out of its group's statistics and
        gets advantage 0. Infinities are rejected.
    group_ids : int array, list of str, or numpy str/object array [N]
        The prompt each rollout answers, in any order, groups of any size.
    estimator : {"grpo", "rloo", "reinforce_pp_baseline", "grpo_passk", "remax", "opo", "gpg"}
        (:data:`grpo_fast.names.ESTIMATORS`; ``reinforce_plus_plus_baseline``
        and ``reinforce++-baseline`` are accepted for ``reinforce_pp_baseline``)
        - ``grpo``: ``(r - mean_g) / (std + eps)``, std chosen by ``scale``.
        - ``rloo``: ``r - mean of the other rollouts of the group``.
        - ``reinforce_pp_baseline``: ``r - mean_g``, then whitened over the
          batch's scorable rollouts: ``x / (std_batch(x) + eps)`` (the
          group-centred values already have batch mean 0).
        - ``grpo_passk``: only the best rollout of a group (first of ties)
          gets ``max - second max``, scaled by ``scale``; the rest get 0.
        - ``remax`` (ReMax): ``r - baselines``, the reward of each prompt's
          greedy completion; a group has signal when some reward differs
          from its baseline (a group of one too).
        - ``opo`` (OPO): ``r - sum_g(l r) / sum_g(l)`` with ``l = lengths``,
          the length-weighted mean of the group.
        - ``gpg`` (GPG): ``(r - mean_g) * B / (B - M)``, ``B`` the batch's
          scorable rollouts, ``M`` those in groups without signal.
    scale : {"group", "batch", "none"}
        Divisor for ``grpo`` and ``grpo_passk``: the group's std, one std of
        all scorable rewards of the batch (TRL's ``scale_rewards="batch"``),
        or none (Dr. GRPO).
    eps : float
        Added to the std before dividing.
    unbiased : bool
        Bessel-corrected std (``n - 1``), as torch and verl; False for numpy's
        default population std.
    success_threshold : float
        A reward at or above it counts as solved in ``solve_rate``.
    baselines : array-like [N], optional
        ``remax`` only (and needed there): each rollout's baseline; NaN makes
        the rollout unscorable.
    lengths : array-like [N], optional
        ``opo`` only (and needed there): each completion's length in tokens.

    Every estimator but ``remax`` gives exactly 0 to a group with fewer than
    two scorable rollouts or whose scorable rewards are all equal. ``remax``,
    ``opo`` and ``gpg`` do not use ``scale`` or ``eps``.

    Examples
    --------
    >>> out = compute_advantages([1.0, 0.0, 0.5, 0.5], [7, 7, 8, 8])
    >>> [round(float(a), 3) for a in out.advantages]
    [0.707, -0.707, 0.0, 0.0]
    >>> out.keep.tolist(), out.frac_zero_std
    ([True, True, False, False], 0.5)
    >>> out = compute_advantages([1.0, 0.0, 1.0, 1.0], [7, 7, 8, 8], estimator="remax",
    ...                          baselines=[0.0, 0.0, 0.0, 0.0])
    >>> out.advantages.tolist()
    [1.0, 0.0, 1.0, 1.0]
    """
    # The names (and their aliases) are checked once, in Rust.
    # The common call (contiguous 1-D float rewards, int64 ids) skips the
    # conversions: at N = 1,024 they would cost as much as the computation.
    r = rewards if _is_ready(rewards, _FLOATS) else as_float_array(rewards, "rewards")
    ids = group_ids if _is_ready(group_ids, _INT64) else as_group_ids(group_ids)
    extra = {
        name: as_float_array(values, name).astype(np.float64, copy=False)
        for name, values in (("baselines", baselines), ("lengths", lengths))
        if values is not None
    }
    return _core.compute_advantages(
        r, ids, estimator, scale, float(eps), bool(unbiased), float(success_threshold), **extra
    )


def broadcast_to_tokens(advantages: Any, mask: Any) -> Any:
    """Per-rollout advantages ``[N]`` spread over a token mask ``[N, T]``.

    The result has the mask's type (numpy array or torch tensor) and shape,
    with ``advantages[i]`` on the valid tokens of row ``i`` and 0 elsewhere, as
    verl's estimators return.

    Examples
    --------
    >>> broadcast_to_tokens(np.array([2.0, 0.5]), np.array([[1, 1, 0], [1, 0, 0]])).tolist()
    [[2.0, 2.0, 0.0], [0.5, 0.0, 0.0]]
    """
    if type(mask).__module__.startswith("torch"):
        import torch

        adv = torch.as_tensor(advantages, device=mask.device)
        if adv.dim() != 1 or mask.dim() != 2 or adv.shape[0] != mask.shape[0]:
            raise InvalidInputError(
                f"advantages {tuple(adv.shape)} and mask {tuple(mask.shape)} must be [N] and [N, T]"
            )
        dtype = adv.dtype if adv.is_floating_point() else torch.float32
        return adv.to(dtype).unsqueeze(-1) * mask.to(dtype)
    adv = np.asarray(advantages)
    m = np.asarray(mask)
    if adv.ndim != 1 or m.ndim != 2 or adv.shape[0] != m.shape[0]:
        raise InvalidInputError(f"advantages {adv.shape} and mask {m.shape} must be [N] and [N, T]")
    dtype = adv.dtype if adv.dtype.kind == "f" else np.float32
    return adv.astype(dtype, copy=False)[:, None] * m.astype(dtype, copy=False)
