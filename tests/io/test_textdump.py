"""Text hex dumps are dumps: WinDbg d*, xxd, hexdump -C, od, plain hex -> the exact bytes, detected by content."""

from __future__ import annotations

import random
import shutil
import subprocess
from pathlib import Path

import pytest

from forensics.io.dump import open_dump
from forensics.core.errors import InputError
from forensics.io.textdump import decode_text, decode_text_dump, detect_format, sniff_file

from tests.conftest import assert_one_line_error

INPUT = Path("dumps/ours/input.bin")


def _ascii(chunk: bytes) -> str:
    return "".join(chr(b) if 0x20 <= b < 0x7f else "." for b in chunk)


def _address(value: int, wide: bool) -> str:
    """WinDbg prints 64-bit addresses as two 8-digit halves joined by a backtick."""
    return f"{value >> 32:08x}`{value & 0xffffffff:08x}" if wide else f"{value:08x}"


def windbg(data: bytes, base: int, command: str, wide: bool = True) -> str:
    """WinDbg's documented d* layout, typed from the Display Memory reference: 16 bytes a line; db: two-digit
    bytes, '-' between the 8th and 9th, padded so the ASCII column lines up; dw/dd/dq: 8/4/2 little-endian
    words a line (dq as high`low); dc: dd with '-' after the 2nd dword and the ASCII column."""
    lines = [f"0: kd> {command} {_address(base, wide)} L{len(data):x}"]
    width = {"db": 1, "dw": 2, "dd": 4, "dc": 4, "dq": 8}[command]
    for pos in range(0, len(data), 16):
        chunk = data[pos:pos + 16]
        if command == "db":
            cells = [f"{b:02x}" for b in chunk]
            hexpart = "".join(c + ("-" if i == 7 and len(cells) > 8 else " ") for i, c in enumerate(cells))
            hexpart = hexpart[:-1].ljust(47)
            lines.append(f"{_address(base + pos, wide)}  {hexpart}  {_ascii(chunk)}")
            continue
        words = []
        for i in range(0, len(chunk), width):
            value = int.from_bytes(chunk[i:i + width], "little")
            words.append(f"{value >> 32:08x}`{value & 0xffffffff:08x}" if width == 8 else f"{value:0{width * 2}x}")
        if command == "dc":
            body = "".join(w + ("-" if i == 1 and len(words) > 2 else " ") for i, w in enumerate(words))[:-1]
            lines.append(f"{_address(base + pos, wide)}  {body.ljust(35)}  {_ascii(chunk)}")
        else:
            lines.append(f"{_address(base + pos, wide)}  {' '.join(words)}")
    return "\n".join(lines) + "\n"


# Typed by hand from the layout WinDbg documents (`db` / `dd` / `dq` on the start of an MZ image).
DB_TYPED = """0:000> db 77c5d000 L20
77c5d000  4d 5a 90 00 03 00 00 00-04 00 00 00 ff ff 00 00  MZ..............
77c5d010  b8 00 00 00 00 00 00 00-40 00 00 00 00 00 00 00  ........@.......
"""
DD_TYPED = """0:000> dd 77c5d000 L8
77c5d000  00905a4d 00000003 00000004 0000ffff
77c5d010  000000b8 00000000 00000040 00000000
"""
DQ_TYPED = """0:000> dq 00000000`77c5d000 L4
00000000`77c5d000  00000003`00905a4d 0000ffff`00000004
00000000`77c5d010  00000000`000000b8 00000000`00000040
"""
MZ = bytes.fromhex("4d5a9000030000000400000000ffff0000"[:32] + "b800000000000000" + "4000000000000000")


def test_typed_windbg_db_dd_dq_give_the_documented_bytes():
    for text, variant in ((DB_TYPED, "db"), (DD_TYPED, "dd"), (DQ_TYPED, "dq")):
        result = decode_text_dump(text)
        assert result.data == bytes.fromhex("4d5a900003000000 04000000ffff0000 b800000000000000 4000000000000000")
        assert (result.format, result.variant, result.start_address) == ("windbg", variant, 0x77C5D000)


