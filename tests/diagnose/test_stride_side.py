"""Which side of a same-size stride pair is wrong, and its fix (issue 35): a skipped relayout (B still at the
chip's 92-byte stride) is named on B with the relayout as the fix, never "A was read with the wrong stride, keep
the stride". Without a model A, the reference, is right; with one, the side whose layout does not match the
buffer's size (the tensor's: packed; the layer's size_bytes: padded) is. Pairs built with plain numpy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forensics import reports
from forensics.diagnose import diagnose_dumps

N, Z, STRIDE = 1917, 91, 92   # convert_scores of the SSD MobileNet v2 segment: 1,917 anchors of 91 classes
RAW_SIZE = 176_368            # its layer's size_bytes (1,917 x 92 + 4)
MODEL = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def _put(path, data) -> str:
    path.write_bytes(bytes(data))
    return str(path)


def _tensor(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (N, Z), dtype=np.uint8)


def _raw(tensor: np.ndarray) -> bytes:
    """The chip's layout: each record at a 92-byte stride, a zero pad byte, 4 bytes of tail."""
    raw = np.zeros((N, STRIDE), np.uint8)
    raw[:, :Z] = tensor
    return raw.tobytes() + bytes(RAW_SIZE - N * STRIDE)


def _stride(result):
    found = result.finding("stride")
    assert found is not None and result.primary == "stride", result.kinds
    return found


def test_skipped_relayout_names_b_and_the_relayout(tmp_path):
    tensor = _tensor()
    pa = _put(tmp_path / "a.bin", tensor.tobytes())
    pb = _put(tmp_path / "b.bin", _raw(tensor)[:N * Z])  # the raw bytes copied as they are, cut to the tensor
    found = _stride(diagnose_dumps(pa, pb))
    assert (found["raw_side"], found["wrong_side"], found["decided_by"]) == ("B", "B", "reference")
    assert "B still holds the chip's 92-byte stride" in found.evidence and "skipped" in found.evidence
    assert found.hint.startswith("relayout B:") and "A was read" not in found.evidence + found.hint
    assert "at the chip's stride" not in found.hint  # not the reverse fix


def test_b_packed_where_the_reference_keeps_the_stride(tmp_path):
    tensor = _tensor(1)
    pa = _put(tmp_path / "a.bin", _raw(tensor)[:N * Z])
    pb = _put(tmp_path / "b.bin", tensor.tobytes())
    found = _stride(diagnose_dumps(pa, pb))
    assert (found["raw_side"], found["wrong_side"]) == ("A", "B")
    assert "B was read or written with the wrong stride (91 bytes)" in found.evidence
    assert found.hint.startswith("read and write each record of B at the chip's stride of 92 bytes")


@pytest.fixture
def model(shared_data):
    return shared_data / MODEL


def test_the_model_says_a_tensor_sized_buffer_is_packed(tmp_path, model, cli):
    tensor = _tensor(2)
    pa = _put(tmp_path / "a.bin", _raw(tensor)[:N * Z])  # A holds the chip's stride in a tensor-sized buffer
    pb = _put(tmp_path / "b.bin", tensor.tobytes())
    doc = json.loads(cli("diagnose", pa, pb, "--model", model, "--tensor", "convert_scores", "--json").out)
    found = next(f for f in doc["findings"] if f["kind"] == "stride")
    assert (found["wrong_side"], found["decided_by"]) == ("A", "model") and doc["primary"] == "stride"
    assert "A still holds the chip's 92-byte stride" in found["evidence"]


def test_the_model_says_a_raw_sized_buffer_is_padded(tmp_path, model):
    tensor = _tensor(3)
    pa = _put(tmp_path / "a.bin", _raw(tensor))
    pb = _put(tmp_path / "b.bin", tensor.tobytes() + bytes(RAW_SIZE - N * Z))  # packed into the raw buffer
    found = _stride(reports.diagnose(pa, pb, model=model, tensor="convert_scores").result)
    assert (found["wrong_side"], found["decided_by"]) == ("B", "model")
    assert "B was read or written with the wrong stride" in found.evidence


def test_sizes_differing_still_relayout_the_raw_side(tmp_path, model):
    tensor = _tensor(4)
    pa, pb = _put(tmp_path / "a.bin", tensor.tobytes()), _put(tmp_path / "b.bin", _raw(tensor))
    found = _stride(reports.diagnose(pa, pb, model=model, tensor="convert_scores").result)
    assert found["wrong_side"] is None and found.command.startswith("forensics relayout ")
    assert "--layer convert_scores" in found.command and found["hint"].endswith(found.command)
