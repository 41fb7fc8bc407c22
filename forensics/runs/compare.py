"""Compare two runs stage by stage in the story's order: MATCH / DIFFER per buffer with CRCs and a one-line
summary, the first divergent stage with what to do about it, per-tensor diff summaries, and the detections
side by side (matched by IoU).

The method is the story's: the first stage that differs is where the bug is; every later stage is expected to
differ because of it. A buffer whose file no longer matches its manifest CRC is flagged CHANGED with a warning
(the evidence was edited after capture); stages present in one run only are listed, not compared.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from forensics.crc import format_crc
from forensics.diff import DiffResult, diff_dumps
from forensics.dump import open_dump
from forensics.errors import InputError
from forensics.layout import RecordLayout
from forensics.diagnose import diagnose_dumps
from forensics.runs.run import STAGES, BufferCheck, BufferEntry, Run, load_run, verify_run

IOU_MATCH = 0.5
DIFF_LIMIT = 8

ADVICE = {
    "params": "parameters differ: the executable's parameter blob (parameter caching upload) is not the same; fix "
              "that first, every later stage is expected to differ",
    "input": "inputs differ: fix the input path first (resize, padding, colour order, row stride, quantization); "
             "every later stage is expected to differ",
    "raw": "inputs and parameters match but the chip's raw output differs: look at the output DMA (buffer size, "
           "offset, completion, prefill left unwritten); every later stage is expected to differ",
    "tensor": "the raw output matches but the tensors differ: the relayout is wrong (tile order, 4-byte lane "
              "padding, the signed-type fix); every later stage is expected to differ",
    "dequantized": "the tensors match but the dequantized values differ: check scale and zero_point and the "
                   "runtime's dequantize rounding (XNNPACK, LiteRT's blocks of 8: README, Known pitfalls)",
    "detections": "every earlier stage matches: the post-processing differs (PostProcess options, anchors, NMS, "
                  "runtime version or delegate)",
}


@dataclass(frozen=True)
class StageRow:
    """One (stage, tensor) of the two runs."""

    stage: str
    tensor: str
    status: str  # MATCH / DIFFER / ONLY_A / ONLY_B / MISSING
    size_a: int | None
    size_b: int | None
    crc32_a: int | None
    crc32_b: int | None
    summary: str
    changed: tuple[str, ...] = ()  # "A" / "B": the file no longer matches its manifest
    unit: str = "bytes"
    diff: DiffResult | None = field(default=None, repr=False)
    findings: tuple = ()
    heat: object | None = field(default=None, repr=False)  # forensics.heat.AnchorHeat for pictures

    @property
    def compared(self) -> bool:
        return self.status in ("MATCH", "DIFFER", "MISSING")

    @property
    def match(self) -> bool | None:
        return None if not self.compared else self.status == "MATCH"

    @property
    def label(self) -> str:
        return self.stage if self.tensor == self.stage else f"{self.stage}:{self.tensor}"

    def to_dict(self) -> dict:
        out = {"stage": self.stage, "tensor": self.tensor, "match": self.match, "status": self.status,
               "changed": list(self.changed), "size_a": self.size_a, "size_b": self.size_b,
               "crc32_a": format_crc(self.crc32_a) if self.crc32_a is not None else None,
               "crc32_b": format_crc(self.crc32_b) if self.crc32_b is not None else None,
               "summary": self.summary}
        if self.diff is not None:
            d = self.diff.to_dict()
            out["diff"] = {k: d[k] for k in ("record_size", "records_compared", "records_differing",
                                             "bytes_differing", "first_differing_offset", "lanes", "records",
                                             "records_truncated", "pad_lanes")}
            out["diff"]["unit"] = self.unit
        if self.findings:
            out["findings"] = [f.to_dict() if hasattr(f, "to_dict") else f for f in self.findings]
        if self.heat is not None:
            out["heat"] = self.heat.to_dict()
        return out


@dataclass(frozen=True)
class DetectionPair:
    row_a: int
    row_b: int
    class_a: int
    class_b: int
    score_a: float
    score_b: float
    iou: float
    box_a: tuple[float, ...]
    box_b: tuple[float, ...]

    @property
    def score_delta(self) -> float:
        return self.score_b - self.score_a

    @property
    def box_delta(self) -> float:
        return float(np.max(np.abs(np.subtract(self.box_b, self.box_a))))

    @property
    def same(self) -> bool:
        return self.class_a == self.class_b and self.score_a == self.score_b and self.box_a == self.box_b

    def to_dict(self) -> dict:
        return {"row_a": self.row_a, "row_b": self.row_b, "class_a": self.class_a, "class_b": self.class_b,
                "score_a": self.score_a, "score_b": self.score_b, "score_delta": self.score_delta, "iou": self.iou,
                "box_a": list(self.box_a), "box_b": list(self.box_b), "box_delta": self.box_delta,
                "same": self.same}


@dataclass(frozen=True)
class DetectionsComparison:
    pairs: tuple[DetectionPair, ...]
    only_a: tuple[dict, ...]
    only_b: tuple[dict, ...]
    num_a: int
    num_b: int
    iou_threshold: float = IOU_MATCH

    @property
    def same(self) -> bool:
        return not self.only_a and not self.only_b and all(p.same for p in self.pairs)

    def to_dict(self) -> dict:
        return {"num_detections_a": self.num_a, "num_detections_b": self.num_b, "iou_threshold": self.iou_threshold,
                "pairs": [p.to_dict() for p in self.pairs], "only_a": list(self.only_a), "only_b": list(self.only_b),
                "same": self.same}


@dataclass(frozen=True)
class CompareResult:
    run_a: Run
    run_b: Run
    rows: tuple[StageRow, ...]
    warnings: tuple[str, ...] = ()
    detections: DetectionsComparison | None = None
    models_differ: bool = False
    geometry: object | None = field(default=None, repr=False)

    @property
    def first_divergent(self) -> StageRow | None:
        for row in self.rows:
            if row.compared and not row.match:
                return row
        return None

    @property
    def advice(self) -> str | None:
        row = self.first_divergent
        return ADVICE.get(row.stage) if row is not None else None

    @property
    def match(self) -> bool:
        return all(row.match for row in self.rows if row.compared) and not any(row.changed for row in self.rows)

    def __bool__(self) -> bool:
        return self.match

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(f"{row.label} ({', '.join(row.changed)})" for row in self.rows if row.changed)

    def to_dict(self) -> dict:
        first = self.first_divergent
        return {
            "match": self.match,
            "run_a": {"path": self.run_a.path, "source": self.run_a.source, "model": self.run_a.model},
            "run_b": {"path": self.run_b.path, "source": self.run_b.source, "model": self.run_b.model},
            "models_differ": self.models_differ,
            "stages": [row.to_dict() for row in self.rows],
            "first_divergent_stage": first.stage if first else None,
            "first_divergent_tensor": first.tensor if first else None,
            "advice": self.advice,
            "changed": list(self.changed),
            "warnings": list(self.warnings),
            "detections": self.detections.to_dict() if self.detections else None,
        }


# --- record layouts for the per-tensor diff ---------------------------------------------------------------

_ITEMSIZE = {"uint8": 1, "int8": 1, "int16": 2, "uint16": 2, "float16": 2, "int32": 4, "uint32": 4, "float32": 4,
             "int64": 8, "uint64": 8, "float64": 8, "bool": 1}


def buffer_layout(entry: BufferEntry, size: int) -> tuple[RecordLayout, str]:
    """How to cut a buffer into records for the diff, and what to call a record (anchors, rows, bytes)."""
    itemsize = _ITEMSIZE.get(entry.dtype or "uint8", 1)
    shape = entry.shape
    pad = tuple(entry.extra.get("pad_lanes") or ())
    quant = {}
    if itemsize == 1 and entry.scale is not None:
        quant = {"scale": entry.scale, "zero_point": entry.zero_point or 0}
    if entry.stage == "params":
        return RecordLayout(record_size=1), "bytes"
    if entry.stage == "input" and shape and len(shape) == 4 and shape[2] * shape[3] * itemsize * shape[1] == size:
        return RecordLayout(record_size=shape[2] * shape[3] * itemsize), "rows"
    unit = "anchors" if entry.stage in ("raw", "tensor", "dequantized") else "records"
    record = None
    if shape and len(shape) >= 2 and shape[-1] > 0:
        channels = shape[-1] * itemsize
        n = int(np.prod(shape[:-1]))
        if n * channels == size:
            record = channels
        elif entry.record_size and size % entry.record_size == 0:
            record = entry.record_size
        elif n and size % n == 0:
            record = size // n
        else:
            record = channels
        if record > channels and not pad:
            pad = tuple(range(channels, record))
        if len(shape) != 3:
            unit = "records"
    elif entry.record_size:
        record = entry.record_size
    elif entry.stage == "raw":
        record = 4  # the chip's lane width
    if not record or record == 1:
        return RecordLayout(record_size=1), "bytes"
    pad = tuple(p for p in pad if p < record)
    fields = entry.extra.get("fields")
    fields = tuple(fields) if isinstance(fields, list) and len(fields) == record else None
    return RecordLayout(record_size=record, pad_lanes=pad, fields=fields,
                        **(quant if itemsize == 1 else {})), unit


def _summary(diff: DiffResult, unit: str) -> str:
    parts = []
    if diff.size_a != diff.size_b:
        parts.append(f"sizes differ: {diff.size_a:,} vs {diff.size_b:,} bytes")
    if unit == "bytes":
        if diff.bytes_differing or diff.size_a == diff.size_b:
            parts.append(f"{diff.bytes_differing:,} of {diff.records_compared:,} bytes differ"
                         + (f" (first at 0x{diff.first_differing_offset:x})"
                            if diff.first_differing_offset is not None and diff.bytes_differing else ""))
    elif diff.records_differing:
        first = diff.records[0].index if diff.records else None
        singular = unit[:-1]
        parts.append(f"{diff.records_differing:,} of {diff.records_compared:,} {unit} differ"
                     + (f" (first: {singular} {first})" if first is not None else ""))
    elif diff.trailing_differ:
        parts.append("only the bytes after the last whole record differ")
    elif not diff.bytes_identical and diff.size_a == diff.size_b:
        parts.append(f"only pad lanes differ (0 of {diff.records_compared:,} {unit} in data lanes)")
    return "; ".join(parts) or "identical over the common length"


# --- detections -------------------------------------------------------------------------------------------

def read_detections(run: Run) -> tuple[list[dict], int] | None:
    """The rows the PostProcess kernel wrote (boxes, classes, scores, num_detections), or None without them."""
    entries = [b for b in run.buffers if b.stage == "detections"]
    if not entries:
        return None
    by_role = {b.role: b for b in entries if b.role}
    if not all(r in by_role for r in ("boxes", "classes", "scores", "num_detections")):
        if len(entries) != 4:
            return None
        by_role = dict(zip(("boxes", "classes", "scores", "num_detections"), entries))  # the kernel's order
    arrays = {}
    for role, entry in by_role.items():
        dtype = np.dtype("<f4") if (entry.dtype or "float32") == "float32" else None
        if dtype is None:
            return None
        path = run.file_path(entry)
        try:
            arrays[role] = np.fromfile(path, dtype=dtype)
        except (OSError, ValueError):
            return None
    boxes = arrays["boxes"]
    if boxes.size % 4 or arrays["num_detections"].size < 1:
        return None
    boxes = boxes.reshape(-1, 4)
    classes, scores = arrays["classes"], arrays["scores"]
    num = float(arrays["num_detections"][0])
    if not np.isfinite(num):
        return None
    rows = max(0, min(int(num), len(boxes), len(classes), len(scores)))
    out = [{"row": i, "class": int(classes[i]), "score": float(scores[i]),
            "box": [float(v) for v in boxes[i]]} for i in range(rows)]
    return out, int(num)


def iou(a, b) -> float:
    """Intersection over union of two (ymin, xmin, ymax, xmax) boxes (corners in either order, as the kernel)."""
    ay0, ax0, ay1, ax1 = min(a[0], a[2]), min(a[1], a[3]), max(a[0], a[2]), max(a[1], a[3])
    by0, bx0, by1, bx1 = min(b[0], b[2]), min(b[1], b[3]), max(b[0], b[2]), max(b[1], b[3])
    inter = max(0.0, min(ay1, by1) - max(ay0, by0)) * max(0.0, min(ax1, bx1) - max(ax0, bx0))
    union = (ay1 - ay0) * (ax1 - ax0) + (by1 - by0) * (bx1 - bx0) - inter
    return float(inter / union) if union > 0 else 0.0


def match_detections(dets_a: list[dict], dets_b: list[dict], threshold: float = IOU_MATCH):
    """Greedy one-to-one matching by IoU (highest first; same class preferred on ties); the rest unmatched."""
    candidates = []
    for i, a in enumerate(dets_a):
        for j, b in enumerate(dets_b):
            value = iou(a["box"], b["box"])
            if value >= threshold:
                candidates.append((-value, a["class"] != b["class"], i, j, value))
    candidates.sort()
    used_a, used_b, pairs = set(), set(), []
    for _, _, i, j, value in candidates:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        a, b = dets_a[i], dets_b[j]
        pairs.append(DetectionPair(a["row"], b["row"], a["class"], b["class"], a["score"], b["score"], value,
                                   tuple(a["box"]), tuple(b["box"])))
    pairs.sort(key=lambda p: p.row_a)
    only_a = tuple(d for i, d in enumerate(dets_a) if i not in used_a)
    only_b = tuple(d for j, d in enumerate(dets_b) if j not in used_b)
    return tuple(pairs), only_a, only_b


def compare_detections(run_a: Run, run_b: Run) -> DetectionsComparison | None:
    got_a, got_b = read_detections(run_a), read_detections(run_b)
    if got_a is None or got_b is None:
        return None
    (dets_a, num_a), (dets_b, num_b) = got_a, got_b
    pairs, only_a, only_b = match_detections(dets_a, dets_b)
    return DetectionsComparison(pairs, only_a, only_b, num_a, num_b)


def _detections_summary(det: DetectionsComparison) -> str:
    changed = sum(1 for p in det.pairs if not p.same)
    parts = [f"{det.num_a} vs {det.num_b} detections", f"{len(det.pairs)} matched by IoU"]
    if changed:
        parts.append(f"{changed} with other score/box/class")
    if det.only_a or det.only_b:
        parts.append(f"{len(det.only_a)} only in A, {len(det.only_b)} only in B")
    return ", ".join(parts)


# --- the comparison -------------------------------------------------------------------------------------

def _ordered_keys(run_a: Run, run_b: Run) -> list[tuple[str, str]]:
    keys = []
    for stage in STAGES:
        for run in (run_a, run_b):
            for b in run.buffers:
                if b.stage == stage and b.key not in keys:
                    keys.append(b.key)
    return keys


def _heat(geometry, dump_a, dump_b, layout: RecordLayout, unit: str):
    """Per-anchor |a - b| for a heatmap, when the buffer holds one record per anchor of the geometry."""
    if geometry is None or unit != "anchors" or not getattr(geometry, "is_grid", False):
        return None
    if dump_a.size != dump_b.size or dump_a.size != geometry.num_anchors * layout.record_size:
        return None
    from forensics.heat import diff_heat

    a = dump_a.read_array().reshape(geometry.num_anchors, layout.record_size)
    b = dump_b.read_array().reshape(geometry.num_anchors, layout.record_size)
    return diff_heat(a, b, layout)


def compare_runs(run_a, run_b, *, previous=None, geometry=None, diagnose: bool = True,
                 limit: int = DIFF_LIMIT) -> CompareResult:
    """Compare two runs (paths or loaded Runs). InputError when they share no buffer at all."""
    run_a = run_a if isinstance(run_a, Run) else load_run(run_a)
    run_b = run_b if isinstance(run_b, Run) else load_run(run_b)
    previous = previous if previous is None or isinstance(previous, Run) else load_run(previous)
    keys_a, keys_b = {b.key for b in run_a.buffers}, {b.key for b in run_b.buffers}
    if not keys_a & keys_b:
        def have(run):
            return ", ".join(b.label for b in run.buffers) or "nothing"

        raise InputError(f"the runs share no stage to compare: {run_a.path} has {have(run_a)}; "
                         f"{run_b.path} has {have(run_b)}")
    warnings = []
    models_differ = bool(run_a.model_sha256 and run_b.model_sha256 and run_a.model_sha256 != run_b.model_sha256)
    if models_differ:
        warnings.append(f"the runs were captured with different models ({run_a.model.get('path')} sha256 "
                        f"{run_a.model_sha256[:12]}..., {run_b.model.get('path')} sha256 {run_b.model_sha256[:12]}"
                        "...): comparing what can be compared")
    checks_a = {c.entry.key: c for c in verify_run(run_a)}
    checks_b = {c.entry.key: c for c in verify_run(run_b)}
    for run, checks in ((run_a, checks_a), (run_b, checks_b)):
        for check in checks.values():
            if not check.ok:
                warnings.append(check.message(run.path))
    rows = []
    for key in _ordered_keys(run_a, run_b):
        ca, cb = checks_a.get(key), checks_b.get(key)
        if ca is None or cb is None:
            only = ca or cb
            status = "ONLY_A" if ca else "ONLY_B"
            rows.append(StageRow(key[0], key[1], status, only.size if ca else None, only.size if cb else None,
                                 only.crc32 if ca else None, only.crc32 if cb else None,
                                 f"only in {'A' if ca else 'B'} ({(run_a if ca else run_b).source}): not compared",
                                 changed=("A",) if ca and ca.status == "changed" else
                                 (("B",) if cb and cb.status == "changed" else ())))
            continue
        rows.append(_compare_pair(run_a, run_b, ca, cb, previous, geometry, diagnose, limit))
    detections = compare_detections(run_a, run_b)
    if detections is not None:
        rows = [_with_detections(row, detections) if row.stage == "detections" and row.compared else row
                for row in rows]
    return CompareResult(run_a, run_b, tuple(rows), tuple(warnings), detections, models_differ, geometry)


def _with_detections(row: StageRow, det: DetectionsComparison) -> StageRow:
    if row.tensor and row.status == "DIFFER":
        from dataclasses import replace

        return replace(row, summary=f"{row.summary}; {_detections_summary(det)}")
    return row


def _compare_pair(run_a, run_b, ca: BufferCheck, cb: BufferCheck, previous, geometry, diagnose, limit) -> StageRow:
    entry = ca.entry
    changed = tuple(name for name, c in (("A", ca), ("B", cb)) if c.status == "changed")
    if ca.status == "missing" or cb.status == "missing":
        which = " and ".join(n for n, c in (("A", ca), ("B", cb)) if c.status == "missing")
        return StageRow(entry.stage, entry.tensor, "MISSING", ca.size, cb.size, ca.crc32, cb.crc32,
                        f"file missing in {which}: not compared", changed)
    size_a, size_b = ca.size, cb.size
    if size_a == size_b and ca.crc32 == cb.crc32:
        layout, unit = buffer_layout(entry, size_a)
        count = size_a // layout.record_size
        what = f"{count:,} {unit}" if unit != "bytes" else f"{size_a:,} bytes"
        return StageRow(entry.stage, entry.tensor, "MATCH", size_a, size_b, ca.crc32, cb.crc32,
                        f"identical ({what})", changed, unit)
    dump_a = open_dump(run_a.file_path(entry), allow_empty=True, use_sidecar=False)
    dump_b = open_dump(run_b.file_path(cb.entry), allow_empty=True, use_sidecar=False)
    layout, unit = buffer_layout(entry, min(size_a, size_b))
    if min(size_a, size_b) == 0:
        return StageRow(entry.stage, entry.tensor, "DIFFER", size_a, size_b, ca.crc32, cb.crc32,
                        f"sizes differ: {size_a:,} vs {size_b:,} bytes (one is empty)", changed, unit)
    diff = diff_dumps(dump_a, dump_b, layout, limit=limit)
    findings = ()
    if diagnose:
        findings = _diagnose(dump_a, dump_b, layout, previous, entry)
    heat = None
    try:
        heat = _heat(geometry, dump_a, dump_b, layout, unit)
    except InputError:
        heat = None
    return StageRow(entry.stage, entry.tensor, "DIFFER", size_a, size_b, ca.crc32, cb.crc32,
                    _summary(diff, unit), changed, unit, diff, findings, heat)


def _diagnose(dump_a, dump_b, layout, previous: Run | None, entry: BufferEntry) -> tuple:
    """The named bring-up bugs behind one differing buffer (forensics.diagnose), with --previous for stale."""
    prev_dump = None
    if previous is not None:
        match = [b for b in previous.buffers if b.key == entry.key]
        if match:
            path = previous.file_path(match[0])
            if os.path.isfile(path):
                prev_dump = open_dump(path, allow_empty=True, use_sidecar=False)
    return tuple(diagnose_dumps(dump_a, dump_b, layout=layout, previous=prev_dump).findings)


# --- batch support: one pair directory -> one summary row ----------------------------------------------------

def find_runs(directory) -> list[str]:
    """The run directories (holding manifest.json) directly inside `directory`, sorted by name."""
    directory = os.fspath(directory)
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", directory) from None
    return [os.path.join(directory, n) for n in names
            if not n.startswith(".") and os.path.isfile(os.path.join(directory, n, "manifest.json"))]
