"""decode with anchor geometry (`where`, prior box, JSON `geometry`) and two decodes on one picture (--overlay)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import REPO, assert_one_line_error

DUMPS = REPO / "dumps"
DEPS = DUMPS / "face_ssd"


def pair(name):
    boxes, scores = DUMPS / name / "Squeeze1.bin", DUMPS / name / "convert_scores.bin"
    if not boxes.is_file():
        pytest.skip("bundled dumps absent")
    return boxes, scores


def test_json_detections_carry_geometry_and_prior(cli):
    from forensics.decode.ssd_anchors import generate_anchors, standard_config
    from forensics.decode.geometry import infer_geometry

    r = cli("decode", "--deps", DEPS, *pair("ours"), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    top = doc["detections"][0]
    assert top["anchor"] == 203
    assert top["geometry"] == {"layer": 0, "row": 3, "col": 7, "box": 2}
    # the prior is the deps' anchor (a second source: the generator for the 320x320 face SSD)
    np.testing.assert_allclose([top["prior"][k] for k in ("ycenter", "xcenter", "h", "w")],
                               generate_anchors(standard_config(320))[203], atol=1e-6)
    assert doc["anchor_geometry"]["layers"] == ["20x20x3", "10x10x6", "5x5x6", "3x3x6", "2x2x6", "1x1x6"]
    # every detection: the place maps back to its anchor index through the grid
    geometry = infer_geometry(generate_anchors(standard_config(320)))
    for det in doc["detections"]:
        g = det["geometry"]
        assert geometry.index(g["layer"], g["row"], g["col"], g["box"]) == det["anchor"]


def test_table_shows_where_and_prior(cli):
    r = cli("decode", "--deps", DEPS, *pair("ours"))
    assert r.code == 0
    row = next(line for line in r.out.splitlines() if line.split()[:1] == ["0"])
    assert "203" in row and "L0 r3 c7 b2" in row
    prior = next(line for line in r.out.splitlines() if line.split()[:1] == ["203"] and "(" in line)
    assert "(0.175, 0.375, 0.2828, 0.1414)" in prior


def test_model_decode_where_on_real_anchors(cli, shared_data, tmp_path):
    """--model: the 1917 anchors of SSD MobileNet v2 (19x19x3 first): a detection's where agrees with its index."""
    path = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    rng = np.random.default_rng(1)
    boxes = rng.integers(120, 140, (1917, 4), dtype=np.uint8)
    scores = np.zeros((1917, 91), np.uint8)
    scores[[5, 1083, 1916], [3, 17, 40]] = 250  # layer 0 (19x19x3), layer 1's first anchor, the last anchor
    boxes.tofile(tmp_path / "b.bin")
    scores.tofile(tmp_path / "s.bin")
    r = cli("decode", "--model", path, tmp_path / "b.bin", tmp_path / "s.bin", "--json")
    assert r.code == 0, r.err
    places = {d["anchor"]: d["geometry"] for d in json.loads(r.out)["detections"]}
    assert places[5] == {"layer": 0, "row": 0, "col": 1, "box": 2}
    assert places[1083] == {"layer": 1, "row": 0, "col": 0, "box": 0}  # 19 * 19 * 3 = 1083
    assert places[1916] == {"layer": 5, "row": 0, "col": 0, "box": 5}


