"""The CPU tail explained (issue 32): B's dequantized and detections replayed from B's own upstream stage, and the
one change that makes them named.

The oracle is the TFLite kernel in ai-edge-litert (default delegates off): run A is the real SSD MobileNet v1 / v2
segment's own CPU tail (the model without edgetpu-custom-op), run B the same tail built with one thing changed
(forensics.model.tflite.writer: DEQUANTIZE -> TFLite_Detection_PostProcess with other options, other anchors or
other quantization) and run by the kernel, so B's stages are what a misconfigured host computes. Where the
kernel cannot make the change (another runtime's rounding), B is made with plain numpy. The accelerator's outputs
(uint8 box encodings and scores) are drawn here: background scores low, a few objects of many overlapping
anchors with high scores in one class, box encodings around the zero point.
"""

from __future__ import annotations

import functools
import json
import zlib

import numpy as np
import pytest

from forensics.decode.explain import (ANCHORS, DEQUANTIZE_PARAMETER, DEQUANTIZE_SWAPPED, FOLLOWS, INCOMPLETE,
                                      OPTION, ROUNDING, SAME, UNEXPLAINED, Detections, TailArrays, explain_tail)
from tests.decode.decode_kernel import interpreter

V1 = "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
V2 = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def _run_tail(model: bytes, feeds: dict, names: tuple[str, str, str, str]) -> TailArrays:
    """The kernel's stages: names of the uint8 boxes / scores inputs and their DEQUANTIZE outputs."""
    it = interpreter(model)
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.asarray(feeds[d["name"]]).reshape(d["shape"]).astype(d["dtype"]))
    it.invoke()
    tensors = {d["name"]: d["index"] for d in it.get_tensor_details()}
    outs = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    boxes, scores, boxes_f, scores_f = (it.get_tensor(tensors[n]) for n in names)
    n = boxes.shape[1]
    return TailArrays(boxes.reshape(n, 4), scores.reshape(n, -1), boxes_f.reshape(n, 4), scores_f.reshape(n, -1),
                      Detections.of(*outs[:4]))


def chip_outputs(deps, seed: int, objects: int = 6, background: float = 10.0, mean: float = 150.0):
    """uint8 box encodings [N, 4] and scores [N, classes + 1], as the accelerator would write for a frame."""
    rng = np.random.default_rng(seed)
    anchors = deps.anchors
    n, columns = anchors.shape[0], deps.score_columns
    zp = deps.boxes.quant.zero_point
    boxes = np.clip(rng.normal(zp, 6, (n, 4)), 0, 255).astype(np.uint8)
    scores = np.clip(rng.normal(background, 5, (n, columns)), 0, 255).astype(np.uint8)
    for _ in range(objects):
        i, c = int(rng.integers(0, n)), int(rng.integers(1, columns))
        near = np.flatnonzero(np.hypot(anchors[:, 0] - anchors[i, 0], anchors[:, 1] - anchors[i, 1]) < 0.08)
        scores[near, c] = np.clip(rng.normal(mean, 40, near.size), 0, 255).astype(np.uint8)
        other = 1 + (c % (columns - 1))  # a class it is easily taken for, a little lower (dog / cat)
        scores[near, other] = (scores[near, c] * 0.8).astype(np.uint8)
    return boxes, scores


class Segment:
    """A real SSD segment's tail (A) and tails built with one change (B), on the same chip outputs."""

    def __init__(self, path, seed=1, **frame):
        from forensics.decode.model_deps import deps_from_model

        self.path = path
        self.deps, _, self.tail = deps_from_model(path)
        self.boxes, self.scores = chip_outputs(self.deps, seed, **frame)
        self.a = self.model_tail()

    def model_tail(self, boxes=None, scores=None) -> TailArrays:
        from forensics.model.tflite.model import read_model

        sg = read_model(self.tail).main
        inputs = [sg.tensors[i].name for i in sg.inputs]  # Squeeze1, convert_scores
        pp = [op for op in sg.operators if op.is_custom][0]
        deq = [sg.tensors[i].name for i in pp.inputs[:2]]
        feeds = {inputs[0]: (self.boxes if boxes is None else boxes)[None],
                 inputs[1]: (self.scores if scores is None else scores)[None]}
        return _run_tail(self.tail, feeds, (*inputs, *deq))

    def changed(self, anchors=None, boxes_quant=None, scores_quant=None, **options) -> TailArrays:
        from forensics.model.tflite import writer as w

        d = self.deps
        opts = {**d.options.to_dict(), **options}
        model = w.build_detection_model(
            d.anchors if anchors is None else anchors, options=opts,
            boxes_quant=boxes_quant or (d.boxes.quant.scale, d.boxes.quant.zero_point),
            scores_quant=scores_quant or (d.scores.quant.scale, d.scores.quant.zero_point))
        return _run_tail(model, {"boxes": self.boxes[None], "scores": self.scores[None]},
                         ("boxes", "scores", "boxes_float", "scores_float"))

    def explain(self, b: TailArrays, **kw):
        return explain_tail(self.deps, self.a, b, **kw)


