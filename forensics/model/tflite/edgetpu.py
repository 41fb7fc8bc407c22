"""The Edge TPU DWN1 package inside `edgetpu-custom-op`: executables, parameters, patch table, layer layouts.

The op's custom options are a flexbuffer map; key "4" holds the package, a FlatBuffer with identifier
"DWN1" whose field layout is public in google-coral/libedgetpu executable/executable.fbs. The accessors
here are our own, over the bounds-checked tables of forensics.model.tflite.flat; field ids are in the comments.
Parameter blobs are not copied: their CRC32 is computed over a view of the model's mmap.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.compare.crc import crc32, format_crc
from forensics.core import serial
from forensics.core.errors import FormatError, InputError
from forensics.model.tflite.flat import Buffer, Node
from forensics.model.tflite.options import loads

EDGETPU_CUSTOM_CODE = "edgetpu-custom-op"
PACKAGE_KEY = "4"
PACKAGE_IDENTIFIER = b"DWN1"
# Real executables patch a few dozen fields; each row costs two tables to read, so a hostile package with
# 300,000 rows took half a minute. Far more than any compiler writes, far less than that.
MAX_PATCH_ROWS = 1 << 16

EXECUTABLE_TYPES = {0: "STAND_ALONE", 1: "PARAMETER_CACHING", 2: "EXECUTION_ONLY"}
DESCRIPTIONS = {0: "BASE_ADDRESS_OUTPUT_ACTIVATION", 1: "BASE_ADDRESS_INPUT_ACTIVATION",
                2: "BASE_ADDRESS_PARAMETER", 3: "BASE_ADDRESS_SCRATCH"}
POSITIONS = {0: "LOWER_32BIT", 1: "UPPER_32BIT"}
DATA_TYPES = {0: "FIXED_POINT8", 1: "FIXED_POINT16", 2: "SIGNED_FIXED_POINT32", 3: "BFLOAT", 4: "HALF",
              5: "SINGLE", 8: "SIGNED_FIXED_POINT8", 9: "SIGNED_FIXED_POINT16"}
# libedgetpu api/layer_information.cc TensorDataTypeSize
DATA_TYPE_SIZES = {0: 1, 8: 1, 1: 2, 9: 2, 2: 4, 3: 2, 4: 2, 5: 4}
SIGNED_DATA_TYPES = {8, 9}  # LayerInformation::SignedDataType: their MSB is flipped after relayout
LAYOUT_FIELDS = ("y_coordinate_to_linear_tile_id_map", "x_coordinate_to_linear_tile_id_map",
                 "linearized_tile_byte_offset", "x_coordinate_to_local_byte_offset",
                 "y_coordinate_to_local_y_offset", "x_coordinate_to_local_y_row_size")


def _address(view) -> int:
    return np.frombuffer(view, dtype=np.uint8).ctypes.data if len(view) else 0


@dataclass(frozen=True)
class FieldOffset(serial.Serial):
    """One entry of an instruction bitstream's patch table (filled in by the driver at link time)."""

    bitstream: int
    desc: str
    position: str
    name: str | None
    batch: int
    offset_bit: int


@dataclass(frozen=True)
class OutputLayout:
    """executable.fbs OutputLayout: maps a tensor (y, x) to the byte offset the chip writes it at."""

    y_coordinate_to_linear_tile_id_map: np.ndarray
    x_coordinate_to_linear_tile_id_map: np.ndarray
    linearized_tile_byte_offset: np.ndarray
    x_coordinate_to_local_byte_offset: np.ndarray
    y_coordinate_to_local_y_offset: np.ndarray
    x_coordinate_to_local_y_row_size: np.ndarray

    def to_dict(self) -> dict:
        return {name: getattr(self, name).tolist() for name in LAYOUT_FIELDS}


