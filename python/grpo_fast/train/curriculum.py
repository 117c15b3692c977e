"""Which prompts to train on next.

:class:`UniformPrompts` walks the dataset in seeded random order, epoch after
epoch. :class:`Curriculum` tracks each prompt's solve rate and draws prompts
near the model's capability frontier: weight ``max(p (1 - p), floor)``, where
``p`` is the prompt's smoothed solve rate. A prompt the model always or never
solves carries no GRPO signal (all rewards of its group are equal), so it is
drawn rarely, but the floor keeps it in play: the model's ability moves and
last week's "never" may be today's frontier. A prompt not yet seen counts as
``p = 0.5`` (most uncertain), so every prompt gets tried early on.

Both keep their full state (counts and random generator) in
``state_dict()`` for exact resume.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from grpo_fast.errors import InvalidInputError

__all__ = ["Curriculum", "UniformPrompts"]


class UniformPrompts:
    """Prompts in a seeded random order, reshuffled every epoch.

    Examples
    --------
    >>> draw = UniformPrompts(5, seed=0)
    >>> sorted(draw.draw(5).tolist())
    [0, 1, 2, 3, 4]
    """

    def __init__(self, num_prompts: int, *, seed: int = 0) -> None:
        if num_prompts < 1:
            raise InvalidInputError("the dataset has no prompts")
        self.num_prompts = num_prompts
        self.rng = np.random.default_rng(seed)
        self._order = self.rng.permutation(num_prompts)
        self._pos = 0

    def draw(self, k: int) -> np.ndarray:
        """The next ``k`` prompt indices (distinct unless ``k`` exceeds the dataset)."""
        out = []
        while len(out) < k:
            if self._pos == self.num_prompts:
                self._order = self.rng.permutation(self.num_prompts)
                self._pos = 0
            take = min(k - len(out), self.num_prompts - self._pos)
            out.extend(self._order[self._pos : self._pos + take].tolist())
            self._pos += take
        return np.asarray(out, dtype=np.int64)

    def update(self, indices: Any, solve_rates: Any) -> None:
        """Uniform sampling ignores results."""

    def state_dict(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "order": self._order.tolist(),
            "pos": self._pos,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self._order = np.asarray(state["order"], dtype=np.int64)
        self._pos = int(state["pos"])


class Curriculum:
    """Solve-rate tracker that samples prompts with weight ``max(p (1 - p), floor)``.

    Parameters
    ----------
    num_prompts : int
    floor : float
        Smallest weight (the frontier weight peaks at 0.25), so solved and
        hopeless prompts are still revisited now and then.
    decay : float
        Solve rates are exponential moving averages: after each visit
        ``p <- decay * p + (1 - decay) * observed``; the first visit sets ``p``.
    seed : int

    Examples
    --------
    >>> cur = Curriculum(3, floor=0.01)
    >>> cur.update([0, 1], [1.0, 0.5])
    >>> cur.weights().round(2).tolist()   # solved, frontier, unseen
    [0.01, 0.25, 0.25]
    """

    def __init__(
        self, num_prompts: int, *, floor: float = 0.05, decay: float = 0.5, seed: int = 0
    ) -> None:
        if num_prompts < 1:
            raise InvalidInputError("the dataset has no prompts")
        if not 0 < floor <= 0.25:
            raise InvalidInputError(f"curriculum floor must be in (0, 0.25], got {floor}")
        if not 0 <= decay < 1:
            raise InvalidInputError(f"curriculum decay must be in [0, 1), got {decay}")
        self.num_prompts = num_prompts
        self.floor = floor
        self.decay = decay
        self.rng = np.random.default_rng(seed)
        self.solve_rate = np.full(num_prompts, np.nan)
        self.visits = np.zeros(num_prompts, dtype=np.int64)

    def weights(self) -> np.ndarray:
        """Unnormalised sampling weight of every prompt."""
        p = np.where(np.isnan(self.solve_rate), 0.5, self.solve_rate)
        return np.maximum(p * (1 - p), self.floor)

    def draw(self, k: int) -> np.ndarray:
        """``k`` distinct prompt indices (all of them, shuffled, if ``k`` >= the dataset)."""
        if k >= self.num_prompts:
            return self.rng.permutation(self.num_prompts)
        w = self.weights()
        return self.rng.choice(self.num_prompts, size=k, replace=False, p=w / w.sum())

    def update(self, indices: Any, solve_rates: Any) -> None:
        """Record the observed solve rate of each prompt just trained on."""
        idx = np.asarray(indices, dtype=np.int64)
        obs = np.asarray(solve_rates, dtype=np.float64)
        if idx.shape != obs.shape:
            raise InvalidInputError(
                f"indices has {idx.size} entries but solve_rates has {obs.size}"
            )
        for i, o in zip(idx.tolist(), obs.tolist(), strict=True):
            if np.isnan(o):
                continue
            prev = self.solve_rate[i]
            self.solve_rate[i] = o if np.isnan(prev) else self.decay * prev + (1 - self.decay) * o
            self.visits[i] += 1

    def state_dict(self) -> dict[str, Any]:
        return {
            "rng": self.rng.bit_generator.state,
            "solve_rate": self.solve_rate.tolist(),
            "visits": self.visits.tolist(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.rng.bit_generator.state = state["rng"]
        self.solve_rate = np.asarray(state["solve_rate"], dtype=np.float64)
        self.visits = np.asarray(state["visits"], dtype=np.int64)
