"""Benchmark `forensics csr`: 100,000 register accesses per side, parsed and compared.

Two traces: A in libedgetpu's glog-prefixed VLOG(5) format (every line distinct: timestamps), B in the
plain `W64 0x.. = 0x..` format (a few hundred distinct lines), with 20 planted value differences, one
access missing and one extra. A second pair adds reads: libedgetpu-style polls (runs of 2-4 reads of a
status register) on both sides, compared with --reads.

The goal is the whole command, `forensics csr A B` as a process (startup, imports, reading, parsing,
aligning, rendering), in well under a second. Baselines measured in the same run, in fresh processes:
`python -c pass` (the interpreter alone), `python -c "import numpy"`, and reading + decoding the two
files. In process: parsing both files alone, and difflib.SequenceMatcher (autojunk off, so it really
aligns) on the same keys at 10,000 accesses, because it is quadratic on repetitive traces.
Prints times (best of several runs) and ratios; asserts nothing.

The bounds (issue 35: <= 15 s and <= 600 MiB at every documented limit), each a fresh process whose wall time
and peak memory (the child's max RSS) are measured, beside a baseline measured in the same run:
- `forensics csr A B --json` of two traces at the limit: 199,999 lines each (MAX_TRACE_LINES 200,000), about
  64 MB each (MAX_TRACE_BYTES), every access different, so the document holds ~380,000 mismatches; baseline
  reading and decoding the two files (`python -c "... read().decode() ..."`).
- `forensics verify LOG input.bin` (the table) and `--json` of a 4.8 MB DbgView log of 20,000 `[FP]` lines
  (120,000 checks); baseline `forensics crc input.bin` (the same checksum and reads, once).
Run: python3 benchmarks/bench_csr.py [N] [--json] [--no-bounds]
"""

from __future__ import annotations

import difflib
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # run from a clone without installing
sys.path.insert(0, str(ROOT / "benchmarks"))

from _table import Table  # noqa: E402

from forensics.csr.align import align
from forensics.csr.compare import compare_files
from forensics.csr.parse import gc_paused, read_trace

OFFSETS = [0x485A8, 0x48788, 0x44018, 0x400C0, 0x486A0, 0x48570, 0x486E8]
STATUS = 0x48570   # instruction_queue_status: what libedgetpu polls


def _glog(k: int, op: str, offset: int, value: int) -> str:
    prefix = f"I0413 08:35:26.{k % 1000000:06d}  4793 kernel_registers.cc:{190 if op == 'W' else 211}] "
    if op == "W":
        return f"{prefix}Write: offset = 0x{offset:016x}, value = 0x{value:016x}"
    return f"{prefix}Read: offset = 0x{offset:016x}, value: = 0x{value:016x}"


