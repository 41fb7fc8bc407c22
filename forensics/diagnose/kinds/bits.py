"""bits: data bits stuck at 1, stuck at 0 or flipped, in every byte or in some lanes (a data line of the bus, a
mask applied by the driver); the sign bit alone flipped is signedness."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds.base import BUS_WORDS, Bug, Kind, compress_lanes, parse_int, period_and_lanes
from forensics.diagnose.kinds.fit import fit_sample
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError


@dataclass(frozen=True)
class Bits(Bug):
    """Stuck or flipped bits: B = ((A & and_mask) | or_mask) ^ xor_mask, with masks per lane of every `period`
    bytes (a data line stuck at 1 or 0, a bit flipped in one lane; the sign bit alone flipped is signedness)."""

    period: int = 1
    and_masks: tuple = (0xFF,)
    or_masks: tuple = (0x00,)
    xor_masks: tuple = (0x00,)
    kind = "bits"

    def values(self, source, pos, pred, defined):
        lane = pos % self.period
        a_m, o_m, x_m = (np.asarray(m, np.uint8)[lane] for m in (self.and_masks, self.or_masks, self.xor_masks))
        pred[defined] = (((pred & a_m) | o_m) ^ x_m)[defined]

    def ops(self) -> list[tuple[int, str, int]]:
        """(lane, 'set' | 'clear' | 'flip', bit mask) for every lane a mask touches."""
        out = []
        for lane in range(self.period):
            for op, m in (("set", self.or_masks[lane]), ("clear", 0xFF & ~self.and_masks[lane]),
                          ("flip", self.xor_masks[lane])):
                if m:
                    out.append((lane, op, int(m)))
        return out

    def complexity(self):
        return self.period * 1000 + len(self.ops())

    def params(self):
        return {"period": self.period, "ops": [{"lane": l, "op": op, "mask": f"0x{m:02x}"} for l, op, m in self.ops()]}

    def spec(self):
        ops = self.ops()
        same = {(op, m) for _, op, m in ops}
        if len(same) == 1:
            (op, m), = same
            lanes = sorted(l for l, _, _ in ops)
            tail = "" if self.period == 1 else f":{self.period}:{compress_lanes(lanes)}"
            return f"bits:{op}:{m:02x}{tail}"
        return "bits:" + ",".join(f"{l}{op}{m:02x}" for l, op, m in ops)


def parse(args, size, previous=None):
    op, mask = args[0], parse_int("0x" + args[1], "MASK")
    if op not in ("set", "clear", "flip") or not 0 < mask < 256:
        raise InputError("bits needs set|clear|flip and a mask of 01..ff")
    period, lanes = period_and_lanes(args, 2, "bits")
    masks = {"and": [0xFF] * period, "or": [0] * period, "xor": [0] * period}
    for lane in lanes:
        if op == "set":
            masks["or"][lane] = mask
        elif op == "clear":
            masks["and"][lane] = 0xFF & ~mask
        else:
            masks["xor"][lane] = mask
    return Bits(period, tuple(masks["and"]), tuple(masks["or"]), tuple(masks["xor"]))


LSB_LINE_MIN = 64     # bytes of a lane the sample must hold before bit 0 is named as a stuck or flipped line
LSB_LINE_SHARE = 0.1  # ... and the least share of them that tell the line from +-1 LSB (see below)
_TOP, _BOTTOM = (0xFF, 0x7F), (0x00, 0x80)  # where +1 / -1 LSB saturate, as uint8 and as int8


def _bit0_line_is_evident(a: np.ndarray, lane: np.ndarray, bug) -> bool:
    """Whether a fit that moves bytes by 1 LSB at most is a data line (bit 0 stuck or flipped) and not rounding.
    It must touch bit 0 alone, and each lane it touches must hold enough bytes that only the line explains:
    - set: odd values (below saturation) left as they were, which +1 LSB would have carried into bit 1;
    - clear: even values (above the floor) left as they were, which -1 LSB would have borrowed from;
    - flip: even values up and odd values down, which no offset does.
    Where A's bit 0 never varies (scores of 0x00 and 0x80), bit 0 set and +1 LSB are the same bytes, and +1 is
    rounding's (a tolerance judges it)."""
    for lane_index, op, mask in bug.ops():
        if mask != 0x01:
            return False
        v = a[lane == lane_index]
        if v.size < LSB_LINE_MIN:
            return False
        odd = (v & 1).astype(bool)
        if op == "set":
            telling, moved = odd & ~np.isin(v, _TOP), ~odd
        elif op == "clear":
            telling, moved = ~odd & ~np.isin(v, _BOTTOM), odd
        else:
            telling, moved = odd, ~odd
        if min(telling.mean(), moved.mean()) < LSB_LINE_SHARE:
            return False
    return True


