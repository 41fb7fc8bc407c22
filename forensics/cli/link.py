"""CLI for `forensics link`: the driver's link checklist, a linked bitstream, and the audit of a dumped one."""

from __future__ import annotations

from forensics.cli import options, show
from forensics.cli.args import non_negative_int


def cmd_link(args, out) -> int:
    from forensics import reports

    return show(reports.link(args.model, **options(args, "model")), args, out)


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "link", parents=parents, help="link an instruction bitstream as libedgetpu does, or audit a driver's",
        description="--plan: the driver's checklist (executables and the order libedgetpu runs them, buffers to "
                    "map, every patch-table field). --executable E: write bitstream K of executable E linked "
                    "exactly as libedgetpu links it (addresses decimal or 0x-hex, up to 64 bits, one per batch). "
                    "--parameters: write the parameter bytes the caching executable expects. --check DUMP: which "
                    "executable and bitstream a driver's dump is, the addresses it holds (every field read as the chip "
                    "reads it and as 4 whole bytes at offset_bit / 8), and its link bugs (byte_aligned, "
                    "illegal_address, inconsistent, unlinked, aliased, halves_swapped, unexpected, corrupted, "
                    "truncated); a parameter buffer is MATCH or DIFFER. A layer is named by its name, the short "
                    "form forensics prints, a unique part of it or its index. Exit 0 LINKED / MATCH, 1 otherwise, "
                    "2 bad input.",
        epilog="Verdicts: LINKED, MISLINKED, FOREIGN (none of this model's bitstreams); MATCH / DIFFER for a "
               "parameter buffer.")
    p.add_argument("model", metavar="MODEL", help="the Edge TPU .tflite")
    mode = p.add_mutually_exclusive_group()
    mode.add_argument("--plan", action="store_true", help="the driver's checklist")
    mode.add_argument("--check", metavar="DUMP", help="audit a dumped bitstream or parameter buffer")
    mode.add_argument("--parameters", action="store_true", help="write the caching executable's parameter bytes")
    p.add_argument("--executable", type=non_negative_int, metavar="E", help="executable index (as graph lists)")
    p.add_argument("--bitstream", type=non_negative_int, metavar="K", help="bitstream of the executable (default 0)")
    p.add_argument("--input", action="append", metavar="NAME=ADDR[,ADDR...]", help="an input layer's address(es)")
    p.add_argument("--output", action="append", metavar="NAME=ADDR[,ADDR...]",
                   help="an output layer's address(es)")
    p.add_argument("--parameter", metavar="ADDR", help="the parameter buffer's address (linked only when given)")
    p.add_argument("--scratch", metavar="ADDR", help="the scratch buffer's address (linked only when given)")
    p.add_argument("--allow-unlinked", action="store_true", help="leave fields of layers not given as compiled")
    p.add_argument("--expect", action="append", metavar="KIND:NAME=ADDR",
                   help="with --check: an address the driver meant (KIND input/output/parameter/scratch), once per "
                        "buffer")
    p.add_argument("-o", "--out", metavar="OUT", help="the file to write")
    p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    p.set_defaults(handler=cmd_link)
