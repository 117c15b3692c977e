"""verl drop-ins: advantage estimators and reward functions with verl's signatures.

Advantage estimators
--------------------
``compute_grpo_outcome_advantage``, ``compute_grpo_vectorized_outcome_advantage``,
``compute_rloo_outcome_advantage``, ``compute_rloo_vectorized_outcome_advantage``,
``compute_reinforce_plus_plus_baseline_outcome_advantage`` and
``compute_grpo_passk_outcome_advantage`` take verl's arguments
(``token_level_rewards [bs, T]``, ``response_mask [bs, T]``, ``index`` — verl's
uuid strings as a numpy object array — ``epsilon``, ``config``) and return
verl's ``(advantages, returns)`` pair of ``[bs, T]`` tensors, with verl's
conventions (see ``verl/trainer/ppo/core_algos.py``):

- ``grpo`` / ``grpo_vectorized``: a singleton group keeps its raw score (verl
  uses mean 0, std 1 for it: ``score / (1 + epsilon)``, or the score itself
  without std normalisation); ``config`` is not read (verl's own functions do
  not read it either).
- ``rloo``: a singleton keeps its raw score; ``rloo_vectorized``: it gets 0.
- ``reinforce_plus_plus_baseline``: a singleton keeps its raw score, then the
  centred scores are whitened over the *tokens* of the batch (verl's
  ``masked_whiten``: token-weighted mean and Bessel-corrected variance,
  ``rsqrt(var + 1e-8)``).
- ``grpo_passk``: every group needs two responses (ValueError otherwise);
  ``norm_adv_by_std_in_grpo`` is read from ``config``.

The group statistics come from grpo-fast's Rust core (:func:`grpo_fast.compute_advantages`);
this module only adapts conventions and spreads the result over the tokens.
Two differences remain, both where verl's numbers are an accident of float32:
a group whose scores are all equal gets exactly 0 (verl computes its mean in
float32, so e.g. three scores of 0.3 can leave a residue of ~1e-8 that its
``epsilon`` of 1e-6 blows up to ~0.01), and a NaN score is unscorable: it gets
0 and stays out of its group's statistics (verl spreads the NaN over the group).

When verl is importable, importing this module also registers the estimators
in verl's registry as ``grpo_fast_grpo``, ``grpo_fast_grpo_vectorized``,
``grpo_fast_rloo``, ``grpo_fast_rloo_vectorized``,
``grpo_fast_reinforce_plus_plus_baseline`` and ``grpo_fast_grpo_passk``
(``algorithm.adv_estimator=grpo_fast_grpo``). verl hands a registered estimator
only ``token_level_rewards``, ``response_mask``, ``index`` and ``config``, so
the registered GRPO variants read ``norm_adv_by_std_in_grpo`` from ``config``.

Reward functions
----------------
:func:`compute_score` (verl's ``NaiveRewardManager`` form) and
:func:`compute_score_batch` (``BatchRewardManager``) are loadable through verl's
``custom_reward_function`` config (verl 0.9 keys; the file path of this module
works as well as ``pkg://``)::

    reward.custom_reward_function.path=pkg://grpo_fast.integrations.verl
    reward.custom_reward_function.name=compute_score

No signals are used, so ``compute_score`` also runs in the executor threads of
verl's reward loop (math-verify's ``signal.alarm`` timeouts cannot).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from grpo_fast.advantages import broadcast_to_tokens, compute_advantages
from grpo_fast.errors import InvalidInputError
from grpo_fast.verify import verify_batch

__all__ = [
    "REGISTERED_NAMES",
    "compute_grpo_outcome_advantage",
    "compute_grpo_passk_outcome_advantage",
    "compute_grpo_vectorized_outcome_advantage",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_rloo_vectorized_outcome_advantage",
    "compute_score",
    "compute_score_batch",
    "register_verl_estimators",
]


def _scores(token_level_rewards: Any, response_mask: Any) -> Any:
    """Outcome score per response: the sum of its token rewards, as verl takes it."""
    if token_level_rewards.dim() != 2 or tuple(response_mask.shape) != tuple(
        token_level_rewards.shape
    ):
        raise InvalidInputError(
            f"token_level_rewards {tuple(token_level_rewards.shape)} and response_mask "
            f"{tuple(response_mask.shape)} must both be [bs, response_length]"
        )
    return token_level_rewards.detach().sum(dim=-1)


def _check_index(index: Any, n: int) -> Any:
    if index is None:
        raise InvalidInputError("index (the uid of each response's prompt) is required")
    if len(index) != n:
        raise InvalidInputError(f"index has {len(index)} entries but there are {n} responses")
    return index


def _spread(adv: np.ndarray, scores: Any, response_mask: Any) -> tuple[Any, Any]:
    import torch

    a = torch.from_numpy(np.ascontiguousarray(adv)).to(device=scores.device, dtype=scores.dtype)
    out = broadcast_to_tokens(a, response_mask)
    return out, out


def _group_centred(
    scores: Any, index: Any, *, scale: str, epsilon: float, estimator: str = "grpo"
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Core advantages, the scores as float64 numpy, and each response's group size."""
    import torch

    s = scores if scores.dtype in (torch.float32, torch.float64) else scores.float()
    s = s.cpu().numpy()
    out = compute_advantages(s, index, estimator=estimator, scale=scale, eps=epsilon)
    size = out.size[out.group_index]
    return out.advantages.astype(np.float64), s.astype(np.float64), size


