"""verify and import on the real driver's own lines (npu_driver Queue.c / Device.c, its two consoles), printed by
dumps/driver_printf.py from the driver's format strings and arithmetic over plain bytes (never forensics' writers):
a number is a fingerprint only on its buffer's line, one file is checked against its own buffer, bytes the driver
reads past a buffer's end are said and not judged, its scan counts are redone with coverage's arithmetic, its hex
rows import, and every text is read the same way in any code page or UTF-16."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from forensics.buffer.fingerprint import check_log
from tests.conftest import assert_one_line_error
from tests.driverlog import drv

INPUT = "dumps/ours/input.bin"
RNG = np.random.default_rng(31)


def scores(size: int = 8192, written: int = 6000) -> bytes:
    """An output buffer as the chip leaves it: data, then the driver's 0xCC prefill where the DMA stopped."""
    data = RNG.integers(0, 256, written, dtype=np.uint8)
    data[data == 0xCC] = 0x11
    data[::7] = 0
    return data.tobytes() + b"\xcc" * (size - written)


def write(tmp_path, name: str, lines, encoding: str = "ascii") -> str:
    path = tmp_path / name
    path.write_bytes(drv.saved(drv.dbgview(list(lines)), encoding))
    return str(path)


def blob(tmp_path, name: str, data: bytes) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def run(cli, *argv):
    text = cli("verify", *argv, width=200)
    doc = json.loads(cli("verify", *argv, "--json").out) if text.code != 2 else None
    return text, doc


# --- a size is a fingerprint only on its buffer's line; one file, its own buffer ------------------------------

def test_sizes_of_other_buffers_are_not_fingerprints_of_the_input(tmp_path, cli):
    """The issue's log: `Registering input: ... size=75 pages`, [BS-DUMP] size=16384, the output's prefill size:
    a byte-identical input gets MATCH, and the other buffers are listed as not checked."""
    data = open(INPUT, "rb").read()
    bitstream = bytes(range(256)) * 64
    log = write(tmp_path, "drv.log", [drv.registering_input(2176, len(data)), *drv.bs_dump(bitstream, 0x600000),
                                      *drv.input_chk(data), drv.prefill(16384)])
    text, doc = run(cli, log, INPUT)
    assert text.code == 0, text.out
    assert {c["tag"] for c in doc["checks"]} == {"input"}
    assert not any(c["kind"] == "size" and c["expected"] in ("75", "16,384") for c in doc["checks"])
    assert set(doc["unassigned_tags"]) == {"bitstream", "output"}
    assert "not checked (no file for these buffers): bitstream, output" in " ".join(text.out.split())
    broken = cli("verify", log, "dumps/broken/input.bin", "--json")
    assert broken.code == 1 and json.loads(broken.out)["verdict"] == "DIFFER"


def test_one_file_is_checked_against_its_own_buffer_only(tmp_path, cli):
    data = open(INPUT, "rb").read()
    out = scores()
    log = write(tmp_path, "drv.log", [*drv.input_chk(data), drv.prefill(len(out)),
                                      *drv.dpc_out(out, 0x8000000000000000)])
    text, doc = run(cli, log, INPUT)                   # its name says input
    assert text.code == 0 and {c["tag"] for c in doc["checks"]} == {"input"} and doc["unassigned_tags"] == ["output"]
    named = blob(tmp_path, "dma_0.bin", out)           # no name: the only buffer whose logged size it has
    text, doc = run(cli, log, named)
    assert text.code == 0 and {c["tag"] for c in doc["checks"]} == {"output"}
    stranger = blob(tmp_path, "other.bin", b"\x01" * 100)
    assert_one_line_error(cli("verify", log, stranger), "other.bin", "input (307,200 bytes)", "output (8,192 bytes)",
                          "--buffer TAG=")
    both = cli("verify", log, INPUT, "--buffer", f"DPC-OUT={named}", "--json")  # a tag that prints the buffer
    assert both.code == 0 and {c["tag"] for c in json.loads(both.out)["checks"]} == {"input", "output"}


# --- INPUT-CHK reads past a short buffer's end -------------------------------------------------------------

