"""diff: checked against a plain-loop reference, with properties (identity, symmetry) and block edges."""

import json
import zlib

import numpy as np

import pytest
from hypothesis import given, settings, strategies as st

from forensics.compare import blocks
from forensics.compare.diff import diff_dumps
from forensics.io.dump import open_dump
from forensics.core.layout import RecordLayout
from tests.conftest import assert_one_line_error


def reference_diff(a: bytes, b: bytes, rs: int, pad=(), tolerance=0, offset=0):
    """The obvious loop: which records differ, how many bytes, per-lane counts, first differing offset."""
    common = min(len(a), len(b))
    records = (common - offset) // rs
    differing, nbytes, lanes, first = [], 0, [0] * rs, None
    for i in range(records):
        pos = offset + i * rs
        hit = False
        for lane in range(rs):
            if lane in pad:
                continue
            if abs(a[pos + lane] - b[pos + lane]) > tolerance:
                hit = True
                nbytes += 1
                lanes[lane] += 1
                first = pos + lane if first is None else first
        if hit:
            differing.append(i)
    trailing_differ = False
    for pos in range(offset + records * rs, common):
        if abs(a[pos] - b[pos]) > tolerance:
            trailing_differ = True
            nbytes += 1
            first = pos if first is None else first
    if first is None and len(a) != len(b):
        first = common
    return differing, nbytes, lanes, first, trailing_differ


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(bytes(data))
    return open_dump(path, allow_empty=True)


@st.composite
def pairs(draw):
    rs = draw(st.sampled_from([1, 3, 4, 8, 92]))
    n = draw(st.integers(1, 300))
    a = bytearray(draw(st.binary(min_size=n, max_size=n)))
    b = bytearray(a)
    for _ in range(draw(st.integers(0, 10))):
        i = draw(st.integers(0, n - 1))
        b[i] = draw(st.integers(0, 255))
    if draw(st.booleans()):
        b += draw(st.binary(max_size=20))
    pad = tuple(sorted(set(draw(st.lists(st.integers(0, rs - 1), max_size=2))))) if rs > 1 else ()
    return a, b, rs, pad, draw(st.integers(0, 3))


@given(pairs())
@settings(max_examples=150, deadline=None)
def test_diff_equals_reference(tmp_path_factory, monkeypatch_block, case):
    a, b, rs, pad, tol = case
    tmp = tmp_path_factory.mktemp("d")
    da, db = write(tmp, "a.bin", a), write(tmp, "b.bin", b)
    layout = RecordLayout(record_size=rs, pad_lanes=pad)
    r = diff_dumps(da, db, layout, tolerance=tol, limit=None)
    differing, nbytes, lanes, first, trailing = reference_diff(a, b, rs, pad, tol)
    assert [x.index for x in r.records] == differing
    assert r.records_differing == len(differing)
    assert r.bytes_differing == nbytes
    assert list(r.lane_differences) == lanes
    assert r.first_differing_offset == first
    assert r.trailing_differ == trailing
    assert r.bytes_identical == (bytes(a) == bytes(b))
    assert (r.crc32_a, r.crc32_b) == (zlib.crc32(a), zlib.crc32(b))  # the longer file's tail included
    for rec in r.records:
        assert rec.a == bytes(a[rec.offset:rec.offset + rs]) and rec.b == bytes(b[rec.offset:rec.offset + rs])


