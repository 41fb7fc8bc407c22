"""The dominant record of a buffer and every anchor that departs from it.

The story's trap: 2025 of 2034 anchors of `convert_scores` are `ff 00 80 80` (no face) and the first 256 bytes
show nothing else, so the 9 anchors that matter (anchor 203: `01 ff 80 80`, face 0.996) go unseen. The mode is
exact: the records equal to a guessed dominant value are counted in one vectorised test per chunk, and only the
rest are tallied distinct by distinct, so a dominated buffer costs little more than one read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.io.dump import Dump
from forensics.core.layout import Region, RecordLayout
from forensics.core.parallel import both, shared_progress, two_cores

DEFAULT_WINDOW = 256
DEFAULT_TOP = 10
DEFAULT_LIMIT = 1000
_CHUNK_RECORDS = 1 << 21
_MERGE_AT = 1 << 22  # merge the distinct-record tallies when they hold this many entries
_BUDGET = 1 << 23    # distinct records held at once; past it, count in hash partitions (one pass each)
_PARALLEL_RECORDS = 1 << 22  # records: from here on the scan runs in two halves on two threads
TIED_SHOWN = 16      # tied records listed (all of them are counted)


@dataclass(frozen=True)
class RecordCount(serial.Serial):
    record: bytes = field(metadata=serial.json("hex", encode=lambda b: b.hex(" "), decode=bytes.fromhex))
    count: int
    first_index: int


@dataclass(frozen=True)
class LaneSummary(serial.Serial):
    lane: int
    name: str
    min: int
    max: int
    distinct: int
    pad: bool


@dataclass(frozen=True)
class NonuniformRecord(serial.Serial):
    """An anchor whose record departs from the dominant one; its document's `values` come from the layout."""

    index: int
    offset: int
    record: bytes = field(metadata=serial.json("hex", encode=lambda b: b.hex(" "), decode=bytes.fromhex))


@dataclass(frozen=True)
class TopScore(serial.Serial):
    """An anchor of a buffer without a dominant record, by its highest non-background lane."""

    index: int
    lane: int
    name: str = field(metadata=serial.json("class"))
    q: int
    value: float | None = field(metadata=serial.json("score"))  # dequantized when the layout has a scale


def _region(doc: dict) -> Region:
    return Region(doc["offset"], doc["records"], doc["record_size"], doc["trailing_bytes"])


def _listed(r: "AnchorsResult") -> list[dict]:
    return [{**record.to_dict(), "values": r.layout.values(record.record)} for record in r.nonuniform]


