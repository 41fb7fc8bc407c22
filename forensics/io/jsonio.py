"""The one JSON reader for user files (sidecars, postprocess.json, manifest.json, csr snapshots, decode JSON).

`json.loads` trusts its input in ways a hostile file exploits: deep nesting raises RecursionError (or, deep
enough, overflows the C stack; refused beyond MAX_DEPTH before parsing), a
5000-digit integer raises ValueError (Python's int limit), and an integer too large for a float overflows
where a reader converts it. Here every such document is an InputError naming the file, integers longer
than `MAX_INT_DIGITS` digits and floats that are not finite are refused while parsing, and NaN/Infinity
literals stay accepted only where a reader checks them itself (they parse as floats, as json does).
"""

from __future__ import annotations

import json
import math
import re

from forensics.core.errors import InputError

MAX_INT_DIGITS = 40  # a 128-bit value has 39 digits; nothing a dump description holds is longer
MAX_DEPTH = 100  # nesting of arrays and objects; Polygraphy RunResults nest 6 deep, a manifest 4
# a JSON string, unrolled so that a long one (a base64 array) is a single-character repeat, not a group per character
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _depth(text: str) -> int:
    """The deepest nesting of arrays / objects in JSON text, at C speed (outside strings, every [ or { goes one
    level down, every ] or } one up); json's own parser recurses once per level and overflows the stack."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:
        return 0  # cannot be deeper than that (the common case: no scan)
    import numpy as np

    brackets = _STRING.sub("", text).encode("utf-8", "replace").translate(None, _NOT_BRACKETS)
    steps = np.frombuffer(brackets, dtype=np.uint8)
    if not len(steps):
        return 0
    down = (steps == ord("[")) | (steps == ord("{"))
    return int(np.cumsum(np.where(down, 1, -1), dtype=np.int64).max())


def _parse_int(text: str) -> int:
    digits = len(text.lstrip("-"))
    if digits > MAX_INT_DIGITS:
        raise _Refused(f"an integer with {digits} digits")
    return int(text)


def _parse_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _Refused(f"the number {text[:20]}{'...' if len(text) > 20 else ''} overflows a float")
    return value


class _Refused(ValueError):
    pass


def loads(text, path=None, what: str = "JSON"):
    """Parse `text` (str or UTF-8 bytes); every problem is one InputError naming `path`."""
    if isinstance(text, (bytes, bytearray, memoryview)):
        try:
            text = bytes(text).decode("utf-8")
        except UnicodeDecodeError:
            raise InputError(f"{what} is not UTF-8 text", path) from None
    depth = _depth(text)
    if depth > MAX_DEPTH:
        raise InputError(f"malformed {what}: nested {depth:,} levels deep, more than the {MAX_DEPTH} allowed "
                         f"(MAX_DEPTH)", path)
    try:
        return json.loads(text, parse_int=_parse_int, parse_float=_parse_float)
    except _Refused as exc:
        raise InputError(f"malformed {what}: {exc}", path) from None
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed {what}: {exc.msg} at line {exc.lineno} column {exc.colno}", path) from None
    except RecursionError:
        raise InputError(f"malformed {what}: nested too deeply", path) from None
    except (ValueError, OverflowError) as exc:
        raise InputError(f"malformed {what}: {type(exc).__name__}", path) from None