@functools.lru_cache(maxsize=None)
def _segment(path: str, seed: int, objects: int, background: float, mean: float = 150.0) -> Segment:
    return Segment(path, seed, objects=objects, background=background, mean=mean)  # read-only: shared by tests


@pytest.fixture
def v2(shared_data):
    return _segment(str(shared_data / V2), 1, 6, 10.0)


@pytest.fixture
def v1(shared_data):
    return _segment(str(shared_data / V1), 1, 2, 4.0, 110.0)  # two objects, scores around 0.43: 0.5 matters


def test_the_model_tail_and_the_built_tail_agree(v2):
    """The built tail with the model's own options is the model's tail: the oracle of every case below."""
    e = v2.explain(v2.changed())
    assert (e.dequantized.kind, e.detections.kind) == (SAME, SAME)
    assert e.cause is None


@pytest.mark.parametrize("segment, option, value", [
    ("v2", "nms_iou_threshold", 0.5), ("v2", "max_detections", 10), ("v1", "use_regular_nms", True),
    ("v2", "y_scale", 5.0), ("v2", "h_scale", 10.0), ("v2", "max_classes_per_detection", 2)])
def test_one_postprocess_option_is_named_with_both_values(request, segment, option, value):
    v2 = request.getfixturevalue(segment)  # v1: few objects, where regular NMS keeps a second class
    e = v2.explain(v2.changed(**{option: value})).detections
    assert e.kind == OPTION and e.option == option, e.sentence
    assert e.value_b == pytest.approx(value) and e.value_a == getattr(v2.deps.options, option)
    assert e.upstream == "dequantized" and 0 < e.replays <= 300 and option in e.searched
    assert e.evidence["equal_rows"] < e.evidence["rows"]  # the model's options do not make B's rows
    if option == "nms_iou_threshold":
        assert e.sentence.startswith("B = PostProcess(B's dequantized) with nms_iou_threshold 0.5 instead of 0.6")
        low, high = e.value_range
        assert low <= 0.5 <= high < 0.6
    if option == "use_regular_nms":
        assert e.sentence == "B = PostProcess(B's dequantized) with regular NMS instead of fast NMS"


def test_the_score_threshold_is_named_with_the_scores_around_it(v1):
    b = v1.changed(nms_score_threshold=0.5)
    e = v1.explain(b).detections
    assert e.kind == OPTION and e.option == "nms_score_threshold", e.sentence
    low, high = e.value_range
    assert low < 0.5 <= high and low < e.value_b <= high
    assert e.value_a == pytest.approx(0.3)
    # the range is exact: its ends are scores of the frame, and the lowest of B's rows is at or above it
    n = b.detections.written(v1.deps.options)
    assert b.detections.scores[:n].min() >= high and np.isin(np.float32(low), b.scores_dequantized)
    assert "nms_score_threshold above" in e.sentence and "instead of 0.3" in e.sentence


def test_anchors_in_another_order_are_named(v2):
    e = v2.explain(v2.changed(anchors=np.ascontiguousarray(v2.deps.anchors[:, [1, 0, 3, 2]]))).detections
    assert e.kind == ANCHORS and e.value_b == "x, y, w, h order", e.sentence
    assert e.sentence.endswith("with this model's anchors in x, y, w, h order")


