"""diagnose_dumps: every heuristic fires on a planted bug with the right structured evidence, and clean pairs
(identical, or legitimately different: moved detections, runtime rounding, other scores) raise nothing."""

from __future__ import annotations

import tracemalloc
import zlib

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.buffer.coverage import analyse_coverage
from forensics.io.dump import open_dump
from forensics.core.errors import InputError
from forensics.core.layout import RecordLayout
from forensics.diagnose import KINDS, Finding, diagnose_dumps

SCORES = "dumps/libedgetpu/convert_scores.bin"
BOXES = "dumps/libedgetpu/Squeeze1.bin"
SCORES_LAYOUT = RecordLayout(record_size=4, pad_lanes=(2, 3))


def _read(path) -> bytes:
    with open(path, "rb") as fh:
        return fh.read()


@pytest.fixture
def put(tmp_path):
    counter = iter(range(10_000))

    def write(data, name=None) -> str:
        path = tmp_path / (name or f"dump{next(counter)}.bin")
        path.write_bytes(bytes(data))
        return str(path)

    return write


def _records(data: bytes, rs: int = 4) -> np.ndarray:
    return np.frombuffer(data, np.uint8).reshape(-1, rs)


def _random(n: int, seed: int) -> bytes:
    return np.random.default_rng(seed).integers(0, 256, n, dtype=np.uint8).tobytes()


# --- clean pairs ---------------------------------------------------------------------------------------------

def test_identical_story_dumps_are_clean_and_crcs_match_zlib():
    result = diagnose_dumps(SCORES, "dumps/ours/convert_scores.bin")
    assert result.clean and result.identical and result.findings == ()
    assert result.crc32_a == result.crc32_b == zlib.crc32(_read(SCORES))
    assert result.to_dict()["findings"] == []


def test_moved_detection_is_clean_and_really_changes_the_decode(put):
    from forensics.decode.deps import read_deps
    from forensics.decode.report import decode_dumps

    scores = bytearray(_read(SCORES))
    face = scores[203 * 4:204 * 4]
    scores[203 * 4:204 * 4] = bytes.fromhex("ff008080")
    scores[700 * 4:701 * 4] = face  # the face now at another anchor: a different, legitimate detection
    moved = put(scores)
    deps = read_deps("dumps/face_ssd")
    before = decode_dumps(deps, BOXES, SCORES).result.detections
    after = decode_dumps(deps, BOXES, moved).result.detections
    assert [d.anchor for d in before] != [d.anchor for d in after]
    result = diagnose_dumps(SCORES, moved, layout=SCORES_LAYOUT)
    assert result.findings == (), [f.evidence for f in result.findings]
    assert result.records_differing == 2
    assert result.verdict == "UNEXPLAINED" and result.exit_code == 1  # differing: never exit 0


def test_other_scores_and_runtime_rounding_are_clean(put):
    # Every detection's score changes a little (another image), and box deltas differ by 1 LSB in many
    # records (XNNPACK vs the reference kernel): values change, layout does not.
    rng = np.random.default_rng(5)
    scores = _records(_read(SCORES)).copy()
    busy = rng.choice(len(scores), 60, replace=False)
    scores[busy, 1] = rng.integers(1, 255, busy.size)
    scores[busy, 0] = 255 - scores[busy, 1]
    other = diagnose_dumps(SCORES, put(scores.tobytes()), layout=SCORES_LAYOUT)
    assert other.findings == () and other.verdict == "UNEXPLAINED" and other.exit_code == 1
    boxes = np.frombuffer(_read(BOXES), np.uint8).astype(np.int16)
    jitter = rng.integers(-1, 2, boxes.size)
    rounded = np.clip(boxes + jitter, 0, 255).astype(np.uint8)
    result = diagnose_dumps(BOXES, put(rounded.tobytes()))
    assert result.records_differing > 1000 and result.findings == () and result.verdict == "UNEXPLAINED"
    assert result.characterization["max_delta"] == 1
    tolerated = diagnose_dumps(BOXES, put(rounded.tobytes()), tolerance=1)
    assert tolerated.verdict == "WITHIN TOLERANCE" and tolerated.exit_code == 0


