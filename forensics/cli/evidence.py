"""CLI for driver-side evidence: import (text dump -> .bin), fingerprint, verify (a driver log vs files)
(arguments -> forensics.reports -> render)."""

from __future__ import annotations

from forensics.cli import options, show
from forensics.cli.args import LazyChoices, add_slice_flags, cli_type, gap_fill_byte, positive_int


def cmd_import(args, out) -> int:
    from forensics import reports

    return show(reports.import_(args.text, **options(args, "text")), args, out)


def cmd_fingerprint(args, out) -> int:
    from forensics import reports
    from forensics.render.progress import progress_for

    with progress_for(out, args, "xor-fold") as progress:
        report = reports.fingerprint(args.file, progress=progress, **options(args, "file"))
    if args.json:
        out.json(report.to_dict())
    else:  # plain lines, never wrapped: they are compared with a driver's log line by line
        out.lines(report.lines())
    return report.exit_code


_buffer_spec = cli_type("tag_is_file")  # the library's grammar: forensics.core.options


def cmd_verify(args, out) -> int:
    from forensics import reports

    return show(reports.verify(args.log, *args.files, **options(args, "log", "files")), args, out)


def _text_formats() -> tuple:
    from forensics.io.textdump import FORMATS

    return ("auto",) + FORMATS


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "import", parents=parents,
        help="convert a text hex dump (WinDbg, xxd, hexdump, od, Format-Hex, certutil) to a .bin",
        description="Decode a text hex dump (WinDbg d*/!d*, xxd, hexdump, od -t x*, PowerShell Format-Hex, "
                    "certutil -encodehex, a C array as xxd -i writes it, plain hex; DbgView prefixes and UTF-16 "
                    "logs allowed) to the bytes it shows. Every dump argument of "
                    "every command takes such text directly; import writes the bytes once.")
    p.add_argument("text", metavar="TEXT")
    p.add_argument("-o", "--output", required=True, metavar="OUT.bin")
    p.add_argument("--format", choices=LazyChoices(_text_formats), default="auto", metavar="FORMAT",
                   help="the dump's format, one of %(choices)s (default: auto, detected from the content)")
    p.add_argument("--gap-fill", type=gap_fill_byte, default=None, metavar="BYTE",
                   help="fill holes between addresses with this byte (e.g. 0xcc) instead of failing")
    p.set_defaults(handler=cmd_import)

    p = subparsers.add_parser(
        "fingerprint", parents=parents, help="what a driver can log for a buffer: size, CRC32, xor-fold, pages",
        description="Size, CRC32, xor-fold-64, HEAD/MID/TAIL and per-page first8/last8 of a buffer, in the "
                    "style a driver logs them, and the one-line [FP] form; compare with the driver's log "
                    "line by line, or check it with `forensics verify`.")
    p.add_argument("file", metavar="FILE")
    p.add_argument("--page", type=positive_int, default=4096, metavar="BYTES", help="page size (default 4096)")
    p.add_argument("--tag", default=None, metavar="T", help="buffer name in the lines (default: the file's stem)")
    add_slice_flags(p)
    p.set_defaults(handler=cmd_fingerprint)

    p = subparsers.add_parser(
        "verify", parents=parents, help="check the fingerprints in a driver log against files",
        description="Find fingerprints in a driver log ([FP] lines; [..-CHK] page first8/last8 and xor-fold "
                    "lines; size / CRC32 / HEAD / MID / TAIL lines; or --pattern) and check each value against "
                    "the files. Exit 0 all MATCH, 1 any DIFFER, 2 no fingerprints or bad input.")
    p.add_argument("log", metavar="LOG")
    p.add_argument("files", nargs="*", metavar="FILE",
                   help="the buffers; a file is matched to a log tag by its stem, or is the only file")
    p.add_argument("--buffer", type=_buffer_spec, action="append", metavar="TAG=FILE",
                   help="the file for buffer TAG (when the log holds several buffers)")
    p.add_argument("--pattern", default=None, metavar="REGEX",
                   help="a regular expression with named groups among offset, page, bytes, crc32, xor64, size "
                        "(and tag) for other log styles")
    p.add_argument("--page", type=positive_int, default=4096, metavar="BYTES", help="page size (default 4096)")
    add_slice_flags(p)
    p.set_defaults(handler=cmd_verify)
