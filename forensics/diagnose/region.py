"""The scored positions of a pair and where things are in it: B's bytes read through the dumps (the whole pair,
or sampled blocks of a large one), the runs of a mask, and the ranges / records / lanes a mask covers."""

from __future__ import annotations

import numpy as np

from forensics.diagnose.kinds.base import compress_lanes
from forensics.io.dump import Dump, DumpReader

EXACT_LIMIT = 2 << 20         # pairs up to this size are scored on every byte
SAMPLE_BLOCKS = 24            # larger pairs: this many blocks ...
SAMPLE_BLOCK = 24 << 10       # ... of this size
PAGE = 4096                   # the x86 / x64 page size: the unit of an MDL / scatter-gather list
LINE = 64                     # a cache line on x86 / x64 and ARM


def record_of(layout, offset: int) -> int:
    return max(0, offset - layout.offset) // layout.record_size


class DumpSource:
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


class Region:
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


def blocks(n_b: int, n_a: int, scan) -> tuple[list, bool]:
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


def extent(bits: np.ndarray) -> tuple[int, int]:
    """[first, last] indices of the True bits of a mask with at least one."""
    return int(np.argmax(bits)), bits.size - 1 - int(np.argmax(bits[::-1]))


def mask_runs(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """[start, end) region indices of the runs of True in a non-empty mask, from their edges (no per-byte
    offsets)."""
    edges = np.flatnonzero(d[1:] != d[:-1]) + 1
    starts = np.concatenate(([0] if d[0] else [], edges[d[edges]])).astype(np.int64)
    ends = np.concatenate((edges[~d[edges]], [d.size] if d[-1] else [])).astype(np.int64)
    return starts, ends


def scattered_lines(region: Region, d: np.ndarray, most: int = 4) -> np.ndarray | None:
    """The cache lines holding the differences `d` (a mask over the region), when they form at least two
    separate runs of at most `most` lines; else None."""
    if not d.any():
        return None
    starts, ends = mask_runs(d)
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


def whole_pages(region: Region, d: np.ndarray, size: int) -> int | None:
    """How many 4 KiB pages the differences `d` fill, when every stretch of them (gaps under 256 bytes, where
    bytes are equal by chance, bridged) starts near a page boundary and ends near one or at B's end; else None.
    Exact pairs only."""
    if not region.exact or not d.any():
        return None
    starts, ends = mask_runs(d)
    keep = np.concatenate(([True], starts[1:] - ends[:-1] >= 256))
    starts, ends = starts[keep], np.concatenate((ends[np.flatnonzero(keep)[1:] - 1], ends[-1:]))
    slack = 256
    if starts[0] < slack and size - ends[-1] < slack and starts.size == 1:
        return None  # all of B differs: nothing says pages (another inference, the wrong buffer)
    ok = (starts % PAGE < slack) & ((-ends % PAGE < slack) | (size - ends < slack)) & (ends - starts >= PAGE - 2 * slack)
    if not ok.all():
        return None
    return int(np.rint((ends - starts) / PAGE).sum())



def byte_ranges(p: np.ndarray, gap: int = 16, limit: int = 8) -> tuple[list, int]:
    """Byte ranges [start, end) of sorted absolute offsets, merged across small gaps."""
    if not p.size:
        return [], 0
    breaks = np.flatnonzero(np.diff(p) > gap)
    starts = np.concatenate(([p[0]], p[breaks + 1]))
    ends = np.concatenate((p[breaks], [p[-1]])) + 1
    order = np.argsort(-(ends - starts), kind="stable")[:limit]
    ranges = sorted([int(starts[i]), int(ends[i])] for i in order)
    return ranges, int(starts.size)


def where(mask, region, layout, unit: str = "record") -> dict:
    step = max(1, int(np.count_nonzero(mask)) >> 16)  # huge residuals: summarise every step-th offset
    p = region.at(mask, step)
    ranges, count = byte_ranges(p, gap=16 * step)
    rs, off = layout.record_size, layout.offset
    recs = np.unique((p[p >= off] - off) // rs) if p.size else np.zeros(0, np.int64)
    lanes = np.unique((p[p >= off] - off) % rs) if p.size else np.zeros(0, np.int64)
    return {"ranges": ranges, "range_count": count, f"{unit}s": span_text(recs),
            "lanes": span_text(lanes), "record_size": rs}


def span_text(values: np.ndarray, parts: int = 8) -> str:
    """Sorted unique integers as ranges ('0-90'); more than `parts` runs become 'first-last (N in M runs)'."""
    if not values.size:
        return ""
    runs = int(np.count_nonzero(np.diff(values) != 1)) + 1
    if runs <= parts:
        return compress_lanes(values.tolist())
    return f"{int(values[0])}-{int(values[-1])} ({values.size:,} in {runs:,} runs)"
