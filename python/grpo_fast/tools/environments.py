"""Environments: stateful multi-turn tasks, TRL's ``environment_factory`` shape.

An environment is any class with

- ``reset(**row)``: called once per rollout with the rollout's dataset row (its
  ``prompt``, ``answer`` and other columns), before the first turn;
- public methods with type hints and docstrings: that rollout's tools (the
  model calls them as it calls functions given as ``tools``);
- optionally ``get_reward() -> float``: read once the rollout ends, and added
  to the run's rewards under the class's name (weight 1), as TRL does.

``Trainer(environment_factory=GuessingGame)`` makes one object per rollout,
so the G rollouts of a prompt never share state; reward functions also get
the objects as ``environments=`` (TRL's keyword).

Examples
--------
>>> game = GuessingGame()
>>> game.reset(prompt="Guess my number", answer="37")
>>> game.guess(50), game.guess(30), game.guess(37), game.get_reward()
('lower', 'higher', 'correct', 1.0)
"""

from __future__ import annotations

from typing import Any

__all__ = ["GuessingGame"]


class GuessingGame:
    """Find a secret number between 1 and 100 by guessing: each guess is answered
    ``higher``, ``lower`` or ``correct``. The secret is the row's ``answer``.
    Reward: 1 when the number was found, less 0.1 per guess after the first five
    (never below 0); 0 when it was not found."""

    def __init__(self) -> None:
        self.secret = 0
        self.guesses = 0
        self.found = False

    def reset(self, **row: Any) -> None:
        self.secret = int(row["answer"])
        self.guesses = 0
        self.found = False

    def guess(self, number: int) -> str:
        """Guess the secret number.

        Args:
            number: the guess, between 1 and 100
        """
        if self.found:
            return "already found"
        self.guesses += 1
        if int(number) == self.secret:
            self.found = True
            return "correct"
        return "higher" if self.secret > int(number) else "lower"

    def get_reward(self) -> float:
        if not self.found:
            return 0.0
        return max(0.0, 1.0 - 0.1 * max(0, self.guesses - 5))
