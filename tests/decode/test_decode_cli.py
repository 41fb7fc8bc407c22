"""decode / tail / anchors-gen on the command line: the story, JSON, replay, and bad inputs."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from tests.conftest import REPO, assert_one_line_error

DUMPS = REPO / "dumps"
DEPS = DUMPS / "face_ssd"
OURS = DUMPS / "ours"


@pytest.fixture
def story():
    if not (OURS / "Squeeze1.bin").is_file():
        pytest.skip("bundled dumps absent")
    return OURS / "Squeeze1.bin", OURS / "convert_scores.bin"


def test_story_face_at_anchor_203(cli, story):
    r = cli("decode", "--deps", DEPS, *story, "--image-size", "640x480", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    top = doc["detections"][0]
    assert top["anchor"] == 203 and top["class"] == 0
    assert top["score"] == 0.99609375 and top["score_byte"] == 255
    assert [round(v, 3) for v in top["box"]] == [0.054, 0.284, 0.308, 0.502]
    # image space: the letterbox scale is the one factor between model pixels and image pixels
    scale = min(320 / 640, 320 / 480)
    assert top["image_box"]["xmin"] == pytest.approx(top["box"][1] * 320 / scale)
    assert top["image_box"]["ymax"] == pytest.approx(top["box"][2] * 320 / scale)
    assert doc["num_detections"] == len(doc["detections"])


def test_story_bytes_are_the_documented_ones(story):
    data = story[0].read_bytes()
    assert data[203 * 4: 204 * 4].hex(" ") == "92 9c 8b a4"


def test_story_table_rows(cli, story):
    r = cli("decode", "--deps", DEPS, *story, width=160)
    assert r.code == 0
    lines = r.out.splitlines()
    assert lines[0].startswith("TFLite_Detection_PostProcess (fast NMS): 9 detection(s) from 2034 anchors x 2")
    row = next(line for line in lines if line.split()[:2] == ["0", "203"])  # kernel row 0: anchor 203
    anchor_row = next(line for line in lines if line.split()[:1] == ["203"] and "(" in line)
    assert "255 x 0.00390625 = 0.996" in row and "L0 r3 c7 b2" in row
    assert "(0.054, 0.284, 0.308, 0.502)" in row
    assert "(0.175, 0.375, 0.2828, 0.1414)" in anchor_row  # the prior box the deltas were decoded against
    assert "(91.0, 17.3, 160.8, 98.6)" in anchor_row  # model pixels, 320x320


def test_replay_matches_litert(cli, story):
    pytest.importorskip("ai_edge_litert")
    r = cli("decode", "--deps", DEPS, *story, "--replay", "--dequantize", "litert", "--json")
    assert r.code == 0, r.err
    rep = json.loads(r.out)["replay"]
    assert rep["match"] is True and rep["exact_boxes"] is True and rep["num_detections"] == 9
    r = cli("decode", "--deps", DEPS, *story, "--replay")
    assert r.code == 0 and "MATCH |" in r.out


def test_float_npy_is_taken_as_dequantized(cli, story, tmp_path):
    from forensics.decode.ssd import Quantization, dequantize_single

    boxes = np.fromfile(story[0], np.uint8).reshape(-1, 4)
    scores = np.fromfile(story[1], np.uint8).reshape(-1, 4)[:, :2]
    np.save(tmp_path / "b.npy", dequantize_single(boxes, Quantization(0.10822763, 144)))
    np.save(tmp_path / "s.npy", dequantize_single(scores, Quantization(1 / 256, 0)))
    a = json.loads(cli("decode", "--deps", DEPS, *story, "--json").out)
    b = json.loads(cli("decode", "--deps", DEPS, tmp_path / "b.npy", tmp_path / "s.npy", "--json").out)
    assert b["dequantize"] == "none"
    assert [(d["anchor"], d["score"], d["box"]) for d in a["detections"]] == \
           [(d["anchor"], d["score"], d["box"]) for d in b["detections"]]


def test_draw_writes_png(cli, story, tmp_path, shared_data):
    from PIL import Image

    out = tmp_path / "faces.png"
    r = cli("decode", "--deps", DEPS, *story, "--image", shared_data / "face.jpg", "--draw", out,
            "--score-threshold", "0.9", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["drawing"]["boxes"] == 2  # 0.996 and 0.992 pass the display threshold
    with Image.open(out) as img:
        assert img.size == (512, 355)
        box = doc["detections"][0]["image_box"]
        x, y = int(box["xmin"]) + 1, int((box["ymin"] + box["ymax"]) / 2)
        original = Image.open(shared_data / "face.jpg").convert("RGB")
        assert img.convert("RGB").getpixel((x, y)) != original.getpixel((x, y))


def test_real_model_decode_with_replay(cli, shared_data, tmp_path):
    pytest.importorskip("ai_edge_litert")
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    rng = np.random.default_rng(0)
    boxes = rng.integers(150, 210, (1917, 4), dtype=np.uint8)
    scores = np.zeros((1917, 91), np.uint8)
    scores[rng.integers(0, 1917, 60), rng.integers(1, 91, 60)] = rng.integers(60, 256, 60)
    (tmp_path / "b.bin").write_bytes(boxes.tobytes())
    (tmp_path / "s.bin").write_bytes(scores.tobytes())
    r = cli("decode", "--model", model, tmp_path / "b.bin", tmp_path / "s.bin", "--replay", "--dequantize", "litert",
            "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["replay"]["match"] and doc["replay"]["source"] == "model tail"
    assert doc["num_detections"] > 0


def test_tail_command(cli, shared_data, tmp_path):
    out = tmp_path / "tail.tflite"
    r = cli("tail", shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite", "-o", out,
            "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert set(doc["inputs"]) == {"Squeeze1", "convert_scores"} and out.stat().st_size == doc["size_bytes"]


def test_anchors_gen_story_and_check(cli, shared_data):
    r = cli("anchors-gen", "--input-size", "320x320", "--anchor", "203", "--json")
    doc = json.loads(r.out)
    assert doc["config"]["num_anchors"] == 2034
    assert [round(v, 4) for v in doc["anchors"][0]["value"]] == [0.175, 0.375, 0.2828, 0.1414]
    for name in ("ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
                 "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"):
        r = cli("anchors-gen", "--input-size", "300x300", "--check-model", shared_data / name, "--json")
        assert r.code == 0, r.out
        assert json.loads(r.out)["check"]["matches"]
    r = cli("anchors-gen", "--input-size", "320x320", "--check-model", shared_data / name)
    assert r.code == 1 and "DIFFER" in r.out
    r = cli("anchors-gen", "--input-size", "320x320", "--check-deps", DEPS)
    assert r.code == 0 and "MATCH" in r.out


# --- bad inputs: one line, exit 2 ------------------------------------------------------------------------

def test_wrong_size_names_the_accepted_sizes(cli, story, tmp_path):
    bad = tmp_path / "short.bin"
    bad.write_bytes(b"\0" * 100)
    assert_one_line_error(cli("decode", "--deps", DEPS, story[0], bad), "4068", "8136")
    assert_one_line_error(cli("decode", "--deps", DEPS, story[0], story[1], "--layout", "tensor"), "4068")


def test_nan_npy(cli, story, tmp_path):
    arr = np.zeros((2034, 4), np.float32)
    arr[7, 1] = np.nan
    np.save(tmp_path / "nan.npy", arr)
    assert_one_line_error(cli("decode", "--deps", DEPS, tmp_path / "nan.npy", story[1]), "NaN")


def test_model_without_postprocess(cli, shared_data, story):
    assert_one_line_error(cli("decode", "--model", shared_data / "mobilenet_v1_0.25_128_quant_edgetpu.tflite",
                              *story), "TFLite_Detection_PostProcess")


def test_unreadable_image(cli, story, tmp_path):
    img = tmp_path / "x.png"
    img.write_bytes(b"not a png")
    assert_one_line_error(cli("decode", "--deps", DEPS, *story, "--image", img), "image")


@pytest.mark.parametrize("mutate, fragment", [
    (lambda d: d.pop("options"), "options"),
    (lambda d: d["options"].update(nms_iou_threshold=0), "nms_iou_threshold"),
    (lambda d: d["boxes"].update(scale=-1), "boxes.scale"),
    (lambda d: d.update(num_anchors=7), "num_anchors"),
    (lambda d: d["scores"].update(shape=[1, 2034, 7]), "columns"),
])
def test_bad_deps(cli, story, tmp_path, mutate, fragment):
    doc = json.loads((DEPS / "postprocess.json").read_text())
    mutate(doc)
    d = tmp_path / "deps"
    d.mkdir()
    (d / "postprocess.json").write_text(json.dumps(doc))
    (d / "anchors.bin").write_bytes((DEPS / "anchors.bin").read_bytes())
    assert_one_line_error(cli("decode", "--deps", d, *story), fragment)


def test_malformed_and_missing_deps(cli, story, tmp_path):
    d = tmp_path / "deps"
    d.mkdir()
    (d / "postprocess.json").write_text("{nope")
    (d / "anchors.bin").write_bytes(b"\0" * 15)
    assert_one_line_error(cli("decode", "--deps", d, *story), "malformed JSON")
    assert_one_line_error(cli("decode", "--deps", tmp_path / "absent", *story), "no such directory")
    assert_one_line_error(cli("decode", *story), "--model")
    assert_one_line_error(cli("decode", "--deps", DEPS, *story, "--draw", tmp_path / "o.png"), "--image")


def test_corrupt_model(cli, story, tmp_path):
    m = tmp_path / "bad.tflite"
    m.write_bytes(b"\x10\0\0\0TFL3" + random.Random(101).randbytes(40))
    r = cli("decode", "--model", m, *story)
    assert_one_line_error(r)
