"""--deps / --model: a dump shorter than the tensor they describe is named (HEAD WINDOW, exit 1: the story's
head-window trap), and a dump without a sidecar gets the lane names and dequantized values they know.

The deps directories and dumps are built here from the format's description (anchors.bin: float32 [N, 4];
postprocess.json: num_anchors, num_classes, options, boxes / scores quantization and shape), with numpy, and
the text pastes by hand (WinDbg `db`) or by the real tools (xxd, od)."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

import numpy as np
import pytest

from forensics.cli import main

OPTIONS = {"max_detections": 10, "max_classes_per_detection": 1, "detections_per_class": 100,
           "use_regular_nms": False, "nms_score_threshold": 1e-8, "nms_iou_threshold": 0.6, "y_scale": 10.0,
           "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}


def write_deps(directory, rows: int, cols: int, boxes: int, num_classes: int, *, score_scale=1 / 256,
               box_scale=0.1, box_zp=128):
    """A one-layer grid of rows x cols cells with `boxes` anchors each, and the decode's parameters."""
    directory.mkdir(parents=True, exist_ok=True)
    anchors = []
    for r in range(rows):
        for c in range(cols):
            for b in range(boxes):
                anchors.append(((r + 0.5) / rows, (c + 0.5) / cols, 0.1 * (b + 1), 0.1 * (b + 1)))
    n = len(anchors)
    np.asarray(anchors, dtype="<f4").tofile(directory / "anchors.bin")
    doc = {"num_anchors": n, "num_classes": num_classes, "options": {**OPTIONS, "num_classes": num_classes},
           "boxes": {"tensor": "Boxes", "scale": box_scale, "zero_point": box_zp, "shape": [1, n, 4]},
           "scores": {"tensor": "Scores", "scale": score_scale, "zero_point": 0,
                      "shape": [1, n, num_classes + 1]}}
    (directory / "postprocess.json").write_text(json.dumps(doc))
    return n


