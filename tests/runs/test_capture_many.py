"""capture --images: one run per image laid out as a compare --batch farm, each input as pycoral prepares it and
each manifest naming its image; resumable; a bad image fails alone; bad folders and a missing libedgetpu are
one-line errors; --tail-only over folders of accelerator outputs."""

from __future__ import annotations

import json
import os

import numpy as np
import pytest

from forensics.runs.run import load_run
from tests.conftest import assert_one_line_error
from tests.runs.runs_support import skip_with_libedgetpu
from tests.runs.test_capture import SSD_V2, _image_model, _pycoral_input, _ssd_v2_dumps

pytest.importorskip("PIL")


def _images(tmp_path, n=3):
    from PIL import Image

    folder = tmp_path / "images"
    folder.mkdir()
    rng = np.random.default_rng(5)
    for i in range(n):
        size = (40 + 13 * i, 30 + 7 * i)
        Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(folder / f"img{i}.png")
    (folder / "notes.txt").write_text("not an image", encoding="utf-8")
    return folder


@pytest.fixture
def model(tmp_path):
    path = tmp_path / "image.tflite"
    path.write_bytes(_image_model())
    return path


def test_one_run_per_image_resumable(tmp_path, cli, model):
    from PIL import Image

    images = _images(tmp_path)
    farm = tmp_path / "farm"
    result = cli("capture", "--model", model, "--images", images, "-o", farm, "--source", "a_litert", "--json")
    assert result.code == 0, result.err
    assert result.err == ""  # no progress bar when stderr is not a terminal
    doc = json.loads(result.out)
    assert len(doc["captured"]) == 3 and doc["kept"] == [] and doc["failed"] == []
    assert sorted(os.listdir(farm)) == ["img0.png", "img1.png", "img2.png"]
    for i in range(3):
        run = load_run(farm / f"img{i}.png" / "a_litert")
        assert run.input_image == str(images / f"img{i}.png")
        got = np.fromfile(run.file_path(run.buffer("input")), np.uint8).reshape(48, 64, 3)
        assert np.array_equal(got, _pycoral_input(images / f"img{i}.png", 64, 48, Image.Resampling.LANCZOS))
    created = load_run(farm / "img1.png" / "a_litert").created
    # a rerun keeps what is there and captures only what is missing
    import shutil

    shutil.rmtree(farm / "img2.png")
    doc = json.loads(cli("capture", "--model", model, "--images", images, "-o", farm, "--source", "a_litert",
                         "--json").out)
    assert len(doc["kept"]) == 2 and doc["captured"] == [str(farm / "img2.png" / "a_litert")]
    assert load_run(farm / "img1.png" / "a_litert").created == created
    # a second source into the same folder makes pairs that compare --batch reads
    assert cli("capture", "--model", model, "--images", images, "-o", farm, "--source", "b_nearest",
               "--resampling", "nearest").code == 0
    batch = cli("compare", "--batch", farm, "-o", tmp_path / "s.csv", "--json")
    rows = json.loads(batch.out)["rows"]
    assert [r["verdict"] for r in rows] == ["DIFFER"] * 3
    assert all(r["first_divergent_stage"] == "input" for r in rows)


def test_image_list_and_a_bad_image(tmp_path, cli, model):
    images = _images(tmp_path, n=2)
    (images / "broken.png").write_bytes(b"\x89PNG not really")
    listing = tmp_path / "list.txt"
    listing.write_text("# tonight's set\nimages/img0.png\nimages/broken.png\n\nimages/img1.png\n", encoding="utf-8")
    result = cli("capture", "--model", model, "--images", listing, "-o", tmp_path / "farm", "--json")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "broken.png" in lines[0] and "cannot read the image" in lines[0]
    doc = json.loads(result.out)
    assert len(doc["captured"]) == 2 and doc["failed"][0]["image"].endswith("broken.png")
    assert not (tmp_path / "farm" / "broken.png" / "litert").exists()


@pytest.mark.parametrize("setup, fragment", [
    ("empty", "holds no images"),
    ("missing", "no such folder or image list"),
    ("empty-list", "the image list names no image"),
])
def test_bad_image_sets(tmp_path, cli, model, setup, fragment):
    target = tmp_path / "set"
    if setup == "empty":
        target.mkdir()
        (target / "readme.md").write_text("x", encoding="utf-8")
    elif setup == "empty-list":
        target.write_text("# nothing\n", encoding="utf-8")
    assert_one_line_error(cli("capture", "--model", model, "--images", target, "-o", tmp_path / "farm"), fragment)


def test_edgetpu_model_without_libedgetpu_stops_at_once(tmp_path, cli, shared_data):
    skip_with_libedgetpu()
    images = _images(tmp_path)
    result = cli("capture", "--model", shared_data / SSD_V2, "--images", images, "-o", tmp_path / "farm")
    assert_one_line_error(result, "libedgetpu.so.1")
    assert not any((tmp_path / "farm").glob("*/litert/manifest.json"))


