"""Queue.c's bitstream patch scan ([BS-SCAN]) checked by verify: the driver looks for each patch value as a 32-bit
little-endian dword at every 4th offset of the bitstream it mapped and prints the first 4 hits
(`[BS-SCAN]   %s=0x%x found at off=0x%lx`) and their count (`[BS-SCAN] %s 0x%08x: %lu hit(s)%s`). Built here
from that loop over the real mobilenet's bitstream as the story driver links it (tests/link/driver.py's
PatchVAs arithmetic, npu_test_console's addresses): the driver's own bitstream matches, a bit-exact link of the
same addresses does not (the 4 bytes at offset_bit / 8 differ, and so does the count)."""

from __future__ import annotations

import json
import struct

from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from tests.driverlog import drv
from tests.link import driver
from tests.link.test_link_bits import REAL, reference_link


def bs_scan(bitstream: bytes, input_va: int, output_va: int, bitstream_va: int) -> list[str]:
    """Queue.c's five patterns (the upper halves for an extended output), each scanned dword by dword."""
    extended = bool(output_va >> 63)
    patterns = [input_va & 0xFFFFFFFF,
                (output_va >> 32) if extended else output_va & 0xFFFFFFFF,
                ((output_va + 0x2000) >> 32) if extended else (output_va + 0x2000) & 0xFFFFFFFF,
                0x3000, bitstream_va & 0xFFFFFFFF]
    names = ["INPUT", "OUTPUT[0]_UPPER" if extended else "OUTPUT[0]", "OUTPUT[1]_UPPER" if extended else "OUTPUT[1]",
             "PARAM", "BITSTREAM_SELF"]
    out = []
    for name, value in zip(names, patterns):
        hits = [off for off in range(0, len(bitstream) - 3, 4) if struct.unpack_from("<I", bitstream, off)[0] == value]
        out += [drv.printf("[BS-SCAN]   %s=0x%x found at off=0x%lx\n", name, value, off) for off in hits[:4]]
        out.append(drv.printf("[BS-SCAN] %s 0x%08x: %lu hit(s)%s\n", name, value, len(hits),
                              "  *** NOT FOUND \u2014 patch missing? ***" if not hits else ""))
    return out


def test_the_drivers_scan_matches_its_own_bitstream_only(shared_data, tmp_path, cli):
    packages = read_packages(open_model(shared_data / REAL[0]))
    exe = packages[0].executables[0]
    fields = [f for f in exe.field_offsets if f.bitstream == 0]
    addresses = driver.console_addresses(exe, True)
    linked = driver.driver_link(exe, fields, addresses)
    bitstream_va = driver.EXT_VA_BIT | 0x900000
    lines = drv.bs_dump(linked, bitstream_va) + bs_scan(linked, addresses["input_va"], addresses["output_va"],
                                                         bitstream_va)
    found = [line for line in lines if "found at" in line]
    assert found  # the input's lower half 0x00880000 lands whole at offset_bit / 8 (a multiple of 4 here)
    log = tmp_path / "dbgview.log"
    log.write_bytes(drv.saved(drv.dbgview(lines), "cp949"))
    mine = tmp_path / "bitstream.bin"
    mine.write_bytes(linked)
    doc = json.loads(cli("verify", log, mine, "--json").out)
    assert doc["verdict"] == "MATCH" and doc["exit_code"] == 0
    scanned = [c for c in doc["checks"] if "@0x" in c["what"] and c["kind"] == "bytes"]
    assert len(scanned) == len(found)
    for check, line in zip(scanned, found):
        off = int(line.rsplit("0x", 1)[1], 16)
        assert check["what"].endswith(f"@0x{off:x}") and check["expected"] == linked[off:off + 4].hex(" ")
    counted = [c for c in doc["checks"] if c["kind"] == "dword_hits"]
    totals = [line.split(": ")[1].split(" hit")[0] for line in lines if " hit(s)" in line]
    assert len(counted) == 5 and [c["expected"] for c in counted] == [f"{int(t):,}" for t in totals]
    # the same addresses linked bit-exact: the dwords the driver found are not there
    inputs = {layer.name: [addresses["input_va"]] for layer in exe.input_layers}
    layers = [(layer.name, layer.size_bytes) for layer in exe.output_layers]
    outputs = {n: [driver.output_address(layers, n, addresses["output_va"])] for n, _ in layers}
    right = tmp_path / "right.bin"
    right.write_bytes(reference_link(bytes(exe.bitstreams[0]), fields, inputs, outputs, None, None))
    other = cli("verify", log, "--buffer", f"bitstream={right}", "--json")
    doc = json.loads(other.out)
    assert other.code == 1 and doc["verdict"] == "DIFFER"
    failed = {c["what"] for c in doc["checks"] if not c["match"]}
    assert failed and failed <= {c["what"] for c in scanned} | {c["what"] for c in counted}
    # 0x00880000 is nowhere whole in the bit-exact stream: its count is 0 there
    (inputs_hits,) = [c for c in doc["checks"] if c["kind"] == "dword_hits" and c["what"].startswith("INPUT ")]
    assert inputs_hits["found"] == "0" and not inputs_hits["match"]
