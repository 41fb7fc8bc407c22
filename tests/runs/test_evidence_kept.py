"""Evidence is never lost or replaced (issue 35): a buffer a driver provided is never replaced by one forensics
derives, and is replaced by another provided one only with `replace`.

The driver's dumps are plain files written here (the chip's raw layout built with numpy from the model's layout
tables, as a driver's dump of the output DMA is), never forensics' own writers.
"""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from forensics.core.errors import InputError
from forensics.runs.compare import compare_runs
from forensics.runs.ingest import ingest
from forensics.runs.run import load_run, verify_run
from tests.conftest import assert_one_line_error

V2 = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def _raw_of(tensor: np.ndarray, layer) -> bytes:
    """The chip's raw output layer for a tensor, as libedgetpu's GetBufferIndex places element (y, x, z), by a
    plain loop over the layer's layout tables; every byte the chip does not write is 0xCC."""
    lay = layer.layout
    raw = np.full(layer.size_bytes, 0xCC, np.uint8)
    values = tensor.reshape(layer.y_dim, layer.x_dim, layer.z_dim)
    for y in range(layer.y_dim):
        for x in range(layer.x_dim):
            tile = lay.y_coordinate_to_linear_tile_id_map[y] + lay.x_coordinate_to_linear_tile_id_map[x]
            at = (int(lay.linearized_tile_byte_offset[tile])
                  + int(lay.y_coordinate_to_local_y_offset[y]) * int(lay.x_coordinate_to_local_y_row_size[x])
                  + int(lay.x_coordinate_to_local_byte_offset[x]))
            raw[at:at + layer.z_dim] = values[y, x]
    return raw.tobytes()


@pytest.fixture
def chip(shared_data, tmp_path):
    """(model path, tensor bytes, raw bytes) of convert_scores, with the driver's own tensor differing from the
    relayout of its raw dump in one anchor (the driver's relayout bug the tensor stage must show)."""
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    model = shared_data / V2
    with open_model(model) as m:
        layer = read_packages(m)[0].output_layer("convert_scores")
    tensor = np.random.default_rng(7).integers(0, 256, (1917, 91), dtype=np.uint8)
    raw = _raw_of(tensor, layer)
    driver = tensor.copy()
    driver[1500] = driver[1499]  # the driver's relayout duplicated an anchor
    (tmp_path / "raw.bin").write_bytes(raw)
    (tmp_path / "tensor.bin").write_bytes(driver.tobytes())
    return model, tensor.tobytes(), driver.tobytes()


def _bytes(run, stage, tensor):
    return open(run.file_path(run.buffer(stage, tensor)), "rb").read()


def test_raw_with_a_model_never_replaces_the_drivers_own_tensor(chip, tmp_path, cli):
    model, relayouted, driver = chip
    run = tmp_path / "ours"
    r = cli("ingest", run, "--source", "ours", f"tensor:convert_scores={tmp_path / 'tensor.bin'}")
    assert r.code == 0, r.err
    r = cli("ingest", run, "--source", "ours", "--model", model, f"raw:convert_scores={tmp_path / 'raw.bin'}",
            "--json")
    assert r.code == 0, r.err
    assert r.err == ""  # nothing was replaced: no warning
    doc = json.loads(r.out)
    assert doc["replaced"] == []
    loaded = load_run(run)
    # the driver's tensor is there, byte for byte, and the relayout of its raw dump beside it, marked derived
    assert _bytes(loaded, "tensor", "convert_scores") == driver
    assert loaded.buffer("tensor", "convert_scores").crc32 == zlib.crc32(driver)
    assert loaded.buffer("tensor", "convert_scores").derived_from is None
    derived = loaded.buffer("relayouted", "convert_scores")
    assert derived.derived_from == "raw:convert_scores"
    assert _bytes(loaded, "relayouted", "convert_scores") == relayouted
    assert doc["derived"] == ["relayouted:convert_scores"]
    shown = cli("ingest", run, "--source", "ours", f"log={tmp_path / 'raw.bin'}", width=200)  # which is which
    assert "convert_scores (derived from raw:convert_scores)" in shown.out and "\nlog " in shown.out
    manifest = json.loads((run / "manifest.json").read_text())
    assert [b.get("derived_from") for b in manifest["buffers"] if b["stage"] == "relayouted"] == ["raw:convert_scores"]
    assert all(c.ok for c in verify_run(loaded))


