"""Benchmark the C header's CRC32 (c/forensics_run.h, fr_crc32, slicing-by-8) against zlib's crc32() from C.

Compiles benchmarks/bench_c_crc.c with the system C compiler (-O2, linked with -lz) and runs it: both CRCs on
the same 64 MiB buffer in the same process, best of 5 passes each, and the two values must agree. The goal is
fr_crc32 at >= 1 GB/s on this machine; zlib's crc32() measured in the same run is the baseline, and the
ratio says how far the header (no dependency, usable in a kernel driver) is from the library a user-mode tool
would link. fr_xorfold64 is printed too, and what a whole fingerprint line costs per MiB, in one call and
streamed a 4 KiB page at a time (the figure docs/kernel.md quotes for DISPATCH_LEVEL budgets). Prints rates
and the ratio; asserts nothing.
Needs a C compiler and zlib's headers (Debian: zlib1g-dev).
Run: python3 benchmarks/bench_c_crc.py [MIB] [ROUNDS] [--json]   (`--json`: the rows only, as
benchmarks/_table.py describes)
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))

from _table import Table, add_json_flag  # noqa: E402

GOAL = 1e9  # bytes per second


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("mib", nargs="?", default="64", help="buffer size in MiB (default 64)")
    ap.add_argument("rounds", nargs="?", default="5", help="passes of each CRC, the best is kept (default 5)")
    add_json_flag(ap)
    args = ap.parse_args(argv)
    with Table(args.json, "bench_c_crc") as table:
        return measure(args.mib, args.rounds, table)


def measure(mib: str, rounds: str, table: Table) -> int:
    cc = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if cc is None:
        print("bench_c_crc: no C compiler (cc, gcc or clang) on PATH", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bench_c_crc"
        build = subprocess.run([cc, "-std=c11", "-O2", "-Wall", "-Wextra", f"-I{ROOT / 'c'}",
                                str(ROOT / "benchmarks" / "bench_c_crc.c"), "-o", str(exe), "-lz"],
                               capture_output=True, text=True)
        if build.returncode != 0:
            print(f"bench_c_crc: cannot build (zlib headers missing? Debian: apt-get install zlib1g-dev):\n"
                  f"{build.stderr.strip()}", file=sys.stderr)
            return 2
        run = subprocess.run([str(exe), mib, rounds], capture_output=True, text=True)
    if run.returncode != 0:
        print(f"bench_c_crc: the benchmark failed: {run.stderr.strip()}", file=sys.stderr)
        return 1
    rates = {}
    for line in run.stdout.splitlines():
        name, size, seconds = line.split()
        if name != "check":
            rates[name] = int(size) / float(seconds)
    fr, zl, xor = rates["fr_crc32"], rates["zlib_crc32"], rates["fr_xorfold64"]
    fp, pages = rates["fr_fingerprint_line"], rates["fr_fp_pages"]
    print(f"buffer {int(mib)} MiB, best of {rounds} passes, {cc} -O2")
    print(f"  fr_crc32 (forensics_run.h)   {fr / 1e9:6.2f} GB/s   goal >= {GOAL / 1e9:.0f} GB/s: "
          f"{'met' if fr >= GOAL else 'NOT met'}")
    print(f"  zlib crc32() (baseline)      {zl / 1e9:6.2f} GB/s")
    print(f"  ratio fr_crc32 / zlib        {fr / zl:6.2f}")
    print(f"  fr_xorfold64                 {xor / 1e9:6.2f} GB/s")
    print(f"  fr_fingerprint_line          {fp / 1e9:6.2f} GB/s   {2**20 / fp * 1e6:6.0f} us per MiB")
    print(f"  fr_fp_update, 4 KiB pages    {pages / 1e9:6.2f} GB/s   {2**20 / pages * 1e6:6.0f} us per MiB")
    table.add(f"fr_crc32 rate, {int(mib)} MiB buffer", fr / 1e9, "GB/s", baseline="zlib crc32() from C",
              baseline_value=zl / 1e9, goal_min=GOAL / 1e9,
              note=f"a rate: ratio > 1 is faster than zlib; best of {rounds} passes, {Path(cc).name} -O2")
    table.add(f"fr_xorfold64 rate, {int(mib)} MiB buffer", xor / 1e9, "GB/s", note="context, no goal")
    table.add(f"fingerprint line (CRC32 + xor-fold, one pass), {int(mib)} MiB", fp / 1e9, "GB/s",
              baseline="fr_crc32 alone", baseline_value=fr / 1e9, note="context: what the xor-fold adds")
    table.add("fingerprint streamed in 4 KiB pages, cost per MiB", 2**20 / pages * 1e6, "us",
              note="context: the DISPATCH_LEVEL budget in docs/kernel.md")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
