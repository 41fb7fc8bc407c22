"""Facts out, sentences at the edge (issue 33 item 5): every module of forensics/render/ prints what the library
judged and worded, read from a result's fields. A small AST rule over each module:

- it decides nothing: it calls no judge_* / overall / combined, writes no verdict line of its own (line.verdict
  outside line.py), picks no verdict with a condition (`Verdict.MATCH if ... else Verdict.DIFFER`), and compares
  no verdict (`judgement.verdict is ...`, `row["verdict"] != Verdict.MATCH`) except where ALLOWED says why;
- it parses no prose: no .split / .startswith / .endswith / .partition / .find / .index / `in` / a regex over
  a sentence (an attribute or key named message, summary, note, text, evidence, sentence, hint, reason, why,
  or `str(...)` of an object, its sentence) except where ALLOWED says why; the reports (forensics/reports/) read
  no sentence either.

A planted module shows each rule fails; a shipped renderer with one planted line fails too."""

from __future__ import annotations

import ast

import pytest

from forensics.core.verdict import Verdict
from tests.conftest import REPO

RENDER = REPO / "forensics" / "render"
MODULES = sorted(p.name for p in RENDER.glob("*.py"))

PROSE = {"message", "summary", "note", "text", "evidence", "sentence", "hint", "reason", "why"}
PARSING = {"split", "rsplit", "partition", "rpartition", "startswith", "endswith", "find", "rfind", "index",
           "rindex", "count"}
DECIDING = {"overall", "combined"}
VERDICT_WORDS = {v.value for v in Verdict}

# (module, function, what) -> why it reads a fact and decides nothing. Keep it short: each entry is a debt or a
# per-row verdict the library already judged, read to lay the row out.
ALLOWED = {
    ("junit.py", "junit_batch", "compares a verdict"):
        "a pair's own verdict (judge_pair's, in the batch row) picks its JUnit element: error, failure or pass",
    ("runs.py", "_status_class", "compares a verdict"):
        "a stage's own status (judge_row's) picks its CSS class; WITHIN TOLERANCE's class is one word",
    ("runs.py", "_html_pairs", "compares a verdict"):
        "lists the pairs whose own verdict (judge_pair's, in the batch row) is not MATCH",
    ("line.py", "judgement_line", "writes a verdict line"):
        "judgement_line is the one place a verdict line is written, from the judgement it is given",
}


def _is_verdict(node) -> bool:
    """A verdict value: Verdict.X, a verdict word, `x.verdict`, `x["verdict"]`, or Verdict(...)."""
    if isinstance(node, ast.Attribute):
        return node.attr == "verdict" or (isinstance(node.value, ast.Name) and node.value.id == "Verdict")
    if isinstance(node, ast.Constant):
        return node.value in VERDICT_WORDS
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "verdict"
    if isinstance(node, ast.Call):
        return isinstance(node.func, ast.Name) and node.func.id == "Verdict"
    return False


def _is_verdict_member(node) -> bool:
    return (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "Verdict") \
        or (isinstance(node, ast.Constant) and node.value in VERDICT_WORDS)


def _is_prose(node) -> bool:
    """A sentence: an attribute or key named as prose, or `str(x)` (an object's sentence, an error's message)."""
    if isinstance(node, ast.Attribute):
        return node.attr in PROSE
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value in PROSE
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get":
        return bool(node.args) and isinstance(node.args[0], ast.Constant) and node.args[0].value in PROSE
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str":
        return len(node.args) == 1 and not isinstance(node.args[0], ast.Constant)
    return False


def _called(node) -> str | None:
    func = node.func
    return func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None


