"""A hex + ASCII view of one or two dumps, by record, with the bytes that differ marked."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.io.dump import Dump
from forensics.core.errors import InputError
from forensics.core.layout import RecordLayout

DEFAULT_CONTEXT = 4
DEFAULT_LENGTH = 256  # the story's first 256 bytes, the view that hides the answer
MAX_BYTES = 1 << 20


def _hex(data: bytes) -> str:
    return data.hex(" ")


@dataclass(frozen=True)
class HexRow(serial.Serial):
    """One record of the view; its document's `values_a` / `values_b` come from the layout (HexdumpResult)."""

    index: int            # record index, counted from the layout's offset
    offset: int           # absolute data offset
    a: bytes = field(metadata=serial.json(encode=_hex))
    b: bytes | None = field(default=None, metadata=serial.json(encode=_hex, omit_none=True))
    # the differing lanes, when hexdump() found them already
    lanes: tuple[int, ...] | None = field(default=None, metadata=serial.json(
        "differing_lanes", write=lambda r: r.differing, when=lambda r: r.b is not None))

    @property
    def differing(self) -> tuple[int, ...]:
        """The lanes where A and B differ (a lane one of them lacks differs too)."""
        if self.b is None:
            return ()
        if self.lanes is not None:
            return self.lanes
        width = max(len(self.a), len(self.b))
        return tuple(i for i in range(width)
                     if i >= len(self.a) or i >= len(self.b) or self.a[i] != self.b[i])

    def listed(self, layout: RecordLayout) -> dict:
        """The row's document under `layout`: each side's values after its bytes, where the layout has them."""
        out = {}
        for key, value in self.to_dict().items():
            out[key] = value
            side = getattr(self, key) if key in ("a", "b") else None
            if side is not None and layout.has_values and len(side) == layout.record_size:
                out[f"values_{key}"] = layout.values(side)
        return out


@dataclass(frozen=True)
class HexdumpResult(serial.Serial):
    """The rows shown. Its document reduces the layout to its record size beside rows that carry their values;
    `layout` (the whole record layout) was added after the rest so that a saved document reads back."""

    JSON_DERIVED = ("record_size",)
    JSON_ORDER = ("path_a", "path_b", "record_size", "focus", "rows", "layout")

    path_a: str
    path_b: str | None
    layout: RecordLayout = field(metadata=serial.json(decode=lambda doc: serial.decode(RecordLayout, doc)))
    rows: tuple[HexRow, ...] = field(metadata=serial.json(write=lambda r: [row.listed(r.layout) for row in r.rows]))
    focus: int | None       # the record asked for with --anchor

    @property
    def record_size(self) -> int:
        return self.layout.record_size

    @property
    def differing_rows(self) -> int:
        return sum(1 for r in self.rows if r.differing)


def hexdump(dump_a: Dump, dump_b: Dump | None, layout: RecordLayout, *, anchor: int | None = None,
            context: int = DEFAULT_CONTEXT, offset: int | None = None, length: int | None = None) -> HexdumpResult:
    """Rows of records around `anchor` (± context), or the records covering [offset, offset + length)."""
    rs = layout.record_size
    base = layout.offset
    size = dump_a.size if dump_b is None else max(dump_a.size, dump_b.size)
    if anchor is not None:
        if anchor < 0:
            raise InputError(f"anchor must not be negative, got {anchor}")
        first = max(0, anchor - context)
        last = anchor + context + 1
        lo, hi = base + first * rs, base + last * rs
        if base + anchor * rs >= size:
            raise InputError(f"anchor {anchor} starts at byte {base + anchor * rs}, past the end ({size} bytes)",
                             dump_a.path)
    else:
        lo = base if offset is None else offset
        hi = lo + (DEFAULT_LENGTH if length is None else length)
        if lo >= size:
            raise InputError(f"offset {lo} is past the end of the data ({size} bytes)", dump_a.path)
        # Align to the records the range touches, so a row is always one record.
        lo = base + (lo - base) // rs * rs if lo >= base else lo
    hi = min(hi, size)
    if hi - lo > MAX_BYTES:
        raise InputError(f"refusing to hexdump {hi - lo} bytes; ask for at most {MAX_BYTES} ({{length}})", params=True)
    data_a = dump_a.read(lo, hi - lo)
    data_b = dump_b.read(lo, hi - lo) if dump_b is not None else None
    lanes = _differing_lanes(data_a, data_b, rs) if data_b is not None else {}
    rows = []
    for pos in range(lo, hi, rs):
        rel = pos - lo
        a = data_a[rel:rel + rs]
        b = data_b[rel:rel + rs] if data_b is not None else None
        if not a and not b:
            break
        rows.append(HexRow((pos - base) // rs, pos, a, b, lanes.get(rel // rs, ()) if b is not None else None))
    return HexdumpResult(dump_a.path, dump_b.path if dump_b else None, layout, tuple(rows), anchor)


def _differing_lanes(a: bytes, b: bytes, rs: int) -> dict[int, tuple[int, ...]]:
    """row -> its differing lanes, for the rows holding one, found at once (a 1 MiB hexdump has 262,144 rows):
    each row's lanes as a bit mask, each distinct mask turned into its lanes once."""
    size = max(len(a), len(b))
    rows = -(-size // rs)
    x = np.ones(rows * rs, dtype=bool)  # the bytes one side lacks differ
    common = min(len(a), len(b))
    np.not_equal(np.frombuffer(a, np.uint8, common), np.frombuffer(b, np.uint8, common), out=x[:common])
    x[size:] = False
    table = x.reshape(rows, rs)
    hit = np.flatnonzero(table.any(axis=1))
    if rs > 62:  # masks would not fit an integer: lane by lane
        return {int(r): tuple(np.flatnonzero(table[r]).tolist()) for r in hit}
    masks = table[hit].astype(np.int64) @ (np.int64(1) << np.arange(rs, dtype=np.int64))
    lanes = {m: tuple(i for i in range(rs) if m >> i & 1) for m in np.unique(masks).tolist()}
    return dict(zip(hit.tolist(), (lanes[m] for m in masks.tolist())))
