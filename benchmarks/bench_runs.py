"""Benchmark: `forensics compare --batch` over 1,000 face-sized run pairs (goal: under 30 s on this 2-core machine),
one interactive `forensics compare RUN_A RUN_B` of two realistic SSD runs (goal: at most 3x `python -c "import
numpy"` on a differing pair), and compare of two runs inside a zip archive (goal: 128 MiB deflated buffers in
at most 15 s and 600 MiB).

  python benchmarks/bench_runs.py [--pairs 1000] [--workers 2] [--keep DIR] [--model SSD_SEGMENT.tflite]
                                  [--repeat 11] [--zip-mib 128] [--only batch,interactive,zip]

Interactive: the realistic pairs of benchmarks/realistic_pairs.py (an SSD MobileNet v2 run with every stage,
13 buffers; its sizes, quantization and anchors from --model, else a stand-in of the same sizes), one pair that
differs where a driver bug would put it and one identical; CPU time (user + system) of each child process,
the median of --repeat runs interleaved with the baseline, bytecode cached as for an installed package. Zip:
two runs of one 4-byte-record raw buffer of --zip-mib MiB (deflatable values; one byte differs) in a
ZIP_DEFLATED archive, compared through zip://RUN::file://ARCHIVE against the same runs unpacked (the baseline);
wall time and the child's peak resident memory.

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
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402
from bench_core import ENV, FORENSICS  # noqa: E402  (forensics run as installed: bytecode cached)

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
    parser.add_argument("--model", metavar="SSD_SEGMENT.tflite",
                        help="the real SSD MobileNet v2 segment, for the interactive pairs' sizes and anchors")
    parser.add_argument("--repeat", type=int, default=11, help="runs of each interactive command (default 11)")
    parser.add_argument("--zip-mib", type=int, default=128, help="MiB per buffer in the zip archive (default 128)")
    parser.add_argument("--only", default="batch,interactive,zip", help="which parts to run (comma-separated)")
    add_json_flag(parser)
    args = parser.parse_args()
    parts = set(args.only.split(","))
    with Table(args.json, "bench_runs") as table:
        if "batch" in parts:
            measure(args, table)
        if "interactive" in parts:
            measure_interactive(args, table)
        if "zip" in parts:
            measure_zip(args, table)
    return 0


def _child(argv, env=ENV, accept=(0, 1)) -> tuple[float, float, float]:
    """(CPU seconds, wall seconds, peak resident MiB) of one child process."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in accept:
        raise SystemExit(f"benchmark command failed ({code}): {' '.join(map(str, argv))}\n{err}")
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024


def measure_interactive(args, table: Table) -> None:
    from realistic_pairs import make_farm as realistic_farm

    root = tempfile.mkdtemp(prefix="bench_runs_pairs.")
    try:
        farm = realistic_farm(root, 10, model=args.model)  # pair-000009 differs, pair-000000 does not
        pair = {name: [os.path.join(root, f"pair-{i:06d}", r) for r in ("a_libedgetpu", "b_ours")]
                for name, i in (("differ", 9), ("same", 0))}
        commands = {"numpy": [sys.executable, "-c", "import numpy"],
                    "differ": FORENSICS + ["compare", *pair["differ"]],
                    "same": FORENSICS + ["compare", *pair["same"]]}
        for argv in commands.values():  # the bytecode cached once
            _child(argv)
        cpu = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, argv in commands.items():
                cpu[name].append(_child(argv)[0])
        median = {name: statistics.median(v) for name, v in cpu.items()}
        baseline = 'python -c "import numpy"'
        what = "stand-in SSD" if farm.stand_in else "SSD MobileNet v2"
        print(f"interactive compare of two realistic {what} runs ({farm.buffers_per_run} buffers each), CPU time, "
              f"median of {args.repeat}: differing {median['differ'] * 1e3:.0f} ms, identical "
              f"{median['same'] * 1e3:.0f} ms; {baseline} {median['numpy'] * 1e3:.0f} ms: "
              f"{median['differ'] / median['numpy']:.2f}x and {median['same'] / median['numpy']:.2f}x")
        table.add(f"compare RUN_A RUN_B, realistic {what} pair that differs (CPU)", median["differ"],
                  baseline=baseline, baseline_value=median["numpy"], goal_ratio=3.0)
        table.add(f"compare RUN_A RUN_B, realistic {what} pair, identical (CPU)", median["same"],
                  baseline=baseline, baseline_value=median["numpy"])
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _zip_runs(root: str, mib: int) -> tuple[str, list[str]]:
    import zipfile

    size = mib << 20
    rng = np.random.default_rng(5)
    a = rng.integers(0, 4, size, dtype=np.uint8)  # deflates to about a quarter, as padded scores do
    b = a.copy()
    b[size // 3] ^= 0x10
    runs = []
    for name, data in (("ref", a), ("drv", b)):
        path = os.path.join(root, name)
        with write_run(path, name) as w:
            w.add_bytes("raw", "scores", data, dtype="uint8", record_size=4)
        runs.append(path)
    del a, b
    archive = os.path.join(root, "runs.zip")
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as z:
        for path in runs:
            for folder, _, files in os.walk(path):
                for f in files:
                    full = os.path.join(folder, f)
                    z.write(full, os.path.relpath(full, root))
    return archive, runs


def measure_zip(args, table: Table) -> None:
    root = tempfile.mkdtemp(prefix="bench_runs_zip.")
    try:
        archive, runs = _zip_runs(root, args.zip_mib)
        url = "file://" + archive
        zipped = FORENSICS + ["compare", f"zip://ref::{url}", f"zip://drv::{url}"]
        local = FORENSICS + ["compare", *runs]
        _child(local)  # the files in the page cache, the bytecode cached
        cpu_zip, wall_zip, rss_zip = _child(zipped)
        _, wall_local, rss_local = _child(local)
        print(f"compare of two runs in a zip, {args.zip_mib} MiB deflated buffers: {wall_zip:.2f} s, "
              f"{rss_zip:.0f} MiB; the same runs unpacked: {wall_local:.2f} s, {rss_local:.0f} MiB")
        table.add(f"compare of two runs inside a zip, {args.zip_mib} MiB deflated buffers", wall_zip,
                  baseline="the same runs unpacked", baseline_value=wall_local, goal_value=15.0)
        table.add(f"compare of two runs inside a zip, {args.zip_mib} MiB deflated buffers: peak memory", rss_zip,
                  unit="MiB", baseline="the same runs unpacked", baseline_value=rss_local, goal_value=600.0)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def measure(args, table: Table) -> None:
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


if __name__ == "__main__":
    sys.exit(main())
