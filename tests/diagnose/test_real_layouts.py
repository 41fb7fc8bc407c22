"""diagnose on references with the real SSD MobileNet v2 segment's layouts: every bug kind, made by independent
numpy code here AND by forensics.diagnose.simulate, is named the same without the model, with --model/--tensor and inside
`compare`; controls (a detection moved by one anchor, 1-LSB rounding, a different input) get no bug name and
never exit 0 without a tolerance."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forensics.diagnose import diagnose_dumps
from forensics.diagnose.simulate import simulate
from tests.conftest import SHARED_CORAL

MODEL = SHARED_CORAL / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
FEATURE = ("FeatureExtractor/MobilenetV2/expanded_conv_13/expand/Relu6;FeatureExtractor/MobilenetV2/"
           "expanded_conv_13/expand/add_fold;FeatureExtractor/MobilenetV2/expanded_conv_13/depthwise/"
           "depthwise_Fold;FeatureExtractor/MobilenetV2/expanded_conv_13/expand/Conv2D_Fold;FeatureExtractor/"
           "MobilenetV2/expanded_conv_13/expand/BatchNorm_Fold/bias")


@pytest.fixture(scope="module")
def real():
    """Layer maps and shapes read from the real model; references laid out with libedgetpu's inverse map."""
    if not MODEL.is_file():
        pytest.skip("../shared/data/coral is absent (a fresh clone): real-model tests skipped")
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map, relayout
    from forensics.model.tflite.tensors import tensor_record_layout

    with open_model(MODEL) as model:
        scores_view = tensor_record_layout(model, "convert_scores", 176368)
        boxes_view = tensor_record_layout(model, "Squeeze1", 7672)
        feature_shape = tuple(int(d) for d in model.tensor(FEATURE).shape)
    smap, bmap = layer_map(scores_view.layer), layer_map(boxes_view.layer)
    out = {"smap": smap, "bmap": bmap, "feature_shape": feature_shape, "relayout": relayout}
    for seed in (0, 1):
        rng = np.random.default_rng(seed)
        scores = rng.integers(0, 4, (1917, 91)).astype(np.uint8)
        scores[:, 0] = rng.integers(200, 256, 1917)
        hits = rng.choice(1917, 12, replace=False)
        scores[hits, rng.integers(1, 91, 12)] = rng.integers(120, 256, 12)
        out[f"scores_tensor{seed}"] = scores.tobytes()
        out[f"scores_raw{seed}"] = inverse_relayout(scores.reshape(-1), smap).tobytes()
        boxes = np.clip(rng.normal(128, 18, 1917 * 4), 0, 255).astype(np.uint8)
        out[f"boxes_tensor{seed}"] = boxes.tobytes()
        out[f"boxes_raw{seed}"] = inverse_relayout(boxes, bmap).tobytes()
        y, x, z = feature_shape[1:]
        fm = np.clip(rng.integers(0, 30, (1, 1, z)) + rng.integers(0, 90, (y, x, z)), 0, 255).astype(np.uint8)
        out[f"feature{seed}"] = fm.tobytes()
    assert len(out["scores_raw0"]) == 176368 and len(out["scores_tensor0"]) == 174447
    assert len(out["boxes_raw0"]) == 7672 and out["feature_shape"] == (1, 19, 19, 576)
    return out


# --- independent bug makers (plain numpy, no forensics code) ---------------------------------------------------

def _records(data: bytes, rs: int) -> np.ndarray:
    n = len(data) // rs
    return np.frombuffer(data[:n * rs], np.uint8).reshape(n, rs)


