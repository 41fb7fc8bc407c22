"""Does a difference matter: which records that differ between A and B change what the model reports.

An SSD's decode (TFLite_Detection_PostProcess, forensics.decode.ssd) runs on both sides; the detections are
matched one-to-one by IoU, and every change (a detection added, removed, moved, rescored or relabelled) is
attributed to the differing records (anchors) that cause it: B's records are substituted into A in groups and
the result decoded again, and delta debugging (Zeller and Hildebrandt's ddmin, "Simplifying and isolating
failure-inducing input", 2002) narrows each change down to a 1-minimal causing set: with those records from B
and every other record from A the change is there, and dropping any one of them loses it. The differing
records in no causing set are harmless, checked at once: with only the causing records from B, B's detections
come out exactly. A classifier gets the same over its top-k, its records being class scores.

The search is bounded (`max_decodes` substituted decodes in all; a change whose search runs out keeps the
causing set it holds, marked not minimal) and cheap where exactness allows:
- a record the kernel cannot act on is harmless without a decode: its class scores are below
  nms_score_threshold on both sides (never a candidate), or the values the kernel reads of it (class scores
  without the background column, the 4 box coordinates) are equal on both sides (for fast NMS with one class
  per detection: its best class, best score and box);
- a substituted decode with fast NMS and one class per detection re-ranks only what the substitution moves:
  A's candidates in the kernel's order (descending score, ties -> lower anchor) without the substituted records,
  merged with B's candidates among them, walked greedily with the kernel's IoU (greedy_nms) over the first 128
  (at least 4 x max_detections) candidates, all of them when the walk ends short: the kernel's
  NonMaxSuppressionMultiClassFastHelper on every anchor's best class. Other options decode the substituted
  arrays whole with the kernel (PostProcessor). Either way the decodes of A and of B with every record that can
  matter are checked against the kernel's decodes of A and B before the search starts (the shortcut is dropped
  when they disagree).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.decode.ssd import Detection, PostProcessor, decode_boxes, dequantize, iou_matrix
from forensics.decode.ssd import _greedy_one  # the kernel's greedy walk over one ranked group (fast NMS)

KINDS = ("added", "removed", "moved", "rescored", "relabelled")
IOU_MATCH = 0.5          # detections of A and B are one detection when their IoU is at least this (as compare's)
MAX_DECODES = 2000       # substituted decodes a search may make in all
_PREFIX = 128            # candidates walked first by the incremental fast-NMS decode (or 4 x max_detections)
_CACHE = 4096            # substituted decodes remembered by their record set


# --- the inputs -----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class SsdArrays:
    """One side's inputs to TFLite_Detection_PostProcess: box encodings [N, >=4] and scores [N, C], uint8 (with
    the model's quantization) or float32 (what the kernel received: a dequantized stage)."""

    boxes: np.ndarray
    scores: np.ndarray


@dataclass(frozen=True)
class SsdModel:
    """What the decode needs besides the two sides: the deps (anchors, options, quantization), the rounding of
    uint8 -> float (forensics.decode.ssd.ROUNDINGS), the model input size (pixels of a move) and class names."""

    deps: object                      # forensics.decode.deps.DecodeDeps
    rounding: str = "reference"
    input_size: tuple[int, int] | None = None
    labels: tuple[str, ...] | None = None
    letterbox: object | None = None   # forensics.decode.letterbox.Letterbox: image-space boxes when known


@dataclass(frozen=True)
class ClassifierModel:
    """A classifier's output vector (forensics.model.classes.ClassVector), the k of its top-k and class names."""

    vector: object
    k: int = 5
    labels: tuple[str, ...] | None = None


# --- the result -----------------------------------------------------------------------------------------

_OPTIONAL = serial.json(omit_none=True)


@dataclass(frozen=True)
class Change(serial.Serial):
    """One detection (or top-k entry) that differs between A and B, and the records that cause it."""

    JSON_DERIVED = ("detection",)
    JSON_ORDER = ("kind", "detection")

    kind: str                          # one of KINDS
    a: dict | None                     # the row in A (None when added)
    b: dict | None                     # the row in B (None when removed)
    records: tuple[int, ...]           # the causing records (anchor or class indices), ascending
    minimal: bool                      # 1-minimal (False: the search ran out of decodes first)
    iou: float | None = field(default=None, metadata=_OPTIONAL)          # matched rows: their IoU
    shift: float | None = field(default=None, metadata=_OPTIONAL)        # moved: the largest coordinate change
    px: float | None = field(default=None, metadata=_OPTIONAL)           # moved: the same in input pixels
    score_delta: float | None = field(default=None, metadata=_OPTIONAL)  # matched rows: B's score - A's
    ranks: int | None = field(default=None, metadata=_OPTIONAL)          # a classifier's: rank in B - rank in A

    @property
    def detection(self) -> dict:
        """The row the change is about: A's, or B's for an added one."""
        return self.a if self.a is not None else self.b


