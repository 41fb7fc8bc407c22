"""anchors: the exact mode (ties -> first to occur) against collections.Counter, and the story's numbers."""

import contextlib
import json
from collections import Counter

import pytest
from hypothesis import given, settings, strategies as st

from forensics.buffer import anchors as anchors_mod
from forensics.buffer.anchors import analyse_anchors
from forensics.io.dump import open_dump
from forensics.core.layout import RecordLayout
from tests.conftest import assert_one_line_error


def reference_mode(data: bytes, rs: int):
    records = [data[i:i + rs] for i in range(0, len(data) - len(data) % rs, rs)]
    counts = Counter(records)
    first = {}
    for i, r in enumerate(records):
        first.setdefault(r, i)
    best = max(counts, key=lambda r: (counts[r], -first[r]))
    departing = [i for i, r in enumerate(records) if r != best]
    tied = sum(1 for r in counts if counts[r] == counts[best]) - 1
    ranked = sorted(counts, key=lambda r: (-counts[r], first[r]))
    return best, counts[best], departing, len(records), tied, ranked, len(counts)


@contextlib.contextmanager
def small_chunks():
    # Several chunks per buffer, so the per-chunk tallies are merged and the first-chunk guess can be wrong.
    # A distinct-record budget of 3 sends most cases down the hash-partitioned counting path, and buffers of
    # 10 records or more are scanned in two halves on two threads. Restored after each case: the other tests
    # of this module run with the real sizes.
    names = ("_CHUNK_RECORDS", "_MERGE_AT", "_BUDGET", "_PARALLEL_RECORDS")
    old = [getattr(anchors_mod, n) for n in names]
    for name, value in zip(names, (7, 5, 3, 10)):
        setattr(anchors_mod, name, value)
    try:
        yield
    finally:
        for name, value in zip(names, old):
            setattr(anchors_mod, name, value)


@st.composite
def buffers(draw):
    rs = draw(st.sampled_from([1, 2, 3, 4, 8, 12]))
    alphabet = [draw(st.binary(min_size=rs, max_size=rs)) for _ in range(draw(st.integers(1, 12)))]
    n = draw(st.integers(1, 120))
    data = b"".join(draw(st.sampled_from(alphabet)) for _ in range(n))
    return data + draw(st.binary(max_size=rs - 1)), rs


@given(buffers())
@settings(max_examples=200, deadline=None)
def test_mode_equals_counter(tmp_path_factory, case):
    data, rs = case
    path = tmp_path_factory.mktemp("a") / "x.bin"
    path.write_bytes(data)
    with small_chunks():
        r = analyse_anchors(open_dump(path), RecordLayout(record_size=rs), nonuniform=True, limit=None)
    best, count, departing, records, tied, ranked, distinct = reference_mode(data, rs)
    assert r.dominant.record == best and r.dominant.count == count
    assert r.tied_total == tied and r.distinct == distinct
    assert [t.record for t in r.top] == ranked[:len(r.top)] and len(r.top) == min(10, distinct)
    assert [x.index for x in r.nonuniform] == departing
    assert r.dominant.count + r.nonuniform_total == r.records == records
    assert r.region.trailing == len(data) % rs
    assert sum(t.count for t in r.top) <= records
    for lane in r.lanes:
        column = [data[i + lane.lane] for i in range(0, records * rs, rs)]
        assert (lane.min, lane.max, lane.distinct) == (min(column), max(column), len(set(column)))


def make(tmp_path, data: bytes, name="x.bin"):
    path = tmp_path / name
    path.write_bytes(data)
    return open_dump(path)


def test_story_case_anchor_203(tmp_path):
    dump = open_dump("dumps/ours/convert_scores.bin")
    r = analyse_anchors(dump, RecordLayout(pad_lanes=(2, 3), scale=1 / 256, zero_point=0), nonuniform=True)
    assert (r.dominant.record.hex(" "), r.dominant.count, r.records) == ("ff 00 80 80", 2025, 2034)
    assert [x.index for x in r.nonuniform] == [143, 146, 200, 203, 206, 263, 266, 1278, 1284]
    face = {x.index: r.layout.values(x.record) for x in r.nonuniform}[203]
    assert face[1] == 255 / 256
    assert r.head_window_trap and r.first_nonuniform_offset == 143 * 4


