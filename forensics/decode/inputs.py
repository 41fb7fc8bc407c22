"""Reading the decode's two dumps: tensor layout, lane-padded records, Edge TPU raw layout, or .npy.

A box-delta or score dump is accepted in exactly these sizes (anything else is one error naming them):
- the TFLite tensor: anchors x columns uint8 bytes (e.g. convert_scores 2034 x 2 = 4068);
- records padded to the chip's 4-byte lanes: anchors x ceil(columns / 4) * 4 (the story's `ff 00 80 80`,
  8136 bytes), pad lanes dropped;
- the Edge TPU output layer's raw size when a model supplies it (relayout by the model's layout tables);
- a .npy: uint8 (as the tensor) or float32 (already dequantized: what the kernel received).
`--layout tensor|raw` overrides the guess where sizes coincide (a tiled layer without padding).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.io.dump import open_dump
from forensics.core.errors import InputError

LANE = 4
LAYOUTS = ("auto", "tensor", "raw")


@dataclass(frozen=True)
class LoadedInput:
    path: str
    array: np.ndarray  # [anchors, columns], uint8 or float32
    layout: str  # "tensor", "padded records", "raw chip layout", "float32 .npy"
    size_bytes: int

    @property
    def dequantized(self) -> bool:
        return self.array.dtype == np.float32

    # Kept by hand (not forensics.core.serial): the document holds the array's dtype and shape, not its values.
    def to_dict(self) -> dict:
        return {"path": self.path, "layout": self.layout, "size_bytes": self.size_bytes,
                "dtype": str(self.array.dtype), "shape": list(self.array.shape)}

    @classmethod
    def from_dict(cls, doc: dict) -> "LoadedInput":
        """The input a saved document names: its array a read-only view of zeros of the saved dtype and shape
        (the values are not in the document; the view takes no memory)."""
        array = np.broadcast_to(np.zeros((), np.dtype(doc["dtype"])), tuple(int(n) for n in doc["shape"]))
        return cls(doc["path"], array, doc["layout"], int(doc["size_bytes"]))


def padded_columns(columns: int) -> int:
    return -(-columns // LANE) * LANE


def _npy_input(dump, what: str, anchors: int, columns: int) -> LoadedInput:
    """A .npy dump as [anchors, columns]: uint8 (the tensor) or finite float32 values."""
    path = dump.path
    tensor_size = anchors * columns
    dtype = np.dtype(dump.npy_dtype)
    count = int(np.prod(dump.npy_shape)) if dump.npy_shape else 1
    if dtype not in (np.dtype("u1"), np.dtype("<f4"), np.dtype(">f4")):
        raise InputError(f"{what} .npy must be uint8 or float32, got {dtype}", path)
    if count != tensor_size:
        raise InputError(f"{what} .npy has shape {list(dump.npy_shape)} ({count} values); expected "
                         f"{anchors} x {columns} = {tensor_size} values", path)
    data = dump.read(0, dump.size)
    array = np.frombuffer(data, dtype=dtype).astype(dtype.newbyteorder("=")).reshape(anchors, columns)
    if array.dtype.kind == "f":
        array = array.astype(np.float32)
        if not np.all(np.isfinite(array)):
            bad = np.argwhere(~np.isfinite(array))[0]
            raise InputError(f"{what} contain NaN or infinity (anchor {int(bad[0])}, column {int(bad[1])})",
                             path)
        return LoadedInput(path, array, "float32 .npy", dump.size)
    return LoadedInput(path, array, "tensor", dump.size)


def _accepted_sizes(anchors: int, columns: int, raw_size: int | None) -> list:
    """The sizes a dump of [anchors, columns] may have, each with its layout: the tensor, padded records, the
    Edge TPU raw layer."""
    tensor_size = anchors * columns
    padded_size = anchors * padded_columns(columns)
    accepted = [f"{tensor_size} (tensor {anchors} x {columns})"]
    if padded_size != tensor_size:
        accepted.append(f"{padded_size} (records padded to {padded_columns(columns)}-byte lanes)")
    if raw_size is not None and raw_size not in (tensor_size, padded_size):
        accepted.append(f"{raw_size} (Edge TPU raw layer)")
    return accepted


def _expected_sizes(what: str, size: int, anchors: int, tensor_size: int, padded_size: int, accepted: list) -> str:
    """The error for a dump of no accepted size: the sizes accepted, and for whole records of a shorter dump
    how many anchors it holds."""
    expected = f"{what} is {size} bytes; expected " + " or ".join(accepted)
    # Whole records of a shorter dump: a pasted head, the story's own trap. Name how many anchors it holds in
    # each layout it fits (padded 4-byte records first: what the chip writes).
    held = [f"{size // (s // anchors):,}" + (" padded" if s == padded_size != tensor_size else "")
            for s in dict.fromkeys((padded_size, tensor_size)) if size < s and size % (s // anchors) == 0]
    if size and held:
        expected += (f": {' or '.join(held)} of the {anchors:,} anchors the model has, the head-window trap (a "
                     "pasted or partial read?); dump the whole buffer")
    return expected


def load_input(path, what: str, anchors: int, columns: int, *, layout: str = "auto", raw_size: int | None = None,
               relayout=None, dump_options: dict | None = None) -> LoadedInput:
    """Read one dump as [anchors, columns]; `relayout(raw_bytes) -> tensor bytes` for a model's raw layer.
    `dump_options` (offset, length, gap_fill) go to open_dump: the size checks apply to the slice."""
    if layout not in LAYOUTS:
        raise InputError(f"unknown layout {layout!r} (choose {', '.join(LAYOUTS)})")
    dump = open_dump(path, use_sidecar=False, **(dump_options or {}))
    path = dump.path
    tensor_size = anchors * columns
    padded_size = anchors * padded_columns(columns)
    if dump.npy_dtype is not None:
        return _npy_input(dump, what, anchors, columns)
    size = dump.size
    accepted = _accepted_sizes(anchors, columns, raw_size)
    if layout == "tensor" and size != tensor_size:
        raise InputError(f"{what} is {size} bytes; the tensor layout is {tensor_size} bytes "
                         f"({anchors} x {columns})", path)
    if layout == "raw" and size not in (padded_size, raw_size):
        raise InputError(f"{what} is {size} bytes; a raw layout is " + " or ".join(accepted[1:] or
                         [f"{padded_size} bytes"]), path)
    data = dump.read(0, size)
    use_raw_layer = raw_size is not None and size == raw_size and relayout is not None and (
        layout == "raw" or (layout == "auto" and size != tensor_size))
    if use_raw_layer:
        tensor = np.frombuffer(relayout(data), dtype=np.uint8)
        if tensor.size != tensor_size:
            raise InputError(f"relayout of {what} gave {tensor.size} bytes, expected {tensor_size}", path)
        return LoadedInput(path, tensor.reshape(anchors, columns), "raw chip layout", size)
    if size == tensor_size and layout != "raw":
        return LoadedInput(path, np.frombuffer(data, np.uint8).reshape(anchors, columns), "tensor", size)
    if size == padded_size:
        records = np.frombuffer(data, np.uint8).reshape(anchors, padded_columns(columns))
        return LoadedInput(path, np.ascontiguousarray(records[:, :columns]), "padded records", size)
    raise InputError(_expected_sizes(what, size, anchors, tensor_size, padded_size, accepted), path)


# --- the order of the two dumps ---------------------------------------------------------------------------

def _fits(dump, anchors: int, columns: int, raw_size: int | None) -> bool:
    """Whether a dump's size (or .npy shape) is one the decode accepts for a tensor of `columns` columns."""
    if dump.npy_shape is not None:
        shape = tuple(dump.npy_shape)
        return bool(shape) and shape[-1] == columns and int(np.prod(shape)) == anchors * columns
    return dump.size in {anchors * columns, anchors * padded_columns(columns), raw_size}


