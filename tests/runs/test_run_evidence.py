"""A run holds the whole evidence (issue 32): the image the input was made from (`image` stage, with its
geometry) and the driver's log (`log[:NAME]=FILE`, stored as the bytes given, in any code page), with the one
accessor a comparison checks the logs through (Run.log_evidence).

The driver's log is built here with the format strings of the real driver (npu_driver/Queue.c, DbgPrint) and its
arithmetic (first8 / last8 per page, an 8-byte xor-fold), as DbgView saves it (line number, time, text).
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from forensics.buffer.fingerprint import verify_log
from forensics.runs.ingest import ingest
from forensics.runs.run import load_run, verify_logs
from tests.conftest import assert_one_line_error

PAGE = 4096


def _hex8(b: bytes) -> str:
    return " ".join("%02x" % v for v in b)


def driver_log(data: bytes, *, size: int | None = None, encoding: str = "cp1252") -> bytes:
    """What the driver prints for its input buffer ([INPUT-CHK] lines), in DbgView's saved form: cp1252 as a
    German Windows saves it, or UTF-8 (forensics.buffer.fingerprint reads UTF-8 and UTF-16 logs)."""
    total = len(data) if size is None else size
    pages = (total + PAGE - 1) // PAGE
    lines = []
    for pp in range(min(pages, 4)):
        base = pp * PAGE
        tail = base + PAGE - 8
        if tail + 8 > total:
            tail = total - 8 if total >= 8 else 0
        lines.append("[INPUT-CHK] page[%u] first8=%s  last8(@0x%x)=%s" % (pp, _hex8(data[base:base + 8]), tail,
                                                                          _hex8(data[tail:tail + 8])))
    if pages > 4:
        last = pages - 1
        lines.append("[INPUT-CHK] page[%u] (last) first8=%s" % (last, _hex8(data[last * PAGE:last * PAGE + 8])))
    chk = 0
    q = total // 8
    for i in range(q):
        chk ^= int.from_bytes(data[i * 8:i * 8 + 8], "little")
    tail_q = 0
    for t in range(q * 8, total):
        tail_q |= data[t] << ((t - q * 8) * 8)
    chk ^= tail_q
    lines.append("[INPUT-CHK] xor-fold pre-submit = 0x%016X over %u bytes (%u pages)" % (chk, total, pages))
    lines.append("[INPUT-CHK] INFEED kRun ticks=3  OUTFEED kRun ticks=5  (each tick \u22481ms)")
    lines.append("Gerät bereit")  # a German Windows console: cp1252 bytes
    text = "".join("%08u\t%.8f\t%s\r\n" % (i, 0.001 * i, line) for i, line in enumerate(lines))
    return text.encode(encoding, errors="replace")


@pytest.fixture
def driver(tmp_path):
    data = np.random.default_rng(3).integers(0, 256, 300 * 300 * 3 // 7, dtype=np.uint8).tobytes()
    (tmp_path / "input.bin").write_bytes(data)
    (tmp_path / "dbgview.log").write_bytes(driver_log(data))
    (tmp_path / "dbgview-utf8.log").write_bytes(driver_log(data, encoding="utf-8"))
    return tmp_path


def test_a_log_is_stored_as_the_bytes_given_with_its_crc(driver, cli):
    run = driver / "R"
    r = cli("ingest", run, "--source", "ours", f"input={driver / 'input.bin'}", f"log={driver / 'dbgview.log'}",
            "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    given = (driver / "dbgview.log").read_bytes()
    assert b"Ger\xe4t" in given  # cp1252, not UTF-8: stored as it is
    assert doc["added"] == ["input", "log"]
    assert [(log["name"], log["size"], log["crc32"]) for log in doc["logs"]] == [
        ("log", len(given), f"0x{zlib.crc32(given):08x}")]
    loaded = load_run(run)
    (log,) = loaded.logs
    assert open(loaded.log_path(log), "rb").read() == given
    assert [b.label for b in loaded.buffers] == ["input"]  # a log is not a buffer of the inference
    assert all(c.ok for c in verify_logs(loaded))
    manifest = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    assert manifest["logs"][0]["file"] == "logs/log.log"


def test_log_evidence_checks_the_drivers_fingerprints_against_the_runs_buffers(driver):
    run = driver / "R"
    ingest(run, "ours", [f"input={driver / 'input.bin'}", f"log:dbgview={driver / 'dbgview-utf8.log'}"])
    evidence = load_run(run).log_evidence()
    (log, path), = evidence.logs
    assert log.name == "dbgview"
    assert evidence.labels["input"] == "input" and evidence.buffers["input"] == load_run(run).file_path(
        load_run(run).buffer("input"))
    report = verify_log(path, buffers=evidence.buffers)
    assert report.match and {c.tag for c in report.checks} == {"INPUT"}
    assert len(report.checks) >= 5  # first8 / last8 per page, the xor-fold and the size


def test_a_logged_fingerprint_that_disagrees_with_its_dump_is_found(driver):
    """The input DMA read before it was complete: the driver logged what it had, the dump holds what it has."""
    data = (driver / "input.bin").read_bytes()
    early = data[:PAGE * 2] + bytes(len(data) - PAGE * 2)
    (driver / "early.log").write_bytes(driver_log(early, encoding="utf-8"))
    ingest(driver / "R", "ours", [f"input={driver / 'input.bin'}", f"log={driver / 'early.log'}"])
    evidence = load_run(driver / "R").log_evidence()
    report = verify_log(evidence.logs[0][1], buffers=evidence.buffers)
    assert not report.match
    assert any(not c.match and c.kind == "xor64" for c in report.checks)


def test_a_log_edited_after_ingest_is_changed(driver):
    ingest(driver / "R", "ours", [f"log={driver / 'dbgview.log'}"])
    run = load_run(driver / "R")
    with open(run.log_path(run.logs[0]), "ab") as fh:
        fh.write(b"one more line\r\n")
    (check,) = verify_logs(run)
    assert check.status == "changed" and check.to_dict()["stage"] == "log"


def test_a_log_is_replaced_only_with_replace(driver, cli):
    run = driver / "R"
    assert cli("ingest", run, "--source", "ours", f"log={driver / 'dbgview.log'}").code == 0
    (driver / "other.log").write_bytes(b"[INPUT-CHK] xor-fold pre-submit = 0x0000000000000000 over 8 bytes\r\n")
    assert_one_line_error(cli("ingest", run, "--source", "ours", f"log={driver / 'other.log'}"), "log:log",
                          "--replace")
    r = cli("ingest", run, "--source", "ours", f"log={driver / 'other.log'}", "--replace")
    assert r.code == 0 and "replaced the run's log:log\n" in r.err
    run = load_run(run)
    assert open(run.log_path(run.logs[0]), "rb").read().startswith(b"[INPUT-CHK] xor-fold")
    assert len(list((driver / "R" / "logs").iterdir())) == 1  # the old file went with its entry


def test_a_hand_written_manifest_maps_a_logged_tag_to_a_buffer(tmp_path):
    """A driver writing its run itself (docs/runs.md): a log entry's `tags` map the tags it logs."""
    run = tmp_path / "R"
    (run / "raw").mkdir(parents=True)
    (run / "logs").mkdir()
    raw = bytes(range(256)) * 4
    (run / "raw" / "scores.bin").write_bytes(raw)
    log = b"[OUT0-CHK] xor-fold pre-submit = 0x%016X over %d bytes (1 pages)\r\n" % (
        _xor_fold(raw), len(raw))
    (run / "logs" / "console.log").write_bytes(log)
    (run / "manifest.json").write_text(json.dumps({
        "format": "forensics-run", "version": 1, "source": "ours",
        "buffers": [{"stage": "raw", "tensor": "convert_scores", "file": "raw/scores.bin", "size": len(raw),
                     "crc32": zlib.crc32(raw)}],
        "logs": [{"name": "console", "file": "logs/console.log", "size": len(log), "crc32": zlib.crc32(log),
                  "tags": {"OUT0": "raw:convert_scores"}}]}))
    evidence = load_run(run).log_evidence()
    assert evidence.labels["OUT0"] == "raw:convert_scores" and evidence.labels["raw"] == "raw:convert_scores"
    assert verify_log(evidence.logs[0][1], buffers=evidence.buffers).match


