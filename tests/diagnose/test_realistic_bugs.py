"""diagnose on the driver bugs a Windows KMDF driver really produces, made here with plain numpy (no forensics
generator): scatter-gather page lists out of order, uncached 64-byte lines, DMA stopped at a page, headers and
wrong offsets, byte order, stuck bits, saturation, lane padding, the wrong buffer. Every case asserts the
verdict, the named kind and where it is; the wrong buffer and a different inference must stay UNEXPLAINED."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from forensics.diagnose import diagnose_dumps
from forensics.core.layout import RecordLayout
from tests.conftest import SHARED_CORAL

PAGE, LINE = 4096, 64
FACE = Path("dumps/libedgetpu/convert_scores.bin")  # the face detector's 2,034 anchors x `ff 00 80 80`
MODEL = SHARED_CORAL / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


# --- realistic buffers ------------------------------------------------------------------------------------------

def _f32(seed: int) -> bytes:  # a float32 feature tensor (1917 x 4 x 8)
    return np.random.default_rng(seed).normal(0, 1, 1917 * 32).astype(np.float32).tobytes()


def _i8(seed: int) -> bytes:  # an int8 activation tensor, centred on zero
    return np.clip(np.random.default_rng(seed).normal(0, 30, 60_000), -128, 127).astype(np.int8).tobytes()


def _i16(seed: int) -> bytes:
    return np.clip(np.random.default_rng(seed).normal(0, 3000, 40_000), -32768, 32767).astype("<i2").tobytes()


def _scores_tensor(seed: int) -> np.ndarray:  # [1917, 91] uint8: background high, a few detections
    rng = np.random.default_rng(seed)
    s = rng.integers(0, 4, (1917, 91)).astype(np.uint8)
    s[:, 0] = rng.integers(200, 256, 1917)
    hits = rng.choice(1917, 12, replace=False)
    s[hits, rng.integers(1, 91, 12)] = rng.integers(120, 256, 12)
    return s


def _face(seed: int) -> bytes:
    """The face model's scores dump with 40 detections placed by `seed` (the dump in the repo has 2)."""
    data = bytearray(FACE.read_bytes())
    rng = np.random.default_rng(seed)
    for i in rng.choice(len(data) // 4, 40, replace=False):
        data[4 * i:4 * i + 2] = bytes([255 - int(rng.integers(1, 60)), int(rng.integers(1, 60))])
    return bytes(data)


BUFFERS = {"f32": _f32, "i8": _i8, "i16": _i16, "scores": lambda s: _scores_tensor(s).tobytes(), "face": _face}


def _pages(data: bytes) -> list[bytes]:
    return [data[i:i + PAGE] for i in range(0, len(data), PAGE)]


def _u8(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def _lines(n: int, count: int, seed: int) -> list[int]:
    """`count` cache lines spread over n bytes, none adjacent (separate lines, as a cache evicts them)."""
    rng = np.random.default_rng(seed)
    picks = np.sort(rng.choice(n // LINE // 2, count, replace=False)) * 2
    return picks.tolist()


# --- the corpus: (A, B, previous or None, expected kind or None, check of the finding) -------------------------

def _case(name: str, make):
    a, prev = make(0), make(1)
    pg = _pages(a)
    arr = _u8(a)
    if name == "pages_swapped":  # the MDL's PFN array with two entries exchanged
        q = list(pg)
        q[1], q[3] = q[3], q[1]
        return a, b"".join(q), None, "page", lambda f: {"page": 1, "holds": 3} in f["pages"]
    if name == "page_repeated":  # one PFN entry written twice: page 5 holds page 4 again
        q = list(pg)
        q[5] = pg[4]
        return a, b"".join(q), None, "page", lambda f: f["pages"] == [{"page": 5, "holds": 4}] and f["duplicated"]
    if name == "page_dropped":  # one PFN entry missing: the rest of the data lands a page early, buffer shorter
        b = b"".join(pg[:2] + pg[3:])
        return a, b, None, "page", lambda f: {"page": 2, "holds": 3} in f["pages"] and "missing" in f["evidence"]
    if name == "page_unwritten_cd":  # a page the device never wrote keeps the debug heap's 0xCD
        b = bytearray(a)
        b[3 * PAGE:4 * PAGE] = b"\xcd" * PAGE
        return a, bytes(b), None, "fill", lambda f: f["ranges"][0]["start"] <= 3 * PAGE < 4 * PAGE <= \
            f["ranges"][0]["end"] + 1 and f["ranges"][0]["sentinel"] == "0xCD"
    if name == "page_stale":  # a page not rewritten this run holds the previous frame
        b = a[:3 * PAGE] + prev[3 * PAGE:4 * PAGE] + a[4 * PAGE:]
        return a, b, prev, "stale", lambda f: all(3 * PAGE <= s and e <= 4 * PAGE for s, e in f["ranges"])
    if name in ("lines_zero", "lines_cc", "lines_stale"):  # non-coherent DMA: the CPU's cached lines win
        lines = _lines(len(a), 24, 7)
        b = bytearray(a)
        for line in lines:
            s = slice(line * LINE, line * LINE + LINE)
            b[s] = prev[s] if name == "lines_stale" else (b"\x00" if name == "lines_zero" else b"\xcc") * LINE
        return (a, bytes(b), prev if name == "lines_stale" else None, "cacheline",
                lambda f: 0 < f["lines"] <= 24 and set(f["first_lines"]) <= set(lines))  # lines prev == A hide
    if name == "dma_stopped_at_page":  # the transfer ended at a page boundary; the rest kept its zeros
        k = len(a) // PAGE // 2 * PAGE
        b = a[:k] + bytes(len(a) - k)
        # the zero run starts earlier where A's last bytes before the page were zero too
        return a, b, None, "truncation", lambda f: k - LINE < f["tail_unwritten_from"] <= k
    if name == "dma_stopped_stale_rest":
        k = len(a) // PAGE // 2 * PAGE
        return a, a[:k] + prev[k:], prev, "stale", lambda f: f["ranges"][0][0] >= k
    if name == "length_short_by_a_page":  # the dump's length computed one page short
        return a, a[:-PAGE], None, "truncation", lambda f: f["missing_bytes"] == PAGE
    if name in ("header_16", "header_64", "header_256"):  # a header written before the data
        h = int(name.split("_")[1])
        return a, bytes(h) + a, None, "oversize", lambda f: f["offset"] == h and f["extra_bytes"] == h
    if name == "header_32_same_size":  # a 32-byte header in a buffer of the tensor's size: the tail falls off
        return a, b"\x5a" * 32 + a[:-32], None, "shift", lambda f: f["shift_bytes"] == 32
    if name == "read_at_offset_64":  # the copy started 64 bytes into the device buffer
        return a, a[64:] + bytes(64), None, "shift", lambda f: f["shift_bytes"] == -64
    if name == "ping_pong_previous":  # the other half of a double buffer: last frame's output
        return a, prev, prev, "stale", lambda f: f["identical_to_previous"]
    if name == "stuck_bit6_set":  # a data line stuck at 1 in every byte
        return a, (arr | 0x40).tobytes(), None, "bits", lambda f: {"lane": 0, "op": "set", "mask": "0x40"} in f["ops"]
    if name == "stuck_bit7_set":  # bit 7 stuck: like signedness, but bytes that had it set stay
        return a, (arr | 0x80).tobytes(), None, "bits", lambda f: f["ops"] == [{"lane": 0, "op": "set", "mask": "0x80"}]
    if name == "stuck_bit0_set":  # data line D0 stuck at 1: even bytes read one higher, odd ones unchanged
        return a, (arr | 0x01).tobytes(), None, "bits", lambda f: f["ops"] == [{"lane": 0, "op": "set", "mask": "0x01"}]
    if name == "bit0_flipped":  # every byte one LSB off, up where A was even, down where it was odd
        return a, (arr ^ 0x01).tobytes(), None, "bits", lambda f: f["ops"] == [{"lane": 0, "op": "flip", "mask": "0x01"}]
    if name == "bit3_flipped":
        return a, (arr ^ 0x08).tobytes(), None, "bits", lambda f: f["ops"] == [{"lane": 0, "op": "flip", "mask": "0x08"}]
    if name == "bit5_cleared_lane_2":  # one byte lane of each 32-bit word has a bit stuck at 0
        b = arr.copy()
        b[2::4] &= 0xDF
        return a, b.tobytes(), None, "bits", lambda f: f["period"] == 4 and f["ops"] == [
            {"lane": 2, "op": "clear", "mask": "0x20"}]
    if name == "saturated":  # values clamped to [20, 230] by a wrong activation range
        return a, np.clip(arr, 20, 230).astype(np.uint8).tobytes(), None, "saturation", \
            lambda f: f["map"].get("0xff") == "0xe6" or f["map"].get("0x00") == "0x14"
    if name == "requantized":  # a wrong output scale and zero point: round(2 v - 100), clamped
        b = np.clip(np.rint(arr * 2.0 - 100), 0, 255).astype(np.uint8)
        return a, b.tobytes(), None, "requantize", lambda f: f["values_changed"] > 8
    if name == "other_inference":  # the right layout, another input: no driver bug to name
        return a, prev, None, None, None
    raise AssertionError(name)


CASES = ["pages_swapped", "page_repeated", "page_dropped", "page_unwritten_cd", "page_stale", "lines_zero",
         "lines_cc", "lines_stale", "dma_stopped_at_page", "dma_stopped_stale_rest", "length_short_by_a_page",
         "header_16", "header_64", "header_256", "header_32_same_size", "read_at_offset_64", "ping_pong_previous",
         "stuck_bit6_set", "stuck_bit7_set", "stuck_bit0_set", "bit0_flipped", "bit3_flipped", "bit5_cleared_lane_2", "saturated", "requantized",
         "other_inference"]
# Buffers too small or too uniform to show a bug, and value bugs that make no sense on float bytes.
SKIP = {("face", c) for c in CASES if c.startswith("page") or c.startswith("dma") or c == "length_short_by_a_page"}
SKIP |= {(buf, c) for buf in ("f32", "i16") for c in ("saturated", "requantized")}
SKIP |= {("scores", "stuck_bit7_set"), ("face", "stuck_bit7_set")}  # nothing had bit 7 set where it changed
SKIP |= {("face", "bit5_cleared_lane_2")}  # lane 2 is the pad lane, 0x80: bit 5 was never set
# The face scores are ff 00 80 80 almost everywhere: bit 0 set is +1 LSB there (0xff saturates), rounding's to
# judge (test_a_one_lsb_change_is_a_bit_only_where_bit_0_varies).
SKIP |= {("face", "stuck_bit0_set")}


def _put(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _check(result, expected, check, name):
    assert result.exit_code == 1, name  # a differing pair never exits 0
    if expected is None:
        assert result.verdict == "UNEXPLAINED" and result.findings == (), (name, result.kinds)
        return
    assert result.primary == expected, (name, [f.evidence for f in result.findings])
    assert result.verdict == "EXPLAINED", (name, result.verdict, result.residual)
    finding = result.finding(expected)
    assert check(finding), (name, finding.to_dict())


@pytest.mark.parametrize("buffer,name", [(buf, c) for c in CASES for buf in sorted(BUFFERS) if (buf, c) not in SKIP])
def test_realistic_driver_bug_is_named(tmp_path, buffer, name):
    a, b, prev, expected, check = _case(name, BUFFERS[buffer])
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b),
                            previous=_put(tmp_path, "p.bin", prev) if prev is not None else None)
    _check(result, expected, check, f"{buffer}:{name}")


@pytest.mark.parametrize("word", [2, 4])
def test_byte_order_of_words_is_named(tmp_path, word):
    a = _i16(0) if word == 2 else _f32(0)
    b = _u8(a).reshape(-1, word)[:, ::-1].tobytes()
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    _check(result, "lane_swap", lambda f: f["permutation"] == list(range(word))[::-1] and f["endianness"], word)


def test_box_coordinates_in_another_order_are_a_lane_swap(tmp_path):
    boxes = np.clip(np.random.default_rng(0).normal(128, 18, (1917, 4)), 0, 255).astype(np.uint8)
    for perm in ([1, 0, 3, 2], [2, 3, 0, 1]):  # yxyx read as xyxy (= 16-bit byte order), corners swapped
        b = boxes[:, perm].tobytes()
        result = diagnose_dumps(_put(tmp_path, "a.bin", boxes.tobytes()), _put(tmp_path, "b.bin", b))
        _check(result, "lane_swap", lambda f: f["permutation"] in (perm, perm[:2]), perm)


@pytest.mark.parametrize("lanes", [4, 8, 16])
def test_channels_rounded_up_are_a_stride(tmp_path, lanes):
    scores = _scores_tensor(0)
    padded = -(-91 // lanes) * lanes
    b = np.zeros((1917, padded), np.uint8)
    b[:, :91] = scores
    result = diagnose_dumps(_put(tmp_path, "a.bin", scores.tobytes()), _put(tmp_path, "b.bin", b.tobytes()))
    _check(result, "stride", lambda f: (f["z_bytes"], f["stride_b"], f["lane_multiple"]) == (
        91, padded, 4 if padded == 92 else 8), lanes)


def test_rows_of_a_3d_tensor_at_a_64_byte_pitch(tmp_path):
    fm = np.random.default_rng(3).integers(0, 200, (19, 19 * 60)).astype(np.uint8)  # 19 x 19 x 60, rows 1,140
    b = np.zeros((19, 1216), np.uint8)
    b[:, :1140] = fm
    result = diagnose_dumps(_put(tmp_path, "a.bin", fm.tobytes()), _put(tmp_path, "b.bin", b.tobytes()))
    _check(result, "pitch", lambda f: (f["row_bytes"], f["pitch"]) == (1140, 1216), "pitch")


@pytest.mark.parametrize("wrong", ["another_tensor_same_size", "the_input", "one_lsb_rounding"])
def test_wrong_buffers_and_rounding_get_no_name(tmp_path, wrong):
    a = _scores_tensor(0).tobytes()
    if wrong == "another_tensor_same_size":  # the boxes output copied where the scores belong
        b = np.clip(np.random.default_rng(1).normal(128, 18, len(a)), 0, 255).astype(np.uint8).tobytes()
    elif wrong == "the_input":  # the input image copied back, another size
        b = np.random.default_rng(2).integers(0, 256, 300 * 300 * 3, dtype=np.uint8).tobytes()
    else:
        b = np.minimum(_u8(a).astype(np.int16) + 1, 255).astype(np.uint8).tobytes()
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    _check(result, None, None, wrong)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_a_one_lsb_change_is_a_bit_only_where_bit_0_varies(tmp_path, seed):
    """Bit 0 stuck at 1 on data whose bit 0 varies is a data line; the same bytes changed on a buffer whose bit 0
    never varies (the face scores), +1 LSB on everything, and +-1 LSB of rounding on a few per cent of the bytes
    are rounding, for a tolerance to judge: no bit is named."""
    rng = np.random.default_rng(seed)
    deltas = np.clip(rng.normal(128, 18, 1917 * 4), 0, 255).astype(np.uint8)  # box deltas: bit 0 varies
    a = deltas.tobytes()
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", (deltas | 1).tobytes()))
    _check(result, "bits", lambda f: f["ops"] == [{"lane": 0, "op": "set", "mask": "0x01"}], seed)
    lane = deltas.copy()
    lane[3::4] ^= 1  # one lane's line flipped
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", lane.tobytes()))
    _check(result, "bits", lambda f: f["period"] == 4 and f["ops"] == [{"lane": 3, "op": "flip", "mask": "0x01"}],
           seed)
    face = _u8(_face(seed))
    rounding = deltas.astype(np.int16)
    some = rng.choice(rounding.size, rounding.size // 30, replace=False)
    rounding[some] += rng.choice([-1, 1], some.size)
    for a2, b2 in ((face, face | 1), (deltas, np.minimum(deltas.astype(np.int16) + 1, 255)),
                   (deltas, np.clip(rounding, 0, 255))):
        result = diagnose_dumps(_put(tmp_path, "a.bin", a2.tobytes()),
                                _put(tmp_path, "b.bin", b2.astype(np.uint8).tobytes()))
        assert "bits" not in result.kinds and result.exit_code == 1, result.kinds


@pytest.mark.parametrize("lanes", [(3,), (1, 2)])
def test_one_channel_clamped_or_requantized(tmp_path, lanes):
    """The box deltas' lanes (4 per anchor) or one class of the [1917, 91] scores, clamped or requantized alone:
    the other lanes hold the values the map moves, so only a map of those lanes fits."""
    deltas = np.clip(np.random.default_rng(4).normal(128, 30, (1917, 4)), 0, 255).astype(np.uint8)
    b = deltas.copy()
    b[:, list(lanes)] = np.clip(b[:, list(lanes)], 100, 160)
    result = diagnose_dumps(_put(tmp_path, "a.bin", deltas.tobytes()), _put(tmp_path, "b.bin", b.tobytes()))
    _check(result, "saturation", lambda f: (f["period"], f["lanes"]) == (4, list(lanes)), lanes)
    assert "lane" in result.finding("saturation").evidence
    scores = _scores_tensor(2)
    scores[:, 7] = np.random.default_rng(5).integers(0, 256, 1917)  # a class whose scores vary
    b = scores.copy()
    b[:, 7] = np.clip(np.rint(scores[:, 7] * 0.5 + 60), 0, 255).astype(np.uint8)  # its own wrong scale
    result = diagnose_dumps(_put(tmp_path, "a.bin", scores.tobytes()), _put(tmp_path, "b.bin", b.tobytes()),
                            layout=RecordLayout(record_size=91))
    _check(result, "requantize", lambda f: (f["period"], f["lanes"]) == (91, [7]), "class 7")


@pytest.mark.parametrize("buffer", ["f32", "i8", "i16", "scores"])
def test_two_blocks_written_in_each_others_place_are_two_shifts(tmp_path, buffer, cli):
    """The output's first two x-tiles (or scatter-gather entries) copied in the wrong order, of unequal sizes:
    each block is named with its own shift and span; neither shift claims the other block as the bytes it
    vacated (it may hold anything there), which used to name one shift for both blocks."""
    a = BUFFERS[buffer](0)
    t = len(a) // 4 // 64 * 64
    t2 = t - 92 * 3
    b = a[t:t + t2] + a[:t] + a[t + t2:]
    pa, pb = _put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b)
    result = diagnose_dumps(pa, pb)
    assert result.verdict == "EXPLAINED" and result.kinds == ("shift", "shift")
    spans = sorted((f["shift_bytes"], f["span"]) for f in result.findings)
    assert [k for k, _ in spans] == [-t, t2]
    (_, early), (_, late) = spans
    assert abs(early[0]) <= 64 and abs(early[1] - t2) <= 64  # B's first t2 bytes: A's second block, moved up
    assert abs(late[0] - t2) <= 64 and abs(late[1] - (t + t2)) <= 64
    assert cli("diagnose", pa, pb).out.startswith("EXPLAINED | 2 shifts explain the differing bytes")


@pytest.mark.parametrize("buffer", ["f32", "i8", "i16", "scores"])
def test_a_chunk_copied_twice_is_found_however_far_it_moved(tmp_path, buffer):
    """The second half of B repeats the first half of A (a DMA descriptor pointing at the same chunk twice):
    a shift of half the buffer, beyond the 64 KiB searched around each window of a large pair; a buffer of up
    to 1 MiB is searched whole unless --max-shift says otherwise."""
    a = BUFFERS[buffer](0)
    h = len(a) // 2 // 4 * 4
    pa, pb = _put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", a[:h] + a[:h] + a[2 * h:])
    _check(diagnose_dumps(pa, pb), "shift", lambda f: f["shift_bytes"] == h, buffer)
    narrow = diagnose_dumps(pa, pb, max_shift=1024)  # told to look no further: nothing that far is named
    assert narrow.finding("shift") is None or narrow.finding("shift")["shift_bytes"] != h


@pytest.mark.parametrize("buffer", ["f32", "i8", "i16", "scores"])
def test_one_chunk_in_the_other_byte_order_is_a_local_lane_swap(tmp_path, buffer, cli):
    """The middle third of B copied with 32-bit byte order reversed (one DMA chunk set up for the other
    endianness): a lane swap of that span only, its bounds on whole words, the rest matching."""
    a = BUFFERS[buffer](0)
    arr = np.frombuffer(a, np.uint8)
    lo, hi = len(a) // 3 // 4 * 4, 2 * len(a) // 3 // 4 * 4
    b = arr.copy()
    b[lo:hi] = arr[lo:hi].reshape(-1, 4)[:, ::-1].ravel()
    pa, pb = _put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b.tobytes())
    _check(diagnose_dumps(pa, pb), "lane_swap",
           lambda f: f["permutation"] == [3, 2, 1, 0] and f["span"] == [lo, hi] and f["scope"] == "local", buffer)
    assert f"of bytes {lo:#x}-{hi - 1:#x}" in " ".join(cli("diagnose", pa, pb, width=200).out.split())


@pytest.mark.parametrize("seed", [0, 2, 5])
def test_shuffled_rows_of_many_equal_rows_are_a_relayout_not_shifts(tmp_path, seed):
    """A 19 x 19 x 576 feature map where a third of the pixels hold one constant row, its rows shuffled: a shift
    by a whole number of rows 'matches' wherever two constant rows meet, and at the buffer's edge it vacates
    bytes that may hold anything. Such a span is no block moved: the rows are a relayout."""
    rng = np.random.default_rng(seed)
    base = rng.integers(0, 40, (1, 1, 576))
    fm = np.clip(base + rng.integers(0, 60, (19, 19, 576)) * (rng.random((19, 19, 1)) > 0.3), 0, 255)
    rows = fm.astype(np.uint8).reshape(-1, 576)
    b = rows[rng.permutation(len(rows))]
    result = diagnose_dumps(_put(tmp_path, "a.bin", rows.tobytes()), _put(tmp_path, "b.bin", b.tobytes()),
                            layout=RecordLayout(record_size=576))
    assert result.kinds == ("relayout",) and result.verdict == "EXPLAINED", [f.evidence for f in result.findings]


def test_page_list_out_of_order_on_a_buffer_not_starting_on_a_page(tmp_path):
    """A user buffer 0x200 bytes into its first page: the MDL's pages start at 0xe00 of the buffer."""
    a = _f32(0)
    phase = PAGE - 0x200
    body = [a[phase + i:phase + i + PAGE] for i in range(0, len(a) - phase - PAGE + 1, PAGE)]
    body[2], body[4] = body[4], body[2]
    b = a[:phase] + b"".join(body) + a[phase + len(body) * PAGE:]
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    _check(result, "page", lambda f: f["phase"] == phase and {"page": 2, "holds": 4} in f["pages"], "phase")


# --- the real SSD MobileNet v2 segment's raw output layouts -------------------------------------------------------

@pytest.fixture(scope="module")
def raw():
    if not MODEL.is_file():
        pytest.skip("../shared/data/coral is absent (a fresh clone): real-model tests skipped")
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.tensors import tensor_record_layout

    with open_model(MODEL) as model:
        smap = layer_map(tensor_record_layout(model, "convert_scores", 176368).layer)
        bmap = layer_map(tensor_record_layout(model, "Squeeze1", 7672).layer)
    out = {}
    for seed in (0, 1):
        out[f"scores{seed}"] = inverse_relayout(_scores_tensor(seed).reshape(-1), smap).tobytes()
        boxes = np.clip(np.random.default_rng(seed).normal(128, 18, 1917 * 4), 0, 255).astype(np.uint8)
        out[f"boxes{seed}"] = inverse_relayout(boxes, bmap).tobytes()
    assert len(out["scores0"]) == 176368 and len(out["boxes0"]) == 7672
    return out


RAW_CASES = ["pages_swapped", "page_repeated", "page_dropped", "page_unwritten_cd", "page_stale", "lines_zero",
             "lines_stale", "dma_stopped_at_page", "dma_stopped_stale_rest", "header_64", "read_at_offset_64",
             "ping_pong_previous", "stuck_bit6_set", "bit3_flipped", "saturated", "requantized", "other_inference"]


@pytest.mark.parametrize("name", RAW_CASES)
def test_realistic_bugs_on_the_chips_raw_scores(raw, tmp_path, name):
    a, b, prev, expected, check = _case(name, lambda seed: raw[f"scores{seed}"])
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b),
                            previous=_put(tmp_path, "p.bin", prev) if prev is not None else None)
    _check(result, expected, check, f"raw scores:{name}")


@pytest.mark.parametrize("name", ["lines_zero", "lines_stale", "header_16", "stuck_bit6_set", "bit3_flipped",
                                  "other_inference"])
def test_realistic_bugs_on_the_chips_raw_boxes(raw, tmp_path, name):
    a, b, prev, expected, check = _case(name, lambda seed: raw[f"boxes{seed}"])
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b),
                            previous=_put(tmp_path, "p.bin", prev) if prev is not None else None)
    _check(result, expected, check, f"raw boxes:{name}")


