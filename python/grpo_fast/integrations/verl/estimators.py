"""verl drop-ins: advantage estimators with verl's signatures.

``compute_grpo_outcome_advantage``, ``compute_grpo_vectorized_outcome_advantage``,
``compute_rloo_outcome_advantage``, ``compute_rloo_vectorized_outcome_advantage``,
``compute_reinforce_plus_plus_baseline_outcome_advantage``,
``compute_grpo_passk_outcome_advantage``, ``compute_remax_outcome_advantage``,
``compute_opo_outcome_advantage`` and ``compute_gpg_outcome_advantage`` take verl's arguments
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
- ``remax``: ``score - reward_baselines`` (the greedy response's score),
  spread over the tokens as verl's per-token returns (the reversed cumulative
  sum of the token rewards) minus the baseline; ``returns`` are those returns.
- ``opo``: ``score - sum_g(len * score) / sum_g(len)``, ``len`` the response
  length; a singleton keeps its raw score.
- ``gpg``: ``(score - mean_g) * alpha / f_norm`` with verl's ``alpha = bs /
  (number of non-zero scores)``; a singleton gets ``alpha * score / f_norm``.
  grpo-fast's own ``gpg`` uses the paper's ``alpha = B / (B - M)`` (``M``
  rollouts in groups without signal) instead.

The group statistics come from grpo-fast's Rust core (:func:`grpo_fast.compute_advantages`);
this module only adapts conventions and spreads the result over the tokens.
Two differences remain, both where verl's numbers are an accident of float32:
a group whose scores are all equal gets exactly 0 (verl computes its mean in
float32, so e.g. three scores of 0.3 can leave a residue of ~1e-8 that its
``epsilon`` of 1e-6 blows up to ~0.01), and a NaN score is unscorable: it gets
0 and stays out of its group's statistics (verl spreads the NaN over the group).

Registered in verl (:mod:`~grpo_fast.integrations.verl.plugin`) as ``grpo_fast_<name>``,
verl's trainer hands an estimator only ``token_level_rewards``,
``response_mask``, ``index`` and ``config``: ``grpo_fast_grpo`` reads
``norm_adv_by_std_in_grpo`` from ``config`` (as verl's trainer does for
``grpo``), ``grpo_fast_grpo_vectorized`` does not (verl's ``grpo_vectorized``
always divides by the std under the trainer). verl's trainer generates the
greedy responses ReMax needs (``reward_baselines``) only when
``adv_estimator=remax``: ``grpo_fast_remax`` says so when they are missing.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grpo_fast.advantages import broadcast_to_tokens, compute_advantages
from grpo_fast.errors import InvalidInputError
from grpo_fast.names import ADVANTAGE_EPS

__all__ = [
    "REGISTERED_NAMES",
    "compute_gpg_outcome_advantage",
    "compute_grpo_outcome_advantage",
    "compute_grpo_passk_outcome_advantage",
    "compute_grpo_vectorized_outcome_advantage",
    "compute_opo_outcome_advantage",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_rloo_vectorized_outcome_advantage",
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
    scores: Any, index: Any, *, scale: str, epsilon: float, estimator: str = "grpo", **inputs: Any
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Core advantages, the scores as float64 numpy, and each response's group size."""
    import torch

    s = scores if scores.dtype in (torch.float32, torch.float64) else scores.float()
    s = s.cpu().numpy()
    out = compute_advantages(s, index, estimator=estimator, scale=scale, eps=epsilon, **inputs)
    size = out.size[out.group_index]
    return out.advantages.astype(np.float64), s.astype(np.float64), size


def _raw_singletons(adv: np.ndarray, s: np.ndarray, size: np.ndarray, divisor: float = 1.0) -> None:
    """verl's loop forms: a scorable response alone in its group gets its raw score
    (over ``divisor``) instead of the core's 0; in place."""
    single = (size == 1) & ~np.isnan(s)
    adv[single] = s[single] / divisor


def compute_grpo_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = ADVANTAGE_EPS,
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
    _raw_singletons(adv, s, size, 1.0 + epsilon if norm_adv_by_std_in_grpo else 1.0)
    return _spread(adv, scores, response_mask)


def compute_grpo_vectorized_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = ADVANTAGE_EPS,
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
    epsilon: float = ADVANTAGE_EPS,
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
    _raw_singletons(adv, s, size)
    return _spread(adv, scores, response_mask)


def compute_rloo_vectorized_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = ADVANTAGE_EPS,
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
    epsilon: float = ADVANTAGE_EPS,
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
    _raw_singletons(adv, s, size)
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
    epsilon: float = ADVANTAGE_EPS,
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


