"""forensics repeat on runs a driver wrote in a loop with c/forensics_run.h (tests/runs/repeat_driver.c): the
modal content per buffer by CRC32 (checked against zlib), the divergence rate per stage, each outlier's first
divergent stage and diagnose's finding there, and the dependence: stale from the previous job, a cold first
run, a period; a reference run; folders of runs in natural order; Dask; the table, --json, --html, --junit;
bad input as one line, exit 2."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import xml.etree.ElementTree as ET
import zlib
from pathlib import Path

import pytest

from tests.conftest import REPO, assert_one_line_error, run_cli

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
DRIVER = Path(__file__).with_name("repeat_driver.c")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler: the driver's loop is C")

ANCHORS = 2034


@pytest.fixture(scope="session")
def driver(tmp_path_factory):
    out = tmp_path_factory.mktemp("repeat_driver") / "repeat_driver"
    proc = subprocess.run([CC, "-std=c99", "-O1", "-Wall", "-Werror", f"-I{REPO / 'c'}", str(DRIVER), "-o",
                           str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return out


def _loop(driver, folder: Path, n: int, mode: str, k: int = 0) -> list[Path]:
    folder.mkdir(parents=True, exist_ok=True)
    proc = subprocess.run([str(driver), str(folder), str(n), mode, str(k)], capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [folder / f"run-{i}" for i in range(1, n + 1)]


def _expected_raw() -> bytes:
    """The device's right output, computed here as the driver's comment states it."""
    out = bytearray()
    for a in range(ANCHORS):
        v = (a * 7 + 3) % 251
        out += bytes([v, 255 - v, 0x80, 0x80])
    return bytes(out)


def _json(*argv):
    result = run_cli("repeat", *argv, "--json")
    assert result.code in (0, 1), result.err
    doc = json.loads(result.out)
    assert doc["exit_code"] == result.code
    return doc


def test_every_run_agrees(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 5, "clean")
    doc = _json(*runs)
    assert doc["verdict"] == "MATCH" and doc["exit_code"] == 0
    assert [r["run"] for r in doc["runs"]] == [str(r) for r in runs]
    assert [r["status"] for r in doc["runs"]] == ["modal"] * 5
    assert all(r["first_divergent_stage"] is None and r["depends"] is None for r in doc["runs"])
    assert [(s["stage"], s["divergence_rate"]) for s in doc["stages"]] == [("input", 0.0), ("raw", 0.0)]
    raw = next(b for b in doc["buffers"] if b["label"] == "raw:convert_scores")
    assert int(raw["crc32"], 16) == zlib.crc32(_expected_raw()) and raw["runs_holding"] == 5


def test_a_cold_first_run(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 6, "cold")
    doc = _json(*runs)
    assert doc["verdict"] == "DIFFER" and doc["exit_code"] == 1
    first, *rest = doc["runs"]
    assert (first["status"], first["first_divergent_stage"], first["depends"]) == ("outlier", "raw", "cold")
    assert all((r["status"], r["depends"]) == ("modal", None) for r in rest)
    assert {s["stage"]: s["divergence_rate"] for s in doc["stages"]} == {"input": 0.0, "raw": pytest.approx(1 / 6)}
    assert first["finding"] is not None  # diagnose names what it sees in the all-zero buffer
    assert any(r["code"] == "cold_start" for r in doc["reasons"])


def test_an_outlier_stale_from_the_previous_job(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 8, "stale", k=4)
    doc = _json(*runs)
    rows = doc["runs"]
    assert [r["status"] for r in rows] == ["modal"] * 3 + ["outlier", "outlier"] + ["modal"] * 3
    cut, stale = rows[3], rows[4]
    assert cut["first_divergent_stage"] == stale["first_divergent_stage"] == "raw"
    assert cut["depends"] is None and stale["depends"] == "previous"
    assert stale["finding"] == "stale"  # diagnose, given run-4 as the previous run, sees its bytes
    assert cut["finding"] != "stale"  # run-3 holds what run-4 holds only where run-4 is right
    assert doc["period"] is None
    assert {s["stage"]: s["divergence_rate"] for s in doc["stages"]}["raw"] == pytest.approx(2 / 8)
    # independently: where run-5 differs from the right output it holds run-4's bytes
    right = _expected_raw()
    four, five = ((r / "raw" / "convert_scores.bin").read_bytes() for r in runs[3:5])
    differing = [i for i in range(len(right)) if five[i] != right[i]]
    assert differing and all(five[i] == four[i] for i in differing)
    assert any(r["code"] == "stale_previous" for r in doc["reasons"])


def test_a_period(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 12, "period")
    doc = _json(*runs)
    outliers = [r["index"] for r in doc["runs"] if r["status"] == "outlier"]
    assert outliers == [3, 7, 11]
    assert doc["period"] == {"every": 4, "first": 3, "runs": [3, 7, 11]}
    assert all(r["depends"] is None for r in doc["runs"])
    assert "every 4th run from run-4" in doc["message"]


def test_a_folder_of_runs_is_read_in_natural_order(driver, tmp_path):
    _loop(driver, tmp_path / "loop", 12, "period")
    doc = _json(tmp_path / "loop")
    assert [Path(r["run"]).name for r in doc["runs"]] == [f"run-{i}" for i in range(1, 13)]
    assert doc["period"]["every"] == 4


def test_a_reference_run(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 4, "clean")
    cold = _loop(driver, tmp_path / "cold", 1, "cold")[0]
    doc = _json(*runs, "--reference", cold)  # judged against the cold run: every run differs from it
    assert doc["reference"] == str(cold) and doc["verdict"] == "DIFFER"
    assert [r["status"] for r in doc["runs"]] == ["outlier"] * 4
    assert all(r["against"] == str(cold) for r in doc["runs"])
    assert all(r["depends"] is None for r in doc["runs"])  # the same difference in every run: no run depends
    assert doc["period"] is None
    assert all(b["baseline"] == "reference" for b in doc["buffers"])
    assert _json(runs[0], "--reference", runs[1])["verdict"] == "MATCH"  # one run and a reference


def test_the_first_divergent_stage_is_the_input(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 5, "input", k=3)
    doc = _json(*runs)
    row = doc["runs"][2]
    assert (row["status"], row["first_divergent_stage"], row["differing"]) == ("outlier", "input", ["input"])
    assert row["depends"] is None


def test_table_html_and_junit(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 8, "stale", k=4)
    html, junit = tmp_path / "repeat.html", tmp_path / "repeat.xml"
    result = run_cli("repeat", tmp_path / "loop", "--html", html, "--junit", junit)
    assert result.code == 1, result.err
    doc = _json(tmp_path / "loop")
    assert result.out.count("DIFFER |") == 1 and "MATCH |" not in result.out
    assert " ".join(f"DIFFER | {doc['message']}".split()) in " ".join(result.out.split())  # as --json says it
    assert "stale from the previous run" in result.out and f"wrote {html}" in result.out
    page = html.read_text(encoding="utf-8")
    assert doc["message"] in page.replace("&#x27;", "'")
    suite = ET.parse(junit).getroot().find("testsuite")
    assert suite.get("tests") == "8" and suite.get("failures") == "2"
    failed = [c.get("name") for c in suite.iter("testcase") if c.find("failure") is not None]
    assert failed == [str(runs[3]), str(runs[4])]


def test_the_table_golden(driver, tmp_path, monkeypatch):
    _loop(driver, tmp_path / "loop", 8, "stale", k=4)
    monkeypatch.chdir(tmp_path)
    result = run_cli("repeat", "loop")
    golden = Path(__file__).parent / "golden" / "repeat_stale.txt"
    if os.environ.get("FORENSICS_REGOLD"):
        golden.write_text(result.out, encoding="utf-8")
    assert result.out == golden.read_text(encoding="utf-8")


def test_the_report_is_what_the_cli_prints(driver, tmp_path):
    from forensics import reports
    from forensics.render.console import to_json

    runs = _loop(driver, tmp_path / "loop", 6, "cold")
    report = reports.repeat(*runs)
    assert json.loads(to_json(report.to_dict())) == _json(*runs)
    assert report.exit_code == 1 and report.judgement.has("cold_start")


def test_dask_gives_the_same_answer(driver, tmp_path):
    pytest.importorskip("distributed")
    runs = _loop(driver, tmp_path / "loop", 8, "stale", k=4)
    local = _json(*runs)
    dask = _json(*runs, "--scheduler", "dask", "--workers", "2")
    assert dask["scheduler"] == "dask"
    for key in ("runs", "stages", "buffers", "verdict", "message"):
        assert dask[key] == local[key], key


def test_a_pool_of_workers_and_verified_files_give_the_same_answer(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 8, "stale", k=4)
    local = _json(*runs)
    pooled = _json(*runs, "--workers", "2", "--verify-files")
    for key in ("runs", "stages", "buffers", "verdict", "message"):
        assert pooled[key] == local[key], key


def test_a_file_changed_after_capture_is_judged_as_it_is(driver, tmp_path):
    runs = _loop(driver, tmp_path / "loop", 4, "clean")
    raw = runs[2] / "raw" / "convert_scores.bin"
    data = bytearray(raw.read_bytes())
    data[40] ^= 0xFF
    raw.write_bytes(bytes(data))
    doc = _json(*runs, "--verify-files")
    assert [r["status"] for r in doc["runs"]] == ["modal", "modal", "outlier", "modal"]
    assert any("changed after capture" in w for w in doc["warnings"])
    assert any(r["code"] == "changed_after_capture" for r in doc["reasons"])


@pytest.mark.parametrize("case", ["one-run", "missing", "not-a-run", "empty-folder", "bad-manifest", "scheduler"])
def test_bad_input_is_one_line(driver, tmp_path, case):
    runs = _loop(driver, tmp_path / "loop", 3, "clean")
    (tmp_path / "empty").mkdir()
    (runs[1] / "manifest.json").write_text("{not json", encoding="utf-8")
    argv = {"one-run": [runs[0]], "missing": [runs[0], tmp_path / "nowhere"],
            "not-a-run": [runs[0], REPO / "README.md"], "empty-folder": [runs[0], tmp_path / "empty"],
            "bad-manifest": [runs[0], runs[1], runs[2]], "scheduler": [runs[0], runs[2], "--scheduler", "nope"]}[case]
    fragment = {"one-run": "at least two runs", "missing": "no such run", "not-a-run": "is not a run",
                "empty-folder": "holds no run", "bad-manifest": "manifest", "scheduler": "--scheduler"}[case]
    assert_one_line_error(run_cli("repeat", *argv), fragment)
    assert_one_line_error(run_cli("repeat", *argv, "--json"), fragment)


def test_repeat_prints_under_cp1252(driver, tmp_path):
    _loop(driver, tmp_path / "loop", 8, "stale", k=4)
    env = dict(os.environ, PYTHONIOENCODING="cp1252")
    import sys

    proc = subprocess.run([sys.executable, "-m", "forensics", "repeat", str(tmp_path / "loop")], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 1 and "internal error" not in proc.stderr, proc.stderr


def test_runs_at_a_url_are_read_in_place(driver, tmp_path):
    fsspec = pytest.importorskip("fsspec")
    runs = _loop(driver, tmp_path / "loop", 8, "stale", k=4)
    fs = fsspec.filesystem("memory")
    for run in runs:
        for path in run.rglob("*"):
            if path.is_file():
                fs.pipe(f"/repeat-loop/{run.name}/{path.relative_to(run).as_posix()}", path.read_bytes())
    on_disk, remote = _json(*runs), _json("memory://repeat-loop")
    assert [r["run"] for r in remote["runs"]] == [f"memory://repeat-loop/run-{i}" for i in range(1, 9)]
    for key in ("status", "first_divergent_stage", "finding", "depends"):
        assert [r[key] for r in remote["runs"]] == [r[key] for r in on_disk["runs"]], key
    fs.rm("/repeat-loop", recursive=True)
