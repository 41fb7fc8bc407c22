"""forensics.compare.usecases: crc of a slice is zlib's CRC32 of those bytes, judged against the first file."""

from __future__ import annotations

import zlib

from forensics.compare import usecases
from forensics.core.options import Slice


def test_crc_of_a_slice_is_zlibs_and_a_changed_byte_differs(tmp_path):
    data = bytes(range(256)) * 40
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(data)
    b.write_bytes(data[:5000] + b"\x00" + data[5001:])  # inside the slice below
    result, judgement = usecases.crc([a, b], where=Slice(offset=4096, length=4096))
    assert [f.crc32 for f in result.files] == [zlib.crc32(data[4096:8192]),
                                              zlib.crc32((data[:5000] + b"\x00" + data[5001:])[4096:8192])]
    assert judgement.verdict == "DIFFER"
    same, judged = usecases.crc([a, b], where=Slice(offset=0, length=4096))  # the change is past this slice
    assert same.files[0].crc32 == same.files[1].crc32 == zlib.crc32(data[:4096]) and judged.verdict == "MATCH"
