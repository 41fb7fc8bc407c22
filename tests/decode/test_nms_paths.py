"""The fast paths of forensics.decode.ssd (chunked greedy NMS, byte-domain candidates) against LiteRT's kernel
and against a plain pair-by-pair greedy written the way the kernel's loop reads."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.decode.ssd import PostProcessOptions, Quantization, greedy_nms, iou_one_to_many, postprocess
from forensics.decode.ssd_anchors import generate_anchors, standard_config
from forensics.model.tflite import writer

from tests.decode.decode_kernel import assert_same, run


def plain_greedy(boxes, sizes, limit, thr):
    """NonMaxSuppressionSingleClassHelper's loop per group: visit in order, suppress later active boxes."""
    selected = np.zeros(len(boxes), bool)
    start = 0
    for size in sizes:
        active = [True] * size
        count = 0
        for i in range(size):
            if count >= min(limit, size):
                break
            if not active[i]:
                continue
            selected[start + i] = True
            count += 1
            later = np.arange(start + i + 1, start + size)
            ious = iou_one_to_many(boxes, start + i, later) if later.size else []
            for j, iou in zip(range(i + 1, size), ious):
                if active[j] and iou > np.float32(thr):
                    active[j] = False
        start += size
    return selected


def random_boxes(seed, m, clustered):
    rng = np.random.default_rng(seed)
    if clustered:  # near-copies of a few boxes: long suppression chains that run over many chunks
        base = rng.uniform(0, 1, (int(rng.integers(1, 4)), 4))
        boxes = base[rng.integers(0, len(base), m)] + rng.uniform(-0.05, 0.05, (m, 4))
        boxes = np.concatenate([np.minimum(boxes[:, :2], boxes[:, 2:]), np.maximum(boxes[:, :2], boxes[:, 2:])], 1)
        return boxes.astype(np.float32)
    boxes = rng.uniform(-2, 3, (m, 4)).astype(np.float32)  # any order: negative areas too
    special = rng.random((m, 4)) < 0.05
    boxes[special] = rng.choice(np.array([0.0, 0.5, 1.0, np.inf, -np.inf, np.nan], np.float32), special.sum())
    return boxes


@settings(max_examples=120, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), groups=st.lists(st.integers(0, 70), min_size=1, max_size=12),
       limit=st.integers(1, 80), thr=st.sampled_from([0.0001, 0.3, 0.5, 0.6, 1.0]), chunk=st.integers(1, 40),
       clustered=st.booleans(), small_passes=st.booleans(), column_walk=st.booleans())
def test_greedy_nms_equals_the_plain_loop(seed, groups, limit, thr, chunk, clustered, small_passes, column_walk):
    from unittest import mock

    from forensics.decode import ssd

    boxes = random_boxes(seed, sum(groups), clustered)
    with np.errstate(all="ignore"):
        expected = plain_greedy(boxes, groups, limit, thr)
        # small_passes: one group per pass and chunks capped at 8, as the memory bounds do on huge inputs
        # column_walk: every pass walks its groups column by column (else candidate by candidate over bit rows)
        with mock.patch.object(ssd, "_NMS_MATRIX_ELEMENTS", 1 if small_passes else ssd._NMS_MATRIX_ELEMENTS), \
                mock.patch.object(ssd, "_NMS_MAX_CHUNK", 8 if small_passes else ssd._NMS_MAX_CHUNK), \
                mock.patch.object(ssd, "_NMS_COLUMN_GROUPS", 1 if column_walk else 10**9), \
                mock.patch.object(ssd, "_NMS_COLUMN_WIDTH", 10**9):
            got = greedy_nms(boxes, groups, limit, thr, chunk=min(chunk, 8) if small_passes else chunk)
    np.testing.assert_array_equal(got, expected)


