"""The run format: round trip against zlib, hostile and corrupt manifests, atomic writes, CHANGED detection."""

from __future__ import annotations

import json
import os
import random
import zlib

import pytest

from forensics.core.errors import ForensicsError, FormatError, InputError
from forensics.runs.run import MANIFEST, STAGES, load_run, verify_run, write_run
from tests.conftest import assert_one_line_error
from tests.runs.runs_support import edit_manifest, story_run


def test_round_trip_sizes_and_crcs_agree_with_zlib(tmp_path):
    data = {("input", "input"): random.Random(201).randbytes(3000), ("raw", "convert_scores"): bytes(range(256)) * 3,
            ("tensor", "TFLite_Detection_PostProcess:1"): b"\x01\x02"}
    with write_run(tmp_path / "r", "ours") as b:
        for (stage, tensor), blob in data.items():
            b.add_bytes(stage, tensor, blob, dtype="uint8")
    run = load_run(tmp_path / "r")
    assert run.source == "ours" and run.tool.startswith("forensics ") and run.created.endswith("Z")
    assert [b.stage for b in run.buffers] == ["input", "raw", "tensor"]  # the story's order
    for entry in run.buffers:
        with open(run.file_path(entry), "rb") as fh:
            blob = fh.read()
        assert blob == data[entry.key]
        assert entry.size == len(blob) and entry.crc32 == zlib.crc32(blob)
    assert all(c.ok for c in verify_run(run))
    # a tensor name with ':' and '/' becomes a safe file name inside the stage folder
    assert run.buffer("tensor").file == "tensor/TFLite_Detection_PostProcess_1.bin"


def test_a_crashed_capture_leaves_nothing_that_looks_like_a_run(tmp_path):
    with pytest.raises(RuntimeError):
        with write_run(tmp_path / "r", "ours") as b:
            b.add_bytes("input", None, b"x" * 100)
            raise RuntimeError("the device hung")
    assert os.listdir(tmp_path) == []


def test_adding_to_a_run_replaces_it_in_one_step_and_keeps_the_old_buffers(tmp_path):
    path = story_run(tmp_path, "ours")
    before = load_run(path)
    with pytest.raises(RuntimeError):
        with write_run(path, "ours", add=True) as b:
            b.add_bytes("detections", "x", b"1234")
            raise RuntimeError("crash while adding")
    assert load_run(path) == before  # untouched
    with write_run(path, "ours", add=True) as b:
        b.add_bytes("dequantized", "convert_scores", b"\0" * 16)
    after = load_run(path)
    assert [e.label for e in after.buffers] == [e.label for e in before.buffers] + ["dequantized:convert_scores"]
    assert all(c.ok for c in verify_run(after))


def test_another_source_cannot_add_to_a_run(tmp_path):
    path = story_run(tmp_path, "ours")
    with pytest.raises(InputError, match="source is 'ours'"):
        with write_run(path, "libedgetpu", add=True):
            pass


BAD_MANIFESTS = {
    "not json": (lambda d: None, "{not json", "malformed manifest JSON"),
    "wrong format": (lambda d: d.update(format="something-else"), None, "not a forensics run"),
    "newer version": (lambda d: d.update(version=99), None, "newer than this forensics reads"),
    "buffers not a list": (lambda d: d.update(buffers={}), None, "buffers must be a list"),
    "unknown stage": (lambda d: d["buffers"][0].update(stage="outfeed"), None, "stage must be one of"),
    "stage a list": (lambda d: d["buffers"][0].update(stage=["input"]), None, "stage must be one of"),
    "stage an object": (lambda d: d["buffers"][0].update(stage={"name": "input"}), None, "stage must be one of"),
    "path traversal": (lambda d: d["buffers"][0].update(file="../../etc/passwd"), None, "inside the run"),
    "absolute path": (lambda d: d["buffers"][0].update(file="/etc/passwd"), None, "relative path"),
    "windows backslashes": (lambda d: d["buffers"][0].update(file="input\\input.bin"), None,
                            "uses backslashes: write it with '/' separators, relative to the run (e.g. 'input/input.bin')"),
    "windows drive letter": (lambda d: d["buffers"][0].update(file="C:/runs/ours/input.bin"), None,
                             "has a Windows drive letter"),
    "negative size": (lambda d: d["buffers"][0].update(size=-1), None, "size must be"),
    "bad crc": (lambda d: d["buffers"][0].update(crc32="xyz"), None, "crc32 must be"),
    "duplicate buffer": (lambda d: d["buffers"].append(dict(d["buffers"][0], file="input/other.bin")), None,
                         "two buffers are input"),
    "no source": (lambda d: d.update(source=""), None, "source must be"),
    "bad sha": (lambda d: d.update(model={"path": "m.tflite", "sha256": "abc"}), None, "sha256"),
}


