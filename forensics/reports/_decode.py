"""decode, tail, anchors-gen: the model's CPU tail run on two dumps, and its anchors."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.reports.base import Report, spellings


@dataclass(frozen=True, repr=False)
class DecodeReport(Report):
    geometry: object = None                # forensics.decode.geometry.AnchorGeometry of the anchors
    drawing: dict | None = None            # what --draw wrote
    score_threshold: float | None = None

    RESULT = "forensics.decode.report:DecodeReport"

    ROWS_KEY = "detections"  # the document's list of rows (rows_key_of)

    @classmethod
    def from_dict(cls, doc: dict) -> "DecodeReport":
        """The decode a saved document stands for, with its anchors' geometry, what --draw wrote and the display
        threshold (saved beside them: the rows shown depend on it)."""
        import dataclasses

        report = super().from_dict(doc)
        geometry = None
        if doc.get("anchor_geometry") is not None:
            from forensics.decode.geometry import saved_geometry

            geometry = saved_geometry(doc["anchor_geometry"], doc["num_anchors"], doc["detections"])
        return dataclasses.replace(report, geometry=geometry, drawing=doc.get("drawing"),
                                   score_threshold=doc.get("score_threshold"))

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
        if self.score_threshold is not None:  # the rows shown (and drawn): a saved document renders them again
            doc["score_threshold"] = self.score_threshold
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


@dataclass(frozen=True, repr=False)
class ClassesReport(Report):
    names: tuple[str, str] = ("A", "B")

    RESULT = "forensics.model.classes:TopKComparison"

    @classmethod
    def from_dict(cls, doc: dict) -> "ClassesReport":
        """The top-k comparison a saved document stands for, with the dumps' names its table heads show."""
        import dataclasses

        report = super().from_dict(doc)
        return dataclasses.replace(report, names=tuple(doc.get("names", cls.names)))

    def to_dict(self) -> dict:
        doc = super().to_dict()
        doc["names"] = list(self.names)  # the table's heads: a saved document renders them again
        return doc

    def renderables(self) -> list:
        from forensics.render.decode import render_classes

        return render_classes(self.result, self.judgement, names=self.names)


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
    from forensics.core.options import Slice
    from forensics.decode import usecases

    where = Slice(offset=offset, length=length, gap_fill=gap_fill)
    if top_k is not None:
        result, judgement = usecases.classes(boxes, scores, model=model, top_k=top_k, labels=labels, where=where)
        return ClassesReport("decode", result, names=(os.fspath(boxes), os.fspath(scores)), judgement=judgement)
    case = usecases.decode(boxes, scores, model=model, deps=deps, labels=labels, layout=layout,
                           dequantize=dequantize, image=image, image_size=image_size, input_size=input_size,
                           draw=draw, overlay=overlay, overlay_boxes=overlay_boxes, overlay_scores=overlay_scores,
                           names=names, replay=replay, where=where, no_order_check=no_order_check)
    result = case.result
    drawn = None
    if case.overlaying:
        from forensics.render.decode import render_overlay

        if overlay is not None:
            from forensics.render.overlay import load_detections

            other, source = load_detections(overlay), str(overlay)
        else:
            other, source = case.other, case.other_source
        picture, summary = render_overlay(result, other, names=names or ("other", "this"), image=image,
                                          image_size=image_size, score_threshold=score_threshold, source=source)
        drawn = {"output": picture.save(os.fspath(draw)), **summary}
    elif draw:
        from forensics.decode.draw import draw_detections

        drawn = draw_detections(image, os.fspath(draw), result, score_threshold=score_threshold)
    return DecodeReport("decode", result, rows_key="detections", judgement=case.judgement, geometry=case.geometry,
                        drawing=drawn, score_threshold=score_threshold)


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
    RESULT = "forensics.decode.ssd_anchors:AnchorsGenResult"

    ROWS_KEY = "anchors"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.decode import render_anchors_gen

        return render_anchors_gen(self.result, self.judgement, show=len(self.result.anchors))


@spellings()
def anchors_gen(*, input_size=None, feature_maps=None, min_scale: float = 0.2, max_scale: float = 0.95,
                aspect_ratios=(1.0, 2.0, 0.5, 3.0, 0.3333), interpolated_scale_aspect_ratio: float = 1.0,
                no_reduce_lowest: bool = False, output=None, check_model=None, check_deps=None, show: int = 5,
                anchor: int | None = None) -> AnchorsGenReport:
    """`forensics anchors-gen`: TF OD API multiple-grid anchors; exit code 1 when a checked model's differ."""
    from forensics.decode import usecases

    result, judged = usecases.anchors_gen(
        input_size=input_size, feature_maps=feature_maps, min_scale=min_scale, max_scale=max_scale,
        aspect_ratios=aspect_ratios, interpolated_scale_aspect_ratio=interpolated_scale_aspect_ratio,
        reduce_lowest=not no_reduce_lowest, output=output, check_model=check_model, check_deps=check_deps, show=show,
        anchor=anchor)
    return AnchorsGenReport("anchors-gen", result, rows_key="anchors", judgement=judged)