@dataclass(frozen=True)
class Layer:
    name: str
    kind: str  # "input" / "output"
    size_bytes: int  # as stored: includes the chip's padding, for batch 1
    y_dim: int
    x_dim: int
    z_dim: int
    data_type: int
    zero_point: int | None
    dequantization_factor: float | None
    execution_count_per_inference: int
    cache_on_dram: bool
    layout: OutputLayout | None
    has_shape_info: bool
    shape: tuple[tuple[int, int], ...] | None

    @property
    def data_type_name(self) -> str:
        return DATA_TYPES.get(self.data_type, f"DataType{self.data_type}")

    @property
    def data_type_size(self) -> int:
        return DATA_TYPE_SIZES.get(self.data_type, 1)

    @property
    def signed(self) -> bool:
        return self.data_type in SIGNED_DATA_TYPES

    @property
    def unpadded_size_bytes(self) -> int:
        """x_dim * y_dim * z_dim * bytes per element (executable.fbs Layer.size_bytes comment)."""
        return self.y_dim * self.x_dim * self.z_dim * self.data_type_size * self.execution_count_per_inference

    # kept: written two ways (with or without its layout), so no one document is its fields
    def to_dict(self, with_layout: bool = False) -> dict:
        d = {"name": self.name, "y_dim": self.y_dim, "x_dim": self.x_dim, "z_dim": self.z_dim,
             "data_type": self.data_type_name, "size_bytes": self.size_bytes,
             "unpadded_size_bytes": self.unpadded_size_bytes, "zero_point": self.zero_point,
             "dequantization_factor": self.dequantization_factor,
             "execution_count_per_inference": self.execution_count_per_inference,
             "has_layout": self.layout is not None, "has_shape_info": self.has_shape_info}
        if with_layout and self.layout is not None:
            d["layout"] = self.layout.to_dict()
        return d


@dataclass(frozen=True)
class Executable:
    index: int
    type: str
    name: str | None
    chip: str | None
    version: int
    batch_size: int
    scratch_size_bytes: int
    bitstream_sizes: tuple[int, ...]
    parameters_offset: int | None  # byte offset of the parameter blob in the model file
    parameters_size: int
    parameters_crc32: int
    parameter_caching_token: int
    estimated_cycles: int
    used_narrow_memory_bytes_per_tile: int
    field_offsets: tuple[FieldOffset, ...]
    input_layers: tuple[Layer, ...]
    output_layers: tuple[Layer, ...]
    parameters: memoryview = field(repr=False, compare=False, default=None)
    bitstreams: tuple[memoryview, ...] = field(repr=False, compare=False, default=())  # views into the model

    @property
    def bitstream_size(self) -> int:
        return sum(self.bitstream_sizes)

    # kept: its output layers are written with their layouts, its input layers without
    def to_dict(self) -> dict:
        return {"index": self.index, "type": self.type, "name": self.name, "chip": self.chip,
                "version": self.version, "batch_size": self.batch_size,
                "scratch_size_bytes": self.scratch_size_bytes, "bitstream_size": self.bitstream_size,
                "bitstreams": list(self.bitstream_sizes), "parameters_offset": self.parameters_offset,
                "parameters_size": self.parameters_size, "parameters_crc32": format_crc(self.parameters_crc32),
                "parameter_caching_token": f"{self.parameter_caching_token:016x}",
                "estimated_cycles": self.estimated_cycles,
                "used_narrow_memory_bytes_per_tile": self.used_narrow_memory_bytes_per_tile,
                "field_offsets": [f.to_dict() for f in self.field_offsets],
                "input_layers": [layer.to_dict() for layer in self.input_layers],
                "output_layers": [layer.to_dict(with_layout=True) for layer in self.output_layers]}


