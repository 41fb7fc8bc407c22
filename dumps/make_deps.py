"""Write dumps/face_ssd/: the story's deps directory (320x320 face SSD anchors + postprocess.json).

The 2034 anchors come from the TF Object Detection API's default SSD MobileNet anchor generator for a
320x320 input (feature maps 20, 10, 5, 3, 2, 1; forensics.decode.ssd_anchors); anchor 203 is
(0.175, 0.375, 0.2828, 0.1414). Quantization and options are the story's: boxes `Squeeze1` scale
0.10822763 zero point 144, scores `convert_scores` 1/256 zero point 0, one class (face) after background,
decode scales 10/10/5/5, and the TF OD API export defaults for NMS.

Run: python3 dumps/make_deps.py [OUT_DIR]   (default: dumps/face_ssd next to this script)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from forensics.decode.deps import TensorInfo, write_deps  # noqa: E402
from forensics.decode.ssd import PostProcessOptions, Quantization  # noqa: E402
from forensics.decode.ssd_anchors import generate_anchors, standard_config  # noqa: E402

INPUT_SIZE = (320, 320)  # width, height
OPTIONS = PostProcessOptions(
    num_classes=1,
    max_detections=10,
    max_classes_per_detection=1,
    detections_per_class=100,
    use_regular_nms=False,
    nms_score_threshold=1e-8,
    nms_iou_threshold=0.6,
    y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0,
)


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    out = argv[0] if argv else os.path.join(os.path.dirname(os.path.abspath(__file__)), "face_ssd")
    anchors = generate_anchors(standard_config(*INPUT_SIZE))
    assert anchors.shape == (2034, 4), anchors.shape
    write_deps(out, anchors, OPTIONS,
               boxes=TensorInfo("Squeeze1", Quantization(0.10822763, 144), (1, 2034, 4)),
               scores=TensorInfo("convert_scores", Quantization(1 / 256, 0), (1, 2034, 2)),
               input_size=INPUT_SIZE)
    print(f"wrote {out}: {anchors.shape[0]} anchors, anchor 203 = {[round(float(v), 4) for v in anchors[203]]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