def test_compare_reads_the_drivers_own_tensor(chip, tmp_path):
    """A reference run with the true tensor and a driver run whose raw is right but whose relayout is wrong: the
    tensor stage is the first that differs (before the fix, the relayout replaced the driver's tensor, the
    tensor matched and dequantize was blamed)."""
    model, relayouted, driver = chip
    (tmp_path / "ref.bin").write_bytes(relayouted)
    ingest(tmp_path / "ref", "libedgetpu", [f"raw:convert_scores={tmp_path / 'raw.bin'}",
                                            f"tensor:convert_scores={tmp_path / 'ref.bin'}"])
    ingest(tmp_path / "drv", "ours", [f"tensor:convert_scores={tmp_path / 'tensor.bin'}"])
    ingest(tmp_path / "drv", "ours", [f"raw:convert_scores={tmp_path / 'raw.bin'}"], model=model)
    result = compare_runs(tmp_path / "ref", tmp_path / "drv")
    first = result.first_divergent
    assert (first.stage, first.tensor) == ("tensor", "convert_scores")
    assert f"{1500 * 91:#x}" in first.summary  # anchor 1500, where the driver's relayout went wrong


def test_raw_and_tensor_in_one_ingest_keep_both(chip, tmp_path):
    model, relayouted, driver = chip
    result = ingest(tmp_path / "r", "ours", [f"raw:convert_scores={tmp_path / 'raw.bin'}",
                                             f"tensor:convert_scores={tmp_path / 'tensor.bin'}"], model=model)
    assert result.relayouted == ("convert_scores",) and result.derived == ("relayouted:convert_scores",)
    run = load_run(tmp_path / "r")
    assert _bytes(run, "tensor", "convert_scores") == driver
    assert _bytes(run, "relayouted", "convert_scores") == relayouted


def test_the_drivers_tensor_after_a_derived_one_takes_its_place_and_keeps_it(chip, tmp_path):
    """A derived tensor stands in while the driver gave none; the driver's own takes the tensor stage without
    --replace (nothing the driver provided is replaced) and the derived one moves beside it."""
    model, relayouted, driver = chip
    run = tmp_path / "r"
    ingest(run, "ours", [f"raw:convert_scores={tmp_path / 'raw.bin'}"], model=model)
    loaded = load_run(run)
    assert loaded.buffer("tensor", "convert_scores").derived_from == "raw:convert_scores"
    assert _bytes(loaded, "tensor", "convert_scores") == relayouted
    result = ingest(run, "ours", [f"tensor:convert_scores={tmp_path / 'tensor.bin'}"])
    assert result.replaced == ()
    loaded = load_run(run)
    assert _bytes(loaded, "tensor", "convert_scores") == driver
    assert loaded.buffer("tensor", "convert_scores").derived_from is None
    assert _bytes(loaded, "relayouted", "convert_scores") == relayouted
    assert all(c.ok for c in verify_run(loaded))


