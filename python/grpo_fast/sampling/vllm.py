"""Sampling with a vLLM engine in the trainer's process (colocated)."""

from __future__ import annotations

from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling.base import Completions, SamplingParams, check_prompts

__all__ = ["VLLMSampler"]


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
        check_prompts(prompts, n)
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
