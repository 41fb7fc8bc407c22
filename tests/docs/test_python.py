"""Every ```python block of the README and docs/ runs as written from the repository root, and where a line
shows its value in a comment (`geometry.where(203)   # 'L0 r3 c7 b2'`), the expression has that value."""

from __future__ import annotations

import ast
import re

import pytest

from forensics.core.errors import DependencyError
from tests.conftest import REPO
from tests.docs.test_readme import PAGES

BLOCKS = [(page, number, block) for page in PAGES
          for number, block in ((m.start(), m.group(1)) for m in
                                re.finditer(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S))]


def _shown_value(source_line: str):
    """The literal a line's comment shows (`# 203`, `# 'L0 r3 c7 b2'`), or None when it shows prose."""
    if "#" not in source_line:
        return None
    comment = source_line.split("#", 1)[1].strip()
    try:
        return ("value", ast.literal_eval(comment))
    except (ValueError, SyntaxError):
        return None


def test_there_are_python_blocks():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("page,at,block", BLOCKS,
                         ids=[f"{p.relative_to(REPO)}:{a}" for p, a, _ in BLOCKS])
def test_python_block_runs_as_written(page, at, block, tmp_path, monkeypatch):
    monkeypatch.chdir(REPO)   # the pages' paths are relative to the repository root; nothing here writes
    lines = block.splitlines()
    namespace: dict = {}
    for statement in ast.parse(block).body:
        code = compile(ast.Module([statement], []), f"{page.name}:{at}", "exec")
        try:
            if isinstance(statement, ast.Expr):
                value = eval(compile(ast.Expression(statement.value), page.name, "eval"), namespace)
                shown = _shown_value(lines[statement.lineno - 1])
                if shown is not None:
                    assert value == shown[1], f"{page.name}: {lines[statement.lineno - 1].strip()} gives {value!r}"
            else:
                exec(code, namespace)
        except (DependencyError, ImportError) as exc:
            pytest.skip(f"needs an optional dependency: {exc}")
