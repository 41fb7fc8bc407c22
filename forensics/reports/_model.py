"""graph, extract, relayout: what a .tflite model and its Edge TPU package say."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.reports.base import Report, _slice, spellings


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


def _open_model(path):
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    model = open_model(path)
    return model, read_packages(model)


class GraphReport(Report):
    RESULT = Document  # forensics.model.tflite.graph.GraphSummary's document (and the parameter blobs written)

    @classmethod
    def rows_key_of(cls, doc: dict) -> str | None:
        return "operators"

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
    from forensics.model.tflite.graph import graph_summary

    opened, packages = _open_model(model)
    summary = graph_summary(opened, packages).to_dict()
    if params_out:
        from forensics.model.tflite.edgetpu import write_parameters

        if not packages:
            raise InputError("has no edgetpu-custom-op, so no parameter blobs to write ({params_out})", model,
                             params=True)
        summary["params_written"] = [w for pkg in packages for w in write_parameters(pkg, params_out)]
    return GraphReport("graph", Document(summary), rows_key="operators")


@dataclass(frozen=True, repr=False)
class ExtractReport(Report):
    files: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return dict(self.result.to_dict(), files=list(self.files))

    def renderables(self) -> list:
        from forensics.render.model import render_extract

        return render_extract(self.result.to_dict(), list(self.files))


@spellings()
def extract(model, *, output, force: bool = False) -> ExtractReport:
    """`forensics extract MODEL -o DIR`: anchors.bin and postprocess.json for a standalone decoder."""
    from forensics.io.outputs import check_not_input
    from forensics.model.tflite.extract import extract as extract_deps
    from forensics.model.tflite.extract import write_extract

    check_not_input(output, model)
    opened, packages = _open_model(model)
    result = extract_deps(opened, packages)
    files = write_extract(result, output, replace=force)
    return ExtractReport("extract", result, files=tuple(files))


class RelayoutReport(Report):
    def renderables(self) -> list:
        from forensics.render.model import render_relayout

        return render_relayout(self.to_dict())


@spellings()
def relayout(input, *, model, layer: str, output, inverse: bool = False,  # noqa: A002
             pad_byte: int = 0x80, offset: int | None = None, length: int | None = None,
             gap_fill: int | None = None) -> RelayoutReport:
    """`forensics relayout RAW --model M --layer NAME -o OUT`: chip layout <-> TFLite tensor layout."""
    from forensics.io.dump import open_dump
    from forensics.io.outputs import write_bytes_atomic
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.relayout import relayout as relayout_array

    _, packages = _open_model(model)
    found = next((p.output_layer(layer) for p in packages if p.output_layer(layer) is not None), None)
    if found is None:
        names = sorted({lay.name for p in packages for e in p.executables for lay in e.output_layers})
        raise InputError(f"no Edge TPU output layer named {layer!r} (output layers: "
                         f"{', '.join(names) or 'none: not an Edge TPU model'})", model)
    from forensics.core.errors import FormatError
    from forensics.io.outputs import check_not_input

    check_not_input(output, input, model)
    dump = open_dump(input, use_sidecar=False, **_slice(offset, length, gap_fill)[0])
    try:  # sizes first: a hostile layer or a wrong dump fails before the map is built
        lmap = layer_map(found, dump_size=dump.size)
    except FormatError as exc:
        raise exc.with_path(os.fspath(model)) from None
    except InputError as exc:
        raise InputError(str(exc), input) from None
    data = dump.read_array()  # a .bin, a .npy's data bytes, a text dump's bytes, or a slice
    try:
        result = inverse_relayout(data, lmap, pad_byte) if inverse else relayout_array(data, lmap)
    except InputError as exc:
        raise InputError(str(exc), input) from None
    write_bytes_atomic(output, result.tobytes())
    doc = dict(lmap.to_dict(), inverse=bool(inverse), input=os.fspath(input), output=os.fspath(output),
               input_size=int(data.size),
               output_size=int(result.size), pad_byte=pad_byte)
    return RelayoutReport("relayout", Document(doc))