def _fit(region, layout) -> list:
    """Lanes whose every bit is either passed, stuck at 1, stuck at 0 or flipped in (almost) all bytes: a data
    line stuck or inverted (B = ((A & and) | or) ^ xor per lane). The sign bit alone flipped is signedness."""
    a, b, pos, within_one = fit_sample(region)
    if not np.count_nonzero(a != b):
        return []
    out = []
    for p in sorted({1, *BUS_WORDS, layout.record_size} - {0}):
        if p > 64:
            continue
        lane = (pos - layout.offset) % p
        total = np.maximum(np.bincount(lane, minlength=p), 1)
        masks = [[0xFF] * p, [0] * p, [0] * p]
        ok = True
        for bit in range(8):
            ab, bb = (a >> bit) & 1, (b >> bit) & 1
            same = np.bincount(lane, weights=(ab == bb), minlength=p) / total
            ones = np.bincount(lane, weights=bb, minlength=p) / total
            for l in range(p):  # a stuck or inverted line is exact: every byte of the sample obeys it
                if same[l] == 1:
                    continue
                if ones[l] == 1 and same[l] > 0:  # kept where A had it set, set where A had it clear
                    masks[1][l] |= 1 << bit
                elif ones[l] == 0 and same[l] > 0:
                    masks[0][l] &= 0xFF & ~(1 << bit)
                elif same[l] == 0:
                    masks[2][l] |= 1 << bit  # flipped (also when A never had it set: a flip first)
                else:
                    ok = False
                    break
            if not ok:
                break
        if not ok:
            continue
        bug = Bits(p, tuple(masks[0]), tuple(masks[1]), tuple(masks[2]))
        ops = bug.ops()
        if within_one and not _bit0_line_is_evident(a, lane, bug):
            continue
        if ops and not all(op == "flip" and m == 0x80 for _, op, m in ops):
            out.append(bug)
    return out


def candidates(ctx) -> list:
    if ctx.n_a != ctx.n_b:
        return []
    return _fit(ctx.region, ctx.layout)


def finding(c, ctx, explains):
    bug = c.bug
    ops = bug.ops()
    words = {"set": "stuck at 1", "clear": "stuck at 0", "flip": "flipped"}
    parts = []
    for op in ("set", "clear", "flip"):
        for m in sorted({m for _, o, m in ops if o == op}):
            lanes = [l for l, o, mm in ops if o == op and mm == m]
            bits_t = compress_lanes([i for i in range(8) if m >> i & 1])
            scope = "every byte" if bug.period == 1 else (
                f"lane{'s' if len(lanes) > 1 else ''} {compress_lanes(lanes)} of every {bug.period} bytes")
            parts.append(f"bit{'s' if m & (m - 1) else ''} {bits_t} (mask 0x{m:02x}) {words[op]} in {scope}")
    text = "; ".join(parts) + ", nothing else differs: a data bit stuck or inverted on the way"
    hint = (f"check the bit lines / masks of the copy into {ctx.b} (a register or DMA data bit stuck, a mask "
            "applied, a sign or flag bit set by the driver)")
    return [Finding("bits", text, hint, dict(bug.params()), explains)]


KIND = Kind("bits", rank=8, display=6, group=7, usage="bits:set|clear|flip:MASK[:PERIOD[:LANES]]",
            description="bits MASK (hex) stuck at 1 / at 0 / flipped in those lanes",
            parse=parse, candidates=candidates, finding=finding)
