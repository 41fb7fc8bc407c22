"""Batch aggregates: the detection evaluator against a hand-computed case and against faster-coco-eval (COCO's
own algorithm), verdict shares and per-anchor counts against a numpy oracle over a farm, the JSON form, the HTML
summary linking each differing pair's report, and memory that does not grow with the number of pairs."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from forensics.runs.aggregate import Aggregator, average_precision, evaluate_image
from forensics.runs.batch import batch_compare
from forensics.runs.ingest import ingest
from forensics.runs.run import load_run
from tests.runs.runs_support import detections_run


def _det(cls, score, box):
    return {"class": cls, "score": score, "box": list(box)}


def test_map_hand_computed():
    # class 0: two truths; B finds one exactly (IoU 1), one with IoU 0.625 (5/8) and one nowhere near.
    # class 1: one truth, B finds nothing.
    truth = [_det(0, 1.0, (0, 0, 0.1, 0.1)), _det(0, 1.0, (0.5, 0, 1.5, 1)), _det(1, 1.0, (0.2, 0.2, 0.3, 0.3))]
    found = [_det(0, 0.9, (0, 0, 0.1, 0.1)), _det(0, 0.8, (0.5, 0, 1.125, 1)), _det(0, 0.7, (0.8, 0.8, 0.9, 0.9))]
    agg = Aggregator()
    agg.add({"stages": [], "anchors": {}, "deltas": {}, "detections": evaluate_image(truth, found)})
    det = agg.result().detections
    # IoU thresholds .5 .55 .6: TP TP FP -> precision 1 up to recall 1: AP 1.
    # .65 ... .95 (7 thresholds): TP FP FP -> precision 1 up to recall 0.5 (51 of 101 recall points): AP 51/101.
    ap0 = (3 * 1.0 + 7 * 51 / 101) / 10
    assert det["map"] == pytest.approx((ap0 + 0.0) / 2)
    by_class = {c["class"]: c for c in det["per_class"]}
    assert by_class[0]["ap"] == pytest.approx(ap0) and by_class[1]["ap"] == 0.0
    assert (by_class[0]["tp"], by_class[0]["fp"], by_class[0]["fn"]) == (2, 1, 0)
    assert (by_class[1]["tp"], by_class[1]["fp"], by_class[1]["fn"]) == (0, 0, 1)
    # pooled at IoU 0.5: TP 2, FP 1, FN 1
    assert det["precision"] == pytest.approx(2 / 3) and det["recall"] == pytest.approx(2 / 3)
    assert det["f1"] == pytest.approx(2 / 3)


def test_average_precision_without_truth_is_left_out():
    assert average_precision({0.5: np.array([1] + [0] * 10)}, 0) == [-1.0] * 10


def _random_images(seed, n=25):
    rng = np.random.default_rng(seed)
    images, scores = [], rng.permutation(np.arange(1, 4000))[:n * 12] / 4000.0  # distinct scores
    k = 0
    for _ in range(n):
        truth, found = [], []
        for _ in range(int(rng.integers(0, 6))):
            y, x = rng.uniform(0, 0.7, 2)
            h, w = rng.uniform(0.05, 0.3, 2)
            cls = int(rng.integers(0, 3))
            truth.append(_det(cls, 1.0, (y, x, y + h, x + w)))
            if rng.uniform() < 0.8:  # B finds it, jittered, sometimes with another class
                j = rng.normal(0, 0.1, 4) * (h, w, h, w)  # jitter a tenth of the size: corners stay ordered
                found.append(_det(cls if rng.uniform() < 0.9 else (cls + 1) % 3, scores[k],
                                  (y + j[0], x + j[1], y + h + j[2], x + w + j[3])))
                k += 1
        for _ in range(int(rng.integers(0, 3))):  # and some that A does not have
            y, x = rng.uniform(0, 0.8, 2)
            found.append(_det(int(rng.integers(0, 3)), scores[k], (y, x, y + 0.1, x + 0.1)))
            k += 1
        images.append((truth, found))
    return images


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_map_agrees_with_faster_coco_eval(seed):
    coco = pytest.importorskip("faster_coco_eval")
    images = _random_images(seed)
    agg = Aggregator()
    for truth, found in images:
        agg.add({"stages": [], "anchors": {}, "deltas": {}, "detections": evaluate_image(truth, found)})
    ours = agg.result().detections

    def xywh(box):  # (ymin, xmin, ymax, xmax) normalised -> COCO pixels
        y0, x0, y1, x1 = (v * 100 for v in box)
        return [x0, y0, x1 - x0, y1 - y0]

    gt_anns, dt_anns = [], []
    for i, (truth, found) in enumerate(images, start=1):
        for d in truth:
            b = xywh(d["box"])
            gt_anns.append({"id": len(gt_anns) + 1, "image_id": i, "category_id": d["class"] + 1, "bbox": b,
                            "area": b[2] * b[3], "iscrowd": 0})
        for d in found:
            dt_anns.append({"image_id": i, "category_id": d["class"] + 1, "bbox": xywh(d["box"]),
                            "score": d["score"]})
    gt = coco.COCO()
    gt.dataset = {"images": [{"id": i, "width": 100, "height": 100} for i in range(1, len(images) + 1)],
                  "annotations": gt_anns, "categories": [{"id": c} for c in (1, 2, 3)]}
    gt.createIndex()
    ev = coco.COCOeval_faster(gt, gt.loadRes(dt_anns), "bbox", print_function=lambda *a, **k: None)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    assert ours["map"] == pytest.approx(ev.stats[0], abs=1e-9)
    assert ours["map50"] == pytest.approx(ev.stats[1], abs=1e-9)


# --- over a farm ---------------------------------------------------------------------------------------------

def _farm(tmp_path, n=6):
    """pair-i: input + raw convert_scores from the story dumps (pair-1 and pair-4 broken) + detections."""
    farm = tmp_path / "farm"
    farm.mkdir()
    box = (0.2, 0.3, 0.6, 0.7)
    for i in range(n):
        pair = farm / f"pair-{i}"
        pair.mkdir()
        src = "broken" if i in (1, 4) else "ours"
        ingest(pair / "a_libedgetpu", "libedgetpu", ["input=dumps/libedgetpu/input.bin",
                                                      "raw:convert_scores=dumps/libedgetpu/convert_scores.bin"])
        ingest(pair / "b_ours", "ours", [f"input=dumps/{src}/input.bin",
                                         f"raw:convert_scores=dumps/{src}/convert_scores.bin"])
        detections_run(pair / "da", "da", [(0, 0.9, box)])
        # pair-4's B misses the face and sees something else
        detections_run(pair / "db", "db", [(0, 0.8, (0.7, 0.7, 0.9, 0.9))] if i == 4 else [(0, 0.9, box)])
    return farm


def _stage_dirs(farm):
    """Move the detection runs into the pair's A and B runs' place: A = a_* + da, B = b_* + db (merge)."""
    from forensics.runs.run import write_run

    for pair in sorted(os.listdir(farm)):
        for run, extra in (("a_libedgetpu", "da"), ("b_ours", "db")):
            base, det = load_run(farm / pair / run), load_run(farm / pair / extra)
            with write_run(farm / pair / run, base.source, add=True) as b:
                for e in det.buffers:
                    b.add_file(e.stage, e.tensor, det.file_path(e), dtype=e.dtype, shape=e.shape, role=e.role)
            import shutil

            shutil.rmtree(farm / pair / extra)


def _differing_anchors(pair):
    a = np.fromfile(pair / "a_libedgetpu" / "raw" / "convert_scores.bin", np.uint8).reshape(-1, 4)
    b = np.fromfile(pair / "b_ours" / "raw" / "convert_scores.bin", np.uint8).reshape(-1, 4)
    return set(np.flatnonzero(np.any(a != b, axis=1)).tolist())


@pytest.fixture
def farm(tmp_path):
    farm = _farm(tmp_path)
    _stage_dirs(farm)
    return farm


def test_aggregates_against_a_numpy_oracle(farm):
    agg = batch_compare(farm, workers=2).aggregates
    stages = {(s["stage"], s["tensor"]): s for s in agg.stages}
    assert stages[("input", "input")]["differ"] == 2 and stages[("input", "input")]["match"] == 4
    assert stages[("raw", "convert_scores")]["share_differ"] == pytest.approx(2 / 6)
    oracle = {}
    for pair in sorted(os.listdir(farm)):
        for anchor in _differing_anchors(farm / pair):
            oracle[anchor] = oracle.get(anchor, 0) + 1
    assert oracle  # the broken dumps do differ in convert_scores
    top = max(oracle.values())
    assert agg.anchors[0]["pairs_differing"] == top
    for row in agg.anchors:
        assert row["pairs_differing"] == oracle[row["anchor"]] and row["pairs_compared"] == 6
    counts = agg.anchor_counts["raw:convert_scores"][2]
    assert {int(i): int(counts[i]) for i in np.flatnonzero(counts)} == oracle
    det = agg.detections
    # five pairs agree; pair-4's B has one FP and misses one truth
    assert (det["tp"], det["fp"], det["fn"]) == (5, 1, 1)
    assert det["precision"] == pytest.approx(5 / 6) and det["recall"] == pytest.approx(5 / 6)


def test_batch_json_has_aggregates_scheduler_and_html_links(farm, tmp_path, cli):
    html = tmp_path / "summary.html"
    result = cli("compare", "--batch", farm, "-o", tmp_path / "s.csv", "--html", html, "--json")
    assert result.code == 1, result.err
    doc = json.loads(result.out)
    assert doc["scheduler"] == "local" and doc["retried"] == 0
    assert set(doc["aggregates"]) >= {"stages", "anchors", "detections"}
    assert set(doc["aggregates"]["detections"]) >= {"precision", "recall", "f1", "map", "per_class"}
    assert doc["pairs"] == 6 and len(doc["rows"]) == 6
    page = html.read_text(encoding="utf-8")
    for pair in ("pair-1", "pair-4"):
        report = tmp_path / "summary_pairs" / f"{pair}.html"
        assert report.is_file() and f'href="summary_pairs/{pair}.html"' in page
        assert "first divergent stage" in report.read_text(encoding="utf-8")
    assert not (tmp_path / "summary_pairs" / "pair-0.html").exists()
    text = cli("compare", "--batch", farm, "-o", tmp_path / "s.csv").out
    assert "anchors that differ most often" in text and "mAP@[.5:.95]" in text


def test_aggregator_memory_does_not_grow_with_pairs(farm):
    from forensics.runs.aggregate import pair_stats
    from forensics.runs.compare import compare_runs

    pair = farm / "pair-4"
    stats = pair_stats(compare_runs(pair / "a_libedgetpu", pair / "b_ours", diagnose=False))

    def state(n):
        agg = Aggregator()
        for _ in range(n):
            agg.add(stats)
        sizes = (len(agg.stage_counts), {k: v[2].nbytes for k, v in agg.anchor_counts.items()},
                 {k: v.nbytes for k, v in agg.deltas.items()}, {c: len(t) for c, t in agg.found.items()})
        return sizes, agg.result()

    small, r10 = state(10)
    large, r1000 = state(1000)
    assert small == large
    assert r1000.anchors[0]["pairs_differing"] == 1000 and r10.anchors[0]["pairs_differing"] == 10


def test_worst_anchors_have_their_place_and_a_heatmap(farm, tmp_path, cli):
    pytest.importorskip("PIL")
    from forensics.decode.geometry import geometry_for

    geometry = geometry_for(deps="dumps/face_ssd")
    html = tmp_path / "summary.html"
    result = cli("compare", "--batch", farm, "-o", tmp_path / "s.csv", "--deps", "dumps/face_ssd", "--html", html,
                 "--json")
    doc = json.loads(result.out)
    anchors = doc["aggregates"]["anchors"]
    assert anchors and all(a["where"] == geometry.where(a["anchor"]) for a in anchors)
    assert anchors[0]["where"].startswith("L")
    page = html.read_text(encoding="utf-8")
    assert page.count('src="data:image/png;base64,') == 1 and "raw:convert_scores: pairs in which an anchor of the cell differs" in page


def test_delta_histograms_hand_computed(tmp_path):
    from forensics.runs.run import write_run

    farm = tmp_path / "farm"
    base = np.full((1, 4, 4), 100, np.uint8)
    changed = base.copy()
    changed[0, 1, 2] += 2
    changed[0, 3, 0] -= 1
    for i, b_boxes in enumerate((changed, base)):
        (farm / f"pair-{i}").mkdir(parents=True)
        for name, boxes in (("a", base), ("b", b_boxes)):
            with write_run(farm / f"pair-{i}" / name, name) as b:
                b.add_bytes("tensor", "Squeeze1", boxes, dtype="uint8", shape=(1, 4, 4), scale=0.1, zero_point=128,
                            role="boxes")
    agg = batch_compare(farm, workers=1).aggregates
    boxes = agg.deltas["boxes"]
    assert boxes["histogram"] == [[-1, 1], [0, 30], [2, 1]]
    assert (boxes["elements"], boxes["differing"], boxes["max_abs"], boxes["p99_abs"]) == (32, 2, 2, 2)
    assert "scores" not in agg.deltas
    rows = {(a["anchor"]) for a in agg.anchors}
    assert rows == {1, 3}