@dataclass(frozen=True)
class Package:
    operator: int  # index of the edgetpu-custom-op in the model
    offset: int | None  # byte offset of the DWN1 package in the model file
    size: int
    min_runtime_version: int
    compiler_version: str | None
    signature_size: int
    keypair_version: int
    virtual_chip_id: int
    model_identifier: str | None
    executables: tuple[Executable, ...]
    options: dict

    def output_layer(self, name: str) -> Layer | None:
        """The output layer called `name` (execution-only / stand-alone executables first)."""
        for exe in sorted(self.executables, key=lambda e: e.type == "PARAMETER_CACHING"):
            for layer in exe.output_layers:
                if layer.name == name:
                    return layer
        return None

    # kept: its options' blobs are written as their sizes, not the bytes
    def to_dict(self) -> dict:
        return {"operator": self.operator, "offset": self.offset, "size": self.size,
                "min_runtime_version": self.min_runtime_version, "compiler_version": self.compiler_version,
                "signature_present": self.signature_size > 0, "signature_size": self.signature_size,
                "keypair_version": self.keypair_version, "virtual_chip_id": self.virtual_chip_id,
                "model_identifier": self.model_identifier,
                "options": {k: (v if not isinstance(v, memoryview) else {"bytes": len(v)})
                            for k, v in self.options.items()},
                "executables": [e.to_dict() for e in self.executables]}


def _layer(node: Node, kind: str) -> Layer:
    numerics = node.table(5, "numerics")  # NumericsConstants: 0 zero_point, 1 dequantization_factor
    layout = None
    has_shape_info = False
    any_type, any_layer = node.union(7, 8, "any_layer")  # AnyLayer: 1 OutputLayer, 2 InputLayer
    if any_type == 1 and any_layer is not None:
        lay = any_layer.table(0, "layout")  # OutputLayer: 0 layout, 1 data_type, 2 shape_info
        if lay is not None:
            arrays = {}
            for i, name in enumerate(LAYOUT_FIELDS):
                arr = lay.array(i, "int32", name)
                arrays[name] = np.asarray(arr if arr is not None else np.zeros(0, np.int32), dtype=np.int64)
            layout = OutputLayout(**arrays)
        has_shape_info = any_layer.has(2)
    shape = None
    shape_node = node.table(11, "shape")  # TensorShape: 0 dimension [Range{start:int, end:int}]
    if shape_node is not None:
        dims = shape_node.struct_array(0, "int32", 2, "dimension")
        if dims is not None:
            shape = tuple((int(a), int(b)) for a, b in dims)
    return Layer(
        name=node.string(0, "name", "") or "",
        kind=kind,
        size_bytes=int(node.scalar(1, "int32", 0, "size_bytes")),
        y_dim=int(node.scalar(2, "int32", 0, "y_dim")),
        x_dim=int(node.scalar(3, "int32", 0, "x_dim")),
        z_dim=int(node.scalar(4, "int32", 0, "z_dim")),
        data_type=int(node.scalar(6, "int16", 0, "data_type")),
        zero_point=int(numerics.scalar(0, "int32", 0, "zero_point")) if numerics is not None else None,
        dequantization_factor=float(numerics.scalar(1, "float32", 0.0, "dequantization_factor"))
        if numerics is not None else None,
        execution_count_per_inference=int(node.scalar(9, "int32", 1, "execution_count_per_inference")),
        cache_on_dram=bool(node.scalar(10, "bool", False, "cache_on_dram")),
        layout=layout, has_shape_info=has_shape_info, shape=shape)


