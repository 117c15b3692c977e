"""Several processes under ``torchrun``: who this process is, the gathers of a step,
and the engine that keeps the ranks' copies of the policy one model.

Every rank samples and scores its own share of a step's prompts; the rewards
are gathered from all ranks before the group statistics, so every rank sees
the same advantages, curriculum and metrics (:class:`Distributed`). The
gradients are torch's own engines' business (:func:`wrap_distributed`,
``--parallel``):

- ``ddp``: ``DistributedDataParallel``. Every rank holds the whole model and
  optimizer state; the backward averages the gradients (all-reduce).
- ``fsdp``: FSDP2 (``fully_shard`` on every decoder layer and on the whole).
  Parameters, gradients and optimizer state are split across the ranks; a
  layer's weights are all-gathered for its forward and backward and its
  gradients reduce-scattered. Checkpoints go through
  ``torch.distributed.checkpoint`` (:meth:`Parallel.state_dict`).

Both engines act through a module's ``forward``, but the loss forward calls
the decoder and reads the output head's weight itself
(:func:`~grpo_fast.train.forward.completion_logprobs`), so the module they wrap is
:class:`LogProbs`, whose forward is that whole computation.

Generation under FSDP2 (:meth:`Parallel.with_full_weights`): the sampler runs
inside a forward method of the sharded root, with every layer gathered once
beforehand and kept whole until the sampler returns, then sharded again. Each
rank then generates alone, as under DDP; the memory of one whole copy of the
weights is needed while it does.

gloo on CPU; on GPUs nccl for the engines and gloo for the CPU gathers. With one
process (no ``WORLD_SIZE``) the gathers are no-ops and nothing is wrapped.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch
import torch.distributed as dist

from grpo_fast.train.config import PARALLEL
from grpo_fast.train.forward import Packed, completion_logprobs
from grpo_fast.train.modeling import AdaptersDisabled, is_peft_model

__all__ = [
    "PARALLEL",
    "Distributed",
    "LogProbs",
    "Parallel",
    "init_process_group",
    "wrap_distributed",
]

T = TypeVar("T")


class Distributed:
    """The process group torchrun describes in the environment (``WORLD_SIZE``, ``RANK``)."""

    def __init__(self, world: int = 1, rank: int = 0, local_rank: int = 0) -> None:
        self.world, self.rank, self.local_rank = world, rank, local_rank

    @classmethod
    def from_env(cls, device_type: str) -> Distributed:
        """Join the process group torchrun set up (initialising it if needed)."""
        world = int(os.environ.get("WORLD_SIZE", "1"))
        out = cls(world, int(os.environ.get("RANK", "0")), int(os.environ.get("LOCAL_RANK", "0")))
        if world > 1 and not dist.is_initialized():
            init_process_group(device_type, out.local_rank)
        return out

    @property
    def enabled(self) -> bool:
        return self.world > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def gather(self, x: np.ndarray) -> np.ndarray:
        """Concatenate equal-shaped arrays from all ranks, in rank order."""
        if not self.enabled:
            return x
        t = torch.as_tensor(np.ascontiguousarray(x))
        out = [torch.empty_like(t) for _ in range(self.world)]
        dist.all_gather(out, t)
        return torch.cat(out).numpy()

    def gather_lists(self, x: list[Any]) -> list[Any]:
        """Concatenate lists of any lengths (small, picklable items) from all ranks, in rank
        order."""
        if not self.enabled:
            return x
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, x)
        return [item for part in out for item in part]

    def all_min(self, value: int) -> int:
        if not self.enabled:
            return value
        t = torch.tensor([value])
        dist.all_reduce(t, op=dist.ReduceOp.MIN)
        return int(t.item())

    def barrier(self) -> None:
        if self.enabled:
            dist.barrier()


def init_process_group(device_type: str, local_rank: int) -> None:
    """The default process group from torchrun's environment: gloo on the CPU; on GPUs
    nccl for CUDA tensors (the engines) and gloo for CPU ones (rewards, flags), each
    process on its own GPU (``LOCAL_RANK``)."""
    if device_type == "cuda":
        torch.cuda.set_device(local_rank)
        dist.init_process_group("cpu:gloo,cuda:nccl")
    else:
        dist.init_process_group("gloo")


class LogProbs(torch.nn.Module):
    """:func:`~grpo_fast.train.forward.completion_logprobs` of ``model`` as a module's forward:
    the module DDP and FSDP2 wrap, so that their hooks see the whole loss forward."""

    def __init__(self, model: Any) -> None:
        super().__init__()
        self.model = model

    def forward(
        self, packed: Packed, *, adapters: bool = True, **options: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Log-probs and entropies ``[N, Tc]``; ``adapters=False``: those of a LoRA
        model's base (the reference policy)."""
        model = self.model if adapters else AdaptersDisabled(self.model)
        logp, entropy = completion_logprobs(model, packed, **options)
        # FSDP2 refuses to hook views (an in-place op on one would skip its backward).
        return logp.clone(), entropy.clone()

    def call(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)``; under FSDP2 a forward method of the root (its own
        weights gathered), see :meth:`Parallel.with_full_weights`."""
        return fn(*args, **kwargs)


class Parallel:
    """A causal LM as the loss sees it, under ``--parallel`` (what :func:`wrap_distributed`
    returns).

    ``parallel(packed, **options)`` gives the log-probs and entropies of
    :func:`~grpo_fast.train.forward.completion_logprobs` through the engine.

    Attributes
    ----------
    mode : str
        ``"ddp"`` or ``"fsdp"``: what the run asked for (with one process nothing is
        wrapped, but an ``fsdp`` run still checkpoints through DCP).
    model : transformers model
        The causal LM itself: sampling and checkpoints use it (under FSDP2 its
        parameters are the shards of this rank).
    module : torch.nn.Module
        What runs the forward: :class:`LogProbs`, ``DistributedDataParallel`` of it,
        or it under ``fully_shard``.
    """

    def __init__(self, mode: str, model: Any, module: torch.nn.Module) -> None:
        self.mode, self.model, self.module = mode, model, module

    @property
    def sharded(self) -> bool:
        """Whether FSDP2 holds the parameters (several processes, ``fsdp``)."""
        from torch.distributed.fsdp import FSDPModule

        return isinstance(self.module, FSDPModule)

    @property
    def _root(self) -> LogProbs:
        return getattr(self.module, "module", self.module)  # DDP keeps it in .module

    def __call__(self, packed: Packed, **options: Any) -> tuple[torch.Tensor, torch.Tensor]:
        if self.sharded:
            # Every run of a layer all-gathers it, so each rank must run every layer
            # equally often: rows in full (the shared prompt cache runs a layer once for
            # one-token completions and twice otherwise).
            options["share_prompt_prefix"] = False
        return self.module(packed, **options)

    def reference(self, ref: Any) -> Callable[..., tuple[torch.Tensor, torch.Tensor]]:
        """The log-probs of the reference policy ``ref``
        (:func:`~grpo_fast.train.modeling.reference_model`): this model with its adapters
        off, or a frozen copy, sharded like this one."""
        if isinstance(ref, AdaptersDisabled):
            return functools.partial(self, adapters=False)
        return _wrap(ref, "fsdp" if self.sharded else "none", frozen=True, mode=self.mode)

    def no_sync(self, skip: bool) -> contextlib.AbstractContextManager[Any]:
        """With ``skip``, DDP does not average the gradients of the forward run inside
        (micro-batches before the last one; they accumulate). FSDP2 reduce-scatters
        every micro-batch's gradients, so they are never held whole."""
        from torch.nn.parallel import DistributedDataParallel

        if skip and isinstance(self.module, DistributedDataParallel):
            return self.module.no_sync()
        return contextlib.nullcontext()

    def with_full_weights(self, fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        """``fn(*args, **kwargs)`` with every weight of the model whole on this rank:
        generation (the sampler), which runs the model outside the loss forward.

        Under FSDP2 every rank must call it (the gathers are collectives); ``fn``
        runs inside a forward method of the sharded root, every layer is gathered
        before it and sharded again after it, so it may run the model any number of
        times, or not at all, on each rank. Otherwise the weights are whole already.
        """
        if not self.sharded:
            return fn(*args, **kwargs)
        from torch.distributed.fsdp import FSDPModule

        root = self.module
        layers = [m for m in root.modules() if isinstance(m, FSDPModule) and m is not root]

        def gathered() -> T:
            for m in layers:
                m.set_reshard_after_forward(False, recurse=False)
                m.unshard()
            return fn(*args, **kwargs)

        try:
            return root.call(gathered)  # type: ignore[operator]
        finally:
            for m in [root, *layers]:
                m.reshard()  # type: ignore[operator]
            for m in layers:
                m.set_reshard_after_forward(True, recurse=False)  # type: ignore[operator]

    def clip_grad_norm(self, max_norm: float) -> float:
        """The gradients' global L2 norm; with ``max_norm > 0`` they are scaled to at most it."""
        params = [p for p in self.model.parameters() if p.grad is not None]
        if not params:
            return 0.0
        norm = torch.nn.utils.get_total_norm([p.grad for p in params])
        if hasattr(norm, "full_tensor"):  # FSDP2: each rank holds a part of the sum
            norm = norm.full_tensor()
        if max_norm > 0:
            torch.nn.utils.clip_grads_with_norm_(params, max_norm, norm)
        return float(norm)

    def state_dict(self, optimizer: torch.optim.Optimizer) -> dict[str, Any]:
        """The model's and the optimizer's state as ``torch.distributed.checkpoint`` saves
        and loads it: keyed by parameter name, each rank's shards (whole tensors with one
        process), so a checkpoint loads onto another number of ranks."""
        from torch.distributed.checkpoint.state_dict import get_state_dict

        model, optim = get_state_dict(self._root, optimizer)
        return {"model": model, "optimizer": optim}

    def load_state_dict(self, state: dict[str, Any], optimizer: torch.optim.Optimizer) -> None:
        """Apply a :meth:`state_dict` that ``torch.distributed.checkpoint.load`` filled."""
        from torch.distributed.checkpoint.state_dict import set_state_dict

        set_state_dict(
            self._root,
            optimizer,
            model_state_dict=state["model"],
            optim_state_dict=state["optimizer"],
        )


def wrap_distributed(model: Any, parallel: str, dist: Distributed) -> Parallel:
    """``model`` (on its device, set up for training) under ``parallel`` (``ddp`` or
    ``fsdp``) across the ranks of ``dist``; build the optimizer after this (FSDP2
    replaces the parameters by their shards).

    Every rank starts from rank 0's weights (LoRA adapters start random). FSDP2
    shards each decoder layer (transformers' ``_no_split_modules``) and the rest
    (embeddings, final norm, output head, tied or not) as one group.

    Examples
    --------
    >>> policy = wrap_distributed(model, "ddp", Distributed())  # doctest: +SKIP
    >>> logp, entropy = policy(pack(prompt_ids, completion_ids, pad_id))  # doctest: +SKIP
    """
    if parallel not in PARALLEL:
        raise ValueError(f"parallel must be one of {PARALLEL}, got {parallel!r}")
    return _wrap(model, parallel if dist.enabled else "none", frozen=False, mode=parallel)


def _wrap(model: Any, how: str, *, frozen: bool, mode: str) -> Parallel:
    module = LogProbs(model)
    if how == "none":
        return Parallel(mode, model, module)
    for t in [*model.parameters(), *model.buffers()]:
        dist.broadcast(t.data, src=0)
    device = next(model.parameters()).device
    if how == "ddp":
        if frozen:  # DDP refuses a module without gradients; rank 0's copy is everyone's
            return Parallel(mode, model, module)
        from torch.nn.parallel import DistributedDataParallel

        ddp = DistributedDataParallel(
            module,
            device_ids=[device.index] if device.type == "cuda" else None,
            broadcast_buffers=False,  # rotary tables and the like: computed, never trained
        )
        return Parallel(mode, model, ddp)
    from torch.distributed.device_mesh import init_device_mesh
    from torch.distributed.fsdp import fully_shard, register_fsdp_forward_method

    mesh = init_device_mesh(device.type, (dist.get_world_size(),))
    base = model.get_base_model() if is_peft_model(model) else model
    names = set(getattr(base, "_no_split_modules", None) or ())
    for layer in [m for m in model.modules() if type(m).__name__ in names]:
        fully_shard(layer, mesh=mesh, reshard_after_forward=True)
    fully_shard(module, mesh=mesh)
    register_fsdp_forward_method(module, "call")
    return Parallel(mode, model, module)
