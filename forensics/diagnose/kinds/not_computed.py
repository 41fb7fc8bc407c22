"""not_computed: B is one record repeated where A varies: the output zero point in its data lanes (real value 0.0
everywhere: the accumulators never ran) or one constant per lane (what the bias alone gives). The chip ran no
compute: its parameters were not loaded, the parameter-caching executable was not run, or it was given another
instruction stream. Named before `bits` (every bit of every byte "stuck") and `fill` when the constant is the zero
point; an all-zero B stays fill / truncation (zeros are also what an untouched buffer holds), with not_computed
said beside them when 0 is the output's zero point.

The zero point comes from the layout: the model's tensor (diagnose --model/--tensor), --deps, a sidecar or
--scale/--zero-point. Without one, a B of one non-sentinel value (or one record) repeated is still named, as a
constant output whose zero point is not known; a B of one sentinel value (cc, 00, ff, ...) is left to fill and
truncation.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, n, parse_hex
from forensics.diagnose.result import Finding

MAX_PERIOD = 4096        # bytes of the longest record looked for (a 91-class score record padded to 92, ...)
READ = 1 << 20           # bytes of B (and A) read at a time
A_DOMINATED = 0.5        # A holding B's record in this share of its records: B may be A's own dominant value
A_VARIES = 0.01          # ... the zero point: A must differ from it in at least this share of its records
SENTINEL_BYTES = frozenset(b"\xcc\xaa\x00\xff\xcd")
# select.py's tie-break group: before bits (7) and fill (13) always; before truncation (1) too when the constant
# is a zero point that is not 0 (a prefill of 0xff or 0xaa that happens to be the zero point stays the zero point)
GROUP_AT_ZERO_POINT = 0.5
GROUP = 6.5


@dataclass(frozen=True)
class NotComputed(Bug):
    """B = `record` repeated (aligned to offset 0) over the whole buffer, whatever A holds."""

    record: bytes = b"\x00"
    zero_point: int | None = None            # the output's zero point, when known
    at_zero_point: bool | None = None        # the record's data lanes hold it (None: not known)
    tie_group: float | None = field(default=None, compare=False)  # select.py's group for this candidate
    kind = "not_computed"
    structural = True

    @property
    def named_beside(self) -> bool:
        """At the zero point it is said beside fill / truncation (an all-zero B at a zero point of 0)."""
        return bool(self.at_zero_point)

    def values(self, source, pos, pred, defined):
        record = np.frombuffer(self.record, np.uint8)
        pred[:] = record[pos % record.size]
        defined[:] = True

    def params(self):
        return {"record": self.record.hex(" "), "period": len(self.record), "zero_point": self.zero_point,
                "at_zero_point": self.at_zero_point}

    def spec(self):
        return f"not_computed:{self.record.hex()}"


def parse(args, size, previous=None):
    return NotComputed(parse_hex(args[0]) if args else b"\x00")


def _period(b: np.ndarray) -> int | None:
    """The shortest p <= MAX_PERIOD with b[i] == b[i + p] throughout `b` (None: none, or b too short to tell).
    Periods are weeded out on B's first 64 bytes at once, then on 2 x MAX_PERIOD, then on all of `b`."""
    if b.size < 16:
        return None
    limit = min(MAX_PERIOD, b.size // 2)
    head = min(64, b.size - limit)
    starts = np.flatnonzero(b[1:limit + 1] == b[0]) + 1
    if not starts.size:
        return None
    fits = (b[starts[:, None] + np.arange(head)[None, :]] == b[:head]).all(axis=1)
    longer = min(2 * MAX_PERIOD, b.size - limit)
    for p in starts[fits].tolist():
        if np.array_equal(b[p:p + longer], b[:longer]) and np.array_equal(b[p:], b[:-p]):
            return p
    return None


def _repeats(src, record: np.ndarray, start: int) -> bool:
    """Whether `src` holds `record` repeated from `start` to its end (offsets aligned to 0)."""
    p = record.size
    step = max(p, READ // p * p)
    tile = np.resize(record, step)
    for lo in range(start - start % p, src.size, step):
        got = src.read(lo, min(src.size, lo + step))
        if not np.array_equal(got, tile[:got.size]):
            return False
    return True


def _share_equal(src, record: np.ndarray) -> float:
    """The share of A's first records (READ bytes) that are `record`."""
    p = record.size
    a = src.read(0, min(src.size, max(p, READ // p * p)))
    rows = a[:a.size // p * p].reshape(-1, p)
    return float((rows == record).all(axis=1).mean()) if rows.size else 1.0


def _zero_point_bytes(ctx) -> bytes | None:
    """One element at the output's zero point, as the dump stores it (None: not known). Floats: +0.0."""
    dtype = np.dtype(ctx.dtype) if ctx.dtype else None
    if dtype is not None and dtype.kind == "f":
        return bytes(dtype.itemsize)
    layout = ctx.layout
    if not layout.quantized:
        return None
    zp = int(layout.zero_point or 0)
    if dtype is None or dtype.itemsize == 1:
        return bytes([zp & 0xFF])
    return np.array([zp], dtype=dtype.newbyteorder("<")).tobytes()


def _at_zero_point(ctx, record: np.ndarray, zp: bytes) -> bool:
    """Whether every data lane of B (the record repeated, read in the layout's records) is the zero point."""
    layout = ctx.layout
    rs, off = layout.record_size, layout.offset
    span = np.lcm.reduce([record.size, rs, len(zp)])
    b = np.resize(record, off + span)[off:]  # B from the layout's offset, record by record
    lanes = np.arange(span) % rs
    data = ~np.isin(lanes, list(layout.pad_lanes))
    expected = np.resize(np.frombuffer(zp, np.uint8), span)
    return bool(data.any() and (b[data] == expected[data]).all())


def candidates(ctx) -> list:
    """One candidate when B (same size as A) is one record repeated and A is not."""
    if ctx.n_a != ctx.n_b or not ctx.common_differ:
        return []
    first = ctx.src_b.read(0, min(ctx.n_b, READ))
    p = _period(first)
    if p is None:
        return []
    record = first[:p].copy()
    if not _repeats(ctx.src_b, record, first.size):
        return []
    zp = _zero_point_bytes(ctx)
    at_zp = _at_zero_point(ctx, record, zp) if zp is not None else None
    if _share_equal(ctx.src_a, record) >= (1 - A_VARIES if at_zp else A_DOMINATED):
        return []  # A is (mostly) this record too: B may be A's own dominant value, not a chip that never ran
    one_byte = len(set(record.tolist())) == 1
    if at_zp:
        zero = set(zp) == {0}
        group = GROUP if zero else GROUP_AT_ZERO_POINT  # all-zero: fill / truncation first, said beside
    elif zp is None and one_byte and int(record[0]) in SENTINEL_BYTES:
        return []  # a prefill value and no zero point to tell it from one: fill and truncation say it
    else:
        group = GROUP
    zp_value = int(ctx.layout.zero_point) if ctx.layout.quantized else (0 if zp is not None else None)
    return [NotComputed(record.tobytes(), zp_value, at_zp, group)]


HINT = ("the chip ran no compute: check that the model's parameters were loaded (the parameter-caching "
        "executable run before the execution-only one) and that the instruction stream is this model's; look "
        "upstream of the output, not at the output DMA")


def finding(c, ctx, explains):
    bug = c.bug
    p, records = len(bug.record), ctx.n_b // len(bug.record)
    shown = bug.record.hex(" ") if p <= 16 else bug.record[:8].hex(" ") + f" ... ({p} bytes)"
    if bug.at_zero_point:
        value = "0.0 (+0.0)" if ctx.dtype and np.dtype(ctx.dtype).kind == "f" else f"{bug.zero_point}"
        pad = (f" (pad lanes {','.join(map(str, ctx.layout.pad_lanes))} aside)" if ctx.layout.pad_lanes else "")
        text = (f"B holds the output zero point ({value}: real value 0.0) in every data lane of its "
                f"{n(ctx.n_b)} bytes{pad} while A varies: the accumulators never ran")
    elif bug.zero_point is not None:
        text = (f"B is one {p}-byte record, {shown}, repeated {n(records)} times while A varies: a constant "
                f"output (the zero point is {bug.zero_point}), as the bias alone gives when no input reaches the "
                "compute")
    else:
        text = (f"B is one {p}-byte record, {shown}, repeated {n(records)} times while A varies: a constant "
                "output; the zero point is not known (give --model and --tensor, --deps or --zero-point): at the "
                "output zero point, or a bias alone, the chip computed nothing")
    details = {"record": bug.record.hex(" "), "period": p, "repeats": records, "zero_point": bug.zero_point,
               "at_zero_point": bug.at_zero_point}
    return [Finding("not_computed", text, HINT, details, explains)]


KIND = Kind("not_computed", rank=6.5, display=5.5, usage="not_computed[:HEX]",
            description="B is the record HEX (default 00: a zero point) repeated: the chip computed nothing",
            parse=parse, candidates=candidates, finding=finding)
