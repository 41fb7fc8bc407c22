"""export / ingest --from (npz, Polygraphy RunResults) and compare --junit: round trips through the real
tools' readers (numpy, Polygraphy, ElementTree) and one-line errors for malformed files."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import numpy as np
import pytest

from forensics.runs.interop import run_arrays
from forensics.runs.run import load_run
from tests.conftest import assert_one_line_error
from tests.runs.runs_support import story_run


@pytest.fixture
def broken(tmp_path):
    return story_run(tmp_path, "broken")


def _same_buffers(run_a, run_b):
    a, b = load_run(run_a), load_run(run_b)
    assert [(e.label, e.crc32, e.size) for e in a.buffers] == [(e.label, e.crc32, e.size) for e in b.buffers]


def test_npz_round_trip_and_numpy_reads_it(broken, tmp_path, cli):
    out = tmp_path / "run.npz"
    r = cli("export", broken, "--format", "npz", "-o", out, "--json")
    assert r.code == 0 and json.loads(r.out)["format"] == "npz"
    with np.load(out) as archive:
        assert sorted(archive.files) == ["input", "raw:convert_scores", "tensor:Squeeze1"]
        assert archive["input"].shape == (1, 320, 320, 3) and archive["input"].dtype == np.uint8
        assert archive["tensor:Squeeze1"].tobytes() == open("dumps/broken/Squeeze1.bin", "rb").read()
    assert cli("ingest", tmp_path / "back", "--from", "npz", out, "--source", "broken").code == 0
    _same_buffers(broken, tmp_path / "back")
    assert cli("compare", broken, tmp_path / "back").code == 0


def test_polygraphy_loads_what_we_write_and_we_read_what_it_writes(broken, tmp_path, cli):
    pytest.importorskip("polygraphy")
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult

    out = tmp_path / "outputs.json"
    assert cli("export", broken, "--format", "polygraphy", "-o", out).code == 0
    results = RunResults.load(str(out))
    runner, iterations = results[0]
    assert runner == "broken" and len(iterations) == 1
    for name, array in run_arrays(broken).items():
        assert np.array_equal(iterations[0][name], array) and iterations[0][name].dtype == array.dtype
    # and the other way: a file Polygraphy itself saved
    theirs = RunResults()
    values = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    theirs.append(("trt-runner", [IterationResult({"output0": values, "raw:convert_scores": np.ones(8, np.uint8)},
                                                  runner_name="trt-runner")]))
    saved = tmp_path / "theirs.json"
    theirs.save(str(saved))
    r = cli("ingest", tmp_path / "imported", "--from", "polygraphy", saved, "--json")
    assert r.code == 0 and json.loads(r.out)["added"] == ["tensor:output0", "raw:convert_scores"]
    run = load_run(tmp_path / "imported")
    assert run.source == "trt-runner"
    entry = run.buffer("tensor", "output0")
    assert entry.dtype == "float32" and entry.shape == (2, 3, 4)
    assert np.array_equal(np.fromfile(run.file_path(entry), "<f4").reshape(2, 3, 4), values)


@pytest.mark.parametrize("content, fragment", [
    (b"not json", "malformed JSON"),
    (b'{"lst": []}', "not a Polygraphy RunResults file"),
    (b'{"lst": [], "polygraphy_class": "RunResults"}', "no runner"),
    (b'{"lst": [["r", [{"outputs": {"x": {"values": {"array": "!!"}}}}]]], "polygraphy_class": "RunResults"}',
     "not base64"),
    (b'{"lst": [["r", [{"outputs": {"x": {"values": {"array": "AAAA"}}}}]]], "polygraphy_class": "RunResults"}',
     "not a valid .npy payload"),
])
def test_malformed_polygraphy_files_are_one_line(tmp_path, cli, content, fragment):
    bad = tmp_path / "bad.json"
    bad.write_bytes(content)
    assert_one_line_error(cli("ingest", tmp_path / "r", "--from", "polygraphy", bad), "bad.json", fragment)
    assert not (tmp_path / "r").exists()


@pytest.mark.parametrize("content, fragment", [(b"PK\x03\x04 truncated", "not a readable .npz"),
                                               (b"", "not a readable .npz")])
def test_malformed_npz_is_one_line(tmp_path, cli, content, fragment):
    bad = tmp_path / "bad.npz"
    bad.write_bytes(content)
    assert_one_line_error(cli("ingest", tmp_path / "r", "--from", "npz", bad, "--source", "x"), "bad.npz", fragment)


def test_npz_with_pickled_objects_is_refused(tmp_path, cli):
    bad = tmp_path / "objects.npz"
    np.savez(bad, x=np.array([{"a": 1}], dtype=object))
    assert_one_line_error(cli("ingest", tmp_path / "r", "--from", "npz", bad, "--source", "x"), "objects.npz")


def test_junit_has_one_case_per_buffer(tmp_path, cli):
    a, b = story_run(tmp_path, "libedgetpu"), story_run(tmp_path, "broken")
    out = tmp_path / "report.xml"
    r = cli("compare", a, b, "--junit", out, "--tolerance", "convert_scores=204lsb")
    assert r.code == 1
    root = ET.parse(out).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    assert sorted(cases) == ["input", "raw:convert_scores", "tensor:Squeeze1"]
    assert cases["input"].find("failure") is not None and "row 117" in cases["input"].find("failure").get("message")
    assert cases["raw:convert_scores"].find("failure") is None  # within its tolerance
    assert cases["tensor:Squeeze1"].find("failure") is None
    assert root.get("tests") == "3" and root.get("failures") == "1"


def test_export_bad_input(tmp_path, cli):
    assert_one_line_error(cli("export", tmp_path / "nope", "--format", "npz", "-o", tmp_path / "x.npz"), "nope")


# --- a run whose bytes changed after capture (issue 35) ---------------------------------------------------------

def _changed_run(tmp_path):
    """A run a driver engineer wrote (plain files and a manifest by hand), then one buffer edited in place."""
    import zlib

    run = tmp_path / "edited"
    (run / "input").mkdir(parents=True)
    (run / "raw").mkdir()
    data = {"input/input.bin": bytes(range(64)), "raw/convert_scores.bin": b"\x80" * 32}
    for rel, blob in data.items():
        (run / rel).write_bytes(blob)
    buffers = [{"stage": rel.split("/")[0], "tensor": "input" if rel.startswith("input") else "convert_scores",
                "file": rel, "size": len(blob), "crc32": f"0x{zlib.crc32(blob):08x}", "dtype": "uint8"}
               for rel, blob in data.items()]
    (run / "manifest.json").write_text(json.dumps({"format": "forensics-run", "version": 1, "source": "ours",
                                                   "buffers": buffers}))
    (run / "raw" / "convert_scores.bin").write_bytes(b"\x7f" + b"\x80" * 31)  # edited after capture
    return run


def test_export_refuses_a_buffer_changed_after_capture(tmp_path, cli):
    run = _changed_run(tmp_path)
    out = tmp_path / "out.npz"
    r = cli("export", run, "--format", "npz", "-o", out)
    assert_one_line_error(r, "raw:convert_scores changed after capture", "--allow-changed")
    assert not out.exists()
    # compare says the same of it: CHANGED
    from forensics.runs.compare import compare_runs

    assert compare_runs(run, run).changed


def test_export_allow_changed_writes_it_and_names_it(tmp_path, cli):
    run = _changed_run(tmp_path)
    out = tmp_path / "out.npz"
    r = cli("export", run, "--format", "npz", "-o", out, "--allow-changed", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert [(c["stage"], c["tensor"], c["status"]) for c in doc["changed"]] == [("raw", "convert_scores", "changed")]
    assert r.err.count("\n") == 1 and "raw:convert_scores changed after capture" in r.err
    with np.load(out) as archive:
        assert archive["raw:convert_scores"][0] == 0x7F  # the bytes as they are now
    # the library says it too, by the parameter's name
    from forensics.core.errors import InputError
    from forensics.runs.interop import export_run

    with pytest.raises(InputError, match="give allow_changed to export"):
        export_run(run, "npz", tmp_path / "again.npz")


def test_export_of_an_unchanged_run_has_no_changed_buffers(tmp_path, cli):
    run = _changed_run(tmp_path)
    (run / "raw" / "convert_scores.bin").write_bytes(b"\x80" * 32)  # put back
    r = cli("export", run, "--format", "polygraphy", "-o", tmp_path / "p.json", "--json")
    assert r.code == 0 and r.err == "" and json.loads(r.out)["changed"] == []
