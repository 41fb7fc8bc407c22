"""Benchmark: `forensics repeat` over 100 runs of one input (goal: no slower than comparing each run with the first
by hand, the baseline measured in the same run, although repeat also diagnoses the outliers).

  python benchmarks/bench_repeat.py [--runs 100] [--repeat 5] [--keep DIR]

Each run holds what a driver's capture of the story's face model holds (bench_runs.py's runs: input 320x320x3,
raw convert_scores, tensors, dequantized scores, the four PostProcess outputs; ~344 KB in 9 buffers). Three runs
are outliers: run 1 cold (the broken driver's raw output), run 40 with a DMA that stopped early and run 41 stale
from it. The runs are written first (not timed). Figures (median of --repeat, warm):
- repeat (the manifests' CRCs trusted, as compare --batch) against the baseline: 99 calls of
  compare_runs(run 1, run k) with diagnosis off, each verifying both runs' files (what `compare RUN_A RUN_B` in a
  loop does, without its process start);
- repeat --verify-files (every file's CRC taken again) against the same baseline.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402
from bench_runs import _write_run, detections, dumps_of  # noqa: E402

from forensics.runs.compare import compare_runs  # noqa: E402
from forensics.runs.repeat import repeat_runs  # noqa: E402


def make_loop(root: str, n: int) -> list[str]:
    good, broken, dets = dumps_of("libedgetpu"), dumps_of("broken")["scores"], detections()
    cut = good["scores"][:4000] + broken[4000:]  # a DMA that stopped at byte 4,000
    stale = good["scores"][:6000] + cut[6000:]   # read early: the rest is the previous job's
    paths = []
    for i in range(1, n + 1):
        scores_raw = {1: broken, 40: cut, 41: stale}.get(i, good["scores"])
        path = os.path.join(root, f"run-{i}")
        _write_run(path, "ours", good["input"], scores_raw, good["boxes"], dets)
        paths.append(path)
    return paths


def _median(fn, repeat: int) -> tuple[float, object]:
    times, result = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--keep", metavar="DIR", help="write the runs here and keep them")
    add_json_flag(parser)
    args = parser.parse_args()
    with Table(args.json, "bench_repeat") as table:
        return measure(args, table)


def measure(args, table: Table) -> int:
    root = args.keep or tempfile.mkdtemp(prefix="bench_repeat.")
    os.makedirs(root, exist_ok=True)
    try:
        runs = make_loop(root, args.runs)
        print(f"wrote {len(runs)} runs (not part of the measurement)")

        def by_hand():
            return [compare_runs(runs[0], r, diagnose=False).verdict for r in runs[1:]]

        t_base, verdicts = _median(by_hand, args.repeat)
        t_repeat, result = _median(lambda: repeat_runs(runs), args.repeat)
        t_verify, verified = _median(lambda: repeat_runs(runs, verify_files=True), args.repeat)
        outliers = [(r.name, r.first_divergent_stage, r.finding, r.depends) for r in result.outliers]
        assert outliers == [(r.name, r.first_divergent_stage, r.finding, r.depends) for r in verified.outliers]
        print(f"repeat over {len(runs)} runs: {t_repeat * 1e3:.0f} ms, outliers {outliers}")
        print(f"repeat --verify-files ({verified.workers} workers): {t_verify * 1e3:.0f} ms")
        print(f"baseline: {len(runs) - 1} x compare_runs(run-1, run-k): {t_base * 1e3:.0f} ms "
              f"({sum(v != 'MATCH' for v in verdicts)} differ: run-1 itself is the cold outlier)")
        baseline = f"{len(runs) - 1} x compare_runs(run-1, run-k), diagnosis off"
        table.add(f"repeat over {len(runs)} runs (3 outliers diagnosed)", t_repeat, baseline=baseline,
                  baseline_value=t_base, goal_ratio=1.0)
        table.add(f"repeat --verify-files over {len(runs)} runs", t_verify, baseline=baseline,
                  baseline_value=t_base, goal_ratio=1.0)
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
