"""coverage: untouched sentinel runs against a plain loop, across chunk boundaries and multi-byte patterns."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from forensics.buffer import coverage as coverage_mod
from forensics.buffer.coverage import analyse_coverage
from forensics.io.dump import open_dump
from tests.conftest import assert_one_line_error


def reference(data: bytes, pattern: bytes, min_run: int):
    ranges, start = [], None
    for i, byte in enumerate(data):
        if byte == pattern[i % len(pattern)]:
            start = i if start is None else start
        else:
            if start is not None and i - start >= min_run:
                ranges.append((start, i))
            start = None
    if start is not None and len(data) - start >= min_run:
        ranges.append((start, len(data)))
    return ranges


@pytest.fixture(scope="module")
def tiny_chunks():
    old = coverage_mod._CHUNK
    coverage_mod._CHUNK = 12
    yield
    coverage_mod._CHUNK = old


@given(st.sampled_from([b"\xcc", b"\xde\xad\xbe\xef", b"\xaa\x55"]), st.data())
@settings(max_examples=200, deadline=None)
def test_untouched_ranges_equal_reference(tmp_path_factory, tiny_chunks, pattern, data):
    pieces = data.draw(st.lists(st.one_of(st.binary(min_size=1, max_size=9),
                                          st.none()), min_size=1,
                                max_size=12))
    buf = bytearray()
    for piece in pieces:
        if piece is None:  # a sentinel stretch, aligned to the absolute offset as a prefill writes it
            n = data.draw(st.integers(1, 30))
            buf += bytes(pattern[(len(buf) + k) % len(pattern)] for k in range(n))
        else:
            buf += piece
    min_run = data.draw(st.integers(1, 10))
    path = tmp_path_factory.mktemp("c") / "x.bin"
    path.write_bytes(bytes(buf))
    r = analyse_coverage(open_dump(path), pattern, min_run=min_run)
    expected = reference(bytes(buf), pattern, min_run)
    assert list(r.untouched_ranges) == expected
    assert r.untouched_bytes == sum(e - s for s, e in expected)


def test_broken_dump_coverage(cli):
    r = cli("coverage", "dumps/broken/convert_scores.bin", "--sentinel", "CC", "--json")
    assert r.code == 1
    doc = json.loads(r.out)
    assert doc["untouched_ranges"] == [[6000, 8136]] and doc["untouched_bytes"] == 2136
    assert doc["written_fraction"] == pytest.approx(6000 / 8136)
    r = cli("coverage", "dumps/ours/convert_scores.bin", "--sentinel", "cc")
    assert r.code == 0 and "100.00% of 8,136 bytes written" in r.out


def test_cli_coverage_bad_sentinel(cli):
    for bad in ("xyz", "c", "", "0x"):
        assert_one_line_error(cli("coverage", "dumps/ours/convert_scores.bin", "--sentinel", bad), "--sentinel")
    assert_one_line_error(cli("coverage", "dumps/ours/convert_scores.bin"), "--sentinel")
