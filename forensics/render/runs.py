"""Rendering for runs: capture / ingest summaries, the compare stage table, the batch summary, and the
self-contained HTML report (inline CSS, heatmaps embedded as PNG data URIs) for a bug tracker."""

from __future__ import annotations

import html

from rich.table import Table
from rich.text import Text

from forensics.compare.crc import format_crc
from forensics.render.line import VERDICT_STYLES as STATUS_STYLE
from forensics.render.style import table as _table
from forensics.render.line import judgement_line
from forensics.render.style import wrote
from forensics.core.verdict import Verdict


def _crc(value) -> str:
    return format_crc(value) if value is not None else "-"


def _size(value) -> str:
    return f"{value:,}" if value is not None else "-"


def status_text(row) -> str:
    """MATCH / DIFFER / ONLY_A ..., with CHANGED in front when a file no longer matches its manifest."""
    if row.changed:
        return f"CHANGED {row.status}"
    return row.status


# --- capture / ingest ---------------------------------------------------------------------------------------

def render_buffers(run, title: str | None = None) -> Table:
    table = _table("stage", "tensor", ("size", "right"), "CRC32", "dtype", "shape", title=title)
    for b in run.buffers:
        tensor = f"{b.tensor} (derived from {b.derived_from})" if b.derived_from else b.tensor
        table.add_row(b.stage, tensor, f"{b.size:,}", format_crc(b.crc32), b.dtype or "",
                      "x".join(map(str, b.shape)) if b.shape is not None else "")
    for log in run.logs:
        table.add_row("log", log.name, f"{log.size:,}", format_crc(log.crc32), "", "")
    return table


def render_capture(result) -> list:
    run = result.run
    how = f"{result.runtime}, {result.mode}" + (f", delegate {result.delegate}" if result.delegate else "")
    out = [Text(f"run {run.path} (source {run.source}; {how})")]
    if result.image is not None:
        im = result.image
        out.append(Text(f"input: {im.image_size[0]}x{im.image_size[1]} image resized ({im.resampling}) to "
                        f"{im.resized[0]}x{im.resized[1]} at the top-left of a zero-filled tensor, scale {im.scale:.6g}"))
    out.append(render_buffers(run))
    out.append(Text(wrote(run.path)))
    return out


def render_capture_many(result) -> list:
    line = (f"{len(result.captured)} runs captured, {len(result.kept)} already there (kept), {len(result.failed)} "
            f"failed, under {result.output} as <image>/{result.source}")
    return [Text(line)]


def render_ingest(result) -> list:
    run = result.run
    verb = "created" if result.created else "updated"
    line = f"{verb} run {run.path} (source {run.source}): added {', '.join(result.added)}"
    if result.replaced:
        line += f"; replaced {', '.join(result.replaced)}"
    if result.derived:
        line += f"; forensics' relayout of raw: {', '.join(result.derived)}"
    return [Text(line), render_buffers(run), Text(wrote(run.path))]


# --- compare ----------------------------------------------------------------------------------------------

def _class(det, d) -> str:
    """`face (0)` with labels, else the class id."""
    name = det.label(d)
    return f"{name} ({d.class_id})" if name else str(d.class_id)


def _detections_table(det) -> Table:
    table = _table(("A row", "right"), ("B row", "right"), "class A/B", "score A", "score B", "score delta",
                   "IoU", "box delta (ymin xmin ymax xmax)", title="detections, matched by IoU")
    for p in det.pairs:
        cls = _class(det, p.a) if p.class_a == p.class_b else f"{_class(det, p.a)} / {_class(det, p.b)}"
        table.add_row(str(p.row_a), str(p.row_b), cls, f"{p.score_a:.6f}", f"{p.score_b:.6f}",
                      f"{p.score_delta:+.6f}", f"{p.iou:.4f}", " ".join(f"{v:+.4f}" for v in p.box_deltas))
    for d in det.only_a:
        table.add_row(str(d.row), "-", _class(det, d), f"{d.score:.6f}", "-", "-", "-", f"only in A {_box(d.box)}")
    for d in det.only_b:
        table.add_row("-", str(d.row), _class(det, d), "-", f"{d.score:.6f}", "-", "-", f"only in B {_box(d.box)}")
    return table