def make_traces(directory: Path, n: int, reads: bool = False) -> tuple[Path, Path]:
    rng = random.Random(1)
    base = []
    while len(base) < n:
        if reads and rng.random() < 0.2:
            polls = rng.randrange(2, 5)
            base.extend(("R", STATUS, 0 if r < polls - 1 else 1) for r in range(polls))
        else:
            base.append(("W", rng.choice(OFFSETS), rng.randrange(8)))
    base = base[:n]
    a_lines = [_glog(k, op, o, v) for k, (op, o, v) in enumerate(base)]
    b_lines = [f"{op}64 0x{o:x} = 0x{v:x}" for op, o, v in base]
    for k in range(5, n, n // 20):           # 20 planted differences spread over the trace
        if base[k][0] == "W":
            b_lines[k] = f"W64 0x{base[k][1]:x} = 0xdead"
    del b_lines[n // 3]
    b_lines.insert(2 * n // 3, "W64 0x486c4 = 0x1")
    suffix = "-reads" if reads else ""
    a, b = directory / f"a{suffix}.log", directory / f"b{suffix}.log"
    a.write_text("\n".join(a_lines) + "\n")
    b.write_text("\n".join(b_lines) + "\n")
    return a, b


def best_of(fn, repeat=5):
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def process_time(args: list[str], pycache: str | None, repeat: int = 7) -> float:
    """Best wall time of a fresh `python3 ...` process (output to a real file, as a user would pipe it).
    With `pycache` (a directory outside the checkout), bytecode is cached there as for an installed
    package; without, the environment decides (PYTHONDONTWRITEBYTECODE=1: compiled from source each run)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if pycache:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = pycache
    with tempfile.TemporaryFile() as sink:
        def run():
            return subprocess.run([sys.executable, *args], stdout=sink, stderr=sink, env=env, cwd=ROOT, check=False)
        run()   # warm the file cache (and the bytecode cache)
        return best_of(run, repeat)[0]


def main() -> None:
    args = [a for a in sys.argv[1:] if a not in ("--json", "--no-bounds")]
    with Table("--json" in sys.argv[1:], "bench_csr") as table:
        measure(int(args[0]) if args else 100_000, table)
        if "--no-bounds" not in sys.argv[1:]:
            bounds(table)


def peak_process(args: list[str], repeat: int = 3) -> tuple[float, float]:
    """(best wall time in s, largest peak RSS in MiB) of a fresh `python3 ARGS` process, output to a file."""
    probe = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
             "subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
             "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    times, peaks = [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", probe, sys.executable, *args], capture_output=True, text=True,
                             env=env, cwd=ROOT, check=True).stdout.split()
        times.append(float(out[0]))
        peaks.append(int(out[1]) / 1024)  # Linux reports KiB
    return min(times), max(peaks)


def limit_traces(directory: Path) -> tuple[Path, Path]:
    """Two traces at csr's limits: 199,999 glog lines each, ~64 MB (long source paths pad them), no access of
    one equal to the other's at its place (random offsets, ops and 40-bit values)."""
    from forensics.csr.parse import MAX_TRACE_BYTES, MAX_TRACE_LINES

    n = MAX_TRACE_LINES - 1
    offsets = OFFSETS + [0x48590, 0x48598, 0x485A0]
    pad = "x" * 150
    paths = []
    for name, seed in (("limit_a.log", 7), ("limit_b.log", 8)):
        rng = random.Random(seed)
        lines = []
        for k in range(n):
            op, off, val = rng.choice("WR"), rng.choice(offsets), rng.randrange(1 << 40)
            prefix = (f"I0413 08:35:26.{k % 1000000:06d}  4793 some/long/path/of/the/driver/sources/"
                      f"kernel_registers.cc:{190 if op == 'W' else 211}] {pad} ")
            lines.append(prefix + (f"Write: offset = 0x{off:016x}, value = 0x{val:016x}" if op == "W" else
                                   f"Read: offset = 0x{off:016x}, value: = 0x{val:016x}"))
        path = directory / name
        path.write_text("\n".join(lines) + "\n")
        assert path.stat().st_size <= MAX_TRACE_BYTES, path.stat().st_size
        paths.append(path)
    return paths[0], paths[1]


def fp_log(directory: Path, lines: int = 20_000) -> Path:
    """A DbgView log of `lines` [FP] lines of dumps/ours/input.bin (~4.8 MB: 6 values each, 120,000 checks)."""
    import zlib

    import numpy as np

    data = (ROOT / "dumps/ours/input.bin").read_bytes()
    xor = int(np.bitwise_xor.reduce(np.frombuffer(data + bytes(-len(data) % 8), "<u8")))
    size, mid, tail = len(data), max(0, len(data) // 2 - 8), max(0, len(data) - 16)
    run = lambda at: data[at:at + 16].hex(" ")  # noqa: E731
    line = (f"[FP] input size={size} crc32=0x{zlib.crc32(data):08x} xor64=0x{xor:016x} head@0x0={run(0)} "
            f"mid@0x{mid:x}={run(mid)} tail@0x{tail:x}={run(tail)}")
    path = directory / "fp20k.log"
    path.write_text("".join(f"{i:08d}\t{i * 0.00001:.6f}\t{line}\n" for i in range(lines)))
    return path


def bounds(table: Table) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a, b = limit_traces(Path(tmp))
        mb = (a.stat().st_size + b.stat().st_size) / 1e6
        print(f"\nbounds: two traces of {MAX_LINES:,} lines, {mb:.0f} MB together; fresh processes, best time of 3, "
              "largest peak RSS")
        decode = f"[open(p, 'rb').read().decode() for p in ({str(a)!r}, {str(b)!r})]"
        t_read, m_read = peak_process(["-c", decode])
        t_numpy, _ = peak_process(["-c", "import numpy"])
        for flags in ([], ["--reads"]):
            t, m = peak_process(["-m", "forensics", "csr", str(a), str(b), "--json", *flags])
            what = "csr A B --json" + (" --reads" if flags else "")
            print(f"  forensics {what:<24} {t:7.2f} s  {m:6.0f} MiB   (read + decode: {t_read:.2f} s, "
                  f"{m_read:.0f} MiB)")
            table.add(f"forensics {what}, 2 x {MAX_LINES:,} lines at the limit (process)", t,
                      baseline='python -c "import numpy"', baseline_value=t_numpy, goal_value=15.0)
            table.add(f"forensics {what}, 2 x {MAX_LINES:,} lines: peak memory", m, "MiB",
                      baseline="read + decode A and B", baseline_value=m_read, goal_value=600.0)
        log = fp_log(Path(tmp))
        print(f"  verify log: {log.stat().st_size / 1e6:.1f} MB, 20,000 [FP] lines")
        t_crc, m_crc = peak_process(["-m", "forensics", "crc", "dumps/ours/input.bin"])
        for flags in ([], ["--json"]):
            t, m = peak_process(["-m", "forensics", "verify", str(log), "dumps/ours/input.bin", *flags])
            what = "verify LOG input.bin" + (" --json" if flags else "")
            print(f"  forensics {what:<27} {t:7.2f} s  {m:6.0f} MiB   (crc input.bin: {t_crc:.2f} s, "
                  f"{m_crc:.0f} MiB)")
            table.add(f"forensics {what}, 4.8 MB log of 20,000 fingerprint lines (process)", t,
                      baseline="forensics crc input.bin", baseline_value=t_crc, goal_value=15.0)
            table.add(f"forensics {what}: peak memory", m, "MiB", baseline="forensics crc input.bin",
                      baseline_value=m_crc, goal_value=600.0)


MAX_LINES = 199_999


def measure(n: int, table: Table) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        a, b = make_traces(Path(tmp), n)
        ra, rb = make_traces(Path(tmp), n, reads=True)
        mb = (a.stat().st_size + b.stat().st_size) / 1e6
        print(f"traces: {n:,} accesses per side; A {a.stat().st_size / 1e6:.1f} MB glog VLOG(5), "
              f"B {b.stat().st_size / 1e6:.1f} MB plain ({mb:.1f} MB together)")

        as_here = f"as this environment runs it (PYTHONDONTWRITEBYTECODE={os.environ.get('PYTHONDONTWRITEBYTECODE', '')!r})"
        for title, pycache in (("bytecode cached, as installed", os.path.join(tmp, "pycache")), (as_here, None)):
            print(f"\nwhole command, fresh process, best of 7; {title}:")
            t_pass = process_time(["-c", "pass"], pycache)
            t_numpy = process_time(["-c", "import numpy"], pycache)
            t_read = process_time(["-c", f"[open(p, encoding='utf-8').read() for p in ({str(a)!r}, {str(b)!r})]"],
                                  pycache)
            t_cli = process_time(["-m", "forensics", "csr", str(a), str(b)], pycache)
            t_json = process_time(["-m", "forensics", "csr", str(a), str(b), "--json"], pycache)
            t_reads = process_time(["-m", "forensics", "csr", str(ra), str(rb), "--reads"], pycache)
            print(f"  python -c pass (baseline)              {t_pass:7.3f} s")
            print(f"  python -c 'import numpy' (baseline)    {t_numpy:7.3f} s")
            print(f"  python: read + decode A and B (base)   {t_read:7.3f} s")
            print(f"  forensics csr A B                      {t_cli:7.3f} s   {t_cli / t_numpy:5.2f}x import numpy, "
                  f"{t_cli - t_pass:.3f} s over the bare interpreter")
            print(f"  forensics csr A B --json               {t_json:7.3f} s   {t_json / t_numpy:5.2f}x import numpy")
            print(f"  forensics csr A B --reads (polls)      {t_reads:7.3f} s   {t_reads / t_numpy:5.2f}x import numpy")
            if pycache:
                table.add(f"forensics csr A B, {n:,} accesses a side (process)", t_cli,
                          baseline='python -c "import numpy"', baseline_value=t_numpy, goal_value=1.0)

        print("\nin process (best of 5):")

        def parse_both():  # as compare_files does it: one GC pause around the bulk parse
            with gc_paused():
                return read_trace(a), read_trace(b)

        t_parse, (ta, tb) = best_of(parse_both)
        t_full, result = best_of(lambda: compare_files(a, b))
        t_rfull, rresult = best_of(lambda: compare_files(ra, rb, include_reads=True))
        print(f"  parse both (baseline)                  {t_parse:7.3f} s   {t_parse / mb * 1e3:.1f} ms/MB")
        print(f"  parse + align + judge                  {t_full:7.3f} s   ratio vs parse {t_full / t_parse:5.2f}x; "
              f"{result.summary()}; alignment {'+'.join(result.alignment)}")
        print(f"  same with reads (--reads)              {t_rfull:7.3f} s   {rresult.accesses_a:,} vs "
              f"{rresult.accesses_b:,} accesses after polls collapsed; {rresult.summary()}")
        keys_a = [(x.offset << 1) | (x.op != 'W') for x in ta.accesses]
        keys_b = [(x.offset << 1) | (x.op != 'W') for x in tb.accesses]
        t_align, _ = best_of(lambda: align(keys_a, keys_b))
        print(f"  align alone ({n:,})                  {t_align:7.3f} s")
        m = min(10_000, n)
        t_ours_m, _ = best_of(lambda: align(keys_a[:m], keys_b[:m]))
        t_difflib, _ = best_of(lambda: difflib.SequenceMatcher(None, keys_a[:m], keys_b[:m],
                                                                autojunk=False).get_opcodes(), repeat=1)
        print(f"  align {m:,}: ours {t_ours_m:.4f} s, difflib.SequenceMatcher {t_difflib:.3f} s "
              f"(difflib/ours {t_difflib / t_ours_m:,.0f}x)")


if __name__ == "__main__":
    main()
