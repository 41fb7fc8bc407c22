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
                    "shift, fill (never written), stride (raw vs tensor layout, channels padded), relayout, "
                    "signedness, lane_swap (endianness), truncation, oversize, pitch, page (a DMA page list out of "
                    "order: pages swapped, repeated or dropped), rotation (a ring buffer read from another start), "
                    "cacheline (stale or filled 64-byte lines), not_computed (B one record repeated: the zero point or a "
                    "bias alone, the chip computed nothing), bits "
                    "(stuck or flipped bits), saturation, requantize, stale (with --previous), head_window. "
                    "Verdicts: "
                    "IDENTICAL and WITHIN TOLERANCE exit 0; EXPLAINED, PARTLY EXPLAINED and UNEXPLAINED exit 1 "
                    "(a differing pair never exits 0 without a tolerance; differences only in pad lanes are "
                    "ignored, as diff ignores them, and said); 2 on bad input.")
    p.add_argument("a", metavar="A", help="reference dump (e.g. libedgetpu's)")
    p.add_argument("b", metavar="B", help="dump under test (e.g. your driver's)")
    p.add_argument("--previous", metavar="FILE", default=None,
                   help="the same buffer from an earlier run: is B stale (not rewritten this run)?")
    p.add_argument("--inputs", nargs=2, metavar=("INPUT_A", "INPUT_B"), default=None,
                   help="the inputs A and B were computed from: their CRCs are compared when B is unexplained "
                        "(another input, or another model?)")
    p.add_argument("--model", metavar="MODEL", default=None,
                   help="the .tflite the dumps come from: its tensor's layout and quantization (the zero point "
                        "not_computed looks for); a detection model's output tensors are recognised by size")
    p.add_argument("--tensor", metavar="NAME", default=None,
                   help="tensor the dumps hold (input or output): raw (chip layout) or tensor sizes are recognised")
    p.add_argument("--deps", metavar="DIR", default=None,
                   help="an extract directory (postprocess.json): the detection tensor a dump holds, its layout "
                        "and zero point")
    p.add_argument("--tolerance", type=non_negative_int, default=None, metavar="K",
                   help="same-size pairs whose elements differ by at most K LSB in their dtype (int8: 0 -> -1 is "
                        "1 LSB; from the .npy header, sidecar or model) are WITHIN TOLERANCE (exit 0), as compare")
    p.add_argument("--atol", default=None, metavar="KLSB", help="the same as --tolerance K, written Klsb (1lsb)")
    add_layout_flags(p, count=False)
    p.add_argument("--sentinel", type=hex_pattern, action="append", metavar="HEX",
                   help="another prefill pattern to look for (besides cc, aa, 00, ff, cd, deadbeef, baadf00d)")
    p.add_argument("--min-run", type=positive_int, default=16, metavar="BYTES",
                   help="shortest sentinel run that counts as never written (default 16)")
    p.add_argument("--window", type=positive_int, default=256, metavar="BYTES",
                   help="the head window a quick look covers (default 256)")
    p.add_argument("--max-shift", type=non_negative_int, default=None, metavar="BYTES",
                   help="search for shifts up to this many bytes either way (default: the whole buffer up to "
                        "1 MiB, else 65536)")
    add_slice_flags(p, offset=False)
    p.set_defaults(handler=cmd_diagnose)

    p = subparsers.add_parser(
        "simulate", parents=parents, help="what a reference dump becomes under a named driver bug",
        description="Apply a bug generator (the same ones diagnose scores) to A and write B, e.g. to decode and "
                    "draw a bug's downstream effect or to test a checker. --bug list shows the kinds.")
    p.add_argument("a", metavar="A", nargs="?", help="reference dump")
    p.add_argument("--bug", required=True, metavar="KIND[:PARAMS]", help="e.g. shift:4, stride:91:92:91, list")
    p.add_argument("-o", "--output", metavar="B", default=None, help="where to write the buggy dump")
    p.add_argument("--previous", metavar="FILE", default=None, help="the earlier run's buffer (for stale)")
    p.add_argument("--model", metavar="MODEL", default=None,  # link: issue 23
                   help="the Edge TPU model whose linked bitstream A is (for the link bugs)")
    p.set_defaults(handler=cmd_simulate)


def cmd_simulate(args, out) -> int:
    from forensics import reports

    return show(reports.simulate(args.a, **options(args, "a")), args, out)
