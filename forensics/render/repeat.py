"""Rendering for repeated runs and the reference's noise: the repeat tables, its HTML page and JUnit XML, the
tolerance table with the `--tolerance` line, and `capture --runtime all`'s summary. Every face prints the
result's one judgement (line.judgement_line) as it is."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from rich.text import Text

from forensics.compare.crc import format_crc
from forensics.core.verdict import Verdict
from forensics.render.runs import _CSS, _e, _html_table, render_buffers
from forensics.runs.repeat import MODAL, OUTLIER
from forensics.render.line import judgement_line
from forensics.render.style import table, wrote

# The CSS class of a run's status (the library's fact, forensics.runs.repeat): the page's colours, not a verdict
_STATUS_CLASS = {MODAL: Verdict.MATCH, OUTLIER: Verdict.DIFFER}
_NOT_XML = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(value) -> str:
    """Text XML 1.0 can hold: characters it forbids (control characters in a tensor name) as \\xNN."""
    return _NOT_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", str(value))


def _rate(value: float) -> str:
    return f"{value:.1%}"


def _depends(row, result) -> str:
    if row.depends == "previous":
        return "stale from the previous run"
    if row.depends == "cold":
        return "cold start (the first run)"
    if result.period is not None and row.index in result.period.runs:
        return f"every {result.period.every} runs"
    return "-"


def _outlier_rows(result):
    for r in result.outliers:
        first = r.first_divergent_stage if r.first_divergent_tensor in (None, r.first_divergent_stage) else \
            f"{r.first_divergent_stage}:{r.first_divergent_tensor}"
        yield r, first, r.finding or "-", _depends(r, result)


# --- repeat -------------------------------------------------------------------------------------------------

def render_repeat(result, judgement, *, outputs=()) -> list:
    """The stage rates, the buffers' modal contents, the outliers, and the verdict line."""
    baseline = f"the reference {result.reference}" if result.reference else f"the modal run {result.modal_run}"
    engine = "" if result.scheduler == "local" and result.workers == 1 else (
        f"; {result.workers} worker processes" if result.scheduler == "local" else
        f"; {result.scheduler}, {result.workers} workers")
    out = [Text(f"{len(result.runs)} runs against {baseline}{engine}")]
    stages = table("stage", ("runs differing", "right"), ("divergence rate", "right"))
    for s in result.stages:
        stages.add_row(s.stage, f"{s.runs_differing:,} of {s.runs:,}", _rate(s.divergence_rate))
    out.append(stages)
    buffers = table("buffer", "baseline", "CRC32", ("runs holding it", "right"), ("contents", "right"),
                    overflow="fold")
    for b in result.buffers:
        if b.judged:
            buffers.add_row(b.label, b.baseline, format_crc(b.content[1]), f"{b.holding:,} of {b.runs:,}",
                            f"{b.distinct:,}")
        else:
            buffers.add_row(b.label, "not judged", "-", "-", f"{b.distinct:,}")
    out.append(buffers)
    if result.outliers:
        outliers = table("run", "first divergent", "finding", "depends", overflow="fold")
        for r, first, finding, depends in _outlier_rows(result):
            outliers.add_row(r.run, first, finding, depends)
        out.append(outliers)
        for r in result.outliers:
            if r.evidence:
                out.append(Text(f"{r.name} ({r.first_divergent_stage}): {r.evidence}"))
    for w in result.warnings:
        out.append(Text(f"warning: {w}"))
    out.append(judgement_line(judgement))
    out.extend(Text(wrote(path)) for path in outputs)
    return out


