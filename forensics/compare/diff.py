"""Record-by-record comparison of two dumps: verdict, CRCs, which records and lanes differ, and how.

Blocks that are byte-identical are skipped with one vectorised equality test; only differing blocks are
examined record by record, so a 1 GiB pair with a handful of differences costs about two reads and two CRCs.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.compare.blocks import PARALLEL_MIN, stream_halves
from forensics.compare.crc import format_crc
from forensics.core import serial
from forensics.io.dump import Dump, DumpReader
from forensics.core.layout import RecordLayout
from forensics.core.parallel import two_cores
from forensics.compare.stats import ErrorAccumulator, ErrorStats, bit_view, element_dtype, feed_in_halves, locator
from forensics.core.judgement import Judgement, Reason
from forensics.core.tolerance import DIFFER, HEAD_WINDOW, MATCH, WITHIN, Tolerance, judge
from forensics.core.verdict import Verdict

DEFAULT_LIMIT = 20


def _hex(data: bytes) -> str:
    return data.hex(" ")



def layout_field(**kwargs):
    """The `layout` key: the record layout the bytes were read with, whole (record size, offset, count, lane
    names, pad lanes, quantization, element type). The older keys beside it (record_size, pad_lanes, a row's
    values) flatten it and leave out its scale and element type; this key lets a saved document be read back."""
    return field(metadata=serial.json("layout", decode=lambda doc: serial.decode(RecordLayout, doc)), **kwargs)


@dataclass(frozen=True)
class DifferingRecord(serial.Serial):
    """One listed differing record; its document's `values_a` / `values_b` come from the layout it is listed
    under (DiffResult's `records`)."""

    JSON_DERIVED = (("xor", "xor_hex"),)

    index: int   # record index within the compared region (the anchor index when the region starts at 0)
    offset: int  # absolute data offset of the record's first byte
    a: bytes = field(metadata=serial.json(encode=_hex))
    b: bytes = field(metadata=serial.json(encode=_hex))

    @property
    def xor(self) -> bytes:
        return bytes(x ^ y for x, y in zip(self.a, self.b))

    @property
    def xor_hex(self) -> str:
        return self.xor.hex(" ")

    def listed(self, layout: RecordLayout) -> dict:
        """The record's document under `layout`: its values too, where the layout has them."""
        out = self.to_dict()
        if layout.has_values:
            out["values_a"] = layout.values(self.a)
            out["values_b"] = layout.values(self.b)
        return out


def _lane_table(r: "DiffResult") -> list[dict]:
    return [{"lane": i, "name": name, "records_differing": n, "max_delta": d}
            for i, (name, n, d) in enumerate(zip(r.layout.field_names, r.lane_differences, r.lane_max_delta))]


def _lanes_read(key: str):
    return lambda doc: tuple(int(lane[key]) for lane in doc["lanes"])


def _non_finite(stats: ErrorStats) -> dict:
    """The statistics that are infinite or NaN (`stats` writes them as null): {"sqnr_db": "inf"}."""
    import dataclasses
    import math

    return {f.name: str(v) for f in dataclasses.fields(stats)
            if isinstance(v := getattr(stats, f.name), float) and not math.isfinite(v)}


def _stats_read(doc: dict) -> ErrorStats:
    """`stats` with what `stats_detail` adds to it (a document saved without it: the statistics alone)."""
    import dataclasses

    stats = ErrorStats.from_dict(doc["stats"])
    detail = doc.get("stats_detail")
    if not detail:
        return stats
    histogram = detail.get("histogram") or ()
    if histogram:
        histogram = (np.asarray(histogram[0], dtype=np.float64), np.asarray(histogram[1], dtype=np.int64))
    return dataclasses.replace(stats, violations=detail.get("violations", 0), scale=detail.get("scale"),
                               per_lane_max=tuple(detail.get("per_lane_max") or ()), histogram=tuple(histogram),
                               **{name: float(value) for name, value in (detail.get("non_finite") or {}).items()})


@dataclass(frozen=True)
class DiffResult(serial.Serial):
    """The facts of one comparison; its verdict (MATCH / WITHIN TOLERANCE / DIFFER) is `judge_diff`'s.

    Its document is its fields, in the order readers know, with the layout's record size and pad lanes and a
    `lanes` table (name, records differing, max delta per lane) flattened from the layout and the per-lane
    tuples; `layout`, `data_differ` and `trailing_any` were added after the rest so that a saved document reads
    back (the verdict depends on them)."""

    JSON_DERIVED = ("verdict", "identical", "record_size", "pad_lanes")
    JSON_ORDER = ("verdict", "identical", "bytes_identical", "path_a", "path_b", "size_a", "size_b", "crc32_a",
                  "crc32_b", "record_size", "offset", "pad_lanes", "tolerance", "records_compared",
                  "records_differing", "bytes_differing", "pad_bytes_differing", "first_differing_offset", "lanes",
                  "trailing_bytes", "trailing_differ", "records", "records_truncated", "check", "dtype", "stats",
                  "layout", "data_differ", "trailing_any", "stats_detail")
    JSON_DERIVED_OPTIONAL = ("stats_detail",)

    path_a: str
    path_b: str
    size_a: int
    size_b: int
    crc32_a: int = field(metadata=serial.json(encode=format_crc))
    crc32_b: int = field(metadata=serial.json(encode=format_crc))
    layout: RecordLayout = layout_field()
    region_start: int = field(metadata=serial.json("offset"))
    records_compared: int
    records_differing: int
    bytes_differing: int               # differing bytes compared (data lanes beyond the tolerance, trailing)
    first_differing_offset: int | None
    # per lane: records whose lane differs (as configured), and the largest |a - b| seen, in LSB: the `lanes` table
    lane_differences: tuple[int, ...] = field(metadata=serial.json("lanes", write=_lane_table,
                                                                   read=_lanes_read("records_differing")))
    lane_max_delta: tuple[int, ...] = field(metadata=serial.json("lanes", omit=lambda _: True,
                                                                 read=_lanes_read("max_delta")))
    records: tuple[DifferingRecord, ...] = field(metadata=serial.json(
        write=lambda r: [record.listed(r.layout) for record in r.records]))
    records_truncated: bool
    trailing_bytes: int                # bytes after the last whole record in the compared region
    trailing_differ: bool
    bytes_identical: bool
    tolerance: int = 0
    stats: ErrorStats | None = field(default=None, metadata=serial.json(omit_none=True, read=_stats_read))
    policy: Tolerance | None = field(default=None, metadata=serial.json("check", omit_none=True))  # judged by it
    dtype: str = field(default="uint8", metadata=serial.json(when=lambda r: r.stats is not None))  # stats' elements
    data_differ: bool = False          # a data byte of a whole record differs at all (within tolerance or not)
    trailing_any: bool = False         # a trailing byte differs at all
    pad_bytes_differing: int = 0       # bytes in the pad lanes that differ: not compared, stated

    @property
    def stats_detail(self) -> dict | None:
        """What the verdict and the terminal's histogram need of the statistics beyond their own document (kept
        out of `stats`, which other documents carry as it is): the tolerance violations, the scale, the
        per-lane maxima and the |B-A| histogram (edges, counts)."""
        if self.stats is None:
            return None
        s = self.stats
        return {"violations": s.violations, "scale": s.scale, "per_lane_max": serial.encode(s.per_lane_max),
                "histogram": serial.encode(s.histogram), "non_finite": _non_finite(s)}

    @property
    def record_size(self) -> int:
        return self.layout.record_size

    @property
    def pad_lanes(self) -> tuple[int, ...]:
        return self.layout.pad_lanes

    @property
    def sizes_equal(self) -> bool:
        return self.size_a == self.size_b

    @property
    def identical(self) -> bool:
        """Equal as configured: same size, no differing record (pad lanes and tolerance applied)."""
        return self.sizes_equal and self.records_differing == 0 and not self.trailing_differ

    @property
    def verdict(self) -> Verdict:
        """MATCH / WITHIN TOLERANCE / DIFFER, as judge_diff judges the pair (the one place)."""
        return judge_diff(self).verdict

    @property
    def passed(self) -> bool:
        """MATCH or WITHIN TOLERANCE: what the exit code follows."""
        return self.verdict.passed

    def __bool__(self) -> bool:
        return self.passed


# --- the judgement -----------------------------------------------------------------------------------------

NONFINITE_RULE = "a NaN or an infinity equals only the same bits"


def _bit_exact(policy: Tolerance | None) -> bool:
    """No tolerance declared (atol 0, rtol 0, check max): any bit difference of a data element is a difference,
    -0.0 vs +0.0 too."""
    return policy is None or (policy.exact and policy.check == "max")


def _pair_verdict(r: DiffResult) -> Verdict:
    """The bytes compared alone: MATCH (equal as configured), WITHIN TOLERANCE, DIFFER."""
    if not r.sizes_equal or r.trailing_differ:
        return DIFFER
    if r.stats is None:  # judged on whole LSB: equal, or every difference within the tolerance
        if r.records_differing:
            return DIFFER
        return WITHIN if r.data_differ or r.trailing_any else MATCH
    equal = r.stats.differing == 0 and not r.trailing_any
    if not equal and _bit_exact(r.policy):
        return DIFFER
    atol = r.policy.atol_units(integer=r.stats.integer, scale=r.stats.scale)
    return judge(equal=equal, stats=r.stats, tol=r.policy, atol_units=atol)


@dataclass(frozen=True)
class SizeNote:
    """What a size difference means: `short` the side holding only the other's head (None: not said), `lead`
    the clause the verdict line carries, `text` the note printed under it."""

    short: str | None
    lead: str | None
    text: str | None


def size_note(r: DiffResult, fits=()) -> SizeNote:
    """A size difference in words. `fits`: (A's, B's) forensics.decode.modeldumps.TensorFit when --model /
    --deps say which tensor each side holds. A `--length` hint only where the shorter side is the whole tensor
    the model describes: a slice must never drop bytes one side lacks (a truncated B would then MATCH)."""
    if r.sizes_equal:
        return SizeNote(None, None, None)
    common, extra = min(r.size_a, r.size_b), abs(r.size_a - r.size_b)
    shorter, longer = ("B", "A") if r.size_b < r.size_a else ("A", "B")
    prefix_equal = not r.bytes_differing and not r.trailing_differ
    fit = (fits[0] if shorter == "A" else fits[1]) if fits else None
    if fit is not None and not fit.head_window and fit.full_size == common:
        name = fit.tensor or fit.role
        if prefix_equal:
            return SizeNote(None, None, (
                f"the first {common:,} bytes (the whole {name} tensor) match; {longer} has {extra:,} more past the "
                f"tensor (a page-rounded DMA allocation?): compare the tensor's bytes only with --length {common}"))
        return SizeNote(None, None, f"{longer} has {extra:,} bytes past the whole {name} tensor ({common:,} bytes)")
    if fit is not None and fit.head_window:
        return SizeNote(shorter, f"{shorter} is truncated",
                        f"{shorter} is truncated: {common:,} of {longer}'s {max(r.size_a, r.size_b):,} bytes")
    if not prefix_equal:
        return SizeNote(None, None, None)
    if shorter == "B":
        return SizeNote("B", "B is truncated", (f"B is truncated: it holds the first {common:,} of A's "
                                                f"{r.size_a:,} bytes, and they match A's"))
    return SizeNote("A", "A holds only B's head", (
        f"A holds the first {common:,} of B's {r.size_b:,} bytes, and they match: A is truncated, or B is a larger "
        f"allocation holding A at its start (--model or --deps say which: they know the tensor's size)"))


def _pad_text(r: DiffResult) -> str:
    there = f", {r.pad_bytes_differing:,} bytes differ there" if r.pad_bytes_differing else ""
    return f"pad lanes {','.join(map(str, r.layout.pad_lanes))} ignored{there}"


def configured(r: DiffResult) -> str:
    """`pad lanes 2,3 ignored, 12 bytes differ there; tolerance atol 1 LSB`: what the comparison left out."""
    parts = [_pad_text(r)] if r.layout.pad_lanes else []
    if r.policy is not None and not r.policy.exact:
        parts.append(f"tolerance {r.policy.describe()}")
    elif r.tolerance:
        parts.append(f"tolerance {r.tolerance} LSB")
    return "; ".join(parts)


def _head_window_text(fits) -> str | None:
    """What a dump holding only the head of its tensor means, for one side or both (None: neither)."""
    windows = [(side, f) for side, f in zip("AB", fits) if f is not None and f.head_window]
    if not windows:
        return None
    if len(windows) == 2:
        a, b = fits
        if a.held == b.held:
            return f"both dumps hold only the head of the tensor: {a.describe()}"
        return (f"both dumps hold only the head of the tensor: A {a.held:,} and B {b.held:,} of the {a.anchors:,} "
                f"anchors the model has: the head-window trap; judge the whole buffers")
    side, fit = windows[0]
    return f"{side} is truncated: {fit.describe()}"


def _differ_message(r: DiffResult, note: SizeNote, classes: bool) -> tuple[str, list[Reason]]:
    rs = r.layout.record_size
    what, reasons = [], []
    if r.records_differing and classes:
        if r.stats is not None:  # in elements, whatever their width
            what.append(f"{r.stats.differing:,} of {r.stats.count:,} class scores differ")
        else:
            data = rs - len(r.layout.pad_lanes)
            what.append(f"{sum(1 for n in r.lane_differences if n):,} of {data:,} class score bytes differ")
    elif r.records_differing:
        what.append(f"{r.records_differing:,} of {r.records_compared:,} records differ ({rs} bytes per record)")
    if r.records_differing:
        reasons.append(Reason("records_differ", what[-1]))
    if not r.sizes_equal:
        if note.lead is not None:
            what.append(note.lead)
            reasons.append(Reason("truncated", note.text))
        what.append(f"sizes differ: {r.size_a:,} vs {r.size_b:,} bytes")
        reasons.append(Reason("sizes_differ", what[-1]))
    if r.trailing_differ:
        what.append(f"the {r.trailing_bytes} trailing bytes differ")
        reasons.append(Reason("trailing_differ", what[-1]))
    stats = r.stats
    if stats is not None and stats.nonfinite_mismatch:
        count = stats.nonfinite_mismatch
        what.append(f"{count:,} NaN or infinite value{'s do' if count != 1 else ' does'} not match ({NONFINITE_RULE})")
        reasons.append(Reason("nonfinite_differ", what[-1]))
    elif stats is not None and stats.differing and stats.max_abs == 0 and _bit_exact(r.policy):
        what.append(f"{stats.differing:,} value{'s differ' if stats.differing != 1 else ' differs'} only in "
                    "bits (-0.0 vs +0.0): no tolerance was given")
        reasons.append(Reason("bits_only", what[-1]))
    return "; ".join(what) or "files differ", reasons


def judge_diff(r: DiffResult, *, fits=(), classes: bool = False) -> Judgement:
    """The one judgement of a comparison: MATCH (equal as configured: pad lanes ignored), WITHIN TOLERANCE,
    DIFFER, or HEAD WINDOW (the bytes compared pass, but a side holds only the head of the tensor `fits` say it
    stands for: forensics.decode.modeldumps.TensorFit, A's and B's). `classes`: the dumps are a classifier's
    score vector (its lanes are classes). The reasons carry the clauses that decided it; NaN and infinities
    equal only the same bits and no tolerance passes them."""
    verdict = _pair_verdict(r)
    rs = r.layout.record_size
    reasons: list[Reason] = []
    if r.layout.pad_lanes and not r.bytes_identical:
        reasons.append(Reason("pad_lanes_ignored", _pad_text(r)))
    if verdict is MATCH and r.bytes_identical:
        message = f"{r.size_a:,} bytes, CRC32 {format_crc(r.crc32_a)}, {r.records_compared:,} records of {rs} bytes"
    elif verdict is MATCH:
        message = (f"as configured ({configured(r) or 'data lanes'}): {r.records_compared:,} records of {rs} bytes "
                   "match; the bytes themselves differ")
    elif verdict is WITHIN:
        what = (f"{r.stats.differing:,} of {r.stats.count:,} values differ" if r.stats is not None else
                "data bytes differ")
        message = (f"{what}, within {r.policy.describe()}" + ("" if r.stats is not None else
                                                              " (statistics left out)"))
        reasons.append(Reason("within_tolerance", f"tolerance {r.policy.describe()}"))
    else:
        message, more = _differ_message(r, size_note(r, fits), classes)
        reasons += more
    window = _head_window_text(fits)
    if window is not None:
        worded = verdict.passed  # the story's trap: a side holding only the head is named even when its bytes pass
        reasons.append(Reason("head_window", window, worded=worded))
        if worded:
            done = "match" if verdict is MATCH else "are within tolerance"
            message = f"the {min(r.size_a, r.size_b):,} bytes compared {done}, but {window}"
            verdict = HEAD_WINDOW
    return Judgement(verdict, message, tuple(reasons))


def _sum_reference(dump: Dump, lo: int, hi: int, acc: ErrorAccumulator, elements, record_size: int, *,
                   threads: int = 1) -> None:
    """Feed A's records in [lo, hi) to `acc` as the reference (`elements(view)` picks the data lanes); with
    `threads` 2 and a large range, the second half on another thread, merged after the first."""
    if lo is None or hi <= lo:
        return
    step = max(record_size, (8 << 20) // record_size * record_size)
    if threads > 1 and hi - lo >= PARALLEL_MIN and two_cores():
        feed_in_halves(acc, lo, hi, lambda part, a, b: _sum_reference(dump, a, b, part, elements, record_size),
                       align=record_size, name="forensics-reference")
        return
    with DumpReader(dump) as reader:
        for pos in range(lo, hi, step):
            window = reader.window(pos, min(pos + step, hi))
            try:
                acc.add_reference(elements(window.view))
            finally:
                window.release()


def _distinct_sorted(values: np.ndarray) -> np.ndarray:
    """np.unique of an already sorted array, in one linear pass instead of a sort."""
    if len(values) < 2:
        return values
    keep = np.empty(len(values), dtype=bool)
    keep[0] = True
    np.not_equal(values[1:], values[:-1], out=keep[1:])
    return values[keep]


def _words(table: np.ndarray) -> np.ndarray | None:
    """A C-contiguous [n, k] table of one-byte items as n integers of k bytes, when k is 1, 2, 4 or 8 (else
    None): numpy compares, gathers and reduces short rows of a 2-D array one item at a time."""
    k = table.shape[1]
    if k in (1, 2, 4, 8) and table.flags.c_contiguous:
        return table.reshape(-1).view(np.dtype(f"u{k}"))
    return None


def _differing_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Indices of the rows (records, uint8 [n, record_size]) whose bytes differ, in order."""
    words_a, words_b = _words(a), _words(b)
    if words_a is not None and words_b is not None:
        return np.flatnonzero(words_a != words_b)
    return _distinct_sorted(np.flatnonzero(a.reshape(-1) != b.reshape(-1)) // a.shape[1])


def _rows(table: np.ndarray, index: np.ndarray) -> np.ndarray:
    """table[index] of a uint8 [n, record_size] table."""
    words = _words(table)
    return table[index] if words is None else words[index].view(np.uint8).reshape(-1, table.shape[1])


def _any_per_row(mask: np.ndarray) -> np.ndarray:
    """mask.any(axis=1) of a bool [n, k]."""
    words = _words(mask)
    return mask.any(axis=1) if words is None else words != 0


class _Tally:
    """One half's counts and findings (stream_halves gives each half its own): what the records of its blocks
    showed, and its share of the error statistics."""

    def __init__(self, record_size: int, acc: ErrorAccumulator | None):
        self.bytes_identical = True
        self.records_differing = 0
        self.bytes_differing = 0
        self.pad_bytes_differing = 0   # bytes in pad lanes that differ (not compared, stated)
        self.first: int | None = None
        self.lanes = np.zeros(record_size, dtype=np.int64)
        self.max_delta = np.zeros(record_size, dtype=np.int64)
        self.records: list[DifferingRecord] = []
        self.trailing_differ = False   # a byte of the partial last record differs beyond the tolerance
        self.trailing_any = False      # ... differs at all
        self.data_any = False          # a data byte of a whole record differs at all (within tolerance or not)
        self.rec_from: int | None = None  # where this half's whole records begin and end
        self.rec_to: int | None = None
        self.ref_from: int | None = None  # where its first difference is (the reference is summed from its start)
        self.acc = acc

    def merge(self, later: "_Tally") -> None:
        """Fold in the tally of the blocks after this one's, as one pass in order would count them."""
        self.bytes_identical = self.bytes_identical and later.bytes_identical
        self.records_differing += later.records_differing
        self.bytes_differing += later.bytes_differing
        self.pad_bytes_differing += later.pad_bytes_differing
        self.first = self.first if self.first is not None else later.first
        self.lanes = self.lanes + later.lanes
        self.max_delta = np.maximum(self.max_delta, later.max_delta)
        self.records.extend(later.records)
        self.trailing_differ = self.trailing_differ or later.trailing_differ
        self.trailing_any = self.trailing_any or later.trailing_any
        self.data_any = self.data_any or later.data_any


class _Elements:
    """The data lanes of whole records read as `dtype` elements, for the error statistics."""

    def __init__(self, record_size: int, np_dtype: np.dtype, keep: np.ndarray):
        self.dtype, self.k = np_dtype, np_dtype.itemsize
        self.per = record_size // self.k
        self.data = np.array([e for e in range(self.per) if keep[e * self.k]], dtype=np.int64)
        self.all_data = self.data.size == self.per
        self.is_data = np.zeros(self.per, dtype=bool)
        self.is_data[self.data] = True

    def of(self, view) -> np.ndarray:
        """The data elements of a run of whole records (one row per record)."""
        records = np.frombuffer(view, self.dtype).reshape(-1, self.per)
        return records if self.all_data else records[:, self.data]


class _PairDiff:
    """One comparison's fixed setup (the layout's region, pad lanes, tolerance, listing limit, statistics) and
    the consumer of its blocks: `consume(tally, lo, view_a, view_b, positions)` adds one block to a tally."""

    def __init__(self, dump_a: Dump, layout: RecordLayout, region, *, tolerance: int, limit: int | None,
                 acc: ErrorAccumulator | None, elements: _Elements | None):
        self.dump_a, self.layout, self.region = dump_a, layout, region
        self.rs = layout.record_size
        self.rec_lo, self.rec_hi = region.start, region.start + region.record_bytes
        self.keep = np.ones(self.rs, dtype=bool)
        self.keep[list(layout.pad_lanes)] = False
        self.tolerance, self.limit = tolerance, limit
        self.acc, self.elements = acc, elements
        self.tallies: list[_Tally] = []

    def part(self, _index: int):
        """The consumer of one half of the blocks (stream_halves): its own tally."""
        tally = _Tally(self.rs, self.acc.fresh() if self.acc is not None else None)
        self.tallies.append(tally)
        return lambda lo, va, vb, positions: self.consume(tally, lo, va, vb, positions)

    def consume(self, t: _Tally, lo: int, va: memoryview, vb: memoryview, positions) -> None:
        hi = lo + len(va)
        # Whole records of the region inside this block (blocks are record-aligned from region.start).
        r_lo, r_hi = max(lo, self.rec_lo), min(hi, self.rec_hi)
        if t.rec_from is None:
            t.rec_from = min(r_lo, self.rec_hi)
        t.rec_to = max(r_hi, t.rec_from)
        if positions is not None and positions.size == 0:  # an equal block: only the reference sums need it
            if t.acc is not None and t.ref_from is not None and r_lo < r_hi:
                t.acc.add_reference(self.elements.of(va[r_lo - lo:r_hi - lo]))
            return
        t.bytes_identical = False
        if r_lo < r_hi:
            self._records(t, lo, va, vb, positions, r_lo, r_hi)
        self._trailing(t, lo, hi, va, vb)

    def _candidates(self, a_all, b_all, positions, lo: int, r_lo: int, r_hi: int):
        """The rows of this block's records that hold a differing byte (None: examine them all)."""
        if positions is None:  # many differing words: find the differing records directly
            candidates = _differing_rows(a_all, b_all)
            return None if len(candidates) > len(a_all) // 4 else candidates  # most of them: every record
        inside = positions[(positions >= r_lo - lo) & (positions < r_hi - lo)]  # sparse: the records holding one
        return _distinct_sorted((inside - (r_lo - lo)) // self.rs)

    def _records(self, t: _Tally, lo: int, va, vb, positions, r_lo: int, r_hi: int) -> None:
        """The whole records of one block: which differ, in which lanes, by how much; their statistics."""
        a_all = np.frombuffer(va[r_lo - lo:r_hi - lo], np.uint8).reshape(-1, self.rs)
        b_all = np.frombuffer(vb[r_lo - lo:r_hi - lo], np.uint8).reshape(-1, self.rs)
        candidates = self._candidates(a_all, b_all, positions, lo, r_lo, r_hi)
        a, b = (a_all, b_all) if candidates is None else (_rows(a_all, candidates), _rows(b_all, candidates))
        delta = np.abs(a.astype(np.int16) - b.astype(np.int16))
        mask = (delta > self.tolerance) & self.keep
        if not self.keep.all():  # the pad lanes that differ: not compared, counted to be stated
            t.pad_bytes_differing += int(np.count_nonzero(delta[:, ~self.keep]))
        if t.acc is not None:  # without a tolerance, `mask` is which data bytes differ
            one_byte = self.elements.k == 1 and not self.tolerance
            self._feed_stats(t, a_all, a, b, r_lo, candidates, mask if one_byte else None)
        if self.tolerance and not t.data_any:  # a data byte differs at all (within tolerance or not)
            t.data_any = bool(((delta > 0) & self.keep).any())
        hit = np.flatnonzero(_any_per_row(mask))
        if hit.size:
            t.data_any = True
            rows = hit if candidates is None else candidates[hit]
            if hit.size < len(mask):
                mask, delta = mask[hit], delta[hit]
            self._tally_rows(t, a_all, b_all, rows, mask, delta, r_lo)

    def _tally_rows(self, t: _Tally, a_all, b_all, rows, mask, delta, r_lo: int) -> None:
        """Count the differing records `rows` (their `mask` of differing bytes, `delta` in LSB) and list the
        first of them."""
        rs = self.rs
        t.records_differing += int(rows.size)
        t.bytes_differing += int(np.count_nonzero(mask))
        masked = delta * mask
        if rs <= 16:  # one column at a time: numpy reduces a [n, few] array over its long axis slowly
            for lane in np.flatnonzero(self.keep):
                t.lanes[lane] += np.count_nonzero(mask[:, lane])
                t.max_delta[lane] = max(t.max_delta[lane], masked[:, lane].max())
        else:  # wide records (a float32 [N, 91] tensor's 364 bytes): one reduction per block
            t.lanes += np.count_nonzero(mask, axis=0)
            np.maximum(t.max_delta, masked.max(axis=0), out=t.max_delta)
        if t.first is None:
            t.first = r_lo + int(rows[0]) * rs + int(np.flatnonzero(mask[0])[0])
        first_index = (r_lo - self.rec_lo) // rs
        room = len(rows) if self.limit is None else max(0, self.limit - len(t.records))
        for row in rows[:room].tolist():
            t.records.append(DifferingRecord(index=first_index + row, offset=r_lo + row * rs,
                                             a=a_all[row].tobytes(), b=b_all[row].tobytes()))

    def _feed_stats(self, t: _Tally, a_all, a, b, r_lo: int, candidates, differ=None) -> None:
        """Error statistics of one block's whole records (`a_all`, A's side), as dtype elements of the data
        lanes; `a`, `b` are the records at `candidates`, those holding a differing byte (None: all of them).
        `differ`: which data bytes of `a`, `b` differ, when already known (one-byte elements)."""
        el, acc = self.elements, t.acc
        if t.ref_from is None:  # the half's first difference: its equal records before it count too
            t.ref_from = r_lo
            _sum_reference(self.dump_a, t.rec_from, r_lo, acc, el.of, self.rs)
        acc.add_reference(el.of(a_all))
        a_el = a.view(el.dtype).reshape(-1)
        b_el = b.view(el.dtype).reshape(-1)
        if differ is None:
            differ = bit_view(a_el) != bit_view(b_el)
            if not el.all_data:
                differ &= np.resize(el.is_data, differ.size)
        flat = np.flatnonzero(differ)
        if not flat.size:
            return
        per = el.per
        base = (r_lo - self.rec_lo) // el.k

        def index_of(i):  # only the worst element's is asked for
            row, lane = divmod(int(flat[i]), per)
            return base + (row if candidates is None else int(candidates[row])) * per + lane

        lanes = flat & (per - 1) if per & (per - 1) == 0 else flat % per
        positions = None
        if acc.sample is not None:  # where each pair is, for the error picture's map
            rows = flat // per
            positions = base + (rows if candidates is None else candidates[rows]) * per + lanes
        acc.add_differing(a_el[flat], b_el[flat], index_of, lane=lanes, positions=positions)

    def _trailing(self, t: _Tally, lo: int, hi: int, va, vb) -> None:
        """The partial record after the last whole one: compared byte for byte."""
        t_lo, t_hi = max(lo, self.rec_hi), min(hi, self.region.stop)
        if t_lo >= t_hi:
            return
        ta = np.frombuffer(va[t_lo - lo:t_hi - lo], np.uint8)
        tb = np.frombuffer(vb[t_lo - lo:t_hi - lo], np.uint8)
        tdelta = np.abs(ta.astype(np.int16) - tb.astype(np.int16))
        t.trailing_any = t.trailing_any or bool(tdelta.any())
        tmask = tdelta > self.tolerance
        if tmask.any():
            t.trailing_differ = True
            t.bytes_differing += int(np.count_nonzero(tmask))
            if t.first is None:
                t.first = t_lo + int(np.flatnonzero(tmask)[0])

    def merged(self) -> _Tally:
        """The halves' tallies as one pass in order would have them (the listing cut at the limit)."""
        out = self.tallies[0]
        for later in self.tallies[1:]:
            out.merge(later)
        if self.limit is not None:
            del out.records[self.limit:]
        return out

    def statistics(self, locate) -> ErrorStats | None:
        """The halves' error statistics merged (a half without a difference sums its reference whole)."""
        acc, el, region = self.acc, self.elements, self.region
        if acc is None:
            return None
        if any(t.acc.seen_difference for t in self.tallies):
            for t in self.tallies:
                if t.ref_from is None and t.rec_from is not None:  # no difference here: sum it all
                    _sum_reference(self.dump_a, t.rec_from, t.rec_to, t.acc, el.of, self.rs, threads=2)
                acc.merge(t.acc)
        else:
            acc.n = region.records * el.data.size  # equal everywhere: only the count matters
        if locate is None:
            where_lane = locator(record_size=el.per, lane_names=self.layout.field_names if el.k == 1 else None)

            def locate(index, _where=where_lane):
                return {**_where(index), "offset": region.start + index * el.k}
        return acc.finish(locate)


def _accumulator(layout: RecordLayout, region, np_dtype: np.dtype, elements: _Elements, policy: Tolerance, *,
                 scale, zero_point, sample) -> ErrorAccumulator:
    """The error statistics of the data lanes as `np_dtype` elements (quantization from `scale`/`zero_point`,
    else the layout's for bytes), with the tolerance whose violations are counted."""
    k = np_dtype.itemsize
    integer = np_dtype.kind in "iub"
    q_scale = scale if scale is not None else (layout.scale if k == 1 else None)
    q_zp = zero_point if zero_point is not None else (layout.zero_point if q_scale is not None else 0)
    return ErrorAccumulator(integer=integer, scale=q_scale if integer else None, zero_point=q_zp or 0,
                            atol=policy.atol_units(integer=integer, scale=q_scale), rtol=policy.rtol,
                            check=policy.check, lanes=elements.per, itemsize=k,
                            sample=_sample_shape(sample, region.records, elements.per, elements.data.size))


def diff_dumps(dump_a: Dump, dump_b: Dump, layout: RecordLayout, *, tolerance: int = 0,
               limit: int | None = DEFAULT_LIMIT, policy: Tolerance | None = None, dtype: str = "uint8",
               scale: float | None = None, zero_point: int | None = None, stats: bool = True,
               locate=None, progress=None, sample: bool | int = False) -> DiffResult:
    """Compare two dumps record by record over the layout's region of their common length.

    `tolerance` (LSB) filters which records count as differing, as it always has; `policy` (default: atol of
    `tolerance` LSB) judges the verdict from error statistics of the data lanes read as `dtype` elements
    (quantization from `scale`/`zero_point`, else the layout's), computed in the same pass. `locate` maps a
    flat element index to where it is (default: anchor and lane). `progress(done, total)` is called as blocks
    stream by. `sample`: the statistics also collect what a picture of the error needs (stats.sample), its
    map by record (True) or by `sample` elements (a tensor's last dimension: one cell per (y, x)).
    The verdict is `judge_diff`'s (MATCH / WITHIN TOLERANCE / DIFFER).
    """
    if tolerance < 0:
        from forensics.core.errors import InputError

        raise InputError(f"tolerance must not be negative, got {tolerance}")
    policy = policy if policy is not None else Tolerance(atol=float(tolerance), lsb=True)
    np_dtype = element_dtype(dtype)
    k = np_dtype.itemsize
    if k == 1 and np_dtype.kind == "u" and policy.lsb_threshold() is not None and tolerance == 0:
        tolerance = policy.lsb_threshold()  # atol Klsb lists the records as --tolerance K always did
    common = min(dump_a.size, dump_b.size)
    region = layout.region(common, dump_a.path if dump_a.size <= dump_b.size else dump_b.path)
    pair = _PairDiff(dump_a, layout, region, tolerance=tolerance, limit=limit, acc=None, elements=None)
    if stats and layout.record_size % k == 0:
        pair.elements = _Elements(layout.record_size, np_dtype, pair.keep)
        pair.acc = _accumulator(layout, region, np_dtype, pair.elements, policy, scale=scale,
                                zero_point=zero_point, sample=sample)
    crc_a, crc_b = stream_halves(dump_a, dump_b, region.start, layout.record_size, pair.part, progress=progress)
    t = pair.merged()
    first = t.first
    if first is None and dump_a.size != dump_b.size:
        first = common  # the prefix is equal: the files part where the shorter one ends
    return DiffResult(
        path_a=dump_a.path, path_b=dump_b.path, size_a=dump_a.size, size_b=dump_b.size,
        crc32_a=crc_a, crc32_b=crc_b, layout=layout, region_start=region.start,
        records_compared=region.records, records_differing=t.records_differing,
        bytes_differing=t.bytes_differing, first_differing_offset=first,
        lane_differences=tuple(int(x) for x in t.lanes), lane_max_delta=tuple(int(x) for x in t.max_delta),
        records=tuple(t.records), records_truncated=limit is not None and t.records_differing > len(t.records),
        trailing_bytes=region.trailing, trailing_differ=t.trailing_differ,
        bytes_identical=t.bytes_identical and dump_a.size == dump_b.size, tolerance=tolerance,
        stats=pair.statistics(locate), policy=policy, dtype=np_dtype.name,
        data_differ=t.data_any, trailing_any=t.trailing_any, pad_bytes_differing=t.pad_bytes_differing,
    )


def _sample_shape(sample, records: int, per: int, data: int):
    """ErrorAccumulator's `sample`: (map records, elements per map record, data elements), or None."""
    if not sample:
        return None
    map_per = per if sample is True or (records * per) % int(sample) else int(sample)
    return records * per // map_per, map_per, records * data
