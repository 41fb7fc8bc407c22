"""How much of a sentinel-prefilled buffer the device actually wrote.

A driver prefills the output buffer with a sentinel (`cc`, `aa`, or a pattern such as `deadbeef` written from
offset 0); runs of at least `min_run` bytes still equal to the sentinel were never written (libedgetpu's own
overwrite check uses 8 bytes). Shorter runs are taken as data that happens to equal the sentinel.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.io.dump import Dump
from forensics.core.errors import InputError

DEFAULT_MIN_RUN = 8
MAX_RANGES = 10_000
_CHUNK = 8 << 20


class MaskRuns:
    """Runs of True in a mask fed chunk by chunk in order, of at least `min_len`: the one finder of "never
    written" stretches (coverage's sentinel runs; diagnose's fills). Each run carries how many elements of an
    optional `weight` mask are set in it (diagnose: bytes where A differs from B). All runs are counted
    (`total`, `total_length`); the first `keep` (all when None) are kept in `runs` as (start, end, weight)."""

    def __init__(self, min_len: int, *, keep: int | None = None):
        self.min_len, self.keep = min_len, keep
        self.open_start: int | None = None  # a run still open at the previous chunk's end
        self.open_weight = 0
        self.runs: list[tuple[int, int, int]] = []
        self.total = 0
        self.total_length = 0

    def _close(self, start: int, end: int, weight: int) -> None:
        if end - start >= self.min_len:
            self.total += 1
            self.total_length += end - start
            if self.keep is None or len(self.runs) < self.keep:
                self.runs.append((start, end, weight))

    def breaks(self, pos: int) -> None:
        """The run open at `pos` (if any) ends there."""
        if self.open_start is not None:
            self._close(self.open_start, pos, self.open_weight)
            self.open_start = None

    def feed(self, pos: int, mask: np.ndarray, weight: np.ndarray | None = None) -> None:
        """The chunk of the mask that starts at `pos` (right after the previous one)."""
        n = len(mask)
        if n == 0:
            return
        same = int(np.count_nonzero(mask))
        if same == n:  # all set (a never-written stretch, a sparse file's hole): the run goes on
            if self.open_start is None:
                self.open_start, self.open_weight = pos, 0
            self.open_weight += int(np.count_nonzero(weight)) if weight is not None else 0
            return
        if same == 0:
            self.breaks(pos)
            return
        # Run edges from bool temporaries only (a diff over ints would widen to 8 bytes per input byte).
        starts = np.flatnonzero(mask[1:] & ~mask[:-1]) + 1
        ends = np.flatnonzero(mask[:-1] & ~mask[1:]) + 1
        if mask[0]:
            starts = np.concatenate(([0], starts))
        if mask[-1]:
            ends = np.concatenate((ends, [n]))
        if self.open_start is not None and not (len(starts) and starts[0] == 0):
            self.breaks(pos)
        keep = (ends - starts >= self.min_len) | (starts == 0) | (ends == n)
        for s, e in zip(starts[keep].tolist(), ends[keep].tolist()):
            w = int(np.count_nonzero(weight[s:e])) if weight is not None else 0
            start = pos + s
            if s == 0 and self.open_start is not None:
                start, w = self.open_start, w + self.open_weight
                self.open_start = None
            if e == n:
                self.open_start, self.open_weight = start, w
            else:
                self._close(start, pos + e, w)

    def finish(self, end: int) -> None:
        """The mask ends at `end`: a run still open ends there."""
        self.breaks(end)


@dataclass(frozen=True)
class CoverageResult(serial.Serial):
    JSON_DERIVED = ("written_fraction", "untouched_ranges_truncated")
    JSON_ORDER = ("path", "size", "offset", "length", "sentinel", "min_run", "untouched_bytes", "written_fraction")

    path: str
    size: int
    start: int = field(metadata=serial.json("offset"))
    length: int
    sentinel: bytes
    min_run: int
    untouched_bytes: int
    untouched_ranges: tuple[tuple[int, int], ...]   # [start, end) absolute data offsets, at most MAX_RANGES
    ranges_total: int = field(metadata=serial.json("untouched_ranges_total"))

    @property
    def untouched_ranges_truncated(self) -> bool:
        return self.ranges_total > len(self.untouched_ranges)

    @property
    def written_fraction(self) -> float:
        return 1.0 - self.untouched_bytes / self.length if self.length else 1.0

    @property
    def fully_written(self) -> bool:
        return self.untouched_bytes == 0


def judge_coverage(result: CoverageResult) -> Judgement:
    """OK when the device wrote every byte; WARNING (exit 1) when runs of the sentinel remain."""
    pct = 100.0 * result.written_fraction
    message = (f"{pct:.2f}% of {result.length:,} bytes written; {result.untouched_bytes:,} bytes untouched in "
               f"{result.ranges_total:,} range(s) (sentinel {result.sentinel.hex()}, runs of >= {result.min_run} "
               "bytes)")
    reasons = () if result.fully_written else (Reason("untouched", f"{result.ranges_total:,} untouched range(s)"),)
    return Judgement(Verdict.OK if result.fully_written else Verdict.WARNING, message, reasons)


def analyse_coverage(dump: Dump, sentinel: bytes, *, min_run: int = DEFAULT_MIN_RUN, offset: int = 0,
                     length: int | None = None) -> CoverageResult:
    """Find runs of >= min_run bytes equal to the sentinel pattern (aligned to data offset 0)."""
    if not sentinel:
        raise InputError("sentinel must be at least one byte")
    if min_run <= 0:
        raise InputError(f"{{min_run}} must be a positive number of bytes, got {min_run}", params=True)
    if offset >= dump.size:
        raise InputError(f"offset {offset} is past the end of the data ({dump.size} bytes)", dump.path)
    stop = dump.size if length is None else offset + length
    if stop > dump.size:
        raise InputError(f"{length} bytes from offset {offset} run past the end ({dump.size} bytes)", dump.path)
    period = len(sentinel)
    chunk = max(period, _CHUNK // period * period)
    # The expected byte at absolute offset o is sentinel[o % period]; one tiled copy serves every chunk.
    pattern = np.frombuffer(sentinel * (chunk // period + 2), dtype=np.uint8)

    runs = MaskRuns(min_run, keep=MAX_RANGES)
    for pos, view in dump.iter_chunks(offset, stop, chunk):
        data = np.frombuffer(view, dtype=np.uint8)
        phase = pos % period
        runs.feed(pos, data == pattern[phase:phase + len(data)])
    runs.finish(stop)
    return CoverageResult(dump.path, dump.size, offset, stop - offset, sentinel, min_run, runs.total_length,
                          tuple((start, end) for start, end, _ in runs.runs), runs.total)
