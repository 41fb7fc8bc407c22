"""add_model_test_console's capture checked by verify: before INFER it prints the input it placed,
`HexDump("input  (host buf, first 16)", in, min(INPUT_SIZE, 16))` (`  LABEL:` then ` %02x` per byte, std::hex
with setfill('0')), beside the golden vector itself (`input  (golden)`, a constant, no buffer's fingerprint);
after it the output dump and the golden compare of min(OUTPUT_SIZE, 16) bytes. Built here from those statements."""

from __future__ import annotations

import json

import pytest

from tests.driverlog import drv

GOLDEN_IN = bytes([0xF8, 0xF9, 0xFA, 0xFB, 0xFC, 0xFD, 0xFE, 0xFF, 0, 1, 2, 3, 4, 5, 6, 7])  # the console's kGolden*
GOLDEN_OUT = GOLDEN_IN


def hexdump(label: str, data: bytes) -> str:
    return "  " + label + ":" + "".join(f" {b:02x}" for b in data)


def capture(inp: bytes, out: bytes) -> list[str]:
    return (["[main] calling IOCTL_INFER...", hexdump("input  (golden)", GOLDEN_IN),
             hexdump("input  (host buf, first 16)", inp[:16])]
            + drv.add_model_console(out, GOLDEN_OUT[:min(len(out), 16)]))


@pytest.mark.parametrize("size", [8, 16, 4096])
def test_the_host_input_line_is_the_inputs_head(tmp_path, cli, size):
    inp = (GOLDEN_IN + bytes(size))[:size]
    out = bytes((b + 1) & 0xFF for b in GOLDEN_IN)
    log = tmp_path / "console.txt"
    log.write_bytes(drv.saved(capture(inp, out), "utf-16"))
    (tmp_path / "input.bin").write_bytes(inp)
    (tmp_path / "output.bin").write_bytes(out)
    argv = ["verify", log, "--buffer", f"input={tmp_path / 'input.bin'}",
            "--buffer", f"output={tmp_path / 'output.bin'}"]
    doc = json.loads(cli(*argv, "--json").out)
    assert doc["verdict"] == "MATCH"
    (head,) = [c for c in doc["checks"] if c["tag"] == "input"]
    assert head["expected"] == inp[:16].hex(" ")
    # a changed input byte DIFFERs on the host-buffer line alone: the golden vector's line is no check
    (tmp_path / "input.bin").write_bytes(inp[:3] + bytes([inp[3] ^ 0x80]) + inp[4:])
    bad = json.loads(cli(*argv, "--json").out)
    assert bad["verdict"] == "DIFFER" and [c["what"] for c in bad["checks"] if not c["match"]] == [head["what"]]
