"""One encoder and one decoder for result dataclasses: a result's `--json` is its fields, and a saved document
loads back into the same result (construct's round trip: parse(build(x)) == x).

A result is a frozen dataclass that derives from `Serial`: `to_dict()` encodes every field under its name
(nested results, enums, tuples, numpy scalars and arrays included) and `from_dict(doc)` builds the result
back from such a document, reading each field by its type annotation. A field says how it differs in its
metadata (`field(metadata=json(...))`): another key, a codec for its value (a CRC32 as `0x1a2b3c4d`), or not
in the document at all (what only a renderer needs). Properties derived from the fields that the document
also carries (a verdict, a count) are listed in `JSON_DERIVED`; they are written after the fields and skipped
when read back, since the fields decide them.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import sys
import types
import typing

_KEY = "forensics.json"


def json(name: str | None = None, *, encode=None, decode=None, skip: bool = False, omit_none: bool = False,
         omit=None, when=None, write=None, read=None, spread: bool = False) -> dict:
    """A field's metadata for the encoder: `name` its key, `encode` / `decode` its value's codec, `skip` not in
    the document (the decoder leaves the field's default), `omit_none` not written while it is None, `omit` not
    written while omit(value) is true (a default the document leaves out: `omit=lambda v: v == 0`), `when` written
    only while when(result) is true (a field that belongs to one kind of result). A field left out reads back as
    its default. A value the document writes from more than the field uses `write(result)` for the document's
    value and `read(document)` for the field's (a hint written with the command it names). `spread`: a dict
    field whose keys are the document's own, beside the fields' (read back as the keys no field or derived
    property takes)."""
    return {_KEY: {"name": name, "encode": encode, "decode": decode, "skip": skip, "omit_none": omit_none,
                   "omit": omit, "when": when, "write": write, "read": read, "spread": spread}}


_PLAIN = {"name": None, "encode": None, "decode": None, "skip": False, "omit_none": False, "omit": None, "when": None,
          "write": None, "read": None, "spread": False}


def _spec(field: dataclasses.Field) -> dict:
    return field.metadata.get(_KEY) or _PLAIN


def _derived(kind) -> list[tuple[str, str, bool]]:
    """(key, attribute, optional) of a result type's derived properties: a JSON_DERIVED entry is the property's
    name, or (key, name) for a property written under another key."""
    out = []
    for names, optional in ((getattr(kind, "JSON_DERIVED", ()), False),
                            (getattr(kind, "JSON_DERIVED_OPTIONAL", ()), True)):
        out.extend((*((n, n) if isinstance(n, str) else n), optional) for n in names)
    return out


class Serial:
    """A result whose document is its fields (see the module's docstring)."""

    __slots__ = ()  # a slots dataclass (one per detection row) stays one

    JSON_DERIVED: typing.ClassVar[tuple[str, ...]] = ()
    # The document's keys in this order first (fields and derived properties alike), the rest after in field
    # order: a document whose key order readers know stays in it.
    JSON_ORDER: typing.ClassVar[tuple[str, ...]] = ()
    # Derived properties written only while they are not None (what only one kind of result has).
    JSON_DERIVED_OPTIONAL: typing.ClassVar[tuple[str, ...]] = ()

    def to_dict(self) -> dict:
        return encode(self)

    @classmethod
    def from_dict(cls, doc: dict):
        return decode(cls, doc)


def encode(value):
    """`value` as JSON data: a dataclass as {key: field}, its JSON_DERIVED properties after the fields; an enum
    as its value; tuples, lists and sets as lists; a dict's keys as strings; numpy scalars and arrays as numbers
    and lists; bytes as hex; a non-finite float as None (JSON has no NaN)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _encode_dataclass(value)
    if isinstance(value, enum.Enum):
        return encode(value.value)
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (tuple, list, set, frozenset)):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {str(encode(k)): encode(v) for k, v in value.items()}
    if isinstance(value, (bytes, bytearray, memoryview)):
        return bytes(value).hex()
    return _encode_foreign(value)


def _encode_dataclass(value) -> dict:
    """A dataclass instance as {key: field} (its fields' json() metadata obeyed), then its JSON_DERIVED
    properties, in JSON_ORDER first when it names one."""
    out = {}
    for field in dataclasses.fields(value):
        _encode_field(value, field, out)
    for key, attribute, optional in _derived(type(value)):
        item = getattr(value, attribute)
        if item is not None or not optional:
            out[key] = encode(item)
    order = getattr(value, "JSON_ORDER", ())
    if order:
        out = {**{k: out[k] for k in order if k in out}, **{k: v for k, v in out.items() if k not in order}}
    return out


def _encode_field(value, field, out: dict) -> None:
    """One field of `value` into `out` as its json() metadata says: skipped, left out (None with omit_none, omit,
    when), spread into the document, written from the whole result (write), or encoded under its name."""
    spec = _spec(field)
    if spec["skip"]:
        return
    item = getattr(value, field.name)
    if item is None and spec["omit_none"]:
        return
    if (spec["omit"] is not None and spec["omit"](item)) or (spec["when"] is not None
                                                              and not spec["when"](value)):
        return
    if spec["spread"]:
        out.update(encode(item))
        return
    if spec["write"] is not None:
        out[spec["name"] or field.name] = encode(spec["write"](value))
        return
    out[spec["name"] or field.name] = (spec["encode"] or encode)(item) if item is not None else None


def _encode_foreign(value):
    """What is none of JSON's own types: numpy arrays and scalars (numpy only when it is imported already), an
    object with to_dict, a path; anything else is a TypeError."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        if isinstance(value, numpy.ndarray):
            return encode(value.tolist())
        if isinstance(value, numpy.generic):
            return encode(value.item())
    if hasattr(value, "to_dict"):
        return value.to_dict()
    if hasattr(value, "__fspath__"):
        return str(value.__fspath__())
    raise TypeError(f"cannot encode a {type(value).__name__} as JSON")


def decode(kind, data):
    """Data of `encode`'s form read back as `kind`: a Serial dataclass (by its fields' annotations), an enum,
    tuple[X, ...], list[X], dict[K, V], X | None, or a plain JSON type (returned as it is)."""
    if data is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        return _decode_union(kind, data)
    if origin in (tuple, list, set, frozenset):
        return _decode_sequence(kind, origin, data)
    if origin is dict:
        key, item = (typing.get_args(kind) or (typing.Any, typing.Any))
        return {decode(key, k): decode(item, v) for k, v in data.items()}
    if isinstance(kind, type) and dataclasses.is_dataclass(kind):
        return _decode_dataclass(kind, data)
    if isinstance(kind, type) and issubclass(kind, enum.Enum):
        return kind(data)
    return _decode_plain(kind, data)


def _decode_union(kind, data):
    """X | Y: the first option `data` reads back as (None left out); the data as it is when none does."""
    options = [k for k in typing.get_args(kind) if k is not type(None)]
    for option in options:
        try:
            return decode(option, data)
        except (TypeError, ValueError, KeyError):
            continue
    return data


def _decode_sequence(kind, origin, data):
    """tuple[X, Y] item by item, tuple[X, ...] / list[X] / set[X] / frozenset[X] each item as X."""
    args = typing.get_args(kind)
    if origin is tuple and args and args[-1] is not Ellipsis:
        return tuple(decode(k, v) for k, v in zip(args, data))
    item = args[0] if args else typing.Any
    return origin(decode(item, v) for v in data)


def _decode_plain(kind, data):
    """A plain JSON value as `kind`: an int read as float, an int or bytes from its string (0x..., hex), and a
    TypeError for another JSON type where int, float, str or bool is wanted; any other kind as it is."""
    if kind is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    if kind is int and isinstance(data, str):
        return int(data, 0)
    if kind is bytes and isinstance(data, str):
        return bytes.fromhex(data)
    if kind in (int, float, str, bool) and not isinstance(data, kind):
        raise TypeError(f"expected {kind.__name__}, got {type(data).__name__}")
    return data


def _decode_dataclass(kind, data: dict):
    if not isinstance(data, dict):
        raise TypeError(f"a {kind.__name__} is read from an object, got {type(data).__name__}")
    hints = typing.get_type_hints(kind)
    values = {}
    fields = dataclasses.fields(kind)
    for field in fields:
        spec = _spec(field)
        key = spec["name"] or field.name
        if spec["spread"] and field.init:
            taken = {_spec(f)["name"] or f.name for f in fields} | {key for key, _, _ in _derived(kind)}
            values[field.name] = {k: v for k, v in data.items() if k not in taken}
            continue
        if spec["skip"] or key not in data or not field.init:
            continue
        if spec["read"] is not None:
            values[field.name] = spec["read"](data)
            continue
        raw = data[key]
        values[field.name] = (spec["decode"] or (lambda v, k=hints.get(field.name, typing.Any): decode(k, v)))(raw) \
            if raw is not None else None
    return kind(**values)


def round_trip(result) -> bool:
    """Whether a result's document reads back into a result with the same document (the per-type test)."""
    doc = result.to_dict()
    return type(result).from_dict(doc).to_dict() == doc
