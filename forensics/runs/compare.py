"""Compare two runs stage by stage in the story's order: MATCH / DIFFER per buffer with CRCs and a one-line
summary, the first divergent stage with what to do about it, per-tensor diff summaries, and the detections
side by side (matched by IoU).

The method is the story's: the first stage that differs is where the bug is; every later stage is expected to
differ because of it. A buffer whose file no longer matches its manifest CRC is flagged CHANGED with a warning
(the evidence was edited after capture); stages present in one run only are listed, not compared.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from forensics.compare.crc import format_crc
from forensics.decode.ssd import Detection, iou_matrix
from forensics.diagnose import diagnose_dumps
from forensics.compare.diff import DiffResult, diff_dumps
from forensics.core.errors import InputError
from forensics.core.layout import RecordLayout
from forensics.runs import remote
from forensics.runs.run import MANIFEST, SIDE_STAGES, STAGES, BufferCheck, BufferEntry, Run, load_run, verify_run
from forensics.compare.stats import locator
from forensics.core.tolerance import DIFFER, MATCH, WITHIN, TolerancePolicy
from forensics.core.verdict import Verdict

IOU_MATCH = 0.5
DIFF_LIMIT = 8

ADVICE = {
    "instructions": "the instruction bitstream is mislinked: fix the driver's link step first (forensics link --check "
                    "names the bug); every later stage is expected to differ",  # link: issue 23
    "params": "parameters differ: the executable's parameter blob (parameter caching upload) is not the same; fix "
              "that first, every later stage is expected to differ",
    "input": "inputs differ: fix the input path first (resize, padding, colour order, row stride, quantization); "
             "every later stage is expected to differ",
    "raw": "inputs and parameters match but the chip's raw output differs: look at the output DMA (buffer size, "
           "offset, completion, prefill left unwritten); every later stage is expected to differ",
    "tensor": "the raw output matches but the tensors differ: the relayout is wrong (tile order, 4-byte lane "
              "padding, the signed-type fix); every later stage is expected to differ",
    "dequantized": "the tensors match but the dequantized values differ: check scale and zero_point and the "
                   "runtime's dequantize rounding (XNNPACK, LiteRT's blocks of 8: docs/pitfalls.md)",
    "detections": "every earlier stage matches: the post-processing differs (PostProcess options, anchors, NMS, "
                  "runtime version or delegate)",
}

# What the advice for a stage takes for granted: the earlier stages it says match. The chip's input and its
# parameters are independent (an input that differs is a fact whatever the parameters were).
PREMISES = {stage: tuple(s for s in STAGES[:i] if s not in SIDE_STAGES) for i, stage in enumerate(STAGES)}
PREMISES["input"] = ()
# Where to look once a stage is known to be the first that differs (ADVICE without its premise).
SUSPECT = {
    "raw": "look at the output DMA (buffer size, offset, completion, prefill left unwritten)",
    "tensor": "the relayout is wrong (tile order, 4-byte lane padding, the signed-type fix)",
    "dequantized": "check scale and zero_point and the runtime's dequantize rounding",
    "detections": "the post-processing differs (PostProcess options, anchors, NMS, runtime version or delegate)",
}


def _names(stages) -> str:
    stages = list(stages)
    return stages[0] if len(stages) == 1 else ", ".join(stages[:-1]) + " and " + stages[-1]


def advice_from_captured(stage: str, not_captured, compared) -> str | None:
    """The advice for `stage` as first divergent, concluding only from stages both runs captured: when a
    stage it takes for granted was not captured, say so and that the difference may start there."""
    unseen = [s for s in PREMISES.get(stage, ()) if s in not_captured]
    if not unseen:
        return ADVICE.get(stage)
    seen = [s for s in PREMISES.get(stage, ()) if s in compared]
    verb = "was" if len(unseen) == 1 else "were"
    text = (f"{stage} is the first captured stage that differs, but {_names(unseen)} {verb} not captured in both "
            f"runs, so nothing says {'it matches' if len(unseen) == 1 else 'they match'}: the difference may start "
            f"there. Capture {'it' if len(unseen) == 1 else 'them'} to place it")
    if stage in SUSPECT:
        text += f"; if {'it matches' if len(unseen) == 1 else 'they match'}, {SUSPECT[stage]}"
    if seen:
        text += f" ({_names(seen)} {'matches' if len(seen) == 1 else 'match'})"
    return text


@dataclass(frozen=True)
class StageRow:
    """One (stage, tensor) of the two runs."""

    stage: str
    tensor: str
    status: str  # MATCH / WITHIN TOLERANCE / DIFFER / ONLY_A / ONLY_B / MISSING
    size_a: int | None
    size_b: int | None
    crc32_a: int | None
    crc32_b: int | None
    summary: str
    changed: tuple[str, ...] = ()  # "A" / "B": the file no longer matches its manifest
    unit: str = "bytes"
    diff: DiffResult | None = field(default=None, repr=False)
    findings: tuple = ()
    heat: object | None = field(default=None, repr=False)  # forensics.buffer.heat.AnchorHeat for pictures

    @property
    def compared(self) -> bool:
        return self.status in (MATCH, WITHIN, DIFFER, Verdict.MISSING)

    @property
    def match(self) -> bool | None:
        return None if not self.compared else self.status == MATCH

    @property
    def passed(self) -> bool | None:
        """MATCH or WITHIN TOLERANCE (None when not compared)."""
        return None if not self.compared else self.status in (MATCH, WITHIN)

    @property
    def verdict(self) -> str | None:
        return None if not self.compared else (self.status if self.status in (MATCH, WITHIN) else DIFFER)

    @property
    def stats(self):
        return self.diff.stats if self.diff is not None else None

    @property
    def label(self) -> str:
        return self.stage if self.tensor == self.stage else f"{self.stage}:{self.tensor}"

    def to_dict(self) -> dict:
        out = {"stage": self.stage, "tensor": self.tensor, "match": self.match, "verdict": self.verdict,
               "status": self.status,
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
            if "stats" in d:
                out["stats"] = d["stats"]
                out["dtype"] = d["dtype"]
                out["check"] = d.get("check")
        if self.findings:
            out["findings"] = [f.to_dict() if hasattr(f, "to_dict") else f for f in self.findings]
        if self.heat is not None:
            out["heat"] = self.heat.to_dict()
        return out


def _label(labels, class_id: int) -> str | None:
    return labels[class_id] if labels and 0 <= class_id < len(labels) and labels[class_id] else None


def detection_dict(d: Detection, labels=None) -> dict:
    """A detection output row as JSON: row, class (and its label), score, box."""
    out = {"row": d.row, "class": d.class_id, "score": d.score, "box": list(d.box)}
    if _label(labels, d.class_id):
        out["label"] = _label(labels, d.class_id)
    return out


@dataclass(frozen=True)
class DetectionPair:
    """Two detection rows matched by IoU: the same object as A and B saw it."""

    a: Detection
    b: Detection
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

    def to_dict(self) -> dict:
        out = {"row_a": self.row_a, "row_b": self.row_b, "class_a": self.class_a, "class_b": self.class_b,
               "score_a": self.score_a, "score_b": self.score_b, "score_delta": self.score_delta, "iou": self.iou,
               "box_a": list(self.box_a), "box_b": list(self.box_b), "box_delta": self.box_delta,
               "box_deltas": list(self.box_deltas), "same": self.same}
        if self.label_a or self.label_b:
            out["label_a"], out["label_b"] = self.label_a, self.label_b
        return out


@dataclass(frozen=True)
class DetectionsComparison:
    pairs: tuple[DetectionPair, ...]
    only_a: tuple[Detection, ...]
    only_b: tuple[Detection, ...]
    num_a: int
    num_b: int
    iou_threshold: float = IOU_MATCH
    labels: tuple[str, ...] | None = field(default=None, repr=False, compare=False)
    # every row each run wrote, in row order (the batch's detection statistics score them without reading
    # the four files of each run again)
    rows_a: tuple[Detection, ...] = field(default=(), repr=False, compare=False)
    rows_b: tuple[Detection, ...] = field(default=(), repr=False, compare=False)

    def label(self, d: Detection) -> str | None:
        return _label(self.labels, d.class_id)

    @property
    def same(self) -> bool:
        return not self.only_a and not self.only_b and all(p.same for p in self.pairs)

    def to_dict(self) -> dict:
        return {"num_detections_a": self.num_a, "num_detections_b": self.num_b, "iou_threshold": self.iou_threshold,
                "pairs": [p.to_dict() for p in self.pairs],
                "only_a": [detection_dict(d, self.labels) for d in self.only_a],
                "only_b": [detection_dict(d, self.labels) for d in self.only_b],
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
    policy: TolerancePolicy | None = None

    @property
    def first_divergent(self) -> StageRow | None:
        """The first stage that fails (DIFFER or MISSING); a stage WITHIN TOLERANCE passes."""
        for row in self.rows:
            if row.compared and not row.passed:
                return row
        return None

    @property
    def not_captured(self) -> tuple[str, ...]:
        """The stages no buffer of both runs stands for: nothing is concluded about them."""
        compared = {row.stage for row in self.rows if row.compared and row.status != Verdict.MISSING}
        seen = {row.stage for row in self.rows}
        # link: only runs with bitstreams have instructions; image and relayouted are beside the pipeline
        return tuple(stage for stage in STAGES if stage not in compared
                     and (stage not in ("instructions",) + SIDE_STAGES or stage in seen))

    @property
    def advice(self) -> str | None:
        row = self.first_divergent
        if row is None:
            return None
        compared = {r.stage for r in self.rows if r.compared and r.passed}
        return advice_from_captured(row.stage, self.not_captured, compared)

    @property
    def match(self) -> bool:
        return all(row.match for row in self.rows if row.compared) and not any(row.changed for row in self.rows)

    @property
    def passed(self) -> bool:
        """Every common buffer MATCHes or is WITHIN TOLERANCE, and no file changed after capture."""
        return all(row.passed for row in self.rows if row.compared) and not any(row.changed for row in self.rows)

    @property
    def verdict(self) -> str:
        return MATCH if self.match else (WITHIN if self.passed else DIFFER)

    def __bool__(self) -> bool:
        return self.passed

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(f"{row.label} ({', '.join(row.changed)})" for row in self.rows if row.changed)

    def to_dict(self) -> dict:
        first = self.first_divergent
        return {
            "match": self.match,
            "verdict": self.verdict,
            "tolerance": self.policy.to_dict() if self.policy is not None else None,
            "run_a": {"path": self.run_a.path, "source": self.run_a.source, "model": self.run_a.model},
            "run_b": {"path": self.run_b.path, "source": self.run_b.source, "model": self.run_b.model},
            "models_differ": self.models_differ,
            "stages": [row.to_dict() for row in self.rows],
            "first_divergent_stage": first.stage if first else None,
            "first_divergent_tensor": first.tensor if first else None,
            "advice": self.advice,
            "not_captured": list(self.not_captured),
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
        n = math.prod(shape[:-1])
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
        if len(shape) == 2 and shape[0] == 1 and record == channels and itemsize > 1:
            # [1, K] of wider elements (a detection output's classes or scores): K values, not one record
            record, unit = itemsize, "rows" if entry.stage == "detections" else "elements"
        elif len(shape) != 3:
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


def record_count(entry: BufferEntry, size: int, layout: RecordLayout) -> int:
    """How many records (anchors) a buffer of `size` bytes holds: its shape's count when the bytes hold that
    many whole records (the chip's size_bytes may add a few padding bytes: Squeeze1 is 7,672 bytes for 1,917
    anchors of 4), else the whole records in it."""
    whole = size // layout.record_size
    if entry.shape and len(entry.shape) >= 2 and layout.record_size == (entry.shape[-1] or 0) * \
            _ITEMSIZE.get(entry.dtype or "uint8", 1):
        n = math.prod(entry.shape[:-1])
        if 0 < n <= whole and size - n * layout.record_size < layout.record_size:
            return n
    return whole


def counted(n: int, unit: str) -> str:
    """'1,917 anchors', '1 anchor'."""
    return f"{n:,} {unit[:-1] if n == 1 and unit.endswith('s') else unit}"


def _summary(diff: DiffResult, unit: str, count: int | None = None) -> str:
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
        of = counted(count if count is not None else diff.records_compared, unit)
        parts.append(f"{diff.records_differing:,} of {of} differ"
                     + (f" (first: {singular} {first})" if first is not None else ""))
    elif diff.trailing_differ:
        parts.append("only the bytes after the last whole record differ")
    elif not diff.bytes_identical and diff.size_a == diff.size_b:
        of = counted(count if count is not None else diff.records_compared, unit)
        parts.append(f"only pad lanes differ (0 of {of} in data lanes)")
    return "; ".join(parts) or "identical over the common length"


# --- detections -------------------------------------------------------------------------------------------

def read_detections(run: Run) -> tuple[list[Detection], int] | None:
    """The rows the PostProcess kernel wrote (boxes, classes, scores, num_detections), or None without them.
    The outputs do not say which anchor a row came from: `anchor` is -1."""
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
    if not np.isfinite(num):
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


def match_detections(dets_a: list[Detection], dets_b: list[Detection], threshold: float = IOU_MATCH,
                     labels=None):
    """Greedy one-to-one matching by IoU (the decode kernel's IoU; highest first, same class preferred on ties);
    the rest unmatched."""
    if not dets_a or not dets_b:
        return (), tuple(dets_a), tuple(dets_b)
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


def compare_detections(run_a: Run, run_b: Run, labels=None) -> DetectionsComparison | None:
    got_a, got_b = read_detections(run_a), read_detections(run_b)
    if got_a is None or got_b is None:
        return None
    (dets_a, num_a), (dets_b, num_b) = got_a, got_b
    pairs, only_a, only_b = match_detections(dets_a, dets_b, labels=labels)
    return DetectionsComparison(pairs, only_a, only_b, num_a, num_b, labels=labels, rows_a=tuple(dets_a),
                                rows_b=tuple(dets_b))


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
    from forensics.buffer.heat import diff_heat

    a = dump_a.read_array().reshape(geometry.num_anchors, layout.record_size)
    b = dump_b.read_array().reshape(geometry.num_anchors, layout.record_size)
    return diff_heat(a, b, layout)


def compare_runs(run_a, run_b, *, previous=None, geometry=None, diagnose: bool = True,
                 limit: int = DIFF_LIMIT, policy: TolerancePolicy | None = None, labels=None,
                 verify_files: bool = True) -> CompareResult:
    """Compare two runs (paths or loaded Runs). InputError when they share no buffer at all, or when `policy`
    names a tensor neither run has. Differing numeric buffers get error statistics and a verdict judged by
    the policy's tolerance for them; `labels` (class names by id) name the detections' classes.
    `verify_files=False` trusts the manifests' CRCs where the files' sizes agree (a batch: matching buffers
    are then never read)."""
    run_a = run_a if isinstance(run_a, Run) else load_run(run_a)
    run_b = run_b if isinstance(run_b, Run) else load_run(run_b)
    previous = previous if previous is None or isinstance(previous, Run) else load_run(previous)
    keys_a, keys_b = {b.key for b in run_a.buffers}, {b.key for b in run_b.buffers}
    if not keys_a & keys_b:
        def have(run):
            return ", ".join(b.label for b in run.buffers) or "nothing"

        raise InputError(f"the runs share no stage to compare: {run_a.path} has {have(run_a)}; "
                         f"{run_b.path} has {have(run_b)}")
    if policy is not None:
        policy.check_names(keys_a | keys_b)
    warnings = []
    models_differ = bool(run_a.model_sha256 and run_b.model_sha256 and run_a.model_sha256 != run_b.model_sha256)
    if models_differ:
        warnings.append(f"the runs were captured with different models ({run_a.model.get('path')} sha256 "
                        f"{run_a.model_sha256[:12]}..., {run_b.model.get('path')} sha256 {run_b.model_sha256[:12]}"
                        "...): comparing what can be compared")
    checks_a = {c.entry.key: c for c in verify_run(run_a, verify=verify_files)}
    checks_b = {c.entry.key: c for c in verify_run(run_b, verify=verify_files)}
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
        tol = (policy or TolerancePolicy()).for_buffer(*key)
        rows.append(_compare_pair(run_a, run_b, ca, cb, previous, geometry, diagnose, limit, tol))
    if labels is None:
        labels = recorded_labels(run_a) or recorded_labels(run_b)
    detections = compare_detections(run_a, run_b, labels=labels)
    if detections is not None:
        rows = [_with_detections(row, detections) if row.stage == "detections" and row.compared else row
                for row in rows]
    return CompareResult(run_a, run_b, tuple(rows), tuple(warnings), detections, models_differ, geometry, policy)


def recorded_labels(run: Run) -> tuple[str, ...] | None:
    """Class names a run recorded (`capture.labels` in its manifest: a list of names by class id)."""
    names = (run.capture or {}).get("labels")
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return tuple(names)
    return None


def _with_detections(row: StageRow, det: DetectionsComparison) -> StageRow:
    if row.tensor and row.status == Verdict.DIFFER:
        from dataclasses import replace

        return replace(row, summary=f"{row.summary}; {_detections_summary(det)}")
    return row


def element_type(entry: BufferEntry, layout: RecordLayout) -> tuple[str | None, float | None, int | None]:
    """The dtype to read a buffer's values as (None: bytes, no statistics) and its quantization."""
    if entry.stage == "params":
        return None, None, None
    dtype = entry.dtype or "uint8"
    try:
        itemsize = np.dtype(dtype).itemsize
    except TypeError:
        return None, None, None
    if np.dtype(dtype).kind not in "iuf" or layout.record_size % itemsize:
        return None, None, None
    scale = entry.scale if np.dtype(dtype).kind in "iu" else None
    return dtype, scale, (entry.zero_point or 0) if scale is not None else None


def _locate(entry: BufferEntry, layout: RecordLayout, unit: str, itemsize: int):
    names = layout.field_names if itemsize == 1 and layout.fields is not None else None
    if unit == "anchors":
        where = locator(record_size=layout.record_size, lane_names=names, itemsize=itemsize)
    else:
        where = locator(shape=entry.shape, unit=unit)
    if where is None:
        return lambda index: {}
    return where


def _picture_cells(entry: BufferEntry, layout: RecordLayout, unit: str, itemsize: int, size: int):
    """diff_dumps' `sample` for the error picture of a differing buffer: one map cell per (y, x) of a tensor
    that fills the buffer (its last dimension's elements), else per record."""
    shape = entry.shape
    if unit != "anchors" and shape and len(shape) >= 3 and not layout.pad_lanes and \
            int(np.prod(shape)) * itemsize == size:
        return int(shape[-1])
    return True


def _compare_pair(run_a, run_b, ca: BufferCheck, cb: BufferCheck, previous, geometry, diagnose, limit,
                  tol=None) -> StageRow:
    entry = ca.entry
    changed = tuple(name for name, c in (("A", ca), ("B", cb)) if c.status == "changed")
    if ca.status == "missing" or cb.status == "missing":
        which = " and ".join(n for n, c in (("A", ca), ("B", cb)) if c.status == "missing")
        return StageRow(entry.stage, entry.tensor, Verdict.MISSING, ca.size, cb.size, ca.crc32, cb.crc32,
                        f"file missing in {which}: not compared", changed)
    size_a, size_b = ca.size, cb.size
    if size_a == size_b and ca.crc32 == cb.crc32:
        layout, unit = buffer_layout(entry, size_a)
        what = counted(record_count(entry, size_a, layout), unit) if unit != "bytes" else f"{size_a:,} bytes"
        return StageRow(entry.stage, entry.tensor, Verdict.MATCH, size_a, size_b, ca.crc32, cb.crc32,
                        f"identical ({what})", changed, unit)
    if entry.stage == "instructions":  # link: a linked bitstream is answered with the link check (issue 23)
        from forensics.link.bugs import compare_stage

        linked = compare_stage(run_a, run_b, entry, cb.entry)
        if linked is not None:
            return StageRow(entry.stage, entry.tensor, linked[0], size_a, size_b, ca.crc32, cb.crc32, linked[1],
                            changed, findings=linked[2])
    dump_a, dump_b = run_a.open_buffer(entry), run_b.open_buffer(cb.entry)
    layout, unit = buffer_layout(entry, min(size_a, size_b))
    if min(size_a, size_b) == 0:
        return StageRow(entry.stage, entry.tensor, Verdict.DIFFER, size_a, size_b, ca.crc32, cb.crc32,
                        f"sizes differ: {size_a:,} vs {size_b:,} bytes (one is empty)", changed, unit)
    dtype, scale, zero_point = element_type(entry, layout)
    if dtype is None:
        diff = diff_dumps(dump_a, dump_b, layout, limit=limit, stats=False)
    else:
        itemsize = np.dtype(dtype).itemsize
        diff = diff_dumps(dump_a, dump_b, layout, limit=limit, policy=tol, dtype=dtype, scale=scale,
                          zero_point=zero_point, locate=_locate(entry, layout, unit, itemsize),
                          sample=_picture_cells(entry, layout, unit, itemsize, min(size_a, size_b)))
    findings = ()
    if diagnose:
        findings = _diagnose(dump_a, dump_b, layout, previous, entry)
    heat = None
    try:
        heat = _heat(geometry, dump_a, dump_b, layout, unit)
    except InputError:
        heat = None
    # The CRCs differ: WITHIN TOLERANCE when the values pass; pad lanes alone differing stay DIFFER as ever.
    status = WITHIN if diff.verdict == WITHIN else DIFFER
    return StageRow(entry.stage, entry.tensor, status, size_a, size_b, ca.crc32, cb.crc32,
                    _summary(diff, unit, record_count(entry, min(size_a, size_b), layout)), changed, unit, diff,
                    findings, heat)


def _diagnose(dump_a, dump_b, layout, previous: Run | None, entry: BufferEntry) -> tuple:
    """The named bring-up bugs behind one differing buffer (forensics.diagnose), with --previous for stale."""
    prev_dump = None
    if previous is not None:
        match = [b for b in previous.buffers if b.key == entry.key]
        if match and previous.has_file(match[0]):
            prev_dump = previous.open_buffer(match[0])
    return tuple(diagnose_dumps(dump_a, dump_b, layout=layout, previous=prev_dump).findings)


# --- batch support: one pair directory -> one summary row ----------------------------------------------------

def find_runs(directory) -> list[str]:
    """The run directories (holding manifest.json) directly inside `directory` (a path or an fsspec URL),
    sorted by name."""
    directory = os.fspath(directory)
    if remote.is_url(directory):
        return remote.find_runs(directory, MANIFEST)
    try:
        names = sorted(os.listdir(directory))
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", directory) from None
    return [os.path.join(directory, n) for n in names
            if not n.startswith(".") and os.path.isfile(os.path.join(directory, n, "manifest.json"))]
