"""Rendering for impact: the changes with their causing records, the harmless records, the search, and a
picture of the changed boxes (A's in green, B's in red: forensics.render.overlay)."""

from __future__ import annotations

from rich.text import Text

from forensics.render.style import table as styled_table

SHOWN_RECORDS = 5     # records listed in a change's cell before "+N"
SHOWN_HARMLESS = 12   # harmless (and joint) records listed before "+N"


def _records(records, limit: int = SHOWN_RECORDS) -> str:
    head = ", ".join(str(r) for r in records[:limit])
    return head + (f" +{len(records) - limit}" if len(records) > limit else "")


def _ssd_cell(row: dict | None, geometry, classes: int | None) -> str:
    """`#203 L0 r3 c7 b2 face 0.996`: the anchor, where it sits, the class (a one-class model's only when
    named) and the score."""
    if row is None:
        return "-"
    where = f" {geometry.where(row['anchor'])}" if geometry is not None and geometry.is_grid else ""
    name = row.get("label") or (f"class {row['class']}" if classes != 1 else "")
    return f"#{row['anchor']}{where} {name + ' ' if name else ''}{row['score']:.3f}"


def _class_cell(row: dict | None) -> str:
    if row is None:
        return "-"
    return f"#{row['rank']} {row.get('label') or 'class ' + str(row['class'])} {row['score']:.4f}"


def _move(value: float | None) -> str:
    return "<0.01" if value is not None and 0 < value < 0.005 else f"{value:.2f}"


def change_text(change, record_unit: str) -> str:
    """`moved 3.21 px`, `rescored +0.004`, `moved 2 ranks`: the change column."""
    kind = change.kind
    if kind == "moved" and change.ranks is not None:
        return f"moved {abs(change.ranks)} rank{'s' if abs(change.ranks) != 1 else ''} " + \
            ("down" if change.ranks > 0 else "up")
    if kind == "moved" and change.px is not None:
        return f"moved {_move(change.px)} px"
    if kind == "moved" and change.shift is not None:
        return f"moved {change.shift:.3g}"
    if kind == "rescored" and change.score_delta is not None:
        return f"rescored {change.score_delta:+.3g}"
    return kind


def render_impact(result, *, geometry=None) -> list:
    """The changes table, the harmless records and the search; no verdict line (the impact report adds its
    judgement's, compare --impact shows the section under compare's own)."""
    ssd = result.model_kind == "ssd"
    unit = result.record_unit
    n = len(result.differing)
    inputs = result.inputs or {}
    where = "; ".join(f"{role}: {side['stage']} {side['tensor']}" for role, side in inputs.items())
    if ssd:
        head = (f"TFLite_Detection_PostProcess ({result.nms} NMS): A {len(result.detections_a)} detection(s), "
                f"B {len(result.detections_b)}; {n:,} of {result.num_records:,} anchors differ")
    else:
        head = f"top-{result.k} of {result.num_records:,} classes: {n:,} class score(s) differ"
    out = [Text(head)]
    if where:
        out.append(Text(f"inputs: {where}"))
    if result.changes:
        cell = (lambda row: _ssd_cell(row, geometry, result.num_classes)) if ssd else _class_cell
        rows = [(change_text(c, unit), cell(c.a), cell(c.b), _records(c.records) + ("" if c.minimal else " *"))
                for c in result.changes]
        table = styled_table("change", "in A", "in B", f"caused by {unit}s")
        for row in rows:
            table.add_row(*row)
        out.append(table)
    plural = "es" if unit == "class" else "s"
    if n:
        harmless = result.harmless
        out.append(Text(f"harmless ({len(harmless):,} {unit}{plural if len(harmless) != 1 else ''}): "
                        f"{_records(list(harmless), SHOWN_HARMLESS)}" if harmless else "harmless: none"))
    if result.joint:
        out.append(Text(f"joint ({len(result.joint):,} {unit}{plural}, in no causing set but needed for B's result): "
                        f"{_records(list(result.joint), SHOWN_HARMLESS)}"))
    if n:
        how = {"incremental": "incremental fast NMS", "kernel": "the kernel on whole arrays",
               "top-k": "top-k"}.get(result.decoder, result.decoder)
        line = (f"search: {result.decodes:,} substituted decode{'s' if result.decodes != 1 else ''} of at most "
                f"{result.max_decodes:,} ({how}); {result.inert:,} settled without one")
        if result.exhausted:
            line += "; * the bound was reached: that set causes the change but may not be minimal"
        out.append(Text(line))
    return out


def impact_picture(result, *, image=None, canvas=None):
    """The changed detections on `image` (a path; the rows then carry `image_box`) or a blank `canvas` (width,
    height): A's rows (removed, and the before of a changed one) in green, B's (added, and the after) in red,
    each labelled with its change."""
    from forensics.render.overlay import boxes_from_detections, overlay

    # with an image the rows carry image_box (the report's letterbox); on a canvas, normalised boxes scale to it
    size = canvas if canvas is not None else (0, 0)
    side_a, side_b = [], []
    for change in result.changes:
        text = change_text(change, result.record_unit)
        if change.a is not None:
            side_a.append({**change.a, "label": f"{text} {change.a.get('label') or change.a['class']}"})
        if change.b is not None:
            side_b.append({**change.b, "label": f"{text} {change.b.get('label') or change.b['class']}"})
    boxes_a = boxes_from_detections(side_a, size)
    boxes_b = boxes_from_detections(side_b, size)
    return overlay(image if image is not None else size, boxes_a, boxes_b, names=("A", "B"),
                   title="changed detections")
