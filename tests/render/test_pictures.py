"""Heatmap PNGs, the terminal grid and the two-decode overlay: sizes, panels, pixels read back, determinism."""

from __future__ import annotations

import io

import numpy as np
import pytest
from rich.console import Console

from tests.render.pictures_support import multiple_grid_anchors
from forensics.core.errors import InputError
from forensics.decode.geometry import infer_geometry
from forensics.render import pictures
from forensics.render.grid import grid_map, levels
from forensics.render.overlay import COLOUR_A, COLOUR_B, OverlayBox, boxes_from_detections, overlay
from forensics.render.pictures import MARK, heatmap, ramp_colours

Image = pytest.importorskip("PIL.Image")

STORY_NONUNIFORM = [143, 146, 200, 203, 206, 263, 266, 1278, 1284]


@pytest.fixture
def story_geometry(ssd320_anchors):
    return infer_geometry(ssd320_anchors)


def story_scores():
    """The story's face lane (scale 1/256) per anchor: 0 everywhere but the non-uniform anchors."""
    face = np.zeros(2034)
    face[[143, 146]] = 1 / 256
    face[200] = 5 / 256
    face[203] = 255 / 256
    face[206] = 254 / 256
    face[263] = face[266] = 128 / 256
    face[[1278, 1284]] = 10 / 256
    return face


def pixels(picture):
    image = Image.open(io.BytesIO(picture.png))
    assert image.format == "PNG"
    return np.asarray(image.convert("RGB"))


def panel_runs(row: np.ndarray, min_gap: int = 6) -> int:
    """Non-white runs along one pixel row, joining runs separated by fewer than `min_gap` white pixels."""
    ink = np.any(row != 255, axis=1)
    runs, gap, inside = 0, min_gap, False
    for on in ink:
        if on:
            if not inside and gap >= min_gap:
                runs += 1
            inside, gap = True, 0
        else:
            gap += 1
            inside = False if gap >= min_gap else inside
    return runs


def test_heatmap_png_has_the_declared_size_and_one_panel_per_layer(story_geometry):
    picture = heatmap(story_geometry, story_scores(), marked=STORY_NONUNIFORM, vmin=0, vmax=1)
    image = pixels(picture)
    assert image.shape == (picture.height, picture.width, 3)
    assert len(picture.panels) == 6
    # counted from the pixels: a line through the middle of the panels crosses 6 panels + the colour bar
    top = picture.panels[0].top
    assert panel_runs(image[top + 40]) == 6 + 1
    # each cell is a square, and every panel is readable: the 1x1 layer is a big square, 20x20 cells >= 10 px
    cells = {p.layer: p.cell for p in picture.panels}
    assert cells[5] >= 200 and cells[0] >= 10
    for panel, g in zip(picture.panels, story_geometry.layers):
        assert (panel.rows, panel.cols) == (g.rows, g.cols)
        x0, y0, x1, y1 = panel.cell_box(g.rows - 1, g.cols - 1)
        assert x1 - x0 == y1 - y0


def test_the_signal_is_where_the_test_put_it(story_geometry):
    values = np.zeros(2034)
    values[203] = 1.0            # L0 r3 c7
    values[1800 + 6 * 12] = 1.0  # L2 (5x5) r2 c2
    picture = heatmap(story_geometry, values, vmin=0, vmax=1)
    image = pixels(picture)
    hot = tuple(int(v) for v in ramp_colours(1.0))
    cold = tuple(int(v) for v in ramp_colours(0.0))
    # every hot pixel outside the colour bar lies inside one of the two cells, and both cells are hot all over
    bar_left = max(p.left + p.cols * p.cell for p in picture.panels)
    ys, xs = np.nonzero(np.all(image[:, :bar_left] == hot, axis=2))
    expected = [picture.panels[0].cell_box(3, 7), picture.panels[2].cell_box(2, 2)]
    inside = [any(x0 <= x <= x1 and y0 <= y <= y1 for x0, y0, x1, y1 in expected) for x, y in zip(xs, ys)]
    assert all(inside)
    for x0, y0, x1, y1 in expected:
        assert np.all(image[y0:y1 + 1, x0:x1 + 1] == hot)
    # and a neighbouring cell is cold
    cx, cy = picture.panels[0].cell_centre(3, 8)
    assert tuple(image[cy, cx]) == cold


def test_marked_anchors_get_a_frame_around_their_cell(story_geometry):
    picture = heatmap(story_geometry, story_scores(), marked=[203, 1284], vmin=0, vmax=1)
    image = pixels(picture)
    place = story_geometry.place(1284)
    marked_cells = {(0, 3, 7), (place.layer, place.row, place.col)}
    for panel in picture.panels:
        for r in range(panel.rows):
            for c in range(panel.cols):
                x0, y0, x1, y1 = panel.cell_box(r, c)
                corner = tuple(image[y0, x0])
                if (panel.layer, r, c) in marked_cells:
                    assert corner == MARK and tuple(image[y1, x1]) == MARK
                else:
                    assert corner != MARK
    # the middle of the marked 203 cell still shows its value
    cx, cy = picture.panels[0].cell_centre(3, 7)
    assert tuple(image[cy, cx]) == tuple(int(v) for v in ramp_colours(255 / 256))


