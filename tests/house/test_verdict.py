"""One Verdict: every judging command's --json carries `verdict` and `exit_code`, the exit code is the process's
exit status and follows from the verdict, and no module but forensics/core/verdict.py spells a verdict word."""

from __future__ import annotations

import ast
import json
import subprocess
import sys

import pytest

from forensics.core import exitcodes
from forensics.core.verdict import STAGE_VERDICTS, Verdict, combined, overall, stage_verdict
from tests.conftest import REPO, run_cli

LIBEDGETPU, OURS, BROKEN = "dumps/libedgetpu", "dumps/ours", "dumps/broken"
TRACE_A = "W 0x48788 0x7f\nW 0x48790 0x1\nR 0x486f0 0x0\n"
TRACE_B = "W 0x48788 0x7f\nW 0x48790 0x2\nR 0x486f0 0x0\n"

def _verdict_literals(package) -> list:
    words = {v.value for v in Verdict}
    found = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).as_posix()
        if rel == "core/verdict.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in words:
                found.append(f"forensics/{rel}:{node.lineno}: {node.value!r}")
    return found


def test_no_verdict_word_is_spelled_outside_the_enum():
    assert _verdict_literals(REPO / "forensics") == []


def test_the_literal_check_would_see_one(tmp_path):
    # The check is not vacuous: a module spelling "DIFFER" is found.
    package = tmp_path / "forensics"
    package.mkdir()
    (package / "core").mkdir()
    (package / "core" / "verdict.py").write_text('X = "DIFFER"\n')
    (package / "late.py").write_text('def f(ok):\n    return "MATCH" if ok else "WITHIN TOLERANCE"\n')
    assert _verdict_literals(package) == ["forensics/late.py:2: 'MATCH'", "forensics/late.py:2: 'WITHIN TOLERANCE'"]


def test_every_verdict_has_one_exit_code():
    codes = {exitcodes.SAME, exitcodes.DIFFERENT, exitcodes.ERROR}
    assert all(v.exit_code in codes for v in Verdict)
    # cmp/diff's convention: the words of "the same" exit 0, the words of "different" exit 1.
    assert {v for v in Verdict if v.exit_code == 0} == {Verdict.MATCH, Verdict.WITHIN, Verdict.OK,
                                                        Verdict.NONUNIFORM, Verdict.FOUND, Verdict.IDENTICAL,
                                                        Verdict.PASSED, Verdict.LINKED}
    assert Verdict.ERROR.exit_code == exitcodes.ERROR
    # Today's JSON words are kept: a document compared with a plain string reads as before.
    assert Verdict.WITHIN == "WITHIN TOLERANCE" and json.dumps({"v": Verdict.WITHIN}) == '{"v": "WITHIN TOLERANCE"}'
    assert f"{Verdict.PARTLY_EXPLAINED} |" == "PARTLY EXPLAINED |"


def test_stage_and_batch_verdicts():
    assert [stage_verdict(s) for s in ("MATCH", "WITHIN TOLERANCE", "DIFFER", "MISSING", "ONLY_A")] == [
        Verdict.MATCH, Verdict.WITHIN, Verdict.DIFFER, Verdict.DIFFER, None]
    assert STAGE_VERDICTS == (Verdict.MATCH, Verdict.WITHIN, Verdict.DIFFER)
    assert combined(["MATCH", "MATCH"]) is Verdict.MATCH
    assert combined(["MATCH", "WITHIN TOLERANCE"]) is Verdict.WITHIN
    assert combined(["WITHIN TOLERANCE", "MISSING"]) is Verdict.DIFFER
    assert combined(["ONLY_A", "MATCH"]) == "ONLY_A"
    assert overall([]) is Verdict.ERROR and overall(["ERROR", "ERROR"]) is Verdict.ERROR
    assert overall(["ERROR", "MATCH"]) is Verdict.DIFFER and overall(["MATCH", "WITHIN TOLERANCE"]) is Verdict.WITHIN
    assert overall(["MATCH"]).exit_code == 0 and overall(["MATCH", "DIFFER"]).exit_code == 1


