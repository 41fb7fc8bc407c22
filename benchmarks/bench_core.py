"""Benchmarks for the buffer commands, each against a named baseline measured in the same run.

  python benchmarks/bench_core.py [--dir DIR] [--size-mib 1024] [--repeat 3]

Builds a 1 GiB dump pair (random data, a few thousand scattered differing records) and a 64 M-record
dominated scores buffer, then prints medians and ratios:
  diff      `forensics diff A B`       vs `cmp -l A B > file` (GNU cmp, to a real file: on /dev/null it stops early)   goal <= 2x
  crc       `forensics crc A`          vs a Python process doing zlib.crc32 over an mmap of A          goal <= 1.2x
  anchors   `forensics anchors S`      (64 M records)  vs numpy.unique(return_counts) on the same records  goal <= 1.5 s
  help      `forensics --help`         vs `python -c "import numpy"`                                   goal <= 3x
  rss       peak RSS of the 1 GiB diff (RUSAGE_CHILDREN of a fresh wrapper process)                   goal <= 300 MB
The page cache is warmed before timing, so the figures compare compute and copying, not the disk.
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

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FORENSICS = [sys.executable, "-m", "forensics"]
ENV = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
# Time forensics as an installed package runs: with its bytecode cached (here in a temporary folder, so
# nothing is written into the checkout). PYTHONDONTWRITEBYTECODE=1, set on some machines, would otherwise
# recompile every module on every run; the numpy baselines already have their bytecode.
ENV.pop("PYTHONDONTWRITEBYTECODE", None)
ENV["PYTHONPYCACHEPREFIX"] = os.path.join(tempfile.gettempdir(), "forensics-bench-pycache")


def build(directory: str, size: int) -> dict[str, str]:
    import numpy as np

    os.makedirs(directory, exist_ok=True)
    paths = {"a": os.path.join(directory, "a.bin"), "b": os.path.join(directory, "b.bin"),
             "scores": os.path.join(directory, "scores64m.bin")}
    if not (os.path.exists(paths["a"]) and os.path.getsize(paths["a"]) == size):
        rng = np.random.default_rng(7)
        with open(paths["a"], "wb") as fa, open(paths["b"], "wb") as fb:
            step = 64 << 20
            for pos in range(0, size, step):
                block = rng.integers(0, 256, min(step, size - pos), dtype=np.uint8)
                fa.write(block.tobytes())
                # ~50 differing 4-byte records per 64 MiB block, anywhere in the block
                where = rng.integers(0, len(block) // 4, 50) * 4
                block[where] ^= 0x5A
                fb.write(block.tobytes())
    records = 64 << 20
    if not (os.path.exists(paths["scores"]) and os.path.getsize(paths["scores"]) == records * 4):
        rng = np.random.default_rng(11)
        scores = np.full(records, 0x808000FF, dtype=np.uint32)  # ff 00 80 80, little-endian
        hits = rng.integers(0, records, records // 200)          # 0.5 % of anchors depart
        scores[hits] = rng.integers(0, 2**32, len(hits), dtype=np.uint32)
        scores.tofile(paths["scores"])
    return paths


def warm(path: str) -> None:
    with open(path, "rb", buffering=0) as fh:
        buf = bytearray(16 << 20)
        while fh.readinto(buf):
            pass


def timed(argv, repeat: int, stdout=subprocess.DEVNULL, accept=(0, 1)) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        r = subprocess.run(argv, stdout=stdout, stderr=subprocess.PIPE, env=ENV)
        times.append(time.perf_counter() - t0)
        if r.returncode not in accept:
            raise SystemExit(f"benchmark command failed ({r.returncode}): {' '.join(argv)}\n{r.stderr.decode()}")
    return statistics.median(times)


def peak_rss_mib(argv) -> float:
    wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", wrapper, *argv], capture_output=True, text=True, env=ENV)
    return int(out.stdout.strip()) / 1024.0  # Linux reports KiB


def row(name, ours, base_name, base, goal):
    ratio = ours / base if base else float("inf")
    print(f"{name:8s} forensics {ours:7.3f} s | {base_name:34s} {base:7.3f} s | ratio {ratio:5.2f}x  ({goal})")


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=os.path.join(REPO, "bench-data"))
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--keep", action="store_true", help="keep the generated files")
    args = parser.parse_args(argv)
    paths = build(args.dir, args.size_mib << 20)
    for path in paths.values():
        warm(path)
    subprocess.run(FORENSICS + ["--help"], stdout=subprocess.DEVNULL, env=ENV)  # compile the package once
    for module_args in (["diff", paths["a"], paths["a"]], ["anchors", paths["scores"], "--count", "1"]):
        subprocess.run(FORENSICS + module_args, stdout=subprocess.DEVNULL, env=ENV)
    n = args.repeat
    print(f"files: {args.size_mib} MiB pair, 64 M-record scores; medians of {n} runs; python {sys.version.split()[0]}; "
          "bytecode cached as for an installed package")

    cmp_out = os.path.join(args.dir, "cmp.out")
    with open(cmp_out, "wb") as sink:
        base = timed(["cmp", "-l", paths["a"], paths["b"]], n, stdout=sink) if shutil.which("cmp") else float("nan")
    ours = timed(FORENSICS + ["diff", paths["a"], paths["b"]], n)
    row("diff", ours, "cmp -l > file", base, "goal <= 2x")

    crc_base = ("import mmap, sys, zlib\nwith open(sys.argv[1], 'rb') as f:\n"
                "    m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)\n    print(zlib.crc32(m))")
    base = timed([sys.executable, "-c", crc_base, paths["a"]], n)
    ours = timed(FORENSICS + ["crc", paths["a"]], n)
    row("crc", ours, "python zlib.crc32(mmap)", base, "goal <= 1.2x")

    uniq_base = ("import numpy as np, sys\na = np.fromfile(sys.argv[1], dtype=np.uint32)\n"
                 "u, c = np.unique(a, return_counts=True)\nprint(u[c.argmax()], c.max())")
    base = timed([sys.executable, "-c", uniq_base, paths["scores"]], n)
    ours = timed(FORENSICS + ["anchors", paths["scores"]], n)
    row("anchors", ours, "numpy.unique(return_counts)", base, f"goal <= 1.5 s: {'met' if ours <= 1.5 else 'MISSED'}")

    base = timed([sys.executable, "-c", "import numpy"], max(n, 5))
    ours = timed(FORENSICS + ["--help"], max(n, 5))
    row("help", ours, 'python -c "import numpy"', base, "goal <= 3x")

    rss = peak_rss_mib(FORENSICS + ["diff", paths["a"], paths["b"]])
    print(f"rss      peak RSS of forensics diff on the {args.size_mib} MiB pair: {rss:.0f} MiB (goal <= 300 MB)")
    if not args.keep:
        shutil.rmtree(args.dir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
