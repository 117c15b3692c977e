"""Verify code completions against tests in the sandbox (:mod:`grpo_fast.sandbox`).

Python runs every format; C and C++ (``language="c"`` / ``"cpp"``, compiled
by the system's gcc / g++ in the sandbox) run stdin/stdout tests.

Three test formats, recognised from the ``tests`` value (a dict, or its JSON):

- **stdin/stdout** (APPS / CodeContests ``{"inputs": [...], "outputs": [...]}``,
  open-r1's ``verification_info`` ``{"test_cases": [{"input", "output"}, ...]}``):
  one run per test case, the input on stdin.
- **function call** (APPS / TACO / verl prime_code, the same with ``"fn_name"``):
  each input is the argument list; the function (or ``Solution().fn_name``) is
  called once per case in one run and its return value written out as plain
  data (None, bool, int, float, str, list/tuple, dict, set: exact types only,
  so an object with a doctored ``__eq__`` is a runtime error, not a pass).
- **asserts** (HumanEval ``{"test": "def check(candidate): ...",
  "entry_point": ...}``, MBPP ``{"test_list": ["assert f(1) == 2", ...]}``): every
  assert of the form ``assert f(literals) == literal`` (also ``math.isclose`` /
  ``abs(f(...) - x) < tol``) becomes a function-call case, so its expected value
  never enters the sandbox; when one does not have that form the test code
  runs in the program's process, and only a line the harness writes after the
  last assert (a per-run random token) counts as a pass.

Expected outputs never enter the sandbox: comparison happens here. stdout is
compared after trailing whitespace is removed from each line and trailing
empty lines are dropped (``\\r\\n`` counts as ``\\n``); with
``float_tolerance`` set (or ``"float_tolerance"`` in the tests), tokens that
both parse as numbers match within that absolute or relative tolerance.

The code is the completion's last fenced block tagged with the language
(```` ```python ````, ```` ```py ````; ```` ```c ````, ```` ```cpp ````); no such
block: the verdict is ``no_code`` and the reward 0.

Examples
--------
>>> from grpo_fast import verify_code
>>> tests = {"inputs": ["1 2\\n"], "outputs": ["3\\n"]}
>>> v = verify_code("```python\\na, b = map(int, input().split())\\nprint(a + b)\\n```", tests)
>>> v.passed, v.total, v.reason
(1, 1, None)
"""

from __future__ import annotations

import ast
import json
import math
import re
import secrets
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from grpo_fast import sandbox
from grpo_fast.errors import InvalidInputError

__all__ = ["REASONS", "CodeVerdict", "extract_code", "verify_code", "verify_code_batch"]

REASONS = (
    "no_code",
    "compile_error",
    "wrong_answer",
    "time_limit",
    "memory_limit",
    "output_limit",
    "runtime_error",
    "forbidden_call",
    "sandbox_error",
)