def findings(source: str, module: str = "planted.py", allowed=None) -> list[str]:
    """Every place `source` decides a verdict or parses prose, as `function: what (line N)`, less `allowed`
    (ALLOWED when None)."""
    allowed = ALLOWED if allowed is None else allowed
    found = []

    def visit(node, function):
        for child in ast.iter_child_nodes(node):
            visit(child, child.name if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)) else function)
        what = None
        if isinstance(node, ast.Call):
            name = _called(node)
            if name and (name.startswith("judge_") or name in DECIDING):
                what = f"calls {name}"
            elif isinstance(node.func, ast.Name) and name == "verdict":
                what = "writes a verdict line"
            elif isinstance(node.func, ast.Attribute) and name in PARSING and _is_prose(node.func.value):
                what = f"parses prose with .{name}"
            elif isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name) \
                    and node.func.value.id == "re" and any(_is_prose(a) for a in node.args[1:2]):
                what = f"parses prose with re.{name}"
        elif isinstance(node, ast.IfExp) and (_is_verdict_member(node.body) or _is_verdict_member(node.orelse)):
            what = "chooses a verdict"
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(map(_is_prose, sides[1:])):
                what = "parses prose with in"
            elif any(map(_is_verdict, sides)):
                what = "compares a verdict"
        if what and (module, function, what) not in allowed:
            found.append(f"{function}: {what} (line {node.lineno})")

    visit(ast.parse(source), "<module>")
    return sorted(found)


@pytest.mark.parametrize("module", MODULES)
def test_no_renderer_decides_or_parses_prose(module):
    assert findings((RENDER / module).read_text(encoding="utf-8"), module) == []


@pytest.mark.parametrize("module", sorted(p.name for p in (REPO / "forensics" / "reports").glob("*.py")))
def test_no_report_parses_prose(module):
    """The reports call the judges (a report carries its result's judgement) but read no sentence either."""
    source = (REPO / "forensics" / "reports" / module).read_text(encoding="utf-8")
    assert [f for f in findings(source, module) if "parses prose" in f] == []


def test_every_allowed_exception_is_still_needed():
    """An entry of ALLOWED that no module needs any more goes (the list only shrinks)."""
    needed = {(module, function, what) for module in MODULES
              for function, what in _bare(findings((RENDER / module).read_text(encoding="utf-8"), module, {}))}
    assert set(ALLOWED) <= needed, set(ALLOWED) - needed


def _bare(found: list[str]) -> set[tuple[str, str]]:
    """(function, what) of each finding, without its line."""
    return {tuple(f.rsplit(" (line", 1)[0].split(": ", 1)) for f in found}


PLANTED = '''
from forensics.core.verdict import Verdict
from forensics.render.line import verdict


def headline(result, judgement):
    if judgement.verdict is Verdict.MATCH:
        return verdict(Verdict.MATCH, "same")
    return judge_diff(result).line


def css(row):
    return Verdict.MATCH if row.changed else Verdict.DIFFER


def badge(row):
    return "MATCH" if row["verdict"] == "MATCH" else overall(row)


def note_of(result, exc):
    if "truncated" in result.note or result.summary.startswith("the "):
        return str(exc).split(": ", 1)[-1]
    flags = result.tolerance_args.split(" --tolerance ")
    return re.search(r"(\\d+) bytes", result.message) or row.get("evidence").endswith(".") or flags
'''


def test_a_planted_renderer_is_caught_on_every_rule():
    found = findings(PLANTED)
    lines = [f.rsplit(" (line", 1)[0] for f in found]
    assert lines.count("headline: compares a verdict") == 1
    assert "headline: writes a verdict line" in lines and "headline: calls judge_diff" in lines
    assert "css: chooses a verdict" in lines
    assert {"badge: chooses a verdict", "badge: compares a verdict", "badge: calls overall"} <= set(lines)
    assert {"note_of: parses prose with in", "note_of: parses prose with .startswith",
            "note_of: parses prose with .split", "note_of: parses prose with re.search",
            "note_of: parses prose with .endswith"} <= set(lines)


@pytest.mark.parametrize("line", [
    "    return r.verdict == 'MATCH'",
    "    return 'truncated' in r.note",
    "    return str(r).split(': ', 1)[-1]",
    "    return r.message.startswith('the')",
    "    return Verdict.WITHIN if r.ok else Verdict.DIFFER",
])
def test_a_shipped_renderer_with_one_planted_line_fails(line):
    source = (RENDER / "runs.py").read_text(encoding="utf-8")
    assert findings(source, "runs.py") == []
    assert findings(source + f"\n\ndef late(r):\n{line}\n", "runs.py")
