"""Letterbox geometry, the anchor generator against the real models, and the head-layers model's own kernel."""

from __future__ import annotations

import numpy as np
import pytest

from forensics.decode.letterbox import Letterbox
from forensics.decode.ssd_anchors import check_anchors, generate_anchors, mobilenet_feature_maps, standard_config


@pytest.mark.parametrize("image, model", [((640, 480), (320, 320)), ((512, 355), (300, 300)), ((100, 900), (320, 240))])
def test_letterbox_is_pycorals_and_invertible(image, model):
    lb = Letterbox(*image, *model)
    assert lb.scale == min(model[0] / image[0], model[1] / image[1])
    assert lb.resized == (int(image[0] * lb.scale), int(image[1] * lb.scale))
    img_box = {"xmin": 0.1 * image[0], "ymin": 0.2 * image[1], "xmax": 0.6 * image[0], "ymax": 0.9 * image[1]}
    back = lb.to_image(lb.to_normalized(img_box))
    for k in img_box:
        assert back[k] == pytest.approx(img_box[k])
    clipped = lb.to_image((-0.5, -0.5, 5.0, 5.0))
    assert clipped == {"xmin": 0.0, "ymin": 0.0, "xmax": float(image[0]), "ymax": float(image[1])}


def test_feature_maps_and_story_anchor():
    assert mobilenet_feature_maps(300) == (19, 10, 5, 3, 2, 1)
    anchors = generate_anchors(standard_config(320))
    assert anchors.shape == (2034, 4) and anchors.dtype == np.float32
    np.testing.assert_allclose(anchors[203], [0.175, 0.375, 0.2 / np.sqrt(0.5), 0.2 * np.sqrt(0.5)], atol=1e-6)


def _model_anchors(path):
    from forensics.decode.model_deps import deps_from_model

    deps, _, _ = deps_from_model(path)
    return deps


@pytest.mark.parametrize("name", ["ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
                                  "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"])
def test_generator_reproduces_real_float_anchors(shared_data, name):
    deps = _model_anchors(shared_data / name)
    check = check_anchors(deps.anchors, standard_config(300), tolerance=2.5e-7)  # two float32 ulps near 1
    assert check.matches, check.to_dict()
    assert not check_anchors(deps.anchors, standard_config(300, aspect_ratios=(1.0, 2.0, 0.5, 3.0, 1 / 3)),
                             tolerance=2.5e-7).matches


def test_generator_reproduces_real_uint8_anchors(shared_data):
    deps = _model_anchors(shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite")
    q = deps.anchors_quant
    codes = np.clip(np.round(generate_anchors(standard_config(300)) / q.scale) + q.zero_point, 0, 255)
    assert np.abs(codes - deps.anchors_codes.astype(np.float64)).max() <= 1


def test_head_layers_model_kernel(shared_data):
    """The real CPU model (uint8 straight into PostProcess, uint8 anchors): our decode of the tensors the
    kernel received equals the model's own outputs."""
    from tests.decode.decode_kernel import run

    from forensics.decode.ssd import postprocess

    path = shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"
    deps = _model_anchors(path)
    from ai_edge_litert.interpreter import Interpreter

    it = Interpreter(model_path=str(path))
    rng = np.random.default_rng(5)
    feeds = {d["name"]: rng.integers(0, 256, d["shape"], dtype=np.uint8) for d in it.get_input_details()}
    outs, tensors = run(path.read_bytes(), feeds)
    boxes = tensors[deps.boxes.name].reshape(-1, 4)
    scores = tensors[deps.scores.name].reshape(1917, -1)
    ours = postprocess(boxes, scores, deps.anchors_codes, deps.options, boxes_quant=deps.boxes.quant,
                       scores_quant=deps.scores.quant, anchors_quant=deps.anchors_quant, rounding="litert",
                       boxes_into_kernel=deps.boxes_into_kernel)
    from tests.decode.decode_kernel import assert_same

    assert ours.num_detections > 0
    assert_same(ours, outs)
