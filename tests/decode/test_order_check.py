"""decode: BOXES and SCORES given in each other's place stop with one line naming the swap (exit 2), told by
shape where the model's shapes differ and by content where they coincide (the scores' pad lanes are one value
in every anchor, box deltas vary); --no-order-check decodes them as given. Dumps and deps are built with numpy
from the formats' descriptions."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest

from forensics.cli import main

OPTIONS = {"max_detections": 10, "max_classes_per_detection": 1, "detections_per_class": 100,
           "use_regular_nms": False, "nms_score_threshold": 1e-8, "nms_iou_threshold": 0.6, "y_scale": 10.0,
           "x_scale": 10.0, "h_scale": 5.0, "w_scale": 5.0}


def write_deps(directory, n: int, num_classes: int):
    directory.mkdir(parents=True, exist_ok=True)
    side = int(np.ceil(np.sqrt(n)))
    anchors = [((i // side + 0.5) / side, (i % side + 0.5) / side, 0.2, 0.2) for i in range(n)]
    np.asarray(anchors, "<f4").tofile(directory / "anchors.bin")
    (directory / "postprocess.json").write_text(json.dumps({
        "num_anchors": n, "num_classes": num_classes, "options": {**OPTIONS, "num_classes": num_classes},
        "boxes": {"tensor": "Boxes", "scale": 0.1, "zero_point": 128, "shape": [1, n, 4]},
        "scores": {"tensor": "Scores", "scale": 1 / 256, "zero_point": 0, "shape": [1, n, num_classes + 1]}}))


def scores_bytes(n: int, columns: int, rng, *, padded: bool, pad_value: int) -> bytes:
    width = -(-columns // 4) * 4 if padded else columns
    out = np.full((n, width), pad_value, np.uint8)
    out[:, 0] = 250
    out[:, 1:columns] = 3
    hits = rng.choice(n, 5, replace=False)
    out[hits, 1] = 240
    out[hits, 0] = 10
    return out.tobytes()


def boxes_bytes(n: int, rng) -> bytes:
    return rng.integers(100, 160, (n, 4)).astype(np.uint8).tobytes()


def decode(*argv):
    out, err = io.StringIO(), io.StringIO()
    code = main(["decode", *map(str, argv)], stdout=out, stderr=err)
    return code, out.getvalue(), err.getvalue()


# (anchors, num_classes, scores padded to 4-byte lanes?, pad value): shapes that coincide (2 / 3 score
# columns padded to 4 bytes, as 4 box deltas) and shapes that differ (tensor-layout scores, 6 classes)
CASES = [(2034, 1, True, 0x80), (300, 2, True, 0x00), (200, 1, True, 0xFF), (500, 1, False, 0), (150, 6, True, 0),
         (150, 6, False, 0), (120, 2, False, 0)]


@pytest.mark.parametrize("n, classes, padded, pad_value", CASES)
def test_swapped_inputs_are_named(tmp_path, n, classes, padded, pad_value):
    rng = np.random.default_rng(n + classes)
    write_deps(tmp_path / "deps", n, classes)
    (tmp_path / "scores.bin").write_bytes(scores_bytes(n, classes + 1, rng, padded=padded, pad_value=pad_value))
    (tmp_path / "boxes.bin").write_bytes(boxes_bytes(n, rng))
    deps = ["--deps", tmp_path / "deps"]
    code, out, err = decode(tmp_path / "boxes.bin", tmp_path / "scores.bin", *deps)
    assert code == 0, err
    code, out, err = decode(tmp_path / "scores.bin", tmp_path / "boxes.bin", *deps)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and "look swapped" in err and "--no-order-check" in err, err
    code, _, err = decode(tmp_path / "scores.bin", tmp_path / "boxes.bin", *deps, "--no-order-check")
    same_shape = padded and -(-(classes + 1) // 4) * 4 == 4
    if same_shape:  # the kernel takes them as given: confident garbage, but asked for
        assert code == 0, err
    else:  # the sizes cannot be read the other way round: the size error, not the order check
        assert code == 2 and "look swapped" not in err


def test_the_story_dumps_swapped(tmp_path):
    code, out, err = decode("dumps/ours/convert_scores.bin", "dumps/ours/Squeeze1.bin", "--deps", "dumps/face_ssd")
    assert code == 2 and "look swapped" in err and "lanes 2-3" in err


def test_ambiguous_pairs_are_decoded(tmp_path):
    """Nothing tells (4 score columns, no pad lanes; two buffers of zeros): no false alarm."""
    rng = np.random.default_rng(3)
    write_deps(tmp_path / "deps", 100, 3)
    (tmp_path / "a.bin").write_bytes(boxes_bytes(100, rng))
    (tmp_path / "b.bin").write_bytes(boxes_bytes(100, rng))
    assert decode(tmp_path / "a.bin", tmp_path / "b.bin", "--deps", tmp_path / "deps")[0] == 0
    write_deps(tmp_path / "deps1", 100, 1)
    (tmp_path / "z.bin").write_bytes(bytes(400))
    code, _, err = decode(tmp_path / "z.bin", tmp_path / "z.bin", "--deps", tmp_path / "deps1")
    assert code == 0, err


def test_library_keyword(tmp_path):
    from forensics import reports
    from forensics.core.errors import InputError

    with pytest.raises(InputError, match="no_order_check"):
        reports.decode("dumps/ours/convert_scores.bin", "dumps/ours/Squeeze1.bin", deps="dumps/face_ssd")
    report = reports.decode("dumps/ours/convert_scores.bin", "dumps/ours/Squeeze1.bin", deps="dumps/face_ssd",
                            no_order_check=True)
    assert report.exit_code == 0


@pytest.mark.parametrize("name", ["ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
                                  "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"])
def test_real_segments_91_classes(tmp_path, shared_data, name):
    """The Edge TPU segments: raw scores (z=91 at a 92-byte stride) and raw box deltas, swapped."""
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    model = shared_data / name
    with open_model(model) as opened:
        sizes = {}
        for package in read_packages(opened):
            for tensor in ("Squeeze1", "convert_scores"):
                layer = package.output_layer(tensor)
                if layer is not None:
                    sizes[tensor] = layer.size_bytes
    rng = np.random.default_rng(91)
    (tmp_path / "boxes.bin").write_bytes(rng.integers(0, 256, sizes["Squeeze1"], dtype=np.uint8).tobytes())
    (tmp_path / "scores.bin").write_bytes(bytes(sizes["convert_scores"]))
    code, _, err = decode(tmp_path / "boxes.bin", tmp_path / "scores.bin", "--model", model)
    assert code == 0, err
    code, out, err = decode(tmp_path / "scores.bin", tmp_path / "boxes.bin", "--model", model)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "look swapped" in err and f"{sizes['convert_scores']:,} bytes" in err


@pytest.mark.parametrize("cut", [64, 256, 4000])
@pytest.mark.parametrize("which", ["boxes", "scores"])
def test_a_head_of_either_input_is_named_the_head_window_trap(tmp_path, cli, cut, which):
    # The story's dumps cut to their first `cut` bytes as a `head -c` or a pasted db L100 would: decode cannot
    # run (exit 2), and says how many anchors the paste holds instead of only the sizes it expected.
    full = {"boxes": "dumps/ours/Squeeze1.bin", "scores": "dumps/ours/convert_scores.bin"}
    head = tmp_path / f"{which}_head.bin"
    head.write_bytes(open(full[which], "rb").read()[:cut])
    args = [str(head) if w == which else full[w] for w in ("boxes", "scores")]
    result = cli("decode", "--deps", "dumps/face_ssd", *args)
    assert result.code == 2 and result.err.count("\n") == 1
    assert f"{cut // 4:,} " in result.err and "of the 2,034 anchors the model has, the head-window trap" in result.err