def test_anchors_that_are_not_the_models_are_named_with_the_anchor_needed(v2):
    from forensics.decode.ssd_anchors import generate_anchors, standard_config

    other = generate_anchors(standard_config(300, min_scale=0.15))  # an SSD of other scales: 1917 anchors too
    assert other.shape == v2.deps.anchors.shape and not np.allclose(other, v2.deps.anchors)
    e = v2.explain(v2.changed(anchors=other)).detections
    assert e.kind == ANCHORS and e.value_b is None, e.sentence
    assert "anchors that are not this model's" in e.sentence
    needed, i = np.array(e.evidence["needed_anchor"]), e.evidence["anchor"]
    assert np.allclose(needed, other[i], atol=1e-5) and not np.allclose(needed, v2.deps.anchors[i], atol=1e-3)


def test_each_output_dequantized_with_the_others_parameters(v2):
    d = v2.deps
    b = v2.changed(boxes_quant=(d.scores.quant.scale, d.scores.quant.zero_point),
                   scores_quant=(d.boxes.quant.scale, d.boxes.quant.zero_point))
    e = v2.explain(b)
    assert e.dequantized.kind == DEQUANTIZE_SWAPPED and e.dequantized.tensor is None
    assert e.dequantized.sentence == "each output dequantized with the other's scale and zero point"
    assert e.detections.kind == FOLLOWS and e.cause is e.dequantized  # the detections follow from it
    assert "follow from dequantized" in e.detections.sentence


def test_one_outputs_zero_point_is_solved(v2):
    d = v2.deps
    e = v2.explain(v2.changed(boxes_quant=(d.boxes.quant.scale, 128))).dequantized
    assert e.kind == DEQUANTIZE_PARAMETER and e.tensor == "Squeeze1" and e.option == "zero_point"
    assert (e.value_a, e.value_b) == (179, 128)
    assert e.sentence == "Squeeze1 dequantized with zero_point 128 instead of 179"


def test_one_outputs_scale_and_zero_point_are_solved(v1):
    e = v1.explain(v1.changed(scores_quant=(1 / 255, 1))).dequantized
    assert e.kind == DEQUANTIZE_PARAMETER and e.tensor == "convert_scores" and e.option == "scale and zero_point"
    assert e.value_b == (pytest.approx(1 / 255, rel=1e-7), 1)


def test_another_runtimes_rounding_is_harmless(v2):
    """tflite-runtime 2.14 rounds DEQUANTIZE once (fl((q - zp) x s)); LiteRT twice in blocks of 8 (pitfalls)."""
    from forensics.core.layout import dequantize
    from forensics.decode.ssd import postprocess

    d = v2.deps
    boxes_f = dequantize(v2.boxes, d.boxes.quant.scale, d.boxes.quant.zero_point, "reference")
    scores_f = dequantize(v2.scores, d.scores.quant.scale, d.scores.quant.zero_point, "reference")
    assert not np.array_equal(boxes_f, v2.a.boxes_dequantized)  # the two roundings differ on this frame
    out = postprocess(boxes_f, scores_f, d.anchors, d.options).output_tensors()
    b = TailArrays(v2.boxes, v2.scores, boxes_f, scores_f, Detections.of(*out[:4]))
    e = v2.explain(b)
    assert e.dequantized.kind == ROUNDING and e.dequantized.harmless
    assert 0 < e.dequantized.evidence["rounded"] < e.dequantized.evidence["elements"]
    assert e.dequantized.sentence.endswith("harmless")
    assert e.detections.kind in (FOLLOWS, SAME)


def test_detections_of_another_upstream_follow_from_it(v2):
    """B's chip wrote other scores: its tail is the model's; every tail stage follows from tensor."""
    scores = v2.scores.copy()
    scores[::7, 5] = 250
    e = v2.explain(v2.model_tail(scores=scores))
    assert e.dequantized.kind == FOLLOWS and e.detections.kind == FOLLOWS and e.cause is None


def test_detections_replayed_from_the_tensor_when_there_is_no_dequantized_stage(v2):
    b = v2.changed(nms_iou_threshold=0.5)
    b = TailArrays(b.boxes, b.scores, None, None, b.detections)
    e = v2.explain(b)
    assert e.dequantized is not None and e.dequantized.kind == INCOMPLETE
    assert e.detections.kind == OPTION and e.detections.upstream == "tensor"
    assert e.detections.sentence.startswith("B = PostProcess(DEQUANTIZE(B's tensor)) with nms_iou_threshold 0.5")


