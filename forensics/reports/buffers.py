"""crc, diff, anchors, coverage, hexdump: one buffer (or a pair) read as bytes and records."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.errors import InputError
from forensics.reports.base import Report, _limit, _slice
from forensics.verdict import Verdict


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
    # One file and no expected CRC: nothing is compared (OK); else MATCH / DIFFER.
    return CrcReport("crc", result, rows_key="files",
                     verdict=Verdict.OK if result.match is None else Verdict.of(result.match))


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
    from forensics.modeldumps import (
        array_locator,
        class_locator,
        element_type,
        records_by_anchor,
        remap_indices,
        tensor_view,
    )

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
    return RecordsReport("diff", result, rows_key="records", verdict=result.verdict, context=context, heat=heat, heatmap=drawn, grid=grid, title=title,
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
    return RecordsReport("anchors", result, rows_key="nonuniform" if nonuniform else "top",
                         verdict=anchors_verdict(result),
                         context=context, heat=heat, heatmap=drawn, grid=grid, title=title, dumps=(dump,))


def anchors_verdict(result) -> Verdict:
    """OK when every record is the dominant one (or a single record); WARNING (still exit 0) when records depart
    from it, the mode is tied, or the head window looks uniform while later records are not."""
    if result.tied or result.head_window_trap:
        return Verdict.WARNING
    return Verdict.OK if result.records <= 1 or result.uniform else Verdict.WARNING


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
    return CoverageReport("coverage", result, rows_key="untouched_ranges", dumps=(dump,),
                          verdict=Verdict.OK if result.fully_written else Verdict.UNTOUCHED)


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
