"""Cyclomatic complexity of forensics' functions, measured with the ast module (as radon / mccabe count it):
1 + one per branch (if, elif, for, while, except, with, a conditional expression, each extra operand of
and / or, each comprehension's for and if, each match case). A nested function or class is measured on its own
and not added to the one around it.

    python tools/complexity.py [--min 21] [PATH ...]     (default: forensics/)

prints `complexity  path:line  function` for every function at or above --min, the largest first, and the
count on the last line."""

from __future__ import annotations

import argparse
import ast
import pathlib
import sys

THRESHOLD = 21
REPO = pathlib.Path(__file__).resolve().parent.parent

_BRANCHES = (ast.If, ast.For, ast.AsyncFor, ast.While, ast.ExceptHandler, ast.With, ast.AsyncWith, ast.IfExp,
             ast.match_case)
_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def complexity(function: ast.AST) -> int:
    """1 + the branches in `function`'s own body (nested functions and classes excluded)."""
    score = 1
    todo = list(ast.iter_child_nodes(function))
    while todo:
        node = todo.pop()
        if isinstance(node, _SCOPES):
            continue
        if isinstance(node, _BRANCHES):
            score += 1
        elif isinstance(node, ast.BoolOp):
            score += len(node.values) - 1
        elif isinstance(node, ast.comprehension):
            score += 1 + len(node.ifs)
        todo.extend(ast.iter_child_nodes(node))
    return score


def functions(path: pathlib.Path):
    """(qualified name, line, complexity) of every function and method in the file at `path`."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))

    def walk(node, prefix):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{child.name}"
                yield name, child.lineno, complexity(child)
                yield from walk(child, name + ".")
            elif isinstance(child, ast.ClassDef):
                yield from walk(child, f"{prefix}{child.name}.")
            else:
                yield from walk(child, prefix)

    yield from walk(tree, "")


def complex_functions(paths=None, minimum: int = THRESHOLD) -> list[tuple[int, str, int, str]]:
    """(complexity, file, line, function) at or above `minimum` under `paths` (default forensics/), the
    largest first."""
    roots = [pathlib.Path(p) for p in paths] if paths else [REPO / "forensics"]
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")) if root.is_dir() else [root]:
            shown = path.relative_to(REPO) if path.is_relative_to(REPO) else path
            for name, line, score in functions(path):
                if score >= minimum:
                    found.append((score, str(shown), line, name))
    return sorted(found, key=lambda f: (-f[0], f[1], f[2]))


def main(argv=None, stream=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--min", type=int, default=THRESHOLD)
    args = parser.parse_args(argv)
    stream = stream or sys.stdout
    found = complex_functions(args.paths, args.min)
    for score, path, line, name in found:
        print(f"{score:4d}  {path}:{line}  {name}", file=stream)
    print(f"{len(found)} functions at complexity >= {args.min}", file=stream)
    return 0


if __name__ == "__main__":
    sys.exit(main())
