"""Text dumps exactly as the real tools print them: xxd / hexdump / od run here (skipped when absent) and compared
byte for byte with their input; Windows tools' output typed from their documented layouts; bad text refused."""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import zlib
from pathlib import Path

import pytest

from forensics.io.dump import open_dump
from forensics.core.errors import InputError
from forensics.io.textdump import FORMATS, decode_text_dump, detect_format

from tests.conftest import assert_one_line_error

INPUT = Path("dumps/ours/input.bin")


def _random(n: int, seed: int = 3) -> bytes:
    rng = random.Random(seed)
    return bytes(rng.getrandbits(8) for _ in range(n))


def _sources() -> dict[str, bytes]:
    """Sizes around a line (1, 15, 16, 17), 4096+3 with a long zero run (so '*' appears), real bytes with runs."""
    real = INPUT.read_bytes()
    return {
        "1": b"A",
        "15": _random(15),
        "16": _random(16, 4),
        "17": _random(17, 5),
        "4099": real[:1000] + bytes(2000) + real[1000:2099],
        "runs": real[:5000] + bytes(4096) + real[5000:9000] + b"\xcc" * 333 + real[-100:],
    }


def _run(tool: str, args: tuple, data: bytes, tmp_path: Path) -> str:
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not on PATH")
    src = tmp_path / "src.bin"
    src.write_bytes(data)
    return subprocess.run([tool, *args, str(src)], check=True, capture_output=True, text=True).stdout


# (tool, options, bytes skipped at the start by the options)
LINUX = [
    ("xxd", (), 0), ("xxd", ("-g1",), 0), ("xxd", ("-g2",), 0), ("xxd", ("-g4",), 0), ("xxd", ("-g8",), 0),
    ("xxd", ("-c", "8"), 0), ("xxd", ("-c", "12"), 0), ("xxd", ("-c", "16"), 0), ("xxd", ("-c", "32"), 0),
    ("xxd", ("-c", "12", "-g", "3"), 0), ("xxd", ("-u",), 0), ("xxd", ("-s", "0x10"), 16), ("xxd", ("-a",), 0),
    ("xxd", ("-e",), 0), ("xxd", ("-e", "-g2"), 0), ("xxd", ("-e", "-g8"), 0), ("xxd", ("-e", "-c", "12"), 0),
    ("xxd", ("-u", "-e"), 0), ("xxd", ("-d",), 0), ("xxd", ("-o", "0x1000"), 0), ("xxd", ("-p",), 0),
    ("xxd", ("-i",), 0), ("xxd", ("-b",), 0), ("xxd", ("-b", "-g2", "-c", "6"), 0),
    ("hexdump", ("-C",), 0), ("hexdump", ("-C", "-v"), 0), ("hexdump", ("-C", "-s", "16"), 16),
    ("hexdump", (), 0), ("hexdump", ("-x",), 0), ("hexdump", ("-v",), 0),
    ("od", ("-A", "x", "-t", "x1z"), 0), ("od", ("-A", "x", "-t", "x1"), 0), ("od", ("-t", "x1"), 0),
    ("od", ("-A", "d", "-t", "x1"), 0), ("od", ("-A", "o", "-t", "x1z"), 0), ("od", ("-v", "-A", "x", "-t", "x1"), 0),
    ("od", ("-t", "x1", "-v"), 0), ("od", ("-A", "x", "-t", "x1", "-w32"), 0), ("od", ("-A", "x", "-t", "x1", "-j", "16"), 16),
    ("od", ("-t", "x2"), 0), ("od", ("-x",), 0), ("od", ("-t", "x4"), 0), ("od", ("-t", "x8"), 0),
    ("od", ("-A", "x", "-t", "x2"), 0), ("od", ("-A", "x", "-t", "x4"), 0), ("od", ("-A", "x", "-t", "x8"), 0),
    ("od", ("-A", "d", "-t", "x2"), 0), ("od", ("-A", "d", "-t", "x4", "-v"), 0), ("od", ("-A", "n", "-t", "x1", "-v"), 0),
]