def test_no_grid_anchors_fall_back_to_indices(cli, tmp_path):
    """Shuffled anchors form no grid: `where` is the plain index, JSON geometry is null, the decode still works."""
    import shutil

    deps = tmp_path / "deps"
    shutil.copytree(DEPS, deps)
    anchors = np.fromfile(deps / "anchors.bin", "<f4").reshape(-1, 4)
    np.random.default_rng(2).shuffle(anchors[:400])
    anchors.tofile(deps / "anchors.bin")
    r = cli("decode", "--deps", deps, *pair("ours"), "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["anchor_geometry"]["grid"] is False and doc["anchor_geometry"]["reason"]
    assert all(d["geometry"] is None and d["prior"] is not None for d in doc["detections"])
    text = cli("decode", "--deps", deps, *pair("ours")).out
    assert "anchor grid: none" in text and f"#{doc['detections'][0]['anchor']}" in text


# --- two decodes on one image ---------------------------------------------------------------------------

GREEN, RED = (0, 170, 0), (230, 20, 20)


def colours_along(img, x, y0, y1):
    px = img.load()
    return [px[x, y] for y in range(y0, y1)]


def frac(colours, colour):
    return sum(c == colour for c in colours) / len(colours)


@pytest.mark.parametrize("how", ["json", "dumps"])
def test_overlay_draws_both_decodes_in_two_colours(cli, tmp_path, how):
    Image = pytest.importorskip("PIL.Image")
    other = pair("broken")
    if how == "json":
        r = cli("decode", "--deps", DEPS, *other, "--json")  # no image size: normalised boxes only
        (tmp_path / "other.json").write_text(r.out)
        source = ["--overlay", tmp_path / "other.json"]
    else:
        source = ["--overlay-boxes", other[0], "--overlay-scores", other[1]]
    out = tmp_path / "overlay.png"
    r = cli("decode", "--deps", DEPS, *pair("ours"), "--image-size", "640x480", "--draw", out, *source,
            "--names", "libedgetpu,ours", "--score-threshold", "0.7", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert doc["drawing"]["overlay"]["names"] == ["libedgetpu", "ours"]
    ours = {d["anchor"]: d["image_box"] for d in doc["detections"] if d["score"] >= 0.7}
    theirs = json.loads(cli("decode", "--deps", DEPS, *other, "--image-size", "640x480", "--json").out)
    theirs = {d["anchor"]: d["image_box"] for d in theirs["detections"] if d["score"] >= 0.7}
    assert {1500, 1501} <= set(theirs) - set(ours)  # the broken driver's phantom boxes
    assert doc["drawing"]["overlay"]["boxes"] == [len(theirs), len(ours)]
    img = Image.open(out).convert("RGB")
    assert img.size == (640, 480)
    # the face (anchor 203) is in both: red on its left edge, green just outside it
    b = ours[203]
    x0, ya, yb = round(b["xmin"]), round(b["ymin"]) + 30, round(b["ymax"]) - 30
    assert frac(colours_along(img, x0, ya, yb), RED) > 0.9
    assert frac(colours_along(img, x0 - 2, ya, yb), GREEN) > 0.9
    # the phantom box only the other decode has: green, no red anywhere on its left edge
    p = theirs[1500]
    edge = colours_along(img, round(p["xmin"]) + 1 if p["xmin"] <= 1 else round(p["xmin"]) - 1,
                         round(p["ymin"]) + 20, round(p["ymax"]) - 20)
    assert frac(edge, GREEN) > 0.9 and RED not in edge
    # a legend names both
    assert GREEN in {img.getpixel((x, y)) for x in range(6, 40) for y in range(6, 40)}
    assert RED in {img.getpixel((x, y)) for x in range(6, 40) for y in range(6, 40)}


def test_overlay_on_the_image_is_deterministic(cli, tmp_path, shared_data):
    pytest.importorskip("PIL")
    other = pair("broken")
    image = shared_data / "face.jpg"
    outs = []
    for name in ("a.png", "b.png"):
        r = cli("decode", "--deps", DEPS, *pair("ours"), "--image", image, "--draw", tmp_path / name,
                "--overlay-boxes", other[0], "--overlay-scores", other[1])
        assert r.code == 0, r.err
        assert "in red" in r.out and "in green" in r.out
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1] and outs[0][:8] == b"\x89PNG\r\n\x1a\n"


def test_overlay_bad_input(cli, tmp_path):
    pytest.importorskip("PIL")
    ours = pair("ours")
    base = ["decode", "--deps", DEPS, *ours, "--image-size", "640x480"]
    out = tmp_path / "o.png"
    assert_one_line_error(cli(*base, "--draw", out, "--overlay", tmp_path / "missing.json"), "missing.json")
    (tmp_path / "bad.json").write_text('{"detections": [ {"box": [0, 0, 1')
    assert_one_line_error(cli(*base, "--draw", out, "--overlay", tmp_path / "bad.json"), "malformed JSON")
    (tmp_path / "nobox.json").write_text('{"detections": [{"score": 0.5}]}')
    assert_one_line_error(cli(*base, "--draw", out, "--overlay", tmp_path / "nobox.json"), "no usable box")
    good = tmp_path / "good.json"
    good.write_text(cli("decode", "--deps", DEPS, *ours, "--json").out)
    assert_one_line_error(cli(*base, "--draw", tmp_path / "no" / "dir" / "o.png", "--overlay", good), "o.png")
    assert_one_line_error(cli(*base, "--overlay", good), "--overlay needs --draw")
    assert_one_line_error(cli(*base, "--draw", out, "--overlay-boxes", ours[0]), "--overlay-scores")
    assert_one_line_error(cli(*base, "--draw", out, "--overlay", good, "--overlay-boxes", ours[0],
                              "--overlay-scores", ours[1]), "not both")
    assert_one_line_error(cli(*base, "--draw", out, "--overlay", good, "--names", "justone"), "two names")
    assert_one_line_error(cli(*base, "--names", "a,b"), "no --overlay")
    wrong = tmp_path / "short.bin"
    wrong.write_bytes(b"\0" * 100)
    assert_one_line_error(cli(*base, "--draw", out, "--overlay-boxes", wrong, "--overlay-scores", ours[1]),
                          "short.bin")
    assert not out.exists()
