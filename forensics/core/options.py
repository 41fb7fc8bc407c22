"""The option groups the CLI and the library share, and the one grammar of each option's spelling.

A report function (forensics.reports) takes its options as keywords named after the long flags; a library
user may give them typed (`pad=(2, 3)`, `scale=0.00390625`) or exactly as the command line spells them
(`pad="2,3"`, `scale="1/256"`, `fields="background,face,pad,pad"`, `sentinel="cc"`). Both are parsed here, once:
the CLI's argument types (forensics/cli/args.py) call the same grammar. A value that fits neither is refused
with one InputError naming the parameter and the form it takes (`pad: expected comma-separated lane numbers
like 2,3, got 'x'`; on the command line `--pad: ...`).

The groups: `Layout` (how a dump's bytes are records), `Slice` (which bytes of each dump are read),
`Tolerances` (how far B may be from A and still pass) and `ModelContext` (what a model or extract directory
says about the dump).
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, fields as dataclass_fields

from forensics.core.errors import InputError
from forensics.core.layout import MAX_RECORD_SIZE
_DECIMAL = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", re.ASCII)
_INTEGER = re.compile(r"[+-]?(?:0[xX][0-9a-fA-F_]+|0[oO][0-7_]+|0[bB][01_]+|[0-9][0-9_]*)", re.ASCII)
# A number is at most MAX_NUMBER_CHARS characters (2^64 is 20 digits, 0x plus 16 hex digits): a 5,000-digit
# value is no size anyone means, and past 4,300 digits int() itself refuses.
MAX_NUMBER_CHARS = 40


def _shown(value) -> str:
    """A value as an error quotes it: whole when short, else its length (a message is one short line)."""
    text = repr(value)
    return text if len(text) <= 2 * MAX_NUMBER_CHARS else f"a value of {len(text):,} characters"


def _bounded(text: str) -> str:
    """`text` stripped, or ValueError naming the bound (and not echoing thousands of digits)."""
    text = text.strip()
    if len(text) > MAX_NUMBER_CHARS:
        raise ValueError(f"a number of {len(text):,} characters is longer than the {MAX_NUMBER_CHARS} characters "
                         "a number may have (MAX_NUMBER_CHARS)")
    return text
_HEX_DIGITS = frozenset("0123456789abcdef")


# --- the grammar: each takes the typed value or the CLI's text, and raises ValueError saying the form ----------

def integer(value) -> int:
    """The one number grammar of flags, report keywords and register traces: decimal (leading zeros read as
    decimal: `007` is 7, as a log prints it), 0x-hex, 0o / 0b, underscores between digits: `4096`, `0x1000`,
    `8_136` (or an int)."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise ValueError(f"not an integer: {value!r}")
    if isinstance(value, int):
        return value
    text = _bounded(value)
    if not _INTEGER.fullmatch(text):  # ASCII only: int() would also read `٤٠٩٦`
        raise ValueError(f"not an integer: {value!r}")
    text = text.replace("_", "")
    try:
        return int(text, 0)
    except ValueError:
        pass
    if re.fullmatch(r"[+-]?\d+", text, re.ASCII):  # `007`: int(text, 0) refuses leading zeros, base 10 does not
        return int(text, 10)
    raise ValueError(f"not an integer: {value!r}")


def non_negative(value) -> int:
    number = integer(value)
    if number < 0:
        raise ValueError(f"must not be negative, got {number}")
    return number


def positive(value) -> int:
    number = integer(value)
    if number <= 0:
        raise ValueError(f"must be a positive integer, got {number}")
    return number


def record_size(value) -> int:
    number = positive(value)
    if number > MAX_RECORD_SIZE:
        raise ValueError(f"must be at most {MAX_RECORD_SIZE} bytes per record, got {number}")
    return number


def byte_value(value) -> int:
    number = non_negative(value)
    if number > 255:
        raise ValueError(f"must be a byte value 0-255, got {number}")
    return number


def _decimal(text: str) -> float:
    """An ASCII decimal number (float() also takes `1_000`, `١٢` and `inf`, which a flag should not)."""
    text = _bounded(text)
    if not _DECIMAL.fullmatch(text):
        raise ValueError(text)
    return float(text)