def _pad_lanes_constant(dump, anchors: int, columns: int) -> bool | None:
    """Whether the lanes past `columns` of 4-byte-lane padded records hold one value in every record (the chip
    writes a score record's pad lanes alike; box deltas vary): None when the dump is not that layout."""
    width = padded_columns(columns)
    if width == columns or dump.npy_shape is not None or dump.size != anchors * width or anchors < 2:
        return None
    records = dump.read_array(0, dump.size).reshape(anchors, width)[:, columns:]
    return bool(np.all(records == records[0]))


def swapped_order(boxes_path, scores_path, anchors: int, box_columns: int, score_columns: int, *,
                  raw_sizes: dict | None = None, dump_options: dict | None = None) -> str | None:
    """Why BOXES and SCORES look given in each other's place (one line), or None when they look in order or
    nothing tells. By shape: each dump fits only the other's sizes (91 classes: 174,447 / 176,368 bytes of
    scores against 7,668 / 7,672 of box deltas). Where the shapes coincide (2 classes padded to 4-byte lanes
    and 4 box deltas are both 8 bytes an anchor): by content, the scores' pad lanes are one value in every
    anchor, box deltas are not."""
    raw_sizes = raw_sizes or {}
    boxes = open_dump(boxes_path, use_sidecar=False, **(dump_options or {}))
    scores = open_dump(scores_path, use_sidecar=False, **(dump_options or {}))
    raw_b, raw_s = raw_sizes.get("boxes"), raw_sizes.get("scores")

    def fits(dump, role):
        return _fits(dump, anchors, box_columns, raw_b) if role == "boxes" else \
            _fits(dump, anchors, score_columns, raw_s)

    # Read the other way round both fit, and as given one cannot: the swap is the one reading that holds.
    if fits(boxes, "scores") and fits(scores, "boxes") and not (fits(boxes, "boxes") and fits(scores, "scores")):
        return (f"BOXES {boxes.path} ({boxes.size:,} bytes) has the scores' size and SCORES {scores.path} "
                f"({scores.size:,} bytes) the box deltas'")
    pads_in_boxes = _pad_lanes_constant(boxes, anchors, score_columns)
    pads_in_scores = _pad_lanes_constant(scores, anchors, score_columns)
    if pads_in_boxes and pads_in_scores is False and fits(boxes, "scores") and fits(scores, "boxes"):
        width = padded_columns(score_columns)
        lanes = f"{score_columns}" if width - score_columns == 1 else f"{score_columns}-{width - 1}"
        return (f"BOXES {boxes.path} has one value in lanes {lanes} of every {width}-byte record, as the scores' "
                f"pad lanes have, and SCORES {scores.path} varies there, as box deltas do")
    return None
