"""verl's reward-loop manager ``grpo_fast``: concurrent samples scored in one Rust call."""

from __future__ import annotations

from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.integrations.verl.rewards import convention, score_items

__all__ = ["REWARD_MANAGER_NAME", "GrpoFastRewardManager", "register_verl_reward_manager"]


REWARD_MANAGER_NAME = "grpo_fast"

#: verl's reward-loop manager class (``reward.reward_manager.name=grpo_fast``),
#: created when verl's reward loop is importable; None otherwise.
GrpoFastRewardManager: Any = None


def _reward_options(compute_score: Any) -> dict[str, Any]:
    """The scoring options a reward manager was handed, through verl's config.

    verl hands a manager either its own ``default_compute_score`` (no
    ``custom_reward_function.path``) or ``partial(_call_with_kwargs, fn,
    reward_kwargs)`` for a custom one: this module's ``compute_score`` (or
    ``compute_score_batch``) passes its ``reward_kwargs`` on, anything else is
    refused rather than silently not called.
    """
    if compute_score is None:
        return {}
    func = getattr(compute_score, "func", None)
    args = getattr(compute_score, "args", ())
    if getattr(compute_score, "__name__", None) == "default_compute_score":
        return {}
    if func is not None and len(args) == 2 and callable(args[0]):
        raw, extra = args
        if getattr(raw, "__name__", None) in ("compute_score", "compute_score_batch") and (
            getattr(raw, "__module__", "").startswith("grpo_fast.integrations.verl")
            or getattr(raw, "__code__", None) is not None
            and raw.__code__.co_filename.endswith(("verl/rewards.py", "verl\\rewards.py"))
        ):
            options = dict(extra)
            unknown = sorted(set(options) - {"judge", "rel_tol", "rules", "think"})
            if unknown:
                raise InvalidInputError(
                    f"reward_kwargs {unknown} are not options of the grpo_fast reward manager "
                    "(judge, rel_tol, rules, think)"
                )
            if "judge" in options:
                convention(None, options["judge"])  # validates
            return options
    raise InvalidInputError(
        "the grpo_fast reward manager scores with grpo-fast; leave "
        "reward.custom_reward_function.path unset (or point it at "
        "pkg://grpo_fast.integrations.verl) — for another scorer use reward_manager.name=naive"
    )


def _decode(tokenizer: Any, ids: list[list[int]]) -> list[str]:
    """``tokenizer.decode(x, skip_special_tokens=True)`` for each, as verl's managers decode.

    A fast tokenizer without the clean-up of tokenization spaces decodes the
    batch in one call of its Rust backend (the same strings).
    """
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is not None and not getattr(tokenizer, "clean_up_tokenization_spaces", True):
        texts: list[str] = backend.decode_batch(ids, skip_special_tokens=True)
        return texts
    return [tokenizer.decode(x, skip_special_tokens=True) for x in ids]


def _record(data: Any) -> tuple[list[int], Any, Any, Any]:
    """What scoring one sample needs, read from verl's columns without building DataProto
    items: its response's tokens, data source, gold and extra info. Several outputs of
    one session: the last is scored, as verl's managers do."""
    ids = data.batch["responses"][-1]
    length = int(data.batch["attention_mask"][-1][-ids.shape[-1] :].sum())
    extra = data.non_tensor_batch
    return (
        ids[:length].tolist(),
        extra["data_source"][-1],
        extra["reward_model"][-1]["ground_truth"],
        extra["extra_info"][-1] if "extra_info" in extra else None,
    )


def _score_records(
    tokenizer: Any, options: dict[str, Any], records: list[Any]
) -> list[dict[str, Any]]:
    """verl's reward-loop results of the records, decoded and scored in one call."""
    texts = _decode(tokenizer, [r[0] for r in records])
    scores, correct, _ = score_items(
        [r[1] for r in records],
        texts,
        [r[2] for r in records],
        [r[3] for r in records],
        **options,
    )
    # reward_extra_info becomes a column of verl's batch per key, and is what
    # algorithm.filter_groups.metric reads: ``score`` and ``acc``, as verl's
    # managers give for a dict-valued score (math_dapo's).
    return [
        {"reward_score": float(s), "reward_extra_info": {"score": float(s), "acc": float(c)}}
        for s, c in zip(scores.tolist(), correct.tolist(), strict=True)
    ]