def compute_grpo_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
    config: Any = None,
) -> tuple[Any, Any]:
    """GRPO outcome advantage, as verl's ``compute_grpo_outcome_advantage``.

    ``(score - mean_g) / (std_g + epsilon)`` (Bessel std), or ``score - mean_g``
    when ``norm_adv_by_std_in_grpo`` is False (Dr. GRPO); a singleton group keeps
    its raw score (``score / (1 + epsilon)`` when normalising), as verl does.

    Returns
    -------
    (advantages, returns) : two references to one ``[bs, T]`` tensor, 0 off the mask.

    Examples
    --------
    >>> import torch, numpy as np
    >>> r = torch.tensor([[0.0, 1.0], [0.0, 0.0], [0.0, 2.0]])
    >>> adv, _ = compute_grpo_outcome_advantage(r, torch.ones(3, 2), np.array(["a", "a", "b"]))
    >>> [round(x, 3) for x in adv[:, 0].tolist()]
    [0.707, -0.707, 2.0]
    """
    scores = _scores(token_level_rewards, response_mask)
    _check_index(index, scores.shape[0])
    scale = "group" if norm_adv_by_std_in_grpo else "none"
    adv, s, size = _group_centred(scores, index, scale=scale, epsilon=epsilon)
    single = (size == 1) & ~np.isnan(s)
    adv[single] = s[single] / (1.0 + epsilon) if norm_adv_by_std_in_grpo else s[single]
    return _spread(adv, scores, response_mask)


def compute_grpo_vectorized_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
    config: Any = None,
) -> tuple[Any, Any]:
    """verl's ``compute_grpo_vectorized_outcome_advantage``: the same values as the loop form."""
    return compute_grpo_outcome_advantage(
        token_level_rewards, response_mask, index, epsilon, norm_adv_by_std_in_grpo, config
    )


def compute_rloo_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = 1e-6,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """RLOO, as verl's ``compute_rloo_outcome_advantage``.

    ``score - mean of the other responses of the group``; a singleton group keeps
    its raw score, as verl's loop form does.
    """
    scores = _scores(token_level_rewards, response_mask)
    _check_index(index, scores.shape[0])
    adv, s, size = _group_centred(scores, index, scale="none", epsilon=epsilon, estimator="rloo")
    single = (size == 1) & ~np.isnan(s)
    adv[single] = s[single]
    return _spread(adv, scores, response_mask)


def compute_rloo_vectorized_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = 1e-6,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """verl's ``compute_rloo_vectorized_outcome_advantage``: RLOO with singletons at 0."""
    scores = _scores(token_level_rewards, response_mask)
    _check_index(index, scores.shape[0])
    adv, _, _ = _group_centred(scores, index, scale="none", epsilon=epsilon, estimator="rloo")
    return _spread(adv, scores, response_mask)


