"""Bounds-checked FlatBuffers access over the runtime's Table API, for untrusted .tflite and DWN1 bytes.

The flatbuffers Python runtime trusts its input: an offset past the end raises struct.error or IndexError
and a huge vector length is taken at its word. Every read here is checked against the buffer first and a
failure becomes a FormatError carrying the byte offset and the path into the structure
(`Model -> subgraphs -> 0 -> tensors -> 5 -> shape`). Vectors and byte blobs are numpy / memoryview views
into the buffer (an mmap for files): nothing is copied unless a caller asks.
"""

from __future__ import annotations

import struct

import numpy as np
from flatbuffers import number_types as N
from flatbuffers.table import Table

from forensics.core.errors import FormatError

_U32 = struct.Struct("<I")
_I32 = struct.Struct("<i")
_U16 = struct.Struct("<H")
ELEMENTS_PER_BYTE = 4

SCALARS = {  # kind -> (struct format, byte width)
    "bool": ("<?", 1), "int8": ("<b", 1), "uint8": ("<B", 1), "int16": ("<h", 2), "uint16": ("<H", 2),
    "int32": ("<i", 4), "uint32": ("<I", 4), "int64": ("<q", 8), "uint64": ("<Q", 8),
    "float32": ("<f", 4), "float64": ("<d", 8),
}
_STRUCTS = {kind: struct.Struct(fmt) for kind, (fmt, _) in SCALARS.items()}
_NP = {"bool": np.bool_, "int8": np.int8, "uint8": np.uint8, "int16": "<i2", "uint16": "<u2", "int32": "<i4",
       "uint32": "<u4", "int64": "<i8", "uint64": "<u8", "float32": "<f4", "float64": "<f8"}


class Buffer:
    """The bytes of one flatbuffer file (bytes, bytearray or mmap) and checked primitive reads."""

    def __init__(self, data, origin: str = ""):
        self.data = data
        self.view = memoryview(data)
        self.size = len(data)
        self.origin = origin  # the root table's name, for paths ("Model", "Package", "Executable")
        # Work guard: tables and vectors may be shared (20,000 tensors can point at one 20,000-entry shape),
        # so a reader that only checks bounds can be made to read size^2 elements. A well-formed flatbuffer
        # stores each element once in at least one byte; reads beyond a few times the size are refused.
        self.budget = ELEMENTS_PER_BYTE * self.size + 65536

    def charge(self, count: int, offset: int, where) -> None:
        self.budget -= count
        if self.budget < 0:
            raise self.fail(f"the {self.size}-byte buffer references far more elements than it holds (tables or "
                            "vectors shared over and over)", offset, where)

    def fail(self, message: str, offset: int | None, where) -> FormatError:
        return FormatError(message, offset=offset, where=where)

    def need(self, offset: int, length: int, where, what: str = "field") -> None:
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(f"{what} of {length} bytes at 0x{offset:x} runs past the end of the "
                            f"{self.size}-byte buffer", offset, where)

    def u32(self, offset: int, where) -> int:
        self.need(offset, 4, where, "offset")
        return _U32.unpack_from(self.data, offset)[0]

    def root(self, name: str, identifier: bytes | None = None, base: int = 0) -> "Node":
        """The root table at `base` (a nested flatbuffer starts at `base`), checking the file identifier."""
        where = (name,)
        if self.size - base < 8:
            raise self.fail(f"{self.size - base} bytes is too short for a flatbuffer", base, where)
        if identifier is not None:
            found = bytes(self.view[base + 4:base + 8])
            if found != identifier:
                raise self.fail(f"file identifier is {found!r}, expected {identifier!r}", base + 4, where)
        return Node(self, base + self.u32(base, where), where)