LANGUAGES = {"python": ("python", "py", "python3"), "c": ("c",), "cpp": ("cpp", "c++", "cc", "cxx")}

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n(.*?)^[ \t]*```", re.S | re.M)


@dataclass(frozen=True)
class CodeVerdict:
    """The result of one completion: ``passed`` of ``total`` tests; ``reason``
    of the first failure (one of :data:`REASONS`) or None; ``detail`` a short
    human-readable note (the exception name, the stage that failed)."""

    passed: int
    total: int
    reason: str | None
    detail: str = ""

    @property
    def ok(self) -> bool:
        return self.total > 0 and self.passed == self.total

    @property
    def fraction(self) -> float:
        return self.passed / self.total if self.total else 0.0


def extract_code(completion: str, language: str = "python") -> str | None:
    """The last fenced block tagged with ``language`` (or an alias), or None."""
    if language not in LANGUAGES:
        raise InvalidInputError(f"language is {language!r}; expected one of {sorted(LANGUAGES)}")
    tags = LANGUAGES[language]
    found = None
    for m in _FENCE.finditer(completion):
        if m.group(1).lower() in tags:
            found = m.group(2)
    return found


# ---------------------------------------------------------------------------
# Test formats


@dataclass(frozen=True)
class _Tests:
    mode: str  # "stdio", "call", "inproc"
    inputs: list[Any]
    outputs: list[Any]
    fn_name: str | None = None
    code: str = ""  # in-process test code
    float_tolerance: float | None = None
    tolerances: tuple[float | None, ...] = ()


def _as_text(x: Any) -> str:
    if isinstance(x, str):
        return x
    if isinstance(x, list):
        return "\n".join(map(str, x)) + "\n"
    return str(x)


def parse_tests(tests: Any, float_tolerance: float | None = None) -> _Tests:
    """Read one of the formats of the module docstring into cases."""
    if isinstance(tests, (str, bytes)):
        try:
            tests = json.loads(tests)
        except (ValueError, UnicodeDecodeError):
            tests = {"test": tests}
    if not isinstance(tests, Mapping):
        raise InvalidInputError(f"tests is a {type(tests).__name__}; expected a dict (or its JSON)")
    tol = tests.get("float_tolerance", float_tolerance)
    if "test_cases" in tests:
        cases = tests["test_cases"]
        if not isinstance(cases, Sequence):
            raise InvalidInputError(
                "verification_info['test_cases'] must be a list of {input, output}"
            )
        fn = tests.get("fn_name")
        return _Tests(
            "call" if fn else "stdio",
            [c["input"] for c in cases],
            [c["output"] for c in cases],
            fn,
            float_tolerance=tol,
        )
    if "inputs" in tests and "outputs" in tests:
        ins, outs = list(tests["inputs"]), list(tests["outputs"])
        if len(ins) != len(outs):
            raise InvalidInputError(f"tests has {len(ins)} inputs but {len(outs)} outputs")
        fn = tests.get("fn_name")
        if fn:
            ins, outs = _prime_code_cases(ins, outs)
        return _Tests("call" if fn else "stdio", ins, outs, fn, float_tolerance=tol)
    if "test" in tests or "test_list" in tests:
        setup = str(tests.get("test_setup_code") or "")
        if "test_list" in tests:
            body = "\n".join(str(t) for t in tests["test_list"])
            entry = None
        else:
            body = str(tests["test"])
            entry = tests.get("entry_point")
        converted = _asserts_as_calls(body, entry) if not setup.strip() else None
        if converted is not None:
            fn, ins, outs, tols = converted
            return _Tests("call", ins, outs, fn, float_tolerance=tol, tolerances=tols)
        code = setup + "\n" + body + "\n"
        if entry:
            code += f"\ncheck({entry})\n"
        return _Tests("inproc", [], [], entry, code=code, float_tolerance=tol)
    raise InvalidInputError(
        "tests has none of the known keys: inputs/outputs (stdin/stdout; with fn_name: "
        "function call), test_cases (open-r1), test + entry_point (HumanEval), test_list (MBPP)"
    )


def _prime_code_cases(ins: list[Any], outs: list[Any]) -> tuple[list[Any], list[Any]]:
    """verl prime_code / TACO write a call case as JSON text: the input one
    argument per line, the output one JSON value. A case whose input is a
    str is read that way; a list input is APPS's argument list as it is."""
    args, rets = [], []
    for x, y in zip(ins, outs, strict=True):
        if isinstance(x, str):
            try:
                x = [json.loads(line) for line in x.split("\n") if line.strip()]
                y = json.loads(y) if isinstance(y, str) else y
            except ValueError as e:
                raise InvalidInputError(f"a function-call input is not JSON lines: {e}") from e
        args.append(x)
        rets.append(y)
    return args, rets


def _literal(node: ast.expr) -> tuple[bool, Any]:
    try:
        return True, ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None


def _call_case(node: ast.expr, names: set[str]) -> tuple[str, list[Any]] | None:
    if not (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in names
    ):
        return None
    if node.keywords:
        return None
    args = []
    for a in node.args:
        ok, v = _literal(a)
        if not ok:
            return None
        args.append(v)
    return node.func.id, args


def _asserts_as_calls(
    body: str, entry: str | None
) -> tuple[str, list[Any], list[Any], tuple[float | None, ...]] | None:
    """``assert f(lits) == lit`` (and float-tolerance forms) as call cases; None
    if any statement has another form (then the tests run in-process)."""
    try:
        tree = ast.parse(body)
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    stmts = list(tree.body)
    if entry:  # HumanEval: METADATA = ..., def check(candidate): asserts
        checks = [s for s in stmts if isinstance(s, ast.FunctionDef) and s.name == "check"]
        rest = [s for s in stmts if not (isinstance(s, ast.FunctionDef) and s.name == "check")]
        if len(checks) != 1 or any(not isinstance(s, (ast.Assign, ast.Expr)) for s in rest):
            return None
        stmts = checks[0].body
        names = {checks[0].args.args[0].arg} if checks[0].args.args else set()
    else:
        names = None
    fn_seen: str | None = None
    ins, outs, tols = [], [], []
    for s in stmts:
        if isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant):
            continue  # a docstring
        if not isinstance(s, ast.Assert):
            return None
        t = s.test
        call = expected = None
        tol = None
        if isinstance(t, ast.Compare) and len(t.ops) == 1 and isinstance(t.ops[0], ast.Eq):
            call, expected = t.left, t.comparators[0]
        elif (  # abs(f(x) - y) < tol
            isinstance(t, ast.Compare)
            and len(t.ops) == 1
            and isinstance(t.ops[0], (ast.Lt, ast.LtE))
            and isinstance(t.left, ast.Call)
            and isinstance(t.left.func, ast.Name)
            and t.left.func.id == "abs"
            and len(t.left.args) == 1
            and isinstance(t.left.args[0], ast.BinOp)
            and isinstance(t.left.args[0].op, ast.Sub)
        ):
            ok, tol = _literal(t.comparators[0])
            if not ok or not isinstance(tol, (int, float)):
                return None
            call, expected = t.left.args[0].left, t.left.args[0].right
        elif (  # math.isclose(f(x), y[, rel_tol=..., abs_tol=...])
            isinstance(t, ast.Call)
            and isinstance(t.func, ast.Attribute)
            and t.func.attr == "isclose"
            and len(t.args) == 2
        ):
            call, expected = t.args
            tol = 1e-9
            for kw in t.keywords:
                ok, v = _literal(kw.value)
                if not ok or kw.arg not in ("rel_tol", "abs_tol"):
                    return None
                tol = max(tol, float(v))
        else:
            return None
        ok, value = _literal(expected)
        if not ok:
            return None
        if names is None:  # MBPP: the function is called by its own name
            fn_name = (
                call.func.id
                if isinstance(call, ast.Call) and isinstance(call.func, ast.Name)
                else ""
            )
            case = _call_case(call, {fn_name})
        else:
            case = _call_case(call, names)
        if case is None:
            return None
        fn, args = case
        if fn_seen is not None and fn != fn_seen:
            return None
        fn_seen = fn
        ins.append(args)
        outs.append(value)
        tols.append(None if tol is None else float(tol))
    if fn_seen is None or not ins:
        return None
    target = entry if entry else fn_seen
    return target, ins, outs, tuple(tols)


# ---------------------------------------------------------------------------
# Harnesses (run inside the sandbox; they never see an expected output)

_CALL_HARNESS = r"""
import json, os, sys
def _canon(x, depth=0):
    if depth > 100:
        raise TypeError("return value nested too deeply")
    t = type(x)
    if x is None or t is bool or t is int or t is str:
        return x
    if t is float:
        return x if x == x and x not in (float("inf"), float("-inf")) else repr(x)
    if t is list or t is tuple:
        return [_canon(v, depth + 1) for v in x]
    if t is dict:
        pairs = ([_canon(k, depth + 1), _canon(v, depth + 1)] for k, v in x.items())
        return {"__dict__": sorted(pairs, key=repr)}
    if t is set or t is frozenset:
        return {"__set__": sorted((_canon(v, depth + 1) for v in x), key=repr)}
    raise TypeError("not plain data: " + t.__name__)
def _main():
    spec = json.loads(sys.stdin.buffer.read())
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    def emit(obj):
        out.write(json.dumps(obj) + "\n")
        out.flush()
    ns = {"__name__": "__solution__", "__builtins__": __builtins__}
    try:
        exec(compile(open("solution.py").read(), "solution.py", "exec"), ns)
    except MemoryError:
        emit({"load": "memory"})
        os._exit(0)
    except SyntaxError as e:
        emit({"load": "compile", "detail": str(e)[:200]})
        os._exit(0)
    except BaseException as e:
        emit({"load": "error", "detail": type(e).__name__})
        os._exit(0)
    name = spec["fn"]
    fn = ns.get(name)
    if fn is None and isinstance(ns.get("Solution"), type):
        fn = getattr(ns["Solution"](), name, None)
    if not callable(fn):
        emit({"load": "error", "detail": "no function " + name})
        os._exit(0)
    emit({"load": "ok"})
    for args in spec["cases"]:
        try:
            r = fn(*args) if type(args) is list else fn(args)
            emit({"ok": _canon(r)})
        except MemoryError:
            emit({"error": "memory"})
        except BaseException as e:
            emit({"error": type(e).__name__})
    os._exit(0)
_main()
"""

_INPROC_HARNESS = r"""
import builtins, os, sys, threading, types, functools
_SNAP = dict(builtins.__dict__)
_ASSERTION, _MEMORY, _SYNTAX, _BASE = AssertionError, MemoryError, SyntaxError, BaseException
def _reset(ns):
    builtins.__dict__.update(_SNAP)
    # Undo what the program may have done to the machinery the asserts rely on.
    sys.settrace(None)
    sys.setprofile(None)
    threading.settrace(None)
    threading.setprofile(None)
    b = ns.get("__builtins__")
    if type(b) is not dict:
        b = ns["__builtins__"] = {}
    b.clear()
    b.update(_SNAP)
def _plain(x, depth=0):
    t = type(x)
    if x is None or t in (bool, int, float, str, bytes, complex):
        return
    if depth > 100:
        raise TypeError("return value nested too deeply")
    if t in (list, tuple, set, frozenset):
        for v in x:
            _plain(v, depth + 1)
        return
    if t is dict:
        for k, v in x.items():
            _plain(k, depth + 1)
            _plain(v, depth + 1)
        return
    raise TypeError("not plain data: " + t.__name__)
def _guard(f):
    @functools.wraps(f)
    def g(*a, **k):
        try:
            r = f(*a, **k)
        finally:
            _reset(_NS)
        _plain(r)
        return r
    return g
def _main():
    token = sys.stdin.readline().strip()
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    ns = {"__name__": "__solution__", "__builtins__": __builtins__}
    tests = compile(open("tests.py").read(), "tests.py", "exec")
    try:
        exec(compile(open("solution.py").read(), "solution.py", "exec"), ns)
    except _SYNTAX:
        os._exit(3)
    except _MEMORY:
        os._exit(4)
    except _BASE:
        os._exit(6)
    global _NS
    _NS = ns
    _reset(ns)
    for k, v in list(ns.items()):
        if type(v) is types.FunctionType:
            ns[k] = _guard(v)
    try:
        exec(tests, ns)
    except _ASSERTION:
        os._exit(5)
    except _MEMORY:
        os._exit(4)
    out.write(token + "\n")
    out.flush()
    os._exit(0)
_main()
"""

_EXIT_CODES = {3: "compile_error", 4: "memory_limit", 5: "wrong_answer", 6: "runtime_error"}


# ---------------------------------------------------------------------------
# Comparison (outside the sandbox)


def _lines(text: str) -> list[str]:
    lines = [ln.rstrip() for ln in text.replace("\r\n", "\n").split("\n")]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def _num(tok: str) -> float | None:
    try:
        v = float(tok)
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def stdout_matches(got: str, expected: str, float_tolerance: float | None = None) -> bool:
    """The stdout rule of the module docstring."""
    a, b = _lines(got), _lines(expected)
    if a == b:
        return True
    if float_tolerance is None or len(a) != len(b):
        return False
    for la, lb in zip(a, b, strict=True):
        ta, tb = la.split(), lb.split()
        if len(ta) != len(tb):
            return False
        for x, y in zip(ta, tb, strict=True):
            if x == y:
                continue
            fx, fy = _num(x), _num(y)
            if (
                fx is None
                or fy is None
                or not math.isclose(fx, fy, rel_tol=float_tolerance, abs_tol=float_tolerance)
            ):
                return False
    return True


def _canon(x: Any, depth: int = 0) -> Any:
    """The harness's canonical form, applied to an expected value."""
    if depth > 100:
        raise InvalidInputError("expected value nested too deeply")
    if x is None or isinstance(x, (bool, int, str)):
        return x
    if isinstance(x, float):
        return x if math.isfinite(x) else repr(x)
    if isinstance(x, (list, tuple)):
        return [_canon(v, depth + 1) for v in x]
    if isinstance(x, dict):
        if set(x) in ({"__dict__"}, {"__set__"}):
            return x
        return {
            "__dict__": sorted(
                ([_canon(k, depth + 1), _canon(v, depth + 1)] for k, v in x.items()), key=repr
            )
        }
    if isinstance(x, (set, frozenset)):
        return {"__set__": sorted((_canon(v, depth + 1) for v in x), key=repr)}
    return repr(x)


def _close(a: Any, b: Any, tol: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a == b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_close(x, y, tol) for x, y in zip(a, b, strict=True))
    return a == b


def _value_matches(got: Any, expected: Any, tol: float | None) -> bool:
    exp = _canon(expected)
    same = (lambda a, b: _close(a, b, tol)) if tol is not None else (lambda a, b: a == b)
    if same(got, exp):
        return True
    # APPS/TACO wrap a single return value in a list.
    return isinstance(exp, list) and len(exp) == 1 and same(got, exp[0])


# ---------------------------------------------------------------------------
# Running


@dataclass(frozen=True)
class _Plan:
    tests: _Tests
    jobs: list[sandbox.Job]
    token: str = ""
    error: CodeVerdict | None = None


def _python_job(code: str, harness: str | None, stdin: bytes, tests_code: str = "") -> sandbox.Job:
    exe = sandbox.python_executable()
    files = [("solution.py", code.encode("utf-8", "surrogatepass"), False)]
    if harness is not None:
        files.append(("main.py", harness.encode(), False))
    if tests_code:
        files.append(("tests.py", tests_code.encode("utf-8", "surrogatepass"), False))
    script = "main.py" if harness is not None else "solution.py"
    return sandbox.Job(argv=[exe, "-S", "-B", script], stdin=stdin, files=files)


def _plan(code: str | None, tests: _Tests, language: str) -> _Plan:
    if code is None:
        n = max(len(tests.inputs), 1)
        return _Plan(tests, [], error=CodeVerdict(0, n, "no_code", f"no ```{language} block"))
    if language != "python":
        if tests.mode != "stdio":
            raise InvalidInputError(
                f"language={language!r} runs stdin/stdout tests only (got {tests.mode} tests)"
            )
        return _Plan(tests, [_compile_job(code, language)])
    if tests.mode == "stdio":
        jobs = [_python_job(code, None, _as_text(i).encode()) for i in tests.inputs]
        return _Plan(tests, jobs)
    if tests.mode == "call":
        spec = json.dumps({"fn": tests.fn_name, "cases": tests.inputs}).encode()
        return _Plan(tests, [_python_job(code, _CALL_HARNESS, spec)])
    token = secrets.token_hex(16)
    return _Plan(
        tests,
        [_python_job(code, _INPROC_HARNESS, (token + "\n").encode(), tests.code)],
        token=token,
    )


