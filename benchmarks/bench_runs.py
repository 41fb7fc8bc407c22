"""Benchmark: `forensics compare --batch` over 1,000 face-sized run pairs (goal: under 30 s on this 2-core machine).

  python benchmarks/bench_runs.py [--pairs 1000] [--workers 2] [--keep DIR]

Each run holds what a capture of the story's face model holds: input 320x320x3 (307,200 bytes), raw
convert_scores (8,136, lane-padded), tensor Squeeze1 (8,136) and convert_scores (4,068), dequantized scores
(16,272 float32) and the four PostProcess outputs: ~344 KB in 9 buffers, ~690 MB for 2,000 runs. One pair in ten
differs (the bundled broken dumps: a row-stride input, a DMA that stopped early). The pairs are written first
(not timed); then batch_compare runs with the process pool and, as the named baseline, with one process, on
the same folder in the same run (both warm: the files were just written). Prints both times and the ratio.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402

from forensics.runs.batch import batch_compare, write_summary  # noqa: E402
from forensics.runs.run import write_run  # noqa: E402

DUMPS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "dumps")


def _read(source: str, name: str) -> bytes:
    with open(os.path.join(DUMPS, source, name), "rb") as fh:
        return fh.read()


def _write_run(path, source, input_bytes, scores_raw, boxes, detections):
    scores = np.frombuffer(scores_raw, np.uint8).reshape(-1, 4)[:, :2]
    with write_run(path, source) as b:
        b.add_bytes("input", None, input_bytes, dtype="uint8", shape=(1, 320, 320, 3))
        b.add_bytes("raw", "convert_scores", scores_raw, dtype="uint8", record_size=4)
        b.add_bytes("tensor", "Squeeze1", boxes, dtype="uint8", shape=(1, 2034, 4), scale=0.10822763,
                    zero_point=144, role="boxes")
        b.add_bytes("tensor", "convert_scores", np.ascontiguousarray(scores), dtype="uint8", shape=(1, 2034, 2),
                    scale=1 / 256, zero_point=0, role="scores")
        b.add_bytes("dequantized", "convert_scores", (scores.astype(np.float32) / 256), dtype="float32",
                    shape=(1, 2034, 2))
        for (name, arr, role) in detections:
            b.add_bytes("detections", name, arr, dtype="float32", shape=arr.shape, role=role)


def detections() -> list:
    """One face's PostProcess outputs (boxes, classes, scores, num_detections), as (name, array, role)."""
    boxes = np.zeros((1, 10, 4), np.float32)
    boxes[0, 0] = (0.2, 0.3, 0.6, 0.7)
    classes, scores = np.zeros((1, 10), np.float32), np.zeros((1, 10), np.float32)
    scores[0, 0] = 0.99609375
    return [("TFLite_Detection_PostProcess", boxes, "boxes"), ("TFLite_Detection_PostProcess:1", classes, "classes"),
            ("TFLite_Detection_PostProcess:2", scores, "scores"),
            ("TFLite_Detection_PostProcess:3", np.array([1], np.float32), "num_detections")]


def dumps_of(source: str) -> dict:
    return {k: _read(source, f) for k, f in (("input", "input.bin"), ("scores", "convert_scores.bin"),
                                            ("boxes", "Squeeze1.bin"))}


def make_farm(root: str, pairs: int) -> None:
    good, broken, dets = dumps_of("libedgetpu"), dumps_of("broken"), detections()
    for i in range(pairs):
        pair = os.path.join(root, f"pair-{i:04d}")
        os.mkdir(pair)
        _write_run(os.path.join(pair, "a_libedgetpu"), "libedgetpu", good["input"], good["scores"], good["boxes"], dets)
        b = broken if i % 10 == 9 else good
        _write_run(os.path.join(pair, "b_ours"), "ours", b["input"], b["scores"], b["boxes"], dets)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--keep", metavar="DIR", help="write the farm here and keep it")
    add_json_flag(parser)
    args = parser.parse_args()
    with Table(args.json, "bench_runs") as table:
        return measure(args, table)


def measure(args, table: Table) -> int:
    root = args.keep or tempfile.mkdtemp(prefix="bench_runs.")
    os.makedirs(root, exist_ok=True)
    try:
        t0 = time.perf_counter()
        make_farm(root, args.pairs)
        print(f"wrote {args.pairs} run pairs in {time.perf_counter() - t0:.1f} s (not part of the measurement)")
        t0 = time.perf_counter()
        pooled = batch_compare(root, workers=args.workers)
        t_pool = time.perf_counter() - t0
        pooled = write_summary(pooled, os.path.join(root, "summary.csv"))
        t_total = time.perf_counter() - t0
        t0 = time.perf_counter()
        single = batch_compare(root, workers=1)
        t_single = time.perf_counter() - t0
        assert pooled.rows == single.rows
        counts = {str(k): v for k, v in pooled.counts.items()}  # verdict words, not enum reprs
        print(f"compare --batch, {pooled.workers} worker processes: {t_pool:.2f} s ({args.pairs / t_pool:.0f} pairs/s) "
              f"{counts}; with the CSV + Parquet summary: {t_total:.2f} s")
        print(f"baseline: one process, same pairs:                      {t_single:.2f} s")
        print(f"ratio pool / one process: {t_pool / t_single:.2f}  (goal: 1,000 pairs under 30 s: "
              f"{'met' if t_total < 30 * args.pairs / 1000 else 'NOT met'})")
        table.add(f"compare --batch, {args.pairs:,} pairs, with the summary", t_total,
                  baseline="one process, same pairs", baseline_value=t_single, goal_value=30 * args.pairs / 1000)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
