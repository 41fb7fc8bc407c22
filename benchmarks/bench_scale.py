"""Benchmark: `compare --batch` at dataset scale, on the local process pool and on Dask.

  python benchmarks/bench_scale.py [--pairs 100000] [--workers 2] [--repeat 2] [--keep DIR] [--skip-dask] [--json]

Goals (issue 14): 100,000 face-sized pairs with the local scheduler in <= 5 minutes at peak RSS <= 500 MB;
the same on a 2-worker Dask LocalCluster within 1.3x the local time; 1 vs 2 Dask workers showing the speed-up.

Each run holds what the face model's decode reads: tensor Squeeze1 (boxes) and convert_scores (scores), 2034
anchors x 4 bytes each (8,136 bytes), uint8 with their quantization, in the run format. One pair in ten differs
in a few anchors (which ones vary from pair to pair, from a fixed set of variants), so the aggregates have work to
do. The farm is written first (not timed; written directly in the run format, without a per-run fsync, to keep
the set-up short). Then, on the same farm in the same process: batch_compare + write_summary with the local pool
(the baseline), then a Dask LocalCluster with 2 workers and with 1 worker, interleaved `--repeat` times (medians
compared: on a 2-core machine shared with other benchmarks the CPU left to us changes from minute to minute, and
one 2-worker run minutes before one 1-worker run measured the neighbours as much as the engine). Peak RSS is
sampled every 0.2 s over this process and all its descendants (the pool's or the cluster's worker processes),
summed; so is the CPU time each of them used, which says how much of a core each worker got (`cpu share`): a
worker busy the whole run that gets half a core is short of CPU, not of work.
With fewer --pairs, the 100,000-pair time is extrapolated linearly (the row's note says so). `--json`: the rows
only, as benchmarks/_table.py describes.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import threading
import statistics
import time
import zlib
from dataclasses import dataclass

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402

from forensics.runs.batch import batch_compare, write_summary  # noqa: E402

ANCHORS = 2034
VARIANTS = 32


def _manifest(source: str, files: dict) -> str:
    buffers = []
    for name, (role, data, scale, zp) in files.items():
        buffers.append({"stage": "tensor", "tensor": name, "file": f"tensor/{name}.bin", "size": len(data),
                        "crc32": f"0x{zlib.crc32(data):08x}", "dtype": "uint8", "shape": [1, ANCHORS, 4],
                        "scale": scale, "zero_point": zp, "role": role})
    return json.dumps({"format": "forensics-run", "version": 1, "source": source, "created": None,
                       "tool": "bench_scale", "model": None, "input_image": None, "buffers": buffers})


def _write_run(path: str, manifest: str, files: dict) -> None:
    os.makedirs(os.path.join(path, "tensor"))
    for name, (_, data, _, _) in files.items():
        with open(os.path.join(path, "tensor", f"{name}.bin"), "wb") as fh:
            fh.write(data)
    with open(os.path.join(path, "manifest.json"), "w", encoding="utf-8") as fh:
        fh.write(manifest)


def make_farm(root: str, pairs: int) -> None:
    rng = np.random.default_rng(14)
    boxes = rng.integers(120, 170, ANCHORS * 4, dtype=np.uint8)
    scores = np.full((ANCHORS, 4), 0, np.uint8)
    scores[:, 0] = 255
    scores[rng.choice(ANCHORS, 30, replace=False), 1] = 200

    def files(b, s):
        return {"Squeeze1": ("boxes", b.tobytes(), 0.10822763, 144),
                "convert_scores": ("scores", s.tobytes(), 1 / 256, 0)}

    good = files(boxes, scores)
    variants = []
    for _ in range(VARIANTS):
        b, s = boxes.copy(), scores.copy()
        hit = rng.choice(ANCHORS, int(rng.integers(1, 12)), replace=False)
        b.reshape(ANCHORS, 4)[hit, rng.integers(0, 4)] += rng.integers(1, 4, len(hit)).astype(np.uint8)
        s[hit[:3], 1] ^= 0x10
        variants.append(files(b, s))
    manifest_a = _manifest("libedgetpu", good)
    manifest_good = _manifest("ours", good)
    manifests_bad = [_manifest("ours", v) for v in variants]
    for i in range(pairs):
        pair = os.path.join(root, f"pair-{i:06d}")
        _write_run(os.path.join(pair, "a_libedgetpu"), manifest_a, good)
        if i % 10 == 9:
            v = (i // 10) % VARIANTS
            _write_run(os.path.join(pair, "b_ours"), manifests_bad[v], variants[v])
        else:
            _write_run(os.path.join(pair, "b_ours"), manifest_good, good)


class PeakRSS:
    """Samples the summed RSS of this process and all its descendants, and each descendant's CPU time."""

    def __init__(self, interval: float = 0.2):
        import psutil

        self.proc = psutil.Process()
        self.interval = interval
        self.peak = 0
        self.cpu: dict[int, float] = {}  # descendant pid -> CPU seconds (user + system), last seen
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _sample(self) -> int:
        total = 0
        for p in [self.proc] + self.proc.children(recursive=True):
            try:
                total += p.memory_info().rss
                if p.pid != self.proc.pid:
                    times = p.cpu_times()
                    self.cpu[p.pid] = times.user + times.system
            except Exception:  # noqa: BLE001 - a process that just ended
                pass
        return total

    def _run(self):
        while not self._stop.is_set():
            self.peak = max(self.peak, self._sample())
            self._stop.wait(self.interval)

    def __enter__(self):
        self._thread.start()
        return self

    def __exit__(self, *exc):
        self._stop.set()
        self._thread.join()


