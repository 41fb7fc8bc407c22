"""forensics.decode.ssd against the official kernel in LiteRT, over option sets and hostile inputs."""

from __future__ import annotations

import numpy as np
import pytest

from forensics.decode.ssd import PostProcessOptions, Quantization, dequantize_litert, postprocess
from forensics.model.tflite import writer

from tests.decode.decode_kernel import assert_same, run


def random_anchors(rng, n, degenerate=False):
    a = np.stack([rng.uniform(0, 1, n), rng.uniform(0, 1, n), rng.uniform(0.02, 0.6, n),
                  rng.uniform(0.02, 0.6, n)], 1).astype(np.float32)
    if degenerate:
        a[: n // 4, 2] = 0.0  # zero-height anchors: degenerate boxes, IoU 0
    return a


def case(rng, *, classes, background, regular, per_det, score_thr, iou, scales=(10.0, 10.0, 5.0, 5.0), n=None,
         max_det=None, per_class=None, scores_kind="random", boxes_kind="random", zp_scores=0):
    n = n or int(rng.integers(20, 400))
    opts = dict(max_detections=max_det or int(rng.integers(1, 25)), max_classes_per_detection=per_det,
                detections_per_class=per_class or int(rng.integers(1, 150)), use_regular_nms=regular,
                nms_score_threshold=score_thr, nms_iou_threshold=iou, y_scale=scales[0], x_scale=scales[1],
                h_scale=scales[2], w_scale=scales[3], num_classes=classes)
    cols = classes + background
    if per_det > 1:  # distinct scores within an anchor: partial_sort's order among ties is the library's
        scores = np.stack([rng.permutation(256)[:cols] for _ in range(n)]).astype(np.uint8)
    elif scores_kind == "ties":
        scores = (rng.integers(0, 4, (n, cols)) * 85).astype(np.uint8)  # 0, 85, 170, 255 across anchors
    elif scores_kind == "saturated":
        scores = np.full((n, cols), 255, np.uint8)
    elif scores_kind == "background":
        scores = np.zeros((n, cols), np.uint8)
        if background:
            scores[:, 0] = 255
    else:
        scores = rng.integers(0, 256, (n, cols), dtype=np.uint8)
    if boxes_kind == "huge":
        boxes = rng.choice(np.array([0, 1, 254, 255], np.uint8), (n, 4))
    elif boxes_kind == "same":
        boxes = np.tile(rng.integers(0, 256, (1, 4), dtype=np.uint8), (n, 1))
    else:
        boxes = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    return opts, boxes, scores


OPTION_SETS = [
    dict(classes=1, background=1, regular=False, per_det=1, score_thr=1e-8, iou=0.6),
    dict(classes=1, background=1, regular=True, per_det=1, score_thr=0.0, iou=0.5),
    dict(classes=2, background=1, regular=False, per_det=2, score_thr=0.3, iou=0.6),
    dict(classes=2, background=0, regular=True, per_det=1, score_thr=0.0, iou=1.0),
    dict(classes=90, background=1, regular=False, per_det=1, score_thr=0.3, iou=0.6),
    dict(classes=90, background=1, regular=True, per_det=1, score_thr=0.5, iou=0.6),
    dict(classes=90, background=1, regular=False, per_det=3, score_thr=0.0, iou=0.4),
    dict(classes=3, background=1, regular=False, per_det=5, score_thr=0.1, iou=0.6),  # per_det > classes
    dict(classes=2, background=1, regular=False, per_det=1, score_thr=0.999, iou=0.6),
    dict(classes=2, background=1, regular=True, per_det=1, score_thr=0.99, iou=0.3, scales=(3.5, 7.25, 2.0, 1.5)),
    dict(classes=4, background=1, regular=False, per_det=1, score_thr=0.2, iou=0.7, scales=(1.0, 1.0, 1.0, 1.0)),
]
KINDS = [("random", "random"), ("ties", "random"), ("saturated", "same"), ("background", "random"),
         ("random", "huge"), ("ties", "same")]


@pytest.mark.parametrize("spec", OPTION_SETS, ids=lambda s: f"c{s['classes']}{'R' if s['regular'] else 'F'}"
                         f"k{s['per_det']}t{s['score_thr']}")
@pytest.mark.parametrize("kinds", KINDS, ids=lambda k: "-".join(k))
def test_dequantize_then_postprocess_matches_litert(spec, kinds):
    rng = np.random.default_rng(abs(hash((str(spec), kinds))) % (1 << 32))
    opts, boxes, scores = case(rng, scores_kind=kinds[0], boxes_kind=kinds[1], **spec)
    anchors = random_anchors(rng, len(boxes), degenerate=kinds[1] == "same")
    bq, sq = (float(rng.choice([0.10822763, 0.0371, 0.2])), int(rng.integers(0, 256))), (1 / 256, 0)
    if kinds[0] == "random":
        sq = (0.0123, int(rng.integers(0, 40)))
    model = writer.build_detection_model(anchors, boxes_quant=bq, scores_quant=sq, options=opts,
                                         labels_offset=spec["background"])
    outs, tensors = run(model, {"boxes": boxes, "scores": scores})
    options = PostProcessOptions.from_mapping(opts)
    # uint8 bytes with LiteRT's rounding: everything bit for bit
    ours = postprocess(boxes, scores, anchors, options, boxes_quant=Quantization(*bq),
                       scores_quant=Quantization(*sq), rounding="litert")
    assert_same(ours, outs)
    # the float32 tensors the kernel received: bit for bit
    ours_f = postprocess(tensors["boxes_float"][0], tensors["scores_float"][0], anchors, options)
    assert_same(ours_f, outs)
    # reference rounding: structure equal, boxes within 1e-6 (scores: zero point 0 keeps them equal). The 1e-6
    # holds for the usual 10/10/5/5 scales; exp() amplifies the one-ulp dequantization difference otherwise.
    if sq[1] == 0 and spec.get("scales", (10.0, 10.0, 5.0, 5.0)) == (10.0, 10.0, 5.0, 5.0) and kinds[1] != "huge":
        ours_r = postprocess(boxes, scores, anchors, options, boxes_quant=Quantization(*bq),
                             scores_quant=Quantization(*sq), rounding="reference")
        assert_same(ours_r, outs, exact_boxes=False)


@pytest.mark.parametrize("regular", [False, True])
@pytest.mark.parametrize("classes", [1, 2, 90])
def test_uint8_straight_into_postprocess_with_uint8_anchors(regular, classes):
    rng = np.random.default_rng(classes * 2 + regular)
    n = 300
    anchors_u8 = np.stack([rng.integers(0, 256, n), rng.integers(0, 256, n), rng.integers(5, 120, n),
                           rng.integers(5, 120, n)], 1).astype(np.uint8)
    aq = (0.006453060545027256, 0)
    opts = dict(max_detections=20, use_regular_nms=regular, nms_score_threshold=0.3, nms_iou_threshold=0.6,
                num_classes=classes)
    boxes = rng.integers(0, 256, (n, 4), dtype=np.uint8)
    scores = rng.integers(0, 256, (n, classes + 1), dtype=np.uint8)
    bq, sq = (0.08655580133199692, 183), (0.00390625, 0)
    model = writer.build_detection_model(anchors_u8, anchors_quant=aq, dequantize=False, boxes_quant=bq,
                                         scores_quant=sq, options=opts)
    outs, _ = run(model, {"boxes": boxes, "scores": scores})
    ours = postprocess(boxes, scores, anchors_u8, PostProcessOptions.from_mapping(opts),
                       boxes_quant=Quantization(*bq), scores_quant=Quantization(*sq),
                       anchors_quant=Quantization(*aq), rounding="litert", boxes_into_kernel=True)
    assert ours.num_detections > 0
    assert_same(ours, outs)


def test_litert_dequantize_matches_the_dequantize_op():
    """The blocked two-rounding model of LiteRT's DEQUANTIZE, on every byte, at block and tail positions."""
    rng = np.random.default_rng(7)
    for scale, zp in [(0.10822763, 144), (0.0123, 17), (0.09133967, 179)]:
        q = rng.integers(0, 256, 8 * 64 + 5, dtype=np.uint8)
        q[:256] = np.arange(256)
        q[-5:] = [0, 1, 128, 254, 255]
        spec = writer.ModelSpec(tensors=[writer.TensorSpec("q", [1, q.size], "uint8", scale=scale, zero_point=zp),
                                         writer.TensorSpec("f", [1, q.size], "float32")],
                                opcodes=[writer.OpCodeSpec(builtin_code=writer.DEQUANTIZE)],
                                operators=[writer.OperatorSpec(0, [0], [1])], inputs=[0], outputs=[1])
        outs, _ = run(writer.build_model(spec), {"q": q})
        ours = dequantize_litert(q, Quantization(scale, zp))
        np.testing.assert_array_equal(ours.view(np.uint32), outs[0].reshape(-1).view(np.uint32))


def test_regular_nms_tie_order_across_classes():
    """Equal scores in different classes: lower class first (the stable merge), then selection order."""
    n, classes = 40, 6
    rng = np.random.default_rng(3)
    anchors = random_anchors(rng, n)
    scores = np.zeros((n, classes + 1), np.uint8)
    scores[rng.integers(0, n, 30), rng.integers(1, classes + 1, 30)] = 200
    boxes = rng.integers(100, 160, (n, 4), dtype=np.uint8)
    opts = dict(max_detections=12, use_regular_nms=True, nms_score_threshold=0.1, nms_iou_threshold=0.5,
                num_classes=classes, detections_per_class=3)
    model = writer.build_detection_model(anchors, boxes_quant=(0.1, 128), scores_quant=(1 / 256, 0), options=opts)
    outs, _ = run(model, {"boxes": boxes, "scores": scores})
    ours = postprocess(boxes, scores, anchors, PostProcessOptions.from_mapping(opts),
                       boxes_quant=Quantization(0.1, 128),
                       scores_quant=Quantization(1 / 256, 0), rounding="litert")
    assert ours.num_detections == 12
    assert [d.class_id for d in ours.detections] == sorted(d.class_id for d in ours.detections)
    assert_same(ours, outs)


def test_nan_and_bad_shapes_are_input_errors():
    from forensics.core.errors import InputError

    opts = PostProcessOptions(num_classes=1)
    anchors = np.full((3, 4), 0.5, np.float32)
    bad = np.zeros((3, 4), np.float32)
    bad[1, 2] = np.nan
    with pytest.raises(InputError, match="NaN"):
        postprocess(bad, np.zeros((3, 2), np.float32), anchors, opts)
    with pytest.raises(InputError, match="columns"):
        postprocess(np.zeros((3, 4), np.float32), np.zeros((3, 5), np.float32), anchors, opts)
    with pytest.raises(InputError, match="anchor counts"):
        postprocess(np.zeros((2, 4), np.float32), np.zeros((3, 2), np.float32), anchors, opts)
    with pytest.raises(InputError, match="nms_iou_threshold"):
        PostProcessOptions(num_classes=1, nms_iou_threshold=0.0)
