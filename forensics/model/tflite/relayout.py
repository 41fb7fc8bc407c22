"""Chip layout <-> TFLite tensor layout for Edge TPU output layers, as vectorised byte index maps.

The chip writes an output tile by tile with the channel (z) dimension padded to 4-byte lanes. libedgetpu
(api/layer_information.cc, OutputLayerInformation::GetBufferIndex) finds element (y, x, z) at

    linearized_tile_byte_offset[y_coordinate_to_linear_tile_id_map[y] + x_coordinate_to_linear_tile_id_map[x]]
    + y_coordinate_to_local_y_offset[y] * x_coordinate_to_local_y_row_size[x]
    + x_coordinate_to_local_byte_offset[x] + z                                     (in elements)

and copies z_dim elements from there for each (y, x) in y-major order into the tensor. One-dimensional
outputs (y_dim = x_dim = 1) are copied as they are. Signed data types get the most significant bit of each
element flipped afterwards (LayerInformation::TransformSignedDataType). Here that becomes one int64 array:
`index[t]` = the raw byte offset of tensor byte t, so `tensor = raw[index]` and `raw[index] = tensor`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.core.errors import FormatError, InputError
from forensics.model.tflite.edgetpu import Layer

DEFAULT_PAD_BYTE = 0x80
# The largest output layer mapped (raw, padded). Real Edge TPU outputs are kilobytes to a few megabytes
# (SSD scores: 176,368 bytes); the map costs 8 bytes per tensor byte, so a hostile size_bytes or z_dim of
# 3e8 must fail before anything is allocated.
MAX_LAYER_BYTES = 1 << 26


@dataclass(frozen=True)
class LayerMap:
    """The byte index map of one output layer, with the sizes users compare dumps against."""

    name: str
    raw_size: int  # size_bytes as stored (padded)
    tensor_size: int  # y * x * z * bytes per element
    index: np.ndarray  # int64 [tensor_size]: raw offset of each tensor byte
    record_offsets: np.ndarray  # int64 [y * x]: raw offset of each (y, x) record, in tensor order
    z_bytes: int
    z_bytes_padded: int
    data_type_size: int
    signed: bool

    @property
    def identity(self) -> bool:
        return bool(np.array_equal(self.index, np.arange(self.tensor_size)))

    def pad_mask(self) -> np.ndarray:
        """True at every raw byte the tensor does not use (lane padding and tile tails)."""
        mask = np.ones(self.raw_size, dtype=bool)
        mask[self.index] = False
        return mask

    # kept: the document holds the sizes, not the index maps
    def to_dict(self) -> dict:
        return {"layer": self.name, "raw_size": self.raw_size, "tensor_size": self.tensor_size,
                "z_bytes": self.z_bytes, "z_bytes_padded": self.z_bytes_padded,
                "pad_bytes": self.raw_size - self.tensor_size, "identity": self.identity}


def check_layer(layer: Layer, *, tensor_bytes: int | None = None, dump_size: int | None = None) -> None:
    """Check a layer's dims and sizes against each other (and a tensor's / a dump's size) before any allocation.

    `tensor_bytes`: what the model's tensor of that name holds; `dump_size`: the dump about to be relayouted
    (either the raw size_bytes or the tensor's size). FormatError for a layer that contradicts itself,
    InputError for a dump that fits neither size.
    """
    y_dim, x_dim, z_dim = layer.y_dim, layer.x_dim, layer.z_dim
    where = ("output_layers", layer.name)
    if min(y_dim, x_dim, z_dim) <= 0:
        raise FormatError(f"layer dimensions y={y_dim} x={x_dim} z={z_dim} are not positive", where=where)
    unpadded = y_dim * x_dim * z_dim * layer.data_type_size
    if layer.size_bytes < unpadded:
        raise FormatError(f"layer {layer.name!r} is {y_dim}x{x_dim}x{z_dim} ({unpadded} bytes) but its size_bytes "
                          f"is {layer.size_bytes}", where=where + ("size_bytes",))
    if layer.size_bytes > MAX_LAYER_BYTES:
        raise FormatError(f"layer {layer.name!r} claims size_bytes {layer.size_bytes}, more than the "
                          f"{MAX_LAYER_BYTES} bytes an output layer is mapped for", where=where + ("size_bytes",))
    lay = layer.layout
    if lay is not None and (y_dim > 1 or x_dim > 1):
        for name, n in (("y_coordinate_to_linear_tile_id_map", y_dim), ("y_coordinate_to_local_y_offset", y_dim),
                        ("x_coordinate_to_linear_tile_id_map", x_dim), ("x_coordinate_to_local_byte_offset", x_dim),
                        ("x_coordinate_to_local_y_row_size", x_dim)):
            if len(getattr(lay, name)) < n:
                raise FormatError(f"{name} has {len(getattr(lay, name))} entries for {n} coordinates",
                                  where=where + (name,))
    if tensor_bytes is not None and tensor_bytes != unpadded:
        raise FormatError(f"layer {layer.name!r} is {y_dim}x{x_dim}x{z_dim} ({unpadded} bytes) but the model's "
                          f"tensor of that name is {tensor_bytes} bytes", where=where)
    if dump_size is not None and dump_size not in (layer.size_bytes, unpadded):
        raise InputError(f"is {dump_size} bytes; layer {layer.name!r} is {layer.size_bytes} bytes raw (padded) "
                         f"and {unpadded} bytes as a tensor")


def layer_map(layer: Layer, *, tensor_bytes: int | None = None, dump_size: int | None = None) -> LayerMap:
    """Build the index map of `layer`; FormatError when its layout points outside size_bytes.

    The layer is checked first (check_layer), so a hostile size or dimension fails before allocation."""
    check_layer(layer, tensor_bytes=tensor_bytes, dump_size=dump_size)
    dts = layer.data_type_size
    y_dim, x_dim, z_dim = layer.y_dim, layer.x_dim, layer.z_dim
    where = ("output_layers", layer.name)
    if layer.execution_count_per_inference != 1:
        raise FormatError(f"layer {layer.name!r} executes {layer.execution_count_per_inference} times per "
                          "inference; relayout supports 1", where=where)
    if layer.has_shape_info:
        raise FormatError(f"layer {layer.name!r} carries slice shape information (multi-batch layout); "
                          "relayout of that form is not supported", where=where)
    z_bytes = z_dim * dts
    tensor_size = y_dim * x_dim * z_bytes
    if y_dim == 1 and x_dim == 1 or layer.layout is None:
        if layer.layout is None and (y_dim > 1 or x_dim > 1):
            raise FormatError(f"layer {layer.name!r} is {y_dim}x{x_dim}x{z_dim} but has no output layout",
                              where=where)
        record_offsets = np.zeros(1, dtype=np.int64)
        z_padded = z_bytes
    else:
        lay = layer.layout
        for name, arr, n in (("y_coordinate_to_linear_tile_id_map", lay.y_coordinate_to_linear_tile_id_map, y_dim),
                             ("y_coordinate_to_local_y_offset", lay.y_coordinate_to_local_y_offset, y_dim),
                             ("x_coordinate_to_linear_tile_id_map", lay.x_coordinate_to_linear_tile_id_map, x_dim),
                             ("x_coordinate_to_local_byte_offset", lay.x_coordinate_to_local_byte_offset, x_dim),
                             ("x_coordinate_to_local_y_row_size", lay.x_coordinate_to_local_y_row_size, x_dim)):
            if len(arr) < n:
                raise FormatError(f"{name} has {len(arr)} entries for {n} coordinates", where=where + (name,))
        tile = (lay.y_coordinate_to_linear_tile_id_map[:y_dim, None]
                + lay.x_coordinate_to_linear_tile_id_map[None, :x_dim])
        tiles = lay.linearized_tile_byte_offset
        if tile.min() < 0 or tile.max() >= len(tiles):
            raise FormatError(f"tile id {int(tile.max())} is outside linearized_tile_byte_offset "
                              f"({len(tiles)} tiles)", where=where + ("linearized_tile_byte_offset",))
        elements = (tiles[tile]
                    + lay.y_coordinate_to_local_y_offset[:y_dim, None] * lay.x_coordinate_to_local_y_row_size[None, :x_dim]
                    + lay.x_coordinate_to_local_byte_offset[None, :x_dim])
        record_offsets = (elements * dts).reshape(-1).astype(np.int64)
        # libedgetpu deduces the padded z size from neighbouring elements (x + 1, or y + 1 when x_dim is 1).
        if x_dim > 1:
            z_padded = int(elements[0, 1] - elements[0, 0]) * dts
        else:
            z_padded = int(elements[1, 0] - elements[0, 0]) * dts
    index = (record_offsets[:, None] + np.arange(z_bytes, dtype=np.int64)[None, :]).reshape(-1)
    raw_size = layer.size_bytes
    if index.size and (index.min() < 0 or index.max() >= raw_size):
        raise FormatError(f"layout of {layer.name!r} addresses byte {int(index.max())} of a {raw_size}-byte "
                          "output", where=where)
    seen = np.zeros(raw_size, dtype=bool)  # every index is inside raw_size (checked above): a mark per raw byte
    seen[index] = True                     # is linear; np.unique's hash took 140 ms for the SSD scores layer
    if int(np.count_nonzero(seen)) != index.size:
        raise FormatError(f"layout of {layer.name!r} maps two tensor bytes to the same raw byte", where=where)
    return LayerMap(layer.name, raw_size, tensor_size, index, record_offsets, z_bytes, z_padded, dts, layer.signed)


def _as_bytes(data, m: LayerMap, want_raw: bool) -> np.ndarray:
    arr = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1).view(np.uint8)
    expected = m.raw_size if want_raw else m.tensor_size
    if arr.size != expected:
        what = "raw input" if want_raw else "tensor input"
        raise InputError(f"{what} is {arr.size} bytes; layer {m.name!r} is {m.raw_size} bytes raw (padded) "
                         f"and {m.tensor_size} bytes as a tensor")
    return arr


def _flip_msb(buf: np.ndarray, m: LayerMap) -> np.ndarray:
    # Elements are little endian: the most significant byte is the last of each element.
    buf = buf.copy()
    buf[m.data_type_size - 1::m.data_type_size] ^= 0x80
    return buf


def relayout(raw, m: LayerMap) -> np.ndarray:
    """Raw chip output (size_bytes) -> tensor bytes (y*x*z*bytes), as libedgetpu's Relayout does."""
    arr = _as_bytes(raw, m, True)
    out = arr[m.index]
    return _flip_msb(out, m) if m.signed else out


def inverse_relayout(tensor, m: LayerMap, pad_byte: int = DEFAULT_PAD_BYTE) -> np.ndarray:
    """Tensor bytes -> what the chip should have written; bytes the tensor does not cover get `pad_byte`."""
    if not 0 <= pad_byte <= 255:
        raise InputError(f"pad byte must be 0..255, got {pad_byte}")
    arr = _as_bytes(tensor, m, False)
    if m.signed:
        arr = _flip_msb(arr, m)
    out = np.full(m.raw_size, pad_byte, dtype=np.uint8)
    out[m.index] = arr
    return out
