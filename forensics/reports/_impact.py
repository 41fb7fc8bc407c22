"""impact: which of the records that differ between two runs change the detections after NMS (or the top-k)."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.reports.base import Report, spellings


def _annotated(geometry, doc: dict) -> dict:
    """The document's detection rows with where each anchor sits (forensics.decode.geometry.annotate)."""
    from forensics.decode.geometry import annotate

    def row(r):
        return annotate(geometry, r, r["anchor"]) if r is not None else None

    doc["detections"] = {side: [row(r) for r in rows] for side, rows in doc["detections"].items()}
    for change in doc["changes"]:
        change["a"], change["b"] = row(change["a"]), row(change["b"])
        change["detection"] = change["a"] if change["a"] is not None else change["b"]
    doc["anchor_geometry"] = {"grid": geometry.is_grid, "reason": geometry.reason,
                              "layers": [layer.shape_text for layer in geometry.layers]}
    return doc


@dataclass(frozen=True, repr=False)
class ImpactReport(Report):
    geometry: object = None     # forensics.decode.geometry.AnchorGeometry of an SSD's anchors
    drawing: dict | None = None  # what --draw wrote
    runs: tuple[str, str] = ("", "")

    RESULT = "forensics.decode.impact:ImpactResult"

    ROWS_KEY = "changes"  # the document's list of rows (rows_key_of)

    @classmethod
    def from_dict(cls, doc: dict) -> "ImpactReport":
        """The impact a saved document stands for, with the runs, the anchors' geometry (read from anchor_geometry
        and the rows' priors) and what --draw wrote."""
        import dataclasses

        report = super().from_dict(doc)
        geometry = None
        if doc.get("anchor_geometry") is not None:
            from forensics.decode.geometry import saved_geometry

            rows = [*doc["detections"]["a"], *doc["detections"]["b"],
                    *(row for change in doc["changes"] for row in (change["a"], change["b"]))]
            geometry = saved_geometry(doc["anchor_geometry"], doc["num_records"], rows)
        runs = doc.get("runs") or {}
        return dataclasses.replace(report, geometry=geometry, drawing=doc.get("drawing"),
                                   runs=(runs.get("a", ""), runs.get("b", "")))

    def to_dict(self) -> dict:
        doc = self._sources(self.result.to_dict())
        doc["runs"] = {"a": self.runs[0], "b": self.runs[1]}
        if self.geometry is not None:
            doc = _annotated(self.geometry, doc)
        if self.drawing:
            doc["drawing"] = dict(self.drawing)
        return doc

    def renderables(self) -> list:
        from rich.text import Text

        from forensics.render.impact import render_impact

        out = render_impact(self.result, geometry=self.geometry)
        if self.drawing:
            from forensics.render.style import wrote

            n_a, n_b = self.drawing["boxes"]
            out.append(Text(f"drew {n_a} changed box(es) of A in green and {n_b} of B in red"))
            out.append(Text(wrote(self.drawing["output"])))
        from forensics.render.line import judgement_line

        out.append(judgement_line(self.judgement))
        return out


def _draw(result, context, draw, image, image_wh) -> dict:
    from forensics.render.impact import impact_picture

    if result.model_kind != "ssd":
        raise InputError("{draw} draws an SSD's boxes; the model is a classifier", params=True)
    if image is not None:
        picture = impact_picture(result, image=image)
    else:
        canvas = image_wh or context.model.input_size
        if canvas is None:
            raise InputError("{draw} needs {image:IMG}, {image_size:WxH} or the model's {input_size:WxH} (the "
                             "canvas the boxes are drawn on)", params=True)
        picture = impact_picture(result, canvas=tuple(canvas))
    output = picture.save(os.fspath(draw))
    shown = (sum(1 for c in result.changes if c.a is not None), sum(1 for c in result.changes if c.b is not None))
    return {"output": output, "size": [picture.width, picture.height], "boxes": list(shown),
            "colours": ["green", "red"]}


@spellings()
def impact(run_a, run_b, *, model=None, deps=None, dequantize: str = "reference", labels=None, image=None,
           image_size=None, input_size=None, draw=None, top_k: int | None = None,
           max_decodes: int | None = None) -> ImpactReport:
    """`forensics impact RUN_A RUN_B (--model M | --deps DIR)`: each detection that differs after NMS (added,
    removed, moved, rescored, relabelled) with the 1-minimal set of differing anchors that causes it (B's records
    substituted into A, decoded again, delta debugging within `max_decodes` decodes), and the harmless rest. A
    classifier `model` gets the same over its `top_k` (default 5). Exit 0 when nothing changes, 1 otherwise."""
    from forensics.runs import usecases

    case = usecases.impact(run_a, run_b, model=model, deps=deps, dequantize=dequantize, labels=labels, image=image,
                           image_size=image_size, input_size=input_size, top_k=top_k, max_decodes=max_decodes,
                           draw=draw)
    result = case.result
    drawn = _draw(result, case.context, draw, image, case.image_wh) if draw else None
    return ImpactReport("impact", result, judgement=result.judgement, rows_key="changes", geometry=case.geometry,
                        drawing=drawn, runs=(os.fspath(run_a), os.fspath(run_b)))
