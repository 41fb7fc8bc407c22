"""forensics.decode.impact: which differing records change the detections after NMS, on buffers built with plain
numpy (tests/decode/impact_support.py). Every attribution is checked by decoding again outside the search: the
causing records substituted into A (numpy) show the change, dropping any one of them loses it, and A with all
causing records from B decodes to B; the search's own substituted decodes are checked against the kernel
(PostProcessor on the whole arrays) and against the official kernel in LiteRT, default delegates off."""

from __future__ import annotations

import numpy as np
import pytest

from forensics.core.errors import InputError
from forensics.core.verdict import Verdict
from forensics.decode.deps import read_deps
from forensics.decode.impact import (
    ClassifierModel,
    SsdArrays,
    SsdModel,
    Substitution,
    classifier_impact,
    ddmin,
    ssd_impact,
)
from forensics.decode.ssd import postprocess
from tests.decode.impact_support import FACE_DEPS, STORY_FACES, coco_outputs, face_boxes, face_scores

SSD_SEGMENTS = ["ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
                "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"]
HEAD_LAYERS = "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"
CLASSIFIER = "mobilenet_v1_0.25_128_quant_edgetpu.tflite"


def face_model(**kw) -> SsdModel:
    deps = read_deps(FACE_DEPS)
    return SsdModel(deps, input_size=deps.input_size, **kw)


def kernel_rows(deps, boxes, scores, rounding="reference"):
    """The kernel's rows as (row, anchor, class, score, box), decoded outside the search."""
    anchors = deps.anchors_codes if deps.anchors_codes is not None else deps.anchors
    result = postprocess(boxes, scores, anchors, deps.options, boxes_quant=deps.boxes.quant,
                         scores_quant=deps.scores.quant, anchors_quant=deps.anchors_quant, rounding=rounding,
                         boxes_into_kernel=deps.boxes_into_kernel)
    return [(d.row, d.anchor, d.class_id, d.score, d.box) for d in result.detections]


def substituted(a: SsdArrays, b: SsdArrays, records):
    boxes, scores = a.boxes.copy(), a.scores.copy()
    records = list(records)
    boxes[records] = b.boxes[records]
    scores[records] = b.scores[records]
    return boxes, scores


def shows(change, rows, rows_a) -> bool:
    """Whether a decode's rows show `change` (B's row there and A's gone; a removed row of A unmatched)."""
    def key(row):
        return row["anchor"], row["class"], row["score"], tuple(row["box"])

    keys = {(r[1], r[2], r[3], tuple(r[4])) for r in rows}
    if change.kind == "removed":
        from forensics.decode.impact import match_detections
        from forensics.decode.ssd import Detection

        dets_a = [Detection(r["row"], r["anchor"], r["class"], r["score"], tuple(r["box"])) for r in rows_a]
        dets_x = [Detection(*r) for r in rows]
        return rows_a.index(change.a) in match_detections(dets_a, dets_x)[1]
    if change.a is None:
        return key(change.b) in keys
    return key(change.b) in keys and key(change.a) not in keys


def check_attribution(result, a: SsdArrays, b: SsdArrays, deps, rounding="reference"):
    """Each change's records cause it and are 1-minimal; the causing records alone give B's detections."""
    rows_a = list(result.detections_a)
    for change in result.changes:
        assert change.minimal
        assert shows(change, kernel_rows(deps, *substituted(a, b, change.records), rounding), rows_a), change
        for dropped in change.records:
            rest = [r for r in change.records if r != dropped]
            assert not shows(change, kernel_rows(deps, *substituted(a, b, rest), rounding), rows_a), (change, dropped)
    causing = sorted({r for c in result.changes for r in c.records} | set(result.joint))
    assert kernel_rows(deps, *substituted(a, b, causing), rounding) == kernel_rows(deps, b.boxes, b.scores, rounding)
    assert set(result.harmless) | set(causing) == set(result.differing)
    assert not set(result.harmless) & set(causing)


