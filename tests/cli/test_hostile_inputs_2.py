"""Hostile inputs, second sweep (issue 28, the reading side): special files, terminal escapes, numbers and sizes
from flags and files, sparse files, text dumps, npz archives, deep JSON, large logs.

Each class ends in a correct answer or one line on stderr and exit 2, with memory bounded (an address-space
limit on a subprocess, or a structural bound checked directly) and the inputs unchanged. Nothing here measures
time; `timeout=` in `guarded` is a hang guard only.
"""

from __future__ import annotations

import hashlib
import os
import zipfile

import numpy as np
import pytest

from tests.conftest import REPO, assert_one_line_error
from tests.cli.test_hostile_inputs import guarded

ESC_TITLE = "\x1b]0;PWNED\x07"
ESC_CLEAR = "\x1b[2J"


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def no_controls(text: str) -> bool:
    """Nothing a terminal would act on: no ESC, BEL, CR or C1 control."""
    return not any(c in text for c in "\x1b\x07\r\x9b")


# --- terminal escape injection ---------------------------------------------------------------------------

def test_escape_controls_spells_every_control_and_is_idempotent():
    from forensics.render.console import escape_controls

    text = f"a{ESC_TITLE}b{ESC_CLEAR}c\x9bd\u202ee\tf"
    once = escape_controls(text)
    assert no_controls(once) and "\u202e" not in once
    assert once == "a\\x1b]0;PWNED\\x07b\\x1b[2Jc\\x9bd\\u202ee\tf"
    assert escape_controls(once) == once
    assert escape_controls("plain name.bin") == "plain name.bin"


@pytest.mark.parametrize("argv, code", [(["crc", "{f}"], 0), (["crc", "{f}", "{f}"], 0), (["hexdump", "{f}"], 0),
                                        (["fingerprint", "{f}"], 0), (["coverage", "{f}", "--sentinel", "cc"], 0),
                                        (["anchors", "{f}"], 0), (["diff", "{f}", "{f}"], 0),
                                        (["diff", "{f}", "{f}.missing"], 2)])
def test_a_file_name_with_escapes_never_reaches_the_terminal(tmp_path, monkeypatch, cli, argv, code):
    monkeypatch.chdir(tmp_path)  # a short relative name: the table shows it whole
    name = f"a{ESC_TITLE}{ESC_CLEAR}b.bin"
    open(name, "wb").write(bytes(range(256)) * 4)
    before = digest(name)
    r = cli(*[a.replace("{f}", name) for a in argv])
    assert r.code == code, r
    assert no_controls(r.out) and no_controls(r.err), (r.out, r.err)
    if argv[0] in ("crc", "hexdump"):  # the name is shown, its controls spelled out
        assert "\\x1b]0;PWNED" in r.out
    assert digest(name) == before


def test_manifest_strings_with_escapes_are_escaped_on_every_run_command(tmp_path, cli):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(bytes(range(256)) * 4)
    b.write_bytes(bytes(range(255, -1, -1)) * 4)
    tensor = f"raw:t{ESC_CLEAR}x"
    assert cli("ingest", tmp_path / "R1", "--source", f"drv{ESC_TITLE}", f"{tensor}={a}").code == 0
    assert cli("ingest", tmp_path / "R2", "--source", "d", f"{tensor}={b}").code == 0
    for argv, code in ((["compare", tmp_path / "R1", tmp_path / "R2"], 1),
                       (["compare", tmp_path / "R1", tmp_path / "R1"], 0)):
        r = cli(*argv)
        assert r.code == code, r
        assert no_controls(r.out) and no_controls(r.err), r.out
        assert "t\\x1b[2Jx" in r.out


def test_error_lines_are_escaped_and_bounded(cli):
    r = cli("diff", "a.bin", "b.bin", "--atol", "1" * 5000)
    assert_one_line_error(r)
    assert len(r.err) < 1200 and "characters cut" in r.err
    r = cli("crc", f"missing{ESC_CLEAR}.bin")
    assert_one_line_error(r, "missing\\x1b[2J.bin")
    r = cli("crc", "--no-such-flag" + ESC_TITLE)
    assert_one_line_error(r)
    assert no_controls(r.err)


