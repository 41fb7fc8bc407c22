"""One judgement per result (issue 33) for the buffer commands and diagnose: the terminal prints exactly one
`VERDICT | message` line, the JSON's verdict and message, and the library report carries the same judgement;
no renderer of this area chooses a verdict (a planted one is caught). Pairs are built with plain numpy."""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path

import numpy as np
import pytest

from forensics import reports
from forensics.core.verdict import Verdict
from tests.conftest import REPO, run_cli

VERDICT_LINE = re.compile("^(" + "|".join(re.escape(v.value) for v in Verdict) + r") \| (.*)$")


def faces(argv: list, report) -> dict:
    """The command's three faces: its terminal lines that are verdict lines, its --json, the library report."""
    text = run_cli(*argv, width=400)
    lines = [m.groups() for m in map(VERDICT_LINE.match, text.out.splitlines()) if m]
    doc = json.loads(run_cli(*argv, "--json").out)
    return {"code": text.code, "lines": lines, "doc": doc, "report": report}


def assert_agree(f: dict) -> None:
    """Exactly one verdict line; it is the JSON's verdict and message and the report's judgement; one exit code."""
    assert len(f["lines"]) == 1, f["lines"]
    (word, message), = f["lines"]
    doc, report = f["doc"], f["report"]
    assert word == doc["verdict"] == report.verdict == report.judgement.verdict
    assert message == doc["message"] == report.judgement.message
    assert f["code"] == doc["exit_code"] == report.exit_code == report.judgement.verdict.exit_code
    assert doc["reasons"] == [r.to_dict() for r in report.judgement.reasons]


def _put(path: Path, data) -> str:
    path.write_bytes(data if isinstance(data, bytes) else np.asarray(data).tobytes())
    return str(path)


def _records(n: int = 512, seed: int = 0) -> np.ndarray:
    rec = np.tile(np.array([255, 0, 128, 128], np.uint8), (n, 1))
    hits = np.random.default_rng(seed).choice(n, 20, replace=False)
    rec[hits, 0] = 200
    rec[hits, 1] = 55
    return rec


def test_pad_lane_only_differences_pass_on_every_face(tmp_path):
    a = _records()
    b = a.copy()
    b[:, 2:] = 0  # only the pad lanes differ
    pa, pb = _put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b)
    diff = faces(["diff", pa, pb, "--pad", "2,3"], reports.diff(pa, pb, pad="2,3"))
    assert_agree(diff)
    assert diff["code"] == 0 and diff["doc"]["verdict"] == "MATCH" and "pad lanes 2,3 ignored" in diff["doc"]["message"]
    assert diff["doc"]["pad_bytes_differing"] == 1024 and diff["doc"]["bytes_differing"] == 0
    diag = faces(["diagnose", pa, pb, "--pad", "2,3"], reports.diagnose(pa, pb, pad="2,3"))
    assert_agree(diag)
    assert diag["code"] == 0 and diag["doc"]["verdict"] == "IDENTICAL" and "pad lanes ignored" in diag["doc"]["message"]
    assert [r["code"] for r in diag["doc"]["reasons"]] == ["pad_lanes_ignored"]
    # one count (issue 35): the bytes compared and the pad lanes' bytes, the same in diff and diagnose
    assert diag["doc"]["bytes_differing"] == 0 and diag["doc"]["pad_bytes_differing"] == 1024


def test_diff_and_diagnose_count_the_same_bytes_with_the_pad_lanes_stated(tmp_path):
    a = _records(1000, seed=3)
    b = a.copy()
    b[::3, 3] = 0x55   # pad lane 3 differs in a third of the records
    b[7, 0] ^= 1       # and two data bytes
    b[90, 1] ^= 0x10
    pa, pb = _put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b)
    d = reports.diff(pa, pb, pad="3").to_dict()
    g = reports.diagnose(pa, pb, pad="3").to_dict()
    pad = int(np.count_nonzero(a[:, 3] != b[:, 3]))
    data = int(np.count_nonzero(a[:, :3] != b[:, :3]))
    assert (d["bytes_differing"], d["pad_bytes_differing"]) == (g["bytes_differing"], g["pad_bytes_differing"]) \
        == (data, pad)
    text = run_cli("diagnose", pa, pb, "--pad", "3").out
    assert f"{data} bytes differ in 2 of 1,000 4-byte records; {pad} more in pad lanes 3 (ignored, as diff)" in text
    assert f"pad lanes 3 ignored, {pad} bytes differ there" in run_cli("diff", pa, pb, "--pad", "3").out


