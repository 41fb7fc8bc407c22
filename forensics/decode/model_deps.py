"""`decode --model`: the decode's deps read from a .tflite (anchors, options, quantization, chip layouts, tail).

Thin glue over forensics.tflite (the model engineer's reader): the PostProcess op and its options, the
anchors constant (uint8 anchors are kept as codes: the kernel dequantizes them itself), the uint8 tensors
feeding the decode traced back through DEQUANTIZE, the image input size when the graph has one, and for
Edge TPU models each output layer's raw size with its relayout, plus the CPU tail for --replay.
"""

from __future__ import annotations

import os

import numpy as np

from forensics.decode.deps import DecodeDeps, TensorInfo
from forensics.decode.ssd import PostProcessOptions, Quantization, dequantize_single
from forensics.errors import InputError


def _quant(tensor) -> Quantization | None:
    q = tensor.quantization
    if tensor.dtype != "uint8" or q is None or not q.scale:
        return None
    return Quantization(float(q.scale[0]), int(q.zero_point[0]) if q.zero_point else 0)


def deps_from_model(path) -> tuple[DecodeDeps, dict, bytes | None]:
    """(deps, {tensor name: relayout function}, tail model bytes or None)."""
    from forensics.tflite.graph import postprocess_info
    from forensics.tflite.model import open_model

    path = os.fspath(path)
    model = open_model(path)
    info = postprocess_info(model)
    if info is None:
        raise InputError("the model has no TFLite_Detection_PostProcess operator (nothing to decode)", path)
    try:
        options = PostProcessOptions.from_mapping(dict(info.options.values), "PostProcess options")
    except InputError as exc:
        raise InputError(str(exc), path) from None
    data = model.tensor_data(info.anchors)
    if data is None:
        raise InputError(f"the anchors input {info.anchors.name!r} is not a constant tensor", path)
    anchors_codes = anchors_quant = None
    if info.anchors.dtype == "uint8":
        anchors_quant = _quant(info.anchors)
        if anchors_quant is None:
            raise InputError("uint8 anchors without quantization parameters", path)
        anchors_codes = np.array(data, dtype=np.uint8).reshape(-1, 4)
        anchors = dequantize_single(anchors_codes, anchors_quant)
    elif info.anchors.dtype == "float32":
        anchors = np.array(data, dtype=np.float32).reshape(-1, 4)
    else:
        raise InputError(f"anchors of type {info.anchors.dtype} are not supported by the kernel", path)
    boxes = TensorInfo(info.boxes.name, _quant(info.boxes), tuple(info.boxes.shape))
    scores = TensorInfo(info.scores.name, _quant(info.scores), tuple(info.scores.shape))
    input_size = None
    for index in model.main.inputs:
        t = model.main.tensors[index]
        if len(t.shape) == 4 and t.shape[-1] in (1, 3):
            input_size = (int(t.shape[2]), int(t.shape[1]))
            break
    raw_sizes, relayouts, tail = {}, {}, None
    if any(op.custom_code == "edgetpu-custom-op" for op in model.custom_ops):
        from forensics.tflite.edgetpu import read_packages
        from forensics.tflite.relayout import layer_map, relayout
        from forensics.tflite.tail import remove_custom_op

        for package in read_packages(model):
            for info_t in (boxes, scores):
                layer = package.output_layer(info_t.name)
                if layer is not None and layer.layout is not None:
                    m = layer_map(layer)
                    raw_sizes[info_t.name] = layer.size_bytes
                    relayouts[info_t.name] = (lambda raw, m=m: relayout(np.frombuffer(raw, np.uint8), m))
        tail = remove_custom_op(bytes(model.data))
    elif info.boxes.index in model.main.inputs and info.scores.index in model.main.inputs:
        tail = bytes(model.data)
    deps = DecodeDeps(anchors=anchors, options=options, boxes=boxes, scores=scores, input_size=input_size,
                      anchors_quant=anchors_quant, anchors_codes=anchors_codes,
                      boxes_into_kernel=info.boxes_input.dtype == "uint8", raw_sizes=raw_sizes, source=path)
    return deps, relayouts, tail
