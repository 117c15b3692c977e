"""Drop-in pieces for other RL frameworks.

Each submodule is imported on its own, so the framework it targets (and torch)
is only needed when it is used:

- :mod:`grpo_fast.integrations.trl`: reward functions for TRL's ``GRPOTrainer``.
- :mod:`grpo_fast.integrations.verl`: ``compute_score`` reward functions and
  advantage estimators with verl's signatures, registered with verl.
- :mod:`grpo_fast.integrations.openrlhf`: the ``reward_func`` module OpenRLHF loads.
"""
