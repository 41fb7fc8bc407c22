"""One judgement for a run pair (issue 33): the terminal, --json, --html, --junit, the notebook and the library
all print the same one `VERDICT | message` line, made by judge_compare; a renderer that chose its own verdict
would be caught; a file changed after capture is DIFFER on every face; JUnit stays well-formed whatever the
tensor names hold; --atol applies to one-dimensional float buffers as diff applies it (issue 35)."""

from __future__ import annotations

import html
import io
import json
import re
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from forensics.core.verdict import Verdict
from forensics.runs.compare import BOOKKEEPING_VERDICT, Bookkeeping, compare_runs, judge_row
from tests.conftest import run_cli
from tests.runs.driver_runs import f32, write_driver_run

WORDS = "|".join(re.escape(str(v)) for v in sorted(Verdict, key=lambda v: -len(str(v))))
LINE = re.compile(rf"^({WORDS}) \| ")


def _scores(seed=0):
    rng = np.random.default_rng(seed)
    scores = np.full((2034, 4), 0x80, np.uint8)
    scores[:, 0], scores[:, 1] = 0xFF, 0
    scores[rng.choice(2034, 5, replace=False), 1] = rng.integers(1, 255, 5)
    return scores


def _runs(tmp_path, change=None, *, pad=(2, 3)):
    """Two runs of one raw scores buffer (4-byte records, pad lanes 2 and 3 declared) and an input."""
    scores = _scores()
    other = scores.copy() if change is None else change(scores.copy())
    image = np.random.default_rng(1).integers(0, 256, (1, 8, 8, 3), dtype=np.uint8)
    meta = {"dtype": "uint8", "shape": [1, 2034, 2], "record_size": 4, "pad_lanes": list(pad)}
    a = write_driver_run(tmp_path / "a", "libedgetpu", [("input", "input", image, {"dtype": "uint8",
                                                                                   "shape": [1, 8, 8, 3]}),
                                                        ("raw", "convert_scores", scores, meta)])
    b = write_driver_run(tmp_path / "b", "ours", [("input", "input", image, {"dtype": "uint8", "shape": [1, 8, 8, 3]}),
                                                  ("raw", "convert_scores", other, meta)])
    return a, b


def _cases(tmp_path):
    def pads(s):
        s[:, 2:] = 0xCC
        return s

    def differs(s):
        s[700, 1] ^= 0x10
        return s

    def small(s):
        s[700, 1] = (int(s[700, 1]) + 1) % 256
        return s

    out = {"match": (_runs(tmp_path / "m"), ()), "pad lanes": (_runs(tmp_path / "p", pads), ()),
           "differ": (_runs(tmp_path / "d", differs), ()),
           "within": (_runs(tmp_path / "w", small), ("--tolerance", "1")),
           "changed": (_runs(tmp_path / "c"), ())}
    changed = out["changed"][0][1] / "raw" / "convert_scores.bin"
    data = bytearray(changed.read_bytes())
    data[10] ^= 1  # edited after capture: the manifest's CRC no longer holds
    changed.write_bytes(bytes(data))
    return out


def faces(tmp_path, a, b, extra=()) -> dict:
    """The verdict line each face prints for one pair."""
    out = {}
    term = run_cli("compare", a, b, *extra, width=2000)
    lines = [line for line in term.out.splitlines() if LINE.match(line)]
    assert len(lines) == 1, term.out  # exactly one verdict line
    out["terminal"] = lines[0].rstrip()
    doc = json.loads(run_cli("compare", a, b, *extra, "--json").out)
    out["json"] = f"{doc['verdict']} | {doc['message']}"
    page, xml = tmp_path / "r.html", tmp_path / "r.xml"
    run_cli("compare", a, b, *extra, "--html", page, "--junit", xml)
    div = re.search(r'<div class="verdict [a-z]+" id="verdict">(.*?)</div>', page.read_text(encoding="utf-8"), re.S)
    out["html"] = html.unescape(re.sub(r"<[^>]+>", "", div.group(1)))
    suite = ET.parse(xml).getroot().find("testsuite")
    props = {p.get("name"): p.get("value") for p in suite.find("properties")}
    out["junit"] = f"{props['verdict']} | {props['message']}"
    out["junit system-out"] = suite.find("system-out").text
    from forensics import reports

    report = reports.compare(str(a), str(b), tolerance=[int(extra[1])] if extra else None)
    from rich.console import Console

    console = Console(file=io.StringIO(), width=2000, color_system=None, record=True)
    console.print(report)
    notebook = [line.rstrip() for line in console.export_text().splitlines() if LINE.match(line)]
    assert len(notebook) == 1
    out["notebook"] = notebook[0]
    out["library"] = report.result.judgement.line
    page = " ".join(html.unescape(re.sub(r"<[^>]+>", "", report._repr_html_())).split())  # wrapped at 120
    out["notebook html"] = out["library"] if " ".join(out["library"].split()) in page else page
    out["exit"] = f"{term.code} {report.exit_code} {Verdict(doc['verdict']).exit_code} {doc['exit_code']}"
    return out


def _one(lines: dict) -> str:
    exits = lines.pop("exit").split()
    assert len(set(exits)) == 1, exits
    assert len(set(lines.values())) == 1, lines
    return next(iter(lines.values()))


