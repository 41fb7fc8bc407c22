"""Name the classic bring-up bugs behind two differing dumps: shift, fill, stride, relayout, signedness, lane_swap,
truncation, stale and head_window, each with the evidence that fired it (and nothing for a clean pair).

Everything streams: one paired pass over both dumps in reused fixed-size buffers collects the CRCs, the
differing bytes, per-lane XOR tallies, sampled lane-equality counts, byte histograms of the differing chunks and
the sentinel runs; the heuristics then decide from those tallies, and the few that need more (shift,
lane_swap, stale) read small sampled windows or verify one candidate with an early-exit stream. Memory stays
flat for GiB dumps (see PITFALLS.md on mmap residency) and no heuristic is quadratic in the size.

Thresholds are chosen so that legitimate differences do not fire: a detection that moved, or runtimes that
round box deltas differently, change a handful of records or change values (histograms), not the layout.
"""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass, field

import numpy as np

from forensics.blocks import block_bounds, stream_pair
from forensics.crc import format_crc
from forensics.dump import Dump, _read_fully, open_dump
from forensics.errors import InputError
from forensics.layout import RecordLayout, layout_from

KINDS = ("stride", "shift", "signedness", "lane_swap", "relayout", "fill", "truncation", "stale", "head_window")

DEFAULT_CHUNK = 2 << 20       # bytes per paired read; three reused buffers of this size per scan
DEFAULT_MIN_RUN = 16          # a sentinel run shorter than this is taken as data that happens to match
DEFAULT_MAX_SHIFT = 64 << 10  # how far (bytes) shift detection searches either way around each window
DEFAULT_WINDOW = 256          # the story's trap: the first 256 bytes shown by a hexdump
SHIFT_WINDOW = 64             # bytes of B searched for in A
SHIFT_SAMPLES = 8             # windows sampled across the differing chunks
LANE_SAMPLE = 8192            # records per chunk that feed the lane-equality matrix
MAX_LANE_RECORD = 8           # lane permutations are searched exhaustively up to this record size
_HIST_SLICE = 1 << 16
RECORD_SET_LIMIT = 16 << 20   # relayout: compare the record multisets too when a dump is at most this big

# Prefill patterns drivers and allocators use (MSVC debug heap 0xCD, HeapAlloc 0xBAADF00D; both byte orders of
# the 32-bit words, since a driver writes them as words on a little-endian host).
SENTINELS = (
    ("0xCC", b"\xcc"), ("0xAA", b"\xaa"), ("0x00", b"\x00"), ("0xFF", b"\xff"), ("0xCD", b"\xcd"),
    ("DEADBEEF", bytes.fromhex("efbeadde")), ("DEADBEEF (big endian)", bytes.fromhex("deadbeef")),
    ("BAADF00D", bytes.fromhex("0df0adba")), ("BAADF00D (big endian)", bytes.fromhex("baadf00d")),
)

HINTS = {
    "stride": "relayout the raw side (forensics relayout --model M --tensor T) before comparing",
    "shift": "check the buffer's start address / DMA offset (an off-by-k in the descriptor or a header not skipped)",
    "signedness": "the tensor is signed on one side: flip the MSB of each element (libedgetpu's "
                  "TransformSignedDataType) or fix the declared type",
    "lane_swap": "bytes move within each record: check element endianness and the lane order the driver assumes",
    "relayout": "same bytes in another order: check the tile/stride layout used to copy the output "
                "(libedgetpu's check calls this a probable re-layout error)",
    "fill": "those bytes were never written: check the DMA length / completion before reading the buffer",
    "truncation": "the copy stopped early: check the transfer size against the output's size_bytes",
    "stale": "B is an earlier run's output: wait for completion / invalidate the cache before reading",
    "head_window": "look at every record (forensics diff / forensics anchors --nonuniform), not the first bytes",
}


