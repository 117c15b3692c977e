"""What every sampler shares: :class:`SamplingParams`, :class:`Completions`
(``n`` completions per prompt, grouped by prompt) and the :class:`Sampler`
protocol the trainer calls.

Completions come back grouped: the ``n`` samples of prompt ``i`` are rows
``i * n .. (i + 1) * n - 1``. A completion's token ids end with the EOS token
when the model stopped on its own (the loss then teaches it to stop) and are
cut at ``max_new_tokens`` otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np

from grpo_fast.errors import InvalidInputError

__all__ = [
    "Completions",
    "Episodes",
    "Sampler",
    "SamplingParams",
    "check_prompts",
    "truncated",
]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample.

    Attributes
    ----------
    max_new_tokens : int
        Longest completion, in tokens (EOS included).
    temperature : float
        Softmax temperature; 0 means greedy decoding.
    top_p : float
        Nucleus sampling mass (1.0 = off).
    top_k : int
        Keep only the k most likely tokens (0 = off).
    """

    max_new_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise InvalidInputError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise InvalidInputError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise InvalidInputError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise InvalidInputError(f"top_k must be >= 0, got {self.top_k}")


@dataclass(frozen=True)
class Episodes:
    """Per-rollout counts of multi-turn episodes (tool use, :mod:`grpo_fast.tools`).

    Attributes
    ----------
    tool_calls, tool_errors : list[int]
        Calls the model made, and those that failed (unknown tool, unreadable
        call, the tool raised or timed out).
    turns : list[int]
        Model turns (1: no tool was called).
    cut : list[bool]
        Ended by a limit while the model was still calling tools (``max_tool_calls``,
        or the tool's result did not fit the token budget).
    environments : list or None
        The environment object of each rollout, when an environment factory made them.
    """

    tool_calls: list[int]
    tool_errors: list[int]
    turns: list[int]
    cut: list[bool]
    environments: list[Any] | None = None

    def take(self, rows: Sequence[int]) -> Episodes:
        envs = self.environments
        return Episodes(
            [self.tool_calls[i] for i in rows],
            [self.tool_errors[i] for i in rows],
            [self.turns[i] for i in rows],
            [self.cut[i] for i in rows],
            None if envs is None else [envs[i] for i in rows],
        )

    @staticmethod
    def concat(parts: Sequence[Episodes]) -> Episodes:
        envs = None
        if parts and all(p.environments is not None for p in parts):
            envs = [e for p in parts for e in p.environments]  # type: ignore[union-attr]
        return Episodes(
            [x for p in parts for x in p.tool_calls],
            [x for p in parts for x in p.tool_errors],
            [x for p in parts for x in p.turns],
            [x for p in parts for x in p.cut],
            envs,
        )


@dataclass(frozen=True)
class Completions:
    """``len(prompts) * n`` completions, grouped by prompt.

    Attributes
    ----------
    texts : list[str]
        Decoded completions, special tokens removed.
    prompt_ids : list[list[int]]
        Token ids of each row's prompt (no padding).
    completion_ids : list[list[int]]
        Sampled token ids (no padding; EOS kept when the model emitted it).
    logprobs : list[list[float]] or None
        Log-probability of each sampled token under the sampling distribution
        (after temperature), when the backend reports it.
    n : int
        Samples per prompt.
    tool_mask : list[list[int]] or None
        Multi-turn rollouts (TRL's name): 1 for each token of ``completion_ids`` the
        model sampled, 0 for the tokens of tool and environment messages, which
        get no loss, KL or entropy (their ``logprobs`` are 0). None: every token
        is the model's.
    episodes : Episodes or None
        Tool calls, errors and turns of each rollout, when they are multi-turn.
    """

    texts: list[str]
    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    logprobs: list[list[float]] | None
    n: int
    tool_mask: list[list[int]] | None = None
    episodes: Episodes | None = None

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, rows: Sequence[int]) -> Completions:
        """The given rows, in that order (whole groups keep ``n``)."""
        pick = lambda xs: None if xs is None else [xs[i] for i in rows]  # noqa: E731
        return Completions(
            pick(self.texts),
            pick(self.prompt_ids),
            pick(self.completion_ids),
            pick(self.logprobs),
            self.n,
            pick(self.tool_mask),
            None if self.episodes is None else self.episodes.take(rows),
        )

    @staticmethod
    def concat(parts: Sequence[Completions], n: int) -> Completions:
        """The parts one after the other (log-probs only when every part has them)."""
        lps = None
        if parts and all(p.logprobs is not None for p in parts):
            lps = [x for p in parts for x in p.logprobs]  # type: ignore[union-attr]
        masks = None
        if any(p.tool_mask is not None for p in parts):  # a part without one: all the model's
            masks = [
                m
                for p in parts
                for m in (p.tool_mask or [[1] * len(ids) for ids in p.completion_ids])
            ]
        episodes = None
        if parts and all(p.episodes is not None for p in parts):
            episodes = Episodes.concat([p.episodes for p in parts])  # type: ignore[misc]
        return Completions(
            [x for p in parts for x in p.texts],
            [x for p in parts for x in p.prompt_ids],
            [x for p in parts for x in p.completion_ids],
            lps,
            n,
            masks,
            episodes,
        )


def truncated(
    completions: Completions, eos_token_id: int | Sequence[int] | None, max_new_tokens: int
) -> np.ndarray:
    """Which completions hit the length limit without an EOS token (bool ``[N]``).

    DAPO's overlong filtering gives them no loss (``mask_truncated_completions``):
    the answer was cut off, not judged wrong.

    Examples
    --------
    >>> c = Completions(["a", "b", "c"], [[1]] * 3, [[5, 6, 2], [5, 6, 7], [5]], None, 3)
    >>> truncated(c, eos_token_id=2, max_new_tokens=3).tolist()
    [False, True, False]
    """
    if eos_token_id is None:
        eos: set[int] = set()
    elif isinstance(eos_token_id, int):
        eos = {eos_token_id}
    else:
        eos = set(eos_token_id)
    cut = [
        len(ids) >= max(max_new_tokens, 1) and ids[-1] not in eos
        for ids in completions.completion_ids
    ]
    return np.array(cut, dtype=bool)


@runtime_checkable
class Sampler(Protocol):
    """What the trainer needs from a generation backend."""

    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        """``n`` completions of every prompt, grouped by prompt."""
        ...

    def update_weights(self, model: Any) -> None:
        """Make the next :meth:`sample` use ``model``'s current weights."""
        ...


def check_prompts(prompts: list[str], n: int) -> None:
    if n < 1:
        raise InvalidInputError(f"n (samples per prompt) must be >= 1, got {n}")
    if not prompts:
        raise InvalidInputError("prompts is empty")
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise InvalidInputError(f"prompts[{i}] is {type(p).__name__}; expected a str")
