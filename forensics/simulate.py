"""Bug generators: what a reference buffer A becomes under a named driver bug, as byte index and value maps.

Every bug is a frozen object that predicts any range of B from A (`predict(source, lo, hi)`), so the same
generator serves `forensics simulate` (the whole B at once) and `forensics diagnose` (which scores each
hypothesis by how many of the differing bytes its prediction reproduces, block by block, in bounded memory).
A prediction is the predicted bytes plus a mask of the bytes it defines; undefined bytes (slack of a larger
allocation, lane padding, bytes shifted in from outside A) may hold anything and are attributed to the bug.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.errors import InputError

FILL_BYTE = 0x00  # what `simulate` writes into bytes a bug leaves undefined


def ceil4(n: int) -> int:
    return -(-n // 4) * 4


class ArraySource:
    """A read-only byte source over an in-memory array (simulate; tests)."""

    def __init__(self, data):
        self.data = np.frombuffer(bytes(data), np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1)
        self.size = int(self.data.size)

    def read(self, lo: int, hi: int) -> np.ndarray:
        return self.data[lo:hi]


def gather(source, index: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """source[index]: (bytes, defined mask); index -1 or outside the source is not defined."""
    defined = (index >= 0) & (index < source.size)
    out = np.zeros(index.size, np.uint8)
    if defined.any():
        idx = index[defined]
        lo, hi = int(idx.min()), int(idx.max()) + 1
        out[defined] = source.read(lo, hi)[idx - lo]
    return out, defined


@dataclass(frozen=True)
class Bug:
    """Base: B = A (identity). Subclasses override `size_out` and `index` and/or `values`."""

    kind = "none"

    def size_out(self, n: int) -> int:
        return n

    def index(self, n: int, pos: np.ndarray) -> np.ndarray:
        """Offset in A that B's byte at each position copies (-1: undefined)."""
        return pos

    def values(self, source, pos: np.ndarray, pred: np.ndarray, defined: np.ndarray) -> None:
        """Adjust predicted values in place (fill patterns, flipped bits)."""

    def predict(self, source, lo: int, hi: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """B's bytes [lo, hi) as predicted: (bytes, defined, slack). Slack bytes (index -1: padding, the rest of
        a larger allocation) may hold anything; bytes neither defined nor slack are ones A does not have."""
        pos = np.arange(lo, hi, dtype=np.int64)
        index = self.index(source.size, pos)
        pred, defined = gather(source, index)
        self.values(source, pos, pred, defined)
        return pred, defined, (index < 0) & ~defined

    def params(self) -> dict:
        return {}

    def spec(self) -> str:
        return self.kind


def _at_lanes(pos: np.ndarray, period: int, lanes) -> np.ndarray:
    """Which of the byte offsets `pos` fall on `lanes` of every `period` bytes."""
    return np.isin(pos % period, np.asarray(lanes))


def _pattern_at(pattern: bytes, pos: np.ndarray) -> np.ndarray:
    return np.frombuffer(pattern, np.uint8)[pos % len(pattern)]


@dataclass(frozen=True)
class Shift(Bug):
    """B[i] = A[i - k]: A's data appears k bytes later in B (k < 0: earlier); only in [start, end) if given."""

    k: int
    start: int | None = None
    end: int | None = None
    kind = "shift"

    def index(self, n, pos):
        idx = pos - self.k
        idx = np.where((idx >= 0) & (idx < n), idx, -1)
        if self.start is None:
            return idx
        inside = (pos >= self.start) & (pos < self.end)
        return np.where(inside, idx, pos)

    def params(self):
        scope = "global" if self.start is None else "local"
        out = {"shift_bytes": self.k, "scope": scope}
        if self.start is not None:
            out["span"] = [self.start, self.end]
        return out

    def spec(self):
        return f"shift:{self.k}" + ("" if self.start is None else f"@{self.start}-{self.end}")


@dataclass(frozen=True)
class Fill(Bug):
    """B holds `pattern` (aligned to offset 0) in each of `ranges` [(start, end)]: never written."""

    ranges: tuple = ()
    pattern: bytes = b"\xcc"
    kind = "fill"

    def values(self, source, pos, pred, defined):
        for s, e in self.ranges:
            m = (pos >= s) & (pos < e)
            if m.any():
                pred[m] = _pattern_at(self.pattern, pos[m])
                defined[m] = True

    def params(self):
        return {"ranges": [list(r) for r in self.ranges], "pattern": self.pattern.hex()}

    def spec(self):
        return "fill:" + ",".join(f"{s}-{e}" for s, e in self.ranges) + f":{self.pattern.hex()}"


@dataclass(frozen=True)
class Truncation(Bug):
    """The copy stopped after `keep` bytes: B is shorter, or (with a pattern) B's tail keeps its prefill."""

    keep: int
    pattern: bytes | None = None
    kind = "truncation"

    def size_out(self, n):
        return min(n, self.keep) if self.pattern is None else n

    def values(self, source, pos, pred, defined):
        if self.pattern is not None:
            m = pos >= self.keep
            pred[m] = _pattern_at(self.pattern, pos[m])
            defined[m] = True

    def params(self):
        return {"keep": self.keep, "pattern": None if self.pattern is None else self.pattern.hex()}

    def spec(self):
        return f"truncation:{self.keep}" + ("" if self.pattern is None else f":{self.pattern.hex()}")


@dataclass(frozen=True)
class Oversize(Bug):
    """B is a larger allocation holding all of A at `offset` (page rounding, a combined allocation)."""

    offset: int
    extra: int
    kind = "oversize"

    def size_out(self, n):
        return n + self.extra

    def index(self, n, pos):
        idx = pos - self.offset
        return np.where((idx >= 0) & (idx < n), idx, -1)

    def params(self):
        return {"offset": self.offset, "extra_bytes": self.extra}

    def spec(self):
        return f"oversize:{self.extra}:{self.offset}"


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

    def params(self):
        if self.kind_name == "pitch":
            return {"row_bytes": self.width, "pitch": self.dst if self.dst != self.width else self.src,
                    "pitched_side": "B" if self.dst != self.width else "A"}
        return {"z_bytes": self.width, "stride_a": self.src, "stride_b": self.dst, "pad_byte": self.pad}

    def spec(self):
        if self.kind_name == "pitch":
            return f"pitch:{self.width}:{self.dst}" if self.dst != self.width else f"pitch:{self.width}:-{self.src}"
        return f"stride:{self.width}:{self.src}:{self.dst}"


@dataclass(frozen=True)
class Signedness(Bug):
    """The most significant bit of the bytes at `lanes` (of every `period` bytes) is flipped (int8 vs uint8)."""

    period: int = 1
    lanes: tuple = (0,)
    kind = "signedness"

    def values(self, source, pos, pred, defined):
        m = _at_lanes(pos, self.period, self.lanes) & defined
        pred[m] ^= 0x80

    def params(self):
        return {"period": self.period, "lanes": list(self.lanes)}

    def spec(self):
        return f"signedness:{self.period}:{compress_lanes(self.lanes)}"


_WORDS = {"16": (1, 0), "32": (3, 2, 1, 0), "64": (7, 6, 5, 4, 3, 2, 1, 0), "halves": (2, 3, 0, 1),
          "rgb": (2, 1, 0)}
WORD_NAMES = {v: k for k, v in _WORDS.items()}
_PERM_TEXT = {"16": "16-bit byte order swapped (endianness)", "32": "32-bit byte order reversed (endianness)",
              "64": "64-bit byte order reversed (endianness)", "halves": "16-bit halves of each 32-bit word swapped",
              "rgb": "channel order of 3-byte pixels reversed (RGB <-> BGR)"}


@dataclass(frozen=True)
class LaneSwap(Bug):
    """Bytes permuted within every `len(permutation)`-byte word from `offset`: B lane i = A lane p[i]."""

    permutation: tuple = (1, 0)
    offset: int = 0
    start: int | None = None  # only the words inside [start, end) (a chunk copied with another byte order)
    end: int | None = None
    kind = "lane_swap"

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


@dataclass(frozen=True)
class Relayout(Bug):
    """Records of `record` bytes in another order (a wrong tile order): `order[i]` = A's record at B's i."""

    record: int = 4
    order: tuple = field(default=(), compare=False, hash=False)
    kind = "relayout"

    def index(self, n, pos):
        order = np.asarray(self.order, np.int64)
        r, j = pos // self.record, pos % self.record
        inside = r < len(order)
        src = np.where(inside, order[np.minimum(r, max(len(order) - 1, 0))] * self.record + j, pos) \
            if len(order) else pos
        return src

    def params(self):
        return {"record_bytes": self.record}

    def spec(self):
        return f"relayout:{self.record}"


@dataclass(frozen=True)
class Stale(Bug):
    """Bytes of `ranges` hold the previous run's buffer (not rewritten this run)."""

    previous: object = None  # a source
    ranges: tuple = ()
    kind = "stale"

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


@dataclass(frozen=True)
class ValueMap(Bug):
    """Every byte value v of A becomes lut[v] in B (a wrong requantization scale or zero point; values clamped
    to a range: saturation), in every byte or only at `lanes` of every `period` bytes (one channel's clamp)."""

    lut: bytes = bytes(range(256))
    kind_name: str = "requantize"
    period: int = 1
    lanes: tuple = (0,)

    @property
    def kind(self):  # type: ignore[override]
        return self.kind_name

    def values(self, source, pos, pred, defined):
        where = defined if self.period == 1 else defined & _at_lanes(pos, self.period, self.lanes)
        pred[where] = np.frombuffer(self.lut, np.uint8)[pred[where]]

    def changed(self) -> list[int]:
        return [v for v in range(256) if self.lut[v] != v]

    def params(self):
        ch = self.changed()
        out = {"values_changed": len(ch), "map": {f"0x{v:02x}": f"0x{self.lut[v]:02x}" for v in ch[:16]}}
        if self.period > 1:
            out.update({"period": self.period, "lanes": list(self.lanes)})
        return out

    def spec(self):
        lanes = f":{self.period}:{compress_lanes(self.lanes)}" if self.period > 1 else ""
        return f"{self.kind_name}:" + self.lut.hex() + lanes


@dataclass(frozen=True)
class Pages(Bug):
    """A scatter-gather (MDL) page list gone wrong: B's page i (pages of `page` bytes from `phase`) holds A's page
    order[i]: pages swapped, duplicated, missing (the rest moved up one page); -1 keeps B's own page."""

    page: int = 4096
    order: tuple = ()
    phase: int = 0
    size: int | None = None
    kind = "page"

    def size_out(self, n):
        return n if self.size is None else self.size

    def index(self, n, pos):
        rel = pos - self.phase
        q, j = rel // self.page, rel % self.page
        order = np.asarray(self.order or (-1,), np.int64)
        inside = (rel >= 0) & (q < len(self.order))
        src = order[np.clip(q, 0, len(order) - 1)]
        idx = np.where(inside & (src >= 0), self.phase + src * self.page + j, pos)
        return np.where(idx < n, idx, -1)

    def moves(self) -> list[tuple[int, int]]:
        return [(i, j) for i, j in enumerate(self.order) if j >= 0 and j != i]

    def params(self):
        return {"page_bytes": self.page, "phase": self.phase,
                "pages": [{"page": i, "holds": j} for i, j in self.moves()[:32]]}

    def spec(self):
        return f"page:{self.page}:" + ",".join(f"{i}={j}" for i, j in self.moves())


@dataclass(frozen=True)
class CacheLines(Bug):
    """Scattered whole cache lines (`line` bytes, aligned to offset 0) of B hold a prefill `pattern` or, with
    `previous`, the previous run's bytes: DMA into memory the CPU still caches (no flush / invalidate)."""

    lines: tuple = ()
    line: int = 64
    pattern: bytes | None = b"\x00"
    previous: object = field(default=None, compare=False, hash=False)
    kind = "cacheline"

    def values(self, source, pos, pred, defined):
        hit = np.isin(pos // self.line, np.asarray(self.lines, np.int64))
        if self.previous is not None:
            hit &= pos < self.previous.size
            if hit.any():
                sel = pos[hit]
                lo = int(sel.min())
                pred[hit] = self.previous.read(lo, int(sel.max()) + 1)[sel - lo]
        elif hit.any():
            pred[hit] = _pattern_at(self.pattern, pos[hit])
        defined[hit] = True

    def params(self):
        return {"line_bytes": self.line, "lines": len(self.lines), "first_lines": list(self.lines[:16]),
                "source": "previous" if self.previous is not None else self.pattern.hex()}

    def spec(self):
        src = "previous" if self.previous is not None else self.pattern.hex()
        return f"cacheline:{len(self.lines)}:{src}"


def compress_lanes(lanes) -> str:
    """[0, 1, 2, 3, 7] -> '0-3,7'."""
    lanes = sorted(set(int(x) for x in lanes))
    parts, i = [], 0
    while i < len(lanes):
        j = i
        while j + 1 < len(lanes) and lanes[j + 1] == lanes[j] + 1:
            j += 1
        parts.append(str(lanes[i]) if i == j else f"{lanes[i]}-{lanes[j]}")
        i = j + 1
    return ",".join(parts)


# --- simulate: parse KIND[:PARAMS] and write B ----------------------------------------------------------------

BUG_HELP = (
    ("shift", "shift:K[@START-END]", "A's bytes appear K bytes later in B (K < 0: earlier); only in START-END"),
    ("fill", "fill:START-END[,START-END...][:HEX]", "B keeps a prefill pattern (default cc) in those ranges"),
    ("truncation", "truncation:KEEP[:HEX]", "B stops after KEEP bytes (with HEX: the tail keeps that prefill)"),
    ("oversize", "oversize:EXTRA[:OFFSET]", "B is EXTRA bytes longer and holds A at OFFSET (default 0)"),
    ("stride", "stride:Z:SRC:DST[:PADHEX]", "Z-byte records at SRC-byte stride in A land DST bytes apart in B"),
    ("pitch", "pitch:ROW:PITCH", "ROW-byte rows of A land PITCH bytes apart in B (PITCH < 0: A is pitched)"),
    ("signedness", "signedness[:PERIOD[:LANES]]", "the sign bit of those lanes (default all bytes) is flipped"),
    ("lane_swap", "lane_swap:16|32|64|halves|rgb|P,E,R,M[@START-END]",
     "bytes permuted in every word (byte order, RGB/BGR); only in START-END"),
    ("relayout", "relayout:RECORD[:SEED]", "B's RECORD-byte records are A's in a shuffled order"),
    ("stale", "stale[:START-END,...]", "those bytes (default all) hold the previous run's buffer (--previous)"),
    ("page", "page:I=J[,I=J...][@PAGE]|page:missing:K[@PAGE]",
     "B's page I holds A's page J (4096-byte pages); missing: A's page K dropped, later pages move up one"),
    ("cacheline", "cacheline:N[:HEX|previous][:SEED]",
     "N random 64-byte cache lines hold HEX (default 00) or the previous run's bytes (--previous)"),
    ("bits", "bits:set|clear|flip:MASK[:PERIOD[:LANES]]", "bits MASK (hex) stuck at 1 / at 0 / flipped in those lanes"),
    ("saturation", "saturation:LO-HI[:PERIOD[:LANES]]",
     "every value (or those lanes') is clamped to LO..HI (unsigned bytes)"),
    ("requantize", "requantize:SCALE[:OFFSET[:PERIOD[:LANES]]]",
     "every byte v (or those lanes') becomes round(v * SCALE + OFFSET) clamped to 0..255"),
)


def _int(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise InputError(f"bug parameter {what} must be an integer, got {text!r}") from None


def _ranges(text: str) -> tuple:
    out = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if not sep:
            raise InputError(f"bug range {part!r} must be START-END")
        s, e = _int(lo, "START"), _int(hi, "END")
        if not 0 <= s < e:
            raise InputError(f"bug range {part!r} must have 0 <= START < END")
        out.append((s, e))
    return tuple(out)


def _hex(text: str) -> bytes:
    try:
        pat = bytes.fromhex(text)
    except ValueError:
        pat = b""
    if not pat:
        raise InputError(f"bug pattern {text!r} must be hex bytes, e.g. cc or efbeadde")
    return pat


def parse_bug(spec: str, size: int, previous=None) -> Bug:
    """`KIND[:PARAMS]` (see BUG_HELP) -> a Bug for a reference of `size` bytes."""
    kind, _, rest = spec.partition(":")
    args = rest.split(":") if rest else []
    try:
        if kind == "shift":
            k_text, _, span = args[0].partition("@")
            k = _int(k_text, "K")
            if span:
                (s, e), = _ranges(span)
                return Shift(k, s, min(e, size))
            return Shift(k)
        if kind == "fill":
            return Fill(_ranges(args[0]), _hex(args[1]) if len(args) > 1 else b"\xcc")
        if kind == "truncation":
            keep = _int(args[0], "KEEP")
            if not 0 < keep < size:
                raise InputError(f"truncation KEEP must be between 1 and {size - 1} bytes, got {keep}")
            return Truncation(keep, _hex(args[1]) if len(args) > 1 else None)
        if kind == "oversize":
            extra = _int(args[0], "EXTRA")
            offset = _int(args[1], "OFFSET") if len(args) > 1 else 0
            if extra <= 0 or not 0 <= offset <= extra:
                raise InputError("oversize needs EXTRA > 0 and 0 <= OFFSET <= EXTRA")
            return Oversize(offset, extra)
        if kind == "stride":
            z, src, dst = (_int(args[i], n) for i, n in enumerate(("Z", "SRC", "DST")))
            if z <= 0 or src < z or dst < z or src == dst and src == z:
                raise InputError("stride needs Z <= SRC, Z <= DST and a padded side (e.g. stride:91:92:91)")
            return Strided(z, src, dst, pad=_hex(args[3])[0] if len(args) > 3 else None)
        if kind == "pitch":
            row, pitch = _int(args[0], "ROW"), _int(args[1], "PITCH")
            if row <= 0 or abs(pitch) <= row:
                raise InputError("pitch needs ROW > 0 and |PITCH| > ROW")
            if pitch > 0:
                return Strided(row, row, pitch, kind_name="pitch")
            return Strided(row, -pitch, row, kind_name="pitch")
        if kind == "signedness":
            return Signedness(*_period_and_lanes(args, 0, kind))
        if kind == "lane_swap":
            word, _, span = (args[0] if args else "32").partition("@")
            perm = _WORDS.get(word) or tuple(_int(x, "P") for x in word.split(","))
            if sorted(perm) != list(range(len(perm))) or len(perm) < 2:
                raise InputError(f"lane_swap permutation {word!r} must reorder 0..n-1 (or 16, 32, 64, halves, rgb)")
            if span:
                (s, e), = _ranges(span)
                return LaneSwap(tuple(perm), 0, s, min(e, size))
            return LaneSwap(tuple(perm))
        if kind == "relayout":
            record = _int(args[0], "RECORD") if args else 4
            seed = _int(args[1], "SEED") if len(args) > 1 else 0
            n = size // record if record > 0 else 0
            if n < 2:
                raise InputError(f"relayout RECORD must leave at least 2 records in {size} bytes")
            order = np.random.default_rng(seed).permutation(n)
            return Relayout(record, tuple(order.tolist()))
        if kind == "stale":
            if previous is None:
                raise InputError("stale needs the previous run's buffer (previous=)")
            return Stale(previous, _ranges(args[0]) if args else ())
        if kind == "page":
            return _parse_pages(args[0] if len(args) == 1 else ":".join(args[:2]), size)
        if kind == "cacheline":
            count = _int(args[0], "N")
            lines = size // 64
            if not 0 < count <= lines:
                raise InputError(f"cacheline N must be between 1 and {lines} lines")
            src = args[1] if len(args) > 1 else "00"
            seed = _int(args[2], "SEED") if len(args) > 2 else 0
            chosen = tuple(sorted(np.random.default_rng(seed).choice(lines, count, replace=False).tolist()))
            if src == "previous":
                if previous is None:
                    raise InputError("cacheline:N:previous needs the previous run's buffer (previous=)")
                return CacheLines(chosen, previous=previous, pattern=None)
            return CacheLines(chosen, pattern=_hex(src))
        if kind == "bits":
            op, mask = args[0], _int("0x" + args[1], "MASK")
            if op not in ("set", "clear", "flip") or not 0 < mask < 256:
                raise InputError("bits needs set|clear|flip and a mask of 01..ff")
            period, lanes = _period_and_lanes(args, 2, kind)
            masks = {"and": [0xFF] * period, "or": [0] * period, "xor": [0] * period}
            for lane in lanes:
                if op == "set":
                    masks["or"][lane] = mask
                elif op == "clear":
                    masks["and"][lane] = 0xFF & ~mask
                else:
                    masks["xor"][lane] = mask
            return Bits(period, tuple(masks["and"]), tuple(masks["or"]), tuple(masks["xor"]))
        if kind == "saturation":
            (lo, hi), = _ranges_inclusive(args[0])
            if not 0 <= lo < hi <= 255:
                raise InputError("saturation needs 0 <= LO < HI <= 255")
            return ValueMap(bytes(np.clip(np.arange(256), lo, hi).astype(np.uint8)), "saturation",
                            *_period_and_lanes(args, 1, kind))
        if kind == "requantize":
            scale = _float(args[0], "SCALE")
            offset = _float(args[1], "OFFSET") if len(args) > 1 else 0.0
            lut = np.clip(np.rint(np.arange(256) * scale + offset), 0, 255).astype(np.uint8)
            return ValueMap(bytes(lut), "requantize", *_period_and_lanes(args, 2, kind))
    except IndexError:
        pass
    else:
        raise InputError(f"unknown bug kind {kind!r}: one of {', '.join(k for k, _, _ in BUG_HELP)}")
    usage = next((u for k, u, _ in BUG_HELP if k == kind), kind)
    raise InputError(f"bug {spec!r} is missing parameters: {usage}")


def _period_and_lanes(args, at: int, kind: str) -> tuple[int, tuple]:
    """`[PERIOD[:LANES]]` from args[at:]: every byte by default; LANES (e.g. 1,3-4) of 0..PERIOD-1, default all."""
    period = _int(args[at], "PERIOD") if len(args) > at else 1
    if period <= 0:
        raise InputError(f"{kind} PERIOD must be positive")
    lanes = tuple(range(period))
    if len(args) > at + 1:
        lanes = tuple(sorted({x for s, e in _ranges_inclusive(args[at + 1]) for x in range(s, e + 1)}))
        if not lanes or lanes[-1] >= period:
            raise InputError(f"{kind} LANES must lie in 0..{period - 1}")
    return period, lanes


def _float(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"bug parameter {what} must be a number, got {text!r}") from None


def _parse_pages(text: str, size: int) -> Pages:
    body, _, page_text = text.partition("@")
    page = _int(page_text, "PAGE") if page_text else 4096
    n = -(-size // page) if page > 0 else 0
    if n < 2:
        raise InputError(f"page needs PAGE > 0 and at least 2 pages in {size} bytes")
    if body.startswith("missing:"):
        k = _int(body.split(":", 1)[1], "K")
        if not 0 <= k < n - 1:
            raise InputError(f"page:missing:K needs 0 <= K < {n - 1}")
        order = list(range(k)) + list(range(k + 1, n))
        return Pages(page, tuple(order), size=size - page if k < n - 1 else None)
    order = list(range(n))
    for part in body.split(","):
        i, sep, j = part.partition("=")
        if not sep:
            raise InputError(f"page move {part!r} must be I=J (B's page I holds A's page J)")
        i, j = _int(i, "I"), _int(j, "J")
        if not (0 <= i < n and 0 <= j < n):
            raise InputError(f"page move {part!r}: pages are 0..{n - 1}")
        order[i] = j
    return Pages(page, tuple(order))


def _ranges_inclusive(text: str):
    out = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        s = _int(lo, "LANE")
        out.append((s, _int(hi, "LANE") if sep else s))
    return out


@dataclass(frozen=True)
class SimulateResult:
    source: str
    bug: str
    kind: str
    params: dict
    size_a: int
    size_b: int
    data: bytes = field(repr=False, compare=False)
    output: str | None = None
    exit_code: int = 0

    def to_dict(self) -> dict:
        return {"source": self.source, "bug": self.bug, "kind": self.kind, "params": self.params,
                "size_a": self.size_a, "size_b": self.size_b, "output": self.output}


MAX_SIMULATED = 256 << 20  # bytes of a simulated B: it is built in memory with an index per byte (~10x its size)


def apply_bug(bug: Bug, data, fill: int = FILL_BYTE) -> bytes:
    """B as the bug makes it from A's bytes (undefined bytes get `fill`)."""
    src = ArraySource(data)
    n_out = bug.size_out(src.size)
    if n_out > MAX_SIMULATED:  # checked before allocating (oversize:1099511627776 asked for 8 TiB of indices)
        raise InputError(f"bug {bug.spec()} makes B {n_out:,} bytes, more than the {MAX_SIMULATED >> 20} MiB "
                         f"a simulated dump may be (MAX_SIMULATED)")
    pred, defined, _ = bug.predict(src, 0, n_out)
    pred[~defined] = fill
    return pred.tobytes()


def simulate(a, bug, *, previous=None, output=None) -> SimulateResult:
    """What A (a path, Dump or bytes) becomes under `bug` (a Bug or a `KIND[:PARAMS]` string); with `output`,
    B is written there atomically."""
    from forensics.dump import Dump, open_dump

    path = "<bytes>"
    if isinstance(a, (bytes, bytearray, memoryview, np.ndarray)):
        data = bytes(a)
    else:
        dump = a if isinstance(a, Dump) else open_dump(a)
        path, data = dump.path, dump.read(0, dump.size)
    prev = None
    if previous is not None:
        pdump = previous if isinstance(previous, Dump) else open_dump(previous)
        prev = ArraySource(pdump.read(0, pdump.size))
    spec = bug if isinstance(bug, str) else bug.spec()
    bug = parse_bug(bug, len(data), prev) if isinstance(bug, str) else bug
    out = apply_bug(bug, data)
    if output is not None:
        from forensics.outputs import write_bytes_atomic

        write_bytes_atomic(output, out)
    return SimulateResult(path, spec, bug.kind, bug.params(), len(data), len(out), out,
                          None if output is None else str(output))


SENTINEL_PATTERNS = (b"\xcc", b"\xaa", b"\x00", b"\xff", b"\xcd", bytes.fromhex("efbeadde"),
                     bytes.fromhex("deadbeef"), bytes.fromhex("0df0adba"), bytes.fromhex("baadf00d"))
