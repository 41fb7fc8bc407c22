"""truncation: the copy stopped early: B is shorter than A, or B's tail keeps its prefill pattern."""

from __future__ import annotations

from dataclasses import dataclass

from forensics.diagnose.kinds.base import Bug, Kind, n, parse_hex, parse_int, pattern_at, pattern_name
from forensics.diagnose.kinds.fill import fill_finding
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError


@dataclass(frozen=True)
class Truncation(Bug):
    """The copy stopped after `keep` bytes: B is shorter, or (with a pattern) B's tail keeps its prefill."""

    keep: int
    pattern: bytes | None = None
    kind = "truncation"
    structural = True

    def size_out(self, n):
        return min(n, self.keep) if self.pattern is None else n

    def values(self, source, pos, pred, defined):
        if self.pattern is not None:
            m = pos >= self.keep
            pred[m] = pattern_at(self.pattern, pos[m])
            defined[m] = True

    def params(self):
        return {"keep": self.keep, "pattern": None if self.pattern is None else self.pattern.hex()}

    def spec(self):
        return f"truncation:{self.keep}" + ("" if self.pattern is None else f":{self.pattern.hex()}")


def parse(args, size, previous=None):
    keep = parse_int(args[0], "KEEP")
    if not 0 < keep < size:
        raise InputError(f"truncation KEEP must be between 1 and {size - 1} bytes, got {keep}")
    return Truncation(keep, parse_hex(args[1]) if len(args) > 1 else None)


def candidates(ctx) -> list:
    """B shorter than A; a sentinel run reaching B's end (the tail never written)."""
    out = [Truncation(ctx.n_b)] if ctx.n_b < ctx.n_a else []
    for _, pat, hits in ctx.fills:
        tail = [h for h in hits if h[1] == ctx.n_b]
        if tail:
            out.append(Truncation(tail[0][0], pat))
    return out


def finding(c, ctx, explains):
    bug, layout = c.bug, ctx.layout
    n_a, n_b, rs = ctx.n_a, ctx.n_b, layout.record_size
    out = []
    if bug.pattern is None:
        text = (f"B is {n(n_b)} bytes and A {n(n_a)}: B stops at record {max(0, n_b - layout.offset) // rs} of "
                f"{n(-(-max(0, n_a - layout.offset) // rs))} ({n(n_a - n_b)} bytes missing); the common bytes are "
                f"{'identical' if not ctx.common_differ else 'different too'}")
        details = {"shorter": "B", "size_a": n_a, "size_b": n_b, "missing_bytes": n_a - n_b,
                   "stops_at_record": max(0, n_b - layout.offset) // rs, "tail_unwritten_from": None}
    else:
        name = pattern_name(ctx, bug.pattern)
        s = bug.keep
        rec = max(0, s - layout.offset) // rs
        text = (f"B's last {n(n_b - s)} bytes (from 0x{s:x}, record {rec} of {n(ctx.records)}) are {name} "
                f"where A has data: the device stopped writing at record {rec}")
        details = {"shorter": None, "size_a": n_a, "size_b": n_b, "missing_bytes": n_b - s,
                   "stops_at_record": rec, "tail_unwritten_from": s, "sentinel": name}
        out.append(fill_finding(ctx, name, ((s, n_b),), explains))
    hint = f"the copy stopped early: check the transfer size of {ctx.b} against the output's size_bytes ({n(n_a)})"
    return [Finding("truncation", text, hint, details, explains)] + out


KIND = Kind("truncation", rank=1, display=13, usage="truncation:KEEP[:HEX]",
            description="B stops after KEEP bytes (with HEX: the tail keeps that prefill)",
            parse=parse, candidates=candidates, finding=finding)
