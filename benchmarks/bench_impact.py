"""Benchmark: forensics impact over a pair with 50 differing anchors vs one plain decode of the pair.

  python benchmarks/bench_impact.py [--repeat 20]

The figure is one forensics.decode.impact.ssd_impact call (both kernel decodes, the substituted decodes of the
delta-debugging search, the harmless check); the baseline, measured in the same process in alternation, is one
plain decode of the pair: forensics.decode.ssd.postprocess on A and on B, as `forensics decode` runs each. Times
are this thread's CPU time. Cases (uint8 inputs, reference rounding):
  coco-fast     1917 anchors x 91 score columns (SSD MobileNet v2's options: fast NMS, threshold 1e-8, 20
                detections): 50 anchors differ: 6 objects appear, 10 object boxes move by 1-2 LSB, 34 noise
                scores change by 1 LSB
  coco-regular  the same with regular NMS (substitutions decoded whole by the kernel)
  face          the story's face SSD (dumps/face_ssd, 2034 x 2): the nine face anchors appear and 41
                background anchors change by 1 LSB
Goal: impact at most 100 plain decodes of the pair in each case (`--json`: the rows only, as
benchmarks/_table.py describes).
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402
from bench_decode import median_times  # noqa: E402  (measured in alternation, this thread's CPU time)

from forensics.decode.deps import DecodeDeps, TensorInfo, read_deps  # noqa: E402
from forensics.decode.impact import SsdArrays, SsdModel, ssd_impact  # noqa: E402
from forensics.decode.ssd import PostProcessOptions, Quantization, postprocess  # noqa: E402
from forensics.decode.ssd_anchors import generate_anchors, standard_config  # noqa: E402

GOAL = 100.0
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def coco_case(regular: bool):
    rng = np.random.default_rng(0)
    anchors = generate_anchors(standard_config(300))
    n = anchors.shape[0]
    options = PostProcessOptions(num_classes=90, max_detections=20, nms_score_threshold=1e-8, nms_iou_threshold=0.6,
                                 use_regular_nms=regular)
    bq, sq = Quantization(0.09133967, 179), Quantization(1 / 256, 0)
    deps = DecodeDeps(anchors=anchors, options=options, boxes=TensorInfo("Squeeze1", bq, (1, n, 4)),
                      scores=TensorInfo("convert_scores", sq, (1, n, 91)), input_size=(300, 300))
    boxes = rng.integers(167, 192, (n, 4)).astype(np.uint8)
    scores = rng.integers(0, 4, (n, 91)).astype(np.uint8)
    scores[:, 0] = rng.integers(220, 256, n)
    objects = rng.choice(n, 12, replace=False)
    scores[objects, rng.integers(1, 91, 12)] = rng.integers(150, 250, 12).astype(np.uint8)
    b_boxes, b_scores = boxes.copy(), scores.copy()
    others = np.setdiff1d(np.arange(n), objects)
    appear = rng.choice(others, 6, replace=False)
    b_scores[appear, rng.integers(1, 91, 6)] = rng.integers(150, 250, 6).astype(np.uint8)
    b_boxes[objects[:10], rng.integers(0, 4, 10)] += rng.integers(1, 3, 10).astype(np.uint8)
    noise = rng.choice(np.setdiff1d(others, appear), 34, replace=False)
    b_scores[noise, rng.integers(1, 91, 34)] += 1
    return deps, SsdArrays(boxes, scores), SsdArrays(b_boxes, b_scores)


def face_case():
    rng = np.random.default_rng(1)
    deps = read_deps(os.path.join(REPO, "dumps", "face_ssd"))
    boxes = np.fromfile(os.path.join(REPO, "dumps", "libedgetpu", "Squeeze1.bin"), np.uint8).reshape(-1, 4)
    a_scores = np.zeros((deps.num_anchors, 2), np.uint8)
    a_scores[:, 0] = 0xff
    b_scores = a_scores.copy()
    faces = {143: (0xff, 1), 146: (0xff, 1), 200: (0xfb, 5), 203: (1, 0xff), 206: (2, 0xfe), 263: (0x80, 0x80),
             266: (0x80, 0x80), 1278: (0xf6, 10), 1284: (0xf6, 10)}
    for anchor, pair in faces.items():
        b_scores[anchor] = pair
    background = rng.choice(np.setdiff1d(np.arange(deps.num_anchors), list(faces)), 41, replace=False)
    b_scores[background, 0] -= 1
    return deps, SsdArrays(boxes, a_scores), SsdArrays(boxes, b_scores)


def measure(args, table: Table) -> None:
    cases = {"coco-fast": coco_case(False), "coco-regular": coco_case(True), "face": face_case()}
    print(f"impact of a pair with 50 differing anchors vs one plain decode of the pair, median of {args.repeat}")
    print(f"{'case':<14}{'impact':>12}{'decode pair':>14}{'ratio':>9}{'decodes':>9}{'changes':>9}")
    for name, (deps, a, b) in cases.items():
        model = SsdModel(deps, input_size=deps.input_size)
        result = ssd_impact(a, b, model)
        assert len(result.differing) == 50, (name, len(result.differing))

        def run_impact():
            ssd_impact(a, b, model)

        def run_pair():
            for side in (a, b):
                postprocess(side.boxes, side.scores, deps.anchors, deps.options, boxes_quant=deps.boxes.quant,
                            scores_quant=deps.scores.quant)

        ours, base = median_times([run_impact, run_pair], args.repeat)
        print(f"{name:<14}{ours * 1e3:>10.1f}ms{base * 1e3:>12.2f}ms{ours / base:>8.1f}x{result.decodes:>9}"
              f"{len(result.changes):>9}")
        table.add(f"impact, 50 differing anchors ({name}, {result.decoder} decodes)", ours,
                  baseline="one plain decode of the pair", baseline_value=base, goal_ratio=GOAL,
                  note=f"{result.decodes} substituted decodes, {len(result.changes)} changes")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    add_json_flag(ap)
    args = ap.parse_args(argv)
    with Table(args.json, "bench_impact") as table:
        measure(args, table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