# --- the story ----------------------------------------------------------------------------------------------

def test_the_story_nine_anchors_one_a_0996_face():
    a = SsdArrays(face_boxes(), face_scores())
    b = SsdArrays(face_boxes(), face_scores(STORY_FACES))
    result = ssd_impact(a, b, face_model())
    assert result.differing == tuple(sorted(STORY_FACES))
    assert result.judgement.verdict is Verdict.DIFFER and result.judgement.exit_code == 1
    assert [c.kind for c in result.changes] == ["added"] * 9
    assert {c.b["anchor"]: c.records for c in result.changes} == {k: (k,) for k in STORY_FACES}
    face = [c for c in result.changes if c.b["score"] == 255 / 256]
    assert len(face) == 1 and face[0].records == (203,) and face[0].b["class"] == 0
    assert result.harmless == () and result.decoder == "incremental"
    check_attribution(result, a, b, read_deps(FACE_DEPS))


def test_a_pair_where_nothing_changes_lists_every_differing_record_as_harmless():
    base = face_scores({**STORY_FACES, 700: (0xfd, 0x02)})  # ten detections: the kernel's max_detections
    a = SsdArrays(face_boxes(), base)
    scores, boxes = base.copy(), face_boxes()
    scores[10, 0] -= 1        # a background anchor's background byte nudged by 1 LSB: the kernel skips that column
    boxes[11] += 1            # box deltas of an anchor that is no candidate (face 0 < nms_score_threshold)
    scores[900, 1] = 0x01     # a candidate, but below all ten selected before the walk reaches it
    b = SsdArrays(boxes, scores)
    result = ssd_impact(a, b, face_model())
    assert result.differing == (10, 11, 900)
    assert result.changes == () and result.harmless == (10, 11, 900)
    assert result.inert == 2  # 900 is a candidate: settled by the decodes, not by the inert rules
    assert result.judgement.verdict is Verdict.MATCH and result.judgement.exit_code == 0
    assert kernel_rows(a_deps := read_deps(FACE_DEPS), a.boxes, a.scores) == kernel_rows(a_deps, b.boxes, b.scores)


def test_records_that_do_and_do_not_change_detections():
    base = face_scores(STORY_FACES)
    a = SsdArrays(face_boxes(), base)
    scores, boxes = base.copy(), face_boxes()
    scores[700] = (0x20, 0xe0)   # a face-like anchor raised above the score threshold: 0.875
    scores[10, 0] = 0xfe         # a background anchor nudged by 1 LSB
    boxes[203, 0] += 2           # the face's dy by 2 LSB: it moves
    scores[206, 1] = 0xfa        # 254 -> 250: rescored
    b = SsdArrays(boxes, scores)
    deps = read_deps(FACE_DEPS)
    result = ssd_impact(a, b, face_model())
    by_anchor = {(c.a or c.b)["anchor"]: c for c in result.changes}
    assert {k: (c.kind, c.records) for k, c in by_anchor.items()} == {
        700: ("added", (700,)), 203: ("moved", (203,)), 206: ("rescored", (206,))}
    assert result.harmless == (10,)
    # the move in model pixels, from the two decodes' boxes (320x320 input)
    before = [r for r in kernel_rows(deps, a.boxes, a.scores) if r[1] == 203][0][4]
    after = [r for r in kernel_rows(deps, b.boxes, b.scores) if r[1] == 203][0][4]
    assert by_anchor[203].px == pytest.approx(max(abs(x - y) for x, y in zip(before, after)) * 320)
    assert by_anchor[203].px > 0 and by_anchor[206].score_delta == pytest.approx(-4 / 256)
    check_attribution(result, a, b, deps)


