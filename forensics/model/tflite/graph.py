"""What a model does with the accelerator's output: op chain, constants, the CPU tail, PostProcess inputs.

`graph_summary(model)` is the result behind `forensics graph`; `postprocess_info(model)` finds the
TFLite_Detection_PostProcess op and traces its box/score inputs back through DEQUANTIZE to the uint8
tensors whose bytes the chip (or a driver) produces — the scales and zero points a decoder needs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.compare.crc import crc32, format_crc
from forensics.core import serial
from forensics.core.errors import FormatError
from forensics.model.tflite.edgetpu import EDGETPU_CUSTOM_CODE, Package
from forensics.model.tflite.model import Model, Operator, Tensor
from forensics.model.tflite.options import POSTPROCESS_CUSTOM_CODE, PostProcessOptions, postprocess_options

DEQUANTIZE = 6


def source_tensor(model: Model, tensor_index: int, subgraph: int = 0) -> Tensor:
    """Follow DEQUANTIZE producers back to the quantized tensor (the bytes a dump holds)."""
    tensors = model.subgraphs[subgraph].tensors
    seen = set()
    while tensor_index not in seen:
        seen.add(tensor_index)
        op = model.producer(tensor_index, subgraph)
        if op is None or op.builtin_code != DEQUANTIZE or not op.inputs or op.inputs[0] < 0:
            break
        tensor_index = op.inputs[0]
    return tensors[tensor_index]


@dataclass(frozen=True)
class PostProcessInfo:
    operator: Operator
    options: PostProcessOptions
    boxes: Tensor  # the quantized box encodings (traced back through DEQUANTIZE)
    scores: Tensor
    anchors: Tensor
    boxes_input: Tensor  # what the kernel reads directly
    scores_input: Tensor

    @property
    def num_anchors(self) -> int:
        return int(self.anchors.shape[0]) if self.anchors.shape else 0

    @property
    def num_classes(self) -> int | None:
        return self.options.values.get("num_classes")


def postprocess_info(model: Model, subgraph: int = 0) -> PostProcessInfo | None:
    sg = model.subgraphs[subgraph]
    for op in sg.operators:
        if op.is_custom and op.custom_code == POSTPROCESS_CUSTOM_CODE:
            where = ("Model", "subgraphs", str(subgraph), "operators", str(op.index))
            if len(op.inputs) < 3 or min(op.inputs[:3]) < 0:
                raise FormatError(f"{POSTPROCESS_CUSTOM_CODE} has {len(op.inputs)} inputs, expected 3 "
                                  "(boxes, scores, anchors)", where=where, path=model.path)
            raw = model.custom_options(op)
            if raw is None or len(raw) == 0:
                raise FormatError(f"{POSTPROCESS_CUSTOM_CODE} has no custom options", where=where, path=model.path)
            try:
                options = postprocess_options(raw, where + ("custom_options",))
            except FormatError as exc:
                raise exc.with_path(model.path) if model.path else exc
            return PostProcessInfo(op, options, source_tensor(model, op.inputs[0], subgraph),
                                   source_tensor(model, op.inputs[1], subgraph), sg.tensors[op.inputs[2]],
                                   sg.tensors[op.inputs[0]], sg.tensors[op.inputs[1]])
    return None


def tensor_entry(model: Model, t: Tensor) -> dict:
    d = t.to_dict()
    if t.buffer and t.buffer < len(model.buffers) and model.buffers[t.buffer].size:
        b = model.buffers[t.buffer]
        d["constant"] = {"buffer": t.buffer, "size": b.size,
                         "crc32": format_crc(crc32(model.buffer_view(t.buffer)))}
    return d


@dataclass(frozen=True)
class GraphSummary(serial.Serial):
    path: str | None = field(metadata=serial.json("model"))
    size: int
    version: int
    description: str | None
    subgraphs: int
    inputs: tuple[dict, ...]
    outputs: tuple[dict, ...]
    operators: tuple[dict, ...]
    constants: tuple[dict, ...]
    boundary: tuple[dict, ...]
    postprocess: dict | None = field(metadata=serial.json("postprocess_options"))
    edgetpu: dict | None = field(metadata=serial.json(omit_none=True))


def cpu_tail(model: Model, op: Operator, subgraph: int = 0) -> dict:
    """The accelerator boundary of one custom op: what it produces and which CPU ops run after it."""
    sg = model.subgraphs[subgraph]
    produced = list(op.outputs)
    frontier, tail = set(produced), []
    for later in sg.operators:  # TFLite stores operators in execution order
        if later.index <= op.index:
            continue
        if any(i in frontier for i in later.inputs):
            tail.append(later.index)
            frontier.update(later.outputs)
    consumers = [{"tensor": sg.tensors[i].name, "index": i,
                  "consumers": [{"index": c.index, "op": c.op} for c in model.consumers(i, subgraph)]}
                 for i in produced]
    return {"operator": op.index, "op": op.op, "produces": consumers,
            "tail": [{"index": i, "op": sg.operators[i].op} for i in tail]}


def graph_summary(model: Model, packages: list[Package] | None = None) -> GraphSummary:
    sg = model.main
    tensors = sg.tensors
    operators = []
    for op in sg.operators:
        entry = {"index": op.index, "op": op.op,
                 "inputs": [tensor_entry(model, tensors[i]) if i >= 0 else None for i in op.inputs],
                 "outputs": [tensor_entry(model, tensors[i]) for i in op.outputs]}
        if op.builtin_options_name:
            entry["builtin_options"] = op.builtin_options_name
        if op.custom_options_span is not None:
            entry["custom_options_size"] = op.custom_options_span[1]
        operators.append(entry)
    constants = [tensor_entry(model, t) for t in tensors if t.buffer and model.buffers[t.buffer].size]
    boundary = [cpu_tail(model, op) for op in sg.operators
                if op.is_custom and op.custom_code == EDGETPU_CUSTOM_CODE]
    pp = postprocess_info(model)
    postprocess = None
    if pp is not None:
        postprocess = pp.options.to_dict()
    edgetpu = None
    if packages:
        edgetpu = {"packages": [p.to_dict() for p in packages]}
        edgetpu["executables"] = [e for p in edgetpu["packages"] for e in p["executables"]]
    return GraphSummary(model.path, model.size, model.version, model.description, len(model.subgraphs),
                        tuple(tensor_entry(model, tensors[i]) for i in sg.inputs),
                        tuple(tensor_entry(model, tensors[i]) for i in sg.outputs),
                        tuple(operators), tuple(constants), tuple(boundary), postprocess, edgetpu)