def _traces(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(TRACE_A)
    b.write_text(TRACE_B)
    return a, b


def _log(tmp_path, file):
    """A driver log of `file`'s fingerprint, as `forensics fingerprint` prints it."""
    log = tmp_path / "driver.log"
    log.write_text(run_cli("fingerprint", file, "--tag", "input").out)
    return log


def _runs(tmp_path, other):
    from forensics import reports

    paths = []
    for source in ("libedgetpu", other):
        path = tmp_path / f"run-{source}"
        if not path.exists():
            reports.ingest(path, [f"input=dumps/{source}/input.bin"], source=source)
        paths.append(path)
    return paths


# (argv builder, expected exit status): each judging command, once where it passes and once where it fails.
CASES = {
    "crc-one": (lambda t: ["crc", f"{OURS}/input.bin"], 0),
    "crc-match": (lambda t: ["crc", f"{LIBEDGETPU}/input.bin", f"{OURS}/input.bin"], 0),
    "crc-differ": (lambda t: ["crc", f"{LIBEDGETPU}/input.bin", f"{BROKEN}/input.bin"], 1),
    "diff-match": (lambda t: ["diff", f"{LIBEDGETPU}/convert_scores.bin", f"{OURS}/convert_scores.bin"], 0),
    "diff-differ": (lambda t: ["diff", f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin"], 1),
    "diff-within": (lambda t: ["diff", f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin",
                               "--tolerance", "255"], 0),
    "anchors": (lambda t: ["anchors", f"{OURS}/convert_scores.bin", "--deps", "dumps/face_ssd", "--nonuniform"],
                0),  # NONUNIFORM: the departing anchors are listed, not judged
    "coverage-ok": (lambda t: ["coverage", f"{OURS}/convert_scores.bin", "--sentinel", "cc"], 0),
    "coverage-untouched": (lambda t: ["coverage", f"{BROKEN}/convert_scores.bin", "--sentinel", "cc",
                                      "--min-run", "4"], 1),
    "compare-match": (lambda t: ["compare", *_runs(t, "ours")], 0),
    "compare-differ": (lambda t: ["compare", *_runs(t, "broken")], 1),
    "diagnose-identical": (lambda t: ["diagnose", f"{LIBEDGETPU}/input.bin", f"{OURS}/input.bin"], 0),
    "diagnose-differ": (lambda t: ["diagnose", f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin"],
                        1),
    "verify-match": (lambda t: ["verify", _log(t, f"{OURS}/input.bin"), f"{LIBEDGETPU}/input.bin"], 0),
    "verify-differ": (lambda t: ["verify", _log(t, f"{OURS}/input.bin"), f"{BROKEN}/input.bin"], 1),
    "csr-same": (lambda t: ["csr", *(_traces(t)[0],) * 2], 0),
    "csr-differ": (lambda t: ["csr", *_traces(t)], 1),
    "csr-name": (lambda t: ["csr", "--name", "0x48788"], 0),
    "link-linked": (lambda t: ["link", "dumps/link/tiny_edgetpu.tflite", "--check",
                               "dumps/link/libedgetpu_0_0.bin"], 0),
    "link-mislinked": (lambda t: ["link", "dumps/link/tiny_edgetpu.tflite", "--check",
                                  "dumps/link/seed_driver_0_0.bin"], 1),
    "anchors-gen": (lambda t: ["anchors-gen", "--input-size", "320x320", "--check-deps", "dumps/face_ssd"], 0),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_judging_json_has_verdict_and_the_exit_status(case, tmp_path):
    build, expected = CASES[case]
    result = run_cli(*build(tmp_path), "--json")
    assert result.code == expected, (result.code, result.err)
    doc = json.loads(result.out)
    assert doc["verdict"] in {v.value for v in Verdict}
    assert doc["exit_code"] == result.code == Verdict(doc["verdict"]).exit_code


def test_decode_replay_json_has_verdict(tmp_path):
    pytest.importorskip("ai_edge_litert")
    result = run_cli("decode", "--deps", "dumps/face_ssd", f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin",
                     "--replay", "--dequantize", "litert", "--json")
    doc = json.loads(result.out)
    assert doc["verdict"] == Verdict.MATCH and doc["exit_code"] == result.code == 0
    plain = json.loads(run_cli("decode", "--deps", "dumps/face_ssd", f"{OURS}/Squeeze1.bin",
                               f"{OURS}/convert_scores.bin", "--json").out)
    assert "exit_code" not in plain  # without --replay decode judges nothing


def test_exit_code_is_the_process_exit_status():
    # A real process: the status the shell sees is the document's exit_code, for both outcomes.
    for b, status in ((f"{OURS}/convert_scores.bin", 0), (f"{BROKEN}/convert_scores.bin", 1)):
        proc = subprocess.run([sys.executable, "-m", "forensics", "diff", f"{LIBEDGETPU}/convert_scores.bin", b,
                               "--json"], cwd=REPO, capture_output=True, text=True, timeout=120)
        doc = json.loads(proc.stdout)
        assert proc.returncode == doc["exit_code"] == status, proc.stderr


def test_reports_derive_the_exit_code_from_the_verdict():
    from forensics import reports

    report = reports.diff(f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin")
    assert report.verdict is Verdict.DIFFER and report.exit_code == 1 and not report
    assert report.result.verdict is Verdict.DIFFER and not report.result.passed
    csr = reports.csr(find="tileconfig")
    assert csr.verdict is Verdict.FOUND and csr.exit_code == 0