def _diff_records_table(row) -> Table:
    unit = row.unit[:-1] if row.unit.endswith("s") else row.unit
    table = _table((unit, "right"), ("offset", "right"), "A", "B", title=f"{row.label}: first differing {row.unit}")
    for r in row.diff.records:
        table.add_row(str(r.index), f"{r.offset:#x}", r.a.hex(" ")[:47], r.b.hex(" ")[:47])
    if row.diff.records_truncated:
        table.caption = f"... {row.diff.records_differing - len(row.diff.records):,} more"
    return table


def numbers_only(row) -> bool:
    """Float stages and detections are shown as numbers (statistics, boxes), never as raw hex records."""
    return row.stage == "detections" or (row.stats is not None and not row.stats.integer)


def row_message(row) -> str:
    """What a row's summary cell says: its judgement's message (the summary, and whether it follows from an
    earlier stage or changed after capture); the summary alone for a buffer one run lacks."""
    j = row.judgement
    return j.message if j is not None else row.summary


def render_compare(result, judgement=None, *, unicode: bool | None = None) -> list:
    """The run pair's stages and its one verdict line: `judgement`, the report's (judge_compare's when None)."""
    a, b = result.run_a, result.run_b
    out = [Text(f"A: {a.path} (source {a.source})    B: {b.path} (source {b.source})")]
    table = _table("stage", "tensor", "status", "CRC32 A", "CRC32 B", "summary")
    first = result.first_divergent
    for row in result.rows:
        status = Text(status_text(row), style=STATUS_STYLE.get("CHANGED" if row.changed else row.status, ""))
        stage = Text(row.stage, style="bold" if row is first else "")
        table.add_row(stage, row.tensor if row.tensor != row.stage else "", status, _crc(row.crc32_a),
                      _crc(row.crc32_b), row_message(row))
    out.append(table)
    out.append(judgement_line(judgement if judgement is not None else result.judgement))
    if result.not_captured:
        out.append(Text(f"not captured in both runs: {', '.join(result.not_captured)} (nothing is concluded "
                        f"about {'it' if len(result.not_captured) == 1 else 'them'})"))
    out += _finding_lines(result)
    out += _own_differences(result, unicode)
    if result.detections is not None and not result.detections.same:
        out.append(_detections_table(result.detections))
    return out


def _finding_lines(result) -> list:
    """Each stage's findings (kind: evidence) and its hint, as the library worded them."""
    out = []
    for row in result.rows:
        for f in row.findings:
            d = f.to_dict() if hasattr(f, "to_dict") else dict(f)
            out.append(Text(f"  {row.label}: {d.get('kind')}: {d.get('evidence', '')}"))
        if row.hint:
            out.append(Text(f"  {row.label}: {row.hint}"))
    return out


def _own_differences(result, unicode) -> list:
    """The statistics and records of what differs on its own; a stage that follows from it is one table row
    (its figures are in --json and --html)."""
    from forensics.render.buffers import stats_lines

    out = []
    own = [row for row in result.rows if not row.follows]
    for row in own:
        if row.stats is not None and row.stats.differing:
            out.extend(stats_lines(row.stats, where=f" ({row.label})", unicode=unicode))
    for row in own:
        if row.diff is not None and row.diff.records and not numbers_only(row):
            out.append(_diff_records_table(row))
    return out


# --- batch ------------------------------------------------------------------------------------------------

def render_batch(result, judgement=None, limit: int = 30) -> list:
    """The batch's one verdict line (`judgement`, the report's: judge_batch) and the pairs that do not pass."""
    judgement = judgement if judgement is not None else result.judgement
    table = _table("pair", "verdict", "first divergent", ("differing", "right"), "summary")
    failing = [r for r in result.rows if not Verdict(r["verdict"]).passed]
    shown = failing[:limit]
    for r in shown:
        table.add_row(r["pair"], r["verdict"], r.get("first_divergent_stage") or "-", str(r.get("stages_differing", "")),
                      r.get("summary") or r.get("error") or "")
    out = [judgement_line(judgement)]
    if shown:
        out.append(table)
        hidden = len(failing) - len(shown)
        if hidden > 0:
            out.append(Text(f"... {hidden} more differing pairs in the summary files"))
    if getattr(result, "aggregates", None) is not None:
        out += render_aggregates(result.aggregates)
    if result.outputs:
        out.extend(Text(wrote(path)) for path in result.outputs)
    return out