@pytest.mark.parametrize("tool,args,skip", LINUX, ids=[" ".join((t,) + a) for t, a, _ in LINUX])
def test_linux_tool_output_decodes_to_the_source_bytes(tool, args, skip, tmp_path):
    for name, data in _sources().items():
        if len(data) <= skip:
            continue  # the tool prints nothing (or only a closing offset) past the end
        text = _run(tool, args, data, tmp_path)
        got = decode_text_dump(text, path=f"{tool} {' '.join(args)} <{name}>")
        assert got.data == data[skip:], (tool, args, name, len(got.data), len(data) - skip)


@pytest.mark.parametrize("tool,args,fmt,variant", [
    ("xxd", ("-e",), "xxd", "xxd -e"), ("xxd", ("-d",), "xxd", "xxd -d"), ("xxd", ("-i",), "c-array", "C array (xxd -i)"),
    ("hexdump", (), "hexdump", "hexdump"), ("hexdump", ("-x",), "hexdump", "hexdump -x"),
    ("hexdump", ("-C",), "hexdump", "hexdump -C"), ("od", ("-t", "x2"), "od", "od -A o -t x2"),
    ("od", ("-A", "d", "-t", "x8"), "od", "od -A d -t x8"), ("od", ("-A", "x", "-t", "x1z"), "od", "od -A x -t x1z"),
])
def test_each_form_is_named_as_the_tool_prints_it(tool, args, fmt, variant, tmp_path):
    data = _sources()["runs"]
    got = decode_text_dump(_run(tool, args, data, tmp_path))
    assert (got.format, got.variant, got.data == data) == (fmt, variant, True)


def test_xxd_e_words_are_little_endian_not_memory_order(tmp_path):
    """xxd -e prints each group as a little-endian word: `00000000: 03020100 ...` for bytes 00 01 02 03."""
    data = bytes(range(0x41, 0x41 + 23))  # printable: the ASCII column tells the order
    text = _run("xxd", ("-e",), data, tmp_path)
    assert text.startswith("00000000: 44434241 ")  # what the real xxd prints for 'ABCD'
    assert decode_text_dump(text).data == data
    plain = _run("xxd", ("-g4",), data, tmp_path)
    assert plain.startswith("00000000: 41424344 ")
    assert decode_text_dump(plain).data == data


def test_od_of_an_empty_file_is_empty_and_xxd_i_checks_its_length(tmp_path):
    assert decode_text_dump(_run("od", ("-A", "x", "-t", "x1"), b"", tmp_path)).data == b""
    assert decode_text_dump(_run("od", ("-t", "x1"), b"", tmp_path)).data == b""
    text = _run("xxd", ("-i",), b"", tmp_path)
    assert decode_text_dump(text).data == b""
    text = _run("xxd", ("-i",), _random(17), tmp_path)
    with pytest.raises(InputError, match=r"x.h: line 5: \w+_len says 18 bytes, the array holds 17"):
        decode_text_dump(text.replace("_len = 17;", "_len = 18;"), path="x.h")


def test_a_lone_closing_offset_is_not_taken_for_bytes(tmp_path, cli):
    """hexdump -C -s 16 of a 1-byte file prints only `00000001`: that is no 4 bytes of plain hex."""
    text = tmp_path / "past.txt"
    text.write_text(_run("hexdump", ("-C", "-s", "16"), b"A", tmp_path))
    assert text.read_text().strip() == "00000001"
    assert_one_line_error(cli("crc", text, INPUT), "past.txt", "closing offset")
    assert decode_text_dump("00000001\n", fmt="plain").data == b"\x00\x00\x00\x01"
    assert decode_text_dump("4d5a9000\n").data == b"MZ\x90\x00"  # plain hex that is no offset


@pytest.mark.parametrize("tool,args", [("xxd", ()), ("xxd", ("-e",)), ("hexdump", ()), ("hexdump", ("-C",)),
                                       ("od", ("-t", "x2")), ("od", ("-A", "x", "-t", "x1z")), ("xxd", ("-i",))])
def test_crc_diff_and_import_agree_with_the_source(tool, args, tmp_path, cli):
    data = _sources()["runs"]
    text = tmp_path / "dump.txt"
    text.write_text(_run(tool, args, data, tmp_path))
    source = tmp_path / "src.bin"
    doc = json.loads(cli("crc", text, source, "--json").out)
    assert doc["match"] is True and doc["files"][0]["crc32"] == f"0x{zlib.crc32(data):08x}"
    assert cli("diff", text, source).code == 0
    out = tmp_path / "out.bin"
    assert cli("import", text, "-o", out).code == 0
    assert out.read_bytes() == data


