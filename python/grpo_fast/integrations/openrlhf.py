"""The reward-function module OpenRLHF loads, scored in Rust.

OpenRLHF imports a Python file given as its remote reward URL and calls its
``reward_func(queries, prompts, labels)``: ``queries`` are the decoded prompt
+ response texts (decoded with ``skip_special_tokens=False``, so they end in
the chat template's end token, ``<|im_end|>``, ``</s>``, ...), ``prompts`` the
prompt texts, ``labels`` the dataset's label column. It returns a dict:
``rewards`` (what the advantages are computed from), ``scores`` (0/1, for
dynamic filtering) and ``extra_logs`` (logged per sample).

OpenRLHF 0.10 and 0.11 (``python -m openrlhf.cli.train_ppo_ray``; there is
no ``openrlhf`` console script)::

    RM=$(python -c "import grpo_fast.integrations.openrlhf as m; print(m.__file__)")
    python -m openrlhf.cli.train_ppo_ray ... --reward.remote_url $RM --data.label_key answer

OpenRLHF up to 0.9 spelled the same ``--remote_rm_url <file>.py --label_key
answer``. Its ``SingleTurnAgentExecutor`` calls ``reward_func`` once per
sample (lists of one), from ``asyncio.to_thread`` worker threads: what
grpo-fast saves there is the time of each call (no sympy, no signals, the GIL
released while Rust scores), not a batch's worth of parallelism.

A failure inside ``reward_func`` (a label of the wrong type, mismatched list
lengths, ...) never raises into OpenRLHF, which would log it at INFO and train
on ``None``: it logs a warning with the reason and returns reward 0 with
``extra_logs["reward_error"]`` at 1.0 (0.0 on success). ``extra_logs`` holds
the same keys either way, as OpenRLHF merges them across samples into numeric
tensors (a string there would break its experience batching; the reason
itself is in the warning).

Only the response is scored: the query without its prompt (the first
occurrence of the prompt in the query, so that a copy of the prompt in the
response stays in what is scored; whitespace changed by the tokenizer's round
trip is tolerated). A query in which the prompt is not found at all is *not*
scored whole (the prompt's own example answers would be paid): that sample
fails visibly, by the same path as an error, with reward 0, score 0,
``extra_logs["prompt_not_found"]`` and ``extra_logs["reward_error"]`` at 1.0,
and a warning; the other samples of the call are scored as usual.

For other reward specs, write a two-line module of your own::

    from grpo_fast import rewards
    from grpo_fast.integrations.openrlhf import make_reward_func

    reward_func = make_reward_func(
        rewards.MathReward(), rewards.FormatReward(r"</think>", weight=0.1)
    )

``make_reward_func`` returns a picklable :class:`RewardFunc` (it travels to
Ray workers); the compiled specs are rebuilt on the other side.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from grpo_fast import rewards as _rewards
from grpo_fast.errors import InvalidInputError

__all__ = ["RewardFunc", "make_reward_func", "responses_of", "reward_func"]

_log = logging.getLogger(__name__)


def _without_spaces(text: str) -> tuple[str, list[int]]:
    """The text without whitespace, and where each kept character was."""
    kept = [(i, c) for i, c in enumerate(text) if not c.isspace()]
    return "".join(c for _, c in kept), [i for i, _ in kept]


def _response_start(query: str, prompt: str) -> int | None:
    """Where the response starts in ``query``: after the first occurrence of
    ``prompt``, exact or up to whitespace; None when it is not there."""
    if query.startswith(prompt):
        return len(prompt)
    if not prompt.strip():
        return None
    at = query.find(prompt)
    if at >= 0:
        return at + len(prompt)
    q, where = _without_spaces(query)
    p, _ = _without_spaces(prompt)
    at = q.find(p)
    if at < 0:
        return None
    return where[at + len(p) - 1] + 1


def responses_of(queries: Sequence[str], prompts: Sequence[str]) -> list[str | None]:
    """The response part of each query: the query without its prompt, or None
    where the prompt is not in the query.

    A query that does not start with its prompt (a tokenizer round trip can
    add a BOS token or change spacing) is cut after the prompt's first
    occurrence, found exactly or, failing that, up to whitespace.

    Examples
    --------
    >>> responses_of(["Q: 1+1? A: 2", "<s>Q:  1+1?\\nA: 2", "A: 2"], ["Q: 1+1?"] * 3)
    [' A: 2', '\\nA: 2', None]
    """
    if isinstance(queries, str) or isinstance(prompts, str):
        raise InvalidInputError("queries and prompts must be lists of str, not one str")
    queries = list(queries)
    prompts = list(prompts)
    if len(queries) != len(prompts):
        raise InvalidInputError(
            f"queries has {len(queries)} entries but prompts has {len(prompts)}"
        )
    out: list[str | None] = []
    for i, (q, p) in enumerate(zip(queries, prompts, strict=True)):
        if not isinstance(q, str) or not isinstance(p, str):
            raise InvalidInputError(
                f"queries[{i}] and prompts[{i}] must be str, not "
                f"{type(q).__name__} and {type(p).__name__}"
            )
        start = _response_start(q, p)
        out.append(None if start is None else q[start:])
    return out


class RewardFunc:
    """An OpenRLHF ``reward_func(queries, prompts, labels)`` scoring reward specs in Rust.

    ``rewards`` is the weighted total of the specs, with unscorable items (a
    label without a usable answer) at 0.0 rather than NaN, which would spread
    into the advantages; ``scores`` is the column ``success_column`` (default:
    the first spec's) clipped to [0, 1]; ``extra_logs`` holds every column,
    ``unscorable`` (1.0 where no spec could score the item),
    ``prompt_not_found`` (1.0 where the prompt is not in the query: reward 0,
    see the module docstring) and ``reward_error``. Picklable: the specs
    travel, the compiled form is rebuilt on first use.

    Examples
    --------
    >>> q = ["Q: 6*7? A: \\\\boxed{42}", "Q: 6*7? A: 41"]
    >>> out = reward_func(q, ["Q: 6*7?"] * 2, ["42", "42"])
    >>> out["rewards"].tolist(), out["scores"].tolist(), sorted(out["extra_logs"])
    ([1.0, 0.0], [1.0, 0.0], ['math', 'prompt_not_found', 'reward_error', 'unscorable'])
    """

    def __init__(self, specs: Sequence[_rewards.RewardSpec], success_column: str | None = None):
        self.specs = tuple(specs) or (_rewards.MathReward(),)
        compiled = _rewards.combine(list(self.specs))
        self.success_column = success_column or compiled.names[0]
        if self.success_column not in compiled.names:
            raise InvalidInputError(
                f"success_column {self.success_column!r} is not one of {compiled.names}"
            )
        self.compiled = compiled

    def __call__(
        self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any], **kwargs: Any
    ) -> dict[str, Any]:
        try:
            return self.score(queries, prompts, labels)
        except Exception as exc:
            n = _length(queries)
            _log.warning(
                "grpo_fast reward_func failed on %d sample(s), rewarding 0: %s: %s",
                n,
                type(exc).__name__,
                exc,
            )
            return self._failed(n)

    def score(
        self, queries: Sequence[str], prompts: Sequence[str], labels: Sequence[Any]
    ) -> dict[str, Any]:
        """The scoring itself: raises :class:`~grpo_fast.InvalidInputError` on bad input."""
        import torch

        responses = responses_of(queries, prompts)
        if isinstance(labels, str):
            raise InvalidInputError("labels must be a list (one label per query), not one str")
        golds = (
            None
            if labels is None
            else [None if g is None else _label(i, g) for i, g in enumerate(labels)]
        )
        if golds is not None and len(golds) != len(responses):
            raise InvalidInputError(
                f"labels has {len(golds)} entries but there are {len(responses)} queries"
            )
        missing = np.array([r is None for r in responses], dtype=bool)
        if missing.any():
            first = prompts[int(np.argmax(missing))]
            _log.warning(
                "grpo_fast reward_func: the prompt is not in the query for %d of %d "
                "sample(s), rewarding them 0 instead of scoring the whole query (first "
                "prompt: %r)",
                int(missing.sum()),
                len(responses),
                first[:80],
            )
        texts = ["" if r is None else r for r in responses]
        # The prompt is known: an expression copied from it is no answer.
        scored = self.compiled.score_batch(texts, golds, prompts=list(prompts))
        total = scored.total
        unscorable = np.isnan(total) & ~missing
        rewards = torch.from_numpy(np.where(unscorable | missing, 0.0, total).astype(np.float32))
        col = np.where(missing, 0.0, np.nan_to_num(scored.columns[self.success_column], nan=0.0))
        scores = torch.from_numpy(np.clip(col, 0.0, 1.0).astype(np.float32))
        extra = {
            name: torch.from_numpy(
                np.where(missing, 0.0, np.nan_to_num(c, nan=0.0)).astype(np.float32)
            )
            for name, c in scored.columns.items()
        }
        extra["unscorable"] = torch.from_numpy(unscorable.astype(np.float32))
        extra["prompt_not_found"] = torch.from_numpy(missing.astype(np.float32))
        extra["reward_error"] = torch.from_numpy(missing.astype(np.float32))
        return {"rewards": rewards, "scores": scores, "extra_logs": extra}

    def _failed(self, n: int) -> dict[str, Any]:
        import torch

        zeros = torch.zeros(n, dtype=torch.float32)
        extra = {name: zeros.clone() for name in self.compiled.names}
        extra["unscorable"] = zeros.clone()
        extra["prompt_not_found"] = zeros.clone()
        extra["reward_error"] = torch.ones(n, dtype=torch.float32)
        return {"rewards": zeros.clone(), "scores": zeros.clone(), "extra_logs": extra}


def _length(queries: Any) -> int:
    if isinstance(queries, str):
        return 1
    try:
        return max(len(queries), 1)
    except TypeError:
        return 1


def _label(i: int, g: Any) -> str:
    if isinstance(g, str):
        return g
    if isinstance(g, (int, float, np.integer, np.floating)) and not isinstance(g, bool):
        return str(g)
    raise InvalidInputError(f"labels[{i}] is {type(g).__name__}; expected a str (or a number)")


def make_reward_func(*specs: _rewards.RewardSpec, success_column: str | None = None) -> RewardFunc:
    """An OpenRLHF ``reward_func`` scoring the given specs (weighted, summed) in Rust.

    See :class:`RewardFunc`; with no specs, :class:`grpo_fast.rewards.MathReward`.
    """
    return RewardFunc(specs, success_column)


#: The module's ``reward_func``: :class:`grpo_fast.rewards.MathReward`, 1.0 when the
#: response's final answer equals the label, else 0.0.
reward_func: RewardFunc
if __name__ == "grpo_fast.integrations.openrlhf":
    reward_func = make_reward_func()
else:
    # Loaded from its file (OpenRLHF's loader names the module "reward_func"): use the
    # package module's object, whose class pickles by its importable name.
    from grpo_fast.integrations.openrlhf import reward_func