@given(pairs(), st.sampled_from(["dense", "sparse"]))
@settings(max_examples=150, deadline=None)
def test_dense_blocks_equal_reference(tmp_path_factory, monkeypatch_block, case, heavy):
    """Every block taken as dense (as when many words differ): the records found word by word, or all of them
    examined when most differ, give the reference's answer too."""
    a, b, rs, pad, tol = case
    if heavy == "dense":  # most records differ: the every-record path
        b = bytearray(x ^ 0x41 for x in b[:len(a)]) + b[len(a):]
    tmp = tmp_path_factory.mktemp("d")
    da, db = write(tmp, "a.bin", a), write(tmp, "b.bin", b)
    original = blocks.differing_positions
    blocks.differing_positions = lambda va, vb: None
    try:
        r = diff_dumps(da, db, RecordLayout(record_size=rs, pad_lanes=pad, scale=0.5, zero_point=3), tolerance=tol,
                       limit=None)
    finally:
        blocks.differing_positions = original
    differing, nbytes, lanes, first, trailing = reference_diff(a, b, rs, pad, tol)
    assert [x.index for x in r.records] == differing
    assert (r.records_differing, r.bytes_differing, list(r.lane_differences)) == (len(differing), nbytes, lanes)
    assert r.first_differing_offset == first and r.trailing_differ == trailing
    assert (r.crc32_a, r.crc32_b) == (zlib.crc32(a), zlib.crc32(b))
    if r.stats is not None and rs > len(pad):
        keep = [lane for lane in range(rs) if lane not in pad]
        whole = len(a) // rs * rs if len(a) <= len(b) else len(b) // rs * rs
        xa = np.frombuffer(bytes(a[:whole]), np.uint8).reshape(-1, rs)[:, keep]
        xb = np.frombuffer(bytes(b[:whole]), np.uint8).reshape(-1, rs)[:, keep]
        assert r.stats.differing == int(np.count_nonzero(xa != xb))
        assert r.stats.max_abs_lsb == (int(np.abs(xa.astype(int) - xb.astype(int)).max()) if xa.size else 0)


@pytest.fixture(scope="module")
def monkeypatch_block():
    # Tiny blocks so hypothesis cases cross many block boundaries (and the record-aligned re-cut), and pairs
    # of 128 bytes or more are walked in two halves on two threads (stream_halves).
    old = blocks.BLOCK, blocks.PARALLEL_MIN
    blocks.BLOCK, blocks.PARALLEL_MIN = 64, 128
    yield
    blocks.BLOCK, blocks.PARALLEL_MIN = old


@given(st.binary(min_size=1, max_size=500), st.sampled_from([1, 2, 4, 7]))
@settings(max_examples=60, deadline=None)
def test_diff_of_a_buffer_with_itself_is_identical(tmp_path_factory, data, rs):
    tmp = tmp_path_factory.mktemp("s")
    d = write(tmp, "a.bin", data)
    r = diff_dumps(d, d, RecordLayout(record_size=rs))
    assert r.identical and r.bytes_identical and r.records_differing == 0 and r.first_differing_offset is None


@given(pairs())
@settings(max_examples=60, deadline=None)
def test_diff_is_symmetric(tmp_path_factory, case):
    a, b, rs, pad, tol = case
    tmp = tmp_path_factory.mktemp("y")
    da, db = write(tmp, "a.bin", a), write(tmp, "b.bin", b)
    layout = RecordLayout(record_size=rs, pad_lanes=pad)
    ab = diff_dumps(da, db, layout, tolerance=tol, limit=None)
    ba = diff_dumps(db, da, layout, tolerance=tol, limit=None)
    assert ab.records_differing == ba.records_differing and ab.bytes_differing == ba.bytes_differing
    assert ab.first_differing_offset == ba.first_differing_offset and ab.identical == ba.identical
    assert [(r.index, r.a, r.b) for r in ab.records] == [(r.index, r.b, r.a) for r in ba.records]


def test_offset_and_count_limit_the_region(tmp_path):
    a = bytearray(400)
    b = bytearray(400)
    b[3] = 1      # before the region: ignored by the record comparison, but not by bytes_identical
    b[100] = 9    # record 0 of the region
    b[399] = 5    # after the region
    da, db = write(tmp_path, "a.bin", a), write(tmp_path, "b.bin", b)
    r = diff_dumps(da, db, RecordLayout(record_size=4, offset=100, count=10))
    assert r.records_compared == 10 and r.records_differing == 1
    assert r.records[0].index == 0 and r.records[0].offset == 100
    assert r.identical is False and r.bytes_identical is False


