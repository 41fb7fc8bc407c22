"""fill: B keeps a prefill pattern (0xCC, 0xCD, DEADBEEF, ...) in runs where A has data: bytes never written."""

from __future__ import annotations

from dataclasses import dataclass

from forensics.diagnose.kinds.base import Bug, Kind, n, parse_hex, parse_ranges, pattern_at, pattern_name, records_of
from forensics.diagnose.result import Finding
from forensics.diagnose.region import PAGE


@dataclass(frozen=True)
class Fill(Bug):
    """B holds `pattern` (aligned to offset 0) in each of `ranges` [(start, end)]: never written."""

    ranges: tuple = ()
    pattern: bytes = b"\xcc"
    kind = "fill"
    structural = True

    def values(self, source, pos, pred, defined):
        for s, e in self.ranges:
            m = (pos >= s) & (pos < e)
            if m.any():
                pred[m] = pattern_at(self.pattern, pos[m])
                defined[m] = True

    def params(self):
        return {"ranges": [list(r) for r in self.ranges], "pattern": self.pattern.hex()}

    def spec(self):
        return "fill:" + ",".join(f"{s}-{e}" for s, e in self.ranges) + f":{self.pattern.hex()}"


def parse(args, size, previous=None):
    return Fill(parse_ranges(args[0]), parse_hex(args[1]) if len(args) > 1 else b"\xcc")


def candidates(ctx) -> list:
    """The scan's sentinel runs that do not reach B's end (those are a truncation's)."""
    out = []
    for _, pat, hits in ctx.fills:
        rest = tuple((s, e) for s, e, _ in hits if e != ctx.n_b)
        if rest:
            out.append(Fill(rest, pat))
    return out


def fill_finding(ctx, name: str, ranges, explains) -> Finding:
    total = sum(e - s for s, e in ranges)
    s0, e0 = ranges[0]
    paged = all(s % PAGE == 0 and e % PAGE == 0 for s, e in ranges)
    pages = sum(e - s for s, e in ranges) // PAGE
    where = (f"{'whole 4 KiB page' + ('s' if pages > 1 else '')} {s0 // PAGE}"
             + (f"-{e0 // PAGE - 1}" if e0 - s0 > PAGE else "") + ", " if paged else "")
    check = ("the DMA length / completion before reading the buffer" if not paged else
             "the scatter-gather list / MDL for those pages (each page mapped and written) and the DMA completion")
    return Finding("fill", (
        f"B holds {name} in {len(ranges)} run{'s' if len(ranges) > 1 else ''} of {n(total)} bytes "
        f"(first at {where}0x{s0:x}-0x{e0:x}, records {records_of(ctx.layout, s0, e0)}) where A has data: "
        "never written"),
        f"those bytes of {ctx.b} were never written: check {check}",
        {"bytes": total, "pages": pages if paged else None, "ranges": [{"sentinel": name, "start": s, "end": e} for s, e in ranges[:20]],
         "sentinels": [name]}, explains)


def finding(c, ctx, explains):
    return [fill_finding(ctx, pattern_name(ctx, c.bug.pattern), c.bug.ranges, explains)]


KIND = Kind("fill", rank=13, display=12, usage="fill:START-END[,START-END...][:HEX]",
            description="B keeps a prefill pattern (default cc) in those ranges",
            parse=parse, candidates=candidates, finding=finding, propose=1)
