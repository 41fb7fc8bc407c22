"""stale: B (or parts of it) holds the previous run's buffer: this run's output was not (all) written, or was read
before the device finished."""

from __future__ import annotations

from dataclasses import dataclass

from forensics.diagnose.kinds.base import Bug, Kind, hex_ranges, parse_ranges
from forensics.diagnose.region import where
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError


@dataclass(frozen=True)
class Stale(Bug):
    """Bytes of `ranges` hold the previous run's buffer (not rewritten this run)."""

    previous: object = None  # a source
    ranges: tuple = ()
    kind = "stale"
    structural = True
    judged_on_equal = False  # parts of B rewritten this run are no evidence against staleness elsewhere
    named_beside = True      # the previous run's bytes explain what another finding explains: say both

    def values(self, source, pos, pred, defined):
        prev = self.previous
        for s, e in self.ranges or ((0, max(source.size, prev.size)),):
            m = (pos >= s) & (pos < e) & (pos < prev.size)
            if m.any():
                sel = pos[m]
                pred[m] = prev.read(int(sel.min()), int(sel.max()) + 1)[sel - int(sel.min())]
                defined[m] = True

    def params(self):
        return {"ranges": [list(r) for r in self.ranges]}

    def spec(self):
        return "stale:" + ",".join(f"{s}-{e}" for s, e in self.ranges)


def parse(args, size, previous=None):
    if previous is None:
        raise InputError("stale needs the previous run's buffer (previous=)")
    return Stale(previous, parse_ranges(args[0]) if args else ())


def candidates(ctx) -> list:
    return [Stale(ctx.previous_src)] if ctx.previous_src is not None else []


def finding(c, ctx, explains):
    w = where(c.hits, ctx.region, ctx.layout)
    ranges, recs, whole = w["ranges"], w["records"], ctx.stale_whole
    details = {"previous": ctx.previous, "identical_to_previous": whole, "ranges": ranges,
               "records": recs, "record_size": ctx.layout.record_size, "ratio": explains}
    text = (f"B is byte-identical to the previous run's buffer {ctx.previous} and differs from A: this run's "
            f"output was never written (stale buffer)" if whole else
            f"where B differs from A it holds the previous run's bytes ({ctx.previous}) at "
            f"{hex_ranges(ranges)} (records {recs}): those parts were not rewritten this run")
    hint = f"B ({ctx.b}) is an earlier run's output: wait for completion / invalidate the cache before reading"
    return [Finding("stale", text, hint, details, explains)]


KIND = Kind("stale", rank=12, display=14, usage="stale[:START-END,...]",
            description="those bytes (default all) hold the previous run's buffer (--previous)",
            parse=parse, candidates=candidates, finding=finding)