def test_limit_truncates_records_but_counts_all(tmp_path):
    a = bytes(4000)
    b = bytes([1]) * 4000
    r = diff_dumps(write(tmp_path, "a", a), write(tmp_path, "b", b), RecordLayout(), limit=5)
    assert len(r.records) == 5 and r.records_differing == 1000 and r.records_truncated


def test_tolerance_and_pad_make_equal_as_configured(tmp_path):
    a = bytes.fromhex("ff008080" * 10)
    b = bytes.fromhex("fe008081" * 10)
    da, db = write(tmp_path, "a", a), write(tmp_path, "b", b)
    r = diff_dumps(da, db, RecordLayout(pad_lanes=(3,)), tolerance=1)
    assert r.identical and not r.bytes_identical
    r = diff_dumps(da, db, RecordLayout(pad_lanes=(3,)))
    assert not r.identical and r.lane_differences == (10, 0, 0, 0)


def test_cli_diff_identical_one_line(cli):
    r = cli("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/ours/convert_scores.bin")
    assert r.code == 0
    assert r.out.count("\n") == 1 and r.out.startswith("MATCH | 8,136 bytes, CRC32 0x")


def test_cli_diff_json_keys_and_broken_case(cli):
    r = cli("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", "--json", "--limit", "3")
    assert r.code == 1
    doc = json.loads(r.out)
    for key in ("identical", "size_a", "size_b", "crc32_a", "crc32_b", "record_size", "records_compared",
                "records_differing", "bytes_differing", "first_differing_offset", "records", "records_truncated",
                "bytes_identical"):
        assert key in doc
    assert doc["records_differing"] == 2034 - 1500 and doc["first_differing_offset"] == 1500 * 4
    assert doc["records"][0] == {"index": 1500, "offset": 6000, "a": "ff 00 80 80", "b": "cc cc cc cc",
                                 "xor": "33 cc 4c 4c", "values_a": [255 / 256, 0.0, 128, 128],
                                 "values_b": [204 / 256, 204 / 256, 204, 204]}
    assert len(doc["records"]) == 3 and doc["records_truncated"] is True


def test_cli_diff_different_sizes(cli, tmp_path):
    (tmp_path / "a.bin").write_bytes(bytes(100))
    (tmp_path / "b.bin").write_bytes(bytes(90))
    r = cli("diff", tmp_path / "a.bin", tmp_path / "b.bin", "--json")
    doc = json.loads(r.out)
    assert r.code == 1 and doc["identical"] is False and doc["first_differing_offset"] == 90
    assert doc["records_compared"] == 22 and doc["trailing_bytes"] == 2


def test_cli_diff_bad_inputs(cli, tmp_path):
    good = tmp_path / "g.bin"
    good.write_bytes(bytes(16))
    (tmp_path / "empty.bin").write_bytes(b"")
    assert_one_line_error(cli("diff", good, tmp_path / "nope.bin"), "nope.bin", "no such file")
    assert_one_line_error(cli("diff", good, tmp_path), "is a directory")
    assert_one_line_error(cli("diff", good, tmp_path / "empty.bin"), "empty.bin", "empty")
    assert_one_line_error(cli("diff", good, good, "--record", "0"), "--record")
    assert_one_line_error(cli("diff", good, good, "--record", "-4"), "--record")
    assert_one_line_error(cli("diff", good, good, "--offset", "16"), "past the end")
    assert_one_line_error(cli("diff", good, good, "--scale", "nan"), "--scale")
    assert_one_line_error(cli("diff", good, good, "--scale", "0"), "--scale")
    assert_one_line_error(cli("diff", good, good, "--pad", "4"), "pad lane 4")
    assert_one_line_error(cli("diff", good, good, "--record", "4", "--fields", "a,b"), "2 field names")
    assert_one_line_error(cli("diff", good, good, "--count", "5"), "run past the end")
    assert_one_line_error(cli("diff", good), "diff")


# --- error statistics and verdicts, folded into the diff's pass ------------------------------------------------

