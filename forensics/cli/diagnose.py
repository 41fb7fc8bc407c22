"""CLI for `forensics diagnose A B`: name the classic bring-up bugs behind a differing pair (-> forensics.diagnose)."""

from __future__ import annotations

from forensics.cli.args import add_layout_flags, hex_pattern, non_negative_int, positive_int

EXIT_CLEAN, EXIT_FOUND = 0, 1


def _context(args, dump_a, dump_b):
    """The layout from --model/--tensor (fitted to A's size, else B's: one side may be raw, the other the
    tensor), else the sidecars; layout flags override either."""
    from forensics.errors import InputError
    from forensics.modeldumps import dump_context

    if args.model is not None and args.tensor is None:
        raise InputError("--model needs --tensor (the output tensor the dumps hold)")
    flags = dict(record_size=args.record, offset=args.offset, fields=args.fields, pad_lanes=args.pad,
                 scale=args.scale, zero_point=args.zero_point)
    if args.tensor is None:
        return dump_context(dump_a if dump_a.meta is not None else dump_b, **flags)
    try:
        return dump_context(dump_a, model=args.model, tensor=args.tensor, **flags)
    except InputError as first:
        try:
            return dump_context(dump_b, model=args.model, tensor=args.tensor, **flags)
        except InputError:
            raise first from None


def cmd_diagnose(args, out) -> int:
    from forensics.dump import open_dump
    from forensics.render.diagnose import render_diagnose
    from forensics.diagnose import diagnose_dumps

    dump_a, dump_b = open_dump(args.a), open_dump(args.b)
    previous = open_dump(args.previous) if args.previous else None
    context = _context(args, dump_a, dump_b)
    sentinels = [(f"0x{p.hex().upper()}", p) for p in (args.sentinel or ())]
    result = diagnose_dumps(dump_a, dump_b, layout=context.layout, previous=previous, model_view=context.view,
                            sentinels=sentinels, min_run=args.min_run, max_shift=args.max_shift,
                            window=args.window)
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_diagnose(result))
    return EXIT_FOUND if result.findings else EXIT_CLEAN


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
    p.set_defaults(handler=cmd_diagnose)