@pytest.mark.parametrize("case", sorted(BAD_MANIFESTS))
def test_corrupt_manifests_are_one_line_errors(tmp_path, cli, case):
    change, text, fragment = BAD_MANIFESTS[case]
    a = story_run(tmp_path, "libedgetpu")
    b = story_run(tmp_path, "ours")
    if text is not None:
        (b / MANIFEST).write_text(text, encoding="utf-8")
    else:
        edit_manifest(b, change)
    with pytest.raises(ForensicsError):
        load_run(b)
    result = cli("compare", a, b)
    assert_one_line_error(result, fragment)


@pytest.mark.parametrize("what", ["missing dir", "no manifest", "empty manifest", "file not dir"])
def test_missing_runs_are_one_line_errors(tmp_path, cli, what):
    a = story_run(tmp_path, "libedgetpu")
    b = tmp_path / "b"
    if what == "no manifest":
        b.mkdir()
    elif what == "empty manifest":
        b.mkdir()
        (b / MANIFEST).write_text("", encoding="utf-8")
    elif what == "file not dir":
        b.write_bytes(b"x")
    result = cli("compare", a, b)
    assert_one_line_error(result, str(b))


def test_a_file_changed_after_capture_is_flagged_with_a_warning(tmp_path, cli):
    a = story_run(tmp_path, "libedgetpu")
    b = story_run(tmp_path, "ours")
    target = load_run(b).buffer("tensor", "Squeeze1")
    path = load_run(b).file_path(target)
    blob = bytearray(open(path, "rb").read())
    blob[100] ^= 0xFF
    open(path, "wb").write(bytes(blob))
    checks = {c.entry.key: c for c in verify_run(load_run(b))}
    assert checks[("tensor", "Squeeze1")].status == "changed"
    assert checks[("tensor", "Squeeze1")].crc32 == zlib.crc32(bytes(blob))
    result = cli("compare", a, b, "--json")
    assert result.code == 1
    assert "changed after capture" in result.err and "Squeeze1" in result.err and "Traceback" not in result.err
    doc = json.loads(result.out)
    row = next(r for r in doc["stages"] if r["tensor"] == "Squeeze1")
    assert row["changed"] == ["B"] and row["match"] is False
    assert doc["changed"] and doc["first_divergent_stage"] == "tensor"
    text = cli("compare", a, b).out
    assert "CHANGED DIFFER" in text


def test_a_missing_buffer_file_is_shown_not_a_traceback(tmp_path, cli):
    a = story_run(tmp_path, "libedgetpu")
    b = story_run(tmp_path, "ours")
    run = load_run(b)
    os.unlink(run.file_path(run.buffer("input")))
    result = cli("compare", a, b, "--json")
    assert result.code == 1 and "is missing" in result.err
    row = next(r for r in json.loads(result.out)["stages"] if r["stage"] == "input")
    assert row["status"] == "MISSING"


def test_stage_names_are_the_documented_order():
    assert STAGES == ("params", "instructions", "image", "input", "raw", "relayouted", "tensor", "dequantized",
                      "detections")  # link


def test_format_error_names_the_manifest_and_the_field(tmp_path):
    b = story_run(tmp_path, "ours")
    edit_manifest(b, lambda d: d["buffers"][1].update(size="big"))
    with pytest.raises(FormatError) as info:
        load_run(b)
    assert "manifest.json" in str(info.value) and "buffers -> 1 -> size" in str(info.value)


def test_array_dumps_are_ingested_as_their_data_with_dtype_and_shape(tmp_path, cli):
    """A .npy or an .npz array brought into a run is its data bytes (the header is no data), with the dtype and
    shape its header says; a run of them compares equal to a run of the same bytes as .bin files."""
    import numpy as np

    scores = np.arange(2034 * 4, dtype=np.int64).astype(np.uint8).reshape(1, 2034, 4)
    boxes = np.linspace(-1, 1, 2034 * 4, dtype=np.float32).reshape(1, 2034, 4)
    np.save(tmp_path / "scores.npy", scores)
    np.savez_compressed(tmp_path / "out.npz", boxes=boxes, other=np.zeros(3))
    (tmp_path / "scores.bin").write_bytes(scores.tobytes())
    (tmp_path / "boxes.bin").write_bytes(boxes.tobytes())
    arrays, plain = tmp_path / "arrays", tmp_path / "plain"
    r = cli("ingest", arrays, f"raw:convert_scores={tmp_path / 'scores.npy'}",
            f"dequantized:Squeeze1={tmp_path / 'out.npz'}:boxes", "--source", "ours", "--json")
    assert r.code == 0, r.err
    run = load_run(arrays)
    raw = run.buffer("raw", "convert_scores")
    assert raw.size == scores.nbytes and raw.crc32 == zlib.crc32(scores.tobytes())
    deq = run.buffer("dequantized", "Squeeze1")
    assert deq.size == boxes.nbytes and deq.crc32 == zlib.crc32(boxes.tobytes())
    assert deq.dtype == "float32" and tuple(deq.shape) == (1, 2034, 4)
    assert cli("ingest", plain, f"raw:convert_scores={tmp_path / 'scores.bin'}",
               f"dequantized:Squeeze1={tmp_path / 'boxes.bin'}", "--source", "ours").code == 0
    assert cli("compare", plain, arrays).code == 0
