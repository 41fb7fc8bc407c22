"""Paired streaming of two dumps in aligned blocks, each file read and checksummed by its own thread.

Reading (`readinto`) and `zlib.crc32` both release the GIL, so the two reader threads and the comparing
main thread keep both cores busy; every buffer is reused, so resident memory stays a few blocks per file.
"""

from __future__ import annotations

import queue
import threading
import zlib

from forensics.dump import Dump, _read_fully
from forensics.errors import InputError

BLOCK = 8 << 20
BUFFERS_PER_FILE = 3


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


class _Reader(threading.Thread):
    def __init__(self, dump: Dump, bounds: list[tuple[int, int]]):
        super().__init__(daemon=True)
        self.dump = dump
        self.bounds = bounds
        self.crc = 0
        self.error: BaseException | None = None
        self.ready: queue.Queue = queue.Queue()
        self.free: queue.Queue = queue.Queue()
        self.cancelled = threading.Event()
        largest = max((hi - lo for lo, hi in bounds), default=0)
        for _ in range(BUFFERS_PER_FILE):
            self.free.put(bytearray(largest))

    def run(self):
        try:
            with open(self.dump.path, "rb", buffering=0) as fh:
                fh.seek(self.dump.data_offset)
                for lo, hi in self.bounds:
                    buf = self.free.get()
                    if self.cancelled.is_set():
                        return
                    view = memoryview(buf)[: hi - lo]
                    got = _read_fully(fh, view)
                    if got != hi - lo:
                        raise InputError(f"file changed while reading (ended at byte {lo + got}, expected {self.dump.size})",
                                         self.dump.path)
                    self.crc = zlib.crc32(view, self.crc)
                    self.ready.put((lo, buf, got))
        except BaseException as exc:  # handed to the consumer, which raises it in the main thread
            self.error = exc
        finally:
            self.ready.put(None)

    def next_block(self):
        item = self.ready.get()
        if item is None:
            if self.error is not None:
                raise self.error
            return None
        return item

    def release(self, buf) -> None:
        self.free.put(buf)

    def stop(self) -> None:
        self.cancelled.set()
        for _ in range(BUFFERS_PER_FILE):
            self.free.put(bytearray(0))
        self.join()


def stream_pair(dump_a: Dump, dump_b: Dump, start: int, record_size: int, consume, block: int | None = None):
    """Call `consume(lo, view_a, view_b)` for every common block (views trimmed to the shorter file).

    Both files are read to the end (the longer one's extra blocks only feed its CRC). Returns (crc_a, crc_b).
    """
    block = block or BLOCK
    readers = [_Reader(d, block_bounds(d.size, start, record_size, block)) for d in (dump_a, dump_b)]
    for reader in readers:
        reader.start()
    try:
        reader_a, reader_b = readers
        item_a, item_b = reader_a.next_block(), reader_b.next_block()
        while item_a is not None or item_b is not None:
            if item_a is not None and item_b is not None:
                lo, buf_a, got_a = item_a
                _, buf_b, got_b = item_b
                n = min(got_a, got_b)
                consume(lo, memoryview(buf_a)[:n], memoryview(buf_b)[:n])
            if item_a is not None:
                reader_a.release(item_a[1])
                item_a = reader_a.next_block()
            if item_b is not None:
                reader_b.release(item_b[1])
                item_b = reader_b.next_block()
        return reader_a.crc, reader_b.crc
    finally:
        for reader in readers:
            if reader.is_alive():
                reader.stop()
