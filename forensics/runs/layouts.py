"""How compare cuts a run's buffer into records, and which of its bytes no one compares: the manifest's dtype,
shape, record size and pad lanes first, else the run's model (an Edge TPU output layer's 4-byte lanes and tile
padding: the chip's `size_bytes` of convert_scores are 1,917 records of 92 bytes and 4 bytes more), as
`forensics diff --model M --tensor T` reads the same file, so the two commands agree on the same bytes."""

from __future__ import annotations

import functools
import math
import os

import numpy as np

from forensics.core.errors import ForensicsError
from forensics.core.layout import RecordLayout

ITEMSIZE = {"uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "float16": 2, "int32": 4, "uint32": 4, "float32": 4,
            "int64": 8, "uint64": 8, "float64": 8, "bool": 1}


def _shaped_record(entry, shape, itemsize: int, size: int, pad: tuple, unit: str) -> tuple[int, str, tuple]:
    """(record size, unit, pad lanes) of a buffer whose manifest gives a shape of two or more axes: its last
    axis's bytes, else the manifest's record size, else an equal share per row; bytes past the channels are pad."""
    channels = shape[-1] * itemsize
    n = math.prod(shape[:-1])
    if n * channels == size:
        record = channels
    elif entry.record_size and size % entry.record_size == 0:
        record = entry.record_size
    elif n and size % n == 0:
        record = size // n
    else:
        record = channels
    if record > channels and not pad:
        pad = tuple(range(channels, record))
    if len(shape) == 2 and shape[0] == 1 and record == channels and itemsize > 1:
        # [1, K] of wider elements (a detection output's classes or scores): K values, not one record
        record, unit = itemsize, "rows" if entry.stage == "detections" else "elements"
    elif len(shape) != 3:
        unit = "records"
    return record, unit, pad


def _unshaped_record(entry, itemsize: int, unit: str) -> tuple[int | None, str]:
    """(record size, unit) of a buffer without a shape of two axes."""
    if entry.record_size:
        return entry.record_size, unit
    if itemsize > 1:
        # a one-dimensional (or shapeless) buffer of wider elements: its elements are compared as numbers, so
        # a tolerance (--atol) applies to them as `diff` applies it (issue 35)
        return itemsize, "elements"
    if entry.stage == "raw":
        return 4, unit  # the chip's lane width
    return None, unit


def _fixed_layout(entry, size: int, view, itemsize: int, pad: tuple) -> tuple[RecordLayout, str] | None:
    """The layouts a buffer's stage fixes: parameters are bytes, a raw buffer the manifest leaves open is the
    model's layer, an NCHW input whose bytes are all there is rows; else None."""
    shape = entry.shape
    if entry.stage == "params":
        return RecordLayout(record_size=1), "bytes"
    if view is not None and entry.stage == "raw" and not pad and not entry.record_size:
        return view.layout, "anchors"
    if entry.stage == "input" and shape and len(shape) == 4 and shape[2] * shape[3] * itemsize * shape[1] == size:
        return RecordLayout(record_size=shape[2] * shape[3] * itemsize), "rows"
    return None


def buffer_layout(entry, size: int, view=None) -> tuple[RecordLayout, str]:
    """How to cut a buffer into records for the diff, and what to call a record (anchors, rows, elements,
    bytes). `view` (forensics.model.tflite.tensors.ModelTensorView of the run's model) lays out a raw buffer
    whose manifest says neither its record size nor its pad lanes."""
    itemsize = ITEMSIZE.get(entry.dtype or "uint8", 1)
    shape = entry.shape
    pad = tuple(entry.extra.get("pad_lanes") or ())
    fixed = _fixed_layout(entry, size, view, itemsize, pad)
    if fixed is not None:
        return fixed
    unit = "anchors" if entry.stage in ("raw", "tensor", "dequantized") else "records"
    if shape and len(shape) >= 2 and shape[-1] > 0:
        record, unit, pad = _shaped_record(entry, shape, itemsize, size, pad, unit)
    else:
        record, unit = _unshaped_record(entry, itemsize, unit)
    if not record or record == 1:
        return RecordLayout(record_size=1), "bytes"
    pad = tuple(p for p in pad if p < record)
    fields = entry.extra.get("fields")
    fields = tuple(fields) if isinstance(fields, list) and len(fields) == record else None
    quant = {"scale": entry.scale, "zero_point": entry.zero_point or 0} if itemsize == 1 and entry.scale is not None \
        else {}
    return RecordLayout(record_size=record, pad_lanes=pad, fields=fields, **quant), unit


