"""decode, tail, anchors-gen: the model's CPU tail run on two dumps, and its anchors."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.reports.base import Report, _slice, spellings


@dataclass(frozen=True, repr=False)
class DecodeReport(Report):
    geometry: object = None                # forensics.decode.geometry.AnchorGeometry of the anchors
    drawing: dict | None = None            # what --draw wrote
    score_threshold: float | None = None

    def to_dict(self) -> dict:
        doc = self._sources(self.result.to_dict())
        geometry = self.geometry
        if geometry is not None:
            from forensics.decode.geometry import annotate

            doc["detections"] = [annotate(geometry, row, row["anchor"]) for row in doc["detections"]]
            doc["anchor_geometry"] = {"grid": geometry.is_grid, "reason": geometry.reason,
                                      "layers": [layer.shape_text for layer in geometry.layers]}
        if self.drawing:
            doc["drawing"] = dict(self.drawing)
        return doc

    def renderables(self) -> list:
        from rich.text import Text

        from forensics.render.decode import render_decode

        out = list(render_decode(self.result, self.judgement, score_threshold=self.score_threshold,
                                 geometry=self.geometry))
        drawn = self.drawing
        if drawn and "overlay" in drawn:
            (name_a, name_b), (n_a, n_b) = drawn["overlay"]["names"], drawn["overlay"]["boxes"]
            out.append(Text(f"drew {n_b} {name_b} box(es) in red and {n_a} {name_a} box(es) in green on "
                            f"{drawn['output']}"))
        elif drawn:
            out.append(Text(f"drew {drawn['boxes']} box(es) on {drawn['output']}"))
        if drawn:
            from forensics.render.style import wrote

            out.append(Text(wrote(drawn["output"])))
        return out


def _check_decode_options(*, model, deps, image, image_size, overlay, overlay_boxes, overlay_scores, names,
                          draw) -> bool:
    """Option combinations a decode cannot take; returns whether an overlay was asked for."""
    if (model is None) == (deps is None):
        raise InputError("give exactly one of {model:MODEL} or {deps:DIR}", params=True)
    if image and image_size:
        raise InputError("give {image} or {image_size}, not both", params=True)
    pair = (overlay_boxes, overlay_scores)
    if any(p is not None for p in pair) and not all(p is not None for p in pair):
        raise InputError("{overlay_boxes} and {overlay_scores} go together (the other decode's two dumps)", params=True)
    if overlay is not None and pair[0] is not None:
        raise InputError("give {overlay:OTHER.json} or {overlay_boxes}/{overlay_scores}, not both", params=True)
    overlaying = overlay is not None or pair[0] is not None
    if overlaying and not draw:
        raise InputError("{overlay} needs {draw:OUT.png} (the picture with both decodes' boxes)", params=True)
    if names is not None and not overlaying:
        raise InputError("{names} names the two decodes of an {overlay} picture; there is no {overlay}", params=True)
    if draw and not image and not (overlaying and image_size):
        raise InputError("{draw} needs {image:IMG} (the original image to draw on; with {overlay}, "
                         "{image_size:WxH} gives a blank canvas)", params=True)
    return overlaying


@dataclass(frozen=True, repr=False)
class ClassesReport(Report):
    names: tuple[str, str] = ("A", "B")

    def renderables(self) -> list:
        from forensics.render.decode import render_classes

        return render_classes(self.result, self.judgement, names=self.names)


def _classes(a, b, *, model, top_k: int, labels, dump_options=None) -> ClassesReport:
    from forensics.model.classes import classify_dumps

    if model is None:
        raise InputError("{top_k} needs {model:MODEL} (the classifier: its output's size and quantization)",
                         params=True)
    result = classify_dumps(a, b, model=model, k=top_k, labels_path=labels, dump_options=dump_options)
    from forensics.core.judgement import Judgement

    return ClassesReport("decode", result, names=(os.fspath(a), os.fspath(b)),
                         judgement=Judgement(result.verdict, result.message))


@spellings()
def decode(boxes, scores, *, model=None, deps=None, layout: str = "auto", dequantize: str = "reference",
           labels=None, image=None, image_size=None, input_size=None, draw=None, overlay=None,
           overlay_boxes=None, overlay_scores=None, names=None, score_threshold: float | None = None,
           replay: bool = False, top_k: int | None = None, offset: int | None = None, length: int | None = None,
           gap_fill: int | None = None, no_order_check: bool = False) -> DecodeReport | ClassesReport:
    """`forensics decode BOXES SCORES (--model M | --deps DIR)`: the TFLite_Detection_PostProcess kernel's
    result; exit code 1 when the replay in LiteRT disagrees. With `top_k` (a classifier model), BOXES and
    SCORES are two dumps of its class scores: both sides' top-k and rank changes; exit 1 when the order differs.
    BOXES and SCORES that look given in each other's place (by shape, else the scores' constant pad lanes) are
    an InputError naming the swap, unless `no_order_check`."""
    if top_k is not None:
        return _classes(boxes, scores, model=model, top_k=top_k, labels=labels,
                        dump_options=_slice(offset, length, gap_fill)[0])
    from forensics.decode.report import decode_dumps
    from forensics.decode.geometry import infer_geometry

    overlaying = _check_decode_options(model=model, deps=deps, image=image, image_size=image_size, overlay=overlay,
                                       overlay_boxes=overlay_boxes, overlay_scores=overlay_scores, names=names,
                                       draw=draw)
    if draw:
        from forensics.io.outputs import check_not_input, check_writable

        check_not_input(draw, image, overlay, overlay_boxes, overlay_scores, model, boxes, scores)
        check_writable(draw)
    relayouts, tail = {}, None
    if deps is not None:
        from forensics.decode.deps import read_deps

        decode_deps = read_deps(deps)
    else:
        from forensics.decode.model_deps import deps_from_model

        decode_deps, relayouts, tail = deps_from_model(model)
    if not no_order_check:
        _check_order(decode_deps, ((boxes, scores), (overlay_boxes, overlay_scores)),
                     _slice(offset, length, gap_fill)[0])
    result = decode_dumps(decode_deps, boxes, scores, layout=layout, rounding=dequantize, image=image,
                          image_wh=image_size, input_wh=input_size, labels_path=labels, replay=replay,
                          relayouts=relayouts, tail_model=tail, dump_options=_slice(offset, length, gap_fill)[0])
    geometry = infer_geometry(decode_deps.anchors, source=decode_deps.source)
    drawn = None
    if overlaying:
        from forensics.render.decode import render_overlay

        if overlay is not None:
            from forensics.render.overlay import load_detections

            other, source = load_detections(overlay), str(overlay)
        else:
            other = decode_dumps(decode_deps, overlay_boxes, overlay_scores, layout=layout, rounding=dequantize,
                                 input_wh=input_size, labels_path=labels, relayouts=relayouts,
                                 dump_options=_slice(offset, length, gap_fill)[0]).rows()
            source = f"{overlay_boxes} + {overlay_scores}"
        picture, summary = render_overlay(result, other, names=names or ("other", "this"), image=image,
                                          image_size=image_size, score_threshold=score_threshold, source=source)
        drawn = {"output": picture.save(os.fspath(draw)), **summary}
    elif draw:
        from forensics.decode.draw import draw_detections

        drawn = draw_detections(image, os.fspath(draw), result, score_threshold=score_threshold)
    # Only --replay judges: the official kernel's detections beside ours (MATCH / MISMATCH).
    from forensics.decode.replay import judge_replay

    judged = None if result.replay is None else judge_replay(result.replay)
    return DecodeReport("decode", result, rows_key="detections", judgement=judged, geometry=geometry, drawing=drawn,
                        score_threshold=score_threshold)


def _check_order(decode_deps, pairs, dump_options) -> None:
    """One line naming the swap when a (BOXES, SCORES) pair looks given in each other's place."""
    from forensics.decode.inputs import swapped_order

    raw = decode_deps.raw_sizes or {}
    sizes = {"boxes": raw.get(decode_deps.boxes.name), "scores": raw.get(decode_deps.scores.name)}
    for boxes, scores in pairs:
        if boxes is None or scores is None:
            continue
        why = swapped_order(boxes, scores, decode_deps.num_anchors, decode_deps.box_columns,
                            decode_deps.score_columns, raw_sizes=sizes, dump_options=dump_options)
        if why is not None:
            raise InputError(f"box deltas and scores look swapped: {why}; give BOXES first, then SCORES "
                             "(or {no_order_check} to decode them as given)", params=True)