def test_two_changes_at_once_are_unexplained_and_say_how_far_the_model_comes(v2):
    e = v2.explain(v2.changed(nms_iou_threshold=0.3, max_detections=10)).detections
    assert e.kind == UNEXPLAINED
    assert e.evidence["equal_rows"] < e.evidence["rows"] == 20
    assert e.sentence.startswith("nothing forensics knows explains B's detections")
    assert f"none of {e.replays} single changes" in e.sentence


def test_the_search_is_bounded(v2):
    e = v2.explain(v2.changed(h_scale=10.0), max_replays=5).detections
    assert e.replays == 5 and e.kind == UNEXPLAINED and e.evidence["stopped"]
    assert e.sentence.endswith("(the search stopped at its bound of 5 replays)")


def test_rows_past_num_detections_are_not_compared(v1):
    """LiteRT leaves the rows past num_detections as they were: garbage there explains nothing."""
    b = v1.changed(nms_score_threshold=0.5)
    n = b.detections.written(v1.deps.options)
    assert n < b.detections.rows
    junk = Detections(b.detections.boxes.copy(), b.detections.classes.copy(), b.detections.scores.copy(),
                      b.detections.num_detections)
    junk.boxes[n:] = 7.0
    junk.scores[n:] = 0.9
    e = v1.explain(TailArrays(b.boxes, b.scores, b.boxes_dequantized, b.scores_dequantized, junk)).detections
    assert e.kind == OPTION and e.option == "nms_score_threshold"


def test_a_run_without_detections_is_incomplete(v2):
    b = TailArrays(v2.boxes, v2.scores)
    e = v2.explain(b)
    assert e.detections.kind == INCOMPLETE and e.dequantized.kind == INCOMPLETE
    assert "not in run B" in e.detections.sentence


# --- a small model built here -----------------------------------------------------------------------------

def _small(tmp_path, **options):
    from forensics.decode.model_deps import deps_from_model
    from forensics.model.tflite import writer as w

    rng = np.random.default_rng(9)
    n = 64
    anchors = np.stack([rng.uniform(0.2, 0.8, n), rng.uniform(0.2, 0.8, n), rng.uniform(0.1, 0.4, n),
                        rng.uniform(0.1, 0.4, n)], axis=1).astype(np.float32)
    base = dict(num_classes=3, max_detections=8, use_regular_nms=True, detections_per_class=4,
                nms_score_threshold=0.2, nms_iou_threshold=0.5)
    path = tmp_path / "small.tflite"
    path.write_bytes(w.build_detection_model(anchors, boxes_quant=(0.05, 128), scores_quant=(1 / 256, 0),
                                             options=base))
    deps, _, tail = deps_from_model(path)
    boxes = np.clip(rng.normal(128, 10, (n, 4)), 0, 255).astype(np.uint8)
    scores = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    names = ("boxes", "scores", "boxes_float", "scores_float")
    a = _run_tail(tail, {"boxes": boxes[None], "scores": scores[None]}, names)
    changed = w.build_detection_model(anchors, boxes_quant=(0.05, 128), scores_quant=(1 / 256, 0),
                                      options={**base, **options})
    b = _run_tail(changed, {"boxes": boxes[None], "scores": scores[None]}, names)
    return deps, a, b


def test_a_small_model_detections_per_class(tmp_path):
    deps, a, b = _small(tmp_path, detections_per_class=2)
    e = explain_tail(deps, a, b).detections
    assert e.kind == OPTION and e.option == "detections_per_class" and (e.value_a, e.value_b) == (4, 2), e.sentence


def test_a_small_model_fast_nms(tmp_path):
    deps, a, b = _small(tmp_path, use_regular_nms=False)
    e = explain_tail(deps, a, b).detections
    assert e.kind == OPTION and e.option == "use_regular_nms" and e.value_b is False
    assert e.sentence.endswith("with fast NMS instead of regular NMS")


def test_explanations_are_facts_with_a_sentence(v2):
    e = v2.explain(v2.changed(nms_iou_threshold=0.5))
    doc = json.loads(json.dumps(e.to_dict()))
    det = doc["detections"]
    assert doc["cause"] == "detections"
    assert {k: det[k] for k in ("stage", "kind", "option", "upstream")} == {
        "stage": "detections", "kind": "option", "option": "nms_iou_threshold", "upstream": "dequantized"}
    assert det["value_b"] == pytest.approx(0.5) and det["value_a"] == pytest.approx(0.6)
    assert det["sentence"] == e.detections.sentence and det["replays"] == e.detections.replays


