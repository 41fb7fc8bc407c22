"""mAP with ties, as COCOeval computes it: Edge TPU scores are uint8 (k/256), so equal scores across images are
the normal case and their order decides the precision/recall curve. Our aggregates against faster-coco-eval on
the same detections, overall and per class, in memory and through a farm of runs compared by `compare --batch`
with both schedulers' orders."""

from __future__ import annotations

import numpy as np
import pytest

from forensics.runs.aggregate import Aggregator, evaluate_image
from forensics.runs.batch import batch_compare
from tests.runs.runs_support import detections_run

CLASSES = (0, 1, 2)


def _tied_images(seed, n=40, levels=6):
    """Images whose B detections take one of `levels` uint8 scores (many ties within and across images)."""
    rng = np.random.default_rng(seed)
    codes = rng.choice(np.arange(128, 256), size=levels, replace=False)
    images = []
    for _ in range(n):
        truth, found = [], []
        for _ in range(int(rng.integers(0, 5))):
            y, x = rng.uniform(0, 0.7, 2)
            h, w = rng.uniform(0.05, 0.3, 2)
            cls = int(rng.integers(0, 3))
            truth.append((cls, 1.0, (y, x, y + h, x + w)))
            if rng.uniform() < 0.85:  # B finds it, jittered; sometimes badly (an FP at high IoU thresholds)
                j = rng.normal(0, 0.12, 4) * (h, w, h, w)
                found.append((cls, float(rng.choice(codes)) / 256,
                              (y + j[0], x + j[1], y + h + j[2], x + w + j[3])))
        for _ in range(int(rng.integers(0, 3))):
            y, x = rng.uniform(0, 0.8, 2)
            found.append((int(rng.integers(0, 3)), float(rng.choice(codes)) / 256, (y, x, y + 0.1, x + 0.1)))
        images.append((truth, found))
    return images


def _as_dicts(rows):
    return [{"class": c, "score": s, "box": list(b)} for c, s, b in rows]


def _coco(images):
    """faster-coco-eval's COCOeval on the images (image ids in order): (stats, per-class AP)."""
    coco = pytest.importorskip("faster_coco_eval")

    def xywh(box):  # (ymin, xmin, ymax, xmax) normalised -> COCO pixels
        y0, x0, y1, x1 = (v * 100 for v in box)
        return [x0, y0, x1 - x0, y1 - y0]

    gt_anns, dt_anns = [], []
    for i, (truth, found) in enumerate(images, start=1):
        for c, _, box in truth:
            b = xywh(box)
            gt_anns.append({"id": len(gt_anns) + 1, "image_id": i, "category_id": c + 1, "bbox": b,
                            "area": b[2] * b[3], "iscrowd": 0})
        for c, s, box in found:
            dt_anns.append({"image_id": i, "category_id": c + 1, "bbox": xywh(box), "score": s})
    gt = coco.COCO()
    gt.dataset = {"images": [{"id": i, "width": 100, "height": 100} for i in range(1, len(images) + 1)],
                  "annotations": gt_anns, "categories": [{"id": c + 1} for c in CLASSES]}
    gt.createIndex()
    ev = coco.COCOeval_faster(gt, gt.loadRes(dt_anns), "bbox", print_function=lambda *a, **k: None)
    ev.evaluate()
    ev.accumulate()
    ev.summarize()
    precision = np.asarray(ev.eval["precision"])  # [T, R, K, A, M]: area "all" is 0, maxDets 100 is last
    per_class = {}
    for k, c in enumerate(CLASSES):
        p = precision[:, :, k, 0, -1]
        per_class[c] = float(p[p > -1].mean()) if (p > -1).any() else None
    return ev.stats, per_class


@pytest.mark.parametrize("seed", [11, 12, 13, 14])
def test_map_with_uint8_ties_equals_cocoeval(seed):
    images = _tied_images(seed)
    found = [s for _, f in images for _, s, _ in f]
    assert len(set(found)) < len(found) / 4  # ties are the normal case here
    agg = Aggregator()
    for truth, found in images:
        agg.add({"stages": [], "anchors": {}, "deltas": {},
                 "detections": evaluate_image(_as_dicts(truth), _as_dicts(found))})
    ours = agg.result().detections
    stats, per_class = _coco(images)
    assert ours["map"] == pytest.approx(stats[0], abs=1e-9)
    assert ours["map50"] == pytest.approx(stats[1], abs=1e-9)
    for row in ours["per_class"]:
        if per_class.get(row["class"]) is not None:
            assert row["ap"] == pytest.approx(per_class[row["class"]], abs=1e-9)


def test_grouping_ties_would_be_wrong_here():
    # The same detections in another image order give COCO another mAP: the order is part of the answer.
    images = _tied_images(21)
    assert _coco(images)[0][0] != pytest.approx(_coco(images[::-1])[0][0], abs=1e-9)


@pytest.mark.parametrize("workers", [1, 2])
def test_farm_with_ties_equals_cocoeval_whatever_the_workers(tmp_path, workers):
    images = _tied_images(31, n=24)
    farm = tmp_path / "farm"
    for i, (truth, found) in enumerate(images):
        pair = farm / f"pair-{i:03d}"
        pair.mkdir(parents=True)
        detections_run(pair / "a_reference", "reference", truth, max_rows=max(1, len(truth)))
        detections_run(pair / "b_candidate", "candidate", found, max_rows=max(1, len(found)))
    det = batch_compare(farm, workers=workers).aggregates.detections
    stats, per_class = _coco([(t, [(c, float(np.float32(s)), b) for c, s, b in f]) for t, f in images])
    assert det["map"] == pytest.approx(stats[0], abs=1e-9)
    for row in det["per_class"]:
        if per_class.get(row["class"]) is not None:
            assert row["ap"] == pytest.approx(per_class[row["class"]], abs=1e-9)
