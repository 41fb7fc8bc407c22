"""Rendering for decode, tail and anchors-gen: result objects -> rich tables and one-line verdicts."""

from __future__ import annotations

from rich.table import Table  # noqa: F401  (type of the tables returned)
from rich.text import Text

from forensics.render.line import judgement_line
from forensics.render.style import table as styled_table, wrote


def _f(v: float, digits: int = 3) -> str:
    return f"{v:.{digits}f}"


def _score_cell(row: dict) -> str:
    deq = row.get("score_dequantization")
    if deq is None:
        return _f(row["score"], 6)
    if deq["zero_point"]:
        return f"({deq['byte']} - {deq['zero_point']}) x {deq['scale']:.8g} = {_f(row['score'])}"
    return f"{deq['byte']} x {deq['scale']:.8g} = {_f(row['score'])}"


def _box_px(b: dict) -> str:
    return f"({_f(b['xmin'], 1)}, {_f(b['ymin'], 1)}, {_f(b['xmax'], 1)}, {_f(b['ymax'], 1)})"


def _tuple(values, digits: int = 3) -> str:
    return "(" + ", ".join(_f(v, digits) for v in values) + ")"


def render_decode(report, judgement=None, *, score_threshold: float | None = None, geometry=None) -> list:
    """The kernel's rows (with where each anchor is), then per anchor its prior box and the decoded box in
    model and image pixels: two tables, so each stays readable at 100 columns."""
    doc = report.to_dict()
    res = report.result
    rows = [r for r in doc["detections"] if score_threshold is None or r["score"] >= score_threshold]
    mirror = {"reference": "reference rounding (single rounding of (q - zero_point) x scale; tflite-runtime 2.14)",
              "litert": "LiteRT x86 rounding (q x s - zp x s in 8-element blocks)",
              "none": "float32 inputs as given (no dequantization)"}[res.rounding]
    head = Text(f"TFLite_Detection_PostProcess ({res.options.nms} NMS): {res.num_detections} detection(s) from "
                f"{res.num_anchors} anchors x {res.score_columns} score columns, {res.candidates} candidate(s) "
                f">= {res.options.nms_score_threshold:.6g}; dequantize: {mirror}")
    table = styled_table()
    columns = ["row", "anchor"] + (["where"] if geometry is not None else []) + \
        ["class", "score", "box (ymin, xmin, ymax, xmax)"]
    for col in columns:
        table.add_column(col, justify="right" if col in ("row", "anchor", "class") else "left")
    for row in rows:
        label = f"{row['class']} {row['label']}" if row.get("label") else str(row["class"])
        cells = [str(row["row"]), str(row["anchor"])]
        if geometry is not None:
            cells.append(geometry.where(row["anchor"]))
        cells += [label, _score_cell(row), _tuple(row["box"])]
        table.add_row(*cells)
    if not rows:
        return [head, Text("no detections" + (" above the display threshold" if res.detections else ""))] + \
            ([judgement_line(judgement)] if judgement is not None else [])
    out = [head, table]
    if geometry is not None:
        out.append(Text(_grid_line(geometry)))
    out.append(_anchor_table(report, rows, geometry))
    if report.letterbox is not None:
        lb = report.letterbox
        out.append(Text(f"image {lb.image_width}x{lb.image_height} -> input {lb.input_width}x{lb.input_height}: "
                        f"scale {lb.scale:.6g} (image at top-left, {lb.resized[0]}x{lb.resized[1]}, padding right "
                        f"and bottom); image px = model px / {lb.scale:.6g}"))
    if judgement is not None:  # --replay: the report's one judgement (decode.replay.judge_replay)
        out.append(judgement_line(judgement))
    return out


def _grid_line(geometry) -> str:
    if not geometry.is_grid:
        return f"anchor grid: none ({geometry.reason}); anchors are listed by index"
    layers = ", ".join(f"L{layer.index} {layer.shape_text}" for layer in geometry.layers)
    return (f"anchor grid (rows x cols x boxes): {layers}; where = layer, row, col, box; pixel boxes are "
            "(x0, y0, x1, y1)")


