"""not_computed (issue 31 §5): B one record repeated where A varies — the output zero point in every data lane,
or one constant per lane (a bias alone) — is the chip computing nothing, named before `bits` and `fill`; an
all-zero B stays fill / truncation, with not_computed beside them when 0 is the zero point. Every pair is built
with plain numpy (never forensics.diagnose.simulate); the model's zero point is read with LiteRT's own schema."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forensics import reports
from forensics.core.layout import RecordLayout
from forensics.diagnose import diagnose_dumps
from tests.conftest import REPO, assert_one_line_error

HINT_WORDS = ("parameter-caching", "instruction stream", "not at the output DMA")


def _put(path, array) -> str:
    path.write_bytes(np.ascontiguousarray(array).tobytes())
    return str(path)


def _scores(rng, n: int = 1917, z: int = 92) -> np.ndarray:
    a = rng.integers(0, 256, (n, z), dtype=np.uint8)
    a[:, z - 1] = 0  # the pad lane of a 91-class record
    return a


def _layout(zero_point=128, pad=(91,), record=92):
    return RecordLayout(record_size=record, pad_lanes=pad, scale=1 / 256, zero_point=zero_point)


def test_b_at_the_zero_point_is_not_computed_before_bits(tmp_path):
    a = _scores(np.random.default_rng(1))
    b = np.full_like(a, 128)
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b), layout=_layout())
    assert result.verdict == "EXPLAINED" and result.primary == "not_computed" and result.kinds == ("not_computed",)
    found = result.finding("not_computed")
    assert found["at_zero_point"] is True and found["zero_point"] == 128 and found["period"] == 1
    assert "zero point (128: real value 0.0)" in found.evidence and all(w in found.hint for w in HINT_WORDS)
    # the pad lane keeps A's bytes: the record is 91 zero points and a pad byte
    b[:, 91] = 0
    again = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b2.bin", b), layout=_layout())
    assert again.primary == "not_computed" and again.finding("not_computed")["period"] == 92


def test_int8_zero_point_of_minus_128(tmp_path):
    rng = np.random.default_rng(2)
    a = rng.integers(-128, 128, 65536, dtype=np.int8)
    b = np.full_like(a, -128)
    pa, pb = str(tmp_path / "a.npy"), str(tmp_path / "b.npy")
    np.save(pa, a)
    np.save(pb, b)
    report = reports.diagnose(pa, pb, scale="0.05", zero_point="-128")
    assert report.result.primary == "not_computed" and report.result.finding("not_computed")["at_zero_point"]


def test_a_constant_record_is_a_bias_alone(tmp_path):
    rng = np.random.default_rng(3)
    a = _scores(rng)
    bias = rng.integers(0, 256, 92, dtype=np.uint8)
    b = np.tile(bias, (1917, 1))
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b), layout=_layout())
    found = result.finding("not_computed")
    assert result.primary == "not_computed" and found["at_zero_point"] is False and found["period"] == 92
    assert found["record"] == bias.tobytes().hex(" ") and "bias alone" in found.evidence


def test_without_a_zero_point_a_constant_is_named_and_the_zero_point_asked_for(tmp_path):
    a = np.random.default_rng(4).integers(0, 256, 40000, dtype=np.uint8)
    b = np.full_like(a, 0x80)
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b))
    found = result.finding("not_computed")
    assert result.primary == "not_computed" and found["zero_point"] is None and found["at_zero_point"] is None
    assert "zero point is not known" in found.evidence and "--deps" in found.evidence


@pytest.mark.parametrize("zero_point", [0, None])
def test_all_zero_b_stays_fill_or_truncation(tmp_path, zero_point):
    a = _scores(np.random.default_rng(5))
    b = np.zeros_like(a)
    layout = _layout(zero_point=zero_point) if zero_point is not None else RecordLayout(record_size=92)
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b), layout=layout)
    assert result.primary in ("fill", "truncation")
    # beside them only when 0 is the output's zero point
    assert ("not_computed" in result.kinds) == (zero_point == 0)


def test_a_sentinel_that_is_not_the_zero_point_stays_a_prefill(tmp_path):
    a = _scores(np.random.default_rng(6))
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", np.full_like(a, 0xCC)),
                            layout=_layout())
    assert result.primary in ("fill", "truncation") and "not_computed" not in result.kinds


def test_a_sentinel_value_that_is_the_zero_point_is_not_computed(tmp_path):
    a = _scores(np.random.default_rng(7))
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", np.full_like(a, 0xFF)),
                            layout=_layout(zero_point=255))
    assert result.primary == "not_computed"


def test_b_equal_to_a_dominant_record_is_not_named(tmp_path):
    """A is mostly `ff 00 80 80` (no face) and B all of it: another inference with nothing found, or a chip that
    never ran — the dump alone cannot tell, so not_computed is not claimed."""
    a = np.tile(np.array([255, 0, 128, 128], np.uint8), (2034, 1))
    a[np.random.default_rng(8).choice(2034, 30, replace=False), :2] = [1, 254]
    b = np.tile(np.array([255, 0, 128, 128], np.uint8), (2034, 1))
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b))
    assert "not_computed" not in result.kinds


def test_a_varying_b_is_never_not_computed(tmp_path):
    rng = np.random.default_rng(9)
    a = _scores(rng)
    b = a.copy()
    b[:, :10] = 128  # only some lanes at the zero point
    result = diagnose_dumps(_put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", b), layout=_layout())
    assert "not_computed" not in result.kinds


def test_deps_give_the_zero_point_on_the_command_line(tmp_path, cli):
    """--deps (an extract directory) says which tensor a dump holds and its zero point (Squeeze1's is 144)."""
    boxes = np.frombuffer((REPO / "dumps/libedgetpu/Squeeze1.bin").read_bytes(), np.uint8)
    meta = json.loads((REPO / "dumps/face_ssd/postprocess.json").read_text())
    zp = meta["boxes"]["zero_point"]
    pb = _put(tmp_path / "b.bin", np.full_like(boxes, zp))
    result = cli("diagnose", "dumps/libedgetpu/Squeeze1.bin", pb, "--deps", "dumps/face_ssd", width=200)
    assert result.code == 1 and result.out.startswith("EXPLAINED | not_computed explains the differing bytes")
    doc = json.loads(cli("diagnose", "dumps/libedgetpu/Squeeze1.bin", pb, "--deps", "dumps/face_ssd", "--json").out)
    assert doc["primary"] == "not_computed" and doc["findings"][0]["zero_point"] == zp
    assert doc["findings"][0]["at_zero_point"] is True


def test_deps_bad_input_is_one_line(tmp_path, cli):
    assert_one_line_error(cli("diagnose", "dumps/libedgetpu/Squeeze1.bin", "dumps/broken/Squeeze1.bin", "--deps",
                              tmp_path / "missing"), "missing")


def _tensor_quantization(model_path, name: str) -> tuple[float, int]:
    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")  # LiteRT's own reader of the model
    data = model_path.read_bytes()
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    for tensor in model.subgraphs[0].tensors:
        if tensor.name.decode() == name:
            return float(tensor.quantization.scale[0]), int(tensor.quantization.zeroPoint[0])
    raise AssertionError(name)


def test_real_model_at_the_zero_point(tmp_path, shared_data):
    """The real SSD segment: box deltas at Squeeze1's zero point are not_computed; convert_scores' zero point is
    0, so all-zero scores stay fill / truncation with not_computed named beside them."""
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    rng = np.random.default_rng(10)
    _, zp = _tensor_quantization(model, "Squeeze1")
    a = rng.integers(0, 256, (1917, 4), dtype=np.uint8)  # the TFLite tensor: 1,917 x 4 box deltas
    pa, pb = _put(tmp_path / "a.bin", a), _put(tmp_path / "b.bin", np.full_like(a, zp & 0xFF))
    report = reports.diagnose(pa, pb, model=model, tensor="Squeeze1")
    assert zp != 0 and report.result.primary == "not_computed" and report.to_dict()["primary"] == "not_computed"
    assert report.result.finding("not_computed")["zero_point"] == zp
    _, zp = _tensor_quantization(model, "convert_scores")
    a = rng.integers(0, 256, (1917, 91), dtype=np.uint8)
    pa, pb = _put(tmp_path / "sa.bin", a), _put(tmp_path / "sb.bin", np.full_like(a, zp & 0xFF))
    scores = reports.diagnose(pa, pb, model=model, tensor="convert_scores").result
    assert zp == 0 and scores.primary in ("fill", "truncation") and "not_computed" in scores.kinds
