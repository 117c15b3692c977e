"""The second half of a step: the batch shaped into tensors once, then the loss and
the optimizer.

:func:`apply` is the stage. :func:`shape` pads the batch's prompts and
completions (:func:`~grpo_fast.train.forward.pack`), widens its advantages to
the completions' width, lines up the sampler's log-probs and masks the
truncated completions, all at once; :func:`optimize`
only reads the result: ``num_iterations`` optimizer steps, each over
``grad_accum_steps`` micro-batches of :func:`~grpo_fast.loss.policy_loss`
with the run's :class:`~grpo_fast.loss.LossOptions`. Both read the run's
parts from the trainer (:class:`Parts`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import torch

from grpo_fast.errors import InvalidInputError
from grpo_fast.loss import LossOptions, policy_loss
from grpo_fast.loss.mismatch import pad_sampler_logprobs
from grpo_fast.sampling import truncated
from grpo_fast.train.forward import Packed, pack
from grpo_fast.train.rollout import Batch
from grpo_fast.train.tracking import current_name

__all__ = ["Parts", "Shaped", "apply", "logprobs", "optimize", "pack_mask", "shape"]


class Parts(Protocol):
    """What an update reads from the trainer (:class:`~grpo_fast.train.trainer.Trainer`)."""

    config: Any  # TrainerConfig
    loss_options: LossOptions
    tokenizer: Any
    device: torch.device
    sampler: Any
    policy: Any  # the model under DDP / FSDP2: log-probs of a Packed batch
    reference: Any  # the reference model's, or None (beta = 0)
    precision: Any  # MixedPrecision
    optimizer: torch.optim.Optimizer
    scheduler: Any


@dataclass(frozen=True)
class Shaped:
    """A batch as the loss reads it: ``N`` rows, completions ``Tc`` tokens wide."""

    packed: Packed
    advantages: torch.Tensor  # [N] or [N, Tc]
    loss_mask: torch.Tensor  # [N, Tc] bool: the completion tokens that get a loss
    sampler_logp: torch.Tensor | None  # [N, Tc]: the sampler's log-probs, when it gave them
    truncated: np.ndarray  # [N] bool: cut off at max_new_tokens without EOS

    def __len__(self) -> int:
        return len(self.truncated)


def apply(t: Parts, batch: Batch) -> dict[str, Any]:
    """The update of one step: ``batch`` shaped once, then optimized on."""
    if len(batch) == 0:  # dynamic sampling found nothing to learn from
        return {"loss": 0.0}
    return optimize(t, shape(t, batch))


def shape(t: Parts, batch: Batch) -> Shaped:
    """Pad, widen and mask ``batch`` once for the loss."""
    cfg, comp = t.config, batch.completions
    packed = pack(comp.prompt_ids, comp.completion_ids, t.tokenizer.pad_token_id, t.device)
    width = packed.completion_ids.shape[1]
    advantages = torch.from_numpy(batch.token_advantages(width)).to(t.device)
    cut = truncated(comp, t.tokenizer.eos_token_id, cfg.max_new_tokens)
    # DAPO's overlong filtering: a cut-off answer is neither right nor wrong; no loss.
    loss_mask = packed.completion_mask
    if comp.tool_mask is not None:
        # Multi-turn rollouts: the tools' and environments' tokens are context, not the
        # model's actions; no loss, KL or entropy on them (TRL's tool_mask).
        loss_mask = loss_mask & pack_mask(comp.tool_mask, width, t.device)
    if cfg.mask_truncated_completions:
        loss_mask = loss_mask & ~torch.from_numpy(cut).to(t.device)[:, None]
    if comp.logprobs is None and t.loss_options.sampler_correction != "none":
        raise InvalidInputError(
            f"sampler_correction={t.loss_options.sampler_correction!r} needs the sampler's "
            f"log-probs, but {type(t.sampler).__name__} returned none "
            "(HFSampler(..., logprobs=True), or sampler_correction='none')"
        )
    sampler_logp = pad_sampler_logprobs(comp.logprobs, comp.completion_ids, width, t.device)
    return Shaped(packed, advantages, loss_mask, sampler_logp, cut)


def pack_mask(rows: list[list[int]], width: int, device: Any = "cpu") -> torch.Tensor:
    """0/1 lists right-padded with 0 to ``width``, as a bool tensor ``[N, width]``.

    Examples
    --------
    >>> pack_mask([[1, 0, 1], [1]], 4)
    tensor([[ True, False,  True, False],
            [ True, False, False, False]])
    """
    out = torch.zeros((len(rows), width), dtype=torch.bool)
    for i, r in enumerate(rows):
        if r:
            out[i, : len(r)] = torch.tensor(r[:width], dtype=torch.bool)
    return out.to(device)


def logprobs(t: Parts, model: Any, packed: Packed) -> tuple[torch.Tensor, torch.Tensor]:
    """Token log-probs and entropies ``[rows, Tc]`` of a packed batch under ``model``
    (``t.policy`` or ``t.reference``)."""
    cfg = t.config
    with t.precision.autocast():
        out: tuple[torch.Tensor, torch.Tensor] = model(
            packed,
            temperature=cfg.temperature,
            group_size=cfg.num_generations,
            share_prompt_prefix=cfg.share_prompt_prefix,
        )
    return out


def optimize(t: Parts, b: Shaped) -> dict[str, Any]:
    """``num_iterations`` optimizer steps on a shaped batch, each over ``grad_accum_steps``
    chunks; the metrics averaged over the chunks (``_min`` / ``_max`` ones combined so)."""
    cfg, n = t.config, len(b)
    with torch.no_grad():
        old_logp = logprobs(t, t.policy, b.packed)[0] if cfg.num_iterations > 1 else None
        ref_logp = None if t.reference is None else logprobs(t, t.reference, b.packed)[0]
    # Micro-batches of whole groups when the split allows it (prompt cache sharing).
    chunk = n // cfg.grad_accum_steps if n % cfg.grad_accum_steps == 0 else n
    sums: dict[str, float] = {}
    count = 0
    for _ in range(cfg.num_iterations):
        for s in range(0, n, chunk):
            rows = slice(s, s + chunk)
            with t.policy.no_sync(s + chunk < n):  # DDP: averaged after the last one
                logp, entropy = logprobs(t, t.policy, b.packed.rows(rows))
            loss, m = policy_loss(
                logp,
                logp.detach() if old_logp is None else old_logp[rows],
                b.advantages[rows],
                b.loss_mask[rows],
                t.loss_options,
                ref_logp=None if ref_logp is None else ref_logp[rows],
                entropy=entropy if cfg.entropy_coef else entropy.detach(),
                sampler_logp=None if b.sampler_logp is None else b.sampler_logp[rows],
            )
            # Row-weighted: the accumulated gradient is the full batch's (per-sequence mean).
            t.precision.backward(loss * (logp.shape[0] / n))
            for k, v in {"loss": float(loss.item()), **m}.items():
                sums[k] = _accumulate(k, sums.get(k), v)
            count += 1
        sums["grad_norm"] = sums.get("grad_norm", 0.0) + _step(t) * (count / cfg.num_iterations)
    out = {k: v if k.endswith(_EXTREMES) else v / count for k, v in sums.items()}
    out["kl"] = out.pop("kl_mean", None)
    out["entropy"] = out.pop("entropy_mean", None)
    out["completions/clipped_ratio"] = float(b.truncated.mean())
    # The loss's clip fractions under TRL's names (clip_ratio/low_mean, ...).
    return {current_name(k): v for k, v in out.items()}


def _step(t: Parts) -> float:
    """Clip the gradients, step the optimizer and the schedule; the gradients' norm."""
    t.precision.unscale(t.optimizer)
    norm: float = t.policy.clip_grad_norm(t.config.max_grad_norm)  # 0: only measured
    if t.precision.step(t.optimizer):  # False: fp16 overflow, step skipped
        t.scheduler.step()
    t.optimizer.zero_grad(set_to_none=True)
    return norm


# Metrics whose micro-batch values combine by min / max rather than by the mean.
_EXTREMES = ("_min", "_max")


def _accumulate(name: str, acc: float | None, value: float) -> float:
    if acc is None:
        return value
    if name.endswith("_min"):
        return float(np.fmin(acc, value))
    if name.endswith("_max"):
        return float(np.fmax(acc, value))
    return acc + value
