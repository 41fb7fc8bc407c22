"""Benchmark: forensics.decode.explain on an SSD's CPU tail (1917 anchors x 91 score columns) vs `import numpy`.

  python benchmarks/bench_explain.py [--repeat 5]

The explanation runs inside `forensics compare` when a tail stage differs, so its budget is the interactive
one: the baseline is `python -c "import numpy"` (a fresh interpreter, wall time, median), measured in the same
run. The frame is a stand-in for the real SSD segments (the TF OD API's 300x300 anchors, their quantization): a
few objects of overlapping anchors with high scores, background low. Cases, each B made from A's tensor with
forensics' own kernel (bit-exact with LiteRT's):
  iou          B ran with nms_iou_threshold 0.5 (found after the row count, the NMS mode and the IoU grid)
  unexplained  B ran with two options changed: every hypothesis is tried (the search's bound is what it costs)
  regular      the same two changes on a regular-NMS model with nms_score_threshold 0.3 (SSD MobileNet v1's);
               with v2's 1e-8 every anchor enters every class's NMS and a replay costs ~70 ms
Goal: every case at most 1x `import numpy` (the explanation must not be what makes compare slow). Figures
are medians of --repeat runs, this process's wall time.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import statistics
import subprocess
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402

from forensics.core.layout import dequantize  # noqa: E402
from forensics.decode.deps import DecodeDeps, TensorInfo  # noqa: E402
from forensics.decode.explain import Detections, TailArrays, explain_tail  # noqa: E402
from forensics.decode.ssd import PostProcessOptions, Quantization, postprocess  # noqa: E402
from forensics.decode.ssd_anchors import generate_anchors, standard_config  # noqa: E402


def frame(anchors, rng):
    n = anchors.shape[0]
    boxes = np.clip(rng.normal(179, 6, (n, 4)), 0, 255).astype(np.uint8)
    scores = np.clip(rng.normal(10, 5, (n, 91)), 0, 255).astype(np.uint8)
    for _ in range(6):
        i, c = int(rng.integers(0, n)), int(rng.integers(1, 91))
        near = np.flatnonzero(np.hypot(anchors[:, 0] - anchors[i, 0], anchors[:, 1] - anchors[i, 1]) < 0.08)
        scores[near, c] = np.clip(rng.normal(150, 40, near.size), 0, 255).astype(np.uint8)
    return boxes, scores


def tail(deps, boxes, scores, options) -> TailArrays:
    b = dequantize(boxes, deps.boxes.quant.scale, deps.boxes.quant.zero_point, "litert")
    s = dequantize(scores, deps.scores.quant.scale, deps.scores.quant.zero_point, "litert")
    return TailArrays(boxes, scores, b, s, Detections.of(*postprocess(b, s, deps.anchors, options).output_tensors()[:4]))


def median_wall(fn, repeat: int) -> float:
    fn()
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    add_json_flag(ap)
    args = ap.parse_args(argv)
    with Table(args.json, "bench_explain") as table:
        numpy = median_wall(lambda: subprocess.run([sys.executable, "-c", "import numpy"], check=True), args.repeat)
        anchors = generate_anchors(standard_config(300))
        boxes, scores = frame(anchors, np.random.default_rng(1))
        print(f"explain_tail, {anchors.shape[0]} anchors x 91 score columns, median of {args.repeat}")
        for name, regular, change in (("iou", False, dict(nms_iou_threshold=0.5)),
                                      ("unexplained", False, dict(nms_iou_threshold=0.3, max_detections=10)),
                                      ("regular", True, dict(nms_iou_threshold=0.3, max_detections=10))):
            options = PostProcessOptions(num_classes=90, max_detections=20, nms_score_threshold=0.3 if regular else 1e-8,
                                         nms_iou_threshold=0.6, use_regular_nms=regular)
            deps = DecodeDeps(anchors, options, TensorInfo("Squeeze1", Quantization(0.0913, 179), (1, 1917, 4)),
                              TensorInfo("convert_scores", Quantization(1 / 256, 0), (1, 1917, 91)))
            a = tail(deps, boxes, scores, options)
            b = tail(deps, boxes, scores, dataclasses.replace(options, **change))
            found = explain_tail(deps, a, b).detections
            value = median_wall(lambda: explain_tail(deps, a, b), args.repeat)  # noqa: B023
            print(f"  {name:<12} {value * 1e3:8.1f} ms  {found.replays:3d} replays  {found.kind} {found.option or ''}")
            table.add(f"explain {name} ({found.replays} replays)", value, baseline="python -c 'import numpy'",
                      baseline_value=numpy, goal_ratio=1.0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
