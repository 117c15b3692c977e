# ruff: noqa: E501  (the hostile programs are written out as string literals)
"""The code sandbox against hostile programs: each case has the verdict it
must get, and nothing may be left behind (no process, no file), with
namespaces (where this kernel allows them) and in the forced fallback."""

from __future__ import annotations

import os
import sys
import time
import uuid
from pathlib import Path

import pytest

from grpo_fast import sandbox
from grpo_fast.code import verify_code

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the sandbox is Linux-only"
)

MODES = ["fallback"] + (
    ["namespaces"]
    if sys.platform.startswith("linux") and sandbox.isolation() == "namespaces"
    else []
)
FAST = sandbox.Limits(
    cpu_seconds=0.5, wall_seconds=2.0, output_bytes=64 << 10, memory_bytes=256 << 20
)
ROOMY = sandbox.Limits(cpu_seconds=3.0, wall_seconds=10.0, memory_bytes=256 << 20)
ONE_IO = {"inputs": ["1 2\n"], "outputs": ["3\n"]}  # for the cases that run into a limit
ADD_IO = {"inputs": ["1 2\n", "10 20\n", "-5 5\n"], "outputs": ["3\n", "30\n", "0\n"]}
ADD_CALL = {"fn_name": "add", "inputs": [[1, 2], [10, 20], [-5, 5]], "outputs": [3, 30, 0]}
ADD_ASSERT = {  # not convertible to calls (a loop): runs in-process
    "test": "def check(candidate):\n    for a, b in [(1, 2), (10, 20)]:\n        assert candidate(a, b) == a + b\n",
    "entry_point": "add",
}
GOOD_IO = "a, b = map(int, input().split())\nprint(a + b)\n"
GOOD_FN = "def add(a, b):\n    return a + b\n"


def fence(code: str) -> str:
    return f"Here it is:\n```python\n{code}```\n"


def run(code: str, tests, mode: str, limits: sandbox.Limits = FAST):
    return verify_code(fence(code), tests, limits=limits, fallback=mode == "fallback")


def leased_uids() -> set[int]:
    """The sandbox uids that runs going on now hold (as root each run binds an
    abstract unix socket named after its uid while it lasts): another process's
    sandbox, not ours."""
    try:
        lines = Path("/proc/net/unix").read_text().splitlines()
    except OSError:
        return set()
    prefix = "@grpo-fast-sandbox-uid-"
    return {
        int(w[len(prefix) :]) for line in lines for w in line.split()[-1:] if w.startswith(prefix)
    }


def leftovers(marker: str) -> list[str]:
    """Processes whose command line carries `marker`, and sandbox uids still running
    that no run going on now holds (ours have all ended when this is asked)."""
    found = []
    leased = leased_uids()
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = (
                Path(f"/proc/{pid}/cmdline")
                .read_bytes()
                .replace(b"\0", b" ")
                .decode(errors="replace")
            )
            uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
        except (OSError, IndexError, ValueError):
            continue
        if marker in cmd or (2_000_000 <= uid < 2_000_000 + (1 << 20) and uid not in leased):
            found.append(f"{pid} uid={uid} {cmd}")
    return found


def workdirs() -> list[str]:
    import tempfile

    return [
        p
        for p in os.listdir(tempfile.gettempdir())
        if p.startswith(f"grpo-fast-sandbox-{os.getpid()}-")
    ]


@pytest.fixture(autouse=True)
def nothing_left_behind():
    yield
    assert workdirs() == []
    # Without namespaces (the fallback), a process the sandbox has just killed may
    # still be listed for a moment, until the kernel has torn it down: wait for that,
    # but no longer than a few seconds.
    deadline = time.monotonic() + 5
    while leftovers("grpo_fast_hostile") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert leftovers("grpo_fast_hostile") == []


# --------------------------------------------------------------------- formats


@pytest.mark.parametrize("mode", MODES)
def test_correct_solutions_pass_every_format(mode):
    assert run(GOOD_IO, ADD_IO, mode).ok
    assert run(GOOD_FN, ADD_CALL, mode).ok
    assert run(GOOD_FN, ADD_ASSERT, mode).ok
    mbpp = {"test_list": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]}
    assert run(GOOD_FN, mbpp, mode) == verify_code(fence(GOOD_FN), mbpp)
    assert run(GOOD_FN, mbpp, mode).passed == 2


