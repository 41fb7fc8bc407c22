"""oversize: B is a larger allocation holding all of A at some offset (page rounding, buffers allocated together,
a header before the data)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, n, parse_int
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError

PROBE = 64  # bytes of A looked for in B's head to find where A starts


@dataclass(frozen=True)
class Oversize(Bug):
    """B is a larger allocation holding all of A at `offset` (page rounding, a combined allocation)."""

    offset: int
    extra: int
    kind = "oversize"
    structural = True
    placed = True

    def size_out(self, n):
        return n + self.extra

    def index(self, n, pos):
        idx = pos - self.offset
        return np.where((idx >= 0) & (idx < n), idx, -1)

    def complexity(self):
        return self.offset

    def params(self):
        return {"offset": self.offset, "extra_bytes": self.extra}

    def spec(self):
        return f"oversize:{self.extra}:{self.offset}"


def parse(args, size, previous=None):
    extra = parse_int(args[0], "EXTRA")
    offset = parse_int(args[1], "OFFSET") if len(args) > 1 else 0
    if extra <= 0 or not 0 <= offset <= extra:
        raise InputError("oversize needs EXTRA > 0 and 0 <= OFFSET <= EXTRA")
    return Oversize(offset, extra)


def candidates(ctx) -> list:
    n_a, n_b = ctx.n_a, ctx.n_b
    if n_b <= n_a:
        return []
    extra = n_b - n_a
    offsets = {0}
    for probe in (0, n_a // 2):
        w = ctx.src_a.read(probe, probe + PROBE).tobytes()
        if len(w) == PROBE and len(set(w)) > 1:
            at = ctx.src_b.read(probe, probe + extra + PROBE).tobytes().find(w)
            if at >= 0:
                offsets.add(at)
    return [Oversize(k, extra) for k in sorted(offsets) if k <= extra]


def finding(c, ctx, explains):
    bug, b, n_a, n_b = c.bug, ctx.b, ctx.n_a, ctx.n_b
    k = bug.offset
    text = (f"B is {n(n_b)} bytes and holds all {n(n_a)} bytes of A at offset {k} ({n(bug.extra)} extra "
            "bytes): a larger allocation (a page-rounded DMA buffer, or buffers allocated together) dumped whole")
    cut = f"head -c {n_a} {b} > cut.bin" if k == 0 else f"dd if={b} of=cut.bin bs=1 skip={k} count={n_a}"
    hint = f"compare only A's {n(n_a)} bytes: cut B with `{cut}`, or dump the layer's size_bytes, not the allocation"
    return [Finding("oversize", text, hint, dict(bug.params()), explains)]


KIND = Kind("oversize", rank=0, display=2, usage="oversize:EXTRA[:OFFSET]",
            description="B is EXTRA bytes longer and holds A at OFFSET (default 0)",
            parse=parse, candidates=candidates, finding=finding)
