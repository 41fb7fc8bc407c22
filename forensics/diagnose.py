"""Name the bring-up bug behind two differing dumps, or say plainly that no known pattern explains them.

One engine of hypotheses: every bug kind is a generator (forensics.simulate) that predicts B from A and the
layout (the model's tensor shape and Edge TPU layer map when known, else the record size and searches over
sizes, pad lanes and sampled shift windows). Each candidate is scored by how many of the differing bytes its
prediction reproduces (`explains`) and how many equal bytes it would have changed; the most explaining, most
specific candidate wins, and further candidates join while they explain what is left (shift + fill).
The verdict follows from the share explained: IDENTICAL, WITHIN TOLERANCE (exit 0), EXPLAINED, PARTLY
EXPLAINED, UNEXPLAINED (exit 1, with where the differences are and what they look like). A differing pair
never exits 0 without a tolerance.

Everything streams: one paired pass over both dumps in reused fixed-size buffers collects the CRCs, the
differing bytes, histograms and sentinel runs; candidates are then scored on the whole pair when it is at
most EXACT_LIMIT bytes, else on SAMPLE_BLOCKS blocks spread over it and over its differing chunks (the
fractions are then estimates and `exact` is false). Memory stays bounded for GiB dumps.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import os
from dataclasses import dataclass, field

import numpy as np

from forensics.blocks import stream_pair
from forensics.crc import format_crc
from forensics.dump import Dump, DumpReader, open_dump
from forensics.errors import InputError
from forensics.layout import RecordLayout, layout_from
from forensics.simulate import (Bits, CacheLines, Fill, LaneSwap, Oversize, Pages, Shift, Signedness, Stale, Strided,
                                Truncation, ValueMap, compress_lanes)

KINDS = ("oversize", "truncation", "stride", "pitch", "page", "shift", "lane_swap", "signedness", "bits",
         "saturation", "requantize", "cacheline", "stale", "fill", "relayout", "head_window")
VERDICTS = ("IDENTICAL", "WITHIN TOLERANCE", "EXPLAINED", "PARTLY EXPLAINED", "UNEXPLAINED")
EXIT_CODES = {"IDENTICAL": 0, "WITHIN TOLERANCE": 0, "EXPLAINED": 1, "PARTLY EXPLAINED": 1, "UNEXPLAINED": 1}

DEFAULT_CHUNK = 2 << 20       # bytes per paired read; three reused buffers of this size per scan
DEFAULT_MIN_RUN = 16          # a sentinel run shorter than this is taken as data that happens to match
DEFAULT_MAX_SHIFT = 64 << 10  # how far (bytes) shift detection searches either way around each window ...
WHOLE_SHIFT_SEARCH = 1 << 20  # ... unless told: buffers up to this size are searched whole (a block copied
                              # half a tensor away, a DMA chunk repeated), ~30 ms of bytes.find
DEFAULT_WINDOW = 256          # the story's trap: the first 256 bytes shown by a hexdump
SHIFT_WINDOW = 64             # bytes of B searched for in A
SHIFT_SAMPLES = 16            # windows sampled across the differing chunks
LANE_SAMPLE = 8192            # records per chunk that feed the lane-equality matrix
MAX_LANE_RECORD = 8           # lane permutations are searched exhaustively up to this record size
_HIST_SLICE = 1 << 16
EXACT_LIMIT = 2 << 20         # pairs up to this size are scored on every byte
SAMPLE_BLOCKS = 24            # larger pairs: this many blocks ...
SAMPLE_BLOCK = 24 << 10       # ... of this size
EXPLAINED_SHARE = 0.99        # EXPLAINED when the findings account for this share of the differing bytes
MIN_SHARE = 0.05              # a candidate must explain this share of the differing bytes (or of what is left)
MAX_FALSE = 0.05              # ... and change at most this many equal bytes per byte it explains
MAX_WRONG = 0.1              # oversize / stride / pitch: at most this share of the bytes they place may be wrong
MAX_STRIDE_Z = 4096
RECORD_SET_LIMIT = 16 << 20   # relayout: compare the record multisets too when a dump is at most this big
STRIDE_SLACK = 64             # bytes after the last record a layout may leave (size_bytes 176,368 = 1,917 x 92 + 4)
MAX_CANDIDATES = 400

# Prefill patterns drivers and allocators use (MSVC debug heap 0xCD, HeapAlloc 0xBAADF00D; both byte orders of
# the 32-bit words, since a driver writes them as words on a little-endian host).
SENTINELS = (
    ("0xCC", b"\xcc"), ("0xAA", b"\xaa"), ("0x00", b"\x00"), ("0xFF", b"\xff"), ("0xCD", b"\xcd"),
    ("DEADBEEF", bytes.fromhex("efbeadde")), ("DEADBEEF (big endian)", bytes.fromhex("deadbeef")),
    ("BAADF00D", bytes.fromhex("0df0adba")), ("BAADF00D (big endian)", bytes.fromhex("baadf00d")),
)

_DISPLAY = ("stride", "pitch", "oversize", "page", "shift", "signedness", "bits", "saturation", "requantize",
            "lane_swap", "relayout", "cacheline", "fill", "truncation", "stale", "head_window")
# Most specific first: when two candidates explain the same bytes, the earlier kind names them.
_RANK = {k: i for i, k in enumerate(KINDS)}
# Kinds that explain the same bytes in different ways: the one that changes fewer equal bytes wins (a bit stuck
# at 1 leaves bytes that had it set alone, a flipped sign bit would change them), then the rank.
_RANK_GROUP = {"bits": _RANK["signedness"], "saturation": _RANK["signedness"], "requantize": _RANK["signedness"]}


@dataclass(frozen=True)
class Finding:
    """One named bug pattern: `kind` (one of KINDS), the evidence sentence, what to do, structured details;
    `explains` is the share of the differing bytes its simulation reproduces."""

    kind: str
    evidence: str
    hint: str = ""
    details: dict = field(default_factory=dict, compare=False, hash=False)
    explains: float = 0.0

    def __getitem__(self, key):
        return self.to_dict()[key]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "evidence": self.evidence, "hint": self.hint, "explains": self.explains,
                **self.details}


@dataclass(frozen=True)
class DiagnoseResult:
    path_a: str
    path_b: str
    size_a: int
    size_b: int
    crc32_a: int
    crc32_b: int
    record_size: int
    records_compared: int
    records_differing: int
    bytes_differing: int
    first_differing_offset: int | None
    findings: tuple[Finding, ...]
    previous: str | None = None
    verdict: str = "IDENTICAL"
    explained_fraction: float = 1.0
    residual: dict | None = None
    characterization: dict | None = None
    tolerance: int | None = None
    exact: bool = True
    hint: str = ""
    primary: str | None = None  # the kind that explains the most (the engine's first choice)

    @property
    def identical(self) -> bool:
        return self.size_a == self.size_b and self.bytes_differing == 0

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.kind for f in self.findings)

    @property
    def clean(self) -> bool:
        """No named bug pattern (identical, within tolerance, or unexplained: see `verdict`)."""
        return not self.findings

    def __bool__(self) -> bool:
        return self.exit_code == 0

    def finding(self, kind: str) -> Finding | None:
        return next((f for f in self.findings if f.kind == kind), None)

    def to_dict(self) -> dict:
        return {
            "verdict": self.verdict, "exit_code": self.exit_code, "primary": self.primary,
            "explained_fraction": self.explained_fraction, "exact": self.exact,
            "path_a": self.path_a, "path_b": self.path_b, "previous": self.previous,
            "size_a": self.size_a, "size_b": self.size_b,
            "crc32_a": format_crc(self.crc32_a), "crc32_b": format_crc(self.crc32_b),
            "identical": self.identical, "record_size": self.record_size, "tolerance": self.tolerance,
            "records_compared": self.records_compared, "records_differing": self.records_differing,
            "bytes_differing": self.bytes_differing, "first_differing_offset": self.first_differing_offset,
            "findings": [f.to_dict() for f in self.findings],
            "residual": self.residual, "characterization": self.characterization, "hint": self.hint,
        }


# --- reading -----------------------------------------------------------------------------------------------

class _Readers:
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


class _Runs:
    """Runs of True in a mask fed chunk by chunk, each with the sum of a weight over it (here: bytes where A
    differs from B), keeping those of at least `min_len`."""

    def __init__(self, min_len: int):
        self.min_len = min_len
        self.open_start: int | None = None
        self.open_weight = 0
        self.runs: list[tuple[int, int, int]] = []  # (start, end, weight)

    def _close(self, start: int, end: int, weight: int):
        if end - start >= self.min_len:
            self.runs.append((start, end, weight))

    def breaks(self, pos: int):
        if self.open_start is not None:
            self._close(self.open_start, pos, self.open_weight)
            self.open_start = None

    def feed(self, pos: int, mask: np.ndarray, weight: np.ndarray):
        n = len(mask)
        if n == 0:
            return
        # Run edges from bool temporaries only (a diff over ints would widen to 8 bytes per input byte).
        starts = np.flatnonzero(mask[1:] & ~mask[:-1]) + 1
        ends = np.flatnonzero(mask[:-1] & ~mask[1:]) + 1
        if mask[0]:
            starts = np.concatenate(([0], starts))
        if mask[-1]:
            ends = np.concatenate((ends, [n]))
        if self.open_start is not None and not (len(starts) and starts[0] == 0):
            self.breaks(pos)
        keep = (ends - starts >= self.min_len) | (starts == 0) | (ends == n)
        if not keep.any():
            return
        for s, e in zip(starts[keep].tolist(), ends[keep].tolist()):
            w = int(np.count_nonzero(weight[s:e]))
            start = pos + s
            if s == 0 and self.open_start is not None:
                start, w = self.open_start, w + self.open_weight
                self.open_start = None
            if e == n:
                self.open_start, self.open_weight = start, w
            else:
                self._close(start, pos + e, w)

    def finish(self, end: int):
        self.breaks(end)


def _pattern_mask(b: np.ndarray, pat: bytes, pos: int, out: np.ndarray) -> np.ndarray:
    """out[i] = (b[i] == the pattern byte due at absolute offset pos + i): patterns are aligned to offset 0."""
    period = len(pat)
    for j in range(period):
        np.equal(b[j::period], pat[(pos + j) % period], out=out[j::period])
    return out


@dataclass
class _Scan:
    """Tallies of the paired pass (mutable while scanning; read by the heuristics)."""

    crc_a: int = 0
    crc_b: int = 0
    bytes_differing: int = 0
    first: int | None = None
    last: int | None = None
    records: int = 0
    records_differing: int = 0
    samples: list = field(default_factory=list)           # differing offsets spread over the chunks
    hist_a: np.ndarray | None = None
    hist_b: np.ndarray | None = None
    lane_diff: np.ndarray | None = None
    lane_x80: np.ndarray | None = None
    lane_eq: np.ndarray | None = None
    lane_sampled: int = 0
    runs: dict = field(default_factory=dict)              # sentinel name -> _Runs
    window_equal: bool = False
    max_delta: int = 0                                   # largest |A - B| of one byte (same-size pairs)
    bytes_off_by_one: int = 0


def _scan(dump_a: Dump, dump_b: Dump, layout: RecordLayout, sentinels, min_run: int, chunk: int,
          progress=None) -> _Scan:
    common = min(dump_a.size, dump_b.size)
    rs, off = layout.record_size, min(layout.offset, common)
    data = np.ones(rs, dtype=bool)
    data[list(layout.pad_lanes)] = False
    s = _Scan(hist_a=np.zeros(256, np.int64), hist_b=np.zeros(256, np.int64),
              lane_diff=np.zeros(rs, np.int64), lane_x80=np.zeros(rs, np.int64))
    if rs <= MAX_LANE_RECORD:
        s.lane_eq = np.zeros((rs, rs), np.int64)
    s.runs = {name: _Runs(min_run) for name, _ in sentinels}
    mask_buf = np.empty(max(chunk, rs), bool)
    words = {name: (pat * (8 // len(pat)) if 8 % len(pat) == 0 else None) for name, pat in sentinels}
    xbuf = np.empty(max(chunk, rs), np.uint8)

    def consume(lo: int, va: memoryview, vb: memoryview, _positions) -> None:
        a, b = np.frombuffer(va, np.uint8), np.frombuffer(vb, np.uint8)
        n = len(va)
        x = np.bitwise_xor(a, b, out=xbuf[:n])
        nd = int(np.count_nonzero(x))
        m = (n // rs) if lo >= off else 0  # whole records in this chunk (chunks from `off` are aligned)
        s.records += m
        if m and s.lane_eq is not None:
            k = min(m, LANE_SAMPLE)
            ar, br = a[:k * rs].reshape(k, rs), b[:k * rs].reshape(k, rs)
            s.lane_eq += (br[:, :, None] == ar[:, None, :]).sum(axis=0)
            s.lane_sampled += k
        if nd == 0:
            for runs in s.runs.values():
                runs.breaks(lo)
            return
        s.bytes_differing += nd
        nzx = x != 0
        first = int(np.argmax(nzx))
        last = n - 1 - int(np.argmax(nzx[::-1]))
        if s.first is None:
            s.first = lo + first
        s.last = lo + last
        mid = n // 2
        later = int(np.argmax(nzx[mid:])) + mid if nzx[mid:].any() else first
        s.samples.append(lo + first)
        if later != first:
            s.samples.append(lo + later)
        for i in range(0, n, _HIST_SLICE):  # bincount widens to intp: slices keep that temporary small
            s.hist_a += np.bincount(a[i:i + _HIST_SLICE], minlength=256)
            s.hist_b += np.bincount(b[i:i + _HIST_SLICE], minlength=256)
            d = np.abs(a[i:i + _HIST_SLICE].astype(np.int16) - b[i:i + _HIST_SLICE])
            s.max_delta = max(s.max_delta, int(d.max()))
            s.bytes_off_by_one += int(np.count_nonzero(d == 1))
        if m:
            xr = x[:m * rs].reshape(m, rs)
            s.lane_diff += np.count_nonzero(xr, axis=0)
            s.lane_x80 += np.count_nonzero(xr == 0x80, axis=0)
            s.records_differing += int(np.count_nonzero(xr[:, data].any(axis=1))) if data.any() else 0
        for name, pat in sentinels:
            runs = s.runs[name]
            word = words[name]
            if word is not None and lo % 8 == 0 and runs.open_start is None and n >= 32 and min_run >= 15:
                # A run of >= 15 bytes holds a whole aligned 8-byte word of the pattern (or reaches the
                # chunk's end): skip the run search in chunks with neither.
                w8 = b[: n - n % 8].view(np.uint64)
                tail = _pattern_mask(b[n - 16:], pat, lo + n - 16, np.empty(16, bool))
                if not (w8 == np.frombuffer(word, np.uint64)[0]).any() and not tail.any():
                    continue
            mask = _pattern_mask(b, pat, lo, mask_buf[:n])
            runs.feed(lo, mask, nzx)

    # stream_pair reads both files to the end (CRCs of whole files) and hands over their common blocks.
    s.crc_a, s.crc_b = stream_pair(dump_a, dump_b, off, rs, consume, block=max(chunk, rs), progress=progress)
    for runs in s.runs.values():
        runs.finish(common)
    return s


# --- heuristics ----------------------------------------------------------------------------------------------


# --- the engine: candidates from A, the layout and the scan; scored on the differing bytes ------------------

def _n(value) -> str:
    return f"{int(value):,}"


def _rec(layout: RecordLayout, offset: int) -> int:
    return max(0, offset - layout.offset) // layout.record_size


class _DumpSource:
    """A's bytes for the generators: reads of any range through one DumpReader."""

    def __init__(self, dump: Dump):
        self.dump, self.size = dump, dump.size
        self.reader = DumpReader(dump, use_map=False)

    def read(self, lo: int, hi: int) -> np.ndarray:
        lo, hi = max(0, lo), min(hi, self.size)
        if hi <= lo:
            return np.zeros(0, np.uint8)
        buf = bytearray(hi - lo)
        self.reader.read_exact(lo, memoryview(buf))
        return np.frombuffer(buf, np.uint8)

    def close(self):
        self.reader.close()


