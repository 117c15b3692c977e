"""The longest Python files and functions of the package, against the layout's limits.

    python scripts/sizes.py [--top N] [--files-limit 600] [--function-limit 80] [PATH ...]

Prints the N longest files (lines) and functions, then every file and function over
its limit. A function's length is its lines from ``def`` (or its first decorator) to
the end of its body, shown as ``all`` and as ``code``: the same without its
docstring (a public function's numpy-style docstring with examples is often longer
than its code). The function limit applies to ``code``. A method is named
``Class.method``, a nested function ``outer.<locals>.inner``; a nested function's
lines count in its outer function too. Exit status 0: this is a report, not a gate
(docs/design.md records the figures and which ones are over).
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "python" / "grpo_fast"


def _docstring_lines(node: ast.FunctionDef | ast.AsyncFunctionDef) -> int:
    first = node.body[0]
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        if isinstance(first.value.value, str):
            return first.end_lineno - first.lineno + 1
    return 0


def functions(path: Path) -> list[tuple[int, int, str, int]]:
    """(code lines, all lines, qualified name, first line) of every function and
    method in ``path``."""
    out: list[tuple[int, int, str, int]] = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno, *(d.lineno for d in child.decorator_list)])
                name = f"{prefix}{child.name}"
                lines = child.end_lineno - first + 1
                out.append((lines - _docstring_lines(child), lines, name, first))
                visit(child, f"{name}.<locals>.")
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.")
            else:
                visit(child, prefix)

    visit(ast.parse(path.read_text(), str(path)), "")
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("paths", nargs="*", type=Path, default=[PACKAGE])
    p.add_argument("--top", type=int, default=10)
    p.add_argument("--file-limit", type=int, default=600)
    p.add_argument("--function-limit", type=int, default=80)
    args = p.parse_args(argv)
    rel: dict[Path, Path] = {}
    for path in args.paths:
        base = path.resolve().parent
        for f in path.resolve().rglob("*.py") if path.is_dir() else [path.resolve()]:
            rel[f] = f.relative_to(base)
    files = sorted(rel)
    file_sizes = sorted(((len(f.read_text().splitlines()), f) for f in files), reverse=True)
    fn_sizes = sorted(
        (
            (code, n, f"{rel[f]}:{line} {name}")
            for f in files
            for code, n, name, line in functions(f)
        ),
        reverse=True,
    )
    print(f"longest files ({len(files)} files):")
    for n, f in file_sizes[: args.top]:
        print(f"  {n:5d}  {rel[f]}")
    print(f"longest functions ({len(fn_sizes)} functions; lines of code, all lines):")
    for code, n, where in fn_sizes[: args.top]:
        print(f"  {code:5d} {n:5d}  {where}")
    over_files = [(n, f) for n, f in file_sizes if n > args.file_limit]
    over_fns = [(code, n, w) for code, n, w in fn_sizes if code > args.function_limit]
    print(f"files over {args.file_limit} lines: {len(over_files)}")
    for n, f in over_files:
        print(f"  {n:5d}  {rel[f]}")
    print(f"functions over {args.function_limit} lines of code: {len(over_fns)}")
    for code, n, where in over_fns:
        print(f"  {code:5d} {n:5d}  {where}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
