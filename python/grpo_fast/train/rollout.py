"""One step's rollouts: sample, score, advantages, as an immutable :class:`Batch`.

:func:`collect` is the first half of :meth:`Trainer.step
<grpo_fast.train.trainer.Trainer.step>`: this rank's prompts (from the
curriculum), ``G`` completions each (the sampler), their rewards (the run's
:class:`~grpo_fast.run_rewards.RunRewards`), gathered across ranks, the
advantages (Rust), step-level advantages with a process reward, and the
curriculum's update; with dynamic sampling, more rounds while some groups
carry no signal. It reads the run's parts from the trainer (:class:`Parts`).

The rewards of a run (:class:`~grpo_fast.run_rewards.RunRewards`,
:func:`~grpo_fast.run_rewards.parse_reward`) are the top layer's; their names
stay importable from here.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from grpo_fast.advantages import compute_advantages
from grpo_fast.errors import InvalidInputError
from grpo_fast.run_rewards import (
    REWARD_NAMES,
    THINK_ANSWER_FORMAT,
    RewardLike,
    RunRewards,
    parse_reward,
)
from grpo_fast.sampling import Completions, SamplingParams, truncated

__all__ = [
    "REWARD_NAMES",
    "THINK_ANSWER_FORMAT",
    "Batch",
    "Parts",
    "RewardLike",
    "RunRewards",
    "collect",
    "completion_rows",
    "nanmean",
    "nanstd",
    "parse_reward",
    "with_environments",
]


class Parts(Protocol):
    """What a rollout reads from the trainer (:class:`~grpo_fast.train.trainer.Trainer`)."""

    config: Any  # TrainerConfig
    dist: Any  # Distributed
    prompts: Any  # the prompt order: Curriculum or UniformPrompts
    train_rows: Sequence[dict[str, Any]]
    train_prompts: Sequence[Any]
    sampler: Any
    policy: Any  # the model under DDP / FSDP2 (with_full_weights)
    precision: Any  # MixedPrecision
    params: SamplingParams
    rewards: RunRewards
    process: Any  # ProcessReward or None
    tokenizer: Any
    state: Any  # transformers.TrainerState: what TRL-style reward functions get
    once: Any  # SayOnce: what the run says once
    step_count: int


def collect(t: Parts) -> tuple[Batch, dict[str, Any]]:
    """Sample and score groups of this rank's prompts; with dynamic sampling, refill
    the batch with new groups while some carry no signal.

    Rewards are gathered from every rank before the advantages, so each
    rank's advantages (and the curriculum, and the metrics) are those of
    the whole step.
    """
    cfg, dist = t.config, t.dist
    P, G = cfg.prompts_per_step, cfg.num_generations
    kept: list[Batch] = []
    stats: dict[str, Any] = {"time_sampling": 0.0, "time_verify": 0.0}
    rounds = 1 + (cfg.max_refill_rounds if cfg.dynamic_sampling else 0)
    # The whole step's groups (every rank's), and this rank's rows of them.
    group_ids = np.repeat(np.arange(P * dist.world), G)
    mine = slice(dist.rank * P * G, (dist.rank + 1) * P * G)
    for r in range(rounds):
        batch, adv = _round(t, group_ids, mine, stats, first=r == 0)
        if not cfg.dynamic_sampling:
            kept.append(batch)
            break
        kept.append(batch.take(adv.keep[mine].reshape(P, G).any(axis=1)))
        if dist.all_min(sum(len(b.prompt_index) for b in kept)) >= P:
            break
    batch = Batch.concat(kept, G)
    # Every rank trains as many groups: the engines need the same passes on each.
    groups = min(P, dist.all_min(len(batch.prompt_index)))
    if len(batch.prompt_index) > groups:
        batch = batch.take(np.arange(groups))
    stats["sampling_rounds"] = r + 1
    stats["groups_trained"] = len(batch.prompt_index)
    return batch, stats


def _round(
    t: Parts, group_ids: np.ndarray, mine: slice, stats: dict[str, Any], *, first: bool
) -> tuple[Batch, Any]:
    """One draw of prompts: sample -> score -> advantages -> curriculum update."""
    cfg, dist = t.config, t.dist
    P, G = cfg.prompts_per_step, cfg.num_generations
    # The same draw on every rank; each takes its slice.
    idx_all = t.prompts.draw(P * dist.world)
    idx = idx_all[dist.rank * P : (dist.rank + 1) * P]
    rows = [t.train_rows[i] for i in idx for _ in range(G)]
    t0 = time.perf_counter()
    comp = _sample(t, idx, G, t.params)
    rows = with_environments(rows, comp)
    inputs = _estimator_inputs(t, idx, comp)
    t1 = time.perf_counter()
    # A completion cut off at the token limit is paid only through an answer
    # marker: the last number of unfinished reasoning is no answer.
    cut = truncated(comp, t.tokenizer.eos_token_id, cfg.max_new_tokens)
    scores = t.rewards.score(
        comp.texts,
        rows,
        completion_ids=comp.completion_ids,
        truncated=cut,
        trainer_state=t.state if t.rewards.has_functions else None,
    )
    total = dist.gather(scores.total)
    adv = compute_advantages(total, group_ids, estimator=cfg.estimator, scale=cfg.scale, **inputs)
    stats["time_sampling"] += t1 - t0
    stats["time_verify"] += time.perf_counter() - t1
    t.prompts.update(idx_all, adv.solve_rate)
    if first:  # what the current policy does on fresh prompts
        stats.update(_reward_stats(t, total, scores.columns))
        stats.update(
            solve_rate=nanmean(adv.solve_rate), frac_reward_zero_std=float(adv.frac_zero_std)
        )
    advantages = adv.advantages[mine]
    if t.process is not None:  # [P * G, T]: outcome + weight * process
        advantages, step_stats = t.process.token_advantages(
            comp.texts,
            comp.completion_ids,
            t.tokenizer,
            group_ids[mine],
            advantages,
            rows,
            scale=cfg.scale,
            dist=dist,
        )
        stats.update(step_stats if first else {})
    return Batch(idx, comp, scores.total, scores.columns, advantages), adv


def with_environments(rows: Sequence[dict[str, Any]], comp: Completions) -> list[dict[str, Any]]:
    """The rows as reward functions get them: with each rollout's environment
    (``environments=``, TRL's keyword) when an environment factory made them."""
    envs = None if comp.episodes is None else comp.episodes.environments
    if envs is None:
        return list(rows)
    return [{**r, "environments": e} for r, e in zip(rows, envs, strict=True)]


def _sample(t: Parts, idx: np.ndarray, n: int, params: SamplingParams) -> Completions:
    # Environments reset from each prompt's dataset row (grpo_fast.tools).
    extra = (
        {"rows": [t.train_rows[i] for i in idx]} if getattr(t.sampler, "wants_rows", False) else {}
    )
    with t.precision.autocast():
        comp: Completions = t.policy.with_full_weights(
            t.sampler.sample, [t.train_prompts[i] for i in idx], n, params, **extra
        )
    return comp


def _estimator_inputs(t: Parts, idx: np.ndarray, comp: Completions) -> dict[str, np.ndarray]:
    """What ``remax`` and ``opo`` need besides the rewards, gathered from every rank:
    the total reward of each prompt's greedy completion (ReMax's baseline, sampled
    here), or the completions' token lengths."""
    cfg = t.config
    if cfg.estimator == "opo":
        lengths = np.array([len(c) for c in comp.completion_ids], np.float64)
        return {"lengths": t.dist.gather(lengths)}
    if cfg.estimator != "remax":
        return {}
    rows = [t.train_rows[i] for i in idx]
    greedy = SamplingParams(max_new_tokens=cfg.max_new_tokens, temperature=0.0)
    best = _sample(t, idx, 1, greedy)
    cut = truncated(best, t.tokenizer.eos_token_id, cfg.max_new_tokens)
    reward = t.rewards.score(
        best.texts,
        rows,
        completion_ids=best.completion_ids,
        truncated=cut,
        trainer_state=t.state if t.rewards.has_functions else None,
    ).total
    baselines = np.repeat(reward.astype(np.float64), cfg.num_generations)
    return {"baselines": t.dist.gather(baselines)}


def _reward_stats(
    t: Parts, total: np.ndarray, columns: Mapping[str, np.ndarray]
) -> dict[str, float]:
    """The step's rewards under TRL's names and statistics (its std Bessel-corrected):
    ``reward``, ``reward_std``, ``rewards/<name>/mean`` and ``rewards/<name>/std``, over
    every rank's completions. Completions no reward could score (a NaN total) are
    said once a run."""
    stats = {"reward": nanmean(total), "reward_std": nanstd(total)}
    for k, v in columns.items():
        column = t.dist.gather(v)
        stats[f"rewards/{k}/mean"] = nanmean(column)
        stats[f"rewards/{k}/std"] = nanstd(column)
    unscored = int(np.isnan(total).sum())
    if unscored:
        which = ", ".join(f"{k}: {int(np.isnan(v).sum())}" for k, v in columns.items())
        t.once(
            "unscored",
            f"step {t.step_count + 1}: {unscored} of {len(total)} completions got no reward "
            f"(NaN; this process's counts by reward: {which}): each reward returned None or "
            "could not read the gold; they train with advantage 0",
        )
    return stats


def nanmean(x: np.ndarray) -> float:
    return float(np.nanmean(x)) if len(x) and not np.isnan(x).all() else float("nan")


def nanstd(x: np.ndarray) -> float:
    """The Bessel-corrected std of the values that are not NaN (TRL's ``nanstd``)."""
    n = int(np.count_nonzero(~np.isnan(x)))
    return float(np.nanstd(x, ddof=1)) if n > 1 else float("nan")


def completion_rows(batch: Batch | None, prompts: Sequence[Any]) -> list[dict[str, Any]]:
    """A batch's samples as TRL's completions table has them: prompt (its text in
    ``prompts``, by the batch's prompt index), completion, each reward's score, the
    total and the advantage (per-token advantages: their mean over the completion)."""
    if batch is None:
        return []
    G = batch.group_size
    rows = []
    for i, text in enumerate(batch.completions.texts):
        adv = np.asarray(batch.advantages[i], np.float64)
        rows.append(
            {
                "prompt": prompts[int(batch.prompt_index[i // G])],
                "completion": text,
                **{k: _finite(v[i]) for k, v in batch.reward_columns.items()},
                "reward": _finite(batch.rewards[i]),
                "advantage": float(adv.mean()) if adv.size else 0.0,
            }
        )
    return rows


def _finite(v: Any) -> float | None:
    return float(v) if np.isfinite(v) else None


def _frozen(a: np.ndarray) -> np.ndarray:
    # A read-only view: the batch cannot be written through, the caller's array is untouched.
    v = np.asarray(a).view()
    v.flags.writeable = False
    return v


@dataclass(frozen=True)
class Batch:
    """One generation batch on this rank: whole groups of ``G`` rollouts, ready for the loss.

    Immutable: its arrays are read-only, :meth:`take` and :meth:`concat`
    build new batches, and nothing later in the step writes into it.

    Attributes
    ----------
    prompt_index : numpy.ndarray
        int64 ``[P]``: the dataset row of each group's prompt.
    completions : Completions
        ``P * G`` completions, grouped by prompt.
    rewards : numpy.ndarray
        float32 ``[P * G]``: the weighted total reward.
    reward_columns : dict of str to numpy.ndarray
        float32 ``[P * G]`` per reward, unweighted.
    advantages : numpy.ndarray
        float32 ``[P * G]``, or ``[P * G, T]`` per token (process rewards).
    """

    prompt_index: np.ndarray
    completions: Completions
    rewards: np.ndarray
    reward_columns: Mapping[str, np.ndarray]
    advantages: np.ndarray

    def __post_init__(self) -> None:
        n = len(self.completions)
        if len(self.prompt_index) * self.completions.n != n:
            raise InvalidInputError(
                f"{len(self.prompt_index)} groups of {self.completions.n} but {n} completions"
            )
        for name in ("rewards", "advantages"):
            if len(getattr(self, name)) != n:
                raise InvalidInputError(f"{name} has {len(getattr(self, name))} entries, not {n}")
        object.__setattr__(self, "prompt_index", _frozen(self.prompt_index))
        object.__setattr__(self, "rewards", _frozen(self.rewards))
        object.__setattr__(self, "advantages", _frozen(self.advantages))
        object.__setattr__(
            self, "reward_columns", {k: _frozen(v) for k, v in self.reward_columns.items()}
        )

    def __len__(self) -> int:
        return len(self.completions)

    @property
    def group_size(self) -> int:
        return self.completions.n

    def token_advantages(self, width: int) -> npt.NDArray[np.float32]:
        """float32 advantages for completions padded to ``width`` tokens: ``[P * G]`` as they
        are, ``[P * G, T]`` cut or zero-padded to ``[P * G, width]``.

        Examples
        --------
        >>> c = Completions(["a", "b"], [[1]] * 2, [[2]] * 2, None, 2)
        >>> Batch(np.array([0]), c, np.zeros(2), {}, np.ones((2, 3))).token_advantages(2).shape
        (2, 2)
        """
        adv = np.asarray(self.advantages, np.float32)
        if adv.ndim == 1:
            return adv.copy()
        out = np.zeros((adv.shape[0], width), np.float32)
        w = min(width, adv.shape[1])
        out[:, :w] = adv[:, :w]
        return out

    def take(self, groups: npt.ArrayLike) -> Batch:
        """The batch of the given groups (indices or a boolean mask over the ``P`` groups).

        Examples
        --------
        >>> c = Completions(["a", "b", "c", "d"], [[1]] * 4, [[2]] * 4, None, 2)
        >>> b = Batch(np.array([7, 9]), c, np.array([0., 1, 1, 1]), {}, np.array([-1., 1, 0, 0]))
        >>> b.take(np.array([False, True])).completions.texts
        ['c', 'd']
        """
        g = np.asarray(groups)
        g = np.flatnonzero(g) if g.dtype == bool else g.astype(np.int64)
        G = self.group_size
        rows = (g[:, None] * G + np.arange(G)).ravel()
        return Batch(
            self.prompt_index[g],
            self.completions.take(rows.tolist()),
            self.rewards[rows],
            {k: v[rows] for k, v in self.reward_columns.items()},
            self.advantages[rows],
        )

    @staticmethod
    def concat(batches: Sequence[Batch], group_size: int) -> Batch:
        """The batches one after the other (no batch: an empty one of ``group_size``)."""
        cat = lambda xs, dt: np.concatenate(xs).astype(dt) if xs else np.zeros(0, dt)  # noqa: E731
        names = batches[0].reward_columns.keys() if batches else ()
        advantages = [b.advantages for b in batches]
        if advantages and advantages[0].ndim == 2:  # per token: pad to the longest
            width = max(a.shape[1] for a in advantages)
            advantages = [b.token_advantages(width) for b in batches]
        return Batch(
            cat([b.prompt_index for b in batches], np.int64),
            Completions.concat([b.completions for b in batches], group_size),
            cat([b.rewards for b in batches], np.float32),
            {k: cat([b.reward_columns[k] for b in batches], np.float32) for k in names},
            cat(advantages, np.float32),
        )
