"""The packaged Beagle table against facts read from beagle_csr_offsets.h, the generator, and lookups."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from forensics.csr.registers import beagle_table, in_pcie_window, lookup_register
from tests.conftest import REPO, assert_one_line_error
from tests.csr.traces import NAMES


def test_table_says_where_it_came_from():
    source = beagle_table().source
    assert source["source_path"] == "driver/config/beagle/beagle_csr_offsets.h"
    assert source["source_repository"].endswith("google-coral/libedgetpu")
    assert re.fullmatch(r"[0-9a-f]{40}", source["source_commit"])
    assert source["license"] == "Apache-2.0"


def test_open_sequence_offsets_are_named_as_libedgetpu_names_them():
    # NAMES was transcribed by hand from the header, independently of the generator.
    table = beagle_table()
    for offset, name in NAMES.items():
        reg = table.lookup(offset)
        assert reg is not None and reg.name == name, (hex(offset), reg)


def test_table_shape():
    regs = beagle_table().registers
    offsets = [r.offset for r in regs]
    assert offsets == sorted(set(offsets))
    assert offsets[0] == 0x19018 and offsets[-1] == 0x50000
    assert 450 <= len(regs) <= 560
    for r in regs:
        assert r.offset % (4 if r.width == 32 else 8) == 0, r
        assert (r.width == 32) == (r.offset < 0x40000), r        # CB bridge, OMC, SCU are 32-bit
        assert r.usb_only == (0x4C000 <= r.offset < 0x4D000), r
    assert beagle_table().lookup(0x4C060).name == "fatal_err_int_control"
    assert beagle_table().lookup(0x4C060).usb_only


def test_pcie_windows():
    assert in_pcie_window(0x40000) and in_pcie_window(0x44FFF) and in_pcie_window(0x48788)
    assert not in_pcie_window(0x46000) and not in_pcie_window(0x1A30C) and not in_pcie_window(0x49000)


SYNTHETIC_HEADER = """\
// AUTO GENERATED FILE.
const InterruptCsrOffsets kBeagleFatalErrIntInterruptCsrOffsets = {
    0x486c0,  // NOLINT: fatal_err_int_control
    0x486c8,  // NOLINT: fatal_err_int_status
};
const DebugHibUserCsrOffsets kBeagleDebugHibUserCsrOffsets = {
    0x486c0,  // NOLINT: fatal_err_int_control
    0x48300,  // NOLINT:
              // read_request_arbiter_instruction_blocked_by_arbitration_cycles
    kCsrRegisterSpaceInvalidOffset,  // UNUSED, axi_overrides
};
const ScuCsrOffsets kBeagleScuCsrOffsets = {
    0x1a30c,  // NOLINT: scu_ctrl_0
};
const UsbCsrOffsets kBeagleUsbCsrOffsets = {
    0x4c058,  // NOLINT: outfeed_chunk_length
};
"""


def test_generator_reads_wrapped_names_skips_unused_and_merges_duplicates(tmp_path):
    header = tmp_path / "beagle_csr_offsets.h"
    header.write_text(SYNTHETIC_HEADER)
    out = tmp_path / "table.json"
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_beagle_csr.py"), "--header", str(header),
                           "--commit", "0" * 40, "--out", str(out)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(out.read_text())
    rows = {r["offset"]: r for r in doc["registers"]}
    assert list(rows) == ["0x1a30c", "0x48300", "0x486c0", "0x486c8", "0x4c058"]
    assert rows["0x48300"]["name"] == "read_request_arbiter_instruction_blocked_by_arbitration_cycles"
    assert rows["0x486c0"]["groups"] == ["FatalErrIntInterrupt", "DebugHibUser"]
    assert rows["0x486c0"]["group"] == "FatalErrIntInterrupt"
    assert rows["0x48300"]["group"] == "DebugHibUser"
    assert rows["0x1a30c"]["width"] == 32 and rows["0x486c8"]["width"] == 64
    assert rows["0x4c058"]["usb_only"] and not rows["0x486c0"]["usb_only"]
    assert doc["source_commit"] == "0" * 40 and doc["license"] == "Apache-2.0"
    assert "axi_overrides" not in out.read_text()


def test_packaged_table_is_what_the_generator_writes_from_its_recorded_commit(tmp_path):
    """When a libedgetpu mirror is at hand, regenerating gives the packaged file byte for byte."""
    import os

    git_dir = os.environ.get("LIBEDGETPU_GIT_DIR", "/work/.mirror/google-coral+libedgetpu/repo")
    if not os.path.isdir(git_dir):
        pytest.skip("no libedgetpu git mirror (set LIBEDGETPU_GIT_DIR)")
    out = tmp_path / "beagle_csr.json"
    commit = beagle_table().source["source_commit"]
    proc = subprocess.run([sys.executable, str(REPO / "tools" / "gen_beagle_csr.py"), "--git-dir", git_dir,
                           "--commit", commit, "--out", str(out)], capture_output=True, text=True)
    if proc.returncode != 0 and "unknown revision" in proc.stderr + proc.stdout:
        pytest.skip("mirror lacks the recorded commit")
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes() == (REPO / "forensics" / "data" / "beagle_csr.json").read_bytes()


def test_lookup_by_offset_name_and_fragment():
    assert lookup_register("0x48788").registers[0].name == "tileconfig0"
    assert lookup_register("tileconfig0").offset == 0x48788
    found = lookup_register("TileConfig", find=True)
    assert {r.name for r in found.registers} == {"tileconfig0", "tileconfig1"}
    unknown = lookup_register("0x486c4")
    assert not unknown.found
    assert [r.offset for r in unknown.neighbours] == [0x486C0, 0x486C8]
    # A name used twice (PCIe and USB interrupt blocks) lists both.
    assert {r.offset for r in lookup_register("fatal_err_int_control").registers} == {0x486C0, 0x4C060}


def test_cli_name_and_find(csr_cli):
    res = csr_cli("csr", "--name", "0x484f8")
    assert res.code == 0 and "page_table_request_credits_per_cycle_sum" in res.out
    res = csr_cli("csr", "--name", "0x486c4")
    assert res.code == 1 and "UNKNOWN" in res.out and "0x486c0" in res.out
    res = csr_cli("csr", "--find", "tileconfig", "--json")
    assert res.code == 0
    assert [r["name"] for r in json.loads(res.out)["registers"]] == ["tileconfig0", "tileconfig1"]
    res = csr_cli("csr", "--find", "no_such_register_anywhere")
    assert res.code == 1


def test_cli_lookup_bad_input(csr_cli):
    assert_one_line_error(csr_cli("csr", "--name", "not-an-offset"), "not an offset")
    assert_one_line_error(csr_cli("csr", "--name", "0x48788", "--find", "x"), "not both")
    assert_one_line_error(csr_cli("csr", "--find", "  "), "non-empty")


def test_registered_in_the_real_cli():
    import forensics.cli as cli_module

    assert "forensics.cli.csr" in cli_module.COMMAND_MODULES