def test_heatmaps_are_deterministic_bytes(story_geometry):
    first = heatmap(story_geometry, story_scores(), marked=STORY_NONUNIFORM, title="face", vmin=0, vmax=1)
    second = heatmap(story_geometry, story_scores().copy(), marked=list(STORY_NONUNIFORM), title="face",
                     vmin=0, vmax=1)
    assert first.png == second.png
    changed = story_scores()
    changed[2033] = 0.5
    assert heatmap(story_geometry, changed, marked=STORY_NONUNIFORM, title="face", vmin=0, vmax=1).png != first.png
    # no time or software chunks: only the image chunks a PNG needs
    chunks, data = [], first.png[8:]
    while data:
        length = int.from_bytes(data[:4], "big")
        chunks.append(data[4:8])
        data = data[12 + length:]
    assert set(chunks) <= {b"IHDR", b"IDAT", b"IEND"}


def test_heatmap_on_anchors_without_a_grid_is_an_input_error(ssd320_anchors):
    shuffled = ssd320_anchors[np.random.default_rng(3).permutation(2034)]
    with pytest.raises(InputError, match="no grid geometry"):
        heatmap(infer_geometry(shuffled), np.zeros(2034))


def test_heatmap_to_an_unwritable_path_is_an_input_error(story_geometry, tmp_path):
    picture = heatmap(story_geometry, story_scores())
    with pytest.raises(InputError, match="output directory does not exist"):
        picture.save(tmp_path / "missing" / "out.png")
    picture.save(tmp_path / "out.png")
    assert (tmp_path / "out.png").read_bytes() == picture.png


def test_diff_heatmap_scale_starts_at_zero_and_nan_cells_are_grey(story_geometry):
    values = np.zeros(2034)
    values[5] = 7       # a 7 LSB difference
    values[1500] = np.nan
    picture = heatmap(story_geometry, values, marked=[5])
    assert (picture.vmin, picture.vmax) == (0.0, 7.0)
    image = pixels(picture)
    place = story_geometry.place(1500)
    cx, cy = picture.panels[place.layer].cell_centre(place.row, place.col)
    assert tuple(image[cy, cx]) == pictures.MISSING


# --- terminal grid ---------------------------------------------------------------------------------------------

def render(renderable, width=100) -> str:
    console = Console(file=io.StringIO(), width=width, color_system=None, highlight=False, emoji=False)
    console.print(renderable)
    return console.file.getvalue()


def test_grid_golden_text_for_a_small_head():
    geometry = infer_geometry(multiple_grid_anchors(((4, 4), (2, 2), (1, 1))))
    values = np.zeros(geometry.num_anchors)
    values[geometry.index(0, 1, 2, 0)] = 1.0
    values[geometry.index(1, 1, 0, 3)] = 0.3
    values[geometry.index(2, 0, 0, 5)] = 0.6
    text = render(grid_map(geometry, values, marked=[geometry.index(0, 1, 2, 0)], vmin=0, vmax=1,
                           value_label="face"))
    assert text == (
        "L0 4x4x3  L1 2x2x6  L2 1x1x6\n"
        "········  ····      ▓▓\n"
        "····█*··  ▒▒··\n"
        "········\n"
        "········\n"
        "face (max over a cell's boxes): ·· <=0  ░░ <=0.25  ▒▒ <=0.5  ▓▓ <=0.75  ██ <=1  ▒* marked\n"
    )


def test_grid_shows_the_story_anchor_at_row3_col7_and_wraps_to_the_width(story_geometry):
    text = render(grid_map(story_geometry, story_scores(), marked=STORY_NONUNIFORM, vmin=0, vmax=1), width=60)
    lines = text.splitlines()
    assert lines[0].startswith("L0 20x20x3")
    row3 = lines[1 + 3]
    assert row3[2 * 7:2 * 7 + 2] == "█*"
    assert all(len(line) <= 60 for line in lines)
    # the 1x1 layer is there, on its own line at this width
    assert any(line.startswith("L5 1x1x6") for line in lines)


def test_grid_levels_put_any_value_above_the_minimum_above_level0():
    assert levels(np.array([0.0, 1e-9, 0.25, 0.2500001, 0.5, 0.75, 1.0, 2.0, np.nan]), 0.0, 1.0).tolist() == \
        [0, 1, 1, 2, 2, 3, 4, 4, -1]


# --- two decodes on one image ------------------------------------------------------------------------------------

