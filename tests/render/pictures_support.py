"""Helpers for the picture tests: TF OD API grid anchors made here, and real models' anchors read by a second reader."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]

# The two real SSD segments with float32 anchors and the CPU head-layers model with uint8 anchors.
REAL_SSD_MODELS = (
    "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
    "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
    "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite",
)


def multiple_grid_anchors(feature_maps, *, min_scale=0.2, max_scale=0.95,
                          aspect_ratios=(1.0, 2.0, 0.5, 3.0, 1.0 / 3.0),
                          interpolated_scale_aspect_ratio=1.0, reduce_boxes_in_lowest_layer=True):
    """TF OD API `multiple_grid_anchor_generator` as SSD configs use it, written from its documented formula.

    Scales are linear from min_scale to max_scale over the layers (plus 1.0 for the interpolated box of the
    last layer); the lowest layer keeps 3 boxes ((0.1, 1), (s, 2), (s, 0.5)); each box has h = s / sqrt(ar),
    w = s * sqrt(ar); centres at (i + 0.5) / size; order [rows, cols, boxes], largest feature map first.
    """
    n = len(feature_maps)
    scales = [min_scale + (max_scale - min_scale) * i / max(n - 1, 1) for i in range(n)] + [1.0]
    out = []
    for i, (rows, cols) in enumerate(feature_maps):
        if i == 0 and reduce_boxes_in_lowest_layer:
            specs = [(0.1, 1.0), (scales[i], 2.0), (scales[i], 0.5)]
        else:
            specs = [(scales[i], ar) for ar in aspect_ratios]
            if interpolated_scale_aspect_ratio > 0:
                specs.append((math.sqrt(scales[i] * scales[i + 1]), interpolated_scale_aspect_ratio))
        for r in range(rows):
            for c in range(cols):
                for scale, ar in specs:
                    out.append(((r + 0.5) / rows, (c + 0.5) / cols, scale / math.sqrt(ar), scale * math.sqrt(ar)))
    return np.asarray(out, dtype=np.float32)


SSD_320_MAPS = ((20, 20), (10, 10), (5, 5), (3, 3), (2, 2), (1, 1))
SSD_300_MAPS = ((19, 19), (10, 10), (5, 5), (3, 3), (2, 2), (1, 1))


def read_model_anchors(path) -> np.ndarray:
    """The `anchors` tensor of a .tflite, dequantized to float32 [N, 4], through LiteRT's shipped schema module.

    A second reader independent of forensics/model/tflite (the project's own reader is written elsewhere).
    """
    schema = pytest.importorskip("ai_edge_litert.schema_py_generated")
    model = schema.ModelT.InitFromPackedBuf(bytearray(path.read_bytes()), 0)
    for tensor in model.subgraphs[0].tensors:
        if tensor.name.decode() == "anchors":
            raw = np.asarray(model.buffers[tensor.buffer].data, dtype=np.uint8)
            if tensor.type == schema.TensorType.FLOAT32:
                return raw.view("<f4").reshape(-1, 4)
            q = tensor.quantization
            return ((raw.astype(np.float32) - q.zeroPoint[0]) * q.scale[0]).astype(np.float32).reshape(-1, 4)
    raise AssertionError(f"{path.name} has no tensor named anchors")
