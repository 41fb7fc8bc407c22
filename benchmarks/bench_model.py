"""Benchmark: `forensics graph` / `extract` / `relayout` on the 4 MB real SSD segment vs named baselines.

Prints medians of N runs (in-process and as a subprocess) and ratios against baselines measured in the same
run: reading the model file into memory, and `python -c "import numpy"` (the floor of any CLI start).
Usage: python benchmarks/bench_model.py [MODEL] [--runs N]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "benchmarks"))

from _table import Table, add_json_flag  # noqa: E402
DEFAULT = (REPO.parent / "shared" / "data" / "coral"
           / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite")


def median_time(fn, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("model", nargs="?", default=str(DEFAULT))
    ap.add_argument("--runs", type=int, default=15)
    add_json_flag(ap)
    args = ap.parse_args()
    with Table(args.json, "bench_model") as table:
        return measure(args, table)


def measure(args, table: Table) -> int:
    if not os.path.exists(args.model):
        print(f"model not found: {args.model}", file=sys.stderr)
        return 2
    import numpy as np

    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.extract import extract
    from forensics.model.tflite.graph import graph_summary
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import layer_map, relayout

    size = os.path.getsize(args.model)
    read_file = median_time(lambda: Path(args.model).read_bytes(), args.runs)

    def graph():
        m = open_model(args.model)
        graph_summary(m, read_packages(m)).to_dict()

    def do_extract():
        m = open_model(args.model)
        extract(m, read_packages(m))

    g = median_time(graph, args.runs)
    e = median_time(do_extract, args.runs)
    m = open_model(args.model)
    layer = read_packages(m)[0].output_layer("convert_scores")
    raw = np.random.default_rng(0).integers(0, 256, layer.size_bytes, dtype=np.uint8) if layer else None
    lm = layer_map(layer) if layer else None
    r = median_time(lambda: relayout(raw, lm), args.runs) if layer else None

    env = dict(os.environ, PYTHONPATH=str(REPO))
    cli_runs = max(3, args.runs // 3)
    numpy_start = median_time(lambda: subprocess.run([sys.executable, "-c", "import numpy"], check=True), cli_runs)
    with tempfile.TemporaryDirectory() as tmp:
        cli_graph = median_time(lambda: subprocess.run(
            [sys.executable, "-m", "forensics", "graph", args.model, "--json"], env=env, check=True,
            stdout=subprocess.DEVNULL), cli_runs)
        cli_extract = median_time(lambda: subprocess.run(
            [sys.executable, "-m", "forensics", "extract", args.model, "-o", os.path.join(tmp, "x"), "--force"],
            env=env, check=True, stdout=subprocess.DEVNULL), cli_runs)

    print(f"model: {args.model} ({size:,} bytes); medians of {args.runs} runs (CLI: {cli_runs})")
    print(f"baseline read_bytes(model)          {read_file * 1e3:8.2f} ms")
    print(f"graph   (library: open+package+json) {g * 1e3:8.2f} ms   {g / read_file:5.2f}x read_bytes")
    print(f"extract (library)                    {e * 1e3:8.2f} ms   {e / read_file:5.2f}x read_bytes")
    if r is not None:
        print(f"relayout convert_scores (library)    {r * 1e3:8.2f} ms   {r / read_file:5.2f}x read_bytes")
    print(f"baseline python -c 'import numpy'    {numpy_start * 1e3:8.2f} ms")
    print(f"forensics graph --json (process)     {cli_graph * 1e3:8.2f} ms   {cli_graph / numpy_start:5.2f}x import numpy")
    print(f"forensics extract (process)          {cli_extract * 1e3:8.2f} ms   {cli_extract / numpy_start:5.2f}x import numpy")
    table.add("graph of the 4 MB SSD segment (library)", g * 1e3, "ms", baseline="read_bytes(model)",
              baseline_value=read_file * 1e3)
    table.add("extract (library)", e * 1e3, "ms", baseline="read_bytes(model)", baseline_value=read_file * 1e3)
    table.add("forensics graph --json (process)", cli_graph, baseline='python -c "import numpy"',
              baseline_value=numpy_start)
    table.add("forensics extract (process)", cli_extract, baseline='python -c "import numpy"',
              baseline_value=numpy_start)
    return 0


if __name__ == "__main__":
    sys.exit(main())