def _xor_fold(data: bytes) -> int:
    chk = 0
    for i in range(len(data) // 8):
        chk ^= int.from_bytes(data[i * 8:i * 8 + 8], "little")
    return chk


def test_malformed_log_entries_are_one_line_errors(tmp_path, cli):
    run = tmp_path / "R"
    run.mkdir()
    for logs, fragment in ((7, "logs must be a list"), ([{"name": "x"}], "file must be"),
                           ([{"name": "x", "file": "../x.log", "size": 1, "crc32": 0}], "no '.', '..'"),
                           ([{"name": "x", "file": "l.log", "size": 1, "crc32": 0, "tags": ["INPUT"]}], "tags")):
        (run / "manifest.json").write_text(json.dumps({"format": "forensics-run", "version": 1, "source": "ours",
                                                       "buffers": [], "logs": logs}))
        assert_one_line_error(cli("export", run, "--format", "npz", "-o", tmp_path / "o.npz"), fragment)


def test_an_empty_log_is_refused(tmp_path, cli):
    (tmp_path / "empty.log").write_bytes(b"")
    assert_one_line_error(cli("ingest", tmp_path / "R", "--source", "ours", f"log={tmp_path / 'empty.log'}"),
                          "empty log")
    assert not (tmp_path / "R").exists()


# --- the image stage -----------------------------------------------------------------------------------------

def test_ingest_image_keeps_the_file_and_reads_its_geometry(shared_data, tmp_path, cli):
    from PIL import Image

    image = shared_data / "face.jpg"
    r = cli("ingest", tmp_path / "R", "--source", "ours", f"image={image}", "--json")
    assert r.code == 0, r.err
    run = load_run(tmp_path / "R")
    entry = run.buffer("image")
    given = image.read_bytes()
    assert open(run.file_path(entry), "rb").read() == given and entry.crc32 == zlib.crc32(given)
    info = run.image_info()
    with Image.open(image) as img:
        assert (info.width, info.height, info.format, info.mode) == (*img.size, img.format, img.mode)
    assert info.placement is None  # a driver's run: how it made its input is not known
    assert run.input_image == str(image)


def test_ingest_image_refuses_what_is_not_an_image(tmp_path, cli):
    (tmp_path / "notes.txt").write_text("not a picture")
    assert_one_line_error(cli("ingest", tmp_path / "R", "--source", "ours", f"image={tmp_path / 'notes.txt'}"),
                          "not an image")
    assert not (tmp_path / "R").exists()


def test_capture_records_the_image_and_how_the_input_was_made(shared_data, tmp_path):
    from PIL import Image

    from forensics.model.tflite import writer as w
    from forensics.runs.capture import capture

    spec = w.ModelSpec(
        tensors=[w.TensorSpec("image", [1, 48, 64, 3], "uint8", scale=0.5, zero_point=3),
                 w.TensorSpec("image_float", [1, 48, 64, 3], "float32")],
        opcodes=[w.OpCodeSpec(builtin_code=w.DEQUANTIZE)], operators=[w.OperatorSpec(0, [0], [1])],
        inputs=[0], outputs=[1])
    (tmp_path / "m.tflite").write_bytes(w.build_model(spec))
    image = shared_data / "grace_hopper.bmp"
    capture(tmp_path / "m.tflite", tmp_path / "R", image=image, resampling="bilinear")
    run = load_run(tmp_path / "R")
    assert run.stages[:2] == ("image", "input")
    info = run.image_info()
    with Image.open(image) as img:
        w_, h_ = img.size
    scale = min(64 / w_, 48 / h_)  # pycoral's set_resized_input
    assert (info.width, info.height) == (w_, h_)
    assert info.input_size == (64, 48) and info.resized == (int(w_ * scale), int(h_ * scale))
    assert info.offset == (0, 0) and info.placement == "top-left" and info.resampling == "bilinear"
    assert open(run.file_path(info.entry), "rb").read() == image.read_bytes()


def test_a_hand_written_image_entry_says_its_placement(tmp_path):
    run = tmp_path / "R"
    (run / "image").mkdir(parents=True)
    blob = b"\x89PNG not really"
    (run / "image" / "frame.png").write_bytes(blob)

    def manifest(offset):
        (run / "manifest.json").write_text(json.dumps({
            "format": "forensics-run", "version": 1, "source": "ours",
            "buffers": [{"stage": "image", "tensor": "image", "file": "image/frame.png", "size": len(blob),
                         "crc32": zlib.crc32(blob), "width": 640, "height": 480, "input_size": [300, 300],
                         "resized": [300, 225], "offset": offset}]}))
        return load_run(run).image_info()

    assert manifest([0, 37]).placement == "centred"  # (300 - 225) / 2 = 37.5 rows lower
    assert manifest([0, 0]).placement == "top-left"
    assert manifest([0, 49]).placement == "offset"
    assert manifest("top").offset is None and manifest("top").placement is None


@pytest.mark.parametrize("spec", ["log={}", "log:dbgview={}", "image={}"])
def test_a_missing_log_or_image_is_one_line(tmp_path, cli, spec):
    r = cli("ingest", tmp_path / "R", "--source", "ours", spec.format(tmp_path / "missing"))
    assert_one_line_error(r, "missing")
    assert not (tmp_path / "R").exists()


def test_a_malformed_derived_from_is_one_line(tmp_path, cli):
    run = tmp_path / "R"
    (run / "tensor").mkdir(parents=True)
    (run / "tensor" / "t.bin").write_bytes(b"\0" * 4)
    (run / "manifest.json").write_text(json.dumps({"format": "forensics-run", "version": 1, "source": "ours",
                                                   "buffers": [{"stage": "tensor", "tensor": "t",
                                                                "file": "tensor/t.bin", "size": 4, "crc32": 0,
                                                                "derived_from": 7}]}))
    assert_one_line_error(cli("export", run, "--format", "npz", "-o", tmp_path / "o.npz"), "derived_from")