def _share(value) -> str:
    return f"{value:.1%}" if value is not None else "-"


def _num(value, digits: int = 4) -> str:
    return f"{value:.{digits}f}" if value is not None else "-"


def detections_line(det: dict) -> str:
    return (f"detections of B against A as ground truth ({det['pairs']:,} pairs): precision {_num(det['precision'])}, "
            f"recall {_num(det['recall'])}, F1 {_num(det['f1'])} at IoU 0.5 (TP {det['tp']:,}, FP {det['fp']:,}, "
            f"FN {det['fn']:,}); mAP@[.5:.95] {_num(det['map'])}")


def render_aggregates(agg, limit: int = 10) -> list:
    """The batch's aggregates: verdict shares per (stage, tensor), the anchors that differ most often, the
    score / box delta distributions and the detection agreement."""
    out = []
    if agg.stages:
        table = _table("stage", "tensor", ("pairs", "right"), ("match", "right"), ("within tol.", "right"),
                       ("differ", "right"), title="verdicts per stage over the pairs")
        for s in agg.stages:
            table.add_row(s["stage"], s["tensor"] if s["tensor"] != s["stage"] else "", f"{s['pairs_compared']:,}",
                          _share(s["share_match"]), _share(s["share_within_tolerance"]), _share(s["share_differ"]))
        out.append(table)
    if agg.anchors:
        table = _table("stage", "tensor", ("anchor", "right"), "where", ("pairs differing", "right"),
                       ("share", "right"), title="anchors that differ most often")
        for a in agg.anchors[:limit]:
            table.add_row(a["stage"], a["tensor"], str(a["anchor"]), a["where"] or "", f"{a['pairs_differing']:,}",
                          _share(a["share"]))
        out.append(table)
    for role, d in agg.deltas.items():
        out.append(Text(f"{role} deltas (B - A, {d['unit']}): {d['differing']:,} of {d['elements']:,} elements "
                        f"differ; max |delta| {d['max_abs']}, p99 |delta| {d['p99_abs']}"))
    if agg.detections is not None:
        out.append(Text(detections_line(agg.detections)))
    return out


