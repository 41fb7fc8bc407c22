"""stride: records of z bytes at one stride in A and another in B (z padded to the 4-byte lane on the chip's side,
the TFLite tensor packed): the raw layout compared with the tensor's, or read with the wrong stride."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, compress_lanes, n, parse_hex, parse_int
from forensics.diagnose.kinds.base import shell_arg as _arg
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError

LANE_ALIGN = (4, 8, 16)  # channel counts are padded to a multiple of 4 lanes (the Edge TPU), 8 or 16 (wider SIMD)
MAX_STRIDE_Z = 4096
STRIDE_SLACK = 64        # bytes after the last record a layout may leave (size_bytes 176,368 = 1,917 x 92 + 4)


def ceil_to(n: int, m: int) -> int:
    return -(-n // m) * m


@dataclass(frozen=True)
class Strided(Bug):
    """Units of `width` bytes at a stride of `src` in A land at a stride of `dst` in B (the rest of each dst
    slot is padding: `pad` byte or undefined). `stride` when the strides differ by lane padding (z vs z padded
    to 4 bytes), `pitch` when rows land at a row pitch."""

    width: int
    src: int
    dst: int
    size: int | None = None  # B's size (default: as many units as A holds)
    pad: int | None = None
    kind_name: str = "stride"
    placed = True

    @property
    def kind(self):  # type: ignore[override]
        return self.kind_name

    def units(self, n: int) -> int:
        return -(-n // self.src)

    def size_out(self, n):
        if self.size is not None:
            return self.size
        u = self.units(n)
        return (u - 1) * self.dst + min(self.width, n - (u - 1) * self.src) if u else 0

    def explains_size(self, n_a, n_b):
        if self.size is None:
            return self.size_out(n_a) == n_b
        # its own size, not the one it was cut to, within the slack a layout may leave
        return self.size == n_b and abs(Strided(self.width, self.src, self.dst).size_out(n_a) - n_b) < STRIDE_SLACK

    def index(self, n, pos):
        r, j = pos // self.dst, pos % self.dst
        idx = r * self.src + j
        ok = (j < self.width) & (idx < n) & (j < self.src)
        return np.where(ok, idx, -1)

    def values(self, source, pos, pred, defined):
        if self.pad is not None:
            m = (pos % self.dst >= self.width) & (pos // self.dst < self.units(source.size))
            pred[m] = self.pad
            defined[m] = True

    def complexity(self):
        return abs(self.src - self.dst)

    def params(self):
        if self.kind_name == "pitch":
            return {"row_bytes": self.width, "pitch": self.dst if self.dst != self.width else self.src,
                    "pitched_side": "B" if self.dst != self.width else "A"}
        return {"z_bytes": self.width, "stride_a": self.src, "stride_b": self.dst, "pad_byte": self.pad}

    def spec(self):
        if self.kind_name == "pitch":
            return f"pitch:{self.width}:{self.dst}" if self.dst != self.width else f"pitch:{self.width}:-{self.src}"
        return f"stride:{self.width}:{self.src}:{self.dst}"


def parse(args, size, previous=None):
    z, src, dst = (parse_int(args[i], name) for i, name in enumerate(("Z", "SRC", "DST")))
    if z <= 0 or src < z or dst < z or src == dst and src == z:
        raise InputError("stride needs Z <= SRC, Z <= DST and a padded side (e.g. stride:91:92:91)")
    return Strided(z, src, dst, pad=parse_hex(args[3])[0] if len(args) > 3 else None)


def _pad_periods(src, limit: int = 1 << 18) -> list[tuple[int, int]]:
    """(period, trailing constant lanes) where every record of that period ends in constant lanes: the
    repeating pad byte of a lane-padded layout."""
    data = src.read(0, min(src.size, limit))
    out = []
    for p in range(4, min(MAX_STRIDE_Z, len(data) // 8) + 1, 4):
        m = len(data) // p
        rec = data[:m * p].reshape(m, p)
        t = 0
        while t < 15 and t < p - 1 and (rec[:, p - 1 - t] == rec[0, p - 1 - t]).all():
            t += 1
        if t and not (rec[:, 0] == rec[0, 0]).all():
            out.append((p, t))
            if len(out) >= 3:
                break
    return out


def pad_periods(ctx) -> tuple[list, list]:
    """_pad_periods of A and of B (computed once: stride, lane_swap and signedness read them)."""
    return ctx.cached("pad_periods", lambda: (_pad_periods(ctx.src_a), _pad_periods(ctx.src_b)))


def layer_map(view):
    layer = getattr(view, "layer", None)
    if layer is None:
        return None
    from forensics.model.tflite.relayout import layer_map as make

    try:
        return make(layer)
    except InputError:
        return None


def candidates(ctx) -> list:
    """Lane padding wrong in either direction: z from the model's layer map, the layout's pad lanes, records
    ending in constant lanes, and (sizes differing) every z whose padded and packed sizes fit both dumps."""
    n_a, n_b, layout = ctx.n_a, ctx.n_b, ctx.layout
    strides = set()
    lmap = layer_map(ctx.model_view)
    if lmap is not None and lmap.z_bytes_padded != lmap.z_bytes:
        strides.add(lmap.z_bytes)
    if layout.pad_lanes:
        data = [l for l in range(layout.record_size) if l not in layout.pad_lanes]
        if data == list(range(len(data))):
            strides.add(len(data))
    for periods in pad_periods(ctx):
        for p, t in periods:
            strides.update(p - i for i in range(1, t + 1))
    if n_a != n_b:
        strides.update(_sized_widths(n_a, n_b))
    out = []
    for w in sorted(strides):
        for p in sorted({ceil_to(w, m) for m in LANE_ALIGN} - {w}):
            out += [Strided(w, p, w, size=n_b), Strided(w, w, p, size=n_b)]
    return out


def _sized_widths(n_a: int, n_b: int) -> list[int]:
    """Every z (up to MAX_STRIDE_Z) for which one size is whole records of z padded to a lane alignment and the
    other the same records packed, each within the slack a layout may leave: sizes differing say nothing else."""
    widths = []
    for w in range(1, MAX_STRIDE_Z + 1):
        for p in {ceil_to(w, m) for m in LANE_ALIGN} - {w}:
            for sa, sb in ((p, w), (w, p)):
                r = n_a // sa
                if r >= 2 and 0 <= n_a - r * sa < STRIDE_SLACK and 0 <= n_b - r * sb < STRIDE_SLACK:
                    widths.append(w)
    return widths


def _evidence(bug, ctx, recs) -> dict:
    """Records whose z data bytes B holds exactly where the stride puts them, and the padded side's pad byte
    when it is one constant (on pairs scored exactly; None otherwise)."""
    if not ctx.exact:
        return {"records_equal": None, "pad_constant": None}
    src_a, src_b = ctx.src_a, ctx.src_b
    z, sa, sb = bug.width, bug.src, bug.dst
    a = src_a.read(0, src_a.size)
    b = src_b.read(0, src_b.size)
    m = min(recs, len(a) // sa + (len(a) % sa >= z), len(b) // sb + (len(b) % sb >= z))
    ia = (np.arange(m)[:, None] * sa + np.arange(z)[None, :])
    ib = (np.arange(m)[:, None] * sb + np.arange(z)[None, :])
    equal = int(np.count_nonzero((a[ia] == b[ib]).all(axis=1)))
    padded, p = (a, sa) if sa > sb else (b, sb)
    k = len(padded) // p
    pads = padded[:k * p].reshape(k, p)[:, z:]
    pad = int(pads.flat[0]) if pads.size and (pads == pads.flat[0]).all() else None
    return {"records_equal": equal, "pad_constant": pad}


def _wrong_side(ctx, n_a: int, n_b: int, padded: str, packed: str) -> tuple[str | None, str]:
    """Which side of a same-size pair holds the wrong layout, and what decided it: the model (a buffer of the
    tensor's size holds the packed TFLite tensor, one of the layer's size_bytes the chip's padded layout), else the
    reference (A is right: B is the side under test). Sizes differing: neither (a raw and a tensor dump)."""
    if n_a != n_b:
        return None, "sizes"
    view = ctx.model_view
    if view is not None:
        if n_a == view.tensor_size:
            return padded, "model"
        if view.raw_size is not None and n_a == view.raw_size:
            return packed, "model"
    return "B", "reference"


def _same_size_text(bug, wrong: str, padded: str, lane_text: str) -> tuple[str, str]:
    """(the evidence's last clause, the hint) of a same-size pair with one side at the wrong stride."""
    z, stride = bug.width, max(bug.src, bug.dst)
    if wrong == padded:  # a tensor-sized buffer still at the chip's stride: the relayout was skipped
        return (f": {wrong} still holds the chip's {stride}-byte stride where the tensor's records are {z} bytes "
                "apart (the relayout from the chip's layout was skipped)",
                f"relayout {wrong}: copy the {z} data bytes of each {stride}-byte record of the chip's output into "
                f"the tensor, {z} bytes apart (drop the pad lane{'s' if stride - z > 1 else ''}), not the raw "
                "bytes as they are")
    return (f": {wrong} was read or written with the wrong stride ({z} bytes) where the chip's layout keeps "
            f"{stride}",
            f"read and write each record of {wrong} at the chip's stride of {stride} bytes (z={z} padded to "
            f"{lane_text}; the layer's size_bytes), not at z")


def finding(c, ctx, explains):
    bug, a, b, n_a, n_b = c.bug, ctx.a, ctx.b, ctx.n_a, ctx.n_b
    details = dict(bug.params())
    z, sa, sb = bug.width, bug.src, bug.dst
    recs = min(-(-n_a // sa), -(-n_b // sb))
    details.update({"records": recs, "raw_side": "A" if sa > sb else "B", "raw_size": n_a if sa > sb else n_b,
                    "tensor_size": n_b if sa > sb else n_a, "record_size": max(sa, sb),
                    "data_lanes": compress_lanes(range(z))})
    padded, packed = ("A", "B") if sa > sb else ("B", "A")
    details.update(_evidence(bug, ctx, recs))
    align = next((m for m in LANE_ALIGN if ceil_to(z, m) == max(sa, sb)), None)
    lane_text = "the 4-byte lane" if align == 4 else (f"a multiple of {align} lanes" if align else
                                                      f"{max(sa, sb)} bytes")
    details["lane_multiple"] = align
    wrong, decided_by = _wrong_side(ctx, n_a, n_b, padded, packed)
    details.update({"wrong_side": wrong, "decided_by": decided_by})
    text = (f"{padded} holds {n(recs)} records of z={z} bytes at a {max(sa, sb)}-byte stride (z padded to "
            f"{lane_text}), {packed} the same records {min(sa, sb)} bytes apart")
    command = ""
    if wrong is not None:
        clause, hint = _same_size_text(bug, wrong, padded, lane_text)
        text += " in a buffer of the same size" + clause
    else:
        if ctx.tensor:
            text += f": {padded} is {ctx.tensor!r} as the chip writes it, {packed} the TFLite tensor"
        raw = a if padded == "A" else b
        hint = "relayout the raw side before comparing"
        if ctx.model and ctx.tensor:
            command = (f"forensics relayout {_arg(raw)} --model {_arg(ctx.model)} --layer {_arg(ctx.tensor)} -o "
                       f"{_arg(os.path.splitext(os.path.basename(raw))[0] + '.tensor.bin')}")
        else:
            command = f"forensics relayout {_arg(raw)} --model MODEL --layer LAYER -o tensor.bin"
    return [Finding("stride", text, hint, details, explains, command=command)]


KIND = Kind("stride", rank=2, display=0, usage="stride:Z:SRC:DST[:PADHEX]",
            description="Z-byte records at SRC-byte stride in A land DST bytes apart in B",
            parse=parse, candidates=candidates, finding=finding)
