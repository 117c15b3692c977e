"""verl drop-ins: advantage estimators and reward functions with verl's signatures.

Advantage estimators
--------------------
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

Registration: the ``verl.plugins`` entry point of this package (verl imports
every such entry point in ``import verl``, so in the driver that runs
``compute_advantage`` and in every Ray worker) imports this module, which
registers the estimators in verl's registry as ``grpo_fast_grpo``,
``grpo_fast_grpo_vectorized``, ``grpo_fast_rloo``, ``grpo_fast_rloo_vectorized``,
``grpo_fast_reinforce_plus_plus_baseline``, ``grpo_fast_grpo_passk``,
``grpo_fast_remax``, ``grpo_fast_opo`` and ``grpo_fast_gpg``
(``algorithm.adv_estimator=grpo_fast_grpo``), and the reward manager
:data:`GrpoFastRewardManager` in verl's reward-loop registry as ``grpo_fast``
(``reward.reward_manager.name=grpo_fast``), and the policy losses of
:mod:`grpo_fast.integrations.verl_loss` in verl's policy-loss registry as
``grpo_fast_vanilla`` and ``grpo_fast_gspo``
(``actor_rollout_ref.actor.policy_loss.loss_mode=grpo_fast_vanilla``).
Without the installed entry point,
``VERL_USE_EXTERNAL_MODULES=grpo_fast.integrations.verl`` does the same.
verl's trainer hands a registered estimator only ``token_level_rewards``,
``response_mask``, ``index`` and ``config``: ``grpo_fast_grpo`` reads
``norm_adv_by_std_in_grpo`` from ``config`` (as verl's trainer does for
``grpo``), ``grpo_fast_grpo_vectorized`` does not (verl's ``grpo_vectorized``
always divides by the std under the trainer). verl's trainer generates the
greedy responses ReMax needs (``reward_baselines``) only when
``adv_estimator=remax``: ``grpo_fast_remax`` says so when they are missing.

Reward functions
----------------
:func:`compute_score` (verl's ``custom_reward_function`` form) and
:func:`compute_score_batch` score with verl's conventions per ``data_source``
(:func:`convention`: gsm8k's ``####`` line, MATH's ``\\boxed{}``, math_dapo's
-1 for a wrong answer), grpo-fast's equality, and ``judge="grpo_fast"`` as the
named option for grpo-fast's extraction of any answer form::

    reward.custom_reward_function.path=pkg://grpo_fast.integrations.verl
    reward.custom_reward_function.name=compute_score

No signals are used, so they run in the executor threads of verl's reward
loop (math-verify's ``signal.alarm`` timeouts cannot). The reward manager
scores the samples verl's ``RewardLoopWorker`` hands it one by one in one
Rust call per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from grpo_fast.advantages import broadcast_to_tokens, compute_advantages
from grpo_fast.errors import InvalidInputError
from grpo_fast.integrations.verl_loss import register_verl_policy_losses
from grpo_fast.verify import extract_answer, verify_batch

__all__ = [
    "JUDGES",
    "REGISTERED_NAMES",
    "REWARD_MANAGER_NAME",
    "Convention",
    "GrpoFastRewardManager",
    "compute_grpo_outcome_advantage",
    "compute_grpo_passk_outcome_advantage",
    "compute_gpg_outcome_advantage",
    "compute_grpo_vectorized_outcome_advantage",
    "compute_opo_outcome_advantage",
    "compute_reinforce_plus_plus_baseline_outcome_advantage",
    "compute_remax_outcome_advantage",
    "compute_rloo_outcome_advantage",
    "compute_rloo_vectorized_outcome_advantage",
    "compute_score",
    "compute_score_batch",
    "convention",
    "register_verl_estimators",
    "register_verl_policy_losses",
    "register_verl_reward_manager",
    "score_items",
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
    _raw_singletons(adv, s, size, 1.0 + epsilon if norm_adv_by_std_in_grpo else 1.0)
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
    _raw_singletons(adv, s, size)
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
    epsilon: float = 1e-6,
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
    epsilon: float = 1e-6,
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


#: The values of ``judge``: ``"verl"`` (verl's answer format per ``data_source``)
#: and ``"grpo_fast"`` (any answer form grpo-fast extracts, for every source).
JUDGES = ("verl", "grpo_fast")

_GSM8K_SOURCES = frozenset({"openai/gsm8k"})
_MATH_SOURCES = frozenset(
    {"lighteval/MATH", "DigitalLearningGmbH/MATH-lighteval", "HuggingFaceH4/MATH-500"}
)
_DAPO_SOURCES = frozenset({"math_dapo", "math", "math_dapo_reasoning"})
_PRIME_SOURCES = frozenset(
    {
        "numina_aops_forum",
        "numina_synthetic_math",
        "numina_amc_aime",
        "numina_synthetic_amc",
        "numina_cn_k12",
        "numina_olympiads",
    }
)
# Sources verl scores with something other than a final-answer check (code in a
# sandbox, geometry3k's format bonus, search-R1's exact match): handed to verl's
# own default_compute_score, one item at a time.
_VERL_ONLY_SOURCES = frozenset(
    {
        "codecontests",
        "apps",
        "codeforces",
        "taco",
        "hiyouga/geometry3k",
        "searchR1_nq",
        "searchR1_triviaqa",
        "searchR1_popqa",
        "searchR1_hotpotqa",
        "searchR1_2wikimultihopqa",
        "searchR1_musique",
        "searchR1_bamboogle",
    }
)


class Convention(NamedTuple):
    """How one ``data_source`` is scored: the extraction rules and the wrong-answer score.

    ``rules`` None is grpo-fast's full extraction priority; ``wrong`` is the
    score of a wrong (or unanswered) response; a right one scores 1.0.
    ``returns_dict``: verl's scorer for the source returns ``{"score", "acc",
    "pred"}`` rather than a float. ``delegate``: verl's own scorer decides
    (a source verl scores otherwise than by its final answer). ``clip``: only
    the last ``clip`` characters of a response are read, as verl's scorer does.
    """

    rules: tuple[str, ...] | None
    wrong: float = 0.0
    returns_dict: bool = False
    delegate: bool = False
    clip: int | None = None


_GRPO_FAST = Convention(None)
_DELEGATE = Convention(None, returns_dict=True, delegate=True)


def convention(data_source: Any, judge: str = "verl") -> Convention:
    """The scoring convention of ``data_source`` under ``judge``.

    With ``judge="verl"`` (the default) the answer must be written the way
    verl's own scorer for the source reads it: ``openai/gsm8k`` only from the
    ``#### <answer>`` line in the last 300 characters; the MATH sources
    (``lighteval/MATH``, ``DigitalLearningGmbH/MATH-lighteval``,
    ``HuggingFaceH4/MATH-500``) only from ``\\boxed{}``; ``math_dapo``,
    ``math``, ``math_dapo_reasoning`` and ``aime*`` from the last ``Answer:``
    line, else ``\\boxed{}``, in the last 300 characters, with a wrong answer
    at -1.0 (verl's ``math_dapo``). ``numina_*`` (verl's lenient
    ``prime_math``) and sources verl does not know use grpo-fast's extraction;
    code, ``hiyouga/geometry3k`` and the ``searchR1_*`` sources go to verl's
    own scorer. With ``judge="grpo_fast"`` every answer source uses
    grpo-fast's extraction over the whole response (so ``So the answer is
    72.`` counts for gsm8k); the wrong-answer score stays the source's.
    Equality is grpo-fast's under both (``12.0`` equals ``12``, where verl
    compares normalised strings).

    Examples
    --------
    >>> convention("openai/gsm8k")
    Convention(rules=('gsm8k',), wrong=0.0, returns_dict=False, delegate=False, clip=300)
    >>> convention("aime_2024", judge="grpo_fast")
    Convention(rules=None, wrong=-1.0, returns_dict=True, delegate=False, clip=None)
    """
    if judge not in JUDGES:
        raise InvalidInputError(f"judge must be one of {JUDGES}, not {judge!r}")
    source = data_source if isinstance(data_source, str) else ""
    if source in _VERL_ONLY_SOURCES:
        return _DELEGATE
    if source in _DAPO_SOURCES or source.startswith("aime"):
        rules: tuple[str, ...] | None = ("answer_colon", "boxed")
        if judge == "verl":
            return Convention(rules, wrong=-1.0, returns_dict=True, clip=300)
        return Convention(None, wrong=-1.0, returns_dict=True)
    if judge == "grpo_fast":
        return _GRPO_FAST
    if source in _GSM8K_SOURCES:
        return Convention(("gsm8k",), clip=300)
    if source in _MATH_SOURCES:
        return Convention(("boxed",))
    return _GRPO_FAST


def _verl_default_score(data_source: Any, solution: str, gold: Any, extra_info: Any) -> Any:
    from verl.utils.reward_score import default_compute_score

    return default_compute_score(data_source, solution, gold, extra_info)


def _as_score(result: Any) -> float:
    return float(result["score"]) if isinstance(result, dict) else float(result)


def _matched(
    golds: list[Any], preds: list[str], rules: Sequence[str] | None, rel_tol: float, think: bool
) -> np.ndarray:
    """1.0 / 0.0 per item (any of a list of acceptable golds), one Rust call."""
    flat, owner = _golds(golds)
    opts = {"rel_tol": rel_tol, "rules": rules, "think": think}
    if len(flat) == len(preds):
        return verify_batch(flat, preds, **opts).astype(np.float64)
    hits = verify_batch(flat, [preds[i] for i in owner], **opts)
    best = np.zeros(len(preds), dtype=np.float64)
    np.maximum.at(best, np.asarray(owner, dtype=np.int64), hits)
    return best


def score_items(
    data_sources: Sequence[Any] | None,
    solution_strs: Sequence[str],
    ground_truths: Sequence[Any],
    extra_infos: Sequence[Any] | None = None,
    *,
    judge: str = "verl",
    rel_tol: float = 1e-6,
    rules: Sequence[str] | None = None,
    think: bool = True,
) -> tuple[np.ndarray, np.ndarray, list[Any]]:
    """Score a batch under verl's conventions: ``(scores, correct, delegated)``.

    One :func:`grpo_fast.verify_batch` call per distinct convention in the
    batch (one for a single-source batch). ``delegated[i]`` is verl's own
    result for a source only verl scores (None elsewhere). ``rules`` replaces
    every source's extraction rules; ``think=False`` also reads the reasoning
    (see :func:`grpo_fast.extract_answer`).
    """
    preds = list(solution_strs)
    golds = list(ground_truths)
    n = len(preds)
    if len(golds) != n:
        raise InvalidInputError(f"solution_strs has {n} entries but ground_truths has {len(golds)}")
    for i, p in enumerate(preds):
        if not isinstance(p, str):
            raise InvalidInputError(f"solution_strs[{i}] must be a str, not {type(p).__name__}")
    sources = [None] * n if data_sources is None else list(data_sources)
    if len(sources) != n:
        raise InvalidInputError(f"data_sources has {len(sources)} entries but there are {n} items")
    infos = [None] * n if extra_infos is None else list(extra_infos)
    override = None if rules is None else tuple(rules)
    by_convention: dict[Convention, list[int]] = {}
    memo: dict[Any, Convention] = {}
    for i, src in enumerate(sources):
        key = src if isinstance(src, str) else None
        conv = memo.get(key)
        if conv is None:
            conv = memo[key] = convention(src, judge)
        by_convention.setdefault(conv, []).append(i)
    scores = np.zeros(n, dtype=np.float64)
    correct = np.zeros(n, dtype=bool)
    delegated: list[Any] = [None] * n
    for conv, items in by_convention.items():
        if conv.delegate:
            for i in items:
                result = _verl_default_score(sources[i], preds[i], golds[i], infos[i])
                delegated[i] = result
                scores[i] = _as_score(result)
                correct[i] = (
                    bool(result.get("acc", scores[i] > 0))
                    if isinstance(result, dict)
                    else scores[i] > 0
                )
            continue
        use = override if override is not None else conv.rules
        texts = [preds[i] for i in items]
        if conv.clip is not None:
            texts = [t[-conv.clip :] for t in texts]
        hit = _matched([golds[i] for i in items], texts, use, rel_tol, think) > 0
        idx = np.asarray(items, dtype=np.int64)
        correct[idx] = hit
        scores[idx] = np.where(hit, 1.0, conv.wrong)
    return scores, correct, delegated


def compute_score_batch(
    data_sources: Sequence[Any] | None = None,
    solution_strs: Sequence[str] | None = None,
    ground_truths: Sequence[Any] | None = None,
    extra_infos: Sequence[Any] | None = None,
    *,
    judge: str = "verl",
    rel_tol: float = 1e-6,
    rules: Sequence[str] | None = None,
    think: bool = True,
    **kwargs: Any,
) -> list[float]:
    """One score per response, with verl's conventions per ``data_source``.

    1.0 when the response's final answer, written as verl's scorer for the
    source reads it (see :func:`convention`), equals the ground truth
    (:func:`grpo_fast.verify_batch`, in Rust across threads); else the
    source's wrong-answer score (0.0; -1.0 for ``math_dapo``, ``math``,
    ``math_dapo_reasoning`` and ``aime*``). A ground truth without a usable
    answer scores as wrong, since verl would spread a NaN into the
    advantages; a list of acceptable answers scores 1.0 when any matches.
    ``judge="grpo_fast"`` accepts any answer form grpo-fast extracts;
    ``judge``, ``rel_tol``, ``rules`` (extraction rules for every source) and
    ``think`` (False: the reasoning before ``</think>`` is read too) can be
    set through verl's ``custom_reward_function.reward_kwargs``.

    Examples
    --------
    >>> compute_score_batch(
    ...     data_sources=["openai/gsm8k"] * 3,
    ...     solution_strs=["so she pays 3 * 4 = 12.\\n#### 12", "#### 13", "So she pays 12."],
    ...     ground_truths=["12", "12", "12"],
    ... )
    [1.0, 0.0, 0.0]
    >>> compute_score_batch(["openai/gsm8k"], ["So she pays 12."], ["12"], judge="grpo_fast")
    [1.0]
    """
    if solution_strs is None or ground_truths is None:
        raise InvalidInputError("compute_score_batch needs solution_strs and ground_truths")
    scores, _, _ = score_items(
        data_sources,
        solution_strs,
        ground_truths,
        extra_infos,
        judge=judge,
        rel_tol=rel_tol,
        rules=rules,
        think=think,
    )
    return [float(x) for x in scores.tolist()]


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
    judge: str = "verl",
    rel_tol: float = 1e-6,
    rules: Sequence[str] | None = None,
    think: bool = True,
    **kwargs: Any,
) -> Any:
    """verl's ``compute_score(data_source, solution_str, ground_truth, extra_info)``.

    The score of :func:`compute_score_batch` for one response, returned the
    way verl's scorer for the source returns it: a float, or for the
    ``math_dapo`` family ``{"score": 1.0 or -1.0, "acc": bool, "pred": str}``.
    Called with verl's batch keywords (``solution_strs=``, ...) it returns
    the list of float scores.

    Examples
    --------
    >>> compute_score("lighteval/MATH", r"so \\boxed{\\frac{1}{2}}", r"\\frac12")
    1.0
    >>> compute_score("math_dapo", "Answer: 7", "8")
    {'score': -1.0, 'acc': False, 'pred': '7'}
    """
    if solution_strs is not None or ground_truths is not None:
        return compute_score_batch(
            data_sources,
            solution_strs,
            ground_truths,
            extra_infos,
            judge=judge,
            rel_tol=rel_tol,
            rules=rules,
            think=think,
        )
    if not isinstance(solution_str, str):
        raise InvalidInputError(f"solution_str must be a str, not {type(solution_str).__name__}")
    scores, correct, delegated = score_items(
        [data_source],
        [solution_str],
        [ground_truth],
        [extra_info],
        judge=judge,
        rel_tol=rel_tol,
        rules=rules,
        think=think,
    )
    if delegated[0] is not None:
        return delegated[0]
    conv = convention(data_source, judge)
    if conv.returns_dict:
        use = rules if rules is not None else conv.rules
        text = solution_str if conv.clip is None else solution_str[-conv.clip :]
        found = extract_answer(text, rules=use, think=think)
        pred = found.answer if found is not None else "[INVALID]"
        return {"score": float(scores[0]), "acc": bool(correct[0]), "pred": pred}
    return float(scores[0])


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


def _registered_grpo_vectorized(
    token_level_rewards: Any,
    response_mask: Any,
    index: Any = None,
    epsilon: float = 1e-6,
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


REWARD_MANAGER_NAME = "grpo_fast"

#: verl's reward-loop manager class (``reward.reward_manager.name=grpo_fast``),
#: created when verl's reward loop is importable; None otherwise.
GrpoFastRewardManager: Any = None


def _reward_options(compute_score: Any) -> dict[str, Any]:
    """The scoring options a reward manager was handed, through verl's config.

    verl hands a manager either its own ``default_compute_score`` (no
    ``custom_reward_function.path``) or ``partial(_call_with_kwargs, fn,
    reward_kwargs)`` for a custom one: this module's ``compute_score`` (or
    ``compute_score_batch``) passes its ``reward_kwargs`` on, anything else is
    refused rather than silently not called.
    """
    if compute_score is None:
        return {}
    func = getattr(compute_score, "func", None)
    args = getattr(compute_score, "args", ())
    if getattr(compute_score, "__name__", None) == "default_compute_score":
        return {}
    if func is not None and len(args) == 2 and callable(args[0]):
        raw, extra = args
        if getattr(raw, "__name__", None) in ("compute_score", "compute_score_batch") and (
            getattr(raw, "__module__", "").endswith("grpo_fast.integrations.verl")
            or getattr(raw, "__code__", None) is not None
            and raw.__code__.co_filename.endswith(("integrations/verl.py", "integrations\\verl.py"))
        ):
            options = dict(extra)
            unknown = sorted(set(options) - {"judge", "rel_tol", "rules", "think"})
            if unknown:
                raise InvalidInputError(
                    f"reward_kwargs {unknown} are not options of the grpo_fast reward manager "
                    "(judge, rel_tol, rules, think)"
                )
            if "judge" in options:
                convention(None, options["judge"])  # validates
            return options
    raise InvalidInputError(
        "the grpo_fast reward manager scores with grpo-fast; leave "
        "reward.custom_reward_function.path unset (or point it at "
        "pkg://grpo_fast.integrations.verl) — for another scorer use reward_manager.name=naive"
    )


def _decode(tokenizer: Any, ids: list[list[int]]) -> list[str]:
    """``tokenizer.decode(x, skip_special_tokens=True)`` for each, as verl's managers decode.

    A fast tokenizer without the clean-up of tokenization spaces decodes the
    batch in one call of its Rust backend (the same strings).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and not getattr(tokenizer, "clean_up_tokenization_spaces", True):
        texts: list[str] = backend.decode_batch(ids, skip_special_tokens=True)
        return texts
    return [tokenizer.decode(x, skip_special_tokens=True) for x in ids]


