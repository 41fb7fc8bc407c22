"""One function per command: what `forensics CMD ... --json` prints, as a frozen report object.

`reports.diff("a.bin", "b.bin", tolerance=1)` does what `forensics diff a.bin b.bin --tolerance 1` does: the
positional arguments in the command line's order, the options as keywords named after the long flags
(`--max-shift` -> `max_shift`, `--at` -> `at`). Every report has
- `to_dict()`: exactly the `--json` document,
- `exit_code`: the command's exit code (forensics.exitcodes: 0 same/ok, 1 differences or findings),
- `warnings`: the lines the command prints on stderr as warnings,
- `renderables()` / `__rich__` / `_repr_html_`: the command's tables (forensics/render), in a terminal or a
  notebook, and `to_frame()`: its rows as a pandas DataFrame (when it has rows).
Pictures and files the command writes (`--heatmap`, `--draw`, `-o`) are written by the report function when
their path is given, and recorded in the report. This module composes the library and the renderers; only
forensics/cli sits above it.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from forensics import exitcodes
from forensics.errors import InputError


@dataclass(frozen=True, repr=False)
class Report:
    """What one command found: its `--json` document, exit code, warnings and tables."""

    command: str
    result: object                       # the library's result object (or document) the report is built on
    exit_code: int = exitcodes.SAME
    warnings: tuple[str, ...] = ()
    rows_key: str | None = field(default=None, repr=False)  # the document's list of rows, for to_frame()
    dumps: tuple = field(default=(), repr=False)  # the dumps read: a text dump or a slice is named in `sources`

    def to_dict(self) -> dict:
        """The `--json` document (a fresh dict each call)."""
        return self._sources(self.result.to_dict())

    def _sources(self, doc: dict) -> dict:
        from forensics.dump import with_sources

        return with_sources(doc, *self.dumps)

    def renderables(self) -> list:
        """The rich renderables the command prints (without --json)."""
        raise NotImplementedError

    def __rich__(self):
        from rich.console import Group

        return Group(*self.renderables())

    def _repr_html_(self) -> str:
        import io

        from rich.console import Console

        console = Console(record=True, file=io.StringIO(), width=120, color_system="truecolor",
                          force_terminal=True, highlight=False, soft_wrap=False, emoji=False)
        console.print(self)
        return console.export_html(inline_styles=True)

    def to_frame(self):
        """The report's rows as a pandas DataFrame (pandas is imported here, only when asked for)."""
        if self.rows_key is None:
            raise TypeError(f"a {self.command} report has no rows to make a DataFrame of")
        try:
            import pandas as pd
        except ImportError:
            from forensics.errors import DependencyError

            raise DependencyError("to_frame() needs pandas: pip install 'forensics[export]'") from None
        rows = self.to_dict().get(self.rows_key) or []
        return pd.DataFrame(rows)

    def __bool__(self) -> bool:
        """True when the command would exit 0 (same / ok / nothing found)."""
        return self.exit_code == exitcodes.SAME

    def __repr__(self) -> str:  # short: notebooks show it as the plain-text form beside the HTML
        return f"<{type(self).__name__} {self.command}: exit_code={self.exit_code}>"


def _limit(limit, show_all: bool):
    return None if show_all else (None if limit == 0 else limit)


def _slice(offset=None, length=None, gap_fill=None, *, layout: bool = False) -> tuple[dict, int | None]:
    """(open_dump keywords, layout offset). offset/length cut a slice of every dump (e.g. the tensor in a
    page-rounded DMA allocation); gap_fill fills holes in text dumps. For the record commands (`layout`),
    offset alone stays the layout offset (where records start); with length it cuts the slice."""
    options: dict = {}
    if gap_fill is not None:
        options["gap_fill"] = gap_fill
    if layout and length is None:
        return options, offset
    if offset:
        options["offset"] = offset
    if length is not None:
        options["length"] = length
    return options, None


# --- buffers: crc, diff, anchors, coverage, hexdump --------------------------------------------------------

class CrcReport(Report):
    def renderables(self) -> list:
        from forensics.render.buffers import render_crc

        return render_crc(self.result)


def crc(*files, chunk: int | None = None, expect: int | None = None, offset: int | None = None,
        length: int | None = None, gap_fill: int | None = None, progress=None) -> CrcReport:
    """`forensics crc FILE... [--chunk N] [--expect CRC]`: size, CRC32 and head/mid/tail bytes; each file
    against the first, and against `expect` (a CRC32 a driver logged) when given."""
    from forensics.crc import crc_files

    options, _ = _slice(offset, length, gap_fill)
    result = crc_files([os.fspath(f) for f in files], chunk_size=chunk, expect=expect, progress=progress,
                       **options)
    return CrcReport("crc", result, exitcodes.DIFFERENT if result.match is False else exitcodes.SAME,
                     rows_key="files")


def _dump_context(dump, *, model=None, tensor=None, labels=None, deps=None, record=None, offset=None, count=None,
                  fields=None, pad=None, scale=None, zero_point=None):
    from forensics.modeldumps import dump_context

    return dump_context(dump, model=model, tensor=tensor, labels=labels, deps=deps, record_size=record,
                        offset=offset, count=count, fields=fields, pad_lanes=pad, scale=scale,
                        zero_point=zero_point)


def _check_pictures(context, heatmap, grid) -> None:
    if (heatmap or grid) and context.geometry is None:
        raise InputError("{heatmap} and {grid} need the anchors' geometry: give {model:MODEL} or {deps:DIR}",
                         params=True)
    if heatmap:
        from forensics.outputs import check_writable

        check_writable(heatmap)


def _draw_heatmap(context, heat, title: str, heatmap) -> dict | None:
    """Write the heatmap PNG (when a path is given) and say what was drawn, for the `heatmap` JSON key."""
    if not heatmap or heat is None:
        return None
    from forensics.render.pictures import heatmap_for

    picture = heatmap_for(context.geometry, heat, title=title)
    picture.save(heatmap)
    return {"path": os.fspath(heatmap), **picture.to_dict(), **heat.to_dict()}


