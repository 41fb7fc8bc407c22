"""shift: A's bytes appear k bytes later (or earlier) in B, over the whole buffer or one span of it (a DMA
offset off by k, a header not skipped, one tile or row block written at the wrong place)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, n, parse_int, parse_ranges, records_of
from forensics.diagnose.result import Finding

SHIFT_WINDOW = 64             # bytes of B searched for in A
SHIFT_SAMPLES = 16            # windows sampled across the differing chunks
TOP_SHIFTS = 6                # the most voted shifts become candidates
MAX_MATCHES = 64              # matches of a window taken per reach (SHIFT_WINDOW, 4x that ... the whole reach)


@dataclass(frozen=True)
class Shift(Bug):
    """B[i] = A[i - k]: A's data appears k bytes later in B (k < 0: earlier); only in [start, end) if given."""

    k: int
    start: int | None = None
    end: int | None = None
    kind = "shift"
    relocates = True
    spans = True
    vacates = True

    def index(self, n, pos):
        idx = pos - self.k
        idx = np.where((idx >= 0) & (idx < n), idx, -1)
        if self.start is None:
            return idx
        inside = (pos >= self.start) & (pos < self.end)
        return np.where(inside, idx, pos)

    def local(self, start, end):
        return Shift(self.k, start, end)

    def complexity(self):
        return abs(self.k) + (0 if self.start is None else 1)

    def params(self):
        scope = "global" if self.start is None else "local"
        out = {"shift_bytes": self.k, "scope": scope}
        if self.start is not None:
            out["span"] = [self.start, self.end]
        return out

    def spec(self):
        return f"shift:{self.k}" + ("" if self.start is None else f"@{self.start}-{self.end}")


def parse(args, size, previous=None):
    k_text, _, span = args[0].partition("@")
    k = parse_int(k_text, "K")
    if span:
        (s, e), = parse_ranges(span)
        return Shift(k, s, min(e, size))
    return Shift(k)


def votes(ctx) -> dict:
    """k -> number of sampled windows of B found in A k bytes earlier (B[j] = A[j - k]); the windows start at
    differing bytes spread over the scored region and the scan's chunks."""
    dump_a, dump_b, region, max_shift = ctx.dump_a, ctx.dump_b, ctx.region, ctx.max_shift
    picks = ctx.scan.samples
    if len(picks) > SHIFT_SAMPLES:
        picks = [picks[i * (len(picks) - 1) // (SHIFT_SAMPLES - 1)] for i in range(SHIFT_SAMPLES)]
    idx = np.flatnonzero(region.diff)
    if idx.size:
        picks = sorted(set(picks) | set(region.at(idx[np.linspace(0, idx.size - 1, min(SHIFT_SAMPLES, idx.size))
                                                      .astype(np.int64)]).tolist()))
    out: dict[int, int] = {}
    for p in picks:
        if dump_b.size < SHIFT_WINDOW:
            break
        wlo = min(p, dump_b.size - SHIFT_WINDOW)
        window = dump_b.read(wlo, SHIFT_WINDOW)
        if len(set(window)) < 2:
            continue
        # the nearest matches first, then ever farther up to the whole reach: in periodic data (records that
        # repeat) a window matches every period along, and the first matches of the whole reach are far ones
        found: set[int] = set()
        reaches, r = {max_shift}, SHIFT_WINDOW
        while r < max_shift:
            reaches.add(r)
            r *= 4
        for reach in sorted(reaches):
            alo = max(0, wlo - reach)
            hay = dump_a.read(alo, min(dump_a.size, wlo + reach + SHIFT_WINDOW) - alo)
            at, seen = hay.find(window), 0
            while at >= 0 and seen < MAX_MATCHES:
                k = wlo - (alo + at)
                if k:
                    found.add(k)
                seen += 1
                at = hay.find(window, at + 1)
        for k in found:
            out[k] = out.get(k, 0) + 1
    return out


def ranked(ctx) -> list[int]:
    """The shifts the sampled windows vote for, most votes first (also read by pitch)."""
    def make():
        v = votes(ctx)
        return sorted(v, key=lambda k: (-v[k], abs(k), k))
    return ctx.cached("shift_ranked", make)


def candidates(ctx) -> list:
    return [Shift(k) for k in ranked(ctx)[:TOP_SHIFTS]]


def finding(c, ctx, explains):
    bug, b = c.bug, ctx.b
    details = dict(bug.params())
    n_a, n_b = ctx.n_a, ctx.n_b
    k = bug.k
    direction = "later" if k > 0 else "earlier"
    if bug.start is None:
        lo, hi = max(0, k), min(n_b, n_a + k)
        details["overlap"] = [lo, hi]
        details["overlap_bytes"] = hi - lo
        text = (f"B equals A moved by {abs(k)} bytes: A's data appears {abs(k)} bytes {direction} in B "
                f"(B[j] = A[j{'-' if k > 0 else '+'}{abs(k)}] over the {n(hi - lo)} overlapping bytes)")
        hint = (f"check the buffer's start address / DMA offset of {b}: an off-by-{abs(k)} in the descriptor, "
                "or a header not skipped")
    else:
        s, e = bug.start, bug.end
        details["overlap"] = [s, e]
        details["overlap_bytes"] = e - s
        text = (f"B's bytes 0x{s:x}-0x{e:x} ({n(e - s)} bytes, records {records_of(ctx.layout, s, e)}) are A's "
                f"moved {abs(k)} bytes {direction}; the rest of B matches A: that span (a tile, a row block, "
                "a record range) was written at the wrong place")
        hint = (f"check the address / row stride used for bytes 0x{s:x}-0x{e:x} of {b}: written {abs(k)} bytes "
                f"{'late' if k > 0 else 'early'}")
    return [Finding("shift", text, hint, details, explains)]


KIND = Kind("shift", rank=5, display=4, usage="shift:K[@START-END]",
            description="A's bytes appear K bytes later in B (K < 0: earlier); only in START-END",
            parse=parse, candidates=candidates, finding=finding, propose=-1)