class Node:
    """One table: checked field access by field id (schema order), with a path for error messages."""

    __slots__ = ("buf", "pos", "where", "_table", "_vt", "_vt_len")

    def __init__(self, buf: Buffer, pos: int, where):
        self.buf = buf
        self.pos = pos
        self.where = tuple(where)
        buf.need(pos, 4, self.where, "table")
        buf.charge(1, pos, self.where)
        self._table = Table(buf.data, pos)
        vtable = pos - _I32.unpack_from(buf.data, pos)[0]
        buf.need(vtable, 4, self.where, "vtable")
        vt_len = _U16.unpack_from(buf.data, vtable)[0]
        obj_len = _U16.unpack_from(buf.data, vtable + 2)[0]
        buf.need(vtable, vt_len, self.where, "vtable")
        buf.need(pos, obj_len, self.where, "table")
        self._vt, self._vt_len = vtable, vt_len

    def _offset(self, field_id: int) -> int:
        slot = 4 + 2 * field_id
        if slot + 2 > self._vt_len:
            return 0
        return self._table.Offset(slot)  # safe: the whole vtable was checked in __init__

    def has(self, field_id: int) -> bool:
        return self._offset(field_id) != 0

    def scalar(self, field_id: int, kind: str, default=0, name: str | None = None):
        off = self._offset(field_id)
        if not off:
            return default
        width = SCALARS[kind][1]
        self.buf.need(self.pos + off, width, self.where + ((name,) if name else ()), kind)
        return _STRUCTS[kind].unpack_from(self.buf.data, self.pos + off)[0]

    def _target(self, field_id: int, name: str):
        """(absolute position of the referenced object, path) or (None, path) when the field is absent."""
        where = self.where + (name,)
        off = self._offset(field_id)
        if not off:
            return None, where
        at = self.pos + off
        return at + self.buf.u32(at, where), where

    def table(self, field_id: int, name: str) -> "Node | None":
        target, where = self._target(field_id, name)
        return None if target is None else Node(self.buf, target, where)

    def _vector(self, field_id: int, name: str, width: int):
        start, where = self._target(field_id, name)
        if start is None:
            return None, 0, where
        length = self.buf.u32(start, where)
        if length > (self.buf.size - start - 4) // max(width, 1):
            raise self.buf.fail(f"vector length {length} (x {width} bytes) runs past the end of the "
                                f"{self.buf.size}-byte buffer", start, where)
        self.buf.charge(length, start, where)
        return start + 4, length, where

    def vector_len(self, field_id: int, name: str) -> int:
        return self._vector(field_id, name, 1)[1]

    def string(self, field_id: int, name: str, default: str | None = None) -> str | None:
        start, length, where = self._vector(field_id, name, 1)
        if start is None:
            return default
        return bytes(self.buf.view[start:start + length]).decode("utf-8", errors="replace")

    def bytes_view(self, field_id: int, name: str) -> memoryview | None:
        """A [ubyte] vector as a memoryview into the buffer (no copy)."""
        start, length, _ = self._vector(field_id, name, 1)
        return None if start is None else self.buf.view[start:start + length]

    def bytes_span(self, field_id: int, name: str) -> tuple[int, int] | None:
        """(absolute offset, length) of a [ubyte] vector, for callers that keep positions."""
        start, length, _ = self._vector(field_id, name, 1)
        return None if start is None else (start, length)

    def array(self, field_id: int, kind: str, name: str) -> np.ndarray | None:
        """A scalar vector as a read-only numpy view (little-endian, as FlatBuffers stores it)."""
        width = SCALARS[kind][1]
        start, length, _ = self._vector(field_id, name, width)
        if start is None:
            return None
        arr = np.frombuffer(self.buf.data, dtype=_NP[kind], count=length, offset=start)
        arr.flags.writeable = False
        return arr

    def struct_array(self, field_id: int, kind: str, per_struct: int, name: str) -> np.ndarray | None:
        """A vector of structs made of `per_struct` scalars of one kind, as an [n, per_struct] view."""
        width = SCALARS[kind][1]
        start, length, _ = self._vector(field_id, name, width * per_struct)
        if start is None:
            return None
        arr = np.frombuffer(self.buf.data, dtype=_NP[kind], count=length * per_struct, offset=start)
        return arr.reshape(length, per_struct)

    def tables(self, field_id: int, name: str) -> list["Node"]:
        start, length, where = self._vector(field_id, name, 4)
        if start is None:
            return []
        nodes = []
        for i in range(length):
            at = start + 4 * i
            nodes.append(Node(self.buf, at + self.buf.u32(at, where + (str(i),)), where + (str(i),)))
        return nodes

    def strings(self, field_id: int, name: str) -> list[str]:
        start, length, where = self._vector(field_id, name, 4)
        out = []
        for i in range(length if start is not None else 0):
            at = start + 4 * i
            s = at + self.buf.u32(at, where + (str(i),))
            n = self.buf.u32(s, where + (str(i),))
            self.buf.need(s + 4, n, where + (str(i),), "string")
            out.append(bytes(self.buf.view[s + 4:s + 4 + n]).decode("utf-8", errors="replace"))
        return out

    def union(self, type_field_id: int, value_field_id: int, name: str) -> tuple[int, "Node | None"]:
        kind = self.scalar(type_field_id, "uint8", 0, name + "_type")
        return kind, (self.table(value_field_id, name) if kind else None)


assert N.UOffsetTFlags.bytewidth == 4  # the layout above assumes 32-bit offsets, as FlatBuffers defines
