"""saturation and requantize: every byte value of A maps to one value of B through one monotone map, in every
byte or in some lanes: values clamped to a range (saturation), or a wrong scale / zero point (requantize)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.diagnose.kinds.base import (BUS_WORDS, Bug, Kind, at_lanes, compress_lanes, parse_float, parse_ranges_inclusive,
                                           period_and_lanes)
from forensics.diagnose.kinds.fit import MIN_FIT, fit_sample
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError
from forensics.compare.stats import element_dtype


@dataclass(frozen=True)
class ValueMap(Bug):
    """Every byte value v of A becomes lut[v] in B (a wrong requantization scale or zero point; values clamped
    to a range: saturation), in every byte or only at `lanes` of every `period` bytes (one channel's clamp)."""

    lut: bytes = bytes(range(256))
    kind_name: str = "requantize"
    period: int = 1
    lanes: tuple = (0,)
    order: str = "uint8"  # the order the map is monotone in: uint8, or int8 (two's complement bytes)

    @property
    def kind(self):  # type: ignore[override]
        return self.kind_name

    def values(self, source, pos, pred, defined):
        where = defined if self.period == 1 else defined & at_lanes(pos, self.period, self.lanes)
        pred[where] = np.frombuffer(self.lut, np.uint8)[pred[where]]

    def changed(self) -> list[int]:
        return [v for v in range(256) if self.lut[v] != v]

    def value(self, byte: int) -> int:
        """A byte as a value of the map's order."""
        return byte - 256 if self.order == "int8" and byte >= 128 else byte

    def range(self) -> list[int]:
        """The smallest and largest value the map gives, in its order."""
        vals = [self.value(v) for v in self.lut]
        return [min(vals), max(vals)]

    def params(self):
        ch = self.changed()
        out = {"values_changed": len(ch), "map": {f"0x{v:02x}": f"0x{self.lut[v]:02x}" for v in ch[:16]},
               "order": self.order, "range": self.range()}
        if self.period > 1:
            out.update({"period": self.period, "lanes": list(self.lanes)})
        return out

    def spec(self):
        lanes = f":{self.period}:{compress_lanes(self.lanes)}" if self.period > 1 else ""
        return f"{self.kind_name}:" + self.lut.hex() + lanes


@dataclass(frozen=True)
class ElementClamp(Bug):
    """Every element of a multi-byte dtype (int16, float32, ...) clamped to [lo, hi]: a clamp in the elements' own
    order, which no map of single bytes describes."""

    dtype: str = "int16"
    lo: float = 0
    hi: float = 0
    changed_elements: int = field(default=0, compare=False)
    kind = "saturation"

    def predict(self, source, lo, hi):
        dt = element_dtype(self.dtype)
        k = dt.itemsize
        start, stop = lo - lo % k, min(source.size, -(-hi // k) * k)
        raw = np.array(source.read(start, stop), np.uint8)
        whole = len(raw) // k * k
        raw[:whole] = np.clip(raw[:whole].view(dt), self.lo, self.hi).astype(dt).view(np.uint8)
        pred = np.zeros(hi - lo, np.uint8)
        defined = np.zeros(hi - lo, bool)
        got = max(0, min(hi - lo, len(raw) - (lo - start)))
        pred[:got] = raw[lo - start:lo - start + got]
        defined[:got] = True
        return pred, defined, np.zeros(hi - lo, bool)

    def range(self) -> list:
        return [_number(self.lo), _number(self.hi)]

    def params(self):
        return {"order": self.dtype, "range": self.range(), "elements_changed": self.changed_elements}

    def spec(self):
        return f"saturation:{self.dtype}:{self.lo!r}..{self.hi!r}"


def _number(value):
    value = float(value)
    return int(value) if value.is_integer() else value


ELEMENT_FIT = 4 << 20  # bytes of each dump an element clamp is fitted on


def _element_clamp(ctx) -> list:
    """A clamp of multi-byte elements in their dtype (from the header, sidecar or model): B = clip(A, lo, hi)
    where lo and hi are B's extremes and every changed element sits on one of them."""
    try:
        dt = element_dtype(ctx.dtype) if ctx.dtype else None
    except TypeError:
        dt = None
    if dt is None or dt.itemsize == 1 or dt.kind not in "iuf" or ctx.n_a != ctx.n_b:
        return []
    k = dt.itemsize
    size = min(ctx.n_a, ELEMENT_FIT) // k * k
    ea = np.array(ctx.src_a.read(0, size), np.uint8).view(dt)
    eb = np.array(ctx.src_b.read(0, size), np.uint8).view(dt)
    if dt.kind == "f" and (np.isnan(ea).any() or np.isnan(eb).any()):
        return []
    changed = ea != eb
    if np.count_nonzero(changed) < 8:
        return []
    lo, hi = eb.min(), eb.max()
    if not (ea.min() < lo or ea.max() > hi) or not np.isin(eb[changed], (lo, hi)).all():
        return []
    if not np.array_equal(np.clip(ea, lo, hi), eb):
        return []
    return [ElementClamp(dt.name, lo.item(), hi.item(), int(np.count_nonzero(changed)))]


def parse_saturation(args, size, previous=None):
    (lo, hi), = parse_ranges_inclusive(args[0])
    if not 0 <= lo < hi <= 255:
        raise InputError("saturation needs 0 <= LO < HI <= 255")
    return ValueMap(bytes(np.clip(np.arange(256), lo, hi).astype(np.uint8)), "saturation",
                    *period_and_lanes(args, 1, "saturation"))


def parse_requantize(args, size, previous=None):
    scale = parse_float(args[0], "SCALE")
    offset = parse_float(args[1], "OFFSET") if len(args) > 1 else 0.0
    lut = np.clip(np.rint(np.arange(256) * scale + offset), 0, 255).astype(np.uint8)
    return ValueMap(bytes(lut), "requantize", *period_and_lanes(args, 2, "requantize"))


MAX_MAP_LANES = 256  # records of up to this many lanes (a class per lane) are fitted lane by lane


def _orders(dtype: str | None) -> tuple[str, ...]:
    """The byte orders a map may be monotone in: the dtype's own when it is one byte wide, else both."""
    if dtype in ("int8", "uint8"):
        return (dtype,)
    return ("uint8", "int8")


def _fit(region, layout, dtype: str | None = None) -> list:
    """B = lut[A] for one monotone map of byte values (a wrong requantization scale / zero point, or values
    clamped: saturation), fitted on the sample: over every byte, else over the lanes that changed of every 2, 4
    or record-size bytes (one channel clamped or requantized; the other lanes keep values the map would move)."""
    a, b, pos, within_one = fit_sample(region)
    if np.count_nonzero(a != b) < 8 or within_one:  # all within 1 LSB: rounding, for a tolerance to judge
        return []
    orders = _orders(dtype)
    fit = _monotone_map(a, b, orders)
    if fit is not None:
        return [ValueMap(fit[0], fit[1], order=fit[2])]
    for p in sorted({*BUS_WORDS, layout.record_size}):
        if not 1 < p <= MAX_MAP_LANES:
            continue
        lane = (pos - layout.offset) % p
        lanes = np.unique(lane[a != b])
        if lanes.size == p:
            continue
        inside = np.isin(lane, lanes)
        fit = _monotone_map(a[inside], b[inside], orders)
        if fit is not None:
            return [ValueMap(fit[0], fit[1], period=p, lanes=tuple(int(x) for x in lanes), order=fit[2])]
    return []


def _monotone_map(a: np.ndarray, b: np.ndarray, orders=("uint8", "int8")) -> tuple[bytes, str, str] | None:
    """(lut, 'saturation' | 'requantize', order) when B = lut[A] for one monotone map of byte values in one of
    `orders` (uint8, int8: the dtype's own when known) that MIN_FIT of the differing bytes follow, else None. A
    clamp in either order wins over a requantization in the other: an int8 clamp to [-100, 100] is also monotone
    in unsigned order, where it looks like no clamp. A map of values seen only once is no evidence, unless it is
    a clamp: the changed values all land on the range's ends."""
    d = int(np.count_nonzero(a != b))
    if d < 8:
        return None
    joint = np.bincount(a.astype(np.int64) * 256 + b, minlength=65536).reshape(256, 256)
    count = joint.sum(axis=1)
    mode = joint.argmax(axis=1)
    if int((count - joint[np.arange(256), mode]).sum()) > (1 - MIN_FIT) * d:
        return None
    seen = np.flatnonzero(count)
    changed = seen[mode[seen] != seen]
    support = count[changed]
    if seen.size < 8 or support.sum() < 8 or np.abs(mode[changed] - changed).max() <= 1:
        return None
    singles = support[support < 2].sum() > 0.5 * support.sum()  # values seen once could map anywhere
    lut = np.arange(256)
    lut[seen] = mode[seen]
    fits = []
    for name in orders:
        order = np.arange(256) if name == "uint8" else np.arange(256) ^ 0x80  # a byte's rank in that order
        rank = np.argsort(order)  # byte values from smallest to largest in that order
        vals = order[lut[rank]]
        vals = vals[np.isin(rank, seen)]
        if (np.diff(vals) >= 0).all():
            lo, hi = vals.min(), vals.max()
            clamped = bool(np.isin(order[lut[changed]], (lo, hi)).all())
            if singles and not clamped:  # ... but a clamp says which: the changed values all lie beyond it
                continue
            fits.append((not clamped, bytes(lut.astype(np.uint8)), "saturation" if clamped else "requantize", name))
    if not fits:
        return None
    return min(fits, key=lambda f: f[0])[1:]


def candidates(ctx) -> list:
    """Fitted only when no signedness or bits candidate fits (those are the more specific maps)."""
    if ctx.n_a != ctx.n_b:
        return []
    clamp = _element_clamp(ctx)
    if clamp or ctx.produced.get("signedness") or ctx.produced.get("bits"):
        return clamp
    return _fit(ctx.region, ctx.layout, ctx.dtype)


def finding(c, ctx, explains):
    bug = c.bug
    if isinstance(bug, ElementClamp):
        lo, hi = bug.range()
        text = (f"every {bug.dtype} element of A maps to B clamped to [{lo}, {hi}] ({bug.changed_elements:,} "
                f"elements of the sample changed, all to the range's ends): values clamped (saturation)")
        hint = ("check the output's range / the clamp applied (activation min/max, the saturation of the "
                "requantization) against the reference's")
        return [Finding("saturation", text, hint, dict(bug.params()), explains)]
    ch = bug.changed()
    lut = bug.lut
    details = dict(bug.params())
    sample = ", ".join(f"{bug.value(v)}->{bug.value(lut[v])}" for v in ch[:6]) + (" ..." if len(ch) > 6 else "")
    details.update({"values_changed": len(ch)})
    where_map = "every byte" if bug.period == 1 else (
        f"lane{'s' if len(bug.lanes) > 1 else ''} {compress_lanes(bug.lanes)} of every {bug.period} bytes "
        "(the other lanes match)")
    if bug.kind == "saturation":
        lo, hi = bug.range()
        text = (f"in {where_map}, each value of A maps to one value of B and the {len(ch)} changed values "
                f"become the range's ends ({sample}): values clamped to [{lo}, {hi}] as {bug.order} (saturation)")
        hint = ("check the output's quantization range / the clamp applied (activation min/max, the "
                "requantization's saturation) against the reference's"
                + ("" if bug.period == 1 else ", for that channel"))
    else:
        text = (f"in {where_map}, each value of A maps to one value of B in the same order ({len(ch)} values "
                f"changed: {sample}): one monotone requantization")
        hint = ("check the output's quantization scale and zero point (and the requantization multiplier/shift)"
                + ("" if bug.period == 1 else ", for that channel"))
    return [Finding(bug.kind, text, hint, details, explains)]


SATURATION = Kind("saturation", rank=9, display=7, group=7, usage="saturation:LO-HI[:PERIOD[:LANES]]",
                  description="every value (or those lanes') is clamped to LO..HI (unsigned bytes)",
                  parse=parse_saturation, candidates=candidates, finding=finding)
REQUANTIZE = Kind("requantize", rank=10, display=8, group=7, usage="requantize:SCALE[:OFFSET[:PERIOD[:LANES]]]",
                  description="every byte v (or those lanes') becomes round(v * SCALE + OFFSET) clamped to 0..255",
                  parse=parse_requantize, finding=finding)
