"""The helpers the commands call: geometry from --model / --deps, heat values from dumps, where/prior cells."""

from __future__ import annotations

import io

import numpy as np
import pytest
from tests.render.pictures_support import REPO, read_model_anchors

from forensics.io.dump import open_dump
from forensics.core.errors import InputError
from forensics.decode.geometry import (
    annotate,
    check_standard,
    geometry_for,
    geometry_for_model,
    infer_geometry,
    where_and_prior,
)
from forensics.buffer.heat import anchors_heat, diff_heat
from forensics.core.layout import layout_from
from forensics.decode.modeldumps import DumpContext, records_by_anchor

DUMPS = REPO / "dumps"
STORY_NONUNIFORM = (143, 146, 200, 203, 206, 263, 266, 1278, 1284)


@pytest.fixture
def face_geometry():
    if not (DUMPS / "face_ssd" / "anchors.bin").exists():
        pytest.skip("dumps/face_ssd is not generated")
    return geometry_for(deps=DUMPS / "face_ssd")


def records_of(path, geometry):
    dump = open_dump(path)
    layout = layout_from(dump.meta)
    return records_by_anchor(dump, DumpContext(layout, None, geometry)), layout


def test_geometry_for_the_bundled_face_deps_and_its_where_cells(face_geometry):
    assert face_geometry.feature_map_shapes == ((20, 20), (10, 10), (5, 5), (3, 3), (2, 2), (1, 1))
    assert where_and_prior(face_geometry, 203) == ("L0 r3 c7 b2", "0.175 0.375 0.2828 0.1414")
    row = annotate(face_geometry, {"index": 203, "hex": "01 ff 80 80"}, 203)
    assert row["geometry"] == {"layer": 0, "row": 3, "col": 7, "box": 2}
    assert row["prior"]["h"] == pytest.approx(0.2828, abs=1e-4)
    assert geometry_for() is None
    assert where_and_prior(None, 5) == ("", "") and annotate(None, {"a": 1}, 5) == {"a": 1}


def test_the_bundled_anchors_are_the_standard_config(face_geometry):
    check = check_standard(face_geometry)
    assert check.matches, check.to_dict()


def test_anchors_heat_of_the_story_scores_marks_the_nonuniform_records(face_geometry):
    records, layout = records_of(DUMPS / "ours" / "convert_scores.bin", face_geometry)
    heat = anchors_heat(records, layout, dominant=bytes.fromhex("ff008080"))
    assert heat.marked == STORY_NONUNIFORM
    assert heat.peak_anchor == 203 and heat.values[203] == 255 / 256
    assert heat.label == "lane 1 (face)"
    # the dominant record is found independently: the most common record of the buffer
    values, counts = np.unique(records, axis=0, return_counts=True)
    assert bytes(values[np.argmax(counts)]) == bytes.fromhex("ff008080")
    # a chosen lane: background, where anchor 203 is the minimum
    background = anchors_heat(records, layout, lane=0)
    assert background.values[203] == 1 / 256 and background.label == "lane 0 (background)"
    with pytest.raises(InputError, match="^lane 4 is outside"):  # the library names its parameter
        anchors_heat(records, layout, lane=4)


def test_diff_heat_of_the_broken_dma_marks_every_anchor_from_1500(face_geometry):
    a, layout = records_of(DUMPS / "libedgetpu" / "convert_scores.bin", face_geometry)
    b, _ = records_of(DUMPS / "broken" / "convert_scores.bin", face_geometry)
    heat = diff_heat(a, b, layout)
    # an independent count: records whose data lanes differ
    lanes = list(layout.data_lanes)
    differing = np.flatnonzero(np.any(a[:, lanes] != b[:, lanes], axis=1))
    assert heat.marked == tuple(int(i) for i in differing)
    assert heat.marked[0] >= 1500
    assert heat.values.max() == np.abs(a[:, lanes].astype(int) - b[:, lanes].astype(int)).max()
    assert diff_heat(a, a, layout).marked == ()


def test_a_dump_of_another_size_is_refused(face_geometry, tmp_path):
    short = tmp_path / "short.bin"
    short.write_bytes(b"\xff\x00\x80\x80" * 1917)
    dump = open_dump(short)
    with pytest.raises(InputError, match="holds 1917 records of 4 bytes but the model has 2034 anchors"):
        records_by_anchor(dump, DumpContext(layout_from(None), None, face_geometry))


def test_geometry_for_the_real_models_reads_the_postprocess_anchors(shared_data):
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    geometry = geometry_for_model(model)
    # the same anchors as the second reader (LiteRT's schema module)
    np.testing.assert_array_equal(geometry.anchors, read_model_anchors(model))
    assert geometry.where(1916) == "L5 r0 c0 b5"
    assert check_standard(geometry).matches
    # uint8 anchors: the grid is read all the same, they are just not the float config to 1e-5
    head = geometry_for_model(shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite")
    assert head.feature_map_shapes == geometry.feature_map_shapes
    np.testing.assert_allclose(head.anchors, read_model_anchors(
        shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"), rtol=1e-6)


def test_a_model_without_postprocess_has_no_geometry(shared_data):
    with pytest.raises(InputError, match="no TFLite_Detection_PostProcess"):
        geometry_for_model(shared_data / "mobilenet_v1_0.25_128_quant_edgetpu.tflite")


def test_check_standard_is_none_without_a_grid(face_geometry):
    shuffled = face_geometry.anchors[np.random.default_rng(0).permutation(2034)]
    assert check_standard(infer_geometry(shuffled)) is None


def test_the_story_heatmap_and_grid_end_to_end(face_geometry, tmp_path):
    Image = pytest.importorskip("PIL.Image")
    from rich.console import Console

    from forensics.render.grid import grid_for
    from forensics.render.pictures import MARK, heatmap_for

    records, layout = records_of(DUMPS / "ours" / "convert_scores.bin", face_geometry)
    heat = anchors_heat(records, layout, dominant=bytes.fromhex("ff008080"))
    picture = heatmap_for(face_geometry, heat, title="ours/convert_scores.bin")
    path = picture.save(tmp_path / "heat.png")
    image = np.asarray(Image.open(path).convert("RGB"))
    x0, y0, _, _ = picture.panels[0].cell_box(3, 7)
    assert tuple(image[y0, x0]) == MARK
    console = Console(file=io.StringIO(), width=100, color_system=None)
    console.print(grid_for(face_geometry, heat))
    assert console.file.getvalue().splitlines()[1 + 3][14:16] == "█*"
