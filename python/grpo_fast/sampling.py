"""Samplers: G completions per prompt, with their token ids and log-probs.

Two backends behind one :class:`Sampler` protocol:

- :class:`HFSampler` runs transformers ``generate`` on the training model
  itself (CPU or GPU), so new weights are live at once.
- :class:`VLLMSampler` runs a vLLM engine (``n=G`` per prompt) and gets the
  trainer's weights pushed after each optimizer step. vLLM is the optional
  extra ``grpo-fast[vllm]`` and is imported only when this class is built.

Completions come back grouped: the ``n`` samples of prompt ``i`` are rows
``i * n .. (i + 1) * n - 1``. A completion's token ids end with the EOS token
when the model stopped on its own (the loss then teaches it to stop) and are
cut at ``max_new_tokens`` otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from grpo_fast.errors import InvalidInputError
from grpo_fast.modeling import decoder_of, prefill_groups

__all__ = ["Completions", "HFSampler", "Sampler", "SamplingParams", "VLLMSampler", "truncated"]


@dataclass(frozen=True)
class SamplingParams:
    """How to sample.

    Attributes
    ----------
    max_new_tokens : int
        Longest completion, in tokens (EOS included).
    temperature : float
        Softmax temperature; 0 means greedy decoding.
    top_p : float
        Nucleus sampling mass (1.0 = off).
    top_k : int
        Keep only the k most likely tokens (0 = off).
    """

    max_new_tokens: int = 16
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0

    def __post_init__(self) -> None:
        if self.max_new_tokens < 1:
            raise InvalidInputError(f"max_new_tokens must be >= 1, got {self.max_new_tokens}")
        if self.temperature < 0:
            raise InvalidInputError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise InvalidInputError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k < 0:
            raise InvalidInputError(f"top_k must be >= 0, got {self.top_k}")


@dataclass(frozen=True)
class Completions:
    """``len(prompts) * n`` completions, grouped by prompt.

    Attributes
    ----------
    texts : list[str]
        Decoded completions, special tokens removed.
    prompt_ids : list[list[int]]
        Token ids of each row's prompt (no padding).
    completion_ids : list[list[int]]
        Sampled token ids (no padding; EOS kept when the model emitted it).
    logprobs : list[list[float]] or None
        Log-probability of each sampled token under the sampling distribution
        (after temperature), when the backend reports it.
    n : int
        Samples per prompt.
    """

    texts: list[str]
    prompt_ids: list[list[int]]
    completion_ids: list[list[int]]
    logprobs: list[list[float]] | None
    n: int

    def __len__(self) -> int:
        return len(self.texts)

    def take(self, rows: Sequence[int]) -> Completions:
        """The given rows, in that order (whole groups keep ``n``)."""
        pick = lambda xs: None if xs is None else [xs[i] for i in rows]  # noqa: E731
        return Completions(
            pick(self.texts),
            pick(self.prompt_ids),
            pick(self.completion_ids),
            pick(self.logprobs),
            self.n,
        )

    @staticmethod
    def concat(parts: Sequence[Completions], n: int) -> Completions:
        """The parts one after the other (log-probs only when every part has them)."""
        lps = None
        if parts and all(p.logprobs is not None for p in parts):
            lps = [x for p in parts for x in p.logprobs]  # type: ignore[union-attr]
        return Completions(
            [x for p in parts for x in p.texts],
            [x for p in parts for x in p.prompt_ids],
            [x for p in parts for x in p.completion_ids],
            lps,
            n,
        )


def truncated(
    completions: Completions, eos_token_id: int | Sequence[int] | None, max_new_tokens: int
) -> np.ndarray:
    """Which completions hit the length limit without an EOS token (bool ``[N]``).

    DAPO's overlong filtering gives them no loss (``mask_truncated_completions``):
    the answer was cut off, not judged wrong.

    Examples
    --------
    >>> c = Completions(["a", "b", "c"], [[1]] * 3, [[5, 6, 2], [5, 6, 7], [5]], None, 3)
    >>> truncated(c, eos_token_id=2, max_new_tokens=3).tolist()
    [False, True, False]
    """
    if eos_token_id is None:
        eos: set[int] = set()
    elif isinstance(eos_token_id, int):
        eos = {eos_token_id}
    else:
        eos = set(eos_token_id)
    cut = [
        len(ids) >= max(max_new_tokens, 1) and ids[-1] not in eos
        for ids in completions.completion_ids
    ]
    return np.array(cut, dtype=bool)


@runtime_checkable
class Sampler(Protocol):
    """What the trainer needs from a generation backend."""

    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        """``n`` completions of every prompt, grouped by prompt."""
        ...

    def update_weights(self, model: Any) -> None:
        """Make the next :meth:`sample` use ``model``'s current weights."""
        ...


