"""Families of interchangeable loss parts, each a table filled next to its members.

As verl's ``register_policy_loss``: a member is a small function registered by
name with a decorator where it is written, dispatch is a lookup, and the
names a user may give (``--surrogate``, ``--loss-type``, ``--kl``,
``--sampler-correction``) are the table's keys, in the order registered. A
plugin reads the same tables (:mod:`grpo_fast.integrations.verl.losses`).

Nothing here imports torch: the tables are what the command line and
:class:`~grpo_fast.loss.options.LossOptions` read.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Generic, TypeVar

from grpo_fast.errors import InvalidInputError

__all__ = ["Registry"]

F = TypeVar("F", bound=Callable[..., object])


class Registry(Generic[F]):
    """Members of one family by name.

    Examples
    --------
    >>> SHAPES = Registry("shape")
    >>> @SHAPES.register("square")
    ... def square(x):
    ...     return x * x
    >>> SHAPES.names, SHAPES["square"](3)
    (('square',), 9)
    >>> SHAPES["circle"]
    Traceback (most recent call last):
    ...
    grpo_fast.errors.InvalidInputError: unknown shape 'circle'; expected one of ('square',)
    """

    def __init__(self, option: str) -> None:
        self.option = option  # what the name is an option of, for the error message
        self._members: dict[str, F] = {}

    def register(self, *names: str) -> Callable[[F], F]:
        """Decorator: the function is the member of each of ``names``."""

        def add(fn: F) -> F:
            for name in names:
                if name in self._members:
                    raise ValueError(f"{self.option} {name!r} is registered twice")
                self._members[name] = fn
            return fn

        return add

    def __getitem__(self, name: str) -> F:
        try:
            return self._members[name]
        except (KeyError, TypeError):
            raise InvalidInputError(
                f"unknown {self.option} {name!r}; expected one of {self.names}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._members

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._members)

    def __repr__(self) -> str:
        return f"Registry({self.option!r}: {', '.join(self._members)})"
