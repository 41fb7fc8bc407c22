"""capture: the CPU head_layers model against our own decode (a second implementation of the kernel), an image
model built with the writer against pycoral's preparation, --tail-only on the real SSD v2 segment with
bundled-style raw dumps, and the Edge TPU delegate's absence as a one-line error."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest

from forensics.runs.run import load_run, verify_run
from forensics.model.tflite import writer as w
from tests.conftest import assert_one_line_error
from tests.runs.runs_support import skip_with_libedgetpu

HEAD = "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"
SSD_V2 = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def _detections(run):
    get = {b.role: np.fromfile(run.file_path(b), np.float32) for b in run.buffers if b.stage == "detections"}
    return get["boxes"].reshape(-1, 4), get["classes"], get["scores"], int(get["num_detections"][0])


def _assert_same_as_our_decode(run, model_path, boxes_file, scores_file, relayouts=None):
    """The LiteRT kernel's rows (captured) against forensics' own decode of the captured tensors."""
    from forensics.decode.model_deps import deps_from_model
    from forensics.decode.report import decode_dumps

    deps, model_relayouts, _ = deps_from_model(model_path)
    report = decode_dumps(deps, boxes_file, scores_file, rounding="litert", relayouts=model_relayouts)
    boxes, classes, scores, num = _detections(run)
    assert num == report.result.num_detections
    for det in report.result.detections:
        assert classes[det.row] == det.class_id
        assert scores[det.row] == pytest.approx(det.score, abs=1e-6)
        assert np.allclose(boxes[det.row], det.box, atol=1e-5)


def test_cpu_model_capture_records_inputs_decode_inputs_and_detections(tmp_path, cli, shared_data):
    from forensics.model.tflite.model import open_model

    model_path = shared_data / HEAD
    rng = np.random.default_rng(11)
    argv, blobs = [], {}
    with open_model(model_path) as model:
        for i in model.main.inputs:
            t = model.main.tensors[i]
            blob = rng.integers(0, 256, t.num_elements, dtype=np.uint8).tobytes()
            path = tmp_path / f"in{i}.bin"
            path.write_bytes(blob)
            blobs[t.name] = blob
            argv += ["--input", f"{t.name}={path}"]
    result = cli("capture", "--model", model_path, *argv, "-o", tmp_path / "run", "--json")
    assert result.code == 0, result.err
    run = load_run(tmp_path / "run")
    assert run.stages == ("input", "tensor", "detections")  # a CPU model has no raw stage
    for name, blob in blobs.items():
        entry = run.buffer("input", name)
        assert entry.crc32 == zlib.crc32(blob) and entry.size == len(blob)
    assert {b.tensor for b in run.buffers if b.stage == "tensor"} == {"Squeeze", "convert_scores"}
    assert all(c.ok for c in verify_run(run))
    assert run.model["sha256"] and run.capture["runtime"]
    _assert_same_as_our_decode(run, model_path, run.file_path(run.buffer("tensor", "Squeeze")),
                               run.file_path(run.buffer("tensor", "convert_scores")))
    # capturing the same inputs twice gives runs that compare equal
    assert cli("capture", "--model", model_path, *argv, "-o", tmp_path / "again", "--source", "x").code == 0
    again = cli("compare", tmp_path / "run", tmp_path / "again", "--json")
    assert again.code == 0 and json.loads(again.out)["first_divergent_stage"] is None


def _image_model(height=48, width=64, scale=0.5, zero_point=3) -> bytes:
    spec = w.ModelSpec(
        tensors=[w.TensorSpec("image", [1, height, width, 3], "uint8", scale=scale, zero_point=zero_point),
                 w.TensorSpec("image_float", [1, height, width, 3], "float32")],
        opcodes=[w.OpCodeSpec(builtin_code=w.DEQUANTIZE)],
        operators=[w.OperatorSpec(0, [0], [1])], inputs=[0], outputs=[1])
    return w.build_model(spec)


def _pycoral_input(image_path, width, height, method):
    """What pycoral's set_resized_input writes (adapters/common.py), restated with Pillow and numpy."""
    from PIL import Image

    img = Image.open(image_path).convert("RGB")
    w_, h_ = img.size
    scale = min(width / w_, height / h_)
    w_, h_ = int(w_ * scale), int(h_ * scale)
    tensor = np.zeros((height, width, 3), np.uint8)
    tensor[:h_, :w_] = np.asarray(img.resize((w_, h_), method)).reshape(h_, w_, 3)
    return tensor


