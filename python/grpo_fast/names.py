"""Every name grpo-fast accepts, defined once.

The tables are the names of Rust enums (``rust/core/src/names.rs``), exported
by the extension; every check in Python reads them from here instead of
keeping a tuple of its own. Names that exist only in Python (loss types, KL
estimators) live with the code that uses them.

Examples
--------
>>> from grpo_fast import names
>>> names.ESTIMATORS
('grpo', 'rloo', 'reinforce_pp_baseline', 'grpo_passk', 'remax', 'opo', 'gpg')
>>> names.DEFAULT_RULES[0], "last_number" in names.RULES
('boxed', True)
"""

from __future__ import annotations

from grpo_fast import _core

__all__ = [
    "ADVANTAGE_EPS",
    "ANCHORED_RULES",
    "DEFAULT_RULES",
    "ESTIMATORS",
    "REWARD_KINDS",
    "RULES",
    "SCALES",
    "STEP_SPLITS",
]

#: Advantage estimators (``compute_advantages(estimator=...)``). The core also
#: accepts ``reinforce_plus_plus_baseline`` and ``reinforce++-baseline`` for
#: ``reinforce_pp_baseline``.
ESTIMATORS: tuple[str, ...] = _core.ESTIMATORS

#: Divisors of ``grpo`` / ``grpo_passk`` (``compute_advantages(scale=...)``).
SCALES: tuple[str, ...] = _core.SCALES

#: Every extraction rule (``rules=...`` of the verify functions).
RULES: tuple[str, ...] = _core.RULES

#: The rules tried by default, in priority order (``last_value`` takes the
#: latest of ``bold``, ``math_span``, ``choice`` and ``last_number``).
DEFAULT_RULES: tuple[str, ...] = _core.DEFAULT_RULES

#: The kinds of the Rust reward specs (``grpo_fast.rewards``).
REWARD_KINDS: tuple[str, ...] = _core.REWARD_KINDS

#: How :func:`grpo_fast.check_steps` splits a completion into steps.
STEP_SPLITS: tuple[str, ...] = _core.STEP_SPLITS

#: The advantage epsilon: ``(r - mean) / (std + ADVANTAGE_EPS)``, the core's default
#: (the ``eps`` / ``epsilon`` default of every advantage function).
ADVANTAGE_EPS: float = _core.ADVANTAGE_EPS

#: Only anchored answers: math-verify's ``try_extract_without_anchor=False``
#: and TRL's answer rules (``\\boxed{}``, ``The final answer is``,
#: ``Answer:``, ``the answer is``).
ANCHORED_RULES: tuple[str, ...] = ("boxed", "final_answer", "answer_colon", "answer_is")