def scale(value) -> float:
    """A scale: `0.10822763`, `1/256` (fractions are how users write uint8 scales), or a number."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a number: {value!r}")
    try:
        if not isinstance(value, str):
            number = float(value)
        elif "/" in value:
            num, den = value.split("/", 1)
            number = _decimal(num) / _decimal(den)
        else:
            number = _decimal(value)
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        if "MAX_NUMBER_CHARS" in str(exc):
            raise
        raise ValueError(f"not a number: {value!r}") from None
    if not math.isfinite(number) or number <= 0:
        raise ValueError(f"must be a positive finite number, got {value}")
    return number


def zero_point(value) -> int:
    """A uint8 (0..255) or int8 (-128..127) zero point; the dtype, when known, narrows it further."""
    number = None
    if isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and re.fullmatch(r"\s*[+-]?\d+\s*", value, re.ASCII):
        number = int(value.strip(), 10)
    if number is None:
        raise ValueError(f"not an integer: {value!r}")
    if not -128 <= number <= 255:
        raise ValueError(f"must be a uint8 (0..255) or int8 (-128..127) zero point, got {number}")
    return number


def lanes(value) -> tuple[int, ...]:
    """`2,3` (or a sequence of lane numbers) -> (2, 3)."""
    form = f"expected comma-separated lane numbers like 2,3, got {value!r}"
    if isinstance(value, str):
        try:
            out = tuple(int(part) for part in value.split(",") if part.strip() != "")
        except ValueError:
            raise ValueError(form) from None
    elif isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        out = tuple(value)
    else:
        raise ValueError(form)
    if not out or any(lane < 0 for lane in out):
        raise ValueError(form)
    return out


def names(value) -> tuple[str, ...]:
    """`bg,face,pad,pad` (or a sequence of names) -> ('bg', 'face', 'pad', 'pad')."""
    form = f"expected comma-separated names like bg,face,pad,pad, got {value!r}"
    if isinstance(value, str):
        out = tuple(part.strip() for part in value.split(","))
    elif isinstance(value, (tuple, list)) and all(isinstance(v, str) for v in value):
        out = tuple(v.strip() for v in value)
    else:
        raise ValueError(form)
    if not out or not all(out):
        raise ValueError(form)
    return out


def hex_digits(text: str) -> str:
    """The hex-number grammar every hex text shares: optional 0x, spaces and underscores ignored, any case
    (`0xCC`, `de ad be ef`, `1234_ABCD`) -> lower-case digits; ValueError when anything else is left."""
    cleaned = text.strip().lower().replace(" ", "").replace("_", "")
    cleaned = cleaned[2:] if cleaned.startswith("0x") else cleaned
    if not cleaned or not _HEX_DIGITS.issuperset(cleaned):
        raise ValueError(text)
    return cleaned


def hex_bytes(value) -> bytes:
    """A sentinel or byte pattern: `cc`, `0xCC`, `deadbeef`, `de ad be ef` (or bytes)."""
    if isinstance(value, (bytes, bytearray)) and value:
        return bytes(value)
    try:
        digits = hex_digits(value) if isinstance(value, str) else ""
    except ValueError:
        digits = ""
    if not digits or len(digits) % 2:
        raise ValueError(f"expected hex bytes like cc or deadbeef, got {value!r}")
    return bytes.fromhex(digits)


def crc32(value) -> int:
    """A CRC32 as logged: `0x1234abcd`, `1234ABCD` (or an int)."""
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 0xFFFFFFFF:
        return value
    try:
        digits = hex_digits(value) if isinstance(value, str) else ""
    except ValueError:
        digits = ""
    if not 1 <= len(digits) <= 8:
        raise ValueError(f"expected a CRC32 like 0x1234abcd, got {value!r}")
    return int(digits, 16)


def number(value) -> float:
    """A finite number: `0.5`, `1/3` (or a float / int)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"not a number: {value!r}")
    if isinstance(value, str) and value.strip().lower().lstrip("+-") in ("nan", "inf", "infinity"):
        raise ValueError(f"must be a finite number, got {value!r}")
    try:
        if isinstance(value, str) and "/" in value:
            num, den = value.split("/", 1)
            out = _decimal(num) / _decimal(den)
        else:
            out = _decimal(value) if isinstance(value, str) else float(value)
    except (ValueError, ZeroDivisionError, OverflowError) as exc:
        if "MAX_NUMBER_CHARS" in str(exc):
            raise
        raise ValueError(f"not a number: {value!r}") from None
    if not math.isfinite(out):
        raise ValueError(f"must be a finite number, got {value!r}")
    return out


