"""verl drop-ins: reward functions with verl's signatures.

:func:`compute_score` (verl's ``custom_reward_function`` form) and
:func:`compute_score_batch` score with verl's conventions per ``data_source``
(:func:`convention`: gsm8k's ``####`` line, MATH's ``\\boxed{}``, math_dapo's
-1 for a wrong answer), grpo-fast's equality, and ``judge="grpo_fast"`` as the
named option for grpo-fast's extraction of any answer form::

    reward.custom_reward_function.path=pkg://grpo_fast.integrations.verl
    reward.custom_reward_function.name=compute_score

No signals are used, so they run in the executor threads of verl's reward
loop (math-verify's ``signal.alarm`` timeouts cannot). The reward manager
(:mod:`~grpo_fast.integrations.verl.reward_manager`) scores the samples verl's
``RewardLoopWorker`` hands it one by one in one Rust call per batch.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, NamedTuple

import numpy as np

from grpo_fast.errors import InvalidInputError
from grpo_fast.integrations.verl import prime_code
from grpo_fast.verify import extract_answer, verify_batch

__all__ = [
    "JUDGES",
    "Convention",
    "compute_score",
    "compute_score_batch",
    "convention",
    "score_items",
]


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
#: Code sources: verl's ``default_compute_score`` runs them through its local
#: ``prime_code`` executor; here they run in grpo-fast's sandbox
#: (:mod:`grpo_fast.integrations.verl.prime_code`).
_CODE_SOURCES = frozenset({"codecontests", "apps", "codeforces", "taco"})

_VERL_ONLY_SOURCES = frozenset(
    {
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
_CODE = Convention(None, delegate=True)  # the sandbox scores it, as verl's prime_code would


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
    the code sources (``codecontests``, ``apps``, ``codeforces``, ``taco``)
    run in grpo-fast's sandbox and score the fraction of test cases passed,
    as verl's ``prime_code`` with ``continuous=True`` does (docs/code.md);
    ``hiyouga/geometry3k`` and the ``searchR1_*`` sources go to verl's own
    scorer. With ``judge="grpo_fast"`` every answer source uses
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
    if source in _CODE_SOURCES:
        return _CODE
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


def _prompt_of(extra_info: Any) -> Any:
    """The prompt in verl's ``extra_info``: its ``prompt`` or ``question``
    (verl's GSM8K and MATH preprocessing store the question there), else None."""
    if not isinstance(extra_info, dict):
        return None
    prompt = extra_info.get("prompt")
    if prompt is None:
        prompt = extra_info.get("question")
    return prompt if isinstance(prompt, (str, list)) else None


def _matched(
    golds: list[Any],
    preds: list[str],
    rules: Sequence[str] | None,
    rel_tol: float,
    think: bool,
    prompts: list[Any] | None = None,
) -> np.ndarray:
    """1.0 / 0.0 per item (any of a list of acceptable golds), one Rust call."""
    flat, owner = _golds(golds)
    opts: dict[str, Any] = {"rel_tol": rel_tol, "rules": rules, "think": think}
    if len(flat) == len(preds):
        return verify_batch(flat, preds, prompts=prompts, **opts).astype(np.float64)
    if prompts is not None:
        opts["prompts"] = [prompts[i] for i in owner]
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
        if conv == _CODE:
            # verl's default_compute_score: prime_code with continuous=True, a float.
            results = prime_code.compute_score_batch(
                [preds[i] for i in items], [golds[i] for i in items], continuous=True
            )
            for i, (fraction, _) in zip(items, results, strict=True):
                delegated[i] = scores[i] = float(fraction)
                correct[i] = fraction == 1.0
            continue
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
        prompts = [_prompt_of(infos[i]) for i in items]
        with_prompt = None if all(p is None for p in prompts) else prompts
        hit = _matched([golds[i] for i in items], texts, use, rel_tol, think, with_prompt) > 0
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