def _make_reward_manager() -> Any:
    import asyncio

    from verl.experimental.reward_loop.reward_manager.base import RewardManagerBase

    class _GrpoFastRewardManager(RewardManagerBase):  # type: ignore[misc, valid-type]
        """verl reward-loop manager that scores concurrent samples in one Rust call.

        verl's ``RewardLoopWorker`` calls ``run_single`` once per sample, all
        of a chunk at once (and once per finished rollout in the streaming
        agent loop). Each call queues its sample; the samples queued by one
        turn of the event loop are decoded and scored together, off the loop,
        in one :func:`score_items` call (one ``verify_batch`` per convention),
        while later arrivals queue for the next call. Scores follow verl's
        conventions per ``data_source`` (:func:`convention`); options come
        from ``reward.custom_reward_function.reward_kwargs`` when ``path`` is
        ``pkg://grpo_fast.integrations.verl``. Each sample's result is
        ``{"reward_score": s, "reward_extra_info": {"score": s, "acc": 0/1}}``,
        so ``algorithm.filter_groups.metric`` can be ``score`` or ``acc``.
        """

        def __init__(
            self,
            config: Any,
            tokenizer: Any,
            compute_score: Any,
            reward_router_address: Any = None,
            reward_model_tokenizer: Any = None,
            **kwargs: Any,
        ) -> None:
            options = _reward_options(compute_score)  # refuse before verl makes an event loop
            super().__init__(config, tokenizer, compute_score)
            self.options = options
            self._pending: list[tuple[Any, Any]] = []
            self._busy = False

        async def run_single(self, data: Any) -> dict[str, Any]:
            loop = asyncio.get_running_loop()
            future = loop.create_future()
            self._pending.append((_record(data), future))
            if not self._busy:
                self._busy = True
                loop.call_soon(self._start, loop)
            result: dict[str, Any] = await future
            return result

        def _start(self, loop: Any) -> None:
            batch, self._pending = self._pending, []
            loop.create_task(self._score(loop, batch))

        async def _score(self, loop: Any, batch: list[tuple[Any, Any]]) -> None:
            try:
                results = await loop.run_in_executor(None, self._score_sync, [r for r, _ in batch])
                for (_, future), result in zip(batch, results, strict=True):
                    if not future.done():
                        future.set_result(result)
            except Exception as exc:  # every waiting sample sees the error
                for _, future in batch:
                    if not future.done():
                        future.set_exception(exc)
            finally:
                if self._pending:
                    self._start(loop)
                else:
                    self._busy = False

        def _score_sync(self, records: list[Any]) -> list[dict[str, Any]]:
            return _score_records(self.tokenizer, self.options, records)

    _GrpoFastRewardManager.__name__ = _GrpoFastRewardManager.__qualname__ = "GrpoFastRewardManager"
    return _GrpoFastRewardManager


def register_verl_reward_manager() -> bool:
    """Register :data:`GrpoFastRewardManager` in verl's reward-loop registry as ``grpo_fast``.

    False when verl's reward loop is not importable. A name already
    registered (by another copy of this module) is left as it is.
    """
    global GrpoFastRewardManager
    try:
        from verl.experimental.reward_loop.reward_manager import registry
    except ImportError:
        return False
    if REWARD_MANAGER_NAME in registry.REWARD_MANAGER:
        GrpoFastRewardManager = registry.REWARD_MANAGER[REWARD_MANAGER_NAME]
        return True
    if GrpoFastRewardManager is None:
        GrpoFastRewardManager = _make_reward_manager()
    registry.register(REWARD_MANAGER_NAME)(GrpoFastRewardManager)
    return True
