"""Detections of two runs side by side: the rows TFLite_Detection_PostProcess wrote (only those below
num_detections: LiteRT leaves the rows past it uninitialised, so two captures of the same detections differ
there), matched one-to-one by the decode kernel's IoU, with score and box deltas."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core.errors import InputError

IOU_MATCH = 0.5
ROLES = ("boxes", "classes", "scores", "num_detections")  # the kernel's output order
ROW_VALUES = {"boxes": 4, "classes": 1, "scores": 1}      # float32 values per detection row


def _label(labels, class_id: int) -> str | None:
    return labels[class_id] if labels and 0 <= class_id < len(labels) and labels[class_id] else None


def _detection_of(doc: dict, row: str = "row", class_id: str = "class", score: str = "score", box: str = "box"):
    """A saved detection row (its document's keys named by the arguments) as the kernel's Detection: the outputs
    say no anchor (-1, as read_detections reads them)."""
    from forensics.decode.ssd import Detection

    return Detection(row=doc[row], anchor=-1, class_id=doc[class_id], score=doc[score], box=tuple(doc[box]))


def _saved_labels(docs) -> tuple[str, ...] | None:
    """The class names a saved comparison shows ({class id: label} from each row's labels), by class id ("" for a
    class it names none of): what the rows say again when written back."""
    named = {}
    for d in docs:
        for cls, label in ((d.get("class"), d.get("label")), (d.get("class_a"), d.get("label_a")),
                           (d.get("class_b"), d.get("label_b"))):
            if label and isinstance(cls, int) and cls >= 0:
                named[cls] = label
    if not named:
        return None
    return tuple(named.get(i, "") for i in range(max(named) + 1))


def detection_dict(d, labels=None) -> dict:
    """A detection output row as JSON: row, class (and its label), score, box."""
    out = {"row": d.row, "class": d.class_id, "score": d.score, "box": list(d.box)}
    if _label(labels, d.class_id):
        out["label"] = _label(labels, d.class_id)
    return out


@dataclass(frozen=True)
class DetectionPair:
    """Two detection rows matched by IoU: the same object as A and B saw it."""

    a: object  # forensics.decode.ssd.Detection
    b: object
    iou: float
    labels: tuple[str, ...] | None = field(default=None, repr=False, compare=False)

    row_a = property(lambda self: self.a.row)
    row_b = property(lambda self: self.b.row)
    class_a = property(lambda self: self.a.class_id)
    class_b = property(lambda self: self.b.class_id)
    score_a = property(lambda self: self.a.score)
    score_b = property(lambda self: self.b.score)
    box_a = property(lambda self: self.a.box)
    box_b = property(lambda self: self.b.box)
    label_a = property(lambda self: _label(self.labels, self.a.class_id))
    label_b = property(lambda self: _label(self.labels, self.b.class_id))

    @property
    def score_delta(self) -> float:
        return self.score_b - self.score_a

    @property
    def box_deltas(self) -> tuple[float, ...]:
        """B - A per coordinate (ymin, xmin, ymax, xmax)."""
        return tuple(float(y - x) for x, y in zip(self.box_a, self.box_b))

    @property
    def box_delta(self) -> float:
        return float(np.max(np.abs(self.box_deltas)))

    @property
    def same(self) -> bool:
        return self.class_a == self.class_b and self.score_a == self.score_b and self.box_a == self.box_b

    # kept: the two Detections are written as each one's row, class, score and box beside the other's
    def to_dict(self) -> dict:
        out = {"row_a": self.row_a, "row_b": self.row_b, "class_a": self.class_a, "class_b": self.class_b,
               "score_a": self.score_a, "score_b": self.score_b, "score_delta": self.score_delta, "iou": self.iou,
               "box_a": list(self.box_a), "box_b": list(self.box_b), "box_delta": self.box_delta,
               "box_deltas": list(self.box_deltas), "same": self.same}
        if self.label_a or self.label_b:
            out["label_a"], out["label_b"] = self.label_a, self.label_b
        return out

    @classmethod
    def from_dict(cls, doc: dict, labels: tuple[str, ...] | None = None) -> "DetectionPair":
        """A saved pair (its deltas and `same` follow from the two rows); `labels` the comparison's."""
        return cls(_detection_of(doc, "row_a", "class_a", "score_a", "box_a"),
                   _detection_of(doc, "row_b", "class_b", "score_b", "box_b"), doc["iou"], labels)


@dataclass(frozen=True)
class DetectionsComparison:
    pairs: tuple[DetectionPair, ...]
    only_a: tuple
    only_b: tuple
    num_a: int
    num_b: int
    iou_threshold: float = IOU_MATCH
    labels: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    # every row each run wrote, in row order (the batch's detection statistics score them without reading
    # the four files of each run again)
    rows_a: tuple = field(default=(), repr=False, compare=False)
    rows_b: tuple = field(default=(), repr=False, compare=False)

    def label(self, d) -> str | None:
        return _label(self.labels, d.class_id)

    @property
    def same(self) -> bool:
        return not self.only_a and not self.only_b and all(p.same for p in self.pairs)

    # kept: the unpaired detections are written with their labels, not as Detection objects
    def to_dict(self) -> dict:
        return {"num_detections_a": self.num_a, "num_detections_b": self.num_b, "iou_threshold": self.iou_threshold,
                "pairs": [p.to_dict() for p in self.pairs],
                "only_a": [detection_dict(d, self.labels) for d in self.only_a],
                "only_b": [detection_dict(d, self.labels) for d in self.only_b],
                "same": self.same}

    @classmethod
    def from_dict(cls, doc: dict) -> "DetectionsComparison":
        """A saved comparison: its rows, and of the labels the class names its rows show (every row each run
        wrote, which only a batch's statistics read, is not in the document)."""
        labels = _saved_labels([*doc["pairs"], *doc["only_a"], *doc["only_b"]])
        return cls(tuple(DetectionPair.from_dict(p, labels) for p in doc["pairs"]),
                   tuple(_detection_of(d) for d in doc["only_a"]), tuple(_detection_of(d) for d in doc["only_b"]),
                   doc["num_detections_a"], doc["num_detections_b"], doc["iou_threshold"], labels)


def detection_entries(run) -> dict | None:
    """{role: BufferEntry} of a run's four PostProcess outputs (by role, else the kernel's order), or None."""
    entries = [b for b in run.buffers if b.stage == "detections"]
    if not entries:
        return None
    by_role = {b.role: b for b in entries if b.role}
    if not all(r in by_role for r in ROLES):
        if len(entries) != 4:
            return None
        by_role = dict(zip(ROLES, entries))
    if any((e.dtype or "float32") != "float32" for e in by_role.values()):
        return None
    return by_role


def read_detections(run) -> tuple[list, int] | None:
    """The rows the PostProcess kernel wrote (boxes, classes, scores, num_detections), or None without them.
    The outputs do not say which anchor a row came from: `anchor` is -1."""
    from forensics.decode.ssd import Detection

    by_role = detection_entries(run)
    if by_role is None:
        return None
    dtype = np.dtype("<f4")
    arrays = {}
    for role, entry in by_role.items():
        try:
            data = run.read_buffer(entry)
        except (OSError, InputError):
            return None
        arrays[role] = np.frombuffer(data, dtype=dtype, count=len(data) // dtype.itemsize)
    boxes = arrays["boxes"]
    if boxes.size % 4 or arrays["num_detections"].size < 1:
        return None
    boxes = boxes.reshape(-1, 4)
    classes, scores = arrays["classes"], arrays["scores"]
    num = float(arrays["num_detections"][0])
    if not np.isfinite(num) or num < 0:
        return None
    rows = max(0, min(int(num), len(boxes), len(classes), len(scores)))
    out = [Detection(row=i, anchor=-1, class_id=int(classes[i]), score=float(scores[i]),
                     box=tuple(float(v) for v in boxes[i])) for i in range(rows)]
    return out, int(num)


def _ordered_corners(boxes) -> np.ndarray:
    """(ymin, xmin, ymax, xmax) with each pair's corners in order (a box may be written either way round)."""
    b = np.asarray(boxes, dtype=np.float32).reshape(-1, 4)
    return np.stack([np.minimum(b[:, 0], b[:, 2]), np.minimum(b[:, 1], b[:, 3]),
                     np.maximum(b[:, 0], b[:, 2]), np.maximum(b[:, 1], b[:, 3])], axis=1)


def match_detections(dets_a: list, dets_b: list, threshold: float = IOU_MATCH, labels=None):
    """Greedy one-to-one matching by IoU (the decode kernel's IoU; highest first, same class preferred on ties);
    the rest unmatched."""
    if not dets_a or not dets_b:
        return (), tuple(dets_a), tuple(dets_b)
    from forensics.decode.ssd import iou_matrix

    ious = iou_matrix(_ordered_corners([d.box for d in dets_a]), _ordered_corners([d.box for d in dets_b]))
    candidates = []
    for i, j in zip(*np.nonzero(ious >= threshold)):
        value = float(ious[i, j])
        candidates.append((-value, dets_a[i].class_id != dets_b[j].class_id, int(i), int(j), value))
    candidates.sort()
    used_a, used_b, pairs = set(), set(), []
    for _, _, i, j, value in candidates:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        pairs.append(DetectionPair(dets_a[i], dets_b[j], value, labels))
    pairs.sort(key=lambda p: p.row_a)
    only_a = tuple(d for i, d in enumerate(dets_a) if i not in used_a)
    only_b = tuple(d for j, d in enumerate(dets_b) if j not in used_b)
    return tuple(pairs), only_a, only_b


def compare_detections(run_a, run_b, labels=None) -> DetectionsComparison | None:
    got_a, got_b = read_detections(run_a), read_detections(run_b)
    if got_a is None or got_b is None:
        return None
    (dets_a, num_a), (dets_b, num_b) = got_a, got_b
    pairs, only_a, only_b = match_detections(dets_a, dets_b, labels=labels)
    return DetectionsComparison(pairs, only_a, only_b, num_a, num_b, labels=labels, rows_a=tuple(dets_a),
                                rows_b=tuple(dets_b))


def detections_summary(det: DetectionsComparison) -> str:
    changed = sum(1 for p in det.pairs if not p.same)
    parts = [f"{det.num_a} vs {det.num_b} detections", f"{len(det.pairs)} matched by IoU"]
    if changed:
        parts.append(f"{changed} with other score/box/class")
    if det.only_a or det.only_b:
        parts.append(f"{len(det.only_a)} only in A, {len(det.only_b)} only in B")
    return ", ".join(parts)