def make(kind: str, real) -> tuple[str, bytes, bytes, str, str]:
    """(reference name, A, B, tensor for --model, expected kind)."""
    raw, tensor = real["scores_raw0"], real["scores_tensor0"]
    if kind == "shift":
        return "raw", raw, bytes(5) + raw[:-5], "convert_scores", "shift"
    if kind == "tile_late":  # x-tile 2 (anchors 480..958) written one record (92 bytes) late
        b = bytearray(raw)
        t0, t1 = 480 * 92, 959 * 92
        b[t0 + 92:t1 + 92] = raw[t0:t1]
        return "raw", raw, bytes(b), "convert_scores", "shift"
    if kind == "fill":
        b = bytearray(tensor)
        b[50_000:60_000] = b"\xcd" * 10_000
        return "tensor", tensor, bytes(b), "convert_scores", "fill"
    if kind == "truncation":
        return "raw", raw, raw[:100_000], "convert_scores", "truncation"
    if kind == "oversize":  # the whole page-rounded DMA allocation
        return "raw", raw, raw + bytes(180_224 - len(raw)), "convert_scores", "oversize"
    if kind == "raw_as_tensor":  # the raw buffer handed on whole where the tensor was expected
        return "tensor", tensor, raw, "convert_scores", "stride"
    if kind == "tensor_vs_raw":
        return "raw", raw, tensor, "convert_scores", "stride"
    if kind == "wrong_stride_read":  # raw records read at the tensor's 91 bytes: same size, wrong stride
        flat = np.frombuffer(raw, np.uint8)
        b = np.full(len(raw), 0x80, np.uint8)
        b[:1917 * 92].reshape(1917, 92)[:, :91] = flat[:1917 * 91].reshape(1917, 91)
        return "raw", raw, b.tobytes(), "convert_scores", "stride"
    if kind == "pitch":  # feature-map rows at a 64-byte aligned pitch
        fm = real["feature0"]
        rows = _records(fm, 19 * 576)
        b = np.zeros((19, 11_008), np.uint8)
        b[:, :10_944] = rows
        return "feature", fm, b.tobytes(), FEATURE, "pitch"
    if kind == "signedness":  # int8 vs uint8 on the data lanes only (pad lanes untouched)
        rec = _records(raw, 92).copy()
        rec[:, :91] ^= 0x80
        return "raw", raw, rec.tobytes() + raw[1917 * 92:], "convert_scores", "signedness"
    if kind in ("swap16", "swap32"):
        w = 2 if kind == "swap16" else 4
        b = bytearray(raw)
        n = len(raw) // w * w
        b[:n] = np.frombuffer(raw[:n], np.uint8).reshape(-1, w)[:, ::-1].tobytes()
        return "raw", raw, bytes(b), "convert_scores", "lane_swap"
    if kind == "relayout":
        order = np.random.default_rng(3).permutation(1917)
        b = _records(raw, 92)[order].tobytes() + raw[1917 * 92:]
        return "raw", raw, b, "convert_scores", "relayout"
    if kind == "boxes_fill":
        b = bytearray(real["boxes_raw0"])
        b[4000:7672] = b"\xcc" * 3672
        return "raw", real["boxes_raw0"], bytes(b), "Squeeze1", "truncation"
    raise AssertionError(kind)


KINDS = ["shift", "tile_late", "fill", "truncation", "oversize", "raw_as_tensor", "tensor_vs_raw",
         "wrong_stride_read", "pitch", "signedness", "swap16", "swap32", "relayout", "boxes_fill"]


def _put(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _top(result) -> str | None:
    return result.primary


@pytest.mark.parametrize("kind", KINDS)
def test_independent_bugs_are_named_with_and_without_the_model(real, tmp_path, cli, kind):
    _, a, b, tensor, expected = make(kind, real)
    pa, pb = _put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b)
    plain = diagnose_dumps(pa, pb)
    assert _top(plain) == expected, [f.evidence for f in plain.findings]
    assert plain.verdict in ("EXPLAINED", "PARTLY EXPLAINED") and plain.exit_code == 1
    assert plain.explained_fraction >= 0.9
    doc = json.loads(cli("diagnose", pa, pb, "--model", MODEL, "--tensor", tensor, "--json").out)
    assert doc["primary"] == expected
    assert doc["exit_code"] == 1 and doc["verdict"] == plain.verdict
    for record in (4, 92):  # the record size never changes the name
        by_record = diagnose_dumps(pa, pb, layout=_layout(record))
        assert _top(by_record) == expected and by_record.verdict == plain.verdict


