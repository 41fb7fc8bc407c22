"""graph, extract, relayout: what a .tflite model and its Edge TPU package say."""

from __future__ import annotations

from dataclasses import dataclass

from forensics.reports.base import Report, spellings


@dataclass(frozen=True)
class Document:
    """A library result that is already its JSON document."""

    doc: dict

    def to_dict(self) -> dict:
        import copy

        return copy.deepcopy(self.doc)

    @classmethod
    def from_dict(cls, doc: dict) -> "Document":
        """A saved document as the result it is (the report's own keys are the report's)."""
        return cls({k: v for k, v in doc.items() if k not in ("command", "report")})


class GraphReport(Report):
    RESULT = Document  # forensics.model.tflite.graph.GraphSummary's document (and the parameter blobs written)

    ROWS_KEY = "operators"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.model import render_graph, render_params

        doc = self.to_dict()
        out = list(render_graph(doc))
        if doc.get("params_written"):
            out += render_params(doc["params_written"])
        return out


@spellings()
def graph(model, *, params_out=None) -> GraphReport:
    """`forensics graph MODEL`: op chain, constants, CPU tail, Edge TPU package; params_out writes the blobs."""
    from forensics.model import usecases

    summary = usecases.graph(model, params_out=params_out)
    return GraphReport("graph", Document(summary), rows_key="operators")


@dataclass(frozen=True, repr=False)
class ExtractReport(Report):
    files: tuple[str, ...] = ()

    RESULT = "forensics.model.tflite.extract:Extracted"

    @classmethod
    def from_dict(cls, doc: dict) -> "ExtractReport":
        """The extraction a saved document stands for, with the files it wrote."""
        import dataclasses

        return dataclasses.replace(super().from_dict(doc), files=tuple(doc.get("files", ())))

    def to_dict(self) -> dict:
        # with the command and report it is (Report._sources): a saved document names the report it loads back as
        return self._sources(dict(self.result.to_dict(), files=list(self.files)))

    def renderables(self) -> list:
        from forensics.render.model import render_extract

        return render_extract(self.result.to_dict(), list(self.files))


@spellings()
def extract(model, *, output, force: bool = False) -> ExtractReport:
    """`forensics extract MODEL -o DIR`: anchors.bin and postprocess.json for a standalone decoder."""
    from forensics.model import usecases

    result, files = usecases.extract(model, output, force=force)
    return ExtractReport("extract", result, files=files)


class RelayoutReport(Report):
    RESULT = Document  # forensics.model.usecases.relayout's document: the layer's sizes and the files

    def renderables(self) -> list:
        from forensics.render.model import render_relayout

        return render_relayout(self.to_dict())


@spellings()
def relayout(input, *, model, layer: str, output, inverse: bool = False,  # noqa: A002
             pad_byte: int = 0x80, offset: int | None = None, length: int | None = None,
             gap_fill: int | None = None) -> RelayoutReport:
    """`forensics relayout RAW --model M --layer NAME -o OUT`: chip layout <-> TFLite tensor layout."""
    from forensics.core.options import Slice
    from forensics.model import usecases

    doc = usecases.relayout(input, model, layer, output, inverse=inverse, pad_byte=pad_byte,
                            where=Slice(offset=offset, length=length, gap_fill=gap_fill))
    return RelayoutReport("relayout", Document(doc))
