"""Buffer commands with model knowledge: --model/--tensor layouts, --deps geometry, --heatmap and --grid."""

import json

import numpy as np
import pytest

from tests.conftest import assert_one_line_error

SEGMENT = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def test_where_column_and_geometry_from_deps(cli):
    r = cli("anchors", "dumps/ours/convert_scores.bin", "--deps", "dumps/face_ssd", "--nonuniform", "--json")
    doc = json.loads(r.out)
    face = {row["index"]: row for row in doc["nonuniform"]}[203]
    assert face["geometry"] == {"layer": 0, "row": 3, "col": 7, "box": 2}
    assert face["prior"]["ycenter"] == pytest.approx(0.175) and face["prior"]["h"] == pytest.approx(0.2828, abs=1e-4)
    r = cli("anchors", "dumps/ours/convert_scores.bin", "--deps", "dumps/face_ssd", "--nonuniform")
    assert "L0 r3 c7 b2" in r.out


def test_diff_rows_carry_geometry(cli):
    r = cli("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin",
            "--deps", "dumps/face_ssd", "--limit", "1", "--json")
    row = json.loads(r.out)["records"][0]
    assert row["index"] == 1500 and row["geometry"] == {"layer": 1, "row": 5, "col": 0, "box": 0}


def test_heatmap_is_written_and_deterministic(cli, tmp_path):
    from PIL import Image

    outs = []
    for name in ("a.png", "b.png"):
        r = cli("anchors", "dumps/ours/convert_scores.bin", "--deps", "dumps/face_ssd", "--heatmap",
                tmp_path / name, "--json")
        assert r.code == 0
        doc = json.loads(r.out)["heatmap"]
        assert doc["peak_anchor"] == 203 and len(doc["panels"]) == 6
        assert sorted(doc["marked"]) == [143, 146, 200, 203, 206, 263, 266, 1278, 1284]
        outs.append((tmp_path / name).read_bytes())
    assert outs[0] == outs[1]
    image = Image.open(tmp_path / "a.png")
    assert image.size == (doc["width"], doc["height"])


def test_diff_grid_marks_the_broken_tail(cli):
    r = cli("diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin",
            "--deps", "dumps/face_ssd", "--grid", width=160)
    assert r.code == 1
    assert "L0 20x20x3" in r.out and "L1 10x10x6" in r.out
    lines = r.out.splitlines()
    top = next(i for i, line in enumerate(lines) if line.startswith("L0 20x20x3"))
    layer0 = [line[:40] for line in lines[top + 1:top + 21]]  # 20 rows of 20 two-character cells
    assert len(layer0) == 20 and not any("*" in row for row in layer0)  # anchors < 1200 are all equal
    assert r.out.count("*") > 0                                          # anchors from 1500 on are marked


def test_picture_flags_bad_input(cli, tmp_path):
    scores = "dumps/ours/convert_scores.bin"
    assert_one_line_error(cli("anchors", scores, "--heatmap", tmp_path / "x.png"), "--model", "--deps")
    assert_one_line_error(cli("anchors", scores, "--grid"), "--deps")
    assert_one_line_error(cli("anchors", scores, "--deps", "dumps/face_ssd", "--heatmap",
                              tmp_path / "missing" / "x.png"), "output directory does not exist")
    assert_one_line_error(cli("anchors", scores, "--deps", "dumps/face_ssd", "--heatmap", tmp_path),
                          "is a directory")
    assert_one_line_error(cli("anchors", scores, "--deps", "dumps/face_ssd", "--grid", "--lane", "9"), "--lane 9")
    assert_one_line_error(cli("anchors", "dumps/ours/input.bin", "--deps", "dumps/face_ssd", "--grid"),
                          "the model has 2034 anchors")
    assert_one_line_error(cli("anchors", scores, "--tensor", "convert_scores"), "--tensor needs --model")
    assert_one_line_error(cli("anchors", scores, "--deps", tmp_path), "anchors.bin")


@pytest.fixture
def raw_and_tensor(shared_data, tmp_path):
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.tensors import tensor_record_layout

    model = shared_data / SEGMENT
    tensor = np.zeros((1917, 91), np.uint8)
    tensor[:, 0] = 255
    tensor[500, 0], tensor[500, 18] = 3, 250       # a dog at anchor 500
    tensor[1900, 0], tensor[1900, 1] = 10, 240     # a person at anchor 1900
    with open_model(model) as m:
        layer = tensor_record_layout(m, "convert_scores", 174447).layer
        raw = inverse_relayout(tensor.reshape(-1), layer_map(layer))
    (tmp_path / "t.bin").write_bytes(tensor.tobytes())
    (tmp_path / "r.bin").write_bytes(raw.tobytes())
    return model, tmp_path / "t.bin", tmp_path / "r.bin"


def test_raw_and_tensor_layouts_find_the_same_anchors(cli, raw_and_tensor, shared_data):
    model, tensor, raw = raw_and_tensor
    labels = shared_data / "coco_labels.txt"
    found = {}
    for name, path in (("tensor", tensor), ("raw", raw)):
        r = cli("anchors", path, "--model", model, "--tensor", "convert_scores", "--labels", labels,
                "--nonuniform", "--json")
        assert r.code == 0, r.err
        doc = json.loads(r.out)
        assert doc["model_tensor"]["mode"] == name
        assert doc["record_size"] == (92 if name == "raw" else 91)
        found[name] = [(n["index"], n["values"][18], n["geometry"]["layer"]) for n in doc["nonuniform"]]
    assert found["raw"] == found["tensor"] == [(500, 250 / 256, 0), (1900, 0.0, 4)]  # 1887..1910 is the 2x2x6 layer
    r = cli("anchors", raw, "--model", model, "--tensor", "convert_scores", "--labels", labels, "--nonuniform",
            width=250)
    assert "background 0.9961 -> 0.01172, dog 0 -> 0.9766" in r.out