@dataclass(frozen=True)
class Finding:
    """One named bug pattern: `kind` (one of KINDS), the evidence sentence, what to do, structured details."""

    kind: str
    evidence: str
    hint: str = ""
    details: dict = field(default_factory=dict, compare=False, hash=False)

    def __getitem__(self, key):
        return self.details[key]

    def to_dict(self) -> dict:
        return {"kind": self.kind, "evidence": self.evidence, "hint": self.hint, **self.details}


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

    @property
    def identical(self) -> bool:
        return self.size_a == self.size_b and self.bytes_differing == 0

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(f.kind for f in self.findings)

    @property
    def clean(self) -> bool:
        return not self.findings

    def __bool__(self) -> bool:
        return self.clean

    def finding(self, kind: str) -> Finding | None:
        return next((f for f in self.findings if f.kind == kind), None)

    def to_dict(self) -> dict:
        return {
            "path_a": self.path_a, "path_b": self.path_b, "previous": self.previous,
            "size_a": self.size_a, "size_b": self.size_b,
            "crc32_a": format_crc(self.crc32_a), "crc32_b": format_crc(self.crc32_b),
            "identical": self.identical, "record_size": self.record_size,
            "records_compared": self.records_compared, "records_differing": self.records_differing,
            "bytes_differing": self.bytes_differing, "first_differing_offset": self.first_differing_offset,
            "findings": [f.to_dict() for f in self.findings],
        }


# --- reading -----------------------------------------------------------------------------------------------

class _Readers:
    """Open dumps read-only and read data ranges of each into its own reused buffer."""

    def __init__(self, dumps, chunk: int):
        self.dumps = list(dumps)
        self.files = []
        self.bufs = [bytearray(chunk) for _ in self.dumps]
        try:
            for d in self.dumps:
                self.files.append(open(d.path, "rb", buffering=0))
        except OSError as exc:
            self.close()
            raise InputError(f"cannot read: {exc.strerror or exc}", d.path) from None

    def read(self, i: int, lo: int, hi: int) -> memoryview:
        d, fh = self.dumps[i], self.files[i]
        if hi - lo > len(self.bufs[i]):
            self.bufs[i] = bytearray(hi - lo)
        view = memoryview(self.bufs[i])[: hi - lo]
        fh.seek(d.data_offset + lo)
        got = _read_fully(fh, view)
        if got != hi - lo:
            raise InputError(f"file shrank while reading (expected {d.size} bytes, ended at {lo + got})", d.path)
        return view

    def close(self):
        for fh in self.files:
            fh.close()

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


def _scan(dump_a: Dump, dump_b: Dump, layout: RecordLayout, sentinels, min_run: int, chunk: int) -> _Scan:
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
    s.crc_a, s.crc_b = stream_pair(dump_a, dump_b, off, rs, consume, block=max(chunk, rs))
    for runs in s.runs.values():
        runs.finish(common)
    return s


# --- heuristics ----------------------------------------------------------------------------------------------

def _n(value: int) -> str:
    return f"{value:,}"


def _rec(layout: RecordLayout, offset: int) -> int:
    return max(0, offset - layout.offset) // layout.record_size


