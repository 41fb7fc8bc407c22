"""Hostile bytes (hypothesis mutations of the real models), options vs flexbuffers.Loads, dump layouts, CLI."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from forensics.core.errors import ForensicsError, InputError
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.extract import extract
from forensics.model.tflite.graph import graph_summary
from forensics.model.tflite.model import open_model, read_model
from forensics.model.tflite.options import loads
from forensics.model.tflite.tensors import tensor_record_layout
from tests.conftest import SHARED_CORAL, assert_one_line_error

SEGMENT = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
SMALL = ["split_concat_edgetpu.tflite", "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"]


def _everything(data: bytes):
    model = read_model(data)
    packages = read_packages(model)
    graph_summary(model, packages).to_dict()
    try:
        extract(model, packages)
    except InputError:
        pass


def _models():
    if not SHARED_CORAL.is_dir():
        return {}
    # the header region of the big model (graph, options, package tables) plus the two small models
    return {name: (SHARED_CORAL / name).read_bytes() for name in SMALL + [SEGMENT]}


MODELS = _models()


@pytest.mark.skipif(not MODELS, reason="../shared/data/coral is absent")
@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(which=st.sampled_from(sorted(MODELS) or ["-"]), data=st.data())
def test_mutated_models_raise_only_forensics_errors(which, data):
    original = MODELS[which]
    buf = bytearray(original)
    # mutate where the structure is: the first 64 KiB (tables, vtables, options, package headers) or the end
    limit = min(len(buf), 65536)
    for _ in range(data.draw(st.integers(1, 8))):
        pos = data.draw(st.integers(0, limit - 1)) % len(buf)
        kind = data.draw(st.sampled_from(["byte", "word", "truncate"]))
        if kind == "byte":
            buf[pos] = data.draw(st.integers(0, 255))
        elif kind == "word" and pos + 4 <= len(buf):
            buf[pos:pos + 4] = data.draw(st.sampled_from([b"\xff\xff\xff\x7f", b"\x00\x00\x00\x80", b"\x00" * 4,
                                                          b"\x10\x00\x00\x00", b"\xfc\xff\xff\xff"]))
        else:
            del buf[max(8, pos):]
    try:
        _everything(bytes(buf))
    except ForensicsError:
        pass


def test_options_agree_with_flexbuffers_loads(shared_data):
    from flatbuffers import flexbuffers

    for name in [SEGMENT] + SMALL:
        model = open_model(shared_data / name)
        for op in model.custom_ops:
            ours = loads(model.custom_options(op))
            if op.op == "TFLite_Detection_PostProcess":
                assert ours == flexbuffers.Loads(bytes(model.custom_options(op)))
            else:  # the package is a binary "string" the Python module cannot decode: compare via the Ref API
                root = flexbuffers.GetRoot(bytes(model.custom_options(op))).AsMap
                assert bytes(ours["4"]) == root["4"].AsStringBytes
                assert sorted(ours) == sorted(k.AsKey for k in root.Keys)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text("abcdefgh_", min_size=1, max_size=8),
                       st.one_of(st.integers(-2**40, 2**40), st.floats(allow_nan=False, allow_infinity=False, width=32), st.booleans(),
                                 st.text(max_size=20), st.lists(st.integers(-1000, 1000), max_size=6)),
                       max_size=12))
def test_options_reader_matches_flexbuffers_on_random_maps(value):
    from flatbuffers import flexbuffers

    assert loads(bytes(flexbuffers.Dumps(value))) == flexbuffers.Loads(flexbuffers.Dumps(value))


def test_model_aware_layouts(shared_data):
    model = open_model(shared_data / SEGMENT)
    raw = tensor_record_layout(model, "convert_scores", 176368, labels=shared_data / "coco_labels.txt")
    assert (raw.mode, raw.layout.record_size, raw.layout.pad_lanes) == ("raw", 92, (91,))
    assert raw.layout.field_names[:2] == ("background", "person") and raw.record_order is None
    tensor = tensor_record_layout(model, "convert_scores", 174447)
    assert (tensor.mode, tensor.layout.record_size, tensor.layout.scale) == ("tensor", 91, 1 / 256)
    boxes = tensor_record_layout(model, "Squeeze1", 7672)
    assert boxes.layout.field_names == ("dy", "dx", "dh", "dw") and boxes.layout.zero_point == 179
    with pytest.raises(InputError, match="176368 .* 174447"):
        tensor_record_layout(model, "convert_scores", 8136)
    split = open_model(shared_data / "split_concat_edgetpu.tflite")
    z2 = tensor_record_layout(split, "outputs/rnn2", 256)
    assert (z2.layout.record_size, z2.layout.pad_lanes) == (4, (2, 3))
    # records are written by tiles of 2x2: reading raw record order[i] gives anchor i
    from forensics.model.tflite.relayout import inverse_relayout, layer_map

    m = layer_map(z2.layer)
    raw_bytes = inverse_relayout(np.arange(128, dtype=np.uint8), m).reshape(-1, 4)
    np.testing.assert_array_equal(raw_bytes[z2.record_order, :2].reshape(-1), np.arange(128))


def test_graph_json(cli, shared_data):
    r = cli("graph", shared_data / SEGMENT, "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert [op["op"] for op in d["operators"]] == ["edgetpu-custom-op", "DEQUANTIZE", "DEQUANTIZE",
                                                   "TFLite_Detection_PostProcess"]
    assert d["postprocess_options"]["max_detections"] == 20
    exe = d["edgetpu"]["executables"]
    assert [e["type"] for e in exe] == ["EXECUTION_ONLY", "PARAMETER_CACHING"]
    assert exe[1]["parameters_size"] == 3608512
    assert d["boundary"][0]["tail"][-1]["op"] == "TFLite_Detection_PostProcess"


def test_graph_table_mentions_the_boundary(cli, shared_data):
    r = cli("graph", shared_data / SEGMENT, width=200)
    assert r.code == 0
    assert "CPU tail: 1 DEQUANTIZE -> 2 DEQUANTIZE -> 3 TFLite_Detection_PostProcess" in r.out
    assert "176,368" in r.out and "174,447" in r.out


def test_params_out_and_extract(cli, shared_data, tmp_path):
    r = cli("graph", shared_data / SEGMENT, "--params-out", tmp_path / "p", "--json")
    written = json.loads(r.out)["params_written"]
    blob = (tmp_path / "p" / "op0_exe1_parameter_caching.params").read_bytes()
    import zlib

    assert f"0x{zlib.crc32(blob):08x}" == written[1]["crc32"] and len(blob) == 3608512
    r = cli("extract", shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite", "-o",
            tmp_path / "x")
    assert r.code == 0, r.err
    pp = json.loads((tmp_path / "x" / "postprocess.json").read_text())
    anchors = np.fromfile(tmp_path / "x" / "anchors.bin", dtype="<f4").reshape(-1, 4)
    raw = open_model(shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite")
    q = raw.tensor_data(raw.tensor("anchors"))
    np.testing.assert_allclose(anchors, q.astype(np.float64) * pp["anchors"]["stored_scale"], rtol=1e-6)
    assert pp["num_anchors"] == 1917 and pp["scores"]["tensor"] == "convert_scores"


def test_relayout_cli(cli, shared_data, tmp_path):
    tensor = np.random.default_rng(2).integers(0, 256, 174447, dtype=np.uint8)
    (tmp_path / "t.bin").write_bytes(tensor.tobytes())
    model = shared_data / SEGMENT
    r = cli("relayout", tmp_path / "t.bin", "--model", model, "--layer", "convert_scores", "--inverse",
            "-o", tmp_path / "raw.bin")
    assert r.code == 0, r.err
    assert (tmp_path / "raw.bin").stat().st_size == 176368
    r = cli("relayout", tmp_path / "raw.bin", "--model", model, "--layer", "convert_scores", "-o", tmp_path / "back")
    assert r.code == 0 and (tmp_path / "back").read_bytes() == tensor.tobytes()
    assert_one_line_error(cli("relayout", tmp_path / "t.bin", "--model", model, "--layer", "convert_scores",
                              "-o", tmp_path / "x"), "176368", "174447")
    assert_one_line_error(cli("relayout", tmp_path / "t.bin", "--model", model, "--layer", "nope",
                              "-o", tmp_path / "x"), "convert_scores")


def test_bad_models_one_line(cli, tmp_path, shared_data):
    (tmp_path / "junk.tflite").write_bytes(b"not a flatbuffer at all")
    assert_one_line_error(cli("graph", tmp_path / "junk.tflite"), "identifier")
    assert_one_line_error(cli("graph", tmp_path / "missing.tflite"), "no such model file")
    data = (shared_data / "split_concat_edgetpu.tflite").read_bytes()
    (tmp_path / "cut.tflite").write_bytes(data[:4000])
    assert_one_line_error(cli("graph", tmp_path / "cut.tflite"), "runs past the end")
    assert_one_line_error(cli("extract", shared_data / "split_concat_edgetpu.tflite", "-o", tmp_path / "o"),
                          "TFLite_Detection_PostProcess")
