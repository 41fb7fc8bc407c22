"""No renderer chooses a verdict (issue 33): every judging command's real report, given a planted judgement whose
verdict contradicts its data (dataclasses.replace), shows the planted verdict and message on every face — the
terminal, to_dict (the --json), the notebook's _repr_html_, and the --html / --junit documents of the commands
that write them — and nowhere its own. A renderer that re-derived the verdict from the result (`if stats.differ`,
`"truncated" in note`) would print the real one and fail here. The reports are those of the command table's cases
(tests/reports/test_one_verdict_line.py), captured where the CLI shows them."""

from __future__ import annotations

import dataclasses
import html
import io
import json
import re
import sys
import xml.etree.ElementTree as ET

import pytest

from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.reports.commands import COMMANDS
from tests.conftest import run_cli
from tests.reports.test_one_verdict_line import CASES, COMPOSITE, VERDICT_LINE

PLANTED_MESSAGE = "planted by the test: 7 of 3 things (no renderer words this)"


def planted_for(real: Judgement) -> Judgement:
    """A judgement that contradicts the real one: the other exit code, a verdict the command never says."""
    verdict = Verdict.FOREIGN if real.passed else Verdict.IDENTICAL
    return Judgement(verdict, PLANTED_MESSAGE, (Reason("planted", "a reason no result has"),))


def captured_report(argv, monkeypatch):
    """The report the CLI shows for `argv` (every forensics.cli module's `show` is wrapped to keep it); for a
    command that prints its report another way (fingerprint's driver lines), the last report made."""
    import importlib

    for command in COMMANDS:  # its group modules import show from forensics.cli
        importlib.import_module(command.cli_module)
    from forensics.reports.base import Report

    kept, made = [], []
    made_one = Report.__post_init__

    def making(self):
        made_one(self)
        made.append(self)

    monkeypatch.setattr(Report, "__post_init__", making)
    for name, module in list(sys.modules.items()):
        if name == "forensics.cli" or name.startswith("forensics.cli."):
            shown = getattr(module, "show", None)
            if shown is not None and getattr(shown, "__name__", "") == "show":
                def keep(report, args, out, _shown=shown):
                    kept.append(report)
                    return _shown(report, args, out)
                monkeypatch.setattr(module, "show", keep)
    result = run_cli(*argv)
    assert len(kept) <= 1 and made, (kept, made, result.err)
    shown = kept[0] if kept else made[-1]
    assert result.code == shown.exit_code, result.err  # the exit is the report's, as it was judged
    return shown


def terminal_lines(report) -> list[str]:
    from forensics.render.console import Output

    out = io.StringIO()
    Output(out, io.StringIO(), width=100, color=False).print(*report.renderables())
    return [line.rstrip() for line in out.getvalue().splitlines()]


def _text(page: str) -> str:
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", page)).split())


def _judging_cases():
    for command in COMMANDS:
        if command.name in COMPOSITE:
            continue
        for case in CASES.get(command.name, {}):
            yield pytest.param(command, case, id=f"{command.name}-{case}")


def file_faces(report, judgement) -> dict:
    """The --html and --junit documents of the report's result, made with `judgement` (the report's)."""
    kind = type(report).__name__
    if kind == "CompareReport":
        from forensics.render.junit import junit_xml
        from forensics.render.runs import html_report

        return {"html": html_report(report.result, judgement=judgement),
                "junit": junit_xml(report.result, judgement=judgement)}
    if kind == "BatchReport":
        from forensics.render.junit import junit_batch
        from forensics.render.runs import html_batch

        return {"html": html_batch(report.result, judgement=judgement),
                "junit": junit_batch(report.result, judgement=judgement)}
    if kind == "RepeatReport":
        from forensics.render.repeat import html_repeat, junit_repeat

        return {"html": html_repeat(report.result, judgement), "junit": junit_repeat(report.result, judgement)}
    return {}


def test_the_commands_that_write_html_or_junit_have_their_faces_here():
    writers = {c.name for c in COMMANDS if {dest for dest, _ in c.outputs} & {"html", "junit"}}
    assert writers == {"compare", "repeat"}  # file_faces knows their reports (compare's pair and batch, repeat)


@pytest.mark.parametrize("command, case", list(_judging_cases()))
def test_every_face_shows_a_planted_judgement(tmp_path, monkeypatch, command, case):
    report = captured_report(CASES[command.name][case](tmp_path), monkeypatch)
    if report.judgement is None:
        assert report.verdict is None, f"{command.name}: a verdict without a judgement"
        assert not [line for line in terminal_lines(report) if VERDICT_LINE.match(line)]
        return
    real = report.judgement
    planted = planted_for(real)
    fake = dataclasses.replace(report, judgement=planted, verdict=None)
    assert fake.verdict is planted.verdict and fake.exit_code == planted.exit_code != real.exit_code

    # the terminal: exactly one verdict line, the planted one (its message may fold at 100 columns)
    lines = [line for line in terminal_lines(fake) if VERDICT_LINE.match(line)]
    assert len(lines) == 1 and planted.line.startswith(lines[0]), lines
    # --json
    doc = json.loads(json.dumps(fake.to_dict(), default=str))
    assert (doc["verdict"], doc["message"], doc["exit_code"]) == (planted.verdict, PLANTED_MESSAGE, planted.exit_code)
    assert doc["reasons"] == [{"code": "planted", "text": "a reason no result has"}]
    # the notebook
    page = _text(fake._repr_html_())
    assert planted.line in page and real.line not in page, page[:400]
    # the --html and --junit documents
    for face, document in file_faces(fake, fake.judgement).items():
        if face == "html":
            div = re.search(r'<div class="verdict ([a-z]+)" id="verdict">(.*?)</div>', document, re.S)
            assert _text(div.group(2)) == planted.line
            assert div.group(1) == ("ok" if planted.passed else "bad")
        else:
            suite = ET.fromstring(document).find("testsuite")
            props = {p.get("name"): p.get("value") for p in suite.find("properties")}
            assert (props["verdict"], props["message"]) == (planted.verdict, PLANTED_MESSAGE)
            said = suite.find("system-out")
            assert said is None or said.text == planted.line


def test_a_renderer_that_derives_its_own_verdict_is_caught(tmp_path, monkeypatch):
    """The check above fails for a renderer that words the result's verdict instead of the report's."""
    from forensics.render import runs
    from forensics.render.line import judgement_line

    report = captured_report(CASES["compare"]["differ"](tmp_path), monkeypatch)
    shipped = runs.render_compare

    def deciding(result, judgement=None, **kw):
        out = shipped(result, judgement, **kw)
        return [judgement_line(result.judgement) if VERDICT_LINE.match(str(getattr(r, "plain", ""))) else r
                for r in out]

    monkeypatch.setattr(runs, "render_compare", deciding)
    fake = dataclasses.replace(report, judgement=planted_for(report.judgement), verdict=None)
    lines = [line for line in terminal_lines(fake) if VERDICT_LINE.match(line)]
    assert lines and not fake.judgement.line.startswith(lines[0])
