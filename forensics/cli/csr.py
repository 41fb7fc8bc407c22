"""CLI for `forensics csr`: compare two register traces or snapshots, or look a register up."""

from __future__ import annotations

from forensics.cli import UsageError, options, show
from forensics.cli.args import cli_type, non_negative_int

mask_spec = cli_type("register_mask")  # the library's grammar: forensics.core.options


def cmd_csr(args, out) -> int:
    from forensics import reports
    from forensics.csr.parse import gc_paused

    # Cyclic GC stays paused until the report (10^5 acyclic tuples) is freed: resumed earlier, its first
    # pass would walk them all (~25 ms for two 100,000-access traces) just to find nothing to collect.
    if args.name is None and args.find is None and (args.a is None or args.b is None):
        raise UsageError("expected two traces A B, or --name OFFSET, or --find TEXT (see forensics csr --help)")
    with gc_paused():
        report = reports.csr(args.a, args.b, **options(args, "a", "b"))
        if args.json and report.command == "csr" and hasattr(report.result, "mismatch_dicts") and \
                not (hasattr(out.stdout, "isatty") and out.stdout.isatty()):
            # the document as to_dict() has it, its mismatches streamed: 400,000 row dicts and one 100 MB string
            # would double the memory two long traces take
            from forensics.render.csr import write_json

            for line in report.warnings:
                out.warn(line)
            write_json(out.stdout, report._sources(report.result.to_dict(mismatches=False)),
                       report.result.mismatch_dicts())
            code = report.exit_code
        else:
            code = show(report, args, out)
        del report
    return code


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "csr", parents=parents, help="compare two Beagle register traces (libedgetpu vs a driver); name offsets",
        description="Parse two register traces (libedgetpu VLOG(5) lines, [CSR@..] / [INIT][..] driver lines, "
                    "or `W 0x48788 0x7f` lines; detected line by line, other log lines ignored), name every "
                    "BAR2 offset after libedgetpu's beagle_csr_offsets.h, line the two sequences up by op and "
                    "offset, and report value / width mismatches and accesses only in A or only in B. "
                    "Snapshots (offset=value lines, CSV, JSON) are compared by offset. "
                    "Exit 0 all match, 1 differences, 2 bad input.")
    p.add_argument("a", nargs="?", metavar="A", help="reference trace (e.g. libedgetpu's log)")
    p.add_argument("b", nargs="?", metavar="B", help="trace to check (e.g. your driver's log)")
    p.add_argument("--reads", action="store_true",
                   help="compare reads too (runs of reads of one offset count as one POLL); default: writes only")
    p.add_argument("--mask", action="append", type=mask_spec, metavar="OFFSET=MASK",
                   help="ignore these bits of this register (offset or name; no =MASK ignores the whole value), "
                        "e.g. instruction_queue_base or 0x485a8=0xffff; repeatable")
    p.add_argument("--snapshot", action="store_true",
                   help="compare by offset (final value per register) instead of in order")
    p.add_argument("--limit", type=non_negative_int, default=200, metavar="N",
                   help="table rows before only differing rows are shown (default 200; 0 = no limit)")
    p.add_argument("--all", action="store_true", help="show every row of the aligned table")
    p.add_argument("--line-pattern", default=None, metavar="REGEX",
                   help="read both traces with this regular expression (named groups op, offset, value) "
                        "instead of the built-in formats")
    p.add_argument("--name", metavar="OFFSET", help="name a BAR2 offset (or find a register's offset by name)")
    p.add_argument("--find", metavar="TEXT", help="list registers whose name or group contains TEXT")
    p.set_defaults(handler=cmd_csr)
