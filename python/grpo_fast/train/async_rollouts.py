"""Asynchronous rollouts (``--async-rollouts``): the next batches are sampled and scored
by a background producer while the optimizer steps.

:class:`RolloutProducer` is a daemon thread that runs
:func:`~grpo_fast.train.rollout.collect` for batch ``i``, ``i + 1``, ... into a
bounded queue. Each batch is sampled under one policy *version* (the number of
optimizer steps behind the weights it was sampled with):

- the producer keeps its own sampling copy of the policy (HF sampling) or pushes
  to the vLLM server (``vllm-server``) itself, between batches; it loads the
  trainer's weights under a lock the trainer holds while it steps, so a batch
  never mixes two versions;
- before batch ``i`` it waits until the trainer has published version
  ``i - max_staleness``, so a batch is at most ``max_staleness`` versions old
  when it is trained (with 0 nothing overlaps: the run is the synchronous one,
  on the same random stream);
- a batch found older than that anyway is dropped (not re-sampled) and counted.

Each batch carries the random state and the prompt order's state as they were
right after it was drawn: a checkpoint written after training it stores those,
not the producer's (which is ahead), so a resumed run samples the next batch
anew exactly as an uninterrupted one would have. Batches still queued at a stop
are simply never trained.

An exception in the producer (a reward function raising, the vLLM server gone)
is raised in the trainer's thread as :class:`~grpo_fast.errors.RolloutError`
naming the cause; a stop (the end, Ctrl-C, an error in the trainer) sets the
producer's stop event and joins it.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from collections.abc import Callable
from contextlib import nullcontext
from dataclasses import dataclass
from types import SimpleNamespace
from typing import Any

import torch

from grpo_fast.errors import RolloutError
from grpo_fast.train import rollout
from grpo_fast.train.build import hf_sampling_dtype
from grpo_fast.train.checkpoint import rng_state
from grpo_fast.train.modeling import weights_copy
from grpo_fast.train.rollout import Batch

__all__ = ["Rollout", "RolloutProducer"]

_POLL_S = 0.05  # how often a waiting side looks at the other's stop or failure


class _Parts(SimpleNamespace):
    """The trainer's parts rollout.collect reads, the sampler and policy the producer's."""

    @property
    def state(self) -> Any:
        # TRL-style reward functions get the trainer's progress (trainer_state) as
        # the trainer sees it while the batch is produced.
        return self.trainer.state


@dataclass(frozen=True)
class Rollout:
    """One produced batch: its index, the policy version it was sampled under, the
    rollout's stats, and the random / prompt-order state right after it was drawn."""

    index: int
    version: int
    batch: Batch
    stats: dict[str, Any]
    rng: dict[str, Any]
    prompts: dict[str, Any]


class _WholeWeights:
    """The producer's policy: its own copy, already whole (no FSDP gather)."""

    @staticmethod
    def with_full_weights(fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)