class TailReport(Report):
    RESULT = "forensics.model.tflite.tail:TailResult"

    def renderables(self) -> list:
        from forensics.render.decode import render_tail

        return render_tail(self.result)


@spellings()
def tail(model, *, output) -> TailReport:
    """`forensics tail MODEL -o TAIL.tflite`: the model without its edgetpu-custom-op, for LiteRT."""
    from forensics.model.tflite.tail import write_tail

    return TailReport("tail", write_tail(model, output))


class AnchorsGenReport(Report):
    def renderables(self) -> list:
        from forensics.render.decode import render_anchors_gen

        return render_anchors_gen(self.result, self.judgement, show=len(self.result.anchors))


@spellings()
def anchors_gen(*, input_size=None, feature_maps=None, min_scale: float = 0.2, max_scale: float = 0.95,
                aspect_ratios=(1.0, 2.0, 0.5, 3.0, 0.3333), interpolated_scale_aspect_ratio: float = 1.0,
                no_reduce_lowest: bool = False, output=None, check_model=None, check_deps=None, show: int = 5,
                anchor: int | None = None) -> AnchorsGenReport:
    """`forensics anchors-gen`: TF OD API multiple-grid anchors; exit code 1 when a checked model's differ."""
    from forensics.decode.ssd_anchors import anchors_gen as generate

    result = generate(input_size=input_size, feature_maps=feature_maps, min_scale=min_scale, max_scale=max_scale,
                      aspect_ratios=aspect_ratios, interpolated_scale_aspect_ratio=interpolated_scale_aspect_ratio,
                      reduce_boxes_in_lowest_layer=not no_reduce_lowest, output=output, check_model=check_model,
                      check_deps=check_deps, show=show, anchor=anchor)
    from forensics.decode.ssd_anchors import judge_check

    judged = None if result.check is None else judge_check(result.check, result.check_source)
    return AnchorsGenReport("anchors-gen", result, rows_key="anchors", judgement=judged)
