"""A small TFLite model writer over `flatbuffers.Builder`, for fixtures, differential tests and the CPU tail.

Field ids follow tensorflow/lite/schema/schema.fbs (own code, no generated classes):

    Model          0 version  1 operator_codes  2 subgraphs  3 description  4 buffers
    OperatorCode   0 deprecated_builtin_code (byte)  1 custom_code  2 version  3 builtin_code (int)
    SubGraph       0 tensors  1 inputs  2 outputs  3 operators  4 name
    Tensor         0 shape  1 type  2 buffer  3 name  4 quantization
    Quantization   2 scale  3 zero_point (long)  6 quantized_dimension
    Operator       0 opcode_index  1 inputs  2 outputs  3 builtin_options_type  4 builtin_options
                   5 custom_options  6 custom_options_format
    Buffer         0 data (force_align: 16)

Usage::

    from forensics.model.tflite.writer import (ModelSpec, TensorSpec, OpCodeSpec, OperatorSpec, build_model,
                                         postprocess_options, build_detection_model)

    spec = ModelSpec(
        buffers=[b""],                                  # buffer 0 is the empty sentinel, as in TOCO output
        tensors=[TensorSpec("q", [1, 8], "uint8", scale=0.5, zero_point=128),
                 TensorSpec("f", [1, 8], "float32")],
        opcodes=[OpCodeSpec(builtin_code=DEQUANTIZE)],
        operators=[OperatorSpec(opcode=0, inputs=[0], outputs=[1])],
        inputs=[0], outputs=[1])
    model_bytes = build_model(spec)                    # loads in LiteRT's Interpreter

    # uint8 deltas/scores -> DEQUANTIZE x2 -> TFLite_Detection_PostProcess with constant float32 anchors
    model_bytes = build_detection_model(anchors, boxes_quant=(0.108, 144), scores_quant=(1 / 256, 0),
                                        num_classes=1, options=dict(max_detections=10))
    # the same without DEQUANTIZE: uint8 boxes/scores and uint8 anchors (anchors_quant=(scale, zp))
    model_bytes = build_detection_model(anchors_u8, anchors_quant=(0.005, 0), dequantize=False, ...)

Builtin options are written generically: `BuiltinOptions(type=17, fields=[(0, "[int32]", [1, 4])])` is a
ReshapeOptions table with new_shape [1, 4]; `reshape_options()` and `concatenation_options()` spell the two
the SSD heads use. To re-emit a model read from a file with operators removed, use
`forensics.model.tflite.tail.remove_custom_op`, which keeps every other table byte for byte.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import flatbuffers
import numpy as np
from flatbuffers import flexbuffers

from forensics.core.errors import InputError

FILE_IDENTIFIER = b"TFL3"
SCHEMA_VERSION = 3

# schema.fbs enum TensorType
TENSOR_TYPES = {
    "float32": 0, "float16": 1, "int32": 2, "uint8": 3, "int64": 4, "string": 5, "bool": 6, "int16": 7,
    "complex64": 8, "int8": 9, "float64": 10, "complex128": 11, "uint64": 12, "resource": 13, "variant": 14,
    "uint32": 15, "uint16": 16, "int4": 17, "bfloat16": 18,
}
# schema.fbs enum BuiltinOperator (the few fixtures need; any int is accepted)
ADD, CONCATENATION, DEQUANTIZE, LOGISTIC, RESHAPE, CUSTOM, QUANTIZE = 0, 2, 6, 14, 22, 32, 114
# Codes >= 127 live only in the int32 builtin_code; deprecated_builtin_code holds this placeholder.
PLACEHOLDER_FOR_GREATER_OP_CODES = 127
# schema.fbs union BuiltinOptions member ids
CONCATENATION_OPTIONS, RESHAPE_OPTIONS, DEQUANTIZE_OPTIONS = 10, 17, 38

POSTPROCESS_CUSTOM_CODE = "TFLite_Detection_PostProcess"

_SCALAR_FORMATS = {  # kind -> (Builder.Prepend* method, byte width, numpy dtype)
    "bool": ("PrependBool", 1, np.bool_), "int8": ("PrependInt8", 1, np.int8), "uint8": ("PrependUint8", 1, np.uint8),
    "int16": ("PrependInt16", 2, np.int16), "uint16": ("PrependUint16", 2, np.uint16),
    "int32": ("PrependInt32", 4, np.int32), "uint32": ("PrependUint32", 4, np.uint32),
    "int64": ("PrependInt64", 8, np.int64), "uint64": ("PrependUint64", 8, np.uint64),
    "float32": ("PrependFloat32", 4, np.float32), "float64": ("PrependFloat64", 8, np.float64),
}


@dataclass
class TensorSpec:
    """One tensor: per-tensor quantization is `scale=s, zero_point=z`; per-channel passes sequences."""

    name: str
    shape: Sequence[int]
    dtype: str = "float32"
    buffer: int = 0
    scale: float | Sequence[float] | None = None
    zero_point: int | Sequence[int] | None = None
    quantized_dimension: int = 0
    is_variable: bool = False


@dataclass
class OpCodeSpec:
    """A builtin operator (builtin_code) or a custom one (custom_code; builtin_code is then CUSTOM)."""

    builtin_code: int = CUSTOM
    custom_code: str | None = None
    version: int = 1


@dataclass
class BuiltinOptions:
    """A builtin options table: union member id and (field id, kind, value); kind is a scalar or '[scalar]'."""

    type: int
    fields: Sequence[tuple[int, str, object]] = ()


@dataclass
class OperatorSpec:
    opcode: int
    inputs: Sequence[int]
    outputs: Sequence[int]
    builtin_options: BuiltinOptions | None = None
    custom_options: bytes | None = None


@dataclass
class ModelSpec:
    buffers: Sequence[bytes] = field(default_factory=lambda: [b""])
    tensors: Sequence[TensorSpec] = ()
    opcodes: Sequence[OpCodeSpec] = ()
    operators: Sequence[OperatorSpec] = ()
    inputs: Sequence[int] = ()
    outputs: Sequence[int] = ()
    description: str = "forensics fixture"
    subgraph_name: str | None = "main"
    version: int = SCHEMA_VERSION


def reshape_options(new_shape: Sequence[int]) -> BuiltinOptions:
    return BuiltinOptions(RESHAPE_OPTIONS, [(0, "[int32]", list(new_shape))])


def concatenation_options(axis: int, fused_activation_function: int = 0) -> BuiltinOptions:
    return BuiltinOptions(CONCATENATION_OPTIONS, [(0, "int32", axis), (1, "int8", fused_activation_function)])


def _vector(builder: flatbuffers.Builder, kind: str, values, alignment: int | None = None) -> int:
    method, width, dtype = _SCALAR_FORMATS[kind]
    values = list(values)
    builder.StartVector(width, len(values), alignment or width)
    prepend = getattr(builder, method)
    for value in reversed(values):
        prepend(dtype(value).item() if kind != "bool" else bool(value))
    return builder.EndVector()


def _bytes_vector(builder: flatbuffers.Builder, data: bytes, alignment: int = 16) -> int:
    """A [ubyte] vector whose data starts on `alignment` (Buffer.data is force_align: 16 in schema.fbs)."""
    data = bytes(data)
    builder.StartVector(1, len(data), alignment)
    builder.head -= len(data)
    builder.Bytes[builder.head:builder.head + len(data)] = data
    return builder.EndVector()


def _offsets_vector(builder: flatbuffers.Builder, offsets: Sequence[int]) -> int:
    builder.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        builder.PrependUOffsetTRelative(off)
    return builder.EndVector()


def _as_list(value) -> list:
    if value is None:
        return []
    if isinstance(value, (list, tuple, np.ndarray)):
        return list(value)
    return [value]


def _quantization(builder: flatbuffers.Builder, t: TensorSpec) -> int | None:
    scales, zero_points = _as_list(t.scale), _as_list(t.zero_point)
    if not scales:
        return None
    if not zero_points:
        zero_points = [0] * len(scales)
    if len(zero_points) != len(scales):
        raise InputError(f"tensor {t.name!r}: {len(scales)} scales but {len(zero_points)} zero points")
    scale_vec = _vector(builder, "float32", scales)
    zp_vec = _vector(builder, "int64", zero_points)
    builder.StartObject(7)
    builder.PrependUOffsetTRelativeSlot(2, scale_vec, 0)
    builder.PrependUOffsetTRelativeSlot(3, zp_vec, 0)
    if t.quantized_dimension:
        builder.PrependInt32Slot(6, t.quantized_dimension, 0)
    return builder.EndObject()


def _builtin_options(builder: flatbuffers.Builder, options: BuiltinOptions) -> int:
    vectors = {}
    for slot, kind, value in options.fields:
        if kind.startswith("["):
            vectors[slot] = _vector(builder, kind.strip("[]"), value)
    builder.StartObject(max((slot for slot, _, _ in options.fields), default=-1) + 1)
    for slot, kind, value in options.fields:
        if slot in vectors:
            builder.PrependUOffsetTRelativeSlot(slot, vectors[slot], 0)
        else:
            method = _SCALAR_FORMATS[kind][0]
            # Force the value into the table even when it equals the default: readers see it either way.
            getattr(builder, method)(_SCALAR_FORMATS[kind][2](value).item() if kind != "bool" else bool(value))
            builder.Slot(slot)
    return builder.EndObject()


def build_model(spec: ModelSpec) -> bytes:
    """Serialise `spec` as a TFLite flatbuffer (identifier TFL3); raises InputError on inconsistent specs."""
    _check_spec(spec)
    builder = flatbuffers.Builder(1024 + sum(len(b) for b in spec.buffers))

    # Buffers first: the largest blobs, aligned to 16 as schema.fbs asks.
    buffer_tables = [_buffer_table(builder, data) for data in spec.buffers]
    tensor_tables = [_tensor_table(builder, t) for t in spec.tensors]
    operator_tables = [_operator_table(builder, op) for op in spec.operators]
    subgraph = _subgraph_table(builder, spec, tensor_tables, operator_tables)
    code_tables = [_opcode_table(builder, code) for code in spec.opcodes]

    codes_vec = _offsets_vector(builder, code_tables)
    subgraphs_vec = _offsets_vector(builder, [subgraph])
    description = builder.CreateString(spec.description) if spec.description is not None else None
    buffers_vec = _offsets_vector(builder, buffer_tables)
    builder.StartObject(5)
    builder.PrependUint32Slot(0, spec.version, 0)
    builder.PrependUOffsetTRelativeSlot(1, codes_vec, 0)
    builder.PrependUOffsetTRelativeSlot(2, subgraphs_vec, 0)
    if description is not None:
        builder.PrependUOffsetTRelativeSlot(3, description, 0)
    builder.PrependUOffsetTRelativeSlot(4, buffers_vec, 0)
    model = builder.EndObject()
    builder.Finish(model, file_identifier=FILE_IDENTIFIER)
    return bytes(builder.Output())


def _check_spec(spec: ModelSpec) -> None:
    """Every tensor's dtype known and buffer in range, every operator's opcode and tensor indices in range
    (-1: an optional input left out)."""
    n_tensors, n_buffers, n_codes = len(spec.tensors), len(spec.buffers), len(spec.opcodes)
    for t in spec.tensors:
        if t.dtype not in TENSOR_TYPES:
            raise InputError(f"tensor {t.name!r}: unknown dtype {t.dtype!r}")
        if not 0 <= t.buffer < n_buffers:
            raise InputError(f"tensor {t.name!r}: buffer {t.buffer} out of range (0..{n_buffers - 1})")
    for i, op in enumerate(spec.operators):
        if not 0 <= op.opcode < n_codes:
            raise InputError(f"operator {i}: opcode index {op.opcode} out of range")
        for idx in list(op.inputs) + list(op.outputs):
            if not -1 <= idx < n_tensors:
                raise InputError(f"operator {i}: tensor index {idx} out of range")


def _buffer_table(builder: flatbuffers.Builder, data: bytes) -> int:
    """A Buffer table: its data vector (none for an empty buffer, as converters write buffer 0)."""
    data_vec = _bytes_vector(builder, data) if data else None
    builder.StartObject(3)
    if data_vec is not None:
        builder.PrependUOffsetTRelativeSlot(0, data_vec, 0)
    return builder.EndObject()


def _tensor_table(builder: flatbuffers.Builder, t: TensorSpec) -> int:
    """A Tensor table: shape, type, buffer, name, quantization, and is_variable only when set."""
    name = builder.CreateString(t.name)
    shape = _vector(builder, "int32", t.shape)
    quant = _quantization(builder, t)
    builder.StartObject(5 if not t.is_variable else 6)
    builder.PrependUOffsetTRelativeSlot(0, shape, 0)
    builder.PrependInt8Slot(1, TENSOR_TYPES[t.dtype], 0)
    builder.PrependUint32Slot(2, t.buffer, 0)
    builder.PrependUOffsetTRelativeSlot(3, name, 0)
    if quant is not None:
        builder.PrependUOffsetTRelativeSlot(4, quant, 0)
    if t.is_variable:
        builder.PrependBoolSlot(5, True, False)
    return builder.EndObject()


def _operator_table(builder: flatbuffers.Builder, op: OperatorSpec) -> int:
    """An Operator table: opcode index, inputs, outputs, builtin options (type and table) and custom options."""
    inputs = _vector(builder, "int32", op.inputs)
    outputs = _vector(builder, "int32", op.outputs)
    options = _builtin_options(builder, op.builtin_options) if op.builtin_options else None
    custom = _bytes_vector(builder, op.custom_options, 4) if op.custom_options is not None else None
    builder.StartObject(7)
    builder.PrependUint32Slot(0, op.opcode, 0)
    builder.PrependUOffsetTRelativeSlot(1, inputs, 0)
    builder.PrependUOffsetTRelativeSlot(2, outputs, 0)
    if options is not None:
        builder.PrependUint8Slot(3, op.builtin_options.type, 0)
        builder.PrependUOffsetTRelativeSlot(4, options, 0)
    if custom is not None:
        builder.PrependUOffsetTRelativeSlot(5, custom, 0)
    return builder.EndObject()


def _subgraph_table(builder: flatbuffers.Builder, spec: ModelSpec, tensor_tables: list, operator_tables: list) -> int:
    """The one SubGraph table: its tensors, inputs, outputs, operators and name."""
    sg_tensors = _offsets_vector(builder, tensor_tables)
    sg_inputs = _vector(builder, "int32", spec.inputs)
    sg_outputs = _vector(builder, "int32", spec.outputs)
    sg_ops = _offsets_vector(builder, operator_tables)
    sg_name = builder.CreateString(spec.subgraph_name) if spec.subgraph_name is not None else None
    builder.StartObject(5)
    builder.PrependUOffsetTRelativeSlot(0, sg_tensors, 0)
    builder.PrependUOffsetTRelativeSlot(1, sg_inputs, 0)
    builder.PrependUOffsetTRelativeSlot(2, sg_outputs, 0)
    builder.PrependUOffsetTRelativeSlot(3, sg_ops, 0)
    if sg_name is not None:
        builder.PrependUOffsetTRelativeSlot(4, sg_name, 0)
    return builder.EndObject()


def _opcode_table(builder: flatbuffers.Builder, code: OpCodeSpec) -> int:
    """An OperatorCode table. schema.fbs: deprecated_builtin_code is a byte kept for old readers; codes past 126
    store the placeholder 127 there and the real code in builtin_code."""
    custom = builder.CreateString(code.custom_code) if code.custom_code is not None else None
    builder.StartObject(4)
    builder.PrependInt8Slot(0, min(code.builtin_code, PLACEHOLDER_FOR_GREATER_OP_CODES), 0)
    if custom is not None:
        builder.PrependUOffsetTRelativeSlot(1, custom, 0)
    builder.PrependInt32Slot(2, code.version, 1)
    builder.PrependInt32Slot(3, code.builtin_code, 0)
    return builder.EndObject()


# The keys TFLite_Detection_PostProcess reads (tensorflow/lite/kernels/detection_postprocess.cc, Init).
POSTPROCESS_DEFAULTS = {
    "max_detections": 10,
    "max_classes_per_detection": 1,
    "detections_per_class": 100,
    "use_regular_nms": False,
    "nms_score_threshold": 0.3,
    "nms_iou_threshold": 0.6,
    "num_classes": 90,
    "y_scale": 10.0,
    "x_scale": 10.0,
    "h_scale": 5.0,
    "w_scale": 5.0,
}
_POSTPROCESS_INT_KEYS = {"max_detections", "max_classes_per_detection", "detections_per_class", "num_classes"}
_POSTPROCESS_FLOAT_KEYS = {"nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale"}


def postprocess_options(**kwargs) -> bytes:
    """The custom options of TFLite_Detection_PostProcess: a flexbuffer map (defaults overridden by kwargs).

    Extra keys are written as given (e.g. `_output_quantized=True`); ints stay ints, floats floats.
    """
    values = dict(POSTPROCESS_DEFAULTS)
    values.update(kwargs)
    typed = {}
    for key, value in values.items():
        if key in _POSTPROCESS_INT_KEYS:
            typed[key] = int(value)
        elif key in _POSTPROCESS_FLOAT_KEYS:
            typed[key] = float(value)
        elif key == "use_regular_nms":
            typed[key] = bool(value)
        else:
            typed[key] = value
    return bytes(flexbuffers.Dumps(typed))


def build_detection_model(anchors, *, boxes_quant=(0.1, 128), scores_quant=(1 / 256, 0), num_classes=None,
                          options=None, dequantize=True, anchors_quant=None, anchors_dtype=None,
                          labels_offset: int = 1) -> bytes:
    """An SSD CPU tail: inputs `boxes` uint8 [1,N,4] and `scores` uint8 [1,N,C+1] -> detections.

    dequantize=True: boxes/scores -> DEQUANTIZE -> float32 -> PostProcess with constant float32 anchors.
    dequantize=False: uint8 boxes/scores straight into PostProcess; anchors are stored uint8 with
    `anchors_quant=(scale, zero_point)` (the kernel reads float32 anchors' bytes as uint8
    when its box input is uint8).
    `anchors` is [N, 4] (ycenter, xcenter, h, w): floats, or uint8 codes when anchors_quant is given.
    Outputs: detection_boxes [1,M,4], detection_classes [1,M], detection_scores [1,M], num_detections [1].
    """
    anchors = np.asarray(anchors)
    if anchors.ndim != 2 or anchors.shape[1] != 4:
        raise InputError(f"anchors must be [N, 4], got shape {list(anchors.shape)}")
    n = int(anchors.shape[0])
    opts = dict(options or {})
    if num_classes is not None:
        opts["num_classes"] = num_classes
    opts.setdefault("num_classes", POSTPROCESS_DEFAULTS["num_classes"])
    classes = int(opts["num_classes"]) + labels_offset
    m = int(opts.get("max_detections", POSTPROCESS_DEFAULTS["max_detections"])) * int(
        opts.get("max_classes_per_detection", POSTPROCESS_DEFAULTS["max_classes_per_detection"]))

    anchors_dtype = anchors_dtype or ("uint8" if anchors_quant is not None else "float32")
    if anchors_dtype == "uint8":
        anchor_bytes = np.ascontiguousarray(anchors, dtype=np.uint8).tobytes()
        a_scale, a_zp = anchors_quant if anchors_quant is not None else (1.0, 0)
    else:
        anchor_bytes = np.ascontiguousarray(anchors, dtype="<f4").tobytes()
        a_scale = a_zp = None

    tensors = [
        TensorSpec("boxes", [1, n, 4], "uint8", scale=boxes_quant[0], zero_point=boxes_quant[1]),
        TensorSpec("scores", [1, n, classes], "uint8", scale=scores_quant[0], zero_point=scores_quant[1]),
        TensorSpec("anchors", [n, 4], anchors_dtype, buffer=1, scale=a_scale, zero_point=a_zp),
        TensorSpec("detection_boxes", [1, m, 4], "float32"),
        TensorSpec("detection_classes", [1, m], "float32"),
        TensorSpec("detection_scores", [1, m], "float32"),
        TensorSpec("num_detections", [1], "float32"),
    ]
    opcodes = [OpCodeSpec(custom_code=POSTPROCESS_CUSTOM_CODE)]
    operators = []
    pp_inputs = [0, 1, 2]
    if dequantize:
        tensors += [TensorSpec("boxes_float", [1, n, 4], "float32"),
                    TensorSpec("scores_float", [1, n, classes], "float32")]
        opcodes.append(OpCodeSpec(builtin_code=DEQUANTIZE))
        operators += [OperatorSpec(1, [0], [7]), OperatorSpec(1, [1], [8])]
        pp_inputs = [7, 8, 2]
    operators.append(OperatorSpec(0, pp_inputs, [3, 4, 5, 6], custom_options=postprocess_options(**opts)))
    return build_model(ModelSpec(buffers=[b"", anchor_bytes], tensors=tensors, opcodes=opcodes,
                                 operators=operators, inputs=[0, 1], outputs=[3, 4, 5, 6],
                                 description="forensics detection tail"))
