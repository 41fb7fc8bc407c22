"""Register traces as Windows tools save them: DbgView columns, tracefmt's WPP prefix, a user's line pattern,
and widths from the register table (a 64-bit register printed as %08X is no width mismatch)."""

from __future__ import annotations

import json

from forensics.csr.compare import compare_traces
from forensics.csr.parse import parse_text
from forensics.csr.registers import beagle_table

from tests.conftest import assert_one_line_error

LINES = [
    "[INIT][RunCtrl] scratchpad @0x42008 write=0x0000000000000001",
    "[CSR@init] tileid @0x42000 = 0x0000000000000003",
    "[CSR@init] off=0x44000 val=0x0000000000000007",
    "W64 0x48788 0x7f",
    "Write: offset = 0x0000000000044018, value = 0x0000000000000001",
]


def _plain() -> list:
    return [a[:4] + a[5:] for a in parse_text("\n".join(LINES) + "\n").accesses]


def test_dbgview_columns_before_every_line_kind():
    dbgview = "".join(f"{i:08d}\t{i * 0.0012345:.8f}\t[4] {line}\n" for i, line in enumerate(LINES, start=12))
    trace = parse_text(dbgview)
    assert [a[:4] + a[5:] for a in trace.accesses] == _plain()
    assert trace.ignored == 0
    no_pid = "".join(f"{i:08d}\t{i * 0.5:.8f}\t{line}\n" for i, line in enumerate(LINES))
    assert [a[:4] + a[5:] for a in parse_text(no_pid).accesses] == _plain()


def test_tracefmt_wpp_prefix():
    wpp = "".join(f"[0]0A2C.0B18::11/30/2026-09:24:{i:02d}.123 [EdgeTpu]{line}\n" for i, line in enumerate(LINES))
    assert [a[:4] + a[5:] for a in parse_text(wpp).accesses] == _plain()
    snapshot = "[1]0004.00B4::07/23/2026-11:05:33.123 [EdgeTpu]0x48788 = 0x7f\n"
    assert parse_text(snapshot).snapshot == {0x48788: 0x7F}


def test_line_pattern(tmp_path, cli):
    text = "t=1 WR reg 0x48788 <- 0x7f\nt=2 RD reg 0x44018 -> 0x1\nnoise\n"
    trace = parse_text(text, line_pattern=r"(?P<op>WR|RD) reg (?P<offset>0x[0-9a-f]+) \S+ (?P<value>0x[0-9a-f]+)")
    assert [(a.op, a.offset, a.value) for a in trace.accesses] == [("W", 0x48788, 0x7F), ("R", 0x44018, 1)]
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(text)
    b.write_text(text.replace("0x7f", "0x7e"))
    result = cli("csr", a, b, "--json", "--reads", "--line-pattern",
                 r"(?P<op>WR|RD) reg (?P<offset>0x[0-9a-f]+) \S+ (?P<value>0x[0-9a-f]+)")
    assert result.code == 1, result.err
    assert json.loads(result.out)["counts"]["value"] == 1
    assert_one_line_error(cli("csr", a, b, "--line-pattern", r"(?P<offset>\w+)"), "named groups offset and value")
    assert_one_line_error(cli("csr", a, b, "--line-pattern", r"zzz(?P<offset>\w+) (?P<value>\w+)"),
                          "a.log", "matches --line-pattern")


def test_width_from_the_register_table():
    table = beagle_table()
    assert table.lookup(0x42008).width == 64
    a = parse_text("Write: offset = 0x0000000000042008, value = 0x0000000000000001\n")
    b = parse_text("[CSR@drv] W scratchpad @0x42008 = 0x00000001\n")    # a 64-bit register printed as %08X
    assert compare_traces(a, b, table=table).counts["width"] == 0
    assert compare_traces(a, b, table=table).passed
    # an explicit 32-bit access to the 64-bit register is still a width mismatch
    c = parse_text("[CSR@drv] W32 scratchpad @0x42008 = 0x00000001\n")
    assert compare_traces(a, c, table=table).counts["width"] == 1
