"""Writer and tail: models we build load and run in LiteRT; the tail of a real model matches our rebuilt one."""

from __future__ import annotations

import numpy as np
import pytest

from forensics.model.tflite.model import read_model
from forensics.model.tflite.tail import remove_custom_op
from forensics.model.tflite.writer import (DEQUANTIZE, RESHAPE, ModelSpec, OpCodeSpec, OperatorSpec, TensorSpec,
                                     build_detection_model, build_model, postprocess_options, reshape_options)

SEGMENT = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def interpreter(model_bytes):
    litert = pytest.importorskip("ai_edge_litert.interpreter")  # only the tests that run LiteRT skip without it
    it = litert.Interpreter(model_content=model_bytes,
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    return it


def run(it, feeds: dict):
    by_name = {d["name"]: d["index"] for d in it.get_input_details()}
    for name, value in feeds.items():
        it.set_tensor(by_name[name], value)
    it.invoke()
    return {d["name"]: it.get_tensor(d["index"]).copy() for d in it.get_output_details()}


def test_written_model_matches_litert_tensor_details_and_dequantizes():
    spec = ModelSpec(
        buffers=[b"", np.array([2, 4], "<i4").tobytes()],
        tensors=[TensorSpec("q", [1, 8], "uint8", scale=0.5, zero_point=128),
                 TensorSpec("f", [1, 8], "float32"),
                 TensorSpec("shape", [2], "int32", buffer=1),
                 TensorSpec("r", [2, 4], "float32")],
        opcodes=[OpCodeSpec(builtin_code=DEQUANTIZE), OpCodeSpec(builtin_code=RESHAPE)],
        operators=[OperatorSpec(0, [0], [1]), OperatorSpec(1, [1, 2], [3], builtin_options=reshape_options([2, 4]))],
        inputs=[0], outputs=[3])
    data = build_model(spec)
    ours = read_model(data)
    it = interpreter(data)
    theirs = {d["index"]: d for d in it.get_tensor_details()}
    for t in ours.main.tensors:
        d = theirs[t.index]
        assert d["name"] == t.name and list(d["shape"]) == list(t.shape)
        assert np.dtype(d["dtype"]).name == t.dtype
        if t.scale is not None:
            assert d["quantization"] == pytest.approx((t.scale, t.zero_point))
    q = np.arange(120, 128, dtype=np.uint8).reshape(1, 8)
    out = run(it, {"q": q})["r"]
    np.testing.assert_array_equal(out, ((q.astype(np.float32) - 128) * 0.5).reshape(2, 4))
    assert [op.op for op in ours.main.operators] == ["DEQUANTIZE", "RESHAPE"]
    assert ours.main.operators[1].builtin_options_name == "ReshapeOptions"


def test_opcode_above_127_uses_placeholder_byte():
    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")

    spec = ModelSpec(tensors=[TensorSpec("a", [1], "float32")], opcodes=[OpCodeSpec(builtin_code=150)],
                     operators=[OperatorSpec(0, [0], [0])], inputs=[0], outputs=[0])
    model = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(build_model(spec), 0))
    assert model.operatorCodes[0].deprecatedBuiltinCode == 127
    assert model.operatorCodes[0].builtinCode == 150
    assert read_model(build_model(spec)).operator_codes[0].builtin_code == 150