def _failure(out: sandbox.RunOutcome) -> tuple[str, str] | None:
    """The reason a run failed by itself (a limit, a signal, a crash), or None."""
    e = out.ending
    if e == "cpu_time" or e == "wall_time":
        return "time_limit", e
    if e == "output_limit":
        return "output_limit", ""
    if e == "forbidden":
        return "forbidden_call", ""
    if e == "setup_error":
        return "sandbox_error", out.message
    err = bytes(out.stderr[-4096:]).decode("utf-8", "replace")
    if "MemoryError" in err or "bad_alloc" in err:
        return "memory_limit", ""
    if e == "signaled":
        return "runtime_error", f"signal {out.signal}"
    if out.exit_code != 0:
        tail = err.strip().splitlines()[-1:] if err.strip() else [f"exit code {out.exit_code}"]
        return "runtime_error", tail[0][:200]
    return None


def _judge(plan: _Plan, outs: list[sandbox.RunOutcome]) -> CodeVerdict:
    t = plan.tests
    if t.mode == "stdio":
        passed, first = 0, None
        for out, exp in zip(outs, t.outputs, strict=True):
            fail = _failure(out)
            if fail is None and not stdout_matches(
                bytes(out.stdout).decode("utf-8", "replace"), _as_text(exp), t.float_tolerance
            ):
                fail = ("wrong_answer", "")
            if fail is None:
                passed += 1
            elif first is None:
                first = fail
        return CodeVerdict(
            passed, len(t.outputs), first[0] if first else None, first[1] if first else ""
        )
    out = outs[0]
    if t.mode == "inproc":
        if out.ending == "exited" and out.exit_code in _EXIT_CODES:
            return CodeVerdict(0, 1, _EXIT_CODES[out.exit_code], "")
        fail = _failure(out)
        if fail is not None:
            return CodeVerdict(0, 1, *fail)
        if _lines(bytes(out.stdout).decode("utf-8", "replace"))[-1:] == [plan.token]:
            return CodeVerdict(1, 1, None)
        return CodeVerdict(0, 1, "runtime_error", "exited before the tests finished")
    # function call: one line per case after the load line
    lines = bytes(out.stdout).decode("utf-8", "replace").split("\n")
    records: list[Any] = []
    for ln in lines:
        if not ln:
            continue
        try:
            records.append(json.loads(ln))
        except ValueError:
            records.append(None)
    n = len(t.outputs)
    head = records[0] if records else None
    if not isinstance(head, dict) or "load" not in head:
        fail = _failure(out) or ("runtime_error", "exited before the tests")
        return CodeVerdict(0, n, *fail)
    if head["load"] != "ok":
        reason = {"memory": "memory_limit", "compile": "compile_error"}.get(
            head["load"], "runtime_error"
        )
        return CodeVerdict(0, n, reason, str(head.get("detail", ""))[:200])
    passed, first = 0, None
    results = records[1 : 1 + n]
    for i, exp in enumerate(t.outputs):
        rec = results[i] if i < len(results) else None
        tol = (
            t.tolerances[i]
            if i < len(t.tolerances) and t.tolerances[i] is not None
            else t.float_tolerance
        )
        if isinstance(rec, dict) and "ok" in rec and len(rec) == 1:
            fail = None if _value_matches(rec["ok"], exp, tol) else ("wrong_answer", f"case {i}")
        elif isinstance(rec, dict) and "error" in rec:
            fail = (
                ("memory_limit", "")
                if rec["error"] == "memory"
                else ("runtime_error", str(rec["error"])[:100])
            )
        else:
            fail = _failure(out) or ("runtime_error", "exited before the tests finished")
        if fail is None:
            passed += 1
        elif first is None:
            first = fail
    return CodeVerdict(passed, n, first[0] if first else None, first[1] if first else "")


