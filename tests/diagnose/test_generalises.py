"""diagnose on the classes of bugs issue 24 found it misnaming, each built here with plain numpy (no forensics
generator): 64-bit words at the default 4-byte record, a clamp in int8 order, weak evidence from mostly zero
data, the kind that explains most named first, a ring buffer rotated by pages, rows at an aligned pitch, a
tolerance in the element's dtype, pad-only differences, a stale buffer, and drift from another input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forensics.diagnose import diagnose_dumps
from forensics.core.layout import RecordLayout

PAGE = 4096


def _put(tmp_path, name: str, data: bytes, sidecar: dict | None = None) -> str:
    path = tmp_path / name
    path.write_bytes(bytes(data))
    if sidecar is not None:
        path.with_suffix(".json").write_text(json.dumps(sidecar))
    return str(path)


def _f32(seed: int, count: int = 1917 * 32) -> np.ndarray:
    return np.random.default_rng(seed).normal(0, 1, count).astype("<f4")


def _i8(seed: int, count: int = 60_000, sd: float = 60) -> np.ndarray:
    return np.clip(np.random.default_rng(seed).normal(0, sd, count), -128, 127).astype(np.int8)


def _diag(tmp_path, a, b, previous=None, sidecar=None, name="", **kw):
    return diagnose_dumps(_put(tmp_path, f"a{name}.bin", a, sidecar), _put(tmp_path, f"b{name}.bin", b, sidecar),
                          previous=_put(tmp_path, "p.bin", previous) if previous is not None else None, **kw)


# --- 64-bit words at the default 4-byte record ------------------------------------------------------------------

@pytest.mark.parametrize("seed", [0, 1])
def test_halves_of_64_bit_words_exchanged(tmp_path, seed):
    a = np.random.default_rng(seed).normal(0, 1, 20_000).astype("<f8").tobytes()
    b = np.frombuffer(a, np.uint8).reshape(-1, 8)[:, [4, 5, 6, 7, 0, 1, 2, 3]].tobytes()
    result = _diag(tmp_path, a, b)
    assert result.primary == "lane_swap" and result.verdict == "EXPLAINED", result.kinds
    assert result.finding("lane_swap")["permutation"] == [4, 5, 6, 7, 0, 1, 2, 3]


@pytest.mark.parametrize("lane,mask", [(5, 0x10), (2, 0x04)])
def test_a_bit_stuck_on_one_byte_lane_of_a_64_bit_bus(tmp_path, lane, mask):
    a = np.random.default_rng(3).integers(0, 256, 64_000, dtype=np.uint8)
    b = a.copy()
    b[lane::8] |= mask
    result = _diag(tmp_path, a.tobytes(), b.tobytes())
    assert result.primary == "bits" and result.verdict == "EXPLAINED", result.kinds
    f = result.finding("bits")
    assert f["period"] == 8 and f["ops"] == [{"lane": lane, "op": "set", "mask": f"0x{mask:02x}"}]


# --- value maps in the dtype's own order -----------------------------------------------------------------------

@pytest.mark.parametrize("sidecar", [None, {"dtype": "int8"}])
def test_int8_clamped_is_saturation_in_signed_order(tmp_path, sidecar):
    a = _i8(0)
    b = np.clip(a, -100, 100).astype(np.int8)
    result = _diag(tmp_path, a.tobytes(), b.tobytes(), sidecar=sidecar)
    assert result.primary == "saturation" and result.verdict == "EXPLAINED", result.kinds
    f = result.finding("saturation")
    assert f["order"] == "int8" and f["range"] == [-100, 100]


def test_uint8_clamped_stays_saturation_in_unsigned_order(tmp_path):
    a = np.random.default_rng(1).integers(0, 256, 30_000, dtype=np.uint8)
    b = np.clip(a, 20, 230).astype(np.uint8)
    f = _diag(tmp_path, a.tobytes(), b.tobytes()).finding("saturation")
    assert f is not None and f["order"] == "uint8" and f["range"] == [20, 230]


# --- weak evidence must not win --------------------------------------------------------------------------------

def _classifier(seed: int, n: int = 1001) -> np.ndarray:
    """A classifier's uint8 class scores: nearly all zero, a few classes scored."""
    rng = np.random.default_rng(seed)
    s = np.zeros(n, np.uint8)
    s[rng.choice(n, 12, replace=False)] = rng.integers(1, 40, 12)
    s[rng.integers(0, n)] = rng.integers(150, 256)
    return s


