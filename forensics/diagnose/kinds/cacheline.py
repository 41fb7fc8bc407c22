"""cacheline: scattered whole 64-byte cache lines of B hold a prefill or the previous run's bytes: DMA into memory
the CPU still caches (no flush / invalidate after the transfer)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.diagnose.kinds.base import Bug, Kind, parse_hex, parse_int, pattern_at, pattern_name
from forensics.diagnose.region import LINE, scattered_lines
from forensics.diagnose.result import Finding
from forensics.core.errors import InputError


@dataclass(frozen=True)
class CacheLines(Bug):
    """Scattered whole cache lines (`line` bytes, aligned to offset 0) of B hold a prefill `pattern` or, with
    `previous`, the previous run's bytes: DMA into memory the CPU still caches (no flush / invalidate)."""

    lines: tuple = ()
    line: int = 64
    pattern: bytes | None = b"\x00"
    previous: object = field(default=None, compare=False, hash=False)
    unchecked: bool = False  # the lines hold well-formed data, not A's, with no previous run to check it against
    kind = "cacheline"

    @property
    def tie_group(self):
        """Unchecked lines explain their bytes only by letting them hold anything: any kind that predicts the
        same bytes exactly comes first."""
        return UNCHECKED_GROUP if self.unchecked else None

    def index(self, n, pos):
        if not self.unchecked:
            return pos
        return np.where(np.isin(pos // self.line, np.asarray(self.lines, np.int64)), -1, pos)

    def values(self, source, pos, pred, defined):
        if self.unchecked:
            return
        hit = np.isin(pos // self.line, np.asarray(self.lines, np.int64))
        if self.previous is not None:
            hit &= pos < self.previous.size
            if hit.any():
                sel = pos[hit]
                lo = int(sel.min())
                pred[hit] = self.previous.read(lo, int(sel.max()) + 1)[sel - lo]
        elif hit.any():
            pred[hit] = pattern_at(self.pattern, pos[hit])
        defined[hit] = True

    def source(self) -> str:
        return "previous" if self.previous is not None else "unchecked" if self.unchecked else self.pattern.hex()

    def params(self):
        return {"line_bytes": self.line, "lines": len(self.lines), "first_lines": list(self.lines[:16]),
                "source": self.source()}

    def spec(self):
        return f"cacheline:{len(self.lines)}:{self.source()}"


UNCHECKED_GROUP = 99    # after every kind's group
WELL_FORMED_SHARE = 0.9  # of B's bytes in the lines hold values A holds too (data, not a prefill) ...
REWRITTEN_SHARE = 0.5    # ... and at least this share of the lines' bytes differ (whole lines, not drift)
SAMPLE_LINES = 256


def _well_formed_other(ctx, lines: np.ndarray) -> bool:
    """Whether B's bytes in the differing cache lines look like another frame's data: most bytes of the lines
    differ, their values are ones A holds (A's histogram), several distinct values, no prefill run the scan found
    (a stale line of the previous frame, as the CPU cached it, without the previous frame to check)."""
    if ctx.fills or ctx.n_a != ctx.n_b:
        return False
    picked = lines[np.linspace(0, lines.size - 1, min(SAMPLE_LINES, lines.size)).astype(np.int64)]
    got, ref = [], []
    for line in picked.tolist():
        lo, hi = line * LINE, min(ctx.n_b, (line + 1) * LINE)
        got.append(ctx.src_b.read(lo, hi))
        ref.append(ctx.src_a.read(lo, hi))
    b, a = np.concatenate(got), np.concatenate(ref)
    if np.count_nonzero(a != b) < REWRITTEN_SHARE * b.size or np.unique(b).size < 3:
        return False
    return np.count_nonzero(ctx.scan.hist_a[b] > 0) >= WELL_FORMED_SHARE * b.size


def parse(args, size, previous=None):
    count = parse_int(args[0], "N")
    lines = size // 64
    if not 0 < count <= lines:
        raise InputError(f"cacheline N must be between 1 and {lines} lines")
    src = args[1] if len(args) > 1 else "00"
    seed = parse_int(args[2], "SEED") if len(args) > 2 else 0
    chosen = tuple(sorted(np.random.default_rng(seed).choice(lines, count, replace=False).tolist()))
    if src == "previous":
        if previous is None:
            raise InputError("cacheline:N:previous needs the previous run's buffer (previous=)")
        return CacheLines(chosen, previous=previous, pattern=None)
    return CacheLines(chosen, pattern=parse_hex(src))


def candidates(ctx) -> list:
    """The lines the differences fall in, when they are several separate runs of at most 4 lines each, holding
    a sentinel the scan found, a usual prefill, or (with the previous run) its bytes."""
    region = ctx.region
    lines = scattered_lines(region, region.diff & region.in_a)
    if lines is None:
        return []
    lines_t = tuple(lines.tolist())
    out = [CacheLines(lines_t, LINE, pat) for _, pat, _ in ctx.fills]
    out += [CacheLines(lines_t, LINE, pat) for pat in (b"\x00", b"\xff", b"\xcc", b"\xcd") if all(
        pat != p for _, p, _ in ctx.fills)]
    if ctx.previous_src is not None:
        out.append(CacheLines(lines_t, LINE, None, ctx.previous_src))
    elif _well_formed_other(ctx, lines):
        out.append(CacheLines(lines_t, LINE, None, unchecked=True))
    return out


def finding(c, ctx, explains):
    bug = c.bug
    details = dict(bug.params())
    lines = len(bug.lines)
    if bug.unchecked:
        src = "other well-formed data (values A holds, no prefill), likely a previous frame's"
    elif bug.previous is not None:
        src = "the previous run's bytes"
    else:
        src = pattern_name(ctx, bug.pattern)
    first = ", ".join(f"0x{l * bug.line:x}" for l in bug.lines[:4]) + (" ..." if lines > 4 else "")
    details.update({"source": bug.source() if bug.previous is not None or bug.unchecked else src})
    text = (f"{lines} separate {bug.line}-byte cache lines of B (at {first}) hold {src} where A has data, the "
            "rest matches: the CPU read lines it still cached instead of what the device wrote by DMA")
    if bug.unchecked:
        text += ("; stale cache lines most likely, not checked against the previous frame (none given: rerun with "
                 "--previous PREVIOUS_B to confirm)")
    hint = (f"the buffer of {ctx.b} is not coherent (stale cache lines): flush / invalidate the cache over it "
            "after the DMA completes (KeFlushIoBuffers, or a common buffer allocated non-cached) before reading it")
    return [Finding("cacheline", text, hint, details, explains)]


KIND = Kind("cacheline", rank=11, display=11, usage="cacheline:N[:HEX|previous][:SEED]",
            description="N random 64-byte cache lines hold HEX (default 00) or the previous run's bytes (--previous)",
            parse=parse, candidates=candidates, finding=finding)
