"""crc, diff, anchors, coverage, hexdump: one buffer (or a pair) read as bytes and records."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.options import Layout, ModelContext, Slice, Tolerances
from forensics.reports.base import Report, _limit, spellings


def _layout(record, offset, count, fields, pad, scale, zero_point) -> Layout:
    """The Layout group of a record command's keywords (each parsed once already, by @spellings)."""
    return Layout(record=record, offset=offset, count=count, fields=fields, pad=pad, scale=scale,
                  zero_point=zero_point)


class CrcReport(Report):
    RESULT = "forensics.compare.crc:CrcReport"

    ROWS_KEY = "files"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.buffers import render_crc

        return render_crc(self.result, self.judgement)


@spellings()
def crc(*files, chunk: int | None = None, expect: int | None = None, offset: int | None = None,
        length: int | None = None, gap_fill: int | None = None, progress=None) -> CrcReport:
    """`forensics crc FILE... [--chunk N] [--expect CRC]`: size, CRC32 and head/mid/tail bytes; each file
    against the first, and against `expect` (a CRC32 a driver logged) when given."""
    from forensics.compare import usecases

    result, judgement = usecases.crc(files, chunk=chunk, expect=expect, progress=progress,
                                     where=Slice(offset=offset, length=length, gap_fill=gap_fill))
    return CrcReport("crc", result, rows_key="files", judgement=judgement)


def _draw_heatmap(context, heat, title: str, heatmap) -> dict | None:
    """Write the heatmap PNG (when a path is given) and say what was drawn, for the `heatmap` JSON key."""
    if not heatmap or heat is None:
        return None
    from forensics.render.pictures import heatmap_for

    picture = heatmap_for(context.geometry, heat, title=title)
    picture.save(heatmap)
    return {"path": os.fspath(heatmap), **picture.to_dict(), **heat.to_dict()}


@dataclass(frozen=True)
class SavedSource:
    """A dump as a saved document's `sources` names it (a text dump, a slice): forensics.io.dump.with_sources
    writes it back as it was."""

    doc: dict
    slice: None = None

    @property
    def text(self) -> dict | None:
        return self.doc.get("text") or {}  # not None: the document named it, so it is named again

    def source(self) -> dict:
        return dict(self.doc)


def _saved_dumps(doc: dict) -> tuple:
    return tuple(SavedSource(s) for s in doc.get("sources") or () if isinstance(s, dict))