def compute_reinforce_plus_plus_baseline_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = 1e-6,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """REINFORCE++-baseline, as verl's function of that name.

    ``score - mean_g`` (a singleton keeps its raw score), spread over the tokens,
    then whitened over all valid tokens of the batch (token-weighted mean,
    Bessel-corrected variance, ``rsqrt(var + 1e-8)``), as verl's ``masked_whiten``.
    """
    import torch

    scores = _scores(token_level_rewards, response_mask)
    _check_index(index, scores.shape[0])
    adv, s, size = _group_centred(scores, index, scale="none", epsilon=epsilon)
    single = (size == 1) & ~np.isnan(s)
    adv[single] = s[single]
    centred, _ = _spread(adv, scores, response_mask)
    # Unscorable (NaN) responses stay out of the whitening statistics and get 0.
    scorable = torch.from_numpy(~np.isnan(s)).to(centred.device)
    mask = response_mask.to(centred.dtype) * scorable.to(centred.dtype).unsqueeze(-1)
    n = mask.sum()
    if n < 2:
        raise InvalidInputError(
            f"reinforce_plus_plus_baseline whitens over the valid tokens and needs at least 2, "
            f"got {int(n.item())}"
        )
    # verl's masked_mean adds 1e-8 to the token count.
    mean = (centred * mask).sum() / (n + 1e-8)
    var = (((centred - mean) ** 2) * mask).sum() / (n + 1e-8) * (n / (n - 1))
    out = (centred - mean) * torch.rsqrt(var + 1e-8) * mask
    return out, out


def compute_grpo_passk_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool = True,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """Pass@k advantage, as verl's ``compute_grpo_passk_outcome_advantage``.

    Only the best response of a group gets ``max - second max`` (divided by
    ``std_g + epsilon`` when ``norm_adv_by_std_in_grpo``, read from ``config``
    when given, as verl does). Every group needs at least two responses.
    """
    if config is not None:
        norm_adv_by_std_in_grpo = config.get("norm_adv_by_std_in_grpo", True)
    scores = _scores(token_level_rewards, response_mask)
    _check_index(index, scores.shape[0])
    scale = "group" if norm_adv_by_std_in_grpo else "none"
    adv, _, size = _group_centred(
        scores, index, scale=scale, epsilon=epsilon, estimator="grpo_passk"
    )
    if np.any(size < 2):
        i = int(np.argmax(size < 2))
        raise InvalidInputError(
            f"grpo_passk needs at least 2 responses per group; the group of response {i} "
            f"(index {index[i]!r}) has {int(size[i])}"
        )
    return _spread(adv, scores, response_mask)


def _golds(ground_truths: Sequence[Any]) -> tuple[list[str | None], list[int]]:
    """Flatten golds to str (a list of acceptable answers counts as several), with owners."""
    flat: list[str | None] = []
    owner: list[int] = []
    for i, g in enumerate(ground_truths):
        options = list(g) if isinstance(g, (list, tuple, np.ndarray)) else [g]
        if not options:
            options = [None]
        for o in options:
            if o is not None and not isinstance(o, str):
                if isinstance(o, (int, float, np.integer, np.floating)) and not isinstance(o, bool):
                    o = str(o)
                else:
                    raise InvalidInputError(
                        f"ground_truths[{i}] is {type(o).__name__}; expected a str (or a list of "
                        "acceptable str answers)"
                    )
            flat.append(o)
            owner.append(i)
    return flat, owner


def compute_score_batch(
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[str] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Any] | None = None,
    *,
    rel_tol: float = 1e-6,
    rules: Sequence[str] | None = None,
    **kwargs: Any,
) -> list[float]:
    """The batch reward verl's ``BatchRewardManager`` calls: one score per response.

    1.0 when the response's final answer equals the ground truth
    (:func:`grpo_fast.verify_batch`, in Rust across threads), else 0.0 — also
    0.0 for a ground truth without a usable answer, since verl would spread a
    NaN into the advantages. A list of acceptable answers as a ground truth
    scores 1.0 when any matches. ``data_sources`` and ``extra_infos`` are
    accepted and not needed: every source is scored as a final answer.
    ``rel_tol`` and ``rules`` (extraction rules) can be set through verl's
    ``custom_reward_function.reward_kwargs``.

    Examples
    --------
    >>> compute_score_batch(
    ...     data_sources=["openai/gsm8k"] * 2,
    ...     solution_strs=["so she pays 3 * 4 = 12.\\n#### 12", "#### 13"],
    ...     ground_truths=["12", "12"],
    ...     extra_infos=[{}, {}],
    ... )
    [1.0, 0.0]
    """
    if solution_strs is None or ground_truths is None:
        raise InvalidInputError("compute_score_batch needs solution_strs and ground_truths")
    preds = list(solution_strs)
    golds = list(ground_truths)
    if len(preds) != len(golds):
        raise InvalidInputError(
            f"solution_strs has {len(preds)} entries but ground_truths has {len(golds)}"
        )
    flat, owner = _golds(golds)
    if len(flat) == len(preds):
        scores = verify_batch(flat, preds, rel_tol=rel_tol, rules=rules)
        return [float(x) for x in scores.tolist()]
    matched = verify_batch(flat, [preds[i] for i in owner], rel_tol=rel_tol, rules=rules)
    best = np.zeros(len(preds), dtype=np.float32)
    np.maximum.at(best, np.asarray(owner, dtype=np.int64), matched)
    return [float(x) for x in best.tolist()]


