"""CLI for `forensics diagnose A B`: name the classic bring-up bugs behind a differing pair (-> forensics.reports)."""

from __future__ import annotations

from forensics.cli import options, show
from forensics.cli.args import add_layout_flags, add_slice_flags, hex_pattern, non_negative_int, positive_int


def cmd_diagnose(args, out) -> int:
    from forensics import reports

    from forensics.render.progress import progress_for

    with progress_for(out, args, "diagnose") as progress:
        report = reports.diagnose(args.a, args.b, progress=progress, **options(args, "a", "b"))
    return show(report, args, out)


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "diagnose", parents=parents, help="name the classic bring-up bug behind two differing dumps",
        description="Compare A (reference) with B (under test) and name the usual bugs with their evidence: "
                    "shift, fill (never written), stride (raw vs tensor layout), relayout, signedness, lane_swap "
                    "(endianness), truncation, stale (with --previous), head_window. Exit 0 when no pattern "
                    "fires (identical, or legitimately different), 1 with findings, 2 on bad input.")
    p.add_argument("a", metavar="A", help="reference dump (e.g. libedgetpu's)")
    p.add_argument("b", metavar="B", help="dump under test (e.g. your driver's)")
    p.add_argument("--previous", metavar="FILE", default=None,
                   help="the same buffer from an earlier run: is B stale (not rewritten this run)?")
    p.add_argument("--model", metavar="MODEL", default=None, help="the .tflite the dumps come from (with --tensor)")
    p.add_argument("--tensor", metavar="NAME", default=None,
                   help="output tensor the dumps hold: raw (chip layout) or tensor sizes are recognised")
    add_layout_flags(p, count=False)
    p.add_argument("--sentinel", type=hex_pattern, action="append", metavar="HEX",
                   help="another prefill pattern to look for (besides cc, aa, 00, ff, cd, deadbeef, baadf00d)")
    p.add_argument("--min-run", type=positive_int, default=16, metavar="BYTES",
                   help="shortest sentinel run that counts as never written (default 16)")
    p.add_argument("--window", type=positive_int, default=256, metavar="BYTES",
                   help="the head window a quick look covers (default 256)")
    p.add_argument("--max-shift", type=non_negative_int, default=64 << 10, metavar="BYTES",
                   help="search for shifts up to this many bytes either way (default 65536)")
    add_slice_flags(p, offset=False)
    p.set_defaults(handler=cmd_diagnose)