def record_count(entry, size: int, layout: RecordLayout) -> int:
    """How many records (anchors) a buffer of `size` bytes holds: the layout's count when it has one (a model's
    output layer), its shape's when the bytes hold that many whole records (the chip's size_bytes may add a few
    padding bytes: Squeeze1 is 7,672 bytes for 1,917 anchors of 4), else the whole records in it."""
    if layout.count is not None:
        return layout.count
    whole = size // layout.record_size
    if entry.shape and len(entry.shape) >= 2 and layout.record_size == (entry.shape[-1] or 0) * \
            ITEMSIZE.get(entry.dtype or "uint8", 1):
        n = math.prod(entry.shape[:-1])
        if 0 < n <= whole and size - n * layout.record_size < layout.record_size:
            return n
    return whole


def counted(n: int, unit: str) -> str:
    """'1,917 anchors', '1 anchor'."""
    return f"{n:,} {unit[:-1] if n == 1 and unit.endswith('s') else unit}"


def element_type(entry, layout: RecordLayout) -> tuple[str | None, float | None, int | None]:
    """The dtype to read a buffer's values as (None: bytes, no statistics) and its quantization."""
    if entry.stage == "params":
        return None, None, None
    dtype = entry.dtype or "uint8"
    try:
        itemsize = np.dtype(dtype).itemsize
    except TypeError:
        return None, None, None
    if np.dtype(dtype).kind not in "iuf" or layout.record_size % itemsize:
        return None, None, None
    scale = entry.scale if np.dtype(dtype).kind in "iu" else None
    if scale is None and layout.scale is not None and itemsize == 1:
        scale = layout.scale  # the model's quantization of a raw layer
        return dtype, scale, layout.zero_point or 0
    return dtype, scale, (entry.zero_point or 0) if scale is not None else None


# --- the run's model ----------------------------------------------------------------------------------------

def model_path(run, model=None) -> str | None:
    """The model to lay raw buffers out by: `model` when given, else the run's (its manifest path, taken as
    it is or relative to the run) when that file is there and, when the manifest records one, has its sha256."""
    if model is not None:
        return os.fspath(model)
    record = run.model or {}
    path = record.get("path")
    if not path or getattr(run, "files", None) is not None:
        return None
    for candidate in (path, os.path.join(run.path, path)):
        if os.path.isfile(candidate):
            sha = record.get("sha256")
            if sha and _sha256(os.path.abspath(candidate), os.path.getmtime(candidate)) != sha:
                return None  # another file at that path now: its layouts are not the run's
            return candidate
    return None


@functools.lru_cache(maxsize=8)
def _sha256(path: str, _mtime: float) -> str | None:
    from forensics.runs.run import sha256_file

    try:
        return sha256_file(path)
    except OSError:
        return None


@functools.lru_cache(maxsize=64)
def _view(path: str, _mtime: float, tensor: str, size: int):
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.tensors import tensor_record_layout

    try:
        with open_model(path) as model:
            view = tensor_record_layout(model, tensor, size)
    except ForensicsError:  # no such tensor, another size, a layer out of record order: the manifest decides
        return None
    return view if view.mode == "raw" else None


def raw_view(model: str | None, entry, size: int):
    """The model's view of a raw buffer of `size` bytes (ModelTensorView in raw mode), or None: no model, no
    output layer of that name, or not its size_bytes."""
    if model is None or entry.stage != "raw":
        return None
    name = entry.extra.get("model_tensor") if isinstance(entry.extra.get("model_tensor"), str) else entry.tensor
    try:
        return _view(os.path.abspath(model), os.path.getmtime(model), name, size)
    except OSError:
        return None