@pytest.mark.parametrize("seed", range(6))
def test_another_images_classifier_output_is_unexplained(tmp_path, seed):
    a, b = _classifier(2 * seed), _classifier(2 * seed + 1)
    result = _diag(tmp_path, a.tobytes(), b.tobytes())
    assert result.verdict == "UNEXPLAINED" and result.findings == (), [f.evidence for f in result.findings]
    assert result.exit_code == 1


def test_every_finding_reports_its_evidence(tmp_path):
    a = _f32(0).tobytes()
    b = bytes(16) + a[:-16]
    f = _diag(tmp_path, a, b).finding("shift")
    assert f["evidence_bytes"]["exact"] > 1000 and f["evidence_bytes"]["distinct_values"] > 200


# --- primary is the kind that explains the most ----------------------------------------------------------------

def test_moved_zero_rows_name_the_relayout_first(tmp_path):
    rng = np.random.default_rng(5)
    rows = _f32(5).reshape(-1, 32)
    rows[rng.choice(len(rows), len(rows) // 5, replace=False)] = 0  # rows of zero floats
    a = rows.tobytes()
    b = rows[rng.permutation(len(rows))].tobytes()
    result = _diag(tmp_path, a, b)
    best = max(result.findings, key=lambda f: f.explains)
    assert result.primary == best.kind == "relayout", [(f.kind, f.explains) for f in result.findings]


# --- pages vs shift: a ring buffer rotated by whole pages ------------------------------------------------------

@pytest.mark.parametrize("pages", [1, 3])
def test_ring_buffer_started_pages_in_is_a_rotation(tmp_path, pages):
    a = np.random.default_rng(7).integers(0, 256, 16 * PAGE, dtype=np.uint8)
    b = np.roll(a, -pages * PAGE)
    result = _diag(tmp_path, a.tobytes(), b.tobytes())
    assert result.primary == "rotation" and result.verdict == "EXPLAINED", result.kinds
    f = result.finding("rotation")
    assert f["rotate_bytes"] == pages * PAGE and f["pages"] == pages
    assert "twice" not in f.evidence


def test_rotation_by_bytes_not_pages(tmp_path):
    a = _f32(2).tobytes()
    b = a[1000:] + a[:1000]
    f = _diag(tmp_path, a, b).finding("rotation")
    assert f is not None and f["rotate_bytes"] == 1000 and f["pages"] is None


# --- pitch: rows written at an aligned pitch -------------------------------------------------------------------

@pytest.mark.parametrize("same_size", [False, True])
def test_rows_at_a_128_byte_aligned_pitch(tmp_path, same_size):
    row, pitch, rows = 10_944, 11_008, 12
    a = np.random.default_rng(9).integers(0, 200, (rows, row), dtype=np.uint8)
    padded = np.zeros((rows, pitch), np.uint8)
    padded[:, :row] = a
    b = padded.tobytes()[:rows * row] if same_size else padded.tobytes()
    result = _diag(tmp_path, a.tobytes(), b)
    assert result.primary == "pitch", [(f.kind, f.explains, f.evidence) for f in result.findings]
    f = result.finding("pitch")
    assert f["pitch"] == pitch and f["row_bytes"] == row


# --- tolerance in the element's dtype --------------------------------------------------------------------------

def test_tolerance_counts_int8_codes_not_bytes(tmp_path):
    a = _i8(4)
    b = a.copy()
    b[a == 0] = -1  # 0x00 -> 0xff: 1 LSB in int8, 255 as bytes
    b[::97] = np.clip(b[::97].astype(np.int16) + 1, -128, 127)
    within = _diag(tmp_path, a.tobytes(), b.tobytes(), sidecar={"dtype": "int8"}, tolerance=1)
    assert within.verdict == "WITHIN TOLERANCE" and within.exit_code == 0
    as_bytes = _diag(tmp_path, a.tobytes(), b.tobytes(), tolerance=1, name="u8")  # no dtype known: uint8 bytes
    assert as_bytes.exit_code == 1


def test_tolerance_in_int8_agrees_with_diff(tmp_path):
    from forensics import reports

    a = _i8(4)
    b = a.copy()
    b[a == 0] = -1
    pa, pb = _put(tmp_path, "a.bin", a.tobytes(), {"dtype": "int8"}), _put(tmp_path, "b.bin", b.tobytes(),
                                                                          {"dtype": "int8"})
    assert reports.diagnose(pa, pb, tolerance=1).exit_code == 0
    assert reports.diagnose(pa, pb, tolerance=0).exit_code == 1


def test_tolerance_never_passes_a_size_change_or_a_float(tmp_path):
    a = _f32(1)
    b = a.copy()
    b[::10] = np.nextafter(b[::10], np.float32(10))  # one float ULP, not an LSB of a quantized code
    assert _diag(tmp_path, a.tobytes(), b.tobytes(), sidecar={"dtype": "float32"}, tolerance=1).exit_code == 1


# --- pad lanes: one rule with diff -----------------------------------------------------------------------------

def test_pad_only_differences_match_in_diagnose_and_diff(tmp_path):
    from forensics import reports

    rec = np.tile(np.array([255, 0, 128, 128], np.uint8), (2034, 1))
    rec[np.random.default_rng(0).choice(2034, 40, replace=False), :2] = [200, 55]
    b = rec.copy()
    b[:, 2:] = 0  # the pad lanes hold zeros on one side
    pa, pb = _put(tmp_path, "a.bin", rec.tobytes()), _put(tmp_path, "b.bin", b.tobytes())
    diag = reports.diagnose(pa, pb, pad=(2, 3))
    diff = reports.diff(pa, pb, pad=(2, 3))
    assert diag.exit_code == diff.exit_code == 0
    result = diag.result
    assert result.verdict == "IDENTICAL" and result.pad_only_bytes == 4068 and not result.findings
    assert "4,068 bytes differ only in pad lanes 2,3 (ignored)" in result.hint
    # a data lane differing too is not hidden by the pad lanes
    b[5, 1] = 9
    pb2 = _put(tmp_path, "b2.bin", b.tobytes())
    assert reports.diagnose(pa, pb2, pad=(2, 3)).exit_code == 1 and reports.diff(pa, pb2, pad=(2, 3)).exit_code == 1


# --- stale and drift -------------------------------------------------------------------------------------------

def test_b_identical_to_the_previous_run_is_stale_first(tmp_path):
    a, prev = _i8(0).tobytes(), _i8(1).tobytes()
    result = _diag(tmp_path, a, prev, previous=prev)
    assert result.primary == "stale" and result.kinds == ("stale",)
    assert result.finding("stale")["identical_to_previous"] and "cacheline" not in result.kinds


def _scores(seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 4, (1917, 91)).astype(np.uint8)
    s[:, 0] = rng.integers(200, 256, 1917)
    return s


def test_small_drift_from_another_input_asks_for_the_input(tmp_path):
    a = _scores(0)
    rng = np.random.default_rng(1)
    b = a.astype(np.int16)
    pick = rng.random(a.shape) < 0.03
    b[pick] += rng.choice([-2, -1, 1, 2], int(pick.sum()))
    b = np.clip(b, 0, 255).astype(np.uint8)
    result = _diag(tmp_path, a.tobytes(), b.tobytes())
    assert result.verdict == "UNEXPLAINED"
    assert "another input or another model version?" in result.hint and "cache" not in result.hint


def test_inputs_crcs_are_compared_when_given(tmp_path):
    a = _scores(0)
    b = a.copy()
    b[::50, 1] += 1
    ia, ib = _put(tmp_path, "ia.bin", b"image one"), _put(tmp_path, "ib.bin", b"image two")
    result = _diag(tmp_path, a.tobytes(), b.tobytes(), inputs=(ia, ib))
    assert result.inputs["equal"] is False and "the inputs differ" in result.hint
    same = _diag(tmp_path, a.tobytes(), b.tobytes(), inputs=(ia, ia))
    assert same.inputs["equal"] is True and "the inputs are identical" in same.hint


# --- the command line: --inputs, pad lanes and the tolerance's unit in the text ---------------------------------

def test_cli_pad_only_text_and_json(tmp_path, cli):
    rec = np.tile(np.array([255, 0, 128, 128], np.uint8), (512, 1))
    b = rec.copy()
    b[:, 2:] = 0
    pa, pb = _put(tmp_path, "a.bin", rec.tobytes()), _put(tmp_path, "b.bin", b.tobytes())
    result = cli("diagnose", pa, pb, "--pad", "2,3")
    lines = [line.rstrip() for line in result.out.splitlines()]
    assert result.code == 0 and lines[0] == ("IDENTICAL | A and B are identical outside the pad lanes (pad lanes "
                                             "ignored, as diff ignores them)")
    assert lines[-1] == "hint: 1,024 bytes differ only in pad lanes 2,3 (ignored)"
    doc = json.loads(cli("diagnose", pa, pb, "--pad", "2,3", "--json").out)
    assert doc["verdict"] == "IDENTICAL" and doc["pad_only_bytes"] == 1024 and doc["identical"] is False
    diff = cli("diff", pa, pb, "--pad", "2,3")
    assert diff.code == 0 and diff.out.startswith("MATCH")


def test_cli_tolerance_names_the_dtype(tmp_path, cli):
    a = _i8(4, 4096)
    b = a.copy()
    b[a == 0] = -1
    side = {"dtype": "int8"}
    pa, pb = _put(tmp_path, "a.bin", a.tobytes(), side), _put(tmp_path, "b.bin", b.tobytes(), side)
    result = cli("diagnose", pa, pb, "--tolerance", "1")
    assert result.code == 0 and result.out.startswith(
        "WITHIN TOLERANCE | A and B differ by at most 1 LSB per int8 element")
    assert cli("diagnose", pa, pb, "--atol", "1lsb").code == 0


def test_cli_inputs_are_compared(tmp_path, cli):
    a = _scores(0)
    b = a.copy()
    b[::50, 1] += 1
    pa, pb = _put(tmp_path, "a.bin", a.tobytes()), _put(tmp_path, "b.bin", b.tobytes())
    ia, ib = _put(tmp_path, "ia.bin", b"one"), _put(tmp_path, "ib.bin", b"two")
    doc = json.loads(cli("diagnose", pa, pb, "--inputs", ia, ib, "--json").out)
    assert doc["verdict"] == "UNEXPLAINED" and doc["inputs"]["equal"] is False and doc["exit_code"] == 1
    text = cli("diagnose", pa, pb, "--inputs", ia, ib)
    assert text.code == 1 and "the inputs differ" in text.out


@pytest.mark.parametrize("argv,fragment", [
    (["--inputs", "MISSING", "A"], "no such file"),
    (["--inputs", "A"], "expected 2 arguments"),
    (["--tolerance", "-1"], "--tolerance"),
])
def test_cli_bad_inputs_and_tolerance(tmp_path, cli, argv, fragment):
    from tests.conftest import assert_one_line_error

    pa = _put(tmp_path, "a.bin", bytes(range(256)) * 4)
    args = [str(tmp_path / "missing.bin") if x == "MISSING" else pa if x == "A" else x for x in argv]
    assert_one_line_error(cli("diagnose", pa, pa, *args), fragment)


@pytest.mark.parametrize("dtype,lo,hi", [("int16", -5000, 5000), ("float32", -1.5, 1.5)])
def test_multi_byte_elements_clamped_are_saturation_in_their_dtype(tmp_path, dtype, lo, hi):
    rng = np.random.default_rng(8)
    a = (rng.normal(0, 3000, 30_000) if dtype == "int16" else rng.normal(0, 1, 30_000)).astype(dtype)
    b = np.clip(a, lo, hi).astype(dtype)
    result = _diag(tmp_path, a.tobytes(), b.tobytes(), sidecar={"dtype": dtype})
    assert result.primary == "saturation" and result.verdict == "EXPLAINED", result.kinds
    f = result.finding("saturation")
    assert f["order"] == dtype and f["range"] == [lo, hi]


def test_b_identical_to_previous_scores_is_stale_not_cache_lines(tmp_path):
    # Two runs' face scores differ in a few scattered lines (the detections): B being the previous run's buffer
    # is one stale buffer, not lines a cache kept.
    def face(seed):
        rec = np.tile(np.array([255, 0, 128, 128], np.uint8), (2034, 1))
        rng = np.random.default_rng(seed)
        rec[rng.choice(2034, 6, replace=False), :2] = [40, 215]
        return rec.tobytes()

    a, prev = face(0), face(1)
    result = _diag(tmp_path, a, prev, previous=prev)
    assert result.primary == "stale" and "cacheline" not in result.kinds, result.kinds
    assert result.finding("stale")["identical_to_previous"] and "flush" not in result.finding("stale").hint