def compute_remax_outcome_advantage(
    token_level_rewards: Any,
    reward_baselines: Any = None,
    response_mask: Any = None,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """ReMax, as verl's ``compute_remax_outcome_advantage``.

    ``score - reward_baselines`` (the greedy response's score, one per
    response), from grpo-fast's ``remax``; on the tokens, verl's per-token
    returns (reversed cumulative sum of the token rewards, the score itself on
    every token up to an outcome reward) minus the baseline. Returns
    ``(advantages, returns)``.
    """
    import torch

    if response_mask is None:
        raise InvalidInputError("remax needs response_mask")
    scores = _scores(token_level_rewards, response_mask)
    if reward_baselines is None:
        raise InvalidInputError(
            "remax needs reward_baselines, the score of each prompt's greedy response (verl's "
            "trainer generates them only with algorithm.adv_estimator=remax)"
        )
    b = torch.as_tensor(reward_baselines).detach().reshape(-1).cpu().double().numpy()
    if len(b) != scores.shape[0]:
        raise InvalidInputError(
            f"reward_baselines has {len(b)} entries but there are {scores.shape[0]} responses"
        )
    index = np.arange(scores.shape[0])  # the baseline is per response: no groups needed
    adv, _, _ = _group_centred(
        scores, index, scale="none", epsilon=0.0, estimator="remax", baselines=b
    )
    mask = response_mask.to(scores.dtype)
    with torch.no_grad():
        returns = (token_level_rewards.detach() * mask).flip(-1).cumsum(-1).flip(-1)
    # returns - b = (score - b) + (returns - score): the core's advantage, plus what the
    # per-token returns add beyond the outcome score (0 when the reward is an outcome).
    a = torch.from_numpy(adv).to(device=scores.device, dtype=scores.dtype)
    out = (a.unsqueeze(-1) + returns - scores.unsqueeze(-1)) * mask
    return out, returns


def compute_opo_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = ADVANTAGE_EPS,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """OPO, as verl's ``compute_opo_outcome_advantage``.

    ``score - sum_g(len * score) / sum_g(len)`` with ``len`` the number of
    response tokens (grpo-fast's ``opo``); a singleton keeps its raw score, as
    verl's does.
    """
    scores = _scores(token_level_rewards, response_mask)
    _check_index(index, scores.shape[0])
    lengths = response_mask.detach().sum(-1).cpu().double().numpy()
    adv, s, size = _group_centred(
        scores, index, scale="none", epsilon=epsilon, estimator="opo", lengths=lengths
    )
    _raw_singletons(adv, s, size)
    return _spread(adv, scores, response_mask)


def compute_gpg_outcome_advantage(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any,
    epsilon: float = ADVANTAGE_EPS,
    f_norm: float = 1.0,
    alpha: float = 1.0,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    """GPG, as verl's ``compute_gpg_outcome_advantage``.

    ``(score - mean_g) * alpha / f_norm`` with verl's ``alpha = bs / (number of
    non-zero scores)`` (the ``alpha`` argument is ignored, as verl ignores it);
    a singleton gets ``alpha * score / f_norm``. The centring is grpo-fast's;
    its own ``gpg`` estimator scales by the paper's ``B / (B - M)`` instead.
    """
    scores = _scores(token_level_rewards, response_mask)
    _check_index(index, scores.shape[0])
    adv, s, size = _group_centred(scores, index, scale="none", epsilon=epsilon)
    _raw_singletons(adv, s, size)
    scorable = ~np.isnan(s)
    alpha = scorable.sum() / max(int(np.count_nonzero(s[scorable])), 1)
    return _spread(adv * (alpha / f_norm), scores, response_mask)


def _norm_from_config(config: Any, default: bool = True) -> bool:
    if config is None:
        return default
    return bool(config.get("norm_adv_by_std_in_grpo", default))


def _registered_grpo(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any = None,
    epsilon: float = ADVANTAGE_EPS,
    norm_adv_by_std_in_grpo: bool | None = None,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    norm = _norm_from_config(config) if norm_adv_by_std_in_grpo is None else norm_adv_by_std_in_grpo
    return compute_grpo_outcome_advantage(
        token_level_rewards, response_mask, index, epsilon, norm, config
    )


def _registered_grpo_vectorized(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any = None,
    epsilon: float = ADVANTAGE_EPS,
    norm_adv_by_std_in_grpo: bool = True,
    config: Any = None,
    **kwargs: Any,
) -> tuple[Any, Any]:
    # verl's trainer calls a registered estimator with rewards, mask, index and
    # config only, and verl's grpo_vectorized does not read config: under verl it
    # always divides by the std. The same here, under its name.
    return compute_grpo_outcome_advantage(
        token_level_rewards, response_mask, index, epsilon, norm_adv_by_std_in_grpo, config
    )


_rfpp = compute_reinforce_plus_plus_baseline_outcome_advantage

REGISTERED_NAMES = {
    "grpo_fast_grpo": _registered_grpo,
    "grpo_fast_grpo_vectorized": _registered_grpo_vectorized,
    "grpo_fast_rloo": compute_rloo_outcome_advantage,
    "grpo_fast_rloo_vectorized": compute_rloo_vectorized_outcome_advantage,
    "grpo_fast_reinforce_plus_plus_baseline": _rfpp,
    "grpo_fast_grpo_passk": compute_grpo_passk_outcome_advantage,
    "grpo_fast_remax": compute_remax_outcome_advantage,
    "grpo_fast_opo": compute_opo_outcome_advantage,
    "grpo_fast_gpg": compute_gpg_outcome_advantage,
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
