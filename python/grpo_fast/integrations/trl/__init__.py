"""Reward functions for TRL's ``GRPOTrainer``, scored in Rust.

Each takes every call form TRL's own functions and ``GRPOTrainer`` use:
keywords (``prompts``, ``completions``, ``completion_ids``, ``trainer_state``,
``log_extra``, ``log_metric`` and the dataset columns), TRL's positional order
(``accuracy_reward(completions, solution)``,
``soft_overlong_punishment(completion_ids)``), plain-text completions and
conversational ones (lists of messages, ``[{"role": "assistant", "content":
...}]``). It returns ``list[float | None]``, scores the whole batch in one
call into grpo-fast's core (the GIL released, no signals, so it also works
from threads and TRL's async reward path) and is picklable (TRL's async
rollout worker ships reward functions to a child process).

Swapping TRL's math reward is one import::

    # from trl.rewards import accuracy_reward
    from grpo_fast.integrations.trl import accuracy_reward

    trainer = GRPOTrainer(model=..., reward_funcs=accuracy_reward, train_dataset=dataset)

- :data:`accuracy_reward`: 1.0 when the completion's answer equals the gold in
  the ``solution`` column, else 0.0; ``None`` when the gold has no
  mathematical value (empty, unparseable, or words such as ``forty two``:
  TRL then leaves the example out), as TRL's ``accuracy_reward``. Like TRL's,
  only an anchored answer counts (a
  ``\\boxed{}``, ``The final answer is ...``, ``Answer: ...``, ``the answer is
  ...``); what counts as equal is grpo-fast's verifier (see
  ``docs/verify_semantics.md`` and ``docs/verify_differences.md``).
- :func:`get_accuracy_reward`: the same with other options.
- :data:`reasoning_accuracy_reward` / :func:`get_reasoning_accuracy_reward`:
  TRL's ``reasoning_accuracy_reward`` (only the text after ``</think>`` counts).
- :data:`think_format_reward`: TRL's ``think_format_reward`` (``<think>...</think>``
  first, a single ``<think>``).
- :func:`get_format_reward`: 1.0 when a regex matches (Rust ``regex`` syntax).
- :func:`get_soft_overlong_punishment`: DAPO's soft overlong punishment of the
  completion's token count, as TRL's function of that name.
- :func:`get_cosine_scaled_reward`: correctness scaled by the token count on a
  cosine schedule (Yeo et al. 2025), as TRL's function of that name.
- :func:`get_repetition_penalty_reward`: the n-gram repetition penalty over
  the completion's token ids, as TRL's function of that name
  (:class:`grpo_fast.rewards.RepetitionReward` is open-r1's, over words).
- :func:`as_trl_reward`: any :class:`grpo_fast.rewards.Rewards` as a TRL reward.

The modules: ``base`` (:class:`TrlReward`, what every function shares),
``accuracy`` (correctness, cosine-scaled too) and ``shaping`` (format, length,
repetition).
"""

from grpo_fast.integrations.trl.accuracy import (
    AccuracyReward,
    CosineScaledReward,
    ReasoningAccuracyReward,
    accuracy_reward,
    get_accuracy_reward,
    get_cosine_scaled_reward,
    get_reasoning_accuracy_reward,
    reasoning_accuracy_reward,
)
from grpo_fast.integrations.trl.base import (
    TRL_ANSWER_RULES,
    TrlReward,
    as_trl_reward,
    completion_texts,
)
from grpo_fast.integrations.trl.shaping import (
    FormatReward,
    RepetitionPenalty,
    SoftOverlongPunishment,
    get_format_reward,
    get_repetition_penalty_reward,
    get_soft_overlong_punishment,
    think_format_reward,
)

__all__ = [
    "TRL_ANSWER_RULES",
    "AccuracyReward",
    "CosineScaledReward",
    "FormatReward",
    "ReasoningAccuracyReward",
    "RepetitionPenalty",
    "SoftOverlongPunishment",
    "TrlReward",
    "accuracy_reward",
    "as_trl_reward",
    "completion_texts",
    "get_accuracy_reward",
    "get_cosine_scaled_reward",
    "get_format_reward",
    "get_reasoning_accuracy_reward",
    "get_repetition_penalty_reward",
    "get_soft_overlong_punishment",
    "reasoning_accuracy_reward",
    "think_format_reward",
]