@pytest.mark.parametrize("size", [1, 5, 7, 4097, 4100, 4103, 2 * 4096 + 3])
def test_the_log_reading_past_the_end_of_the_file_is_said_not_judged(tmp_path, cli, size):
    data = RNG.integers(0, 256, size, dtype=np.uint8).tobytes()
    beyond = b"\xa5" * 16  # what lies past the buffer in its last page
    path = blob(tmp_path, "input.bin", data)
    log = write(tmp_path, "drv.log", drv.input_chk(data, beyond))
    text, doc = run(cli, log, path)
    past = 8 - (size % 4096 if size >= 8 else size)
    assert text.code == 0, text.out
    assert doc["verdict"] == "MATCH" and doc["past_end"][0]["bytes"] == past
    assert f"the log reads {past} byte{'s' if past != 1 else ''} past the end of the file" in " ".join(text.out.split())
    other = bytearray(data)
    other[-1] ^= 0xFF  # a byte the file holds differs: that is judged
    changed = cli("verify", log, blob(tmp_path, "changed", bytes(other)), "--buffer", "input=" + str(tmp_path / "changed"),
                  "--json")
    assert changed.code == 1 and json.loads(changed.out)["verdict"] == "DIFFER"


# --- the driver's own scans, redone with coverage's arithmetic ------------------------------------------------

def test_dpc_out_counts_rows_and_tail_against_the_dump(tmp_path, cli):
    out = scores()
    log = write(tmp_path, "drv.log", drv.dpc_out(out, 0x8000000000000000))
    text, doc = run(cli, log, blob(tmp_path, "output.bin", out))
    assert text.code == 0, text.out
    kinds = {c["kind"] for c in doc["checks"]}
    assert kinds == {"size", "nonzero", "non_sentinel", "first_non_sentinel", "bytes"}
    by_what = {c["what"]: c for c in doc["checks"]}
    assert by_what["non-0xCC"]["expected"] == "6,000" and by_what["first non-0xCC"]["expected"] == "0x0"
    assert by_what["tail64@0x1fc0"]["offset"] == 0x1FC0
    # `forensics coverage --sentinel cc --min-run 1` counts the same bytes
    cov = json.loads(cli("coverage", tmp_path / "output.bin", "--sentinel", "cc", "--min-run", "1", "--json").out)
    assert len(out) - cov["untouched_bytes"] == 6000
    # the chip wrote one byte more than the log says: the count catches it, not the rows
    more = bytearray(out)
    more[7000] = 0x42
    text, doc = run(cli, log, blob(tmp_path, "output.bin", bytes(more)))
    assert text.code == 1
    assert {c["what"] for c in doc["checks"] if not c["match"]} == {"non-0xCC"}
    more[7001] = 0  # and a zero where the prefill was: both counts
    text, doc = run(cli, log, blob(tmp_path, "output.bin", bytes(more)))
    assert {c["what"] for c in doc["checks"] if not c["match"]} == {"nonzero", "non-0xCC"}
    never = b"\xcc" * 100  # nothing written: firstNon0xCC@0xffffffff, no firstNon0xCC row
    log = write(tmp_path, "never.log", drv.dpc_out(never, 0x1000))
    text, doc = run(cli, log, blob(tmp_path, "output.bin", never))
    assert text.code == 0 and {c["what"]: c["expected"] for c in doc["checks"]}["first non-0xCC"] == "none"


def test_a_short_output_buffer_s_rows_past_its_end(tmp_path, cli):
    out = bytes([1, 2, 3, 0xCC, 5])  # [DPC-OUT] [00] prints 16 bytes of a 5-byte buffer
    log = write(tmp_path, "drv.log", drv.dpc_out(out, 0x1000, beyond=bytes(range(0xE0, 0xF0))))
    text, doc = run(cli, log, blob(tmp_path, "output.bin", out))
    assert text.code == 0 and doc["past_end"][0]["bytes"] == 11


def test_scan_lines_input_verify_and_the_rings(tmp_path, cli):
    data = open(INPUT, "rb").read()
    bitstream = bytes((i * 13) & 0xFF for i in range(12288))
    ring = bytearray(bytes(32) + b"\xa5" * 4064)
    ring[0x300:0x304] = b"\x01\x02\x03\x04"  # a stray write into the descriptor ring
    lines = [drv.dpc_scan("InputImage", data), drv.dpc_scan("INFERBitstream", bitstream),
             *drv.dpc_scan_ring("DescRing", bytes(ring), 32), *drv.input_verify(data, drv.xor_fold(data))]
    log = write(tmp_path, "drv.log", lines)
    r = cli("verify", log, INPUT, "--buffer", "bitstream=" + blob(tmp_path, "bs.bin", bitstream),
            "--buffer", "desc_ring=" + blob(tmp_path, "ring.bin", bytes(ring)), "--json")
    doc = json.loads(r.out)
    assert r.code == 0, doc
    assert {c["tag"] for c in doc["checks"]} == {"input", "bitstream", "desc_ring"}
    ring_checks = {c["what"]: c["expected"] for c in doc["checks"] if c["tag"] == "desc_ring"}
    assert ring_checks == {"non-0xA5 in [0x20, 0x1000)": "4", "first non-0xA5 in [0x20, 0x1000)": "0x300",
                           "@0x300": "01 02 03 04 a5 a5 a5 a5 a5 a5 a5 a5 a5 a5 a5 a5"}
    assert [c["what"] for c in doc["checks"] if c["kind"] == "xor64"] == ["xor64 post-DONE", "xor64 pre-submit"]
    clean = bytes(32) + b"\xa5" * 4064
    r = cli("verify", log, "--buffer", "desc_ring=" + blob(tmp_path, "clean.bin", clean), "--json")
    assert r.code == 1 and {c["what"] for c in json.loads(r.out)["checks"] if not c["match"]} == {
        "non-0xA5 in [0x20, 0x1000)", "first non-0xA5 in [0x20, 0x1000)", "@0x300"}


