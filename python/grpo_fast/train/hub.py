"""Model names: a local directory or a Hugging Face Hub id, checked without loading
anything, and the one-line reason a model could not be loaded. Imports neither
torch nor transformers.
"""

from __future__ import annotations

import os
from pathlib import Path

from grpo_fast.errors import InvalidInputError

__all__ = ["check_hub", "check_model_name", "hub_error"]


def hub_error(name: str, what: str, error: BaseException, flag: str = "--model") -> str:
    """One line saying why ``name`` could not be loaded, and what to do about it."""
    from huggingface_hub.errors import (
        GatedRepoError,
        LocalEntryNotFoundError,
        RepositoryNotFoundError,
    )

    chain = []
    e: BaseException | None = error
    while e is not None and len(chain) < 20:
        chain.append(e)
        e = e.__cause__ or e.__context__
    if any(isinstance(c, LocalEntryNotFoundError) for c in chain):
        return _offline_message(name, what, flag)
    if any(isinstance(c, GatedRepoError) for c in chain):
        return (
            f"{name!r} is a gated model on the Hugging Face Hub: accept its terms on the Hub and "
            f"log in (hf auth login), or pass a local copy ({flag} DIR)"
        )
    if any(isinstance(c, RepositoryNotFoundError) for c in chain):
        return (
            f"{name!r} is neither a local directory nor a model on the Hugging Face Hub (a "
            "private one needs hf auth login); pass a model directory or a hub id such as "
            "Qwen/Qwen2.5-0.5B-Instruct"
        )
    first = next((line for line in str(error).splitlines() if line.strip()), type(error).__name__)
    return f"cannot load the {what} of {name!r}: {first}"


def _offline_message(name: str, what: str, flag: str) -> str:
    return (
        f"cannot load the {what} of {name!r}: it is not a local directory, the Hugging Face "
        "Hub cannot be reached (no network, or HF_HUB_OFFLINE=1) and it is not in the local "
        f"cache; download it where there is a network (hf download {name} --local-dir DIR) "
        f"and pass that directory ({flag} DIR)"
    )


def _hub_reachable(timeout: float = 3.0) -> bool:
    """Whether a TCP connection to the hub's endpoint opens within ``timeout`` seconds
    (True behind a proxy: it decides, not this check)."""
    import socket
    from urllib.parse import urlparse

    from huggingface_hub import constants

    if any(os.environ.get(v) for v in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")):
        return True
    url = urlparse(constants.ENDPOINT)
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        socket.create_connection((url.hostname, port), timeout=timeout).close()
    except OSError:
        return False
    return True


def check_hub(name: str, what: str, flag: str = "--model") -> None:
    """For a hub id: fail at once (not after a minute of download retries) when the hub
    cannot be reached, offline or without a network, and ``name`` is not in the local
    cache; when it is cached, read it from there without trying the network."""
    from huggingface_hub import constants, try_to_load_from_cache

    offline = constants.HF_HUB_OFFLINE or os.environ.get("HF_HUB_OFFLINE", "").upper() in (
        "1",
        "ON",
        "YES",
        "TRUE",
    )
    if not offline and _hub_reachable():
        return
    try:
        cached = isinstance(try_to_load_from_cache(name, "config.json"), str)
    except ValueError:  # not a valid repo id: from_pretrained says so
        return
    if not cached:
        raise InvalidInputError(_offline_message(name, what, flag))
    if not offline:  # the cache, without retries against a hub out of reach
        os.environ["HF_HUB_OFFLINE"] = "1"
        constants.HF_HUB_OFFLINE = True


def check_model_name(name: str, *, adapters: bool = False) -> None:
    """Check, without loading anything, that ``name`` can name a model: a local directory
    with ``config.json`` (or, with ``adapters``, LoRA adapters), a GGUF file
    (:mod:`grpo_fast.train.gguf`), or a Hugging Face Hub id.

    Whether a hub id exists is known only when it is loaded (:func:`load_model`).
    """
    from huggingface_hub.errors import HFValidationError
    from huggingface_hub.utils import validate_repo_id

    path = Path(name).expanduser()
    if str(name).lower().endswith(".gguf"):
        from grpo_fast.train.gguf import check_gguf

        check_gguf(name)
        return
    if path.is_dir():
        if (path / "config.json").is_file():
            return
        if (path / "adapter_config.json").is_file():
            if adapters:
                return
            raise InvalidInputError(
                f"model directory {name!r} holds LoRA adapters, not a model: resume its run "
                f"with --resume, or merge them first (grpo-fast export {name} OUT_DIR)"
            )
        raise InvalidInputError(
            f"model directory {name!r} is not readable: expected a transformers model "
            "directory with config.json (and weights, tokenizer)"
        )
    if path.exists():
        raise InvalidInputError(
            f"model {name!r} is a file; expected a model directory, a .gguf file or a hub id"
        )
    looks_local = name.startswith((".", "/", "~")) or name.count("/") > 1
    try:
        validate_repo_id(name)
    except HFValidationError:
        looks_local = True
    if looks_local:
        raise InvalidInputError(
            f"model {name!r} does not exist: expected a local model directory or a Hugging Face "
            "Hub id such as Qwen/Qwen2.5-0.5B-Instruct"
        )