def test_the_broken_driver_crowds_out_the_weak_faces(tmp_path):
    """0xCC prefill from anchor 1500 on: 534 anchors differ; new 0.797 faces fill the ten rows and push out A's
    weakest; each removal's causing set is checked 1-minimal by decoding outside the search."""
    a = SsdArrays(face_boxes(), face_scores(STORY_FACES))
    scores = face_scores(STORY_FACES)
    scores[1500:] = 0xcc
    b = SsdArrays(face_boxes(), scores)
    result = ssd_impact(a, b, face_model())
    assert len(result.differing) == 534 and not result.exhausted
    kinds = {c.kind for c in result.changes}
    assert kinds == {"added", "removed"}
    assert all(r >= 1500 for c in result.changes for r in c.records)
    check_attribution(result, a, b, read_deps(FACE_DEPS))


def test_a_bounded_search_keeps_a_causing_set_and_says_it_may_not_be_minimal():
    a = SsdArrays(face_boxes(), face_scores(STORY_FACES))
    scores = face_scores(STORY_FACES)
    scores[1500:] = 0xcc
    b = SsdArrays(face_boxes(), scores)
    result = ssd_impact(a, b, face_model(), max_decodes=12)
    assert result.exhausted and result.decodes <= 12
    assert result.judgement.has("search_bounded")
    deps = read_deps(FACE_DEPS)
    rows_a = list(result.detections_a)
    for change in result.changes:  # minimal or not, every set given still causes its change
        assert shows(change, kernel_rows(deps, *substituted(a, b, change.records)), rows_a)
    # nothing unverified is called harmless: the causing and joint records alone give B's detections
    causing = sorted({r for c in result.changes for r in c.records} | set(result.joint))
    assert kernel_rows(deps, *substituted(a, b, causing)) == kernel_rows(deps, b.boxes, b.scores)


def test_identical_sides_differ_nowhere():
    a = SsdArrays(face_boxes(), face_scores(STORY_FACES))
    result = ssd_impact(a, SsdArrays(a.boxes.copy(), a.scores.copy()), face_model())
    assert result.differing == () and result.harmless == () and result.changes == ()
    assert result.judgement.verdict is Verdict.MATCH and result.judgement.has("no_record_differs")
    assert result.to_dict()["harmless"] == []


def test_a_float32_side_against_a_uint8_side():
    """A dequantized stage (what the kernel received) against a tensor stage: compared as the kernel's floats."""
    deps = read_deps(FACE_DEPS)
    a = SsdArrays(face_boxes(), face_scores(STORY_FACES))
    bq, sq = deps.boxes.quant, deps.scores.quant
    b_scores = face_scores(STORY_FACES)
    b_scores[700] = (0x20, 0xe0)
    b = SsdArrays(((face_boxes().astype(np.float64) - bq.zero_point) * bq.scale).astype(np.float32),
                  ((b_scores.astype(np.float64) - sq.zero_point) * sq.scale).astype(np.float32))
    result = ssd_impact(a, b, face_model())
    assert result.differing == (700,)
    assert [(c.kind, c.records) for c in result.changes] == [("added", (700,))]


def test_bad_inputs_are_one_input_error():
    a = SsdArrays(face_boxes(), face_scores())
    with pytest.raises(InputError, match="scores are"):
        ssd_impact(a, SsdArrays(face_boxes(), face_scores()[:100]), face_model())
    bad = face_scores().astype(np.int16)
    with pytest.raises(InputError, match="uint8 or float32"):
        ssd_impact(a, SsdArrays(face_boxes(), bad), face_model())
    nan = np.full((2034, 2), np.nan, np.float32)
    with pytest.raises(InputError, match="NaN"):
        ssd_impact(a, SsdArrays(face_boxes(), nan), face_model())
    with pytest.raises(InputError, match="max_decodes"):
        ssd_impact(a, a, face_model(), max_decodes=0)


# --- ddmin ---------------------------------------------------------------------------------------------------

