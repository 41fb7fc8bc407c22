"""`decode --model` and `decode --deps DIR` (the directory `forensics extract` writes) are one code path: the
same anchors, options and quantization, checked against a second reader of the model's tensors."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forensics.decode.deps import read_deps
from forensics.decode.model_deps import deps_from_model

SSD_MODELS = ["ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
              "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
              "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"]


def tensor_by_name(path, name):
    """A second reader: the model's tensors through the LiteRT interpreter (not forensics.model.tflite)."""
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path), experimental_preserve_all_tensors=True)
    for d in it.get_tensor_details():
        if d["name"] == name:
            return d
    raise AssertionError(f"no tensor {name!r}")


@pytest.mark.parametrize("name", SSD_MODELS)
def test_model_and_extracted_deps_are_identical(cli, shared_data, tmp_path, name):
    path = shared_data / name
    r = cli("extract", path, "-o", tmp_path / "deps")
    assert r.code == 0, r.err
    from_model, _, _ = deps_from_model(path)
    from_dir = read_deps(tmp_path / "deps")
    np.testing.assert_array_equal(from_model.anchors.view(np.uint32), from_dir.anchors.view(np.uint32))
    assert from_model.options == from_dir.options
    for a, b in ((from_model.boxes, from_dir.boxes), (from_model.scores, from_dir.scores)):
        assert (a.name, a.quant, a.shape) == (b.name, b.quant, b.shape)
    assert from_model.input_size == from_dir.input_size
    assert from_model.num_anchors == 1917 and from_model.options.num_classes == 90


@pytest.mark.parametrize("name", SSD_MODELS)
def test_model_deps_against_litert_tensor_details(shared_data, name):
    pytest.importorskip("ai_edge_litert")
    path = shared_data / name
    deps, _, _ = deps_from_model(path)
    for info in (deps.boxes, deps.scores):
        d = tensor_by_name(path, info.name)
        scale, zero_point = d["quantization"]
        assert info.quant.scale == np.float32(scale) and info.quant.zero_point == zero_point
        assert tuple(d["shape"]) == info.shape
    if deps.anchors_codes is not None:  # head layers model: uint8 anchors, recovered codes = the stored bytes
        from forensics.model.tflite.graph import postprocess_info
        from forensics.model.tflite.model import open_model

        model = open_model(path)
        stored = np.asarray(model.tensor_data(postprocess_info(model).anchors), np.uint8).reshape(-1, 4)
        np.testing.assert_array_equal(deps.anchors_codes, stored)
        scale, zero_point = tensor_by_name(path, postprocess_info(model).anchors.name)["quantization"]
        assert deps.anchors_quant.scale == np.float32(scale) and deps.anchors_quant.zero_point == zero_point
        assert deps.boxes_into_kernel  # no DEQUANTIZE in front of the kernel in this model
    else:
        assert not deps.boxes_into_kernel


@pytest.mark.parametrize("name", SSD_MODELS[::2])
def test_decode_by_model_equals_decode_by_extracted_deps(cli, shared_data, tmp_path, name):
    path = shared_data / name
    assert cli("extract", path, "-o", tmp_path / "deps").code == 0
    rng = np.random.default_rng(4)
    rng.integers(100, 160, (1917, 4), dtype=np.uint8).tofile(tmp_path / "b.bin")
    scores = rng.integers(0, 40, (1917, 91), dtype=np.uint8)
    scores[rng.integers(0, 1917, 60), rng.integers(1, 91, 60)] = 240
    scores.tofile(tmp_path / "s.bin")
    args = [tmp_path / "b.bin", tmp_path / "s.bin", "--json"]
    a = json.loads(cli("decode", "--model", path, *args).out)
    b = json.loads(cli("decode", "--deps", tmp_path / "deps", *args).out)
    assert a["num_detections"] > 0
    assert a["detections"] == b["detections"]