def size(value) -> tuple[int, int]:
    """`640x480` (or a (width, height) pair) -> (640, 480)."""
    form = f"expected WIDTHxHEIGHT like 640x480, got {_shown(value)}"
    if isinstance(value, str):
        try:
            w, h = (integer(p) for p in value.lower().replace("*", "x").split("x"))
        except ValueError:
            raise ValueError(form) from None
    elif isinstance(value, (tuple, list)) and len(value) == 2 and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value):
        w, h = value
    else:
        raise ValueError(form)
    if w <= 0 or h <= 0:
        raise ValueError(f"width and height must be positive, got {value!r}")
    return w, h


def _items(value) -> list:
    """A comma-separated text or a sequence, as a list of its items."""
    if isinstance(value, str):
        return [p for p in value.split(",") if p.strip()]
    if isinstance(value, (tuple, list)):
        return list(value)
    raise ValueError(value)


def positive_ints(value) -> tuple[int, ...]:
    """`19,10,5,3,2,1` (or a sequence) -> positive integers."""
    try:
        out = tuple(integer(v) for v in _items(value))
    except ValueError:
        raise ValueError(f"expected comma-separated integers like 19,10,5,3,2,1, got {_shown(value)}") from None
    if not out or any(v <= 0 for v in out):
        raise ValueError(f"expected positive integers like 19,10,5,3,2,1, got {value!r}")
    return out


def numbers(value) -> tuple[float, ...]:
    """`1.0,2.0,0.5,3.0,1/3` (or a sequence) -> numbers."""
    try:
        out = tuple(number(v.strip() if isinstance(v, str) else v) for v in _items(value))
    except ValueError:
        raise ValueError(f"expected comma-separated numbers, got {_shown(value)}") from None
    if not out:
        raise ValueError(f"expected comma-separated numbers, got {value!r}")
    return out


def two_names(value) -> tuple[str, str]:
    """`libedgetpu,ours` -> ("libedgetpu", "ours"): the --overlay decode's name, then this decode's."""
    try:
        out = names(value)
    except ValueError:
        out = ()
    if len(out) != 2:
        raise ValueError(f"expected two names like libedgetpu,ours (the --overlay decode, then this one), "
                         f"got {value!r}")
    return out


ALL_BITS = (1 << 64) - 1


def register_mask(value) -> tuple[str, int]:
    """`OFFSET=MASK` (bits that may differ) or `OFFSET` alone (the whole value may differ), or the pair."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str) and isinstance(value[1], int):
        key, bits = value
        if not 0 <= bits <= ALL_BITS:
            raise ValueError(f"mask must fit in 64 bits, got {value!r}")
        return key, bits
    if not isinstance(value, str):
        raise ValueError(f"expected OFFSET=MASK like 0x48590=0xffffffffffffffff, got {value!r}")
    key, sep, mask = value.partition("=")
    key = key.strip()
    if not key:
        raise ValueError(f"expected OFFSET=MASK like 0x48590=0xffffffffffffffff, got {value!r}")
    if not sep:
        return key, ALL_BITS
    try:
        bits = int(mask.strip().replace("_", ""), 0)
    except ValueError:
        raise ValueError(f"mask is not an integer in {value!r}") from None
    if not 0 <= bits <= ALL_BITS:
        raise ValueError(f"mask must fit in 64 bits, got {value!r}")
    return key, bits


def name_is_file(value, what: str = "NAME") -> tuple[str, str]:
    """`NAME=FILE` (or the pair) -> (name, file)."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, (str, os.PathLike)) for v in value):
        return value
    name, sep, file = value.partition("=") if isinstance(value, str) else ("", "", "")
    if not sep or not name or not file:
        raise ValueError(f"expected {what}=FILE, got {value!r}")
    return name, file


