"""CLI for runs: capture, ingest and compare (incl. --html and --batch) -> one library call -> render -> exit code."""

from __future__ import annotations

import argparse

from forensics.cli.args import positive_int

EXIT_SAME, EXIT_DIFFERENT = 0, 1


def _input_spec(text: str) -> tuple[str, str]:
    name, sep, path = text.partition("=")
    if not sep or not name or not path:
        raise argparse.ArgumentTypeError(f"expected NAME=FILE, got {text!r}")
    return name, path


# --- capture -------------------------------------------------------------------------------------------

def cmd_capture(args, out) -> int:
    from forensics.render.runs import render_capture
    from forensics.runs.capture import capture

    if args.images:
        return _capture_many(args, out)

    result = capture(args.model, args.output, source=args.source, image=args.image, inputs=args.input,
                     resampling=args.resampling, tail_only=args.tail_only, delegate=args.delegate,
                     replace=args.replace)
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_capture(result))
    return EXIT_SAME


def _capture_many(args, out) -> int:
    from forensics.errors import InputError
    from forensics.render.runs import progress_bar, render_capture_many
    from forensics.runs.capture_many import capture_many

    if args.replace:
        raise InputError("--images resumes: runs already captured are kept (remove a run to capture it again)")
    with progress_bar(out.stderr, "capture") as progress:
        result = capture_many(args.model, args.images, args.output, source=args.source, resampling=args.resampling,
                              tail_only=args.tail_only, delegate=args.delegate, progress=progress)
    for image, error in result.failed:
        out.warn(error if image in error else f"{image}: {error}")
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_capture_many(result))
    return result.exit_code


# --- ingest --------------------------------------------------------------------------------------------

def cmd_ingest(args, out) -> int:
    from forensics.render.runs import render_ingest
    from forensics.runs.ingest import ingest

    result = ingest(args.run, args.source, args.buffers, model=args.model)
    for label in result.replaced:
        out.warn(f"{args.run}: replaced the run's {label} buffer")
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_ingest(result))
    return EXIT_SAME


# --- compare -------------------------------------------------------------------------------------------

def _geometry(args, run_a):
    import os

    from forensics.errors import InputError
    from forensics.geometry import geometry_for

    if args.model or args.deps:
        return geometry_for(model=args.model, deps=args.deps)
    path = (run_a.model or {}).get("path")
    if path and os.path.isfile(path):
        try:
            return geometry_for(model=path)
        except InputError:  # a model without PostProcess: no anchors, no pictures
            return None
    return None


def cmd_compare(args, out) -> int:
    from forensics.errors import InputError

    if args.batch:
        if args.runs:
            raise InputError("give RUN_A RUN_B or --batch DIR, not both")
        return _batch(args, out)
    if args.scheduler != "local":
        raise InputError("--scheduler is for --batch DIR; one pair is compared here")
    if len(args.runs) != 2:
        raise InputError("compare needs two runs: forensics compare RUN_A RUN_B (or --batch DIR -o summary.csv)")
    if args.output:
        raise InputError("-o/--output is the --batch summary; for one pair use --html OUT.html or --json")
    if args.model and args.deps:
        raise InputError("give --model or --deps, not both")
    from forensics.render.runs import html_report, pictures_for, render_compare
    from forensics.runs.compare import compare_runs
    from forensics.runs.run import load_run

    run_a, run_b = load_run(args.runs[0]), load_run(args.runs[1])
    previous = load_run(args.previous) if args.previous else None
    geometry = _geometry(args, run_a)
    result = compare_runs(run_a, run_b, previous=previous, geometry=geometry, limit=args.limit)
    for line in result.warnings:
        out.warn(line)
    if args.html:
        from forensics.outputs import write_text_atomic

        write_text_atomic(args.html, html_report(result, pictures=pictures_for(result)))
    if args.json:
        doc = result.to_dict()
        if args.html:
            doc["html"] = args.html
        out.json(doc)
    else:
        out.print(*render_compare(result))
        if args.html:
            out.print(f"wrote {args.html}")
    return EXIT_SAME if result.match else EXIT_DIFFERENT


def _batch(args, out) -> int:
    from forensics.errors import InputError
    from forensics.render.runs import render_batch
    from forensics.runs.batch import batch_compare, write_summary

    if args.previous:
        raise InputError("--batch takes -o SUMMARY.csv, --workers, --scheduler, --html, --model/--deps; "
                         "--previous is for one pair")
    if not args.output:
        raise InputError("--batch needs -o SUMMARY.csv (a Parquet file is written beside it)")
    if args.model and args.deps:
        raise InputError("give --model or --deps, not both")
    if args.html:
        from forensics.outputs import check_writable

        check_writable(args.html)
    geometry = None
    if args.model or args.deps:
        from forensics.geometry import geometry_for

        geometry = geometry_for(model=args.model, deps=args.deps)
    result = batch_compare(args.batch, workers=args.workers, scheduler=args.scheduler, geometry=geometry)
    result = write_summary(result, args.output)
    if args.html:
        _batch_html(args, result, geometry)
    if args.json:
        doc = result.to_dict()
        if args.html:
            doc["html"] = args.html
        out.json(doc)
    else:
        out.print(*render_batch(result))
        if args.html:
            out.print(f"wrote {args.html}")
    return result.exit_code


