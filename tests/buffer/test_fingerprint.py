"""Fingerprints a driver logs (size, CRC32, xor-fold, HEAD/MID/TAIL, page first8/last8), computed and verified."""

from __future__ import annotations

import json
import struct
import re
import zlib
from pathlib import Path

import pytest

from forensics.io.dump import open_dump
from forensics.buffer.fingerprint import FP_LINE, fingerprint_dump, parse_log, xor_fold64

from tests.conftest import assert_one_line_error

INPUT = Path("dumps/ours/input.bin")
BROKEN = Path("dumps/broken/input.bin")


def reference_xor64(data: bytes) -> int:
    """The driver's loop: XOR of little-endian u64 words, the trailing partial word zero-extended."""
    acc = 0
    padded = data + b"\0" * (-len(data) % 8)
    for (word,) in struct.iter_unpack("<Q", padded):
        acc ^= word
    return acc


# The brief's example line for dumps/ours/input.bin, with the xor64 the driver's loop gives.
def brief_line() -> str:
    xor = reference_xor64(INPUT.read_bytes())
    return (f"00000012\t0.00123400\t[4] [FP] input size=307200 crc32=0x0bc3f483 xor64=0x{xor:016x} "
            "head@0x0=00 00 6d 00 00 66 01 00 6e 02 00 64 03 00 69 03 "
            "mid@0x257f8=7e 6c fd 7e 62 fe 7e 6d 00 7f 68 00 7f 6e 01 7f "
            "tail@0x4aff0=64 fb fe 65 fb fe 68 fc fe 6b fd fe 6e fe fe 6d")


@pytest.mark.parametrize("size", [0, 1, 7, 8, 9, 15, 16, 17, 4095, 4096, 4097, 20000])
def test_xor_fold_matches_the_driver_loop(size, tmp_path):
    data = bytes((i * 37 + 11) & 0xFF for i in range(size))
    path = tmp_path / "b.bin"
    path.write_bytes(data)
    assert xor_fold64(open_dump(path, allow_empty=True)) == reference_xor64(data)


def test_fingerprint_of_a_real_buffer():
    data = INPUT.read_bytes()
    fp = fingerprint_dump(open_dump(INPUT), tag="input")
    assert fp.crc32 == zlib.crc32(data)
    assert fp.xor64 == reference_xor64(data)
    assert len(fp.pages) == 75
    assert fp.pages[0].first8 == data[:8] and fp.pages[0].last8_offset == 0xFF8 and fp.pages[0].last8 == data[0xFF8:0x1000]
    assert fp.pages[74].first8 == data[74 * 4096:74 * 4096 + 8]
    assert fp.fp_line() == brief_line().split("\t[4] ")[1]


def test_fp_line_format_is_the_briefs():
    fp = fingerprint_dump(open_dump(INPUT), tag="input")
    m = FP_LINE.search(fp.fp_line())
    assert m and m["tag"] == "input" and m["mid_at"] == "257f8"
    # readers accept upper-case hex; short buffers have fewer bytes, size 0 has none
    assert FP_LINE.search("[FP] t size=3 crc32=0xABCDEF01 xor64=0x0000000000ABCDEF head@0x0=AB CD EF "
                          "mid@0x0=AB CD EF tail@0x0=AB CD EF")
    assert FP_LINE.search("[FP] t size=0 crc32=0x00000000 xor64=0x0000000000000000 head@0x0= mid@0x0= tail@0x0=")


def test_fingerprint_command_prints_driver_style_lines(cli):
    result = cli("fingerprint", INPUT, "--tag", "input")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    data = INPUT.read_bytes()
    assert lines[0] == f"[INPUT-CHK] page[0] first8={data[:8].hex(' ')}  last8(@0xff8)={data[0xff8:0x1000].hex(' ')}"
    assert lines[74].startswith("[INPUT-CHK] page[74] (last) first8=")
    assert f"xor-fold = 0x{reference_xor64(data):016X} over 307200 bytes (75 pages)" in result.out
    assert lines[-1] == brief_line().split("\t[4] ")[1]
    doc = json.loads(cli("fingerprint", INPUT, "--json", "--page", "65536").out)
    assert doc["crc32"] == f"0x{zlib.crc32(data):08x}" and len(doc["pages"]) == 5


