"""A small Edge TPU model built in the tests: a DWN1 package (executable.fbs field ids) inside edgetpu-custom-op.

Executable 0 EXECUTION_ONLY (batch 2, scratch, two bitstreams, fields at every bit phase) and executable 1
PARAMETER_CACHING (parameters), over seeded random bitstream bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import flatbuffers
import numpy as np

OUTPUT, INPUT, PARAMETER, SCRATCH = 0, 1, 2, 3
LOWER, UPPER = 0, 1


@dataclass
class Fld:
    desc: int
    position: int
    offset_bit: int
    name: str | None = None
    batch: int = 0


@dataclass
class Exe:
    type: int  # 0 STAND_ALONE, 1 PARAMETER_CACHING, 2 EXECUTION_ONLY
    bitstreams: list  # [(bytes, [Fld])]
    inputs: list = field(default_factory=list)  # [(name, size_bytes)]
    outputs: list = field(default_factory=list)
    parameters: bytes = b""
    batch_size: int = 1
    scratch: int = 0
    token: int = 0x1234_5678_9ABC_DEF0


def _offsets(b, offsets) -> int:
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def _layer(b, name: str, size: int) -> int:
    n = b.CreateString(name)
    b.StartObject(12)
    b.PrependUOffsetTRelativeSlot(0, n, 0)
    b.PrependInt32Slot(1, size, 0)
    b.PrependInt32Slot(2, 1, 0)
    b.PrependInt32Slot(3, 1, 0)
    b.PrependInt32Slot(4, size, 0)
    return b.EndObject()


def executable(exe: Exe) -> bytes:
    b = flatbuffers.Builder(0)
    streams = []
    for data, fields in exe.bitstreams:
        fos = []
        for f in fields:
            name = b.CreateString(f.name) if f.name is not None else None
            b.StartObject(4)  # Meta: 0 desc, 1 batch, 2 name, 3 position
            b.PrependInt16Slot(0, f.desc, -1)
            b.PrependInt32Slot(1, f.batch, -1)
            if name is not None:
                b.PrependUOffsetTRelativeSlot(2, name, 0)
            b.PrependInt16Slot(3, f.position, -1)
            meta = b.EndObject()
            b.StartObject(2)  # FieldOffset: 0 meta, 1 offset_bit
            b.PrependUOffsetTRelativeSlot(0, meta, 0)
            b.PrependInt32Slot(1, f.offset_bit, -1)
            fos.append(b.EndObject())
        vec = _offsets(b, fos)
        bits = b.CreateByteVector(data)
        b.StartObject(2)  # InstructionBitstream: 0 bitstream, 1 field_offsets
        b.PrependUOffsetTRelativeSlot(0, bits, 0)
        b.PrependUOffsetTRelativeSlot(1, vec, 0)
        streams.append(b.EndObject())
    streams_vec = _offsets(b, streams)
    ins = _offsets(b, [_layer(b, n, s) for n, s in exe.inputs])
    outs = _offsets(b, [_layer(b, n, s) for n, s in exe.outputs])
    params = b.CreateByteVector(exe.parameters) if exe.parameters else None
    b.StartObject(17)
    b.PrependInt32Slot(3, exe.batch_size, 0)
    b.PrependInt32Slot(4, exe.scratch, 0)
    b.PrependUOffsetTRelativeSlot(5, streams_vec, 0)
    if params is not None:
        b.PrependUOffsetTRelativeSlot(6, params, 0)
    b.PrependUOffsetTRelativeSlot(8, ins, 0)
    b.PrependUOffsetTRelativeSlot(9, outs, 0)
    b.PrependInt16Slot(13, exe.type, -1)
    b.PrependUint64Slot(14, exe.token, 0)
    b.Finish(b.EndObject())
    return bytes(b.Output())


def package(executables: list) -> bytes:
    b = flatbuffers.Builder(0)
    blobs = [b.CreateByteVector(executable(e)) for e in executables]
    vec = _offsets(b, blobs)
    b.StartObject(1)  # MultiExecutable: 0 serialized_executables
    b.PrependUOffsetTRelativeSlot(0, vec, 0)
    b.Finish(b.EndObject())
    multi = bytes(b.Output())
    b = flatbuffers.Builder(0)
    m = b.CreateByteVector(multi)
    b.StartObject(8)  # Package: 1 serialized_multi_executable
    b.PrependUOffsetTRelativeSlot(1, m, 0)
    b.Finish(b.EndObject(), file_identifier=b"DWN1")
    return bytes(b.Output())


def model(executables: list) -> bytes:
    """A .tflite whose one operator is edgetpu-custom-op holding the package under flexbuffer key "4"."""
    from flatbuffers import flexbuffers

    from forensics.model.tflite import writer

    options = bytes(flexbuffers.Dumps({"4": package(executables)}))
    spec = writer.ModelSpec(tensors=[writer.TensorSpec("a", [1, 4], "uint8"), writer.TensorSpec("b", [1, 4], "uint8")],
                            opcodes=[writer.OpCodeSpec(custom_code="edgetpu-custom-op")],
                            operators=[writer.OperatorSpec(0, [0], [1], custom_options=options)],
                            inputs=[0], outputs=[1])
    return writer.build_model(spec)


def small_executables(seed: int = 7) -> list:
    """Executable 0: EXECUTION_ONLY, batch 2, scratch 4096, two bitstreams; executable 1: PARAMETER_CACHING."""
    rng = np.random.default_rng(seed)
    bs0 = rng.integers(0, 256, 96, dtype=np.uint8).tobytes()
    bs1 = rng.integers(0, 256, 40, dtype=np.uint8).tobytes()
    fields0 = [Fld(SCRATCH, LOWER, 6), Fld(SCRATCH, UPPER, 70),
               Fld(PARAMETER, LOWER, 134), Fld(PARAMETER, UPPER, 198),
               Fld(INPUT, UPPER, 262, "in", 0), Fld(INPUT, LOWER, 301, "in", 0),  # phase 5
               Fld(INPUT, UPPER, 344, "in", 1), Fld(INPUT, LOWER, 383, "in", 1),  # phase 0, 7
               Fld(OUTPUT, LOWER, 450, "out/a;fused", 0), Fld(OUTPUT, UPPER, 489, "out/a;fused", 0),
               Fld(OUTPUT, LOWER, 523, "out/a;fused", 1), Fld(OUTPUT, UPPER, 558, "out/a;fused", 1),
               Fld(OUTPUT, LOWER, 598, "scores", 0), Fld(OUTPUT, UPPER, 636, "scores", 0),
               Fld(OUTPUT, LOWER, 673, "scores", 1), Fld(OUTPUT, UPPER, 711, "scores", 1)]
    fields1 = [Fld(OUTPUT, LOWER, 9, "scores", 0), Fld(OUTPUT, UPPER, 43, "scores", 0),
               Fld(OUTPUT, LOWER, 131, "scores", 1), Fld(OUTPUT, UPPER, 170, "scores", 1),
               Fld(INPUT, LOWER, 260, "in", 0), Fld(INPUT, UPPER, 287, "in", 1)]
    exe0 = Exe(2, [(bs0, fields0), (bs1, fields1)], inputs=[("in", 48)],
               outputs=[("out/a;fused", 64), ("scores", 128)], batch_size=2, scratch=4096)
    cache = rng.integers(0, 256, 32, dtype=np.uint8).tobytes()
    exe1 = Exe(1, [(cache, [Fld(PARAMETER, LOWER, 22), Fld(PARAMETER, UPPER, 150)])],
               parameters=rng.integers(0, 256, 64, dtype=np.uint8).tobytes())
    return [exe0, exe1]
