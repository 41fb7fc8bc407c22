"""CLI for repeated runs and the reference's noise: repeat, tolerance -> forensics.reports -> render -> exit code."""

from __future__ import annotations

from forensics.cli import options, show
from forensics.cli.args import positive_float, positive_int


def cmd_repeat(args, out) -> int:
    from forensics import reports
    from forensics.render.progress import progress_for

    with progress_for(out, args, "runs", min_total=0, unit="runs") as progress:
        report = reports.repeat(*args.runs, progress=progress, **options(args, "runs"))
    return show(report, args, out)


def cmd_tolerance(args, out) -> int:
    from forensics import reports

    return show(reports.tolerance(*args.runs, **options(args, "runs")), args, out)


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "repeat", parents=parents, help="N runs of one input: modal content, outliers and what they depend on",
        description="The runs of one input, in the order they ran (RUN... or folders of runs, natural order): per "
                    "buffer the modal content (by CRC32) and how many runs hold it, per stage the divergence "
                    "rate, and for each outlier its first divergent stage against the modal run (or --reference), "
                    "diagnose's finding there and whether it depends on the run before it (stale from the "
                    "previous job), on being first (cold start), or comes at a period. Exit 0 every run agrees, "
                    "1 otherwise, 2 error.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="the runs (or folders of runs), in the order they ran")
    p.add_argument("--reference", metavar="RUN", help="judge every run against this run instead of the modal content")
    p.add_argument("--html", metavar="OUT.html", help="also write the result as a self-contained HTML page")
    p.add_argument("--junit", metavar="OUT.xml", help="also write a JUnit XML report: one test case per run")
    p.add_argument("--scheduler", default="local", metavar="local|dask|tcp://HOST:PORT",
                   help="where the runs' manifests are read, as compare --batch: local (default), dask (a Dask "
                        "LocalCluster on this machine) or the address of a running Dask scheduler")
    p.add_argument("--workers", type=positive_int, default=None, metavar="N",
                   help="worker processes (default: one; one per core with --verify-files)")
    p.add_argument("--verify-files", action="store_true",
                   help="read every buffer and take its CRC32 again (default: trust the manifests' CRCs where the "
                        "file sizes agree)")
    p.add_argument("--stall-timeout", type=positive_float, default=None, metavar="SECONDS",
                   help="end (exit 2) when no run is read for this long: the scheduler or its workers are gone "
                        "(default 120)")
    p.set_defaults(handler=cmd_repeat)

    p = subparsers.add_parser(
        "tolerance", parents=parents, help="the spread between reference runs, as compare's --tolerance flags",
        description="Per tensor the spread between runs of one model and input in different reference runtimes "
                    "(capture --runtime all): max abs (real units), max LSB, ulps, p99, where the worst element "
                    "is, the cosine; the --tolerance TENSOR=SPEC flags compare takes, with the reason for each; "
                    "where the metrics disagree. Exit 0 measured, 2 error.")
    p.add_argument("runs", nargs="+", metavar="RUN", help="two or more reference runs (or a folder of them)")
    p.set_defaults(handler=cmd_tolerance)