def test_tail_only_over_folders_of_accelerator_outputs(tmp_path, cli, shared_data):
    for i in range(2):
        folder = tmp_path / "outputs" / f"frame{i}"
        folder.mkdir(parents=True)
        _, files = _ssd_v2_dumps(folder, shared_data, seed=i + 1)
        for name, path in files.items():
            os.rename(path, folder / f"{name}.bin")
    result = cli("capture", "--model", shared_data / SSD_V2, "--tail-only", "--images", tmp_path / "outputs",
                 "-o", tmp_path / "farm", "--source", "libedgetpu")
    assert result.code == 0, result.err
    for i in range(2):
        run = load_run(tmp_path / "farm" / f"frame{i}" / "libedgetpu")
        assert run.input_image == str(tmp_path / "outputs" / f"frame{i}")
        assert run.stages == ("raw", "tensor", "dequantized", "detections")
    (tmp_path / "outputs" / "frame2").mkdir()
    result = cli("capture", "--model", shared_data / SSD_V2, "--tail-only", "--images", tmp_path / "outputs",
                 "-o", tmp_path / "farm", "--source", "libedgetpu", "--json")
    assert result.code == 2 and "holds no Squeeze1.bin" in result.err
    assert len(json.loads(result.out)["kept"]) == 2



def _input_of(run_path):
    run = load_run(run_path)
    return np.fromfile(run.file_path(run.buffer("input")), np.uint8).reshape(48, 64, 3)


def test_a_rerun_captures_again_what_another_picture_or_resampling_made(tmp_path, cli, model):
    from PIL import Image

    images = _images(tmp_path)
    farm = tmp_path / "farm"
    argv = ["capture", "--model", model, "--images", images, "-o", farm, "--json"]
    assert cli(*argv).code == 0
    # the same name now holds another picture (tonight's set replaced yesterday's)
    rng = np.random.default_rng(77)
    Image.fromarray(rng.integers(0, 256, (30, 40, 3), dtype=np.uint8)).save(images / "img0.png")
    doc = json.loads(cli(*argv).out)
    run0 = str(farm / "img0.png" / "litert")
    assert doc["recaptured"] == [{"run": run0, "because": "input"}] and doc["captured"] == [run0]
    assert len(doc["kept"]) == 2
    assert np.array_equal(_input_of(run0), _pycoral_input(images / "img0.png", 64, 48, Image.Resampling.LANCZOS))
    # another --resampling into the same runs: every one is captured again, with it
    doc = json.loads(cli(*argv, "--resampling", "nearest").out)
    assert [r["because"] for r in doc["recaptured"]] == ["resampling"] * 3 and doc["kept"] == []
    for i in range(3):
        got = _input_of(farm / f"img{i}.png" / "litert")
        assert np.array_equal(got, _pycoral_input(images / f"img{i}.png", 64, 48, Image.Resampling.NEAREST))
        assert load_run(farm / f"img{i}.png" / "litert").capture["resampling"] == "nearest"
    # asked again the same way: all kept
    doc = json.loads(cli(*argv, "--resampling", "nearest").out)
    assert len(doc["kept"]) == 3 and doc["captured"] == [] and doc["recaptured"] == []


def test_a_rerun_never_replaces_a_run_capture_did_not_write(tmp_path, cli, model):
    import zlib

    images = _images(tmp_path, n=1)
    run = tmp_path / "farm" / "img0.png" / "ours"
    (run / "input").mkdir(parents=True)
    data = bytes(range(256)) * 36  # a driver's own input buffer, 9,216 bytes
    (run / "input" / "input.bin").write_bytes(data)
    manifest = ('{"format": "forensics-run", "version": 1, "source": "ours", "created": null, "tool": "driver 1", '
                '"model": null, "input_image": null, "buffers": [{"stage": "input", "tensor": "input", '
                f'"file": "input/input.bin", "size": {len(data)}, "crc32": "0x{zlib.crc32(data):08x}"}}]}}\n')
    (run / "manifest.json").write_text(manifest, encoding="utf-8")
    result = cli("capture", "--model", model, "--images", images, "-o", tmp_path / "farm", "--source", "ours",
                 "--json")
    assert result.code == 2
    lines = result.err.strip().splitlines()
    assert len(lines) == 1 and "holds a run that capture did not write" in lines[0]
    assert json.loads(result.out)["failed"][0]["image"].endswith("img0.png")
    assert (run / "input" / "input.bin").read_bytes() == data and (run / "manifest.json").read_text() == manifest


def test_a_tail_only_rerun_captures_again_a_folder_whose_outputs_changed(tmp_path, cli, shared_data):
    folder = tmp_path / "outputs" / "frame0"
    folder.mkdir(parents=True)

    def outputs(seed):
        _, files = _ssd_v2_dumps(folder, shared_data, seed=seed)
        for name, path in files.items():
            os.replace(path, folder / f"{name}.bin")

    outputs(1)
    argv = ["capture", "--model", shared_data / SSD_V2, "--tail-only", "--images", tmp_path / "outputs", "-o",
            tmp_path / "farm", "--source", "libedgetpu", "--json"]
    assert cli(*argv).code == 0
    assert json.loads(cli(*argv).out)["kept"] == [str(tmp_path / "farm" / "frame0" / "libedgetpu")]
    outputs(2)  # the chip's outputs of another frame under the same folder name
    doc = json.loads(cli(*argv).out)
    assert doc["recaptured"] == [{"run": str(tmp_path / "farm" / "frame0" / "libedgetpu"), "because": "input"}]
    run = load_run(tmp_path / "farm" / "frame0" / "libedgetpu")
    for name in ("Squeeze1", "convert_scores"):
        import zlib

        held = next(b for b in run.buffers if b.tensor == name and b.stage in ("raw", "tensor"))
        assert held.crc32 == zlib.crc32((folder / f"{name}.bin").read_bytes())
