"""The training loop and what only it needs (torch and transformers).

:mod:`~grpo_fast.train.trainer` (:class:`Trainer`, :class:`TrainerConfig`),
:mod:`~grpo_fast.train.rollout` (the batch of one step and the rewards of a
run), :mod:`~grpo_fast.train.data` (datasets and prompts),
:mod:`~grpo_fast.train.modeling` (models, packing, log-probs of completions),
:mod:`~grpo_fast.train.checkpoint` (the output directory: :mod:`~grpo_fast.train.run_dir`,
:mod:`~grpo_fast.train.lock`), :mod:`~grpo_fast.train.distributed`,
:mod:`~grpo_fast.train.curriculum`, :mod:`~grpo_fast.train.tracking`
(metrics, W&B / TensorBoard), :mod:`~grpo_fast.train.plot`,
:mod:`~grpo_fast.train.interrupt` and :mod:`~grpo_fast.train.defaults`.

This package may import the top layer (:mod:`grpo_fast.rewards`,
:mod:`grpo_fast.advantages`, ...); the top layer never imports it. Importing
``grpo_fast.train`` itself loads nothing: each module is imported by name.
"""
