"""Record-by-record comparison of two dumps: verdict, CRCs, which records and lanes differ, and how.

Blocks that are byte-identical are skipped with one vectorised equality test; only differing blocks are
examined record by record, so a 1 GiB pair with a handful of differences costs about two reads and two CRCs.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.blocks import stream_pair
from forensics.crc import format_crc
from forensics.dump import Dump
from forensics.layout import RecordLayout

DEFAULT_LIMIT = 20


@dataclass(frozen=True)
class DifferingRecord:
    index: int   # record index within the compared region (the anchor index when the region starts at 0)
    offset: int  # absolute data offset of the record's first byte
    a: bytes
    b: bytes

    @property
    def xor(self) -> bytes:
        return bytes(x ^ y for x, y in zip(self.a, self.b))

    def to_dict(self, layout: RecordLayout | None = None) -> dict:
        out = {"index": self.index, "offset": self.offset, "a": self.a.hex(" "), "b": self.b.hex(" "),
               "xor": self.xor.hex(" ")}
        if layout is not None and layout.quantized:
            out["values_a"] = layout.values(self.a)
            out["values_b"] = layout.values(self.b)
        return out


@dataclass(frozen=True)
class DiffResult:
    path_a: str
    path_b: str
    size_a: int
    size_b: int
    crc32_a: int
    crc32_b: int
    layout: RecordLayout
    region_start: int
    records_compared: int
    records_differing: int
    bytes_differing: int
    first_differing_offset: int | None
    lane_differences: tuple[int, ...]  # per lane: records whose lane differs (as configured)
    lane_max_delta: tuple[int, ...]    # per lane: the largest |a - b| seen, in LSB
    records: tuple[DifferingRecord, ...]
    records_truncated: bool
    trailing_bytes: int                # bytes after the last whole record in the compared region
    trailing_differ: bool
    bytes_identical: bool
    tolerance: int = 0

    @property
    def sizes_equal(self) -> bool:
        return self.size_a == self.size_b

    @property
    def identical(self) -> bool:
        """Equal as configured: same size, no differing record (pad lanes and tolerance applied)."""
        return self.sizes_equal and self.records_differing == 0 and not self.trailing_differ

    def __bool__(self) -> bool:
        return self.identical

    def to_dict(self) -> dict:
        return {
            "identical": self.identical,
            "bytes_identical": self.bytes_identical,
            "path_a": self.path_a,
            "path_b": self.path_b,
            "size_a": self.size_a,
            "size_b": self.size_b,
            "crc32_a": format_crc(self.crc32_a),
            "crc32_b": format_crc(self.crc32_b),
            "record_size": self.layout.record_size,
            "offset": self.region_start,
            "pad_lanes": list(self.layout.pad_lanes),
            "tolerance": self.tolerance,
            "records_compared": self.records_compared,
            "records_differing": self.records_differing,
            "bytes_differing": self.bytes_differing,
            "first_differing_offset": self.first_differing_offset,
            "lanes": [{"lane": i, "name": name, "records_differing": n, "max_delta": d}
                      for i, (name, n, d) in enumerate(zip(self.layout.field_names, self.lane_differences,
                                                           self.lane_max_delta))],
            "trailing_bytes": self.trailing_bytes,
            "trailing_differ": self.trailing_differ,
            "records": [r.to_dict(self.layout) for r in self.records],
            "records_truncated": self.records_truncated,
        }


def diff_dumps(dump_a: Dump, dump_b: Dump, layout: RecordLayout, *, tolerance: int = 0,
               limit: int | None = DEFAULT_LIMIT, progress=None) -> DiffResult:
    """Compare two dumps record by record over the layout's region of their common length
    (`progress(done, total)` is called as blocks stream by)."""
    if tolerance < 0:
        from forensics.errors import InputError

        raise InputError(f"tolerance must not be negative, got {tolerance}")
    common = min(dump_a.size, dump_b.size)
    region = layout.region(common, dump_a.path if dump_a.size <= dump_b.size else dump_b.path)
    rs = layout.record_size
    rec_lo, rec_hi = region.start, region.start + region.record_bytes
    keep = np.ones(rs, dtype=bool)
    keep[list(layout.pad_lanes)] = False

    state = {
        "bytes_identical": dump_a.size == dump_b.size,
        "records_differing": 0,
        "bytes_differing": 0,
        "first": None,
        "lanes": np.zeros(rs, dtype=np.int64),
        "max_delta": np.zeros(rs, dtype=np.int64),
        "records": [],
        "trailing_differ": False,
    }

    def consume(lo: int, va: memoryview, vb: memoryview, positions) -> None:
        if positions is not None and positions.size == 0:
            return
        state["bytes_identical"] = False
        hi = lo + len(va)
        # Whole records of the region inside this block (blocks are record-aligned from region.start).
        r_lo, r_hi = max(lo, rec_lo), min(hi, rec_hi)
        if r_lo < r_hi:
            a_all = np.frombuffer(va[r_lo - lo:r_hi - lo], np.uint8).reshape(-1, rs)
            b_all = np.frombuffer(vb[r_lo - lo:r_hi - lo], np.uint8).reshape(-1, rs)
            if positions is None:  # dense: every record of the block
                candidates = None
                a, b = a_all, b_all
            else:  # sparse: only the records that hold a differing byte
                inside = positions[(positions >= r_lo - lo) & (positions < r_hi - lo)]
                candidates = np.unique((inside - (r_lo - lo)) // rs)
                a, b = a_all[candidates], b_all[candidates]
            delta = np.abs(a.astype(np.int16) - b.astype(np.int16))
            mask = (delta > tolerance) & keep
            hit = np.flatnonzero(mask.any(axis=1))
            if hit.size:
                rows = hit if candidates is None else candidates[hit]
                mask, delta = mask[hit], delta[hit]
                first_index = (r_lo - rec_lo) // rs
                state["records_differing"] += int(rows.size)
                state["bytes_differing"] += int(np.count_nonzero(mask))
                state["lanes"] += np.count_nonzero(mask, axis=0)
                state["max_delta"] = np.maximum(state["max_delta"], np.where(mask, delta, 0).max(axis=0))
                if state["first"] is None:
                    state["first"] = r_lo + int(rows[0]) * rs + int(np.flatnonzero(mask[0])[0])
                room = len(rows) if limit is None else max(0, limit - len(state["records"]))
                for row in rows[:room]:
                    row = int(row)
                    state["records"].append(DifferingRecord(
                        index=first_index + row, offset=r_lo + row * rs,
                        a=a_all[row].tobytes(), b=b_all[row].tobytes()))
        # The partial record after the last whole one: compared byte for byte.
        t_lo, t_hi = max(lo, rec_hi), min(hi, region.stop)
        if t_lo < t_hi:
            ta = np.frombuffer(va[t_lo - lo:t_hi - lo], np.uint8)
            tb = np.frombuffer(vb[t_lo - lo:t_hi - lo], np.uint8)
            tmask = np.abs(ta.astype(np.int16) - tb.astype(np.int16)) > tolerance
            if tmask.any():
                state["trailing_differ"] = True
                state["bytes_differing"] += int(np.count_nonzero(tmask))
                if state["first"] is None:
                    state["first"] = t_lo + int(np.flatnonzero(tmask)[0])

    crc_a, crc_b = stream_pair(dump_a, dump_b, region.start, rs, consume, progress=progress)
    first = state["first"]
    if first is None and dump_a.size != dump_b.size:
        first = common  # the prefix is equal: the files part where the shorter one ends
    truncated = limit is not None and state["records_differing"] > len(state["records"])
    return DiffResult(
        path_a=dump_a.path, path_b=dump_b.path, size_a=dump_a.size, size_b=dump_b.size,
        crc32_a=crc_a, crc32_b=crc_b, layout=layout, region_start=region.start,
        records_compared=region.records, records_differing=state["records_differing"],
        bytes_differing=state["bytes_differing"], first_differing_offset=first,
        lane_differences=tuple(int(x) for x in state["lanes"]),
        lane_max_delta=tuple(int(x) for x in state["max_delta"]),
        records=tuple(state["records"]), records_truncated=truncated,
        trailing_bytes=region.trailing, trailing_differ=state["trailing_differ"],
        bytes_identical=state["bytes_identical"], tolerance=tolerance,
    )