def test_class_order_reversed_in_each_raw_record(raw, tmp_path):
    """The 91 class lanes of every 92-byte record copied in reverse order (the pad lane in place)."""
    a = raw["scores0"]
    rec = np.frombuffer(a[:1917 * 92], np.uint8).reshape(1917, 92).copy()
    rec[:, :91] = rec[:, 90::-1]
    b = rec.tobytes() + a[1917 * 92:]
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    _check(result, "lane_swap", lambda f: f["permutation"] == list(range(90, -1, -1)) + [91], "reversed")
    assert "reverse order" in result.finding("lane_swap").evidence


@pytest.mark.parametrize("buffer", ["f32", "scores"])
def test_stale_cache_lines_without_the_previous_run_are_named_unchecked_or_located(tmp_path, buffer):
    """Lines holding the previous frame's bytes, no previous frame given: where B's bytes there are well-formed
    data (values A holds, no prefill) cacheline is named, saying it was not checked against the previous frame;
    where the frames hardly differ in those lines, they are located for --previous."""
    a, prev = BUFFERS[buffer](0), BUFFERS[buffer](1)
    b = bytearray(a)
    lines = _lines(len(a), 12, 3)
    for line in lines:
        b[line * LINE:line * LINE + LINE] = prev[line * LINE:line * LINE + LINE]
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", bytes(b)))
    rewritten = sum(np.count_nonzero(np.frombuffer(a, np.uint8)[l * LINE:(l + 1) * LINE]
                                     != np.frombuffer(bytes(b), np.uint8)[l * LINE:(l + 1) * LINE]) for l in lines)
    if rewritten >= 0.5 * len(lines) * LINE:
        assert result.kinds == ("cacheline",), (buffer, result.kinds)
        f = result.finding("cacheline")
        assert f.details["source"] == "unchecked" and f.details["lines"] == len(lines)
        assert "not checked against the previous frame" in f.evidence and "invalidate" in f.hint
    else:
        _check(result, None, None, buffer)
        assert result.characterization["cache_lines"] == len(lines) and "--previous" in result.hint


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("control", ["sparse_corruption", "noise_3lsb", "neighbours_swapped", "face_detections"])
def test_controls_get_no_bug_name(tmp_path, control, seed):
    """Differences no driver bug makes (a few random bytes, +-3 LSB noise, two anchors' records exchanged,
    another inference of the face model) must not borrow one of the new names (bits, saturation, requantize,
    cacheline, page) or a chance lane swap."""
    rng = np.random.default_rng(seed)
    s = _scores_tensor(seed)
    a = s.tobytes()
    if control == "sparse_corruption":
        b = bytearray(a)
        for i in rng.choice(len(a), 20, replace=False):
            b[i] = int(rng.integers(0, 256))
    elif control == "noise_3lsb":
        b = np.clip(s.astype(int) + rng.integers(-3, 4, s.shape), 0, 255).astype(np.uint8).tobytes()
    elif control == "neighbours_swapped":
        t = s.copy()
        i = int(rng.integers(0, 1900))
        t[[i, i + 1]] = s[[i + 1, i]]
        b = t.tobytes()
    else:
        a, b = _face(seed), _face(seed + 10)
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", bytes(b)))
    _check(result, None, None, control)