@pytest.mark.parametrize("tool,args,fragment", [
    ("od", (), "od's default octal words"), ("od", ("-c",), "characters"), ("od", ("-t", "u1"), "decimal"),
    ("od", ("-t", "o1"), "octal"), ("hexdump", ("-d",), "decimal"), ("hexdump", ("-o",), "octal"),
    ("hexdump", ("-b",), "octal"), ("hexdump", ("-c",), "characters"),
    ("od", ("-A", "n", "-t", "x2"), "byte order is unknown"),
])
def test_forms_that_cannot_be_read_unambiguously_are_refused(tool, args, fragment, tmp_path, cli):
    """Not wrong bytes and not a silent binary read: one line naming the file, exit 2."""
    text = tmp_path / "odd.txt"
    text.write_text(_run(tool, args, _sources()["runs"], tmp_path))
    assert_one_line_error(cli("crc", text, INPUT), "odd.txt", fragment)
    assert_one_line_error(cli("import", text, "-o", tmp_path / "o.bin"), "odd.txt", fragment)


@pytest.mark.parametrize("tool,args", [("hexdump", ()), ("od", ("-x",))])
def test_words_after_a_star_whose_address_radix_is_ambiguous_are_refused(tool, args, tmp_path, cli):
    """hexdump (hex addresses) and od -x (octal) print the same 7-digit addresses and 16-bit words. 64 zero bytes
    and 16 more, pasted without the closing size line: `0000040` (hexdump) and `0000100` (od) fit both radices,
    and the '*' then stands for different counts: refused rather than guessed. With the size line (or a short
    last line, which hexdump pads with blanks and od does not) the same dump is read."""
    data = bytes(64) + _random(16, 12)
    full = _run(tool, args, data, tmp_path)
    text = tmp_path / "amb.txt"
    text.write_text("".join(full.splitlines(keepends=True)[:-1]))
    assert_one_line_error(cli("crc", text, INPUT), "amb.txt", "both fit every line", "-v")
    assert decode_text_dump(full).data == data
    assert decode_text_dump(_run(tool, args, data + b"\x07", tmp_path)).data == data + b"\x07"
    assert decode_text_dump(_run(tool, args + ("-v",), data, tmp_path)).data == data


def test_od_default_addresses_after_a_star_read_as_octal(tmp_path):
    """4096 zero bytes and 3 more: od's `0010000` is 4096 octal and would fit 10000 decimal too; od's default
    octal is taken (an od -A d text prints `0004096`, which is no octal)."""
    data = bytes(4096) + b"abc"
    for args in (("-t", "x1"), ("-t", "x2"), ("-t", "x4"), ("-t", "x8"), ("-x",), ("-A", "d", "-t", "x1")):
        assert decode_text_dump(_run("od", args, data, tmp_path)).data == data, args
    assert decode_text_dump(_run("hexdump", (), data, tmp_path)).data == data


# PowerShell 5.1 Format-Hex, from Microsoft's Format-Hex reference (PowerShell 5.1), example 2: a `Path:` line,
# a column header of 11 spaces and `00 01 ... 0F`, rows of an 8-digit address, three spaces, 16 upper-case
# bytes one space apart, two spaces, the ASCII column; a short last row is padded so the ASCII column aligns.
PS51 = """
           Path: C:\\Test\\File.t7f

           00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F

00000000   25 50 44 46 2D 31 2E 35 0D 0A 25 B5 B5 B5 B5 0D  %PDF-1.5..%????.
00000010   0A 31 20 30 20 6F 62 6A 0D 0A 3C 3C 2F 54 79 70  .1 0 obj..<</Typ
00000020   65 2F 43 61 74 61 6C 6F 67                       e/Catalog
"""
PDF = bytes.fromhex("255044462D312E350D0A25B5B5B5B50D" "0A312030206F626A0D0A3C3C2F547970" "652F436174616C6F67")

