"""Queue.c's input page-table readback as a fingerprint: for the first up-to-4 pages of a simple-address input the
driver prints `[%s] PTE[%lu+%u]: expected=0x%llX readback=0x%llX %s | VA[0]=0x%llX`, VA[0] the page's first
8 bytes read as one little-endian qword (`*(UINT64*)(kvAddr + i * PAGE_SIZE)`, 0xDEADDEAD when it could not map
the buffer). Lines built here with that arithmetic over plain bytes."""

from __future__ import annotations

import json

import numpy as np

from tests.driverlog import drv

RNG = np.random.default_rng(3133)
FUNCTION = "NpuEvtIoDeviceControl"


def pte_lines(data: bytes, pte: int = 0x880, mapped: bool = True) -> list[str]:
    pages = (len(data) + 4095) // 4096
    mem = data + bytes(8)  # the mapping is whole pages: past the end the driver reads what the page holds
    out = []
    for i in range(min(pages, 4)):
        pa = 0x1_2345_6000 + i * 4096
        va0 = int.from_bytes(mem[i * 4096:i * 4096 + 8], "little") if mapped else 0xDEADDEAD
        out.append(drv.printf("[%s] PTE[%lu+%u]: expected=0x%llX readback=0x%llX %s | VA[0]=0x%llX\n", FUNCTION, pte,
                              i, pa, pa, "OK", va0))
    return out


def _verify(cli, tmp_path, lines, data):
    log = tmp_path / "dbgview.log"
    log.write_bytes(drv.saved(drv.dbgview([drv.registering_input(0x880, len(data))] + lines), "utf-16"))
    path = tmp_path / "input.bin"
    path.write_bytes(data)
    result = cli("verify", log, path, "--json")
    return result.code, json.loads(result.out) if result.code != 2 else result.err


def test_each_pages_first_qword_is_checked(tmp_path, cli):
    data = RNG.integers(0, 256, 3 * 4096 + 100, dtype=np.uint8).tobytes()
    code, doc = _verify(cli, tmp_path, pte_lines(data), data)
    assert code == 0 and doc["verdict"] == "MATCH"
    checks = [c for c in doc["checks"] if "VA[0]" in c["what"]]
    assert [c["expected"] for c in checks] == [data[i * 4096:i * 4096 + 8].hex(" ") for i in range(4)]
    # the `Registering input: PTE[..] size=N pages` line is no size of the file
    assert not [c for c in doc["checks"] if c["kind"] == "size"]
    bad = bytearray(data)
    bad[2 * 4096 + 7] ^= 0x40
    code, doc = _verify(cli, tmp_path, pte_lines(data), bytes(bad))
    assert code == 1 and [c["what"] for c in doc["checks"] if not c["match"]] == ["page[2] VA[0]"]


def test_a_qword_past_the_end_is_said_not_judged(tmp_path, cli):
    data = RNG.integers(0, 256, 4096 + 5, dtype=np.uint8).tobytes()
    code, doc = _verify(cli, tmp_path, pte_lines(data), data)
    assert code == 0 and doc["verdict"] == "MATCH"
    assert [(p["what"], p["bytes"]) for p in doc["past_end"]] == [("page[1] VA[0]", 3)]


def test_the_unmapped_marker_is_no_value(tmp_path, cli):
    data = RNG.integers(0, 256, 8192, dtype=np.uint8).tobytes()
    code, err = _verify(cli, tmp_path, pte_lines(data, mapped=False), data)
    assert code == 2 and "no fingerprints" in err