@dataclass(frozen=True, repr=False)
class RecordsReport(Report):
    """diff and anchors: a result whose listed records carry anchor geometry, plus the pictures drawn."""

    context: object = None                # forensics.modeldumps.DumpContext
    heat: object = None                   # forensics.heat.AnchorHeat for --grid / --heatmap
    heatmap: dict | None = None           # what --heatmap wrote
    grid: bool = False
    title: str = ""
    plot: dict | None = None              # what diff's plot (the error picture) wrote

    def to_dict(self) -> dict:
        from forensics.modeldumps import annotate_rows

        doc = self._sources(self.result.to_dict())
        listed = "records" if self.command == "diff" else "nonuniform"  # the rows that are anchors
        if listed in doc:
            doc[listed] = annotate_rows(doc[listed], self.context.geometry)
        doc.update(self.context.to_dict())
        if self.heatmap is not None:
            doc["heatmap"] = dict(self.heatmap)
        if self.plot is not None:
            doc["plot"] = dict(self.plot)
        return doc

    def renderables(self) -> list:
        from forensics.render import buffers

        if self.command == "diff":
            view = self.context.view
            out = buffers.render_diff(self.result, geometry=self.context.geometry,
                                      classes=view is not None and view.class_vector)
        else:
            out = list(buffers.render_anchors(self.result, geometry=self.context.geometry))
        if self.grid and self.heat is not None:
            from forensics.render.grid import grid_for

            out.append(grid_for(self.context.geometry, self.heat, title=self.title))
        if self.heatmap is not None:
            from rich.text import Text

            from forensics.render.style import wrote

            out.append(Text(wrote(self.heatmap["path"])))
        if self.plot is not None:
            from rich.text import Text

            from forensics.render.style import wrote

            out.append(Text(wrote(self.plot["path"])))
        return out


def diff(a, b, *, record=None, offset=None, count=None, fields=None, pad=None, scale=None, zero_point=None,
         tolerance: int | None = None, atol=None, rtol=None, check=None, limit: int = 20,
         all: bool = False, model=None, tensor=None, labels=None,  # noqa: A002
         deps=None, heatmap=None, grid: bool = False, lane: int | None = None, plot=None,
         length: int | None = None, gap_fill: int | None = None, no_stats: bool = False,
         progress=None) -> RecordsReport:
    """`forensics diff A B`: record-by-record comparison with error statistics; exit code 0 MATCH or WITHIN
    TOLERANCE (tolerance K LSB, or atol / rtol / check: forensics.tolerance), 1 DIFFER. `plot` writes the 2x2
    picture of the error. With `length`, offset/length cut the same slice of both dumps (else offset is the
    layout offset). `no_stats` leaves the error statistics out (one pass over A fewer once the dumps differ:
    the fast path for multi-GB dumps); the verdict is then judged on whole LSB, as `tolerance` K does."""
    from forensics.tolerance import make_policy

    policy = make_policy(tolerance=tolerance, atol=atol, rtol=rtol, check=check).default
    if no_stats and (plot or (policy.lsb_threshold() is None)):
        raise InputError("{no_stats} leaves out the error statistics that "
                         + ("{plot} draws" if plot else "a tolerance other than whole LSB is judged on"),
                         params=True)
    tolerance = tolerance or 0
    from forensics.diff import diff_dumps
    from forensics.dump import open_dump
    from forensics.modeldumps import (array_locator, class_locator, element_type, records_by_anchor,
                                      remap_indices, tensor_view)

    options, offset = _slice(offset, length, gap_fill, layout=True)
    dump_a, dump_b = open_dump(a, **options), open_dump(b, **options)
    context = _dump_context(dump_a if dump_a.meta is not None or dump_b.meta is None else dump_b, model=model,
                            tensor=tensor, labels=labels, deps=deps, record=record, offset=offset, count=count,
                            fields=fields, pad=pad, scale=scale, zero_point=zero_point)
    if context.view is not None:
        other = tensor_view(dump_b, model, tensor)
        if other.mode != context.view.mode:
            raise InputError(f"A is the {context.view.mode} layout ({dump_a.size:,} bytes) and B the "
                             f"{other.mode} layout ({dump_b.size:,} bytes) of {tensor!r}: relayout one "
                             f"first (forensics relayout ... --layer {tensor})")
    element, context = element_type((dump_a, dump_b), context,
                                    record_given=record is not None or getattr(dump_a.meta, "record_size", None))
    _check_pictures(context, heatmap, grid)
    if plot:
        from forensics.outputs import check_writable

        check_writable(plot)
    locate = None
    if context.record_order is not None:  # raw chip layout: name the worst element by its anchor
        from forensics.modeldumps import anchor_locator

        locate = anchor_locator(context)
    elif context.view is not None and context.view.class_vector:
        from forensics.labels import read_labels

        locate = class_locator(context.layout, element.itemsize, read_labels(labels) if labels else None)
    elif dump_a.npy_shape is not None and context.view is None and context.layout.offset == 0:
        locate = array_locator(dump_a.npy_shape, element.itemsize)
    result = diff_dumps(dump_a, dump_b, context.layout, tolerance=tolerance, limit=_limit(limit, all),
                        policy=policy, locate=locate, progress=progress, stats=not no_stats, dtype=element)
    result = remap_indices(result, context, "records")
    heat = None
    title = "differences A vs B"
    if heatmap or grid:
        from forensics.heat import diff_heat

        heat = diff_heat(records_by_anchor(dump_a, context), records_by_anchor(dump_b, context), context.layout,
                         lane=lane, tolerance=tolerance)
    drawn = _draw_heatmap(context, heat, title, heatmap)
    plotted = None
    if plot:
        from forensics.render.errorplot import error_plot_for_dumps

        geometry = context.geometry if context.record_order is None else None  # the map needs anchor order
        picture = error_plot_for_dumps(dump_a, dump_b, context.layout, result.stats, geometry=geometry,
                                       dtype=element, shape=dump_a.npy_shape, title=f"{a} vs {b}")
        picture.save(plot)
        plotted = {"path": os.fspath(plot), **picture.to_dict()}
    return RecordsReport("diff", result, exitcodes.SAME if result.passed else exitcodes.DIFFERENT,
                         rows_key="records", context=context, heat=heat, heatmap=drawn, grid=grid, title=title,
                         plot=plotted, dumps=(dump_a, dump_b))


