"""compare as library calls: two runs compared stage by stage (with the impact on the detections when asked), and
a farm of run pairs compared and summarised; forensics.reports wraps each result in a report and writes its pages."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core import exitcodes
from forensics.core.errors import InputError
from forensics.core.options import ModelContext


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


def repeat(runs, *, reference=None, scheduler: str = "local", workers: int | None = None,
           verify_files: bool = False, stall_timeout: float | None = None, progress=None, writes=()) -> tuple:
    """`forensics repeat RUN... [--reference RUN]` whole: (the forensics.runs.repeat result, its judgement): per
    buffer the modal content, per stage the divergence rate, each outlier's first divergent stage. `writes` (the
    pages the caller writes after: --html, --junit) are checked writable before the runs are read."""
    from forensics.runs.repeat import judge_repeat, repeat_runs

    if not runs:
        raise InputError("repeat needs the runs of one input: RUN... (or a folder of them)")
    for path in writes:
        from forensics.io.outputs import check_writable

        check_writable(path)
    result = repeat_runs(list(runs), reference=reference, scheduler=scheduler, workers=workers,
                         verify_files=verify_files, stall_timeout=stall_timeout, progress=progress)
    return result, judge_repeat(result)


def tolerance(runs) -> tuple:
    """`forensics tolerance RUN RUN [RUN...]` whole: (the spread between reference runs, forensics.runs.noise,
    its judgement)."""
    from forensics.runs.noise import judge_spread, measure_spread

    if not runs:
        raise InputError("tolerance needs reference runs of one model and input: RUN RUN [RUN...] (or a folder)")
    result = measure_spread(list(runs))
    return result, judge_spread(result)


def capture(model, output, *, source: str | None = None, image=None, input=None,  # noqa: A002
            resampling: str = "lanczos", tail_only: bool = False, delegate=None, replace: bool = False,
            images=None, progress=None, runtime=None):
    """`forensics capture --model M -o RUN` whole: the model run in LiteRT (or `runtime`, one of
    forensics.model.runtime.REFERENCES) and every stage recorded as a run (forensics.runs.capture); with `images`
    (a folder or a list file) one run per image under `output`, resumed (forensics.runs.capture_many,
    progress(images_done, images)); `runtime="all"` one run per reference runtime this machine has, as
    OUTPUT/<runtime> (forensics.runs.runtimes)."""
    if runtime == "all":
        from forensics.runs.runtimes import capture_runtimes

        if images is not None:
            raise InputError("{runtime} all writes one run per runtime of one input; with {images} capture once "
                             "per runtime ({runtime} NAME {source:NAME})", params=True)
        if source:
            raise InputError("{runtime} all names each run after its runtime: give no {source}", params=True)
        return capture_runtimes(model, output, replace=replace, image=image, inputs=input, resampling=resampling,
                                tail_only=tail_only, delegate=delegate)
    source = source or runtime or "litert"
    if images is not None:
        from forensics.runs.capture_many import capture_many

        if replace:
            raise InputError("{images} resumes: runs already captured are kept (remove a run to capture it again)",
                             params=True)
        return capture_many(model, images, output, source=source, resampling=resampling, tail_only=tail_only,
                            delegate=delegate, runtime=runtime,
                            progress=(lambda done, total, _name: progress(done, total)) if progress else None)
    from forensics.runs.capture import capture as capture_run

    return capture_run(model, output, source=source, image=image, inputs=input, resampling=resampling,
                       tail_only=tail_only, delegate=delegate, replace=replace, progress=progress, runtime=runtime)


def ingest(run, buffers, *, source: str | None = None, model=None, from_format: str | None = None,
           where=None, replace: bool = False):
    """`forensics ingest RUN STAGE[:TENSOR]=FILE... --source NAME` whole: a driver's dumps (each read with the
    forensics.core.options.Slice `where`) brought into the run (forensics.runs.ingest); with `from_format` (npz
    / polygraphy) `buffers` is one file whose arrays are brought in (forensics.runs.interop)."""
    from forensics.core.options import Slice

    if isinstance(buffers, (str, os.PathLike)):
        buffers = [buffers]
    if from_format is not None:
        from forensics.runs.interop import ingest_arrays

        if len(buffers) != 1 or model:
            raise InputError("{from_format} FILE brings in one file's arrays; give no STAGE=FILE or {model} with it",
                             params=True)
        return ingest_arrays(run, from_format, buffers[0], source=source, replace=replace)
    if not source:
        raise InputError("ingest needs {source:NAME} (who produced the dumps)", params=True)
    from forensics.runs.ingest import ingest as ingest_run

    return ingest_run(run, source, list(buffers), model=model, dump_options=(where or Slice()).dump_options(),
                      replace=replace)


def compare_policy(tolerance=None, *, atol=None, rtol=None, check=None, tolerance_from=None):
    """compare's forensics.core.tolerance policy: `tolerance` the items read (K and/or (TENSOR, SPEC) pairs: a
    list), with atol / rtol / check; `tolerance_from` reference runs whose measured spread is each tensor's
    tolerance (forensics.runs.noise; a tensor given its own keeps it)."""
    from forensics.core.tolerance import make_policy

    if tolerance_from:
        from forensics.runs.noise import with_measured

        tolerance = with_measured(tolerance, tolerance_from)
    items = tolerance or ()
    ks = [item for item in items if isinstance(item, int)]
    per_tensor = [item for item in items if isinstance(item, tuple)]
    if len(ks) > 1:
        raise InputError("{tolerance} K is given more than once", params=True)
    return make_policy(tolerance=ks[0] if ks else None, atol=atol, rtol=rtol, check=check, per_tensor=per_tensor)


def check_batch(runs=(), *, previous=None, output=None, model=None, deps=None, impact: bool = False) -> None:
    """What `compare --batch DIR` cannot take with it: one pair's options, and no summary to write."""
    if impact:
        raise InputError("{impact} is for one pair (RUN_A RUN_B)", params=True)
    if runs:
        raise InputError("give RUN_A RUN_B or {batch:DIR}, not both", params=True)
    if previous:
        raise InputError("{batch} takes {output:SUMMARY.csv}, {workers}, {scheduler}, {html}, {model}/{deps}; "
                         "{previous} is for one pair", params=True)
    if not output:
        raise InputError("{batch} needs {output:SUMMARY.csv} (a Parquet file is written beside it)", params=True)
    ModelContext(model=model or None, deps=deps or None)  # its rule: either a model or an extract directory


def check_pair(runs, *, output=None, model=None, deps=None, scheduler: str = "local",
               stall_timeout: float | None = None) -> None:
    """What `compare RUN_A RUN_B` cannot take: the batch's options, other than two runs."""
    if scheduler != "local" or stall_timeout is not None:
        which = "{scheduler}" if scheduler != "local" else "{stall_timeout}"
        raise InputError(which + " is for {batch:DIR}; one pair is compared here", params=True)
    if len(runs) != 2:
        raise InputError("compare needs two runs: RUN_A RUN_B (or {batch:DIR} {output:summary.csv})", params=True)
    if output:
        raise InputError("{output} is the {batch} summary; for one pair use {html:OUT.html} or {json}", params=True)
    ModelContext(model=model or None, deps=deps or None)  # its rule: either a model or an extract directory
