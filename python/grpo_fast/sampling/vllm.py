"""Sampling with a vLLM engine in the trainer's process (colocated), and what the
vLLM samplers share: the import check, the sampling options vLLM takes, and the
weight file each push writes.

A push (after every optimizer step) writes the trainer's full weights (LoRA
adapters merged in) as one safetensors file with the checkpoint's names, in
the engine's dtype, and has each vLLM worker load it in place through the
worker extension :class:`grpo_fast.sampling.vllm_worker.WeightSync`; then the
prefix cache, computed with the old weights, is dropped. The same mechanism
serves a vLLM server on the same machine
(:class:`grpo_fast.sampling.vllm_server.VLLMServerSampler`).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import weakref
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling.base import Completions, SamplingParams, check_prompts

__all__ = ["VLLMSampler", "WORKER_EXTENSION", "check_vllm_params", "engine_dtype", "save_weights"]

#: The engine argument ``worker_extension_cls`` that lets vLLM load pushed weights.
WORKER_EXTENSION = "grpo_fast.sampling.vllm_worker.WeightSync"

# The trainer's --dtype -> vLLM's name for it.
_DTYPES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16"}


def import_vllm(what: str) -> Any:
    """``import vllm``, or an error naming the extra that brings it."""
    try:
        import vllm
    except ImportError as e:
        raise InvalidInputError(
            f"{what} needs vLLM, the extra grpo-fast[vllm]: pip install 'grpo-fast[vllm]' "
            f"(import vllm failed: {e})"
        ) from None
    return vllm


def engine_dtype(dtype: str) -> str:
    """vLLM's dtype for the trainer's ``--dtype`` (``fp32`` -> ``float32``, ...); vLLM's
    own names (``auto``, ``float32``, ``bfloat16``, ``float16``) pass through.

    The trainer computes its log-probs in this precision, so an engine that
    follows it reports the same log-probs (``auto`` would sample an fp32
    checkpoint in bf16, up to half a nat off per token)."""
    if dtype in _DTYPES:
        return _DTYPES[dtype]
    if dtype in ("auto", *_DTYPES.values(), "half", "bfloat16", "float", "float16"):
        return dtype
    raise InvalidInputError(
        f"vLLM dtype must be one of {(*_DTYPES, 'auto', *_DTYPES.values())}, got {dtype!r}"
    )


def check_vllm_params(params: SamplingParams, n: int) -> None:
    """Refuse what vLLM would refuse, before a request reaches the engine."""
    if params.temperature == 0 and n > 1:
        raise InvalidInputError(
            f"vLLM samples greedily (temperature 0) only with n=1, got n={n}: the n samples "
            "would all be the same; use a temperature > 0 or n=1"
        )


def vllm_sampling_kwargs(params: SamplingParams, n: int) -> dict[str, Any]:
    """The request's sampling options, every one given: a model's generation_config
    (repetition penalty, top_k, ...) must not change what is sampled."""
    check_vllm_params(params, n)
    return {
        "n": n,
        "temperature": params.temperature,
        "top_p": params.top_p,
        "top_k": params.top_k if params.top_k > 0 else -1,
        "min_p": 0.0,
        "repetition_penalty": 1.0,
        "presence_penalty": 0.0,
        "frequency_penalty": 0.0,
        "max_tokens": params.max_new_tokens,
    }


# ---------------------------------------------------------------------- weights
def full_weights(model: Any) -> Iterator[tuple[str, Any]]:
    """The model's weights under the checkpoint's names, LoRA adapters merged in
    (``W + scale * B @ A``, computed aside: the model is not touched), a tied output
    layer once (under the input embedding's name, as checkpoints store it)."""
    import torch

    prefix = "base_model.model." if hasattr(model, "peft_config") else ""
    deltas: dict[str, Any] = {}
    if prefix:
        for name, module in model.named_modules():
            if hasattr(module, "base_layer") and hasattr(module, "get_delta_weight"):
                for adapter in getattr(module, "active_adapters", ()):
                    if adapter in getattr(module, "lora_A", {}):
                        key = name.removeprefix(prefix) + ".weight"
                        with torch.no_grad():
                            delta = module.get_delta_weight(adapter)
                        deltas[key] = delta if key not in deltas else deltas[key] + delta
    seen: set[int] = set()
    for name, tensor in model.state_dict().items():
        if ".lora_" in name:
            continue
        key = name.removeprefix(prefix).replace(".base_layer.", ".")
        if tensor.numel() and tensor.data_ptr() in seen:
            continue  # tied: the same storage as a weight already given
        seen.add(tensor.data_ptr())
        if key in deltas:
            tensor = tensor + deltas[key].to(tensor.dtype)
        yield key, tensor


def save_weights(model: Any, path: str | Path, dtype: Any = None) -> int:
    """Write ``model``'s full weights (:func:`full_weights`) to the safetensors file
    ``path`` (written aside, then renamed into place), cast to ``dtype`` (a torch
    dtype; None keeps each weight's); returns the bytes written."""
    from safetensors.torch import save_file

    tensors = {}
    for key, tensor in full_weights(model):
        t = tensor.detach()
        if dtype is not None and t.is_floating_point():
            t = t.to(dtype)
        tensors[key] = t.to("cpu").contiguous()
    path = Path(path)
    tmp = path.with_name(path.name + ".partial")
    save_file(tensors, str(tmp))
    os.replace(tmp, path)
    return path.stat().st_size


def new_weights_dir(parent: str | None = None) -> Path:
    """A fresh folder for pushed weight files: in memory (/dev/shm) where there is one."""
    if parent is None and os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK):
        parent = "/dev/shm"
    return Path(tempfile.mkdtemp(prefix="grpo_fast_vllm_", dir=parent))