def anchors(file, *, record=None, offset=None, count=None, fields=None, pad=None, scale=None, zero_point=None,
            nonuniform: bool = False, top: int = 10, window: int = 256, limit: int = 1000,
            all: bool = False, model=None, tensor=None, labels=None, deps=None, heatmap=None,  # noqa: A002
            grid: bool = False, lane: int | None = None, length: int | None = None, gap_fill: int | None = None,
            progress=None) -> RecordsReport:
    """`forensics anchors FILE`: the dominant record and (with nonuniform) the anchors that depart from it."""
    from forensics.anchors import analyse_anchors
    from forensics.dump import open_dump
    from forensics.modeldumps import records_by_anchor, remap_indices

    options, offset = _slice(offset, length, gap_fill, layout=True)
    dump = open_dump(file, **options)
    context = _dump_context(dump, model=model, tensor=tensor, labels=labels, deps=deps, record=record,
                            offset=offset, count=count, fields=fields, pad=pad, scale=scale, zero_point=zero_point)
    _check_pictures(context, heatmap, grid)
    result = analyse_anchors(dump, context.layout, nonuniform=nonuniform, top=top, window=window,
                             limit=_limit(limit, all), progress=progress)
    result = remap_indices(result, context, "nonuniform")
    heat = None
    title = "scores per cell"
    if heatmap or grid:
        from forensics.heat import anchors_heat

        # Without a dominant record every anchor "departs": mark the highest-scoring ones instead.
        marked = None if result.dominated else tuple(t.index for t in result.top_scores)
        heat = anchors_heat(records_by_anchor(dump, context), context.layout, lane=lane,
                            dominant=result.dominant.record, marked=marked)
    drawn = _draw_heatmap(context, heat, title, heatmap)
    return RecordsReport("anchors", result, exitcodes.SAME, rows_key="nonuniform" if nonuniform else "top",
                         context=context, heat=heat, heatmap=drawn, grid=grid, title=title, dumps=(dump,))


class CoverageReport(Report):
    def renderables(self) -> list:
        from forensics.render.buffers import render_coverage

        return render_coverage(self.result)


def coverage(file, *, sentinel, min_run: int = 8, offset: int | None = None,
             length: int | None = None, gap_fill: int | None = None) -> CoverageReport:
    """`forensics coverage FILE --sentinel HEX`: exit code 0 fully written, 1 untouched ranges remain."""
    from forensics.coverage import analyse_coverage
    from forensics.dump import open_dump

    if isinstance(sentinel, str):
        sentinel = _hex_bytes(sentinel)
    dump = open_dump(file, **_slice(gap_fill=gap_fill)[0])  # offset/length: the region coverage looks at
    result = analyse_coverage(dump, sentinel, min_run=min_run, offset=offset or 0, length=length)
    return CoverageReport("coverage", result, exitcodes.SAME if result.fully_written else exitcodes.DIFFERENT,
                          rows_key="untouched_ranges", dumps=(dump,))


def _hex_bytes(text: str) -> bytes:
    """`cc`, `0xCC`, `de ad be ef` -> bytes (sentinels given as text in a notebook)."""
    cleaned = text.strip().lower().replace(" ", "").replace("_", "").removeprefix("0x")
    try:
        value = bytes.fromhex(cleaned)
    except ValueError:
        value = b""
    if not value:
        raise InputError(f"{{sentinel}}: expected hex bytes like cc or deadbeef, got {text!r}", params=True)
    return value


class HexdumpReport(Report):
    def renderables(self) -> list:
        from forensics.render.buffers import render_hexdump

        return render_hexdump(self.result)


def hexdump(file, file2=None, *, record=None, offset=None, fields=None, pad=None, scale=None, zero_point=None,
            anchor: int | None = None, context: int = 4, at: int | None = None, length: int | None = None,
            model=None, tensor=None, labels=None, gap_fill: int | None = None) -> HexdumpReport:
    """`forensics hexdump FILE [FILE2]`: hex + ASCII by record around an anchor, or over at/length bytes."""
    from forensics.dump import open_dump
    from forensics.hexdump import hexdump as hexdump_of

    options = _slice(gap_fill=gap_fill)[0]  # at/length: the bytes hexdump shows
    dump_a = open_dump(file, **options)
    dump_b = open_dump(file2, **options) if file2 else None
    if anchor is not None and at is not None:
        raise InputError("give either {anchor} or {at}, not both", params=True)
    dump_context = _dump_context(dump_a, model=model, tensor=tensor, labels=labels, record=record, offset=offset,
                                 fields=fields, pad=pad, scale=scale, zero_point=zero_point)
    order = dump_context.record_order
    if anchor is not None and order is not None:  # the anchor's record in the chip's order
        anchor = int(order[anchor]) if anchor < len(order) else anchor
    result = hexdump_of(dump_a, dump_b, dump_context.layout, anchor=anchor, context=context, offset=at,
                        length=length)
    return HexdumpReport("hexdump", result, rows_key="rows", dumps=(dump_a, dump_b))


# --- model: graph, extract, relayout -----------------------------------------------------------------------

@dataclass(frozen=True)
class Document:
    """A library result that is already its JSON document."""

    doc: dict

    def to_dict(self) -> dict:
        import copy

        return copy.deepcopy(self.doc)


def _open_model(path):
    from forensics.tflite.edgetpu import read_packages
    from forensics.tflite.model import open_model

    model = open_model(path)
    return model, read_packages(model)


class GraphReport(Report):
    def renderables(self) -> list:
        from forensics.render.model import render_graph, render_params

        doc = self.to_dict()
        out = list(render_graph(doc))
        if doc.get("params_written"):
            out += render_params(doc["params_written"])
        return out


def graph(model, *, params_out=None) -> GraphReport:
    """`forensics graph MODEL`: op chain, constants, CPU tail, Edge TPU package; params_out writes the blobs."""
    from forensics.tflite.graph import graph_summary

    opened, packages = _open_model(model)
    summary = graph_summary(opened, packages).to_dict()
    if params_out:
        from forensics.tflite.edgetpu import write_parameters

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


