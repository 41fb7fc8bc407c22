"""CLI for the buffer commands: crc, diff, anchors, coverage, hexdump (arguments -> library -> render)."""

from __future__ import annotations

import argparse

from forensics.cli.args import add_layout_flags, hex_pattern, non_negative_int, positive_int

EXIT_SAME, EXIT_DIFFERENT = 0, 1


def _layout(args, dump):
    """The record layout for one dump: its sidecar, overridden by flags."""
    from forensics.layout import layout_from

    return layout_from(dump.meta, record_size=args.record, offset=args.offset, count=getattr(args, "count", None),
                       fields=args.fields, pad_lanes=args.pad, scale=args.scale, zero_point=args.zero_point)


def _limit(args):
    return None if args.all else (None if args.limit == 0 else args.limit)


# --- crc -----------------------------------------------------------------------------------------------

def cmd_crc(args, out) -> int:
    from forensics.crc import crc_files
    from forensics.render.buffers import render_crc

    report = crc_files(args.files, chunk_size=args.chunk)
    if args.json:
        out.json(report.to_dict())
    else:
        out.print(*render_crc(report))
    return EXIT_DIFFERENT if report.match is False else EXIT_SAME


# --- diff ----------------------------------------------------------------------------------------------

def cmd_diff(args, out) -> int:
    from forensics.diff import diff_dumps
    from forensics.dump import open_dump
    from forensics.render.buffers import render_diff

    dump_a, dump_b = open_dump(args.a), open_dump(args.b)
    layout = _layout(args, dump_a if dump_a.meta is not None else dump_b)
    result = diff_dumps(dump_a, dump_b, layout, tolerance=args.tolerance, limit=_limit(args))
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_diff(result))
    return EXIT_SAME if result.identical else EXIT_DIFFERENT


# --- anchors -------------------------------------------------------------------------------------------

def cmd_anchors(args, out) -> int:
    from forensics.anchors import analyse_anchors
    from forensics.dump import open_dump
    from forensics.render.buffers import render_anchors

    dump = open_dump(args.file)
    result = analyse_anchors(dump, _layout(args, dump), nonuniform=args.nonuniform, top=args.top,
                             window=args.window, limit=_limit(args))
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_anchors(result))
    return EXIT_SAME


# --- coverage ------------------------------------------------------------------------------------------

def cmd_coverage(args, out) -> int:
    from forensics.coverage import analyse_coverage
    from forensics.dump import open_dump
    from forensics.render.buffers import render_coverage

    dump = open_dump(args.file)
    result = analyse_coverage(dump, args.sentinel, min_run=args.min_run, offset=args.offset or 0,
                              length=args.length)
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_coverage(result))
    return EXIT_SAME if result.fully_written else EXIT_DIFFERENT


# --- hexdump -------------------------------------------------------------------------------------------

def cmd_hexdump(args, out) -> int:
    from forensics.dump import open_dump
    from forensics.hexdump import hexdump
    from forensics.layout import layout_from
    from forensics.render.buffers import render_hexdump

    dump_a = open_dump(args.file)
    dump_b = open_dump(args.file2) if args.file2 else None
    if args.anchor is not None and args.byte_offset is not None:
        from forensics.errors import InputError

        raise InputError("give either --anchor or --at, not both")
    layout = layout_from(dump_a.meta, record_size=args.record, offset=args.offset, fields=args.fields,
                         pad_lanes=args.pad, scale=args.scale, zero_point=args.zero_point)
    result = hexdump(dump_a, dump_b, layout, anchor=args.anchor, context=args.context,
                     offset=args.byte_offset, length=args.length)
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_hexdump(result))
    return EXIT_SAME


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "crc", parents=parents, help="size, CRC32 and head/mid/tail bytes of dumps; MATCH / DIFFER",
        description="Are the inputs even the same? CRC32 (zlib/IEEE), size and HEAD/MID/TAIL bytes of each file; "
                    "with two or more files, each is compared with the first. Exit 1 when they differ.")
    p.add_argument("files", nargs="+", metavar="FILE")
    p.add_argument("--chunk", type=positive_int, default=None, metavar="N",
                   help="also CRC32 every N-byte chunk and name the first differing one (e.g. one image row)")
    p.set_defaults(handler=cmd_crc)

    p = subparsers.add_parser(
        "diff", parents=parents, help="record-by-record comparison of two dumps",
        description="Byte-identical? If not: which records (anchors), which lanes, what values. "
                    "Exit 0 identical (as configured), 1 different, 2 error.")
    p.add_argument("a", metavar="A")
    p.add_argument("b", metavar="B")
    add_layout_flags(p)
    p.add_argument("--tolerance", type=non_negative_int, default=0, metavar="K",
                   help="treat differences of at most K LSB as equal (runtimes round differently)")
    p.add_argument("--limit", type=non_negative_int, default=20, metavar="N",
                   help="list at most N differing records (default 20; 0 = all)")
    p.add_argument("--all", action="store_true", help="list every differing record")
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
    p.add_argument("--at", dest="byte_offset", type=non_negative_int, default=None, metavar="BYTES",
                   help="start at this byte offset (default: the layout offset)")
    p.add_argument("--length", type=positive_int, default=None, metavar="BYTES", help="bytes to show (default 256)")
    p.set_defaults(handler=cmd_hexdump)