def test_two_heads_with_deps_say_head_window_once(tmp_path):
    """Issue 33: `diff` of two 256-byte heads with --deps printed `MATCH | ...` and then `HEAD WINDOW | ...`."""
    data = (REPO / "dumps/libedgetpu/convert_scores.bin").read_bytes()[:256]
    pa, pb = _put(tmp_path / "a.bin", data), _put(tmp_path / "b.bin", data)
    f = faces(["diff", pa, pb, "--deps", "dumps/face_ssd"], reports.diff(pa, pb, deps="dumps/face_ssd"))
    assert_agree(f)
    assert f["code"] == 1 and f["doc"]["verdict"] == "HEAD WINDOW"
    assert f["doc"]["message"].startswith("the 256 bytes compared match, but both dumps hold only the head")
    assert "head_window" in [r["code"] for r in f["doc"]["reasons"]] and f["doc"]["head_window"]


def test_within_tolerance_on_every_face(tmp_path):
    rng = np.random.default_rng(4)
    a = rng.integers(10, 240, 4096, dtype=np.uint8)
    b = (a.astype(int) + rng.integers(-1, 2, a.size)).astype(np.uint8)
    pa, pb = _put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b)
    diff = faces(["diff", pa, pb, "--tolerance", "1"], reports.diff(pa, pb, tolerance=1))
    assert_agree(diff)
    assert diff["code"] == 0 and diff["doc"]["verdict"] == "WITHIN TOLERANCE"
    assert "within_tolerance" in [r["code"] for r in diff["doc"]["reasons"]]
    diag = faces(["diagnose", pa, pb, "--tolerance", "1"], reports.diagnose(pa, pb, tolerance=1))
    assert_agree(diag)
    assert diag["code"] == 0 and diag["doc"]["verdict"] == "WITHIN TOLERANCE"
    # without the tolerance the same pair differs, on every face
    plain = faces(["diff", pa, pb], reports.diff(pa, pb))
    assert_agree(plain)
    assert plain["code"] == 1 and plain["doc"]["verdict"] == "DIFFER"


def test_nan_differences_differ_on_every_face(tmp_path):
    a = np.array([1, 2, np.nan, 4, np.inf, 6, 7, 8], np.float32)
    b = a.copy()
    b[2], b[4] = 7.0, -np.inf
    pa, pb = str(tmp_path / "a.npy"), str(tmp_path / "b.npy")
    np.save(pa, a)
    np.save(pb, b)
    f = faces(["diff", pa, pb], reports.diff(pa, pb))
    assert_agree(f)
    assert f["code"] == 1 and f["doc"]["verdict"] == "DIFFER"
    assert "2 NaN or infinite values do not match" in f["doc"]["message"]
    assert f["doc"]["stats"]["nonfinite_mismatch"] == 2
    # a tolerance does not pass them
    tolerant = faces(["diff", pa, pb, "--atol", "100"], reports.diff(pa, pb, atol="100"))
    assert_agree(tolerant)
    assert tolerant["code"] == 1


