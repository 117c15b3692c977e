"""The reward-function module OpenRLHF loads, scored in Rust.

OpenRLHF (``--remote_rm_url /path/to/module.py --label_key answer``) imports a
Python file and calls its ``reward_func(queries, prompts, labels)`` once per
batch: ``queries`` are the decoded prompt + response texts, ``prompts`` the
prompt texts, ``labels`` the dataset's ``--label_key`` column. It returns a
dict: ``rewards`` (the tensor the advantages are computed from), ``scores``
(0/1, for dynamic filtering) and ``extra_logs`` (logged tensors).

Point OpenRLHF at this file::

    --remote_rm_url $(python -c "import grpo_fast.integrations.openrlhf as m; print(m.__file__)")

or, for other reward specs, write a two-line module of your own::

    from grpo_fast import rewards
    from grpo_fast.integrations.openrlhf import make_reward_func

    reward_func = make_reward_func(
        rewards.MathReward(), rewards.FormatReward(r"</think>", weight=0.1)
    )
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from grpo_fast import rewards as _rewards
from grpo_fast.errors import InvalidInputError

__all__ = ["make_reward_func", "responses_of", "reward_func"]


def responses_of(queries: Sequence[str], prompts: Sequence[str]) -> list[str]:
    """The response part of each query: the query without its prompt.

    A query that does not start with its prompt (a tokenizer round trip can
    change spacing) is cut after the prompt's last occurrence, and scored
    whole when the prompt is not found.

    Examples
    --------
    >>> responses_of(["Q: 1+1? A: 2"], ["Q: 1+1?"])
    [' A: 2']
    """
    if isinstance(queries, str) or isinstance(prompts, str):
        raise InvalidInputError("queries and prompts must be lists of str, not one str")
    queries = list(queries)
    prompts = list(prompts)
    if len(queries) != len(prompts):
        raise InvalidInputError(
            f"queries has {len(queries)} entries but prompts has {len(prompts)}"
        )
    out = []
    for i, (q, p) in enumerate(zip(queries, prompts, strict=True)):
        if not isinstance(q, str) or not isinstance(p, str):
            raise InvalidInputError(
                f"queries[{i}] and prompts[{i}] must be str, not "
                f"{type(q).__name__} and {type(p).__name__}"
            )
        if q.startswith(p):
            out.append(q[len(p) :])
        else:
            at = q.rfind(p) if p else -1
            out.append(q[at + len(p) :] if at >= 0 else q)
    return out


def make_reward_func(
    *specs: _rewards.RewardSpec, success_column: str | None = None
) -> Callable[..., dict[str, Any]]:
    """An OpenRLHF ``reward_func`` scoring the given specs (weighted, summed) in Rust.

    ``rewards`` is the weighted total, with unscorable items (a label without a
    usable answer) at 0.0 rather than NaN, which would spread into the
    advantages; ``scores`` is the column ``success_column`` (default: the first
    spec's) clipped to [0, 1]; ``extra_logs`` holds every column and
    ``unscorable``, the fraction of items no spec could score.
    """
    if not specs:
        specs = (_rewards.MathReward(),)
    compiled = _rewards.combine(list(specs))
    success = success_column or compiled.names[0]
    if success not in compiled.names:
        raise InvalidInputError(f"success_column {success!r} is not one of {compiled.names}")

    def reward_func(
        queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any
    ) -> dict[str, Any]:
        import torch

        responses = responses_of(queries, prompts)
        golds = None if labels is None else [None if g is None else str(g) for g in labels]
        if golds is not None and len(golds) != len(responses):
            raise InvalidInputError(
                f"labels has {len(golds)} entries but there are {len(responses)} queries"
            )
        scored = compiled.score_batch(responses, golds)
        total = scored.total
        unscorable = np.isnan(total)
        rewards = torch.from_numpy(np.where(unscorable, 0.0, total).astype(np.float32))
        col = scored.columns[success]
        scores = torch.from_numpy(np.clip(np.nan_to_num(col, nan=0.0), 0.0, 1.0))
        extra = {
            name: torch.from_numpy(np.nan_to_num(c, nan=0.0)) for name, c in scored.columns.items()
        }
        extra["unscorable"] = torch.from_numpy(unscorable.astype(np.float32))
        return {"rewards": rewards, "scores": scores, "extra_logs": extra}

    return reward_func


reward_func = make_reward_func()
reward_func.__doc__ = """OpenRLHF's ``reward_func(queries, prompts, labels)``: 1.0 when the
response's final answer equals the label (:class:`grpo_fast.rewards.MathReward`), else 0.0.

Examples
--------
>>> out = reward_func(["Q: 6*7? A: \\\\boxed{42}", "Q: 6*7? A: 41"], ["Q: 6*7?"] * 2, ["42", "42"])
>>> out["rewards"].tolist(), out["scores"].tolist(), sorted(out["extra_logs"])
([1.0, 0.0], [1.0, 0.0], ['math', 'unscorable'])
"""
