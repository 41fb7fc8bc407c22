"""What every bug kind is made of: the Bug generator base, the Kind record a kind module declares, and the
parsers of the `KIND[:PARAMS]` spellings the kinds share.

A bug is a frozen object that predicts any range of B from A (`predict(source, lo, hi)`), so the same generator
serves `forensics simulate` (the whole B at once) and `forensics diagnose` (which scores each hypothesis by how
many of the differing bytes its prediction reproduces, block by block, in bounded memory). A prediction is the
predicted bytes plus a mask of the bytes it defines; undefined bytes (slack of a larger allocation, lane padding,
bytes shifted in from outside A) may hold anything and are attributed to the bug.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import numpy as np

from forensics.core.errors import InputError

FILL_BYTE = 0x00  # what `simulate` writes into bytes a bug leaves undefined
BUS_WORDS = (2, 4, 8)  # bytes of the 16-, 32- and 64-bit words a bus or a copy moves: periods tried whatever the record


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
    """Base: B = A (identity). Subclasses override `size_out` and `index` and/or `values`.

    Class attributes tell the scoring what sort of hypothesis it is (so the engine never asks for a type):
    `relocates` (bytes moved around: scored against chance matches), `structural` (few, from sizes and runs: always
    scored), `placed` (its slack explains nothing unless A's bytes are where it puts them), `judged_on_equal`
    (equal bytes it would change count against it; false for a stale buffer, rewritten in part), `spans` (may
    hold in one span of B only: `local`), `vacates` (its slack is the bytes it vacates, which another candidate
    may predict exactly)."""

    kind = "none"
    relocates = False
    structural = False
    placed = False
    judged_on_equal = True
    spans = False
    vacates = False
    named_beside = False  # said beside the chosen findings when it explains nearly all they explain, another way

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

    def explains_size(self, n_a: int, n_b: int) -> bool:
        """Whether this bug turns A's size into B's."""
        return self.size_out(n_a) == n_b

    def local(self, start: int, end: int):
        """The same bug limited to B's bytes [start, end), for kinds that can hold in one span; else None."""
        return None

    def complexity(self) -> int:
        """Among candidates explaining the same bytes, the simpler (smaller) wins."""
        return 0

    def params(self) -> dict:
        return {}

    def spec(self) -> str:
        return self.kind


@dataclass(frozen=True)
class Kind:
    """One bug kind as its module declares it.

    `rank`: most specific first when two candidates explain the same bytes; `group`: kinds that explain the same
    bytes in different ways share one (the one changing fewer equal bytes then wins); `display`: its row in the
    report. `usage` / `description` / `parse(args, size, previous)` are its `simulate --bug` spelling (none for
    kinds that are only found); `candidates(ctx)` the hypotheses it proposes; `finding(c, ctx, explains)` its
    findings for a chosen candidate; `propose`: when its candidates are made (default: its rank; shift proposes
    first, its votes feed pitch)."""

    name: str
    rank: float     # any number between two kinds' ranks places a new kind between them
    display: float
    usage: str | None = None
    description: str = ""
    parse: Callable | None = None
    candidates: Callable | None = None
    finding: Callable | None = None
    group: float | None = None
    propose: float | None = None


# --- spellings shared by the kinds' parsers -------------------------------------------------------------------

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


def parse_int(text: str, what: str) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise InputError(f"bug parameter {what} must be an integer, got {text!r}") from None


def parse_float(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise InputError(f"bug parameter {what} must be a number, got {text!r}") from None


def parse_ranges(text: str) -> tuple:
    """`S-E[,S-E...]` -> ((S, E), ...), half-open byte ranges."""
    out = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        if not sep:
            raise InputError(f"bug range {part!r} must be START-END")
        s, e = parse_int(lo, "START"), parse_int(hi, "END")
        if not 0 <= s < e:
            raise InputError(f"bug range {part!r} must have 0 <= START < END")
        out.append((s, e))
    return tuple(out)


def parse_ranges_inclusive(text: str):
    out = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        s = parse_int(lo, "LANE")
        out.append((s, parse_int(hi, "LANE") if sep else s))
    return out


def parse_hex(text: str) -> bytes:
    try:
        pat = bytes.fromhex(text)
    except ValueError:
        pat = b""
    if not pat:
        raise InputError(f"bug pattern {text!r} must be hex bytes, e.g. cc or efbeadde")
    return pat


def period_and_lanes(args, at: int, kind: str) -> tuple[int, tuple]:
    """`[PERIOD[:LANES]]` from args[at:]: every byte by default; LANES (e.g. 1,3-4) of 0..PERIOD-1, default all."""
    period = parse_int(args[at], "PERIOD") if len(args) > at else 1
    if period <= 0:
        raise InputError(f"{kind} PERIOD must be positive")
    lanes = tuple(range(period))
    if len(args) > at + 1:
        lanes = tuple(sorted({x for s, e in parse_ranges_inclusive(args[at + 1]) for x in range(s, e + 1)}))
        if not lanes or lanes[-1] >= period:
            raise InputError(f"{kind} LANES must lie in 0..{period - 1}")
    return period, lanes


def at_lanes(pos: np.ndarray, period: int, lanes) -> np.ndarray:
    """Which of the byte offsets `pos` fall on `lanes` of every `period` bytes."""
    return np.isin(pos % period, np.asarray(lanes))


def pattern_at(pattern: bytes, pos: np.ndarray) -> np.ndarray:
    return np.frombuffer(pattern, np.uint8)[pos % len(pattern)]


def shell_arg(path) -> str:
    """A path as the shell takes it in a command a hint prints (run as printed, it must work)."""
    import shlex

    return shlex.quote(str(path))


def n(value) -> str:
    """An integer with thousands separators, as every finding writes counts."""
    return f"{int(value):,}"


def records_of(layout, s: int, e: int) -> str:
    rs, off = layout.record_size, layout.offset
    first, last = max(0, s - off) // rs, max(0, e - 1 - off) // rs
    return str(first) if first == last else f"{first}-{last}"


def hex_ranges(ranges) -> str:
    return ", ".join(f"0x{s:x}-0x{e:x}" for s, e in ranges[:4]) + (" ..." if len(ranges) > 4 else "")


def pattern_name(ctx, pattern: bytes) -> str:
    return ctx.pattern_names.get(pattern, f"0x{pattern.hex().upper()}")
