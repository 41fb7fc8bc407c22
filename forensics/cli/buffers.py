"""CLI for the buffer commands: crc, diff, anchors, coverage, hexdump (arguments -> forensics.reports -> render)."""

from __future__ import annotations


from forensics.cli import options, show
from forensics.cli.args import (add_layout_flags, add_slice_flags, add_tolerance_flags, crc_value, hex_pattern,
                                 non_negative_int, positive_int)


def cmd_crc(args, out) -> int:
    from forensics import reports

    from forensics.render.progress import progress_for

    with progress_for(out, args, "crc32") as progress:
        report = reports.crc(*args.files, progress=progress, **options(args, "files"))
    return show(report, args, out)


def cmd_diff(args, out) -> int:
    from forensics import reports

    from forensics.render.progress import progress_for

    with progress_for(out, args, "diff") as progress:
        report = reports.diff(args.a, args.b, progress=progress, **options(args, "a", "b"))
    return show(report, args, out)


def cmd_anchors(args, out) -> int:
    from forensics import reports

    from forensics.render.progress import progress_for

    with progress_for(out, args, "anchors") as progress:
        report = reports.anchors(args.file, progress=progress, **options(args, "file"))
    return show(report, args, out)


def cmd_coverage(args, out) -> int:
    from forensics import reports

    return show(reports.coverage(args.file, **options(args, "file")), args, out)


def cmd_hexdump(args, out) -> int:
    from forensics import reports

    return show(reports.hexdump(args.file, args.file2, **options(args, "file", "file2")), args, out)


def _add_model_flags(parser, *, geometry: bool = True, pictures: bool = True) -> None:
    group = parser.add_argument_group("model knowledge (optional)")
    group.add_argument("--model", default=None, metavar="MODEL.tflite",
                       help="read the layout (with --tensor) and the anchor geometry from this model")
    group.add_argument("--tensor", default=None, metavar="NAME",
                       help="the model tensor this dump holds, raw (chip layout) or as the TFLite tensor")
    group.add_argument("--labels", default=None, metavar="FILE", help="class names, one per line (scores)")
    if geometry:
        group.add_argument("--deps", default=None, metavar="DIR",
                           help="anchor geometry from an extract directory (anchors.bin + postprocess.json)")
    if pictures:
        pics = parser.add_argument_group("pictures (need --model or --deps)")
        pics.add_argument("--heatmap", default=None, metavar="OUT.png", help="one panel per feature-map layer")
        pics.add_argument("--grid", action="store_true", help="the same map in block characters, in the terminal")
        pics.add_argument("--lane", type=non_negative_int, default=None, metavar="N",
                          help="picture this lane (class) instead of the maximum non-background lane")


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "crc", parents=parents, help="size, CRC32 and head/mid/tail bytes of dumps; MATCH / DIFFER",
        description="Are the inputs even the same? CRC32 (zlib/IEEE), size and HEAD/MID/TAIL bytes of each file; "
                    "with two or more files, each is compared with the first. Exit 1 when they differ.")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--chunk", type=positive_int, default=None, metavar="N",
                   help="also CRC32 every N-byte chunk and name the first differing one (e.g. one image row)")
    p.add_argument("--expect", type=crc_value, default=None, metavar="0xCRC32",
                   help="the CRC32 every file should have (e.g. one a driver logged); exit 1 when one differs")
    add_slice_flags(p)
    p.set_defaults(handler=cmd_crc)

    p = subparsers.add_parser(
        "diff", parents=parents, help="record-by-record comparison of two dumps",
        description="Byte-identical? If not: which records (anchors), which lanes, what values. "
                    "Exit 0 identical (as configured), 1 different, 2 error.")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    add_layout_flags(p)
    p.add_argument("--tolerance", type=non_negative_int, default=None, metavar="K",
                   help="treat differences of at most K LSB as equal (runtimes round differently; = --atol Klsb)")
    add_tolerance_flags(p)
    p.add_argument("--plot", default=None, metavar="OUT.png",
                   help="a 2x2 picture of the error: histogram, B vs A, error map, per-lane max (needs Pillow)")
    p.add_argument("--limit", type=non_negative_int, default=20, metavar="N",
                   help="list at most N differing records (default 20; 0 = all)")
    p.add_argument("--all", action="store_true", help="list every differing record")
    p.add_argument("--no-stats", action="store_true",
                   help="leave out the error statistics (faster on multi-GB dumps; tolerances in whole LSB only)")
    _add_model_flags(p)
    add_slice_flags(p, offset=False)
    p.set_defaults(handler=cmd_diff)

    p = subparsers.add_parser(
        "anchors", parents=parents, help="the dominant record and the anchors that depart from it",
        description="Find the dominant record exactly (the mode; ties: the first to occur) and, with --nonuniform, "
                    "every anchor that departs from it.")
    p.add_argument("file", metavar="FILE")
    add_layout_flags(p)
    p.add_argument("--nonuniform", action="store_true", help="list every anchor that departs from the dominant record")
    p.add_argument("--top", type=positive_int, default=10, metavar="K", help="distinct records to show (default 10)")
    p.add_argument("--window", type=positive_int, default=256, metavar="BYTES",
                   help="warn when the first BYTES are all dominant but later records are not (default 256)")
    p.add_argument("--limit", type=non_negative_int, default=1000, metavar="N",
                   help="list at most N departing anchors (default 1000; 0 = all)")
    p.add_argument("--all", action="store_true", help="list every departing anchor")
    _add_model_flags(p)
    add_slice_flags(p, offset=False)
    p.set_defaults(handler=cmd_anchors)

    p = subparsers.add_parser(
        "coverage", parents=parents, help="how much of a sentinel-prefilled buffer the device wrote",
        description="Runs of at least --min-run bytes still equal to the sentinel were never written. "
                    "Exit 0 when fully written, 1 when untouched ranges remain.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--sentinel", type=hex_pattern, required=True, metavar="HEX",
                   help="prefill byte or pattern, e.g. cc, aa, deadbeef (aligned to offset 0)")
    p.add_argument("--min-run", type=positive_int, default=8, metavar="BYTES",
                   help="shortest run that counts as untouched (default 8, as libedgetpu's check)")
    p.add_argument("--offset", type=non_negative_int, default=None, metavar="BYTES")
    p.add_argument("--length", type=positive_int, default=None, metavar="BYTES")
    add_slice_flags(p, offset=False, length=False)
    p.set_defaults(handler=cmd_coverage)

    p = subparsers.add_parser(
        "hexdump", parents=parents, help="hex + ASCII view by record, two files side by side",
        description="Hex + ASCII by record around --anchor I (± --context) or over --at/--length bytes; with "
                    "two files, side by side with differing bytes marked. Always exits 0.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("file2", metavar="FILE2", nargs="?")
    add_layout_flags(p, count=False)
    p.add_argument("--anchor", type=non_negative_int, default=None, metavar="I", help="centre on record I")
    p.add_argument("--context", type=non_negative_int, default=4, metavar="K", help="records before and after")
    p.add_argument("--at", type=non_negative_int, default=None, metavar="BYTES",
                   help="start at this byte offset (default: the layout offset)")
    p.add_argument("--length", type=positive_int, default=None, metavar="BYTES", help="bytes to show (default 256)")
    _add_model_flags(p, pictures=False)  # --deps: lane names and dequantized values, as anchors and diff
    add_slice_flags(p, offset=False, length=False)
    p.set_defaults(handler=cmd_hexdump)
