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

from forensics.dump import open_dump
from forensics.errors import InputError

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

    def to_dict(self) -> dict:
        return {"path": self.path, "layout": self.layout, "size_bytes": self.size_bytes,
                "dtype": str(self.array.dtype), "shape": list(self.array.shape)}


def padded_columns(columns: int) -> int:
    return -(-columns // LANE) * LANE


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

    size = dump.size
    accepted = [f"{tensor_size} (tensor {anchors} x {columns})"]
    if padded_size != tensor_size:
        accepted.append(f"{padded_size} (records padded to {padded_columns(columns)}-byte lanes)")
    if raw_size is not None and raw_size not in (tensor_size, padded_size):
        accepted.append(f"{raw_size} (Edge TPU raw layer)")
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
    raise InputError(f"{what} is {size} bytes; expected " + " or ".join(accepted), path)