def _executable(buf: Buffer, index: int, base_address: int) -> Executable:
    where = ("Package", "serialized_multi_executable", "serialized_executables", str(index))
    if buf.size < 8:
        raise FormatError(f"{buf.size} bytes is too short for an executable", offset=0, where=where)
    root = Node(buf, buf.u32(0, where), where + ("Executable",))
    field_offsets = []
    bitstream_sizes = []
    bitstream_views = []
    bitstreams = root.tables(5, "instruction_bitstreams")
    rows = sum(bs.vector_len(1, "field_offsets") for bs in bitstreams)
    if rows > MAX_PATCH_ROWS:
        raise FormatError(f"the patch table has {rows:,} rows (field_offsets), more than the {MAX_PATCH_ROWS:,} "
                          "an executable is read with", offset=root.pos, where=root.where + ("instruction_bitstreams",))
    for b, bs in enumerate(bitstreams):  # InstructionBitstream: 0 bitstream
        bitstream_sizes.append(bs.vector_len(0, "bitstream"))
        view = bs.bytes_view(0, "bitstream")
        bitstream_views.append(view if view is not None else memoryview(b""))
        for fo in bs.tables(1, "field_offsets"):  # FieldOffset: 0 meta, 1 offset_bit
            meta = fo.table(0, "meta")  # Meta: 0 desc, 1 batch, 2 name, 3 position
            desc = int(meta.scalar(0, "int16", 0, "desc")) if meta is not None else 0
            pos = int(meta.scalar(3, "int16", 0, "position")) if meta is not None else 0
            field_offsets.append(FieldOffset(
                b, DESCRIPTIONS.get(desc, f"Description{desc}"), POSITIONS.get(pos, f"Position{pos}"),
                meta.string(2, "name") if meta is not None else None,
                int(meta.scalar(1, "int32", 0, "batch")) if meta is not None else 0,
                int(fo.scalar(1, "int32", 0, "offset_bit"))))
    params = root.bytes_view(6, "parameters")
    params = params if params is not None else memoryview(b"")
    type_code = int(root.scalar(13, "int16", 0, "type"))
    return Executable(
        index=index,
        type=EXECUTABLE_TYPES.get(type_code, f"ExecutableType{type_code}"),
        name=root.string(1, "name"),
        chip=root.string(10, "chip"),
        version=int(root.scalar(0, "int32", 0, "version")),
        batch_size=int(root.scalar(3, "int32", 0, "batch_size")),
        scratch_size_bytes=int(root.scalar(4, "int32", 0, "scratch_size_bytes")),
        bitstream_sizes=tuple(bitstream_sizes),
        parameters_offset=(_address(params) - base_address) if len(params) and base_address else None,
        parameters_size=len(params),
        parameters_crc32=crc32(params),
        parameter_caching_token=int(root.scalar(14, "uint64", 0, "parameter_caching_token")),
        estimated_cycles=int(root.scalar(16, "int64", 0, "estimated_cycles_64bit"))
        or int(root.scalar(11, "int32", 0, "estimated_cycles")),
        used_narrow_memory_bytes_per_tile=int(root.scalar(12, "int32", 0, "used_narrow_memory_bytes_per_tile")),
        field_offsets=tuple(field_offsets),
        input_layers=tuple(_layer(n, "input") for n in root.tables(8, "input_layers")),
        output_layers=tuple(_layer(n, "output") for n in root.tables(9, "output_layers")),
        parameters=params,
        bitstreams=tuple(bitstream_views),
    )


def read_package(data, operator: int = 0, base_address: int = 0, options: dict | None = None) -> Package:
    """Parse a DWN1 package (bytes or a memoryview into the model)."""
    view = memoryview(data)
    buf = Buffer(view, "Package")
    root = buf.root("Package", PACKAGE_IDENTIFIER)
    # Package: 0 min_runtime_version, 1 serialized_multi_executable, 2 signature, 3 keypair_version,
    # 4 compiler_version, 5 virtual_chip_id, 6 multi_chip_package, 7 model_identifier
    multi = root.bytes_span(1, "serialized_multi_executable")
    executables = []
    if multi is not None:
        start, length = multi
        mbuf = Buffer(view[start:start + length], "MultiExecutable")
        where = ("Package", "serialized_multi_executable")
        if length < 4:
            raise FormatError(f"{length} bytes is too short for a MultiExecutable", offset=start, where=where)
        mroot = Node(mbuf, mbuf.u32(0, where), where + ("MultiExecutable",))
        # MultiExecutable: 0 serialized_executables [string] (each string an Executable flatbuffer)
        s0, n, w = mroot._vector(0, "serialized_executables", 4)
        for i in range(n if s0 is not None else 0):
            at = s0 + 4 * i
            s = at + mbuf.u32(at, w + (str(i),))
            size = mbuf.u32(s, w + (str(i),))
            mbuf.need(s + 4, size, w + (str(i),), "executable")
            executables.append(_executable(Buffer(mbuf.view[s + 4:s + 4 + size], "Executable"), i, base_address))
    signature = root.vector_len(2, "signature") if root.has(2) else 0
    return Package(
        operator=operator,
        offset=(_address(view) - base_address) if base_address else None,
        size=len(view),
        min_runtime_version=int(root.scalar(0, "int32", 0, "min_runtime_version")),
        compiler_version=root.string(4, "compiler_version"),
        signature_size=signature,
        keypair_version=int(root.scalar(3, "int32", 0, "keypair_version")),
        virtual_chip_id=int(root.scalar(5, "int32", 0, "virtual_chip_id")),
        model_identifier=root.string(7, "model_identifier"),
        executables=tuple(executables),
        options=dict(options or {}),
    )


