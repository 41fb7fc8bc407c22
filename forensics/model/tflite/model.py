"""Read a .tflite model (schema.fbs): operator codes, subgraphs, tensors, quantization, buffers, operators.

Everything is parsed and bounds-checked when the model is opened, so a corrupt or hostile file fails at
one boundary with a FormatError (offset + path) instead of deep inside an analysis. Buffer contents and
custom options stay views into the mmap: a 4 MB Edge TPU model is read without copying its parameters.
Field ids are those of tensorflow/lite/schema/schema.fbs (see forensics/model/tflite/writer.py for the list).
"""

from __future__ import annotations

import mmap
import os
import struct
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from forensics.core.errors import FormatError, InputError, reading
from forensics.model.tflite.flat import Buffer, Node
from forensics.model.tflite.names import builtin_name, options_name, tensor_type_name

TFLITE_IDENTIFIER = b"TFL3"
CUSTOM = 32
PLACEHOLDER_FOR_GREATER_OP_CODES = 127
NUMPY_DTYPES = {"float32": "<f4", "float16": "<f2", "int32": "<i4", "uint8": "u1", "int64": "<i8", "bool": "?",
                "int16": "<i2", "int8": "i1", "float64": "<f8", "uint64": "<u8", "uint32": "<u4", "uint16": "<u2"}


@dataclass(frozen=True)
class Quantization:
    """Affine quantization: real = scale * (q - zero_point); per-channel along quantized_dimension."""

    scale: tuple[float, ...]
    zero_point: tuple[int, ...]
    quantized_dimension: int = 0

    @property
    def per_channel(self) -> bool:
        return len(self.scale) > 1

    # kept: a per-channel quantization is written as a summary (min, max, the first zero points)
    def to_dict(self) -> dict:
        if not self.per_channel:
            return {"scale": self.scale[0] if self.scale else None,
                    "zero_point": self.zero_point[0] if self.zero_point else 0}
        return {"scale": None, "zero_point": None, "per_channel": {
            "channels": len(self.scale), "quantized_dimension": self.quantized_dimension,
            "scale_min": min(self.scale), "scale_max": max(self.scale),
            "zero_points": sorted(set(self.zero_point))[:8]}}


@dataclass(frozen=True)
class Tensor:
    index: int
    name: str
    shape: tuple[int, ...]
    dtype: str
    buffer: int
    quantization: Quantization | None
    is_variable: bool = False

    @property
    def scale(self) -> float | None:
        q = self.quantization
        return q.scale[0] if q is not None and not q.per_channel and q.scale else None

    @property
    def zero_point(self) -> int | None:
        q = self.quantization
        if q is None or q.per_channel or not q.scale:
            return None
        return q.zero_point[0] if q.zero_point else 0

    @property
    def num_elements(self) -> int:
        return int(np.prod(self.shape, dtype=np.int64)) if self.shape else 1

    @property
    def itemsize(self) -> int | None:
        dt = NUMPY_DTYPES.get(self.dtype)
        return np.dtype(dt).itemsize if dt else None

    @property
    def size_bytes(self) -> int | None:
        return self.num_elements * self.itemsize if self.itemsize else None

    # kept: its quantization is written as Quantization's summary (above)
    def to_dict(self) -> dict:
        d = {"index": self.index, "name": self.name, "shape": list(self.shape), "dtype": self.dtype,
             "scale": self.scale, "zero_point": self.zero_point}
        if self.quantization is not None and self.quantization.per_channel:
            d["per_channel"] = self.quantization.to_dict()["per_channel"]
        return d


@dataclass(frozen=True)
class OperatorCode:
    builtin_code: int
    custom_code: str | None
    version: int

    @property
    def name(self) -> str:
        if self.builtin_code == CUSTOM:
            return self.custom_code if self.custom_code is not None else "CUSTOM"
        return builtin_name(self.builtin_code)


@dataclass(frozen=True)
class Operator:
    index: int
    opcode_index: int
    op: str
    builtin_code: int
    custom_code: str | None
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    builtin_options_type: int
    custom_options_span: tuple[int, int] | None  # (file offset, length)

    @property
    def is_custom(self) -> bool:
        return self.builtin_code == CUSTOM

    @property
    def builtin_options_name(self) -> str | None:
        return options_name(self.builtin_options_type) if self.builtin_options_type else None


@dataclass(frozen=True)
class BufferInfo:
    """Where a buffer's bytes are in the file: (offset, size); size 0 for the empty sentinel."""

    index: int
    offset: int
    size: int


@dataclass(frozen=True)
class Subgraph:
    index: int
    name: str | None
    tensors: tuple[Tensor, ...]
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]
    operators: tuple[Operator, ...]


