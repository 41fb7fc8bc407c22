"""The real driver's register dump (npu_driver Device.c, npudriverDumpKnownCsrs: `[CSR@%s] %-32s @0x%05x = 0x%08x`,
one apex_read_register_32 per line) is read as values the driver READ: one snapshot per tag, compared by offset
with what libedgetpu last read or wrote there, never as writes. Lines printed by dumps/driver_printf.py from the
driver's own format string; the reference traces by tests/csr/traces.py from libedgetpu's."""

from __future__ import annotations

import json

import pytest

from forensics.csr.compare import compare_traces
from forensics.csr.parse import parse_text, read_trace
from tests.conftest import assert_one_line_error
from tests.csr.traces import libedgetpu_open_trace, vlog_line
from tests.driverlog import drv

# what libedgetpu's open sequence leaves in the registers the dump also reads (tests/csr/traces.py)
SETTLED = {"INSTR_QUEUE_STATUS": 0x1, "INSTR_QUEUE_CONTROL": 0x5, "USER_HIB_ERROR_STATUS": 0x0}
COMMON = {0x48570: "INSTR_QUEUE_STATUS", 0x48568: "INSTR_QUEUE_CONTROL", 0x486F0: "USER_HIB_ERROR_STATUS"}


def driver_log(pre: dict, post: dict, encoding: str = "ascii") -> bytes:
    lines = [*drv.CHATTER[:3], *drv.dump_known_csrs("pre-submit", pre), *drv.CHATTER[3:],
             *drv.dump_known_csrs("post-DONE", post)]
    return drv.saved(drv.dbgview(lines, start=100), encoding)


@pytest.fixture
def reference(tmp_path):
    path = tmp_path / "libedgetpu.log"
    path.write_text(libedgetpu_open_trace())
    return path


def test_a_dump_is_reads_never_writes():
    text = "\n".join(drv.dump_known_csrs("pre-submit", SETTLED)) + "\n"
    trace = parse_text(text)
    assert trace.kind == "dump"
    assert {a.op for a in trace.accesses} == {"R"} and len(trace.accesses) == len(drv.KNOWN_CSRS)
    assert {a.tag for a in trace.accesses} == {"pre-submit"}
    assert trace.taken_as == {"dump_reads": len(drv.KNOWN_CSRS)}
    first = trace.accesses[0]
    assert (first.offset, first.value, first.width, first.label) == (0x46000, 0, 32, "PAGE_TABLE_SIZE")


def test_dumps_are_split_by_tag_and_by_inference():
    lines = (drv.dump_known_csrs("pre-submit", {}) + drv.dump_known_csrs("post-DONE", {})
             + drv.dump_known_csrs("pre-submit", {}) + drv.dump_known_csrs("post-DONE", {}))
    dumps = parse_text("\n".join(lines)).dumps
    assert [name for name, _ in dumps] == ["pre-submit", "post-DONE", "pre-submit#2", "post-DONE#2"]
    assert all(len(reads) == len(drv.KNOWN_CSRS) for _, reads in dumps)


def test_compared_by_offset_with_what_libedgetpu_last_read_or_wrote(reference, tmp_path):
    log = tmp_path / "driver.log"
    log.write_bytes(driver_log(SETTLED, {**SETTLED, "USER_HIB_ERROR_STATUS": 0x1}))
    result = compare_traces(read_trace(reference), read_trace(log))
    assert result.mode == "dump" and result.dump_side == "b"
    assert result.counts["only_a"] == result.counts["only_b"] == result.counts["width"] == 0  # no write sequence
    compared = {(result.row_dumps[k], row.offset): row.kind for k, row in enumerate(result.rows)
                if row.kind != "unchecked"}
    assert compared == {(tag, off): ("value" if (tag, off) == ("post-DONE", 0x486F0) else "match")
                        for tag in ("pre-submit", "post-DONE") for off in COMMON}
    status = next(row for row in result.rows if row.offset == 0x48570)
    assert status.a.op == "POLL" and status.a.count == 3       # libedgetpu polled it: its last read says 1
    assert result.counts["unchecked"] == 2 * len(drv.KNOWN_CSRS) - 2 * len(COMMON)
    assert not result.passed and result.verdict == "FAILED"


def test_a_dump_that_agrees_passes_and_unchecked_registers_never_fail(reference, tmp_path):
    log = tmp_path / "driver.log"
    log.write_bytes(driver_log({**SETTLED, "WIRE_INT_PENDING": 0x1011}, SETTLED))
    result = compare_traces(read_trace(reference), read_trace(log))
    assert result.passed and result.counts["unchecked"] > 0 and result.matched == 2 * len(COMMON)


