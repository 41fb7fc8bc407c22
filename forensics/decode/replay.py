"""Run the official TFLite_Detection_PostProcess in LiteRT on the same inputs, and compare with ours.

The interpreter is created with default delegates off (the XNNPACK delegate changes uint8 results, see
docs/pitfalls.md) and one thread (regular NMS merges per-thread class results in thread order otherwise).
ai-edge-litert is imported lazily; tflite-runtime is the fallback import; neither installed is a
DependencyError that says what to install.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.model.runtime import load_runtime as _load_runtime

BOX_TOLERANCE = 1e-6


def load_runtime():
    """(Interpreter class, interpreter kwargs, runtime name) of the reference runtime."""
    runtime = _load_runtime("{replay}")
    return runtime.Interpreter, runtime.reference_kwargs, runtime.name


def run_model(model_bytes: bytes, feeds: dict, *, preserve: bool = False):
    """Invoke a model with inputs by name (or position); returns (outputs by name, interpreter)."""
    interpreter_cls, kwargs, _ = load_runtime()
    try:
        it = interpreter_cls(model_content=bytes(model_bytes), num_threads=1,
                             experimental_preserve_all_tensors=preserve, **kwargs)
        it.allocate_tensors()
        details = it.get_input_details()
        for pos, d in enumerate(details):
            value = feeds.get(d["name"], feeds.get(pos))
            if value is None:
                raise InputError(f"no data for the tail's input {d['name']!r}")
            it.set_tensor(d["index"], np.asarray(value, dtype=d["dtype"]).reshape(d["shape"]))
        it.invoke()
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"the TFLite runtime rejected the tail: {str(exc).splitlines()[0]}") from None
    outputs = {d["name"]: it.get_tensor(d["index"]) for d in it.get_output_details()}
    return outputs, it


def postprocess_model(anchors, options, *, score_columns: int, boxes_quant=None, scores_quant=None,
                      anchors_quant=None, boxes_into_kernel: bool = False) -> bytes:
    """A model that is just the official kernel on our inputs: uint8 -> DEQUANTIZE -> PostProcess, float32
    straight into PostProcess, or uint8 with uint8 anchors straight into PostProcess."""
    from forensics.model.tflite import writer as w

    anchors = np.asarray(anchors)
    n = int(anchors.shape[0])
    opts = options.to_dict()
    offset = score_columns - options.num_classes
    if boxes_quant is not None and scores_quant is not None:
        return w.build_detection_model(
            anchors, boxes_quant=(boxes_quant.scale, boxes_quant.zero_point),
            scores_quant=(scores_quant.scale, scores_quant.zero_point), num_classes=options.num_classes,
            options=opts, dequantize=not boxes_into_kernel,
            anchors_quant=(anchors_quant.scale, anchors_quant.zero_point) if anchors_quant else None,
            labels_offset=offset)
    rows = options.rows
    tensors = [w.TensorSpec("boxes", [1, n, 4], "float32"), w.TensorSpec("scores", [1, n, score_columns], "float32"),
               w.TensorSpec("anchors", [n, 4], "float32", buffer=1),
               w.TensorSpec("detection_boxes", [1, rows, 4]), w.TensorSpec("detection_classes", [1, rows]),
               w.TensorSpec("detection_scores", [1, rows]), w.TensorSpec("num_detections", [1])]
    spec = w.ModelSpec(buffers=[b"", np.ascontiguousarray(anchors, "<f4").tobytes()], tensors=tensors,
                       opcodes=[w.OpCodeSpec(custom_code=w.POSTPROCESS_CUSTOM_CODE)],
                       operators=[w.OperatorSpec(0, [0, 1, 2], [3, 4, 5, 6],
                                                 custom_options=w.postprocess_options(**opts))],
                       inputs=[0, 1], outputs=[3, 4, 5, 6])
    return w.build_model(spec)


@dataclass(frozen=True)
class ReplayResult(serial.Serial):
    """The official kernel's rows beside ours, and the verdict."""

    JSON_DERIVED = ("box_tolerance",)
    JSON_ORDER = ("match", "runtime", "source", "exact_boxes", "box_tolerance", "num_detections", "max_box_diff",
                  "detections", "mismatches")

    match: bool
    runtime: str
    exact_boxes: bool  # True when box coordinates must be bit-equal (same rounding as the runtime)
    num_detections: int
    # (row, class, score, box) the runtime wrote, written as {"row", "class", "score", "box"}
    rows: tuple = field(default=(), metadata=serial.json(
        "detections", encode=lambda rows: [{"row": r, "class": c, "score": s, "box": list(b)} for r, c, s, b in rows],
        decode=lambda docs: tuple((d["row"], d["class"], d["score"], tuple(d["box"])) for d in docs)))
    mismatches: tuple[str, ...] = field(default=())  # human-readable reasons
    max_box_diff: float = 0.0
    source: str = ""

    @property
    def box_tolerance(self) -> float:
        return 0.0 if self.exact_boxes else BOX_TOLERANCE

    def __bool__(self) -> bool:
        return self.match


