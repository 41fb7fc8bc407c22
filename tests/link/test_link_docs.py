"""docs/link.md's walk-through on the bundled dumps/link files: the files are what their generator makes, and
the lines the page quotes are what the commands print."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

from tests.conftest import REPO

MODEL = "dumps/link/tiny_edgetpu.tflite"


def _words(text: str) -> str:
    return " ".join(text.split())


def test_the_bundled_link_dumps_are_current():
    sys.path.insert(0, str(REPO / "dumps"))
    try:
        import make_link_dumps
    finally:
        sys.path.remove(str(REPO / "dumps"))
    for name, blob in make_link_dumps.files().items():
        assert (REPO / "dumps" / "link" / name).read_bytes() == blob, name


def test_the_walk_through_prints_what_the_page_quotes(cli):
    page = (REPO / "docs" / "link.md").read_text()
    seed = cli("link", MODEL, "--check", "dumps/link/seed_driver_0_0.bin", width=110)
    assert seed.code == 1 and seed.out.startswith("MISLINKED: executable 0 EXECUTION_ONLY bitstream 0")
    quoted = re.search(r"\$ forensics link dumps/link/tiny_edgetpu.tflite --check dumps/link/seed_driver_0_0.bin\n"
                       r"(.*?)\n\n", page, re.S).group(1)
    for line in ("aliased: Squeeze1 and convert_scores were linked to one address 0x156700000: the chip writes "
                 "both into one buffer",
                 "byte_aligned: input meant 0x123400000, the chip reads 0x1c000000dc8d0000: 2 field(s) written as 4 "
                 "whole bytes at offset_bit / 8 (bit 8902 as byte 1112, bit 9030 as byte 1128)"):
        assert line in _words(quoted) and line in _words(seed.out), line
    d = json.loads(cli("link", MODEL, "--check", "dumps/link/seed_driver_0_0.bin", "--json").out)
    assert sorted(f["name"] for f in d["findings"] if f["kind"] == "byte_aligned") == \
        ["Squeeze1", "convert_scores", "input"]
    good = cli("link", MODEL, "--check", "dumps/link/libedgetpu_0_0.bin")
    assert good.code == 0 and good.out.startswith("LINKED")
    cache = json.loads(cli("link", MODEL, "--check", "dumps/link/libedgetpu_1_0.bin", "--json").out)
    assert cache["executable"] == {"index": 1, "type": "PARAMETER_CACHING"} and cache["verdict"] == "LINKED"


def test_forensics_link_writes_the_bundled_libedgetpu_link(tmp_path, cli):
    out = tmp_path / "expected.bin"
    r = cli("link", MODEL, "--executable", "0", "--input", "input=0x1_2340_0000", "--output", "Squeeze1=0x156700000",
            "--output", "convert_scores=0x1_5680_0000", "-o", out)
    assert r.code == 0, r.err
    assert out.read_bytes() == Path(REPO / "dumps/link/libedgetpu_0_0.bin").read_bytes()
