"""CLI for runs: capture, ingest, export and compare (incl. --html, --junit and --batch) -> forensics.reports -> render -> exit code."""

from __future__ import annotations


from forensics.cli import UsageError, options, show
from forensics.cli.args import add_slice_flags, add_tolerance_flags, cli_type, positive_float, positive_int


_input_spec = cli_type("name_is_file")  # the library's grammar: forensics.core.options


def cmd_capture(args, out) -> int:
    from forensics import reports
    from forensics.render.progress import progress_for

    with progress_for(out, args, "capture", min_total=0, unit="steps") as progress:
        report = reports.capture(progress=progress, **options(args))
    return show(report, args, out)


def cmd_ingest(args, out) -> int:
    from forensics import reports

    return show(reports.ingest(args.run, args.buffers, **options(args, "run", "buffers")), args, out)


def cmd_compare(args, out) -> int:
    from forensics import reports

    if not args.batch and len(args.runs) != 2:  # the command line's usage, worded as such
        raise UsageError("compare needs two runs: forensics compare RUN_A RUN_B (or --batch DIR -o summary.csv)")
    from forensics.render.progress import progress_for

    with progress_for(out, args, "pairs", min_total=0, unit="pairs") as progress:
        report = reports.compare(*args.runs, progress=progress if args.batch else None, **options(args, "runs"))
    return show(report, args, out)


def cmd_export(args, out) -> int:
    from forensics import reports

    return show(reports.export(args.run, **options(args, "run")), args, out)


_tolerance_arg = cli_type("tolerance_item")  # the library's grammar: forensics.core.options


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
    p.add_argument("--source", default=None, metavar="NAME",
                   help="the run's source name (default: the --runtime, litert)")
    p.add_argument("--runtime", default=None, metavar="NAME|all",
                   help="the reference to run in: litert (default delegates off, the default), litert-xnnpack "
                        "(its default delegates, XNNPACK), tflite-runtime (where installed; needs numpy < 2), or "
                        "all: one run per runtime this machine has, as RUN/<runtime> (docs/repeat.md)")
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
                    "instructions, image, input, raw, tensor, dequantized, detections; log[:NAME]=FILE is the "
                    "driver's log. Without :TENSOR the buffer is named after its stage. With --model, raw Edge TPU "
                    "output layers are also relayouted (into tensor, or beside the driver's own tensor as "
                    "relayouted). A buffer the run holds is replaced only with --replace.")
    p.add_argument("run", metavar="RUN")
    p.add_argument("buffers", nargs="+", metavar="STAGE[:TENSOR]=FILE", help="the dumps; with --from, the one file")
    p.add_argument("--source", default=None, metavar="NAME",
                   help="who produced the dumps (e.g. ours, libedgetpu); with --from polygraphy default: the runner")
    p.add_argument("--from", dest="from_format", choices=("npz", "polygraphy"), default=None,
                   help="the one FILE is an .npz archive or a Polygraphy RunResults JSON: bring in every array "
                        "(names STAGE:TENSOR; other names become tensor buffers)")
    p.add_argument("--model", metavar="MODEL", help="the model the dumps belong to (sha256, layouts, relayout)")
    p.add_argument("--replace", action="store_true",
                   help="replace a buffer or log the run already holds (refused without: evidence is kept)")
    add_slice_flags(p)
    p.set_defaults(handler=cmd_ingest)

    p = subparsers.add_parser(
        "compare", parents=parents, help="compare two runs stage by stage; or a folder of run pairs (--batch)",
        description="The stage table in the story's order (params, input, raw, tensor, dequantized, detections), "
                    "the first divergent stage with what to do, per-tensor diffs and detections matched by IoU. "
                    "Exit 0 every common stage matches, 1 otherwise, 2 error (or no stage in common).")
    p.add_argument("runs", nargs="*", metavar="RUN", help="RUN_A RUN_B")
    p.add_argument("--html", metavar="OUT.html",
                   help="also write the report as a self-contained HTML page (--batch: the one-page summary)")
    p.add_argument("--previous", metavar="RUN", help="an earlier run, to recognise stale buffers")
    p.add_argument("--model", metavar="MODEL", help="anchors for per-anchor heatmaps in --html (default: run A's model)")
    p.add_argument("--deps", metavar="DIR", help="anchors.bin + postprocess.json instead of --model")
    p.add_argument("--limit", type=positive_int, default=8, metavar="N", help="differing records listed per buffer")
    p.add_argument("--batch", metavar="DIR", help="compare every pair folder under DIR (two runs each)")
    p.add_argument("-o", "--output", metavar="SUMMARY.csv", help="--batch: the summary table (CSV + Parquet)")
    p.add_argument("--stall-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="--batch: end the batch (exit 2, finished rows kept in -o) when no pair finishes for this "
                        "long: the scheduler or all its workers are gone (default 120)")
    p.add_argument("--verify-files", action="store_true",
                   help="--batch: read every buffer and take its CRC32 again (default: trust the CRCs the manifests "
                        "recorded at capture and ingest, where the file sizes agree)")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="--batch: worker processes (default: one per core)")
    p.add_argument("--scheduler", default="local", metavar="local|dask|tcp://HOST:PORT",
                   help="--batch: where the pairs run: local (a process pool, default), dask (a Dask LocalCluster "
                        "on this machine) or the address of a running Dask scheduler")
    p.add_argument("--tolerance", type=_tolerance_arg, action="append", default=None, metavar="K|TENSOR=SPEC",
                   help="K: every integer buffer may differ by K LSB (= --atol Klsb); TENSOR=SPEC (repeatable): "
                        "this tensor's tolerance, e.g. convert_scores=1lsb or Squeeze1=atol=0.01,check=p99")
    p.add_argument("--tolerance-from", nargs="+", default=None, metavar="RUN",
                   help="reference runs of the same model and input (capture --runtime all), or their folder: "
                        "each tensor's tolerance is their measured spread (forensics tolerance); put it after "
                        "RUN_A RUN_B")
    p.add_argument("--labels", metavar="FILE", help="class names for the detections (one per line)")
    p.add_argument("--junit", metavar="OUT.xml",
                   help="also write a JUnit XML report: one test case per (stage, tensor); per pair with --batch")
    p.add_argument("--impact", action="store_true",
                   help="also say which differing anchors change the detections after NMS (forensics impact; with "
                        "--model/--deps or run A's model)")
    add_tolerance_flags(p)
    p.set_defaults(handler=cmd_compare)

    p = subparsers.add_parser(
        "export", parents=parents, help="write a run's buffers as .npz or Polygraphy RunResults JSON",
        description="One typed array per buffer, named STAGE:TENSOR (dtype and shape from the manifest): an .npz "
                    "archive, or Polygraphy's RunResults JSON (polygraphy run --load-outputs FILE). Exit 0 ok, 2 error.")
    p.add_argument("run", metavar="RUN")
    p.add_argument("--format", required=True, choices=("npz", "polygraphy"))
    p.add_argument("-o", "--output", required=True, metavar="FILE")
    p.add_argument("--allow-changed", action="store_true",
                   help="export buffers whose bytes no longer match the manifest (refused without; each is named)")
    p.set_defaults(handler=cmd_export)
