"""Output never crashes on a legacy encoding: every command, stdout and stderr in cp1252 / cp437 / ascii.

Windows redirects output in its ANSI code page (cp1252), and the console may be cp437: block characters,
box drawing and typography must fall back to ASCII there instead of ending in UnicodeEncodeError (exit 3).
Each encoding runs in one subprocess (PYTHONIOENCODING applies to a whole interpreter), which calls the CLI
once per command with the real, legacy-encoded stdout/stderr.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_CORAL

# Calls the CLI in-process for each argv on the interpreter's own (legacy-encoded) streams; records codes.
RUNNER = r"""
import json, sys
from forensics.cli import main
results = []
for argv in json.loads(sys.argv[1]):
    code = main(argv)
    sys.stdout.flush(); sys.stderr.flush()
    results.append(code)
with open(sys.argv[2], "w") as fh:
    json.dump(results, fh)
"""


def _commands(tmp: Path) -> list[list[str]]:
    odd = tmp / "dümp€ ours.bin"  # a path cp1252 can write and ascii cannot
    shutil.copy("dumps/ours/convert_scores.bin", odd)
    log = tmp / "driver.log"
    log.write_text("[FP] input size=307200 crc32=0x0bc3f483 xor64=0x0000000000000000 head@0x0=00 "
                   "mid@0x257f8=7e tail@0x4aff0=64\n")
    text = tmp / "dump.txt"
    text.write_text("00001000  41 42 43 44 45 46 47 48-49 4a 4b 4c 4d 4e 4f 50  ABCDEFGHIJKLMNOP\n")
    trace_a, trace_b = tmp / "a.log", tmp / "b.log"
    trace_a.write_text("W 0x48788 0x7f\nR 0x44018 0x1\n")
    trace_b.write_text("W 0x48788 0x7e\nW 0x486c4 0x1\n")
    deps = ["--deps", "dumps/face_ssd"]
    cmds = [
        ["crc", "dumps/libedgetpu/input.bin", "dumps/broken/input.bin", "--chunk", "960"],
        ["crc", str(odd), "--expect", "0x1"],
        ["diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", *deps, "--grid"],
        ["anchors", str(odd), "--nonuniform", *deps, "--grid"],
        ["coverage", "dumps/broken/convert_scores.bin", "--sentinel", "cc"],
        ["hexdump", "dumps/ours/convert_scores.bin", "dumps/broken/convert_scores.bin", "--anchor", "3"],
        ["decode", *deps, "dumps/ours/Squeeze1.bin", "dumps/ours/convert_scores.bin", "--image-size", "640x480"],
        ["anchors-gen", "--input-size", "320x320", "--anchor", "203"],
        ["diagnose", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"],
        ["csr", str(trace_a), str(trace_b), "--reads"],
        ["csr", "--find", "tileconfig"],
        ["import", str(text), "-o", str(tmp / "out.bin")],
        ["fingerprint", "dumps/ours/input.bin", "--page", "65536"],
        ["verify", str(log), "dumps/ours/input.bin"],
        ["ingest", str(tmp / "run_ä"), "input=dumps/ours/input.bin", "--source", "ours"],
        ["ingest", str(tmp / "run_b"), "input=dumps/broken/input.bin", "--source", "broken"],
        ["compare", str(tmp / "run_ä"), str(tmp / "run_b")],
        ["crc", str(tmp / "missing-ü.bin")],  # an error line naming a non-ASCII path
    ]
    if SHARED_CORAL.is_dir():
        model = str(SHARED_CORAL / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite")
        cmds += [["graph", model], ["extract", model, "-o", str(tmp / "deps")],
                 ["tail", str(SHARED_CORAL / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"), "-o",
                  str(tmp / "tail.tflite")]]
    return cmds


@pytest.mark.parametrize("encoding", ["cp1252", "cp437", "ascii"])
def test_every_command_survives_a_legacy_encoding(encoding, tmp_path):
    cmds = _commands(tmp_path)
    codes_file = tmp_path / "codes.json"
    env = dict(os.environ, PYTHONIOENCODING=encoding, PYTHONPATH=str(REPO), COLUMNS="100")
    proc = subprocess.run([sys.executable, "-c", RUNNER, json.dumps(cmds), str(codes_file)], cwd=REPO, env=env,
                          capture_output=True, timeout=600)
    err = proc.stderr.decode(encoding, errors="replace")
    assert proc.returncode == 0, err[-2000:]
    codes = json.loads(codes_file.read_text())
    assert "internal error" not in err and "UnicodeEncodeError" not in err, err[-2000:]
    # each command's own exit code, as on a UTF-8 terminal: the encoding changes how it prints, never what it says
    expected = [1, 1, 1, 0, 1, 0, 0, 0, 1, 1, 0, 0, 0, 1, 0, 0, 1, 2]
    if SHARED_CORAL.is_dir():
        expected += [0, 0, 2]  # tail of the head layers: no edgetpu-custom-op to remove (one line, exit 2)
    assert codes == expected, list(zip(codes, cmds))
    assert codes[-1] == 2 and "missing-" in err  # the error line was written, not lost
    out = proc.stdout.decode(encoding)
    if encoding == "ascii":
        assert all(b < 0x80 for b in proc.stdout)
        assert "#" in out  # the grid's darkest cells fell back to '#'
