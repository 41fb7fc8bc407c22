"""How much of a sentinel-prefilled buffer the device actually wrote.

A driver prefills the output buffer with a sentinel (`cc`, `aa`, or a pattern such as `deadbeef` written from
offset 0); runs of at least `min_run` bytes still equal to the sentinel were never written (libedgetpu's own
overwrite check uses 8 bytes). Shorter runs are taken as data that happens to equal the sentinel.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from forensics.dump import Dump
from forensics.errors import InputError

DEFAULT_MIN_RUN = 8
MAX_RANGES = 10_000
_CHUNK = 8 << 20


@dataclass(frozen=True)
class CoverageResult:
    path: str
    size: int
    start: int
    length: int
    sentinel: bytes
    min_run: int
    untouched_bytes: int
    untouched_ranges: tuple[tuple[int, int], ...]   # [start, end) absolute data offsets, at most MAX_RANGES
    ranges_total: int

    @property
    def written_fraction(self) -> float:
        return 1.0 - self.untouched_bytes / self.length if self.length else 1.0

    @property
    def fully_written(self) -> bool:
        return self.untouched_bytes == 0

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "size": self.size,
            "offset": self.start,
            "length": self.length,
            "sentinel": self.sentinel.hex(),
            "min_run": self.min_run,
            "untouched_bytes": self.untouched_bytes,
            "written_fraction": self.written_fraction,
            "untouched_ranges": [list(r) for r in self.untouched_ranges],
            "untouched_ranges_total": self.ranges_total,
            "untouched_ranges_truncated": self.ranges_total > len(self.untouched_ranges),
        }


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

    ranges: list[tuple[int, int]] = []
    total = {"bytes": 0, "ranges": 0}
    open_start = None  # start of a run of sentinel bytes still open at the previous chunk's end

    def close(run_start: int, run_end: int) -> None:
        if run_end - run_start >= min_run:
            total["bytes"] += run_end - run_start
            total["ranges"] += 1
            if len(ranges) < MAX_RANGES:
                ranges.append((run_start, run_end))

    for pos, view in dump.iter_chunks(offset, stop, chunk):
        data = np.frombuffer(view, dtype=np.uint8)
        phase = pos % period
        equal = data == pattern[phase:phase + len(data)]
        same = np.count_nonzero(equal)
        if same == len(equal):  # all sentinel (a never-written stretch, a sparse file's hole): the run goes on
            if open_start is None:
                open_start = pos
            continue
        if same == 0:
            starts = ends = ()
        else:  # runs between the places where equal flips (one comparison of neighbours, not a diff)
            flips = np.flatnonzero(equal[1:] != equal[:-1]) + 1
            bounds = np.concatenate(([0], flips, [len(equal)]))
            first = 0 if equal[0] else 1
            starts, ends = bounds[first:-1:2], bounds[first + 1::2]
        for k, (s, e) in enumerate(zip(starts, ends)):
            s, e = pos + int(s), pos + int(e)
            if k == 0 and open_start is not None and s == pos:
                s = open_start
            elif k == 0 and open_start is not None:
                close(open_start, pos)
            open_start = None
            if e == pos + len(data):
                open_start = s  # may continue into the next chunk
            else:
                close(s, e)
        if not len(starts) and open_start is not None:
            close(open_start, pos)
            open_start = None
    if open_start is not None:
        close(open_start, stop)
    return CoverageResult(dump.path, dump.size, offset, stop - offset, sentinel, min_run, total["bytes"],
                          tuple(ranges), total["ranges"])
