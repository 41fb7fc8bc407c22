"""The CPU tail of an Edge TPU model: the same model with the accelerator's custom op removed.

`remove_custom_op(model_bytes)` returns a model whose graph inputs are the tensors the custom op produced
(e.g. `Squeeze1` and `convert_scores`), so LiteRT can replay what runs after the chip from dumped bytes.

How: FlatBuffers offsets are unsigned and point forward, and every offset inside the original file is
relative. So the new model is a small new front part (root offset, a new Model table, a new first SubGraph,
new operators/inputs/outputs vectors) followed by the original file unchanged; the new tables point forward
into it. Tensors, buffers (16-byte aligned: the front part is a multiple of 16 bytes), operator codes and
the remaining operators' tables, builtin options included, are the original bytes.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import flatbuffers

from forensics.core import serial
from forensics.core.errors import FormatError, InputError
from forensics.model.tflite.flat import Buffer
from forensics.model.tflite.model import TFLITE_IDENTIFIER, read_model

EDGETPU_CUSTOM_CODE = "edgetpu-custom-op"


def remove_custom_op(model_bytes: bytes, custom_code: str = EDGETPU_CUSTOM_CODE, subgraph: int = 0) -> bytes:
    """`model_bytes` without the operators whose custom code is `custom_code`; their outputs become inputs.

    Graph inputs that no remaining operator reads are dropped; graph outputs are kept. Raises InputError
    when the model has no such operator, FormatError when the model does not parse.
    """
    data = bytes(model_bytes)
    model = read_model(data)
    kept, new_inputs, new_outputs = _tail_graph(data, model, custom_code, subgraph)

    # Positions of the original tables we point at (absolute offsets in `data`).
    buf = Buffer(data, "Model")
    root = buf.root("Model", TFLITE_IDENTIFIER)
    sg_nodes = root.tables(2, "subgraphs")
    sg_node = sg_nodes[subgraph]
    op_nodes = sg_node.tables(3, "operators")
    kept_positions = [op_nodes[op.index].pos for op in kept]

    def vector_pos(node, field_id):  # absolute position of a vector's length word, or None when absent
        off = node._offset(field_id)
        return None if not off else node.pos + off + buf.u32(node.pos + off, node.where)

    builder = flatbuffers.Builder(1024)
    builder.minalign = 16  # keep the appended original 16-byte aligned (Buffer.data is force_align 16)

    def ref(pos: int) -> int:
        # The original file follows the builder's output, so its byte `pos` is `pos` bytes past the end:
        # in the builder's "offset from the end" terms that is -pos.
        return -pos

    def int_vector(values):
        builder.StartVector(4, len(values), 4)
        for v in reversed(values):
            builder.PrependInt32(int(v))
        return builder.EndVector()

    def ref_vector(positions):
        builder.StartVector(4, len(positions), 4)
        for p in reversed(positions):
            builder.PrependUOffsetTRelative(ref(p))
        return builder.EndVector()

    inputs_vec = int_vector(new_inputs)
    outputs_vec = int_vector(new_outputs)
    ops_vec = ref_vector(kept_positions)
    tensors_pos = vector_pos(sg_node, 0)
    name_pos = vector_pos(sg_node, 4)
    builder.StartObject(5)
    if tensors_pos is not None:
        builder.PrependUOffsetTRelativeSlot(0, ref(tensors_pos), 0)
    builder.PrependUOffsetTRelativeSlot(1, inputs_vec, 0)
    builder.PrependUOffsetTRelativeSlot(2, outputs_vec, 0)
    builder.PrependUOffsetTRelativeSlot(3, ops_vec, 0)
    if name_pos is not None:
        builder.PrependUOffsetTRelativeSlot(4, ref(name_pos), 0)
    new_sg = builder.EndObject()

    builder.StartVector(4, len(sg_nodes), 4)
    for i in reversed(range(len(sg_nodes))):
        builder.PrependUOffsetTRelative(new_sg if i == subgraph else ref(sg_nodes[i].pos))
    subgraphs_vec = builder.EndVector()

    # Model: version, operator_codes, description, buffers, metadata_buffer, metadata are the originals;
    # signature_defs (field 7) name the old inputs, so they are left out.
    builder.StartObject(7)
    builder.PrependUint32Slot(0, model.version, 0)
    for field_id in (1, 3, 4, 5, 6):
        pos = vector_pos(root, field_id)
        if pos is not None:
            builder.PrependUOffsetTRelativeSlot(field_id, ref(pos), 0)
    builder.PrependUOffsetTRelativeSlot(2, subgraphs_vec, 0)
    new_root = builder.EndObject()
    builder.Finish(new_root, file_identifier=TFLITE_IDENTIFIER)
    front = bytes(builder.Output())
    assert len(front) % 16 == 0, len(front)
    return front + data


def _tail_graph(data: bytes, model, custom_code: str, subgraph: int) -> tuple[list, list, list]:
    """(the operators kept, the tail's graph inputs, its outputs): the graph inputs a kept operator reads, then
    the removed operators' outputs; the outputs as they were. InputError for buffers outside the flatbuffer
    (the front part could not point at them) and for a subgraph without the custom op."""
    if any(b.size and not (model.root_offset <= b.offset < len(data)) for b in model.buffers):
        raise InputError("buffers stored outside the flatbuffer (large model layout) are not supported")
    sg = model.subgraphs[subgraph]
    removed = [op for op in sg.operators if op.is_custom and op.custom_code == custom_code]
    if not removed:
        found = sorted({op.op for op in sg.operators})
        raise InputError(f"no {custom_code!r} operator in subgraph {subgraph} (operators: {', '.join(found)})")
    kept = [op for op in sg.operators if op not in removed]
    read_by_kept = {i for op in kept for i in op.inputs if i >= 0}
    new_inputs = [i for i in sg.inputs if i in read_by_kept]
    for op in removed:
        new_inputs += [o for o in op.outputs if o not in new_inputs]
    return kept, new_inputs, list(sg.outputs)


@dataclass(frozen=True)
class TailResult(serial.Serial):
    """What `write_tail` wrote: the tail model's file, size, operator count and graph inputs/outputs."""

    model: str
    output: str
    removed: str
    size_bytes: int
    operators: int
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]



def write_tail(model_path, output) -> TailResult:
    """Write `model_path`'s CPU tail (the edgetpu-custom-op removed) to `output`, atomically."""
    from forensics.io.outputs import check_outputs, write_bytes_atomic
    from forensics.model.tflite.model import open_model

    model_path = os.fspath(model_path)
    check_outputs([(output, "file", "output")], [model_path])  # the one rule: also through links
    data = bytes(open_model(model_path).data)  # the one way a model file is opened and checked
    try:
        tail = remove_custom_op(data)
    except InputError as exc:
        raise InputError(str(exc), model_path) from None
    except FormatError as exc:  # FormatError carries no path from bytes; name the file here
        raise exc.with_path(model_path) from None
    subgraph = read_model(tail).main
    write_bytes_atomic(output, tail)
    return TailResult(model_path, os.fspath(output), EDGETPU_CUSTOM_CODE, len(tail), len(subgraph.operators),
                      tuple(subgraph.tensors[i].name for i in subgraph.inputs),
                      tuple(subgraph.tensors[i].name for i in subgraph.outputs))
