"""crc: every CRC equals zlib.crc32 of the same bytes, on every path (small, threaded, chunked)."""

import json
import random
import zlib

import pytest
from hypothesis import given, settings, strategies as st

from forensics.compare import crc as crc_mod
from forensics.compare.crc import crc32_combine, crc_files
from tests.conftest import assert_one_line_error


@given(st.binary(max_size=2000), st.binary(max_size=2000))
@settings(max_examples=200, deadline=None)
def test_combine_equals_crc_of_concatenation(a, b):
    assert crc32_combine(zlib.crc32(a), zlib.crc32(b), len(b)) == zlib.crc32(a + b)


@pytest.mark.parametrize("size", [0, 1, 15, 16, 17, 4096, 100_003])
@pytest.mark.parametrize("threaded", [False, True])
def test_crc_matches_zlib(tmp_path, monkeypatch, size, threaded):
    if threaded:  # force the two-thread split + combine on small files
        monkeypatch.setattr(crc_mod, "PARALLEL_MIN", 1)
        monkeypatch.setattr(crc_mod, "BLOCK", 1000)
    data = random.Random(301).randbytes(size)
    path = tmp_path / "x.bin"
    path.write_bytes(data)
    f = crc_files([path]).files[0]
    assert f.crc32 == zlib.crc32(data)
    assert f.size == size
    assert f.head == data[:16]
    assert f.tail == data[-16:] if size else f.tail == b""
    mid = max(0, size // 2 - 8)
    assert f.mid == data[mid:mid + 16] and f.mid_offset == mid


@pytest.mark.parametrize("threaded", [False, True])
def test_chunk_crcs_and_first_differing_chunk(tmp_path, monkeypatch, threaded):
    if threaded:
        monkeypatch.setattr(crc_mod, "PARALLEL_MIN", 1)
        monkeypatch.setattr(crc_mod, "BLOCK", 777)
    data = bytearray(random.Random(302).randbytes(960 * 50 + 13))
    a = tmp_path / "a.bin"
    a.write_bytes(data)
    data[960 * 17 + 5] ^= 1
    b = tmp_path / "b.bin"
    b.write_bytes(data)
    report = crc_files([a, b], chunk_size=960)
    expected = [zlib.crc32(bytes(data[i:i + 960])) for i in range(0, len(data), 960)]
    assert list(report.files[1].chunk_crcs) == expected
    assert report.first_differing_chunk == 17
    assert report.match is False
    assert report.files[1].crc32 == zlib.crc32(bytes(data))


def test_cli_crc_match_and_json(cli, tmp_path):
    data = random.Random(303).randbytes(5000)
    for name in "abc":
        (tmp_path / f"{name}.bin").write_bytes(data)
    r = cli("crc", tmp_path / "a.bin", tmp_path / "b.bin", tmp_path / "c.bin")
    assert r.code == 0 and "MATCH" in r.out
    r = cli("crc", tmp_path / "a.bin", tmp_path / "b.bin", "--json")
    doc = json.loads(r.out)
    assert doc["match"] is True and doc["first_differing_chunk"] is None
    assert doc["files"][0]["crc32"] == f"0x{zlib.crc32(data):08x}"
    assert set(doc["files"][0]) >= {"path", "size", "crc32", "head", "mid", "tail"}


def test_cli_crc_differ_exit_1(cli, tmp_path):
    (tmp_path / "a.bin").write_bytes(b"\x00" * 100)
    (tmp_path / "b.bin").write_bytes(b"\x00" * 99 + b"\x01")
    r = cli("crc", tmp_path / "a.bin", tmp_path / "b.bin", "--chunk", "10", "--json")
    assert r.code == 1
    assert json.loads(r.out)["first_differing_chunk"] == 9


def test_cli_crc_single_file_and_empty_file(cli, tmp_path):
    (tmp_path / "e.bin").write_bytes(b"")
    r = cli("crc", tmp_path / "e.bin", "--json")
    assert r.code == 0
    doc = json.loads(r.out)
    assert doc["match"] is None and doc["files"][0]["crc32"] == "0x00000000"


def test_cli_crc_bad_inputs(cli, tmp_path):
    assert_one_line_error(cli("crc", tmp_path / "missing.bin"), "missing.bin", "no such file")
    assert_one_line_error(cli("crc", tmp_path), "is a directory")
    (tmp_path / "a.bin").write_bytes(b"x")
    assert_one_line_error(cli("crc", tmp_path / "a.bin", "--chunk", "0"), "--chunk")


def test_both_crc32_implementations_equal_zlib(monkeypatch):
    """The ISA-L path (when python-isal is installed) and the forced zlib fallback give zlib's values."""
    import sys

    from forensics.core import checksum

    fast = checksum._load_crc32()
    monkeypatch.setitem(sys.modules, "isal", None)  # `import isal...` now raises ImportError
    monkeypatch.setitem(sys.modules, "isal.isal_zlib", None)
    fallback = checksum._load_crc32()
    assert fallback is zlib.crc32
    rng = __import__("random").Random(16)
    for size in (0, 1, 7, 64, 4095, 1 << 16, (1 << 20) + 3):
        data = rng.randbytes(size)
        start = rng.getrandbits(32)
        for impl in (fast, fallback):
            assert impl(data) == zlib.crc32(data)
            assert impl(memoryview(data)[size // 3:], start) == zlib.crc32(data[size // 3:], start)


def test_isal_is_used_when_installed():
    pytest.importorskip("isal")
    assert crc_mod.CRC32_BACKEND == "isal" and crc_mod.crc32 is not zlib.crc32


def test_one_crc32_function_everywhere():
    """Every CRC forensics takes goes through forensics.core.checksum.crc32 (the fast path, re-exported by
    forensics.compare.crc): no zlib.crc32 elsewhere."""
    from tests.conftest import REPO

    offenders = [str(p.relative_to(REPO)) for p in sorted((REPO / "forensics").rglob("*.py"))
                 if p.name != "checksum.py" and "zlib.crc32" in p.read_text(encoding="utf-8")]
    assert offenders == []