# --- each heuristic fires ------------------------------------------------------------------------------------

@pytest.mark.parametrize("k", [4, -4, 12, -1, 3])
def test_shift_names_the_byte_count(put, k):
    data = _read(BOXES)
    moved = data[k:] + bytes(k) if k > 0 else bytes(-k) + data[:k]
    result = diagnose_dumps(BOXES, put(moved))
    assert result.kinds[0] == "shift"
    shift = result.finding("shift")
    assert shift["shift_bytes"] == -k and shift["scope"] == "global"
    # the oracle: B really is A moved by k over the reported overlap
    lo, hi = shift["overlap"]
    assert moved[lo:hi] == data[lo + k:hi + k]


def test_row_written_twice_is_a_local_shift():
    result = diagnose_dumps("dumps/libedgetpu/input.bin", "dumps/broken/input.bin")
    shift = result.finding("shift")
    assert result.kinds == ("shift",) and shift["scope"] == "local" and shift["shift_bytes"] == 960
    lo, hi = shift["overlap"]
    assert lo // 960 == (hi - 1) // 960 == 117  # the row make_dumps.py broke


def test_fill_and_truncation_and_head_window_on_the_broken_dma():
    result = diagnose_dumps(SCORES, "dumps/broken/convert_scores.bin")
    assert result.kinds == ("fill", "truncation", "head_window")
    assert result.verdict == "EXPLAINED" and result.explained_fraction == 1.0 and result.residual is None
    coverage = analyse_coverage(open_dump("dumps/broken/convert_scores.bin"), b"\xcc")  # a second reader
    fill = result.finding("fill")
    assert [(r["start"], r["end"]) for r in fill["ranges"]] == [tuple(r) for r in coverage.untouched_ranges]
    assert result.finding("truncation")["stops_at_record"] == 1500
    assert result.finding("head_window")["head_record"] == "ff 00 80 80"