# --- from runs: a capture (A) and a driver's run written by hand (B) ----------------------------------------

def test_tail_arrays_of_a_capture_and_a_hand_written_driver_run(v2, tmp_path):
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model
    from forensics.runs.capture import capture
    from forensics.runs.interop import tail_arrays

    # A: forensics capture --tail-only of the real segment on the chip's raw outputs
    with open_model(v2.path) as model:
        layers = {name: read_packages(model)[0].output_layer(name) for name in ("Squeeze1", "convert_scores")}
    for name, values in (("Squeeze1", v2.boxes), ("convert_scores", v2.scores)):
        (tmp_path / f"{name}.bin").write_bytes(inverse_relayout(values.reshape(-1), layer_map(layers[name])).tobytes())
    capture(v2.path, tmp_path / "a", source="libedgetpu", tail_only=True,
            inputs=[f"{n}={tmp_path / f'{n}.bin'}" for n in ("Squeeze1", "convert_scores")])
    # B: the driver's host code ran PostProcess with nms_iou_threshold 0.5 and wrote its run itself
    b = v2.changed(nms_iou_threshold=0.5)
    run = tmp_path / "b"
    buffers = []
    for stage, tensor, array, role in (
            ("tensor", "Squeeze1", b.boxes, "boxes"), ("tensor", "convert_scores", b.scores, "scores"),
            ("dequantized", "Squeeze2", b.boxes_dequantized, "boxes"),
            ("dequantized", "convert_scores1", b.scores_dequantized, "scores"),
            ("detections", "TFLite_Detection_PostProcess", b.detections.boxes, "boxes"),
            ("detections", "TFLite_Detection_PostProcess:1", b.detections.classes, "classes"),
            ("detections", "TFLite_Detection_PostProcess:2", b.detections.scores, "scores"),
            ("detections", "TFLite_Detection_PostProcess:3", np.float32([b.detections.num_detections]),
             "num_detections")):
        data = np.ascontiguousarray(array).tobytes()
        file = f"{stage}/{tensor.replace(':', '_')}.bin"
        (run / stage).mkdir(parents=True, exist_ok=True)
        (run / file).write_bytes(data)
        buffers.append({"stage": stage, "tensor": tensor, "file": file, "size": len(data), "crc32": zlib.crc32(data),
                        "dtype": str(array.dtype), "shape": list(array.shape), "role": role})
    (run / "manifest.json").write_text(json.dumps({"format": "forensics-run", "version": 1, "source": "ours",
                                                   "buffers": buffers}))
    ta, tb = tail_arrays(tmp_path / "a", v2.deps), tail_arrays(run, v2.deps)
    assert np.array_equal(ta.scores.reshape(v2.scores.shape), v2.scores)
    e = explain_tail(v2.deps, ta, tb)
    assert e.dequantized.kind == SAME
    assert e.detections.kind == OPTION and e.detections.option == "nms_iou_threshold"
    assert e.detections.value_b == pytest.approx(0.5)


def test_without_a_dequantized_stage_the_dequantize_before_the_kernel_is_explained_too(v2):
    """B recorded only its tensor and detections: its host's DEQUANTIZE is replayed with them."""
    from forensics.decode.ssd import postprocess

    d = v2.deps
    out = postprocess(v2.boxes, v2.scores, d.anchors, d.options, boxes_quant=d.boxes.quant,
                      scores_quant=d.scores.quant, rounding="reference").output_tensors()
    e = v2.explain(TailArrays(v2.boxes, v2.scores, None, None, Detections.of(*out[:4]))).detections
    assert e.kind == ROUNDING and e.harmless and e.upstream == "tensor", e.sentence
    swapped = v2.changed(boxes_quant=(d.scores.quant.scale, d.scores.quant.zero_point),
                         scores_quant=(d.boxes.quant.scale, d.boxes.quant.zero_point))
    e = v2.explain(TailArrays(swapped.boxes, swapped.scores, None, None, swapped.detections)).detections
    assert e.kind == DEQUANTIZE_SWAPPED and not e.harmless
    assert e.sentence.endswith("each output dequantized with the other's scale and zero point")