def extract(model, *, output, force: bool = False) -> ExtractReport:
    """`forensics extract MODEL -o DIR`: anchors.bin and postprocess.json for a standalone decoder."""
    from forensics.outputs import check_not_input
    from forensics.tflite.extract import extract as extract_deps, write_extract

    check_not_input(output, model)
    opened, packages = _open_model(model)
    result = extract_deps(opened, packages)
    files = write_extract(result, output, replace=force)
    return ExtractReport("extract", result, files=tuple(files))


class RelayoutReport(Report):
    def renderables(self) -> list:
        from forensics.render.model import render_relayout

        return render_relayout(self.to_dict())


def relayout(input, *, model, layer: str, output, inverse: bool = False,  # noqa: A002
             pad_byte: int = 0x80, offset: int | None = None, length: int | None = None,
             gap_fill: int | None = None) -> RelayoutReport:
    """`forensics relayout RAW --model M --layer NAME -o OUT`: chip layout <-> TFLite tensor layout."""
    from forensics.dump import open_dump
    from forensics.outputs import write_bytes_atomic
    from forensics.tflite.relayout import inverse_relayout, layer_map, relayout as relayout_array

    _, packages = _open_model(model)
    found = next((p.output_layer(layer) for p in packages if p.output_layer(layer) is not None), None)
    if found is None:
        names = sorted({lay.name for p in packages for e in p.executables for lay in e.output_layers})
        raise InputError(f"no Edge TPU output layer named {layer!r} (output layers: "
                         f"{', '.join(names) or 'none: not an Edge TPU model'})", model)
    from forensics.errors import FormatError
    from forensics.outputs import check_not_input

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


# --- decode, tail, anchors-gen -----------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class DecodeReport(Report):
    geometry: object = None                # forensics.geometry.AnchorGeometry of the anchors
    drawing: dict | None = None            # what --draw wrote
    score_threshold: float | None = None

    def to_dict(self) -> dict:
        doc = self.result.to_dict()
        geometry = self.geometry
        if geometry is not None:
            from forensics.geometry import annotate

            doc["detections"] = [annotate(geometry, row, row["anchor"]) for row in doc["detections"]]
            doc["anchor_geometry"] = {"grid": geometry.is_grid, "reason": geometry.reason,
                                      "layers": [layer.shape_text for layer in geometry.layers]}
        if self.drawing:
            doc["drawing"] = dict(self.drawing)
        return doc

    def renderables(self) -> list:
        from rich.text import Text

        from forensics.render.decode import render_decode

        out = list(render_decode(self.result, score_threshold=self.score_threshold, geometry=self.geometry))
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

        return render_classes(self.result, names=self.names)


def _classes(a, b, *, model, top_k: int, labels, dump_options=None) -> ClassesReport:
    from forensics.classes import classify_dumps

    if model is None:
        raise InputError("{top_k} needs {model:MODEL} (the classifier: its output's size and quantization)",
                         params=True)
    result = classify_dumps(a, b, model=model, k=top_k, labels_path=labels, dump_options=dump_options)
    return ClassesReport("decode", result, exitcodes.SAME if result.same_order else exitcodes.DIFFERENT,
                         names=(os.fspath(a), os.fspath(b)))


def decode(boxes, scores, *, model=None, deps=None, layout: str = "auto", dequantize: str = "reference",
           labels=None, image=None, image_size=None, input_size=None, draw=None, overlay=None,
           overlay_boxes=None, overlay_scores=None, names=None, score_threshold: float | None = None,
           replay: bool = False, top_k: int | None = None, offset: int | None = None, length: int | None = None,
           gap_fill: int | None = None) -> DecodeReport | ClassesReport:
    """`forensics decode BOXES SCORES (--model M | --deps DIR)`: the TFLite_Detection_PostProcess kernel's
    result; exit code 1 when the replay in LiteRT disagrees. With `top_k` (a classifier model), BOXES and
    SCORES are two dumps of its class scores: both sides' top-k and rank changes; exit 1 when the order differs."""
    if top_k is not None:
        return _classes(boxes, scores, model=model, top_k=top_k, labels=labels,
                        dump_options=_slice(offset, length, gap_fill)[0])
    from forensics.decode.report import decode_dumps
    from forensics.geometry import infer_geometry

    overlaying = _check_decode_options(model=model, deps=deps, image=image, image_size=image_size, overlay=overlay,
                                       overlay_boxes=overlay_boxes, overlay_scores=overlay_scores, names=names,
                                       draw=draw)
    if draw:
        from forensics.outputs import check_not_input, check_writable

        check_not_input(draw, image, overlay, overlay_boxes, overlay_scores, model, boxes, scores)
        check_writable(draw)
    relayouts, tail = {}, None
    if deps is not None:
        from forensics.decode.deps import read_deps

        decode_deps = read_deps(deps)
    else:
        from forensics.decode.model_deps import deps_from_model

        decode_deps, relayouts, tail = deps_from_model(model)
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
    mismatch = result.replay is not None and not result.replay.match
    return DecodeReport("decode", result, exitcodes.DIFFERENT if mismatch else exitcodes.SAME,
                        rows_key="detections", geometry=geometry, drawing=drawn, score_threshold=score_threshold)


class TailReport(Report):
    def renderables(self) -> list:
        from forensics.render.decode import render_tail

        return render_tail(self.result)


def tail(model, *, output) -> TailReport:
    """`forensics tail MODEL -o TAIL.tflite`: the model without its edgetpu-custom-op, for LiteRT."""
    from forensics.tflite.tail import write_tail

    return TailReport("tail", write_tail(model, output))


class AnchorsGenReport(Report):
    def renderables(self) -> list:
        from forensics.render.decode import render_anchors_gen

        return render_anchors_gen(self.result, show=len(self.result.anchors))


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
    differ = result.check is not None and not result.check.matches
    return AnchorsGenReport("anchors-gen", result, exitcodes.DIFFERENT if differ else exitcodes.SAME,
                            rows_key="anchors")