def ssd_case(seed, *, sparse, background=1, ties=False):
    """1917 real-layout anchors x 90 classes, boxes clustered so NMS suppresses a lot."""
    rng = np.random.default_rng(seed)
    anchors = generate_anchors(standard_config(300))
    n, cols = anchors.shape[0], 90 + background
    boxes = rng.integers(170, 190, (n, 4), dtype=np.uint8)  # small deltas: neighbours overlap heavily
    if sparse:
        scores = rng.integers(0, 30, (n, cols), dtype=np.uint8)
        hits = rng.integers(0, n * 90, 600)
        scores[hits // 90, background + hits % 90] = rng.integers(60, 256, hits.size) if not ties else 200
        if ties:  # equal best bytes in several classes of one anchor: the first (lowest) class wins
            rows = rng.integers(0, n, 40)
            scores[rows, background + 7] = 230
            scores[rows, background + 3] = 230
            scores[rows, background + 60] = 230
    else:
        scores = rng.integers(60, 256, (n, cols), dtype=np.uint8)
    if background:
        scores[rng.integers(0, n, 200), 0] = 255  # a loud background column never counts
    return anchors, boxes, scores


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
@pytest.mark.parametrize("kind", ["sparse", "sparse-ties", "dense"])
@pytest.mark.parametrize("background", [1, 0])
def test_many_detections_long_suppression_chains_match_litert(regular, kind, background):
    anchors, boxes, scores = ssd_case(len(kind) * 7 + regular + 3 * background, sparse=kind != "dense",
                                      background=background, ties=kind == "sparse-ties")
    opts = dict(max_detections=100, detections_per_class=100, nms_score_threshold=0.25, nms_iou_threshold=0.45,
                num_classes=90, use_regular_nms=regular)
    bq, sq = (0.09133967, 179), (1 / 256, 0)
    model = writer.build_detection_model(anchors, boxes_quant=bq, scores_quant=sq, options=opts,
                                         labels_offset=background)
    outs, _ = run(model, {"boxes": boxes, "scores": scores})
    ours = postprocess(boxes, scores, anchors, PostProcessOptions.from_mapping(opts), boxes_quant=Quantization(*bq),
                       scores_quant=Quantization(*sq), rounding="litert")
    assert ours.num_detections > 32  # more than one chunk of the greedy walk was needed
    assert_same(ours, outs)


@pytest.mark.parametrize("zero_point", [0, 3])
def test_tail_positions_with_their_own_rounding_match_litert(zero_point):
    """1917 x 91 = 174,447 bytes: the last 7 use the one-rounding path in LiteRT; sparse scores put hits there."""
    anchors, boxes, scores = ssd_case(11, sparse=True)
    scores[-1, 1:] = 0
    scores[-1, 5] = scores[-1, 9] = 250  # equal bytes in block and tail positions of the last anchor
    opts = dict(max_detections=30, nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=90)
    bq, sq = (0.09133967, 179), (0.00390625 * 1.01, zero_point)
    model = writer.build_detection_model(anchors, boxes_quant=bq, scores_quant=sq, options=opts)
    outs, _ = run(model, {"boxes": boxes, "scores": scores})
    ours = postprocess(boxes, scores, anchors, PostProcessOptions.from_mapping(opts), boxes_quant=Quantization(*bq),
                       scores_quant=Quantization(*sq), rounding="litert")
    assert_same(ours, outs)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(width=32, allow_nan=False), min_size=1, max_size=60))
def test_descending_keys_sort_like_negated_floats(values):
    """Regular NMS sorts (class, score) on integer keys: the same order as a stable sort of -score."""
    from forensics.decode.ssd import _descending_u32

    v = np.array(values, np.float32)
    np.testing.assert_array_equal(np.argsort(_descending_u32(v), kind="stable"), np.argsort(-v, kind="stable"))