@pytest.mark.parametrize("resampling", ["lanczos", "nearest"])
def test_image_input_is_prepared_as_pycoral_does(tmp_path, cli, shared_data, resampling):
    from PIL import Image

    model = tmp_path / "image.tflite"
    model.write_bytes(_image_model())
    image = shared_data / "grace_hopper.bmp"
    result = cli("capture", "--model", model, "--image", image, "--resampling", resampling, "-o", tmp_path / "r")
    assert result.code == 0, result.err
    run = load_run(tmp_path / "r")
    got = np.fromfile(run.file_path(run.buffer("input")), np.uint8).reshape(48, 64, 3)
    method = Image.Resampling.LANCZOS if resampling == "lanczos" else Image.Resampling.NEAREST
    assert np.array_equal(got, _pycoral_input(image, 64, 48, method))
    assert run.input_image == str(image) and run.capture["resampling"] == resampling
    # the dequantized output is (q - zero_point) * scale of the recorded input
    out = run.buffer("tensor", "image_float")  # no PostProcess: an output is a tensor, not detections
    values = np.fromfile(run.file_path(out), np.float32).reshape(48, 64, 3)
    assert np.allclose(values, (got.astype(np.float32) - 3) * 0.5)


def test_resampling_choice_changes_the_input_crc(tmp_path, cli, shared_data):
    model = tmp_path / "image.tflite"
    model.write_bytes(_image_model())
    for method in ("lanczos", "bilinear"):
        assert cli("capture", "--model", model, "--image", shared_data / "face.jpg", "--resampling", method,
                   "-o", tmp_path / method).code == 0
    result = cli("compare", tmp_path / "lanczos", tmp_path / "bilinear", "--json")
    doc = json.loads(result.out)
    assert result.code == 1 and doc["first_divergent_stage"] == "input"


def test_image_on_a_feature_map_model_is_a_one_line_error(tmp_path, cli, shared_data):
    result = cli("capture", "--model", shared_data / HEAD, "--image", shared_data / "face.jpg", "-o", tmp_path / "r")
    assert_one_line_error(result, "12 inputs")
    assert not (tmp_path / "r").exists()


def test_edgetpu_model_without_libedgetpu_is_a_clear_error(tmp_path, cli, shared_data):
    skip_with_libedgetpu()
    result = cli("capture", "--model", shared_data / SSD_V2, "--input", "x=y", "-o", tmp_path / "r")
    assert_one_line_error(result, "libedgetpu.so.1", "--tail-only")
    assert not (tmp_path / "r").exists()


def _ssd_v2_dumps(tmp_path, shared_data, seed=1):
    """Bundled-style dumps for the real SSD v2 segment: the chip's raw layout (lane-padded, tiled)."""
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map

    rng = np.random.default_rng(seed)
    tensors, files = {}, {}
    with open_model(shared_data / SSD_V2) as model:
        package = read_packages(model)[0]
        for name in ("Squeeze1", "convert_scores"):
            m = layer_map(package.output_layer(name))
            if name == "Squeeze1":
                t = rng.integers(120, 136, m.tensor_size, dtype=np.uint8)
            else:  # mostly background, a few confident classes
                t = np.full(m.tensor_size, 2, np.uint8)
                t[rng.choice(m.tensor_size, 40, replace=False)] = 240
            tensors[name] = t
            path = tmp_path / f"{name}.raw.bin"
            path.write_bytes(inverse_relayout(t, m).tobytes())
            files[name] = path
    return tensors, files


def test_tail_only_on_the_ssd_v2_segment(tmp_path, cli, shared_data):
    tensors, files = _ssd_v2_dumps(tmp_path, shared_data)
    model_path = shared_data / SSD_V2
    result = cli("capture", "--model", model_path, "--tail-only", "-o", tmp_path / "run", "--source", "libedgetpu",
                 *[a for name, path in files.items() for a in ("--input", f"{name}={path}")])
    assert result.code == 0, result.err
    run = load_run(tmp_path / "run")
    assert run.stages == ("raw", "tensor", "dequantized", "detections")
    assert run.buffer("raw", "convert_scores").size == 176_368 and run.buffer("raw", "Squeeze1").size == 7_672
    for name, t in tensors.items():
        got = np.fromfile(run.file_path(run.buffer("tensor", name)), np.uint8)
        assert np.array_equal(got, t)
    # DEQUANTIZE's output against (q - zero_point) * scale in float64
    entry = run.buffer("dequantized", "Squeeze2")
    deq = np.fromfile(run.file_path(entry), np.float32)
    src = run.buffer("tensor", "Squeeze1")
    assert np.allclose(deq, (tensors["Squeeze1"].astype(np.float64) - src.zero_point) * src.scale, atol=1e-6)
    _assert_same_as_our_decode(run, model_path, files["Squeeze1"], files["convert_scores"])


