"""No dead code in forensics/: vulture finds nothing unused in the package that the package, the tests, the
tools, the dump generators and the benchmarks do not use, except what tools/dead_code_whitelist.py names with
the reason it is alive; and the whitelist names nothing vulture would not report (it shrinks with the code).
(The test extra installs vulture; without it the check is skipped.)"""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO

WHITELIST = REPO / "tools" / "dead_code_whitelist.py"


def test_forensics_has_no_dead_code():
    vulture = pytest.importorskip("vulture")
    finder = vulture.Vulture(verbose=False)
    finder.scavenge([str(REPO / d) for d in ("forensics", "tests", "tools", "dumps", "benchmarks")],
                    exclude=[WHITELIST.name])
    unused = [item for item in finder.get_unused_code(min_confidence=60)
              if str(item.filename).startswith(str(REPO / "forensics"))]
    listed = {node.id for node in ast.walk(ast.parse(WHITELIST.read_text(encoding="utf-8")))
              if isinstance(node, ast.Name)}
    dead = [item.get_report(add_size=False) for item in unused if item.name not in listed]
    assert dead == [], "dead code (remove it, or whitelist it with the reason it is alive):\n" + "\n".join(dead)
    assert listed <= {item.name for item in unused}, sorted(listed - {item.name for item in unused})