@dataclass(frozen=True)
class AnchorsResult(serial.Serial):
    """The dominant record and the anchors that depart from it. Its document flattens the region (offset,
    records, record_size, trailing_bytes) and lists the records' values under the layout; `layout` (the whole
    record layout) and `window_records` were added after the rest so that a saved document reads back."""

    JSON_DERIVED = ("records", "record_size", "trailing_bytes", "dominant_values", "head_window_trap", "dominated")
    JSON_ORDER = ("path", "size", "offset", "records", "record_size", "trailing_bytes", "dominant", "dominant_values",
                  "tied", "tied_total", "distinct", "top", "lanes", "nonuniform_count", "first_nonuniform_offset",
                  "window", "head_window_trap", "dominated", "top_scores", "nonuniform", "nonuniform_truncated",
                  "layout", "window_records")

    path: str
    size: int
    layout: RecordLayout = field(metadata=serial.json(decode=lambda doc: serial.decode(RecordLayout, doc)))
    region: Region = field(metadata=serial.json("offset", write=lambda r: r.region.start, read=_region))
    dominant: RecordCount
    tied: tuple[RecordCount, ...]        # other records as frequent as the dominant one (the first TIED_SHOWN)
    tied_total: int
    distinct: int
    top: tuple[RecordCount, ...]
    lanes: tuple[LaneSummary, ...]
    # None unless asked for
    nonuniform: tuple[NonuniformRecord, ...] | None = field(default=None, kw_only=True,
                                                            metadata=serial.json(omit_none=True, write=_listed))
    nonuniform_total: int = field(metadata=serial.json("nonuniform_count"))
    nonuniform_truncated: bool = field(default=False, kw_only=True,
                                       metadata=serial.json(when=lambda r: r.nonuniform is not None))
    first_nonuniform_offset: int | None
    window: int
    window_records: int
    top_scores: tuple[TopScore, ...] = ()  # only when no record dominates

    @property
    def records(self) -> int:
        return self.region.records

    @property
    def record_size(self) -> int:
        return self.layout.record_size

    @property
    def trailing_bytes(self) -> int:
        return self.region.trailing

    @property
    def dominant_values(self) -> list:
        return self.layout.values(self.dominant.record)

    @property
    def dominated(self) -> bool:
        """Does one record hold more than half the anchors (the story's `ff 00 80 80`)? Real COCO scores
        (91 classes) are all distinct: their "mode" is a tie of ones and says nothing."""
        return self.dominant.count * 2 > self.records

    @property
    def uniform(self) -> bool:
        return self.nonuniform_total == 0

    @property
    def head_window_trap(self) -> bool:
        """Every record in the first `window` bytes is the dominant one, yet later records differ."""
        if self.uniform or self.window_records == 0:
            return False
        return self.first_nonuniform_offset >= self.region.start + self.window_records * self.layout.record_size


WIDE = 16  # records longer than this (e.g. 91 COCO classes + pad) are named by their head, not spelled out


def record_hex(record: bytes) -> str:
    """`ff 00 80 80`, or `00 11 ... (92 bytes)` for a record longer than WIDE."""
    if len(record) <= WIDE:
        return record.hex(" ")
    return record[:8].hex(" ") + f" ... ({len(record)} bytes)"


def judge_anchors(result: AnchorsResult, fit=None) -> Judgement:
    """The one judgement of a buffer's records: OK (every record is the dominant one, or there is one record),
    NONUNIFORM (records depart from it: listed, not judged, exit 0), HEAD WINDOW (`fit`, a
    forensics.decode.modeldumps.TensorFit, says the dump holds only the head of its tensor). The reasons name a
    tied mode and the head-window trap (the first `window` bytes all dominant, later records not)."""
    dom = result.dominant
    reasons = []
    ranked = not result.dominated and result.top_scores and result.nonuniform is None  # no mode to speak of
    if result.tied and not ranked:
        shown = ", ".join(record_hex(t.record) for t in result.tied[:4]) + (", ..." if result.tied_total > 4 else "")
        reasons.append(Reason("tied_mode", f"the mode is tied: {result.tied_total:,} other record(s) also occur "
                                           f"{dom.count:,} times ({shown}); the first to occur is shown"))
    if result.head_window_trap:
        window_bytes = result.window_records * result.layout.record_size
        reasons.append(Reason("head_window_trap", (
            f"the first {window_bytes} bytes ({result.window_records} records) are all {record_hex(dom.record)}, "
            f"but {result.nonuniform_total:,} later records are not: do not judge this buffer by its head")))
    if result.region.trailing:
        reasons.append(Reason("trailing_bytes", f"{result.region.trailing} trailing bytes after the last whole "
                                                "record were not analysed"))
    if result.records == 1:
        verdict, message = Verdict.OK, "a single record: nothing to compare it with"
    elif result.uniform:
        verdict, message = Verdict.OK, f"uniform: all {result.records:,} records are {record_hex(dom.record)}"
    elif ranked:
        verdict = Verdict.NONUNIFORM
        message = (f"no dominant record: {result.distinct:,} distinct records in {result.records:,} anchors (the most "
                   f"frequent occurs {dom.count:,} time{'s' if dom.count != 1 else ''})")
    else:
        verdict = Verdict.NONUNIFORM
        first = (result.first_nonuniform_offset - result.region.start) // result.layout.record_size
        n = result.nonuniform_total
        message = (f"{n:,} {'anchor departs' if n == 1 else 'anchors depart'} from {record_hex(dom.record)}; the "
                   f"first is anchor {first:,} (byte {result.first_nonuniform_offset:#x})")
    if fit is not None and fit.head_window:  # the story's trap: only the head of the tensor was read
        reasons.append(Reason("head_window", fit.describe(), worded=True))
        verdict, message = Verdict.HEAD_WINDOW, f"{fit.describe()} ({message})"
    return Judgement(verdict, message, tuple(reasons))