def judge_replay(replay: ReplayResult) -> Judgement:
    """decode --replay's one judgement: MATCH when the official kernel's detections are ours, else MISMATCH
    with the first three differences."""
    if replay.match:
        how = "bit for bit" if replay.exact_boxes else f"boxes within 1e-6 (max {replay.max_box_diff:.2g})"
        return Judgement(Verdict.MATCH, f"{replay.runtime} {replay.source}: {replay.num_detections} detection(s), "
                                        f"classes, scores and order equal, {how}")
    return Judgement(Verdict.MISMATCH, f"{replay.runtime} {replay.source}: " + "; ".join(replay.mismatches[:3]),
                     (Reason("replay_mismatch", f"{len(replay.mismatches)} difference(s)"),))


def kernel_outputs(outputs: dict) -> tuple:
    """(boxes [R,4], classes [R], scores [R], num) from a PostProcess model's four outputs, in output order."""
    arrays = list(outputs.values())
    if len(arrays) < 4:
        raise InputError(f"the tail has {len(arrays)} outputs; TFLite_Detection_PostProcess writes 4")
    boxes, classes, scores, num = (np.asarray(a) for a in arrays[:4])
    return boxes.reshape(-1, 4), classes.reshape(-1), scores.reshape(-1), int(np.asarray(num).reshape(-1)[0])


def compare(result, outputs: dict, *, exact_boxes: bool, source: str = "") -> ReplayResult:
    """Our DecodeResult against the runtime's outputs, over the rows the kernel writes."""
    _, _, runtime = load_runtime()
    rb, rc, rs, rnum = kernel_outputs(outputs)
    ob, oc, os_, onum, written = result.output_tensors()
    reasons = []
    if rnum != int(onum[0]):
        reasons.append(f"num_detections: runtime {rnum}, reference {int(onum[0])}")
    rows_n = min(len(rc), len(written))
    if len(rc) != len(written):
        reasons.append(f"output rows: runtime {len(rc)}, reference {len(written)}")
    idx = np.flatnonzero(written[:rows_n])
    max_diff = 0.0
    for r in idx.tolist():
        if rc[r] != oc[r]:
            reasons.append(f"row {r}: class runtime {int(rc[r])}, reference {int(oc[r])}")
        if rs[r] != os_[r]:
            reasons.append(f"row {r}: score runtime {float(rs[r])!r}, reference {float(os_[r])!r}")
        diff = float(np.max(np.abs(rb[r].astype(np.float64) - ob[r].astype(np.float64))))
        max_diff = max(max_diff, diff)
        # 1e-6 on normalised coordinates, relative beyond 1 (huge boxes)
        limit = BOX_TOLERANCE * max(1.0, float(np.max(np.abs(rb[r]))))
        if (exact_boxes and not np.array_equal(rb[r], ob[r])) or diff > limit:
            reasons.append(f"row {r}: box runtime {rb[r].tolist()}, reference {ob[r].tolist()}")
    rows = tuple((int(r), int(rc[r]), float(rs[r]), tuple(float(v) for v in rb[r])) for r in idx.tolist())
    return ReplayResult(match=not reasons, runtime=runtime, exact_boxes=exact_boxes, num_detections=rnum, rows=rows,
                        mismatches=tuple(reasons[:20]), max_box_diff=max_diff, source=source)


def replay(result, boxes: np.ndarray, scores: np.ndarray, anchors, *, boxes_quant=None, scores_quant=None,
           anchors_quant=None, boxes_into_kernel=False, tail_model: bytes | None = None,
           tail_inputs: tuple[str, str] | None = None) -> ReplayResult:
    """Run the official kernel (the model's own tail when given, else a one-op model) and compare."""
    load_runtime()
    if tail_model is not None and tail_inputs is not None:
        feeds = {tail_inputs[0]: boxes[None], tail_inputs[1]: scores[None]}
        outputs, _ = run_model(tail_model, feeds)
        source = "model tail"
    else:
        quantized = boxes.dtype == np.uint8 and scores.dtype == np.uint8
        if not quantized:
            boxes = boxes.astype(np.float32)
            scores = scores.astype(np.float32) if scores.dtype != np.uint8 else None
            if scores is None:
                raise InputError("{replay} needs both inputs uint8 or both float32", params=True)
        model = postprocess_model(anchors if anchors_quant is None else anchors, result.options,
                                  score_columns=scores.shape[1], boxes_quant=boxes_quant if quantized else None,
                                  scores_quant=scores_quant if quantized else None, anchors_quant=anchors_quant,
                                  boxes_into_kernel=boxes_into_kernel)
        outputs, _ = run_model(model, {"boxes": boxes[:, :4][None], "scores": scores[None]})
        source = "DEQUANTIZE -> TFLite_Detection_PostProcess" if quantized and not boxes_into_kernel \
            else "TFLite_Detection_PostProcess"
    exact = result.rounding in ("litert", "none")
    return compare(result, outputs, exact_boxes=exact, source=source)
