"""verify: a driver log line cut short (DbgPrint's 512-byte limit, a paste) is TRUNCATED (exit 1), never
MATCH. The [FP] line is built here from its description (zlib's CRC32, the xor of little-endian 64-bit
words, 16 bytes at head / mid / tail), not by forensics.buffer.fingerprint."""

from __future__ import annotations

import io
import json
import zlib

import numpy as np
import pytest

from forensics.cli import main


def fp_line(tag: str, data: bytes) -> str:
    size = len(data)
    padded = data + b"\0" * (-size % 8)
    xor = int(np.bitwise_xor.reduce(np.frombuffer(padded, "<u8"))) if padded else 0
    mid, tail = max(0, size // 2 - 8), max(0, size - 16)

    def run(at):
        return data[at:at + 16].hex(" ")

    return (f"[FP] {tag} size={size} crc32=0x{zlib.crc32(data):08x} xor64=0x{xor:016x} "
            f"head@0x0={run(0)} mid@0x{mid:x}={run(mid)} tail@0x{tail:x}={run(tail)}")


def verify(tmp_path, log_text: str, data: bytes, name="buf"):
    (tmp_path / f"{name}.bin").write_bytes(data)
    (tmp_path / "log.txt").write_text(log_text)
    out, err = io.StringIO(), io.StringIO()
    code = main(["verify", str(tmp_path / "log.txt"), str(tmp_path / f"{name}.bin"), "--json"],
                stdout=out, stderr=err)
    return code, (json.loads(out.getvalue()) if out.getvalue() else None), err.getvalue()


@pytest.fixture(scope="module")
def data():
    return np.random.default_rng(24).integers(0, 256, 5000, dtype=np.uint8).tobytes()


def test_the_whole_line_matches(tmp_path, data):
    code, doc, _ = verify(tmp_path, fp_line("buf", data) + "\n", data)
    assert (code, doc["verdict"]) == (0, "MATCH")


def test_every_cut_of_the_line_is_truncated_never_match(tmp_path, data):
    """The general case: the line cut after every character past `[FP] ` (mid-key, mid-digit, mid-byte, at
    a byte boundary of a run, after a whole field) is TRUNCATED with exit 1, never MATCH, never an error."""
    line = fp_line("buf", data)
    for cut in range(len("[FP] b"), len(line)):
        code, doc, err = verify(tmp_path, "12.5  DbgView  " + line[:cut] + "\n", data)
        assert code == 1, (cut, line[:cut], err)
        assert doc["verdict"] == "TRUNCATED", (cut, line[:cut], doc["checks"])
        assert all(c["match"] for c in doc["checks"] if c["kind"] != "truncated"), line[:cut]


def test_dbgprint_limit_with_log_columns(tmp_path, data):
    """DbgPrint keeps 512 bytes of a line: a long DbgView prefix pushes the [FP] line's tail past it."""
    line = ("00001234\t12.34567890\t[4242] " + "x" * 300 + " " + fp_line("buf", data))[:511]
    code, doc, _ = verify(tmp_path, line + "\n", data)
    assert (code, doc["verdict"]) == (1, "TRUNCATED")


def test_a_whole_value_that_differs_is_still_differ(tmp_path, data):
    line = fp_line("buf", data)
    other = bytearray(data)
    other[0] ^= 1
    code, doc, _ = verify(tmp_path, line[:len(line) - 10] + "\n", bytes(other))
    assert (code, doc["verdict"]) == (1, "DIFFER")


@pytest.mark.parametrize("size", [1, 7, 15, 16, 17, 33])
def test_small_buffers_short_runs_are_whole(tmp_path, size):
    """A run shorter than 16 bytes because the buffer ends there is whole, not cut."""
    small = bytes(range(100, 100 + size))
    code, doc, _ = verify(tmp_path, fp_line("buf", small) + "\n", small)
    assert (code, doc["verdict"]) == (0, "MATCH")


def test_page_lines_cut_short(tmp_path, data):
    """The [..-CHK] page style: first8 / last8 runs cut short are TRUNCATED too."""
    first8 = data[:8].hex(" ")
    last = data[4088:4096].hex(" ")
    whole = f"[BUF-CHK] page[0] first8={first8}  last8(@0xff8)={last}\n"
    assert verify(tmp_path, whole, data)[0] == 0
    code, doc, _ = verify(tmp_path, f"[BUF-CHK] page[0] first8={first8}  last8(@0xff8)={last[:11]}\n", data)
    assert (code, doc["verdict"]) == (1, "TRUNCATED")
    code, doc, _ = verify(tmp_path, f"[BUF-CHK] HEAD@0x0={data[:16].hex(' ')[:23]}\n", data)
    assert (code, doc["verdict"]) == (1, "TRUNCATED")


def test_table_says_truncated(tmp_path, data):
    line = fp_line("buf", data)
    (tmp_path / "buf.bin").write_bytes(data)
    (tmp_path / "log.txt").write_text(line[:150] + "\n")
    out = io.StringIO()
    code = main(["verify", str(tmp_path / "log.txt"), str(tmp_path / "buf.bin"), "--width", "120", "--no-color"],
                stdout=out, stderr=io.StringIO())
    last = out.getvalue().strip().splitlines()[-2:]
    assert code == 1
    assert " ".join(last).startswith("TRUNCATED | line 1 (buf): [FP] line ends inside"), last


def test_garbage_after_fp_is_still_malformed(tmp_path, data):
    line = fp_line("buf", data)
    code, _, err = verify(tmp_path, line[:60] + " nonsense=1\n", data)
    assert code == 2 and "malformed [FP] line" in err and err.count("\n") == 1
