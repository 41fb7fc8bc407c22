"""Compare two runs stage by stage in the story's order: MATCH / DIFFER per buffer with CRCs and a one-line
summary, the first divergent stage with what to do about it, per-tensor diff summaries, and the detections
side by side (matched by IoU).

The method is the story's: the first stage that differs is where the bug is; every later stage computed from it
is expected to differ because of it, and says so ("expected: follows from input") instead of naming faults of
its own. What a device or DMA wrote (params, instructions, input, raw) is explained with diagnose's names; the
CPU tail's stages (dequantized, detections) by the tail's own analysis. Differences no one should act on are
said and not counted: pad lanes and tile padding (from the manifest, else the run's model), detection rows past
num_detections, another runtime's dequantize rounding. A buffer whose file no longer matches its manifest CRC is
CHANGED (the evidence was edited after capture); stages present in one run only are listed, not compared.

The run pair's verdict, reasons and one-line message come from one function, `judge_compare`, beside the result
(and each row's from `judge_row`): every face prints that judgement and none chooses its own.
"""

from __future__ import annotations

import dataclasses
import functools
import os
import shlex
from dataclasses import dataclass, field

import numpy as np

from forensics.compare.crc import format_crc
from forensics.core.errors import InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.layout import RecordLayout
from forensics.core.tolerance import TolerancePolicy
from forensics.core.verdict import StrEnum, Verdict
from forensics.runs import causes, remote
from forensics.runs.detections import (IOU_MATCH, ROW_VALUES, DetectionPair, DetectionsComparison,  # noqa: F401
                                       compare_detections, detection_dict, detection_entries, detections_summary,
                                       match_detections, read_detections)
from forensics.runs.layouts import (ITEMSIZE as _ITEMSIZE, buffer_layout, counted, element_type,  # noqa: F401
                                    model_path, raw_view, record_count)
from forensics.runs.run import MANIFEST, SIDE_STAGES, STAGES, BufferCheck, BufferEntry, Run, load_run, verify_run

MATCH, WITHIN, DIFFER = Verdict.MATCH, Verdict.WITHIN, Verdict.DIFFER
DIFF_LIMIT = 8