class _Region:
    """The scored positions of B (the whole pair, or sampled blocks): A's and B's bytes there and where they
    differ (positions past A's end differ)."""

    def __init__(self, src_a, src_b, blocks, exact: bool = True):
        self.blocks, self.exact = blocks, exact
        self.starts = np.cumsum([0] + [hi - lo for lo, hi in blocks])
        total = int(self.starts[-1])
        self.a = np.zeros(total, np.uint8)
        self.b = np.zeros(total, np.uint8)
        self.in_a = np.zeros(total, bool)
        for (lo, hi), off in zip(blocks, self.starts[:-1].tolist()):
            self.b[off:off + hi - lo] = src_b.read(lo, hi)
            got = src_a.read(lo, hi)
            self.a[off:off + len(got)] = got
            self.in_a[off:off + len(got)] = True
        self.diff = (self.a != self.b) | ~self.in_a
        self.lows = np.asarray([lo for lo, _ in blocks], np.int64)

    def at(self, idx, step: int = 1) -> np.ndarray:
        """Absolute offsets in B of region indices `idx` (an int array, or a bool mask over the region: then
        every `step`-th True position)."""
        if np.asarray(idx).dtype == bool:
            parts, phase = [], 0
            for lo, s, e in zip(self.lows.tolist(), self.starts[:-1].tolist(), self.starts[1:].tolist()):
                hit = np.flatnonzero(idx[s:e])
                parts.append(hit[phase::step] + lo)
                phase = (phase - hit.size) % step
            return np.concatenate(parts) if parts else np.zeros(0, np.int64)
        idx = np.asarray(idx, np.int64)
        block = np.searchsorted(self.starts, idx, side="right") - 1
        return self.lows[block] + (idx - self.starts[block])