# PowerShell 7 Format-Hex, from the same reference (7.x), example 1: `Label:` line, `Offset Bytes Ascii` header,
# the column numbers, dashes, then rows of a 16-digit offset, one space, the bytes, one space, the ASCII column.
PS7 = """
   Label: C:\\drv\\out.bin (System.IO.FileStream) <2944BEC3>

          Offset Bytes                                           Ascii
                 00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F
          ------ ----------------------------------------------- -----
0000000000000000 4D 5A 90 00 03 00 00 00 04 00 00 00 FF FF 00 00 MZ\ufffd\u0000\u0003\u0000\u0000\u0000\u0004\u0000\u0000\u0000\u00ff\u00ff\u0000\u0000
0000000000000010 48 65 6C 6C 6F 20 57 6F 72 6C 64                Hello World
""".replace("\u0000", "\u2400").replace("\u0003", "\u2403").replace("\u0004", "\u2404")
MZ16 = bytes.fromhex("4d5a90000300000004000000ffff0000")

# certutil -encodehex FILE OUT (type 4, the default): a 4-digit address, a TAB, 8 bytes, two spaces, 8 bytes, three
# spaces, the ASCII column; the address grows past 4 digits after 0xffff.
CERTUTIL = ("0000\t4d 5a 90 00 03 00 00 00  04 00 00 00 ff ff 00 00   MZ..............\n"
            "0010\t48 65 6c 6c 6f 20 57 6f  72 6c 64                  Hello World\n")

# WinDbg's physical-memory extensions (!db ... !dw reference): `#`, the physical address, one space, the d* body;
# the !dc lines as the reference's example prints them (`# e9000 000ea002 ... ................`).
PHYS_DB = ("kd> !db 1a3c000 L1b\n"
           "#  1a3c000 4d 5a 90 00 03 00 00 00-04 00 00 00 ff ff 00 00 MZ..............\n"
           "#  1a3c010 48 65 6c 6c 6f 20 57 6f-72 6c 64                Hello World\n")
PHYS_DC = ("kd> !dc [c] e9000 L8\n"
           "# e9000 000ea002 000ea002 000ea002 000ea002 ................\n"
           "# e9010 000ea002 000ea002 000ea002 000ea002 ................\n")


@pytest.mark.parametrize("text,data,fmt,variant,start", [
    (PS51, PDF, "format-hex", "Format-Hex (PowerShell 5.1)", 0),
    (PS7, MZ16 + b"Hello World", "format-hex", "Format-Hex (PowerShell 7)", 0),
    (CERTUTIL, MZ16 + b"Hello World", "certutil", "certutil -encodehex", 0),
    (PHYS_DB, MZ16 + b"Hello World", "windbg", "!db", 0x1A3C000),
    (PHYS_DC, bytes.fromhex("02a00e00") * 8, "windbg", "!dc", 0xE9000),
])
def test_windows_tools_documented_layouts(text, data, fmt, variant, start):
    assert detect_format(text) == fmt and fmt in FORMATS
    got = decode_text_dump(text)
    assert (got.data, got.format, got.variant, got.start_address) == (data, fmt, variant, start)
    assert decode_text_dump(text, fmt=fmt).data == data


def test_windbg_dyb_reads_where_its_binary_and_hex_columns_agree():
    """d* reference: `dyb` shows binary values and byte values; a header of bit numbers and dashes first."""
    text = ("0:000> dyb 77c5d000 L6\n"
            "          76543210 76543210 76543210 76543210\n"
            "          -------- -------- -------- --------\n"
            "77c5d000  01001101 01011010 10010000 00000000  4d 5a 90 00\n"
            "77c5d004  00000011 00000000                    03 00\n")
    got = decode_text_dump(text)
    assert (got.data, got.variant) == (b"MZ\x90\x00\x03\x00", "dyb")
    # dd words that happen to be made of 0s and 1s stay dd words
    assert decode_text_dump("77c5d000  00000001 00010000 00000000 00000000\n").data == \
        bytes.fromhex("01000000 00000100 00000000 00000000")