@pytest.mark.parametrize("buffer", ["f32", "i8", "scores"])
def test_stale_pages_without_the_previous_run_are_unexplained_but_located(tmp_path, buffer):
    a, prev = BUFFERS[buffer](0), BUFFERS[buffer](1)
    k = len(a) // PAGE // 2 * PAGE  # the DMA stopped at a page boundary; the rest is last run's
    for b, pages in ((a[:PAGE] + prev[PAGE:2 * PAGE] + a[2 * PAGE:], 1), (a[:k] + prev[k:], round((len(a) - k) / PAGE))):
        result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
        _check(result, None, None, buffer)
        assert result.characterization["pages"] == pages and "4 KiB page" in result.hint


@pytest.mark.parametrize("cut,expected", [(92, "truncation"), (4, "truncation"), (-92, "oversize")])
def test_transfer_length_off_by_a_record_or_the_padding(raw, tmp_path, cut, expected):
    a = raw["scores0"]
    b = a[:-cut] if cut > 0 else a + bytes(-cut)
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    check = (lambda f: f["missing_bytes"] == cut) if cut > 0 else (lambda f: f["extra_bytes"] == -cut)
    _check(result, expected, check, cut)


@pytest.mark.parametrize("wrong", ["boxes_for_scores", "int8_for_float32"])
def test_a_smaller_wrong_buffer_is_not_a_truncation(tmp_path, wrong):
    """Another, smaller output tensor copied where this one belongs: B is shorter, but its bytes are not A's."""
    if wrong == "boxes_for_scores":
        a = _scores_tensor(0).tobytes()
        b = np.clip(np.random.default_rng(0).normal(128, 18, 1917 * 4), 0, 255).astype(np.uint8).tobytes()
    else:
        a, b = _f32(0), _i8(0)
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    _check(result, None, None, wrong)
    assert "right buffer" in result.hint


