"""signedness: the sign bit (0x80) of every byte, or of some lanes, flipped and nothing else: int8 read as uint8
(or the reverse), or the sign of little-endian int16 / float32 words."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds.base import BUS_WORDS, Bug, Kind, at_lanes, compress_lanes, period_and_lanes
from forensics.diagnose.kinds.stride import MAX_STRIDE_Z, pad_periods
from forensics.diagnose.result import Finding


@dataclass(frozen=True)
class Signedness(Bug):
    """The most significant bit of the bytes at `lanes` (of every `period` bytes) is flipped (int8 vs uint8)."""

    period: int = 1
    lanes: tuple = (0,)
    kind = "signedness"

    def values(self, source, pos, pred, defined):
        m = at_lanes(pos, self.period, self.lanes) & defined
        pred[m] ^= 0x80

    def complexity(self):
        return self.period * 1000 + len(self.lanes)

    def params(self):
        return {"period": self.period, "lanes": list(self.lanes)}

    def spec(self):
        return f"signedness:{self.period}:{compress_lanes(self.lanes)}"


@dataclass(frozen=True)
class OffsetSignedness(Signedness):
    """Signedness of lanes counted from the layout's offset (a header before the records)."""

    offset: int = 0

    def values(self, source, pos, pred, defined):
        m = np.isin((pos - self.offset) % self.period, np.asarray(self.lanes)) & defined & (pos >= self.offset)
        pred[m] ^= 0x80


def parse(args, size, previous=None):
    return Signedness(*period_and_lanes(args, 0, "signedness"))


def candidates(ctx) -> list:
    """When most differing bytes differ by 0x80 alone: every byte, and the lanes of every 2, 4, record-size or
    pad-period bytes that mostly flip."""
    if ctx.n_a != ctx.n_b:
        return []
    region, layout = ctx.region, ctx.layout
    d = region.diff
    x80 = d & ((region.a ^ region.b) == 0x80)
    if np.count_nonzero(x80) < 0.5 * max(1, np.count_nonzero(d)):
        return []
    periods = {q for side in pad_periods(ctx) for q, _ in side}
    out = [Signedness(1, (0,))]
    for p in sorted({*BUS_WORDS, layout.record_size, *periods}):
        if p < 2 or p > MAX_STRIDE_Z:
            continue
        lane = (region.at(d) - layout.offset) % p
        flipped = np.bincount(lane[x80[d]], minlength=p)
        total = np.bincount(lane, minlength=p)
        lanes = tuple(int(i) for i in np.flatnonzero(flipped >= 0.5 * np.maximum(total, 1)))
        if lanes and len(lanes) < p:
            out.append(Signedness(p, lanes) if not layout.offset else OffsetSignedness(p, lanes, layout.offset))
    return out


def finding(c, ctx, explains):
    bug, rs = c.bug, ctx.layout.record_size
    period, lanes = bug.period, list(bug.lanes)
    if rs % period == 0:  # the same flip, said in the layout's records
        period, lanes = rs, [l for l in range(rs) if l % bug.period in bug.lanes]
    text_lanes = compress_lanes(lanes)
    details = {"lanes": lanes, "lanes_text": text_lanes, "period": period, "word_bytes": bug.period}
    what = f"lanes {text_lanes} of every {period}-byte record" if len(lanes) < period else "every byte"
    text = (f"the sign bit (0x80) of {what} is flipped and nothing else differs: one side is the signed "
            "(int8) form of the other's uint8")
    if bug.period in (2, 4) and list(bug.lanes) == [bug.period - 1]:  # the top byte of little-endian words
        text += (f", or the sign of {bug.period * 8}-bit little-endian words "
                 f"({'int16' if bug.period == 2 else 'float32 / int32'}): every value negated")
    hint = ("the tensor is signed on one side: flip the MSB of each element (libedgetpu's "
            "TransformSignedDataType) or fix the declared type")
    return [Finding("signedness", text, hint, details, explains)]


KIND = Kind("signedness", rank=7, display=5, usage="signedness[:PERIOD[:LANES]]",
            description="the sign bit of those lanes (default all bytes) is flipped",
            parse=parse, candidates=candidates, finding=finding)