def test_the_cli_says_what_the_lines_were_taken_as_and_one_verdict_line(reference, tmp_path, cli):
    log = tmp_path / "driver.log"
    log.write_bytes(driver_log(SETTLED, {**SETTLED, "USER_HIB_ERROR_STATUS": 0x1}))
    text = cli("csr", reference, log, width=200)
    assert text.code == 1
    words = " ".join(text.out.split())
    assert "register dumps pre-submit 23, post-DONE 23: 46 [CSR@tag] lines without an R/W word, taken as reads" \
        in words
    assert "taken as 18 writes, 7 reads" in words           # libedgetpu's lines
    verdict_lines = [line for line in text.out.splitlines() if line.startswith(("PASSED", "FAILED"))]
    doc = json.loads(cli("csr", reference, log, "--json").out)
    assert verdict_lines == [f"{doc['verdict']} | {doc['message']}"] == [doc["summary"]]
    assert doc["mode"] == "dump" and doc["reads_included"] is True
    assert doc["accesses_b"] == 46 and doc["matched"] == 5
    assert [(m["kind"], m["op"], m["offset"], m["b"], m["tag"]) for m in doc["mismatches"]] == \
        [("value", "R", "0x486f0", "0x00000001", "post-DONE")]
    assert doc["b"]["taken_as"] == {"dump_reads": 46} and doc["b"]["kind"] == "dump"
    assert len(doc["unchecked"]) == doc["counts"]["unchecked"] == 40
    assert "unchecked rows not shown" in text.out and "page_table_size" not in text.out
    every = cli("csr", reference, log, "--all", width=200).out
    assert "page_table_size" in every and "unchecked" in every


@pytest.mark.parametrize("encoding", ["cp949", "cp1252", "cp932", "utf-16", "utf-8"])
def test_a_dbgview_capture_in_any_code_page(reference, tmp_path, cli, encoding):
    log = tmp_path / "driver.log"
    log.write_bytes(driver_log(SETTLED, SETTLED, encoding))
    doc = json.loads(cli("csr", reference, log, "--json").out)
    assert doc["verdict"] == "PASSED" and doc["b"]["taken_as"] == {"dump_reads": 46}
    # a character the code page cannot hold was saved as `?` (ASCII): the lines still holding others are counted
    held = "utf-8" if encoding == "utf-16" else encoding
    assert doc["b"]["non_ascii_lines"] == sum(not line.encode(held, "replace").isascii() for line in drv.CHATTER) > 0


def test_a_32_bit_read_of_a_64_bit_register_is_compared_in_its_32_bits():
    a = parse_text(vlog_line("W", 0x48590, 0x1_0010_0000, 64, glog=False, n=0) + "\n")
    same_low = parse_text(drv.printf("[CSR@x] %-32s @0x%05x = 0x%08x\n", "INSTR_QUEUE_BASE", 0x48590, 0x0010_0000))
    other = parse_text(drv.printf("[CSR@x] %-32s @0x%05x = 0x%08x\n", "INSTR_QUEUE_BASE", 0x48590, 0x0020_0000))
    ok = compare_traces(a, same_low)
    assert ok.passed and ok.low_bits == {0} and ok.to_dict()["mismatches"] == []
    assert compare_traces(a, other).counts["value"] == 1


def test_two_drivers_dumps_pair_by_tag():
    a = parse_text("\n".join(drv.dump_known_csrs("pre-submit", SETTLED) + drv.dump_known_csrs("post-DONE", SETTLED)))
    b = parse_text("\n".join(drv.dump_known_csrs("pre-submit", SETTLED)
                             + drv.dump_known_csrs("post-DONE", {**SETTLED, "WIRE_INT_PENDING": 0x10})))
    result = compare_traces(a, b)
    assert result.dump_side == "both" and result.counts["value"] == 1 and result.counts["unchecked"] == 0
    assert result.mismatches[0].offset == 0x48778 and result.row_dumps[result.mismatches[0].index] == "post-DONE"


def test_the_explicit_write_form_is_still_a_sequence():
    text = drv.printf("[CSR@open] W %-32s @0x%05x = 0x%016llx\n", "tileconfig0", 0x48788, 0x7F)
    trace = parse_text(text)
    assert trace.kind == "trace" and trace.accesses[0].op == "W" and trace.accesses[0].tag is None
    reference = parse_text(vlog_line("W", 0x48788, 0x7F, 64, glog=False, n=0))
    assert compare_traces(reference, trace).mode == "sequence"


def test_nothing_to_compare_is_one_line(tmp_path, cli):
    a = tmp_path / "a.log"
    a.write_text("W 0x400c0 0x1\n")
    b = tmp_path / "b.log"
    b.write_bytes(driver_log({}, {}))
    assert_one_line_error(cli("csr", a, b), "nothing to compare", "pre-submit")
    assert_one_line_error(cli("csr", a, b, "--json"), "nothing to compare")


def test_the_bundled_real_driver_log(cli):
    r = cli("csr", "dumps/evidence/csr_libedgetpu.log", "dumps/evidence/npu_driver.log", "--json")
    doc = json.loads(r.out)
    assert r.code == 1 and doc["mode"] == "dump"
    assert doc["counts"]["only_a"] == doc["counts"]["only_b"] == 0
    assert [(m["tag"], m["offset"], m["a"], m["b"]) for m in doc["mismatches"]] == \
        [("post-DONE", "0x486f0", "0x0000000000000000", "0x00000001")]