# --- runs: capture, ingest, compare ------------------------------------------------------------------------

class CaptureReport(Report):
    def renderables(self) -> list:
        from forensics.render.runs import render_capture

        return render_capture(self.result)


class CaptureManyReport(Report):
    def renderables(self) -> list:
        from forensics.render.runs import render_capture_many

        return render_capture_many(self.result)


def capture(*, model, output, source: str = "litert", image=None, input=None,  # noqa: A002
            resampling: str = "lanczos", tail_only: bool = False, delegate=None,
            replace: bool = False, images=None, progress=None) -> CaptureReport | CaptureManyReport:
    """`forensics capture --model M -o RUN`: run the model in LiteRT and record every stage as a run;
    with `images` (a folder or a list file), one run per image under `output` (progress(images_done, images))."""
    if images is not None:
        from forensics.runs.capture_many import capture_many

        if replace:
            raise InputError("{images} resumes: runs already captured are kept (remove a run to capture it again)",
                             params=True)
        result = capture_many(model, images, output, source=source, resampling=resampling, tail_only=tail_only,
                              delegate=delegate,
                              progress=(lambda done, total, _name: progress(done, total)) if progress else None)
        warnings = tuple(error if image in error else f"{image}: {error}" for image, error in result.failed)
        return CaptureManyReport("capture", result, result.exit_code, warnings=warnings)
    from forensics.runs.capture import capture as capture_run

    result = capture_run(model, output, source=source, image=image, inputs=input, resampling=resampling,
                         tail_only=tail_only, delegate=delegate, replace=replace, progress=progress)
    return CaptureReport("capture", result, rows_key="buffers")


class IngestReport(Report):
    def renderables(self) -> list:
        from forensics.render.runs import render_ingest

        return render_ingest(self.result)


@dataclass(frozen=True, repr=False)
class ArraysIngestReport(Report):
    path: str = ""

    def renderables(self) -> list:
        from rich.text import Text

        from forensics.render.runs import render_buffers

        return [Text(f"{self.result.run.path}: added {', '.join(self.result.added)} from {self.path}"),
                render_buffers(self.result.run)]


def ingest(run, buffers, *, source: str | None = None, model=None, from_format: str | None = None,
           offset: int | None = None, length: int | None = None,
           gap_fill: int | None = None) -> IngestReport | ArraysIngestReport:
    """`forensics ingest RUN STAGE[:TENSOR]=FILE... --source NAME`: a driver's dumps into a run; with
    `from_format` (npz / polygraphy) `buffers` is one file whose arrays are brought in."""
    from forensics.runs.ingest import ingest as ingest_run

    if isinstance(buffers, (str, os.PathLike)):
        buffers = [buffers]
    if from_format is not None:
        from forensics.runs.interop import ingest_arrays

        if len(buffers) != 1 or model:
            raise InputError("{from_format} FILE brings in one file's arrays; give no STAGE=FILE or {model} with it",
                             params=True)
        result = ingest_arrays(run, from_format, buffers[0], source=source)
        return ArraysIngestReport("ingest", result, rows_key="buffers", path=os.fspath(buffers[0]))
    if not source:
        raise InputError("ingest needs {source:NAME} (who produced the dumps)", params=True)
    result = ingest_run(run, source, list(buffers), model=model,
                        dump_options=_slice(offset, length, gap_fill)[0])
    warnings = tuple(f"{run}: replaced the run's {label} buffer" for label in result.replaced)
    return IngestReport("ingest", result, warnings=warnings, rows_key="buffers")


class ExportReport(Report):
    def renderables(self) -> list:
        from rich.text import Text

        r = self.result
        return [Text(f"wrote {r.output} ({r.format}: {len(r.arrays)} arrays: {', '.join(n for n, _, _ in r.arrays)})")]


def export(run, *, format: str, output) -> ExportReport:  # noqa: A002
    """`forensics export RUN --format npz|polygraphy -o FILE`: the run's buffers as typed arrays."""
    from forensics.runs.interop import export_run

    return ExportReport("export", export_run(run, format, output), rows_key="arrays")


@dataclass(frozen=True, repr=False)
class CompareReport(Report):
    html: str | None = None                # the --html page written

    def to_dict(self) -> dict:
        doc = self.result.to_dict()
        if self.html:
            doc["html"] = self.html
        return doc

    def tables(self) -> list:
        from forensics.render.runs import render_compare

        return list(render_compare(self.result))

    def renderables(self) -> list:
        out = self.tables()
        if self.html:
            from rich.text import Text

            from forensics.render.style import wrote

            out.append(Text(wrote(self.html)))
        return out


class BatchReport(CompareReport):
    """compare --batch: the summary rows (html: the summary page written)."""

    def tables(self) -> list:
        from forensics.render.runs import render_batch

        return list(render_batch(self.result))


def _run_geometry(model, deps, run_a):
    from forensics.geometry import geometry_for

    if model or deps:
        return geometry_for(model=model, deps=deps)
    path = (run_a.model or {}).get("path")
    if path and os.path.isfile(path):
        try:
            return geometry_for(model=path)
        except InputError:  # a model without PostProcess: no anchors, no pictures
            return None
    return None


def _batch_html(html, batch, result, geometry, limit: int = 100) -> None:
    """The one-page batch summary, and beside it (OUT_pairs/) the reports of the first `limit` differing pairs."""
    from forensics.errors import ForensicsError
    from forensics.outputs import write_text_atomic
    from forensics.render.runs import batch_pictures, html_batch, html_report
    from forensics.runs.compare import compare_runs, find_runs
    from forensics.runs.remote import is_url, join

    html = os.fspath(html)
    reports = {}
    batch = os.fspath(batch).removeprefix("file://")
    folder = os.path.splitext(html)[0] + "_pairs"
    for row in [r for r in result.rows if r["verdict"] == "DIFFER"][:limit]:
        try:  # the pair is read again where it is (a URL's runs in place, through its filesystem)
            runs = find_runs(join(batch, row["pair"]) if is_url(batch) else os.path.join(batch, row["pair"]))
            pair = compare_runs(runs[0], runs[1], geometry=geometry)
        except ForensicsError:
            continue
        os.makedirs(folder, exist_ok=True)
        name = f"{row['pair']}.html"
        write_text_atomic(os.path.join(folder, name), html_report(pair))
        reports[row["pair"]] = f"{os.path.basename(folder)}/{name}"
    write_text_atomic(html, html_batch(result, reports=reports, pictures=batch_pictures(result.aggregates, geometry)))