def tag_is_file(value) -> tuple[str, str]:
    return name_is_file(value, "TAG")


def tolerance_item(value):
    """compare's `K` (K LSB for every buffer) or `TENSOR=SPEC` (one tensor's tolerance) -> K or (tensor, spec)."""
    if isinstance(value, tuple) and len(value) == 2 and all(isinstance(v, str) for v in value):
        return value
    if isinstance(value, str) and "=" in value:
        name, _, spec = value.partition("=")
        if not name or not spec:
            raise ValueError(f"expected K or TENSOR=SPEC, got {value!r}")
        return name, spec
    return non_negative(value)


def each(grammar):
    """A repeated option (`--mask A --mask B`): one value or a list of them, each through `grammar` (a function,
    or the name of one of this module's, looked up when a value is read: the one function the CLI's argument
    types call too)."""
    def parse(value):
        if isinstance(value, dict):  # {tag: file}
            value = list(value.items())
        one = isinstance(value, (str, bytes, bytearray, int)) or (
            isinstance(value, tuple) and not (value and isinstance(value[0], (tuple, list))))
        if not one and not isinstance(value, (list, tuple)):
            raise ValueError(f"expected one value or a list of them, got {value!r}")
        item = globals()[grammar] if isinstance(grammar, str) else grammar
        return [item(v) for v in ([value] if one else value)]

    named = globals()[grammar] if isinstance(grammar, str) else grammar
    parse.__doc__ = f"one or more of: {named.__doc__ or named.__name__}"
    parse.item = named
    return parse


def path(value):
    """A file or directory: a str or os.PathLike, as given."""
    if isinstance(value, (str, os.PathLike)):
        return value
    raise ValueError(f"expected a path, got {value!r}")


def checked(name: str, grammar, value):
    """`grammar(value)`, or one InputError naming the parameter `name` and the form it takes; None stays None."""
    if value is None:
        return None
    try:
        return grammar(value)
    except (ValueError, TypeError) as exc:
        raise InputError(str(exc), param=name, value=value) from None


# The grammar of every report keyword that is not free text, by name: the same name means the same thing in
# every command (a command whose option differs, e.g. compare's per-tensor `tolerance`, parses its own).
GRAMMARS = {
    "record": record_size, "offset": non_negative, "count": positive, "fields": names, "pad": lanes,
    "scale": scale, "zero_point": zero_point, "length": positive, "gap_fill": byte_value,
    "limit": non_negative, "top": positive, "window": positive, "min_run": positive, "chunk": positive,
    "expect": crc32, "sentinel": hex_bytes, "lane": non_negative, "anchor": non_negative, "context": non_negative,
    "at": non_negative, "max_shift": non_negative, "page": positive, "tolerance": non_negative,
    "model": path, "deps": path, "labels": path, "top_k": positive, "workers": positive,
    "min_scale": scale, "max_scale": scale, "image_size": size, "input_size": size, "feature_maps": positive_ints,
    "aspect_ratios": numbers, "names": two_names, "score_threshold": number, "interpolated_scale_aspect_ratio": number,
    "show": integer, "pad_byte": byte_value, "mask": each(register_mask), "buffer": each(tag_is_file),
    "input": each(name_is_file), "stall_timeout": scale, "executable": non_negative, "bitstream": non_negative,
    "max_decodes": positive,
}


