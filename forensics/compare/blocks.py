"""Paired streaming of two dumps in aligned blocks, with both files' CRC32s taken on the way.

`stream_halves` (diff) splits the common blocks into two halves walked by two threads, each mapping its windows
once, taking both CRCs and comparing them, with a consumer of its own: the work is shared evenly by the two cores
and no block passes between threads. `stream_pair` (diagnose, whose consumer must see the blocks in order) has
one thread take the CRCs while the caller's thread compares. ISA-L's CRC and numpy release the GIL, so the two
threads overlap. Memory stays bounded by a few blocks, whatever the files' size.
"""

from __future__ import annotations

import threading

import numpy as np

from forensics.compare.crc import crc32, crc32_combine, crc32_range
from forensics.io.dump import Dump, DumpReader
from forensics.core.parallel import both, shared_progress, two_cores

BLOCK = 4 << 20  # by measurement (benchmarks/bench_core.py): 1-8 MiB are alike in time; RSS grows with it
PARALLEL_MIN = 16 << 20  # common bytes from which stream_halves uses two threads (a thread costs ~0.1 ms)
_EIGHT = np.arange(8)


def block_bounds(size: int, start: int, record_size: int, block: int = BLOCK) -> list[tuple[int, int]]:
    """Block boundaries over [0, size): plain blocks up to `start`, then record-aligned blocks from `start`.

    Two files cut with the same (start, record_size, block) share every boundary up to the shorter's end.
    """
    bounds = []
    start = min(start, size)
    pos = 0
    while pos < start:
        bounds.append((pos, min(pos + block, start)))
        pos = bounds[-1][1]
    step = max(record_size, block // record_size * record_size)
    while pos < size:
        bounds.append((pos, min(pos + step, size)))
        pos = bounds[-1][1]
    return bounds


def differing_positions(a: memoryview, b: memoryview):
    """Offsets of the bytes that differ between two equal-length views, found word by word; None when so
    many differ that the caller should examine everything (the dense case)."""
    n = len(a)
    head = n - n % 8
    words = np.flatnonzero(np.frombuffer(a, np.uint64, head // 8) != np.frombuffer(b, np.uint64, head // 8))
    if len(words) > max(64, n // 256):
        return None
    candidates = np.concatenate([(words[:, None] * 8 + _EIGHT).ravel(), np.arange(head, n)])
    bytes_a, bytes_b = np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8)
    return candidates[bytes_a[candidates] != bytes_b[candidates]]


def _file_crcs(dumps, block: int, out: list, cancelled: threading.Event) -> None:
    """CRC32 of each dump's whole data, into out (an exception instead, for the caller to raise)."""
    try:
        for dump in dumps:
            crc = crc32_range(dump, 0, dump.size, block=block, cancelled=cancelled)
            if crc is None:
                return
            out.append(crc)
    except BaseException as exc:
        out.append(exc)


def stream_pair(dump_a: Dump, dump_b: Dump, start: int, record_size: int, consume, block: int | None = None,
                *, progress=None):
    """Call `consume(lo, view_a, view_b, positions)` for every common block (views trimmed to the shorter
    file; `positions` as `differing_positions` gives them), in order. Returns (crc_a, crc_b) of the whole data.

    The CRCs are taken by a second thread that walks both files on its own while this one compares: the two
    never wait for each other until the end (on a loaded machine, handing every block from one thread to the
    other cost more in scheduling delays than the work itself)."""
    block = block or BLOCK
    crcs: list = []
    cancelled = threading.Event()
    worker = threading.Thread(target=_file_crcs, args=((dump_a, dump_b), BLOCK, crcs, cancelled), daemon=True)
    worker.start()
    common = min(dump_a.size, dump_b.size)
    bounds = block_bounds(common, start, record_size, block)
    reader_a, reader_b = DumpReader(dump_a), DumpReader(dump_b)
    try:
        for lo, hi in bounds:
            window_a, window_b = reader_a.window(lo, hi), reader_b.window(lo, hi)
            try:
                consume(lo, window_a.view, window_b.view, differing_positions(window_a.view, window_b.view))
            finally:
                window_a.release()
                window_b.release()
            if progress is not None:
                progress(hi, common)
    except BaseException:
        cancelled.set()
        raise
    finally:
        reader_a.close()
        reader_b.close()
        worker.join()
    for value in crcs:
        if isinstance(value, BaseException):
            raise value
    return crcs[0], crcs[1]


def stream_halves(dump_a: Dump, dump_b: Dump, start: int, record_size: int, consumer, *, block: int | None = None,
                  progress=None, threads: int = 2):
    """Like stream_pair, but the common blocks are split into two halves walked by two threads, each doing all
    the work of its blocks: it maps each window once, takes both files' CRCs of it and calls its own consumer,
    `consumer(part)(lo, view_a, view_b, positions)` (part 0 gets the first half). No block is handed from one
    thread to another and no window is mapped twice, so two cores share the work evenly; the halves' CRCs are
    joined with crc32_combine, then the longer file's bytes past the common length are added. Small pairs run
    as one part on the calling thread. Returns (crc_a, crc_b) of the whole files."""
    block = block or BLOCK
    common = min(dump_a.size, dump_b.size)
    bounds = block_bounds(common, start, record_size, block)
    halves = threads > 1 and common >= PARALLEL_MIN and len(bounds) > 1 and two_cores()
    split = len(bounds) // 2 if halves else len(bounds)
    parts = [p for p in (bounds[:split], bounds[split:]) if p] or [[]]
    consumers = [consumer(i) for i in range(len(parts))]
    cancelled = threading.Event()
    tick = shared_progress(progress, common)

    def walk(i: int) -> tuple[int, int]:
        crc_a = crc_b = 0
        try:
            with DumpReader(dump_a) as reader_a, DumpReader(dump_b) as reader_b:
                for lo, hi in parts[i]:
                    if cancelled.is_set():  # the other half failed: its exception is the one raised
                        break
                    window_a, window_b = reader_a.window(lo, hi), reader_b.window(lo, hi)
                    try:
                        crc_a, crc_b = crc32(window_a.view, crc_a), crc32(window_b.view, crc_b)
                        consumers[i](lo, window_a.view, window_b.view,
                                     differing_positions(window_a.view, window_b.view))
                    finally:
                        window_a.release()
                        window_b.release()
                    if tick is not None:
                        tick(hi - lo)
        except BaseException:
            cancelled.set()
            raise
        return crc_a, crc_b

    results = both(lambda: walk(0), lambda: walk(1), name="forensics-pair") if len(parts) > 1 else [walk(0)]
    crc_a, crc_b = results[0]
    for part, (part_a, part_b) in zip(parts[1:], results[1:]):
        length = part[-1][1] - part[0][0]
        crc_a, crc_b = crc32_combine(crc_a, part_a, length), crc32_combine(crc_b, part_b, length)
    # the longer file's bytes past the common length
    return (crc32_range(dump_a, common, dump_a.size, crc_a), crc32_range(dump_b, common, dump_b.size, crc_b))
