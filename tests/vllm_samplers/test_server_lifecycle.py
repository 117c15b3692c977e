"""A vLLM server started by the trainer's process leaves nothing behind when that
process stops: on Ctrl-C (SIGINT) and when it is killed outright (SIGKILL: no
Python code runs; the server gets SIGTERM through PR_SET_PDEATHSIG). Each test
starts a real server (the demo model) in a child process playing the trainer."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed here: make test-vllm runs these")
if not sys.platform.startswith("linux"):
    pytest.skip("reads /proc", allow_module_level=True)

from vllm_helpers import DEMO  # noqa: E402

TRAINER = """
import sys, time
from grpo_fast.sampling.vllm_server import VLLMServer

if __name__ == "__main__":
    args = ["--enforce-eager", "--max-model-len", "32"]
    server = VLLMServer(sys.argv[1], dtype="fp32", args=args)
    print(server.proc.pid, server.log_path, flush=True)
    time.sleep(600)
"""


def group_members(pgid: int) -> list[int]:
    """Live (not zombie) processes of the process group ``pgid``."""
    pids = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[2]) == pgid:
            pids.append(int(stat.parent.name))
    return pids


def start_trainer(tmp_path):
    script = tmp_path / "trainer.py"
    script.write_text(TRAINER)
    with open(tmp_path / "trainer.log", "wb") as log:
        proc = subprocess.Popen(
            [sys.executable, str(script), str(DEMO)], stdout=subprocess.PIPE, stderr=log, text=True
        )
    line = proc.stdout.readline()
    proc.stdout.close()
    assert line.split(" ")[0].isdigit(), (tmp_path / "trainer.log").read_text()[-3000:]
    pid, log = line.strip().split(" ", 1)
    server = int(pid)
    assert server in group_members(server)  # the server leads a group of its own
    assert Path(log).is_file()
    return proc, server, Path(log)


def wait_gone(pgid: int, seconds: float = 90) -> list[int]:
    deadline = time.monotonic() + seconds
    while group_members(pgid) and time.monotonic() < deadline:
        time.sleep(0.5)
    return group_members(pgid)


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["ctrl-c", "kill-9"])
def test_no_server_left_when_the_trainer_stops(tmp_path, sig):
    proc, server, log = start_trainer(tmp_path)
    try:
        os.kill(proc.pid, sig)
        proc.wait(90)
        assert wait_gone(server) == []
        if sig == signal.SIGINT:  # stopped from Python: its temporary log goes too
            assert not log.exists()
        log.unlink(missing_ok=True)  # SIGKILL: no Python code ran to remove it
    finally:
        if proc.poll() is None:
            proc.kill()
        for pid in group_members(server):
            os.kill(pid, signal.SIGKILL)


def test_a_model_the_server_cannot_load_is_reported_with_its_log(tmp_path):
    """The server exits while starting: the error says so and quotes vLLM's reason."""
    from grpo_fast.sampling.vllm_server import VLLMServerError, VLLMServerSampler

    (tmp_path / "config.json").write_text('{"architectures": ["NoSuchModelForCausalLM"]}')
    with pytest.raises(VLLMServerError, match=r"exited with code \d+; its last log lines") as e:
        VLLMServerSampler(model=str(tmp_path), server_args=["--enforce-eager"])
    assert "NoSuchModel" in str(e.value) or "model_type" in str(e.value), str(e.value)[-2000:]
    # The log the error names is kept for the user to read.
    log = Path(re.search(r"its last log lines \((.+?)\):", str(e.value)).group(1))
    assert log.is_file()
    log.unlink()