@dataclass
class Timing:
    seconds: float
    peak_rss: int
    parent_cpu: float  # this process: the pool's or the client's and scheduler's side, the aggregation, the summary
    worker_cpu: list  # CPU seconds of each worker process (the busiest first)

    def share(self, workers: int) -> float:
        """The CPU the workers got, in cores per worker, averaged over the run."""
        return sum(self.worker_cpu[:workers]) / (self.seconds * workers)


def timed(label, root, **kw):
    with PeakRSS() as rss:
        t0, c0 = time.perf_counter(), time.process_time()
        result = batch_compare(root, **kw)
        result = write_summary(result, os.path.join(root, f"summary-{label}.csv"))
        seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    return result, Timing(seconds, rss.peak, cpu, sorted(rss.cpu.values(), reverse=True))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=100_000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--keep", metavar="DIR", help="write the farm here and keep it (reused when it exists)")
    parser.add_argument("--skip-dask", action="store_true", help="only the local scheduler")
    parser.add_argument("--repeat", type=int, default=2, help="Dask 2-worker and 1-worker runs, interleaved")
    add_json_flag(parser)
    args = parser.parse_args()
    with Table(args.json, "bench_scale") as table:
        measure(args, table)
    return 0


def measure(args, table: Table) -> None:
    root = args.keep or tempfile.mkdtemp(prefix="bench_scale.")
    try:
        if not (args.keep and os.path.isdir(root) and len(os.listdir(root)) >= args.pairs):
            os.makedirs(root, exist_ok=True)
            t0 = time.perf_counter()
            make_farm(root, args.pairs)
            print(f"wrote {args.pairs:,} face-sized run pairs in {time.perf_counter() - t0:.1f} s "
                  "(not part of the measurement)", flush=True)
        mb = 1 << 20
        local, timing = timed("local", root, workers=args.workers)
        t_local, rss_local = timing.seconds, timing.peak_rss
        counts = dict(local.counts)
        print(f"local, {local.workers} processes:  {t_local:7.1f} s  {args.pairs / t_local:7.0f} pairs/s  "
              f"peak RSS {rss_local / mb:6.0f} MB  cpu share {timing.share(local.workers):.2f}  {counts}", flush=True)
        extrapolated = t_local * 100_000 / args.pairs
        print(f"  -> 100,000 pairs at this rate: {extrapolated:.0f} s (goal <= 300 s: "
              f"{'met' if extrapolated <= 300 else 'NOT met'}); peak RSS goal <= 500 MB: "
              f"{'met' if rss_local <= 500 * mb else 'NOT met'} at {args.pairs:,} pairs", flush=True)
        scaled = None if args.pairs == 100_000 else f"extrapolated from {args.pairs:,} pairs ({t_local:.1f} s)"
        table.add("100,000 pairs, local scheduler", extrapolated, goal_value=300,
                  note=f"{local.workers} processes" + (f"; {scaled}" if scaled else ""))
        table.add("peak RSS, local scheduler", rss_local / mb, "MiB", goal_value=500,
                  note=f"at {args.pairs:,} pairs")
        if args.skip_dask:
            return
        runs = {args.workers: [], 1: []}
        for _ in range(max(1, args.repeat)):
            for n in (args.workers, 1):
                result, timing = timed(f"dask{n}", root, workers=n, scheduler="dask")
                assert result.rows == local.rows and result.aggregates.to_dict() == local.aggregates.to_dict()
                runs[n].append(timing)
                workers_cpu = " + ".join(f"{c:.1f}" for c in timing.worker_cpu[:n])
                print(f"dask LocalCluster, {n} worker{'s' if n > 1 else ' '}: {timing.seconds:7.1f} s  "
                      f"{args.pairs / timing.seconds:7.0f} pairs/s  peak RSS {timing.peak_rss / mb:6.0f} MB  "
                      f"CPU s: workers {workers_cpu}, this process {timing.parent_cpu:.1f}  "
                      f"cpu share {timing.share(n):.2f} a worker", flush=True)
        t_two = statistics.median(t.seconds for t in runs[args.workers])
        t_one = statistics.median(t.seconds for t in runs[1])
        share_two = statistics.median(t.share(args.workers) for t in runs[args.workers])
        share_one = statistics.median(t.share(1) for t in runs[1])
        print(f"  medians of {len(runs[1])}: ratio dask / local: {t_two / t_local:.2f} (goal <= 1.3: "
              f"{'met' if t_two <= 1.3 * t_local else 'NOT met'}); {args.workers} vs 1 workers: "
              f"{t_two / t_one:.2f} (goal <= 0.8: {'met' if t_two <= 0.8 * t_one else 'NOT met'}; speed-up "
              f"{t_one / t_two:.2f}x; the machine has {os.cpu_count()} cores, shared)", flush=True)
        table.add(f"{args.pairs:,} pairs, {args.workers}-worker Dask LocalCluster", t_two, baseline="local scheduler",
                  baseline_value=t_local, goal_ratio=1.3,
                  note=f"median of {len(runs[args.workers])}; cluster start-up included")
        table.add(f"{args.pairs:,} pairs, {args.workers} vs 1 Dask workers", t_two, baseline="1-worker LocalCluster",
                  baseline_value=t_one, goal_ratio=0.8,
                  note=f"medians of {len(runs[1])} interleaved; speed-up {t_one / t_two:.2f}x; each worker got "
                       f"{share_two:.2f} of a core ({args.workers} workers) vs {share_one:.2f} (1 worker) on "
                       f"{os.cpu_count()} shared cores")
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
