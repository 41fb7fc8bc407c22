"""Model-aware dump layouts: a tensor name and a dump size become a RecordLayout, raw or tensor.

A dump of an Edge TPU output is either what the chip wrote (`raw`: size_bytes of the output layer, each
record's z padded to the 4-byte lane, records placed tile by tile) or what libedgetpu hands to TFLite
(`tensor`: y*x*z bytes in anchor order). The size decides which; any other size is an InputError naming
both. Field names: `background` + class names for PostProcess scores, dy/dx/dh/dw for box encodings.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.core.errors import FormatError, InputError
from forensics.io.labels import read_labels
from forensics.core.layout import RecordLayout
from forensics.model.tflite.edgetpu import Layer, read_packages
from forensics.model.tflite.graph import postprocess_info
from forensics.model.tflite.model import Model, Tensor
from forensics.model.tflite.relayout import LayerMap, layer_map

BOX_FIELDS = ("dy", "dx", "dh", "dw")  # the kernel's box encoding order: ycenter, xcenter, h, w


@dataclass(frozen=True)
class ModelTensorView:
    tensor: Tensor
    layout: RecordLayout
    mode: str  # "raw" or "tensor"
    role: str | None  # "scores" / "boxes" / None
    raw_size: int | None
    tensor_size: int
    layer: Layer | None
    # For raw dumps whose records are not in anchor order: raw record index of each anchor (tensor order).
    record_order: np.ndarray | None

    @property
    def class_vector(self) -> bool:
        """A classifier's score vector ([C] or [1, C]): one record whose lanes are classes, not anchors."""
        return _is_class_vector(self.tensor, self.role)

    # kept: the tensor and its layout are written as a few of their facts, not the objects
    def to_dict(self) -> dict:
        return {"tensor": self.tensor.name, "mode": self.mode, "role": self.role, "raw_size": self.raw_size,
                "tensor_size": self.tensor_size, "record_size": self.layout.record_size,
                "records": self.layout.count, "pad_lanes": list(self.layout.pad_lanes),
                "fields": list(self.layout.field_names), "scale": self.layout.scale,
                "zero_point": self.layout.zero_point, "reordered": self.record_order is not None}


def _role(model: Model, tensor: Tensor) -> tuple[str | None, int | None]:
    pp = postprocess_info(model)
    if pp is None:
        return None, None
    if tensor.index in (pp.boxes.index, pp.boxes_input.index):
        return "boxes", pp.num_classes
    if tensor.index in (pp.scores.index, pp.scores_input.index):
        return "scores", pp.num_classes
    return None, pp.num_classes


def is_class_vector_shape(shape) -> bool:
    """[C] or [1, C] with C > 1: the shape of a classifier's score vector."""
    shape = tuple(shape)
    return len(shape) in (1, 2) and shape[-1] > 1 and (len(shape) == 1 or shape[0] == 1)


def _is_class_vector(tensor: Tensor, role) -> bool:
    return role is None and is_class_vector_shape(tensor.shape)


def _field_names(role, channels: int, labels, num_classes, *, classes: bool = False) -> list[str]:
    if role == "boxes" and channels == 4:
        return list(BOX_FIELDS)
    if classes:  # a classifier's score vector: lane c is class c, named line for line by the labels (as decode)
        labels = list(labels or [])
        return [labels[c] if c < len(labels) and labels[c] else f"class{c}" for c in range(channels)]
    if role == "scores" or labels is not None:
        # PostProcess scores carry a background column first when channels == num_classes + 1.
        offset = 1 if (num_classes is None or channels == num_classes + 1) else 0
        names = ["background"] if offset else []
        labels = list(labels or [])
        for c in range(channels - offset):
            names.append(labels[c] if c < len(labels) and labels[c] else f"class{c}")
        return names
    return [f"z{c}" for c in range(channels)]


def _find_layer(model: Model, name: str) -> Layer | None:
    for pkg in read_packages(model):
        layer = pkg.output_layer(name)
        if layer is not None:
            return layer
    return None


def tensor_record_layout(model: Model, tensor_name: str, dump_size: int, labels=None, *,
                         dump_path: str | None = None) -> ModelTensorView:
    """The record layout of a dump of `tensor_name` whose size is `dump_size` bytes (read from `dump_path`, which
    the errors about the dump's size name)."""
    tensor = model.tensor(tensor_name)
    if tensor.itemsize is None:
        raise InputError(f"tensor {tensor_name!r} is {tensor.dtype}; dumps of it cannot be laid out", model.path)
    channels = int(tensor.shape[-1]) if tensor.shape else 1
    records = tensor.num_elements // max(channels, 1)
    role, num_classes = _role(model, tensor)
    if labels is not None and not isinstance(labels, (list, tuple)):
        labels = read_labels(labels)
    names = _field_names(role, channels, labels, num_classes, classes=_is_class_vector(tensor, role))
    itemsize = tensor.itemsize
    tensor_size = tensor.size_bytes
    scale, zp = (tensor.scale, tensor.zero_point) if itemsize == 1 else (None, None)

    layer = _find_layer(model, tensor.name)
    try:
        lmap: LayerMap | None = layer_map(layer, tensor_bytes=tensor.size_bytes) if layer is not None else None
    except FormatError as exc:
        raise exc.with_path(model.path) if model.path else exc
    except InputError as exc:
        raise InputError(str(exc), model.path) if model.path and not getattr(exc, "path", None) else exc
    if dump_size == tensor_size:
        fields = tuple(names) if itemsize == 1 else None
        layout = RecordLayout(record_size=channels * itemsize, count=records, fields=fields, scale=scale,
                              zero_point=zp)
        return ModelTensorView(tensor, layout, "tensor", role, lmap.raw_size if lmap else None, tensor_size,
                               layer, None)
    if lmap is not None and dump_size == lmap.raw_size:
        record_size = lmap.z_bytes_padded
        pad = tuple(range(lmap.z_bytes, record_size))
        fields = tuple(names) + ("pad",) * len(pad) if itemsize == 1 else None
        offsets = lmap.record_offsets
        order = None
        if np.any(offsets % record_size):
            raise InputError(f"raw records of {tensor.name!r} do not start on {record_size}-byte boundaries; "
                             "relayout the dump first (forensics relayout)", dump_path)
        index = offsets // record_size
        if not np.array_equal(index, np.arange(index.size)):
            order = index
        count = int(index.max()) + 1 if order is not None else int(index.size)
        layout = RecordLayout(record_size=record_size, count=count, fields=fields, pad_lanes=pad, scale=scale,
                              zero_point=zp)
        return ModelTensorView(tensor, layout, "raw", role, lmap.raw_size, tensor_size, layer, order)
    if lmap is not None:
        hint = ""
        if dump_size > lmap.raw_size:  # a driver's page-rounded DMA allocation holds the raw layer at its start
            hint = f"; a larger allocation? read its first {lmap.raw_size} bytes ({{length}} {lmap.raw_size})"
        raise InputError(f"dump is {dump_size} bytes; tensor {tensor.name!r} is {lmap.raw_size} bytes as the "
                         f"chip writes it (raw, z padded to {lmap.z_bytes_padded}) and {tensor_size} bytes as "
                         "the TFLite tensor" + hint, dump_path, params=bool(hint))
    raise InputError(f"dump is {dump_size} bytes; tensor {tensor.name!r} {list(tensor.shape)} {tensor.dtype} "
                     f"is {tensor_size} bytes (no Edge TPU output layer of that name, so no raw size)", dump_path)