def test_certutil_addresses_grow_past_four_digits_and_are_not_dbgview_line_numbers():
    data = _random(0x10000 + 40, 9)
    lines = []
    for pos in range(0, len(data), 16):
        chunk = data[pos:pos + 16]
        left = " ".join(f"{b:02x}" for b in chunk[:8])
        right = " ".join(f"{b:02x}" for b in chunk[8:])
        hexpart = (left + ("  " + right if right else "")).ljust(48)
        lines.append(f"{pos:04x}\t{hexpart}   " + "".join(chr(b) if 32 <= b < 127 else "." for b in chunk))
    text = "\r\n".join(lines) + "\r\n"
    assert "10010\t" in text  # past 0xffff: five digits
    assert decode_text_dump(text).data == data


def test_format_hex_saved_by_out_file_as_utf16(tmp_path):
    """PowerShell 5.1's Out-File / `>` write UTF-16 LE with a byte-order mark."""
    path = tmp_path / "fh.txt"
    path.write_bytes(b"\xff\xfe" + PS51.replace("\n", "\r\n").encode("utf-16-le"))
    dump = open_dump(path)
    assert dump.read(0, dump.size) == PDF
    assert dump.source_format == "text (Format-Hex (PowerShell 5.1), UTF-16)"


def test_windbg_unreadable_memory_is_refused_or_filled_like_a_gap():
    text = ("0: kd> db 1000 L20\n"
            "00001000  41 42 43 44 ?? ?? ?? ??-?? ?? ?? ?? 4d 4e 4f 50  ABCD????????MNOP\n"
            "00001010  ?? ?? ?? ?? ?? ?? ?? ??-?? ?? ?? ?? ?? ?? ?? ??  ????????????????\n")
    with pytest.raises(InputError, match=r"x.txt: line 2: '\?\?': WinDbg could not read this memory .*gap_fill"):
        decode_text_dump(text, path="x.txt")
    assert decode_text_dump(text, gap_fill=0xCC).data == b"ABCD" + b"\xcc" * 8 + b"MNOP" + b"\xcc" * 16
    dd = "00001000  44434241 ???????? 504f4e4d ????????\n"
    assert decode_text_dump(dd, gap_fill=0).data == b"ABCD" + bytes(4) + b"MNOP" + bytes(4)


def _lines(tool: str, args: tuple, tmp_path: Path, data: bytes | None = None) -> list[str]:
    return _run(tool, args, data if data is not None else _random(200, 8), tmp_path).splitlines()


@pytest.mark.parametrize("case", ["corrupt", "mixed", "backwards", "odd digits", "cut", "corrupt last"])
@pytest.mark.parametrize("tool,args", [("xxd", ()), ("hexdump", ("-C",)), ("od", ("-A", "x", "-t", "x1")),
                                       ("od", ("-t", "x2")), ("hexdump", ())])
def test_bad_text_is_one_line_naming_file_and_line(case, tool, args, tmp_path, cli):
    lines = _lines(tool, args, tmp_path)
    other = _lines("xxd", ("-s", "0x40"), tmp_path) if tool != "xxd" else _lines("hexdump", ("-C", "-s", "0x40"), tmp_path)
    if case == "corrupt":
        lines[4] = lines[4][:12] + "zz" + lines[4][14:]
    elif case == "mixed":
        lines[4] = other[0]
    elif case == "backwards":
        lines[4], lines[5] = lines[5], lines[4]
    elif case == "odd digits":
        head, _, tail = lines[4].partition(" ")
        lines[4] = head + " " + tail.replace(" ", "", 1) if tool != "xxd" else lines[4][:12] + lines[4][13:]
    elif case == "cut":
        lines[4] = lines[4][:20]
    bad = 5
    if case == "corrupt last":  # the last data line: before od's / hexdump's closing size line, or xxd's last
        bad = len(lines) if tool == "xxd" else len(lines) - 1
        lines[bad - 1] = lines[bad - 1][:12] + "zz" + lines[bad - 1][14:]
    path = tmp_path / "bad.txt"
    path.write_text("\n".join(lines) + "\n")
    result = cli("crc", path, INPUT)
    assert_one_line_error(result, "bad.txt", f"line {bad}:")


def test_import_format_choices_list_every_format(cli, capsys):
    cli("import", "--help")
    text = capsys.readouterr().out
    assert all(name in " ".join(text.split()) for name in ("format-hex", "certutil", "c-array"))