@pytest.mark.parametrize("command", ["db", "dw", "dd", "dq", "dc"])
@pytest.mark.parametrize("wide", [True, False])
def test_windbg_round_trips_a_real_300k_buffer(command, wide):
    data = INPUT.read_bytes()
    base = 0xFFFFB20C4A3B2000 if wide else 0x4A3B2000
    result = decode_text_dump(windbg(data, base, command, wide))
    assert result.data == data
    assert result.start_address == base
    assert result.variant == command


def test_windbg_db_short_last_line_and_odd_length():
    data = bytes(range(256)) * 3 + b"\x41\x42\x43"
    assert decode_text_dump(windbg(data, 0x1000, "db")).data == data
    # a last line whose trailing padding was lost in a paste
    text = "00001000  41 42 43  ABC\n"
    assert decode_text_dump(text).data == b"ABC"


def test_dbgview_prefixes_and_utf16(tmp_path):
    data = INPUT.read_bytes()[:4096]
    lines = windbg(data, 0xFFFFB20C4A3B2000, "db").splitlines()
    prefixed = "\n".join(f"{i:08d}\t{i * 0.00123:.8f}\t[1234] {line}" for i, line in enumerate(lines)) + "\n"
    assert decode_text_dump(prefixed).data == data
    path = tmp_path / "dbgview.log"
    path.write_bytes(prefixed.replace("\n", "\r\n").encode("utf-16"))  # BOM + UTF-16-LE, as DbgView saves
    dump = open_dump(path)
    assert dump.read(0, dump.size) == data
    assert "UTF-16" in dump.source_format


def _tool(name, *args, data: bytes, tmp_path) -> str:
    if shutil.which(name) is None:
        pytest.skip(f"{name} is not installed")
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    return subprocess.run([name, *args, str(src)], check=True, capture_output=True, text=True).stdout


def _with_runs() -> bytes:
    """Real bytes with long repeated stretches, so hexdump -C and od print '*' lines."""
    real = INPUT.read_bytes()
    return real[:5000] + bytes(4096) + real[5000:9000] + b"\xcc" * 333 + real[-100:]


@pytest.mark.parametrize("tool,args,fmt", [
    ("xxd", (), "xxd"), ("xxd", ("-g", "1"), "xxd"), ("xxd", ("-c", "32", "-g", "4"), "xxd"),
    ("xxd", ("-p",), "plain"), ("hexdump", ("-C",), "hexdump"), ("od", ("-A", "x", "-t", "x1"), "od"),
    ("od", ("-A", "x", "-t", "x1z"), "od"), ("od", ("-t", "x1"), "od"), ("od", ("-A", "d", "-t", "x1"), "od"),
])
@pytest.mark.parametrize("which", ["input", "runs"])
def test_real_tools_round_trip(tool, args, fmt, which, tmp_path):
    data = INPUT.read_bytes() if which == "input" else _with_runs()
    text = _tool(tool, *args, data=data, tmp_path=tmp_path)
    if which == "runs" and tool in ("hexdump", "od"):
        assert "\n*\n" in text  # the repeat lines are exercised
    assert detect_format(text) == fmt
    assert decode_text_dump(text).data == data
    path = tmp_path / "dump.txt"
    path.write_text(text)
    dump = open_dump(path)
    assert dump.size == len(data) and dump.read(0, len(data)) == data


def test_plain_spaced_hex():
    data = bytes(range(200))
    spaced = "\n".join(data[i:i + 16].hex(" ") for i in range(0, len(data), 16))
    assert decode_text_dump(spaced).data == data