def verify_code_batch(
    completions: Sequence[str],
    tests: Sequence[Any],
    *,
    language: str = "python",
    limits: sandbox.Limits | None = None,
    workers: int | None = None,
    float_tolerance: float | None = None,
    fallback: bool = False,
    extract: bool = True,
) -> list[CodeVerdict]:
    """:func:`verify_code` for many completions: every run of the batch goes to
    the sandbox in one call, ``workers`` at a time, with the GIL released."""
    if isinstance(completions, str):
        raise InvalidInputError("completions is a str; expected a list of str")
    if len(completions) != len(tests):
        raise InvalidInputError(
            f"completions has {len(completions)} entries but tests has {len(tests)}"
        )
    plans = []
    for c, t in zip(completions, tests, strict=True):
        if not isinstance(c, str):
            raise InvalidInputError(f"a completion is a {type(c).__name__}; expected str")
        code = extract_code(c, language) if extract else c
        plans.append(_plan(code, parse_tests(t, float_tolerance), language))
    if language != "python":
        plans = _compiled_runs(plans, fallback, workers)
    jobs = [j for p in plans for j in p.jobs]
    outs = sandbox.run(jobs, limits, workers, fallback=fallback) if jobs else []
    verdicts, k = [], 0
    for p in plans:
        if p.error is not None:
            verdicts.append(p.error)
            continue
        verdicts.append(_judge(p, outs[k : k + len(p.jobs)]))
        k += len(p.jobs)
    return verdicts