def test_the_consoles_output_dumps(tmp_path, cli):
    out = scores(100, 90)
    path = blob(tmp_path, "output.bin", out)
    console = tmp_path / "console.txt"
    console.write_text("\n".join(["INFER succeeded!", *drv.console_output(out)]))
    text, doc = run(cli, console, path)
    assert text.code == 0
    assert [c["kind"] for c in doc["checks"]] == ["size", "nonzero"] + ["bytes"] * 4
    golden = bytes(16)
    add = tmp_path / "add_model.txt"
    add.write_text("\n".join(["[main] INFER OK", *drv.add_model_console(out, golden)]))
    text, doc = run(cli, add, path)
    assert text.code == 0 and {c["what"] for c in doc["checks"]} >= {"size", "non-zero", "golden compare actual"}
    other = bytearray(out)
    other[3] ^= 1
    assert cli("verify", add, blob(tmp_path, "output.bin", bytes(other))).code == 1


# --- every text read the same way -------------------------------------------------------------------------

def real_run(out: bytes) -> list[str]:
    data = open(INPUT, "rb").read()
    return [*drv.CHATTER[:3], drv.registering_input(1585, len(data)), *drv.input_chk(data), drv.prefill(len(out)),
            *drv.dump_known_csrs("pre-submit", {}), *drv.CHATTER[3:5], *drv.dpc_out(out, 0x8000000000000000),
            drv.dpc_scan("InputImage", data), *drv.input_verify(data, drv.xor_fold(data)), drv.CHATTER[5]]


@pytest.mark.parametrize("encoding", ["cp949", "cp1252", "cp932", "utf-16", "utf-8"])
def test_verify_and_import_read_a_capture_in_any_code_page(tmp_path, cli, encoding):
    out = scores()
    log = write(tmp_path, "drv.log", real_run(out), encoding)
    ascii_log = write(tmp_path, "plain.log", [line.encode("ascii", "replace").decode() for line in real_run(out)])
    path = blob(tmp_path, "output.bin", out)
    got = json.loads(cli("verify", log, INPUT, path, "--json").out)
    expected = json.loads(cli("verify", ascii_log, INPUT, path, "--json").out)
    assert got["verdict"] == "MATCH" == expected["verdict"]
    assert [(c["line"], c["what"], c["match"]) for c in got["checks"]] == \
        [(c["line"], c["what"], c["match"]) for c in expected["checks"]]
    assert got["non_ascii_lines"] > 0
    r = cli("import", log, "-o", tmp_path / "rows.bin", "--gap-fill", "0xcc", "--json")
    assert r.code == 0, r.err
    assert (tmp_path / "rows.bin").read_bytes() == out[:0x1fd0][:64] + b"\xcc" * (0x1fc0 - 64) + out[0x1fc0:0x1fd0]
    assert json.loads(r.out)["non_ascii_lines"] > 0


def test_a_cp932_trail_byte_is_never_read_as_ascii():
    """cp932's dash (U+2015, where Windows puts the em dash) is 81 5c: its second byte is a backslash in ASCII; it
    goes with its lead byte."""
    from forensics.io.textdump import as_ascii

    line = "[DPC] x \u2015 y\r\n".encode("cp932")
    assert b"\x81\x5c" in line
    text, marked = as_ascii(line)
    assert "\\" not in text and marked == 1 and text.startswith("[DPC] x ") and text.endswith(" y\r\n")


# --- import: the driver's own hex rows --------------------------------------------------------------------