def _search(result: "ImpactResult") -> dict:
    return {"decodes": result.decodes, "max_decodes": result.max_decodes, "exhausted": result.exhausted,
            "decoder": result.decoder, "inert": result.inert}


def _detections(result: "ImpactResult") -> dict:
    return {"a": list(result.detections_a), "b": list(result.detections_b)}


def _grouped(group: str, key: str, *, write=None, kind=None) -> dict:
    """A field the document writes under `key` inside its object `group`: the field given `write` writes the
    object whole, the group's other fields are written by it (and all are read back from it)."""
    def read(doc: dict):
        value = doc[group][key]
        return kind(value) if kind is not None else value

    if write is not None:
        return serial.json(group, write=write, read=read)
    return serial.json(group, omit=lambda _: True, read=read)


@dataclass(frozen=True)
class ImpactResult(serial.Serial):
    """Which differing records change the model's report, and which are harmless.

    The document groups both sides' detections (`detections`: {"a", "b"}) and the search's fields (`search`)
    into objects of their own, and writes the counts the changes make."""

    JSON_DERIVED = (("counts", "kind_counts"),)
    JSON_ORDER = ("model", "record_unit", "num_records", "differing", "changes", "harmless", "joint", "counts",
                  "detections", "search", "nms", "k", "inputs")

    model_kind: str = field(metadata=serial.json("model"))  # "ssd" | "classifier"
    record_unit: str                   # "anchor" | "class"
    num_records: int
    differing: tuple[int, ...]
    detections_a: tuple[dict, ...] = field(metadata=_grouped("detections", "a", write=_detections, kind=tuple))
    detections_b: tuple[dict, ...] = field(metadata=_grouped("detections", "b", kind=tuple))
    changes: tuple[Change, ...]
    harmless: tuple[int, ...]
    # needed for B's detections only together with others (in no causing set)
    joint: tuple[int, ...] = ()
    inert: int = field(default=0, metadata=_grouped("search", "inert"))  # harmless records settled without a decode
    decodes: int = field(default=0, metadata=_grouped("search", "decodes", write=_search))  # substituted decodes
    max_decodes: int = field(default=MAX_DECODES, metadata=_grouped("search", "max_decodes"))
    # the bound was reached: some sets are not minimal
    exhausted: bool = field(default=False, metadata=_grouped("search", "exhausted"))
    # "incremental" (fast NMS re-ranked) | "kernel" (arrays decoded whole)
    decoder: str = field(default="kernel", metadata=_grouped("search", "decoder"))
    nms: str | None = field(default=None, metadata=_OPTIONAL)
    k: int | None = field(default=None, metadata=_OPTIONAL)
    # where each side's arrays came from (stage, tensor, path), when known
    inputs: dict | None = field(default=None, metadata=_OPTIONAL)
    # an SSD's classes (without background): its rows name a class only when the model has more than one
    num_classes: int | None = field(default=None, metadata=_OPTIONAL)

    @property
    def judgement(self) -> Judgement:
        return judge_impact(self)

    def counts(self) -> dict:
        return {kind: sum(1 for c in self.changes if c.kind == kind) for kind in KINDS}

    @property
    def kind_counts(self) -> dict:
        """counts(): the changes of each kind."""
        return self.counts()

    @property
    def causing(self) -> tuple[int, ...]:
        return tuple(sorted({r for c in self.changes for r in c.records}))


def _count(n: int, unit: str) -> str:
    return f"{n:,} {unit}" + ("" if n == 1 else ("es" if unit.endswith("ss") else "s"))


def judge_impact(result: ImpactResult) -> Judgement:
    """MATCH when no detection (no top-k entry) changes, DIFFER otherwise; the one message and its reasons."""
    unit, n = result.record_unit, len(result.differing)
    what = "detection" if result.model_kind == "ssd" else f"top-{result.k} entry"
    of = f"{n:,} of {result.num_records:,} {unit}{'s' if unit != 'class' else 'es'} " + \
        ("differ" if n != 1 else "differs")
    if not n:
        return Judgement(Verdict.MATCH, f"no {unit} differs between A and B ({result.num_records:,} compared)",
                         (Reason("no_record_differs", f"every {unit}'s values are equal"),))
    if not result.changes:
        reasons = [Reason("harmless_only", f"no {what} changes")]
        return Judgement(Verdict.MATCH, f"{of}; no {what} changes ({len(result.harmless):,} harmless)",
                         tuple(reasons))
    counts = result.kind_counts
    kinds = ", ".join(f"{counts[k]} {k}" for k in KINDS if counts[k])
    causing = result.causing
    changes = "1 change" if len(result.changes) == 1 else f"{len(result.changes)} changes"
    message = f"{of}: {changes} ({kinds}) from {len(causing):,} of them, {len(result.harmless):,} harmless"
    reasons = [Reason("detections_change", f"{changes} ({kinds})")]
    if result.joint:
        reasons.append(Reason("joint", f"{_count(len(result.joint), unit)} matter only together with others"))
    if result.exhausted:
        reasons.append(Reason("search_bounded", f"the search stopped at {result.max_decodes:,} decodes: "
                                                "some causing sets are not minimal"))
    return Judgement(Verdict.DIFFER, message, tuple(reasons))