def _check_prompts(prompts: list[str], n: int) -> None:
    if n < 1:
        raise InvalidInputError(f"n (samples per prompt) must be >= 1, got {n}")
    if not prompts:
        raise InvalidInputError("prompts is empty")
    for i, p in enumerate(prompts):
        if not isinstance(p, str):
            raise InvalidInputError(f"prompts[{i}] is {type(p).__name__}; expected a str")


class HFSampler:
    """Sampling with transformers ``generate`` on the training model itself.

    Parameters
    ----------
    model : transformers PreTrainedModel
        Shared with the trainer: there is nothing to copy after an update.
    tokenizer : transformers tokenizer
        Needs a pad token; prompts are left-padded for batched generation.
    batch_size : int or None
        Rows per ``generate`` call (``None``: all ``len(prompts) * n`` at once).
    logprobs : bool
        Report the sampled tokens' log-probs (costs keeping every step's
        scores; the trainer recomputes them in its loss forward and turns
        this off).

    Examples
    --------
    >>> sampler = HFSampler(model, tokenizer)  # doctest: +SKIP
    >>> params = SamplingParams(max_new_tokens=4)  # doctest: +SKIP
    >>> out = sampler.sample(["12+34="], n=8, params=params)  # doctest: +SKIP
    """

    def __init__(
        self, model: Any, tokenizer: Any, *, batch_size: int | None = None, logprobs: bool = True
    ) -> None:
        if tokenizer.pad_token_id is None:
            raise InvalidInputError("the tokenizer has no pad token; set tokenizer.pad_token")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.logprobs = logprobs

    def update_weights(self, model: Any) -> None:
        self.model = model

    def _shared_prompt_cache(self, n: int, enc: dict[str, Any]) -> dict[str, Any]:
        """Prefill each prompt once and repeat its key/value cache for its ``n`` samples
        (:func:`~grpo_fast.modeling.prefill_groups`).

        ``generate`` then only runs the last prompt token and the new ones;
        the samples (and the random stream) are the same as without it.
        """
        if enc["input_ids"].shape[1] < 2:
            return {}
        ids, attn = enc["input_ids"][:, :-1], enc["attention_mask"][:, :-1]
        with torch.inference_mode():
            pre = prefill_groups(decoder_of(self.model), ids, attn, n)
        return {} if pre is None else {pre.argument: pre.cache}

    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        _check_prompts(prompts, n)
        tok = self.tokenizer
        rows = [p for p in prompts for _ in range(n)]
        step = self.batch_size or len(rows)
        texts: list[str] = []
        prompt_ids: list[list[int]] = []
        completion_ids: list[list[int]] = []
        logprobs: list[list[float]] = []
        was_training = self.model.training
        self.model.eval()
        try:
            for start in range(0, len(rows), step):
                chunk = rows[start : start + step]
                enc = tok(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
                enc = {k: v.to(self.model.device) for k, v in enc.items()}
                greedy = params.temperature == 0
                kwargs: dict[str, Any] = {"do_sample": not greedy}
                if not greedy:
                    kwargs.update(
                        temperature=params.temperature, top_p=params.top_p, top_k=params.top_k
                    )
                else:
                    kwargs.update(temperature=None, top_p=None, top_k=None)
                if n > 1 and step == len(rows):
                    kwargs.update(self._shared_prompt_cache(n, enc))
                with torch.inference_mode():
                    out = self.model.generate(
                        **enc,
                        max_new_tokens=params.max_new_tokens,
                        pad_token_id=tok.pad_token_id,
                        eos_token_id=tok.eos_token_id,
                        return_dict_in_generate=True,
                        output_scores=self.logprobs,
                        # Each process generates alone; under FSDP2 the trainer gathers
                        # the whole weights first (transformers would wait for the others).
                        synced_gpus=False,
                        **kwargs,
                    )
                width = enc["input_ids"].shape[1]
                new = out.sequences[:, width:]
                lp = None
                if self.logprobs:
                    # scores are the processed logits each token was drawn from.
                    scores = torch.stack(out.scores, dim=1).float().log_softmax(-1)
                    lp = scores.gather(-1, new[:, : scores.shape[1]].unsqueeze(-1)).squeeze(-1)
                for i in range(new.shape[0]):
                    ids = new[i].tolist()
                    if tok.eos_token_id in ids:
                        ids = ids[: ids.index(tok.eos_token_id) + 1]
                    mask = enc["attention_mask"][i].bool()
                    prompt_ids.append(enc["input_ids"][i][mask].tolist())
                    completion_ids.append(ids)
                    if lp is not None:
                        logprobs.append(lp[i, : len(ids)].tolist())
                texts.extend(
                    tok.batch_decode(completion_ids[-new.shape[0] :], skip_special_tokens=True)
                )
        finally:
            self.model.train(was_training)
        return Completions(
            texts, prompt_ids, completion_ids, logprobs if self.logprobs else None, n
        )


class VLLMSampler:
    """Sampling with a vLLM engine; weights pushed from the trainer after each step.

    Parameters
    ----------
    model : str
        A local model directory (the trainer's starting checkpoint).
    seed : int
        Engine seed.
    **engine_kwargs
        Passed to ``vllm.LLM`` (``gpu_memory_utilization``, ``dtype``, ...);
        ``logprobs_mode`` defaults to ``"processed_logprobs"`` where vLLM has it,
        so the reported log-probs are those of the distribution sampled from.

    Requires the ``grpo-fast[vllm]`` extra and a GPU. The engine runs in this
    process, next to the trainer ("colocated"): after an optimizer step
    :meth:`update_weights` loads the new state dict into the engine's model
    and drops vLLM's prefix cache, whose entries were computed with the old
    weights.
    """

    def __init__(self, model: str, *, seed: int = 0, **engine_kwargs: Any) -> None:
        try:
            import vllm
        except ImportError as e:
            raise InvalidInputError(
                f"VLLMSampler needs vLLM (pip install 'grpo-fast[vllm]'): {e}"
            ) from None
        self._vllm = vllm
        engine_kwargs.setdefault("gpu_memory_utilization", 0.3)
        # The mismatch correction compares these log-probs with the trainer's after
        # temperature: vLLM V1 reports the raw logits' unless asked (TRL and verl ask too).
        engine_fields = getattr(vllm.EngineArgs, "__dataclass_fields__", {})
        if "logprobs_mode" in engine_fields:
            engine_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        self.llm = vllm.LLM(model=model, seed=seed, **engine_kwargs)
        self.tokenizer = self.llm.get_tokenizer()

    def _engine_model(self) -> Any:
        # The attribute path to the in-process model moved between vLLM releases.
        engine = self.llm.llm_engine
        for path in (
            "model_executor.driver_worker.worker.model_runner.model",
            "model_executor.driver_worker.model_runner.model",
        ):
            obj: Any = engine
            try:
                for name in path.split("."):
                    obj = getattr(obj, name)
            except AttributeError:
                continue
            return obj
        return None

    def update_weights(self, model: Any) -> None:
        state = model.state_dict()
        target = self._engine_model()
        if target is not None:
            target.load_weights(weights=list(state.items()))
        else:  # vLLM V1 with the engine in a worker process.
            items = [(k, v.detach()) for k, v in state.items()]
            self.llm.collective_rpc(
                lambda worker: worker.model_runner.model.load_weights(weights=items)
            )
        self.llm.reset_prefix_cache()

    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        _check_prompts(prompts, n)
        sp = self._vllm.SamplingParams(
            n=n,
            temperature=params.temperature,
            top_p=params.top_p,
            top_k=params.top_k if params.top_k > 0 else -1,
            max_tokens=params.max_new_tokens,
            logprobs=0,
        )
        outputs = self.llm.generate(prompts, sp, use_tqdm=False)
        texts: list[str] = []
        prompt_ids: list[list[int]] = []
        completion_ids: list[list[int]] = []
        logprobs: list[list[float]] = []
        for req in outputs:
            for c in req.outputs:
                ids = list(c.token_ids)
                texts.append(c.text)
                prompt_ids.append(list(req.prompt_token_ids))
                completion_ids.append(ids)
                logprobs.append(
                    [c.logprobs[t][tid].logprob for t, tid in enumerate(ids)] if c.logprobs else []
                )
        return Completions(texts, prompt_ids, completion_ids, logprobs, n)