def test_wrong_solutions_fail_with_counts():
    wrong = "def add(a, b):\n    return a * b if a > 0 else 0\n"  # right for (-5, 5) only
    v = verify_code(fence(wrong), ADD_CALL)
    assert (v.passed, v.total, v.reason) == (1, 3, "wrong_answer")
    v = verify_code(fence("print(3)\n"), ADD_IO)  # the sample's output only
    assert (v.passed, v.total, v.reason) == (1, 3, "wrong_answer")
    v = verify_code(fence(wrong), ADD_ASSERT)
    assert (v.passed, v.total, v.reason) == (0, 1, "wrong_answer")


def test_no_fenced_block_is_no_code():
    v = verify_code("def add(a, b): return a + b", ADD_CALL)
    assert (v.passed, v.total, v.reason) == (0, 3, "no_code")
    v = verify_code("```js\nx\n```", ADD_CALL)
    assert v.reason == "no_code"


def test_compile_error():
    assert verify_code(fence("def add(a, b) return\n"), ADD_CALL).reason == "compile_error"
    assert verify_code(fence("def add(a, b) return\n"), ADD_ASSERT).reason == "compile_error"


# ---------------------------------------------------------------- the battery

BATTERY = [
    # (name, code, tests, expected reason)
    ("infinite loop", "while True:\n    pass\n", ONE_IO, "time_limit"),
    (
        "fork bomb",
        "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass\n",
        ONE_IO,
        "time_limit",
    ),
    ("memory bomb", "x = bytearray(10 ** 10)\nprint(3)\n", ONE_IO, "memory_limit"),
    (
        "memory creep",
        "a = []\nwhile True:\n    a.append(bytearray(5 * 10 ** 7))\n",
        ONE_IO,
        "memory_limit",
    ),
    ("output flood", "while True:\n    print('x' * 1000)\n", ONE_IO, "output_limit"),
    ("socket", "import socket\nsocket.socket()\nprint(3)\n", ONE_IO, "forbidden_call"),
    (
        "kill everything",
        "import os, signal\nos.kill(-1, signal.SIGKILL)\n",
        ONE_IO,
        "forbidden_call",
    ),
    (
        "ignore SIGXCPU and SIGTERM",
        "import signal\nsignal.signal(signal.SIGXCPU, signal.SIG_IGN)\n"
        "signal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass\n",
        ONE_IO,
        "time_limit",
    ),
    ("sleep", "import time\ntime.sleep(100)\n", ONE_IO, "time_limit"),
    ("sys.exit before the output", "import sys\nsys.exit(0)\n", ADD_IO, "wrong_answer"),
    ("sys.exit before the calls", "import sys\nsys.exit(0)\n", ADD_CALL, "runtime_error"),
    ("os._exit before the calls", "import os\nos._exit(0)\n", ADD_CALL, "runtime_error"),
    ("sys.exit before the asserts", "import sys\nsys.exit(0)\n", ADD_ASSERT, "runtime_error"),
    ("os._exit before the asserts", "import os\nos._exit(0)\n", ADD_ASSERT, "runtime_error"),
    (
        "__eq__ always true (call)",
        "class A:\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return A()\n",
        ADD_CALL,
        "runtime_error",
    ),
    (
        "__eq__ always true (assert)",
        "class A:\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return A()\n",
        ADD_ASSERT,
        "runtime_error",
    ),
    (
        "int subclass equal to everything",
        "class I(int):\n    def __eq__(self, o):\n        return True\ndef add(a, b):\n    return I(0)\n",
        ADD_CALL,
        "runtime_error",
    ),
    (
        "forged result lines",
        'import os\nos.write(1, b\'{"load": "ok"}\\n{"ok": 3}\\n{"ok": 30}\\n{"ok": 0}\\n\')\nos._exit(0)\n',
        ADD_CALL,
        "runtime_error",  # the harness's own load line never came: the forged ones are read as the load line only
    ),
    (
        "patched builtins and tracing (assert)",
        "import builtins, sys\nbuiltins.AssertionError = type('X', (Exception,), {})\n"
        "def add(a, b):\n    import builtins\n    builtins.range = lambda *a: []\n    sys.settrace(lambda *a: None)\n    return 0\n",
        ADD_ASSERT,
        "wrong_answer",
    ),
    (
        "spinning thread after main returns",
        "import threading\ndef spin():\n    while True:\n        pass\n"
        "threading.Thread(target=spin).start()\na, b = map(int, input().split())\nprint(a + b)\n",
        ONE_IO,
        "time_limit",
    ),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("name,code,tests,reason", BATTERY, ids=[b[0] for b in BATTERY])
def test_hostile(mode, name, code, tests, reason):
    # Memory cases touch hundreds of MB: CPU room so that a loaded machine still sees the memory limit first.
    limits = ROOMY if reason == "memory_limit" else FAST
    v = run("# grpo_fast_hostile\n" + code, tests, mode, limits)
    assert v.reason == reason, (name, v)
    assert v.passed < v.total


@pytest.mark.parametrize("mode", MODES)
def test_cannot_signal_the_parent(mode):
    code = f"import os, signal\nos.kill({os.getpid()}, signal.SIGKILL)\n"
    assert run(code, ADD_IO, mode).reason == "forbidden_call"


@pytest.mark.parametrize("mode", MODES)
def test_cannot_write_or_delete_outside(mode, tmp_path):
    victim = tmp_path / "victim.txt"
    victim.write_text("keep")
    os.chmod(tmp_path, 0o777)
    os.chmod(victim, 0o666)
    target = Path("/tmp") / f"grpo_fast_hostile_{uuid.uuid4().hex}"
    code = (
        "import os\n"
        f"try:\n    open({str(target)!r}, 'w').write('x')\nexcept OSError:\n    pass\n"
        f"try:\n    os.remove({str(victim)!r})\nexcept OSError:\n    pass\n"
        f"try:\n    open({str(victim)!r}, 'w').write('gone')\nexcept OSError:\n    pass\n"
        "try:\n    open('here.txt', 'w').write('x')\nexcept OSError:\n    print('refused')\n"
    )
    v = run(code, {"inputs": [""], "outputs": ["refused"]}, mode)
    assert v.ok, v
    assert not target.exists()
    assert victim.read_text() == "keep"


@pytest.mark.parametrize("mode", MODES)
def test_daemon_does_not_outlive_the_run(mode):
    tag = f"98{uuid.uuid4().int % 10**6}"
    code = (
        "import os\nif os.fork() == 0:\n    try:\n        os.setsid()\n    except OSError:\n        pass\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/bin/sleep', ['/bin/sleep', '{tag}'])\n    os._exit(0)\n"
        "a, b = map(int, input().split())\nprint(a + b)\n"
    )
    v = run(code, ADD_IO, mode)
    assert v.ok, v  # the answer is right; the daemon is gone (checked here and by the fixture)
    assert leftovers(f"sleep {tag}") == []


@pytest.mark.parametrize("mode", MODES)
def test_cannot_read_tests_or_expected_outputs(mode):
    secret = f"EXPECTED_{uuid.uuid4().hex}"
    code = (
        "import os, sys\nfound = ''\n"
        "for root in ['.', '/proc']:\n"
        "    for p in os.listdir(root):\n"
        "        for f in [os.path.join(root, p), os.path.join(root, p, 'cmdline'), os.path.join(root, p, 'environ')]:\n"
        "            try:\n                data = open(f, 'rb').read(1 << 20).decode('latin-1')\n"
        "            except Exception:\n                continue\n"
        "            i = data.find('EXPECTED_')\n"
        "            if i >= 0:\n                found = data[i:i + 41]\n"
        "print(found or 'nothing')\n"
    )
    v = run(code, {"inputs": ["x\n"], "outputs": [secret]}, mode)
    assert (v.passed, v.reason) == (0, "wrong_answer")


def test_isolation_is_reported():
    assert sandbox.isolation() in ("namespaces", "fallback")
    os.environ["GRPO_FAST_SANDBOX_NO_NAMESPACES"] = "1"
    try:
        assert sandbox.isolation() == "fallback"
    finally:
        del os.environ["GRPO_FAST_SANDBOX_NO_NAMESPACES"]


def test_bad_input_is_a_clear_error():
    from grpo_fast.errors import InvalidInputError

    with pytest.raises(InvalidInputError, match="known keys"):
        verify_code("x", {"nope": 1})
    with pytest.raises(InvalidInputError, match="inputs but"):
        verify_code("x", {"inputs": [1], "outputs": []})
    with pytest.raises(InvalidInputError, match="absolute"):
        sandbox.run([sandbox.Job(argv=["cat"])])
    with pytest.raises(InvalidInputError, match="cpu_seconds"):
        sandbox.run([sandbox.Job(argv=["/bin/true"])], sandbox.Limits(cpu_seconds=-1))


# ------------------------------------------------------------------ C and C++

C_ADD = '```c\n#include <stdio.h>\nint main(void) { long a, b; scanf("%ld %ld", &a, &b); printf("%ld\\n", a + b); return 0; }\n```'
CPP_ADD = "```cpp\n#include <iostream>\nint main() { long a, b; std::cin >> a >> b; std::cout << a + b << std::endl; }\n```"


@pytest.mark.skipif(not Path("/usr/bin/gcc").exists(), reason="gcc is not installed")
@pytest.mark.parametrize("mode", MODES)
def test_c_and_cpp(mode):
    fb = mode == "fallback"
    assert verify_code(C_ADD, ADD_IO, language="c", fallback=fb).ok
    if Path("/usr/bin/g++").exists():
        assert verify_code(CPP_ADD, ADD_IO, language="cpp", fallback=fb).ok
    v = verify_code("```c\nint main(void) { return x; }\n```", ADD_IO, language="c", fallback=fb)
    assert (v.passed, v.reason) == (0, "compile_error")
    spin = "```c\nint main(void) { for (;;) {} }\n```"
    v = verify_code(spin, ONE_IO, language="c", limits=FAST, fallback=fb)
    assert v.reason == "time_limit"
    sock = "```c\n#include <sys/socket.h>\nint main(void) { socket(AF_INET, SOCK_STREAM, 0); return 0; }\n```"
    assert verify_code(sock, ONE_IO, language="c", fallback=fb).reason == "forbidden_call"
    crash = "```c\nint main(void) { int *p = 0; return *p; }\n```"
    assert verify_code(crash, ONE_IO, language="c", fallback=fb).reason == "runtime_error"
    with pytest.raises(Exception, match="stdin/stdout tests only"):
        verify_code(C_ADD, {"fn_name": "f", "inputs": [[1]], "outputs": [1]}, language="c")


@pytest.mark.skipif(os.environ.get("GRPO_FAST_NON_ROOT_CHILD") == "1", reason="already the child")
def test_fallback_battery_as_a_non_root_user():
    """The fallback cases again, in a child pytest under uid/gid 65534 (nobody) with
    GRPO_FAST_SANDBOX_NO_NAMESPACES=1: the path a non-root user without namespaces gets
    (no dedicated uid; it runs as the caller). The child keeps CAP_DAC_READ_SEARCH only
    so that it can reach an interpreter under a root-only home (pyenv in /root)."""
    import shutil
    import subprocess

    if os.geteuid() != 0:
        pytest.skip("needs root to switch to uid 65534 (this run is already non-root)")
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    env = dict(
        os.environ, GRPO_FAST_SANDBOX_NO_NAMESPACES="1", GRPO_FAST_NON_ROOT_CHILD="1", HOME="/tmp"
    )
    cmd = [
        setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
        "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search",
        sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", __file__,
        "-k", "fallback and (hostile or signal or outside or daemon)",
    ]  # fmt: skip
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    if "Operation not permitted" in r.stderr and r.returncode != 0 and "passed" not in r.stdout:
        pytest.skip(f"setpriv refused here: {r.stderr.strip()[:200]}")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert " passed" in r.stdout and "failed" not in r.stdout, r.stdout[-2000:]


# ------------------------------------------------------- runs in two processes

CONCURRENT = """
import sys
from grpo_fast import sandbox
from grpo_fast.code import verify_code
slow, n = sys.argv[1] == "slow", int(sys.argv[2])
code = ("import time\\ntime.sleep(1.5)\\n" if slow else "") + {good!r}
tests = {tests!r}
limits = sandbox.Limits(cpu_seconds=3.0, wall_seconds=10.0, memory_bytes=256 << 20)
fence = "```python\\n" + code + "```\\n"
print(all(verify_code(fence, tests, limits=limits, fallback=True).ok for _ in range(n)))
"""


@pytest.mark.skipif(os.geteuid() != 0, reason="a uid per run is the root sandbox's")
def test_two_processes_sandboxing_at_once_never_share_a_uid():
    # Each run as root has a uid of its own, and the fallback's end kills whatever
    # that uid still runs: two processes that counted uids from the same start (ranks
    # of one node) killed each other's programs. A slow run in one process while
    # another finishes many quick ones must pass.
    import subprocess

    script = CONCURRENT.format(good=GOOD_IO, tests=ADD_IO)
    slow = subprocess.Popen(
        [sys.executable, "-c", script, "slow", "1"], stdout=subprocess.PIPE, text=True
    )
    quick = subprocess.Popen(
        [sys.executable, "-c", script, "quick", "40"], stdout=subprocess.PIPE, text=True
    )
    assert quick.communicate(timeout=120)[0].strip() == "True"
    assert slow.communicate(timeout=120)[0].strip() == "True"