@pytest.mark.parametrize("rounding", ["litert", "reference"])
@pytest.mark.parametrize("columns", [4, 5, 7])
@pytest.mark.parametrize("n", [1, 2, 3, 301])
def test_box_bytes_decode_through_tables_like_dequantize_then_decode(rounding, columns, n):
    """uint8 rows decode through per-byte factor tables: the same bits as dequantizing the whole tensor (block
    and tail positions) and decoding, for any row subset, including overflowing exp() and huge scales."""
    from forensics.decode import ssd

    rng = np.random.default_rng(n * 10 + columns)
    codes = rng.integers(0, 256, (n, columns), dtype=np.uint8)
    anchors = np.stack([rng.uniform(-1, 2, n), rng.uniform(-1, 2, n), rng.uniform(0, 3, n),
                        rng.uniform(0, 3, n)], 1).astype(np.float32)
    anchors[::3, 2] = 0.0
    for quant, scales in [(Quantization(0.09133967, 179), {}), (Quantization(0.0371, 3), {}),
                          (Quantization(7.5, 128), dict(h_scale=0.5, w_scale=1.5, y_scale=0.25))]:
        options = PostProcessOptions(num_classes=1, **scales)
        deltas = ssd.dequantize(codes, quant, rounding)[:, :4]
        with np.errstate(all="ignore"):
            expected = ssd.decode_boxes(deltas, anchors, options)
        decoder = ssd._QuantizedDecoder(codes, anchors, quant, rounding == "litert", options)
        rows = rng.permutation(n)[: max(1, n // 2)]
        for subset in (np.arange(n), rows):
            np.testing.assert_array_equal(decoder(subset).view(np.uint32), expected[subset].view(np.uint32))


def kernel_iou(bi, bj):
    """ComputeIntersectionOverUnion transliterated: float32 scalar operations, std::max/min as written."""
    def smax(a, b):
        return b if a < b else a

    def smin(a, b):
        return b if b < a else a

    f = np.float32
    area_i = f(f(bi[2] - bi[0]) * f(bi[3] - bi[1]))
    area_j = f(f(bj[2] - bj[0]) * f(bj[3] - bj[1]))
    if area_i <= 0 or area_j <= 0:
        return f(0.0)
    inter = f(smax(f(smin(bi[2], bj[2]) - smax(bi[0], bj[0])), f(0.0)) *
              smax(f(smin(bi[3], bj[3]) - smax(bi[1], bj[1])), f(0.0)))
    return f(inter / f(f(area_i + area_j) - inter))


@pytest.mark.parametrize("seed", range(6))
def test_iou_matrix_equals_the_kernel_formula_pair_by_pair(seed):
    """Including NaN, infinities, negative and zero areas (the random boxes carry them) and a batch axis."""
    from forensics.decode.ssd import iou_matrix

    boxes = random_boxes(seed, 24, clustered=seed % 2 == 1)
    if seed >= 4:  # finite boxes only: the np.maximum/np.minimum path
        boxes = np.nan_to_num(boxes, nan=0.25, posinf=2.0, neginf=-2.0)
    with np.errstate(all="ignore"):
        got = iou_matrix(boxes.reshape(2, 12, 4), boxes.reshape(2, 12, 4)[:, ::-1])
        for g in range(2):
            for i in range(12):
                for j in range(12):
                    want = kernel_iou(boxes[g * 12 + i], boxes[g * 12 + 11 - j])
                    assert got[g, i, j].dtype == np.float32
                    np.testing.assert_array_equal(got[g, i, j], want, err_msg=f"{g} {i} {j}")


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), size=st.integers(0, 700), limit=st.integers(1, 120),
       thr=st.sampled_from([0.0001, 0.3, 0.5, 0.6, 1.0]), chunk=st.integers(1, 40), clustered=st.booleans())
def test_greedy_nms_one_group_equals_the_plain_loop(seed, size, limit, thr, chunk, clustered):
    """Fast NMS is one group: its own walk, over chunks that double up to the cap."""
    from forensics.decode import ssd

    boxes = random_boxes(seed, size, clustered)
    with np.errstate(all="ignore"):
        expected = plain_greedy(boxes, [size], limit, thr)
        got = greedy_nms(boxes, [size], limit, thr, chunk=chunk)
    np.testing.assert_array_equal(got, expected)
    # boxes known to be bounded (as decoded uint8 boxes usually are) skip the checks, to the same selection
    finite = np.nan_to_num(boxes, nan=0.5, posinf=3.0, neginf=-2.0)
    with np.errstate(all="raise"):  # and raise no floating-point error, degenerate boxes included
        positions, picked = ssd._greedy_one(finite, size, min(limit, size), np.float32(thr), chunk, bounded=True)
    with np.errstate(all="ignore"):
        expected = plain_greedy(finite, [size], limit, thr)
    np.testing.assert_array_equal(positions, np.flatnonzero(expected))
    np.testing.assert_array_equal(picked, finite[positions])


@pytest.mark.parametrize("prefix", [0, 128])
@pytest.mark.parametrize("max_det,iou", [(1, 0.45), (7, 0.45), (40, 0.45), (60, 0.01)])
@pytest.mark.parametrize("kind", ["sparse", "sparse-ties", "dense"])
@pytest.mark.parametrize("zero_point", [0, 3])
def test_fast_nms_rankings_match_litert(prefix, max_det, iou, kind, zero_point):
    """The three ways fast NMS ranks candidates, each against the kernel. Sparse bytes under one dequantization
    table: the hits in byte order, walked lazily over all candidates. Otherwise only the best max(prefix, 4 x
    max_detections) candidates are sorted and walked first, and everything is walked when that ends short of
    max_detections (at IoU 0.01 nearly every pair suppresses, so it does). Zero point 3 under LiteRT's
    rounding gives the last 7 bytes their own table: the float ranking."""
    from unittest import mock

    from forensics.decode import ssd

    anchors, boxes, scores = ssd_case(max_det + len(kind), sparse=kind != "dense", ties=kind == "sparse-ties")
    opts = dict(max_detections=max_det, nms_score_threshold=0.25, nms_iou_threshold=iou, num_classes=90)
    bq, sq = (0.09133967, 179), (0.00390625 * 1.01, zero_point)  # 1/256 itself rounds the same both ways
    model = writer.build_detection_model(anchors, boxes_quant=bq, scores_quant=sq, options=opts)
    outs, _ = run(model, {"boxes": boxes, "scores": scores})
    calls = []
    real = ssd._greedy_one

    def spy(boxes, size, *args, **kwargs):
        calls.append(size)
        return real(boxes, size, *args, **kwargs)

    with mock.patch.object(ssd, "_FAST_PREFIX", prefix), mock.patch.object(ssd, "_greedy_one", spy):
        ours = postprocess(boxes, scores, anchors, PostProcessOptions.from_mapping(opts),
                           boxes_quant=Quantization(*bq), scores_quant=Quantization(*sq), rounding="litert")
    assert_same(ours, outs)
    if kind != "dense" and zero_point == 0:
        assert calls == [ours.candidates]  # one lazy walk
    else:
        assert calls[0] == max(prefix, 4 * max_det) < ours.candidates  # a prefix was walked first
        # everything is walked exactly when the prefix gave fewer than max_detections
        assert calls[1:] == ([ours.candidates] if iou == 0.01 else [])


