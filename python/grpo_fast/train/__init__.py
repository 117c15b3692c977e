"""The training loop and what only it needs (torch and transformers).

- :mod:`~grpo_fast.train.config`: :class:`TrainerConfig`, every option of a run
  and its checks (imports no torch: the command line's parser is built from it);
- :mod:`~grpo_fast.train.trainer`: :class:`Trainer`, whose ``step()`` is one call
  per stage: :func:`grpo_fast.train.rollout.collect` (sample, score,
  advantages, curriculum: a :class:`~grpo_fast.train.rollout.Batch`) and
  :func:`grpo_fast.train.update.apply` (the batch shaped once, then the loss
  and the optimizer); :mod:`~grpo_fast.train.async_rollouts` runs the first
  stage in a background producer while the second steps (``--async-rollouts``);
- :mod:`~grpo_fast.train.build` (the run's parts from the config),
  :mod:`~grpo_fast.train.state` (checkpoints of the trainer's state),
  :mod:`~grpo_fast.train.data` (datasets and prompts),
  :mod:`~grpo_fast.train.modeling` (loading and setting up models),
  :mod:`~grpo_fast.train.forward` (packing, the shared prompt cache, completion
  log-probs), :mod:`~grpo_fast.train.export`, :mod:`~grpo_fast.train.checkpoint`,
  :mod:`~grpo_fast.train.distributed`, :mod:`~grpo_fast.train.curriculum`,
  :mod:`~grpo_fast.train.schedules`, :mod:`~grpo_fast.train.tracking`
  (metrics, W&B / TensorBoard), :mod:`~grpo_fast.train.plot`,
  :mod:`~grpo_fast.train.interrupt`, :mod:`~grpo_fast.train.defaults`,
  :mod:`~grpo_fast.train.devices` and :mod:`~grpo_fast.train.hub`.

This package may import the top layer (:mod:`grpo_fast.rewards`,
:mod:`grpo_fast.advantages`, ...); the top layer never imports it. Importing
``grpo_fast.train`` itself loads nothing: each module is imported by name.
"""