def _batch_html(args, result, geometry, limit: int = 100) -> None:
    """The one-page summary, and beside it (OUT_pairs/) the reports of the first `limit` pairs that differ."""
    import os

    from forensics.errors import ForensicsError
    from forensics.outputs import write_text_atomic
    from forensics.render.runs import batch_pictures, html_batch, html_report
    from forensics.runs.compare import compare_runs, find_runs
    from forensics.runs.engine import is_url

    reports = {}
    if not is_url(os.fspath(args.batch)):
        folder = os.path.splitext(args.html)[0] + "_pairs"
        for row in [r for r in result.rows if r["verdict"] == "DIFFER"][:limit]:
            runs = find_runs(os.path.join(args.batch, row["pair"]))
            try:
                pair = compare_runs(runs[0], runs[1], geometry=geometry)
            except ForensicsError:
                continue
            os.makedirs(folder, exist_ok=True)
            name = f"{row['pair']}.html"
            write_text_atomic(os.path.join(folder, name), html_report(pair))
            reports[row["pair"]] = f"{os.path.basename(folder)}/{name}"
    write_text_atomic(args.html, html_batch(result, reports=reports,
                                            pictures=batch_pictures(result.aggregates, geometry)))


RESAMPLING = ("lanczos", "bilinear", "bicubic", "nearest", "box", "hamming")  # forensics.runs.capture.RESAMPLING


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "capture", parents=parents, help="run a model in LiteRT and record every stage as a run directory",
        description="Run MODEL once (LiteRT, default delegates off; Edge TPU models through libedgetpu when it "
                    "loads) and write a run: input bytes, the accelerator's / decode's tensors, dequantized "
                    "tensors and the detections, each with size and CRC32. Exit 0 ok, 2 error.")
    p.add_argument("--model", required=True, metavar="MODEL", help="the .tflite to run")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--image", metavar="IMG", help="an image, prepared as pycoral's set_resized_input does")
    src.add_argument("--images", metavar="DIR|LIST",
                     help="one run per image of a folder or a list file, written as RUN/<image>/<source> "
                          "(resumable; with --tail-only: one folder of accelerator outputs per image)")
    src.add_argument("--input", type=_input_spec, action="append", metavar="NAME=FILE",
                     help="raw bytes (or .npy) for the input NAME; repeat for each input (with --tail-only: the "
                          "accelerator's outputs, raw chip layout or tensor)")
    p.add_argument("-o", "--output", required=True, metavar="RUN",
                   help="the run directory to create (with --images: the folder of runs)")
    p.add_argument("--source", default="litert", metavar="NAME", help="the run's source name (default litert)")
    p.add_argument("--resampling", choices=RESAMPLING, default="lanczos",
                   help="how --image is resized (default lanczos, as pycoral's examples)")
    p.add_argument("--tail-only", action="store_true",
                   help="Edge TPU models: run only the CPU tail on the accelerator outputs given with --input")
    p.add_argument("--delegate", metavar="NAME|LIB", default=None,
                   help="xnnpack (LiteRT's default delegates) or a delegate library to load")
    p.add_argument("--replace", action="store_true", help="replace RUN when it exists")
    p.set_defaults(handler=cmd_capture)

    p = subparsers.add_parser(
        "ingest", parents=parents, help="bring a driver's dumps into a run (STAGE[:TENSOR]=FILE)",
        description="Copy dumps into the run RUN (created when missing), each with size and CRC32. Stages: params, "
                    "input, raw, tensor, dequantized, detections. Without :TENSOR the buffer is named after its "
                    "stage. With --model, raw Edge TPU output layers are also relayouted into the tensor stage.")
    p.add_argument("run", metavar="RUN")
    p.add_argument("buffers", nargs="+", metavar="STAGE[:TENSOR]=FILE")
    p.add_argument("--source", required=True, metavar="NAME", help="who produced the dumps (e.g. ours, libedgetpu)")
    p.add_argument("--model", metavar="MODEL", help="the model the dumps belong to (sha256, layouts, relayout)")
    p.set_defaults(handler=cmd_ingest)

    p = subparsers.add_parser(
        "compare", parents=parents, help="compare two runs stage by stage; or a folder of run pairs (--batch)",
        description="The stage table in the story's order (params, input, raw, tensor, dequantized, detections), "
                    "the first divergent stage with what to do, per-tensor diffs and detections matched by IoU. "
                    "Exit 0 every common stage matches, 1 otherwise, 2 error (or no stage in common).")
    p.add_argument("runs", nargs="*", metavar="RUN", help="RUN_A RUN_B")
    p.add_argument("--html", metavar="OUT.html", help="also write the report as a self-contained HTML page")
    p.add_argument("--previous", metavar="RUN", help="an earlier run, to recognise stale buffers")
    p.add_argument("--model", metavar="MODEL", help="anchors for per-anchor heatmaps in --html (default: run A's model)")
    p.add_argument("--deps", metavar="DIR", help="anchors.bin + postprocess.json instead of --model")
    p.add_argument("--limit", type=positive_int, default=8, metavar="N", help="differing records listed per buffer")
    p.add_argument("--batch", metavar="DIR", help="compare every pair folder under DIR (two runs each)")
    p.add_argument("-o", "--output", metavar="SUMMARY.csv", help="--batch: the summary table (CSV + Parquet)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="--batch: worker processes (default: one per core)")
    p.add_argument("--scheduler", default="local", metavar="local|dask|tcp://HOST:PORT",
                   help="--batch: where the pairs run: local (a process pool, default), dask (a Dask LocalCluster "
                        "on this machine) or the address of a running Dask scheduler")
    p.set_defaults(handler=cmd_compare)