def _policy(tolerance, atol, rtol, check):
    """The tolerance policy from compare's parameters: `tolerance` K, or (TENSOR, SPEC) pairs, or a list of both."""
    from forensics.tolerance import make_policy

    if tolerance is None or isinstance(tolerance, (int, str, tuple)):
        tolerance = [] if tolerance is None else [tolerance]
    ks, per_tensor = [], []
    for item in tolerance:
        if isinstance(item, tuple):
            per_tensor.append(item)
        elif isinstance(item, str) and "=" in item:
            per_tensor.append(tuple(item.split("=", 1)))
        else:
            ks.append(int(item))
    if len(ks) > 1:
        raise InputError("{tolerance} K is given more than once", params=True)
    return make_policy(tolerance=ks[0] if ks else None, atol=atol, rtol=rtol, check=check, per_tensor=per_tensor)


def compare(*runs, html=None, previous=None, model=None, deps=None, limit: int = 8, batch=None, output=None,
            workers: int | None = None, tolerance=None, atol=None, rtol=None, check=None, labels=None,
            junit=None, progress=None, scheduler: str = "local") -> CompareReport | BatchReport:
    """`forensics compare RUN_A RUN_B` (stage by stage) or `compare --batch DIR -o SUMMARY.csv`. `tolerance`:
    K (LSB for every integer buffer) and/or (TENSOR, SPEC) pairs; with atol / rtol / check they judge
    differing buffers MATCH / WITHIN TOLERANCE / DIFFER (forensics.tolerance). `labels` names detection
    classes; `junit` writes a JUnit XML report (one test case per stage and tensor). With `batch`: `scheduler`
    local / dask / tcp://HOST:PORT, `html` the one-page summary, `model`/`deps` the anchors."""
    policy = _policy(tolerance, atol, rtol, check)
    if batch:
        if runs:
            raise InputError("give RUN_A RUN_B or {batch:DIR}, not both", params=True)
        if previous:
            raise InputError("{batch} takes {output:SUMMARY.csv}, {workers}, {scheduler}, {html}, {model}/{deps}; "
                             "{previous} is for one pair", params=True)
        if not output:
            raise InputError("{batch} needs {output:SUMMARY.csv} (a Parquet file is written beside it)", params=True)
        if model and deps:
            raise InputError("give {model} or {deps}, not both", params=True)
        from forensics.runs.batch import batch_compare, write_summary

        if html:
            from forensics.outputs import check_writable

            check_writable(html)
        geometry = None
        if model or deps:
            from forensics.geometry import geometry_for

            geometry = geometry_for(model=model, deps=deps)
        result = write_summary(batch_compare(batch, workers=workers, scheduler=scheduler, geometry=geometry,
                                             policy=policy, progress=progress), output)
        if result.exit_code == exitcodes.ERROR:  # every pair failed: say why on stderr, as for any input error
            first = result.rows[0].get("error") if result.rows else None
            raise InputError(f"no pair could be compared ({len(result.rows)} failed; first: {first}); the "
                             f"summary is in {output}", batch)
        if html:
            _batch_html(html, batch, result, geometry)
        return BatchReport("compare", result, result.exit_code, rows_key="rows",
                           html=os.fspath(html) if html else None)
    if scheduler != "local":
        raise InputError("{scheduler} is for {batch:DIR}; one pair is compared here", params=True)
    if len(runs) != 2:
        raise InputError("compare needs two runs: RUN_A RUN_B (or {batch:DIR} {output:summary.csv})", params=True)
    if output:
        raise InputError("{output} is the {batch} summary; for one pair use {html:OUT.html} or {json}", params=True)
    if model and deps:
        raise InputError("give {model} or {deps}, not both", params=True)
    from forensics.runs.compare import compare_runs
    from forensics.runs.run import load_run

    run_a, run_b = load_run(runs[0]), load_run(runs[1])
    earlier = load_run(previous) if previous else None
    names = None
    if labels:
        from forensics.labels import read_labels

        names = read_labels(labels)
    result = compare_runs(run_a, run_b, previous=earlier, geometry=_run_geometry(model, deps, run_a), limit=limit,
                          policy=policy, labels=names)
    if html:
        from forensics.outputs import write_text_atomic
        from forensics.render.runs import html_report, pictures_for

        write_text_atomic(html, html_report(result, pictures=pictures_for(result)))
    if junit:
        from forensics.outputs import write_text_atomic
        from forensics.render.junit import junit_xml

        write_text_atomic(junit, junit_xml(result))
    return CompareReport("compare", result, exitcodes.SAME if result.passed else exitcodes.DIFFERENT,
                         warnings=tuple(result.warnings), rows_key="stages", html=os.fspath(html) if html else None)


# --- diagnose ----------------------------------------------------------------------------------------------

class DiagnoseReport(Report):
    def renderables(self) -> list:
        from forensics.render.diagnose import render_diagnose

        return render_diagnose(self.result)


def _diagnose_context(dump_a, dump_b, *, model, tensor, **layout):
    """The layout from model/tensor (fitted to A's size, else B's: one side may be raw, the other the
    tensor), else the sidecars; the layout options override either."""
    from forensics.modeldumps import dump_context

    if model is not None and tensor is None:
        raise InputError("{model} needs {tensor} (the output tensor the dumps hold)", params=True)
    if tensor is None:
        return dump_context(dump_a if dump_a.meta is not None else dump_b, **layout)
    try:
        return dump_context(dump_a, model=model, tensor=tensor, **layout)
    except InputError as first:
        try:
            return dump_context(dump_b, model=model, tensor=tensor, **layout)
        except InputError:
            raise first from None


