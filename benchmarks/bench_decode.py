"""Benchmark: forensics.decode (decode + NMS, 1917 anchors x 91 score columns) vs LiteRT's invoke().

  python benchmarks/bench_decode.py [--repeat 200]

Both run in this process, in this thread, on the same uint8 inputs; times are this thread's CPU time. The
baseline is LiteRT (default delegates off, one thread) invoking a DEQUANTIZE x2 -> TFLite_Detection_PostProcess
model built with forensics.model.tflite.writer, so its time includes dequantizing the 174,447 scores, which is part
of the kernel's work too. Like the interpreter, which is built and prepared once per model (anchors, options
and quantization baked in), ours is one forensics.decode.ssd.PostProcessor per model, called per frame: the
model's constants are checked and tabulated once on both sides. Scores:
  sparse  typical SSD output: ~0.3% of scores above the 0.3 threshold, the rest near 0
  dense   every score between 0.3 and 1.0 (all 1917 anchors are candidates)
Goals: every case at most 2x the kernel, fast NMS on sparse scores at most 1.5x. Prints medians and ratios
for both NMS modes (`--json`: the rows only, as benchmarks/_table.py describes).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402

from forensics.decode.ssd import PostProcessOptions, PostProcessor, Quantization  # noqa: E402
from forensics.decode.ssd_anchors import generate_anchors, standard_config  # noqa: E402
from forensics.model.tflite.writer import build_detection_model  # noqa: E402


def median_times(fns, repeat: int, clock=time.thread_time) -> list[float]:
    """Median seconds of each callable, measured in alternation so that load from other processes on this
    shared machine falls on all of them alike. The clock is this thread's CPU time (both run in this thread:
    LiteRT with one thread): on a loaded machine, wall time charges a call of ~1 ms with whatever time slices
    other processes took meanwhile, which a shorter call more often escapes."""
    for fn in fns:
        fn()
    times = [[] for _ in fns]
    for _ in range(repeat):
        for fn, bucket in zip(fns, times):
            t0 = clock()
            fn()
            bucket.append(clock() - t0)
    return [statistics.median(bucket) for bucket in times]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=200)
    add_json_flag(ap)
    args = ap.parse_args(argv)
    with Table(args.json, "bench_decode") as table:
        measure(args, table)
    return 0


def measure(args, table: Table) -> None:
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    anchors = generate_anchors(standard_config(300))
    n, cols = anchors.shape[0], 91
    rng = np.random.default_rng(0)
    boxes = rng.integers(120, 220, (n, 4), dtype=np.uint8)
    sparse = rng.integers(0, 20, (n, cols), dtype=np.uint8)
    hits = rng.integers(0, n * (cols - 1), 500)
    sparse[hits // (cols - 1), 1 + hits % (cols - 1)] = rng.integers(77, 256, hits.size)
    dense = rng.integers(77, 256, (n, cols), dtype=np.uint8)
    bq, sq = (0.09133967, 179), (1 / 256, 0)
    print(f"decode + NMS, {n} anchors x {cols} score columns, median of {args.repeat}")
    print(f"{'case':<16}{'forensics':>12}{'LiteRT invoke':>16}{'ratio':>8}")
    for regular in (False, True):
        opts = dict(max_detections=20, nms_score_threshold=0.3, nms_iou_threshold=0.6, num_classes=90,
                    use_regular_nms=regular)
        model = build_detection_model(anchors, boxes_quant=bq, scores_quant=sq, options=opts)
        it = Interpreter(model_content=model, num_threads=1,
                         experimental_op_resolver_type=OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
        it.allocate_tensors()
        ins = {d["name"]: d["index"] for d in it.get_input_details()}
        decoder = PostProcessor(anchors, PostProcessOptions.from_mapping(opts), boxes_quant=Quantization(*bq),
                                scores_quant=Quantization(*sq), rounding="litert")
        for name, scores in (("sparse", sparse), ("dense", dense)):
            it.set_tensor(ins["boxes"], boxes[None])
            it.set_tensor(ins["scores"], scores[None])
            ours = lambda: decoder(boxes, scores)  # noqa: E731
            t_kernel, t_ours = median_times([it.invoke, ours], max(10, args.repeat // (4 if regular else 1)))
            label = f"{'regular' if regular else 'fast'} {name}"
            print(f"{label:<16}{t_ours * 1e3:>10.2f}ms{t_kernel * 1e3:>14.2f}ms{t_ours / t_kernel:>7.2f}x")
            table.add(f"decode + NMS, {label}", t_ours * 1e3, "ms", baseline="LiteRT invoke()",
                      baseline_value=t_kernel * 1e3, goal_ratio=1.5 if label == "fast sparse" else 2.0)


if __name__ == "__main__":
    sys.exit(main())