class Model:
    """A parsed model over its bytes (kept open: buffers and custom options are views, not copies)."""

    def __init__(self, data, path: str | None, version: int, description: str | None,
                 operator_codes: tuple[OperatorCode, ...], subgraphs: tuple[Subgraph, ...],
                 buffers: tuple[BufferInfo, ...], root_offset: int, _mmap=None):
        self.data = data
        self.path = path
        self.version = version
        self.description = description
        self.operator_codes = operator_codes
        self.subgraphs = subgraphs
        self.buffers = buffers
        self.root_offset = root_offset
        self._mmap = _mmap

    @property
    def size(self) -> int:
        return len(self.data)

    @property
    def main(self) -> Subgraph:
        return self.subgraphs[0]

    def close(self) -> None:
        if self._mmap is not None:
            try:
                self._mmap.close()
            except BufferError:  # a caller still holds a view; the mapping goes when that view does
                pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def buffer_view(self, index: int) -> memoryview:
        b = self.buffers[index]
        return memoryview(self.data)[b.offset:b.offset + b.size]

    def tensor_data(self, tensor: Tensor) -> np.ndarray | None:
        """A constant tensor's values as a read-only numpy view shaped like the tensor; None if not constant."""
        if tensor.buffer == 0 or tensor.buffer >= len(self.buffers):
            return None
        b = self.buffers[tensor.buffer]
        if b.size == 0:
            return None
        dt = NUMPY_DTYPES.get(tensor.dtype)
        if dt is None:
            return None
        need = tensor.size_bytes
        if need != b.size:
            raise FormatError(f"buffer {tensor.buffer} holds {b.size} bytes, tensor {tensor.name!r} "
                              f"{list(tensor.shape)} {tensor.dtype} needs {need}", offset=b.offset,
                              where=("Model", "buffers", tensor.buffer), path=self.path)
        arr = np.frombuffer(self.data, dtype=dt, count=tensor.num_elements, offset=b.offset)
        return arr.reshape(tensor.shape) if tensor.shape else arr

    def custom_options(self, op: Operator) -> memoryview | None:
        if op.custom_options_span is None:
            return None
        start, length = op.custom_options_span
        return memoryview(self.data)[start:start + length]

    def tensor(self, name: str, subgraph: int = 0) -> Tensor:
        for t in self.subgraphs[subgraph].tensors:
            if t.name == name:
                return t
        names = ", ".join(t.name for t in self.subgraphs[subgraph].tensors[:12])
        raise InputError(f"no tensor named {name!r} in the model (tensors: {names}...)", self.path)

    def producer(self, tensor_index: int, subgraph: int = 0) -> Operator | None:
        return self._producers(subgraph).get(tensor_index)

    def consumers(self, tensor_index: int, subgraph: int = 0) -> list[Operator]:
        return [op for op in self.subgraphs[subgraph].operators if tensor_index in op.inputs]

    def _producers(self, subgraph: int) -> dict:
        cache = self.__dict__.setdefault("_producer_cache", {})
        if subgraph not in cache:
            cache[subgraph] = {o: op for op in self.subgraphs[subgraph].operators for o in op.outputs}
        return cache[subgraph]

    @cached_property
    def custom_ops(self) -> list[Operator]:
        return [op for sg in self.subgraphs for op in sg.operators if op.is_custom]


def _int_tuple(arr) -> tuple[int, ...]:
    return tuple(int(x) for x in arr) if arr is not None else ()


def _check_indices(values, limit: int, node: Node, name: str, allow_optional: bool = False) -> None:
    low = -1 if allow_optional else 0
    for i, v in enumerate(values):
        if not low <= v < limit:
            raise FormatError(f"index {v} out of range (0..{limit - 1})", offset=node.pos,
                              where=node.where + (name, str(i)))


def _read_quantization(node: Node | None) -> Quantization | None:
    if node is None:
        return None
    scale = node.array(2, "float32", "scale")
    zp = node.array(3, "int64", "zero_point")
    if scale is None or len(scale) == 0:
        return None
    scales = tuple(float(s) for s in scale)
    zps = _int_tuple(zp)
    if zps and len(zps) != len(scales):
        raise FormatError(f"{len(scales)} scales but {len(zps)} zero points", offset=node.pos,
                          where=node.where + ("zero_point",))
    return Quantization(scales, zps or (0,) * len(scales), int(node.scalar(6, "int32", 0)))