def test_overlay_draws_both_sets_in_their_colours_with_a_legend():
    a = [OverlayBox(100, 60, 200, 180, "face 0.996")]
    b = [OverlayBox(100, 60, 200, 180, "face 0.996"), OverlayBox(250, 150, 300, 220, "face 0.5")]
    picture = overlay((320, 240), a, b)
    image = pixels(picture)
    assert image.shape == (240, 320, 3)
    # the identical box: A's colour just outside, B's on the edge; the moved-only box in B's colour alone
    assert tuple(image[120, 98]) == COLOUR_A and tuple(image[120, 99]) == COLOUR_A
    assert tuple(image[120, 100]) == COLOUR_B and tuple(image[120, 101]) == COLOUR_B
    assert tuple(image[185, 202]) != COLOUR_B
    assert tuple(image[190, 250]) == COLOUR_B and tuple(image[190, 248]) != COLOUR_A
    # the legend's two swatches
    legend = image[:60, :120].reshape(-1, 3)
    assert (legend == COLOUR_A).all(axis=1).sum() > 50
    assert (legend == COLOUR_B).all(axis=1).sum() > 50
    assert overlay((320, 240), a, b).png == picture.png


def test_overlay_on_the_face_image_from_decode_rows(shared_data):
    width, height = Image.open(shared_data / "face.jpg").size
    rows = [{"anchor": 203, "class": 0, "score": 0.99609375, "box": [0.054, 0.284, 0.308, 0.502]}]
    moved = [{"anchor": 203, "class": 0, "score": 0.99609375, "box": [0.154, 0.284, 0.408, 0.502]}]
    a = boxes_from_detections(rows, (width, height), labels=["face"])
    b = boxes_from_detections(moved, (width, height), labels=["face"])
    assert a[0].label == "#203 face 0.996"
    assert a[0].xmin == pytest.approx(0.284 * width)
    picture = overlay(shared_data / "face.jpg", a, b)
    image = pixels(picture)
    assert image.shape == (height, width, 3)
    x = round((a[0].xmin + a[0].xmax) / 2)
    assert tuple(image[round(0.308 * height) + 2, x]) == COLOUR_A   # A's bottom edge, 2 px outside
    assert tuple(image[round(0.408 * height), x]) == COLOUR_B       # B's bottom edge


def test_overlay_prefers_image_boxes_and_drops_rows_under_the_display_threshold():
    rows = [{"class": 1, "score": 0.9, "box": [0, 0, 1, 1], "image_box": {"xmin": 1, "ymin": 2, "xmax": 3, "ymax": 4}},
            {"class": 1, "score": 0.1, "box": [0, 0, 1, 1]}]
    boxes = boxes_from_detections(rows, (100, 100), score_threshold=0.5)
    assert [(b.xmin, b.ymin, b.xmax, b.ymax) for b in boxes] == [(1, 2, 3, 4)]


def test_overlay_on_an_unreadable_image_is_an_input_error(tmp_path):
    bad = tmp_path / "not_an_image.jpg"
    bad.write_bytes(b"hello")
    with pytest.raises(InputError, match="cannot read the image"):
        overlay(bad, [], [])
    with pytest.raises(InputError, match="no such file"):
        overlay(tmp_path / "missing.jpg", [], [])


def test_overlay_rows_from_a_saved_decode_json(tmp_path):
    import json

    from forensics.render.overlay import load_detections, overlay_rows

    other = tmp_path / "other.json"
    other.write_text(json.dumps({"num_detections": 1, "detections": [
        {"row": 0, "anchor": 203, "class": 0, "score": 0.99609375, "box": [0.25, 0.25, 0.75, 0.5],
         "label": "face"}]}))
    rows_b = [{"anchor": 203, "class": 0, "score": 0.99609375, "box": [0.25, 0.5, 0.75, 0.75]}]
    picture = overlay_rows(None, load_detections(other), rows_b, image_size=(200, 100),
                           names=("libedgetpu", "ours"))
    image = pixels(picture)
    assert image.shape == (100, 200, 3)
    assert tuple(image[50, 48]) == COLOUR_A     # A: x from 0.25 * 200 = 50, 2 px outside
    assert tuple(image[50, 100]) == COLOUR_B    # B: x from 0.5 * 200 = 100


@pytest.mark.parametrize("content, fragment", [
    ("{", "malformed JSON"),
    ('{"num_detections": 0}', "no \"detections\" list"),
    ('{"detections": [{"box": [0, 0, 1]}]}', "detection 0 has no usable box"),
])
def test_overlay_other_that_is_not_a_decode_json_is_an_input_error(tmp_path, content, fragment):
    from forensics.render.overlay import load_detections

    bad = tmp_path / "other.json"
    bad.write_text(content)
    with pytest.raises(InputError, match=fragment):
        load_detections(bad)
    with pytest.raises(InputError, match="no such file"):
        load_detections(tmp_path / "missing.json")