def compute_score(
    data_source: Any = None,
    solution_str: str | None = None,
    ground_truth: Any = None,
    extra_info: Any = None,
    *,
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[str] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Any] | None = None,
    rel_tol: float = 1e-6,
    rules: Sequence[str] | None = None,
    **kwargs: Any,
) -> Any:
    """verl's ``compute_score(data_source, solution_str, ground_truth, extra_info)``.

    1.0 when the final answer of ``solution_str`` equals ``ground_truth``, else
    0.0 (see :func:`compute_score_batch`). Called with verl's batch keywords
    (``solution_strs=``, ``ground_truths=``, ...), as ``BatchRewardManager``
    does, it returns the list of scores, so the one name serves both reward
    managers.

    Examples
    --------
    >>> compute_score("lighteval/MATH", r"so \\boxed{\\frac{1}{2}}", r"\\frac12")
    1.0
    """
    if solution_strs is not None or ground_truths is not None:
        return compute_score_batch(
            data_sources, solution_strs, ground_truths, extra_infos, rel_tol=rel_tol, rules=rules
        )
    if not isinstance(solution_str, str):
        raise InvalidInputError(f"solution_str must be a str, not {type(solution_str).__name__}")
    return compute_score_batch(
        [data_source], [solution_str], [ground_truth], [extra_info], rel_tol=rel_tol, rules=rules
    )[0]


def _norm_from_config(config: Any, default: bool = True) -> bool:
    if config is None:
        return default
    return bool(config.get("norm_adv_by_std_in_grpo", default))


def _registered_grpo(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any = None,
    epsilon: float = 1e-6,
    norm_adv_by_std_in_grpo: bool | None = None,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    norm = _norm_from_config(config) if norm_adv_by_std_in_grpo is None else norm_adv_by_std_in_grpo
    return compute_grpo_outcome_advantage(
        token_level_rewards, response_mask, index, epsilon, norm, config
    )


_rfpp = compute_reinforce_plus_plus_baseline_outcome_advantage

REGISTERED_NAMES = {
    "grpo_fast_grpo": _registered_grpo,
    "grpo_fast_grpo_vectorized": _registered_grpo,
    "grpo_fast_rloo": compute_rloo_outcome_advantage,
    "grpo_fast_rloo_vectorized": compute_rloo_vectorized_outcome_advantage,
    "grpo_fast_reinforce_plus_plus_baseline": _rfpp,
    "grpo_fast_grpo_passk": compute_grpo_passk_outcome_advantage,
}


def register_verl_estimators() -> bool:
    """Register the estimators in verl's registry; False when verl is not importable.

    Safe to call more than once, and from a second copy of this module (verl's
    ``custom_reward_function.path`` may load it from its file): a name already
    registered is left as it is.
    """
    try:
        from verl.trainer.ppo import core_algos
    except ImportError:
        return False
    registry = getattr(core_algos, "ADV_ESTIMATOR_REGISTRY", None)
    for name, fn in REGISTERED_NAMES.items():
        if registry is not None and name in registry:
            continue
        core_algos.register_adv_est(name)(fn)
    return True


def _verl_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("verl") is not None
    except (ImportError, ValueError):
        return False


if _verl_installed():
    register_verl_estimators()
