"""Grouping rollouts by prompt and GRPO-family advantages, computed in Rust.

The formulas, with their papers, are in ``rust/core/src/advantage/estimators.rs``; this
module prepares the inputs and documents the conventions.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from grpo_fast import _core
from grpo_fast._ids import as_float_array, as_group_ids
from grpo_fast.errors import InvalidInputError
from grpo_fast.names import ADVANTAGE_EPS, ESTIMATORS, SCALES

__all__ = [
    "ESTIMATORS",
    "SCALES",
    "AdvantageResult",
    "Groups",
    "ProcessAdvantageResult",
    "broadcast_to_tokens",
    "compute_advantages",
    "compute_process_advantages",
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
    eps: float = ADVANTAGE_EPS,
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


@dataclass(frozen=True)
class ProcessAdvantageResult:
    """Token advantages from step rewards (:func:`compute_process_advantages`).

    Attributes
    ----------
    advantages : float32 array [N, T]
    step_advantages : float32 array [S]
        Each step's normalised reward (0 for a neutral step or a group
        without signal), before ``process_weight``.
    mean, std : float64 arrays [num_groups]
        Of each group's rewarded steps (mean NaN when it has none).
    num_valid : int64 array [num_groups]
        Rewarded (non-NaN) steps per group.
    """

    advantages: np.ndarray
    step_advantages: np.ndarray
    mean: np.ndarray
    std: np.ndarray
    num_valid: np.ndarray


def _int64(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise InvalidInputError(f"{name} must be a 1-D array of ints, got {arr.dtype} {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.int64)


def compute_process_advantages(
    step_rewards: Any,
    step_ends: Any,
    offsets: Any,
    group_ids: Any,
    lengths: Any,
    *,
    width: int | None = None,
    outcome: Any = None,
    process_weight: float = 1.0,
    unchecked_reward: float | None = None,
    scale: str = "group",
    eps: float = ADVANTAGE_EPS,
    unbiased: bool = True,
) -> ProcessAdvantageResult:
    """Per-token advantages from per-step rewards (process supervision).

    DeepSeekMath (Shao et al. 2024, section 4.1.3): the step rewards of all
    outputs of a prompt are normalised together, ``r~ = (r - mean_g) / (std_g +
    eps)``, and the advantage of token ``t`` of output ``i`` is the sum of
    ``r~`` over the steps of ``i`` that end at or after ``t``. Computed in
    Rust over the CSR layout of :func:`grpo_fast.check_steps`.

    Parameters
    ----------
    step_rewards : array-like [S]
        One reward per step: the checker's (:meth:`Steps.rewards`) or any
        process reward model's. NaN or None marks a step without a reward:
        neutral (left out of the statistics, no contribution).
    step_ends : int array [S]
        The token index (``0 <= end < lengths[i]``) at which each step ends
        (:func:`grpo_fast.steps.token_ends`).
    offsets : int array [N + 1]
        Output ``i``'s steps are ``offsets[i]:offsets[i + 1]``.
    group_ids : int array, list of str, or numpy str/object array [N]
        The prompt of each output, as :func:`compute_advantages` takes them.
    lengths : int array [N]
        Tokens of each output; the tokens after them get 0.
    width : int, optional
        ``T``, the number of columns (default: the longest output).
    outcome : array-like [N], optional
        Per-output (outcome) advantages, added on each output's tokens:
        the result is ``outcome + process_weight * process``.
    process_weight : float
    unchecked_reward : float, optional
        The reward of a NaN step instead of treating it as neutral.
    scale : {"group", "batch", "none"}
        Divide the centred step rewards by the group's std, one std of every
        rewarded step of the batch, or nothing.
    eps, unbiased
        As :func:`compute_advantages`: added to the std; Bessel's correction.

    A group with fewer than two rewarded steps, or whose rewarded steps all
    score the same, contributes exactly 0 (its outputs keep their outcome
    advantage). The ``[N, T]`` result goes to
    :func:`grpo_fast.loss.policy_loss` as it is.

    Examples
    --------
    >>> out = compute_process_advantages(
    ...     [1.0, 0.0, 1.0],  # output 0: a right step, a wrong one; output 1: a right one
    ...     [1, 3, 0],        # the tokens they end at
    ...     [0, 2, 3], [7, 7], [4, 2])
    >>> out.advantages.astype(float).round(3).tolist()
    [[-0.577, -0.577, -1.155, -1.155], [0.577, 0.0, 0.0, 0.0]]
    """
    rewards = as_float_array(step_rewards, "step_rewards").astype(np.float32)
    if unchecked_reward is not None:
        if not np.isfinite(unchecked_reward):
            raise InvalidInputError(f"unchecked_reward must be finite, got {unchecked_reward!r}")
        rewards = np.where(np.isnan(rewards), np.float32(unchecked_reward), rewards)
    ends = _int64(step_ends, "step_ends")
    offs = _int64(offsets, "offsets")
    lens = _int64(lengths, "lengths")
    if width is None:
        width = int(lens.max()) if lens.size else 0
    out_adv = None
    if outcome is not None:
        out_adv = np.ascontiguousarray(as_float_array(outcome, "outcome"), dtype=np.float32)
    adv, step_adv, mean, std, num_valid = _core.process_advantages(
        np.ascontiguousarray(rewards),
        ends,
        offs,
        as_group_ids(group_ids),
        lens,
        width,
        out_adv,
        scale,
        float(eps),
        bool(unbiased),
        float(process_weight),
    )
    return ProcessAdvantageResult(adv, step_adv, mean, std, num_valid)