def test_model_layout_errors(cli, raw_and_tensor):
    model, tensor, raw = raw_and_tensor
    assert_one_line_error(cli("anchors", "dumps/ours/convert_scores.bin", "--model", model, "--tensor",
                              "convert_scores"), "176368", "174447")
    assert_one_line_error(cli("diff", tensor, raw, "--model", model, "--tensor", "convert_scores"),
                          "tensor layout", "raw layout", "relayout")
    assert_one_line_error(cli("anchors", tensor, "--model", model, "--tensor", "no_such_tensor"), "no_such_tensor")


def test_hexdump_anchor_of_a_raw_dump(cli, raw_and_tensor):
    model, tensor, raw = raw_and_tensor
    r = cli("hexdump", raw, "--model", model, "--tensor", "convert_scores", "--anchor", "500", "--context", "0",
            "--json")
    row = json.loads(r.out)["rows"][0]
    assert row["a"].startswith("03 00") and len(row["a"].split()) == 92


def test_raw_records_out_of_anchor_order_are_mapped_back(cli, shared_data, tmp_path):
    # split_concat's outputs/rnn2 is z=2 padded to 4-byte lanes, written in 2x2 tiles: raw record order is
    # not anchor order, so indices must be translated back (the story's convert_scores case, reordered).
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.tensors import tensor_record_layout

    model = shared_data / "split_concat_edgetpu.tflite"
    tensor = np.full(128, 7, np.uint8)
    tensor[2 * 37], tensor[2 * 50 + 1] = 200, 9
    with open_model(model) as m:
        view = tensor_record_layout(m, "outputs/rnn2", 128)
        raw = inverse_relayout(tensor, layer_map(view.layer))
    (tmp_path / "t.bin").write_bytes(tensor.tobytes())
    (tmp_path / "r.bin").write_bytes(raw.tobytes())
    assert raw.tobytes() != np.pad(tensor.reshape(64, 2), ((0, 0), (0, 2)), constant_values=0x80).tobytes()
    results = {}
    for name in ("t.bin", "r.bin"):
        r = cli("anchors", tmp_path / name, "--model", model, "--tensor", "outputs/rnn2", "--nonuniform", "--json")
        doc = json.loads(r.out)
        results[name] = [(n["index"], n["hex"][:5]) for n in doc["nonuniform"]]
    assert results["t.bin"] == results["r.bin"] == [(37, "c8 07"), (50, "07 09")]


def test_diff_worst_element_of_a_raw_dump_is_named_by_its_anchor(cli, shared_data, tmp_path):
    # Records out of anchor order (2x2 tiles): the worst element's anchor is the tensor's, not the record's.
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.tensors import tensor_record_layout

    model = shared_data / "split_concat_edgetpu.tflite"
    a = np.full(128, 7, np.uint8)
    b = a.copy()
    b[2 * 37 + 1] = 100  # anchor 37, lane 1: the largest error
    b[2 * 50] = 20
    with open_model(model) as m:
        view = tensor_record_layout(m, "outputs/rnn2", 128)
        mapping = layer_map(view.layer)
    paths = {}
    for name, tensor in (("a", a), ("b", b)):
        for kind, data in (("t", tensor), ("r", inverse_relayout(tensor, mapping))):
            paths[kind + name] = tmp_path / f"{kind}{name}.bin"
            paths[kind + name].write_bytes(data.tobytes())
    worst = {}
    for kind in ("t", "r"):
        r = cli("diff", paths[kind + "a"], paths[kind + "b"], "--model", model, "--tensor", "outputs/rnn2", "--json")
        doc = json.loads(r.out)
        assert doc["stats"]["max_abs_lsb"] == 93
        worst[kind] = (doc["stats"]["worst"]["anchor"], doc["stats"]["worst"]["lane"])
    assert worst["t"][0] == worst["r"][0] == 37


def test_class_and_array_locators_count_elements_not_bytes():
    """A float32 score vector's element 653 is class 653 at byte 2,612; a label names it by class id. An array's
    element is (y, x, z) of a 4-D shape, (record, lane) of (1, N, C), else only its byte offset."""
    from forensics.core.layout import RecordLayout
    from forensics.decode.modeldumps import array_locator, class_locator

    layout = RecordLayout(record_size=1001 * 4, count=1)
    labels = tuple(f"name{c}" for c in range(1001))
    assert class_locator(layout, 4, labels)(653) == {"class": 653, "offset": 2612, "label": "name653"}
    assert class_locator(layout, 4)(0) == {"class": 0, "offset": 0}
    assert class_locator(RecordLayout(record_size=1008, count=1), 1, labels[:10])(653) == {"class": 653,
                                                                                           "offset": 653}
    assert array_locator((1, 6, 5, 3), 8)(73) == {"y": 4, "x": 4, "z": 1, "offset": 584}
    assert array_locator((1, 300, 4), 4)(310) == {"record": 77, "lane": 2, "offset": 1240}
    assert array_locator((1, 1001), 1)(653) == {"offset": 653}
