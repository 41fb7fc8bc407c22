"""The one paired pass over both dumps: CRCs, the differing bytes, histograms, lane tallies and sentinel runs,
in reused fixed-size buffers (memory bounded for GiB dumps)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from forensics.compare.blocks import stream_pair
from forensics.buffer.coverage import MaskRuns
from forensics.io.dump import Dump, DumpReader
from forensics.core.layout import RecordLayout
from forensics.compare.stats import element_dtype
from forensics.core.tolerance import lsb_delta
from forensics.diagnose.region import PAGE

DEFAULT_CHUNK = 2 << 20       # bytes per paired read; three reused buffers of this size per scan
DEFAULT_MIN_RUN = 16          # a sentinel run shorter than this is taken as data that happens to match
LANE_SAMPLE = 8192            # records per chunk that feed the lane-equality matrix ...
LANE_CAP = 1 << 16            # ... up to this many records in all
MAX_LANE_RECORD = 8           # lane permutations are searched exhaustively up to this record size
_HIST_SLICE = 1 << 16
HIST_WHOLE = 8 << 20          # the value histograms count every byte of the first chunks with differences up to
                              # this many bytes, then one slice of each later one (shares, not counts, are read)

# Prefill patterns drivers and allocators use (MSVC debug heap 0xCD, HeapAlloc 0xBAADF00D; both byte orders of
# the 32-bit words, since a driver writes them as words on a little-endian host).
SENTINELS = (
    ("0xCC", b"\xcc"), ("0xAA", b"\xaa"), ("0x00", b"\x00"), ("0xFF", b"\xff"), ("0xCD", b"\xcd"),
    ("DEADBEEF", bytes.fromhex("efbeadde")), ("DEADBEEF (big endian)", bytes.fromhex("deadbeef")),
    ("BAADF00D", bytes.fromhex("0df0adba")), ("BAADF00D (big endian)", bytes.fromhex("baadf00d")),
)


class Readers:
    """Data ranges of several dumps, each read into its own reused buffer (through dump.DumpReader, the one
    reader that turns the system's errors into an InputError naming the file)."""

    def __init__(self, dumps, chunk: int):
        self.readers = []
        try:
            for d in dumps:
                self.readers.append(DumpReader(d, use_map=False))
        except BaseException:
            self.close()
            raise
        self.bufs = [bytearray(chunk) for _ in self.readers]

    def read(self, i: int, lo: int, hi: int) -> memoryview:
        if hi - lo > len(self.bufs[i]):
            self.bufs[i] = bytearray(hi - lo)
        return self.readers[i].read_exact(lo, memoryview(self.bufs[i])[: hi - lo])

    def close(self):
        for reader in self.readers:
            reader.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def _nonzero_offsets(x: np.ndarray, nd: int) -> np.ndarray:
    """Sorted offsets of the nonzero bytes of `x` (nd of them): found word by word when they are sparse."""
    n = x.size
    if nd * 8 >= n or n % 8:
        return np.flatnonzero(x)
    words = np.flatnonzero(x.view(np.uint64) != 0)  # (a bool mask: nonzero is faster on bools than on words)
    idx = np.flatnonzero(x.reshape(-1, 8)[words] != 0)
    return words[idx >> 3] * 8 + (idx & 7)


def _pattern_mask(b: np.ndarray, pat: bytes, pos: int, out: np.ndarray) -> np.ndarray:
    """out[i] = (b[i] == the pattern byte due at absolute offset pos + i): patterns are aligned to offset 0."""
    period = len(pat)
    for j in range(period):
        np.equal(b[j::period], pat[(pos + j) % period], out=out[j::period])
    return out


@dataclass
class Scan:
    """Tallies of the paired pass (mutable while scanning; read by the heuristics)."""

    crc_a: int = 0
    crc_b: int = 0
    bytes_differing: int = 0
    first: int | None = None
    last: int | None = None
    records: int = 0
    records_differing: int = 0
    samples: list = field(default_factory=list)           # differing offsets spread over the chunks
    hist_a: np.ndarray | None = None                     # byte values of chunks with differences (all of the
    hist_b: np.ndarray | None = None                     # first HIST_WHOLE bytes, then a slice of each chunk)
    diff_hist_a: np.ndarray | None = None                # byte values at the differing bytes (exact): A and B
    diff_hist_b: np.ndarray | None = None                # hold the same bytes iff these are equal
    hist_bytes: int = 0
    lane_diff: np.ndarray | None = None
    lane_eq: np.ndarray | None = None
    lane_sampled: int = 0
    runs: dict = field(default_factory=dict)              # sentinel name -> forensics.buffer.coverage.MaskRuns
    max_delta: int = 0                                   # largest |A - B| of one byte (same-size pairs)
    bytes_off_by_one: int = 0
    max_code: int | None = 0                             # largest |A - B| of one data element in LSB of its
                                                         # dtype (None: floats, or bytes not whole elements)


def scan_pair(dump_a: Dump, dump_b: Dump, layout: RecordLayout, sentinels, min_run: int, chunk: int,
              progress=None, dtype: str | None = None) -> Scan:
    """One pass over both dumps; `dtype` is the elements' (None: uint8 bytes), for the tolerance's LSB."""
    common = min(dump_a.size, dump_b.size)
    rs, off = layout.record_size, min(layout.offset, common)
    data = np.ones(rs, dtype=bool)
    data[list(layout.pad_lanes)] = False
    s = Scan(hist_a=np.zeros(256, np.int64), hist_b=np.zeros(256, np.int64), diff_hist_a=np.zeros(256, np.int64),
             diff_hist_b=np.zeros(256, np.int64), lane_diff=np.zeros(rs, np.int64))
    if rs <= MAX_LANE_RECORD:
        s.lane_eq = np.zeros((rs, rs), np.int64)
    s.runs = {name: MaskRuns(min_run) for name, _ in sentinels}
    mask_buf = np.empty(max(chunk, rs), bool)
    words = {name: (pat * (8 // len(pat)) if 8 % len(pat) == 0 else None) for name, pat in sentinels}
    xbuf = np.empty(max(chunk, rs), np.uint8)
    code = element_dtype(dtype or "uint8")
    isz = code.itemsize
    unit = math.lcm(rs, isz, 8)
    step = max(unit, _HIST_SLICE // unit * unit)  # slices of whole records, elements and words
    data_el = data[::isz] if rs % isz == 0 else None  # an element is data when its first byte's lane is
    if code.kind not in "iu":
        s.max_code = None

    def codes(lo: int, a: np.ndarray, b: np.ndarray, n: int, pos: np.ndarray) -> None:
        """The largest element delta in LSB (tolerance.lsb_delta) over the elements holding differing bytes,
        pad lanes left out as diff leaves them."""
        if s.max_code is None:
            return
        if (lo - off) % isz or n % isz:
            s.max_code = None
            return
        el = np.unique(pos // isz) if isz > 1 else pos
        keep = None
        if layout.pad_lanes and lo >= off and data_el is not None:
            keep = data_el[el % data_el.size]
        if isz > 1:
            idx = (el[:, None] * isz + np.arange(isz)[None, :]).reshape(-1)
            ea, eb = a[idx], b[idx]
        else:
            ea, eb = a[el], b[el]
        s.max_code = max(s.max_code, lsb_delta(ea, eb, code, keep))

    def lanes_equal(a: np.ndarray, b: np.ndarray, m: int) -> None:
        """Which lanes of A equal which of B, over the first records of a chunk (a lane swap's evidence)."""
        k = min(m, LANE_SAMPLE)
        ar, br = a[:k * rs].reshape(k, rs), b[:k * rs].reshape(k, rs)
        s.lane_eq += (br[:, :, None] == ar[:, None, :]).sum(axis=0)
        s.lane_sampled += k

    def values(a: np.ndarray, b: np.ndarray, n: int) -> None:
        """The byte values' shares of a chunk with differences: all of the first HIST_WHOLE bytes, then a slice."""
        span = n if s.hist_bytes < HIST_WHOLE else min(n, _HIST_SLICE)
        for i in range(0, span, _HIST_SLICE):  # bincount widens to intp: slices keep that temporary small
            s.hist_a += np.bincount(a[i:min(span, i + _HIST_SLICE)], minlength=256)
            s.hist_b += np.bincount(b[i:min(span, i + _HIST_SLICE)], minlength=256)
        s.hist_bytes += span

    def differing(lo: int, a: np.ndarray, b: np.ndarray, n: int, m: int, pos: np.ndarray) -> None:
        """The tallies of differing bytes at the offsets `pos` of a chunk at `lo` holding `m` whole records:
        their values, deltas, element deltas, lanes and records."""
        s.last = lo + int(pos[-1])
        av, bv = a[pos], b[pos]
        s.diff_hist_a += np.bincount(av, minlength=256)
        s.diff_hist_b += np.bincount(bv, minlength=256)
        d = np.abs(av.astype(np.int16) - bv)
        s.max_delta = max(s.max_delta, int(d.max()))
        s.bytes_off_by_one += int(np.count_nonzero(d == 1))
        codes(lo, a, b, n, pos)
        if m:
            inside = pos[:int(np.searchsorted(pos, m * rs))]
            lane = inside % rs  # chunks from `off` start on a record, slices hold whole records
            s.lane_diff += np.bincount(lane, minlength=rs)
            if data.any():
                rec = inside[data[lane]] // rs
                s.records_differing += int(np.count_nonzero(np.diff(rec))) + 1 if rec.size else 0

    def sentinel_runs(lo: int, b: np.ndarray, x: np.ndarray, n: int, hit: np.ndarray) -> None:
        """Feed each sentinel's runs with where B holds its pattern in a chunk with differences (`hit`: the
        aligned words holding differing bytes)."""
        wpos = None
        for name, pat in sentinels:
            runs = s.runs[name]
            word = words[name]
            if word is not None and lo % 8 == 0 and runs.open_start is None and n >= 32 and min_run >= 15:
                # A run of >= 15 bytes mostly of differing bytes holds a whole aligned 8-byte word of the pattern
                # with a differing byte in it or in a word beside it (or reaches the chunk's end): skip the run
                # search in chunks with neither.
                if wpos is None:
                    wpos = hit.copy()
                    wpos[1:] |= hit[:-1]
                    wpos[:-1] |= hit[1:]
                    w8 = b[: n - n % 8].view(np.uint64)[wpos]
                tail = _pattern_mask(b[n - 16:], pat, lo + n - 16, np.empty(16, bool))
                if not (w8 == np.frombuffer(word, np.uint64)[0]).any() and not tail.any():
                    continue
            mask = _pattern_mask(b, pat, lo, mask_buf[:n])
            runs.feed(lo, mask, x)

    def consume(lo: int, va: memoryview, vb: memoryview, given) -> None:
        """One block of both dumps; `given`: the offsets of its differing bytes (None: too many, find them)."""
        a, b = np.frombuffer(va, np.uint8), np.frombuffer(vb, np.uint8)
        n = len(va)
        x = np.bitwise_xor(a, b, out=xbuf[:n])
        nd = int(np.count_nonzero(x))
        m = (n // rs) if lo >= off else 0  # whole records in this chunk (chunks from `off` are aligned)
        s.records += m
        if m and s.lane_eq is not None and s.lane_sampled < LANE_CAP:
            lanes_equal(a, b, m)
        if nd == 0:
            for runs in s.runs.values():
                runs.breaks(lo)
            return
        s.bytes_differing += nd
        if given is not None:
            given = np.asarray(given, np.int64)
        elif nd * 8 <= n:  # sparse: all offsets at once take at most a chunk's bytes
            given = _nonzero_offsets(x, nd)
        first = later = None
        hit = np.zeros(n // 8, bool)  # the aligned words holding differing bytes (for the sentinel skip)
        values(a, b, n)
        # the differing bytes all at once when sparse, else slice by slice: temporaries stay small when all differ
        whole = given is not None
        for i in range(0, n, n if whole else step):
            j = n if whole else min(n, i + step)
            if whole:
                pos = given
            else:
                xs = x[i:j]
                pos = _nonzero_offsets(xs, int(np.count_nonzero(xs))) + i
            if not pos.size:
                continue
            if first is None:
                first = int(pos[0])
            if later is None and pos[-1] >= n // 2:
                later = int(pos[int(np.searchsorted(pos, n // 2))])
            hit[pos[pos < n - n % 8] // 8] = True
            differing(lo, a, b, n, m, pos)
        if s.first is None:
            s.first = lo + first
        s.samples.append(lo + first)
        if later is not None and later != first:
            s.samples.append(lo + later)
        sentinel_runs(lo, b, x, n, hit)

    # stream_pair reads both files to the end (CRCs of whole files) and hands over their common blocks.
    s.crc_a, s.crc_b = stream_pair(dump_a, dump_b, off, rs, consume, block=max(chunk, rs), progress=progress)
    for runs in s.runs.values():
        runs.finish(common)
    return s


# --- heuristics ----------------------------------------------------------------------------------------------


TAIL_SHARE = 0.9   # a sentinel run holding this share of every differing byte, to B's end or over whole pages, was
                   # never written (a DMA stopped, a page of the scatter-gather list missing)


def _page_span(start: int, end: int) -> tuple[int, int] | None:
    """The whole 4 KiB pages inside [start, end), as one span (None: not one whole page)."""
    lo, hi = -(-start // PAGE) * PAGE, end // PAGE * PAGE
    return (lo, hi) if hi > lo else None


def fills_of(scan, sentinels, end_b: int | None = None) -> list:
    """The sentinel runs that look unwritten: mostly differing bytes; or holding nearly every differing byte of
    the pair (TAIL_SHARE) and either reaching B's end (`end_b`: a DMA that stopped into a zeroed buffer) or
    covering whole pages (a page never written), the run then cut to those pages. Why the second rule: in
    mostly-zero data (a scores output) a zero hole differs from A only where A is not 0, sparse within its run,
    yet nothing but the hole differs; the run reaches into the data beside the hole where A holds 0 too, so a
    page hole is named by the pages it covers."""
    out = []
    pats = dict(sentinels)
    for name, runs in scan.runs.items():
        hits = []
        for s, e, w in runs.runs:
            if 2 * w >= e - s:
                hits.append((s, e, w))
                continue
            if w < DEFAULT_MIN_RUN or e - s < 4 * DEFAULT_MIN_RUN or w < TAIL_SHARE * scan.bytes_differing:
                continue
            if e == end_b:
                hits.append((s, e, w))
            elif (pages := _page_span(s, e)) is not None:
                hits.append((*pages, w))
        if hits:
            out.append((name, pats[name], hits))
    return out


def files_equal(x: Dump, y: Dump, chunk: int) -> bool:
    if x.size != y.size:
        return False
    with Readers([x, y], chunk) as rd:
        for lo in range(0, x.size, chunk):
            hi = min(x.size, lo + chunk)
            if rd.read(0, lo, hi) != rd.read(1, lo, hi):
                return False
    return True