def _layout(record):
    from forensics.core.layout import RecordLayout

    return RecordLayout(record_size=record)


def test_tile_late_names_the_span_and_oversize_the_extra(real, tmp_path):
    _, a, b, _, _ = make("tile_late", real)
    shift = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b)).finding("shift")
    assert shift["scope"] == "local" and shift["shift_bytes"] == 92
    lo, hi = shift["span"]
    assert 480 * 92 + 92 <= lo and hi <= 959 * 92 + 92 and b[lo:hi] == a[lo - 92:hi - 92]
    _, a, b, _, _ = make("oversize", real)
    found = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "c.bin", b)).finding("oversize")
    assert (found["offset"], found["extra_bytes"]) == (0, 180_224 - 176_368)
    assert "head -c 176368" in found.hint and "c.bin" in found.hint


def test_pitch_fields_and_stride_hint_is_a_real_command(real, tmp_path, cli):
    _, a, b, _, _ = make("pitch", real)
    found = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b)).finding("pitch")
    assert (found["row_bytes"], found["pitch"], found["rows"]) == (10_944, 11_008, 19)
    _, a, b, tensor, _ = make("tensor_vs_raw", real)
    pa, pb = _put(tmp_path, "raw.bin", a), _put(tmp_path, "tensor.bin", b)
    doc = json.loads(cli("diagnose", pa, pb, "--model", MODEL, "--tensor", tensor, "--json").out)
    hint = doc["findings"][0]["hint"]
    assert "--layer convert_scores" in hint and "--tensor" not in hint
    command = hint.split("comparing: ", 1)[1].split()
    assert command[:2] == ["forensics", "relayout"]
    out = tmp_path / "relayouted.bin"
    command[command.index("-o") + 1] = str(out)
    assert cli(*command[1:]).code == 0 and out.read_bytes() == b  # the hint's command really relayouts A


def test_signedness_lists_lane_ranges(real, tmp_path):
    _, a, b, _, _ = make("signedness", real)
    found = diagnose_dumps(_put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b), layout=_layout(92))
    sign = found.finding("signedness")
    assert sign["lanes_text"] == "0-90" and "0-90" in sign.evidence and "1, 2, 3" not in sign.evidence


@pytest.mark.parametrize("spec,expected", [
    ("shift:-12", "shift"), ("shift:92@44160-88320", "shift"), ("fill:1000-9000:efbeadde", "fill"),
    ("truncation:120000", "truncation"), ("truncation:90000:cc", "truncation"), ("oversize:3856", "oversize"),
    ("stride:91:92:91", "stride"), ("signedness:92:0-90", "signedness"), ("lane_swap:64", "lane_swap"),
    ("lane_swap:halves", "lane_swap"), ("relayout:92:5", "relayout"),
])
def test_simulated_bugs_on_the_raw_scores(real, tmp_path, spec, expected):
    a = _put(tmp_path, "a.bin", real["scores_raw0"])
    b = str(tmp_path / "b.bin")
    simulate(a, spec, output=b)
    for layout in (None, _layout(92)):
        result = diagnose_dumps(a, b, layout=layout)
        assert _top(result) == expected and result.exit_code == 1, (spec, [f.evidence for f in result.findings])


def test_simulated_stale_and_pitch_and_rgb(real, tmp_path):
    a = _put(tmp_path, "a.bin", real["scores_raw0"])
    prev = _put(tmp_path, "prev.bin", real["scores_raw1"])
    b = str(tmp_path / "b.bin")
    simulate(a, "stale:40000-90000", previous=prev, output=b)
    stale = diagnose_dumps(a, b, previous=prev)
    assert _top(stale) == "stale" and stale.finding("stale")["ranges"][0][0] >= 40000
    fm = _put(tmp_path, "fm.bin", real["feature0"])
    simulate(fm, "pitch:10944:11008", output=b)
    assert _top(diagnose_dumps(fm, b)) == "pitch"
    rgb = np.random.default_rng(0).integers(0, 256, (64, 64, 3), dtype=np.uint8)
    img = _put(tmp_path, "img.bin", rgb.tobytes())
    _put(tmp_path, "bgr.bin", rgb[:, :, ::-1].tobytes())  # independent: channel order reversed
    found = diagnose_dumps(img, str(tmp_path / "bgr.bin")).finding("lane_swap")
    assert found is not None and found["permutation"] == [2, 1, 0]