def _make_reward_manager() -> Any:
    import asyncio

    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

    class _GrpoFastRewardManager(RewardManagerBase):  # type: ignore[misc, valid-type]
        """verl reward-loop manager that scores concurrent samples in one Rust call.

        verl's ``RewardLoopWorker`` calls ``run_single`` once per sample, all
        of a chunk at once (and once per finished rollout in the streaming
        agent loop). Each call queues its sample; the samples queued by one
        turn of the event loop are decoded and scored together, off the loop,
        in one :func:`score_items` call (one ``verify_batch`` per convention),
        while later arrivals queue for the next call. Scores follow verl's
        conventions per ``data_source`` (:func:`convention`); options come
        from ``reward.custom_reward_function.reward_kwargs`` when ``path`` is
        ``pkg://grpo_fast.integrations.verl``.
        """

        def __init__(
            self,
            config: Any,
            tokenizer: Any,
            compute_score: Any,
            reward_router_address: Any = None,
            reward_model_tokenizer: Any = None,
            **kwargs: Any,
        ) -> None:
            options = _reward_options(compute_score)  # refuse before verl makes an event loop
            super().__init__(config, tokenizer, compute_score)
            self.options = options
            self._pending: list[tuple[Any, Any]] = []
            self._busy = False

        async def run_single(self, data: Any) -> dict[str, Any]:
            loop = asyncio.get_running_loop()
            # Several outputs of one session: the last is scored, as verl's managers do.
            # Read from the columns, without building DataProto items.
            ids = data.batch["responses"][-1]
            length = int(data.batch["attention_mask"][-1][-ids.shape[-1] :].sum())
            extra = data.non_tensor_batch
            record = (
                ids[:length].tolist(),
                extra["data_source"][-1],
                extra["reward_model"][-1]["ground_truth"],
                extra["extra_info"][-1] if "extra_info" in extra else None,
            )
            future = loop.create_future()
            self._pending.append((record, future))
            if not self._busy:
                self._busy = True
                loop.call_soon(self._start, loop)
            result: dict[str, Any] = await future
            return result

        def _start(self, loop: Any) -> None:
            batch, self._pending = self._pending, []
            loop.create_task(self._score(loop, batch))

        async def _score(self, loop: Any, batch: list[tuple[Any, Any]]) -> None:
            try:
                results = await loop.run_in_executor(None, self._score_sync, [r for r, _ in batch])
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
            except Exception as exc:  # every waiting sample sees the error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
            finally:
                if self._pending:
                    self._start(loop)
                else:
                    self._busy = False

        def _score_sync(self, records: list[Any]) -> list[dict[str, Any]]:
            texts = _decode(self.tokenizer, [r[0] for r in records])
            scores, correct, _ = score_items(
                [r[1] for r in records],
                texts,
                [r[2] for r in records],
                [r[3] for r in records],
                **self.options,
            )
            return [
                {"reward_score": float(s), "reward_extra_info": {"acc": float(c)}}
                for s, c in zip(scores.tolist(), correct.tolist(), strict=True)
            ]

    _GrpoFastRewardManager.__name__ = _GrpoFastRewardManager.__qualname__ = "GrpoFastRewardManager"
    return _GrpoFastRewardManager