ADVICE = {
    "instructions": "the instruction bitstream is mislinked: fix the driver's link step first (forensics link MODEL "
                    "--check DUMP names the bug); every later stage is expected to differ",  # link: issue 23
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

# What the advice for a stage takes for granted: the stages its bytes are computed from (the chip's input and
# its parameters are independent: an input that differs is a fact whatever the parameters were).
PREMISES = {stage: tuple(s for s in STAGES if s in causes.upstream(stage)) for stage in STAGES}
# Where to look once a stage is known to be the first that differs (ADVICE without its premise).
SUSPECT = {
    "raw": "look at the output DMA (buffer size, offset, completion, prefill left unwritten)",
    "tensor": "the relayout is wrong (tile order, 4-byte lane padding, the signed-type fix)",
    "dequantized": "check scale and zero_point and the runtime's dequantize rounding",
    "detections": "the post-processing differs (PostProcess options, anchors, NMS, runtime version or delegate)",
}
# Findings that name a stage's cause outright: the verdict line leads with them instead of the stage's advice.
CAUSE_KINDS = ("logged_fingerprint", "not_submitted", "buffer_order", "aliased", "foreign", "image", "placement",
               "resize")


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


class Bookkeeping(StrEnum):
    """Where a (stage, tensor) stands before its bytes are judged: in both runs as captured, in one run only,
    its file changed after capture or missing; a stage of neither run (or of one) is not captured."""

    COMPARED = "compared"
    ONLY_A = "only_a"
    ONLY_B = "only_b"
    CHANGED = "changed"
    MISSING = "missing"
    NOT_CAPTURED = "not_captured"


# The one place bookkeeping becomes a verdict: None is "its comparison says" for COMPARED and "not judged" for
# a buffer one run lacks; a file changed after capture never passes, a file the manifest lists and the disk
# lacks is MISSING.
BOOKKEEPING_VERDICT = {Bookkeeping.COMPARED: None, Bookkeeping.ONLY_A: None, Bookkeeping.ONLY_B: None,
                       Bookkeeping.NOT_CAPTURED: None, Bookkeeping.CHANGED: DIFFER,
                       Bookkeeping.MISSING: Verdict.MISSING}


@dataclass(frozen=True)
class StageRow:
    """One (stage, tensor) of the two runs."""

    stage: str
    tensor: str
    status: str  # MATCH / WITHIN TOLERANCE / DIFFER / ONLY_A / ONLY_B / MISSING: what the bytes say
    size_a: int | None
    size_b: int | None
    crc32_a: int | None
    crc32_b: int | None
    summary: str
    changed: tuple[str, ...] = ()  # "A" / "B": the file no longer matches its manifest
    unit: str = "bytes"
    diff: object | None = field(default=None, repr=False)  # forensics.compare.diff.DiffResult
    findings: tuple = ()
    heat: object | None = field(default=None, repr=False)  # forensics.buffer.heat.AnchorHeat for pictures
    bookkeeping: Bookkeeping = Bookkeeping.COMPARED
    follows: str | None = None        # the earlier row this difference is expected from
    reasons: tuple[Reason, ...] = ()  # differences ignored or tolerated (pad lanes, rows past num_detections, ...)
    hint: str = ""                    # diagnose's hint, when no finding names the difference

    @property
    def compared(self) -> bool:
        """Judged: both runs' bytes compared, a file missing, or a buffer whose absence is the finding."""
        return self.status in (MATCH, WITHIN, DIFFER, Verdict.MISSING)

    @property
    def judgement(self) -> Judgement | None:
        return judge_row(self)

    @property
    def verdict(self) -> Verdict | None:
        j = self.judgement
        return None if j is None else j.verdict

    @property
    def match(self) -> bool | None:
        return None if not self.compared else self.status == MATCH

    @property
    def passed(self) -> bool | None:
        """MATCH or WITHIN TOLERANCE and its files as captured (None when not compared)."""
        v = self.verdict
        return None if v is None else v.passed

    @property
    def diverges(self) -> bool:
        """The bytes say this buffer differs (DIFFER or MISSING), whatever its files' state."""
        return self.status in (DIFFER, Verdict.MISSING)

    @property
    def stats(self):
        return self.diff.stats if self.diff is not None else None

    @property
    def label(self) -> str:
        return self.stage if self.tensor == self.stage else f"{self.stage}:{self.tensor}"

    def finding(self, kind: str):
        return next((f for f in self.findings if _kind(f) == kind), None)

    # Kept by hand (not forensics.core.serial): the diff is written as a subset of its document (its statistics
    # beside it), which no DiffResult reads back from (from_dict reads a SavedDiff: what the tables show).
    def to_dict(self) -> dict:
        j = self.judgement
        out = {"stage": self.stage, "tensor": self.tensor, "match": self.match,
               "verdict": j.verdict if j is not None else None, "status": self.status,
               "bookkeeping": self.bookkeeping, "changed": list(self.changed), "size_a": self.size_a,
               "size_b": self.size_b,
               "crc32_a": format_crc(self.crc32_a) if self.crc32_a is not None else None,
               "crc32_b": format_crc(self.crc32_b) if self.crc32_b is not None else None,
               "summary": self.summary, "message": j.message if j is not None else self.summary,
               "follows": self.follows, "reasons": [r.to_dict() for r in self.reasons]}
        if self.hint:
            out["hint"] = self.hint
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
                if self.stats.histogram:  # the terminal's histogram line, drawn again from a saved document
                    edges, counts = self.stats.histogram
                    out["histogram"] = {"edges": np.asarray(edges).tolist(), "counts": np.asarray(counts).tolist()}
        if self.findings:
            out["findings"] = [f.to_dict() if hasattr(f, "to_dict") else f for f in self.findings]
        if self.heat is not None:
            out["heat"] = self.heat.to_dict() if hasattr(self.heat, "to_dict") else dict(self.heat)
        return out

    @classmethod
    def from_dict(cls, doc: dict) -> "StageRow":
        """A saved row: its facts as written (its match, verdict and message follow from them); its findings and
        heat as their documents, its diff a SavedDiff."""
        diff = SavedDiff.of(doc) if doc.get("diff") is not None else None
        return cls(doc["stage"], doc["tensor"], doc["status"], doc["size_a"], doc["size_b"], _crc_of(doc["crc32_a"]),
                   _crc_of(doc["crc32_b"]), doc["summary"], changed=tuple(doc.get("changed", ())),
                   unit=diff.unit if diff is not None else "bytes", diff=diff,
                   findings=tuple(doc.get("findings", ())), heat=doc.get("heat"),
                   bookkeeping=Bookkeeping(doc["bookkeeping"]), follows=doc.get("follows"),
                   reasons=_reasons_of(doc.get("reasons", ())), hint=doc.get("hint", ""))


def _crc_of(text: str | None) -> int | None:
    return None if text is None else int(text, 16)


def _reasons_of(docs) -> tuple[Reason, ...]:
    return tuple(Reason(d["code"], d.get("text", ""), bool(d.get("worded"))) for d in docs)


@dataclass(frozen=True)
class SavedDiff:
    """A saved row's diff: the keys its document holds (StageRow.to_dict's subset of the DiffResult's) and what the
    terminal shows from them (the first differing records, the error statistics); the DiffResult itself, with its
    layout and files, is made again only from the runs."""

    document: dict                      # the row's `diff`, its `unit` left out
    unit: str = "bytes"
    stats: object | None = None         # forensics.compare.stats.ErrorStats, its histogram read back too
    dtype: str | None = None
    check: dict | None = None

    @classmethod
    def of(cls, row: dict) -> "SavedDiff":
        document = {k: v for k, v in row["diff"].items() if k != "unit"}
        stats = None
        if row.get("stats") is not None:
            from forensics.compare.stats import ErrorStats

            stats = ErrorStats.from_dict(row["stats"])
            if row.get("histogram"):
                stats = dataclasses.replace(stats, histogram=(np.asarray(row["histogram"]["edges"], np.float64),
                                                              np.asarray(row["histogram"]["counts"], np.int64)))
        return cls(document, row["diff"].get("unit", "bytes"), stats, row.get("dtype"), row.get("check"))

    @property
    def records(self) -> tuple:
        from forensics.compare.diff import DifferingRecord

        return tuple(DifferingRecord(r["index"], r["offset"], bytes.fromhex(r["a"]), bytes.fromhex(r["b"]))
                     for r in self.document.get("records", ()))

    @property
    def records_truncated(self) -> bool:
        return bool(self.document.get("records_truncated"))

    @property
    def records_differing(self) -> int:
        return self.document.get("records_differing", 0)

    def to_dict(self) -> dict:
        out = dict(self.document)
        if self.stats is not None:
            out.update(stats=self.stats.to_dict(), dtype=self.dtype, check=self.check)
        return out


def _kind(f) -> str | None:
    return f.kind if hasattr(f, "kind") else (f.get("kind") if isinstance(f, dict) else None)


def _evidence(f) -> str:
    return f.evidence if hasattr(f, "evidence") else str(f.get("evidence", ""))


def judge_row(row: StageRow) -> Judgement | None:
    """One row's judgement: its bytes' verdict, never passing when a file changed after capture; None for a
    buffer one run lacks (not compared)."""
    if not row.compared:
        return None
    reasons = list(row.reasons)
    verdict = BOOKKEEPING_VERDICT.get(row.bookkeeping) or Verdict(row.status)
    message = row.summary
    if row.changed:
        verdict = DIFFER
        who = " and ".join(row.changed)
        reasons.insert(0, Reason("changed_after_capture", f"{who}'s file changed after capture"))
        message = f"{who}'s file changed after capture; {message}"
    if row.diverges and row.follows:
        reasons.append(Reason("follows", f"expected: follows from {row.follows}"))
        message = f"{message}; expected: follows from {row.follows}"
    return Judgement(verdict, message, tuple(reasons))


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
    images: dict | None = None  # the two runs' `image` stages: {"same", "crc32_a", "crc32_b", "name_a", "name_b"}

    @property
    def first_divergent(self) -> StageRow | None:
        """The first row whose bytes differ (DIFFER or MISSING); a stage WITHIN TOLERANCE passes."""
        for row in self.rows:
            if row.diverges:
                return row
        return None

    @property
    def independent(self) -> tuple[StageRow, ...]:
        """The rows that differ and follow from no earlier row: each a cause of its own (the first among them)."""
        return tuple(row for row in self.rows if row.diverges and not row.follows)

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

    @functools.cached_property
    def judgement(self) -> Judgement:
        return judge_compare(self)

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict

    @property
    def match(self) -> bool:
        return self.judgement.verdict is MATCH

    @property
    def passed(self) -> bool:
        """Every common buffer MATCHes or is WITHIN TOLERANCE, and no file changed after capture."""
        return self.judgement.passed

    def __bool__(self) -> bool:
        return self.passed

    @property
    def changed(self) -> tuple[str, ...]:
        return tuple(f"{row.label} ({', '.join(row.changed)})" for row in self.rows if row.changed)

    # Kept by hand (not forensics.core.serial): the runs are written as path, source and model only and the rows
    # as StageRow's documents; from_dict reads back what the report shows from them, not the runs' buffers.
    def to_dict(self) -> dict:
        first = self.first_divergent
        return {
            "match": self.match,
            **self.judgement.to_dict(),
            "tolerance": self.policy.to_dict() if self.policy is not None else None,
            "run_a": {"path": self.run_a.path, "source": self.run_a.source, "model": self.run_a.model},
            "run_b": {"path": self.run_b.path, "source": self.run_b.source, "model": self.run_b.model},
            "models_differ": self.models_differ,
            "images": self.images,
            "stages": [row.to_dict() for row in self.rows],
            "first_divergent_stage": first.stage if first else None,
            "first_divergent_tensor": first.tensor if first else None,
            "advice": self.advice,
            "not_captured": list(self.not_captured),
            "changed": list(self.changed),
            "warnings": list(self.warnings),
            "detections": self.detections.to_dict() if self.detections else None,
        }

    @classmethod
    def from_dict(cls, doc: dict) -> "CompareResult":
        """A saved comparison: its rows, detections, images and tolerance as written; each run by its path, source
        and model (its buffers stay in the run); the judgement, advice and first divergent stage follow again."""
        detections = DetectionsComparison.from_dict(doc["detections"]) if doc.get("detections") else None
        return cls(_run_of(doc["run_a"]), _run_of(doc["run_b"]), tuple(StageRow.from_dict(r) for r in doc["stages"]),
                   tuple(doc.get("warnings", ())), detections, bool(doc.get("models_differ")),
                   policy=_policy_of(doc.get("tolerance")), images=doc.get("images"))


def _run_of(doc: dict) -> Run:
    return Run(doc["path"], doc["source"], (), model=doc.get("model"))


def _policy_of(doc: dict | None) -> TolerancePolicy | None:
    """A saved tolerance policy (TolerancePolicy.to_dict's document) read back."""
    if doc is None:
        return None
    from forensics.core.tolerance import Tolerance

    def one(d: dict) -> Tolerance:
        return Tolerance(atol=float(d["atol"]), lsb=d.get("atol_unit") == "lsb", rtol=float(d["rtol"]),
                         check=d["check"])

    return TolerancePolicy(one(doc["default"]), tuple((name, one(d)) for name, d in doc.get("tensors", {}).items()))


def _cause_text(row: StageRow) -> str | None:
    """The evidence of the finding that names a row's cause outright, when it has one (for the CPU tail's
    stages, the tail's analysis is always that)."""
    for f in row.findings:
        if _kind(f) in CAUSE_KINDS or row.stage in causes.CPU_STAGES:
            return f"{_kind(f)}: {_evidence(f)}"
    return None


def _divergence_reasons(result: CompareResult, first) -> list:
    """The first divergent stage's reason, each other stage differing on its own, and the stages that follow."""
    reasons = [Reason("first_divergent", f"{first.label}: {_cause_text(first) or result.advice}")]
    for row in result.independent:
        if row is not first:
            reasons.append(Reason("also_divergent", f"{row.label} differs on its own: "
                                                    f"{_cause_text(row) or row.summary}"))
    follow = [row.label for row in result.rows if row.diverges and row.follows]
    if follow:
        reasons.append(Reason("follows", f"{_names(follow)} {'is' if len(follow) == 1 else 'are'} expected to "
                                         "differ: each follows from an earlier stage"))
    return reasons


def _setting_reasons(result: CompareResult) -> list:
    """What differs around the buffers: the images, the models, what only one run captured."""
    reasons = []
    if result.images is not None and not result.images["same"]:
        reasons.append(Reason("images_differ", f"the runs' inputs were made from different images "
                                               f"({result.images['name_a']}, {result.images['name_b']})"))
    if result.models_differ:
        reasons.append(Reason("models_differ", "the runs were captured with different models"))
    if result.not_captured:
        reasons.append(Reason("not_captured", f"not captured in both runs: {', '.join(result.not_captured)}"))
    return reasons


def _within_message(within: list) -> str:
    named = [r.label + (": another runtime's dequantize rounding" if any(x.code == "dequantize_rounding"
                                                                          for x in r.reasons) else "")
             for r in within]
    return (f"{len(within)} buffer{'s differ' if len(within) != 1 else ' differs'} within tolerance "
            f"({', '.join(named)}); the others match")


def _match_message(rows, harmless: list) -> str:
    message = f"all {len([row for row in rows if row.compared])} common buffers match"
    if harmless:
        message += " (" + "; ".join(f"{row.label}: {reason.text}" for row, reason in harmless) + ")"
    return message


def judge_compare(result: CompareResult) -> Judgement:
    """The run pair's one judgement: DIFFER when a buffer differs (the first divergent stage and what to do:
    its named cause, else the stage's advice) or a file changed after capture; WITHIN TOLERANCE when every
    difference is within a tolerance; else MATCH. The reasons carry every clause that decided, and what was
    ignored (pad lanes, rows past num_detections) or tolerated (another runtime's rounding)."""
    rows = result.rows
    reasons = []
    changed = [row for row in rows if row.changed]
    if changed:
        reasons.append(Reason("changed_after_capture",
                              f"{_names(result.changed)} changed after capture: not the evidence captured"))
    first = result.first_divergent
    if first is not None:
        reasons += _divergence_reasons(result, first)
    within = [row for row in rows if row.status == WITHIN]
    if within:
        reasons.append(Reason("within_tolerance", f"{_names([r.label for r in within])} differ within tolerance"))
    harmless = [(row, reason) for row in rows for reason in row.reasons]
    reasons += [Reason(reason.code, f"{row.label}: {reason.text}") for row, reason in harmless]
    reasons += _setting_reasons(result)
    if first is not None:
        verdict = DIFFER
        message = f"first divergent stage: {first.label}: {_cause_text(first) or result.advice}"
        if changed:
            message = f"{_names(result.changed)} changed after capture; {message}"
    elif changed:
        verdict = DIFFER
        message = (f"{_names(result.changed)} changed after capture: the files are not the evidence captured "
                   "(every common buffer matches as the files are now)")
    elif within:
        verdict, message = WITHIN, _within_message(within)
    else:
        verdict, message = MATCH, _match_message(rows, harmless)
    return Judgement(verdict, message, tuple(reasons))


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
    """Per-anchor |a - b| for a heatmap, when the buffer holds one record per anchor of the geometry (a raw
    layer's tile padding after them is no anchor's)."""
    if geometry is None or unit != "anchors" or not getattr(geometry, "is_grid", False):
        return None
    n = geometry.num_anchors
    needed = n * layout.record_size
    if dump_a.size != dump_b.size or layout.count not in (None, n) or \
            (dump_a.size != needed and layout.count != n):
        return None
    from forensics.buffer.heat import diff_heat

    a = dump_a.read_array(0, needed).reshape(n, layout.record_size)
    b = dump_b.read_array(0, needed).reshape(n, layout.record_size)
    return diff_heat(a, b, layout)


@dataclass
class _Pair:
    """What every buffer pair of one comparison shares."""

    run_a: Run
    run_b: Run
    previous: Run | None
    geometry: object | None
    diagnose: bool
    limit: int
    model: str | None                       # run A's model (or the one given): raw layouts, link checks
    prefixes: dict                          # (stage, tensor) -> bytes compared (detection rows below num)
    policy: TolerancePolicy
    tail: dict = field(default_factory=dict)  # stage -> the CPU tail's analysis, asked once per stage


def compare_runs(run_a, run_b, *, previous=None, geometry=None, diagnose: bool = True,
                 limit: int = DIFF_LIMIT, policy: TolerancePolicy | None = None, labels=None,
                 verify_files: bool = True, model=None) -> CompareResult:
    """Compare two runs (paths or loaded Runs). InputError when they share no buffer at all, or when `policy`
    names a tensor neither run has. Differing numeric buffers get error statistics and a verdict judged by
    the policy's tolerance for them; `labels` (class names by id) name the detections' classes. `model` lays
    out raw buffers whose manifest says nothing of their lanes, and checks links (default: run A's model when
    its file is there). `diagnose=False` names no bug (a batch). `verify_files=False` trusts the manifests'
    CRCs where the files' sizes agree (a batch: matching buffers are then never read)."""
    run_a, run_b, previous = (_loaded(run) for run in (run_a, run_b, previous))
    _check_shared(run_a, run_b, policy)
    warnings = []
    models_differ = bool(run_a.model_sha256 and run_b.model_sha256 and run_a.model_sha256 != run_b.model_sha256)
    if models_differ:
        warnings.append(f"the runs were captured with different models ({run_a.model.get('path')} sha256 "
                        f"{run_a.model_sha256[:12]}..., {run_b.model.get('path')} sha256 {run_b.model_sha256[:12]}"
                        "...): comparing what can be compared")
    checks_a = {c.entry.key: c for c in verify_run(run_a, verify=verify_files)}
    checks_b = {c.entry.key: c for c in verify_run(run_b, verify=verify_files)}
    for run, checks in ((run_a, checks_a), (run_b, checks_b)):
        warnings.extend(check.message(run.path) for check in checks.values() if not check.ok)
    if labels is None:
        labels = recorded_labels(run_a) or recorded_labels(run_b)
    detections = compare_detections(run_a, run_b, labels=labels)
    pair = _Pair(run_a, run_b, previous, geometry, diagnose, limit, model_path(run_a, model),
                 _detection_prefixes(run_a, run_b, detections), policy or TolerancePolicy())
    rows = []
    for key in _ordered_keys(run_a, run_b):
        ca, cb = checks_a.get(key), checks_b.get(key)
        if ca is None or cb is None:
            rows.append(_one_sided(run_a, run_b, ca, cb))
            continue
        rows.append(_compare_pair(pair, ca, cb))
    rows = _explain(pair, rows)
    rows = _tolerated_tail(pair, rows, detections)
    if detections is not None:
        rows = [_with_detections(row, detections) if row.stage == "detections" and row.compared else row
                for row in rows]
    return CompareResult(run_a, run_b, tuple(rows), tuple(warnings), detections, models_differ, geometry, policy,
                         _images(run_a, run_b))


def _loaded(run):
    """A run given by its path, loaded (a Run, or None, as it is)."""
    return run if run is None or isinstance(run, Run) else load_run(run)


def _check_shared(run_a: Run, run_b: Run, policy: TolerancePolicy | None) -> None:
    """InputError when the runs share no buffer, or when the policy names a tensor neither has."""
    keys_a, keys_b = {b.key for b in run_a.buffers}, {b.key for b in run_b.buffers}
    if not keys_a & keys_b:
        def have(run):
            return ", ".join(b.label for b in run.buffers) or "nothing"

        raise InputError(f"the runs share no stage to compare: {run_a.path} has {have(run_a)}; "
                         f"{run_b.path} has {have(run_b)}")
    if policy is not None:
        policy.check_names(keys_a | keys_b)


def _one_sided(run_a, run_b, ca, cb) -> StageRow:
    only = ca or cb
    side = "A" if ca else "B"
    changed = (side,) if only.status == "changed" else ()
    return StageRow(only.entry.stage, only.entry.tensor, f"ONLY_{side}", only.size if ca else None,
                    only.size if cb else None, only.crc32 if ca else None, only.crc32 if cb else None,
                    f"only in {side} ({(run_a if ca else run_b).source}): not compared", changed=changed,
                    bookkeeping=Bookkeeping.ONLY_A if ca else Bookkeeping.ONLY_B)


def recorded_labels(run: Run) -> tuple[str, ...] | None:
    """Class names a run recorded (`capture.labels` in its manifest: a list of names by class id)."""
    names = (run.capture or {}).get("labels")
    if isinstance(names, list) and names and all(isinstance(n, str) for n in names):
        return tuple(names)
    return None


def _with_detections(row: StageRow, det: DetectionsComparison) -> StageRow:
    if row.tensor and row.status == DIFFER:
        return dataclasses.replace(row, summary=f"{row.summary}; {detections_summary(det)}")
    return row


def _detection_prefixes(run_a, run_b, det: DetectionsComparison | None) -> dict:
    """{(stage, tensor): bytes} of the detection outputs compared only in their rows below num_detections
    (the larger of the two runs' counts: rows past it are whatever the buffer held, LiteRT leaves them)."""
    if det is None:
        return {}
    entries_a, entries_b = detection_entries(run_a), detection_entries(run_b)
    if entries_a is None or entries_b is None:
        return {}
    rows = max(det.num_a, det.num_b)
    out = {}
    for role, values in ROW_VALUES.items():
        ea, eb = entries_a[role], entries_b[role]
        if ea.key != eb.key:
            continue
        length = rows * values * 4
        if length < max(ea.size, eb.size):
            out[ea.key] = length
    return out


def _prefix(dump, length: int | None):
    """The first `length` bytes of a dump (the dump itself when it is no longer)."""
    if length is None or length >= dump.size:
        return dump
    return dataclasses.replace(dump, size=length, slice_length=length)


def _locate(entry: BufferEntry, layout: RecordLayout, unit: str, itemsize: int):
    from forensics.compare.stats import locator

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


def _compare_pair(pair: _Pair, ca: BufferCheck, cb: BufferCheck) -> StageRow:
    run_a, run_b = pair.run_a, pair.run_b
    entry = ca.entry
    changed = tuple(name for name, c in (("A", ca), ("B", cb)) if c.status == "changed")
    bookkeeping = Bookkeeping.CHANGED if changed else Bookkeeping.COMPARED
    if ca.status == "missing" or cb.status == "missing":
        which = " and ".join(n for n, c in (("A", ca), ("B", cb)) if c.status == "missing")
        return StageRow(entry.stage, entry.tensor, Verdict.MISSING, ca.size, cb.size, ca.crc32, cb.crc32,
                        f"file missing in {which}: not compared", changed, bookkeeping=Bookkeeping.MISSING)
    size_a, size_b = ca.size, cb.size
    view = raw_view(pair.model, entry, size_a) if size_a == size_b else None
    if size_a == size_b and ca.crc32 == cb.crc32:
        layout, unit = buffer_layout(entry, size_a, view)
        what = counted(record_count(entry, size_a, layout), unit) if unit != "bytes" else f"{size_a:,} bytes"
        return StageRow(entry.stage, entry.tensor, MATCH, size_a, size_b, ca.crc32, cb.crc32,
                        f"identical ({what})", changed, unit, bookkeeping=bookkeeping)
    if entry.stage == "instructions":  # link: a linked bitstream is answered with the link check (issue 23)
        linked = _linked(pair, entry, cb.entry)
        if linked is not None:
            status, summary, findings = linked
            return StageRow(entry.stage, entry.tensor, status, size_a, size_b, ca.crc32, cb.crc32, summary,
                            changed, findings=findings, bookkeeping=bookkeeping)
    length = pair.prefixes.get(entry.key)
    layout, unit = buffer_layout(entry, min(size_a, size_b), view)
    dump_a, dump_b = _prefix(run_a.open_buffer(entry), length), _prefix(run_b.open_buffer(cb.entry), length)
    if min(size_a, size_b) == 0:
        return StageRow(entry.stage, entry.tensor, DIFFER, size_a, size_b, ca.crc32, cb.crc32,
                        f"sizes differ: {size_a:,} vs {size_b:,} bytes (one is empty)", changed, unit,
                        bookkeeping=bookkeeping)
    diff, dtype = _diff_of(pair, entry, dump_a, dump_b, layout, unit)
    try:
        heat = _heat(pair.geometry, dump_a, dump_b, layout, unit)
    except InputError:
        heat = None
    count = record_count(entry, min(dump_a.size, dump_b.size), layout)
    status, summary, reasons = _judged(pair, entry, diff, dtype, (dump_a, dump_b), unit, count,
                                       lambda: _ignored(entry, layout, length, view, dump_a.size))
    return StageRow(entry.stage, entry.tensor, status, size_a, size_b, ca.crc32, cb.crc32, summary, changed, unit,
                    diff, (), heat, bookkeeping=bookkeeping, reasons=reasons)


def _diff_of(pair: _Pair, entry: BufferEntry, dump_a, dump_b, layout: RecordLayout, unit: str):
    """(DiffResult, dtype) of a buffer pair: its elements' statistics judged by the policy's tolerance for it when
    the element type is known (dtype None: its bytes alone)."""
    from forensics.compare.diff import diff_dumps

    dtype, scale, zero_point = element_type(entry, layout)
    if dtype is None:
        return diff_dumps(dump_a, dump_b, layout, limit=pair.limit, stats=False), None
    tol = pair.policy.for_buffer(*entry.key)
    itemsize = np.dtype(dtype).itemsize
    return diff_dumps(dump_a, dump_b, layout, limit=pair.limit, policy=tol, dtype=dtype, scale=scale,
                      zero_point=zero_point, locate=_locate(entry, layout, unit, itemsize),
                      sample=_picture_cells(entry, layout, unit, itemsize, min(dump_a.size, dump_b.size))), dtype


def _judged(pair: _Pair, entry: BufferEntry, diff, dtype, dumps, unit: str, count, ignored):
    """(status, summary, reasons) of a diffed pair: MATCH when only bytes no one compares differ (`ignored()`
    says which), WITHIN TOLERANCE or DIFFER as the diff judged it, and a float32 dequantized buffer that differs
    only by another runtime's dequantize rounding WITHIN TOLERANCE with that reason."""
    if diff.verdict == MATCH:  # the CRCs differ, the compared bytes do not: only bytes no one compares differ
        reason = ignored()
        return MATCH, f"{counted(count, unit)} match; {reason.text}", (reason,)
    status = WITHIN if diff.verdict == WITHIN else DIFFER
    summary = _summary(diff, unit, count)
    if status == DIFFER and entry.stage == "dequantized" and dtype == "float32":
        rounding = _rounding(pair, entry, *dumps)
        if rounding is not None:
            return WITHIN, f"{summary}; {rounding.text}", (rounding,)
    return status, summary, ()


def _ignored(entry: BufferEntry, layout: RecordLayout, length, view, size: int) -> Reason:
    """What differs where a matching buffer's CRCs do not: the rows past num_detections, pad lanes, tile padding."""
    if length is not None:
        rows = length // (4 * ROW_VALUES.get(entry.role or "", 1)) if entry.role in ROW_VALUES else None
        return Reason("past_num_detections",
                      f"only the rows past num_detections differ ({rows:,} rows compared; the kernel leaves the "
                      "others uninitialised): ignored" if rows is not None else
                      "only the rows past num_detections differ: ignored")
    parts = []
    if layout.pad_lanes:
        lanes = ", ".join(map(str, layout.pad_lanes))
        parts.append(f"pad lane{'s' if len(layout.pad_lanes) > 1 else ''} {lanes} of every record")
    if layout.count is not None and size > layout.offset + layout.count * layout.record_size:
        parts.append(f"the {size - layout.offset - layout.count * layout.record_size:,} bytes of tile padding "
                     "after the last record")
    where = ", as the model's output layer lays it out" if view is not None and layout is view.layout else ""
    return Reason("pad_lanes", f"only padding differs, ignored as diff and diagnose ignore it: "
                               f"{' and '.join(parts) or 'the bytes past the records'}{where}")


def _rounding(pair: _Pair, entry: BufferEntry, dump_a, dump_b) -> Reason | None:
    """WITHIN TOLERANCE's reason for a float32 dequantized buffer that differs only by another runtime's
    dequantize rounding, when the quantization it was dequantized from is known."""
    if dump_a.size != dump_b.size or dump_a.size > 64 << 20:
        return None
    source = _dequantize_quant(pair, entry)
    if source is None:
        return None
    scale, zero_point, where = source
    a = np.frombuffer(dump_a.read(0, dump_a.size), "<f4")
    b = np.frombuffer(dump_b.read(0, dump_b.size), "<f4")
    delta = causes.within_rounding(a, b, scale, zero_point)
    if delta is None:
        return None
    return Reason("dequantize_rounding", causes.rounding_text(delta, scale, zero_point, where))


def _dequantize_quant(pair: _Pair, entry: BufferEntry):
    """(scale, zero_point, where it was found) of the codes a dequantized buffer was computed from: the buffer's
    own manifest fields, else the model's DEQUANTIZE op, else the one tensor-stage buffer of run A with as many
    elements and a scale."""
    if entry.scale is not None:
        return entry.scale, entry.zero_point or 0, "the buffer's manifest"
    found = causes.dequantize_source(pair.model, entry.tensor)
    if found is not None:
        return found
    n = entry.size // 4
    same = [b for b in pair.run_a.buffers if b.stage == "tensor" and b.scale is not None
            and b.size == n * _ITEMSIZE.get(b.dtype or "uint8", 1)]
    if len(same) == 1:
        return same[0].scale, same[0].zero_point or 0, f"tensor:{same[0].tensor}"
    return None


def _linked(pair: _Pair, entry_a: BufferEntry, entry_b: BufferEntry):
    """(status, summary, findings) of a differing `instructions` buffer from the link check of B's against run
    A's model (two links of one bitstream differ in the addresses the drivers chose: B passes when it is
    LINKED); None without a model to check against."""
    from forensics.link.bugs import stage_findings

    result = causes.link_check(pair.run_b, entry_b, pair.model)
    if result is None:
        return None
    summary = f"link check of B: {result.judgement.line}"  # against run A's model, in the link part's words
    return (MATCH if result.verdict == Verdict.LINKED else DIFFER), summary, stage_findings(result)


def _summary(diff, unit: str, count: int | None = None) -> str:
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


# --- what explains the rows: causes across buffers, stages and runs ------------------------------------------

def _explain(pair: _Pair, rows: list[StageRow]) -> list[StageRow]:
    """The rows with what explains them: the log's fingerprints, executables never submitted, buffers bound in
    the wrong order; then, in stage order, each differing row follows from an earlier one or gets its own
    analysis (the image's placement or resize for an input, diagnose for what a device wrote, the CPU tail's
    replay for dequantized and detections)."""
    rows = _logged(pair, rows)
    rows = _unsubmitted(pair, rows)
    rows = _crossed(rows)
    out: list[StageRow] = []
    for row in rows:
        if row.diverges and not _cause_text(row):
            earlier = _follows(row, out)
            if earlier is not None:
                row = dataclasses.replace(row, follows=earlier)
            else:
                row = _analyse(pair, row, out)
        out.append(row)
    return out


# How far apart two runs' detection boxes may be and still be one box that another runtime's dequantize rounding
# moved (box coordinates are O(1); that rounding moves them by a few float32 ulps)
ROUNDED_BOX = 1e-4


def _rounded_dequantized(rows: list[StageRow]) -> list[str] | None:
    """The labels of the dequantized rows WITHIN TOLERANCE by another runtime's dequantize rounding, when no
    dequantized row diverges (None when one does)."""
    deq = [r for r in rows if r.stage == "dequantized" and r.compared]
    if any(r.diverges for r in deq):
        return None
    return [r.label for r in deq if r.status == WITHIN and any(x.code == "dequantize_rounding" for x in r.reasons)]


def _same_objects(detections) -> bool:
    """Every detection matched, with the same class and score and its box moved by rounding at most."""
    return not detections.only_a and not detections.only_b and all(
        p.class_a == p.class_b and p.score_a == p.score_b and p.box_delta <= ROUNDED_BOX for p in detections.pairs)


def _replay_follows(pair: _Pair) -> bool:
    """Without the model, nothing to ask; with it, the tail's replay says B's detections are the kernel's on B's
    own dequantized outputs."""
    if pair.model is None:
        return True
    replay = pair.tail.get("replay")
    explained = replay.of("detections") if replay is not None else None
    return explained is not None and explained.kind == "follows"


def _tolerated_tail(pair: _Pair, rows: list[StageRow], detections) -> list[StageRow]:
    """Detections computed from dequantized outputs that differ from A's only by another runtime's dequantize
    rounding, the same objects (class, score) with boxes moved by no more than that rounding moves them: WITHIN
    TOLERANCE, the rounding their reason. With the model, the tail's replay must also say B's detections are
    the kernel's on B's own dequantized outputs."""
    rounded = _rounded_dequantized(rows)
    targets = [r for r in rows if r.stage == "detections" and r.status == DIFFER and not r.follows and not r.changed]
    if not rounded or not targets or detections is None:
        return rows
    if not _same_objects(detections) or not _replay_follows(pair):
        return rows
    moved = max((p.box_delta for p in detections.pairs), default=0.0)
    reason = Reason("dequantize_rounding", f"the same {detections.num_a} detections (class and score), boxes "
                                           f"within {moved:.3g}: computed from {_names(rounded)}, which differ "
                                           "only by another runtime's dequantize rounding, tolerated")
    chosen = {id(r) for r in targets}
    return [dataclasses.replace(r, status=WITHIN, reasons=tuple(r.reasons) + (reason,), findings=(),
                                summary=f"{r.summary}; {reason.text}")
            if id(r) in chosen else r for r in rows]


def _follows(row: StageRow, earlier: list[StageRow]) -> str | None:
    """The earlier differing row this row's bytes are computed from (the same tensor's, else the first)."""
    before = causes.upstream(row.stage)
    candidates = [r for r in earlier if r.diverges and r.stage in before]
    if not candidates:
        return None
    same = [r for r in candidates if r.tensor == row.tensor]
    return (same[-1] if same else candidates[0]).label


def _logged(pair: _Pair, rows: list[StageRow]) -> list[StageRow]:
    """A logged fingerprint that disagrees with its dump makes that buffer differ, the log line its evidence."""
    items = {}
    for who, run in (("A", pair.run_a), ("B", pair.run_b)):
        for item in causes.log_disagreements(run):
            items.setdefault((item["stage"], item["tensor"]), []).append(dict(item, run=who))
    if not items:
        return rows
    out = []
    for row in rows:
        found = items.get((row.stage, row.tensor))
        if found and row.status not in ("ONLY_A", "ONLY_B"):
            f = causes.logged_finding(found)
            summary = row.summary if row.diverges else f"{row.summary}, but {found[0]['run']}'s log disagrees"
            row = dataclasses.replace(row, status=DIFFER if row.status != Verdict.MISSING else row.status,
                                      summary=summary, findings=(f,) + tuple(row.findings))
        out.append(row)
    return out


def _unsubmitted(pair: _Pair, rows: list[StageRow]) -> list[StageRow]:
    """An instructions buffer of A's PARAMETER_CACHING executable that B has none of: not_submitted."""
    missing = causes.not_submitted(pair.run_a, pair.run_b, pair.model)
    if not missing:
        return rows
    from forensics.link.bugs import stage_executable

    out, said = [], set()
    for row in rows:
        where = stage_executable(row.tensor) if row.stage == "instructions" else None
        if row.bookkeeping is Bookkeeping.ONLY_A and where and where[0] in missing and where[0] not in said:
            said.add(where[0])
            row = dataclasses.replace(row, status=DIFFER, findings=(missing[where[0]],),
                                      summary=f"only in A: B never submitted executable {where[0]} "
                                              "(PARAMETER_CACHING)")
        out.append(row)
    return out


def _crossed(rows: list[StageRow]) -> list[StageRow]:
    """Buffers of one stage bound in the wrong order: each of B's that differs equals another of A's."""
    by_stage = {}
    for row in rows:
        if row.bookkeeping in (Bookkeeping.COMPARED, Bookkeeping.CHANGED) and row.crc32_a is not None:
            by_stage.setdefault(row.stage, []).append(row)
    found = {}
    for stage_rows in by_stage.values():
        holds = causes.crossed([(r.label, (r.size_a, r.crc32_a), (r.size_b, r.crc32_b)) for r in stage_rows])
        for r in stage_rows:
            if r.label in holds:
                found[r.label] = causes.crossed_finding(r.label, holds[r.label], r.crc32_b, holds)
    if not found:
        return rows
    return [dataclasses.replace(r, status=DIFFER, findings=(found[r.label],) + tuple(r.findings))
            if r.label in found else r for r in rows]


def _analyse(pair: _Pair, row: StageRow, earlier: list[StageRow]) -> StageRow:
    """A row that differs on its own: the input's image explanations, diagnose for what a device or DMA wrote
    (and a tensor standing for an uncaptured raw output), the CPU tail's replay for its stages."""
    if row.status == Verdict.MISSING or row.size_a is None or row.size_b is None:
        return row
    if row.stage == "input":
        found = _input_cause(pair, row)
        if found is not None:
            return dataclasses.replace(row, findings=tuple(row.findings) + (found,))
    if row.stage == "params":
        found = _foreign(pair, row)
        if found is not None:
            return dataclasses.replace(row, findings=tuple(row.findings) + (found,))
    if row.stage in causes.CPU_STAGES:
        found = _tail(pair, row)
        return dataclasses.replace(row, findings=tuple(row.findings) + ((found,) if found is not None else ()))
    found = _aliased(pair, row) if row.stage == "raw" else _skipped(pair, row, earlier) \
        if row.stage == "tensor" else None
    if found is not None:
        return dataclasses.replace(row, findings=tuple(row.findings) + (found,))
    if not pair.diagnose:
        return row
    raw_matched = any(r.stage == "raw" and r.compared and not r.diverges for r in earlier)
    return _diagnosed(pair, row, dma=row.stage in causes.DMA_STAGES or not raw_matched)


def _entries(pair: _Pair, row: StageRow) -> tuple[BufferEntry, BufferEntry]:
    return pair.run_a.buffer(row.stage, row.tensor), pair.run_b.buffer(row.stage, row.tensor)


def _diagnosed(pair: _Pair, row: StageRow, *, dma: bool) -> StageRow:
    """diagnose's findings for a row (with --previous for stale); without `dma` (a tensor computed from a raw
    output that matched) the names of what a device or DMA does are left out, and so is the hint that names
    them. Diagnose's hint is carried when no finding is left."""
    from forensics.diagnose import diagnose_dumps

    entry_a, entry_b = _entries(pair, row)
    dump_a, dump_b = pair.run_a.open_buffer(entry_a), pair.run_b.open_buffer(entry_b)
    layout = row.diff.layout if row.diff is not None else buffer_layout(entry_a, min(dump_a.size, dump_b.size))[0]
    prev_dump = None
    if pair.previous is not None:
        match = [b for b in pair.previous.buffers if b.key == entry_a.key]
        if match and pair.previous.has_file(match[0]):
            prev_dump = pair.previous.open_buffer(match[0])
    try:
        result = diagnose_dumps(dump_a, dump_b, layout=layout, previous=prev_dump)
    except InputError:
        return row
    findings = tuple(f for f in result.findings if dma or f.kind not in causes.DMA_KINDS)
    hint = result.hint if not findings and (dma or not result.findings) else ""
    return dataclasses.replace(row, findings=tuple(row.findings) + findings, hint=hint)


def _aliased(pair: _Pair, row: StageRow):
    """A raw output of B's that holds another of B's outputs: the two were written to one address."""
    entry_a, entry_b = _entries(pair, row)
    others = [b for b in pair.run_b.buffers if b.stage == row.stage and b.key != entry_b.key]
    if not others or max((b.size for b in others + [entry_b]), default=0) > 64 << 20:
        return None
    data = {b.label: pair.run_b.read_buffer(b) for b in others if pair.run_b.has_file(b)}
    return causes.aliased(row.label, pair.run_a.read_buffer(entry_a), pair.run_b.read_buffer(entry_b), data)


def _skipped(pair: _Pair, row: StageRow, earlier: list[StageRow]):
    """A tensor of B's that is its raw output as the chip laid it out: the relayout was skipped."""
    entry_b = pair.run_b.buffer(row.stage, row.tensor)
    raws = [b for b in pair.run_b.buffers if b.key == ("raw", row.tensor)]
    if not raws or not pair.run_b.has_file(raws[0]) or raws[0].size > 64 << 20 or raws[0].size < entry_b.size:
        return None
    raw_row = next((r for r in earlier if (r.stage, r.tensor) == ("raw", row.tensor) and r.diff is not None), None)
    layout = raw_row.diff.layout if raw_row is not None else None
    record = layout.record_size if layout is not None and layout.pad_lanes else None
    return causes.relayout_skipped(row.label, pair.run_b.read_buffer(entry_b), pair.run_b.read_buffer(raws[0]),
                                   record)


def _foreign(pair: _Pair, row: StageRow):
    """B's parameters checked against run A's model: FOREIGN when no executable of it holds these bytes."""
    entry_b = pair.run_b.buffer(row.stage, row.tensor)
    result = causes.link_check(pair.run_b, entry_b, pair.model)
    if result is None or result.verdict != Verdict.FOREIGN:
        return None
    return causes.finding("foreign", f"B's {row.label} is not the parameters of run A's model "
                                     f"({os.path.basename(pair.model)}): the link check against it says "
                                     f"{result.verdict} (no executable of the model holds these bytes): another "
                                     "model's parameters were uploaded",
                          "upload the parameters of the model this run executes (forensics link "
                          f"{shlex.quote(pair.model)} --check {shlex.quote(pair.run_b.file_path(entry_b))})",
                          verdict=result.verdict)


def _input_cause(pair: _Pair, row: StageRow):
    """What explains a differing input by the image: the runs' images differ (then the input follows from
    them), B holds A's image pixels placed elsewhere, or B's input is the same image resized another way."""
    entry_a, entry_b = _entries(pair, row)
    if entry_a.size > 64 << 20 or entry_a.size != entry_b.size:
        return None
    data_a, data_b = pair.run_a.read_buffer(entry_a), pair.run_b.read_buffer(entry_b)
    image_a, image_b = causes.image_entry(pair.run_a), causes.image_entry(pair.run_b)
    if image_a is not None and image_b is not None and image_a.crc32 != image_b.crc32:
        return causes.finding("image", f"the runs' inputs were made from different images ({image_a.tensor}, "
                                       f"CRC32 {format_crc(image_a.crc32)}; {image_b.tensor}, CRC32 "
                                       f"{format_crc(image_b.crc32)}): the input follows from the image",
                              "capture both runs from the same image file")
    a, b = causes.image_array(entry_a, data_a), causes.image_array(entry_b, data_b)
    if a is not None and b is not None:
        placed = causes.placement(a, b)
        if placed is not None:
            return causes.placement_finding(placed)
    if image_a is not None and image_b is not None and pair.run_b.files is None:
        resampling = (pair.run_a.capture or {}).get("resampling")
        method = causes.resize_explains(pair.run_b.file_path(image_b), entry_b, data_b, resampling)
        if method is not None:
            return causes.finding("resize", f"B's input is the same image resized with {method} "
                                            f"(A's: {resampling or 'not recorded'}), placed as pycoral places it",
                                  f"resize with the reference's filter ({resampling or 'lanczos'}, pycoral's "
                                  "examples)", resampling_b=method, resampling_a=resampling)
    return None


def _tail(pair: _Pair, row: StageRow):
    """The CPU tail's analysis of a dequantized or detections row: the tail replayed once per pair from B's own
    upstream stages (forensics.runs.causes.explain_tail), one finding per stage."""
    if row.stage in pair.tail:  # one answer per stage: the tail computes the stage's buffers together
        return None
    if "replay" not in pair.tail:
        pair.tail["replay"] = causes.explain_tail(pair.run_a, pair.run_b, pair.model)
    replay = pair.tail["replay"]
    pair.tail[row.stage] = causes.tail_finding(replay.of(row.stage)) if replay is not None else None
    return pair.tail[row.stage]


def _images(run_a, run_b) -> dict | None:
    """The two runs' `image` stages side by side, when both hold one."""
    a, b = causes.image_entry(run_a), causes.image_entry(run_b)
    if a is None or b is None:
        return None
    return {"same": (a.size, a.crc32) == (b.size, b.crc32), "name_a": a.tensor, "name_b": b.tensor,
            "crc32_a": format_crc(a.crc32), "crc32_b": format_crc(b.crc32), "size_a": a.size, "size_b": b.size}


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
