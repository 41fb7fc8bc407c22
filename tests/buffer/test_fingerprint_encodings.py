"""The story driver's DbgView capture saved every way Windows saves text, read alike by verify, csr and import:
UTF-8 with a BOM, UTF-16 with either BOM, UTF-16 LE without one (its head holds the driver's Korean and arrows,
so not every other byte is NUL), a code page, LF or CR line ends. The lines come from dumps/driver_printf.py (the
driver's format strings), the expected values from the bytes themselves."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.driverlog import drv

RNG = np.random.default_rng(3132)
OUT = RNG.integers(0, 256, 3000, dtype=np.uint8).tobytes()
LINES = drv.CHATTER + drv.dpc_out(OUT, 0x8000000000844000) + drv.dump_known_csrs("pre-infer", {})
TEXT = "\r\n".join(drv.dbgview(LINES)) + "\r\n"

SAVED = {
    "utf-8-sig": TEXT.encode("utf-8-sig"),
    "utf-16-le-bom": TEXT.encode("utf-16"),
    "utf-16-be-bom": b"\xfe\xff" + TEXT.encode("utf-16-be"),
    "utf-16-le-no-bom": TEXT.encode("utf-16-le"),
    "cp949": TEXT.encode("cp949", errors="replace"),
    "lf": TEXT.replace("\r\n", "\n").encode("utf-8"),
    "cr": TEXT.replace("\r\n", "\r").encode("utf-8"),
}


def test_the_head_of_the_capture_is_not_all_ascii():
    """What makes the BOM-less UTF-16 case hard: the driver's Korean is in the first lines."""
    assert any(ord(c) > 127 for c in TEXT[:2000])
    assert any(b for b in SAVED["utf-16-le-no-bom"][1:4096:2])


@pytest.mark.parametrize("how", sorted(SAVED))
def test_every_saving_reads_alike(tmp_path, cli, how):
    log = tmp_path / "capture.log"
    log.write_bytes(SAVED[how])
    out = tmp_path / "output.bin"
    out.write_bytes(OUT)
    verify = cli("verify", log, out, "--json")
    doc = json.loads(verify.out)
    nonzero = sum(1 for b in OUT if b)
    assert verify.code == 0 and doc["verdict"] == "MATCH", verify.err
    counts = {c["kind"]: c["expected"] for c in doc["checks"] if c["kind"] in ("size", "nonzero")}
    assert counts == {"size": f"{len(OUT):,}", "nonzero": f"{nonzero:,}"}
    csr = json.loads(cli("csr", "dumps/evidence/csr_libedgetpu.log", log, "--json").out)
    assert csr["mode"] == "dump" and csr["b"]["taken_as"] == {"dump_reads": len(drv.KNOWN_CSRS)}
    rows = tmp_path / "rows.bin"
    imported = cli("import", log, "--tag", "DPC-OUT", "-o", rows)
    assert imported.code == 2 and "--gap-fill" in imported.err  # the tail row leaves a hole, as for any dump
    assert cli("import", log, "--tag", "DPC-OUT", "--gap-fill", "0xcc", "-o", rows).code == 0
    got = rows.read_bytes()
    assert got[:64] == OUT[:64] and got[len(OUT) - 64:len(OUT) - 48] == OUT[-64:-48]


def test_binary_with_nuls_at_odd_bytes_is_still_binary(tmp_path, cli):
    """int16 values below 256 (a NUL every other byte) are no UTF-16 text: the low bytes are not all printable."""
    data = RNG.integers(0, 256, 4096, dtype=np.uint16).astype("<u2").tobytes()
    path = tmp_path / "int16.log"
    path.write_bytes(data)
    out = tmp_path / "output.bin"
    out.write_bytes(OUT)
    result = cli("verify", path, out)
    assert result.code == 2 and "not text" in result.err


def test_import_tag_reads_the_rows_behind_columns_that_look_like_addresses(tmp_path, cli):
    """DbgView's columns pasted with spaces (`00000001  0.00001250  [DPC-OUT] [00] ..`) start like WinDbg's
    `ADDRESS  bytes`: with --tag naming a driver buffer, the driver's rows are read, as verify reads them."""
    lines = [f"{i:08d}  {i * 0.0000125:.8f}  {text}" for i, text in enumerate(drv.dpc_out(OUT, 0x8000000000844000))]
    log = tmp_path / "pasted.log"
    log.write_bytes(drv.saved(lines, "utf-8"))
    rows = tmp_path / "rows.bin"
    assert cli("import", log, "--tag", "DPC-OUT", "--gap-fill", "0xcc", "-o", rows).code == 0
    assert rows.read_bytes()[:64] == OUT[:64]
    auto = tmp_path / "auto.bin"  # and found without --tag: no line of it is a WinDbg db line
    assert cli("import", log, "--gap-fill", "0xcc", "-o", auto).code == 0
    assert auto.read_bytes() == rows.read_bytes()
    out = tmp_path / "output.bin"
    out.write_bytes(OUT)
    assert json.loads(cli("verify", log, out, "--json").out)["verdict"] == "MATCH"
