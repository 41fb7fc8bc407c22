"""`forensics demo` runs the README's story on the bundled dumps without bash, as `make demo` does."""

from __future__ import annotations

import json
from pathlib import Path


def test_demo_runs_every_step_as_the_story_expects(cli):
    result = cli("demo", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["ok"] is True
    assert [s["exit"] for s in doc["steps"]] == [s["expected_exit"] for s in doc["steps"]] == [0, 0, 0, 0, 1, 1, 1, 1]
    text = cli("demo")
    assert "$ forensics diagnose dumps/libedgetpu/convert_scores.bin dumps/broken/convert_scores.bin" in text.out
    assert "MATCH | 2 files, 307,200 bytes each, CRC32 0x0bc3f483" in text.out


def test_make_demo_calls_it():
    makefile = Path("Makefile").read_text()
    assert "$(FORENSICS) demo" in makefile