def _lsb(tolerance, atol):
    """`tolerance` K or `atol` 'Klsb' (whole LSB of the bytes); None without either."""
    if atol is None:
        return tolerance
    text = str(atol).strip().lower()
    number = text[:-3] if text.endswith("lsb") else text
    if not number.isdigit():
        raise InputError(f"{{atol}} {atol!r}: diagnose compares bytes, give whole LSB (e.g. 1lsb)", params=True)
    if tolerance is not None and tolerance != int(number):
        raise InputError("give {tolerance} or {atol}, not both", params=True)
    return int(number)


def diagnose(a, b, *, previous=None, model=None, tensor=None, record=None, offset=None, fields=None, pad=None,
             scale=None, zero_point=None, sentinel=None, min_run: int = 16, window: int = 256,
             max_shift: int | None = None, length: int | None = None, gap_fill: int | None = None,
             progress=None, tolerance: int | None = None, atol=None) -> DiagnoseReport:
    """`forensics diagnose A B`: the verdict (IDENTICAL / WITHIN TOLERANCE exit 0; EXPLAINED / PARTLY
    EXPLAINED / UNEXPLAINED exit 1) and the named bugs behind a differing pair."""
    from forensics.diagnose import diagnose_dumps
    from forensics.dump import open_dump

    options, offset = _slice(offset, length, gap_fill, layout=True)
    dump_a, dump_b = open_dump(a, **options), open_dump(b, **options)
    earlier = open_dump(previous, **options) if previous else None
    context = _diagnose_context(dump_a, dump_b, model=model, tensor=tensor, record_size=record, offset=offset,
                                fields=fields, pad_lanes=pad, scale=scale, zero_point=zero_point)
    patterns = [_hex_bytes(p) if isinstance(p, str) else p for p in (sentinel or ())]
    sentinels = [(f"0x{p.hex().upper()}", p) for p in patterns]
    result = diagnose_dumps(dump_a, dump_b, layout=context.layout, previous=earlier, model_view=context.view,
                            model=os.fspath(model) if model is not None else None, sentinels=sentinels,
                            tolerance=_lsb(tolerance, atol), min_run=min_run, max_shift=max_shift, window=window,
                            progress=progress)
    return DiagnoseReport("diagnose", result, result.exit_code, rows_key="findings", dumps=(dump_a, dump_b, earlier))


class SimulateReport(Report):
    def to_dict(self) -> dict:
        return self.result if isinstance(self.result, dict) else self.result.to_dict()

    def renderables(self) -> list:
        from forensics.render.diagnose import render_bug_list, render_simulated

        if isinstance(self.result, dict):
            return [render_bug_list([(b["kind"], b["usage"], b["description"]) for b in self.result["bugs"]])]
        return render_simulated(self.result)


def simulate(a=None, *, bug: str, output=None, previous=None) -> SimulateReport:
    """`forensics simulate A --bug KIND[:PARAMS] -o B`: what A becomes under the bug, written atomically;
    `bug="list"` lists the kinds."""
    from forensics.simulate import BUG_HELP
    from forensics.simulate import simulate as run

    if bug == "list":
        return SimulateReport("simulate", {"bugs": [{"kind": k, "usage": u, "description": d}
                                                    for k, u, d in BUG_HELP]}, rows_key="bugs")
    if a is None or output is None:
        raise InputError("simulate needs A and {output} B (or bug 'list')", params=True)
    return SimulateReport("simulate", run(a, bug, previous=previous, output=output))


# --- csr ---------------------------------------------------------------------------------------------------

@dataclass(frozen=True, repr=False)
class CsrReport(Report):
    limit: int | None = 200
    show_all: bool = False

    def renderables(self) -> list:
        from forensics.render.csr import render_comparison

        return render_comparison(self.result, limit=self.limit, show_all=self.show_all)


class RegisterReport(Report):
    def renderables(self) -> list:
        from forensics.render.csr import render_lookup

        return render_lookup(self.result)


def csr(a=None, b=None, *, reads: bool = False, mask=None, snapshot: bool = False, limit: int = 200,
        all: bool = False, name=None, find=None,  # noqa: A002
        line_pattern: str | None = None) -> CsrReport | RegisterReport:
    """`forensics csr A B` (two register traces or snapshots) or `csr --name OFFSET` / `csr --find TEXT`.

    `mask` is a list of (offset or register name, bits that may differ) pairs."""
    lookups = [q for q in (name, find) if q is not None]
    if lookups:
        if a is not None or b is not None:
            raise InputError("{name}/{find} take no trace files", params=True)
        if len(lookups) > 1:
            raise InputError("give {name} or {find}, not both", params=True)
        from forensics.csr.registers import lookup_register

        result = lookup_register(find if find is not None else name, find=find is not None)
        return RegisterReport("csr", result, exitcodes.SAME if result.found else exitcodes.DIFFERENT,
                              rows_key="registers")
    if a is None or b is None:
        raise InputError("expected two traces A B, or {name:OFFSET}, or {find:TEXT}", params=True)
    from forensics.csr.compare import compare_files
    from forensics.csr.registers import beagle_table

    table = beagle_table()
    masks: dict[int, int] = {}
    for key, bits in mask or ():
        offset = table.resolve(key)
        masks[offset] = masks.get(offset, 0) | bits
    result = compare_files(a, b, include_reads=reads, masks=masks, snapshot=snapshot, table=table,
                           line_pattern=line_pattern)
    return CsrReport("csr", result, exitcodes.SAME if result.passed else exitcodes.DIFFERENT, rows_key="rows",
                     limit=None if limit == 0 else limit, show_all=all)


# --- driver-side evidence: import, fingerprint, verify; the demo -------------------------------------------

class ImportReport(Report):
    def renderables(self) -> list:
        from forensics.render.evidence import render_import

        return render_import(self.result)


def import_(text, *, output, format: str = "auto", gap_fill: int | None = None) -> ImportReport:  # noqa: A002
    """`forensics import TEXT -o OUT.bin`: a text hex dump (WinDbg d*, xxd, hexdump -C, od, plain hex) to bytes."""
    from forensics.textdump import import_text_dump

    return ImportReport("import", import_text_dump(os.fspath(text), os.fspath(output), fmt=format,
                                                   gap_fill=gap_fill))