def test_verify_the_briefs_line_and_the_issue_style(tmp_path, cli):
    data = INPUT.read_bytes()
    log = tmp_path / "driver.log"
    log.write_text(
        "00000001\t0.00000000\t[4] EdgeTpu: probe ok\n"
        + brief_line() + "\n"
        f"[INPUT-CHK] page[0] first8={data[:8].hex(' ').upper()}  last8(@0xff8)={data[0xff8:0x1000].hex(' ')}\n"
        f"[INPUT-CHK] page[74] (last) first8={data[74 * 4096:74 * 4096 + 8].hex(' ')}\n"
        f"[INPUT-CHK] xor-fold pre-submit = 0x{reference_xor64(data):016X} over 307200 bytes (75 pages)\n")
    result = cli("verify", log, INPUT)
    assert result.code == 0, result.out + result.err
    assert "MATCH | all 11 logged values match 1 file" in result.out
    doc = json.loads(cli("verify", log, INPUT, "--json").out)
    assert doc["verdict"] == "MATCH" and len(doc["checks"]) == 11
    assert {c["kind"] for c in doc["checks"]} == {"size", "crc32", "xor64", "bytes"}
    assert all(set(c) >= {"expected", "found", "match"} for c in doc["checks"])
    bad = cli("verify", log, BROKEN, "--json")
    assert bad.code == 1
    doc = json.loads(bad.out)
    assert doc["verdict"] == "DIFFER"
    differ = {c["what"] for c in doc["checks"] if not c["match"]}
    assert differ == {"crc32", "xor64"}  # the broken input differs inside, not at the logged edges


def test_verify_several_buffers_and_crc_output(tmp_path, cli):
    crc_out = cli("crc", "dumps/libedgetpu/convert_scores.bin", "dumps/ours/Squeeze1.bin", width=200).out
    log = tmp_path / "crc.log"
    log.write_text(crc_out)
    result = cli("verify", log, "--buffer", "convert_scores=dumps/broken/convert_scores.bin",
                 "--buffer", "Squeeze1=dumps/ours/Squeeze1.bin", "--json")
    doc = json.loads(result.out)
    assert result.code == 1
    wrong = {(c["tag"], c["what"]) for c in doc["checks"] if not c["match"]}
    assert ("convert_scores", "crc32") in wrong and not any(tag == "Squeeze1" for tag, _ in wrong)


def test_verify_user_pattern(tmp_path, cli):
    data = INPUT.read_bytes()
    log = tmp_path / "other.log"
    log.write_text(f"buf crc {zlib.crc32(data):08X} len {len(data)}\n"
                   f"bytes at 4096: {data[4096:4100].hex()}\n")
    result = cli("verify", log, INPUT, "--json", "--pattern",
                 r"crc (?P<crc32>[0-9A-F]{8}) len (?P<size>\d+)|bytes at (?P<offset>\d+): (?P<bytes>[0-9a-f]+)")
    doc = json.loads(result.out)
    assert result.code == 0, result.err
    assert [c["kind"] for c in doc["checks"]] == ["crc32", "size", "bytes"]


def test_verify_bad_input(tmp_path, cli):
    empty = tmp_path / "quiet.log"
    empty.write_text("driver loaded\nnothing else\n")
    assert_one_line_error(cli("verify", empty, INPUT), "quiet.log", "no fingerprints found")
    assert_one_line_error(cli("verify", tmp_path / "missing.log", INPUT), "missing.log", "no such file")
    log = tmp_path / "fp.log"
    log.write_text(brief_line() + "\n")
    assert_one_line_error(cli("verify", log, INPUT, "--pattern", "("), "not a regular expression")
    assert_one_line_error(cli("verify", log, INPUT, "--pattern", "crc"), "named group")
    assert_one_line_error(cli("verify", log, "--buffer", "other=x.bin"), "no file given", "input")
    assert_one_line_error(cli("verify", log, INPUT, "--length", "999999"), "input.bin", "past the end")
    broken = tmp_path / "broken.log"  # an [FP] line with a bad CRC: an error naming the line, not a half-read DIFFER
    broken.write_text("boot\n" + re.sub(r"crc32=0x[0-9a-f]{8}", "crc32=0xzz", brief_line()) + "\n")
    assert_one_line_error(cli("verify", broken, INPUT), "broken.log", "line 2", "malformed [FP] line")


def test_crc_expect(cli):
    crc = f"0x{zlib.crc32(INPUT.read_bytes()):08x}"
    ok = cli("crc", INPUT, "--expect", crc.upper().replace("0X", "0x"))
    assert ok.code == 0 and f"MATCH | CRC32 {crc} as expected" in ok.out
    bad = cli("crc", BROKEN, "--expect", crc, "--json")
    assert bad.code == 1
    doc = json.loads(bad.out)
    assert doc["expect"] == crc and doc["expect_match"] is False
    assert_one_line_error(cli("crc", INPUT, "--expect", "0xnothex"), "expected a CRC32")


def test_parse_log_names_the_lines():
    found = parse_log("x\n" + brief_line() + "\n")
    assert {item.line for item in found} == {2}


def test_docs_fingerprint_example_runs_as_written(cli):
    readme = Path("docs/evidence.md").read_text(encoding="utf-8")
    command = "$ forensics fingerprint dumps/ours/input.bin --page 65536 --tag input"
    block = readme.split(command + "\n", 1)[1].split("```", 1)[0]
    result = cli(*command.split()[2:])
    assert result.code == 0
    assert result.out == block