@dataclass(frozen=True, repr=False)
class RecordsReport(Report):
    """diff and anchors: a result whose listed records carry anchor geometry, plus the pictures drawn.

    A saved document reads back (from_dict) with its model context as the document says it (the layout, the
    model tensor's facts, the geometry's places and priors of the anchors it lists, the tensor fits) and the
    pictures' paths: it renders as the command printed it, less the --grid map (the document holds neither
    the per-anchor values nor the grid's layers) and, for a picture no longer there, its size."""

    RESULT = "forensics.compare.diff:DiffResult"

    context: object = None                # forensics.decode.modeldumps.DumpContext
    heat: object = None                   # forensics.buffer.heat.AnchorHeat for --grid / --heatmap
    heatmap: dict | None = None           # what --heatmap wrote
    grid: bool = False
    title: str = ""
    plot: dict | None = None              # what diff's plot (the error picture) wrote
    fits: tuple = ()                      # diff: (A's, B's) forensics.decode.modeldumps.TensorFit, when --model / --deps say

    def to_dict(self) -> dict:
        from forensics.decode.modeldumps import annotate_rows

        doc = self._sources(self.result.to_dict())
        listed = "records" if self.command == "diff" else "nonuniform"  # the rows that are anchors
        if listed in doc:
            doc[listed] = annotate_rows(doc[listed], self.context.geometry)
        doc.update(self.context.to_dict())
        if self.fits:
            doc["tensor_fit"] = {"a": self.fits[0].to_dict() if self.fits[0] else None,
                                 "b": self.fits[1].to_dict() if self.fits[1] else None}
        window = next((r.text for r in self.judgement.reasons if r.code == "head_window"), None)
        if window is not None:  # the judgement's clause, as the document has always named it
            doc["head_window"] = window
        if self.heatmap is not None:
            doc["heatmap"] = dict(self.heatmap)
        if self.plot is not None:
            doc["plot"] = dict(self.plot)
        if self.command == "anchors" and self.context.geometry is not None and self.result.top_scores:
            # added so that a saved document reads back: the places of the top scores the table lists
            doc["top_scores_geometry"] = annotate_rows([{"index": t.index} for t in self.result.top_scores],
                                                       self.context.geometry)
        return doc

    @classmethod
    def result_type_of(cls, doc: dict) -> type:
        if doc.get("command") == "anchors":
            from forensics.buffer.anchors import AnchorsResult

            return AnchorsResult
        return cls.result_type()

    @classmethod
    def rows_key_of(cls, doc: dict) -> str | None:
        if doc.get("command") == "anchors":
            return "nonuniform" if "nonuniform" in doc else "top"
        return "records"

    @classmethod
    def from_dict(cls, doc: dict) -> "RecordsReport":
        import dataclasses

        from forensics.decode.modeldumps import DumpContext, TensorFit

        report = super().from_dict(doc)
        listed = doc.get("records" if report.command == "diff" else "nonuniform") or []
        context = DumpContext.from_dict(doc, report.result.layout, [*listed, *doc.get("top_scores_geometry", ())])
        fits = ()
        saved = doc.get("tensor_fit")
        if report.command == "diff" and isinstance(saved, dict) and set(saved) == {"a", "b"}:
            fits = tuple(TensorFit.from_dict(saved[side]) if saved[side] else None for side in "ab")
            context = dataclasses.replace(context, fit=None)
        return dataclasses.replace(report, context=context, fits=fits, heatmap=doc.get("heatmap"),
                                   plot=doc.get("plot"), dumps=_saved_dumps(doc))

    def renderables(self) -> list:
        from forensics.render import buffers

        if self.command == "diff":
            view = self.context.view
            out = buffers.render_diff(self.result, self.judgement, geometry=self.context.geometry,
                                      classes=view is not None and view.class_vector, fits=self.fits)
        else:
            out = list(buffers.render_anchors(self.result, self.judgement, geometry=self.context.geometry))
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


@spellings()
def diff(a, b, *, record=None, offset=None, count=None, fields=None, pad=None, scale=None, zero_point=None,
         tolerance=None, atol=None, rtol=None, check=None, limit=20,
         all: bool = False, model=None, tensor=None, labels=None,  # noqa: A002
         deps=None, heatmap=None, grid: bool = False, lane=None, plot=None,
         length=None, gap_fill=None, no_stats: bool = False,
         progress=None) -> RecordsReport:
    """`forensics diff A B`: record-by-record comparison with error statistics; exit code 0 MATCH or WITHIN
    TOLERANCE (tolerance K LSB, or atol / rtol / check: forensics.core.tolerance), 1 DIFFER (or HEAD WINDOW: a side
    holds only the head of the tensor --model / --deps describe). `plot` writes the 2x2 picture of the error.
    With `length`, offset/length cut the same slice of both dumps (else offset is the layout offset).
    `no_stats` leaves the error statistics out (one pass over A fewer once the dumps differ: the fast path for
    multi-GB dumps); the verdict is then judged on whole LSB, as `tolerance` K does. Every option takes the
    command line's spelling too (`pad="2,3"`, `scale="1/256"`: forensics.core.options)."""
    from forensics.decode import usecases

    case = usecases.diff(a, b, layout=_layout(record, offset, count, fields, pad, scale, zero_point),
                         where=Slice(offset=offset, length=length, gap_fill=gap_fill),
                         tolerances=Tolerances(tolerance=tolerance, atol=atol, rtol=rtol, check=check),
                         known=ModelContext(model=model, deps=deps, tensor=tensor, labels=labels),
                         limit=_limit(limit, all), stats=not no_stats, lane=lane, heatmap=heatmap, grid=grid,
                         plot=plot, progress=progress)
    title = "differences A vs B"
    plotted = _draw_error_plot(plot, case, title=f"{a} vs {b}")
    return RecordsReport("diff", case.result, rows_key="records", judgement=case.judgement, context=case.context,
                         heat=case.heat, heatmap=_draw_heatmap(case.context, case.heat, title, heatmap), grid=grid,
                         title=title, plot=plotted, dumps=case.dumps, fits=case.fits)


