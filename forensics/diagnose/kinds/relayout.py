"""relayout: A and B hold the same bytes (every byte value equally often) in another order: a wrong tile order or
layout. Found from what no other kind explains, not from a candidate."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, hex_ranges, parse_int
from forensics.diagnose.region import where
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError

RECORD_SET_LIMIT = 16 << 20   # compare the record multisets too when a dump is at most this big


@dataclass(frozen=True)
class Relayout(Bug):
    """Records of `record` bytes in another order (a wrong tile order): `order[i]` = A's record at B's i."""

    record: int = 4
    order: tuple = field(default=(), compare=False, hash=False)
    kind = "relayout"

    def index(self, n, pos):
        order = np.asarray(self.order, np.int64)
        r, j = pos // self.record, pos % self.record
        inside = r < len(order)
        src = np.where(inside, order[np.minimum(r, max(len(order) - 1, 0))] * self.record + j, pos) \
            if len(order) else pos
        return src

    def params(self):
        return {"record_bytes": self.record}

    def spec(self):
        return f"relayout:{self.record}"


def parse(args, size, previous=None):
    record = parse_int(args[0], "RECORD") if args else 4
    seed = parse_int(args[1], "SEED") if len(args) > 1 else 0
    count = size // record if record > 0 else 0
    if count < 2:
        raise InputError(f"relayout RECORD must leave at least 2 records in {size} bytes")
    order = np.random.default_rng(seed).permutation(count)
    return Relayout(record, tuple(order.tolist()))


def residual_finding(ctx, residual_mask, explains) -> Finding:
    """The finding for a same-size pair whose byte-value histograms are equal and whose residual is large."""
    layout, dump_a, dump_b = ctx.layout, ctx.dump_a, ctx.dump_b
    w = where(residual_mask, ctx.region, layout)
    same, tail = None, ""
    rs, off = layout.record_size, layout.offset
    records = (dump_a.size - off) // rs
    if dump_a.size <= RECORD_SET_LIMIT and records:
        a = dump_a.read_array(off, records * rs).reshape(-1, rs)
        b = dump_b.read_array(off, records * rs).reshape(-1, rs)
        ua, ca = np.unique(a, axis=0, return_counts=True)
        ub, cb = np.unique(b, axis=0, return_counts=True)
        same = bool(ua.shape == ub.shape and np.array_equal(ua, ub) and np.array_equal(ca, cb))
        tail = (f"; both hold the same {rs}-byte records, only their positions differ" if same else
                f"; the {rs}-byte records themselves differ too (bytes moved across record boundaries)")
    return Finding("relayout", (
        f"A and B hold the same bytes (every byte value occurs equally often) but in another order at "
        f"{hex_ranges(w['ranges'])} (records {w['records']}){tail}: the same data in another order"),
        "check the tile/stride layout used to copy the output (libedgetpu's check calls this a probable "
        "re-layout error)",
        {"records_differing": ctx.scan.records_differing, "ranges": w["ranges"], "same_records": same}, explains)


KIND = Kind("relayout", rank=14, display=10, usage="relayout:RECORD[:SEED]",
            description="B's RECORD-byte records are A's in a shuffled order", parse=parse)