def html_repeat(result, judgement, *, title: str | None = None) -> str:
    """The repeat as one self-contained page: the verdict line, the stage rates, the buffers and every run."""
    title = title or f"forensics repeat: {len(result.runs)} runs"
    cls = "ok" if judgement.passed else "bad"
    parts = ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
             f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>", f"<h1>{_e(title)}</h1>",
             f"<div class=\"verdict {cls}\" id=\"verdict\"><b>{_e(judgement.verdict)}</b> | "
             f"{_e(judgement.message)}</div>"]
    for w in result.warnings:
        parts.append(f"<div class=\"warn\">warning: {_e(w)}</div>")
    parts.append("<h2>Stages</h2>")
    parts.append(_html_table("stages", ("stage", "runs differing", "divergence rate"),
                             [(s.stage, f"{s.runs_differing:,} of {s.runs:,}", _rate(s.divergence_rate))
                              for s in result.stages]))
    parts.append("<h2>Buffers</h2>")
    parts.append(_html_table("buffers", ("buffer", "baseline", "CRC32", "runs holding it", "contents"),
                             [(b.label, b.baseline, (format_crc(b.content[1]), "mono"), f"{b.holding:,} of {b.runs:,}",
                               f"{b.distinct:,}") if b.judged else (b.label, "not judged", "-", "-", f"{b.distinct:,}")
                              for b in result.buffers]))
    parts.append("<h2>Runs</h2>")
    rows = []
    for r in result.runs:
        first = r.first_divergent_stage or "-"
        rows.append((r.index, (r.run, "mono"), (r.status, _STATUS_CLASS[r.status]), first,
                     r.finding or "-", r.evidence or "", _depends(r, result)))
    parts.append(_html_table("runs", ("#", "run", "status", "first divergent", "finding", "evidence", "depends"),
                             rows))
    parts.append("</body></html>\n")
    return "\n".join(parts)


def junit_repeat(result, judgement) -> str:
    """JUnit XML: one test case per run; a modal run passes, an outlier fails with where it diverges."""
    cases, failures = [], 0
    for r in result.runs:
        case = ET.Element("testcase", {"classname": "forensics.repeat", "name": _xml_text(r.run), "time": "0"})
        if r.status == OUTLIER:
            failures += 1
            first = r.first_divergent_stage or "-"
            failure = ET.SubElement(case, "failure", {
                "message": _xml_text(f"{first}: {r.finding or 'differs'} ({_depends(r, result)})"),
                "type": "outlier"})
            failure.text = _xml_text("\n".join(filter(None, [f"differing: {', '.join(r.differing)}", r.evidence])))
        else:
            ET.SubElement(case, "system-out").text = "holds the baseline content of every buffer"
        cases.append(case)
    counts = {"tests": str(len(cases)), "failures": str(failures), "skipped": "0", "errors": "0"}
    root = ET.Element("testsuites", {"name": "forensics", **counts})
    suite = ET.SubElement(root, "testsuite", {"name": "forensics repeat", **counts, "time": "0"})
    props = ET.SubElement(suite, "properties")
    for key, value in (("verdict", judgement.verdict), ("message", judgement.message),
                       ("baseline", result.reference or result.modal_run)):
        ET.SubElement(props, "property", {"name": key, "value": _xml_text(value)})
    suite.extend(cases)
    ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


# --- tolerance ----------------------------------------------------------------------------------------------

def _num(value) -> str:
    if value is None:
        return "-"
    return f"{value:,}" if isinstance(value, int) else f"{value:.4g}"


def render_tolerance(result, judgement) -> list:
    """Per tensor the spread and its spec with the reason, then the line compare takes, then the verdict."""
    out = [Text(f"{len(result.runs)} reference runs: " + ", ".join(f"{p} ({s})" for p, s in
                                                                     zip(result.runs, result.sources)))]
    spreads = table("buffer", ("max abs", "right"), ("max LSB", "right"), ("ulps", "right"), ("p99", "right"),
                    ("cosine", "right"), "spec", overflow="fold")
    for t in result.tensors:
        spreads.add_row(t.label, _num(t.max_abs), _num(t.max_lsb), _num(t.ulps), _num(t.p99_abs),
                        "-" if t.cosine is None else f"{t.cosine:.4f}", t.spec or "-")
    out.append(spreads)
    for t in result.tensors:
        out.append(Text(f"{t.label}: {t.spec or 'no tolerance'}: {t.reason}"))
    for label, why in result.skipped:
        out.append(Text(f"{label}: not measured: {why}"))
    if result.tolerance_flags:
        # one flag a line, continued with a backslash: a shell takes the block as pasted, however narrow
        out.append(Text("compare takes (after RUN_A RUN_B):"))
        out.append(Text(" \\\n".join(result.tolerance_flags), overflow="fold"))
    out.append(judgement_line(judgement))
    return out


# --- capture --runtime all ------------------------------------------------------------------------------------

def render_capture_runtimes(result) -> list:
    out = []
    for capture in result.runs:
        run = capture.run
        how = f"{capture.runtime}, {capture.mode}" + (f", delegate {capture.delegate}" if capture.delegate else "")
        out.append(Text(f"run {run.path} (source {run.source}; {how})"))
        out.append(render_buffers(run))
    for name, why in result.skipped:
        out.append(Text(f"{name}: not captured: {why}"))
    out.append(Text(wrote(result.output)))
    return out