def test_ddmin_finds_a_set_no_single_removal_of_which_still_passes():
    rng = np.random.default_rng(5)
    for _ in range(40):
        items = list(range(int(rng.integers(4, 24))))
        needed = set(rng.choice(items, int(rng.integers(1, 4)), replace=False).tolist())
        # either of two needed sets: non-monotone enough to need the complements
        other = set(rng.choice(items, 2, replace=False).tolist())
        calls = []

        def test(subset):
            calls.append(1)
            s = set(subset)
            return needed <= s or other <= s

        found, minimal = ddmin(items, test)
        assert minimal and test(found)
        assert all(not test([x for x in found if x != drop]) for drop in found)


def test_ddmin_stops_when_the_test_has_no_decodes_left():
    count = []

    def test(subset):
        count.append(1)
        return None if len(count) > 3 else 7 in subset

    found, minimal = ddmin(list(range(64)), test)
    assert not minimal and 7 in found and len(count) == 4


# --- the substituted decodes against the kernel and LiteRT ----------------------------------------------------

def _coco_pair(rng, deps):
    zp = deps.boxes.quant.zero_point
    boxes, scores, strongest = coco_outputs(rng, deps.num_anchors, zero_point=zp)
    b_boxes, b_scores = boxes.copy(), scores.copy()
    differing = rng.choice(deps.num_anchors, 50, replace=False)
    b_scores[differing, rng.integers(1, 91, 50)] = rng.integers(0, 256, 50).astype(np.uint8)
    b_boxes[differing[:25]] += rng.integers(0, 3, (25, 4)).astype(np.uint8)
    return SsdArrays(boxes, scores), SsdArrays(b_boxes, b_scores), differing, strongest


@pytest.mark.parametrize("name", SSD_SEGMENTS + [HEAD_LAYERS])
def test_substituted_decodes_equal_the_kernel_on_the_whole_arrays(shared_data, name):
    from forensics.decode.model_deps import deps_from_model

    deps, _, _ = deps_from_model(shared_data / name)
    rng = np.random.default_rng(11)
    for rounding in ("reference", "litert"):
        a, b, differing, _ = _coco_pair(rng, deps)
        sub = Substitution(a, b, SsdModel(deps, rounding=rounding))
        assert sub.decoder == "incremental"
        for _ in range(40):
            records = rng.choice(differing, int(rng.integers(0, 51)), replace=False)
            ours = [(d.row, d.anchor, d.class_id, d.score, d.box) for d in sub(records)]
            assert ours == kernel_rows(deps, *substituted(a, b, records), rounding)


@pytest.mark.parametrize("name", SSD_SEGMENTS)
def test_substituted_decodes_equal_the_official_kernel_in_litert(shared_data, name):
    pytest.importorskip("ai_edge_litert")
    from forensics.decode.model_deps import deps_from_model
    from tests.decode.decode_kernel import run

    deps, _, tail = deps_from_model(shared_data / name)
    rng = np.random.default_rng(3)
    a, b, differing, _ = _coco_pair(rng, deps)
    sub = Substitution(a, b, SsdModel(deps, rounding="litert"))  # LiteRT's x86 DEQUANTIZE: bit-exact
    for _ in range(6):
        records = rng.choice(differing, int(rng.integers(1, 51)), replace=False)
        boxes, scores = substituted(a, b, records)
        outs, _ = run(tail, {deps.boxes.name: boxes[None], deps.scores.name: scores[None]})
        lite_boxes, lite_classes, lite_scores, num = (np.asarray(o).reshape(-1, *o.shape[2:]) for o in outs[:4])
        ours = sub(records)
        assert int(num.reshape(-1)[0]) == len(ours)
        for det in ours:
            assert lite_classes.reshape(-1)[det.row] == det.class_id
            assert lite_scores.reshape(-1)[det.row] == np.float32(det.score)
            np.testing.assert_array_equal(lite_boxes.reshape(-1, 4)[det.row], np.float32(det.box))