def _parse(buf: Buffer, path: str | None) -> dict:
    root = buf.root("Model", TFLITE_IDENTIFIER)
    version = int(root.scalar(0, "uint32", 0, "version"))
    codes = []
    for node in root.tables(1, "operator_codes"):
        deprecated = int(node.scalar(0, "int8", 0, "deprecated_builtin_code"))
        builtin = int(node.scalar(3, "int32", 0, "builtin_code"))
        # schema.fbs: readers take max(builtin_code, deprecated_builtin_code); old files only set the byte.
        code = max(builtin, deprecated)
        codes.append(OperatorCode(code, node.string(1, "custom_code"), int(node.scalar(2, "int32", 1, "version"))))

    buffers = []
    for i, node in enumerate(root.tables(4, "buffers")):
        span = node.bytes_span(0, "data")
        ext_offset = int(node.scalar(1, "uint64", 0, "offset"))
        ext_size = int(node.scalar(2, "uint64", 0, "size"))
        if span is not None and span[1]:
            buffers.append(BufferInfo(i, span[0], span[1]))
        elif ext_offset > 1:  # large models keep buffers after the flatbuffer, at a file offset
            buf.need(ext_offset, ext_size, node.where + ("offset",), "buffer")
            buffers.append(BufferInfo(i, ext_offset, ext_size))
        else:
            buffers.append(BufferInfo(i, 0, 0))

    subgraph_nodes = root.tables(2, "subgraphs")
    if not subgraph_nodes:
        raise FormatError("the model has no subgraphs", offset=root.pos, where=("Model", "subgraphs"))
    subgraphs = []
    for s, sg in enumerate(subgraph_nodes):
        tensors = []
        for t, node in enumerate(sg.tables(0, "tensors")):
            shape = _int_tuple(node.array(0, "int32", "shape"))
            type_code = int(node.scalar(1, "int8", 0, "type"))
            buffer_index = int(node.scalar(2, "uint32", 0, "buffer"))
            if buffer_index >= max(len(buffers), 1):
                raise FormatError(f"buffer index {buffer_index} out of range ({len(buffers)} buffers)",
                                  offset=node.pos, where=node.where + ("buffer",))
            tensors.append(Tensor(t, node.string(3, "name", "") or "", shape, tensor_type_name(type_code),
                                  buffer_index, _read_quantization(node.table(4, "quantization")),
                                  bool(node.scalar(5, "bool", False, "is_variable"))))
        n = len(tensors)
        inputs = _int_tuple(sg.array(1, "int32", "inputs"))
        outputs = _int_tuple(sg.array(2, "int32", "outputs"))
        _check_indices(inputs, n, sg, "inputs")
        _check_indices(outputs, n, sg, "outputs")
        operators = []
        for o, node in enumerate(sg.tables(3, "operators")):
            opcode_index = int(node.scalar(0, "uint32", 0, "opcode_index"))
            if opcode_index >= len(codes):
                raise FormatError(f"opcode index {opcode_index} out of range ({len(codes)} operator codes)",
                                  offset=node.pos, where=node.where + ("opcode_index",))
            code = codes[opcode_index]
            op_in = _int_tuple(node.array(1, "int32", "inputs"))
            op_out = _int_tuple(node.array(2, "int32", "outputs"))
            _check_indices(op_in, n, node, "inputs", allow_optional=True)
            _check_indices(op_out, n, node, "outputs")
            operators.append(Operator(o, opcode_index, code.name, code.builtin_code, code.custom_code, op_in, op_out,
                                      int(node.scalar(3, "uint8", 0, "builtin_options_type")),
                                      node.bytes_span(5, "custom_options")))
        subgraphs.append(Subgraph(s, sg.string(4, "name"), tuple(tensors), inputs, outputs, tuple(operators)))
    return dict(version=version, description=root.string(3, "description"), operator_codes=tuple(codes),
                subgraphs=tuple(subgraphs), buffers=tuple(buffers), root_offset=root.pos)


def read_model(data, path: str | None = None, _mmap=None) -> Model:
    """Parse model bytes (bytes, bytearray, mmap). The one boundary where low-level errors become FormatError."""
    buf = Buffer(data, "Model")
    try:
        parts = _parse(buf, path)
    except FormatError as exc:
        raise exc.with_path(path) if path else exc
    except (struct.error, IndexError, ValueError, OverflowError, TypeError) as exc:  # belt and braces
        raise FormatError(f"malformed flatbuffer ({type(exc).__name__}: {exc})", path=path) from None
    return Model(data, path, _mmap=_mmap, **parts)


def open_model(path) -> Model:
    """Open a .tflite read-only through mmap; InputError for missing/empty/unreadable files."""
    from forensics.io.dump import check_readable_file

    path = os.fspath(path)
    try:
        check_readable_file(path)  # a FIFO, a device or a directory is refused before it is opened
    except InputError as exc:
        if str(exc).endswith("no such file"):
            raise InputError("no such model file", path) from None
        if "is a directory" in str(exc):
            raise InputError("is a directory, expected a .tflite file", path) from None
        raise
    with reading(path, "a .tflite file", what="model file"), open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size == 0:
            raise InputError("model file is empty", path)
        mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    try:
        return read_model(mm, path, _mmap=mm)
    except BaseException:
        try:
            mm.close()
        except BufferError:  # a view into the map is still referenced by the traceback; it goes with it
            pass
        raise