def test_tail_only_with_wrong_sizes_or_names(tmp_path, cli, shared_data):
    _, files = _ssd_v2_dumps(tmp_path, shared_data)
    model_path = shared_data / SSD_V2
    short = tmp_path / "short.bin"
    short.write_bytes(b"\x80" * 100)
    result = cli("capture", "--model", model_path, "--tail-only", "-o", tmp_path / "r",
                 "--input", f"Squeeze1={files['Squeeze1']}", "--input", f"convert_scores={short}")
    assert_one_line_error(result, "174447 bytes as the tensor", "176368 bytes as the chip writes it")
    result = cli("capture", "--model", model_path, "--tail-only", "-o", tmp_path / "r",
                 "--input", f"Squeeze1={files['Squeeze1']}")
    assert_one_line_error(result, "no --input for convert_scores")
    result = cli("capture", "--model", shared_data / HEAD, "--tail-only", "-o", tmp_path / "r", "--input", "a=b")
    assert_one_line_error(result, "has none")
    assert not (tmp_path / "r").exists()


def test_tail_only_runs_compare_and_name_the_tensor_stage(tmp_path, cli, shared_data):
    tensors, files = _ssd_v2_dumps(tmp_path, shared_data)
    model_path = shared_data / SSD_V2
    inputs = [a for name, path in files.items() for a in ("--input", f"{name}={path}")]
    assert cli("capture", "--model", model_path, "--tail-only", "-o", tmp_path / "a", *inputs).code == 0
    # "ours" relayouted the scores itself and got one anchor wrong
    t = tensors["convert_scores"].copy()
    t[91 * 5 + 7] = 250
    bad = tmp_path / "bad_scores.bin"
    bad.write_bytes(t.tobytes())
    result = cli("capture", "--model", model_path, "--tail-only", "-o", tmp_path / "b", "--source", "ours",
                 "--input", f"Squeeze1={files['Squeeze1']}", "--input", f"convert_scores={bad}")
    assert result.code == 0, result.err
    doc = json.loads(cli("compare", tmp_path / "a", tmp_path / "b", "--json").out)
    rows = {(r["stage"], r["tensor"]): r for r in doc["stages"]}
    assert rows[("raw", "convert_scores")]["status"] == "ONLY_A"
    assert doc["first_divergent_stage"] == "tensor" and doc["first_divergent_tensor"] == "convert_scores"
    assert rows[("tensor", "convert_scores")]["summary"].startswith("1 of 1,917 anchors differ (first: anchor 5)")


def test_detection_rows_past_num_detections_are_recorded_as_zeros(tmp_path, shared_data, monkeypatch):
    """LiteRT's fast NMS leaves the rows past num_detections as its memory was: an interpreter that ran
    before (a long-lived one, as a driver's test console keeps) holds the last frame's rows there. capture
    records zeros past num_detections and the kernel's rows below it."""
    from forensics.model.tflite.model import open_model
    from forensics.runs import capture as capture_module

    model_path = shared_data / HEAD
    real = capture_module.make_interpreter

    def warm_interpreter(model_bytes, **kwargs):
        it, name = real(model_bytes, **kwargs)
        for d in it.get_input_details():  # a frame full of detections first
            it.set_tensor(d["index"], np.full(d["shape"], 255, np.uint8))
        it.invoke()
        assert int(it.get_tensor(it.get_output_details()[3]["index"])[0]) == 20  # the rows are written
        return it, name

    monkeypatch.setattr(capture_module, "make_interpreter", warm_interpreter)
    argv = []
    with open_model(model_path) as model:
        for i in model.main.inputs:
            t = model.main.tensors[i]
            (tmp_path / f"in{i}.bin").write_bytes(bytes(t.num_elements))  # a frame with no detection
            argv.append(f"{t.name}={tmp_path / f'in{i}.bin'}")
    capture_module.capture(model_path, tmp_path / "run", inputs=argv)
    boxes, classes, scores, num = _detections(load_run(tmp_path / "run"))
    assert num == 0
    assert not boxes.any() and not classes.any() and not scores.any()


def test_written_rows_follow_the_kernels_row_count():
    """num_detections rows with regular NMS; num_detections x max_classes_per_detection with fast NMS (it counts
    anchors there): rows past them are zero, the rest as the kernel wrote them."""
    from types import SimpleNamespace

    from forensics.runs.capture import _written_rows

    junk = np.arange(1, 13, dtype=np.float32)
    outputs = [junk.reshape(1, 3, 4), junk[:3].reshape(1, 3), junk[3:6].reshape(1, 3), np.array([1.0], np.float32)]
    fast2 = SimpleNamespace(use_regular_nms=False, max_classes_per_detection=2)
    boxes, classes, scores, num = _written_rows(outputs, fast2)
    assert boxes[0, :2].tolist() == outputs[0][0, :2].tolist() and not boxes[0, 2:].any()
    assert classes.tolist() == [[1, 2, 0]] and scores.tolist() == [[4, 5, 0]] and num.tolist() == [1.0]
    regular = SimpleNamespace(use_regular_nms=True, max_classes_per_detection=2)
    assert _written_rows(outputs, regular)[1].tolist() == [[1, 0, 0]]
    assert outputs[1].tolist() == [[1, 2, 3]]  # the interpreter's arrays are not changed