def test_gap_is_an_error_naming_the_line_unless_filled():
    data = bytes(range(64))
    lines = windbg(data, 0x1000, "db").splitlines()
    del lines[2]  # 0x1010 missing: the line after the hole is line 3 of the text
    text = "\n".join(lines)
    with pytest.raises(InputError, match=r"x.txt: line 3: addresses are not contiguous: expected 0x1010"):
        decode_text_dump(text, path="x.txt")
    filled = decode_text_dump(text, gap_fill=0xCC)
    assert filled.data == data[:16] + b"\xcc" * 16 + data[32:]


def test_malformed_and_unreadable_lines_name_the_line():
    text = DB_TYPED.replace("-40 00", "-4g 00")
    with pytest.raises(InputError, match=r"line 3: malformed WinDbg db line"):
        decode_text_dump(text)
    text = DB_TYPED.replace("b8 00 00 00 00 00 00 00-40", "?? ?? ?? ?? ?? ?? ?? ??-??")
    with pytest.raises(InputError, match=r"line 3: '\?\?'"):
        decode_text_dump(text)
    stray = DD_TYPED.replace("77c5d010", "some log message\n77c5d010")
    with pytest.raises(InputError, match=r"line 3: not a line of"):
        decode_text_dump(stray)


def test_binary_is_never_text():
    rng = random.Random(11)
    for size in (1, 7, 100, 4096, 70000):
        blob = bytes(rng.getrandbits(8) for _ in range(size))
        assert decode_text(blob) is None or detect_format(decode_text(blob)[0]) is None
    for path in sorted(Path("dumps").glob("*/*.bin")):
        assert sniff_file(str(path), path.stat().st_size)[0] == "binary", path


def test_text_without_a_format_is_read_as_binary_with_a_warning(tmp_path, cli):
    path = tmp_path / "notes.txt"
    path.write_text("These are notes about the buffer.\nNothing here is a hex dump.\n")
    result = cli("crc", path)
    assert result.code == 0
    assert "notes.txt: looks like text (100% printable ASCII) but is no hex dump format" in result.err
    assert "reading its bytes as binary" in result.err
    assert f"{path.stat().st_size:,}" in result.out


def test_a_buffer_of_printable_bytes_is_binary_without_a_warning(tmp_path, cli):
    """uint8 scores of 0.25..0.5 are bytes 0x40..0x7e: printable, but no text (no line breaks); one long line of
    hex digits still is a plain hex dump."""
    rng = random.Random(7)
    scores = bytes(rng.randrange(0x40, 0x7F) for _ in range(8136))
    (tmp_path / "scores.bin").write_bytes(scores)
    result = cli("crc", tmp_path / "scores.bin")
    assert result.code == 0 and result.err == "" and "8,136" in result.out
    data = bytes(rng.getrandbits(8) for _ in range(3000))
    (tmp_path / "one_line.txt").write_text(data.hex())
    assert open_dump(tmp_path / "one_line.txt").read(0, 3000) == data


def test_every_dump_command_names_the_text_format(tmp_path, cli):
    text = tmp_path / "ours.txt"
    text.write_text(windbg(INPUT.read_bytes(), 0xFFFFB20C4A3B2000, "db"))
    result = cli("crc", text, INPUT, "--json")
    import json

    doc = json.loads(result.out)
    assert result.code == 0 and doc["match"] is True
    assert doc["files"][0]["source_format"] == "text (WinDbg db)"
    assert "a text hex dump (WinDbg db): 19,201 lines" not in result.err  # the prompt line is not a dump line
    assert "a text hex dump (WinDbg db): 19,200 lines decoded to 307,200 bytes from address 0xffffb20c4a3b2000" \
        in result.err
    assert cli("diff", text, INPUT).code == 0
    doc = json.loads(cli("diff", text, INPUT, "--json").out)
    assert [s["source_format"] for s in doc["sources"]] == ["text (WinDbg db)", "binary"]
    assert "sources" not in json.loads(cli("diff", INPUT, INPUT, "--json").out)  # binary JSON as before