@pytest.mark.parametrize("regular", [False, True], ids=["fast", "regular"])
def test_one_postprocessor_over_frames_matches_litert_frame_by_frame(regular):
    """A PostProcessor prepared once (as the interpreter is) gives each frame the kernel's output, and a
    later change to the caller's anchors array does not reach it (it holds a copy)."""
    from forensics.decode.ssd import PostProcessor

    anchors, _, _ = ssd_case(0, sparse=True)
    caller_anchors = anchors.copy()
    opts = dict(max_detections=15, nms_score_threshold=0.3, nms_iou_threshold=0.5, num_classes=90,
                use_regular_nms=regular)
    bq, sq = (0.09133967, 179), (1 / 256, 0)
    model = writer.build_detection_model(anchors, boxes_quant=bq, scores_quant=sq, options=opts)
    pp = PostProcessor(caller_anchors, PostProcessOptions.from_mapping(opts), boxes_quant=Quantization(*bq),
                       scores_quant=Quantization(*sq), rounding="litert")
    caller_anchors[:] = 0.5
    for seed, kind in [(1, "sparse"), (2, "dense"), (3, "sparse")]:
        _, boxes, scores = ssd_case(seed, sparse=kind == "sparse")
        outs, _ = run(model, {"boxes": boxes, "scores": scores})
        ours = pp(boxes, scores)
        assert ours.num_detections > 0
        assert_same(ours, outs)


def test_postprocessor_rejects_negative_anchor_sizes_per_frame():
    from forensics.decode.ssd import PostProcessor
    from forensics.core.errors import InputError

    anchors = np.array([[0.5, 0.5, 0.2, 0.2], [0.5, 0.5, -0.2, 0.2]], np.float32)
    pp = PostProcessor(anchors, PostProcessOptions(num_classes=1))
    with pytest.raises(InputError, match="decoded box of anchor 1 has min > max"):
        pp(np.zeros((2, 4), np.float32), np.full((2, 2), 0.5, np.float32))


@pytest.mark.parametrize("iou", [0.5, 1.0])
def test_fast_nms_ranks_each_anchor_once_even_when_nothing_suppresses(iou):
    """Zero-height anchors decode to boxes with IoU 0 against everything, and IoU 1.0 never exceeds a threshold
    of 1.0: every ranked candidate is selected, so an anchor with several hits must be ranked once, by its best
    byte in its lowest class."""
    anchors, boxes, scores = ssd_case(5, sparse=True, ties=True)
    if iou == 0.5:
        anchors = anchors.copy()
        anchors[:, 2] = 0.0
    rows = np.arange(0, 1900, 50)
    scores[rows, 4] = 240
    scores[rows, 9] = 250  # each of these anchors: three hits, 250 twice, best class 8 (column 9)
    scores[rows, 20] = 250
    opts = dict(max_detections=100, nms_score_threshold=0.25, nms_iou_threshold=iou, num_classes=90)
    bq, sq = (0.09133967, 179), (1 / 256, 0)
    model = writer.build_detection_model(anchors, boxes_quant=bq, scores_quant=sq, options=opts)
    outs, _ = run(model, {"boxes": boxes, "scores": scores})
    ours = postprocess(boxes, scores, anchors, PostProcessOptions.from_mapping(opts), boxes_quant=Quantization(*bq),
                       scores_quant=Quantization(*sq), rounding="litert")
    assert ours.num_detections == 100
    assert len({d.anchor for d in ours.detections}) == 100
    assert_same(ours, outs)