# --- delta debugging ------------------------------------------------------------------------------------

class _Budget:
    """Substituted decodes left, and the decodes themselves remembered by their record set."""

    def __init__(self, decode, limit: int):
        self.decode_fn, self.limit, self.used, self.cache = decode, int(limit), 0, {}

    @property
    def left(self) -> int:
        return self.limit - self.used

    def decode(self, records, cap: int | None = None):
        """The decode with `records` substituted; None when the budget (or `cap` of it) is spent."""
        key = frozenset(records)
        hit = self.cache.get(key)
        if hit is not None:
            return hit
        if self.used >= self.limit or (cap is not None and self.used >= cap):
            return None
        self.used += 1
        value = self.decode_fn(np.array(sorted(key), dtype=np.int64))
        if len(self.cache) >= _CACHE:
            self.cache.pop(next(iter(self.cache)))
        self.cache[key] = value
        return value


def ddmin(items: list, test) -> tuple[list, bool]:
    """A 1-minimal subset of `items` for which `test` holds (`test(items)` must hold, `test([])` must not):
    (subset, True), or (the smallest subset found, False) when `test` returns None (out of decodes).

    Zeller's ddmin: split into n chunks; keep a chunk that passes (n = 2), else a complement that passes
    (n - 1), else split finer (2n); at n = len(subset) every single-record removal has failed: 1-minimal."""
    c, n = list(items), 2
    while len(c) >= 2:
        size = len(c)
        bounds = [size * i // n for i in range(n + 1)]
        chunks = [c[bounds[i]:bounds[i + 1]] for i in range(n)]
        reduced = False
        for chunk in chunks:
            passed = test(chunk)
            if passed is None:
                return c, False
            if passed:
                c, n, reduced = chunk, 2, True
                break
        if not reduced and n > 2:  # with two chunks each complement is the other chunk
            for i in range(n):
                rest = [x for j, chunk in enumerate(chunks) if j != i for x in chunk]
                passed = test(rest)
                if passed is None:
                    return c, False
                if passed:
                    c, n, reduced = rest, max(n - 1, 2), True
                    break
        if not reduced:
            if n >= size:
                break
            n = min(size, 2 * n)
    return c, True


def _search(changes, predicates, hints, live: list, budget: _Budget) -> list[tuple[tuple[int, ...], bool]]:
    """Each change's causing set: its hint when that alone shows the change, narrowed; else narrowed from all
    `live` records. The decodes left are shared out over the changes still to search."""
    out = []
    for i, predicate in enumerate(predicates):
        share = max((budget.left - 1) // (len(predicates) - i), 1)
        cap = budget.used + share

        def test(records, predicate=predicate, cap=cap):
            decoded = budget.decode(records, cap)
            return None if decoded is None else bool(predicate(decoded))

        start = [r for r in live if r in hints[i]]
        if not start or not test(start):
            start = live
        found, minimal = ddmin(start, test) if len(start) > 1 else (start, True)
        out.append((tuple(sorted(found)), minimal))
    return out


def _settle(causes: list, live: list, same_as_b, budget: _Budget) -> tuple[set, tuple[int, ...], bool]:
    """(harmless among `live`, joint records, whether the split is minimal): with only the causing records from
    B the decode must be B's; when it is not, the records that must join them are narrowed down (joint)."""
    union = set(r for rs in causes for r in rs)
    rest = [r for r in live if r not in union]
    decoded = budget.decode(union)
    if decoded is None:  # out of decodes: nothing more is proven harmless
        return set(), tuple(sorted(rest)), False
    if same_as_b(decoded):
        return set(rest), (), True

    def test(extra):
        got = budget.decode(union | set(extra))
        return None if got is None else bool(same_as_b(got))

    joint, minimal = ddmin(rest, test) if len(rest) > 1 else (rest, True)
    return set(rest) - set(joint), tuple(sorted(joint)), minimal


# --- SSD ------------------------------------------------------------------------------------------------

def _key(det) -> tuple:
    """A detection as the kernel wrote it, without its output slot."""
    return det.anchor, det.class_id, det.score, det.box


class _Decoded:
    """One substituted decode's rows, with what the changes' tests ask of them worked out once."""

    __slots__ = ("dets", "keys", "_unmatched")

    def __init__(self, dets):
        self.dets = dets
        self.keys = frozenset(_key(d) for d in dets)
        self._unmatched = None

    def unmatched(self, dets_a) -> set:
        """Rows of A no row of this decode matches (match_detections)."""
        if self._unmatched is None:
            self._unmatched = set(match_detections(dets_a, self.dets)[1])
        return self._unmatched


def _rows_key(dets) -> tuple:
    return tuple((d.row, *_key(d)) for d in dets)


def match_detections(dets_a, dets_b, threshold: float = IOU_MATCH):
    """Greedy one-to-one matching by the kernel's IoU (highest first; on equal IoU the same class first, then
    the earlier rows): ([(i, j, iou)], unmatched i of A, unmatched j of B)."""
    if not dets_a or not dets_b:
        return [], list(range(len(dets_a))), list(range(len(dets_b)))
    ious = iou_matrix(np.array([d.box for d in dets_a], np.float32), np.array([d.box for d in dets_b], np.float32))
    pairs = sorted((-float(ious[i, j]), dets_a[i].class_id != dets_b[j].class_id, int(i), int(j))
                   for i, j in zip(*np.nonzero(ious >= threshold)))
    used_a, used_b, matched = set(), set(), []
    for neg, _, i, j in pairs:
        if i not in used_a and j not in used_b:
            used_a.add(i)
            used_b.add(j)
            matched.append((i, j, -neg))
    matched.sort()
    return matched, [i for i in range(len(dets_a)) if i not in used_a], \
        [j for j in range(len(dets_b)) if j not in used_b]


def _kernel_floats(q: np.ndarray, quant, rounding: str) -> np.ndarray:
    if q.dtype == np.float32:
        return q
    return dequantize(q, quant, rounding)


def _check_side(name: str, arrays: SsdArrays, deps) -> None:
    for what, array, columns in (("box encodings", arrays.boxes, deps.box_columns),
                                 ("scores", arrays.scores, deps.score_columns)):
        array = np.asarray(array)
        if array.dtype not in (np.uint8, np.float32):
            raise InputError(f"{name}'s {what} must be uint8 or float32, got {array.dtype}")
        if array.shape != (deps.num_anchors, columns):
            raise InputError(f"{name}'s {what} are {list(array.shape)}; the model's are "
                             f"[{deps.num_anchors}, {columns}]")
        if array.dtype == np.float32 and not np.isfinite(array).all():
            raise InputError(f"{name}'s {what} contain NaN or infinity")


class _KernelDecoder:
    """A with `records` from B, decoded whole by the kernel (PostProcessor)."""

    def __init__(self, pp: PostProcessor, a: SsdArrays, b: SsdArrays, floats):
        self.pp = pp
        # substitution needs one dtype per tensor: the kernel's float inputs where the sides' dtypes differ
        self.a_boxes, self.b_boxes = (a.boxes, b.boxes) if a.boxes.dtype == b.boxes.dtype else floats["boxes"]
        self.a_scores, self.b_scores = (a.scores, b.scores) if a.scores.dtype == b.scores.dtype else \
            floats["scores"]

    def __call__(self, records: np.ndarray):
        boxes, scores = self.a_boxes, self.a_scores
        if records.size:
            boxes, scores = boxes.copy(), scores.copy()
            boxes[records] = self.b_boxes[records]
            scores[records] = self.b_scores[records]
        return self.pp(boxes, scores).detections


class _FastDecoder:
    """A with `records` from B under fast NMS with one class per detection, re-ranking only what moves.

    The kernel (NonMaxSuppressionMultiClassFastHelper) ranks every anchor whose best class score (the first
    maximum, background column skipped) reaches nms_score_threshold, by descending score with ties to the lower
    anchor, and walks that ranking greedily with the IoU suppression until max_detections are selected. Each
    anchor's best class, score and decoded box are a function of its own record alone, computed once per side
    here; a substitution removes its records from A's ranking and merges in B's candidates among them. The
    first P of the merged ranking come from A's first P + len(records) and B's, so only those are sorted."""

    def __init__(self, options, anchors: np.ndarray, floats: dict, offset: int, bounded: bool = False):
        self.options = options
        self.bounded = bounded  # every decoded coordinate within the kernel's bound (PostProcessor.bounded)
        self.mask = np.zeros(anchors.shape[0], bool)
        self.limit = options.max_detections
        self.stride = options.max_classes_per_detection
        self.iou = np.float32(options.nms_iou_threshold)
        self.prefix = max(_PREFIX, 4 * self.limit)
        thr = np.float32(options.nms_score_threshold)
        self.side = []
        for f_boxes, f_scores in zip(floats["boxes"], floats["scores"]):
            classes = f_scores[:, offset:]
            best = classes.argmax(axis=1)
            value = classes[np.arange(classes.shape[0]), best]
            candidate = value >= thr
            # every box of a side decoded once: decode_boxes is the kernel's arithmetic, row by row
            self.side.append((decode_boxes(f_boxes, anchors, options), best, value, candidate))
        _, _, value_a, candidate_a = self.side[0]
        rows = np.flatnonzero(candidate_a)
        order = np.lexsort((rows, -value_a[rows].astype(np.float64)))
        self.ranked_rows, self.ranked_values = rows[order], value_a[rows][order]

    def __call__(self, records: np.ndarray):
        boxes_a, best_a, _, _ = self.side[0]
        boxes_b, best_b, value_b, candidate_b = self.side[1]
        mask = self.mask
        mask[records] = True
        try:
            for attempt in (self.prefix + records.size, len(self.ranked_rows)):
                complete = attempt >= len(self.ranked_rows)
                rows, values = self.ranked_rows[:attempt], self.ranked_values[:attempt]
                is_b = np.zeros(rows.size, bool)
                if records.size:
                    keep = ~mask[rows]
                    from_b = records[candidate_b[records]]
                    rows = np.concatenate([rows[keep], from_b])
                    values = np.concatenate([values[keep], value_b[from_b]])
                    is_b = np.concatenate([is_b[keep], np.ones(from_b.size, bool)])
                    order = np.lexsort((rows, -values.astype(np.float64)))
                    if not complete:
                        order = order[:self.prefix]
                    rows, values, is_b = rows[order], values[order], is_b[order]
                boxes = np.where(is_b[:, None], boxes_b[rows], boxes_a[rows])
                chosen = _greedy_one(boxes, rows.size, min(self.limit, rows.size), self.iou, 32, self.bounded)[0] \
                    if rows.size and self.limit > 0 else np.empty(0, np.int64)
                if complete or chosen.size >= self.limit:
                    break
        finally:
            mask[records] = False
        classes = np.where(is_b[chosen], best_b[rows[chosen]], best_a[rows[chosen]])
        return tuple(Detection(self.stride * i, anchor, class_id, score, tuple(box))
                     for i, (anchor, class_id, score, box) in enumerate(zip(
                         rows[chosen].tolist(), classes.tolist(), values[chosen].tolist(), boxes[chosen].tolist())))


def _inert(floats: dict, offset: int, options, fast_one: bool) -> np.ndarray:
    """Per record: whether the kernel can act on no difference of it (exact; see the module's docstring)."""
    thr = np.float32(options.nms_score_threshold)
    (fa_boxes, fb_boxes), (fa_scores, fb_scores) = floats["boxes"], floats["scores"]
    ca, cb = fa_scores[:, offset:], fb_scores[:, offset:]
    never = (ca.max(axis=1) < thr) & (cb.max(axis=1) < thr) if ca.shape[1] else np.ones(ca.shape[0], bool)
    same_box = np.all(fa_boxes[:, :4].view(np.uint32) == fb_boxes[:, :4].view(np.uint32), axis=1)
    # -0.0 and 0.0 are one score to the kernel's comparisons
    same_scores = np.all((ca == cb), axis=1)
    inert = never | (same_box & same_scores)
    if fast_one and ca.shape[1]:
        best_a, best_b = ca.argmax(axis=1), cb.argmax(axis=1)
        rows = np.arange(ca.shape[0])
        inert |= same_box & (best_a == best_b) & (ca[rows, best_a] == cb[rows, best_b])
    return inert


def _detection_row(det, model: SsdModel, score_quant) -> dict:
    from forensics.decode.report import detection_row

    labels = model.labels
    label = labels[det.class_id] if labels is not None and 0 <= det.class_id < len(labels) and \
        labels[det.class_id] else None
    return detection_row(det, label=label, score_quant=score_quant, input_size=model.input_size,
                         letterbox=model.letterbox)


def _ssd_change(a, b, iou, input_size) -> dict:
    """kind and deltas of a matched pair that differs (relabelled before moved before rescored)."""
    shift = max(abs(float(x) - float(y)) for x, y in zip(a.box, b.box))
    px = None
    if input_size is not None:
        w, h = input_size
        px = max(abs(a.box[k] - b.box[k]) * (h if k % 2 == 0 else w) for k in range(4))
    kind = "relabelled" if a.class_id != b.class_id else \
        "moved" if (a.box != b.box or a.anchor != b.anchor) else "rescored"
    out = {"kind": kind, "iou": iou, "score_delta": b.score - a.score}
    if a.box != b.box:
        out.update(shift=shift, px=px)
    return out


def _row_differs(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    if x.dtype == np.float32:  # bit for bit: a -0.0 for a 0.0 is a difference in the dump
        x, y = x.view(np.uint32), y.view(np.uint32)
    return np.any(x != y, axis=1)


class Substitution:
    """Decodes of A with some records from B: `substitution(records)` -> the kernel's rows (Detection).

    `result_a` / `result_b` are the kernel's decodes of A and B (PostProcessor, the uint8 path with its
    rounding); `differing` the records that differ, `inert` those the kernel cannot act on, `live` the rest;
    `decoder` says how a substitution is decoded ("incremental" fast NMS, or "kernel": the arrays whole). The
    incremental decoder is used only when it gives A's and B's decodes exactly (see the module)."""

    def __init__(self, a: SsdArrays, b: SsdArrays, model: SsdModel):
        deps = model.deps
        a = SsdArrays(np.ascontiguousarray(a.boxes), np.ascontiguousarray(a.scores))
        b = SsdArrays(np.ascontiguousarray(b.boxes), np.ascontiguousarray(b.scores))
        _check_side("A", a, deps)
        _check_side("B", b, deps)
        for side in (a, b):
            for array, info, what in ((side.boxes, deps.boxes, "box encodings"), (side.scores, deps.scores, "scores")):
                if array.dtype == np.uint8 and info.quant is None:
                    raise InputError(f"uint8 {what} need a scale and zero_point (the model or postprocess.json)")
        options = self.options = deps.options
        anchors = deps.anchors_codes if deps.anchors_codes is not None else deps.anchors
        pp = PostProcessor(anchors, options, boxes_quant=deps.boxes.quant, scores_quant=deps.scores.quant,
                           anchors_quant=deps.anchors_quant, rounding=model.rounding,
                           boxes_into_kernel=deps.boxes_into_kernel)
        self.result_a, self.result_b = pp(a.boxes, a.scores), pp(b.boxes, b.scores)
        box_rounding = "reference" if deps.boxes_into_kernel else model.rounding
        # what the kernel receives on each side (the DEQUANTIZE outputs, position by position)
        floats = {"boxes": tuple(_kernel_floats(s.boxes, deps.boxes.quant, box_rounding) for s in (a, b)),
                  "scores": tuple(_kernel_floats(s.scores, deps.scores.quant, model.rounding) for s in (a, b))}
        differs = np.zeros(deps.num_anchors, bool)
        for role in ("boxes", "scores"):
            x, y = getattr(a, role), getattr(b, role)
            differs |= _row_differs(x, y) if x.dtype == y.dtype else _row_differs(*floats[role])
        self.offset = deps.score_columns - options.num_classes
        fast_one = not options.use_regular_nms and min(options.max_classes_per_detection, options.num_classes) == 1
        inert_mask = _inert(floats, self.offset, options, fast_one)
        self.differing = [int(r) for r in np.flatnonzero(differs)]
        self.inert = [r for r in self.differing if inert_mask[r]]
        self.live = [r for r in self.differing if not inert_mask[r]]
        self.floats = floats
        key_a, key_b = _rows_key(self.result_a.detections), _rows_key(self.result_b.detections)
        live = np.array(self.live, dtype=np.int64)
        self._decode, self.decoder = _KernelDecoder(pp, a, b, floats), "kernel"
        if fast_one:
            uint8_boxes = a.boxes.dtype == b.boxes.dtype == np.uint8
            fast = _FastDecoder(options, pp.anchors, floats, self.offset, bounded=uint8_boxes and pp.bounded)
            if _rows_key(fast(np.empty(0, np.int64))) == key_a and _rows_key(fast(live)) == key_b:
                self._decode, self.decoder = fast, "incremental"
        if _rows_key(self._decode(live)) != key_b:
            raise AssertionError("records judged inert change the decode")  # a bug, never bad input

    def __call__(self, records) -> tuple:
        return self._decode(np.unique(np.asarray(records, dtype=np.int64)))


def ssd_impact(a: SsdArrays, b: SsdArrays, model: SsdModel, *, max_decodes: int = MAX_DECODES,
               inputs: dict | None = None) -> ImpactResult:
    """Which of the anchors that differ between A and B change the decoded detections (see the module)."""
    if isinstance(max_decodes, bool) or not isinstance(max_decodes, int) or max_decodes < 1:
        raise InputError(f"max_decodes must be a positive integer, got {max_decodes!r}")
    sub = Substitution(a, b, model)
    options, offset, live, inert = sub.options, sub.offset, list(sub.live), sub.inert
    res_a, res_b = sub.result_a, sub.result_b
    dets_a, dets_b = res_a.detections, res_b.detections
    key_b = _rows_key(dets_b)
    floats = sub.floats
    differing = sub.differing
    budget = _Budget(lambda records: _Decoded(sub._decode(records)), max_decodes)
    budget.cache[frozenset()] = _Decoded(dets_a)  # known: the kernel's decodes of A and of B
    budget.cache[frozenset(live)] = _Decoded(dets_b)

    matched, only_a, only_b = match_detections(dets_a, dets_b)
    found, predicates, hints = [], [], []
    for i, j, iou in matched:
        da, db = dets_a[i], dets_b[j]
        if _key(da) == _key(db):
            continue
        found.append((i, j, _ssd_change(da, db, iou, model.input_size)))
        predicates.append(lambda x, ka=_key(da), kb=_key(db): kb in x.keys and ka not in x.keys)
        hints.append({da.anchor, db.anchor})
    for i in only_a:
        da = dets_a[i]
        found.append((i, None, {"kind": "removed"}))
        predicates.append(lambda x, i=i: i in x.unmatched(dets_a))
        hints.append({da.anchor})
    for j in only_b:
        db = dets_b[j]
        found.append((None, j, {"kind": "added"}))
        predicates.append(lambda x, kb=_key(db): kb in x.keys)
        hints.append({db.anchor})

    # the most likely causes first: records scoring highest on either side (ddmin keeps neighbours together)
    fa_scores, fb_scores = floats["scores"]
    top = np.maximum(fa_scores[:, offset:].max(axis=1, initial=-np.inf),
                     fb_scores[:, offset:].max(axis=1, initial=-np.inf))
    shown = {d.anchor for d in dets_a} | {d.anchor for d in dets_b}
    live.sort(key=lambda r: (r not in shown, -float(top[r]), r))
    sets = _search(found, predicates, hints, live, budget)
    harmless, joint, joint_minimal = _settle([s for s, _ in sets], live, lambda x: _rows_key(x.dets) == key_b, budget)

    q = res_a.scores_quant or res_b.scores_quant
    rows_a = tuple(_detection_row(d, model, q) for d in dets_a)
    rows_b = tuple(_detection_row(d, model, q) for d in dets_b)
    changes = []
    for (i, j, info), (records, minimal) in zip(found, sets):
        info = dict(info)
        kind = info.pop("kind")
        changes.append(Change(kind, rows_a[i] if i is not None else None, rows_b[j] if j is not None else None,
                              records, minimal, **info))
    exhausted = not all(m for _, m in sets) or not joint_minimal
    return ImpactResult("ssd", "anchor", model.deps.num_anchors, tuple(differing), rows_a, rows_b,
                        tuple(changes), tuple(sorted(set(inert) | harmless)), joint, inert=len(inert),
                        decodes=budget.used, max_decodes=max_decodes, exhausted=exhausted, decoder=sub.decoder,
                        nms=options.nms, inputs=inputs, num_classes=options.num_classes)


# --- classifiers ----------------------------------------------------------------------------------------

def _class_scores(scores_a, scores_b, max_decodes) -> tuple[np.ndarray, np.ndarray]:
    """The two score vectors as float64, refused when the budget is no positive integer, their lengths differ
    or they hold NaN or infinity."""
    if isinstance(max_decodes, bool) or not isinstance(max_decodes, int) or max_decodes < 1:
        raise InputError(f"max_decodes must be a positive integer, got {max_decodes!r}")
    a = np.asarray(scores_a, dtype=np.float64).reshape(-1)
    b = np.asarray(scores_b, dtype=np.float64).reshape(-1)
    if a.shape != b.shape or not a.size:
        raise InputError(f"the two score vectors differ in length ({a.size} and {b.size} classes)")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise InputError("the class scores contain NaN or infinity")
    return a, b


def _topk_changes(top_a: tuple, top_b: tuple) -> tuple[list, list, list]:
    """Each change between A's and B's top-k ((rank in A, rank in B, info), its predicate on a mix's top-k, the
    classes to try first): moved, rescored, removed, added, and the top-1 relabelled."""
    rank_a = {c: r for r, (c, _) in enumerate(top_a, 1)}
    rank_b = {c: r for r, (c, _) in enumerate(top_b, 1)}
    found, predicates, hints = [], [], []
    for c, ra in rank_a.items():
        if c in rank_b:
            rb = rank_b[c]
            if rb != ra:
                found.append((ra - 1, rb - 1, {"kind": "moved", "ranks": rb - ra,
                                               "score_delta": top_b[rb - 1][1] - top_a[ra - 1][1]}))
                predicates.append(lambda x, c=c, rb=rb: len(x) >= rb and x[rb - 1][0] == c)
            elif top_a[ra - 1][1] != top_b[rb - 1][1]:
                found.append((ra - 1, rb - 1, {"kind": "rescored",
                                               "score_delta": top_b[rb - 1][1] - top_a[ra - 1][1]}))
                predicates.append(lambda x, c=c, s=top_b[rb - 1][1]: any(e == (c, s) for e in x))
            else:
                continue
            hints.append({c})
        else:
            found.append((ra - 1, None, {"kind": "removed"}))
            predicates.append(lambda x, c=c: all(e[0] != c for e in x))
            hints.append({c})
    for c, rb in rank_b.items():
        if c not in rank_a:
            found.append((None, rb - 1, {"kind": "added"}))
            predicates.append(lambda x, c=c: any(e[0] == c for e in x))
            hints.append({c})
    if top_a[0][0] != top_b[0][0]:
        found.append((0, 0, {"kind": "relabelled", "score_delta": top_b[0][1] - top_a[0][1]}))
        predicates.append(lambda x, c=top_b[0][0]: x[0][0] == c)
        hints.append({top_a[0][0], top_b[0][0]})
    return found, predicates, hints


def classifier_impact(scores_a, scores_b, model: ClassifierModel, *, max_decodes: int = MAX_DECODES,
                      inputs: dict | None = None) -> ImpactResult:
    """Which of the class scores that differ between A and B change the top-k (entries added, removed, moved
    in rank, rescored; the top-1 relabelled), with the same search as ssd_impact over class indices."""
    from forensics.model.classes import ranking

    a, b = _class_scores(scores_a, scores_b, max_decodes)
    k = min(int(model.k), a.size)
    differing = np.flatnonzero(a != b)
    # A class below the k-th of min(A, B) on both sides is below k classes in every mix: never in the top-k.
    low = np.minimum(a, b)
    kth = float(np.sort(low)[-k])
    inert_mask = np.maximum(a, b) < kth
    inert = [int(r) for r in differing if inert_mask[r]]
    live = [int(r) for r in differing if not inert_mask[r]]

    def top(values):
        order = ranking(values)[:k]
        return tuple((int(c), float(values[c])) for c in order)

    def decode(records):
        x = a.copy()
        x[records] = b[records]
        return top(x)

    top_a, top_b = top(a), top(b)
    labels = model.labels

    def row(entry, rank):
        c, score = entry
        label = labels[c] if labels is not None and c < len(labels) and labels[c] else None
        return {"class": c, "label": label, "score": score, "rank": rank}

    rows_a = tuple(row(e, r) for r, e in enumerate(top_a, 1))
    rows_b = tuple(row(e, r) for r, e in enumerate(top_b, 1))
    found, predicates, hints = _topk_changes(top_a, top_b)
    budget = _Budget(decode, max_decodes)
    budget.cache[frozenset()], budget.cache[frozenset(live)] = top_a, top_b
    live.sort(key=lambda r: (-max(a[r], b[r]), r))
    sets = _search(found, predicates, hints, live, budget)
    harmless, joint, joint_minimal = _settle([s for s, _ in sets], live, lambda x: x == top_b, budget)
    changes = [Change(info.pop("kind"), rows_a[i] if i is not None else None, rows_b[j] if j is not None else None,
                      records, minimal, **info)
               for (i, j, info), (records, minimal) in zip([(i, j, dict(info)) for i, j, info in found], sets)]
    exhausted = not all(m for _, m in sets) or not joint_minimal
    return ImpactResult("classifier", "class", int(a.size), tuple(int(r) for r in differing), rows_a, rows_b,
                        tuple(changes), tuple(sorted(set(inert) | harmless)), joint, inert=len(inert),
                        decodes=budget.used, max_decodes=max_decodes, exhausted=exhausted, decoder="top-k", k=k,
                        inputs=inputs)


def impact(a, b, model, *, max_decodes: int = MAX_DECODES, inputs: dict | None = None) -> ImpactResult:
    """ssd_impact for an SsdModel (a and b SsdArrays), classifier_impact for a ClassifierModel (score vectors)."""
    if isinstance(model, SsdModel):
        return ssd_impact(a, b, model, max_decodes=max_decodes, inputs=inputs)
    if isinstance(model, ClassifierModel):
        return classifier_impact(a, b, model, max_decodes=max_decodes, inputs=inputs)
    raise TypeError(f"impact needs an SsdModel or a ClassifierModel, got {type(model).__name__}")

