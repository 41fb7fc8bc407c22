"""Device.c's bounce copy lines checked by verify: in extended mode the chip writes a < 4 GB bounce buffer that the
DPC copies to the user's output and prints `[%s] Bounce copied to user buffer (size=%llu)` then
`[%s] BOUNCE first 16B: %02x x8  %02x x8`, the output's first 16 bytes (the size is the copy's, min of two
buffers, no fingerprint of the file). Lines built here from those format strings over plain bytes."""

from __future__ import annotations

import json

import numpy as np

from tests.driverlog import drv

FUNCTION = "NpudriverEvtInterruptDpc"


def bounce_lines(out: bytes, bounce_size: int) -> list[str]:
    return [drv.printf("[%s] Bounce copied to user buffer (size=%llu)\n", FUNCTION, min(len(out), bounce_size)),
            drv.printf("[%s] BOUNCE first 16B: " + drv.ROW16 + "\n", FUNCTION, *out[:16])]


def test_the_bounce_head_is_the_outputs(tmp_path, cli):
    out = np.random.default_rng(3134).integers(0, 256, 7672, dtype=np.uint8).tobytes()
    log = tmp_path / "dbgview.log"
    log.write_bytes(drv.saved(drv.dbgview(drv.CHATTER + bounce_lines(out, 4096)), "cp949"))
    path = tmp_path / "output.bin"
    path.write_bytes(out)
    doc = json.loads(cli("verify", log, path, "--json").out)
    assert doc["verdict"] == "MATCH" and [(c["kind"], c["expected"]) for c in doc["checks"]] == [
        ("bytes", out[:16].hex(" "))]
    path.write_bytes(out[:5] + bytes([out[5] ^ 1]) + out[6:])
    bad = cli("verify", log, path, "--json")
    assert bad.code == 1 and json.loads(bad.out)["verdict"] == "DIFFER"