@pytest.mark.parametrize("how", ["swapped_far_apart", "repeated", "dropped"])
def test_page_list_bugs_on_a_pair_scored_on_samples(tmp_path, how):
    """A 4 MiB float32 output (more than the exactly scored 2 MiB): the page list found on the sampled blocks."""
    a = np.random.default_rng(0).normal(0, 1, 1 << 20).astype(np.float32).tobytes()
    pg = _pages(a)
    q = list(pg)
    if how == "swapped_far_apart":
        q[10], q[700] = q[700], q[10]
        check = lambda f: {"page": 10, "holds": 700} in f["pages"] or {"page": 700, "holds": 10} in f["pages"]  # noqa: E731
    elif how == "repeated":
        q[301] = pg[300]
        check = lambda f: f["pages"] == [{"page": 301, "holds": 300}]  # noqa: E731
    else:
        del q[500]
        check = lambda f: f["pages"][0] == {"page": 500, "holds": 501}  # noqa: E731
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b"".join(q)))
    assert not result.exact
    _check(result, "page", check, how)


@pytest.mark.parametrize("buffer,unit", [("scores", 91), ("f32", 4)])
def test_one_record_dropped_mid_buffer_is_a_local_shift(tmp_path, buffer, unit):
    """The descriptor skipped one record (one anchor, one element) at 900 units: the rest lands one record
    early and B is one record shorter. Not a pitch: the size alone fits many pitches."""
    a = BUFFERS[buffer](0)
    at = 900 * unit
    b = a[:at] + a[at + unit:]
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    _check(result, "shift", lambda f: f["shift_bytes"] == -unit and at - unit <= f["span"][0] <= at, buffer)


