"""Aggregates over a batch of compared run pairs, streamed: per (stage, tensor) the share of pairs that match /
are within tolerance / differ, how often each anchor differs over the dataset, the distribution of the score
and box deltas (LSB), and how well B's detections agree with A's taken as ground truth (precision, recall and
F1 at IoU 0.5 per class and pooled; COCO-style mAP@[.5:.95]).

Each pair is reduced in its worker to a small `pair_stats` dict; the `Aggregator` folds those in, in any order,
into fixed-size tables (one counter per anchor, one histogram bin per LSB, one row per distinct detection
score and class), so its memory does not grow with the number of pairs.

The detection evaluation is COCO's `evaluateImg` / `accumulate` (area "all", maxDets 100), detection for
detection: per image and class, B's detections in descending score order (a stable sort over B's stored order)
are matched greedily to the unmatched A detection of highest IoU >= t; over the batch, every class's detections
are ordered by descending score with ties in image order (pairs are images, in pair-name order, the order the
batch adds them in) and then in each image's own order, as COCOeval's stable sort over its image-ordered list
does; precision (tp / (tp + fp + eps)) is made monotone from the right and read at the 101 recall points
0, 0.01, ..., 1; a class without A detections is left out. Uint8 scores make ties the normal case, so the order
within a tie matters: the aggregator keeps, per class and distinct score, each detection's match bits (two
bytes a detection) in arrival order. That is the one table that grows with the batch.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.verdict import STAGE_VERDICTS, Verdict, stage_verdict

IOU_THRESHOLDS = tuple(round(0.5 + 0.05 * i, 2) for i in range(10))
RECALL_POINTS = np.linspace(0.0, 1.0, 101)
MAX_DETECTIONS = 100
DELTA_ROLES = ("scores", "boxes")
WORST_ANCHORS = 20


# --- per pair (runs in the worker) ---------------------------------------------------------------------------

def _box_iou(a, b) -> np.ndarray:
    """[len(a), len(b)] IoU of (ymin, xmin, ymax, xmax) boxes (corners in either order)."""
    a, b = np.asarray(a, np.float64).reshape(-1, 4), np.asarray(b, np.float64).reshape(-1, 4)
    ay0, ay1 = np.minimum(a[:, 0], a[:, 2]), np.maximum(a[:, 0], a[:, 2])
    ax0, ax1 = np.minimum(a[:, 1], a[:, 3]), np.maximum(a[:, 1], a[:, 3])
    by0, by1 = np.minimum(b[:, 0], b[:, 2]), np.maximum(b[:, 0], b[:, 2])
    bx0, bx1 = np.minimum(b[:, 1], b[:, 3]), np.maximum(b[:, 1], b[:, 3])
    ih = np.clip(np.minimum(ay1[:, None], by1[None]) - np.maximum(ay0[:, None], by0[None]), 0, None)
    iw = np.clip(np.minimum(ax1[:, None], bx1[None]) - np.maximum(ax0[:, None], bx0[None]), 0, None)
    inter = ih * iw
    union = ((ay1 - ay0) * (ax1 - ax0))[:, None] + ((by1 - by0) * (bx1 - bx0))[None] - inter
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(union > 0, inter / np.where(union > 0, union, 1), 0.0)


_THRESHOLDS = np.minimum(np.array(IOU_THRESHOLDS), 1 - 1e-10)  # COCOeval: iou = min([t, 1 - 1e-10])


def _match_masks(ious: np.ndarray) -> list[int]:
    """COCO's greedy matching at every IoU threshold at once: detection i (rows, in score order) takes the
    untaken truth of highest IoU >= t, the last such truth on equal IoU (COCOeval's `if ious < iou: continue`
    walk); bit t of its mask says it was matched at IOU_THRESHOLDS[t]."""
    n_dt, n_gt = ious.shape
    masks = [0] * n_dt
    if not n_gt:
        return masks
    taken = np.zeros((len(_THRESHOLDS), n_gt), bool)
    rows = np.arange(len(_THRESHOLDS))
    weights = 1 << rows
    for i in range(n_dt):
        free = np.where(taken, -1.0, ious[i][None, :])        # [T, G]
        last = n_gt - 1 - np.argmax(free[:, ::-1], axis=1)     # the last index of each row's maximum
        hit = free[rows, last] >= _THRESHOLDS
        if hit.any():
            taken[rows[hit], last[hit]] = True
            masks[i] = int(weights[hit].sum())
    return masks


def evaluate_image(truth: list[dict], found: list[dict], *, max_detections: int = MAX_DETECTIONS) -> dict:
    """One image's detections `found` (B) against `truth` (A), per class as COCO's evaluateImg does.

    Returns {class: {"truth": n, "found": [(score, tp_mask), ...]}} in descending score order (stable), where
    bit i of tp_mask says the detection is a true positive at IOU_THRESHOLDS[i]. Classes are matched in one
    pass: a truth of another class is never a candidate (its IoU is taken as -1), so each class's matching is
    COCO's alone.
    """
    if not truth and not found:
        return {}
    t_cls = np.fromiter((d["class"] for d in truth), np.int64, len(truth))
    f_cls = np.fromiter((d["class"] for d in found), np.int64, len(found))
    f_score = np.fromiter((d["score"] for d in found), np.float64, len(found))
    # B's detections by class, each class in descending score order (stable), at most max_detections each
    order = np.lexsort((-f_score, f_cls))
    sorted_cls = f_cls[order]
    rank = np.arange(len(order)) - np.searchsorted(sorted_cls, sorted_cls, side="left")
    order = order[rank < max_detections]
    masks = [0] * len(order)
    if len(order) and len(truth):
        ious = _box_iou([found[i]["box"] for i in order], [d["box"] for d in truth])
        ious[f_cls[order][:, None] != t_cls[None, :]] = -1.0
        masks = _match_masks(ious)
    out = {}
    truths = dict(zip(*np.unique(t_cls, return_counts=True))) if len(truth) else {}
    for cls in sorted(set(truths) | set(f_cls.tolist())):
        out[int(cls)] = {"truth": int(truths.get(cls, 0)), "found": []}
    scores = f_score[order].tolist()
    for k, i in enumerate(order.tolist()):
        out[int(f_cls[i])]["found"].append((scores[k], masks[k]))
    return out


_SCAN_BLOCK = 4 << 20


def _scan(dump_a, dump_b, size: int, record_size: int, lanes: list, *, anchors: bool, deltas: bool):
    """(indices of the records that differ in a data lane or None, counts of B - A + 255 or None) over the
    first `size` bytes of two dumps, read in record-aligned windows: memory stays bounded whatever their size.
    InputError when a file is shorter than `size` (it changed since its CRC was taken)."""
    from forensics.io.dump import DumpReader

    n = size // record_size
    step = max(record_size, _SCAN_BLOCK // record_size * record_size)
    differing = [] if anchors else None
    counts = np.zeros(511, np.int64) if deltas else None
    is_data = np.zeros(record_size, bool)
    is_data[lanes] = True
    reader_a, reader_b = DumpReader(dump_a, use_map=False), DumpReader(dump_b, use_map=False)
    try:
        for lo in range(0, size, step):
            hi = min(lo + step, size)
            window_a, window_b = reader_a.window(lo, hi), reader_b.window(lo, hi)
            a, b = np.frombuffer(window_a.view, np.uint8), np.frombuffer(window_b.view, np.uint8)
            differ = np.flatnonzero(a != b)  # sparse in a pair that differs in a few anchors: work on those only
            if anchors and differ.size:
                inside = differ[differ < (n * record_size - lo)]
                on_data = is_data[inside % record_size]
                differing.extend((np.unique(inside[on_data] // record_size) + lo // record_size).tolist())
            if deltas:
                counts[255] += a.size - differ.size
                if differ.size:
                    counts += np.bincount(b[differ].astype(np.int16) - a[differ].astype(np.int16) + 255,
                                          minlength=511)
            del a, b
            window_a.release()
            window_b.release()
    finally:
        reader_a.close()
        reader_b.close()
    return differing, counts


def pair_stats(result) -> dict:
    """The compact statistics of one compared pair (a forensics.runs.compare.CompareResult) for the Aggregator:
    small and picklable, so a worker can send it back cheaply."""
    stages, anchors, deltas = [], {}, {}
    run_a, run_b = result.run_a, result.run_b
    for row in result.rows:
        verdict = stage_verdict(row.status)
        stages.append((row.stage, row.tensor, verdict))
        if verdict is None or row.size_a is None or row.size_a != row.size_b or not row.size_a:
            continue
        _fold_row(row, verdict, run_a, run_b, anchors, deltas)
    return {"stages": stages, "anchors": anchors, "deltas": deltas, "detections": _pair_detections(result)}


def _fold_row(row, verdict, run_a, run_b, anchors: dict, deltas: dict) -> None:
    """One judged row of equal, nonzero sizes into `anchors` (label -> (stage, tensor, records, differing
    records)) and `deltas` (role -> {B - A: bytes}): a matching buffer counts whole without reading it; a
    differing one is scanned, when anchors or deltas want it."""
    from forensics.runs.compare import buffer_layout, record_count

    entry = next(b for b in run_a.buffers if b.key == (row.stage, row.tensor))
    layout, unit = buffer_layout(entry, row.size_a)
    role = entry.role if row.stage == "tensor" and (entry.dtype or "uint8") == "uint8" else None
    wants_anchors = unit == "anchors" and layout.record_size > 1
    if verdict == Verdict.MATCH:
        if wants_anchors:
            anchors[row.label] = (row.stage, row.tensor, record_count(entry, row.size_a, layout), ())
        if role in DELTA_ROLES:
            deltas.setdefault(role, {})
            deltas[role][0] = deltas[role].get(0, 0) + row.size_a
        return
    _fold_scanned(row, entry, layout, role, wants_anchors, run_a, run_b, anchors, deltas)


def _fold_scanned(row, entry, layout, role, wants_anchors: bool, run_a, run_b, anchors: dict, deltas: dict) -> None:
    """A differing row's anchors and deltas, from both buffers scanned (_scan); a buffer missing from B, or
    wanted by neither, is left out, and so is one that changed or went since its CRC was taken."""
    from forensics.runs.compare import record_count

    if not (wants_anchors or role in DELTA_ROLES) or row.status == Verdict.MISSING:
        return
    entry_b = next(b for b in run_b.buffers if b.key == (row.stage, row.tensor))
    try:
        differing, counts = _scan(run_a.open_buffer(entry), run_b.open_buffer(entry_b), row.size_a,
                                  layout.record_size, list(layout.data_lanes), anchors=wants_anchors,
                                  deltas=role in DELTA_ROLES)
    except (OSError, InputError):  # a file that changed or went since its CRC: its statistics are left out
        return
    if wants_anchors:
        n = record_count(entry, row.size_a, layout)
        anchors[row.label] = (row.stage, row.tensor, n, tuple(d for d in differing if d < n))
    if role in DELTA_ROLES:
        hist = deltas.setdefault(role, {})
        for i in np.flatnonzero(counts):
            hist[int(i) - 255] = hist.get(int(i) - 255, 0) + int(counts[i])


def _pair_detections(result):
    """The pair's detections evaluated against A's as ground truth (evaluate_image), when both runs' detection
    rows could be read (compare_detections); else None."""
    if result.detections is None:
        return None

    def rows(dets):
        return [d.to_dict() if hasattr(d, "to_dict") else d for d in dets]

    return evaluate_image(rows(result.detections.rows_a), rows(result.detections.rows_b))


# --- over the batch (runs where the results arrive) ----------------------------------------------------------

def _ratio(num: float, den: float) -> float | None:
    return float(num / den) if den else None


def _f1(p: float | None, r: float | None) -> float | None:
    if p is None or r is None:
        return None
    return float(2 * p * r / (p + r)) if p + r else 0.0


def average_precision(table: dict, truth: int) -> list[float]:
    """COCO's AP at each IoU threshold from {score: match masks in order} (bit t of a mask: a true positive at
    IOU_THRESHOLDS[t]), walked as COCOeval's accumulate walks its stably sorted detections; -1 for every
    threshold when there is no ground truth."""
    if not truth:
        return [-1.0] * len(IOU_THRESHOLDS)
    if not table:
        return [0.0] * len(IOU_THRESHOLDS)
    masks = np.concatenate([np.frombuffer(table[s], np.uint16) for s in sorted(table, reverse=True)])
    fp_eps = np.spacing(1)  # COCOeval: pr = tp / (fp + tp + np.spacing(1))
    out = []
    for ti in range(len(IOU_THRESHOLDS)):
        hit = (masks >> ti) & 1
        tp = np.cumsum(hit, dtype=np.float64)
        fp = np.cumsum(1 - hit, dtype=np.float64)
        recall = tp / truth
        precision = np.maximum.accumulate((tp / (fp + tp + fp_eps))[::-1])[::-1]
        idx = np.searchsorted(recall, RECALL_POINTS, side="left")
        q = np.where(idx < len(precision), precision[np.minimum(idx, len(precision) - 1)], 0.0)
        out.append(float(q.mean()))
    return out


@dataclass(frozen=True)
class BatchAggregates(serial.Serial):
    """What `compare --batch --json` prints under `aggregates` (plus `pairs` counted)."""

    pairs: int
    stages: tuple[dict, ...]
    anchors: tuple[dict, ...]
    deltas: dict
    detections: dict | None
    # label -> (stage, tensor, counts): for the pictures, not in the document
    anchor_counts: dict = field(default_factory=dict, repr=False, compare=False, metadata=serial.json(skip=True))


class Aggregator:
    """Folds `pair_stats` dicts in; `result()` gives the BatchAggregates. The order matters only among
    detections of equal score, which COCO takes in image order: add the pairs in pair-name order (the batch
    does, whatever the scheduler)."""

    def __init__(self, *, geometry=None, worst: int = WORST_ANCHORS):
        self.geometry = geometry
        self.worst = worst
        self.pairs = 0
        self.stage_counts: dict[tuple[str, str], dict[str, int]] = {}
        self.anchor_counts: dict[str, list] = {}  # label -> [stage, tensor, counts array, pairs compared]
        self.deltas: dict[str, np.ndarray] = {}
        self.truth: dict[int, int] = {}
        self.found: dict[int, dict[float, array]] = {}  # class -> score -> masks
        self.with_detections = 0

    def add(self, stats: dict | None) -> None:
        if stats is None:  # a pair that could not be compared
            return
        self.pairs += 1
        for stage, tensor, verdict in stats["stages"]:
            counts = self.stage_counts.setdefault((stage, tensor), {"compared": 0, "not_compared": 0,
                                                                   **{v: 0 for v in STAGE_VERDICTS}})
            if verdict is None:
                counts["not_compared"] += 1
            else:
                counts["compared"] += 1
                counts[verdict] += 1
        for label, (stage, tensor, n, differing) in stats["anchors"].items():
            slot = self.anchor_counts.get(label)
            if slot is None or len(slot[2]) != n:
                if slot is not None:  # another record count under the same name: keep the first seen
                    continue
                slot = self.anchor_counts[label] = [stage, tensor, np.zeros(n, np.int64), 0]
            slot[3] += 1
            if differing:
                slot[2][np.asarray(differing, dtype=np.int64)] += 1
        for role, hist in stats["deltas"].items():
            acc = self.deltas.setdefault(role, np.zeros(511, np.int64))
            for delta, count in hist.items():
                acc[delta + 255] += count
        if stats["detections"] is not None:
            self.with_detections += 1
            for cls, got in stats["detections"].items():
                self.truth[cls] = self.truth.get(cls, 0) + got["truth"]
                table = self.found.setdefault(cls, {})
                for score, mask in got["found"]:
                    masks = table.get(score)
                    if masks is None:
                        masks = table[score] = array("H")
                    masks.append(mask)

    def _stages(self) -> tuple[dict, ...]:
        from forensics.runs.run import STAGES

        order = {s: i for i, s in enumerate(STAGES)}
        out = []
        for (stage, tensor), c in sorted(self.stage_counts.items(), key=lambda kv: order.get(kv[0][0], 99)):
            n = c["compared"]
            out.append({"stage": stage, "tensor": tensor, "pairs_compared": n, "not_compared": c["not_compared"],
                        "match": c[Verdict.MATCH], "within_tolerance": c[Verdict.WITHIN], "differ": c[Verdict.DIFFER],
                        "share_match": _ratio(c[Verdict.MATCH], n),
                        "share_within_tolerance": _ratio(c[Verdict.WITHIN], n),
                        "share_differ": _ratio(c[Verdict.DIFFER], n)})
        return tuple(out)

    def _anchors(self) -> tuple[dict, ...]:
        rows = []
        for label, (stage, tensor, counts, compared) in self.anchor_counts.items():
            for i in np.flatnonzero(counts):
                rows.append((-int(counts[i]), label, int(i), stage, tensor, compared))
        rows.sort()
        out = []
        geometry = self.geometry
        for neg, label, anchor, stage, tensor, compared in rows[:self.worst]:
            where = None
            if geometry is not None and anchor < geometry.num_anchors and \
                    len(self.anchor_counts[label][2]) == geometry.num_anchors:
                where = geometry.where(anchor)
            out.append({"stage": stage, "tensor": tensor, "anchor": anchor, "pairs_differing": -neg,
                        "pairs_compared": compared, "share": _ratio(-neg, compared), "where": where})
        return tuple(out)

    def _deltas(self) -> dict:
        out = {}
        for role in DELTA_ROLES:
            hist = self.deltas.get(role)
            if hist is None:
                continue
            total = int(hist.sum())
            nz = np.flatnonzero(hist)
            abs_hist = np.bincount(np.abs(np.arange(511) - 255), weights=hist, minlength=256)
            cum = np.cumsum(abs_hist)
            p99 = int(np.searchsorted(cum, 0.99 * total)) if total else None
            out[role] = {"unit": "LSB", "elements": total, "differing": int(total - hist[255]),
                         "max_abs": int(np.abs(nz - 255).max()) if len(nz) else None, "p99_abs": p99,
                         "histogram": [[int(i) - 255, int(hist[i])] for i in nz]}
        return out

    def _detections(self) -> dict | None:
        if not self.with_detections:
            return None
        per_class, aps, tp_all, fp_all, fn_all = [], [], 0, 0, 0
        for cls in sorted(set(self.truth) | set(self.found)):
            table, truth = self.found.get(cls, {}), self.truth.get(cls, 0)
            found = sum(len(m) for m in table.values())
            tp = sum(int(np.count_nonzero(np.frombuffer(m, np.uint16) & 1)) for m in table.values())  # IoU 0.5
            fp, fn = found - tp, truth - tp
            tp_all, fp_all, fn_all = tp_all + tp, fp_all + fp, fn_all + fn
            ap = average_precision(table, truth)
            if truth:
                aps.append(ap)
            p, r = _ratio(tp, tp + fp), _ratio(tp, tp + fn)
            per_class.append({"class": cls, "truth": truth, "found": found, "tp": tp, "fp": fp, "fn": fn,
                              "precision": p, "recall": r, "f1": _f1(p, r),
                              "ap": float(np.mean(ap)) if truth else None, "ap50": ap[0] if truth else None})
        p, r = _ratio(tp_all, tp_all + fp_all), _ratio(tp_all, tp_all + fn_all)
        return {"pairs": self.with_detections, "iou": IOU_THRESHOLDS[0], "tp": tp_all, "fp": fp_all, "fn": fn_all,
                "precision": p, "recall": r, "f1": _f1(p, r),
                "map": float(np.mean(aps)) if aps else None,
                "map50": float(np.mean([a[0] for a in aps])) if aps else None, "per_class": per_class}

    def result(self) -> BatchAggregates:
        counts = {label: (s, t, c.copy()) for label, (s, t, c, _) in self.anchor_counts.items()}
        return BatchAggregates(self.pairs, self._stages(), self._anchors(), self._deltas(), self._detections(),
                               counts)