@pytest.mark.parametrize("argv, make", [
    (["crc", "dumps/libedgetpu/input.bin"], lambda: reports.crc("dumps/libedgetpu/input.bin")),
    (["crc", "dumps/libedgetpu/input.bin", "dumps/broken/input.bin", "--expect", "0x0bc3f483"],
     lambda: reports.crc("dumps/libedgetpu/input.bin", "dumps/broken/input.bin", expect=0x0BC3F483)),
    (["anchors", "dumps/broken/convert_scores.bin"], lambda: reports.anchors("dumps/broken/convert_scores.bin")),
    (["anchors", "dumps/ours/convert_scores.bin", "--count", "1"],
     lambda: reports.anchors("dumps/ours/convert_scores.bin", count=1)),
    (["coverage", "dumps/broken/convert_scores.bin", "--sentinel", "cc"],
     lambda: reports.coverage("dumps/broken/convert_scores.bin", sentinel="cc")),
    (["diagnose", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"],
     lambda: reports.diagnose("dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin")),
], ids=["crc-one", "crc-expect-and-pair", "anchors", "anchors-one", "coverage", "diagnose"])
def test_every_judging_buffer_command_prints_its_one_judgement(argv, make):
    assert_agree(faces(argv, make()))


def test_crc_with_expect_and_a_pair_is_one_line():
    """Two clauses (the expected CRC, the pair) used to print two verdict lines."""
    f = faces(["crc", "dumps/libedgetpu/input.bin", "dumps/broken/input.bin", "--expect", "0x0bc3f483"],
              reports.crc("dumps/libedgetpu/input.bin", "dumps/broken/input.bin", expect=0x0BC3F483))
    assert f["doc"]["verdict"] == "DIFFER" and [r["code"] for r in f["doc"]["reasons"]] == ["expect_differ",
                                                                                          "files_differ"]


def test_hexdump_shows_and_does_not_judge():
    out = run_cli("hexdump", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", "--anchor",
                  "1500").out
    assert not [line for line in out.splitlines() if VERDICT_LINE.match(line)]


# --- no renderer chooses a verdict ---------------------------------------------------------------------------

# The buffer commands' renderers name no Verdict at all; every module of forensics/render/ decides no verdict and
# parses no prose by tests/render/test_renderers_read_facts.py's rule.
RENDERERS = ("forensics/render/buffers.py", "forensics/render/diagnose.py", "forensics/render/errorplot.py")


def verdict_choices(source: str) -> list[str]:
    """Where a renderer module decides a verdict: it names Verdict (a member, a comparison, a construction),
    compares something's `.verdict`, or writes a verdict line of its own (line.verdict instead of
    line.judgement_line)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Name) and node.id == "Verdict":
            found.append(f"{node.lineno}: names Verdict")
        elif isinstance(node, (ast.ImportFrom, ast.Import)) and any(a.name in ("Verdict", "verdict")
                                                                     for a in node.names):
            found.append(f"{node.lineno}: imports {', '.join(a.name for a in node.names)}")
        elif isinstance(node, ast.Compare) and any(isinstance(x, ast.Attribute) and x.attr == "verdict"
                                                   for x in [node.left, *node.comparators]):
            found.append(f"{node.lineno}: compares a verdict")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "verdict":
            found.append(f"{node.lineno}: writes a verdict line")
    return found


@pytest.mark.parametrize("module", RENDERERS)
def test_no_renderer_of_the_buffer_commands_chooses_a_verdict(module):
    assert verdict_choices((REPO / module).read_text(encoding="utf-8")) == []


def test_a_planted_renderer_choosing_a_verdict_is_caught():
    planted = (
        "from forensics.core.verdict import Verdict\n"
        "from forensics.render.style import verdict\n"
        "def render(result):\n"
        "    if result.verdict is Verdict.MATCH:\n"
        "        return [verdict(Verdict.MATCH, 'same')]\n"
        "    return [verdict('DIFFER' if result.stats.max_abs else 'WITHIN TOLERANCE', 'x')]\n")
    found = verdict_choices(planted)
    assert {"1: imports Verdict", "2: imports verdict", "4: compares a verdict", "5: writes a verdict line",
            "6: writes a verdict line"} <= set(found)
    # and the shipped renderers, planted with one such line, fail the check
    source = (REPO / RENDERERS[0]).read_text(encoding="utf-8")
    assert verdict_choices(source + "\n\ndef late(r):\n    return r.verdict == 'MATCH'\n")


def test_the_renderer_summarises_records_as_the_library_words_them():
    from forensics.buffer import anchors
    from forensics.render import buffers

    assert buffers.WIDE == anchors.WIDE and buffers._hex(bytes(range(20))) == anchors.record_hex(bytes(range(20)))