# --- special files: sizes the file system does not tell ---------------------------------------------------

@pytest.mark.skipif(not os.path.exists("/proc/version"), reason="needs procfs")
def test_crc_of_procfs_files_reads_them_to_the_end(cli):
    import json
    import zlib

    r = cli("crc", "/proc/version", "/proc/self/cmdline", "--json")
    doc = json.loads(r.out)
    version = open("/proc/version", "rb").read()
    first = doc["files"][0] if "files" in doc else doc[0]
    assert first["size"] == len(version) > 0  # st_size says 0
    assert int(str(first["crc32"]), 16) == zlib.crc32(version)
    assert r.code == 1  # two different texts differ


def test_a_pseudo_file_that_says_zero_bytes_is_read(monkeypatch, tmp_path):
    from forensics.io import dump as dump_module, files

    path = tmp_path / "pseudo.bin"
    path.write_bytes(b"abc" * 100)
    monkeypatch.setattr(files, "_pseudo_devices", lambda: frozenset({os.stat(path).st_dev}))
    d = dump_module.open_dump(str(path))
    assert d.size == 300 and d.read(0, 300) == b"abc" * 100 and "no size" in d.source_format
    monkeypatch.setattr(files, "MAX_UNSIZED", 100)
    with pytest.raises(dump_module.InputError, match="MAX_UNSIZED"):
        dump_module.open_dump(str(path))


# --- sparse files -----------------------------------------------------------------------------------------

def _sparse(path, size, pieces):
    with open(path, "wb") as fh:
        fh.truncate(size)
        for at, data in pieces:
            fh.seek(at)
            fh.write(data)
    return open(path, "rb").read() if size <= 64 << 20 else None


def test_sparse_files_read_as_zeros_where_they_have_holes(tmp_path):
    """Windows that are all hole, part hole and all data give the file's bytes (differential: a plain read)."""
    from forensics.io.dump import DumpReader, open_dump

    rng = np.random.default_rng(28)
    pieces = [(0, rng.bytes(100)), (5 << 20, rng.bytes(3 << 20)), ((20 << 20) - 7, rng.bytes(7))]
    expected = _sparse(tmp_path / "s.bin", 20 << 20, pieces)
    d = open_dump(str(tmp_path / "s.bin"))
    got = b"".join(bytes(view) for _pos, view in d.iter_chunks(chunk_size=1 << 20))
    assert got == expected
    with DumpReader(d) as reader:
        for lo, hi in [(0, 4096), (4 << 20, 9 << 20), (1 << 20, 2 << 20), ((20 << 20) - 10, 20 << 20)]:
            w = reader.window(lo, hi)
            assert bytes(w.view) == expected[lo:hi]
            w.release()