def test_every_face_prints_the_one_judgement(tmp_path):
    expected = {"match": "MATCH", "pad lanes": "MATCH", "differ": "DIFFER", "within": "WITHIN TOLERANCE",
                "changed": "DIFFER"}
    for name, ((a, b), extra) in _cases(tmp_path).items():
        line = _one(faces(tmp_path, a, b, extra))
        assert line.startswith(expected[name] + " | "), (name, line)
    # issue 33's two wrong answers: a file changed after capture is DIFFER everywhere (it was WITHIN TOLERANCE
    # on the terminal and --html), and differing declared pad lanes exit 0 as diff and diagnose do
    (a, b), _ = _cases(tmp_path / "again")["changed"]
    doc = json.loads(run_cli("compare", a, b, "--json").out)
    assert doc["exit_code"] == 1 and "changed_after_capture" in [r["code"] for r in doc["reasons"]]
    assert "changed after capture" in doc["message"]
    (a, b), _ = _cases(tmp_path / "pads")["pad lanes"]
    for command in ("diff", "diagnose", "compare"):
        first, second = (a / "raw/convert_scores.bin", b / "raw/convert_scores.bin") if command != "compare" else (a, b)
        flags = ("--record", "4", "--pad", "2,3") if command != "compare" else ()
        assert run_cli(command, first, second, *flags).code == 0, command


def test_a_renderer_that_chooses_its_own_verdict_is_caught(tmp_path, monkeypatch):
    (a, b), _ = _cases(tmp_path)["changed"]
    _one(faces(tmp_path, a, b))  # as shipped: one line

    import forensics.render.runs as render
    from forensics.render.line import verdict

    shipped = render.render_compare

    def choosing(result, **kw):  # the old renderer's way: no divergent row, so "the buffers pass"
        out = shipped(result, **kw)
        chosen = Verdict.WITHIN if result.first_divergent is None else Verdict.DIFFER
        return [verdict(chosen, "every common buffer matches or differs within tolerance") if LINE.match(str(x))
                else x for x in out]

    monkeypatch.setattr(render, "render_compare", choosing)
    with pytest.raises(AssertionError):
        _one(faces(tmp_path, a, b))


def test_bookkeeping_maps_to_verdicts_in_one_table(tmp_path):
    assert set(BOOKKEEPING_VERDICT) == set(Bookkeeping)
    (a, b), _ = _cases(tmp_path)["changed"]
    result = compare_runs(a, b)
    row = next(r for r in result.rows if r.stage == "raw")
    assert row.bookkeeping is Bookkeeping.CHANGED and row.changed == ("B",)
    assert judge_row(row).verdict is Verdict.DIFFER and not row.passed
    only = write_driver_run(tmp_path / "only", "ours", [("input", "input", np.zeros((1, 8, 8, 3), np.uint8),
                                                         {"dtype": "uint8", "shape": [1, 8, 8, 3]})])
    rows = compare_runs(a, only).rows
    lone = next(r for r in rows if r.stage == "raw")
    assert lone.bookkeeping is Bookkeeping.ONLY_A and judge_row(lone) is None and lone.verdict is None


def test_junit_is_well_formed_whatever_a_tensor_name_holds(tmp_path, cli):
    name = "scores\x01\x1b[31m\ud800"[:-1] + "\x7f\x0c"
    data = np.arange(16, dtype=np.uint8)
    a = write_driver_run(tmp_path / "a", "ref\x02", [("raw", name, data, {"dtype": "uint8"})])
    b = write_driver_run(tmp_path / "b", "ours", [("raw", name, data[::-1].copy(), {"dtype": "uint8"})])
    out = tmp_path / "r.xml"
    result = cli("compare", a, b, "--junit", out)
    assert result.code == 1, result.err
    root = ET.parse(out).getroot()  # expat refuses what XML 1.0 cannot hold
    case = next(root.iter("testcase"))
    assert case.get("name") == "raw:scores\\x01\\x1b[31m\x7f\\x0c"
    assert case.find("failure") is not None and "ref\\x02" in root.find("testsuite").get("name")


def test_atol_applies_to_one_dimensional_float_buffers_as_diff_applies_it(tmp_path, cli):
    va = np.linspace(0, 1, 100, dtype=np.float32)
    vb = va + np.float32(0.001)
    for shape in ([100], None):
        meta = f32(shape) if shape else {"dtype": "float32"}
        a = write_driver_run(tmp_path / f"a{shape}", "ref", [("dequantized", "x", va, meta)])
        b = write_driver_run(tmp_path / f"b{shape}", "ours", [("dequantized", "x", vb, meta)])
        within = cli("compare", a, b, "--atol", "0.01", "--json")
        assert within.code == 0 and json.loads(within.out)["verdict"] == "WITHIN TOLERANCE", within.out
        assert cli("compare", a, b, "--atol", "0.0001").code == 1
    np.save(tmp_path / "a.npy", va)
    np.save(tmp_path / "b.npy", vb)
    assert cli("diff", tmp_path / "a.npy", tmp_path / "b.npy", "--atol", "0.01").out.startswith("WITHIN TOLERANCE")