def _stride(dump_a, dump_b, layout, model_view, chunk) -> Finding | None:
    """One side is the lane-padded raw layout of the other (z padded to 4-byte lanes)."""
    if dump_a.size == dump_b.size:
        return None
    big, small, big_name = (dump_a, dump_b, "A") if dump_a.size > dump_b.size else (dump_b, dump_a, "B")
    small_name = "B" if big_name == "A" else "A"
    if model_view is not None and getattr(model_view, "layer", None) is not None:
        found = _stride_model(big, small, big_name, small_name, model_view)
        if found is not None:
            return found
    candidates = []
    if layout.pad_lanes:
        candidates.append((layout.record_size, tuple(l for l in range(layout.record_size)
                                                     if l not in layout.pad_lanes)))
    for z in range(1, 65):
        padded = -(-z // 4) * 4
        if padded != z:
            candidates.append((padded, tuple(range(z))))
    for padded, lanes in candidates:
        z = len(lanes)
        if not z or big.size % padded or big.size // padded * z != small.size:
            continue
        records = big.size // padded
        agree, pad_const, pad_value = _stride_compare(big, small, padded, lanes, records, chunk)
        if agree * 2 < records and not pad_const:
            continue
        pad_text = f"; its pad lanes hold 0x{pad_value:02x} throughout" if pad_const else ""
        return Finding("stride", (
            f"{big_name} is {_n(big.size)} bytes = {_n(records)} records of {padded} (z={z} padded to a "
            f"{padded}-byte lane) and {small_name} is {_n(small.size)} bytes = {_n(records)} x {z}: "
            f"{small_name} equals {big_name} with the pad lanes dropped in {_n(agree)} of {_n(records)} records"
            f"{pad_text}. {big_name} is the chip's raw layout, {small_name} the tensor: relayout needed"),
            HINTS["stride"],
            {"raw_side": big_name, "raw_size": big.size, "tensor_size": small.size, "record_size": padded,
             "z_bytes": z, "data_lanes": list(lanes), "records": records, "records_equal": agree,
             "ratio": round(big.size / small.size, 6), "pad_constant": pad_value if pad_const else None})
    return None


def _stride_compare(big, small, padded, lanes, records, chunk):
    """Records of `big` whose data lanes equal the matching record of `small`; are the pad lanes one constant?"""
    z = len(lanes)
    pad = [l for l in range(padded) if l not in lanes]
    per = max(1, chunk // padded)
    agree, pad_value, pad_const = 0, None, bool(pad)
    with _Readers([big, small], per * padded) as rd:
        for r in range(0, records, per):
            k = min(per, records - r)
            braw = np.frombuffer(rd.read(0, r * padded, (r + k) * padded), np.uint8).reshape(k, padded)
            sm = np.frombuffer(rd.read(1, r * z, (r + k) * z), np.uint8).reshape(k, z)
            agree += int(np.count_nonzero((braw[:, list(lanes)] == sm).all(axis=1)))
            if pad_const:
                p = braw[:, pad]
                if pad_value is None:
                    pad_value = int(p[0, 0])
                pad_const = bool((p == pad_value).all())
    return agree, pad_const, pad_value


def _stride_model(big, small, big_name, small_name, view) -> Finding | None:
    from forensics.tflite.relayout import layer_map, relayout

    lmap = layer_map(view.layer)
    if (big.size, small.size) != (lmap.raw_size, lmap.tensor_size) or lmap.raw_size == lmap.tensor_size:
        return None
    tensor = relayout(big.read_array(0, big.size), lmap)
    other = small.read_array(0, small.size)
    z = lmap.z_bytes
    recs = lmap.tensor_size // max(z, 1)
    equal = int(np.count_nonzero((tensor.reshape(recs, z) == other.reshape(recs, z)).all(axis=1)))
    name = view.tensor.name
    return Finding("stride", (
        f"{big_name} is {_n(big.size)} bytes: {name!r} as the chip writes it (raw size_bytes, z={z} bytes padded "
        f"to {lmap.z_bytes_padded}); {small_name} is {_n(small.size)} bytes: the TFLite tensor. After relayout "
        f"{big_name} equals {small_name} in {_n(equal)} of {_n(recs)} records: relayout needed"),
        HINTS["stride"].replace("--model M --tensor T", f"--tensor {name}"),
        {"raw_side": big_name, "raw_size": big.size, "tensor_size": small.size, "record_size": lmap.z_bytes_padded,
         "z_bytes": z, "records": recs, "records_equal": equal, "tensor": name,
         "ratio": round(big.size / small.size, 6)})


def _shift(dump_a, dump_b, scan: _Scan, max_shift: int, chunk: int) -> Finding | None:
    """B equals A moved by k bytes: windows of B found in A near their own offset, then verified by streaming."""
    if not scan.samples:
        return None
    picks = scan.samples
    if len(picks) > SHIFT_SAMPLES:
        picks = [picks[i * (len(picks) - 1) // (SHIFT_SAMPLES - 1)] for i in range(SHIFT_SAMPLES)]
    votes: dict[int, int] = {}
    windows = 0
    for p in picks:
        if dump_b.size < SHIFT_WINDOW:
            break
        wlo = min(p, dump_b.size - SHIFT_WINDOW)  # starts at a differing byte: inside a moved block
        window = dump_b.read(wlo, SHIFT_WINDOW)
        if len(set(window)) < 2:
            continue  # a constant window matches everywhere: no information
        windows += 1
        alo = max(0, wlo - max_shift)
        hay = dump_a.read(alo, min(dump_a.size, wlo + max_shift + SHIFT_WINDOW) - alo)
        found, at = 0, hay.find(window)
        while at >= 0 and found < 256:
            k = alo + at - wlo
            if k:
                votes[k] = votes.get(k, 0) + 1
            found += 1
            at = hay.find(window, at + 1)
    if not votes:
        return None
    ranked = sorted(votes, key=lambda k: (-votes[k], abs(k), k))
    for k in ranked[:4]:
        lo, hi = max(0, -k), min(dump_b.size, dump_a.size - k)
        if hi - lo < max(SHIFT_WINDOW, min(dump_a.size, dump_b.size) // 2):
            continue
        if _equal_shifted(dump_a, dump_b, k, lo, hi, chunk):
            direction = "later" if k < 0 else "earlier"
            return Finding("shift", (
                f"B equals A moved by {abs(k)} bytes: B[j] = A[j{'+' if k > 0 else '-'}{abs(k)}] for all "
                f"{_n(hi - lo)} overlapping bytes (A's data appears {abs(k)} bytes {direction} in B; "
                f"{windows} sampled windows of B searched within +-{_n(max_shift)} bytes of A)"),
                HINTS["shift"],
                {"shift_bytes": -k, "scope": "global", "overlap": [lo, hi], "overlap_bytes": hi - lo,
                 "windows": windows})
    # A local shift: every differing byte lies in one span of B that repeats B's own bytes k away and equals A
    # there (a row or block written twice: a stride bug). A detection that merely moved does not repeat in B.
    lo, hi = scan.first, scan.last + 1
    for k in ranked[:4]:
        if hi - lo < SHIFT_WINDOW or min(lo + k, lo) < 0 or hi + k > min(dump_a.size, dump_b.size):
            continue
        if _equal_shifted(dump_a, dump_b, k, lo, hi, chunk) and _equal_shifted(dump_b, dump_b, k, lo, hi, chunk):
            return Finding("shift", (
                f"B's differing span 0x{lo:x}-0x{hi:x} ({_n(hi - lo)} bytes) repeats B's own bytes {abs(k)} bytes "
                f"{'before' if k < 0 else 'after'} them (A holds them there): a block written twice at the wrong "
                f"place, as a wrong row stride does"),
                "check the row stride / block addresses used when writing B",
                {"shift_bytes": -k, "scope": "local", "overlap": [lo, hi], "overlap_bytes": hi - lo,
                 "windows": windows})
    return None


def _equal_shifted(dump_a, dump_b, k, lo, hi, chunk) -> bool:
    with _Readers([dump_a, dump_b], chunk) as rd:
        for j in range(lo, hi, chunk):
            e = min(hi, j + chunk)
            if rd.read(1, j, e) != rd.read(0, j + k, e + k):
                return False
    return True


def _signedness(layout, scan: _Scan) -> Finding | None:
    """Every byte of some lanes differs by exactly 0x80 (the sign bit) and nothing else differs."""
    if not scan.records or not scan.bytes_differing:
        return None
    data = [l for l in range(layout.record_size) if l not in layout.pad_lanes]
    flipped = [l for l in data if scan.lane_x80[l] >= 0.95 * scan.records]
    if not flipped:
        return None
    x80 = int(scan.lane_x80[data].sum())
    other = int(scan.lane_diff[data].sum()) - x80
    quiet = all(scan.lane_diff[l] <= 0.01 * scan.records for l in data if l not in flipped)
    if other > 0.01 * max(1, x80) or not quiet:
        return None
    lanes = ", ".join(str(l) for l in flipped)
    return Finding("signedness", (
        f"every byte of lane{'s' if len(flipped) > 1 else ''} {lanes} differs by 0x80 in "
        f"{_n(int(scan.lane_x80[flipped].min()))} of {_n(scan.records)} records and no other bit differs: one side "
        f"is the signed (int8) form of the other's uint8"),
        HINTS["signedness"],
        {"lanes": flipped, "records": scan.records, "bytes_xor_80": x80,
         "ratio": round(float(scan.lane_x80[flipped].min()) / scan.records, 6)})


_NAMED_PERMS = {
    (1, 0): "16-bit byte order swapped (endianness)",
    (3, 2, 1, 0): "32-bit byte order reversed (endianness)",
    (1, 0, 3, 2): "bytes swapped within each 16-bit half (16-bit endianness)",
    (2, 3, 0, 1): "16-bit halves swapped",
    (7, 6, 5, 4, 3, 2, 1, 0): "64-bit byte order reversed (endianness)",
    (3, 2, 1, 0, 7, 6, 5, 4): "32-bit byte order reversed in each word (endianness)",
}


def _lane_swap(dump_a, dump_b, layout, scan: _Scan, chunk) -> Finding | None:
    """Bytes permuted within records: the best lane permutation by sampled equality, verified over every record."""
    rs = layout.record_size
    if scan.lane_eq is None or rs < 2 or not scan.records_differing or dump_a.size != dump_b.size:
        return None
    eq = scan.lane_eq
    best, best_key = None, None
    for perm in itertools.permutations(range(rs)):
        score = int(eq[np.arange(rs), perm].sum())
        named = 0 if perm in _NAMED_PERMS else 1
        moved = sum(1 for i, j in enumerate(perm) if i != j)  # equal lanes (pad 80 80) tie: move the fewest
        key = (-score, moved, named, perm)
        if best_key is None or key < best_key:
            best, best_key = perm, key
    if best == tuple(range(rs)) or -best_key[0] < 0.99 * scan.lane_sampled * rs:
        return None
    perm_match, id_match = _records_permuted(dump_a, dump_b, layout, best, chunk)
    if perm_match < 0.99 * scan.records or id_match > 0.5 * scan.records:
        return None
    what = _NAMED_PERMS.get(best, "bytes permuted within each record")
    mapping = ", ".join(f"B lane {i} = A lane {j}" for i, j in enumerate(best) if i != j)
    return Finding("lane_swap", (
        f"{what}: with {mapping}, {_n(perm_match)} of {_n(scan.records)} {rs}-byte records of B equal A's "
        f"(without the permutation: {_n(id_match)})"),
        HINTS["lane_swap"],
        {"permutation": list(best), "record_size": rs, "records": scan.records, "records_matching": perm_match,
         "records_matching_unpermuted": id_match, "ratio": round(perm_match / scan.records, 6),
         "endianness": best in _NAMED_PERMS and "endianness" in what})


def _records_permuted(dump_a, dump_b, layout, perm, chunk) -> tuple[int, int]:
    rs, off = layout.record_size, layout.offset
    records = (min(dump_a.size, dump_b.size) - off) // rs if dump_a.size > off else 0
    per = max(1, chunk // rs)
    perm_match = id_match = 0
    with _Readers([dump_a, dump_b], per * rs) as rd:
        for r in range(0, records, per):
            k = min(per, records - r)
            lo, hi = off + r * rs, off + (r + k) * rs
            a = np.frombuffer(rd.read(0, lo, hi), np.uint8).reshape(k, rs)
            b = np.frombuffer(rd.read(1, lo, hi), np.uint8).reshape(k, rs)
            perm_match += int(np.count_nonzero((b == a[:, list(perm)]).all(axis=1)))
            id_match += int(np.count_nonzero((b == a).all(axis=1)))
    return perm_match, id_match


def _relayout(dump_a, dump_b, layout, scan: _Scan) -> Finding | None:
    """Same byte histogram, different order, over a large part of the records (a moved detection is legit)."""
    if dump_a.size != dump_b.size or not scan.bytes_differing or not np.array_equal(scan.hist_a, scan.hist_b):
        return None
    records = max(1, scan.records)
    if scan.records_differing < 0.1 * records:
        return None
    details = {"records": scan.records, "records_differing": scan.records_differing,
               "ratio": round(scan.records_differing / records, 6), "same_records": None}
    tail = ""
    if dump_a.size <= RECORD_SET_LIMIT and scan.records:
        rs, off = layout.record_size, layout.offset
        a = dump_a.read_array(off, scan.records * rs).reshape(-1, rs)
        b = dump_b.read_array(off, scan.records * rs).reshape(-1, rs)
        ua, ca = np.unique(a, axis=0, return_counts=True)
        ub, cb = np.unique(b, axis=0, return_counts=True)
        same = ua.shape == ub.shape and np.array_equal(ua, ub) and np.array_equal(ca, cb)
        details["same_records"] = bool(same)
        tail = (f"; both hold the same {rs}-byte records, only their positions differ" if same else
                f"; the {rs}-byte records themselves differ too (bytes moved across record boundaries)")
    return Finding("relayout", (
        f"A and B have the same byte histogram (every byte value occurs equally often) but "
        f"{_n(scan.records_differing)} of {_n(scan.records)} records differ{tail}: the same data in another order"),
        HINTS["relayout"], details)


def _fill(layout, scan: _Scan) -> list[tuple[str, list]]:
    out = []
    for name, runs in scan.runs.items():
        hits = [(s, e, w) for s, e, w in runs.runs if 2 * w >= e - s]
        if hits:
            out.append((name, hits))
    return out


def _fill_finding(layout, fills) -> Finding | None:
    if not fills:
        return None
    parts, ranges, total = [], [], 0
    for name, hits in fills:
        n = sum(e - s for s, e, _ in hits)
        total += n
        first = hits[0]
        parts.append(f"{name} in {len(hits)} run{'s' if len(hits) > 1 else ''} of {_n(n)} bytes (first at "
                     f"0x{first[0]:x}-0x{first[1]:x}, records {_rec(layout, first[0])}-{_rec(layout, first[1] - 1)})")
        ranges += [{"sentinel": name, "start": s, "end": e} for s, e, _ in hits[:20]]
    return Finding("fill", (
        "B holds " + "; ".join(parts) + " where A has data: never written"),
        HINTS["fill"],
        {"bytes": total, "ranges": ranges, "sentinels": [name for name, _ in fills]})


def _truncation(dump_a, dump_b, layout, scan: _Scan, fills) -> Finding | None:
    if dump_a.size != dump_b.size:
        short, long_, sname, lname = ((dump_b, dump_a, "B", "A") if dump_b.size < dump_a.size
                                      else (dump_a, dump_b, "A", "B"))
        rs = layout.record_size
        prefix = ("identical" if scan.bytes_differing == 0 else
                  f"differ in {_n(scan.bytes_differing)} bytes (first at 0x{scan.first:x})")
        return Finding("truncation", (
            f"{sname} is {_n(short.size)} bytes and {lname} {_n(long_.size)}: {sname} stops at record "
            f"{_rec(layout, short.size)} of {_n(-(-max(0, long_.size - layout.offset) // rs))} "
            f"({_n(long_.size - short.size)} bytes missing); the common {_n(short.size)} bytes are {prefix}"),
            HINTS["truncation"],
            {"shorter": sname, "size_a": dump_a.size, "size_b": dump_b.size, "missing_bytes": long_.size - short.size,
             "stops_at_record": _rec(layout, short.size), "tail_unwritten_from": None,
             "ratio": round(short.size / long_.size, 6)})
    for name, hits in fills:
        s, e, _ = hits[-1]
        if e == dump_b.size and (e - s >= 64 or e - s >= 0.01 * dump_b.size):
            return Finding("truncation", (
                f"B's last {_n(e - s)} bytes (from 0x{s:x}, record {_rec(layout, s)} of "
                f"{_n(scan.records)}) are {name} where A has data: the device stopped writing at record "
                f"{_rec(layout, s)}"),
                HINTS["truncation"],
                {"shorter": None, "size_a": dump_a.size, "size_b": dump_b.size, "missing_bytes": e - s,
                 "stops_at_record": _rec(layout, s), "tail_unwritten_from": s, "sentinel": name,
                 "ratio": round(s / dump_b.size, 6)})
    return None


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
        HINTS["head_window"],
        {"window": window, "head_record": first.hex(" "), "records_differing_after": differing,
         "first_differing_offset": scan.first, "ratio": round(differing / later, 6)})


def _stale(dump_a, dump_b, previous: Dump, chunk) -> Finding | None:
    """Where B differs from A, does it hold the previous run's bytes?"""
    common = min(dump_a.size, dump_b.size, previous.size)
    differing = from_previous = 0
    with _Readers([dump_a, dump_b, previous], chunk) as rd:
        for lo, hi in block_bounds(common, 0, 1, chunk):
            a = np.frombuffer(rd.read(0, lo, hi), np.uint8)
            b = np.frombuffer(rd.read(1, lo, hi), np.uint8)
            d = a != b
            nd = int(np.count_nonzero(d))
            if not nd:
                continue
            p = np.frombuffer(rd.read(2, lo, hi), np.uint8)
            differing += nd
            from_previous += int(np.count_nonzero(d & (b == p)))
    differing += abs(dump_a.size - dump_b.size)
    if not differing or from_previous < 0.9 * differing:
        return None
    whole = previous.size == dump_b.size and from_previous == differing and _files_equal(dump_b, previous, chunk)
    if whole:
        text = (f"B is byte-identical to the previous run's buffer {previous.path} ({_n(previous.size)} bytes) "
                f"and differs from A: this run's output was never written (stale buffer)")
    else:
        text = (f"{_n(from_previous)} of the {_n(differing)} bytes where B differs from A hold the previous run's "
                f"bytes ({previous.path}): those parts were not rewritten this run")
    return Finding("stale", text, HINTS["stale"],
                   {"previous": previous.path, "identical_to_previous": whole, "bytes_differing": differing,
                    "bytes_from_previous": from_previous, "ratio": round(from_previous / differing, 6)})


def _files_equal(x: Dump, y: Dump, chunk) -> bool:
    if x.size != y.size:
        return False
    with _Readers([x, y], chunk) as rd:
        for lo, hi in block_bounds(x.size, 0, 1, chunk):
            if rd.read(0, lo, hi) != rd.read(1, lo, hi):
                return False
    return True


# --- entry point -------------------------------------------------------------------------------------------------

def _as_dump(value, what: str) -> Dump:
    if isinstance(value, Dump):
        return value
    if isinstance(value, (str, bytes, os.PathLike)):
        return open_dump(value)
    raise TypeError(f"{what} must be a Dump or a path, not {type(value).__name__}")


def diagnose_dumps(dump_a, dump_b, *, layout: RecordLayout | None = None, previous=None, model_view=None,
                   sentinels=None, min_run: int = DEFAULT_MIN_RUN, max_shift: int = DEFAULT_MAX_SHIFT,
                   window: int = DEFAULT_WINDOW, chunk: int = DEFAULT_CHUNK) -> DiagnoseResult:
    """Run every heuristic on the pair A (reference) / B (under test); a clean pair has no findings.

    `layout` (record size, offset, pad lanes) defaults to the model view's, else A's or B's sidecar, else
    4-byte records. `previous` is an earlier run's buffer (path or Dump) for the stale check. `sentinels`
    adds `(name, pattern bytes)` prefill patterns to SENTINELS. `layout.count` is not used: the whole common
    length is examined.
    """
    dump_a, dump_b = _as_dump(dump_a, "dump_a"), _as_dump(dump_b, "dump_b")
    prev = _as_dump(previous, "previous") if previous is not None else None
    if min_run <= 0 or window <= 0 or max_shift < 0 or chunk <= 0:
        raise InputError("min_run, window and chunk must be positive and max_shift not negative")
    if layout is None:
        if model_view is not None:
            layout = model_view.layout
        else:
            layout = layout_from(dump_a.meta if dump_a.meta is not None else dump_b.meta)
    shorter = dump_a if dump_a.size <= dump_b.size else dump_b
    if layout.offset >= shorter.size:
        raise InputError(f"offset {layout.offset} is past the end of the data ({shorter.size} bytes)", shorter.path)
    pats = tuple(SENTINELS) + tuple((str(n), bytes(p)) for n, p in (sentinels or ()) if p)
    scan = _scan(dump_a, dump_b, layout, pats, min_run, chunk)

    findings: list[Finding] = []
    same = dump_a.size == dump_b.size and scan.bytes_differing == 0
    if not same:
        stride = _stride(dump_a, dump_b, layout, model_view, chunk)
        if stride is not None:
            findings.append(stride)
        else:
            shift = _shift(dump_a, dump_b, scan, max_shift, chunk)
            if shift is not None:
                findings.append(shift)
            else:
                for found in (_signedness(layout, scan), _lane_swap(dump_a, dump_b, layout, scan, chunk)):
                    if found is not None:
                        findings.append(found)
                if not findings:
                    found = _relayout(dump_a, dump_b, layout, scan)
                    if found is not None:
                        findings.append(found)
            fills = _fill(layout, scan)
            fill = _fill_finding(layout, fills)
            if fill is not None:
                findings.append(fill)
            trunc = _truncation(dump_a, dump_b, layout, scan, fills)
            if trunc is not None and not (shift is not None and trunc["shorter"] is not None
                                          and abs(dump_a.size - dump_b.size) == abs(shift["shift_bytes"])):
                findings.append(trunc)
            head = _head_window(dump_a, dump_b, layout, scan, window)
            if head is not None:
                findings.append(head)
        if prev is not None:
            stale = _stale(dump_a, dump_b, prev, chunk)
            if stale is not None:
                findings.append(stale)
    order = {k: i for i, k in enumerate(KINDS)}
    findings.sort(key=lambda f: order.get(f.kind, len(order)))
    return DiagnoseResult(
        path_a=dump_a.path, path_b=dump_b.path, size_a=dump_a.size, size_b=dump_b.size,
        crc32_a=scan.crc_a, crc32_b=scan.crc_b, record_size=layout.record_size,
        records_compared=scan.records, records_differing=scan.records_differing,
        bytes_differing=scan.bytes_differing, first_differing_offset=scan.first,
        findings=tuple(findings), previous=prev.path if prev is not None else None)