def register_verl_reward_manager() -> bool:
    """Register :data:`GrpoFastRewardManager` in verl's reward-loop registry as ``grpo_fast``.

    False when verl's reward loop is not importable. A name already
    registered (by another copy of this module) is left as it is.
    """
    global GrpoFastRewardManager
    try:
        from verl.experimental.reward_loop.reward_manager import registry
    except ImportError:
        return False
    if REWARD_MANAGER_NAME in registry.REWARD_MANAGER:
        GrpoFastRewardManager = registry.REWARD_MANAGER[REWARD_MANAGER_NAME]
        return True
    if GrpoFastRewardManager is None:
        GrpoFastRewardManager = _make_reward_manager()
    registry.register(REWARD_MANAGER_NAME)(GrpoFastRewardManager)
    return True


def _verl_installed() -> bool:
    import importlib.util

    try:
        return importlib.util.find_spec("verl") is not None
    except (ImportError, ValueError):
        return False


def _register_all() -> None:
    """Registration on import: by verl's ``verl.plugins`` entry point in every
    process that imports verl, or by importing this module. verl swallows a
    plugin's errors (logged at DEBUG), so failures are logged here as warnings."""
    import logging

    for register in (
        register_verl_estimators,
        register_verl_reward_manager,
        register_verl_policy_losses,
    ):
        try:
            register()
        except Exception as exc:  # pragma: no cover - depends on the installed verl
            logging.getLogger(__name__).warning(
                "grpo_fast: %s failed: %s: %s", register.__name__, type(exc).__name__, exc
            )


if _verl_installed():
    _register_all()