def test_import_writes_the_bytes(tmp_path, cli):
    text = tmp_path / "scores.txt"
    data = Path("dumps/ours/convert_scores.bin").read_bytes()
    text.write_text(windbg(data, 0x4A3B2000, "dq", wide=False))
    out = tmp_path / "scores.bin"
    result = cli("import", text, "-o", out)
    assert result.code == 0, result.err
    assert out.read_bytes() == data
    assert f"wrote {out} ({len(data):,} bytes)" in result.out
    import json

    doc = json.loads(cli("import", text, "-o", out, "--format", "windbg", "--json").out)
    assert doc["bytes_written"] == len(data) and doc["variant"] == "dq"


def test_import_bad_input(tmp_path, cli):
    text = tmp_path / "x.txt"
    text.write_text("hello\nworld\n")
    assert_one_line_error(cli("import", text, "-o", tmp_path / "o.bin"), "x.txt", "not a text hex dump")
    assert_one_line_error(cli("import", text, "-o", tmp_path / "o.bin", "--format", "srec"), "invalid choice")
    binary = tmp_path / "b.bin"
    binary.write_bytes(random.Random(501).randbytes(1000))
    assert_one_line_error(cli("import", binary, "-o", tmp_path / "o.bin"), "b.bin", "not text")
    gap = tmp_path / "gap.txt"
    gap.write_text("00001000  41 42 43 44 45 46 47 48-49 4a 4b 4c 4d 4e 4f 50  ABCDEFGHIJKLMNOP\n"
                   "00001020  41 42 43 44 45 46 47 48-49 4a 4b 4c 4d 4e 4f 50  ABCDEFGHIJKLMNOP\n")
    assert_one_line_error(cli("import", gap, "-o", tmp_path / "o.bin"), "gap.txt: line 2", "not contiguous")
    assert cli("import", gap, "-o", tmp_path / "o.bin", "--gap-fill", "0xcc").code == 0
    assert (tmp_path / "o.bin").read_bytes()[16:32] == b"\xcc" * 16
    assert_one_line_error(cli("import", gap, "-o", tmp_path / "o.bin", "--gap-fill", "300"), "0-255")


def test_a_far_address_is_refused_not_filled():
    text = ("00000000`00001000  41 42 43 44 45 46 47 48-49 4a 4b 4c 4d 4e 4f 50  ABCDEFGHIJKLMNOP\n"
            "ffffffff`ffff0000  41 42 43 44 45 46 47 48-49 4a 4b 4c 4d 4e 4f 50  ABCDEFGHIJKLMNOP\n")
    with pytest.raises(InputError, match=r"x.txt: line 2: address 0xffffffffffff0000 is .* more than the 256 MiB"):
        decode_text_dump(text, path="x.txt", gap_fill=0)
    star = "00000000  00 00 00 00 00 00 00 00  00 00 00 00 00 00 00 00  |................|\n*\nfffffff0\n"
    with pytest.raises(InputError, match="line 3: address 0xfffffff0"):
        decode_text_dump(star)


def test_the_cli_help_lists_every_text_format_without_importing_textdump_to_start():
    """`forensics --help` builds every parser without importing forensics.io.textdump (its dataclasses pull in
    inspect, ast, dis: start-up every command paid); `import --help` still lists the formats from FORMATS."""
    import subprocess
    import sys

    from forensics.io.textdump import FORMATS

    code = ("import sys; sys.argv = ['forensics', '--help']\nfrom forensics.cli import main\n"
            "try:\n    main()\nexcept SystemExit:\n    pass\nprint('textdump' , 'forensics.io.textdump' in sys.modules)")
    got = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert got.stdout.strip().splitlines()[-1] == "textdump False"
    text = subprocess.run([sys.executable, "-m", "forensics", "import", "--help"], capture_output=True, text=True,
                          check=True).stdout
    assert all(name in " ".join(text.split()) for name in ("auto",) + FORMATS)
