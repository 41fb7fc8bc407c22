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


def check_decode_options(*, model, deps, image, image_size, overlay, overlay_boxes, overlay_scores, names,
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


@dataclass(frozen=True)
class DecodeCase:
    """What `decode BOXES SCORES` found, whole: the result (forensics.decode.report.DecodeResult), its judgement
    (only --replay judges), the anchors' geometry, and for an overlay from two dumps the other decode's rows and
    where they came from (the report draws the picture: render is above decode)."""

    result: object
    judgement: Judgement | None
    geometry: object                  # forensics.decode.geometry.AnchorGeometry
    overlaying: bool = False
    other: list | None = None         # the --overlay-boxes/--overlay-scores decode's detection rows
    other_source: str | None = None


def decode(boxes, scores, *, model=None, deps=None, labels=None, layout: str = "auto",
           dequantize: str = "reference", image=None, image_size=None, input_size=None, draw=None, overlay=None,
           overlay_boxes=None, overlay_scores=None, names=None, replay: bool = False, where: Slice = Slice(),
           no_order_check: bool = False) -> DecodeCase:
    """`forensics decode BOXES SCORES (--model M | --deps DIR)` whole: the decode's options checked (and `draw`
    writable), the deps from `model` (its CPU tail and relayouts too) or `deps`, the pair's order checked unless
    `no_order_check`, the TFLite_Detection_PostProcess kernel's result (`replay`: beside LiteRT's, judged) and,
    with `overlay_boxes` / `overlay_scores`, the other decode."""
    from forensics.decode.geometry import infer_geometry
    from forensics.decode.report import decode_dumps

    overlaying = check_decode_options(model=model, deps=deps, image=image, image_size=image_size, overlay=overlay,
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
    options = where.dump_options()
    if not no_order_check:
        _check_order(decode_deps, ((boxes, scores), (overlay_boxes, overlay_scores)), options)
    result = decode_dumps(decode_deps, boxes, scores, layout=layout, rounding=dequantize, image=image,
                          image_wh=image_size, input_wh=input_size, labels_path=labels, replay=replay,
                          relayouts=relayouts, tail_model=tail, dump_options=options)
    geometry = infer_geometry(decode_deps.anchors, source=decode_deps.source)
    other = source = None
    if overlaying and overlay is None:
        other = decode_dumps(decode_deps, overlay_boxes, overlay_scores, layout=layout, rounding=dequantize,
                             input_wh=input_size, labels_path=labels, relayouts=relayouts,
                             dump_options=options).rows()
        source = f"{overlay_boxes} + {overlay_scores}"
    # Only --replay judges: the official kernel's detections beside ours (MATCH / MISMATCH).
    from forensics.decode.replay import judge_replay

    judged = None if result.replay is None else judge_replay(result.replay)
    return DecodeCase(result, judged, geometry, overlaying, other, source)


def classes(a, b, *, model, top_k: int, labels=None, where: Slice = Slice()) -> tuple:
    """`forensics decode A B --model CLASSIFIER --top-k K` whole: (both sides' top-k and rank changes,
    forensics.model.classes, its judgement)."""
    from forensics.model.classes import classify_dumps

    if model is None:
        raise InputError("{top_k} needs {model:MODEL} (the classifier: its output's size and quantization)",
                         params=True)
    result = classify_dumps(a, b, model=model, k=top_k, labels_path=labels, dump_options=where.dump_options())
    return result, Judgement(result.verdict, result.message)


def anchors_gen(*, input_size=None, feature_maps=None, min_scale: float = 0.2, max_scale: float = 0.95,
                aspect_ratios=(1.0, 2.0, 0.5, 3.0, 0.3333), interpolated_scale_aspect_ratio: float = 1.0,
                reduce_lowest: bool = True, output=None, check_model=None, check_deps=None, show: int = 5,
                anchor: int | None = None) -> tuple:
    """`forensics anchors-gen` whole: (the TF OD API multiple-grid anchors, forensics.decode.ssd_anchors, and
    the judgement of a checked model's or deps' anchors against them, None without a check)."""
    from forensics.decode.ssd_anchors import anchors_gen as generate
    from forensics.decode.ssd_anchors import judge_check

    result = generate(input_size=input_size, feature_maps=feature_maps, min_scale=min_scale, max_scale=max_scale,
                      aspect_ratios=aspect_ratios, interpolated_scale_aspect_ratio=interpolated_scale_aspect_ratio,
                      reduce_boxes_in_lowest_layer=reduce_lowest, output=output, check_model=check_model,
                      check_deps=check_deps, show=show, anchor=anchor)
    return result, None if result.check is None else judge_check(result.check, result.check_source)