def _stats_pair(tmp_path, a, b):
    da, db = write(tmp_path, "sa.bin", a.tobytes()), write(tmp_path, "sb.bin", b.tobytes())
    return da, db


@pytest.mark.parametrize("dense", [False, True])
@pytest.mark.parametrize("pad", [(), (2, 3)])
@pytest.mark.parametrize("lo", [0, 40000])
@pytest.mark.parametrize("halves", [False, True])
@pytest.mark.parametrize("pairs", [False, True])
def test_diff_stats_equal_whole_array_stats(tmp_path, monkeypatch, dense, pad, lo, halves, pairs):
    """The streamed statistics (sparse and dense blocks; the first difference early, or late so that the equal
    records before it are summed when it is found, or, in two halves, after the pass for a half without any
    difference; differing bytes summed one by one or counted as byte pairs) equal those of the arrays."""
    from forensics.compare import diff as diff_mod
    from forensics.compare import stats as stats_mod
    from forensics.compare.stats import error_stats

    monkeypatch.setattr(blocks, "BLOCK", 4096)
    if pairs:
        monkeypatch.setattr(stats_mod, "CODE_PAIRS_MIN", 16)
    if halves:
        monkeypatch.setattr(blocks, "PARALLEL_MIN", 8192)
        monkeypatch.setattr(diff_mod, "PARALLEL_MIN", 8192)
    rng = np.random.default_rng(1)
    a = rng.integers(0, 256, 64000, dtype=np.uint8)
    b = a.copy()
    n = 5000 if dense else 20
    hit = lo + rng.choice(a.size - lo, n, replace=False)
    b[hit] = rng.integers(0, 256, hit.size, dtype=np.uint8)
    da, db = _stats_pair(tmp_path, a, b)
    layout = RecordLayout(record_size=4, pad_lanes=pad, scale=0.5, zero_point=10)
    got = diff_dumps(da, db, layout).stats
    keep = [lane for lane in range(4) if lane not in pad]
    want = error_stats(a.reshape(-1, 4)[:, keep], b.reshape(-1, 4)[:, keep], scale=0.5, zero_point=10)
    for key in ("max_abs", "median_abs", "p99_abs", "max_abs_lsb", "differing", "count"):
        assert getattr(got, key) == getattr(want, key), key
    for key in ("mean_abs", "cosine", "sqnr_db", "max_rel"):
        assert getattr(got, key) == pytest.approx(getattr(want, key), rel=1e-12), key
    # where the worst element is: the first largest |b - a| over the data lanes
    delta = np.abs(a.astype(int) - b.astype(int)).reshape(-1, 4)
    delta[:, list(pad)] = -1
    flat = int(np.argmax(delta))
    assert got.worst["anchor"] == flat // 4 and got.worst["offset"] == flat
    assert got.worst["lane"] == layout.field_names[flat % 4]
    delta[:, list(pad)] = 0
    assert got.per_lane_max == tuple(float(m) * 0.5 for m in delta.max(axis=0))


def test_diff_float32_elements(tmp_path):
    from forensics.compare.stats import error_stats

    rng = np.random.default_rng(2)
    a = rng.normal(size=1000).astype("<f4")
    b = a.copy()
    b[::7] += np.float32(0.01)
    b[500] = np.nan
    da, db = _stats_pair(tmp_path, a, b)
    got = diff_dumps(da, db, RecordLayout(record_size=4), dtype="float32")
    want = error_stats(a, b)
    assert got.stats.max_abs == want.max_abs and got.stats.nonfinite_mismatch == 1
    assert got.stats.worst["index"] == 500
    assert got.verdict == "DIFFER"