@pytest.mark.parametrize("dequantize", [True, False])
def test_detection_model_runs_in_litert(dequantize):
    rng = np.random.default_rng(7)
    n = 64
    anchors = np.stack([rng.uniform(0.1, 0.9, n), rng.uniform(0.1, 0.9, n), np.full(n, 0.2), np.full(n, 0.3)], 1)
    if dequantize:
        data = build_detection_model(anchors, boxes_quant=(0.108, 144), scores_quant=(1 / 256, 0), num_classes=1,
                                     options={"max_detections": 5, "nms_score_threshold": 0.5})
    else:
        data = build_detection_model(np.round(anchors / 0.005), anchors_quant=(0.005, 0), dequantize=False,
                                     boxes_quant=(0.108, 144), scores_quant=(1 / 256, 0), num_classes=1,
                                     options={"max_detections": 5, "nms_score_threshold": 0.5})
    scores = np.zeros((1, n, 2), np.uint8)
    scores[0, 10, 1] = 250  # one confident anchor; everything else below the threshold
    out = run(interpreter(data), {"boxes": np.full((1, n, 4), 144, np.uint8), "scores": scores})
    assert out["num_detections"][0] == 1
    assert out["detection_scores"][0, 0] == pytest.approx(250 / 256)
    # deltas of zero decode to the anchor itself: ymin = yc - h/2
    expected = anchors[10] if dequantize else np.round(anchors[10] / 0.005) * np.float32(0.005)
    assert out["detection_boxes"][0, 0, 0] == pytest.approx(expected[0] - expected[2] / 2, abs=1e-5)


def test_postprocess_options_round_trip_through_flexbuffers():
    from flatbuffers import flexbuffers

    decoded = flexbuffers.Loads(postprocess_options(max_detections=7, use_regular_nms=True, _extra=3))
    assert decoded["max_detections"] == 7 and decoded["use_regular_nms"] is True and decoded["_extra"] == 3
    assert isinstance(decoded["y_scale"], float)


def test_tail_of_real_segment_equals_rebuilt_detection_model(shared_data):
    """Differential: LiteRT on the real model minus edgetpu-custom-op == LiteRT on our writer's model."""
    from forensics.model.tflite.extract import extract
    from forensics.model.tflite.model import open_model

    data = (shared_data / SEGMENT).read_bytes()
    tail = remove_custom_op(data)
    model = read_model(tail)
    assert [model.main.tensors[i].name for i in model.main.inputs] == ["Squeeze1", "convert_scores"]
    assert "edgetpu-custom-op" not in [op.op for op in model.main.operators]
    info = extract(open_model(shared_data / SEGMENT))
    pp = info.postprocess
    rebuilt = build_detection_model(info.anchors, boxes_quant=(pp["boxes"]["scale"], pp["boxes"]["zero_point"]),
                                    scores_quant=(pp["scores"]["scale"], pp["scores"]["zero_point"]),
                                    options=pp["options"])
    rng = np.random.default_rng(3)
    boxes = rng.integers(0, 256, (1, 1917, 4), dtype=np.uint8)
    scores = rng.integers(0, 200, (1, 1917, 91), dtype=np.uint8)
    got = run(interpreter(tail), {"Squeeze1": boxes, "convert_scores": scores})
    want = run(interpreter(rebuilt), {"boxes": boxes, "scores": scores})
    names = ["TFLite_Detection_PostProcess", "TFLite_Detection_PostProcess:1", "TFLite_Detection_PostProcess:2",
             "TFLite_Detection_PostProcess:3"]
    for name, ours in zip(names, ["detection_boxes", "detection_classes", "detection_scores", "num_detections"]):
        np.testing.assert_array_equal(got[name], want[ours])
    assert got["TFLite_Detection_PostProcess:3"][0] > 0


def test_tail_without_the_op_is_an_input_error():
    from forensics.core.errors import InputError

    data = build_detection_model(np.full((4, 4), 0.5))
    with pytest.raises(InputError, match="edgetpu-custom-op"):
        remove_custom_op(data)


def test_the_library_refuses_a_tail_over_its_own_model_through_a_link(tmp_path):
    # write_tail passes the outputs' one rule (forensics.io.outputs.check_outputs) itself, so a library caller is
    # protected as the CLI is: the same path, and a hard link to the model, are refused before anything is written.
    import os
    import shutil

    from forensics.core.errors import InputError
    from forensics.model.tflite.tail import write_tail

    model = tmp_path / "model.tflite"
    shutil.copy("dumps/face_ssd/face_ssd_tail.tflite", model)
    before = model.read_bytes()
    os.link(model, tmp_path / "alias.tflite")
    for output in (model, tmp_path / "alias.tflite"):
        with pytest.raises(InputError, match="is also an input"):
            write_tail(model, output)
    assert model.read_bytes() == before
