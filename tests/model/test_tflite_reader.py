"""The reader against LiteRT's generated schema module (a second reader) on the real models; hostile bytes."""

from __future__ import annotations

import struct
import zlib

import pytest

from forensics.core.errors import FormatError, InputError
from forensics.model.tflite.model import open_model, read_model
from forensics.model.tflite.writer import ModelSpec, OpCodeSpec, OperatorSpec, TensorSpec, build_model

MODELS = ["ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
          "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
          "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite",
          "split_concat_edgetpu.tflite", "mobilenet_v1_0.25_128_quant_edgetpu.tflite"]


@pytest.mark.parametrize("name", MODELS)
def test_reader_agrees_with_generated_schema(shared_data, name):
    data = (shared_data / name).read_bytes()
    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")  # the second reader (runtime extra)
    ref = schema.ModelT.InitFromObj(schema.Model.GetRootAsModel(data, 0))
    with open_model(shared_data / name) as ours:
        assert ours.version == ref.version
        sg, rsg = ours.main, ref.subgraphs[0]
        assert list(sg.inputs) == list(rsg.inputs) and list(sg.outputs) == list(rsg.outputs)
        for t, rt in zip(sg.tensors, rsg.tensors, strict=True):
            assert t.name == rt.name.decode()
            assert list(t.shape) == list(rt.shape if rt.shape is not None else [])
            assert t.buffer == rt.buffer
            if rt.quantization is not None and rt.quantization.scale is not None and len(rt.quantization.scale):
                assert list(t.quantization.scale) == pytest.approx(list(rt.quantization.scale))
                assert list(t.quantization.zero_point) == list(rt.quantization.zeroPoint)
        for op, rop in zip(sg.operators, rsg.operators, strict=True):
            code = ref.operatorCodes[rop.opcodeIndex]
            if code.customCode is not None:
                assert op.op == code.customCode.decode()
                assert bytes(ours.custom_options(op)) == bytes(bytearray(rop.customOptions))
            assert list(op.inputs) == list(rop.inputs) and list(op.outputs) == list(rop.outputs)
        for b, rb in zip(ours.buffers, ref.buffers, strict=True):
            ref_data = bytes(bytearray(rb.data)) if rb.data is not None else b""
            assert zlib.crc32(ours.buffer_view(b.index)) == zlib.crc32(ref_data) and b.size == len(ref_data)


def test_uint8_anchor_tensor_data(shared_data):
    with open_model(shared_data / MODELS[2]) as m:
        anchors = m.tensor("anchors")
        assert (anchors.dtype, anchors.shape) == ("uint8", (1917, 4))
        assert m.tensor_data(anchors).shape == (1917, 4)


def _tiny() -> bytes:
    return build_model(ModelSpec(tensors=[TensorSpec("a", [1, 4], "uint8", scale=0.5, zero_point=3)],
                                 opcodes=[OpCodeSpec(custom_code="x")],
                                 operators=[OperatorSpec(0, [0], [0], custom_options=b"\1\2")],
                                 inputs=[0], outputs=[0]))


def test_tiny_model_round_trip():
    m = read_model(_tiny())
    t = m.main.tensors[0]
    assert (t.name, t.shape, t.dtype, t.scale, t.zero_point) == ("a", (1, 4), "uint8", 0.5, 3)
    assert bytes(m.custom_options(m.main.operators[0])) == b"\1\2"


def _root(data):
    return struct.unpack_from("<I", data, 0)[0]


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d[:3], "too short"),
    (lambda d: d[:4] + b"XXXX" + d[8:], "identifier"),
    (lambda d: d[:len(d) // 2], "runs past the end"),
    (lambda d: struct.pack("<I", 0xFFFFFF00) + d[4:], "runs past the end"),
])
def test_corrupt_models_raise_format_error(mutate, fragment):
    with pytest.raises(FormatError, match=fragment):
        read_model(mutate(_tiny()))


def test_huge_vector_length_is_refused_without_allocating():
    data = bytearray(_tiny())
    m = read_model(bytes(data))
    # the tensor's shape vector: find its length word (2 int32s: 1, 4) and claim 2**31 entries
    pos = bytes(data).find(struct.pack("<iii", 2, 1, 4))
    assert pos > 0
    struct.pack_into("<I", data, pos, 0x7FFFFFFF)
    with pytest.raises(FormatError, match="vector length 2147483647") as exc:
        read_model(bytes(data))
    assert "shape" in str(exc.value) and m.main.tensors[0].shape == (1, 4)


def test_model_without_subgraphs_and_bad_indices():
    with pytest.raises(FormatError, match="no subgraphs"):
        read_model(_no_subgraphs())
    bad = build_model(ModelSpec(tensors=[TensorSpec("a", [1], "float32")], inputs=[0], outputs=[0]))
    patched = bytearray(bad)
    # outputs vector [0] -> [7]: the only int32 vector of length 1 holding 0 after the inputs one
    first = bytes(patched).find(struct.pack("<Ii", 1, 0))
    second = bytes(patched).find(struct.pack("<Ii", 1, 0), first + 1)
    struct.pack_into("<i", patched, second + 4, 7)
    with pytest.raises(FormatError, match="out of range"):
        read_model(bytes(patched))


def _no_subgraphs() -> bytes:
    import flatbuffers

    b = flatbuffers.Builder(64)
    b.StartObject(5)
    b.PrependUint32Slot(0, 3, 0)
    b.Finish(b.EndObject(), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_open_model_input_errors(tmp_path):
    with pytest.raises(InputError, match="no such model file"):
        open_model(tmp_path / "missing.tflite")
    (tmp_path / "empty.tflite").write_bytes(b"")
    with pytest.raises(InputError, match="empty"):
        open_model(tmp_path / "empty.tflite")
