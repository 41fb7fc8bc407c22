"""rotation: B is A rotated: B starts at A's byte r and wraps around to A's start (a ring buffer read from another
index, a circular DMA started k pages in). Every byte of A appears once in B, unlike pages repeated."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds import shift
from forensics.diagnose.kinds.base import Bug, Kind, n, parse_int
from forensics.diagnose.region import PAGE
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError

PROBE = 64                    # bytes of A's head looked for in B
MIN_PART = 16                 # the shorter part of a rotation holds at least this many bytes
SEARCH_LIMIT = 64 << 20       # B is searched whole for A's head up to this size


@dataclass(frozen=True)
class Rotation(Bug):
    """B[i] = A[(i + r) mod n]: A's bytes from r to its end, then A's first r bytes."""

    r: int
    kind = "rotation"
    relocates = True

    def index(self, n, pos):
        return (pos + self.r) % n if n else pos

    def complexity(self):
        return 0

    def params(self):
        return {"rotate_bytes": self.r, "pages": self.r // PAGE if self.r % PAGE == 0 else None}

    def spec(self):
        return f"rotation:{self.r}"


def parse(args, size, previous=None):
    r = parse_int(args[0], "R")
    if not 0 < r < size:
        raise InputError(f"rotation R must be between 1 and {size - 1} bytes, got {r}")
    return Rotation(r)


def candidates(ctx) -> list:
    """Same-size pairs: where A's head sits in B (searched whole up to SEARCH_LIMIT), and pairs of voted shifts
    n bytes apart (-r for A's tail at B's start, n - r for A's head after it)."""
    size = ctx.n_a
    if size != ctx.n_b or size < 2 * PROBE:
        return []
    rs = set()
    votes = shift.ranked(ctx)
    for k in votes:
        if k < 0 and (k + size) in votes:
            rs.add(-k)
    if size <= SEARCH_LIMIT:
        for probe in (PROBE, MIN_PART):  # A's head wraps to B's last r bytes, r may be shorter than PROBE
            head = ctx.src_a.read(0, probe).tobytes()
            if len(set(head)) > 1:
                at = _find(ctx.src_b, head)
                if at > 0:
                    rs.add(size - at)
                    break
        # in periodic data (records that repeat) A's head matches every period along: the window around A's
        # rarest byte value places A's content in B whatever the period
        rare = _rare_window(ctx)
        if rare is not None:
            q, window = rare
            at = _find(ctx.src_b, window)
            if at >= 0:
                rs.add((q - at) % size)
    return [Rotation(r) for r in sorted(rs) if 0 < r < size and _wraps(ctx, r)]


def _rare_window(ctx) -> tuple[int, bytes] | None:
    """(offset, bytes) of the PROBE bytes of A around the first byte of the value rarest in A's histogram."""
    hist = ctx.scan.hist_a
    present = np.flatnonzero(hist)
    if present.size < 2:
        return None
    value = int(present[np.argmin(hist[present])])
    at = _find(ctx.src_a, bytes([value]))
    if at < 0:
        return None
    q = max(0, min(at - PROBE // 2, ctx.n_a - PROBE))
    return q, ctx.src_a.read(q, q + PROBE).tobytes()


def _find(src, needle: bytes, chunk: int = 2 << 20) -> int:
    """The first offset of `needle` in a source, read chunk by chunk (memory bounded)."""
    for lo in range(0, src.size, chunk):
        at = src.read(lo, min(src.size, lo + chunk + len(needle) - 1)).tobytes().find(needle)
        if at >= 0:
            return lo + at
    return -1


CHECK_SLICES, CHECK_SLICE = 16, 4096  # slices of each part compared before a rotation is proposed


def _wraps(ctx, r: int) -> bool:
    """Both parts hold and the shorter one is not all one value: B's last r bytes are A's first r (the wrap a shift by -r would leave as vacated bytes)
    and B's first n - r bytes are A's last, each over at least PROBE bytes and (nearly) byte for byte (checked on
    slices spread over each part)."""
    size = ctx.n_a
    if min(r, size - r) < MIN_PART:
        return False
    # the part that wraps must carry data: A's bytes all one value there (zeros at A's end) wrapped to B's head
    # are as well a shift whose vacated bytes hold that fill, and a shift is what moved B (by what is at the ends)
    short = ctx.src_a.read(r, size) if size - r <= r else ctx.src_a.read(0, r)
    if np.unique(short[:1 << 16]).size < 2:
        return False
    for b_lo, a_lo, length in ((0, r, size - r), (size - r, 0, r)):
        wrong = total = 0
        for start in np.linspace(0, max(0, length - CHECK_SLICE), CHECK_SLICES).astype(np.int64).tolist():
            width = min(CHECK_SLICE, length - start)
            got = ctx.src_b.read(b_lo + start, b_lo + start + width)
            want = ctx.src_a.read(a_lo + start, a_lo + start + width)
            wrong += int(np.count_nonzero(got != want))
            total += width
        if wrong > 0.01 * total:
            return False
    return True


def finding(c, ctx, explains):
    bug = c.bug
    details = dict(bug.params())
    r, size = bug.r, ctx.n_a
    pages = details["pages"]
    by = f"{n(r)} bytes" + (f" ({pages} page{'s' if pages != 1 else ''} of {PAGE:,} bytes)" if pages else "")
    text = (f"B is A rotated by {by}: B starts with A's bytes from 0x{r:x} and wraps around to A's start at "
            f"B's 0x{size - r:x}; every byte of A appears once: a ring buffer read from another start")
    hint = (f"check the ring / circular buffer's start (read or write index) used for {ctx.b}: it begins "
            f"{by} into the buffer")
    return [Finding("rotation", text, hint, details, explains)]


KIND = Kind("rotation", rank=3.5, display=3.5, usage="rotation:R",
            description="B is A rotated: it starts at A's byte R and wraps around",
            parse=parse, candidates=candidates, finding=finding)
