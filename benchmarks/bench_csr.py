"""Benchmark `forensics csr`: 100,000 register accesses per side, parsed and compared.

Baselines measured in the same run: parsing both files alone (the floor: compare can't beat reading),
and difflib.SequenceMatcher (autojunk off, so it really aligns) on the same keys, at 10,000 accesses
because it is quadratic on repetitive traces. Prints times and ratios; asserts nothing.
Run: PYTHONPATH=. python3 benchmarks/bench_csr.py [N]
"""

from __future__ import annotations

import difflib
import random
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # run from a clone without installing

from forensics.csr.compare import align, compare_files
from forensics.csr.parse import read_trace

OFFSETS = [0x485A8, 0x48788, 0x44018, 0x400C0, 0x486A0, 0x48570, 0x486E8]


def make_traces(directory: Path, n: int) -> tuple[Path, Path]:
    rng = random.Random(1)
    base = [(rng.choice(OFFSETS), rng.randrange(8)) for _ in range(n)]
    a_lines = [f"I0413 08:35:26.{k % 1000000:06d}  4793 kernel_registers.cc:190] Write: offset = 0x{o:016x}, "
               f"value = 0x{v:016x}" for k, (o, v) in enumerate(base)]
    b_lines = [f"W64 0x{o:x} = 0x{v:x}" for o, v in base]
    for k in range(5, n, n // 20):           # 20 planted differences spread over the trace
        b_lines[k] = f"W64 0x{base[k][0]:x} = 0xdead"
    del b_lines[n // 3]
    b_lines.insert(2 * n // 3, "W64 0x486c4 = 0x1")
    a, b = directory / "a.log", directory / "b.log"
    a.write_text("\n".join(a_lines) + "\n")
    b.write_text("\n".join(b_lines) + "\n")
    return a, b


def best_of(fn, repeat=3):
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    return min(times), result


def main() -> None:
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
    with tempfile.TemporaryDirectory() as tmp:
        a, b = make_traces(Path(tmp), n)
        t_parse, _ = best_of(lambda: (read_trace(a), read_trace(b)))
        t_full, result = best_of(lambda: compare_files(a, b))
        print(f"accesses: {result.accesses_a:,} vs {result.accesses_b:,}; {result.verdict()}; "
              f"alignment {'+'.join(result.alignment)}")
        print(f"parse both (baseline)      {t_parse:8.3f} s")
        print(f"parse + align + judge      {t_full:8.3f} s   ratio vs parse {t_full / t_parse:5.2f}x")
        ta, tb = read_trace(a), read_trace(b)
        keys_a = [(x.offset << 1) | (x.op != 'W') for x in ta.accesses]
        keys_b = [(x.offset << 1) | (x.op != 'W') for x in tb.accesses]
        t_align, _ = best_of(lambda: align(keys_a, keys_b))
        print(f"align alone ({n:,})        {t_align:8.3f} s")
        m = min(10_000, n)
        t_ours_m, _ = best_of(lambda: align(keys_a[:m], keys_b[:m]))
        t_difflib, _ = best_of(lambda: difflib.SequenceMatcher(None, keys_a[:m], keys_b[:m],
                                                                autojunk=False).get_opcodes(), repeat=1)
        print(f"align {m:,}: ours {t_ours_m:.4f} s, difflib.SequenceMatcher {t_difflib:.3f} s "
              f"(difflib/ours {t_difflib / t_ours_m:,.0f}x)")


if __name__ == "__main__":
    main()
