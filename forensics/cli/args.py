"""Argument types shared by every command: each rejects a bad value with one readable line."""

from __future__ import annotations

import argparse
import math
import re

MAX_RECORD = 1 << 24  # bytes per record: a record is one anchor's lanes; 16 MiB is far beyond any real one
# The one number grammar of flags: integers in decimal, 0x-hex, 0o, 0b with underscores (parse_int), decimals
# in ASCII (_decimal), each at most MAX_NUMBER_CHARS characters (2^64 is 20 digits, 0x plus 16 hex digits; a
# 5,000-digit value is no size anyone means, and past 4,300 digits int() itself refuses).
MAX_NUMBER_CHARS = 40
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)", re.ASCII)


def _short(text: str) -> str:
    return repr(text) if len(text) <= MAX_NUMBER_CHARS else f"a number of {len(text):,} characters"


def parse_int(text: str) -> int:
    """Decimal, 0x-hex, 0o/0b, and underscores: `4096`, `0x1000`, `8_136` (ASCII, at most MAX_NUMBER_CHARS)."""
    cleaned = text.strip()
    if len(cleaned) > MAX_NUMBER_CHARS:
        raise argparse.ArgumentTypeError(f"{_short(cleaned)} is longer than the {MAX_NUMBER_CHARS} characters "
                                         f"a number may have (MAX_NUMBER_CHARS)")
    try:
        if not _INTEGER.fullmatch(cleaned):
            raise ValueError(text)
        return int(cleaned.replace("_", ""), 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}") from None


def non_negative_int(text: str) -> int:
    value = parse_int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {value}")
    return value


def positive_int(text: str) -> int:
    value = parse_int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {value}")
    return value


def _decimal(text: str) -> float:
    """An ASCII decimal number (float() also takes `1_000`, `١٢` and `inf`, which a flag should not)."""
    text = text.strip()
    if len(text) > MAX_NUMBER_CHARS or not _DECIMAL.fullmatch(text):
        raise ValueError(text)
    return float(text)


def positive_float(text: str) -> float:
    """A scale: `0.10822763`, `1/256` (fractions are how users write uint8 scales)."""
    try:
        if "/" in text:
            num, den = text.split("/", 1)
            value = _decimal(num) / _decimal(den)
        else:
            value = _decimal(text)
    except (ValueError, ZeroDivisionError, OverflowError):
        raise argparse.ArgumentTypeError(f"not a number (at most {MAX_NUMBER_CHARS} characters): "
                                         f"{_short(text)}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive finite number, got {text}")
    return value


def record_size(text: str) -> int:
    value = positive_int(text)
    if value > MAX_RECORD:
        raise argparse.ArgumentTypeError(f"must be at most {MAX_RECORD} bytes per record, got {value}")
    return value


def zero_point(text: str) -> int:
    """A uint8 (0..255) or int8 (-128..127) zero point; the dtype, when known, narrows it further."""
    try:
        value = int(text.strip(), 10) if re.fullmatch(r"\s*[+-]?\d+\s*", text, re.ASCII) else None
    except ValueError:
        value = None
    if value is None:
        raise argparse.ArgumentTypeError(f"not an integer: {text!r}")
    if not -128 <= value <= 255:
        raise argparse.ArgumentTypeError(f"must be a uint8 (0..255) or int8 (-128..127) zero point, got {value}")
    return value


def lane_list(text: str) -> tuple[int, ...]:
    """`2,3` -> (2, 3)."""
    try:
        lanes = tuple(int(part) for part in text.split(",") if part.strip() != "")
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated lane numbers like 2,3, got {text!r}") from None
    if not lanes or any(lane < 0 for lane in lanes):
        raise argparse.ArgumentTypeError(f"expected comma-separated lane numbers like 2,3, got {text!r}")
    return lanes


def name_list(text: str) -> tuple[str, ...]:
    names = tuple(part.strip() for part in text.split(","))
    if not all(names):
        raise argparse.ArgumentTypeError(f"expected comma-separated names like bg,face,pad,pad, got {text!r}")
    return names


def hex_pattern(text: str) -> bytes:
    """A sentinel: `cc`, `0xCC`, `deadbeef`, `de ad be ef`."""
    cleaned = text.strip().lower().replace(" ", "").replace("_", "")
    if cleaned.startswith("0x"):
        cleaned = cleaned[2:]
    if not cleaned or len(cleaned) % 2 or any(c not in "0123456789abcdef" for c in cleaned):
        raise argparse.ArgumentTypeError(f"expected hex bytes like cc or deadbeef, got {text!r}")
    return bytes.fromhex(cleaned)


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
    value = non_negative_int(text)
    if value > 255:
        raise argparse.ArgumentTypeError(f"must be a byte value 0-255, got {value}")
    return value


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
    cleaned = text.strip().lower()
    cleaned = cleaned[2:] if cleaned.startswith("0x") else cleaned
    if not 1 <= len(cleaned) <= 8 or any(c not in "0123456789abcdef" for c in cleaned):
        raise argparse.ArgumentTypeError(f"expected a CRC32 like 0x1234abcd, got {text!r}")
    return int(cleaned, 16)
def add_tolerance_flags(parser: argparse.ArgumentParser) -> None:
    """--atol/--rtol/--check: how far B may be from A and still pass (forensics.tolerance)."""
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