def test_diff_verdicts(tmp_path):
    from forensics.core.tolerance import Tolerance

    a = np.array([10, 20, 30, 40] * 100, dtype=np.uint8)
    b = a.copy()
    b[5] += 1
    b[9] += 2
    da, db = _stats_pair(tmp_path, a, b)
    layout = RecordLayout(record_size=4, scale=0.1, zero_point=0)
    assert diff_dumps(da, da, layout).verdict == "MATCH"
    assert diff_dumps(da, db, layout).verdict == "DIFFER"
    assert diff_dumps(da, db, layout, tolerance=2).verdict == "WITHIN TOLERANCE"
    assert diff_dumps(da, db, layout, tolerance=1).verdict == "DIFFER"
    assert diff_dumps(da, db, layout, policy=Tolerance(atol=0.2, lsb=False)).verdict == "WITHIN TOLERANCE"
    assert diff_dumps(da, db, layout, policy=Tolerance(atol=0.15, lsb=False)).verdict == "DIFFER"
    # 2 of 400 elements differ: the p99 of |b - a| is 0
    assert diff_dumps(da, db, layout, policy=Tolerance(check="p99")).verdict == "WITHIN TOLERANCE"
    d = diff_dumps(da, db, layout, tolerance=2).to_dict()
    assert d["verdict"] == "WITHIN TOLERANCE" and d["stats"]["max_abs_lsb"] == 2
    assert d["stats"]["min_atol_lsb"] == 2 and d["stats"]["max_abs"] == pytest.approx(0.2)
    assert json.loads(json.dumps(d)) == d


def test_cli_diff_tolerance_flags(cli):
    a, b = "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"
    r = cli("diff", a, b, "--json", "--atol", "204lsb")
    doc = json.loads(r.out)
    assert r.code == 0 and doc["verdict"] == "WITHIN TOLERANCE"
    assert doc["stats"]["max_abs_lsb"] == 204 and doc["stats"]["worst"]["lane"] == "face"
    assert doc["stats"]["worst"]["anchor"] == 1500
    r = cli("diff", a, b, "--json", "--atol", "203lsb")
    assert r.code == 1 and json.loads(r.out)["verdict"] == "DIFFER"
    r = cli("diff", a, b, "--tolerance", "204")  # today's flag: K LSB
    assert r.code == 0 and r.out.startswith("WITHIN TOLERANCE | ")
    # 534 of 2,034 anchors differ: the mean passes a tolerance the max does not
    mean = json.loads(cli("diff", a, b, "--json").out)["stats"]["mean_abs"]
    assert cli("diff", a, b, "--check", "mean", "--atol", str(mean * 1.01)).code == 0
    assert cli("diff", a, b, "--check", "max", "--atol", str(mean * 1.01)).code == 1


@pytest.mark.parametrize("flags, fragment", [
    (["--check", "p98"], "--check: must be one of max, mean, p99"),
    (["--atol", "abc"], "--atol: expected a number"),
    (["--rtol", "-1"], "--rtol: expected a non-negative number"),
    (["--atol", "1lsb", "--tolerance", "1"], "not both"),
])
def test_cli_diff_bad_tolerance_is_one_line(cli, flags, fragment):
    r = cli("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", *flags)
    assert_one_line_error(r, fragment)


@pytest.mark.parametrize("case", ["equal", "within", "beyond", "pad_only", "trailing_within", "trailing_beyond"])
@pytest.mark.parametrize("tolerance", [0, 2])
def test_verdict_without_statistics_is_the_verdict_with_them(tmp_path, case, tolerance):
    """stats=False (diff --no-stats) judges on whole LSB from the records alone: the same verdict and exit
    code as with the statistics, for every kind of difference."""
    a = np.array([10, 20, 30, 40] * 100 + [7, 7], dtype=np.uint8)  # 100 records and a 2-byte partial one
    b = a.copy()
    if case == "within":
        b[[5, 9]] += np.array([1, 2], dtype=np.uint8)
    elif case == "beyond":
        b[[5, 9]] += np.array([1, 3], dtype=np.uint8)
    elif case == "pad_only":
        b[[2, 3]] += 9
    elif case == "trailing_within":
        b[-1] += 2
    elif case == "trailing_beyond":
        b[-1] += 5
    da, db = _stats_pair(tmp_path, a, b)
    layout = RecordLayout(record_size=4, pad_lanes=(2, 3) if case == "pad_only" else (), scale=0.1, zero_point=0)
    with_stats = diff_dumps(da, db, layout, tolerance=tolerance)
    without = diff_dumps(da, db, layout, tolerance=tolerance, stats=False)
    assert without.stats is None and "stats" not in without.to_dict()
    assert without.verdict == with_stats.verdict and without.passed == with_stats.passed
    assert (without.records_differing, without.bytes_differing) == (with_stats.records_differing,
                                                                    with_stats.bytes_differing)