def test_ties_uniform_and_single_record(tmp_path):
    r = analyse_anchors(make(tmp_path, b"\x01\x01\x02\x02" * 3 + b"\x03\x03"), RecordLayout(record_size=2))
    assert r.dominant.record == b"\x01\x01" and [t.record for t in r.tied] == [b"\x02\x02"]
    r = analyse_anchors(make(tmp_path, b"\xaa" * 64, "u.bin"), RecordLayout())
    assert r.uniform and r.nonuniform_total == 0 and not r.head_window_trap
    r = analyse_anchors(make(tmp_path, b"\x01\x02\x03\x04", "one.bin"), RecordLayout())
    assert r.records == 1 and r.dominant.count == 1 and r.uniform


def test_departure_inside_the_window_is_no_trap(tmp_path):
    data = bytearray(b"\xff\x00\x80\x80" * 100)
    data[8] = 1
    r = analyse_anchors(make(tmp_path, bytes(data)), RecordLayout())
    assert not r.head_window_trap and r.nonuniform_total == 1


def test_cli_anchors_story_json(cli):
    r = cli("anchors", "dumps/ours/convert_scores.bin", "--nonuniform", "--json")
    assert r.code == 0
    doc = json.loads(r.out)
    assert doc["records"] == 2034 and doc["record_size"] == 4
    assert doc["dominant"] == {"hex": "ff 00 80 80", "count": 2025, "first_index": 0}
    assert doc["first_nonuniform_offset"] == 572
    by_index = {n["index"]: n for n in doc["nonuniform"]}
    assert by_index[203]["hex"] == "01 ff 80 80" and by_index[203]["offset"] == 812
    assert by_index[203]["values"] == [1 / 256, 255 / 256, 128, 128]  # pad lanes stay raw


def test_cli_anchors_table_says_the_trap(cli):
    r = cli("anchors", "dumps/ours/convert_scores.bin", "--nonuniform")
    assert "2,025 / 2,034 anchors match ff 00 80 80" in r.out
    assert "do not judge this buffer by its head" in " ".join(r.out.split())
    assert "0.9961" in r.out  # anchor 203's face score


def test_cli_anchors_bad_inputs(cli, tmp_path):
    (tmp_path / "e.bin").write_bytes(b"")
    (tmp_path / "s.bin").write_bytes(b"\x00\x01")
    (tmp_path / "bad.bin").write_bytes(bytes(8))
    (tmp_path / "bad.json").write_text("{not json")
    assert_one_line_error(cli("anchors", tmp_path / "e.bin"), "empty")
    assert_one_line_error(cli("anchors", tmp_path / "s.bin"), "no whole 4-byte record")
    assert_one_line_error(cli("anchors", tmp_path / "bad.bin"), "bad.json", "malformed sidecar JSON")
    assert_one_line_error(cli("anchors", tmp_path / "missing.bin"), "no such file")


@pytest.mark.parametrize("data", [bytes([0] * 20 + [5, 0, 6, 0, 7, 0, 8, 0, 9, 9]),
                                  bytes([3, 0, 4, 0] + [0] * 30 + [1, 2]),
                                  bytes([0] * 40)])
def test_two_halves_keep_the_one_pass_order_and_cap(tmp_path, data):
    """Departures listed up to the cap in index order across the halves' boundary, counts and first indices
    as one pass gives them."""
    best, count, departing, records, tied, ranked, distinct = reference_mode(data, 1)
    with small_chunks():
        r = analyse_anchors(make(tmp_path, data), RecordLayout(record_size=1), nonuniform=True, limit=3)
    assert (r.dominant.record, r.dominant.count, r.distinct) == (best, count, distinct)
    assert [x.index for x in r.nonuniform] == departing[:3] and r.nonuniform_total == len(departing)
    assert r.first_nonuniform_offset == (departing[0] if departing else None)
    assert r.dominant.first_index == data.index(best)


# --- arrays that say their own shape and element type (.npy, .npz, a sidecar's dtype) ---------------------------

def _npy(tmp_path, name, array):
    import numpy as np

    path = tmp_path / name
    np.save(path, array)
    return path


