"""--offset/--length: a slice of every dump a command reads (a page-rounded DMA allocation -> its tensor)."""

from __future__ import annotations

import json
import random
import zlib
from pathlib import Path

import pytest

from forensics.io.dump import open_dump
from forensics.core.errors import InputError

from tests.conftest import assert_one_line_error

SCORES = Path("dumps/ours/convert_scores.bin")
RAW = 176_368   # convert_scores as the chip writes it (z 91 padded to 92) in the SSD segment models
PAGE = 180_224  # the DMA allocation rounded up to 4 KiB pages


def test_open_dump_slice(tmp_path):
    data = SCORES.read_bytes()
    dump = open_dump(SCORES, offset=100, length=1000)
    assert dump.size == 1000 and dump.read(0, 1000) == data[100:1100]
    assert b"".join(bytes(v) for _, v in dump.iter_chunks(chunk_size=64)) == data[100:1100]
    assert dump.slice == {"offset": 100, "length": 1000}
    assert open_dump(SCORES, offset=8000).size == len(data) - 8000
    with pytest.raises(InputError, match="convert_scores.bin: slice from 0x1f00 to 0x22e8 is past the end"):
        open_dump(SCORES, offset=0x1F00, length=1000)


def test_crc_of_a_slice_is_zlibs(cli):
    data = SCORES.read_bytes()
    doc = json.loads(cli("crc", SCORES, "--offset", "0x10", "--length", "4096", "--json").out)
    assert doc["files"][0]["crc32"] == f"0x{zlib.crc32(data[16:16 + 4096]):08x}"
    assert_one_line_error(cli("crc", SCORES, "--offset", "9000"), "convert_scores.bin", "past the end")


def test_layout_offset_alone_keeps_its_meaning(cli):
    # --offset without --length is the layout offset (records start there), as before
    plain = json.loads(cli("diff", SCORES, "dumps/broken/convert_scores.bin", "--offset", "8", "--json").out)
    sliced = json.loads(cli("diff", SCORES, "dumps/broken/convert_scores.bin", "--offset", "8",
                            "--length", str(8136 - 8), "--json").out)
    assert plain["records_differing"] == sliced["records_differing"]
    assert sliced["size_a"] == 8128 and plain["size_a"] == 8136


@pytest.fixture
def allocation(tmp_path):
    rng = random.Random(5)
    raw = bytes(rng.getrandbits(8) for _ in range(RAW))
    page = tmp_path / "alloc.bin"
    page.write_bytes(raw + b"\xcc" * (PAGE - RAW))
    exact = tmp_path / "raw.bin"
    exact.write_bytes(raw)
    return page, exact


def test_model_commands_check_the_slice(allocation, shared_data, cli, tmp_path):
    page, exact = allocation
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    flags = ["--model", model, "--tensor", "convert_scores"]
    assert_one_line_error(cli("anchors", page, *flags), "180224 bytes", "--length 176368")
    assert cli("anchors", page, *flags, "--length", RAW).code == 0
    assert cli("diff", exact, page, *flags, "--length", RAW).code == 0
    assert cli("diagnose", exact, page, *flags, "--length", RAW).code == 0
    out = tmp_path / "tensor.bin"
    assert cli("relayout", page, "--model", model, "--layer", "convert_scores", "--length", RAW, "-o", out).code == 0
    ref = tmp_path / "ref.bin"
    assert cli("relayout", exact, "--model", model, "--layer", "convert_scores", "-o", ref).code == 0
    assert out.read_bytes() == ref.read_bytes()


def test_ingest_records_the_slice(allocation, cli, tmp_path):
    page, exact = allocation
    run = tmp_path / "run"
    result = cli("ingest", run, f"raw:convert_scores={page}", "--source", "ours", "--length", RAW, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    entry = doc["buffers"][0]
    assert entry["size"] == RAW and entry["slice"] == {"offset": 0, "length": RAW}
    assert entry["crc32"] == f"0x{zlib.crc32(exact.read_bytes()):08x}"
    manifest = json.loads((run / "manifest.json").read_text())
    assert manifest["buffers"][0]["slice"] == {"offset": 0, "length": RAW}
    assert f"wrote {tmp_path / 'r2'} (2 files, " in cli("ingest", tmp_path / "r2", f"input={exact}", "--source", "x").out