def test_cli_diff_no_stats(cli, tmp_path):
    a = np.array([10, 20, 30, 40] * 100, dtype=np.uint8)
    b = a.copy()
    b[5] += 1
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a.tobytes())
    pb.write_bytes(b.tobytes())
    got = cli("diff", str(pa), str(pb), "--no-stats", "--json")
    doc = json.loads(got.out)
    assert got.code == 1 and doc["verdict"] == "DIFFER" and "stats" not in doc and doc["records_differing"] == 1
    got = cli("diff", str(pa), str(pb), "--no-stats", "--tolerance", "1")
    assert got.code == 0 and got.out.startswith("WITHIN TOLERANCE") and "statistics left out" in got.out
    for flags, fragment in ((["--rtol", "0.1"], "--no-stats"), (["--atol", "0.01"], "--no-stats"),
                            (["--check", "p99"], "--no-stats"), (["--plot", str(tmp_path / "p.png")], "--plot")):
        assert_one_line_error(cli("diff", str(pa), str(pb), "--no-stats", *flags), fragment)


# --- the element type: what the dumps say they hold -------------------------------------------------------------

def _npy(tmp_path, name, array):
    path = tmp_path / name
    np.save(path, array)
    return path


def test_float_npy_dumps_get_float_statistics_located_by_their_shape(tmp_path, cli):
    from forensics.compare.stats import error_stats

    rng = np.random.default_rng(4)
    a = rng.normal(size=(1, 300, 4)).astype(np.float32)
    b = (a + rng.uniform(-0.004, 0.004, a.shape)).astype(np.float32)
    b[0, 77, 2] = a[0, 77, 2] + np.float32(0.009)  # the worst element
    pa, pb = _npy(tmp_path, "a.npy", a), _npy(tmp_path, "b.npy", b)
    r = cli("diff", pa, pb, "--json")
    assert r.code == 1
    doc = json.loads(r.out)
    want = error_stats(a, b)
    assert doc["dtype"] == "float32" and doc["stats"]["units"] == "raw"
    assert doc["stats"]["max_abs"] == want.max_abs == pytest.approx(0.009, rel=1e-3)
    assert doc["stats"]["cosine"] == pytest.approx(want.cosine, rel=1e-12)
    assert doc["stats"]["worst"] == {"index": 77 * 4 + 2, "record": 77, "lane": 2, "offset": (77 * 4 + 2) * 4}
    assert "max_abs_lsb" not in doc["stats"]
    within = cli("diff", pa, pb, "--atol", "0.01")
    assert within.code == 0 and "WITHIN TOLERANCE" in within.out
    assert "at record 77 lane 2" in cli("diff", pa, pb).out


def test_big_endian_4d_npy_is_read_in_its_byte_order_and_located_as_y_x_z(tmp_path, cli):
    a = np.random.default_rng(5).normal(size=(1, 6, 5, 3)).astype(">f8")
    b = a.copy()
    b[0, 4, 2, 1] += 3.0
    doc = json.loads(cli("diff", _npy(tmp_path, "a.npy", a), _npy(tmp_path, "b.npy", b), "--json").out)
    assert doc["dtype"] == "float64" and doc["record_size"] == 24  # a record: one (y, x) of 3 channels
    assert doc["stats"]["max_abs"] == pytest.approx(3.0, rel=1e-12) and doc["stats"]["differing"] == 1
    assert {k: doc["stats"]["worst"][k] for k in ("y", "x", "z")} == {"y": 4, "x": 2, "z": 1}


