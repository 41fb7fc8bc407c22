"""Which file verify checks a log's lines against, on captures of the story's console and driver
(dumps/driver_printf.py: npu_test_console's `--- Output buffer (%zu bytes, %zu non-zero) ---` and `  [%04x] `
rows, Device.c's [DPC-OUT] lines): a file named after one of the driver's buffers is never taken for another
buffer, by being the only file or by its size. Such a file got DIFFER on every line before."""

from __future__ import annotations

import json

import numpy as np

from tests.conftest import assert_one_line_error
from tests.driverlog import drv

RNG = np.random.default_rng(3131)

# what the console prints around its output dump (npu_test_console.cpp's std::cout lines, word for word)
CONSOLE_CHATTER = [
    "Model loaded: 1234567 bytes", "success to get device handle!", "Loading model...",
    "Model loaded: bitstream size = 116496 bytes", "Field patches to apply: 8",
    "Input layer: input (size: 49152 bytes)", "Output layer: MobilenetV1/Predictions/Reshape_1 (size: 1008 bytes)",
    "Scratch device VA: 0x0 (size=0)", "Calling IOCTL_INFER_WITH_PARAM...", "INFER succeeded!",
]


def _bytes(n: int) -> bytes:
    return RNG.integers(0, 256, n, dtype=np.uint8).tobytes()


def _write(tmp_path, name, data) -> str:
    path = tmp_path / name
    path.write_bytes(data)
    return str(path)


def _console_log(tmp_path, out: bytes) -> str:
    return _write(tmp_path, "console.log", drv.saved(CONSOLE_CHATTER + drv.console_output(out), "cp949"))


def test_the_only_file_named_input_is_not_the_consoles_output(tmp_path, cli):
    out = _bytes(1008)
    log = _console_log(tmp_path, out)
    wrong = cli("verify", log, _write(tmp_path, "input.bin", _bytes(49152)))
    assert_one_line_error(wrong, "input.bin", "output (1,008 bytes)", "--buffer")
    right = cli("verify", log, _write(tmp_path, "output.bin", out), "--json")
    doc = json.loads(right.out)
    assert right.code == doc["exit_code"] == 0 and doc["verdict"] == "MATCH"
    assert {c["kind"] for c in doc["checks"]} == {"size", "nonzero", "bytes"}
    # a file named after no buffer is still the only buffer's
    anon = json.loads(cli("verify", log, _write(tmp_path, "capture.bin", out), "--json").out)
    assert anon["verdict"] == "MATCH" and anon["matched"] == doc["matched"]


def test_a_file_named_input_of_the_outputs_size_is_not_taken_by_its_size(tmp_path, cli):
    """Device.c's DPC scan lines only; input.bin and out.bin both of the logged size: only out.bin is the
    output's (the one named after no other buffer)."""
    out = _bytes(4096)
    lines = drv.dpc_out(out, 0x8000000000844000)
    log = _write(tmp_path, "dpc.log", drv.saved(drv.dbgview(lines), "ascii"))
    inp = _write(tmp_path, "input.bin", _bytes(4096))
    assert_one_line_error(cli("verify", log, inp), "input.bin", "output")
    doc = json.loads(cli("verify", log, _write(tmp_path, "out.bin", out), "--json").out)
    assert doc["verdict"] == "MATCH" and doc["differ"] == 0 and doc["matched"] >= 6
    # named explicitly, a file is checked whatever its name: the wrong one DIFFERs
    forced = cli("verify", log, "--buffer", f"output={inp}", "--json")
    assert forced.code == 1 and json.loads(forced.out)["verdict"] == "DIFFER"
