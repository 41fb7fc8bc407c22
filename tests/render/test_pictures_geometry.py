"""Anchor geometry: real models' anchors, generated 320x320 anchors, no-grid inputs, the bijection property."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.render.pictures_support import (REAL_SSD_MODELS, SSD_300_MAPS, SSD_320_MAPS, multiple_grid_anchors,
                                           read_model_anchors)
from forensics.core.errors import InputError
from forensics.decode.geometry import (
    AnchorPlace,
    cell_marks,
    cell_values,
    geometry_for_deps,
    geometry_from_anchors_file,
    infer_geometry,
)
from forensics.buffer.heat import anchor_differences, anchor_values

REAL_LAYERS = [(19, 19, 3), (10, 10, 6), (5, 5, 6), (3, 3, 6), (2, 2, 6), (1, 1, 6)]


def layer_shapes(geometry):
    return [(g.rows, g.cols, g.boxes) for g in geometry.layers]


@pytest.mark.parametrize("model", REAL_SSD_MODELS)
def test_real_model_anchors_form_the_1917_grid(shared_data, model):
    anchors = read_model_anchors(shared_data / model)
    geometry = infer_geometry(anchors)
    assert geometry.is_grid, geometry.reason
    assert geometry.num_anchors == 1917
    assert layer_shapes(geometry) == REAL_LAYERS
    first = 0
    for g, (rows, cols, boxes) in zip(geometry.layers, REAL_LAYERS):
        assert g.first_anchor == first
        # first and last anchor of each layer: the top-left cell's first box and the bottom-right cell's last box
        assert geometry.place(first) == AnchorPlace(first, g.index, 0, 0, 0)
        last = first + rows * cols * boxes - 1
        assert g.last_anchor == last
        assert geometry.place(last) == AnchorPlace(last, g.index, rows - 1, cols - 1, boxes - 1)
        # the stored centres agree with the place: ycenter = (row + 0.5) / rows, within uint8 rounding
        for anchor in (first, last):
            place = geometry.place(anchor)
            yc, xc, _, _ = anchors[anchor]
            assert abs(yc - (place.row + 0.5) / rows) < 0.01
            assert abs(xc - (place.col + 0.5) / cols) < 0.01
        first = last + 1


@pytest.mark.parametrize("model", REAL_SSD_MODELS[:2])
def test_real_model_grid_matches_the_standard_generator(shared_data, model):
    """Cross-check: the float32 anchors equal the TF OD API config for 300x300 at the inferred feature maps."""
    anchors = read_model_anchors(shared_data / model)
    geometry = infer_geometry(anchors)
    assert geometry.feature_map_shapes == SSD_300_MAPS
    generated = multiple_grid_anchors(geometry.feature_map_shapes)
    np.testing.assert_allclose(anchors, generated, rtol=1e-4, atol=1e-6)
    # and every box shape the geometry reports is the stored one, box by box, in every cell
    places = geometry.places()
    for g in geometry.layers:
        in_layer = places[:, 0] == g.index
        shapes = np.asarray(g.box_shapes, dtype=np.float32)[places[in_layer, 3]]
        np.testing.assert_allclose(anchors[in_layer, 2:], shapes, rtol=1e-5)


def test_generated_320_anchors_put_the_story_anchor_203_at_layer0_row3_col7_box2(ssd320_anchors):
    geometry = infer_geometry(ssd320_anchors)
    assert geometry.num_anchors == 2034
    assert layer_shapes(geometry) == [(20, 20, 3), (10, 10, 6), (5, 5, 6), (3, 3, 6), (2, 2, 6), (1, 1, 6)]
    place = geometry.place(203)
    assert (place.layer, place.row, place.col, place.box) == (0, 3, 7, 2)
    assert geometry.where(203) == "L0 r3 c7 b2"
    assert geometry.geometry_of(203) == {"layer": 0, "row": 3, "col": 7, "box": 2}
    # the story's prior box for anchor 203: (0.175, 0.375, 0.2828, 0.1414), tall and narrow
    np.testing.assert_allclose(geometry.prior(203), (0.175, 0.375, 0.2828, 0.1414), atol=1e-4)
    assert geometry.index(0, 3, 7, 2) == 203
    layer_firsts = [g.first_anchor for g in geometry.layers]
    assert layer_firsts == [0, 1200, 1800, 1950, 2004, 2028]
    assert geometry.where(2033) == "L5 r0 c0 b5"
    assert geometry.where(1200) == "L1 r0 c0 b0"
    assert geometry.where(1199) == "L0 r19 c19 b2"


def test_strides_and_offsets_are_measured_from_the_centres(ssd320_anchors):
    geometry = infer_geometry(ssd320_anchors)
    for g, (rows, cols) in zip(geometry.layers, SSD_320_MAPS):
        if rows > 1:
            assert g.stride == pytest.approx((1 / rows, 1 / cols), rel=1e-5)
        assert g.offset == pytest.approx((0.5 / rows, 0.5 / cols), rel=1e-5)


def test_non_square_feature_maps():
    anchors = multiple_grid_anchors(((12, 20), (6, 10), (3, 5), (2, 3), (1, 2), (1, 1)))
    geometry = infer_geometry(anchors)
    assert geometry.is_grid, geometry.reason
    assert geometry.feature_map_shapes == ((12, 20), (6, 10), (3, 5), (2, 3), (1, 2), (1, 1))


def test_shuffled_anchors_form_no_grid_and_fall_back_to_plain_indices(ssd320_anchors):
    shuffled = ssd320_anchors[np.random.default_rng(1).permutation(len(ssd320_anchors))]
    geometry = infer_geometry(shuffled)
    assert not geometry.is_grid
    assert geometry.reason and "the layer starting at anchor" in geometry.reason
    assert geometry.layers == ()
    assert geometry.place(203) is None
    assert geometry.where(203) == "#203"
    assert geometry.geometry_of(203) is None
    assert geometry.to_dict()["grid"] is False
    with pytest.raises(InputError, match="no grid"):
        cell_values(geometry, np.zeros(2034))


def test_swapping_two_cells_breaks_the_grid(ssd320_anchors):
    anchors = ssd320_anchors.copy()
    anchors[[30, 31, 32, 60, 61, 62]] = anchors[[60, 61, 62, 30, 31, 32]]
    assert not infer_geometry(anchors).is_grid


def test_uneven_spacing_is_not_a_grid():
    anchors = multiple_grid_anchors(((5, 5),), reduce_boxes_in_lowest_layer=False, min_scale=0.2, max_scale=0.2)
    # move column 2 of every row to 0.62 instead of 0.5: the row is no longer evenly spaced
    anchors = anchors.copy()
    col2 = np.isclose(anchors[:, 1], 0.5)
    anchors[col2, 1] = 0.62
    geometry = infer_geometry(anchors)
    assert not geometry.is_grid
    assert "evenly spaced" in geometry.reason


def test_non_finite_anchors_are_not_a_grid(ssd320_anchors):
    anchors = ssd320_anchors.copy()
    anchors[17, 2] = np.nan
    geometry = infer_geometry(anchors)
    assert not geometry.is_grid and "anchor 17" in geometry.reason


@pytest.mark.parametrize("bad", [np.zeros((0, 4)), np.zeros((5, 3)), np.zeros((2, 2, 4)), np.array(["a"] * 4)])
def test_arrays_that_are_not_anchors_are_input_errors(bad):
    with pytest.raises(InputError):
        infer_geometry(bad)


def test_out_of_range_index_is_an_input_error(ssd320_anchors):
    geometry = infer_geometry(ssd320_anchors)
    with pytest.raises(InputError, match="out of range"):
        geometry.place(2034)
    with pytest.raises(InputError, match="row 20"):
        geometry.index(0, 20, 0, 0)


maps = st.lists(st.tuples(st.integers(1, 12), st.integers(1, 12)), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None)
@given(maps=maps, reduce=st.booleans())
def test_mapping_is_a_bijection_onto_the_grid(maps, reduce):
    # distinct feature maps in decreasing size, as SSD heads have them
    maps = sorted(set(maps), key=lambda m: -m[0] * m[1])
    if len(maps) == 1:
        maps = maps + [(1, 1)] if maps[0] != (1, 1) else maps
    anchors = multiple_grid_anchors(maps, reduce_boxes_in_lowest_layer=reduce)
    geometry = infer_geometry(anchors)
    assert geometry.is_grid, geometry.reason
    places = geometry.places()
    # every anchor lands on one grid position, and every grid position is hit exactly once
    expected = {(layer, r, c, b) for layer, g in enumerate(geometry.layers)
                for r in range(g.rows) for c in range(g.cols) for b in range(g.boxes)}
    got = [tuple(int(v) for v in p) for p in places]
    assert len(set(got)) == len(got) == len(anchors)
    assert set(got) == expected
    # the inverse map gives the index back
    for anchor in range(0, len(anchors), max(1, len(anchors) // 50)):
        assert geometry.index(*got[anchor]) == anchor
    # and each place's centre is the generated one
    for (layer, r, c, _b), (yc, xc, _h, _w) in zip(got, anchors):
        rows, cols = maps[layer]
        assert abs(yc - (r + 0.5) / rows) < 1e-6 and abs(xc - (c + 0.5) / cols) < 1e-6


def test_cell_values_take_the_maximum_over_the_cells_boxes(ssd320_anchors):
    geometry = infer_geometry(ssd320_anchors)
    values = np.zeros(2034)
    values[203] = 0.996
    values[1201] = 0.3  # layer 1, row 0, col 0, box 1
    cells = cell_values(geometry, values)
    assert [c.shape for c in cells] == [(20, 20), (10, 10), (5, 5), (3, 3), (2, 2), (1, 1)]
    assert cells[0][3, 7] == pytest.approx(0.996)
    assert cells[1][0, 0] == pytest.approx(0.3)
    assert sum(int(np.count_nonzero(c)) for c in cells) == 2
    marks = cell_marks(geometry, [203, 206, 2033])
    assert marks[0][3, 7] and marks[0][3, 8] and marks[5][0, 0]
    assert sum(int(m.sum()) for m in marks) == 3
    with pytest.raises(InputError, match="2033 values for 2034 anchors"):
        cell_values(geometry, values[:-1])


def test_anchor_values_and_differences_per_lane():
    records = np.array([[0xff, 0x00, 0x80, 0x80], [0x01, 0xff, 0x80, 0x80]], dtype=np.uint8)
    assert anchor_values(records, lanes=(1,), scale=1 / 256).tolist() == [0.0, 255 / 256]
    assert anchor_values(records, lanes=(0, 1)).tolist() == [255, 255]
    other = records.copy()
    other[1, 1] = 0xfd
    assert anchor_differences(records, other, lanes=(0, 1)).tolist() == [0, 2]
    with pytest.raises(InputError, match="lane 4"):
        anchor_values(records, lanes=(4,))


def test_geometry_from_an_extract_directory(tmp_path, ssd320_anchors):
    ssd320_anchors.astype("<f4").tofile(tmp_path / "anchors.bin")
    geometry = geometry_for_deps(tmp_path)
    assert geometry.where(203) == "L0 r3 c7 b2"
    assert geometry.source.endswith("anchors.bin")
    (tmp_path / "odd.bin").write_bytes(b"\0" * 20)
    with pytest.raises(InputError, match="20 bytes"):
        geometry_from_anchors_file(tmp_path / "odd.bin")
    (tmp_path / "empty_dir").mkdir()
    with pytest.raises(InputError, match="no such file"):
        geometry_for_deps(tmp_path / "empty_dir")
    with pytest.raises(InputError, match="not a directory"):
        geometry_for_deps(tmp_path / "missing")


def test_the_projects_generator_and_the_tests_formula_give_the_same_grid(ssd320_anchors):
    """Cross-check with the project's generator: same anchors (to float32 rounding), same geometry."""
    from forensics.decode import ssd_anchors

    generated = ssd_anchors.generate_anchors(ssd_anchors.standard_config(320))
    np.testing.assert_allclose(generated, ssd320_anchors, rtol=1e-4, atol=1e-6)
    geometry = infer_geometry(generated)
    assert geometry.feature_map_shapes == SSD_320_MAPS
    assert geometry.where(203) == "L0 r3 c7 b2"
    assert np.array_equal(geometry.places(), infer_geometry(ssd320_anchors).places())
