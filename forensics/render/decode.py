"""Rendering for decode, tail and anchors-gen: result objects -> rich tables and one-line verdicts."""

from __future__ import annotations

from rich.table import Table
from rich.text import Text


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


def render_decode(report, *, score_threshold: float | None = None) -> list:
    doc = report.to_dict()
    res = report.result
    rows = [r for r in doc["detections"] if score_threshold is None or r["score"] >= score_threshold]
    mirror = {"reference": "reference rounding (single rounding of (q - zero_point) x scale; tflite-runtime 2.14)",
              "litert": "LiteRT x86 rounding (q x s - zp x s in 8-element blocks)",
              "none": "float32 inputs as given (no dequantization)"}[res.rounding]
    head = Text(f"TFLite_Detection_PostProcess ({res.options.nms} NMS): {res.num_detections} detection(s) from "
                f"{res.num_anchors} anchors x {res.score_columns} score columns, {res.candidates} candidate(s) "
                f">= {res.options.nms_score_threshold:.6g}; dequantize: {mirror}")
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for col in ("#", "row", "anchor", "class", "score", "box (ymin, xmin, ymax, xmax)"):
        table.add_column(col, justify="right" if col in ("#", "row", "anchor", "class") else "left")
    if report.input_size is not None:
        table.add_column(f"model px {report.input_size[0]}x{report.input_size[1]} (x0, y0, x1, y1)")
    if report.letterbox is not None:
        lb = report.letterbox
        table.add_column(f"image px {lb.image_width}x{lb.image_height} (x0, y0, x1, y1)")
    for rank, row in enumerate(rows):
        label = f"{row['class']} {row['label']}" if row.get("label") else str(row["class"])
        cells = [str(rank), str(row["row"]), str(row["anchor"]), label, _score_cell(row),
                 "(" + ", ".join(_f(v) for v in row["box"]) + ")"]
        if report.input_size is not None:
            cells.append(_box_px(row["model_box"]))
        if report.letterbox is not None:
            cells.append(_box_px(row["image_box"]))
        table.add_row(*cells)
    out = [head, table if rows else Text("no detections" + (" above the display threshold" if res.detections else ""))]
    if report.letterbox is not None:
        lb = report.letterbox
        out.append(Text(f"image {lb.image_width}x{lb.image_height} -> input {lb.input_width}x{lb.input_height}: "
                        f"scale {lb.scale:.6g} (image at top-left, {lb.resized[0]}x{lb.resized[1]}, padding right "
                        f"and bottom); image px = model px / {lb.scale:.6g}"))
    if report.replay is not None:
        out.append(render_replay(report.replay))
    return out


def render_replay(replay) -> Text:
    if replay.match:
        how = "bit for bit" if replay.exact_boxes else f"boxes within 1e-6 (max {replay.max_box_diff:.2g})"
        return Text(f"MATCH | {replay.runtime} {replay.source}: {replay.num_detections} detection(s), "
                    f"classes, scores and order equal, {how}")
    return Text(f"MISMATCH | {replay.runtime} {replay.source}: " + "; ".join(replay.mismatches[:3]))


def render_tail(result: dict) -> list:
    return [Text(f"wrote {result['output']}: {result['operators']} operator(s) after removing "
                 f"{result['removed']!r}; inputs now {', '.join(result['inputs'])} ({result['size_bytes']} bytes)")]


def render_anchors_gen(result: dict, show: int = 5) -> list:
    cfg = result["config"]
    out = [Text(f"{cfg['num_anchors']} anchors from feature maps "
                f"{', '.join(f'{h}x{w}' for h, w in cfg['feature_map_sizes'])}; scales {cfg['min_scale']}..."
                f"{cfg['max_scale']}, aspect ratios {', '.join(f'{a:g}' for a in cfg['aspect_ratios'])}")]
    table = Table(show_edge=False, pad_edge=False, header_style="bold")
    for col in ("anchor", "ycenter", "xcenter", "h", "w"):
        table.add_column(col, justify="right")
    for row in result["anchors"][:show]:
        table.add_row(str(row["anchor"]), *(f"{v:.4f}" for v in row["value"]))
    if result["anchors"] and show:
        out.append(table)
    if result.get("output"):
        out.append(Text(f"wrote {result['output']} (float32 [N, 4] ycenter, xcenter, h, w)"))
    check = result.get("check")
    if check is not None:
        if check["matches"]:
            out.append(Text(f"MATCH | {check['source']}: all {check['num_anchors']} anchors equal the generated "
                            f"ones within {check['tolerance']:.2g} (max diff {check['max_abs_diff']:.2g})"))
        elif check["max_abs_diff"] is None:
            out.append(Text(f"DIFFER | {check['source']}: {check['num_anchors']} anchors, the config makes "
                            f"{check['expected_anchors']}"))
        else:
            out.append(Text(f"DIFFER | {check['source']}: {check['mismatched']} anchor(s) differ by more than "
                            f"{check['tolerance']:.2g}; worst anchor {check['worst_anchor']} by "
                            f"{check['max_abs_diff']:.3g}"))
    return out