def weights_folder(owner: object, weights_dir: str | None) -> tuple[Path, Any]:
    """The folder ``owner`` pushes weight files through: ``weights_dir`` as given, or a
    fresh one (:func:`new_weights_dir`) that goes with ``owner``, and the finalizer that
    removes it (None for a given folder). Call it to remove the folder now (``close()``);
    otherwise it runs when ``owner`` is garbage collected or at the interpreter's exit,
    so a script that never closes its sampler leaves no empty folder in /dev/shm."""
    if weights_dir:
        return Path(weights_dir), None
    path = new_weights_dir()
    return path, weakref.finalize(owner, shutil.rmtree, str(path), True)


def torch_dtype(name: str) -> Any:
    import torch

    return {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}.get(
        {"float": "float32", "half": "float16"}.get(name, name)
    )


@contextlib.contextmanager
def _environ(**values: str) -> Iterator[None]:
    old = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _no_autocast() -> contextlib.ExitStack:
    """Leave the trainer's autocast outside the engine (it runs in this process)."""
    import torch

    stack = contextlib.ExitStack()
    stack.enter_context(torch.autocast("cpu", enabled=False))
    if torch.cuda.is_available():
        stack.enter_context(torch.autocast("cuda", enabled=False))
    return stack


class VLLMSampler:
    """Sampling with a vLLM engine in this process; weights pushed from the trainer
    after each optimizer step.

    Parameters
    ----------
    model : str
        A local model directory (the trainer's starting checkpoint) or a hub id.
    dtype : str
        The engine's precision: the trainer's (``fp32``, ``bf16``, ``fp16``) or vLLM's
        (``auto``, ``float32``, ...). The trainer passes its own ``--dtype``, so the
        sampler's log-probs are the trainer's.
    seed : int
        Engine seed.
    in_process : bool
        Run vLLM's engine core in this process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``
        while the engine starts): start-up in seconds, and a Ctrl-C reaches only the
        trainer, which finishes its step. False: vLLM's default, a child process.
    weights_dir : str, optional
        Where each push writes its weight file (default: a fresh folder in /dev/shm
        or the temp dir, removed by :meth:`close`).
    **engine_kwargs
        Passed to ``vllm.LLM`` (``gpu_memory_utilization``, ``max_model_len``,
        ``enforce_eager``, ...). ``logprobs_mode`` defaults to
        ``"processed_logprobs"`` (the log-probs of the distribution sampled from,
        after temperature, as the trainer computes them) and ``generation_config``
        to ``"vllm"`` (no sampling defaults from the model's files).

    Needs the ``grpo-fast[vllm]`` extra (on a CPU, vLLM's CPU build). After an
    optimizer step :meth:`update_weights` pushes the model's full weights (LoRA
    merged) through the worker extension :data:`WORKER_EXTENSION` and drops the
    prefix cache, whose entries were computed with the old weights;
    :attr:`version` counts the pushes.

    Examples
    --------
    >>> sampler = VLLMSampler("path/to/model", dtype="fp32")  # doctest: +SKIP
    >>> params = SamplingParams(max_new_tokens=4)  # doctest: +SKIP
    >>> out = sampler.sample(["12+34="], n=8, params=params)  # doctest: +SKIP
    >>> sampler.update_weights(model)  # doctest: +SKIP
    """

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "auto",
        seed: int = 0,
        in_process: bool = True,
        weights_dir: str | None = None,
        **engine_kwargs: Any,
    ) -> None:
        vllm = import_vllm("--sampler vllm (VLLMSampler)")
        self._vllm = vllm
        self.dtype = engine_dtype(dtype)
        engine_kwargs.setdefault("worker_extension_cls", WORKER_EXTENSION)
        engine_kwargs.setdefault("logprobs_mode", "processed_logprobs")
        engine_kwargs.setdefault("generation_config", "vllm")
        engine_kwargs.setdefault("gpu_memory_utilization", 0.3)
        if engine_kwargs["worker_extension_cls"] != WORKER_EXTENSION:
            raise InvalidInputError(
                f"worker_extension_cls must be {WORKER_EXTENSION!r} (it loads the pushed "
                f"weights), got {engine_kwargs['worker_extension_cls']!r}"
            )
        self._check_model(model)
        env = {"VLLM_ENABLE_V1_MULTIPROCESSING": "0"} if in_process else {}
        try:
            with _environ(**env):
                self.llm = vllm.LLM(model=model, dtype=self.dtype, seed=seed, **engine_kwargs)
        except (ValueError, OSError, RuntimeError, TypeError) as e:
            raise InvalidInputError(f"vLLM could not load the model {model!r}: {e}") from e
        self.tokenizer = self.llm.get_tokenizer()
        self.weights_dir, self._remove_dir = weights_folder(self, weights_dir)
        self.version = 0
        self._torch_dtype = torch_dtype(str(self.llm.llm_engine.model_config.dtype).split(".")[-1])

    @staticmethod
    def _check_model(model: str) -> None:
        path = Path(model)
        if path.is_dir() and not (path / "config.json").is_file():
            raise InvalidInputError(
                f"vLLM cannot load {model!r}: the folder has no config.json (a transformers "
                "model directory, as save_pretrained writes it, is needed)"
            )
        if not path.exists() and (model.startswith((".", "/")) or model.count("/") > 1):
            raise InvalidInputError(f"vLLM cannot load {model!r}: no such model directory")

    # ------------------------------------------------------------------ weights
    def update_weights(self, model: Any) -> None:
        """Push ``model``'s current weights into the engine (the trainer calls this after
        every optimizer step)."""
        self.push_weights(model)

    def push_weights(self, model: Any) -> int:
        """Write the weights, have every worker load them, drop the prefix cache;
        returns the new policy :attr:`version`."""
        path = self.weights_dir / "weights.safetensors"
        save_weights(model, path, self._torch_dtype)
        version = self.version + 1
        self.llm.collective_rpc("grpo_fast_load_weights", args=(str(path), str(version)))
        self.llm.reset_prefix_cache()
        path.unlink(missing_ok=True)
        self.version = version
        return version

    # ------------------------------------------------------------------ sampling
    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        check_prompts(prompts, n)
        sp = self._vllm.SamplingParams(**vllm_sampling_kwargs(params, n), logprobs=0)
        tok = self.tokenizer
        # Token ids as HFSampler has them: the prompt's own, no special tokens added.
        inputs = [
            {"prompt_token_ids": tok(p, add_special_tokens=False)["input_ids"]} for p in prompts
        ]
        return self._generate(inputs, sp, n)

    def continue_ids(
        self, sequences: list[list[int]], params: SamplingParams
    ) -> tuple[list[list[int]], list[list[float]] | None]:
        """One more model turn after each token sequence (prompt, sampled tokens, tool
        messages; nothing tokenized again): the new ids and their log-probs
        (:mod:`grpo_fast.tools`)."""
        sp = self._vllm.SamplingParams(**vllm_sampling_kwargs(params, 1), logprobs=0)
        out = self._generate([{"prompt_token_ids": list(s)} for s in sequences], sp, 1)
        return out.completion_ids, out.logprobs

    def _generate(self, inputs: list[dict[str, Any]], sp: Any, n: int) -> Completions:
        with _no_autocast():
            outputs = self.llm.generate(inputs, sp, use_tqdm=False)
        texts: list[str] = []
        prompt_ids: list[list[int]] = []
        completion_ids: list[list[int]] = []
        logprobs: list[list[float]] = []
        for req in outputs:
            for c in sorted(req.outputs, key=lambda c: c.index):
                ids = list(c.token_ids)
                texts.append(c.text)
                prompt_ids.append(list(req.prompt_token_ids))
                completion_ids.append(ids)
                lps = c.logprobs or []
                logprobs.append([float(lps[t][tid].logprob) for t, tid in enumerate(ids)])
        return Completions(texts, prompt_ids, completion_ids, logprobs, n)

    def close(self) -> None:
        """Stop the engine and remove the weight folder this sampler made."""
        llm = self.__dict__.pop("llm", None)
        if llm is not None:
            with contextlib.suppress(Exception):
                llm.llm_engine.engine_core.shutdown()
        remove = getattr(self, "_remove_dir", None)
        if remove is not None:
            remove()

    def __enter__(self) -> VLLMSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
