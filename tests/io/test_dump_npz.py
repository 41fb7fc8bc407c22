"""Deflated .npz members are inflated by ISA-L (forensics.io.dump._InflatedMember): the same bytes numpy reads, at
any size and compressibility, and a member whose bytes or CRC are corrupt is one line, exit 2."""

from __future__ import annotations

import io
import zipfile
import zlib

import numpy as np
import pytest

from forensics.io.dump import DumpReader, open_dump
from tests.conftest import assert_one_line_error

pytest.importorskip("isal")


def _arrays():
    rng = np.random.default_rng(7)
    sparse = np.zeros(3 << 20, np.uint8)
    sparse[::4099] = 7
    return {"empty": np.zeros(0, np.uint8), "one": np.array([5], np.uint8),
            "random": rng.integers(0, 256, 1 << 20, dtype=np.uint8),   # incompressible: stored-like blocks
            "sparse": sparse,                                           # 1000:1, one input chunk inflates to MiBs
            "floats": rng.standard_normal(70_001).astype(np.float32)}


def test_every_member_reads_as_numpy_reads_it(tmp_path):
    arrays = _arrays()
    path = tmp_path / "a.npz"
    np.savez_compressed(path, **arrays)
    for name, array in arrays.items():
        dump = open_dump(f"{path}:{name}", allow_empty=True)
        assert dump.size == array.nbytes
        reader = DumpReader(dump, use_map=False)
        try:
            got = bytes(reader.window(0, dump.size).view) if dump.size else b""
        finally:
            reader.close()
        assert got == array.tobytes(), name


def _corrupt(path, name: str, change) -> None:
    """Rewrite one member's compressed bytes (the archive keeps its directory: as a disk or a copy breaks it)."""
    data = bytearray(path.read_bytes())
    with zipfile.ZipFile(io.BytesIO(bytes(data))) as z:
        info = z.getinfo(name)
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    change(data, start, info.compress_size)
    path.write_bytes(bytes(data))


@pytest.mark.parametrize("how", ["flip", "truncate"])
def test_a_corrupt_member_is_one_line(tmp_path, cli, how):
    rng = np.random.default_rng(3)
    path = tmp_path / "c.npz"
    np.savez_compressed(path, a=rng.integers(0, 4, 1 << 20, dtype=np.uint8))

    def flip(data, start, size):
        data[start + size // 2] ^= 0x55

    def truncate(data, start, size):  # the stream stops short: deflate's end-of-block never comes
        del data[start + size // 2:start + size]

    if how == "flip":
        _corrupt(path, "a.npy", flip)
        result = cli("crc", f"{path}:a")
        assert_one_line_error(result, "corrupt .npz member")
    else:
        with zipfile.ZipFile(path) as z:
            size = z.getinfo("a.npy").compress_size
        assert size > 1000
        _corrupt(path, "a.npy", truncate)
        result = cli("crc", f"{path}:a")
        assert result.code == 2 and result.err.count("\n") == 1


def test_the_crc_of_a_member_is_zlibs(tmp_path, cli):
    arrays = _arrays()
    path = tmp_path / "a.npz"
    np.savez_compressed(path, **arrays)
    result = cli("crc", f"{path}:sparse", "--json")
    import json

    assert json.loads(result.out)["files"][0]["crc32"] == f"0x{zlib.crc32(arrays['sparse'].tobytes()):08x}"


def test_a_member_whose_deflate_stream_is_broken_is_one_line(tmp_path, cli):
    # Bytes that are no deflate stream at all (an invalid lookback distance, ISA-L's own error type).
    rng = np.random.default_rng(11)
    path = tmp_path / "b.npz"
    np.savez_compressed(path, a=rng.integers(0, 4, 1 << 20, dtype=np.uint8))

    def scramble(data, start, size):
        data[start + 64:start + size - 64] = rng.integers(0, 256, size - 128, dtype=np.uint8).tobytes()

    _corrupt(path, "a.npy", scramble)
    assert_one_line_error(cli("crc", f"{path}:a"), "corrupt .npz member")