class Parsed:
    """A value already read in its option's grammar: the CLI's argument types (forensics.cli.args) call the same
    grammar, so the CLI hands its typed values over marked, and `parsed` takes them as they are (each option is
    parsed once, on the command line as in the library)."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value


def parsed(**options) -> dict:
    """Each keyword through its grammar (GRAMMARS; others as given; a Parsed value as it is)."""
    return {name: value.value if isinstance(value, Parsed) else
            checked(name, GRAMMARS[name], value) if name in GRAMMARS else value
            for name, value in options.items()}


# --- the groups ---------------------------------------------------------------------------------------------

class _Group:
    """An option group: built from typed values (a report function's keywords, parsed once by its @spellings), or
    by `parse` from the command line's spellings; its `__post_init__` holds the rules between its options, so a
    layer below takes the group as it is and checks nothing again."""

    @classmethod
    def parse(cls, **options):
        """The group from report keywords, each through its grammar; unknown names are a TypeError (a bug)."""
        return cls(**parsed(**options))

    def keywords(self) -> dict:
        return {f.name: getattr(self, f.name) for f in dataclass_fields(self)}


@dataclass(frozen=True)
class Layout(_Group):
    """How a dump's bytes are records: --record/--offset/--count/--fields/--pad/--scale/--zero-point (flags
    override the dump's sidecar and the model)."""

    record: int | None = None
    offset: int | None = None
    count: int | None = None
    fields: tuple[str, ...] | None = None
    pad: tuple[int, ...] | None = None
    scale: float | None = None
    zero_point: int | None = None

    def context_keywords(self) -> dict:
        """The keywords forensics.decode.modeldumps.dump_context takes for these flags."""
        return {"record_size": self.record, "offset": self.offset, "count": self.count, "fields": self.fields,
                "pad_lanes": self.pad, "scale": self.scale, "zero_point": self.zero_point}


@dataclass(frozen=True)
class Slice(_Group):
    """Which bytes of each dump are read: --offset/--length (e.g. the tensor in a page-rounded DMA allocation)
    and --gap-fill (holes in a text dump)."""

    offset: int | None = None
    length: int | None = None
    gap_fill: int | None = None

    def dump_options(self) -> dict:
        """forensics.io.dump.open_dump's keywords for this slice."""
        out: dict = {}
        if self.gap_fill is not None:
            out["gap_fill"] = self.gap_fill
        if self.offset:
            out["offset"] = self.offset
        if self.length is not None:
            out["length"] = self.length
        return out

    def split(self) -> tuple[dict, int | None]:
        """For the record commands, whose --offset is the layout's (where records start) unless --length cuts a
        slice: (open_dump keywords, the layout offset)."""
        if self.length is None:
            return Slice(gap_fill=self.gap_fill).dump_options(), self.offset
        return self.dump_options(), None


@dataclass(frozen=True)
class Tolerances(_Group):
    """How far B may be from A and still pass: --tolerance K (LSB) or --atol/--rtol/--check
    (forensics.core.tolerance)."""

    tolerance: int | None = None
    atol: str | None = None
    rtol: str | float | None = None
    check: str | None = None

    def __post_init__(self):
        atol = self.atol
        if atol is not None and not isinstance(atol, str):  # a number is a value tolerance, as `0.01` is
            if isinstance(atol, bool) or not isinstance(atol, (int, float)):
                raise InputError(f"expected a number of LSB like 1lsb or a value like 0.01, got {atol!r}",
                                 param="atol", value=atol)
            object.__setattr__(self, "atol", repr(float(atol)))
        rtol = self.rtol
        if rtol is not None and (isinstance(rtol, bool) or not isinstance(rtol, (str, int, float))):
            raise InputError(f"expected a number like 0.01, got {rtol!r}", param="rtol", value=rtol)

    def policy(self):
        """The forensics.core.tolerance.TolerancePolicy these options give (exact when none is given)."""
        from forensics.core.tolerance import make_policy

        return make_policy(tolerance=self.tolerance, atol=self.atol, rtol=self.rtol, check=self.check)


@dataclass(frozen=True)
class ModelContext(_Group):
    """What a model or an extract directory says about the dump: --model/--tensor (its layout, quantization and
    anchor order), --deps (anchor geometry) and --labels (class names)."""

    model: object = None
    deps: object = None
    tensor: str | None = None
    labels: object = None

    def __post_init__(self):
        # The group's rules, said once: forensics.decode.modeldumps.dump_context takes the group as it is.
        if self.tensor is not None and self.model is None:
            raise InputError("{tensor} needs {model} (the model that says what the tensor looks like)", params=True)
        if self.labels is not None and self.tensor is None:
            raise InputError("{labels} names the classes of a model's score tensor: give {model} and {tensor} too",
                             params=True)
        if self.model is not None and self.deps is not None:
            raise InputError("give either {model} or {deps}, not both", params=True)

    @property
    def given(self) -> bool:
        return self.model is not None or self.deps is not None