def test_fingerprint_and_coverage_of_a_sparse_file_equal_plain_numpy(tmp_path):
    from forensics.buffer.coverage import analyse_coverage
    from forensics.io.dump import open_dump
    from forensics.buffer.fingerprint import fingerprint_dump

    rng = np.random.default_rng(5)
    size = (24 << 20) + 1000
    pieces = [(4096 * 3 + 100, rng.bytes(50000)), ((9 << 20) - 5, b"\xcc" * 64 + rng.bytes(10)),
              (size - 3, b"xyz")]
    data = _sparse(tmp_path / "s.bin", size, pieces)
    d = open_dump(str(tmp_path / "s.bin"))
    fp = fingerprint_dump(d, page_size=4096)
    arr = np.frombuffer(data, dtype=np.uint8)
    padded = np.concatenate([arr, np.zeros(-len(arr) % 8, np.uint8)])
    assert fp.xor64 == int(np.bitwise_xor.reduce(padded.view("<u8")))
    assert len(fp.pages) == -(-size // 4096)
    for page in (fp.pages[0], fp.pages[3], fp.pages[4], fp.pages[(9 << 20) // 4096 - 1], fp.pages[-1]):
        start = page.index * 4096
        end = min(start + 4096, size)
        assert page.first8 == data[start:start + 8] and page.last8 == data[max(start, end - 8):end]
    # coverage of sentinel 00: the runs of >= 8 zero bytes, found by a plain scan
    cov = analyse_coverage(d, b"\0")
    zero = np.concatenate([[False], arr == 0, [False]])
    flips = np.flatnonzero(zero[1:] != zero[:-1])
    runs = [(int(a), int(b)) for a, b in zip(flips[::2], flips[1::2]) if b - a >= 8]
    assert list(cov.untouched_ranges) == runs
    assert cov.untouched_bytes == sum(b - a for a, b in runs)


def test_coverage_runs_across_chunk_edges_equal_a_plain_scan(monkeypatch, tmp_path):
    """Small chunks: runs that start, end, span or fill whole chunks (the fast paths) against a plain scan."""
    from forensics.buffer import coverage
    from forensics.io.dump import open_dump

    monkeypatch.setattr(coverage, "_CHUNK", 64)
    rng = np.random.default_rng(7)
    arr = rng.integers(0, 256, 5000, dtype=np.uint8)
    for at, n in [(0, 70), (100, 300), (640, 64), (1000, 9), (2000, 8), (3000, 7), (4900, 100)]:
        arr[at:at + n] = 0xAB
    (tmp_path / "c.bin").write_bytes(arr.tobytes())
    cov = coverage.analyse_coverage(open_dump(str(tmp_path / "c.bin")), b"\xab", min_run=8)
    hit = np.concatenate([[False], arr == 0xAB, [False]])
    flips = np.flatnonzero(hit[1:] != hit[:-1])
    assert list(cov.untouched_ranges) == [(int(a), int(b)) for a, b in zip(flips[::2], flips[1::2]) if b - a >= 8]


def test_a_fingerprint_lists_at_most_max_pages(tmp_path, cli):
    _sparse(tmp_path / "big.bin", 8 << 30, [])
    r = guarded("fingerprint", tmp_path / "big.bin", "--page", "4096")
    assert_one_line_error(r, "MAX_PAGES", "--page")


# --- text dumps -------------------------------------------------------------------------------------------

def test_an_od_repeat_of_64_mib_expands_at_once(tmp_path, cli):
    import json
    import zlib

    path = tmp_path / "od.txt"
    path.write_text("000000 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n*\n4000000\n")
    r = guarded("crc", path, "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    first = doc["files"][0] if "files" in doc else doc[0]
    assert first["size"] == 64 << 20
    assert int(str(first["crc32"]), 16) == zlib.crc32(bytes(64 << 20))


def test_a_repeat_past_the_text_dump_limit_is_refused(tmp_path, cli):
    path = tmp_path / "od.txt"
    path.write_text("000000 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00 00\n*\n40000000\n")
    assert_one_line_error(cli("crc", path), "256 MiB", "line 3")


def test_one_12_mb_line_of_hex_is_decoded_in_bounded_memory(tmp_path):
    import zlib

    data = np.random.default_rng(12).bytes(6 << 20)
    path = tmp_path / "line.txt"
    path.write_text(data.hex() + "\n")
    before = digest(path)
    r = guarded("crc", path, "--json", memory=900 << 20)  # the regular expression alone took 1.9 GiB
    assert r.code == 0, r.err
    assert f"{zlib.crc32(data):08x}" in r.out
    assert digest(path) == before


def test_a_5000_digit_length_in_a_c_array_is_one_line(tmp_path, cli):
    path = tmp_path / "x.h"
    path.write_text("unsigned char x[] = {\n  0x01, 0x02\n};\nunsigned int x_len = " + "9" * 5000 + ";\n")
    assert_one_line_error(cli("crc", path), "MAX_NUMBER_DIGITS", "line 4")


def test_utf16_without_a_bom_is_decoded(tmp_path, cli):
    from forensics.io.dump import open_dump

    text = ("00000000: 4d5a 9000 0300 0000 0400 0000 ffff 0000  MZ..............\n"
            "00000010: b800 0000 0000 0000 4000 0000 0000 0000  ........@.......\n")
    for encoding in ("utf-16-le", "utf-16-be"):
        path = tmp_path / f"{encoding}.txt"
        path.write_bytes(text.encode(encoding))
        with pytest.warns(UserWarning, match="UTF-16"):
            d = open_dump(str(path))
        assert d.read(0, 32) == bytes.fromhex(text.split("\n")[0][10:49].replace(" ", "")) + \
            bytes.fromhex(text.split("\n")[1][10:49].replace(" ", ""))


def _db_log(data: bytes, base: int = 0xFFFFB20C4A3B2000, dbgview: bool = True) -> list[str]:
    lines = []
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        pairs = [f"{b:02x}" for b in chunk] + ["  "] * (16 - len(chunk))
        body = " ".join(pairs[:8]) + ("-" if len(chunk) > 8 else " ") + " ".join(pairs[8:])
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        addr = base + i
        prefix = f"{i // 16}\t{i * 1e-5:.8f}\t[1234] " if dbgview else ""
        lines.append(f"{prefix}{addr >> 32:08x}`{addr & 0xFFFFFFFF:08x}  {body}  {text}")
    return lines


@pytest.mark.parametrize("case", ["plain", "dbgview", "partial-last", "gap", "header", "stray", "physical",
                                  "unreadable"])
def test_block_decoding_of_db_lines_equals_line_by_line(monkeypatch, case):
    """The block fast path (_fast_db) against the line-by-line decoding it stands in for, on logs that use it
    wholly, partly or not at all."""
    from forensics.io import textdump
    from forensics.core.errors import InputError

    monkeypatch.setattr(textdump, "_BLOCK", 7)  # many blocks, and blocks that mix forms
    data = np.random.default_rng(3).bytes(16 * 40 + (5 if case == "partial-last" else 0))
    lines = _db_log(data, dbgview=case != "plain")
    if case == "gap":
        del lines[20]
    if case == "header":
        lines.insert(0, "0: kd> db ffffb20c`4a3b2000 L280")
    if case == "stray":
        lines.insert(9, "1\t0.1\t[1234] driver says hello")
    if case == "physical":
        lines[15] = "#  1a3c000 4d 5a 90 00 03 00 00 00-04 00 00 00 ff ff 00 00  MZ.............."
    if case == "unreadable":
        lines[30] = lines[30][:-70] + "?? " * 8 + "?? ?? ?? ?? ?? ?? ?? ??  ................"

    def decode(fast: bool):
        if not fast:
            monkeypatch.setattr(textdump, "_fast_db", lambda block: None)
        try:
            return textdump.decode_text_dump("\n".join(lines) + "\n", gap_fill=None)
        except InputError as exc:
            return str(exc)

    fast, slow = decode(True), decode(False)
    assert fast == slow
    if case in ("plain", "dbgview", "partial-last", "header"):
        assert fast.data == data


def test_a_text_dump_is_read_line_by_line(tmp_path):
    """Memory follows the decoded bytes, not the text: a 250,000-line DbgView log (27 MB of text, 4 MB of
    bytes) is decoded holding less than its text (a fixed 8 MiB for the chunk of text being split, plus the
    bytes and their copy)."""
    import tracemalloc

    from forensics.io.textdump import read_text_dump

    data = np.random.default_rng(4).bytes(16 * 250_000)
    path = tmp_path / "dbg.log"
    path.write_text("\n".join(_db_log(data)) + "\n")
    tracemalloc.start()
    try:
        decoded = read_text_dump(str(path))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert decoded.data == data
    assert peak < len(data) * 3 + (8 << 20) < os.path.getsize(path)


# --- large logs -------------------------------------------------------------------------------------------

def test_skipping_lines_without_a_value_word_finds_the_same_values(monkeypatch):
    """The prefilter of parse_log (_may_hold_values) against no prefilter, on every line form it reads, in
    mixed case, among driver chatter."""
    from forensics.buffer import fingerprint

    lines = [
        "00000012\t0.00123400\t[4] [FP] input size=16 crc32=0x0BC3F483 xor64=0x00000000000000ff "
        "head@0x0=01 02 mid@0x0=01 02 tail@0x0=01 02",
        "[INPUT-CHK] page[0] first8=00 01 02 03 04 05 06 07  last8(@0xff8)=f8 f9 fa fb fc fd fe ff",
        "[INPUT-CHK] PAGE[1] (last) First8=00 01 02 03 04 05 06 07",
        "[OUT-CHK] Xor-Fold pre-submit = 0xABCDEF over 8,192 bytes (2 pages)",
        "buffer SIZE: 4096 bytes", "CRC-32 = deadbeef", "Head = 00 11 22", "MID @ 0x10 = 33 44", "tail: 55 66",
        "[1234] edgetpu: dma map done", "[1234] apex: irq 17", "random words with nothing", "",
    ]
    text = "\n".join(lines * 3)
    with_filter = fingerprint.parse_log(text)
    monkeypatch.setattr(fingerprint, "_may_hold_values", lambda line: True)
    assert fingerprint.parse_log(text) == with_filter
    assert len(with_filter) >= 3 * 12


def test_verify_reads_a_log_line_by_line(tmp_path):
    """A long driver log: the values found are checked, memory follows them, not the log's length."""
    import tracemalloc

    from forensics.buffer.fingerprint import verify_log

    data = np.random.default_rng(9).bytes(64 << 10)
    (tmp_path / "buf.bin").write_bytes(data)
    chatter = "\n".join(f"{i}\t{i * 1e-4:.8f}\t[1234] edgetpu: irq {i % 50} handled" for i in range(200_000))
    pages = "\n".join(f"[BUF-CHK] page[{p}] first8={data[p * 4096:p * 4096 + 8].hex(' ')}" for p in range(16))
    (tmp_path / "drv.log").write_text(pages + "\n" + chatter + "\n" + pages + "\n")
    tracemalloc.start()
    try:
        report = verify_log(str(tmp_path / "drv.log"), [str(tmp_path / "buf.bin")])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert report.match and len(report.checks) == 32
    assert peak < (8 << 20) < os.path.getsize(tmp_path / "drv.log")


# --- deep JSON --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("opening,closing", [("[", "]"), ('{"a":', "}")])
def test_deeply_nested_polygraphy_json_is_one_line(tmp_path, opening, closing):
    path = tmp_path / "deep.json"
    path.write_text(opening * 100_000 + "1" + closing * 100_000)
    before = digest(path)
    r = guarded("ingest", tmp_path / "R", "--source", "x", "--from", "polygraphy", path)
    assert_one_line_error(r, "MAX_DEPTH", "deep.json")
    assert not (tmp_path / "R").exists() and digest(path) == before


def json_nested(levels: int):
    value: list = []
    for _ in range(levels - 1):
        value = [value]
    return value


def test_json_depth_counts_brackets_outside_strings_only():
    from forensics.core.errors import InputError
    from forensics.io.jsonio import MAX_DEPTH, loads

    assert loads('{"a": "' + "[{" * 5000 + '\\"]", "b": [1]}') == {"a": "[{" * 5000 + '"]', "b": [1]}
    deepest = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    assert loads("[" + ",".join([deepest] * 300) + "]") == [json_nested(MAX_DEPTH - 1)] * 300  # wide, not deep
    with pytest.raises(InputError, match="MAX_DEPTH"):
        loads("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(InputError, match="MAX_DEPTH"):
        loads('{"x": "]]]]", "y": ' + "[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1) + "}")


def test_a_deep_sidecar_is_one_line(tmp_path, cli):
    (tmp_path / "d.bin").write_bytes(bytes(64))
    (tmp_path / "d.bin.json").write_text('{"extra": ' + "[" * 50_000 + "]" * 50_000 + "}")
    assert_one_line_error(cli("diff", tmp_path / "d.bin", tmp_path / "d.bin"), "MAX_DEPTH", "d.bin.json")


# --- numbers and sizes from flags and files ---------------------------------------------------------------

DUMPS = str(REPO / "dumps")
DECODE = [os.path.join(DUMPS, "ours", "Squeeze1.bin"), os.path.join(DUMPS, "ours", "convert_scores.bin"),
          "--deps", os.path.join(DUMPS, "face_ssd")]


@pytest.mark.parametrize("argv,fragment", [
    (["diff", "{a}", "{a}", "--atol", "1" * 5000], "atol"),
    (["diff", "{a}", "{a}", "--offset", "9" * 5000], "MAX_NUMBER_CHARS"),
    (["diff", "{a}", "{a}", "--scale", "1" * 5000], "characters"),
    (["coverage", "{a}", "--sentinel", "cc", "--min-run", "1" * 400], "MAX_NUMBER_CHARS"),
    (["simulate", "{a}", "--bug", "oversize:1099511627776", "-o", "{out}"], "MAX_SIMULATED"),
    (["simulate", "{a}", "--bug", "stride:1:1:100000000000", "-o", "{out}"], "MAX_SIMULATED"),
    (["decode", *DECODE, "--image-size", "100000x100000", "--overlay", "{dec}", "--draw", "{out}"],
     "MAX_CANVAS_PIXELS"),
    (["decode", *DECODE, "--image-size", "9" * 5000 + "x10"], "WIDTHxHEIGHT"),
    (["decode", *DECODE, "--labels", "{lab_big}"], "MAX_LABEL_ID"),
    (["decode", *DECODE, "--labels", "{lab_long}"], "MAX_LABEL_ID"),
    (["decode", *DECODE, "--image", "{img}", "--overlay", "{nan}", "--draw", "{out}"], "not a finite number"),
])
def test_sizes_and_numbers_are_bounded_before_allocating(tmp_path, argv, fragment):
    import json

    if "--draw" in argv:
        pytest.importorskip("PIL")
    a = tmp_path / "a.bin"
    a.write_bytes(bytes(range(256)) * 16)
    (tmp_path / "lab_big.txt").write_text("100000000000 dog\n")
    (tmp_path / "lab_long.txt").write_text("1" * 5000 + " dog\n")
    rows = [{"box": [0.1, 0.1, 0.5, 0.5], "score": 0.9, "class": 0}]
    (tmp_path / "dec.json").write_text(json.dumps({"detections": rows}))
    (tmp_path / "nan.json").write_text(json.dumps({"detections": [{"box": [float("nan")] * 4, "score": 0.9}]}))
    if "{img}" in argv:
        from PIL import Image

        Image.new("RGB", (64, 48)).save(tmp_path / "img.png")
    names = {k: str(tmp_path / v) for k, v in {"a": "a.bin", "out": "out.png", "dec": "dec.json", "nan": "nan.json",
                                               "lab_big": "lab_big.txt", "lab_long": "lab_long.txt",
                                               "img": "img.png"}.items()}
    before = {p: digest(tmp_path / p) for p in os.listdir(tmp_path)}
    r = guarded(*[x.format(**names) if "{" in x else x for x in argv], memory=1 << 30)
    assert_one_line_error(r, fragment)
    assert len(r.err) < 1200
    assert {p: digest(tmp_path / p) for p in os.listdir(tmp_path)} == before  # nothing written, nothing changed


@pytest.mark.parametrize("url,fragment", [("ftp://nohost.invalid/run", "cannot open"), ("zip://run", "cannot open"),
                                          ("tar://run", "cannot open"), ("reference://run", "REFUSED_PROTOCOLS"),
                                          ("zip://::file:///dev/zero", "/dev/zero: is not a regular file"),
                                          ("zip://x::/dev/zero", "/dev/zero: is not a regular file")])
def test_urls_that_are_no_run_storage_are_one_line(tmp_path, url, fragment):
    pytest.importorskip("fsspec")
    r = guarded("compare", url, url, memory=1 << 30, cwd=tmp_path)
    assert_one_line_error(r, fragment)


def test_the_flag_number_grammar():
    import argparse

    from forensics.cli.args import MAX_NUMBER_CHARS, parse_int, positive_float

    assert [parse_int(t) for t in ("4096", "0x1000", "8_136", " 7 ", "-3", "0b101", "0o17")] == \
        [4096, 4096, 8136, 7, -3, 5, 15]
    for bad in ("1" * (MAX_NUMBER_CHARS + 1), "٤٠٩٦", "1e3", "0x", "12abc", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            parse_int(bad)
    assert positive_float("1/256") == 1 / 256
    with pytest.raises(argparse.ArgumentTypeError, match="characters"):
        positive_float("1" * 5000)


def test_label_ids_are_ascii_and_bounded(tmp_path):
    from forensics.core.errors import InputError
    from forensics.io.labels import MAX_LABEL_ID, read_labels

    (tmp_path / "ok.txt").write_text(f"0 background\n3 cat\n{MAX_LABEL_ID} last\n")
    labels = read_labels(tmp_path / "ok.txt")
    assert labels[3] == "cat" and labels[MAX_LABEL_ID] == "last" and len(labels) == MAX_LABEL_ID + 1
    (tmp_path / "sup.txt").write_text("\u00b2 dog\n")  # '²'.isdigit() is True, int() refuses it: a name
    assert read_labels(tmp_path / "sup.txt") == ("\u00b2 dog",)
    (tmp_path / "big.txt").write_text(f"{MAX_LABEL_ID + 1} dog\n")
    with pytest.raises(InputError, match="MAX_LABEL_ID"):
        read_labels(tmp_path / "big.txt")


# --- npz archives -----------------------------------------------------------------------------------------

def _npy_header(dtype, shape) -> bytes:
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": np.dtype(dtype).str, "fortran_order": False,
                                               "shape": shape})
    return buf.getvalue()


def test_ingest_streams_deflated_npz_members(tmp_path):
    """A 2 MiB archive of 2 x 512 MiB deflated arrays: ingested under an address-space limit far below the
    arrays' size (np.load held both), the run's buffers byte-equal to the arrays (CRC32 by zlib)."""
    import json
    import zlib

    path = tmp_path / "big.npz"
    block = bytes(range(256)) * (1 << 16)  # 16 MiB, compresses well
    crcs = {}
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("a", "b"):
            crc = 0
            with z.open(name + ".npy", "w", force_zip64=True) as fh:
                fh.write(_npy_header("<u1", (512 << 20,)))
                for _ in range(32):
                    fh.write(block)
                    crc = zlib.crc32(block, crc)
            crcs[name] = crc
    assert os.path.getsize(path) < 8 << 20
    r = guarded("ingest", tmp_path / "R", "--source", "x", "--from", "npz", path, "--json", memory=900 << 20)
    assert r.code == 0, r.err
    manifest = json.loads((tmp_path / "R" / "manifest.json").read_text())
    got = {b["tensor"]: (b["size"], b["crc32"]) for b in manifest["buffers"]}
    for name, crc in crcs.items():
        size, logged = got[name]
        assert size == 512 << 20 and int(str(logged), 16) == crc


def test_an_npz_header_larger_than_its_member_is_one_line(tmp_path, cli):
    path = tmp_path / "fake.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr("a.npy", _npy_header("<u1", (1 << 40,)) + bytes(100))
    assert_one_line_error(cli("ingest", tmp_path / "R", "--source", "x", "--from", "npz", path), "header says")
    assert_one_line_error(cli("crc", path), "header says")
    assert not (tmp_path / "R").exists()


def test_an_npz_of_too_many_members_is_one_line(tmp_path, monkeypatch, cli):
    from forensics.io import dump

    monkeypatch.setattr(dump, "MAX_NPZ_MEMBERS", 50)
    path = tmp_path / "many.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED) as z:
        for i in range(51):
            z.writestr(f"t{i}.npy", _npy_header("<u1", (4,)) + b"abcd")
    assert_one_line_error(cli("ingest", tmp_path / "R", "--source", "x", "--from", "npz", path), "MAX_NPZ_MEMBERS")
    assert_one_line_error(cli("crc", f"{path}:t3"), "MAX_NPZ_MEMBERS")


def test_a_deflated_member_is_decompressed_at_most_twice(tmp_path, monkeypatch):
    """fingerprint (CRC halves, peeks, pages, xor) of a deflated member: the stream is started at most twice
    (once as it comes, once more keeping its bytes when a read goes back), not once per read; results equal
    plain numpy on the array."""
    import zlib

    from forensics.io import dump
    from forensics.buffer.fingerprint import fingerprint_dump

    arr = np.random.default_rng(2).integers(0, 4, 24 << 20, dtype=np.uint8)
    np.savez_compressed(tmp_path / "m.npz", a=arr)
    starts = []
    original = dump._NpzMember.__init__
    monkeypatch.setattr(dump._NpzMember, "__init__", lambda self, *a: (starts.append(a), original(self, *a))[1])
    fp = fingerprint_dump(dump.open_dump(str(tmp_path / "m.npz")), page_size=4096)
    assert len(starts) <= 3  # the header read, the stream, and one restart that keeps the bytes
    assert fp.crc32 == zlib.crc32(arr.tobytes())
    assert fp.xor64 == int(np.bitwise_xor.reduce(arr.view("<u8")))
    assert [p.first8 for p in fp.pages[::1000]] == [arr[i * 4096:i * 4096 + 8].tobytes()
                                                    for i in range(0, len(fp.pages), 1000)]


@pytest.mark.parametrize("page_size", [1, 7, 8, 9, 15, 16, 100, 4096])
def test_page_edges_equal_plain_slices(tmp_path, page_size):
    from forensics.io.dump import open_dump
    from forensics.buffer.fingerprint import EDGE, page_edges

    data = np.random.default_rng(page_size).bytes(5003)
    (tmp_path / "p.bin").write_bytes(data)
    got = page_edges(open_dump(str(tmp_path / "p.bin")), page_size)
    expected = []
    for index, start in enumerate(range(0, len(data), page_size)):
        end = min(start + page_size, len(data))
        last = max(start, end - EDGE)
        expected.append((index, data[start:start + min(EDGE, end - start)], last, data[last:end]))
    assert [tuple(p) for p in got] == expected


def test_streamed_npz_ingest_equals_the_arrays(tmp_path, cli):
    """Big-endian values are swapped to the run's little-endian, empty and 2-D arrays keep their shapes:
    the run's buffers equal numpy's own reading of the archive."""
    import json

    arrays = {"a": np.arange(10, dtype=">f4"), "b": np.zeros(0, dtype="<u2"),
              "c": np.arange(12, dtype="<i2").reshape(3, 4), "d": np.arange(7, dtype=">u8")}
    np.savez_compressed(tmp_path / "x.npz", **arrays)
    assert cli("ingest", tmp_path / "R", "--source", "x", "--from", "npz", tmp_path / "x.npz").code == 0
    manifest = json.loads((tmp_path / "R" / "manifest.json").read_text())
    with np.load(tmp_path / "x.npz") as loaded:
        for buf in manifest["buffers"]:
            ref = loaded[buf["tensor"]]
            assert (tmp_path / "R" / buf["file"]).read_bytes() == ref.astype(ref.dtype.newbyteorder("<")).tobytes()
            assert list(buf["shape"]) == list(ref.shape)
            assert np.dtype(buf["dtype"]) == ref.dtype.newbyteorder("<")
