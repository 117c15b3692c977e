"""Sampling with transformers ``generate`` on the training model itself."""

from __future__ import annotations

from typing import Any

import torch

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling.base import Completions, SamplingParams, check_prompts
from grpo_fast.train.modeling import decoder_of, prefill_groups, refresh_copy, weights_copy

__all__ = ["HFSampler"]


class HFSampler:
    """Sampling with transformers ``generate`` on the training model itself.

    Parameters
    ----------
    model : transformers PreTrainedModel
        Shared with the trainer: there is nothing to copy after an update
        (unless ``weights_dtype`` asks for a copy).
    tokenizer : transformers tokenizer
        Needs a pad token; prompts are left-padded for batched generation.
    batch_size : int or None
        Rows per ``generate`` call (``None``: all ``len(prompts) * n`` at once).
    logprobs : bool
        Report the sampled tokens' log-probs (costs keeping every step's
        scores; the trainer recomputes them in its loss forward and turns
        this off).
    weights_dtype : torch.dtype or None
        Sample from a copy of the model whose weights are stored in this dtype
        (buffers such as rotary frequencies stay as they are), refreshed from
        the model by :meth:`update_weights`: the mixed-precision trainer's
        fp32 weights are then not cast to 16 bits again at every generated
        token, as they are under autocast. Costs the weights' size in this
        dtype. ``None``: the model itself.

    Examples
    --------
    >>> sampler = HFSampler(model, tokenizer)  # doctest: +SKIP
    >>> params = SamplingParams(max_new_tokens=4)  # doctest: +SKIP
    >>> out = sampler.sample(["12+34="], n=8, params=params)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        batch_size: int | None = None,
        logprobs: bool = True,
        weights_dtype: torch.dtype | None = None,
    ) -> None:
        if tokenizer.pad_token_id is None:
            raise InvalidInputError("the tokenizer has no pad token; set tokenizer.pad_token")
        self.model = model
        self.tokenizer = tokenizer
        self.batch_size = batch_size
        self.logprobs = logprobs
        self.weights_dtype = weights_dtype
        self._copy: Any = None  # the weights_dtype copy, built on first use

    def update_weights(self, model: Any) -> None:
        """Sample from ``model`` from now on (its ``weights_dtype`` copy refreshed now:
        the trainer counts it as the step's weight push)."""
        self.model = model
        if self._copy is not None:
            refresh_copy(self._copy, model)

    def _runner(self) -> Any:
        """What ``generate`` runs: the model, or its ``weights_dtype`` copy."""
        if self.weights_dtype is None:
            return self.model
        if self._copy is None:
            self._copy = weights_copy(self.model, self.weights_dtype)
        return self._copy

    def _shared_prompt_cache(self, model: Any, n: int, enc: dict[str, Any]) -> dict[str, Any]:
        """Prefill each prompt once and repeat its key/value cache for its ``n`` samples
        (:func:`~grpo_fast.train.modeling.prefill_groups`).

        ``generate`` then only runs the last prompt token and the new ones;
        the samples (and the random stream) are the same as without it.
        """
        if enc["input_ids"].shape[1] < 2:
            return {}
        ids, attn = enc["input_ids"][:, :-1], enc["attention_mask"][:, :-1]
        with torch.inference_mode():
            pre = prefill_groups(decoder_of(model), ids, attn, n)
        return {} if pre is None else {pre.argument: pre.cache}

    def _generate(
        self, model: Any, enc: dict[str, Any], params: SamplingParams, extra: dict[str, Any]
    ) -> tuple[list[list[int]], list[list[float]] | None]:
        """One ``generate`` call on a left-padded batch: each row's new token ids (cut after
        EOS) and, with ``logprobs``, their log-probs."""
        tok = self.tokenizer
        greedy = params.temperature == 0
        kwargs: dict[str, Any] = {"do_sample": not greedy, **extra}
        if not greedy:
            kwargs.update(temperature=params.temperature, top_p=params.top_p, top_k=params.top_k)
        else:
            kwargs.update(temperature=None, top_p=None, top_k=None)
        with torch.inference_mode():
            out = model.generate(
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
        new = out.sequences[:, enc["input_ids"].shape[1] :]
        lp = None
        if self.logprobs:
            # scores are the processed logits each token was drawn from.
            scores = torch.stack(out.scores, dim=1).float().log_softmax(-1)
            lp = scores.gather(-1, new[:, : scores.shape[1]].unsqueeze(-1)).squeeze(-1)
        ids_out: list[list[int]] = []
        lps: list[list[float]] = []
        for i in range(new.shape[0]):
            ids = new[i].tolist()
            if tok.eos_token_id in ids:
                ids = ids[: ids.index(tok.eos_token_id) + 1]
            ids_out.append(ids)
            if lp is not None:
                lps.append(lp[i, : len(ids)].tolist())
        return ids_out, lps if lp is not None else None

    def continue_ids(
        self, sequences: list[list[int]], params: SamplingParams
    ) -> tuple[list[list[int]], list[list[float]] | None]:
        """One more model turn after each of ``sequences`` (prompt, sampled tokens and tool
        messages, as token ids: nothing is tokenized again); the new ids and log-probs.

        The multi-turn rollouts of :mod:`grpo_fast.tools` call it.
        """
        pad = self.tokenizer.pad_token_id
        width = max(len(s) for s in sequences)
        ids = torch.full((len(sequences), width), pad, dtype=torch.long)
        mask = torch.zeros((len(sequences), width), dtype=torch.long)
        for i, seq in enumerate(sequences):
            ids[i, width - len(seq) :] = torch.tensor(seq, dtype=torch.long)
            mask[i, width - len(seq) :] = 1
        model = self._runner()
        enc = {"input_ids": ids.to(model.device), "attention_mask": mask.to(model.device)}
        was_training = model.training
        model.eval()
        try:
            return self._generate(model, enc, params, {})
        finally:
            model.train(was_training)

    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        check_prompts(prompts, n)
        tok = self.tokenizer
        rows = [p for p in prompts for _ in range(n)]
        step = self.batch_size or len(rows)
        texts: list[str] = []
        prompt_ids: list[list[int]] = []
        completion_ids: list[list[int]] = []
        logprobs: list[list[float]] = []
        model = self._runner()
        was_training = model.training
        model.eval()
        try:
            for start in range(0, len(rows), step):
                chunk = rows[start : start + step]
                enc = tok(chunk, return_tensors="pt", padding=True, add_special_tokens=False)
                enc = {k: v.to(model.device) for k, v in enc.items()}
                shared = (
                    self._shared_prompt_cache(model, n, enc) if n > 1 and step == len(rows) else {}
                )
                new, lps = self._generate(model, enc, params, shared)
                for i, ids in enumerate(new):
                    mask = enc["attention_mask"][i].bool()
                    prompt_ids.append(enc["input_ids"][i][mask].tolist())
                    completion_ids.append(ids)
                logprobs.extend(lps or [])
                texts.extend(tok.batch_decode(new, skip_special_tokens=True))
        finally:
            model.train(was_training)
        return Completions(
            texts, prompt_ids, completion_ids, logprobs if self.logprobs else None, n
        )