def _draw_error_plot(plot, case, *, title: str) -> dict | None:
    """Write diff's error picture (when a path is given) from what its statistics pass collected, and say what
    was drawn, for the `plot` JSON key."""
    if not plot:
        return None
    from forensics.render.errorplot import error_plot

    context = case.context
    geometry = context.geometry if context.record_order is None else None  # the map needs anchor order
    picture = error_plot(case.result.stats, context.layout, geometry=geometry, dtype=case.element,
                         shape=case.dumps[0].npy_shape, title=title)
    picture.save(plot)
    return {"path": os.fspath(plot), **picture.to_dict()}


@spellings()
def anchors(file, *, record=None, offset=None, count=None, fields=None, pad=None, scale=None, zero_point=None,
            nonuniform: bool = False, top: int = 10, window: int = 256, limit: int = 1000,
            all: bool = False, model=None, tensor=None, labels=None, deps=None, heatmap=None,  # noqa: A002
            grid: bool = False, lane: int | None = None, length: int | None = None, gap_fill: int | None = None,
            progress=None) -> RecordsReport:
    """`forensics anchors FILE`: the dominant record and (with nonuniform) the anchors that depart from it."""
    from forensics.decode import usecases

    case = usecases.anchors(file, layout=_layout(record, offset, count, fields, pad, scale, zero_point),
                            where=Slice(offset=offset, length=length, gap_fill=gap_fill),
                            known=ModelContext(model=model, tensor=tensor, labels=labels, deps=deps),
                            nonuniform=nonuniform, top=top, window=window, limit=_limit(limit, all), lane=lane,
                            heatmap=heatmap, grid=grid, progress=progress)
    title = "scores per cell"
    return RecordsReport("anchors", case.result, rows_key="nonuniform" if nonuniform else "top",
                         judgement=case.judgement,  # HEAD WINDOW: only the head was read
                         context=case.context, heat=case.heat, heatmap=_draw_heatmap(case.context, case.heat, title,
                                                                                     heatmap),
                         grid=grid, title=title, dumps=case.dumps)


class CoverageReport(Report):
    RESULT = "forensics.buffer.coverage:CoverageResult"

    ROWS_KEY = "untouched_ranges"  # the document's list of rows (rows_key_of)

    def renderables(self) -> list:
        from forensics.render.buffers import render_coverage

        return render_coverage(self.result, self.judgement)


@spellings()
def coverage(file, *, sentinel, min_run: int = 8, offset: int | None = None,
             length: int | None = None, gap_fill: int | None = None) -> CoverageReport:
    """`forensics coverage FILE --sentinel HEX`: exit code 0 fully written, 1 untouched ranges remain."""
    from forensics.buffer import usecases

    result, judgement, dump = usecases.coverage(file, sentinel=sentinel, min_run=min_run, offset=offset,
                                                length=length, gap_fill=gap_fill)
    return CoverageReport("coverage", result, rows_key="untouched_ranges", dumps=(dump,), judgement=judgement)


class HexdumpReport(Report):
    RESULT = "forensics.buffer.hexdump:HexdumpResult"

    ROWS_KEY = "rows"  # the document's list of rows (rows_key_of)

    @classmethod
    def from_dict(cls, doc: dict) -> "HexdumpReport":
        import dataclasses

        return dataclasses.replace(super().from_dict(doc), dumps=_saved_dumps(doc))

    def renderables(self) -> list:
        from forensics.render.buffers import render_hexdump

        return render_hexdump(self.result)


@spellings()
def hexdump(file, file2=None, *, record=None, offset=None, fields=None, pad=None, scale=None, zero_point=None,
            anchor: int | None = None, context: int = 4, at: int | None = None, length: int | None = None,
            model=None, tensor=None, labels=None, deps=None, gap_fill: int | None = None) -> HexdumpReport:
    """`forensics hexdump FILE [FILE2]`: hex + ASCII by record around an anchor, or over at/length bytes; with
    `model` or `deps`, the records' lane names and dequantized values where they know them."""
    from forensics.decode import usecases

    result, dumps = usecases.hexdump(file, file2, layout=_layout(record, offset, None, fields, pad, scale, zero_point),
                                     gap_fill=gap_fill, known=ModelContext(model=model, tensor=tensor, labels=labels,
                                                                           deps=deps),
                                     anchor=anchor, context=context, at=at, length=length)
    return HexdumpReport("hexdump", result, rows_key="rows", dumps=dumps)
