"""compare as library calls: two runs compared stage by stage (with the impact on the detections when asked), and
a farm of run pairs compared and summarised; forensics.reports wraps each result in a report and writes its pages."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core import exitcodes
from forensics.core.errors import InputError


def run_geometry(model, deps, run_a):
    """The anchors' geometry from `model` / `deps`, else from run A's recorded model when that file is here (None:
    a model without PostProcess has no anchors to picture)."""
    from forensics.decode.geometry import geometry_for

    if model or deps:
        return geometry_for(model=model, deps=deps)
    path = (run_a.model or {}).get("path")
    if path and os.path.isfile(path):
        try:
            return geometry_for(model=path)
        except InputError:  # a model without PostProcess: no anchors, no pictures
            return None
    return None


@dataclass(frozen=True)
class ComparePair:
    """What `compare RUN_A RUN_B` found, whole: the stage-by-stage result (its judgement inside) and, with
    `impact`, which differing anchors change the detections (it does not change the verdict)."""

    result: object                 # forensics.runs.compare.CompareResult
    impact: object = None          # forensics.decode.impact.ImpactResult


def compare(run_a, run_b, *, previous=None, model=None, deps=None, limit: int = 8, policy=None, labels=None,
            impact: bool = False) -> ComparePair:
    """`forensics compare RUN_A RUN_B` whole: both runs (and `previous`) loaded, the anchors' geometry from
    `model` / `deps` or run A's model, every stage compared within `policy` (forensics.core.tolerance) and judged;
    `labels` (a class-name file) names the detections' classes."""
    from forensics.runs.compare import compare_runs
    from forensics.runs.run import load_run

    first, second = load_run(run_a), load_run(run_b)
    earlier = load_run(previous) if previous else None
    names = None
    if labels:
        from forensics.io.labels import read_labels

        names = read_labels(labels)
    result = compare_runs(first, second, previous=earlier, geometry=run_geometry(model, deps, first), limit=limit,
                          policy=policy, labels=names, model=model)
    impacted = None
    if impact:  # issue 34
        from forensics.runs.impact import compare_impact

        impacted = compare_impact(first, second, model=model, deps=deps, labels=labels)
    return ComparePair(result, impacted)


def batch(directory, output, *, workers: int | None = None, scheduler: str = "local", model=None, deps=None,
          policy=None, progress=None, verify_files: bool = False, stall_timeout: float | None = None,
          writes=()) -> tuple:
    """`forensics compare --batch DIR -o SUMMARY.csv` whole: every pair compared and aggregated, the summary
    written (CSV and Parquet); (the BatchResult, the anchors' geometry from `model` / `deps`). The summary and
    `writes` (the pages the caller writes after) are checked writable before the first pair: a batch of hours must
    not end in 'cannot write'. A stalled batch keeps its finished rows and is an InputError, as is a batch of which
    no pair could be compared."""
    from forensics.runs.batch import batch_compare, check_summary_output, write_summary
    from forensics.runs.engine import Stalled

    check_summary_output(output)
    for path in writes:
        from forensics.io.outputs import check_writable

        check_writable(path)
    geometry = None
    if model or deps:
        from forensics.decode.geometry import geometry_for

        geometry = geometry_for(model=model, deps=deps)
    try:
        result = batch_compare(directory, workers=workers, scheduler=scheduler, geometry=geometry, policy=policy,
                               progress=progress, verify_files=verify_files, stall_timeout=stall_timeout)
    except Stalled as exc:
        kept = write_summary(exc.partial, output) if exc.partial.rows else None
        where = f"the {exc.done:,} finished rows are in {kept.outputs[0]}" if kept else "no row was finished"
        raise InputError(f"{exc}; {where}", directory) from None
    result = write_summary(result, output)
    if result.exit_code == exitcodes.ERROR:  # every pair failed: say why on stderr, as for any input error
        first = result.rows[0].get("error") if result.rows else None
        raise InputError(f"no pair could be compared ({len(result.rows)} failed; first: {first}); the "
                         f"summary is in {output}", directory)
    return result, geometry


@dataclass(frozen=True)
class ImpactCase:
    """What `impact RUN_A RUN_B` found, whole: the result (forensics.decode.impact.ImpactResult, its judgement
    inside), the model context it was decoded in, the anchors' geometry (an SSD's deps) and the canvas size an
    image or --image-size gives (what --draw draws on: the report draws, as render is a layer above)."""

    result: object
    context: object                # forensics.runs.impact.ImpactContext
    geometry: object = None        # forensics.decode.geometry.AnchorGeometry
    image_wh: tuple | None = None


def impact(run_a, run_b, *, model=None, deps=None, dequantize: str = "reference", labels=None, image=None,
           image_size=None, input_size=None, top_k: int | None = None, max_decodes: int | None = None,
           draw=None) -> ImpactCase:
    """`forensics impact RUN_A RUN_B (--model M | --deps DIR)` whole: the model context (`dequantize` the
    rounding, `image` / `image_size` the original picture's size), both runs loaded, each differing detection's
    1-minimal set of anchors found within `max_decodes` decodes. `draw`, the picture the caller draws after, is
    checked writable (and not an input) before the work."""
    from forensics.decode.impact import MAX_DECODES
    from forensics.runs.impact import impact_context, impact_of_runs
    from forensics.runs.run import load_run

    if (model is None) == (deps is None):
        raise InputError("give exactly one of {model:MODEL} or {deps:DIR}", params=True)
    if image is not None and image_size is not None:
        raise InputError("give {image} or {image_size}, not both", params=True)
    if draw:
        from forensics.io.outputs import check_not_input, check_writable

        check_not_input(draw, image, model, deps, labels, run_a, run_b)
        check_writable(draw)
    image_wh = image_size
    if image is not None:
        from forensics.decode.report import image_size as size_of

        image_wh = size_of(image)
    context = impact_context(model=model, deps=deps, rounding=dequantize, input_size=input_size, labels=labels,
                             top_k=top_k, image_wh=image_wh)
    a, b = load_run(run_a), load_run(run_b)
    result = impact_of_runs(a, b, context, max_decodes=MAX_DECODES if max_decodes is None else max_decodes)
    geometry = None
    if context.deps is not None:
        from forensics.decode.geometry import infer_geometry

        geometry = infer_geometry(context.deps.anchors, source=context.deps.source)
    return ImpactCase(result, context, geometry, image_wh)
