"""Argument types shared by every command: each rejects a bad value with one readable line."""

from __future__ import annotations

import argparse



def __getattr__(name: str):
    if name == "MAX_NUMBER_CHARS":  # the grammar's bound, named in its errors
        from forensics.core.options import MAX_NUMBER_CHARS

        return MAX_NUMBER_CHARS
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _grammar(grammar: str, text: str):
    """The value `text` spells in the one grammar the library shares (forensics.core.options: the function named
    `grammar`, imported when a flag is read, so that `--help` and parsing the command line do not), else
    argparse's error."""
    from forensics.core import options

    try:
        return getattr(options, grammar)(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def cli_type(grammar: str):
    """An argparse type that reads a flag's text in forensics.core.options' `grammar` (a name: `"size"`), the
    spelling the library takes too."""
    def parse(text: str):
        return _grammar(grammar, text)

    parse.__name__ = grammar  # argparse names the type in its error: "invalid size value"
    return parse


def parse_int(text: str) -> int:
    """Decimal, 0x-hex, 0o/0b, and underscores: `4096`, `0x1000`, `8_136`."""
    return _grammar("integer", text)


def non_negative_int(text: str) -> int:
    return _grammar("non_negative", text)


def positive_int(text: str) -> int:
    return _grammar("positive", text)


def positive_float(text: str) -> float:
    """A scale: `0.10822763`, `1/256` (fractions are how users write uint8 scales)."""
    return _grammar("scale", text)


def record_size(text: str) -> int:
    return _grammar("record_size", text)


def zero_point(text: str) -> int:
    """A uint8 (0..255) or int8 (-128..127) zero point; the dtype, when known, narrows it further."""
    return _grammar("zero_point", text)


def lane_list(text: str) -> tuple[int, ...]:
    """`2,3` -> (2, 3)."""
    return _grammar("lanes", text)


def name_list(text: str) -> tuple[str, ...]:
    return _grammar("names", text)


def hex_pattern(text: str) -> bytes:
    """A sentinel: `cc`, `0xCC`, `deadbeef`, `de ad be ef`."""
    return _grammar("hex_bytes", text)


def add_layout_flags(parser: argparse.ArgumentParser, *, count: bool = True) -> None:
    """--record/--offset/--count/--fields/--pad/--scale/--zero-point, as every record command takes them."""
    group = parser.add_argument_group("record layout (flags override the dump's sidecar JSON)")
    group.add_argument("--record", type=record_size, default=None, metavar="N",
                       help="bytes per record / anchor (default 4, the chip's lane width)")
    group.add_argument("--offset", type=non_negative_int, default=None, metavar="BYTES",
                       help="start at this byte offset")
    if count:
        group.add_argument("--count", type=positive_int, default=None, metavar="RECORDS",
                           help="look at this many records only")
    group.add_argument("--fields", type=name_list, default=None, metavar="NAMES",
                       help="lane names, e.g. bg,face,pad,pad")
    group.add_argument("--pad", type=lane_list, default=None, metavar="LANES",
                       help="lanes that are padding, e.g. 2,3")
    group.add_argument("--scale", type=positive_float, default=None, metavar="S",
                       help="uint8 quantization scale (e.g. 0.00390625 or 1/256)")
    group.add_argument("--zero-point", type=zero_point, default=None, metavar="Z", help="uint8 quantization zero point")



def gap_fill_byte(text: str) -> int:
    return _grammar("byte_value", text)


def add_slice_flags(parser: argparse.ArgumentParser, *, offset: bool = True, length: bool = True) -> None:
    """--offset/--length (a slice of every dump the command reads, e.g. the tensor in a page-rounded DMA
    allocation) and --gap-fill (for text dumps with holes). Commands whose layout flags already define
    --offset pass offset=False: there `--offset` cuts the slice only together with --length (forensics.reports)."""
    group = parser.add_argument_group("which bytes of each dump (text dumps and DMA allocations)")
    if offset:
        group.add_argument("--offset", type=non_negative_int, default=None, metavar="BYTES",
                           help="read each dump from this byte offset (a slice)")
    if length:
        group.add_argument("--length", type=positive_int, default=None, metavar="BYTES",
                           help="read this many bytes of each dump from --offset (e.g. the tensor's size_bytes "
                                "in a page-rounded allocation); model size checks apply to the slice")
    group.add_argument("--gap-fill", type=gap_fill_byte, default=None, metavar="BYTE",
                       help="text dumps: fill holes between addresses with this byte instead of failing")


def crc_value(text: str) -> int:
    """A CRC32 as logged: `0x1234abcd`, `1234ABCD`."""
    return _grammar("crc32", text)


def add_tolerance_flags(parser: argparse.ArgumentParser) -> None:
    """--atol/--rtol/--check: how far B may be from A and still pass (forensics.core.tolerance)."""
    group = parser.add_argument_group("tolerance (verdict WITHIN TOLERANCE, exit 0, when the check passes)")
    group.add_argument("--atol", default=None, metavar="1lsb|0.01",
                       help="absolute tolerance in LSB (integer buffers, e.g. 1lsb) or in dequantized units")
    group.add_argument("--rtol", default=None, metavar="R", help="relative tolerance: |b-a| <= atol + R*|a|")
    group.add_argument("--check", default=None, metavar="max|mean|p99",
                       help="which statistic must pass (default max: every value)")


class LazyChoices:
    """argparse choices computed when first needed (a command's --help or a value to check), so that building
    the parser for `forensics --help` does not import the module that defines them."""

    def __init__(self, load):
        self._load, self._values = load, None

    def _get(self):
        if self._values is None:
            self._values = tuple(self._load())
        return self._values

    def __iter__(self):
        return iter(self._get())

    def __contains__(self, value) -> bool:
        return value in self._get()
