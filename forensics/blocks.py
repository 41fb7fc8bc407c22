"""Paired streaming of two dumps in aligned blocks, with both files' CRC32 for about the price of one.

A reader thread per file fills reused buffers (`readinto` releases the GIL) and checksums half of its
256 KiB pieces: A the even ones, B the odd ones. The main thread finds the differing bytes word by word;
a piece that is equal in both files has one CRC, so each file borrows the other's for the pieces it did
not checksum, and `CrcShift` folds piece CRCs into whole-file CRCs exactly (crc(X+Y) =
shift_len(Y)(crc(X)) ^ crc(Y)). Only pieces that differ are checksummed by both sides.
"""

from __future__ import annotations

import queue
import threading
import zlib

import numpy as np

from forensics.crc import CrcShift
from forensics.dump import Dump, _read_fully
from forensics.errors import InputError

BLOCK = 8 << 20
PIECE = 256 << 10
BUFFERS_PER_FILE = 2  # double buffering: the reader fills one while the consumer works on the other
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


def _piece_crcs(view: memoryview, parity: int | None = None) -> list[int | None]:
    """CRC32 of each PIECE of the view; with a parity, only of the pieces whose index has that parity."""
    return [zlib.crc32(view[i:i + PIECE]) if parity is None or (i // PIECE) % 2 == parity else None
            for i in range(0, len(view), PIECE)]


def _fold(crc: int, view: memoryview, pieces: list[int | None]) -> int:
    """Continue a running CRC over the view, using the known piece CRCs and computing the missing ones."""
    for k, piece_crc in enumerate(pieces):
        piece = view[k * PIECE:(k + 1) * PIECE]
        if piece_crc is None:
            crc = zlib.crc32(piece, crc)
        else:
            crc = CrcShift(len(piece)).apply(crc) ^ piece_crc
    return crc


class _Reader(threading.Thread):
    def __init__(self, dump: Dump, bounds: list[tuple[int, int]], parity: int):
        super().__init__(daemon=True)
        self.dump = dump
        self.bounds = bounds
        self.parity = parity
        self.error: BaseException | None = None
        self.ready: queue.Queue = queue.Queue()
        self.free: queue.Queue = queue.Queue()
        self.cancelled = threading.Event()
        largest = max((hi - lo for lo, hi in bounds), default=0)
        for _ in range(BUFFERS_PER_FILE):
            self.free.put(bytearray(largest))

    def run(self):
        try:
            with self.dump.open() as fh:
                fh.seek(self.dump.data_offset)
                for lo, hi in self.bounds:
                    buf = self.free.get()
                    if self.cancelled.is_set():
                        return
                    view = memoryview(buf)[: hi - lo]
                    got = _read_fully(fh, view)
                    if got != hi - lo:
                        raise InputError(f"file changed while reading (ended at byte {lo + got}, "
                                         f"expected {self.dump.size})", self.dump.path)
                    self.ready.put((lo, buf, got, _piece_crcs(view, self.parity)))
        except BaseException as exc:  # handed to the consumer, which raises it in the main thread
            self.error = exc
        finally:
            self.ready.put(None)

    def next_block(self):
        item = self.ready.get()
        if item is None and self.error is not None:
            raise self.error
        return item

    def release(self, buf) -> None:
        self.free.put(buf)

    def stop(self) -> None:
        self.cancelled.set()
        for _ in range(BUFFERS_PER_FILE):
            self.free.put(bytearray(0))
        self.join()


def stream_pair(dump_a: Dump, dump_b: Dump, start: int, record_size: int, consume, block: int | None = None,
                *, progress=None):
    """Call `consume(lo, view_a, view_b, positions)` for every common block (views trimmed to the shorter
    file; `positions` as `differing_positions` gives them). Both files are read to the end (the longer
    one's extra blocks only feed its CRC). Returns (crc_a, crc_b) of the whole data. `progress(done, total)`
    is called after each block (bytes of the longer file)."""
    total = max(dump_a.size, dump_b.size)
    block = block or BLOCK
    reader_a = _Reader(dump_a, block_bounds(dump_a.size, start, record_size, block), parity=0)
    reader_b = _Reader(dump_b, block_bounds(dump_b.size, start, record_size, block), parity=1)
    crc_a = crc_b = 0
    for reader in (reader_a, reader_b):
        reader.start()
    try:
        item_a, item_b = reader_a.next_block(), reader_b.next_block()
        while item_a is not None or item_b is not None:
            if item_a is not None and item_b is not None:
                lo, buf_a, got_a, pieces_a = item_a
                _, buf_b, got_b, pieces_b = item_b
                n = min(got_a, got_b)
                view_a, view_b = memoryview(buf_a)[:n], memoryview(buf_b)[:n]
                positions = differing_positions(view_a, view_b)
                consume(lo, view_a, view_b, positions)
                if got_a == got_b and positions is not None:
                    # A piece with no differing byte has the same CRC in both files: share it.
                    changed = set((positions // PIECE).tolist())
                    for k in range(len(pieces_a)):
                        if k not in changed:
                            if pieces_a[k] is None:
                                pieces_a[k] = pieces_b[k]
                            else:
                                pieces_b[k] = pieces_a[k]
            if item_a is not None:
                crc_a = _fold(crc_a, memoryview(item_a[1])[:item_a[2]], item_a[3])
            if item_b is not None:
                crc_b = _fold(crc_b, memoryview(item_b[1])[:item_b[2]], item_b[3])
            if progress is not None:
                done = max(item[0] + item[2] for item in (item_a, item_b) if item is not None)
                progress(done, total)
            if item_a is not None:
                reader_a.release(item_a[1])
                item_a = reader_a.next_block()
            if item_b is not None:
                reader_b.release(item_b[1])
                item_b = reader_b.next_block()
        return crc_a, crc_b
    finally:
        for reader in (reader_a, reader_b):
            if reader.is_alive():
                reader.stop()