def _record_dtype(record_size: int) -> np.dtype:
    if record_size in (1, 2, 4, 8):
        return np.dtype(f"<u{record_size}")
    return np.dtype(f"V{record_size}")


def _to_bytes(value, dtype: np.dtype) -> bytes:
    return np.array([value], dtype=dtype).tobytes()


class _Tally:
    """Exact counts and first indices of distinct records, merged in batches to bound the overhead."""

    def __init__(self, dtype):
        self.dtype = dtype
        self.parts: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self.pending = 0

    def add(self, values: np.ndarray, indices: np.ndarray) -> None:
        uniq, first, counts = np.unique(values, return_index=True, return_counts=True)
        self.parts.append((uniq, indices[first], counts.astype(np.int64)))
        self.pending += len(uniq)
        if self.pending >= _MERGE_AT and len(self.parts) > 1:
            self.parts = [self.merged()]
            self.pending = len(self.parts[0][0])

    @property
    def size(self) -> int:
        """An upper bound on the distinct records held (exact right after a merge)."""
        return self.pending

    def merged(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.parts:
            return np.empty(0, self.dtype), np.empty(0, np.int64), np.empty(0, np.int64)
        if len(self.parts) == 1:
            return self.parts[0]
        values = np.concatenate([p[0] for p in self.parts])
        firsts = np.concatenate([p[1] for p in self.parts])
        counts = np.concatenate([p[2] for p in self.parts])
        uniq, inverse = np.unique(values, return_inverse=True)
        inverse = inverse.reshape(-1)
        total = np.bincount(inverse, weights=counts, minlength=len(uniq)).astype(np.int64)
        first = np.full(len(uniq), np.iinfo(np.int64).max, dtype=np.int64)
        np.minimum.at(first, inverse, firsts)
        return uniq, first, total


def _iter_records(dump: Dump, region: Region, dtype: np.dtype, first: int = 0, stop: int | None = None, *,
                  prefetch: bool = True):
    """Yield (first record index, records array) over the region's whole records [first, stop), chunk by chunk."""
    rs = region.record_size
    chunk = _CHUNK_RECORDS * rs
    stop = region.records if stop is None else stop
    for pos, view in dump.iter_chunks(region.start + first * rs, region.start + stop * rs, chunk, prefetch=prefetch):
        yield (pos - region.start) // rs, np.frombuffer(view, dtype=dtype)


def _first_absent(where: np.ndarray, size: int) -> int | None:
    """The smallest index in [0, size) that `where` (sorted, distinct) does not hold."""
    if len(where) >= size:
        return None
    gaps = np.flatnonzero(where != np.arange(len(where)))
    return int(gaps[0]) if len(gaps) else len(where)


@dataclass
class _Scan:
    """What one pass over a range of records found: the guess's count and first index, the departing records'
    tally (None when they are too many to hold), their count, first index and the first `cap` of them."""

    tally: "_Tally | None"
    guess_count: int = 0
    guess_first: int | None = None
    departures: list = field(default_factory=list)
    departures_total: int = 0
    first_departure: int | None = None

    def then(self, later: "_Scan", cap: int | None) -> "_Scan":
        """This scan followed by the scan of the records after it."""
        tally = None
        if self.tally is not None and later.tally is not None:
            tally = self.tally
            tally.parts.extend(later.tally.parts)
            tally.pending += later.tally.pending
        room = len(later.departures) if cap is None else max(0, cap - len(self.departures))
        return _Scan(tally, self.guess_count + later.guess_count,
                     self.guess_first if self.guess_first is not None else later.guess_first,
                     self.departures + later.departures[:room], self.departures_total + later.departures_total,
                     self.first_departure if self.first_departure is not None else later.first_departure)


def _scan(dump: Dump, region: Region, dtype, guess, first: int, stop: int, *, nonuniform: bool, cap, budget: int,
          progress=None, prefetch: bool = True) -> _Scan:
    """Count the records of [first, stop) equal to `guess` and tally the others (see analyse_anchors)."""
    rs = region.record_size
    out = _Scan(_Tally(dtype))
    for base, records in _iter_records(dump, region, dtype, first, stop, prefetch=prefetch):
        if progress is not None:
            progress(len(records) * rs)
        where = np.flatnonzero(records != guess)
        out.guess_count += len(records) - len(where)
        if out.guess_first is None:
            absent = _first_absent(where, len(records))
            out.guess_first = None if absent is None else base + absent
        if len(where):
            if out.tally is not None:
                out.tally.add(records[where], where + base)
                # Too many distinct records to hold (or, already in the first chunk, a buffer with no dominant
                # record that will not fit): count them in hash partitions instead.
                if out.tally.size > budget or (base == 0 and region.records > budget
                                               and out.tally.size > len(records) // 2):
                    out.tally = None
            out.departures_total += len(where)
            if out.first_departure is None:
                out.first_departure = base + int(where[0])
            if nonuniform:
                _collect(out.departures, cap, where, base, records, region, dtype)
    return out


def _scan_all(dump: Dump, region: Region, dtype, guess, *, nonuniform: bool, cap, progress=None) -> _Scan:
    """_scan over the whole region; a large one in two halves on the two cores (forensics.core.parallel), merged in
    order, so the result is the one pass's."""
    tick = shared_progress(progress, dump.size, region.start)

    def scan(first, stop, budget, prefetch=False):
        return _scan(dump, region, dtype, guess, first, stop, nonuniform=nonuniform, cap=cap, budget=budget,
                     progress=tick, prefetch=prefetch)

    if region.records < _PARALLEL_RECORDS or not two_cores():
        return scan(0, region.records, _BUDGET, prefetch=True)
    half = region.records // 2
    first, second = both(lambda: scan(0, half, _BUDGET // 2), lambda: scan(half, region.records, _BUDGET // 2),
                         name="forensics-anchors")
    return first.then(second, cap)


def _collect(departures: list, cap: int | None, where: np.ndarray, base: int, records: np.ndarray,
             region: Region, dtype) -> None:
    """Append the departing records at `where` (chunk positions) until `cap` records are listed."""
    room = len(where) if cap is None else max(0, cap - len(departures))
    for i in where[:room]:
        i = int(i)
        departures.append(NonuniformRecord(base + i, region.start + (base + i) * region.record_size,
                                           _to_bytes(records[i], dtype)))


@dataclass
class _Ranking:
    """The most frequent distinct records (ties: first to occur), how many there are, and lane presence."""

    head: list                 # RecordCount, most frequent first
    distinct: int
    max_count: int
    at_max: int                # distinct records whose count is max_count
    lane_seen: np.ndarray      # [record_size, 256] bool: byte values seen in each lane

    @classmethod
    def of(cls, values: np.ndarray, firsts: np.ndarray, totals: np.ndarray, keep: int, rs: int, dtype):
        # Most frequent first, ties by first occurrence: one int64 key, and only the `keep` best are sorted.
        top_count = int(totals.max()) if len(totals) else 0
        key = (top_count - totals) * (int(firsts.max()) + 1 if len(firsts) else 1) + firsts
        best = np.argpartition(key, keep - 1)[:keep] if len(key) > keep else np.arange(len(key))
        order = best[np.argsort(key[best], kind="stable")]
        head = [RecordCount(_to_bytes(values[i], dtype), int(totals[i]), int(firsts[i])) for i in order]
        table = np.ascontiguousarray(values).view(np.uint8).reshape(-1, rs)
        seen = np.zeros((rs, 256), dtype=bool)
        for lane in range(rs):
            seen[lane, table[:, lane]] = True
        return cls(head, len(values), top_count, int(np.count_nonzero(totals == top_count)), seen)

    def merge(self, other: "_Ranking", keep: int) -> "_Ranking":
        head = sorted(self.head + other.head, key=lambda r: (-r.count, r.first_index))[:keep]
        top_count = max(self.max_count, other.max_count)
        at_max = (self.at_max if self.max_count == top_count else 0) + \
                 (other.at_max if other.max_count == top_count else 0)
        return _Ranking(head, self.distinct + other.distinct, top_count, at_max, self.lane_seen | other.lane_seen)


def _hash(records: np.ndarray, rs: int) -> np.ndarray:
    """A well-spread uint64 per record (multiplicative hashing of the record's bytes), for partitioning."""
    if records.dtype.kind == "u":
        return records.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15) >> np.uint64(17)
    lanes = records.view(np.uint8).reshape(-1, rs)
    h = np.zeros(len(records), dtype=np.uint64)
    for lane in range(rs):
        h = (h ^ lanes[:, lane].astype(np.uint64)) * np.uint64(0x100000001B3)
    return h


def _partitioned_ranking(dump: Dump, region: Region, dtype, keep: int) -> _Ranking:
    """Exact counts of a buffer with too many distinct records to hold at once: records are split by hash
    into partitions small enough to tally, one pass over the data per partition."""
    rs = region.record_size
    parts = -(-region.records // _BUDGET)
    ranking = None
    for part in range(parts):
        # Gather the partition's records (about _BUDGET of them), then count them with a single sort.
        chosen, where_all = [], []
        for base, records in _iter_records(dump, region, dtype):
            where = np.flatnonzero(_hash(records, rs) % np.uint64(parts) == part)
            chosen.append(records[where])
            where_all.append(where + base)
        values = np.concatenate(chosen)
        if not len(values):
            continue
        uniq, first, counts = np.unique(values, return_index=True, return_counts=True)
        found = _Ranking.of(uniq, np.concatenate(where_all)[first], counts.astype(np.int64), keep, rs, dtype)
        ranking = found if ranking is None else ranking.merge(found, keep)
    return ranking


def analyse_anchors(dump: Dump, layout: RecordLayout, *, nonuniform: bool = False, top: int = DEFAULT_TOP,
                    window: int = DEFAULT_WINDOW, limit: int | None = DEFAULT_LIMIT, progress=None) -> AnchorsResult:
    """Find the exact mode record (ties: the one that occurs first) and, if asked, every record that departs."""
    region = layout.region(dump.size, dump.path)
    rs = layout.record_size
    dtype = _record_dtype(rs)
    if region.records == 0:
        from forensics.core.errors import InputError

        raise InputError(f"no whole {rs}-byte record in {dump.size - region.start} bytes", dump.path)

    # Guess the dominant record from the first chunk's mode, then count exactly around it.
    first_index, first_chunk = next(_iter_records(dump, region, dtype))
    sample = first_chunk[: 1 << 16]
    uniq, first, counts = np.unique(sample, return_index=True, return_counts=True)
    best = np.lexsort((first, -counts))[0]
    guess = uniq[best]

    cap = None if limit is None else limit
    scan = _scan_all(dump, region, dtype, guess, nonuniform=nonuniform, cap=cap, progress=progress)
    tally, guess_count, guess_first = scan.tally, scan.guess_count, scan.guess_first
    departures, departures_total, first_departure = scan.departures, scan.departures_total, scan.first_departure

    keep = max(top, TIED_SHOWN + 1)
    if tally is not None:
        values, firsts, totals = tally.merged()
        ranking = _Ranking.of(np.concatenate([values, np.array([guess], dtype=dtype)]),
                              np.concatenate([firsts, [guess_first]]), np.concatenate([totals, [guess_count]]),
                              keep, rs, dtype)
    else:
        ranking = _partitioned_ranking(dump, region, dtype, keep)
    dominant = ranking.head[0]
    tied = tuple(r for r in ranking.head[1:] if r.count == dominant.count)[:TIED_SHOWN]

    if dominant.record != _to_bytes(guess, dtype):
        # The guess was wrong (the first chunk was not typical): measure departures from the true mode.
        mode = np.frombuffer(dominant.record, dtype=dtype)[0]
        departures, departures_total, first_departure = [], 0, None
        for base, records in _iter_records(dump, region, dtype):
            where = np.flatnonzero(records != mode)
            if not len(where):
                continue
            departures_total += len(where)
            if first_departure is None:
                first_departure = base + int(where[0])
            if nonuniform:
                _collect(departures, cap, where, base, records, region, dtype)

    # Per-lane summary from the byte values seen in each lane of the distinct records (exact).
    lanes = []
    for lane in range(rs):
        seen = np.flatnonzero(ranking.lane_seen[lane])
        lanes.append(LaneSummary(lane, layout.field_names[lane], int(seen[0]), int(seen[-1]), len(seen),
                                 lane in layout.pad_lanes))

    scores = ()
    if dominant.count * 2 <= region.records and rs > 1:
        scores = top_scores(dump, layout, region, top)
    return AnchorsResult(
        top_scores=scores,
        path=dump.path, size=dump.size, layout=layout, region=region, dominant=dominant, tied=tied,
        tied_total=ranking.at_max - 1, distinct=ranking.distinct, top=tuple(ranking.head[:top]),
        lanes=tuple(lanes),
        nonuniform=tuple(departures) if nonuniform else None,
        nonuniform_total=departures_total,
        nonuniform_truncated=nonuniform and departures_total > len(departures),
        first_nonuniform_offset=None if first_departure is None else region.start + first_departure * rs,
        window=window, window_records=min(region.records, window // rs),
    )


def top_scores(dump: Dump, layout: RecordLayout, region: Region, count: int) -> tuple[TopScore, ...]:
    """The `count` anchors with the highest value in a non-background lane (forensics.core.layout.value_lanes),
    ties by anchor index; one streamed pass, at most `count` candidates kept between chunks."""
    from forensics.core.layout import value_lanes

    lanes = np.array(value_lanes(layout)[0], dtype=np.int64)
    rs = region.record_size
    best_q = np.empty(0, np.int64)
    best_i = np.empty(0, np.int64)
    best_l = np.empty(0, np.int64)
    for base, records in _iter_records(dump, region, np.dtype(np.uint8)):
        table = records.reshape(-1, rs)[:, lanes]
        arg = np.argmax(table, axis=1)
        q = table[np.arange(len(table)), arg].astype(np.int64)
        best_q = np.concatenate([best_q, q])
        best_i = np.concatenate([best_i, np.arange(base, base + len(table), dtype=np.int64)])
        best_l = np.concatenate([best_l, lanes[arg]])
        if len(best_q) > count:
            order = np.lexsort((best_i, -best_q))[:count]
            best_q, best_i, best_l = best_q[order], best_i[order], best_l[order]
    order = np.lexsort((best_i, -best_q))[:count]
    names = layout.field_names
    return tuple(TopScore(int(best_i[k]), int(best_l[k]), names[int(best_l[k])], int(best_q[k]),
                          layout.dequantize(int(best_q[k])) if layout.quantized else None) for k in order)
