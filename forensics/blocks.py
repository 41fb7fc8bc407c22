"""Paired streaming of two dumps in aligned blocks: the comparison and both files' CRC32 overlap.

Each file has its own fetching thread (forensics.dump.iter_windows) that maps or reads the next block and
folds it into the file's running CRC (ISA-L's CRC releases the GIL), while the caller's thread finds the
differing bytes word by word in numpy (which releases it too): on two cores the three overlap. Memory stays
bounded by a few blocks per file, whatever the files' size.
"""

from __future__ import annotations

from itertools import zip_longest

import numpy as np

from forensics.crc import crc32
from forensics.dump import Dump, iter_windows

BLOCK = 4 << 20  # by measurement (benchmarks/bench_core.py): 1-8 MiB are alike in time; RSS grows with it
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


class _RunningCrc:
    """CRC32 of the blocks fed in order (by one fetching thread)."""

    def __init__(self):
        self.value = 0

    def __call__(self, view) -> None:
        self.value = crc32(view, self.value)


def stream_pair(dump_a: Dump, dump_b: Dump, start: int, record_size: int, consume, block: int | None = None):
    """Call `consume(lo, view_a, view_b, positions)` for every common block (views trimmed to the shorter
    file; `positions` as `differing_positions` gives them). Both files are read to the end (the longer
    one's extra blocks only feed its CRC). Returns (crc_a, crc_b) of the whole data."""
    block = block or BLOCK
    crc_a, crc_b = _RunningCrc(), _RunningCrc()
    blocks_a = iter_windows(dump_a, block_bounds(dump_a.size, start, record_size, block), work=crc_a)
    blocks_b = iter_windows(dump_b, block_bounds(dump_b.size, start, record_size, block), work=crc_b)
    try:
        for item_a, item_b in zip_longest(blocks_a, blocks_b):
            if item_a is None or item_b is None:
                continue  # past the shorter file: the longer one's blocks only feed its CRC
            lo, view_a, _ = item_a
            _, view_b, _ = item_b
            n = min(len(view_a), len(view_b))
            view_a, view_b = view_a[:n], view_b[:n]
            consume(lo, view_a, view_b, differing_positions(view_a, view_b))
            item_a = item_b = view_a = view_b = None  # let the windows go before the next are fetched
    finally:
        blocks_a.close()
        blocks_b.close()
    return crc_a.value, crc_b.value
