"""lane_swap: bytes permuted within every word: byte order of 16/32/64-bit words (endianness), 16-bit halves,
RGB <-> BGR, a record's lanes in another order; over the whole buffer or one span (a chunk copied with the other
byte order)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, compress_lanes, parse_int, parse_ranges
from forensics.diagnose.kinds.stride import MAX_STRIDE_Z, pad_periods
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError

MAX_LANE_RECORD = 8  # lane permutations are searched exhaustively up to this record size

_WORDS = {"16": (1, 0), "32": (3, 2, 1, 0), "64": (7, 6, 5, 4, 3, 2, 1, 0), "halves": (2, 3, 0, 1),
          "halves64": (4, 5, 6, 7, 0, 1, 2, 3), "rgb": (2, 1, 0)}
WORD_NAMES = {v: k for k, v in _WORDS.items()}
_PERM_TEXT = {"16": "16-bit byte order swapped (endianness)", "32": "32-bit byte order reversed (endianness)",
              "64": "64-bit byte order reversed (endianness)", "halves": "16-bit halves of each 32-bit word swapped",
              "halves64": "32-bit halves of each 64-bit word swapped",
              "rgb": "channel order of 3-byte pixels reversed (RGB <-> BGR)"}


@dataclass(frozen=True)
class LaneSwap(Bug):
    """Bytes permuted within every `len(permutation)`-byte word from `offset`: B lane i = A lane p[i]."""

    permutation: tuple = (1, 0)
    offset: int = 0
    start: int | None = None  # only the words inside [start, end) (a chunk copied with another byte order)
    end: int | None = None
    kind = "lane_swap"
    relocates = True
    spans = True

    def index(self, n, pos):
        p = len(self.permutation)
        rel = pos - self.offset
        base = rel - rel % p
        perm = np.asarray(self.permutation, np.int64)
        idx = self.offset + base + perm[rel % p]
        whole = (rel >= 0) & (base + p + self.offset <= n)
        if self.start is not None:
            whole &= (self.offset + base >= self.start) & (self.offset + base + p <= self.end)
        return np.where(whole, idx, pos)

    def local(self, start, end):
        """Limited to the whole words inside B's bytes [start, end)."""
        p = len(self.permutation)
        start -= (start - self.offset) % p
        end += -(end - self.offset) % p
        return LaneSwap(self.permutation, self.offset, start, end)

    def complexity(self):
        return len(self.permutation)

    @property
    def word(self) -> str | None:
        return WORD_NAMES.get(tuple(self.permutation))

    def describe(self) -> str:
        return _PERM_TEXT.get(self.word or "", "bytes permuted within each record")

    def params(self):
        out = {"permutation": list(self.permutation), "word_bytes": len(self.permutation),
               "endianness": self.word in ("16", "32", "64")}
        if self.start is not None:
            out.update({"scope": "local", "span": [self.start, self.end]})
        return out

    def spec(self):
        span = "" if self.start is None else f"@{self.start}-{self.end}"
        return f"lane_swap:{self.word or ','.join(map(str, self.permutation))}{span}"


def parse(args, size, previous=None):
    word, _, span = (args[0] if args else "32").partition("@")
    perm = _WORDS.get(word) or tuple(parse_int(x, "P") for x in word.split(","))
    if sorted(perm) != list(range(len(perm))) or len(perm) < 2:
        raise InputError(f"lane_swap permutation {word!r} must reorder 0..n-1 (or 16, 32, 64, halves, halves64, rgb)")
    if span:
        (s, e), = parse_ranges(span)
        return LaneSwap(tuple(perm), 0, s, min(e, size))
    return LaneSwap(tuple(perm))


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


def candidates(ctx) -> list:
    """Byte order of 16/32/64-bit words and 3-byte pixels whatever the record size; the best permutation of the
    layout's record lanes; the lane (class, channel) order of each record reversed, its trailing pad lanes kept."""
    if ctx.n_a != ctx.n_b:
        return []
    layout = ctx.layout
    out = []
    for perm in _WORDS.values():
        out.append(LaneSwap(perm))
        if layout.offset % len(perm):
            out.append(LaneSwap(perm, layout.offset))
    best = _best_permutation(ctx.scan, layout)
    if best is not None:
        out.append(LaneSwap(best, layout.offset))
    periods_a, periods_b = pad_periods(ctx)
    for p in sorted({layout.record_size, *(q for q, _ in periods_a + periods_b)}):
        if MAX_LANE_RECORD < p <= MAX_STRIDE_Z:
            for t in sorted({0, *(t for q, t in periods_a if q == p)}):
                out.append(LaneSwap(tuple(range(p - t - 1, -1, -1)) + tuple(range(p - t, p)), layout.offset))
    return out


def finding(c, ctx, explains):
    bug = c.bug
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
    hint = (f"bytes of {ctx.b} move within each word: check element endianness and the lane / channel order "
            "the driver assumes")
    return [Finding("lane_swap", text, hint, dict(bug.params()), explains)]


KIND = Kind("lane_swap", rank=6, display=9, usage="lane_swap:16|32|64|halves|halves64|rgb|P,E,R,M[@START-END]",
            description="bytes permuted in every word (byte order, RGB/BGR); only in START-END",
            parse=parse, candidates=candidates, finding=finding)