# --- HTML -------------------------------------------------------------------------------------------------

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px;color:#1a1a1a;max-width:1200px}
h1{font-size:20px;margin:0 0 8px} h2{font-size:16px;margin:24px 0 8px}
table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{border-bottom:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f4f4f4} td.num{text-align:right;font-variant-numeric:tabular-nums}
code,.mono{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
.MATCH,.WITHIN{color:#11752b;font-weight:bold} .DIFFER{color:#b3141b;font-weight:bold}
.CHANGED,.MISSING,.ERROR{color:#9a6700;font-weight:bold} .ONLY_A,.ONLY_B{color:#777}
tr.first td{background:#fff1f0}
.verdict{padding:8px 12px;border-radius:4px;margin:12px 0}
.verdict.ok{background:#e9f7ec;border:1px solid #9bd3a7} .verdict.bad{background:#fdecea;border:1px solid #f1a9a5}
.warn{background:#fff8e1;border:1px solid #f3d37a;padding:6px 10px;margin:4px 0;border-radius:4px}
figure{margin:8px 0} figcaption{font-size:12px;color:#555}
"""


def _e(value) -> str:
    return html.escape(str(value), quote=True)


def html_report(result, *, pictures: dict | None = None, title: str | None = None, judgement=None) -> str:
    """The compare report as one self-contained HTML page (no external resources: CSS inline, PNGs as data URIs).

    `pictures` maps a row label (`tensor:Squeeze1`) to a forensics.render.pictures.Picture; `judgement` is the
    report's (judge_compare's when None): the page prints it as it is.
    """
    pictures = pictures or {}
    a, b = result.run_a, result.run_b
    title = title or f"forensics compare: {a.source} vs {b.source}"
    parts = _html_head(title)
    parts.append("<table><tr><th></th><th>run</th><th>source</th><th>model</th><th>captured</th><th>tool</th></tr>")
    parts += [_html_run(name, run) for name, run in (("A", a), ("B", b))]
    parts.append("</table>")
    parts.append(_html_verdict(judgement if judgement is not None else result.judgement))
    for w in result.warnings:
        parts.append(f"<div class=\"warn\">warning: {_e(w)}</div>")
    parts += _html_stages(result)
    parts += _html_findings(result)
    for row in result.rows:
        if row.diff is not None:
            parts += _html_buffer(row, pictures)
    if result.detections is not None:
        parts += _html_detections(result.detections)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _html_head(title: str) -> list[str]:
    return ["<!DOCTYPE html>", "<html lang=\"en\"><head><meta charset=\"utf-8\">",
            f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>", f"<h1>{_e(title)}</h1>"]


def _html_verdict(j) -> str:
    """The page's one verdict line: the judgement it is given, as it is (its class follows `passed`)."""
    return (f"<div class=\"verdict {'ok' if j.passed else 'bad'}\" id=\"verdict\"><b>{_e(j.verdict)}</b> | "
            f"{_e(j.message)}</div>")


def _html_run(name: str, run) -> str:
    model = run.model or {}
    model_text = f"{model.get('path', '')} (sha256 {model['sha256'][:12]}…)" if model.get("sha256") else "-"
    return (f"<tr><td>{name}</td><td class=\"mono\">{_e(run.path)}</td><td>{_e(run.source)}</td>"
            f"<td class=\"mono\">{_e(model_text)}</td><td>{_e(run.created or '-')}</td>"
            f"<td>{_e(run.tool or '-')}</td></tr>")


def _status_class(row) -> str:
    """The CSS class of a stage's status cell: its own status (judge_row's), CHANGED first."""
    return "CHANGED" if row.changed else ("WITHIN" if row.status == Verdict.WITHIN else row.status)


def _html_stages(result) -> list[str]:
    first = result.first_divergent
    parts = ["<h2>Stages</h2><table id=\"stages\"><tr><th>stage</th><th>tensor</th><th>status</th>"
             "<th>size A</th><th>size B</th><th>CRC32 A</th><th>CRC32 B</th><th>summary</th></tr>"]
    for row in result.rows:
        first_cls = ' class="first"' if row is first else ""
        parts.append(f"<tr{first_cls}><td>{_e(row.stage)}</td>"
                     f"<td class=\"mono\">{_e(row.tensor if row.tensor != row.stage else '')}</td>"
                     f"<td class=\"{_status_class(row)}\">{_e(status_text(row))}</td>"
                     f"<td class=\"num\">{_size(row.size_a)}</td>"
                     f"<td class=\"num\">{_size(row.size_b)}</td><td class=\"mono\">{_crc(row.crc32_a)}</td>"
                     f"<td class=\"mono\">{_crc(row.crc32_b)}</td><td>{_e(row_message(row))}</td></tr>")
    parts.append("</table>")
    return parts


def _html_findings(result) -> list[str]:
    findings = [(row, f.to_dict() if hasattr(f, "to_dict") else dict(f)) for row in result.rows for f in row.findings]
    findings += [(row, {"kind": "-", "evidence": "no finding names this difference", "hint": row.hint})
                 for row in result.rows if row.hint]
    if not findings:
        return []
    parts = ["<h2>Diagnosis</h2><table><tr><th>buffer</th><th>finding</th><th>evidence</th><th>what to do"
             "</th></tr>"]
    for row, d in findings:
        parts.append(f"<tr><td>{_e(row.label)}</td><td><b>{_e(d.get('kind'))}</b></td>"
                     f"<td>{_e(d.get('evidence', ''))}</td><td>{_e(d.get('hint', ''))}</td></tr>")
    parts.append("</table>")
    return parts


def _html_records(row) -> list[str]:
    diff = row.diff
    unit = row.unit[:-1] if row.unit.endswith("s") else row.unit
    parts = [f"<table><tr><th>{_e(unit)}</th><th>offset</th><th>A</th><th>B</th></tr>"]
    for r in diff.records:
        parts.append(f"<tr><td class=\"num\">{r.index}</td><td class=\"mono\">{r.offset:#x}</td>"
                     f"<td class=\"mono\">{_e(r.a.hex(' '))}</td><td class=\"mono\">{_e(r.b.hex(' '))}</td></tr>")
    parts.append("</table>")
    if diff.records_truncated:
        parts.append(f"<p>… {diff.records_differing - len(diff.records):,} more</p>")
    return parts


def _html_buffer(row, pictures: dict) -> list[str]:
    """A differing buffer's section: its summary and layout, statistics, records and pictures."""
    diff = row.diff
    parts = [f"<h2>{_e(row.label)}</h2><p>{_e(row.summary)}; {diff.layout.record_size} bytes per record"
             f"{'; pad lanes ' + ','.join(map(str, diff.layout.pad_lanes)) if diff.layout.pad_lanes else ''}.</p>"]
    if row.stats is not None and row.stats.differing:
        parts.append(_stats_html(row.stats))
    if diff.records and not numbers_only(row):
        parts += _html_records(row)
    plot = pictures.get(("error", row.label))
    if plot is not None:
        parts.append(f"<figure><img alt=\"{_e(row.label)} error picture\" src=\"{plot.data_uri()}\" "
                     f"width=\"{plot.width}\" height=\"{plot.height}\"><figcaption>{_e(row.label)}: |B − A| "
                     "histogram, B against A, error map, per-lane maximum</figcaption></figure>")
    picture = pictures.get(row.label)
    if picture is not None:
        parts.append(f"<figure><img alt=\"{_e(row.label)} per-anchor difference heatmap\" "
                     f"src=\"{picture.data_uri()}\" width=\"{picture.width}\" height=\"{picture.height}\">"
                     f"<figcaption>{_e(row.label)}: max |A − B| per anchor cell (LSB); framed cells hold a "
                     "differing anchor</figcaption></figure>")
    return parts


def _html_detections(det) -> list[str]:
    parts = [f"<h2>Detections</h2><p>{det.num_a} in A, {det.num_b} in B; matched one-to-one by IoU ≥ "
             f"{det.iou_threshold}</p><table id=\"detections\"><tr><th>A row</th><th>B row</th><th>class A/B"
             "</th><th>score A</th><th>score B</th><th>score delta</th><th>IoU</th><th>box A</th><th>box B"
             "</th></tr>"]
    for p in det.pairs:
        cls = _class(det, p.a) if p.class_a == p.class_b else f"{_class(det, p.a)} / {_class(det, p.b)}"
        parts.append(f"<tr><td class=\"num\">{p.row_a}</td><td class=\"num\">{p.row_b}</td>"
                     f"<td>{_e(cls)}</td>"
                     f"<td class=\"num\">{p.score_a:.6f}</td><td class=\"num\">{p.score_b:.6f}</td>"
                     f"<td class=\"num\">{p.score_delta:+.6f}</td><td class=\"num\">{p.iou:.4f}</td>"
                     f"<td class=\"mono\">{_e(_box(p.box_a))}</td><td class=\"mono\">{_e(_box(p.box_b))}</td></tr>")
    for d in det.only_a:
        parts.append(f"<tr><td class=\"num\">{d.row}</td><td>-</td><td>{_e(_class(det, d))}</td>"
                     f"<td class=\"num\">{d.score:.6f}</td><td>-</td><td>-</td><td>-</td>"
                     f"<td class=\"mono\">{_e(_box(d.box))}</td><td>-</td></tr>")
    for d in det.only_b:
        parts.append(f"<tr><td>-</td><td class=\"num\">{d.row}</td><td>{_e(_class(det, d))}</td><td>-</td>"
                     f"<td class=\"num\">{d.score:.6f}</td><td>-</td><td>-</td><td>-</td>"
                     f"<td class=\"mono\">{_e(_box(d.box))}</td></tr>")
    parts.append("</table>")
    return parts


def _stats_html(stats) -> str:
    """The error statistics of one buffer as a small two-row table."""
    d = stats.to_dict()
    keys = ["max_abs", "mean_abs", "median_abs", "p99_abs", "max_rel", "cosine", "sqnr_db", "min_atol"]
    if stats.integer:
        keys += ["max_abs_lsb", "p99_abs_lsb", "min_atol_lsb"]
    if stats.nan or stats.inf:
        keys += ["nan", "inf", "nonfinite_mismatch"]

    def cell(v):
        return "-" if v is None else (f"{v:.6g}" if isinstance(v, float) else str(v))

    worst = d.get("worst") or {}
    where = ", ".join(f"{k} {v}" for k, v in worst.items())
    return ("<table class=\"stats\"><tr>" + "".join(f"<th>{_e(k)}</th>" for k in keys) + "<th>worst</th></tr><tr>"
            + "".join(f"<td class=\"num\">{_e(cell(d.get(k)))}</td>" for k in keys)
            + f"<td class=\"mono\">{_e(where)}</td></tr></table>")


def _box(box) -> str:
    return "(" + ", ".join(f"{v:.4f}" for v in box) + ")"


def error_pictures_for(result) -> dict:
    """The 2x2 error picture of every differing numeric stage, keyed ("error", label); empty without Pillow."""
    from forensics.core.errors import DependencyError, InputError
    from forensics.render.errorplot import error_plot_for_row

    out = {}
    for row in result.rows:
        if row.stats is None or not row.stats.differing:
            continue
        try:
            out[("error", row.label)] = error_plot_for_row(result, row)
        except DependencyError:
            return out
        except InputError:
            continue
    return out


def pictures_for(result) -> dict:
    """Heatmap pictures of the rows that carry per-anchor heat, and every differing stage's error picture
    (needs Pillow; an empty dict without it)."""
    from forensics.core.errors import DependencyError, InputError

    out = error_pictures_for(result)
    if result.geometry is None:
        return out
    for row in result.rows:
        if row.heat is None:
            continue
        try:
            from forensics.render.pictures import heatmap_for

            out[row.label] = heatmap_for(result.geometry, row.heat, title=f"{row.label}: A vs B")
        except (DependencyError, InputError):
            return out
    return out


def _html_table(table_id: str, headers, rows) -> str:
    """A table of escaped cells; a cell is a value or (value, css class)."""
    out = [f"<table id=\"{table_id}\"><tr>" + "".join(f"<th>{_e(h)}</th>" for h in headers) + "</tr>"]
    for row in rows:
        cells = []
        for cell in row:
            value, cls = cell if isinstance(cell, tuple) else (cell, None)
            cells.append(f"<td class=\"{cls}\">{_e(value)}</td>" if cls else f"<td>{_e(value)}</td>")
        out.append("<tr>" + "".join(cells) + "</tr>")
    return "\n".join(out + ["</table>"])


def html_batch(result, *, reports: dict | None = None, pictures: dict | None = None, limit: int = 500,
               judgement=None) -> str:
    """One page for a batch: counts, verdict shares per stage, the worst anchors (and their heatmaps), the delta
    distributions, detection agreement, and the pairs that are not MATCH, each linking its report
    (`reports` maps a pair name to a relative link)."""
    reports, pictures = reports or {}, pictures or {}
    agg = result.aggregates
    parts = _html_head(f"forensics compare --batch: {result.directory}")
    parts.append(_html_verdict(judgement if judgement is not None else result.judgement))
    parts += _html_aggregates(agg, pictures)
    parts += _html_pairs(result, reports, limit)
    parts.append("</body></html>\n")
    return "\n".join(parts)


def _html_aggregates(agg, pictures: dict) -> list[str]:
    """The batch's aggregates (None: not aggregated): verdict shares per stage, the anchors that differ most often
    (and their heatmaps), the deltas and the detection agreement."""
    parts = []
    if agg is not None and agg.stages:
        parts.append("<h2>Verdicts per stage</h2>")
        columns = ("stage", "tensor", "pairs", Verdict.MATCH, Verdict.WITHIN, Verdict.DIFFER)
        parts.append(_html_table("stages", columns, [
            (s["stage"], (s["tensor"], "mono"), (f"{s['pairs_compared']:,}", "num"), (_share(s["share_match"]), "num"),
             (_share(s["share_within_tolerance"]), "num"), (_share(s["share_differ"]), "num")) for s in agg.stages]))
    if agg is not None and agg.anchors:
        parts.append("<h2>Anchors that differ most often</h2>")
        parts.append(_html_table("anchors", ("stage", "tensor", "anchor", "where", "pairs differing", "share"), [
            (a["stage"], (a["tensor"], "mono"), (a["anchor"], "num"), (a["where"] or "", "mono"),
             (f"{a['pairs_differing']:,}", "num"), (_share(a["share"]), "num")) for a in agg.anchors]))
    for label, picture in pictures.items():
        parts.append(f"<figure><img alt=\"{_e(label)} differing-pairs heatmap\" src=\"{picture.data_uri()}\" "
                     f"width=\"{picture.width}\" height=\"{picture.height}\"><figcaption>{_e(label)}: pairs in which "
                     "an anchor of the cell differs</figcaption></figure>")
    if agg is not None and agg.deltas:
        parts.append("<h2>Deltas</h2>")
        parts.append(_html_table("deltas", ("buffer", "elements", "differing", "max |B − A|", "p99 |B − A|",
                                            "histogram (delta: count)"), [
            (f"{role} ({d['unit']})", (f"{d['elements']:,}", "num"), (f"{d['differing']:,}", "num"),
             (d["max_abs"], "num"), (d["p99_abs"], "num"),
             (", ".join(f"{k:+d}: {v:,}" for k, v in d["histogram"][:40]), "mono")) for role, d in agg.deltas.items()]))
    if agg is not None and agg.detections is not None:
        parts += _html_batch_detections(agg.detections)
    return parts


def _html_batch_detections(det: dict) -> list[str]:
    return [f"<h2>Detections</h2><p id=\"detections\">{_e(detections_line(det))}</p>",
            _html_table("classes", ("class", "in A", "in B", "TP", "FP", "FN", "precision", "recall", "F1",
                                    "AP@[.5:.95]"), [
                tuple((v, "num") for v in (c["class"], f"{c['truth']:,}", f"{c['found']:,}", f"{c['tp']:,}",
                                          f"{c['fp']:,}", f"{c['fn']:,}", _num(c["precision"]), _num(c["recall"]),
                                          _num(c["f1"]), _num(c["ap"]))) for c in det["per_class"]])]


def _html_pairs(result, reports: dict, limit: int) -> list[str]:
    """The pairs whose own verdict (judge_pair's, in the batch row) is not MATCH, up to `limit`, linked to their
    reports."""
    listed = [r for r in result.rows if r["verdict"] != Verdict.MATCH][:limit]
    parts = ["<h2>Pairs that do not match</h2><table id=\"pairs\"><tr><th>pair</th><th>verdict</th>"
             "<th>first divergent</th><th>summary</th></tr>"]
    for r in listed:
        name = _e(r["pair"])
        link = reports.get(r["pair"])
        cell = f"<a href=\"{_e(link)}\">{name}</a>" if link else name
        parts.append(f"<tr><td class=\"mono\">{cell}</td><td class=\"{_e(r['verdict'])}\">{_e(r['verdict'])}</td>"
                     f"<td>{_e(r.get('first_divergent_stage') or '-')}</td>"
                     f"<td>{_e(r.get('summary') or r.get('error') or '')}</td></tr>")
    parts.append("</table>")
    hidden = sum(1 for r in result.rows if r["verdict"] != Verdict.MATCH) - len(listed)
    if hidden > 0:
        parts.append(f"<p>… {hidden:,} more in the summary files</p>")
    return parts


def batch_pictures(aggregates, geometry) -> dict:
    """Heatmaps over the feature-map grid of how many pairs differ at each anchor (needs Pillow and a grid)."""
    if geometry is None or aggregates is None or not getattr(geometry, "is_grid", False):
        return {}
    from forensics.core.errors import DependencyError, InputError

    out = {}
    for label, (_stage, _tensor, counts) in aggregates.anchor_counts.items():
        if len(counts) != geometry.num_anchors or not counts.any():
            continue
        try:
            from forensics.render.pictures import heatmap

            out[label] = heatmap(geometry, counts, marked=(), title=f"{label}: pairs differing per anchor",
                                 vmin=0, value_label="pairs", reduce="max")
        except (DependencyError, InputError):
            return out
    return out