@pytest.mark.parametrize("name", SSD_SEGMENTS)
def test_coco_records_that_do_and_do_not_change_detections(shared_data, name):
    from forensics.decode.model_deps import deps_from_model

    deps, _, _ = deps_from_model(shared_data / name)
    rng = np.random.default_rng(8)
    boxes, scores, strongest = coco_outputs(rng, deps.num_anchors, zero_point=deps.boxes.quant.zero_point)
    a = SsdArrays(boxes, scores)
    b_scores = scores.copy()
    anchor, cls = next(iter(strongest.items()))
    other = cls % 90 + 1
    b_scores[anchor, cls], b_scores[anchor, other] = 150, 240    # the object's best class becomes another
    quiet = next(k for k in range(deps.num_anchors) if all(abs(k - s) > 8 for s in strongest))
    noise_class = int(np.argmin(scores[quiet, 1:])) + 1
    b_scores[quiet, noise_class] += 1                             # a background anchor's class nudged by 1 LSB
    raised = next(k for k in range(deps.num_anchors - 1, 0, -1) if all(abs(k - s) > 8 for s in strongest)
                  and k != quiet)
    b_scores[raised, 1] = 250                                     # an object appears (class 1, person)
    b = SsdArrays(boxes, b_scores)
    result = ssd_impact(a, b, SsdModel(deps))
    assert result.differing == tuple(sorted((anchor, quiet, raised)))
    assert quiet in result.harmless
    kinds = {(c.kind, (c.a or c.b)["anchor"]): c.records for c in result.changes}
    assert kinds[("relabelled", anchor)] == (anchor,)
    assert kinds[("added", raised)] == (raised,)
    check_attribution(result, a, b, deps)


# --- classifiers -------------------------------------------------------------------------------------------

def _classifier(shared_data):
    from forensics.model.classes import class_vector_of, read_scores
    from forensics.model.tflite.model import open_model

    with open_model(shared_data / CLASSIFIER) as model:
        vector = class_vector_of(model)
    rng = np.random.default_rng(2)
    q = rng.integers(0, 3, vector.num_classes).astype(np.uint8)
    for c, byte in ((281, 180), (282, 120), (285, 90), (287, 60), (292, 40), (3, 20)):
        q[c] = byte
    return vector, q, (lambda data: read_scores(data.tobytes(), vector))


def test_classifier_top_k_changes_and_their_causes(shared_data):
    vector, q, scores = _classifier(shared_data)
    b = q.copy()
    b[7] = 100       # enters the top-5 at rank 3: 285, 287 move down, 292 drops out
    b[500] += 1      # a low class nudged by 1 LSB: harmless
    b[282] = 121     # rescored at the same rank
    result = classifier_impact(scores(q), scores(b), ClassifierModel(vector, k=5))
    changes = {(c.kind, c.detection["class"]): c.records for c in result.changes}
    assert changes == {("added", 7): (7,), ("removed", 292): (7,), ("moved", 285): (7,), ("moved", 287): (7,),
                       ("rescored", 282): (282,)}
    assert result.harmless == (500,) and result.inert == 1
    assert result.judgement.verdict is Verdict.DIFFER


def test_classifier_relabelled_top_1_and_a_pair_that_changes_nothing(shared_data):
    vector, q, scores = _classifier(shared_data)
    b = q.copy()
    b[281], b[282] = 110, 130   # 282 becomes the top-1
    result = classifier_impact(scores(q), scores(b), ClassifierModel(vector, k=3))
    relabelled = [c for c in result.changes if c.kind == "relabelled"]
    assert len(relabelled) == 1 and relabelled[0].a["class"] == 281 and relabelled[0].b["class"] == 282
    assert set(relabelled[0].records) <= {281, 282} and relabelled[0].records
    calm = q.copy()
    calm[[5, 6, 900]] += 1
    nothing = classifier_impact(scores(q), scores(calm), ClassifierModel(vector, k=5))
    assert nothing.changes == () and nothing.harmless == (5, 6, 900)
    assert nothing.judgement.exit_code == 0