def test_a_class_vector_npy_is_located_by_its_index_not_as_anchors(tmp_path, cli):
    a = np.arange(1001, dtype=np.int64).astype(np.uint8)[None]
    b = a.copy()
    b[0, 653] += 2
    doc = json.loads(cli("diff", _npy(tmp_path, "a.npy", a), _npy(tmp_path, "b.npy", b), "--json").out)
    assert doc["stats"]["worst"] == {"index": 653, "offset": 653}
    assert doc["stats"]["max_abs_lsb"] == 2


def test_a_sidecar_dtype_makes_raw_dumps_signed_int16(tmp_path, cli):
    a = np.array([-5, 100, 7, -300], dtype="<i2")
    b = np.array([5, 100, 7, -301], dtype="<i2")
    pa, pb = write(tmp_path, "a.bin", a.tobytes()), write(tmp_path, "b.bin", b.tobytes())
    (tmp_path / "a.bin.json").write_text(json.dumps({"dtype": "int16"}))
    doc = json.loads(cli("diff", pa.path, pb.path, "--json").out)
    assert doc["dtype"] == "int16"
    assert doc["stats"]["max_abs_lsb"] == 10 and doc["stats"]["differing"] == 2  # not byte-wise 246


def test_dumps_of_different_element_types_or_split_elements_are_refused(tmp_path, cli):
    u8 = _npy(tmp_path, "u8.npy", np.zeros((1, 8), np.uint8))
    i16 = _npy(tmp_path, "i16.npy", np.zeros((1, 4), np.int16))
    assert_one_line_error(cli("diff", u8, i16), "u8.npy holds uint8", "i16.npy int16")
    f8 = _npy(tmp_path, "f8.npy", np.zeros(4, np.float64))
    assert_one_line_error(cli("diff", f8, f8, "--record", "4"), "not a whole number of float64 elements")


def test_a_longer_dump_whose_common_bytes_match_says_both_readings_without_a_slice(tmp_path, cli):
    """A longer B whose first bytes are A: a page-rounded allocation, or a truncated A. Without a model to say
    the tensor's size no `--length` is suggested (it would MATCH a truncated A: issue 24 item 2)."""
    a = bytes(range(256)) * 4 + bytes(8)
    pa, pb = write(tmp_path, "a.bin", a), write(tmp_path, "b.bin", a + bytes(4096 - len(a)))
    r = cli("diff", pa.path, pb.path)
    assert r.code == 1 and "DIFFER" in r.out
    flat = " ".join(r.out.split())
    assert "A holds the first 1,032 of B's 4,096 bytes, and they match: A is truncated, or B is a larger" in flat
    assert "--length" not in r.out
    other = write(tmp_path, "c.bin", a[:-1] + b"\x01" + bytes(100))
    assert "and they match" not in cli("diff", pa.path, other.path).out


def test_rows_of_a_float_npy_are_records_shown_with_their_values(tmp_path, cli):
    a = np.tile(np.float32([0.25, 0.5, 0.75, 1.0]), (300, 1))
    b = a.copy()
    b[42, 1] = 0.625
    pa, pb = _npy(tmp_path, "a.npy", a), _npy(tmp_path, "b.npy", b)
    doc = json.loads(cli("diff", pa, pb, "--json").out)
    assert doc["record_size"] == 16 and doc["records_differing"] == 1
    record = doc["records"][0]
    assert record["index"] == 42 and record["values_a"] == [0.25, 0.5, 0.75, 1.0]
    assert record["values_b"] == [0.25, 0.625, 0.75, 1.0]
    text = cli("diff", pa, pb, width=160).out
    assert "A values" in text and "0.25 0.625 0.75 1" in text
    assert "lane15" not in text  # no table of byte lanes of floats
    rows = json.loads(cli("hexdump", pa, pb, "--anchor", "42", "--context", "0", "--json").out)["rows"]
    assert rows[0]["values_a"] == [0.25, 0.5, 0.75, 1.0] and rows[0]["values_b"] == [0.25, 0.625, 0.75, 1.0]