def padded_scores(n: int, columns: int, rng, pad_value=0x80) -> np.ndarray:
    """Scores as the chip writes them: each anchor's columns padded to a multiple of 4 bytes, pads alike."""
    width = -(-columns // 4) * 4
    out = np.full((n, width), pad_value, np.uint8)
    out[:, 0] = 0xFF
    out[:, 1:columns] = 0
    hits = rng.choice(n, size=max(3, n // 50), replace=False)
    out[hits, 0] = rng.integers(0, 255, hits.size)
    out[hits, 1:columns] = rng.integers(0, 255, (hits.size, columns - 1))
    return out


def box_deltas(n: int, rng) -> np.ndarray:
    return rng.integers(90, 170, (n, 4)).astype(np.uint8)


def run(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main([*map(str, argv), "--width", "120", "--no-color"], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


def run_json(*argv):
    code, out, err = run(*argv, "--json")
    return code, (json.loads(out) if out.strip() else None), err


# (rows, cols, boxes, num_classes): the face model's shape and models whose score records pad differently
MODELS = [(19, 19, 3, 1), (10, 10, 3, 2), (5, 6, 5, 6), (4, 4, 2, 3)]


@pytest.mark.parametrize("shape", MODELS)
def test_heads_of_every_tensor_are_named(tmp_path, shape):
    rows, cols, boxes, classes = shape
    rng = np.random.default_rng(rows * 100 + classes)
    n = write_deps(tmp_path / "deps", rows, cols, boxes, classes)
    columns = classes + 1
    width = -(-columns // 4) * 4
    dumps = {"boxes": (box_deltas(n, rng), 4)}
    if width != columns:
        dumps["padded scores"] = (padded_scores(n, columns, rng), width)
    for what, (array, record) in dumps.items():
        data = array.tobytes()
        (tmp_path / "full.bin").write_bytes(data)
        code, doc, err = run_json("anchors", tmp_path / "full.bin", "--deps", tmp_path / "deps")
        assert code == 0 and doc["tensor_fit"]["head_window"] is False, (what, err)
        for k in sorted({record * 2, 256, len(data) // 2, len(data) - record, len(data) - 1}):
            if not 0 < k < len(data) or k in (n * columns, n * width, n * 4):
                continue  # a size that is a whole tensor in another layout: nothing says it is a head
            (tmp_path / "head.bin").write_bytes(data[:k])
            code, doc, err = run_json("anchors", tmp_path / "head.bin", "--deps", tmp_path / "deps", "--nonuniform")
            assert code == 1, (what, k, err)
            assert doc["verdict"] == "HEAD WINDOW", (what, k)
            fit = doc["tensor_fit"]
            assert fit["anchors"] == n and fit["head_window"] is True
            assert fit["anchors_held"] == k // record, (what, k, fit)
            code, text, _ = run("anchors", tmp_path / "head.bin", "--deps", tmp_path / "deps")
            flat = " ".join(text.split())
            assert f"HEAD WINDOW | {k // record:,} of the {n:,} anchors the model has: the head-window trap" in flat
            assert "OK |" not in text


def test_the_story_head_with_the_bundled_deps(tmp_path):
    """The issue's command: 256 bytes of the scores and the face model's deps."""
    data = open("dumps/libedgetpu/convert_scores.bin", "rb").read()
    (tmp_path / "head.bin").write_bytes(data[:256])
    code, text, _ = run("anchors", tmp_path / "head.bin", "--nonuniform", "--deps", "dumps/face_ssd")
    assert code == 1
    assert "64 of the 2,034 anchors the model has: the head-window trap" in " ".join(text.split())


def windbg_db(data: bytes, base: int = 0xFFFFB20C4A3B2000) -> str:
    """WinDbg `db ADDRESS L<len>`: 16 bytes a line, `-` between the 8th and 9th, the ASCII column."""
    lines = [f"0: kd> db {base >> 32:08x}`{base & 0xFFFFFFFF:08x} L{len(data):x}"]
    for i in range(0, len(data), 16):
        chunk = data[i:i + 16]
        cells = [f"{b:02x}" for b in chunk] + ["  "] * (16 - len(chunk))
        hexpart = " ".join(cells[:8]) + "-" + " ".join(cells[8:])
        address = base + i
        text = "".join(chr(b) if 32 <= b < 127 else "." for b in chunk)
        lines.append(f"{address >> 32:08x}`{address & 0xFFFFFFFF:08x}  {hexpart}  {text}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("tool", ["windbg", "xxd", "od"])
def test_text_pastes_of_a_head(tmp_path, tool):
    rng = np.random.default_rng(5)
    n = write_deps(tmp_path / "deps", 19, 19, 3, 1)
    data = padded_scores(n, 2, rng).tobytes()
    head = data[:0x100]  # WinDbg `db ... L100`
    (tmp_path / "head.bin").write_bytes(head)
    paste = tmp_path / f"head.{tool}.txt"
    if tool == "windbg":
        paste.write_text(windbg_db(head))
    else:
        exe = shutil.which(tool)
        if exe is None:
            pytest.skip(f"{tool} is not installed")
        argv = [exe, str(tmp_path / "head.bin")] if tool == "xxd" else [exe, "-A", "x", "-t", "x1z", "-v",
                                                                         str(tmp_path / "head.bin")]
        paste.write_text(subprocess.run(argv, capture_output=True, text=True, check=True).stdout)
    code, doc, _ = run_json("anchors", paste, "--deps", tmp_path / "deps")
    assert code == 1 and doc["verdict"] == "HEAD WINDOW"
    assert doc["tensor_fit"]["anchors_held"] == 64 and doc["tensor_fit"]["anchors"] == n


def test_diff_of_two_heads_is_not_a_match(tmp_path):
    rng = np.random.default_rng(9)
    n = write_deps(tmp_path / "deps", 10, 10, 3, 2)
    data = padded_scores(n, 3, rng).tobytes()
    (tmp_path / "a.bin").write_bytes(data[:256])
    (tmp_path / "b.bin").write_bytes(data[:256])
    code, doc, _ = run_json("diff", tmp_path / "a.bin", tmp_path / "b.bin", "--deps", tmp_path / "deps")
    assert code == 1 and doc["verdict"] == "HEAD WINDOW"
    assert doc["tensor_fit"]["a"]["anchors_held"] == 64 and doc["tensor_fit"]["b"]["anchors"] == n
    assert run("diff", tmp_path / "a.bin", tmp_path / "b.bin")[0] == 0  # without the deps: bytes equal


def test_diff_of_a_truncated_b_names_it(tmp_path):
    rng = np.random.default_rng(11)
    n = write_deps(tmp_path / "deps", 19, 19, 3, 1)
    data = padded_scores(n, 2, rng).tobytes()
    (tmp_path / "a.bin").write_bytes(data)
    (tmp_path / "b.bin").write_bytes(data[:256])
    code, text, _ = run("diff", tmp_path / "a.bin", tmp_path / "b.bin", "--deps", tmp_path / "deps")
    flat = " ".join(text.split())
    assert code == 1 and flat.startswith("DIFFER | B is truncated")
    assert f"B is truncated: 64 of the {n:,} anchors the model has: the head-window trap" in flat


@pytest.mark.parametrize("shape", MODELS)
def test_names_and_values_without_a_sidecar(tmp_path, shape):
    """Item 4: the deps know the quantization and the lane names: anchors and diff show them."""
    rows, cols, boxes, classes = shape
    rng = np.random.default_rng(classes)
    n = write_deps(tmp_path / "deps", rows, cols, boxes, classes, score_scale=1 / 256, box_scale=0.125, box_zp=131)
    columns = classes + 1
    width = -(-columns // 4) * 4
    cases = [("boxes", box_deltas(n, rng), ["dy", "dx", "dh", "dw"], 0.125, 131)]
    if width != columns:
        cases.append(("scores", padded_scores(n, columns, rng),
                      ["background"] + [f"class{c}" for c in range(classes)] + ["pad"] * (width - columns),
                      1 / 256, 0))
    for what, array, names, scale, zp in cases:
        (tmp_path / "x.bin").write_bytes(array.tobytes())
        code, doc, _ = run_json("anchors", tmp_path / "x.bin", "--deps", tmp_path / "deps")
        assert code == 0
        if columns == 4:  # scores and box deltas both 4 unpadded bytes an anchor: nothing tells them apart
            assert doc["tensor_fit"]["role"] == "boxes or scores" and doc["lanes"][0]["name"] == "lane0"
            continue
        assert [lane["name"] for lane in doc["lanes"]] == names, what
        record = bytes.fromhex(doc["dominant"]["hex"])
        pads = [i for i, name in enumerate(names) if name == "pad"]
        expected = [q if i in pads else (q - zp) * scale for i, q in enumerate(record)]
        assert doc["dominant_values"] == pytest.approx(expected), what
        changed = array.copy()
        changed[n // 2, 0] ^= 0x10
        (tmp_path / "y.bin").write_bytes(changed.tobytes())
        code, doc, _ = run_json("diff", tmp_path / "x.bin", tmp_path / "y.bin", "--deps", tmp_path / "deps")
        assert code == 1
        row = doc["records"][0]
        assert row["index"] == n // 2
        a = bytes.fromhex(row["a"])
        assert row["values_a"] == pytest.approx([q if i in pads else (q - zp) * scale for i, q in enumerate(a)])


def test_a_sidecar_still_wins(tmp_path):
    """What a sidecar says (the face model's `face` lane) is kept; the deps fill only what nobody said."""
    code, doc, _ = run_json("anchors", "dumps/ours/convert_scores.bin", "--deps", "dumps/face_ssd")
    assert code == 0 and [lane["name"] for lane in doc["lanes"]] == ["background", "face", "pad", "pad"]


SEGMENT = "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def _raw_sizes(model):
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    with open_model(model) as opened:
        return {t: layer.size_bytes for package in read_packages(opened)
                for t in ("Squeeze1", "convert_scores") if (layer := package.output_layer(t)) is not None}


def test_model_heads_of_the_raw_layers(tmp_path, shared_data):
    """--model: the real segment's raw layers (scores z=91 at a 92-byte stride, box deltas), whole and cut."""
    model = shared_data / SEGMENT
    sizes = _raw_sizes(model)
    rng = np.random.default_rng(17)
    scores = np.zeros(sizes["convert_scores"], np.uint8)
    scores[rng.choice(scores.size, 40, replace=False)] = 200
    boxes = rng.integers(0, 256, sizes["Squeeze1"], dtype=np.uint8)
    for name, data, record in (("scores", scores.tobytes(), 92), ("boxes", boxes.tobytes(), 4)):
        (tmp_path / "full.bin").write_bytes(data)
        code, doc, err = run_json("anchors", tmp_path / "full.bin", "--model", model)
        assert code == 0, err
        assert doc["tensor_fit"]["head_window"] is False and doc["tensor_fit"]["anchors"] == 1917
        if name == "scores":
            assert [lane["name"] for lane in doc["lanes"]][:2] == ["background", "class0"]
        else:
            assert [lane["name"] for lane in doc["lanes"]] == ["dy", "dx", "dh", "dw"]
        for k in (256, 4096, len(data) // 3):
            (tmp_path / "head.bin").write_bytes(data[:k])
            code, doc, err = run_json("anchors", tmp_path / "head.bin", "--model", model)
            assert code == 1 and doc["verdict"] == "HEAD WINDOW", (name, k, err)
            assert doc["tensor_fit"]["anchors_held"] == k // record, (name, k, doc["tensor_fit"])
            code, doc, _ = run_json("diff", tmp_path / "head.bin", tmp_path / "head.bin", "--model", model)
            assert code == 1 and doc["verdict"] == "HEAD WINDOW"


def test_hexdump_values_from_deps(tmp_path):
    """hexdump of records: --deps gives the dequantized values (1/256) without a sidecar."""
    data = open("dumps/libedgetpu/convert_scores.bin", "rb").read()
    (tmp_path / "s.bin").write_bytes(data)
    code, doc, _ = run_json("hexdump", tmp_path / "s.bin", "--deps", "dumps/face_ssd", "--anchor", "203",
                            "--context", "0")
    assert code == 0
    text = json.dumps(doc)
    record = data[203 * 4:203 * 4 + 4]
    assert str(record[1] / 256) in text and str(record[0] / 256) in text
    code, doc, _ = run_json("hexdump", tmp_path / "s.bin", "--anchor", "203", "--context", "0")
    assert str(record[1] / 256) not in json.dumps(doc)


def test_diff_of_an_allocation_and_a_head(tmp_path):
    """A: the tensor at the start of a page-rounded allocation (fits no tensor size); B: a head of it. B is
    still named a head of the tensor, and no slice is suggested."""
    rng = np.random.default_rng(13)
    n = write_deps(tmp_path / "deps", 19, 19, 3, 1)
    data = padded_scores(n, 2, rng).tobytes()
    (tmp_path / "a.bin").write_bytes(data + bytes(-len(data) % 4096))
    (tmp_path / "b.bin").write_bytes(data[:512])
    code, text, _ = run("diff", tmp_path / "a.bin", tmp_path / "b.bin", "--deps", tmp_path / "deps")
    flat = " ".join(text.split())
    assert code == 1 and "--length" not in flat
    # One verdict line (issue 33: it printed DIFFER and then HEAD WINDOW): DIFFER, with the head window said.
    assert text.startswith("DIFFER | B is truncated; sizes differ") and "HEAD WINDOW |" not in flat
    assert f"B is truncated: 128 of the {n:,} anchors the model has" in flat