def test_page_dropped_from_a_feature_map_whose_page_heads_repeat(tmp_path):
    """A 19x19x576 input where a third of the pixels are just the per-channel base: many pages start with the
    same bytes, so only the whole page says which one moved."""
    rng = np.random.default_rng(4)
    base = rng.integers(0, 40, (1, 1, 576))
    fm = np.clip(base + rng.integers(0, 60, (19, 19, 576)) * (rng.random((19, 19, 1)) > 0.3), 0, 255)
    a = fm.astype(np.uint8).tobytes()
    pg = _pages(a)
    b = b"".join(pg[:12] + pg[13:])
    result = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b))
    _check(result, "page", lambda f: f["pages"][0] == {"page": 12, "holds": 13}, "feature map")


def test_int16_sign_bit_stuck_and_float32_values_negated(tmp_path):
    a16 = _i16(0)
    stuck = (np.frombuffer(a16, "<i2").view(np.uint16) | 0x8000).astype("<u2").tobytes()
    result = diagnose_dumps(_put(tmp_path, "a.bin", a16), _put(tmp_path, "b.bin", stuck))
    _check(result, "bits", lambda f: f["ops"] == [{"lane": 1, "op": "set", "mask": "0x80"}] and f["period"] == 2,
           "int16")
    a32 = _f32(0)
    negated = (-np.frombuffer(a32, np.float32)).astype(np.float32).tobytes()
    result = diagnose_dumps(_put(tmp_path, "c.bin", a32), _put(tmp_path, "d.bin", negated))
    _check(result, "signedness", lambda f: f["period"] == 4 and f["lanes"] == [3], "float32")
    assert "every value negated" in result.finding("signedness").evidence