def test_import_rows_of_one_buffer_picks_the_buffer_and_fills_holes_only_when_asked(tmp_path, cli, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the printed command writes where it is run
    out = scores()
    bitstream = bytes(range(64)) * 4
    log = write(tmp_path, "drv.log", [*drv.bs_dump(bitstream, 0x600000), *drv.dpc_out(out, 0x8000000000000000)])
    both = cli("import", log, "-o", tmp_path / "o.bin")
    assert_one_line_error(both, "2 buffers", "bitstream ([BS-DUMP]", "output ([DPC-OUT/USER], [DPC-OUT]")
    hint = both.err.split("import one: ", 1)[1].strip().split()
    assert hint[:2] == ["forensics", "import"]
    followed = cli(*hint[1:])  # the command it prints, as printed
    assert followed.code == 0 and (tmp_path / "bitstream.bin").read_bytes() == bitstream[:64]
    assert cli("import", log, "-o", tmp_path / "bs.bin", "--tag", "BS-DUMP").code == 0
    assert (tmp_path / "bs.bin").read_bytes() == bitstream[:64]
    gap = cli("import", log, "-o", tmp_path / "out.bin", "--tag", "output")
    assert_one_line_error(gap, "gap of", "--gap-fill")
    r = cli("import", log, "-o", tmp_path / "out.bin", "--tag", "output", "--gap-fill", "0xcc", "--json")
    assert r.code == 0 and json.loads(r.out)["format"] == "driver"
    assert (tmp_path / "out.bin").read_bytes() == out[:64] + b"\xcc" * (0x1fc0 - 64) + out[0x1fc0:0x1fd0]
    assert_one_line_error(cli("import", log, "-o", tmp_path / "x.bin", "--tag", "input"), "no hex rows of buffer",
                          "bitstream")


def test_rows_that_disagree_are_two_dumps(tmp_path, cli):
    a, b = scores(128, 100), scores(128, 100)
    log = write(tmp_path, "drv.log", [*drv.dpc_out(a, 0x1000), *drv.dpc_out(b, 0x1000)])
    assert_one_line_error(cli("import", log, "-o", tmp_path / "o.bin"), "two different dumps of output")
    twice = write(tmp_path, "twice.log", [*drv.dpc_out(a, 0x1000), *drv.dpc_out(a, 0x1000)])
    assert cli("import", twice, "-o", tmp_path / "o.bin").code == 0
    assert (tmp_path / "o.bin").read_bytes() == a[:80]  # [00]..[30] and tail64@0x40


def test_rows_past_the_buffer_s_size_are_cut(tmp_path, cli):
    out = bytes([1, 2, 3, 4, 5])
    log = write(tmp_path, "drv.log", drv.dpc_out(out, 0x1000, beyond=b"\xee" * 16))
    r = cli("import", log, "-o", tmp_path / "o.bin", "--json")
    assert r.code == 0 and (tmp_path / "o.bin").read_bytes() == out
    assert "cut at its size 5" in json.loads(r.out)["variant"]


def test_the_consoles_rows_import_and_crc_diff_read_them_as_bytes(tmp_path, cli):
    out = scores(100, 90)
    console = tmp_path / "console.txt"
    console.write_text("\n".join(["success to get device handle!", "INFER succeeded!", *drv.console_output(out)]))
    r = cli("crc", console, "--json")
    assert r.code == 0 and json.loads(r.out)["files"][0]["crc32"] == f"0x{zlib.crc32(out[:64]):08x}"
    assert "looks like text" not in r.err
    head = blob(tmp_path, "head.bin", out[:64])
    assert cli("diff", console, head).code == 0
    add = tmp_path / "add.txt"
    add.write_text("\n".join(drv.add_model_console(out[:20], bytes(16))))
    assert cli("import", add, "-o", tmp_path / "a.bin").code == 0
    assert (tmp_path / "a.bin").read_bytes() == out[:20]


def test_a_driver_log_whose_rows_come_after_64_kib_is_still_a_dump(tmp_path, cli):
    out = scores(64, 60)
    chatter = [f"[NpuEvtIoDeviceControl] poll {i}" for i in range(3000)]
    log = write(tmp_path, "drv.log", [*chatter, *drv.dpc_out(out, 0x1000)])
    r = cli("crc", log, "--json")
    assert r.code == 0 and json.loads(r.out)["files"][0]["crc32"] == f"0x{zlib.crc32(out):08x}"


def test_import_tag_bad_input(tmp_path, cli):
    text = tmp_path / "db.txt"
    text.write_text("00001000  41 42 43 44 45 46 47 48-49 4a 4b 4c 4d 4e 4f 50  ABCDEFGHIJKLMNOP\n")
    assert_one_line_error(cli("import", text, "-o", tmp_path / "o.bin", "--tag", "output"), "--tag",
                          "WinDbg")
    log = write(tmp_path, "chatter.log", drv.CHATTER)
    assert_one_line_error(cli("import", log, "-o", tmp_path / "o.bin"), "not a text hex dump")


# --- the one library call ---------------------------------------------------------------------------------

def test_check_log_takes_bytes_or_paths_by_tag_or_stage_name(tmp_path):
    data = open(INPUT, "rb").read()
    out = scores()
    log = drv.saved(drv.dbgview(real_run(out)), "cp949")
    checks = check_log(log, {"input": data, "DPC-OUT": blob(tmp_path, "o.bin", out), "Squeeze1": b"x"})
    assert all(c.match for c in checks.checks) and {c.tag for c in checks.checks} == {"input", "output"}
    assert checks.unused == ("Squeeze1",) and checks.unmatched == ()
    first = checks.checks[0]
    assert first.line == 5 and "[INPUT-CHK] page[0] first8=" in first.text
    partial = check_log(log, {"output": out[:-1] + b"\x00"})
    assert {c.tag for c in partial.checks} == {"output"} and partial.unmatched == ("input",)
    assert {c.label for c in partial.checks if not c.match} == {"nonzero", "non-0xCC"}


# --- the bundled evidence ---------------------------------------------------------------------------------

def test_the_bundled_real_driver_run(cli):
    ours = cli("verify", "dumps/evidence/npu_driver.log", INPUT, "dumps/evidence/broken_scores_alloc.bin", "--json")
    doc = json.loads(ours.out)
    assert ours.code == 0 and doc["unassigned_tags"] == ["bitstream", "desc_ring", "status_block"]
    other = cli("verify", "dumps/evidence/npu_driver.log", "--buffer", "output=dumps/evidence/convert_scores_alloc.bin",
                "--json")
    assert other.code == 1
    assert {c["what"] for c in json.loads(other.out)["checks"] if not c["match"]} == {"nonzero", "non-0xCC",
                                                                                     "tail64@0x1fc0"}
    short = cli("verify", "dumps/evidence/short_input.log", "dumps/evidence/short_input.bin")
    assert short.code == 0 and "the log reads 4 bytes past the end of the file" in " ".join(short.out.split())
    console = cli("verify", "dumps/evidence/npu_console.txt", "dumps/evidence/broken_scores_alloc.bin")
    assert console.code == 0


@pytest.mark.parametrize("argv, code", [
    (["dumps/evidence/npu_driver.log", INPUT, "dumps/evidence/broken_scores_alloc.bin"], 0),
    (["dumps/evidence/npu_driver.log", "--buffer", "output=dumps/evidence/convert_scores_alloc.bin"], 1),
    (["dumps/evidence/short_input.log", "dumps/evidence/short_input.bin"], 0),
])
def test_one_verdict_line_equal_to_the_json(cli, argv, code):
    text = cli("verify", *argv, width=300)
    doc = json.loads(cli("verify", *argv, "--json").out)
    lines = [line for line in text.out.splitlines() if line.split(" | ")[0] in ("MATCH", "DIFFER", "TRUNCATED")]
    assert text.code == doc["exit_code"] == code
    assert lines == [f"{doc['verdict']} | {doc['message']}"]
    assert ("reads_past_end" in {r["code"] for r in doc["reasons"]}) == ("short_input" in argv[0])


def test_a_long_log_s_table_shows_what_does_not_match(tmp_path, cli):
    """Past 1,000 checks the table holds the values that do not match (a rich table of 120,000 rows took
    minutes); --json has every check."""
    data = bytes(range(256)) * 4
    xor = drv.xor_fold(data)
    line = (f"[FP] buf size={len(data)} crc32=0x{zlib.crc32(data):08x} xor64=0x{xor:016x} "
            f"head@0x0={data[:16].hex(' ')} mid@0x1f8={data[0x1f8:0x208].hex(' ')} tail@0x3f0={data[0x3f0:].hex(' ')}")
    lines = [line] * 200
    lines[150] = line.replace(f"crc32=0x{zlib.crc32(data):08x}", "crc32=0x00000000")
    log = write(tmp_path, "fp.log", lines)
    path = blob(tmp_path, "buf.bin", data)
    text = cli("verify", log, path, width=200)
    rows = [row for row in text.out.splitlines() if row.strip().startswith("151 ")]
    assert text.code == 1 and len(rows) == 1 and "DIFFER" in rows[0]
    assert "1,199 of 1,200 checks not shown: all that do not match are (--json lists every check)" in text.out
    assert len(json.loads(cli("verify", log, path, "--json").out)["checks"]) == 1200
    ok = cli("verify", write(tmp_path, "ok.log", [line] * 200), path, width=200)
    assert ok.code == 0 and "1,200 of 1,200 checks not shown: they all match" in ok.out
