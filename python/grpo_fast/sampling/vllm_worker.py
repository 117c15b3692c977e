"""The vLLM worker extension that loads the trainer's weights into a running engine.

vLLM mixes the class named by the engine argument
``worker_extension_cls="grpo_fast.sampling.vllm_worker.WeightSync"`` into each
of its workers (in the worker's own process), so ``self`` in these methods is
the vLLM worker. They are called by name, with string arguments only, through
``LLM.collective_rpc(name, args=...)`` or a server's ``POST /collective_rpc``
(``VLLM_SERVER_DEV_MODE=1``): a lambda would need vLLM's insecure
serialization, and tensors do not travel between processes as arguments.

The weights travel in a safetensors file the trainer wrote on the same machine
(:func:`grpo_fast.sampling.vllm.save_weights`), read with the worker's
``reload_weights`` (vLLM's in-place reload: checkpoint names, the model's own
``load_weights`` mapping, then each layer's post-load processing).

This module imports nothing heavy at import time: vLLM's workers import it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["WeightSync"]


class WeightSync:
    """Methods mixed into each vLLM worker (``worker_extension_cls``).

    Names start with ``grpo_fast_``: vLLM refuses an extension whose method
    names clash with the worker's (it already has ``update_weights``).
    """

    def grpo_fast_load_weights(self, path: str, version: str = "") -> str:
        """Load the tensors of the safetensors file ``path`` (checkpoint names) into
        this worker's model; returns ``version``, now the worker's policy version."""
        from safetensors.torch import safe_open

        worker: Any = self
        with safe_open(path, framework="pt", device="cpu") as f:
            names = list(f.keys())
            weights = ((name, f.get_tensor(name)) for name in names)
            worker.reload_weights(weights_iterator=weights, is_checkpoint_format=True)
        _refresh_tied_head(worker)
        worker._grpo_fast_version = version
        return version

    def grpo_fast_dtype_and_version(self) -> str:
        """``"<dtype> <version>"``: the model's dtype (``float32``, ``bfloat16``, ...)
        and the version passed with the last load ("" before any)."""
        worker: Any = self
        dtype = str(worker.model_runner.model_config.dtype).removeprefix("torch.")
        return f"{dtype} {getattr(self, '_grpo_fast_version', '')}"


def _refresh_tied_head(worker: Any) -> None:
    """A model whose output layer shares the input embedding (``tie_word_embeddings``)
    gets no ``lm_head.weight`` in a checkpoint; some backends (vLLM's CPU build) run the
    head on a packed copy made after loading, which the reload leaves stale. Redo the
    head's post-load processing from the (reloaded) shared weight."""
    model = worker.model_runner.get_model()
    head = getattr(model, "lm_head", None)
    config = getattr(model, "config", None)
    if head is None or not getattr(config, "tie_word_embeddings", False):
        return
    method = getattr(head, "quant_method", None)
    process = getattr(method, "process_weights_after_loading", None)
    if process is not None:
        process(head)