def verify_code(
    completion: str,
    tests: Any,
    *,
    language: str = "python",
    limits: sandbox.Limits | None = None,
    float_tolerance: float | None = None,
    fallback: bool = False,
    extract: bool = True,
) -> CodeVerdict:
    """Run the code of ``completion`` against ``tests`` in the sandbox.

    ``tests`` is one of the formats of :mod:`grpo_fast.code` (a dict or its
    JSON). ``limits`` bounds every run (CPU seconds per run: a stdin/stdout
    case, or all function-call cases of the completion together).
    ``extract=False`` takes ``completion`` as the code itself.
    """
    return verify_code_batch(
        [completion],
        [tests],
        language=language,
        limits=limits,
        float_tolerance=float_tolerance,
        fallback=fallback,
        extract=extract,
    )[0]


# The compiler runs in the sandbox too (allowed to write its output), with room of its own.
COMPILE_LIMITS = sandbox.Limits(
    cpu_seconds=20.0, memory_bytes=2 << 30, processes=32, file_size_bytes=64 << 20
)
_COMPILERS = {
    "c": ("gcc", "main.c", ["-O2", "-std=gnu11", "-pipe"], ["-lm"]),
    "cpp": ("g++", "main.cpp", ["-O2", "-std=gnu++17", "-pipe"], []),
}


