"""CLI for the buffer commands: crc, diff, anchors, coverage, hexdump (arguments -> library -> render)."""

from __future__ import annotations


from forensics.cli.args import add_layout_flags, add_tolerance_flags, hex_pattern, non_negative_int, positive_int

EXIT_SAME, EXIT_DIFFERENT = 0, 1


def _context(args, dump):
    """Layout (model tensor or sidecar, overridden by flags) and anchor geometry (--model / --deps)."""
    from forensics.modeldumps import dump_context

    return dump_context(dump, model=args.model, tensor=args.tensor, labels=args.labels,
                        deps=getattr(args, "deps", None), record_size=args.record, offset=args.offset,
                        count=getattr(args, "count", None), fields=args.fields, pad_lanes=args.pad,
                        scale=args.scale, zero_point=args.zero_point)


def _check_picture_flags(args, context) -> None:
    from forensics.errors import InputError

    if (args.heatmap or args.grid) and context.geometry is None:
        raise InputError("--heatmap and --grid need the anchors' geometry: give --model MODEL or --deps DIR")
    if args.heatmap:
        from forensics.outputs import check_writable

        check_writable(args.heatmap)


def _emit(args, out, context, result, rows_key: str, render, heat, title: str) -> None:
    """JSON (rows annotated with geometry, the model context, the picture drawn) or tables, then pictures."""
    from forensics.modeldumps import annotate_rows

    if args.json:
        doc = result.to_dict()
        if rows_key in doc:
            doc[rows_key] = annotate_rows(doc[rows_key], context.geometry)
        doc.update(context.to_dict())
        if heat is not None:
            _pictures(args, out, context, heat, title, doc)
        out.json(doc)
    else:
        out.print(*render())
        if heat is not None:
            _pictures(args, out, context, heat, title, None)


def _pictures(args, out, context, heat, title: str, doc: dict | None):
    """Write --heatmap, print --grid; in JSON mode record what was drawn under `heatmap`."""
    if args.heatmap:
        from forensics.render.pictures import heatmap_for

        picture = heatmap_for(context.geometry, heat, title=title)
        picture.save(args.heatmap)
        if doc is not None:
            doc["heatmap"] = {"path": args.heatmap, **picture.to_dict(), **heat.to_dict()}
    if args.grid and doc is None:
        from forensics.render.grid import grid_for

        out.print(grid_for(context.geometry, heat, title=title))


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

    from forensics.modeldumps import records_by_anchor, remap_indices

    dump_a, dump_b = open_dump(args.a), open_dump(args.b)
    context = _context(args, dump_a if dump_a.meta is not None or dump_b.meta is None else dump_b)
    if context.view is not None:
        from forensics.modeldumps import tensor_view

        other = tensor_view(dump_b, args.model, args.tensor)
        if other.mode != context.view.mode:
            from forensics.errors import InputError

            raise InputError(f"A is the {context.view.mode} layout ({dump_a.size:,} bytes) and B the "
                             f"{other.mode} layout ({dump_b.size:,} bytes) of {args.tensor!r}: relayout one "
                             f"first (forensics relayout ... --layer {args.tensor})")
    _check_picture_flags(args, context)
    from forensics.tolerance import make_policy

    policy = make_policy(tolerance=args.tolerance, atol=args.atol, rtol=args.rtol, check=args.check).default
    if args.plot:
        from forensics.outputs import check_writable

        check_writable(args.plot)
    locate = None
    if context.record_order is not None:  # raw chip layout: name the worst element by its anchor
        from forensics.modeldumps import anchor_locator

        locate = anchor_locator(context)
    result = diff_dumps(dump_a, dump_b, context.layout, tolerance=args.tolerance or 0, limit=_limit(args),
                        policy=policy, locate=locate)
    result = remap_indices(result, context, "records")
    heat = None
    if args.heatmap or args.grid:
        from forensics.geometry import diff_heat

        heat = diff_heat(records_by_anchor(dump_a, context), records_by_anchor(dump_b, context), context.layout,
                         lane=args.lane, tolerance=args.tolerance or 0)
    from forensics.render.errorplot import unicode_ok

    _emit(args, out, context, result, "records",
          lambda: render_diff(result, geometry=context.geometry, unicode=unicode_ok(out.stdout)),
          heat, "differences A vs B")
    if args.plot:
        _error_plot(args, out, dump_a, dump_b, context, result)
    return EXIT_SAME if result.passed else EXIT_DIFFERENT


def _error_plot(args, out, dump_a, dump_b, context, result) -> None:
    from forensics.render.errorplot import error_plot_for_dumps

    geometry = context.geometry if context.record_order is None else None  # the map needs anchor order
    error_plot_for_dumps(dump_a, dump_b, context.layout, result.stats, geometry=geometry,
                         title=f"{args.a} vs {args.b}").save(args.plot)
    if not args.json:
        out.print(f"wrote {args.plot}")


# --- anchors -------------------------------------------------------------------------------------------

def cmd_anchors(args, out) -> int:
    from forensics.anchors import analyse_anchors
    from forensics.dump import open_dump
    from forensics.render.buffers import render_anchors

    from forensics.modeldumps import records_by_anchor, remap_indices

    dump = open_dump(args.file)
    context = _context(args, dump)
    _check_picture_flags(args, context)
    result = analyse_anchors(dump, context.layout, nonuniform=args.nonuniform, top=args.top,
                             window=args.window, limit=_limit(args))
    result = remap_indices(result, context, "nonuniform")
    heat = None
    if args.heatmap or args.grid:
        from forensics.geometry import anchors_heat

        heat = anchors_heat(records_by_anchor(dump, context), context.layout, lane=args.lane,
                            dominant=result.dominant.record)
    _emit(args, out, context, result, "nonuniform", lambda: render_anchors(result, geometry=context.geometry),
          heat, "scores per cell")
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
    from forensics.render.buffers import render_hexdump

    dump_a = open_dump(args.file)
    dump_b = open_dump(args.file2) if args.file2 else None
    if args.anchor is not None and args.byte_offset is not None:
        from forensics.errors import InputError

        raise InputError("give either --anchor or --at, not both")
    context = _context(args, dump_a)
    anchor = args.anchor
    if anchor is not None and context.record_order is not None:  # the anchor's record in the chip's order
        anchor = int(context.record_order[anchor]) if anchor < len(context.record_order) else anchor
    result = hexdump(dump_a, dump_b, context.layout, anchor=anchor, context=args.context,
                     offset=args.byte_offset, length=args.length)
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_hexdump(result))
    return EXIT_SAME


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
    _add_model_flags(p)
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
    _add_model_flags(p, geometry=False, pictures=False)
    p.set_defaults(handler=cmd_hexdump)