def _anchor_table(report, rows, geometry) -> Table:
    """Once per listed anchor: the prior box the deltas were decoded against, and the box in pixels."""
    table = styled_table()
    table.add_column("anchor", justify="right")
    if geometry is not None:
        table.add_column("prior (yc, xc, h, w)")
    if report.input_size is not None:
        table.add_column(f"model px {report.input_size[0]}x{report.input_size[1]}")
    if report.letterbox is not None:
        lb = report.letterbox
        table.add_column(f"image px {lb.image_width}x{lb.image_height}")
    seen = set()
    for row in rows:
        if row["anchor"] in seen:
            continue
        seen.add(row["anchor"])
        cells = [str(row["anchor"])]
        if geometry is not None:
            prior = geometry.prior(row["anchor"])
            cells.append("(" + ", ".join(f"{v:.4g}" for v in prior) + ")" if prior is not None else "")
        if report.input_size is not None:
            cells.append(_box_px(row["model_box"]))
        if report.letterbox is not None:
            cells.append(_box_px(row["image_box"]))
        table.add_row(*cells)
    return table


def render_overlay(report, other_rows, *, names=("other", "this"), image=None, image_size=None,
                   score_threshold: float | None = None, source: str = ""):
    """`decode --draw OUT.png --overlay ...`: another decode's boxes (set A, green) and this decode's (set B,
    red) on the original image or a blank canvas of the image size -> (Picture, summary for --json)."""
    from forensics.render.overlay import overlay_rows

    this_rows = report.rows()
    other_rows = report.in_image_space(other_rows)
    thr = score_threshold if score_threshold is not None else float("-inf")
    picture = overlay_rows(image, other_rows, this_rows, image_size=image_size, names=tuple(names),
                           labels=report.labels, score_threshold=thr)
    shown = [sum(1 for r in rs if r.get("score") is None or r["score"] >= thr) for rs in (other_rows, this_rows)]
    return picture, {"size": [picture.width, picture.height],
                     "overlay": {"source": source, "names": list(names), "colours": ["green", "red"],
                                 "boxes": [shown[0], shown[1]]}}


def render_tail(result) -> list:
    """`tail`: what was written (a forensics.model.tflite.tail.TailResult)."""
    return [Text(f"{result.operators} operator(s) after removing {result.removed!r}; inputs now "
                 f"{', '.join(result.inputs)}"), Text(wrote(result.output))]


def render_anchors_gen(result, judgement=None, show: int = 5) -> list:
    """`anchors-gen`: the configuration, the anchors shown, the file written and the check's verdict
    (a forensics.decode.ssd_anchors.AnchorsGenResult)."""
    cfg = result.config
    out = [Text(f"{cfg.num_anchors} anchors from feature maps "
                f"{', '.join(f'{h}x{w}' for h, w in cfg.feature_map_sizes)}; scales {cfg.min_scale}..."
                f"{cfg.max_scale}, aspect ratios {', '.join(f'{a:g}' for a in cfg.aspect_ratios)}")]
    table = styled_table()
    for col in ("anchor", "ycenter", "xcenter", "h", "w"):
        table.add_column(col, justify="right")
    for index, value in result.anchors[:show]:
        table.add_row(str(index), *(f"{v:.4f}" for v in value))
    if result.anchors and show:
        out.append(table)
    if result.output:
        out.append(Text(f"{wrote(result.output)}: float32 [N, 4] ycenter, xcenter, h, w"))
    if judgement is not None:  # --check-*: the report's one judgement (decode.ssd_anchors.judge_check)
        out.append(judgement_line(judgement))
    return out


def render_classes(result, judgement, *, names=("A", "B")) -> list:
    """Both sides' top-k side by side: rank, class, score, and where the class ranks on the other side."""
    table = styled_table(("#", "right"), f"A: {names[0]}", ("score", "right"), ("rank in B", "right"),
                         f"B: {names[1]}", ("score", "right"), ("rank in A", "right"),
                         title=f"top-{result.k} of {result.vector.num_classes:,} classes")
    for i, (a, b) in enumerate(zip(result.top_a, result.top_b), 1):
        table.add_row(str(i), a.name, f"{a.score_a:.4f}", _rank(a.rank_b, i), b.name, f"{b.score_b:.4f}",
                      _rank(b.rank_a, i))
    return [judgement_line(judgement), table]


def _rank(rank: int, here: int) -> str:
    return str(rank) if rank == here else f"{rank} ({here - rank:+d})"
