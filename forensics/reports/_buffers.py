"""crc, diff, anchors, coverage, hexdump: one buffer (or a pair) read as bytes and records."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.reports.base import Report, _limit, _slice, spellings


class CrcReport(Report):
    RESULT = "forensics.compare.crc:CrcReport"

    @classmethod
    def rows_key_of(cls, doc: dict) -> str | None:
        return "files"

    def renderables(self) -> list:
        from forensics.render.buffers import render_crc

        return render_crc(self.result, self.judgement)


@spellings()
def crc(*files, chunk: int | None = None, expect: int | None = None, offset: int | None = None,
        length: int | None = None, gap_fill: int | None = None, progress=None) -> CrcReport:
    """`forensics crc FILE... [--chunk N] [--expect CRC]`: size, CRC32 and head/mid/tail bytes; each file
    against the first, and against `expect` (a CRC32 a driver logged) when given."""
    from forensics.compare.crc import crc_files, judge_crc

    options, _ = _slice(offset, length, gap_fill)
    result = crc_files([os.fspath(f) for f in files], chunk_size=chunk, expect=expect, progress=progress,
                       **options)
    # One file and no expected CRC: nothing is compared (OK); else MATCH / DIFFER.
    return CrcReport("crc", result, rows_key="files", judgement=judge_crc(result))


def _dump_context(dump, *, model=None, tensor=None, labels=None, deps=None, **layout):
    """forensics.decode.modeldumps.dump_context from the report's ModelContext and Layout keywords (any spelling)."""
    from forensics.decode.modeldumps import dump_context
    from forensics.core.options import Layout, ModelContext

    known = ModelContext.parse(model=model, tensor=tensor, labels=labels, deps=deps)
    return dump_context(dump, **known.keywords(), **Layout.parse(**layout).context_keywords())


def _check_pictures(context, heatmap, grid) -> None:
    if (heatmap or grid) and context.geometry is None:
        raise InputError("{heatmap} and {grid} need the anchors' geometry: give {model:MODEL} or {deps:DIR}",
                         params=True)
    if heatmap:
        from forensics.io.outputs import check_writable

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
        return doc

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


def _fit_other(context, dump, flags: dict):
    """The TensorFit of a second dump (diff's other side) against the deps the first was fitted with."""
    if context.deps is None:
        return None
    from forensics.decode.modeldumps import fit_detection_tensor

    return fit_detection_tensor(dump, context.deps, flags)[0]


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
    from forensics.core.options import Layout, ModelContext, Slice, Tolerances

    where = Slice.parse(offset=offset, length=length, gap_fill=gap_fill)
    layout = Layout.parse(record=record, offset=offset, count=count, fields=fields, pad=pad, scale=scale,
                          zero_point=zero_point)
    tolerances = Tolerances.parse(tolerance=tolerance, atol=atol, rtol=rtol, check=check)
    known = ModelContext.parse(model=model, deps=deps, tensor=tensor, labels=labels)
    policy = tolerances.policy().default
    if no_stats and (plot or (policy.lsb_threshold() is None)):
        raise InputError("{no_stats} leaves out the error statistics that "
                         + ("{plot} draws" if plot else "a tolerance other than whole LSB is judged on"),
                         params=True)
    from forensics.compare.diff import diff_dumps, judge_diff
    from forensics.io.dump import open_dump
    from forensics.decode.modeldumps import locator_for, pair_context, records_by_anchor, remap_indices

    options, layout_offset = where.split()
    dump_a, dump_b = open_dump(a, **options), open_dump(b, **options)
    flags = {**layout.context_keywords(), "offset": layout_offset}
    element, context, context_dump = pair_context(dump_a, dump_b, **known.keywords(),
                                                  record_given=layout.record is not None, **flags)
    _check_pictures(context, heatmap, grid)
    if plot:
        from forensics.io.outputs import check_writable

        check_writable(plot)
    result = diff_dumps(dump_a, dump_b, context.layout, tolerance=tolerances.tolerance or 0,
                        limit=_limit(limit, all), policy=policy, locate=locator_for(context, dump_a, element, labels),
                        progress=progress, stats=not no_stats, dtype=element, sample=bool(plot))
    result = remap_indices(result, context, "records")
    heat = None
    title = "differences A vs B"
    if heatmap or grid:
        from forensics.buffer.heat import diff_heat

        heat = diff_heat(records_by_anchor(dump_a, context), records_by_anchor(dump_b, context), context.layout,
                         lane=lane, tolerance=tolerances.tolerance or 0)
    drawn = _draw_heatmap(context, heat, title, heatmap)
    plotted = _draw_error_plot(plot, dump_a, context, result, element, title=f"{a} vs {b}")
    fits = ()
    if context.deps is not None:  # --model / --deps know the tensors: how much of one each side holds
        other = dump_b if context_dump is dump_a else dump_a
        fit_other = _fit_other(context, other, {"record_size": layout.record, "fields": layout.fields,
                                                "pad_lanes": layout.pad})
        fits = (context.fit, fit_other) if context_dump is dump_a else (fit_other, context.fit)
    fits = fits if any(f is not None for f in fits) else ()
    # A side that holds only the tensor's head is named even when the bytes compared pass (the story's trap).
    judgement = judge_diff(result, fits=fits, classes=context.view is not None and context.view.class_vector)
    return RecordsReport("diff", result, rows_key="records", judgement=judgement, context=context, heat=heat,
                         heatmap=drawn, grid=grid, title=title, plot=plotted, dumps=(dump_a, dump_b), fits=fits)


