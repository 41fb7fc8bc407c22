"""forensics.buffer.usecases: coverage looks at the region offset/length of the whole dump (not a slice of it),
and fingerprint's slice is the bytes fingerprinted."""

from __future__ import annotations

import zlib

from forensics.buffer import usecases
from forensics.core.options import Slice


def _sentinel_runs(data: bytes, sentinel: int, min_run: int, start: int, end: int) -> list:
    """[start, end) of every run of at least `min_run` sentinel bytes inside data[start:end], found by hand."""
    runs, i = [], start
    while i < end:
        if data[i] != sentinel:
            i += 1
            continue
        j = i
        while j < end and data[j] == sentinel:
            j += 1
        if j - i >= min_run:
            runs.append((i, j))
        i = j
    return runs


def test_coverage_ranges_are_absolute_offsets_of_the_region(tmp_path):
    data = b"\x01" * 100 + b"\xcc" * 50 + b"\x02" * 100 + b"\xcc" * 10 + b"\x03" * 40 + b"\xcc" * 30
    path = tmp_path / "out.bin"
    path.write_bytes(data)
    for offset, length in ((None, None), (120, 100), (0, 320)):
        start = offset or 0
        end = len(data) if length is None else start + length
        result, judgement, dump = usecases.coverage(path, sentinel=b"\xcc", min_run=16, offset=offset, length=length)
        assert [tuple(r) for r in result.untouched_ranges] == _sentinel_runs(data, 0xCC, 16, start, end)
        assert dump.size == len(data) and judgement.exit_code == 1


def test_fingerprint_reads_the_slice(tmp_path):
    data = bytes(range(256)) * 64
    path = tmp_path / "buf.bin"
    path.write_bytes(data)
    result = usecases.fingerprint(path, where=Slice(offset=4096, length=8192))
    assert (result.size, result.crc32) == (8192, zlib.crc32(data[4096:12288]))