def read_packages(model) -> list[Package]:
    """Every edgetpu-custom-op's package in `model` (a forensics.model.tflite.model.Model)."""
    packages = []
    base = _address(memoryview(model.data))
    for sg in model.subgraphs:
        for op in sg.operators:
            if not (op.is_custom and op.custom_code == EDGETPU_CUSTOM_CODE):
                continue
            where = ("Model", "subgraphs", str(sg.index), "operators", str(op.index), "custom_options")
            raw = model.custom_options(op)
            try:
                if raw is None or len(raw) == 0:
                    raise FormatError("edgetpu-custom-op has no custom options (the DWN1 package is missing)",
                                      where=where)
                options = loads(raw, where)
                if not isinstance(options, dict) or PACKAGE_KEY not in options:
                    raise FormatError(f"custom options have no key {PACKAGE_KEY!r} (the DWN1 package)", where=where)
                pkg = options[PACKAGE_KEY]
                if isinstance(pkg, str):
                    pkg = memoryview(pkg.encode("utf-8"))
                if not isinstance(pkg, memoryview):
                    raise FormatError(f"key {PACKAGE_KEY!r} holds a {type(pkg).__name__}, expected the package "
                                      "bytes", where=where)
                packages.append(read_package(pkg, op.index, base, {k: v for k, v in options.items()
                                                                   if k != PACKAGE_KEY}))
            except FormatError as exc:
                where_full = exc.where if exc.where and exc.where[0] == "Model" else where + exc.where
                raise FormatError(exc.reason, offset=exc.offset, where=where_full, path=model.path) from None
            except (IndexError, ValueError, TypeError, OverflowError) as exc:
                raise FormatError(f"malformed package ({type(exc).__name__}: {exc})", where=where,
                                  path=model.path) from None
    return packages


def write_parameters(package: Package, directory) -> list[dict]:
    """Write each executable's parameter blob to DIR/exe<i>_<type>.params (atomically); returns what was written.

    A directory this call creates is removed again when a write fails: no partial directory is left."""
    import os
    import shutil

    from forensics.io.outputs import make_parents, write_bytes_atomic

    directory = os.fspath(directory)
    created = not os.path.lexists(directory)
    if not created and not os.path.isdir(directory):
        raise InputError("exists and is not a directory, expected the --params-out directory", directory)
    make_parents(os.path.join(directory, "x"))
    written = []
    try:
        for exe in package.executables:
            name = f"op{package.operator}_exe{exe.index}_{exe.type.lower()}.params"
            path = os.path.join(directory, name)
            write_bytes_atomic(path, bytes(exe.parameters))
            written.append({"executable": exe.index, "type": exe.type, "path": path, "size": exe.parameters_size,
                            "crc32": format_crc(exe.parameters_crc32)})
    except BaseException:
        if created:
            shutil.rmtree(directory, ignore_errors=True)
        raise
    return written