def _draw_error_plot(plot, dump_a, context, result, element, *, title: str) -> dict | None:
    """Write diff's error picture (when a path is given) from what its statistics pass collected, and say what
    was drawn, for the `plot` JSON key."""
    if not plot:
        return None
    from forensics.render.errorplot import error_plot

    geometry = context.geometry if context.record_order is None else None  # the map needs anchor order
    picture = error_plot(result.stats, context.layout, geometry=geometry, dtype=element, shape=dump_a.npy_shape,
                         title=title)
    picture.save(plot)
    return {"path": os.fspath(plot), **picture.to_dict()}


@spellings()
def anchors(file, *, record=None, offset=None, count=None, fields=None, pad=None, scale=None, zero_point=None,
            nonuniform: bool = False, top: int = 10, window: int = 256, limit: int = 1000,
            all: bool = False, model=None, tensor=None, labels=None, deps=None, heatmap=None,  # noqa: A002
            grid: bool = False, lane: int | None = None, length: int | None = None, gap_fill: int | None = None,
            progress=None) -> RecordsReport:
    """`forensics anchors FILE`: the dominant record and (with nonuniform) the anchors that depart from it."""
    from forensics.buffer.anchors import analyse_anchors, judge_anchors
    from forensics.io.dump import open_dump
    from forensics.decode.modeldumps import records_by_anchor, remap_indices

    options, offset = _slice(offset, length, gap_fill, layout=True)
    dump = open_dump(file, **options)
    context = _dump_context(dump, model=model, tensor=tensor, labels=labels, deps=deps, record=record,
                            offset=offset, count=count, fields=fields, pad=pad, scale=scale, zero_point=zero_point)
    _check_pictures(context, heatmap, grid)
    result = analyse_anchors(dump, context.layout, nonuniform=nonuniform, top=top, window=window,
                             limit=_limit(limit, all), progress=progress)
    result = remap_indices(result, context, "nonuniform")
    role = context.fit.role if context.fit is not None else getattr(context.view, "role", None)
    if role == "boxes" and result.top_scores:  # box deltas have no class scores to rank
        import dataclasses

        result = dataclasses.replace(result, top_scores=())
    heat = None
    title = "scores per cell"
    if heatmap or grid:
        from forensics.buffer.heat import anchors_heat

        # Without a dominant record every anchor "departs": mark the highest-scoring ones instead.
        marked = None if result.dominated else tuple(t.index for t in result.top_scores)
        heat = anchors_heat(records_by_anchor(dump, context), context.layout, lane=lane,
                            dominant=result.dominant.record, marked=marked)
    drawn = _draw_heatmap(context, heat, title, heatmap)
    return RecordsReport("anchors", result, rows_key="nonuniform" if nonuniform else "top",
                         judgement=judge_anchors(result, fit=context.fit),  # HEAD WINDOW: only the head was read
                         context=context, heat=heat, heatmap=drawn, grid=grid, title=title, dumps=(dump,))


class CoverageReport(Report):
    RESULT = "forensics.buffer.coverage:CoverageResult"

    @classmethod
    def rows_key_of(cls, doc: dict) -> str | None:
        return "untouched_ranges"

    def renderables(self) -> list:
        from forensics.render.buffers import render_coverage

        return render_coverage(self.result, self.judgement)


@spellings()
def coverage(file, *, sentinel, min_run: int = 8, offset: int | None = None,
             length: int | None = None, gap_fill: int | None = None) -> CoverageReport:
    """`forensics coverage FILE --sentinel HEX`: exit code 0 fully written, 1 untouched ranges remain."""
    from forensics.buffer.coverage import analyse_coverage, judge_coverage
    from forensics.io.dump import open_dump

    dump = open_dump(file, **_slice(gap_fill=gap_fill)[0])  # offset/length: the region coverage looks at
    result = analyse_coverage(dump, sentinel, min_run=min_run, offset=offset or 0, length=length)
    return CoverageReport("coverage", result, rows_key="untouched_ranges", dumps=(dump,),
                          judgement=judge_coverage(result))


class HexdumpReport(Report):
    def renderables(self) -> list:
        from forensics.render.buffers import render_hexdump

        return render_hexdump(self.result)


@spellings()
def hexdump(file, file2=None, *, record=None, offset=None, fields=None, pad=None, scale=None, zero_point=None,
            anchor: int | None = None, context: int = 4, at: int | None = None, length: int | None = None,
            model=None, tensor=None, labels=None, deps=None, gap_fill: int | None = None) -> HexdumpReport:
    """`forensics hexdump FILE [FILE2]`: hex + ASCII by record around an anchor, or over at/length bytes; with
    `model` or `deps`, the records' lane names and dequantized values where they know them."""
    from forensics.io.dump import open_dump
    from forensics.buffer.hexdump import hexdump as hexdump_of

    options = _slice(gap_fill=gap_fill)[0]  # at/length: the bytes hexdump shows
    dump_a = open_dump(file, **options)
    dump_b = open_dump(file2, **options) if file2 else None
    if anchor is not None and at is not None:
        raise InputError("give either {anchor} or {at}, not both", params=True)
    dump_context = _dump_context(dump_a, model=model, tensor=tensor, labels=labels, deps=deps, record=record,
                                 offset=offset, fields=fields, pad=pad, scale=scale, zero_point=zero_point)
    order = dump_context.record_order
    if anchor is not None and order is not None:  # the anchor's record in the chip's order
        anchor = int(order[anchor]) if anchor < len(order) else anchor
    result = hexdump_of(dump_a, dump_b, dump_context.layout, anchor=anchor, context=context, offset=at,
                        length=length)
    return HexdumpReport("hexdump", result, rows_key="rows", dumps=(dump_a, dump_b))