class RolloutProducer:
    """The background producer of a run's batches (see the module's docstring).

    Use it as a context manager around the training loop: the thread starts on
    entry and is stopped and joined on exit, whatever ended the loop.

    Parameters
    ----------
    t : Trainer
        The run: its config, data, rewards, prompt order, model and sampler.
    """

    def __init__(self, t: Any) -> None:
        from grpo_fast.sampling import HFSampler

        cfg = t.config
        self.max_staleness = cfg.max_staleness
        self._trainer_model = t.model
        self._queue: queue.Queue[Rollout] = queue.Queue(maxsize=max(1, cfg.max_staleness))
        self._cond = threading.Condition()
        # Held by the trainer while it changes the weights, by the producer while it copies them.
        self.weights_lock = threading.Lock()
        self._version = t.step_count  # the trainer's published version
        self._next = t.step_count  # the next batch to produce
        self._limit = cfg.max_steps  # batches to produce (one more per dropped batch)
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._loaded = -1  # the version in the sampling copy
        self._backpressure = 0.0  # producer seconds spent waiting for the trainer, since read
        self.dropped = 0
        # On a GPU the producer queues its kernels on a stream of its own: on the trainer's
        # (the default one) they would wait for the update's, and nothing would overlap.
        self._device = t.device
        self._stream: Any = None
        if cfg.sampler == "hf" and t.device.type == "cuda":
            self._stream = torch.cuda.Stream(t.device)
        if cfg.sampler == "hf":
            # In 16 bits where the run's sampler would be (hf_sampling_copy): loading the
            # trainer's weights into it casts them once per version, not once per token.
            dtype = hf_sampling_dtype(cfg, t.model, sharded=t.policy.sharded)
            self._copy = (
                copy.deepcopy(t.model).eval().requires_grad_(False)
                if dtype is None
                else weights_copy(t.model, dtype)
            )
            sampler: Any = HFSampler(self._copy, t.tokenizer, logprobs=True)
            if getattr(t, "tools", None) is not None:  # multi-turn rollouts (grpo_fast.tools)
                sampler = t.tools.wrap(sampler, t.tokenizer)
            self._push = False
        else:  # vllm-server: a CPU copy to push from, between batches
            self._copy = copy.deepcopy(t.model).to("cpu").eval().requires_grad_(False)
            sampler = t.sampler
            self._push = True
        # What rollout.collect reads, with the producer's sampler and policy.
        self._parts = _Parts(
            trainer=t,
            config=cfg,
            dist=t.dist,
            prompts=t.prompts,
            train_rows=t.train_rows,
            train_prompts=t.train_prompts,
            sampler=sampler,
            policy=_WholeWeights(),
            precision=t.precision,
            params=t.params,
            rewards=t.rewards,
            process=t.process,
            tokenizer=t.tokenizer,
        )
        self._thread = threading.Thread(target=self._run, name="grpo-fast-rollouts", daemon=True)

    # ------------------------------------------------------------------ lifetime
    def __enter__(self) -> RolloutProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self, timeout: float = 60.0) -> None:
        """Stop the producer and wait for it (a batch being sampled finishes first; the
        thread is a daemon, so a stuck one cannot keep the program alive)."""
        self._stop.set()
        with self._cond:
            self._cond.notify_all()
        if self._thread.is_alive():
            self._thread.join(timeout)

    # ------------------------------------------------------------------ the trainer's side
    def get(self, version: int, stop: Callable[[], bool] = lambda: False) -> Rollout | None:
        """The next batch not older than ``max_staleness`` versions, for the trainer at
        ``version``; None when ``stop()`` became true while waiting. Raises
        :class:`RolloutError` when the producer failed."""
        while True:
            item = self._take(stop)
            if item is None:
                return None
            if version - item.version <= self.max_staleness:
                return item
            self.dropped += 1  # never re-sampled: the producer draws one batch more
            with self._cond:
                self._limit += 1
                self._cond.notify_all()

    def _take(self, stop: Callable[[], bool]) -> Rollout | None:
        while True:
            self._raise_if_failed()
            try:
                return self._queue.get(timeout=_POLL_S)
            except queue.Empty:
                if stop():
                    return None
                if not self._thread.is_alive():
                    self._raise_if_failed()
                    raise RolloutError("the rollout producer stopped without a batch") from None

    def _raise_if_failed(self) -> None:
        if self._error is not None:
            e = self._error
            raise RolloutError(
                f"the rollout producer failed while sampling or scoring a batch: "
                f"{type(e).__name__}: {e}"
            ) from e

    def publish(self, version: int) -> None:
        """The trainer's weights are now ``version`` (call it holding :attr:`weights_lock`)."""
        with self._cond:
            self._version = version
            self._cond.notify_all()

    def backpressure(self) -> float:
        """Seconds the producer waited for the trainer since the last call."""
        with self._cond:
            out, self._backpressure = self._backpressure, 0.0
        return out

    def queue_size(self) -> int:
        return self._queue.qsize()

    # ------------------------------------------------------------------ the producer's side
    def _run(self) -> None:
        try:
            with torch.cuda.stream(self._stream) if self._stream is not None else nullcontext():
                while self._produce_one():
                    pass
        except BaseException as e:  # handed to the trainer's thread, raised there
            self._error = e

    def _produce_one(self) -> bool:
        t0 = time.perf_counter()
        with self._cond:
            i = self._next
            # Past the run's last batch: wait (a dropped batch adds one) until stopped.
            while not self._stop.is_set() and (
                i >= self._limit or self._version < i - self.max_staleness
            ):
                self._cond.wait(_POLL_S)
        if self._stop.is_set():
            return False
        version = self._load_weights()
        waited = time.perf_counter() - t0
        batch, stats = rollout.collect(self._parts)
        item = Rollout(
            i,
            version,
            batch,
            stats,
            rng_state(),
            copy.deepcopy(self._parts.prompts.state_dict()),
        )
        t1 = time.perf_counter()
        while not self._stop.is_set():
            try:
                self._queue.put(item, timeout=_POLL_S)
                break
            except queue.Full:
                continue
        with self._cond:
            self._backpressure += waited + time.perf_counter() - t1
            self._next = i + 1
        return not self._stop.is_set()

    def _load_weights(self) -> int:
        """The trainer's current weights into the sampling copy (or the server), unless
        they are there already; the version they are."""
        with self.weights_lock:
            version = self._version
            if version != self._loaded:
                if self._stream is not None:  # after the trainer's queued optimizer step
                    self._stream.wait_stream(torch.cuda.default_stream(self._device))
                self._copy.load_state_dict(self._trainer_model.state_dict())
                if self._stream is not None:  # done before the trainer may write again
                    self._stream.synchronize()
        if version != self._loaded:
            if self._push:
                self._parts.sampler.update_weights(self._copy)
            self._loaded = version
        return version