def _compile_job(code: str, language: str) -> sandbox.Job:
    name, src, flags, libs = _COMPILERS[language]
    exe = shutil.which(name, path="/usr/local/bin:/usr/bin:/bin")
    if exe is None:
        raise InvalidInputError(f"language={language!r} needs {name}, which is not installed")
    argv = [exe, *flags, "-o", "prog", src, *libs]
    files = [(src, code.encode("utf-8", "surrogatepass"), False)]
    return sandbox.Job(argv=argv, files=files, allow_writes=True, collect=["prog"])


def _compiled_runs(plans: list[_Plan], fallback: bool, workers: int | None) -> list[_Plan]:
    """Compile every compiled-language plan (one sandbox call), then replace
    its job by one run of the binary per test case (or a compile error)."""
    todo = [i for i, p in enumerate(plans) if p.jobs and p.jobs[0].collect == ["prog"]]
    if not todo:
        return plans
    outs = sandbox.run([plans[i].jobs[0] for i in todo], COMPILE_LIMITS, workers, fallback=fallback)
    plans = list(plans)
    for i, out in zip(todo, outs, strict=True):
        p = plans[i]
        binary = out.collected[0] if out.collected else None
        if out.ending != "exited" or out.exit_code != 0 or binary is None:
            err = bytes(out.stderr).decode("utf-8", "replace").strip().splitlines()
            detail = err[0][:200] if err else out.ending
            n = len(p.tests.inputs)
            plans[i] = _Plan(p.tests, [], error=CodeVerdict(0, n, "compile_error", detail))
            continue
        files = [("prog", bytes(binary), True)]
        jobs = [
            sandbox.Job(argv=["./prog"], stdin=_as_text(x).encode(), files=files)
            for x in p.tests.inputs
        ]
        plans[i] = _Plan(p.tests, jobs)
    return plans
