"""Trace and snapshot parsing: every format, value widths, `value: =` reads, polls, and bad files."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from forensics.csr.parse import collapse_polls, parse_text, read_trace
from forensics.csr.registers import beagle_table
from forensics.core.errors import FormatError, InputError
from tests.conftest import assert_one_line_error
from tests.csr.traces import libedgetpu_open_trace, vlog_line


def one(line: str):
    trace = parse_text(line + "\n")
    assert len(trace.accesses) == 1, trace
    return trace.accesses[0], trace


def test_libedgetpu_plain_prefix_write_64():
    acc, trace = one("I driver/kernel/kernel_registers.cc:190] Write: offset = 0x0000000000048788, "
                     "value = 0x000000000000007f")
    assert (acc.op, acc.offset, acc.value, acc.width) == ("W", 0x48788, 0x7F, 64)
    assert trace.formats == {"libedgetpu": 1}


def test_libedgetpu_glog_prefix_read_spelling_and_32_bit_width():
    acc, _ = one("I0413 08:35:26.202084  4793 kernel_registers.cc:256] Read: offset = 0x000000000001a30c, "
                 "value: = 0x00000001")
    assert (acc.op, acc.offset, acc.value, acc.width) == ("R", 0x1A30C, 1, 32)
    acc, _ = one("I0413 08:35:26.202084  4793 kernel_registers.cc:235] Write: offset = 0x000000000001a30c, "
                 "value = 0x0000000f")
    assert (acc.op, acc.width) == ("W", 32)


# A [CSR@tag] line without an R/W word is a value read (the real driver's register dump: issue 31 item 2; these
# lines were read as writes before), kept with its tag; an R/W word says the access.
@pytest.mark.parametrize("line, expected", [
    ("[CSR@open] tileconfig0 @0x48788 = 0x0000007f", ("R", 0x48788, 0x7F, 32, "csr-name", "tileconfig0")),
    ("[CSR@open] W tileconfig0 @0x48788 = 0x0000007f", ("W", 0x48788, 0x7F, 32, "csr-name", "tileconfig0")),
    ("[CSR@open] W tileconfig0 @0x48788 = 0x000000000000007f", ("W", 0x48788, 0x7F, 64, "csr-name", "tileconfig0")),
    ("[CSR@q] R instruction_queue_status @0x48570 = 0x1", ("R", 0x48570, 1, None, "csr-name", "instruction_queue_status")),
    ("[CSR@tag] off=0x48788 val=0x000000000000007f", ("R", 0x48788, 0x7F, 64, "csr-offval", None)),
    ("[CSR@tag] WRITE off=0x48788 val=0x000000000000007f", ("W", 0x48788, 0x7F, 64, "csr-offval", None)),
    ("12.5 [CSR@x] R off=0x48570 val=0x00000001", ("R", 0x48570, 1, 32, "csr-offval", None)),
    ("[INIT][RunCtrl] name @0x44018 write=0x1", ("W", 0x44018, 1, None, "init-tag", "name")),
    ("[INIT][Hib] hib_error_status @0x486f0 read=0x0000000000000000", ("R", 0x486F0, 0, 64, "init-tag", "hib_error_status")),
    ("W 0x48788 0x7f", ("W", 0x48788, 0x7F, None, "plain", None)),
    ("R32 0x1a30c = 0x1", ("R", 0x1A30C, 1, 32, "plain", None)),
    ("W64 0x48788 = 0x7f", ("W", 0x48788, 0x7F, 64, "plain", None)),
    ("w 296840 127", ("W", 0x48788, 127, None, "plain", None)),
])
def test_driver_and_plain_formats(line, expected):
    acc, trace = one(line)
    assert (acc.op, acc.offset, acc.value, acc.width, acc.format, acc.label) == expected
    assert trace.formats == {expected[4]: 1}


def test_other_lines_are_ignored_and_formats_reported():
    text = ("boot banner\nI driver/foo.cc:1] Opening device\n"
            + vlog_line("W", 0x48788, 0x7F, 64, glog=False, n=0) + "\n"
            + "W 0x44018 0x1\nrandom: 5 = 6\n")
    trace = parse_text(text)
    assert [a.offset for a in trace.accesses] == [0x48788, 0x44018]
    assert trace.formats == {"libedgetpu": 1, "plain": 1}
    assert trace.ignored == 3


def test_consecutive_reads_collapse_into_a_poll_with_final_value_and_count():
    trace = parse_text(libedgetpu_open_trace())
    polls = [a for a in trace.accesses if a.op == "POLL"]
    assert [(p.offset, p.count, p.value) for p in polls] == [(0x48570, 3, 1), (0x48788, 2, 0x7F)]
    assert trace.raw_accesses == len(trace.accesses) + 3
    first_read_line = next(i for i, line in enumerate(libedgetpu_open_trace().splitlines(), 1)
                           if "0x0000000000048570" in line)
    assert polls[0].line == first_read_line


def test_reads_of_different_offsets_or_widths_or_split_by_a_write_do_not_collapse():
    text = "R 0x48570 0x0\nR 0x48578 0x0\nR 0x48578 0x10\nW 0x48568 0x5\nR 0x48578 0x10\nR32 0x48578 0x10\n"
    ops = [(a.op, a.offset, a.count) for a in parse_text(text).accesses]
    assert ops == [("R", 0x48570, 1), ("POLL", 0x48578, 2), ("W", 0x48568, 1), ("R", 0x48578, 1),
                   ("R", 0x48578, 1)]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("WR"), st.sampled_from([0x48788, 0x44018, 0x1A30C, 0x486C4]),
                          st.integers(0, 2**64 - 1), st.sampled_from([32, 64]),
                          st.sampled_from(["vlog", "glog", "name", "offval", "plain"])),
                min_size=1, max_size=30))
def test_any_mix_of_formats_round_trips(items):
    lines = []
    for n, (op, offset, value, width, fmt) in enumerate(items):
        value &= (1 << width) - 1
        digits = f"{value:08x}" if width == 32 else f"{value:016x}"
        if fmt in ("vlog", "glog"):
            lines.append(vlog_line(op, offset, value, width, glog=fmt == "glog", n=n))
        elif fmt == "name":
            lines.append(f"[CSR@t] {op} reg @0x{offset:x} = 0x{digits}")
        elif fmt == "offval":
            lines.append(f"[CSR@t] {op} off=0x{offset:x} val=0x{digits}")
        else:
            lines.append(f"{op}{width} 0x{offset:x} = 0x{value:x}")
        lines.append("unrelated log line 0x12")
    trace = parse_text("\n".join(lines))
    expected = []
    for op, offset, value, width, _ in items:
        expected.append((op, offset, value & ((1 << width) - 1), width))
    # Oracle for polls: consecutive reads of one offset and width merge, keeping the last value.
    merged = []
    for e in expected:
        if e[0] == "R" and merged and merged[-1][0] in ("R", "POLL") and merged[-1][1:2] == e[1:2] \
                and merged[-1][3] == e[3]:
            merged[-1] = ("POLL", e[1], e[2], e[3])
        else:
            merged.append(e)
    assert [(a.op, a.offset, a.value, a.width) for a in trace.accesses] == merged


def test_snapshot_lines_csv_and_json():
    table = beagle_table()
    snap = parse_text("0x48788 = 0x7f\ntileconfig1: 0x3\n0x44018,1\n", table=table)
    assert snap.kind == "snapshot" and snap.snapshot == {0x48788: 0x7F, 0x48790: 3, 0x44018: 1}
    csv_snap = parse_text("name,offset,value\ntileconfig0,0x48788,0x7f\nx,0x44018,1\n", table=table)
    assert csv_snap.snapshot == {0x48788: 0x7F, 0x44018: 1}
    js = parse_text(json.dumps({"0x48788": "0x7f", "scalarCoreRunControl": 1}), table=table)
    assert js.snapshot == {0x48788: 0x7F, 0x44018: 1} and js.formats == {"snapshot-json": 2}


@pytest.mark.parametrize("text, exc, fragment", [
    ("   \n\n", InputError, "empty"),
    ("hello\nworld\n", InputError, "no register accesses"),
    ("W 0x48788 0x1ffffffffffffffff\n", FormatError, "64 bits"),
    ('{"0x48788": ', InputError, "malformed JSON"),
    ('{"0x48788": [1]}', FormatError, "not an integer"),
    ('{"nonsense_name": 1}', FormatError, "neither an offset"),
    ('[1, 2]', InputError, "no register accesses"),
    ("offset,value\n0x48788\n", FormatError, "columns"),
    ("fatal_err_int_control = 1\n", FormatError, "ambiguous"),
])
def test_corrupt_inputs_raise_one_family_error(text, exc, fragment):
    with pytest.raises(exc) as info:
        parse_text(text, "t.log", table=beagle_table())
    assert fragment in str(info.value)


def test_binary_and_utf16_files(tmp_path):
    garbage = tmp_path / "garbage.bin"
    garbage.write_bytes(bytes(range(256)) * 4)
    with pytest.raises(InputError, match="binary"):
        read_trace(garbage)
    utf16 = tmp_path / "win.log"
    utf16.write_text("W 0x48788 0x7f\r\n", encoding="utf-16")
    assert read_trace(utf16).accesses[0].offset == 0x48788


def _file(name: str, data: bytes):
    def make(directory):
        path = directory / name
        path.write_bytes(data)
        return path
    return make


@pytest.mark.parametrize("make, fragment", [
    (lambda p: p / "missing.log", "no such file"),
    (lambda p: p, "directory"),
    (_file("empty.log", b""), "empty"),
    (_file("junk.log", b"\x00\x01\x02junk" * 100), "binary"),
    (_file("text.log", b"just a log\nnothing here\n"), "no register accesses"),
    (_file("big.log", b"W 0x48788 0x" + b"f" * 17 + b"\n"), "line 1"),
])
def test_cli_bad_files_one_line_exit_2(csr_cli, tmp_path, open_traces, make, fragment):
    bad = make(tmp_path)
    assert_one_line_error(csr_cli("csr", open_traces[0], bad), fragment)
    assert_one_line_error(csr_cli("csr", bad, open_traces[0], "--json"), fragment)


def test_collapse_polls_is_idempotent():
    accesses = parse_text(libedgetpu_open_trace()).accesses
    assert collapse_polls(accesses) == list(accesses)