class FingerprintReport(Report):
    def lines(self) -> list[str]:
        """The driver-style lines, exactly (a driver's log is compared with them character by character)."""
        from forensics.render.evidence import render_fingerprint

        return render_fingerprint(self.result)

    def renderables(self) -> list:
        from rich.text import Text

        return [Text(line, no_wrap=True, overflow="ignore") for line in self.lines()]


def fingerprint(file, *, page: int = 4096, tag: str | None = None, offset: int | None = None,
                length: int | None = None, gap_fill: int | None = None, progress=None) -> FingerprintReport:
    """`forensics fingerprint FILE`: what a driver can log for a buffer (pages' first8/last8, xor-fold, size,
    CRC32, HEAD/MID/TAIL, the [FP] line)."""
    from forensics.dump import open_dump
    from forensics.fingerprint import fingerprint_dump

    dump = open_dump(file, allow_empty=True, use_sidecar=False, **_slice(offset, length, gap_fill)[0])
    return FingerprintReport("fingerprint", fingerprint_dump(dump, page_size=page, tag=tag, progress=progress),
                             rows_key="pages")


class VerifyReport(Report):
    def renderables(self) -> list:
        from forensics.render.evidence import render_verify

        return render_verify(self.result)


def verify(log, *files, buffer=None, pattern: str | None = None, page: int = 4096, offset: int | None = None,
           length: int | None = None, gap_fill: int | None = None) -> VerifyReport:
    """`forensics verify LOG FILE...`: every fingerprint a driver logged, checked against the files; exit code
    1 when one differs. `buffer` is a list of (tag, file) pairs."""
    from forensics.fingerprint import verify_log

    result = verify_log(os.fspath(log), [os.fspath(f) for f in files], buffers=dict(buffer or ()), page_size=page,
                        pattern=pattern, **_slice(offset, length, gap_fill)[0])
    return VerifyReport("verify", result, result.exit_code, rows_key="checks")


# (question, expected exit code, command, positional arguments, options), in the README story's order.
DEMO_STEPS = (
    ("1. Are the inputs even the same?", 0, "crc", ("dumps/libedgetpu/input.bin", "dumps/ours/input.bin"), {}),
    ("2. Did the chip write the same scores through both drivers?", 0, "diff",
     ("dumps/libedgetpu/convert_scores.bin", "dumps/ours/convert_scores.bin"), {}),
    ("3. The first 256 bytes repeat one record. Which anchors do not?", 0, "anchors",
     ("dumps/ours/convert_scores.bin",), {"nonuniform": True, "deps": "dumps/face_ssd"}),
    ("4. Decode them as TFLite_Detection_PostProcess would (anchors + options in dumps/face_ssd)", 0, "decode",
     ("dumps/ours/Squeeze1.bin", "dumps/ours/convert_scores.bin"), {"deps": "dumps/face_ssd", "image_size": (640, 480)}),
    ("5. What a real bug looks like: a DMA that stopped early (0xCC prefill left) and a row-stride bug", 1, "diff",
     ("dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"), {"limit": 3}),
    (None, 1, "coverage", ("dumps/broken/convert_scores.bin",), {"sentinel": b"\xcc"}),
    (None, 1, "crc", ("dumps/libedgetpu/input.bin", "dumps/broken/input.bin"), {"chunk": 960}),
    (None, 1, "diagnose", ("dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"), {}),
)


def _demo_command(command: str, positional, opts: dict) -> str:
    words = ["forensics", command]
    for key, value in opts.items():
        flag = "--" + key.replace("_", "-")
        if value is True:
            words.append(flag)
        elif isinstance(value, tuple):
            words += [flag, "x".join(map(str, value))]
        elif isinstance(value, bytes):
            words += [flag, value.hex()]
        else:
            words += [flag, str(value)]
    return " ".join(words[:2] + list(positional) + words[2:])


@dataclass(frozen=True)
class DemoDocument:
    steps: tuple

    def to_dict(self) -> dict:
        return {"steps": [{k: v for k, v in step.items() if k != "report"} for step in self.steps],
                "ok": all(step["ok"] for step in self.steps)}


class DemoReport(Report):
    def renderables(self) -> list:
        from rich.text import Text

        out = []
        for step in self.result.steps:
            if step["step"]:
                out.append(Text("\n" + step["step"]))
            out.append(Text(f"\n$ {step['command']}", style="bold"))
            out.extend(step["report"].renderables())
            if not step["ok"]:
                out.append(Text(f"demo: expected exit {step['expected_exit']} from '{step['command']}', "
                                f"got {step['exit']}", style="bold red"))
        return out


def demo(root=None) -> DemoReport:
    """`forensics demo`: the README's story on the bundled dumps, step by step; exit code 1 when a step does not
    end as the story expects. `root` is the directory holding `dumps/` (default: the repository of this file)."""
    from pathlib import Path

    root = Path(root) if root is not None else Path(__file__).resolve().parent.parent
    if not (root / "dumps" / "ours" / "convert_scores.bin").is_file():
        raise InputError("the bundled dumps (dumps/ours, dumps/libedgetpu, dumps/broken) are not here: run the "
                         "demo from a clone of the repository", str(root / "dumps"))
    here = Path.cwd().resolve() == root.resolve()

    def at(path: str) -> str:  # as the README writes it when run from the repository root
        return path if here else str(root / path)

    steps = []
    for question, expected, command, positional, opts in DEMO_STEPS:
        paths = [at(p) for p in positional]
        kwargs = {k: (at(v) if k == "deps" else v) for k, v in opts.items()}
        report = globals()[command](*paths, **kwargs)
        steps.append({"step": question, "command": _demo_command(command, positional, opts),
                      "expected_exit": expected, "exit": report.exit_code, "ok": report.exit_code == expected,
                      "report": report})
    result = DemoDocument(tuple(steps))
    return DemoReport("demo", result, exitcodes.SAME if result.to_dict()["ok"] else exitcodes.DIFFERENT)
