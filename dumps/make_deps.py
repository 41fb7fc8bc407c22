"""Write dumps/face_ssd/: the story's deps directory (320x320 face SSD anchors + postprocess.json).

The 2034 anchors come from the TF Object Detection API's default SSD MobileNet anchor generator for a
320x320 input (feature maps 20, 10, 5, 3, 2, 1; forensics.decode.ssd_anchors); anchor 203 is
(0.175, 0.375, 0.2828, 0.1414). Quantization and options are the story's: boxes `Squeeze1` scale
0.10822763 zero point 144, scores `convert_scores` 1/256 zero point 0, one class (face) after background,
decode scales 10/10/5/5, and the TF OD API export defaults for NMS.

It also writes `face_ssd_tail.tflite`: the detector's CPU tail as a small TFLite model (DEQUANTIZE x2 ->
TFLite_Detection_PostProcess with the same anchors and options; inputs `Squeeze1` and `convert_scores`), so
that `forensics graph`, `extract` and `decode --model` have a model to read. It is not the face model (that
is an Edge TPU model, not bundled); it is the part of it that runs on the CPU, built with
forensics.model.tflite.writer.

Run: python3 dumps/make_deps.py [OUT_DIR]   (default: dumps/face_ssd next to this script, and the package's copy
forensics/data/dumps/face_ssd)
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from forensics.decode.deps import TensorInfo, write_deps  # noqa: E402
from forensics.decode.ssd import PostProcessOptions, Quantization  # noqa: E402
from forensics.decode.ssd_anchors import generate_anchors, standard_config  # noqa: E402
from forensics.model.tflite import writer  # noqa: E402

DEQUANTIZE = 6  # schema.fbs BuiltinOperator

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


def tail_model(anchors) -> bytes:
    """Squeeze1, convert_scores (uint8, the story's quantization) -> DEQUANTIZE -> PostProcess -> detections."""
    n = anchors.shape[0]
    m = OPTIONS.max_detections * OPTIONS.max_classes_per_detection
    options = {name: getattr(OPTIONS, name) for name in (
        "max_detections", "max_classes_per_detection", "detections_per_class", "use_regular_nms",
        "nms_score_threshold", "nms_iou_threshold", "num_classes", "y_scale", "x_scale", "h_scale", "w_scale")}
    tensors = [
        writer.TensorSpec("Squeeze1", [1, n, 4], "uint8", scale=0.10822763, zero_point=144),
        writer.TensorSpec("convert_scores", [1, n, 2], "uint8", scale=1 / 256, zero_point=0),
        writer.TensorSpec("anchors", [n, 4], "float32", buffer=1),
        writer.TensorSpec("TFLite_Detection_PostProcess", [1, m, 4], "float32"),
        writer.TensorSpec("TFLite_Detection_PostProcess:1", [1, m], "float32"),
        writer.TensorSpec("TFLite_Detection_PostProcess:2", [1, m], "float32"),
        writer.TensorSpec("TFLite_Detection_PostProcess:3", [1], "float32"),
        writer.TensorSpec("Squeeze1_dequantized", [1, n, 4], "float32"),
        writer.TensorSpec("convert_scores_dequantized", [1, n, 2], "float32"),
    ]
    return writer.build_model(writer.ModelSpec(
        buffers=[b"", anchors.astype("<f4").tobytes()], tensors=tensors,
        opcodes=[writer.OpCodeSpec(custom_code=writer.POSTPROCESS_CUSTOM_CODE),
                 writer.OpCodeSpec(builtin_code=DEQUANTIZE)],
        operators=[writer.OperatorSpec(1, [0], [7]), writer.OperatorSpec(1, [1], [8]),
                   writer.OperatorSpec(0, [7, 8, 2], [3, 4, 5, 6],
                                       custom_options=writer.postprocess_options(**options))],
        inputs=[0, 1], outputs=[3, 4, 5, 6], description="the story's face SSD: its CPU tail"))


HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE_COPY = os.path.join(os.path.dirname(HERE), "forensics", "data", "dumps")  # as make_dumps.py's


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    outs = argv[:1] or [os.path.join(HERE, "face_ssd"), os.path.join(PACKAGE_COPY, "face_ssd")]
    anchors = generate_anchors(standard_config(*INPUT_SIZE))
    assert anchors.shape == (2034, 4), anchors.shape
    for out in outs:
        write_deps(out, anchors, OPTIONS,
                   boxes=TensorInfo("Squeeze1", Quantization(0.10822763, 144), (1, 2034, 4)),
                   scores=TensorInfo("convert_scores", Quantization(1 / 256, 0), (1, 2034, 2)),
                   input_size=INPUT_SIZE)
        with open(os.path.join(out, "face_ssd_tail.tflite.tmp"), "wb") as fh:
            fh.write(tail_model(anchors))
        os.replace(os.path.join(out, "face_ssd_tail.tflite.tmp"), os.path.join(out, "face_ssd_tail.tflite"))
        print(f"wrote {out}: {anchors.shape[0]} anchors, anchor 203 = {[round(float(v), 4) for v in anchors[203]]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