@pytest.mark.parametrize("pattern,name", [(b"\xef\xbe\xad\xde", "DEADBEEF"), (b"\x00", "0x00"), (b"\xaa", "0xAA")])
def test_fill_in_the_middle_names_the_sentinel(put, pattern, name):
    data = bytearray(_read(BOXES))
    data[1000:1400] = pattern * (400 // len(pattern))
    result = diagnose_dumps(BOXES, put(data))
    assert result.kinds == ("fill",)
    fill = result.finding("fill")
    assert fill["sentinels"] == [name] and (fill["ranges"][0]["start"], fill["ranges"][0]["end"]) == (1000, 1400)


def test_user_sentinel_and_min_run(put):
    data = bytearray(_read(BOXES))
    data[64:96] = b"\x5a\xa5" * 16
    assert diagnose_dumps(BOXES, put(data)).finding("fill") is None
    found = diagnose_dumps(BOXES, put(data), sentinels=[("0x5AA5", b"\x5a\xa5")]).finding("fill")
    assert found is not None and found["bytes"] == 32
    assert diagnose_dumps(BOXES, put(data), sentinels=[("0x5AA5", b"\x5a\xa5")], min_run=40).findings == ()


def test_stride_raw_versus_tensor_without_a_model(put):
    tensor = _records(_read(SCORES))[:, :2].tobytes()  # 4068 bytes: z=2 without the lane padding
    result = diagnose_dumps(SCORES, put(tensor))
    stride = result.finding("stride")
    assert result.kinds == ("stride",)
    assert (stride["raw_side"], stride["raw_size"], stride["tensor_size"]) == ("A", 8136, 4068)
    assert stride["records_equal"] == 2034 and stride["pad_constant"] == 0x80 and stride["explains"] == 1.0
    flipped = diagnose_dumps(put(tensor), SCORES)
    assert flipped.finding("stride")["raw_side"] == "B"


def test_stride_with_the_real_model_layer_map(shared_data, put):
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.tensors import tensor_record_layout

    path = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    tensor = _random(174447, 3)
    with open_model(path) as model:
        view = tensor_record_layout(model, "convert_scores", 176368)
    raw = inverse_relayout(np.frombuffer(tensor, np.uint8), layer_map(view.layer)).tobytes()
    result = diagnose_dumps(put(raw), put(tensor), model_view=view)
    stride = result.finding("stride")
    assert result.kinds == ("stride",) and stride["records_equal"] == 1917 == stride["records"]
    assert (stride["raw_size"], stride["tensor_size"], stride["record_size"]) == (176368, 174447, 92)


def test_signedness(put):
    data = _read(BOXES)
    result = diagnose_dumps(BOXES, put(bytes(b ^ 0x80 for b in data)))
    assert result.kinds == ("signedness",) and result.finding("signedness")["lanes"] == [0, 1, 2, 3]
    assert result.finding("signedness")["lanes_text"] == "0-3"
    # int16 elements: only the most significant byte (the second, little endian) flips
    words = np.frombuffer(data, "<u2") ^ 0x8000
    found = diagnose_dumps(BOXES, put(words.tobytes())).finding("signedness")
    assert found is not None and found["lanes"] == [1, 3]


# A 16-bit swap inside 4-byte records is named at its own word size: (1, 0), whatever the record size.
@pytest.mark.parametrize("perm,named,endianness", [((3, 2, 1, 0), (3, 2, 1, 0), True), ((1, 0, 3, 2), (1, 0), True),
                                                   ((0, 2, 1, 3), (0, 2, 1, 3), False)])
def test_lane_swap(put, perm, named, endianness):
    swapped = _records(_read(BOXES))[:, list(perm)].tobytes()
    result = diagnose_dumps(BOXES, put(swapped))
    found = result.finding("lane_swap")
    assert result.kinds == ("lane_swap",) and result.verdict == "EXPLAINED"
    assert tuple(found["permutation"]) == named and found["endianness"] is endianness


def test_lane_swap_on_mostly_uniform_scores(put):
    swapped = _records(_read(SCORES))[:, ::-1].tobytes()
    found = diagnose_dumps(SCORES, put(swapped), layout=SCORES_LAYOUT).finding("lane_swap")
    assert found is not None and found["permutation"] == [3, 2, 1, 0] and found["explains"] == 1.0


def test_relayout_records_in_another_order(put):
    records = _records(_read(BOXES))
    order = np.arange(2034).reshape(-1, 6).T.reshape(-1)  # a tile-order mistake: columns read as rows
    result = diagnose_dumps(BOXES, put(records[order].tobytes()))
    assert result.kinds == ("relayout",)
    assert result.finding("relayout")["same_records"] is True


def test_truncation_shorter_either_side(put):
    data = _read(BOXES)
    short = put(data[:4000])
    result = diagnose_dumps(BOXES, short)
    found = result.finding("truncation")
    assert result.kinds == ("truncation",)
    assert found["shorter"] == "B" and found["missing_bytes"] == len(data) - 4000 and found["stops_at_record"] == 1000
    # B longer and holding all of A: a larger allocation dumped whole, not A "stopping early"
    longer = diagnose_dumps(short, BOXES)
    assert longer.kinds == ("oversize",)
    assert (longer.finding("oversize")["offset"], longer.finding("oversize")["extra_bytes"]) == (0, len(data) - 4000)


def test_stale_buffer_from_the_previous_run(put):
    previous = put(_random(8136, 11), "previous.bin")
    stale = put(_read(previous))
    result = diagnose_dumps(SCORES, stale, previous=previous)
    found = result.finding("stale")
    assert found is not None and found["identical_to_previous"] is True
    assert diagnose_dumps(SCORES, stale).finding("stale") is None
    # partly stale: only the second half was not rewritten
    half = put(_read(SCORES)[:4068] + _read(previous)[4068:])
    found = diagnose_dumps(SCORES, half, previous=open_dump(previous)).finding("stale")
    assert found["identical_to_previous"] is False and found["ratio"] == 1.0
    # the same buffer as last time is fine when A agrees
    assert diagnose_dumps(SCORES, SCORES, previous=SCORES).findings == ()


def test_head_window_needs_widespread_differences(put):
    scores = _records(_read(SCORES)).copy()
    scores[800:1200] = np.frombuffer(bytes.fromhex("00ff8080"), np.uint8)  # 400 records: widespread
    found = diagnose_dumps(SCORES, put(scores.tobytes()), layout=SCORES_LAYOUT).finding("head_window")
    assert found is not None and found["first_differing_offset"] == 800 * 4
    narrow = diagnose_dumps(SCORES, put(scores.tobytes()), layout=SCORES_LAYOUT, window=4096)
    assert narrow.finding("head_window") is None  # the difference starts inside a 4096-byte window


# --- streaming --------------------------------------------------------------------------------------------------

def test_small_chunks_give_the_same_findings(put):
    data = bytearray(_random(1 << 16, 2))
    data[5000:9000] = b"\xcc" * 4000  # crosses several 1 KiB chunks
    moved = put(bytes(data))
    big = diagnose_dumps(put(_random(1 << 16, 2)), moved)
    small = diagnose_dumps(put(_random(1 << 16, 2)), moved, chunk=1024)
    assert [f.to_dict() for f in big.findings] == [f.to_dict() for f in small.findings]
    assert small.finding("fill")["ranges"] == [{"sentinel": "0xCC", "start": 5000, "end": 9000}]
    assert small.crc32_b == zlib.crc32(bytes(data))


def test_memory_stays_flat_on_a_large_pair(put):
    size = 24 << 20
    a = _random(size, 9)
    b = bytearray(a[5:] + bytes(5))
    b[size - (1 << 20):] = b"\xcc" * (1 << 20)
    pa, pb = put(a), put(b)
    del a, b
    tracemalloc.start()
    try:
        result = diagnose_dumps(pa, pb, chunk=1 << 20)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.finding("shift") is None or result.finding("shift")["shift_bytes"] == -5
    assert "fill" in result.kinds
    assert peak < 10 << 20, peak  # a few chunk-sized (1 MiB) temporaries, never a whole 24 MiB dump


# --- properties -------------------------------------------------------------------------------------------------

@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), records=st.integers(64, 1024), k=st.integers(-40, 40).filter(bool))
def test_property_random_shift_is_found_exactly(put, seed, records, k):
    data = _random(records * 4, seed)
    moved = data[k:] + bytes(k) if k > 0 else bytes(-k) + data[:k]
    found = diagnose_dumps(put(data), put(moved)).finding("shift")
    assert found is not None and found["shift_bytes"] == -k


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), records=st.integers(64, 1024), changed=st.integers(1, 3))
def test_property_a_few_changed_records_are_clean(put, seed, records, changed):
    data = _records(_random(records * 4, seed)).copy()
    rng = np.random.default_rng(seed)
    rows = rng.choice(records, changed, replace=False)
    data[rows] = rng.integers(1, 255, (changed, 4), dtype=np.uint8)
    a, b = put(_random(records * 4, seed)), put(data.tobytes())
    assert diagnose_dumps(a, b).findings == ()


# --- API ----------------------------------------------------------------------------------------------------------

def test_result_and_finding_shapes():
    result = diagnose_dumps(SCORES, "dumps/broken/convert_scores.bin")
    doc = result.to_dict()
    assert set(doc) >= {"findings", "size_a", "size_b", "crc32_a", "crc32_b", "first_differing_offset"}
    assert all({"kind", "evidence", "hint"} <= set(f) and f["kind"] in KINDS for f in doc["findings"])
    assert isinstance(result.findings[0], Finding) and not result
    assert doc["first_differing_offset"] == 1500 * 4


def test_bad_arguments_are_input_errors(put):
    with pytest.raises(InputError, match="no such file"):
        diagnose_dumps("dumps/nope.bin", SCORES)
    with pytest.raises(InputError, match="empty"):
        diagnose_dumps(put(b""), SCORES)
    with pytest.raises(InputError):
        diagnose_dumps(SCORES, SCORES, min_run=0)
