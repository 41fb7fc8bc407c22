"""At 80 columns (issue 35): commands to paste are printed whole on their own line, byte records never split,
listings fold, never cut ("…"). Pairs built with plain numpy."""

from __future__ import annotations

import json
import shlex

import numpy as np

from tests.conftest import run_cli

ELLIPSIS = "\u2026"


def _put(path, data) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(data))
    return str(path)


def _long_dir(tmp_path):
    return tmp_path / "a_rather_long_directory_name_for_the_captures" / "of_the_driver_under_test"


def test_diagnose_prints_its_command_whole_and_it_runs(tmp_path):
    base = _long_dir(tmp_path)
    rng = np.random.default_rng(1)
    pa = _put(base / "reference.bin", rng.integers(0, 256, 8136, dtype=np.uint8).tobytes())
    pb = _put(base / "driver.bin", rng.integers(0, 256, 4000, dtype=np.uint8).tobytes())  # another buffer
    result = run_cli("diagnose", pa, pb, width=80)
    command = f"forensics diff {shlex.quote(pa)} {shlex.quote(pb)}"
    assert len(command) > 80 and command in [line.strip() for line in result.out.splitlines()]
    assert json.loads(run_cli("diagnose", pa, pb, "--json").out)["command"] == command
    # run as printed, it leads to the truth: the pair differs
    assert run_cli(*shlex.split(command)[1:]).code == 1


def test_a_finding_command_is_printed_whole(tmp_path, shared_data):
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    base = _long_dir(tmp_path)
    tensor = np.random.default_rng(2).integers(0, 256, (1917, 91), dtype=np.uint8)
    raw = np.zeros((1917, 92), np.uint8)
    raw[:, :91] = tensor
    pa = _put(base / "tensor.bin", tensor.tobytes())
    pb = _put(base / "raw.bin", raw.tobytes() + bytes(4))
    argv = ("diagnose", pa, pb, "--model", model, "--tensor", "convert_scores")
    command = json.loads(run_cli(*argv, "--json").out)["findings"][0]["command"]
    assert command.startswith("forensics relayout ") and len(command) > 80
    assert command in [line.strip() for line in run_cli(*argv, width=80).out.splitlines()]


def test_the_bug_list_folds_and_keeps_every_spelling_whole():
    out = run_cli("simulate", "--bug", "list", width=80).out
    bugs = json.loads(run_cli("simulate", "--bug", "list", "--json").out)["bugs"]
    assert ELLIPSIS not in out and all(len(line) <= 80 for line in out.splitlines())
    assert all(any(b["usage"] in line for line in out.splitlines()) for b in bugs)
    words = " ".join(out.split())
    assert all(" ".join(b["description"].split()) in words for b in bugs)  # folded, nothing left out


def test_anchors_never_split_a_record():
    argv = ("anchors", "dumps/broken/convert_scores.bin", "--nonuniform", "--deps", "dumps/face_ssd")
    out = run_cli(*argv, width=80).out
    rows = json.loads(run_cli(*argv, "--json").out)["nonuniform"]
    lines = out.splitlines()
    assert ELLIPSIS not in out and "01 ff 80 80" in {r["hex"] for r in rows}
    assert all(any(r["hex"] in line for line in lines) for r in rows)


def test_diff_records_never_split_at_80_columns():
    argv = ("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", "--deps",
            "dumps/face_ssd")
    out = run_cli(*argv, width=80).out
    records = json.loads(run_cli(*argv, "--json").out)["records"]
    lines = out.splitlines()
    assert ELLIPSIS not in out
    for r in records:
        assert any(r["a"] in line for line in lines) and any(r["b"] in line for line in lines)


def test_a_long_listing_folds_at_cell_boundaries(tmp_path):
    """More records than a rich table is drawn for: each row folds onto indented lines, never cut."""
    rng = np.random.default_rng(3)
    a = rng.integers(0, 256, 4 * 3000, dtype=np.uint8)
    b = a ^ 0xFF
    pa, pb = _put(tmp_path / "a.bin", a.tobytes()), _put(tmp_path / "b.bin", b.tobytes())
    out = run_cli("diff", pa, pb, "--all", width=40).out
    lines = out.splitlines()
    assert all(len(line) <= 40 for line in lines) and ELLIPSIS not in out
    records = json.loads(run_cli("diff", pa, pb, "--all", "--json").out)["records"]
    text = set(lines)
    assert len(records) == 3000
    for r in records[::97]:
        assert any(r["a"] in line for line in text) and any(r["xor"] in line for line in text)


def test_hexdump_of_wide_records_breaks_between_bytes():
    out = run_cli("hexdump", "dumps/ours/input.bin", "--at", "0", "--length", "960", width=60).out
    lines = out.splitlines()
    assert all(len(line) <= 60 for line in lines)
    hex_lines = [line.strip() for line in lines if line.strip()[:2] == "00"]
    assert hex_lines and all(all(len(w) == 2 for w in line.split()) for line in hex_lines)  # whole bytes only
