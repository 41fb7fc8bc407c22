"""`decode --model`: the decode's deps from a .tflite, through the same path as `--deps DIR`.

forensics.model.tflite.extract produces the postprocess.json document and float32 anchors that `forensics extract`
writes; deps.deps_from_document validates them exactly as it validates the files. What only a model can add
is kept here: the anchors' uint8 codes when the kernel reads uint8 anchors (the kernel dequantizes them
itself), whether the box encodings enter the kernel as uint8, each Edge TPU output layer's raw size with its
relayout, and the CPU tail for --replay.
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from forensics.decode.deps import POSTPROCESS_FILE, DecodeDeps, deps_from_document
from forensics.decode.ssd import Quantization, dequantize_single
from forensics.core.errors import FormatError, InputError


def _anchor_codes(anchors: np.ndarray, stored: dict, path: str) -> tuple[np.ndarray, Quantization]:
    """The uint8 codes behind dequantized anchors: extract writes fl((q - zero_point) * scale), one rounding,
    so q = round(value / scale) + zero_point is exact (|q - zp| <= 255 keeps the error far below 0.5); checked
    by dequantizing again bit for bit."""
    if stored.get("stored_scale") is None:
        raise InputError("uint8 anchors without quantization parameters", path)
    quant = Quantization(float(stored["stored_scale"]), int(stored.get("stored_zero_point") or 0))
    codes = np.rint(anchors.astype(np.float64) / quant.scale) + quant.zero_point
    if codes.min() < 0 or codes.max() > 255:
        raise InputError("uint8 anchors decode outside 0..255", path)
    codes = codes.astype(np.uint8)
    if not np.array_equal(dequantize_single(codes, quant).view(np.uint32), anchors.view(np.uint32)):
        raise InputError("uint8 anchors do not round-trip through their quantization", path)
    return codes, quant


def document_deps(model, path: str):
    """(deps, extracted): the decode's deps as the model's PostProcess options and anchors give them, validated
    as the --deps files are (forensics.model.tflite.extract's document), and that document. InputError when the model
    has no TFLite_Detection_PostProcess."""
    from forensics.model.tflite.extract import extract

    extracted = extract(model)
    anchors = np.asarray(extracted.anchors, dtype=np.float32).reshape(-1, 4)
    deps = deps_from_document(extracted.postprocess, anchors, json_path=f"{path} ({POSTPROCESS_FILE} view)",
                              anchors_path=f"{path} (anchors)", source=path)
    return deps, extracted


def output_layers(model, deps: DecodeDeps) -> dict:
    """{tensor name: Edge TPU output layer} of the decode's two inputs, from every package of the model."""
    from forensics.model.tflite.edgetpu import read_packages

    layers = {}
    for package in read_packages(model):
        for tensor in (deps.boxes, deps.scores):
            layer = package.output_layer(tensor.name) if tensor.name else None
            if layer is not None:
                layers[tensor.name] = layer
    return layers


def deps_from_model(path) -> tuple[DecodeDeps, dict, bytes | None]:
    """(deps, {tensor name: relayout function}, tail model bytes or None)."""
    from forensics.model.tflite.graph import postprocess_info
    from forensics.model.tflite.model import open_model

    path = os.fspath(path)
    model = open_model(path)
    deps, extracted = document_deps(model, path)
    anchors = deps.anchors
    info = postprocess_info(model)
    stored = extracted.postprocess.get("anchors") or {}
    anchors_codes = anchors_quant = None
    if stored.get("stored_dtype") == "uint8":
        anchors_codes, anchors_quant = _anchor_codes(anchors, stored, path)
    elif stored.get("stored_dtype") not in (None, "float32"):
        raise InputError(f"anchors of type {stored['stored_dtype']} are not supported by the kernel", path)
    raw_sizes, relayouts, tail = {}, {}, None
    if any(op.custom_code == "edgetpu-custom-op" for op in model.custom_ops):
        from forensics.model.tflite.relayout import layer_map, relayout
        from forensics.model.tflite.tail import remove_custom_op

        for name, layer in output_layers(model, deps).items():
            if layer.layout is not None:
                try:
                    m = layer_map(layer, tensor_bytes=model.tensor(name).size_bytes)
                except FormatError as exc:
                    raise exc.with_path(path) from None
                raw_sizes[name] = layer.size_bytes
                relayouts[name] = (lambda raw, m=m: relayout(np.frombuffer(raw, np.uint8), m))
        tail = remove_custom_op(bytes(model.data))
    elif info.boxes.index in model.main.inputs and info.scores.index in model.main.inputs:
        tail = bytes(model.data)
    deps = dataclasses.replace(deps, anchors_quant=anchors_quant, anchors_codes=anchors_codes,
                               boxes_into_kernel=info.boxes_input.dtype == "uint8", raw_sizes=raw_sizes)
    return deps, relayouts, tail