def test_a_float_npy_is_read_as_rows_of_its_last_axis_and_shown_as_values(tmp_path, cli):
    import numpy as np

    boxes = np.tile(np.float32([0.1, 0.2, 0.3, 0.4]), (1917, 1))
    boxes[5] = [1, 2, 3, 4]
    boxes[100, 2] = -7.5
    path = _npy(tmp_path, "boxes.npy", boxes)
    doc = json.loads(cli("anchors", path, "--nonuniform", "--json").out)
    assert doc["record_size"] == 16 and doc["records"] == 1917
    assert doc["dominant_values"] == pytest.approx([0.1, 0.2, 0.3, 0.4], rel=1e-6)
    assert [r["index"] for r in doc["nonuniform"]] == [5, 100]
    assert doc["nonuniform"][1]["values"] == pytest.approx([0.1, 0.2, -7.5, 0.4], rel=1e-6)
    table = cli("anchors", path, "--nonuniform").out
    assert "values: 0.1 0.2 0.3 0.4" in " ".join(table.split()) and "0.1 0.2 -7.5 0.4" in table
    assert "records of 4 float32 values" in cli("anchors", path).out  # not byte lanes of floats
    hexdump = cli("hexdump", path, "--anchor", "5").out
    assert "1 2 3 4" in hexdump
    # --record still says what a record is: the bytes, as asked
    assert json.loads(cli("anchors", path, "--record", "4", "--json").out)["record_size"] == 4


def test_a_uint8_score_tensor_npy_has_one_anchor_per_row(tmp_path, cli):
    import numpy as np

    scores = np.zeros((1917, 91), np.uint8)
    scores[:, 0] = 255
    scores[3, 5] = 200
    doc = json.loads(cli("anchors", _npy(tmp_path, "scores.npy", scores), "--nonuniform", "--json").out)
    assert (doc["record_size"], doc["records"], doc["nonuniform_count"]) == (91, 1917, 1)
    assert doc["nonuniform"][0]["index"] == 3


def test_a_sidecar_dtype_decodes_a_raw_dump(tmp_path, cli):
    import numpy as np

    values = np.full(64, 0.5, np.float32)
    values[9] = 2.0
    raw = tmp_path / "out.bin"
    raw.write_bytes(values.tobytes())
    (tmp_path / "out.json").write_text(json.dumps({"dtype": "float32"}))
    doc = json.loads(cli("anchors", raw, "--nonuniform", "--json").out)
    assert doc["record_size"] == 4 and doc["dominant_values"] == [0.5]
    assert [(r["index"], r["values"]) for r in doc["nonuniform"]] == [(9, [2.0])]


def test_pictures_of_float_scores_use_their_values(tmp_path, cli):
    """A (2034, 2) float32 score array with the face detector's anchors: the map's value is the face score
    (element 1), not a byte of it, and its scale runs over the scores' values."""
    import numpy as np

    from forensics.buffer.heat import anchors_heat, diff_heat
    from forensics.core.layout import RecordLayout

    scores = np.zeros((2034, 2), np.float32)
    scores[:, 0] = 0.99
    scores[203] = [0.004, 0.996]
    layout = RecordLayout(record_size=8, element="<f4")
    records = scores.view(np.uint8).reshape(2034, 8)
    heat = anchors_heat(records, layout, dominant=records[0].tobytes())
    assert heat.peak_anchor == 203 and heat.values[203] == pytest.approx(0.996, rel=1e-6)
    assert heat.marked == (203,) and (heat.vmin, heat.vmax) == pytest.approx((0.0, 0.996), rel=1e-6)
    other = scores.copy()
    other[500] = [0.5, 0.5]
    delta = diff_heat(records, other.view(np.uint8).reshape(2034, 8), layout)
    assert delta.marked == (500,) and delta.values[500] == pytest.approx(0.5) and "LSB" not in delta.label
    path = _npy(tmp_path, "scores.npy", scores)
    png = tmp_path / "heat.png"
    doc = json.loads(cli("anchors", path, "--deps", "dumps/face_ssd", "--heatmap", png, "--json").out)
    assert doc["heatmap"]["peak_anchor"] == 203 and doc["heatmap"]["vmax"] == pytest.approx(0.996, rel=1e-6)
    assert png.stat().st_size > 0