# --- controls: no bug name, never exit 0 without a tolerance ---------------------------------------------------

def _controls(real):
    raw = real["scores_raw0"]
    rec = _records(raw, 92).copy()
    hit = int(np.argmax(rec[:, 1:91].max(axis=1)))  # a detection moves to the next anchor
    moved = rec.copy()
    moved[[hit, hit + 1]] = rec[[hit + 1, hit]]
    rounded = np.frombuffer(real["boxes_tensor0"], np.uint8).astype(np.int16)
    rounded = np.clip(rounded + np.random.default_rng(1).integers(-1, 2, rounded.size), 0, 255).astype(np.uint8)
    return {
        "moved detection": (raw, moved.tobytes() + raw[1917 * 92:]),
        "1-LSB rounding": (real["boxes_tensor0"], rounded.tobytes()),
        "different input": (raw, real["scores_raw1"]),
        "different feature map": (real["feature0"], real["feature1"]),
    }


@pytest.mark.parametrize("name", ["moved detection", "1-LSB rounding", "different input", "different feature map"])
def test_controls_get_no_bug_name(real, tmp_path, name):
    a, b = _controls(real)[name]
    pa, pb = _put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b)
    for layout in (None, _layout(4), _layout(92)):
        result = diagnose_dumps(pa, pb, layout=layout)
        assert result.findings == (), [f.evidence for f in result.findings]
        assert result.verdict == "UNEXPLAINED" and result.exit_code == 1
        assert result.characterization["ranges"] and result.hint
    if name == "1-LSB rounding":
        assert diagnose_dumps(pa, pb, tolerance=1).verdict == "WITHIN TOLERANCE"
    if name == "different input":
        result = diagnose_dumps(pa, pb, layout=_layout(92))
        assert result.characterization["looks_like_another_inference"] is True
        assert "--previous" in result.hint and "input CRCs" in result.hint


def test_whole_stale_buffer_without_previous_is_not_clean(real, tmp_path, cli):
    pa = _put(tmp_path, "a.bin", real["scores_raw0"])
    pb = _put(tmp_path, "b.bin", real["scores_raw1"])
    result = cli("diagnose", pa, pb)
    assert result.code == 1 and result.out.startswith("UNEXPLAINED | no known bug pattern explains")
    with_prev = diagnose_dumps(pa, pb, previous=pb)
    assert with_prev.kinds == ("stale",) and with_prev.finding("stale")["identical_to_previous"] is True


# --- the same names inside compare -----------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["shift", "tile_late", "oversize", "wrong_stride_read", "swap16", "signedness",
                                  "boxes_fill"])
def test_compare_gives_the_same_names(real, tmp_path, kind):
    from forensics.runs.compare import compare_runs
    from forensics.runs.ingest import ingest

    _, a, b, tensor, expected = make(kind, real)
    pa, pb = _put(tmp_path, "a.bin", a), _put(tmp_path, "b.bin", b)
    ingest(tmp_path / "ra", "libedgetpu", [f"raw:{tensor}={pa}"])
    ingest(tmp_path / "rb", "ours", [f"raw:{tensor}={pb}"])
    row = compare_runs(tmp_path / "ra", tmp_path / "rb").rows[0]
    assert row.status == "DIFFER"
    kinds = [f.kind for f in row.findings]
    alone = diagnose_dumps(pa, pb)
    assert kinds == list(alone.kinds) and alone.primary == expected
