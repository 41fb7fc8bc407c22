"""The record commands as library calls: diff, anchors and hexdump open their dumps, fit the model context and
judge, taking the option groups (forensics.core.options) typed; forensics.reports wraps each result in a report."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.core.judgement import Judgement
from forensics.core.options import Layout, ModelContext, Slice, Tolerances


@dataclass(frozen=True)
class RecordsCase:
    """What diff or anchors found, whole: the result, its one judgement, the model context the records were read
    with, the dumps read, and what the pictures are drawn from (forensics.render draws them)."""

    result: object                 # forensics.compare.diff.DiffResult / forensics.buffer.anchors.AnchorsResult
    judgement: Judgement
    context: object                # forensics.decode.modeldumps.DumpContext
    dumps: tuple                   # the forensics.io.dump.Dump read, A first
    heat: object = None            # forensics.buffer.heat.AnchorHeat, when a heatmap or grid was asked for
    fits: tuple = ()               # diff: (A's, B's) forensics.decode.modeldumps.TensorFit, when --model / --deps say
    element: object = None         # diff: the numpy dtype the data lanes were read as (the error picture's)


def check_pictures(context, *, heatmap=None, grid: bool = False, plot=None) -> None:
    """The pictures asked for can be drawn (the anchors' geometry is known) and written, before the work."""
    if (heatmap or grid) and context.geometry is None:
        raise InputError("{heatmap} and {grid} need the anchors' geometry: give {model:MODEL} or {deps:DIR}",
                         params=True)
    from forensics.io.outputs import check_writable

    for path in (heatmap, plot):
        if path:
            check_writable(path)


def _fit_other(context, dump, layout: Layout):
    """The TensorFit of a second dump (diff's other side) against the deps the first was fitted with."""
    from forensics.decode.modeldumps import fit_detection_tensor

    return fit_detection_tensor(dump, context.deps, {"record_size": layout.record, "fields": layout.fields,
                                                     "pad_lanes": layout.pad})[0]


def diff(a, b, *, layout: Layout = Layout(), where: Slice = Slice(), tolerances: Tolerances = Tolerances(),
         known: ModelContext = ModelContext(), limit: int | None = 20, stats: bool = True, lane: int | None = None,
         heatmap=None, grid: bool = False, plot=None, progress=None) -> RecordsCase:
    """`forensics diff A B` whole: both dumps opened (`where`), read in the layout the flags, sidecars and
    `known` model give, compared record by record within `tolerances`, and judged (MATCH / WITHIN TOLERANCE /
    DIFFER / HEAD WINDOW: forensics.compare.diff.judge_diff). `stats=False` leaves the error statistics out
    (judged on whole LSB then); `heatmap`/`grid` collect the per-anchor heat, `plot` the statistics' sample."""
    policy = tolerances.policy().default
    if not stats and (plot or (policy.lsb_threshold() is None)):
        raise InputError("{no_stats} leaves out the error statistics that "
                         + ("{plot} draws" if plot else "a tolerance other than whole LSB is judged on"),
                         params=True)
    from forensics.compare.diff import diff_dumps, judge_diff
    from forensics.decode.modeldumps import locator_for, pair_context, records_by_anchor, remap_indices
    from forensics.io.dump import open_dump

    options, layout_offset = where.split()
    dump_a, dump_b = open_dump(a, **options), open_dump(b, **options)
    element, context, context_dump = pair_context(dump_a, dump_b, known, record_given=layout.record is not None,
                                                  **{**layout.context_keywords(), "offset": layout_offset})
    check_pictures(context, heatmap=heatmap, grid=grid, plot=plot)
    lsb = tolerances.tolerance or 0
    result = diff_dumps(dump_a, dump_b, context.layout, tolerance=lsb, limit=limit, policy=policy,
                        locate=locator_for(context, dump_a, element, known.labels), progress=progress, stats=stats,
                        dtype=element, sample=bool(plot))
    result = remap_indices(result, context, "records")
    heat = None
    if heatmap or grid:
        from forensics.buffer.heat import diff_heat

        heat = diff_heat(records_by_anchor(dump_a, context), records_by_anchor(dump_b, context), context.layout,
                         lane=lane, tolerance=lsb)
    fits = ()
    if context.deps is not None:  # --model / --deps know the tensors: how much of one each side holds
        other = dump_b if context_dump is dump_a else dump_a
        fit_other = _fit_other(context, other, layout)
        fits = (context.fit, fit_other) if context_dump is dump_a else (fit_other, context.fit)
    fits = fits if any(f is not None for f in fits) else ()
    # A side that holds only the tensor's head is named even when the bytes compared pass (the story's trap).
    judgement = judge_diff(result, fits=fits, classes=context.view is not None and context.view.class_vector)
    return RecordsCase(result, judgement, context, (dump_a, dump_b), heat=heat, fits=fits, element=element)


def _one_context(file, layout: Layout, where: Slice, known: ModelContext):
    """One dump opened and its model context fitted (anchors, hexdump)."""
    from forensics.decode.modeldumps import dump_context
    from forensics.io.dump import open_dump

    options, offset = where.split()
    dump = open_dump(file, **options)
    return dump, dump_context(dump, known, **{**layout.context_keywords(), "offset": offset})


def anchors(file, *, layout: Layout = Layout(), where: Slice = Slice(), known: ModelContext = ModelContext(),
            nonuniform: bool = False, top: int = 10, window: int = 256, limit: int | None = 1000,
            lane: int | None = None, heatmap=None, grid: bool = False, progress=None) -> RecordsCase:
    """`forensics anchors FILE` whole: the dominant record, the anchors that depart from it (`nonuniform`) or the
    top scores, judged (HEAD WINDOW when only the head of the model's tensor was read)."""
    from forensics.buffer.anchors import analyse_anchors, judge_anchors
    from forensics.decode.modeldumps import records_by_anchor, remap_indices

    dump, context = _one_context(file, layout, where, known)
    check_pictures(context, heatmap=heatmap, grid=grid)
    result = analyse_anchors(dump, context.layout, nonuniform=nonuniform, top=top, window=window, limit=limit,
                             progress=progress)
    result = remap_indices(result, context, "nonuniform")
    role = context.fit.role if context.fit is not None else getattr(context.view, "role", None)
    if role == "boxes" and result.top_scores:  # box deltas have no class scores to rank
        result = dataclasses.replace(result, top_scores=())
    heat = None
    if heatmap or grid:
        from forensics.buffer.heat import anchors_heat

        # Without a dominant record every anchor "departs": mark the highest-scoring ones instead.
        marked = None if result.dominated else tuple(t.index for t in result.top_scores)
        heat = anchors_heat(records_by_anchor(dump, context), context.layout, lane=lane,
                            dominant=result.dominant.record, marked=marked)
    return RecordsCase(result, judge_anchors(result, fit=context.fit), context, (dump,), heat=heat)


def hexdump(file, file2=None, *, layout: Layout = Layout(), gap_fill: int | None = None,
            known: ModelContext = ModelContext(), anchor: int | None = None, context: int = 4,
            at: int | None = None, length: int | None = None):
    """`forensics hexdump FILE [FILE2]` whole: (the forensics.buffer.hexdump result, the dumps read). The records
    around `anchor` (in the chip's order when the model says it) or the `at`/`length` bytes."""
    from forensics.buffer.hexdump import hexdump as hexdump_of
    from forensics.decode.modeldumps import dump_context
    from forensics.io.dump import open_dump

    options = Slice(gap_fill=gap_fill).dump_options()  # at/length: the bytes hexdump shows
    dump_a = open_dump(file, **options)
    dump_b = open_dump(file2, **options) if file2 else None
    if anchor is not None and at is not None:
        raise InputError("give either {anchor} or {at}, not both", params=True)
    found = dump_context(dump_a, known, **layout.context_keywords())
    order = found.record_order
    if anchor is not None and order is not None:  # the anchor's record in the chip's order
        anchor = int(order[anchor]) if anchor < len(order) else anchor
    result = hexdump_of(dump_a, dump_b, found.layout, anchor=anchor, context=context, offset=at, length=length)
    return result, (dump_a, dump_b)