def test_a_provided_buffer_is_replaced_only_with_replace(tmp_path, cli):
    (tmp_path / "a.bin").write_bytes(b"\x01" * 64)
    (tmp_path / "b.bin").write_bytes(b"\x02" * 64)
    run = tmp_path / "r"
    assert cli("ingest", run, "--source", "ours", f"input={tmp_path / 'a.bin'}").code == 0
    before = (run / "manifest.json").read_bytes()
    r = cli("ingest", run, "--source", "ours", f"input={tmp_path / 'b.bin'}")
    assert_one_line_error(r, "input", "--replace")
    assert (run / "manifest.json").read_bytes() == before
    assert sorted(p.name for p in (run / "input").iterdir()) == ["input.bin"]
    with pytest.raises(InputError, match="give replace to replace it"):
        ingest(run, "ours", [f"input={tmp_path / 'b.bin'}"])
    r = cli("ingest", run, "--source", "ours", f"input={tmp_path / 'b.bin'}", "--replace", "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["replaced"] == ["input"]
    assert "replaced the run's input buffer" in r.err
    assert _bytes(load_run(run), "input", "input") == b"\x02" * 64


def test_replace_from_npz_is_refused_too(tmp_path, cli):
    np.savez(tmp_path / "one.npz", input=np.ones(8, np.uint8))
    np.savez(tmp_path / "two.npz", input=np.zeros(8, np.uint8))
    run = tmp_path / "r"
    assert cli("ingest", run, "--from", "npz", tmp_path / "one.npz", "--source", "ours").code == 0
    assert_one_line_error(cli("ingest", run, "--from", "npz", tmp_path / "two.npz", "--source", "ours"),
                          "--replace")
    r = cli("ingest", run, "--from", "npz", tmp_path / "two.npz", "--source", "ours", "--replace")
    assert r.code == 0, r.err
    assert _bytes(load_run(run), "input", "input") == bytes(8)


def test_replacing_raw_re_derives_and_never_touches_the_drivers_tensor(chip, tmp_path):
    model, relayouted, driver = chip
    run = tmp_path / "r"
    ingest(run, "ours", [f"raw:convert_scores={tmp_path / 'raw.bin'}",
                         f"tensor:convert_scores={tmp_path / 'tensor.bin'}"], model=model)
    raw2 = bytearray((tmp_path / "raw.bin").read_bytes())
    raw2[0] ^= 0xFF
    (tmp_path / "raw2.bin").write_bytes(bytes(raw2))
    result = ingest(run, "ours", [f"raw:convert_scores={tmp_path / 'raw2.bin'}"], model=model, replace=True)
    assert result.replaced == ("raw:convert_scores",)
    loaded = load_run(run)
    assert _bytes(loaded, "tensor", "convert_scores") == driver
    assert _bytes(loaded, "relayouted", "convert_scores") != relayouted  # the relayout of the new raw
    # without the model the derived relayout of the old raw cannot be redone: it goes, the driver's stays
    result = ingest(run, "ours", [f"raw:convert_scores={tmp_path / 'raw.bin'}"], replace=True)
    loaded = load_run(run)
    assert [b.label for b in loaded.buffers] == ["raw:convert_scores", "tensor:convert_scores"]
    assert "relayouted:convert_scores" in result.replaced


def test_the_derived_stage_is_not_given_on_the_command_line(tmp_path, cli):
    (tmp_path / "t.bin").write_bytes(b"\0" * 8)
    assert_one_line_error(cli("ingest", tmp_path / "r", "--source", "ours", f"relayouted:x={tmp_path / 't.bin'}"),
                          "tensor:LAYER=FILE")


def test_a_derived_buffer_never_drops_a_provided_one_where_it_would_go(tmp_path):
    """A run written by a driver that holds both tensor:X and relayouted:X: nothing of it is replaced."""
    from forensics.runs.run import write_run

    with write_run(tmp_path / "r", "ours") as b:
        b.add_bytes("tensor", "x", b"\1" * 8)
        b.add_bytes("relayouted", "x", b"\2" * 8)
    before = (tmp_path / "r" / "manifest.json").read_bytes()
    with pytest.raises(InputError, match="has no place"):
        with write_run(tmp_path / "r", "ours", add=True) as b:
            b.add_bytes("tensor", "x", b"\3" * 8, derived_from="raw:x")
    assert (tmp_path / "r" / "manifest.json").read_bytes() == before
    # the driver's tensor arriving where a derived one stands, with the driver's relayouted beside: the derived goes
    with write_run(tmp_path / "s", "ours") as b:
        b.add_bytes("tensor", "x", b"\3" * 8, derived_from="raw:x")
        b.add_bytes("relayouted", "x", b"\2" * 8)
    with write_run(tmp_path / "s", "ours", add=True) as b:
        b.add_bytes("tensor", "x", b"\1" * 8)
    run = load_run(tmp_path / "s")
    assert [(e.label, e.derived_from) for e in run.buffers] == [("relayouted:x", None), ("tensor:x", None)]
    assert _bytes(run, "relayouted", "x") == b"\2" * 8 and _bytes(run, "tensor", "x") == b"\1" * 8