def _blocks(n_b: int, n_a: int, scan) -> tuple[list, bool]:
    if n_b <= EXACT_LIMIT:
        return [(0, n_b)], True
    starts = [i * (n_b - SAMPLE_BLOCK) // max(1, SAMPLE_BLOCKS // 2 - 1) for i in range(SAMPLE_BLOCKS // 2)]
    diffs = list(scan.samples)
    if len(diffs) > SAMPLE_BLOCKS // 2:
        diffs = [diffs[i * (len(diffs) - 1) // (SAMPLE_BLOCKS // 2 - 1)] for i in range(SAMPLE_BLOCKS // 2)]
    starts += [p - SAMPLE_BLOCK // 4 for p in diffs]
    starts += [p - SAMPLE_BLOCK // 2 for p in (scan.first, scan.last, n_a) if p is not None]
    out = []
    for s in sorted(min(max(0, s), n_b - SAMPLE_BLOCK) for s in starts):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], s + SAMPLE_BLOCK))
        else:
            out.append((s, s + SAMPLE_BLOCK))
    return [(lo, min(hi, n_b)) for lo, hi in out], False


@dataclass
class _Scored:
    bug: object
    packed: np.ndarray        # bits over the region: differing bytes the prediction reproduces
    false: int                # equal bytes the prediction would have changed
    missing: bool             # explains B being shorter than A
    complexity: int = 0
    size: int = 0
    touched: int = 0          # differing bytes where it predicts a value other than A's ...
    right: int = 0            # ... and of those, the ones it predicts right
    slack_packed: np.ndarray | None = None  # the hits it has only because it lets them hold anything

    @property
    def hits(self) -> np.ndarray:
        return np.unpackbits(self.packed, count=self.size).view(bool)

    @property
    def slack_hits(self) -> np.ndarray:
        if self.slack_packed is None:
            return np.zeros(self.size, bool)
        return np.unpackbits(self.slack_packed, count=self.size).view(bool)


def _score(bug, src_a, region: _Region, n_a: int, n_b: int) -> _Scored:
    hits = np.zeros(region.diff.size, bool)
    loose = np.zeros(region.diff.size, bool)
    false = np.zeros(region.diff.size, bool)
    predicted = wrong = touched = right = 0
    for (lo, hi), off in zip(region.blocks, region.starts[:-1].tolist()):
        pred, defined, slack = bug.predict(src_a, lo, hi)
        b = region.b[off:off + hi - lo]
        same = defined & (pred == b)
        ok = slack | same
        d = region.diff[off:off + hi - lo]
        hits[off:off + hi - lo] = d & ok
        loose[off:off + hi - lo] = d & slack & ~same
        false[off:off + hi - lo] = ~d & ~ok
        predicted += int(np.count_nonzero(defined))
        wrong += int(np.count_nonzero(defined & ~same))
        claim = d & defined & (pred != region.a[off:off + hi - lo])
        touched += int(np.count_nonzero(claim))
        right += int(np.count_nonzero(claim & same))
    if isinstance(bug, (Oversize, Strided)) and wrong > MAX_WRONG * predicted:
        hits[:] = False  # the slack it allows explains nothing unless A's bytes really are where it puts them
    missing = n_b < n_a and bug.size_out(n_a) == n_b
    if missing and isinstance(bug, Strided) and bug.size is not None:  # its own size, not the one it was cut to
        missing = abs(Strided(bug.width, bug.src, bug.dst).size_out(n_a) - n_b) < STRIDE_SLACK
    if isinstance(bug, Stale):
        false[:] = False  # parts of B rewritten this run are no evidence against staleness elsewhere
    if isinstance(bug, (Shift, LaneSwap)) and bug.start is None:
        found = int(np.count_nonzero(hits))
        nf = int(np.count_nonzero(false))
        if found and (nf > MAX_FALSE * found or nf and region.exact):  # it would change equal bytes: a span?
            for f, l, span_hits in _shift_spans(hits, false, loose, region):
                span_false = int(np.count_nonzero(false[f:l + 1]))
                s, e = int(region.at([f])[0]), int(region.at([l])[0]) + 1
                if span_hits and e - s >= SHIFT_WINDOW and span_false <= MAX_FALSE * span_hits:
                    bug = _local(bug, s, e)
                    for bits in (false, hits, loose):  # outside its span the shift claims nothing
                        bits[:f] = False
                        bits[l + 1:] = False
                    break
    return _Scored(bug, np.packbits(hits), int(np.count_nonzero(false)), missing, _complexity(bug), hits.size,
                   touched, right, np.packbits(loose & hits) if loose.any() else None)


TAKEN_SHARE = 0.8  # a shift's vacated bytes go to another candidate that predicts at least this share of them


def _prefer_exact(scored: list, region: _Region) -> list:
    """The candidates, each shift without the differing bytes it vacates (slack: they may hold anything) where
    another candidate predicts most of them byte for byte. Why: when two blocks were written in each other's
    place (tiles or scatter-gather entries out of order), the shift of one would otherwise claim the other block
    as its vacated bytes, and one shift would be named for both. A shift that loses bytes this way keeps the
    span its exact hits cover."""
    strong = [c.hits & ~c.slack_hits for c in scored]
    count = np.zeros(region.diff.size, np.int16)
    for s in strong:
        count += s
    out = []
    for c, s in zip(scored, strong):
        if not isinstance(c.bug, Shift) or c.slack_packed is None:
            out.append(c)
            continue
        slack = c.slack_hits
        taken = slack & ((count - s) > 0)
        if np.count_nonzero(taken) < TAKEN_SHARE * np.count_nonzero(slack):  # chance matches, not a block
            out.append(c)
            continue
        hits = c.hits & ~taken
        bug = c.bug
        if hits.any():
            f, l = _extent(hits)
            bug = Shift(bug.k, int(region.at([f])[0]), int(region.at([l])[0]) + 1)
        out.append(dataclasses.replace(c, bug=bug, packed=np.packbits(hits),
                                       slack_packed=np.packbits(slack & ~taken)))
    return out


SHORTLIST = 12          # candidates scored on the whole region after a pre-score on small windows
_STRUCTURAL = (Fill, Truncation, Oversize, Stale)  # few, from the scan's runs and the sizes: always scored


def _shortlist(cands: list, src_a, src_b, region: _Region, n_a: int, n_b: int) -> list:
    """Pre-score every candidate on a few 2 KiB windows around differing bytes (and spread over B); keep the
    ones that explain something there, most first."""
    if len(cands) <= SHORTLIST // 2:
        return cands
    idx = np.flatnonzero(region.diff)
    if not idx.size:
        return cands
    picks = region.at(idx[np.linspace(0, idx.size - 1, min(16, idx.size)).astype(np.int64)]).tolist()
    picks += [i * max(0, n_b - 2048) // 7 for i in range(8)]
    blocks = []
    for p in sorted(min(max(0, p - 512), max(0, n_b - 2048)) for p in picks):
        if blocks and p <= blocks[-1][1]:
            blocks[-1] = (blocks[-1][0], min(n_b, max(blocks[-1][1], p + 2048)))
        else:
            blocks.append((p, min(n_b, p + 2048)))
    small = _Region(src_a, src_b, blocks)
    ranked, kept = [], [c for c in cands if isinstance(c, _STRUCTURAL)]
    for c in cands:
        if isinstance(c, _STRUCTURAL):
            continue
        sc = _score(c, src_a, small, n_a, n_b)
        hits, d = int(np.count_nonzero(sc.hits)), max(1, int(np.count_nonzero(small.diff)))
        # Explaining the size difference puts a candidate first only if it explains the bytes too: many widths
        # and pitches fit two sizes within the slack, and they must not push out a shift that explains bytes.
        gain = hits + (1 << 30 if sc.missing and hits >= 0.5 * d else 0)
        if gain > 0.02 * d:
            ranked.append((-gain, _RANK.get(c.kind, 99), sc.complexity, len(ranked), c))
    ranked.sort(key=lambda t: t[:4])
    return kept + [t[-1] for t in ranked[:SHORTLIST]]


def _extent(bits: np.ndarray) -> tuple[int, int]:
    """[first, last] indices of the True bits of a mask with at least one."""
    return int(np.argmax(bits)), bits.size - 1 - int(np.argmax(bits[::-1]))


def _local(bug, start: int, end: int):
    """The shift or lane swap limited to B's bytes [start, end) (a lane swap's to whole words)."""
    if isinstance(bug, Shift):
        return Shift(bug.k, start, end)
    p = len(bug.permutation)
    start -= (start - bug.offset) % p
    end += -(end - bug.offset) % p
    return LaneSwap(bug.permutation, bug.offset, start, end)


MIN_EXACT = 0.25  # a local shift's share of hits it predicts exactly (the rest: bytes it vacates)
DENSE_SPAN_MIN = 4096  # the least block (a page, a scatter-gather entry) a shift is named for inside other data


def _shift_spans(hits, false, loose, region: _Region):
    """(first, last, hits inside) of the spans where a shift that fails over the whole buffer may hold, best
    first. An exact region tries the span from the first to the last hit (which must then hold throughout);
    then, as sampled blocks of a large pair always do, the densest span, so that chance hits elsewhere (on data
    of few distinct values, a quarter of the bytes match anywhere) do not stretch it. A span must be mostly
    bytes the shift predicts exactly, not the bytes it vacates (`loose`: they may hold anything)."""
    def dense(f, l):  # the hits inside, when they are (nearly) all the span's differing bytes
        span_hits = int(np.count_nonzero(hits[f:l + 1]))
        exact = span_hits - int(np.count_nonzero(loose[f:l + 1]))
        held = span_hits >= 0.9 * int(np.count_nonzero(region.diff[f:l + 1])) and exact >= MIN_EXACT * span_hits
        return f, l, span_hits if held else 0

    if region.exact:
        yield dense(*_extent(hits))
    f, l = _dense_span(hits, false, region.diff)
    if region.exact and l - f + 1 < DENSE_SPAN_MIN:
        return  # two neighbouring records exchanged is what another inference looks like, not a block moved
    yield dense(f, l)


def _dense_span(hits, false, diff) -> tuple[int, int]:
    """[first, last] region indices of the span where a local shift holds: the interval maximising
    hits - 20 x false changes - 0.05 x other differing bytes (chance hits elsewhere do not stretch it)."""
    w = hits.astype(np.float32)
    w[false] = -1 / MAX_FALSE
    w[diff & ~hits] = -0.05
    c = np.concatenate(([0], np.cumsum(w, dtype=np.float32)))
    low = np.minimum.accumulate(c)
    j = int(np.argmax(c - low))
    i = int(np.flatnonzero(c[:j + 1] == low[j])[-1]) if j else 0
    return i, max(i, j - 1)


def _complexity(bug) -> int:
    if isinstance(bug, Shift):
        return abs(bug.k) + (0 if bug.start is None else 1)
    if isinstance(bug, Signedness):
        return bug.period * 1000 + len(bug.lanes)
    if isinstance(bug, LaneSwap):
        return len(bug.permutation)
    if isinstance(bug, Strided):
        return abs(bug.src - bug.dst)
    if isinstance(bug, Oversize):
        return bug.offset
    if isinstance(bug, Bits):
        return bug.period * 1000 + len(bug.ops())
    if isinstance(bug, Pages):
        return len(bug.moves())
    return 0


# --- candidates -------------------------------------------------------------------------------------------

def _shift_votes(dump_a, dump_b, scan, region, max_shift: int) -> dict:
    """k -> number of sampled windows of B found in A k bytes earlier (B[j] = A[j - k]); the windows start at
    differing bytes spread over the scored region and the scan's chunks."""
    picks = scan.samples
    if len(picks) > SHIFT_SAMPLES:
        picks = [picks[i * (len(picks) - 1) // (SHIFT_SAMPLES - 1)] for i in range(SHIFT_SAMPLES)]
    idx = np.flatnonzero(region.diff)
    if idx.size:
        picks = sorted(set(picks) | set(region.at(idx[np.linspace(0, idx.size - 1, min(SHIFT_SAMPLES, idx.size))
                                                      .astype(np.int64)]).tolist()))
    votes: dict[int, int] = {}
    for p in picks:
        if dump_b.size < SHIFT_WINDOW:
            break
        wlo = min(p, dump_b.size - SHIFT_WINDOW)
        window = dump_b.read(wlo, SHIFT_WINDOW)
        if len(set(window)) < 2:
            continue
        alo = max(0, wlo - max_shift)
        hay = dump_a.read(alo, min(dump_a.size, wlo + max_shift + SHIFT_WINDOW) - alo)
        found, at = 0, hay.find(window)
        while at >= 0 and found < 64:
            k = wlo - (alo + at)
            if k:
                votes[k] = votes.get(k, 0) + 1
            found += 1
            at = hay.find(window, at + 1)
    return votes


def _divisors(n: int) -> list[int]:
    out = set()
    for i in range(1, math.isqrt(n) + 1):
        if n % i == 0:
            out.update((i, n // i))
    return sorted(out)


LANE_ALIGN = (4, 8, 16)  # channel counts are padded to a multiple of 4 lanes (the Edge TPU), 8 or 16 (wider SIMD)


def _ceil(n: int, m: int) -> int:
    return -(-n // m) * m


def _pad_periods(src, limit: int = 1 << 18) -> list[tuple[int, int]]:
    """(period, trailing constant lanes) where every record of that period ends in constant lanes: the
    repeating pad byte of a lane-padded layout."""
    data = src.read(0, min(src.size, limit))
    out = []
    for p in range(4, min(MAX_STRIDE_Z, len(data) // 8) + 1, 4):
        m = len(data) // p
        rec = data[:m * p].reshape(m, p)
        t = 0
        while t < 15 and t < p - 1 and (rec[:, p - 1 - t] == rec[0, p - 1 - t]).all():
            t += 1
        if t and not (rec[:, 0] == rec[0, 0]).all():
            out.append((p, t))
            if len(out) >= 3:
                break
    return out


def _model_rows(view) -> list[int]:
    """Row sizes of the model tensor (bytes in the last 1, 2, ... dims), for pitch."""
    if view is None:
        return []
    shape = [int(d) for d in getattr(view.tensor, "shape", ()) or ()]
    item = int(getattr(view.tensor, "itemsize", 1) or 1)
    rows = []
    for k in range(len(shape) - 1, 0, -1):
        r = int(np.prod(shape[k:])) * item
        if r > 1:
            rows.append(r)
    return rows


def _candidates(dump_a, dump_b, src_a, src_b, layout, scan, region, model_view, previous_src, max_shift,
                fills) -> list:
    n_a, n_b = dump_a.size, dump_b.size
    out = []
    votes = _shift_votes(dump_a, dump_b, scan, region, max_shift)
    ranked = sorted(votes, key=lambda k: (-votes[k], abs(k), k))
    for k in ranked[:6]:
        out.append(Shift(k))
    # Size changes.
    if n_b < n_a:
        out.append(Truncation(n_b))
    if n_b > n_a:
        extra = n_b - n_a
        offsets = {0}
        for probe in (0, n_a // 2):
            w = src_a.read(probe, probe + SHIFT_WINDOW).tobytes()
            if len(w) == SHIFT_WINDOW and len(set(w)) > 1:
                hay = src_b.read(probe, probe + extra + SHIFT_WINDOW).tobytes()
                at = hay.find(w)
                if at >= 0:
                    offsets.add(at)
        out += [Oversize(k, extra) for k in sorted(offsets) if k <= extra]
    # Sentinel runs: a tail run is a truncation, the others fills.
    for name, pat, hits in fills:
        tail = [h for h in hits if h[1] == n_b]
        rest = tuple((s, e) for s, e, _ in hits if e != n_b)
        if tail:
            out.append(Truncation(tail[0][0], pat))
        if rest:
            out.append(Fill(rest, pat))
    # Stride: lane padding wrong in either direction.
    strides = set()
    lmap = _layer_map(model_view)
    if lmap is not None and lmap.z_bytes_padded != lmap.z_bytes:
        strides.add(lmap.z_bytes)
    if layout.pad_lanes:
        data = [l for l in range(layout.record_size) if l not in layout.pad_lanes]
        if data == list(range(len(data))):
            strides.add(len(data))
    pad_periods = set()
    for src in (src_a, src_b):
        for p, t in _pad_periods(src):
            strides.update(p - i for i in range(1, t + 1))
            pad_periods.add(p)
    if n_a != n_b:
        for w in range(1, MAX_STRIDE_Z + 1):
            for p in {_ceil(w, m) for m in LANE_ALIGN} - {w}:
                for sa, sb in ((p, w), (w, p)):
                    r = n_a // sa
                    if r >= 2 and 0 <= n_a - r * sa < STRIDE_SLACK and 0 <= n_b - r * sb < STRIDE_SLACK:
                        strides.add(w)
    for w in sorted(strides):
        for p in sorted({_ceil(w, m) for m in LANE_ALIGN} - {w}):
            out += [Strided(w, p, w, size=n_b), Strided(w, w, p, size=n_b)]
    # Pitch: rows of A at a fixed pitch in B (or the reverse).
    rows = set(_model_rows(model_view))
    if n_a != n_b:
        ks = [abs(k) for k in ranked[:6]]
        d = math.gcd(*ks) if ks else 0
        small, big = min(n_a, n_b), max(n_a, n_b)
        for r in _divisors(small):
            row = small // r
            if r < 2 or row < 8:
                continue
            if row in rows or (d and (big - small) % d == 0 and (big - small) // d in (r, r - 1)):
                rows.add(row)
            for pitch in ((big - row) // (r - 1) if (big - row) % (r - 1) == 0 else 0,
                          big // r if big % r == 0 else 0):
                if pitch > row and pitch - row <= max(4096, row) and (row in rows or pitch % 16 == 0):
                    rows.add(row)
    for row in sorted(rows):
        small = min(n_a, n_b)
        if row >= small or small % row or n_a == n_b:
            continue
        r = small // row
        big = max(n_a, n_b)
        for pitch in {(big - row) // (r - 1) if r > 1 and (big - row) % (r - 1) == 0 else 0,
                      big // r if big % r == 0 else 0}:
            if pitch > row:
                out.append(Strided(row, row, pitch, size=n_b, kind_name="pitch") if n_b > n_a else
                           Strided(row, pitch, row, size=n_b, kind_name="pitch"))
    if n_a == n_b:
        # Byte order of 16/32/64-bit words and 3-byte pixels, whatever the record size.
        for perm in ((1, 0), (3, 2, 1, 0), (7, 6, 5, 4, 3, 2, 1, 0), (2, 3, 0, 1), (2, 1, 0)):
            out.append(LaneSwap(perm))
            if layout.offset % len(perm):
                out.append(LaneSwap(perm, layout.offset))
        best = _best_permutation(scan, layout)
        if best is not None:
            out.append(LaneSwap(best, layout.offset))
        # The lane (class, channel) order of each record reversed, its trailing pad lanes in place.
        for p in sorted({layout.record_size, *pad_periods}):
            if MAX_LANE_RECORD < p <= MAX_STRIDE_Z:
                for t in sorted({0, *(t for q, t in _pad_periods(src_a) if q == p)}):
                    out.append(LaneSwap(tuple(range(p - t - 1, -1, -1)) + tuple(range(p - t, p)), layout.offset))
        sign = _signedness_candidates(region, layout, pad_periods)
        bits = _bits_candidates(region, layout)
        out += sign + bits
        if not sign and not bits:
            out += _value_map_candidates(region, layout)
    out += _page_candidates(src_a, src_b, region, scan)
    out += _cacheline_candidates(region, fills, previous_src)
    if previous_src is not None:
        out.append(Stale(previous_src))
    seen, unique = set(), []
    for c in out[:MAX_CANDIDATES]:
        key = c.spec() if not isinstance(c, Stale) else "stale"
        if key not in seen:
            seen.add(key)
            unique.append(c)
    return unique


def _layer_map(view):
    layer = getattr(view, "layer", None)
    if layer is None:
        return None
    from forensics.tflite.relayout import layer_map

    try:
        return layer_map(layer)
    except InputError:
        return None


def _best_permutation(scan, layout) -> tuple | None:
    rs = layout.record_size
    if scan.lane_eq is None or rs < 2 or not scan.lane_sampled:
        return None
    eq = scan.lane_eq
    best, best_key = None, None
    for perm in itertools.permutations(range(rs)):
        score = int(eq[np.arange(rs), perm].sum())
        moved = sum(1 for i, j in enumerate(perm) if i != j)
        key = (-score, moved, perm)
        if best_key is None or key < best_key:
            best, best_key = perm, key
    return None if best == tuple(range(rs)) else best


def _signedness_candidates(region: _Region, layout, periods=()) -> list:
    d = region.diff
    x80 = d & ((region.a ^ region.b) == 0x80)
    if np.count_nonzero(x80) < 0.5 * max(1, np.count_nonzero(d)):
        return []
    out = [Signedness(1, (0,))]
    for p in sorted({2, 4, layout.record_size, *periods}):
        if p < 2 or p > MAX_STRIDE_Z:
            continue
        lane = (region.at(d) - layout.offset) % p
        flipped = np.bincount(lane[x80[d]], minlength=p)
        total = np.bincount(lane, minlength=p)
        lanes = tuple(int(i) for i in np.flatnonzero(flipped >= 0.5 * np.maximum(total, 1)))
        if lanes and len(lanes) < p:
            out.append(Signedness(p, lanes) if not layout.offset else _OffsetSignedness(p, lanes, layout.offset))
    return out


FIT_SLICES, FIT_SLICE = 8, 16 << 10   # bytes of the region a value fit (bits, value map) looks at
MIN_FIT = 0.99                        # ... and the share of them the fitted map must reproduce


def _fit_sample(region: _Region) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """A's and B's bytes (and B's absolute offsets) of up to FIT_SLICES slices spread over the region's bytes
    that both sides hold: the sample the value fits are made on (the candidates are then scored on all); and
    whether every byte of it is within 1 LSB of A's (rounding, unless a stuck or flipped bit 0 says otherwise)."""
    n = region.diff.size
    if n > FIT_SLICES * FIT_SLICE:
        starts = np.linspace(0, n - FIT_SLICE, FIT_SLICES).astype(np.int64)
        idx = (starts[:, None] + np.arange(FIT_SLICE)[None, :]).reshape(-1)
        idx = idx[region.in_a[idx]]
    else:
        idx = np.flatnonzero(region.in_a)
    a, b = region.a[idx], region.b[idx]
    within_one = bool(np.abs(a.astype(np.int16) - b).max(initial=0) <= 1)
    return a, b, region.at(idx), within_one


LSB_LINE_MIN = 64     # bytes of a lane the sample must hold before bit 0 is named as a stuck or flipped line
LSB_LINE_SHARE = 0.1  # ... and the least share of them that tell the line from +-1 LSB (see below)
_TOP, _BOTTOM = (0xFF, 0x7F), (0x00, 0x80)  # where +1 / -1 LSB saturate, as uint8 and as int8


def _bit0_line_is_evident(a: np.ndarray, lane: np.ndarray, bug) -> bool:
    """Whether a fit that moves bytes by 1 LSB at most is a data line (bit 0 stuck or flipped) and not rounding.
    It must touch bit 0 alone, and each lane it touches must hold enough bytes that only the line explains:
    - set: odd values (below saturation) left as they were, which +1 LSB would have carried into bit 1;
    - clear: even values (above the floor) left as they were, which -1 LSB would have borrowed from;
    - flip: even values up and odd values down, which no offset does.
    Where A's bit 0 never varies (scores of 0x00 and 0x80), bit 0 set and +1 LSB are the same bytes, and +1 is
    rounding's (a tolerance judges it)."""
    for lane_index, op, mask in bug.ops():
        if mask != 0x01:
            return False
        v = a[lane == lane_index]
        if v.size < LSB_LINE_MIN:
            return False
        odd = (v & 1).astype(bool)
        if op == "set":
            telling, moved = odd & ~np.isin(v, _TOP), ~odd
        elif op == "clear":
            telling, moved = ~odd & ~np.isin(v, _BOTTOM), odd
        else:
            telling, moved = odd, ~odd
        if min(telling.mean(), moved.mean()) < LSB_LINE_SHARE:
            return False
    return True


def _bits_candidates(region: _Region, layout) -> list:
    """Lanes whose every bit is either passed, stuck at 1, stuck at 0 or flipped in (almost) all bytes: a data
    line stuck or inverted (B = ((A & and) | or) ^ xor per lane). The sign bit alone flipped is signedness."""
    a, b, pos, within_one = _fit_sample(region)
    if not np.count_nonzero(a != b):
        return []
    out = []
    for p in sorted({1, 2, 4, layout.record_size} - {0}):
        if p > 64:
            continue
        lane = (pos - layout.offset) % p
        total = np.maximum(np.bincount(lane, minlength=p), 1)
        masks = [[0xFF] * p, [0] * p, [0] * p]
        ok = True
        for bit in range(8):
            ab, bb = (a >> bit) & 1, (b >> bit) & 1
            same = np.bincount(lane, weights=(ab == bb), minlength=p) / total
            ones = np.bincount(lane, weights=bb, minlength=p) / total
            for l in range(p):  # a stuck or inverted line is exact: every byte of the sample obeys it
                if same[l] == 1:
                    continue
                if ones[l] == 1 and same[l] > 0:  # kept where A had it set, set where A had it clear
                    masks[1][l] |= 1 << bit
                elif ones[l] == 0 and same[l] > 0:
                    masks[0][l] &= 0xFF & ~(1 << bit)
                elif same[l] == 0:
                    masks[2][l] |= 1 << bit  # flipped (also when A never had it set: a flip first)
                else:
                    ok = False
                    break
            if not ok:
                break
        if not ok:
            continue
        bug = Bits(p, tuple(masks[0]), tuple(masks[1]), tuple(masks[2]))
        ops = bug.ops()
        if within_one and not _bit0_line_is_evident(a, lane, bug):
            continue
        if ops and not all(op == "flip" and m == 0x80 for _, op, m in ops):
            out.append(bug)
    return out


MAX_MAP_LANES = 256  # records of up to this many lanes (a class per lane) are fitted lane by lane


def _value_map_candidates(region: _Region, layout) -> list:
    """B = lut[A] for one monotone map of byte values (a wrong requantization scale / zero point, or values
    clamped: saturation), fitted on the sample: over every byte, else over the lanes that changed of every 2, 4
    or record-size bytes (one channel clamped or requantized; the other lanes keep values the map would move)."""
    a, b, pos, within_one = _fit_sample(region)
    if np.count_nonzero(a != b) < 8 or within_one:  # all within 1 LSB: rounding, for a tolerance to judge
        return []
    fit = _monotone_map(a, b)
    if fit is not None:
        return [ValueMap(*fit)]
    for p in sorted({2, 4, layout.record_size}):
        if not 1 < p <= MAX_MAP_LANES:
            continue
        lane = (pos - layout.offset) % p
        lanes = np.unique(lane[a != b])
        if lanes.size == p:
            continue
        inside = np.isin(lane, lanes)
        fit = _monotone_map(a[inside], b[inside])
        if fit is not None:
            return [ValueMap(*fit, period=p, lanes=tuple(int(x) for x in lanes))]
    return []


def _monotone_map(a: np.ndarray, b: np.ndarray) -> tuple[bytes, str] | None:
    """(lut, 'saturation' | 'requantize') when B = lut[A] for one monotone map of byte values (unsigned or
    signed order) that MIN_FIT of the differing bytes follow, else None. A map of values seen only once is no
    evidence, unless it is a clamp: the changed values all land on the range's ends."""
    d = int(np.count_nonzero(a != b))
    if d < 8:
        return None
    joint = np.bincount(a.astype(np.int64) * 256 + b, minlength=65536).reshape(256, 256)
    count = joint.sum(axis=1)
    mode = joint.argmax(axis=1)
    if int((count - joint[np.arange(256), mode]).sum()) > (1 - MIN_FIT) * d:
        return None
    seen = np.flatnonzero(count)
    changed = seen[mode[seen] != seen]
    support = count[changed]
    if seen.size < 8 or support.sum() < 8 or np.abs(mode[changed] - changed).max() <= 1:
        return None
    singles = support[support < 2].sum() > 0.5 * support.sum()  # values seen once could map anywhere
    lut = np.arange(256)
    lut[seen] = mode[seen]
    for order in (np.arange(256), np.arange(256) ^ 0x80):  # unsigned, or signed (int8) order
        rank = np.argsort(order)  # byte values from smallest to largest in that order
        vals = order[lut[rank]]
        vals = vals[np.isin(rank, seen)]
        if (np.diff(vals) >= 0).all():
            lo, hi = vals.min(), vals.max()
            clamped = np.isin(order[lut[changed]], (lo, hi)).all()
            if singles and not clamped:  # ... but a clamp says which: the changed values all lie beyond it
                return None
            return bytes(lut.astype(np.uint8)), "saturation" if clamped else "requantize"
    return None


PAGE = 4096  # the x86 / x64 page size: the unit of an MDL / scatter-gather list


PAGE_SEARCH_LIMIT = 64 << 20  # A is indexed page by page (a key per page) up to this size


def _page_keys(pages: np.ndarray) -> list:
    """Each page's lookup key (its first 64 bytes), or None for a page that proves nothing wherever it is found:
    a prefill, or one short record repeated (judged on its first 256 bytes: periodic at 1 to 16 bytes)."""
    head = pages[:, :256]
    ok = np.ones(len(pages), bool)
    for s in (1, 2, 4, 8, 16):
        ok &= ~(head[:, s:] == head[:, :-s]).all(axis=1)
    return [pages[k, :64].tobytes() if ok[k] else None for k in range(len(pages))]


def _page_index(src_a, phase: int) -> dict:
    """key -> A's page numbers with that key (None when more than 8 share it), pages from `phase`."""
    index: dict[bytes, list | None] = {}
    step = max(PAGE, (DEFAULT_CHUNK // PAGE) * PAGE)
    for lo in range(phase, src_a.size - PAGE + 1, step):
        chunk = src_a.read(lo, min(src_a.size, lo + step))
        m = len(chunk) // PAGE
        for k, key in enumerate(_page_keys(chunk[:m * PAGE].reshape(m, PAGE))):
            if key is not None:
                js = index.setdefault(key, [])
                if js is not None:
                    js.append((lo - phase) // PAGE + k)
                    if len(js) > 8:
                        index[key] = None
    return index


def _page_candidates(src_a, src_b, region: _Region, scan) -> list:
    """B's pages that hold another page of A (exactly, and found once in A): a scatter-gather list out of
    order, a page duplicated or dropped. Pages from offset 0, or from where the first difference starts when
    the buffer does not start on a page; on a sampled pair, the differing pages inside the sampled blocks."""
    if src_b.size < 2 * PAGE or scan.first is None or src_a.size > PAGE_SEARCH_LIMIT:
        return []
    out = []
    for phase in sorted({0, scan.first % PAGE}):
        looked = []  # (B's page number, its bytes) of the differing whole pages of the scored region
        for (lo, hi), off in zip(region.blocks, region.starts[:-1].tolist()):
            for i in range(max(0, -(-(lo - phase) // PAGE)), (hi - phase) // PAGE):
                s = off + phase + i * PAGE - lo
                if region.diff[s:s + PAGE].any():
                    looked.append((i, region.b[s:s + PAGE]))
        keys = _page_keys(np.stack([p for _, p in looked])) if looked else []
        if not any(k is not None for k in keys):
            continue
        index = _page_index(src_a, phase)
        n_pages = -(-(src_b.size - phase) // PAGE)
        order = [-1] * n_pages
        for (i, page), key in zip(looked, keys):
            js = index.get(key) if key is not None else None
            same = [j for j in js or () if np.array_equal(src_a.read(phase + j * PAGE, phase + j * PAGE + PAGE), page)]
            if len(same) == 1 and same[0] != i:  # found once in A, whole: it proves where the page came from
                order[i] = same[0]
        moves = [(i, j) for i, j in enumerate(order) if j >= 0]
        if not moves:
            continue
        size = src_b.size if src_b.size != src_a.size else None
        steps = {i - j for i, j in moves}
        if len(steps) == 1:
            # the rest of B moved by whole pages (a page dropped or repeated): the pages after the first move
            # follow (checked here on an exact pair; on a sampled one the scoring decides between the two)
            step = steps.pop()
            rest = list(order)
            for i in range(moves[0][0], n_pages):
                rest[i] = i - step
            if region.exact:
                last = moves[-1][0]
                for i in range(last + 1, n_pages):
                    lo = phase + i * PAGE
                    got = region.b[lo:lo + PAGE]
                    want = src_a.read(lo - step * PAGE, lo - step * PAGE + PAGE)
                    if not np.array_equal(got[:len(want)], want):
                        break
                    last = i
                if all(order[i] >= 0 or i > moves[-1][0] for i in range(moves[0][0], last + 1)):
                    order[moves[0][0]:last + 1] = rest[moves[0][0]:last + 1]
                if 0 in moves[0] and phase == 0 and last == n_pages - 1:
                    continue  # A moved as a whole by whole pages from its start: a shift (a header, an offset)
            elif not (0 in moves[0] and phase == 0):
                out.append(Pages(PAGE, tuple(rest), phase, size=size))
            else:
                continue
        out.append(Pages(PAGE, tuple(order), phase, size=size))
    return out


LINE = 64  # a cache line on x86 / x64 and ARM


def _cacheline_candidates(region: _Region, fills, previous_src) -> list:
    """Scattered whole cache lines of B that hold a prefill (or, with the previous run, its bytes): the lines
    the differences fall in, when they are several separate runs of at most 4 lines each."""
    lines = _scattered_lines(region, region.diff & region.in_a)
    if lines is None:
        return []
    lines_t = tuple(lines.tolist())
    out = [CacheLines(lines_t, LINE, pat) for _, pat, _ in fills]
    out += [CacheLines(lines_t, LINE, pat) for pat in (b"\x00", b"\xff", b"\xcc", b"\xcd") if all(
        pat != p for _, p, _ in fills)]
    if previous_src is not None:
        out.append(CacheLines(lines_t, LINE, None, previous_src))
    return out


def _runs(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) region indices of the runs of True in a non-empty mask, from their edges (no per-byte
    offsets)."""
    edges = np.flatnonzero(d[1:] != d[:-1]) + 1
    starts = np.concatenate(([0] if d[0] else [], edges[d[edges]])).astype(np.int64)
    ends = np.concatenate((edges[~d[edges]], [d.size] if d[-1] else [])).astype(np.int64)
    return starts, ends


def _scattered_lines(region: _Region, d: np.ndarray, most: int = 4) -> np.ndarray | None:
    """The cache lines holding the differences `d` (a mask over the region), when they form at least two
    separate runs of at most `most` lines; else None."""
    if not d.any():
        return None
    starts, ends = _runs(d)
    if not starts.size or starts.size > 1 << 16:
        return None
    first, last = region.at(starts) // LINE, region.at(ends - 1) // LINE
    if (last - first).max() >= most:
        return None
    lines = np.unique(np.concatenate([first + i for i in range(most)])[np.concatenate(
        [first + i <= last for i in range(most)])])
    breaks = np.flatnonzero(np.diff(lines) != 1)
    runs = np.diff(np.concatenate(([0], breaks + 1, [lines.size])))
    if runs.size < 2 or runs.max() > most:
        return None
    return lines


def _whole_pages(region: _Region, d: np.ndarray, size: int) -> int | None:
    """How many 4 KiB pages the differences `d` fill, when every stretch of them (gaps under 256 bytes, where
    bytes are equal by chance, bridged) starts near a page boundary and ends near one or at B's end; else None.
    Exact pairs only."""
    if not region.exact or not d.any():
        return None
    starts, ends = _runs(d)
    keep = np.concatenate(([True], starts[1:] - ends[:-1] >= 256))
    starts, ends = starts[keep], np.concatenate((ends[np.flatnonzero(keep)[1:] - 1], ends[-1:]))
    slack = 256
    if starts[0] < slack and size - ends[-1] < slack and starts.size == 1:
        return None  # all of B differs: nothing says pages (another inference, the wrong buffer)
    ok = (starts % PAGE < slack) & ((-ends % PAGE < slack) | (size - ends < slack)) & (ends - starts >= PAGE - 2 * slack)
    if not ok.all():
        return None
    return int(np.rint((ends - starts) / PAGE).sum())


@dataclass(frozen=True)
class _OffsetSignedness(Signedness):
    offset: int = 0

    def values(self, source, pos, pred, defined):
        m = np.isin((pos - self.offset) % self.period, np.asarray(self.lanes)) & defined & (pos >= self.offset)
        pred[m] ^= 0x80


def _fills(scan, sentinels) -> list:
    out = []
    pats = dict(sentinels)
    for name, runs in scan.runs.items():
        hits = [(s, e, w) for s, e, w in runs.runs if 2 * w >= e - s]
        if hits:
            out.append((name, pats[name], hits))
    return out


# --- selection and the result -----------------------------------------------------------------------------

_MOVES = (Shift, LaneSwap, Pages)


def _chance(scan) -> float:
    """How often a byte of B equals an unrelated byte of A (from the value histograms): 1/256 for random data,
    ~1/4 for scores that are mostly 0..3."""
    pa = scan.hist_a / max(1, int(scan.hist_a.sum()))
    pb = scan.hist_b / max(1, int(scan.hist_b.sum()))
    return float((pa * pb).sum())


def _select(scored: list, d_total: float, scale: float, missing: int, chance: float = 0.0
            ) -> tuple[list, np.ndarray, bool]:
    """Greedy: the candidate explaining most of what is left (ties: the most specific), while it explains
    enough, changes (almost) no equal bytes, and (bytes moved around: shift, lane swap, page) gets the
    differing bytes it predicts right far more often than unrelated bytes would match by chance."""
    union = None
    chosen, missing_done = [], False
    need_right = min(0.5, 3 * chance)
    remaining = [c for c in scored if not (isinstance(c.bug, _MOVES) and c.touched
                                           and c.right < need_right * c.touched)]
    while remaining:
        gains = []
        for c in remaining:
            own = float(np.count_nonzero(c.hits)) * scale + (missing if c.missing else 0)
            if c.false * scale > MAX_FALSE * own:
                continue
            new = c.hits if union is None else c.hits & ~union
            g = float(np.count_nonzero(new)) * scale + (missing if c.missing and not missing_done else 0)
            need = MIN_SHARE * d_total if not chosen else max(0.01 * d_total, 8)
            if g >= need and g > 0:
                gains.append((g, c))
        if not gains:
            break
        top = max(g for g, _ in gains)
        tied = [c for g, c in gains if g >= 0.98 * top]
        best = min(tied, key=lambda c: (_RANK_GROUP.get(c.bug.kind, _RANK.get(c.bug.kind, 99)), c.false,
                                        _RANK.get(c.bug.kind, 99), c.complexity))
        chosen.append(best)
        remaining.remove(best)
        union = best.hits.copy() if union is None else union | best.hits
        missing_done = missing_done or best.missing
    if union is None:
        union = np.zeros(0 if not scored else scored[0].hits.size, bool)
    return chosen, union, missing_done


def _unrelated_cut(chosen: list, union: np.ndarray, missing_done: bool, region: _Region, scale: float,
                   common: int) -> tuple[list, np.ndarray, bool]:
    """B shorter than A names a truncation only if B's bytes are A's (or explained otherwise): when most of the
    bytes both hold still differ, B is another buffer (a smaller tensor, the input), not A cut short."""
    cut = [c for c in chosen if isinstance(c.bug, Truncation) and c.bug.pattern is None]
    if not cut or not union.size:
        return chosen, union, missing_done
    rest = [c for c in chosen if c not in cut]
    u = np.zeros_like(union)
    for c in rest:
        u |= c.hits
    left = float(np.count_nonzero(region.diff & region.in_a & ~u)) * scale
    if left <= 0.5 * common:
        return chosen, union, missing_done
    return rest, u, any(c.missing for c in rest)


def _ranges(p: np.ndarray, gap: int = 16, limit: int = 8) -> tuple[list, int]:
    """Byte ranges [start, end) of sorted absolute offsets, merged across small gaps."""
    if not p.size:
        return [], 0
    breaks = np.flatnonzero(np.diff(p) > gap)
    starts = np.concatenate(([p[0]], p[breaks + 1]))
    ends = np.concatenate((p[breaks], [p[-1]])) + 1
    order = np.argsort(-(ends - starts), kind="stable")[:limit]
    ranges = sorted([int(starts[i]), int(ends[i])] for i in order)
    return ranges, int(starts.size)


def _where(mask, region, layout, unit: str = "record") -> dict:
    step = max(1, int(np.count_nonzero(mask)) >> 16)  # huge residuals: summarise every step-th offset
    p = region.at(mask, step)
    ranges, count = _ranges(p, gap=16 * step)
    rs, off = layout.record_size, layout.offset
    recs = np.unique((p[p >= off] - off) // rs) if p.size else np.zeros(0, np.int64)
    lanes = np.unique((p[p >= off] - off) % rs) if p.size else np.zeros(0, np.int64)
    return {"ranges": ranges, "range_count": count, f"{unit}s": _span_text(recs),
            "lanes": _span_text(lanes), "record_size": rs}


def _span_text(values: np.ndarray, parts: int = 8) -> str:
    """Sorted unique integers as ranges ('0-90'); more than `parts` runs become 'first-last (N in M runs)'."""
    if not values.size:
        return ""
    runs = int(np.count_nonzero(np.diff(values) != 1)) + 1
    if runs <= parts:
        return compress_lanes(values.tolist())
    return f"{int(values[0])}-{int(values[-1])} ({values.size:,} in {runs:,} runs)"


def _hex_ranges(ranges) -> str:
    return ", ".join(f"0x{s:x}-0x{e:x}" for s, e in ranges[:4]) + (" ..." if len(ranges) > 4 else "")


def _head_window(dump_a, dump_b, layout, scan: _Scan, window: int) -> Finding | None:
    """The first `window` bytes are identical and uniform in both while later records differ (widely)."""
    rs, off = layout.record_size, layout.offset
    common = min(dump_a.size, dump_b.size)
    if scan.first is None and dump_a.size == dump_b.size:
        return None
    if off + window >= common and dump_a.size == dump_b.size:
        return None
    head_a, head_b = dump_a.read(off, window), dump_b.read(off, window)
    if len(head_a) < window or head_a != head_b:
        return None
    unit = rs if rs <= window // 2 else 1
    whole = window // unit * unit
    first = head_a[:unit]
    if head_a[:whole] != first * (whole // unit):
        return None
    later = max(1, scan.records - whole // rs) if rs <= window else max(1, scan.records)
    missing = abs(dump_a.size - dump_b.size) // rs
    differing = scan.records_differing + missing
    if differing < 0.05 * later:
        return None
    where = f"first at 0x{scan.first:x}, record {_rec(layout, scan.first)}" if scan.first is not None else \
        f"B ends at 0x{dump_b.size:x}"
    return Finding("head_window", (
        f"the first {window} bytes are identical in A and B and all `{first.hex(' ')}`, yet "
        f"{_n(differing)} of {_n(later)} later records differ ({where}): the head alone would call these "
        "buffers equal"),
        "look at every record (forensics diff / forensics anchors --nonuniform), not the first bytes",
        {"window": window, "head_record": first.hex(" "), "records_differing_after": differing,
         "first_differing_offset": scan.first, "ratio": round(differing / later, 6)})


def _records_of(layout, s: int, e: int) -> str:
    rs, off = layout.record_size, layout.offset
    first, last = max(0, s - off) // rs, max(0, e - 1 - off) // rs
    return str(first) if first == last else f"{first}-{last}"


def _finding(c: _Scored, region, layout, ctx: dict, explains: float) -> list:
    """The finding(s) for one chosen candidate: evidence from the simulation's parameters, a hint that is a
    command or a check with the user's file names."""
    bug, a, b = c.bug, ctx["a"], ctx["b"]
    n_a, n_b = ctx["n_a"], ctx["n_b"]
    where = _where(c.hits, region, layout)
    details = dict(bug.params())
    out = []
    if isinstance(bug, Shift):
        k = bug.k
        direction = "later" if k > 0 else "earlier"
        if bug.start is None:
            lo, hi = max(0, k), min(n_b, n_a + k)
            details["overlap"] = [lo, hi]
            details["overlap_bytes"] = hi - lo
            text = (f"B equals A moved by {abs(k)} bytes: A's data appears {abs(k)} bytes {direction} in B "
                    f"(B[j] = A[j{'-' if k > 0 else '+'}{abs(k)}] over the {_n(hi - lo)} overlapping bytes)")
            hint = (f"check the buffer's start address / DMA offset of {b}: an off-by-{abs(k)} in the descriptor, "
                    "or a header not skipped")
        else:
            s, e = bug.start, bug.end
            details["overlap"] = [s, e]
            details["overlap_bytes"] = e - s
            text = (f"B's bytes 0x{s:x}-0x{e:x} ({_n(e - s)} bytes, records {_records_of(layout, s, e)}) are A's "
                    f"moved {abs(k)} bytes {direction}; the rest of B matches A: that span (a tile, a row block, "
                    "a record range) was written at the wrong place")
            hint = (f"check the address / row stride used for bytes 0x{s:x}-0x{e:x} of {b}: written {abs(k)} bytes "
                    f"{'late' if k > 0 else 'early'}")
    elif isinstance(bug, Fill):
        name = ctx["pattern_names"].get(bug.pattern, f"0x{bug.pattern.hex().upper()}")
        n = sum(e - s for s, e in bug.ranges)
        s0, e0 = bug.ranges[0]
        details = {"bytes": n, "ranges": [{"sentinel": name, "start": s, "end": e} for s, e in bug.ranges[:20]],
                   "sentinels": [name]}
        text = (f"B holds {name} in {len(bug.ranges)} run{'s' if len(bug.ranges) > 1 else ''} of {_n(n)} bytes "
                f"(first at 0x{s0:x}-0x{e0:x}, records {_records_of(layout, s0, e0)}) where A has data: never written")
        hint = f"those bytes of {b} were never written: check the DMA length / completion before reading the buffer"
    elif isinstance(bug, Truncation):
        rs = layout.record_size
        if bug.pattern is None:
            short, long_, sname, lname = (n_b, n_a, "B", "A")
            text = (f"{sname} is {_n(short)} bytes and {lname} {_n(long_)}: {sname} stops at record "
                    f"{max(0, short - layout.offset) // rs} of {_n(-(-max(0, long_ - layout.offset) // rs))} "
                    f"({_n(long_ - short)} bytes missing); the common bytes are "
                    f"{'identical' if not ctx['common_differ'] else 'different too'}")
            details = {"shorter": "B", "size_a": n_a, "size_b": n_b, "missing_bytes": n_a - n_b,
                       "stops_at_record": max(0, short - layout.offset) // rs, "tail_unwritten_from": None}
        else:
            name = ctx["pattern_names"].get(bug.pattern, f"0x{bug.pattern.hex().upper()}")
            s = bug.keep
            rec = max(0, s - layout.offset) // rs
            text = (f"B's last {_n(n_b - s)} bytes (from 0x{s:x}, record {rec} of {_n(ctx['records'])}) are {name} "
                    f"where A has data: the device stopped writing at record {rec}")
            details = {"shorter": None, "size_a": n_a, "size_b": n_b, "missing_bytes": n_b - s,
                       "stops_at_record": rec, "tail_unwritten_from": s, "sentinel": name}
            out.append(Finding("fill", (
                f"B holds {name} in 1 run of {_n(n_b - s)} bytes (first at 0x{s:x}-0x{n_b:x}, records "
                f"{_records_of(layout, s, n_b)}) where A has data: never written"),
                f"those bytes of {b} were never written: check the DMA length / completion before reading the buffer",
                {"bytes": n_b - s, "ranges": [{"sentinel": name, "start": s, "end": n_b}], "sentinels": [name]},
                explains))
        hint = f"the copy stopped early: check the transfer size of {b} against the output's size_bytes ({_n(n_a)})"
    elif isinstance(bug, Oversize):
        k = bug.offset
        text = (f"B is {_n(n_b)} bytes and holds all {_n(n_a)} bytes of A at offset {k} ({_n(bug.extra)} extra "
                "bytes): a larger allocation (a page-rounded DMA buffer, or buffers allocated together) dumped whole")
        cut = (f"head -c {n_a} {b} > cut.bin" if k == 0 else
               f"dd if={b} of=cut.bin bs=1 skip={k} count={n_a}")
        hint = f"compare only A's {_n(n_a)} bytes: cut B with `{cut}`, or dump the layer's size_bytes, not the allocation"
    elif isinstance(bug, Strided) and bug.kind == "pitch":
        row, pitch = bug.width, max(bug.src, bug.dst)
        side = "B" if bug.dst > bug.src else "A"
        other = "A" if side == "B" else "B"
        rows = -(-min(n_a, n_b) // row)
        details.update({"rows": rows, "row_bytes": row, "pitch": pitch, "pitched_side": side})
        text = (f"{rows} rows of {_n(row)} bytes of {other} appear in {side} at a pitch of {_n(pitch)} bytes "
                f"({_n(pitch - row)} padding bytes after each row): {side} was written with an aligned row pitch")
        hint = (f"copy each row of {b if side == 'B' else a} at the tensor's row size ({_n(row)} bytes), dropping "
                f"the {_n(pitch - row)} pitch padding bytes, or give the consumer the pitch")
    elif isinstance(bug, Strided):
        z, sa, sb = bug.width, bug.src, bug.dst
        recs = min(-(-n_a // sa), -(-n_b // sb))
        details.update({"records": recs, "raw_side": "A" if sa > sb else "B", "raw_size": n_a if sa > sb else n_b,
                        "tensor_size": n_b if sa > sb else n_a, "record_size": max(sa, sb),
                        "data_lanes": compress_lanes(range(z))})
        padded, packed = ("A", "B") if sa > sb else ("B", "A")
        details.update(_stride_evidence(bug, ctx, region, recs))
        align = next((m for m in LANE_ALIGN if _ceil(z, m) == max(sa, sb)), None)
        lane_text = "the 4-byte lane" if align == 4 else (f"a multiple of {align} lanes" if align else
                                                          f"{max(sa, sb)} bytes")
        details["lane_multiple"] = align
        text = (f"{padded} holds {_n(recs)} records of z={z} bytes at a {max(sa, sb)}-byte stride (z padded to "
                f"{lane_text}), {packed} the same records {min(sa, sb)} bytes apart")
        if n_a == n_b:
            text += f" in a buffer of the same size: {packed} was read or written with the wrong stride"
        elif ctx.get("tensor"):
            text += f": {padded} is {ctx['tensor']!r} as the chip writes it, {packed} the TFLite tensor"
        raw = a if padded == "A" else b
        if ctx.get("model") and ctx.get("tensor") and n_a != n_b:
            hint = (f"relayout the raw side before comparing: forensics relayout {raw} --model {ctx['model']} "
                    f"--layer {ctx['tensor']} -o {os.path.splitext(os.path.basename(raw))[0]}.tensor.bin")
        elif n_a != n_b:
            hint = (f"relayout the raw side before comparing: forensics relayout {raw} --model MODEL --layer LAYER "
                    "-o tensor.bin")
        else:
            hint = (f"read and write each record at the chip's stride of {max(sa, sb)} bytes (z={z} padded to "
                    f"{lane_text}; the layer's size_bytes), not at z")
    elif isinstance(bug, Signedness):
        rs = layout.record_size
        period, lanes = bug.period, list(bug.lanes)
        if rs % period == 0:  # the same flip, said in the layout's records
            period, lanes = rs, [l for l in range(rs) if l % bug.period in bug.lanes]
        text_lanes = compress_lanes(lanes)
        details = {"lanes": lanes, "lanes_text": text_lanes, "period": period, "word_bytes": bug.period}
        what = (f"lanes {text_lanes} of every {period}-byte record" if len(lanes) < period else "every byte")
        text = (f"the sign bit (0x80) of {what} is flipped and nothing else differs: one side is the signed "
                "(int8) form of the other's uint8")
        if bug.period in (2, 4) and list(bug.lanes) == [bug.period - 1]:  # the top byte of little-endian words
            text += (f", or the sign of {bug.period * 8}-bit little-endian words "
                     f"({'int16' if bug.period == 2 else 'float32 / int32'}): every value negated")
        hint = ("the tensor is signed on one side: flip the MSB of each element (libedgetpu's "
                "TransformSignedDataType) or fix the declared type")
    elif isinstance(bug, LaneSwap):
        perm = list(bug.permutation)
        moved = [i for i, j in enumerate(perm) if i != j]
        k = max(moved) + 1 if moved else 0
        if len(perm) > MAX_LANE_RECORD and perm[:k] == list(range(k - 1, -1, -1)):
            mapping = f"lanes 0-{k - 1} in reverse order (B lane i = A lane {k - 1} - i)" + (
                f", lanes {compress_lanes(range(k, len(perm)))} in place" if k < len(perm) else "")
            text = f"the lane (class / channel) order of every {len(perm)}-byte record is reversed: {mapping}"
        else:
            mapping = ", ".join(f"B lane {i} = A lane {j}" for i, j in enumerate(perm) if i != j)
            where_words = "" if bug.start is None else (
                f" of bytes {bug.start:#x}-{bug.end - 1:#x} ({bug.end - bug.start:,} bytes; the rest matches A)")
            text = f"{bug.describe()} in every {len(perm)}-byte word{where_words}: {mapping}"
        hint = (f"bytes of {b} move within each word: check element endianness and the lane / channel order "
                "the driver assumes")
    elif isinstance(bug, Pages):
        moves = bug.moves()
        dup = len({j for _, j in moves}) < len(moves) or any(
            j < len(bug.order) and bug.order[j] in (-1, j) for _, j in moves)
        steps = {i - j for i, j in moves}
        said = ", ".join(f"B page {i} = A page {j}" for i, j in moves[:6]) + (" ..." if len(moves) > 6 else "")
        where_p = f" (pages from offset {bug.phase})" if bug.phase else ""
        if len(steps) == 1 and len(moves) > 1 and moves[-1][0] >= len(bug.order) - 2 and next(iter(steps)) < 0:
            what = (f"A's page {moves[0][0]} is missing from B: from offset 0x{bug.phase + moves[0][0] * bug.page:x} "
                    f"every later page of A sits one page earlier")
        elif dup:
            what = "pages of A appear twice in B (a scatter-gather entry repeated)"
        else:
            what = "B holds A's pages in another order"
        details.update({"moved_pages": len(moves), "duplicated": dup})
        text = (f"{what}: {said} ({bug.page:,}-byte pages{where_p}, {_n(len(moves) * bug.page)} bytes): the DMA "
                "scatter-gather / MDL page list does not match the buffer's pages")
        hint = (f"check the page list built for {b} (MmGetMdlPfnArray / the scatter-gather list): its order, "
                "and that each page is mapped once; pages are 4 KiB on x86 / x64")
    elif isinstance(bug, CacheLines):
        lines = len(bug.lines)
        src = ("the previous run's bytes" if bug.previous is not None else
               ctx["pattern_names"].get(bug.pattern, f"0x{bug.pattern.hex().upper()}"))
        first = ", ".join(f"0x{l * bug.line:x}" for l in bug.lines[:4]) + (" ..." if lines > 4 else "")
        details.update({"source": "previous" if bug.previous is not None else src})
        text = (f"{lines} separate {bug.line}-byte cache lines of B (at {first}) hold {src} where A has data, the "
                "rest matches: the CPU read lines it still cached instead of what the device wrote by DMA")
        hint = (f"the buffer of {b} is not coherent: flush / invalidate the cache over it after the DMA completes "
                "(KeFlushIoBuffers, or a common buffer allocated non-cached) before reading it")
    elif isinstance(bug, Bits):
        ops = bug.ops()
        words = {"set": "stuck at 1", "clear": "stuck at 0", "flip": "flipped"}
        parts = []
        for op in ("set", "clear", "flip"):
            for m in sorted({m for _, o, m in ops if o == op}):
                lanes = [l for l, o, mm in ops if o == op and mm == m]
                bits_t = compress_lanes([i for i in range(8) if m >> i & 1])
                scope = "every byte" if bug.period == 1 else (
                    f"lane{'s' if len(lanes) > 1 else ''} {compress_lanes(lanes)} of every {bug.period} bytes")
                parts.append(f"bit{'s' if m & (m - 1) else ''} {bits_t} (mask 0x{m:02x}) {words[op]} in {scope}")
        text = "; ".join(parts) + ", nothing else differs: a data bit stuck or inverted on the way"
        hint = (f"check the bit lines / masks of the copy into {b} (a register or DMA data bit stuck, a mask "
                "applied, a sign or flag bit set by the driver)")
    elif isinstance(bug, ValueMap):
        ch = bug.changed()
        lut = bug.lut
        sample = ", ".join(f"{v}->{lut[v]}" for v in ch[:6]) + (" ..." if len(ch) > 6 else "")
        details.update({"values_changed": len(ch)})
        where_map = "every byte" if bug.period == 1 else (
            f"lane{'s' if len(bug.lanes) > 1 else ''} {compress_lanes(bug.lanes)} of every {bug.period} bytes "
            "(the other lanes match)")
        if bug.kind == "saturation":
            text = (f"in {where_map}, each value of A maps to one value of B and the {len(ch)} changed values "
                    f"become the range's ends ({sample}): values clamped (saturation)")
            hint = ("check the output's quantization range / the clamp applied (activation min/max, the "
                    "requantization's saturation) against the reference's"
                    + ("" if bug.period == 1 else ", for that channel"))
        else:
            text = (f"in {where_map}, each value of A maps to one value of B in the same order ({len(ch)} values "
                    f"changed: {sample}): one monotone requantization")
            hint = ("check the output's quantization scale and zero point (and the requantization multiplier/shift)"
                    + ("" if bug.period == 1 else ", for that channel"))
    elif isinstance(bug, Stale):
        rs = layout.record_size
        ranges = where["ranges"]
        recs = where["records"]
        whole = ctx.get("stale_whole", False)
        details = {"previous": ctx["previous"], "identical_to_previous": whole, "ranges": ranges,
                   "records": recs, "record_size": rs, "ratio": explains}
        text = (f"B is byte-identical to the previous run's buffer {ctx['previous']} and differs from A: this run's "
                f"output was never written (stale buffer)" if whole else
                f"where B differs from A it holds the previous run's bytes ({ctx['previous']}) at "
                f"{_hex_ranges(ranges)} (records {recs}): those parts were not rewritten this run")
        hint = (f"B ({b}) is an earlier run's output: wait for completion / invalidate the cache before reading")
    else:
        text, hint = bug.kind, ""
    out.insert(0, Finding(bug.kind, text, hint, details, explains))
    return out


def _stride_evidence(bug, ctx, region, recs) -> dict:
    """Records whose z data bytes B holds exactly where the stride puts them, and the padded side's pad byte
    when it is one constant (on pairs scored exactly; None otherwise)."""
    if not ctx["exact"]:
        return {"records_equal": None, "pad_constant": None}
    src_a, src_b = ctx["src_a"], ctx["src_b"]
    z, sa, sb = bug.width, bug.src, bug.dst
    a = src_a.read(0, src_a.size)
    b = src_b.read(0, src_b.size)
    n = min(recs, len(a) // sa + (len(a) % sa >= z), len(b) // sb + (len(b) % sb >= z))
    ia = (np.arange(n)[:, None] * sa + np.arange(z)[None, :])
    ib = (np.arange(n)[:, None] * sb + np.arange(z)[None, :])
    equal = int(np.count_nonzero((a[ia] == b[ib]).all(axis=1)))
    padded, p = (a, sa) if sa > sb else (b, sb)
    m = len(padded) // p
    pads = padded[:m * p].reshape(m, p)[:, z:]
    pad = int(pads.flat[0]) if pads.size and (pads == pads.flat[0]).all() else None
    return {"records_equal": equal, "pad_constant": pad}


def _relayout_finding(scan, layout, region, residual_mask, explains, dump_a, dump_b) -> Finding:
    where = _where(residual_mask, region, layout)
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
        f"{_hex_ranges(where['ranges'])} (records {where['records']}){tail}: the same data in another order"),
        "check the tile/stride layout used to copy the output (libedgetpu's check calls this a probable "
        "re-layout error)",
        {"records_differing": scan.records_differing, "ranges": where["ranges"], "same_records": same}, explains)


def _characterize(scan, layout, region, mask, dump_a, dump_b, fills) -> dict:
    """Where the unexplained differences are and what they look like."""
    where = _where(mask, region, layout)
    ha, hb = scan.hist_a, scan.hist_b
    tv = float(np.abs(ha / max(1, ha.sum()) - hb / max(1, hb.sum())).sum() / 2) if ha.sum() else 0.0
    pad_ok = None
    if layout.pad_lanes and region.diff.size:
        rel = region.at(region.diff & region.in_a) - layout.offset
        pad_ok = not np.isin(rel[rel >= 0] % layout.record_size, list(layout.pad_lanes)).any()
    sized = dump_a.size == dump_b.size
    well_formed = sized and not fills and tv <= 0.25 and pad_ok is not False
    lines = _scattered_lines(region, mask & region.in_a) if mask.size else None
    pages = _whole_pages(region, mask & region.in_a, dump_b.size) if mask.size and lines is None else None
    return {**where, "max_delta": scan.max_delta if sized else None,
            "bytes_off_by_one": scan.bytes_off_by_one if sized else None,
            "histogram_distance": round(tv, 4), "pad_lanes_intact": pad_ok,
            "looks_like_another_inference": bool(well_formed),
            "cache_lines": None if lines is None else int(lines.size), "pages": pages}


def _files_equal(x: Dump, y: Dump, chunk: int) -> bool:
    if x.size != y.size:
        return False
    with _Readers([x, y], chunk) as rd:
        for lo in range(0, x.size, chunk):
            hi = min(x.size, lo + chunk)
            if rd.read(0, lo, hi) != rd.read(1, lo, hi):
                return False
    return True


def _as_dump(value, what: str) -> Dump:
    if isinstance(value, Dump):
        return value
    if isinstance(value, (str, bytes, os.PathLike)):
        return open_dump(value)
    raise TypeError(f"{what} must be a Dump or a path, not {type(value).__name__}")


def diagnose_dumps(dump_a, dump_b, *, layout: RecordLayout | None = None, previous=None, model_view=None,
                   model=None, sentinels=None, tolerance: int | None = None, min_run: int = DEFAULT_MIN_RUN,
                   max_shift: int | None = None, window: int = DEFAULT_WINDOW,
                   chunk: int = DEFAULT_CHUNK, progress=None) -> DiagnoseResult:
    """Explain how B (under test) differs from A (reference) with the bug generators; see the module doc.

    `layout` (record size, offset, pad lanes) defaults to the model view's, else A's or B's sidecar, else
    4-byte records; it places records and lanes in the text but never changes which bug is named.
    `model_view` (forensics.modeldumps.tensor_view) adds the model's tensor shape and Edge TPU layer map;
    `model` is the model's path for hints. `previous` is an earlier run's buffer (path or Dump) for stale.
    `tolerance` K: same-size pairs whose bytes differ by at most K are WITHIN TOLERANCE (exit 0).
    """
    dump_a, dump_b = _as_dump(dump_a, "dump_a"), _as_dump(dump_b, "dump_b")
    prev = _as_dump(previous, "previous") if previous is not None else None
    if min_run <= 0 or window <= 0 or (max_shift is not None and max_shift < 0) or chunk <= 0:
        raise InputError("min_run, window and chunk must be positive and max_shift not negative")
    if max_shift is None:
        largest = max(dump_a.size, dump_b.size)
        max_shift = largest if largest <= WHOLE_SHIFT_SEARCH else DEFAULT_MAX_SHIFT
    if tolerance is not None and tolerance < 0:
        raise InputError(f"tolerance must not be negative, got {tolerance}")
    if layout is None:
        if model_view is not None:
            layout = model_view.layout
        else:
            layout = layout_from(dump_a.meta if dump_a.meta is not None else dump_b.meta)
    shorter = dump_a if dump_a.size <= dump_b.size else dump_b
    if layout.offset >= shorter.size:
        raise InputError(f"offset {layout.offset} is past the end of the data ({shorter.size} bytes)", shorter.path)
    pats = tuple(SENTINELS) + tuple((str(n), bytes(p)) for n, p in (sentinels or ()) if p)
    scan = _scan(dump_a, dump_b, layout, pats, min_run, chunk, progress)
    n_a, n_b = dump_a.size, dump_b.size
    base = dict(path_a=dump_a.path, path_b=dump_b.path, size_a=n_a, size_b=n_b, crc32_a=scan.crc_a,
                crc32_b=scan.crc_b, record_size=layout.record_size, records_compared=scan.records,
                records_differing=scan.records_differing, bytes_differing=scan.bytes_differing,
                first_differing_offset=scan.first, previous=prev.path if prev is not None else None,
                tolerance=tolerance)
    if n_a == n_b and scan.bytes_differing == 0:
        return DiagnoseResult(**base, findings=(), verdict="IDENTICAL", explained_fraction=1.0)
    if tolerance is not None and n_a == n_b and scan.max_delta <= tolerance:
        return DiagnoseResult(**base, findings=(), verdict="WITHIN TOLERANCE", explained_fraction=1.0,
                              hint=f"every byte is within {tolerance} LSB of A's")

    src_a, src_b = _DumpSource(dump_a), _DumpSource(dump_b)
    prev_src = _DumpSource(prev) if prev is not None else None
    try:
        blocks, exact = _blocks(n_b, n_a, scan)
        region = _Region(src_a, src_b, blocks, exact)
        fills = _fills(scan, pats)
        cands = _candidates(dump_a, dump_b, src_a, src_b, layout, scan, region, model_view, prev_src, max_shift,
                            fills)
        d_b = scan.bytes_differing + max(0, n_b - n_a)
        missing = max(0, n_a - n_b)
        d_total = d_b + missing
        d_s = int(np.count_nonzero(region.diff))
        scale = d_b / d_s if d_s else 0.0
        scored = [_score(c, src_a, region, n_a, n_b) for c in _shortlist(cands, src_a, src_b, region, n_a, n_b)]
        scored = _prefer_exact(scored, region)
        chosen, union, missing_done = _select(scored, d_total, scale, missing, _chance(scan))
        chosen, union, missing_done = _unrelated_cut(chosen, union, missing_done, region, scale, min(n_a, n_b))
        explained = float(np.count_nonzero(union)) * scale + (missing if missing_done else 0)
        names = {bytes(p): n for n, p in pats}
        ctx = {"a": dump_a.path, "b": dump_b.path, "n_a": n_a, "n_b": n_b, "pattern_names": names,
               "records": scan.records, "common_differ": scan.bytes_differing > 0, "model": model,
               "tensor": getattr(getattr(model_view, "tensor", None), "name", None),
               "previous": prev.path if prev is not None else None, "exact": exact, "src_a": src_a,
               "src_b": src_b}
        findings: list[Finding] = []
        for c in scored:  # the previous run's bytes explain what another finding explains: say both
            if isinstance(c.bug, Stale) and c not in chosen and \
                    float(np.count_nonzero(c.hits)) * scale >= 0.9 * d_b and d_b:
                chosen.append(c)
        for c in chosen:
            if isinstance(c.bug, Stale):
                ctx["stale_whole"] = _files_equal(dump_b, prev, chunk)
            own = float(np.count_nonzero(c.hits)) * scale + (missing if c.missing else 0)
            findings += _finding(c, region, layout, ctx, round(min(1.0, own / d_total), 6) if d_total else 0.0)
        residual_mask = region.diff & ~union if union.size else region.diff
        residual_bytes = float(np.count_nonzero(residual_mask)) * scale + (0 if missing_done else missing)
        if (n_a == n_b and residual_bytes >= max(64, 0.01 * n_b) and np.array_equal(scan.hist_a, scan.hist_b)):
            findings.append(_relayout_finding(scan, layout, region, residual_mask,
                                              round(residual_bytes / d_total, 6), dump_a, dump_b))
            explained, residual_bytes = float(d_total), 0.0
            residual_mask = np.zeros_like(residual_mask)
        head = _head_window(dump_a, dump_b, layout, scan, window)
        if head is not None:
            findings.append(head)
    finally:
        for s in (src_a, src_b, prev_src):
            if s is not None:
                s.close()
    fraction = round(min(1.0, explained / d_total), 6) if d_total else 1.0
    named = [f for f in findings if f.kind != "head_window"]
    common_left = float(np.count_nonzero(residual_mask & region.in_a)) * scale if residual_mask.size else 0.0
    common_ok = common_left <= (1 - EXPLAINED_SHARE) * max(1, scan.bytes_differing)
    if named and fraction >= EXPLAINED_SHARE and common_ok:
        verdict = "EXPLAINED"
    elif named:
        verdict = "PARTLY EXPLAINED"
    else:
        verdict = "UNEXPLAINED"
    residual = None
    if residual_bytes > 0:
        residual = {"bytes": int(round(residual_bytes)), "fraction": round(residual_bytes / d_total, 6),
                    **_where(residual_mask, region, layout)}
        if missing and not missing_done:
            residual["missing_bytes"] = missing
    characterization, hint = None, ""
    if verdict != "EXPLAINED":
        characterization = _characterize(scan, layout, region, residual_mask, dump_a, dump_b, fills)
        if characterization["cache_lines"]:
            hint = (f"the differences sit in {characterization['cache_lines']} separate 64-byte cache lines: "
                    "DMA into memory the CPU still caches (flush / invalidate the buffer after the transfer); "
                    "rerun with --previous PREVIOUS_B to see whether they hold the previous run's bytes")
        elif characterization["pages"]:
            hint = (f"the differences fill {characterization['pages']} whole 4 KiB page(s): pages the device did not "
                    "write this run (a scatter-gather / MDL entry missing or pointing elsewhere); rerun with "
                    "--previous PREVIOUS_B to see whether they hold the previous run's bytes")
        elif characterization["looks_like_another_inference"]:
            hint = ("B looks like a well-formed output of another inference (pad lanes intact, value histogram "
                    "like A's): a stale buffer or a different input. Compare the input CRCs "
                    "(forensics crc INPUT_A INPUT_B) and rerun with --previous PREVIOUS_B")
        elif not named and n_a != n_b and scan.bytes_differing > 0.5 * min(n_a, n_b):
            hint = (f"B ({_n(n_b)} bytes) is not A ({_n(n_a)} bytes) cut short or padded: most bytes both hold "
                    "differ. Check that the right buffer was copied (this output tensor, not another tensor or the "
                    f"input): forensics diff {dump_a.path} {dump_b.path}")
        else:
            hint = (f"look at the differing records: forensics diff {dump_a.path} {dump_b.path}")
    findings.sort(key=lambda f: _DISPLAY.index(f.kind) if f.kind in _DISPLAY else 99)
    primary = chosen[0].bug.kind if chosen else next((f.kind for f in named), None)
    return DiagnoseResult(**base, findings=tuple(findings), verdict=verdict, explained_fraction=fraction,
                          residual=residual, characterization=characterization, exact=exact, hint=hint,
                          primary=primary)
