"""Benchmark: does `diagnose` name generated driver bugs right, and is it never silently wrong?

  python benchmarks/bench_diagnose.py [--cases 600] [--seed 1] [--big-mib 256] [--skip-big] [--quick] [--json]

Part 1 builds references with the real SSD MobileNet v2 segment's layouts (raw convert_scores: 1,917 anchors
of z=91 at a 92-byte stride, 176,368 bytes; its tensor, 174,447; Squeeze1 raw 7,672 / tensor 7,668; the
19x19x576 feature-map input, 207,936 bytes; a 128x128x3 image input) with random contents, applies a random
bug with random parameters, B built with plain numpy from the bug's description (not forensics.diagnose.simulate, the
inverse of what is graded), and runs diagnose_dumps without and with the model's layout. Every generated case
is counted: the ones whose bug changed no byte are dropped and listed. Prints the share of diagnoses whose
primary finding is a kind the bug's description allows (goal >= 95%), the differing pairs given exit 0 (goal 0;
pairs differing only in the layout's pad lanes are listed apart: exit 0 as diff's MATCH), and every miss.

Part 2 times `forensics diagnose` and `forensics diff` (the baseline, measured in the same run), wall and CPU
(user + system), on two --big-mib pairs: a shifted block with an unwritten tail, and 1% of the bytes changed,
scattered; reports the ratios (goal <= 2) and diagnose's peak RSS. `--json`: the rows only, as
benchmarks/_table.py describes.
"""

from __future__ import annotations

import argparse
import collections
import os
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _table import Table, add_json_flag  # noqa: E402

from forensics.diagnose import diagnose_dumps  # noqa: E402
from forensics.core.layout import RecordLayout  # noqa: E402

ANCHORS, Z, ZP = 1917, 91, 92


def scores(rng, z=Z, stride=ZP, pad=0x80, tail=4):
    """Per-anchor class scores: background high, most classes near 0, a few detections."""
    rec = np.zeros((ANCHORS, stride), np.uint8)
    rec[:, :z] = rng.integers(0, 4, (ANCHORS, z))
    rec[:, 0] = rng.integers(200, 256, ANCHORS)
    for a in rng.choice(ANCHORS, rng.integers(2, 30), replace=False):
        rec[a, rng.integers(1, z)] = rng.integers(100, 256)
        rec[a, 0] = rng.integers(0, 100)
    rec[:, z:] = pad
    return rec.tobytes() + bytes([pad]) * tail


def boxes(rng, stride=4, tail=4):
    return (np.clip(rng.normal(128, 20, (ANCHORS, stride)), 0, 255).astype(np.uint8).tobytes()
            + bytes([0x80]) * tail)


def feature_map(rng, y=19, x=19, z=576):
    base = rng.integers(0, 40, (1, 1, z))
    noise = rng.integers(0, 60, (y, x, z))
    return np.clip(base + noise * (rng.random((y, x, 1)) > 0.3), 0, 255).astype(np.uint8).tobytes()


def image(rng, h=128, w=128):
    yy, xx = np.mgrid[0:h, 0:w]
    img = np.stack([(yy * 2) % 256, (xx * 2) % 256, (yy + xx) % 256], -1) + rng.integers(0, 8, (h, w, 3))
    return np.clip(img, 0, 255).astype(np.uint8).tobytes()


# name -> (builder, record size, pad lanes, row bytes for pitch or None, raw z or None)
REFERENCES = {
    "convert_scores raw": (lambda r: scores(r), ZP, tuple(range(Z, ZP)), None, Z),
    "convert_scores tensor": (lambda r: scores(r, stride=Z, tail=0), Z, (), None, Z),
    "Squeeze1 raw": (lambda r: boxes(r), 4, (), None, None),
    "Squeeze1 tensor": (lambda r: boxes(r, tail=0), 4, (), None, None),
    "feature map input": (lambda r: feature_map(r), 576, (), 19 * 576, None),
    "image input": (lambda r: image(r), 3, (), 128 * 3, None),
}


SENTINEL_PATTERNS = (b"\xcc", b"\xaa", b"\x00", b"\xff", b"\xcd", bytes.fromhex("efbeadde"),
                     bytes.fromhex("deadbeef"), bytes.fromhex("0df0adba"), bytes.fromhex("baadf00d"))
PAGE = 4096


def _u8(data: bytes) -> np.ndarray:
    return np.frombuffer(data, np.uint8)


def _pattern(pat: bytes, lo: int, hi: int) -> np.ndarray:
    """The pattern as a driver prefills it: aligned to offset 0 of the buffer."""
    return np.frombuffer(pat, np.uint8)[np.arange(lo, hi) % len(pat)]


def random_bug(rng, name, data, rs, row, z, previous):
    """(description, B, previous passed to diagnose or None, the kinds a right answer may name) for one random
    bug, B built here with plain numpy from its description (never with forensics.diagnose.simulate, the inverse of what
    is graded). A kind set holds more than one name only where the description itself allows both (a flipped
    bit 7 is a sign flip; a requantization clamps at 0 and 255); None in it: a change of at most 1 LSB, which no
    one can tell from rounding."""
    a = _u8(data)
    n = len(data)
    kinds = ["shift", "shift_local", "fill", "truncation", "truncation_fill", "oversize", "signedness",
             "lane_swap", "relayout", "stale", "cacheline", "bits", "saturation", "requantize", "rotation"]
    if n >= 3 * PAGE:
        kinds += ["page", "page"]
    if z is not None:
        kinds += ["stride", "stride"]
    if row is not None:
        kinds += ["pitch", "pitch"]
    kind = kinds[rng.integers(len(kinds))]
    if kind == "shift":
        k = int(rng.integers(1, 257)) * (1 if rng.random() < 0.5 else -1)
        b = np.zeros(n, np.uint8)
        if k > 0:
            b[k:] = a[:-k]
        else:
            b[:k] = a[-k:]
        return f"shift {k}", b, None, {"shift"}
    if kind == "shift_local":  # one record range written k bytes off, the rest in place
        records = n // rs
        lo = int(rng.integers(0, records // 2)) * rs
        hi = min(n, lo + int(rng.integers(max(2, 256 // rs + 1), max(3, records // 3))) * rs)
        k = rs * int(rng.choice([1, -1, 2]))
        lo, hi = max(lo, k, 0, -k), min(hi, n + min(k, 0))
        b = a.copy()
        b[lo:hi] = a[lo - k:hi - k]
        return f"records {lo}-{hi} shifted {k}", b, None, {"shift"}
    if kind == "fill":
        lo = int(rng.integers(0, n - 256))
        hi = min(n - 16, lo + int(rng.integers(64, max(65, n // 4))))
        pat = SENTINEL_PATTERNS[rng.integers(len(SENTINEL_PATTERNS))]
        b = a.copy()
        b[lo:hi] = _pattern(pat, lo, hi)
        return f"fill {lo}-{hi} {pat.hex()}", b, None, {"fill"}
    if kind == "truncation":
        keep = int(rng.integers(n // 10, n - 16))
        return f"truncated at {keep}", a[:keep].copy(), None, {"truncation"}
    if kind == "truncation_fill":
        pat = SENTINEL_PATTERNS[rng.integers(len(SENTINEL_PATTERNS))]
        keep = int(rng.integers(n // 10, n - 64))
        b = a.copy()
        b[keep:] = _pattern(pat, keep, n)
        return f"stopped at {keep}, tail {pat.hex()}", b, None, {"truncation", "fill"}
    if kind == "oversize":
        extra = (-n) % PAGE or PAGE if rng.random() < 0.6 else int(rng.integers(16, 8192))
        off = 0 if rng.random() < 0.7 else int(rng.integers(0, extra + 1))
        b = np.zeros(n + extra, np.uint8)
        b[off:off + n] = a
        return f"allocation {extra} larger, A at {off}", b, None, {"oversize"}
    if kind == "signedness":
        return "sign bit flipped", a ^ 0x80, None, {"signedness"}
    if kind == "lane_swap":
        perm = [(1, 0), (3, 2, 1, 0), (7, 6, 5, 4, 3, 2, 1, 0), (4, 5, 6, 7, 0, 1, 2, 3)][rng.integers(4)]
        if name == "image input" and rng.random() < 0.5:
            perm = (2, 1, 0)
        p = len(perm)
        b = a.copy()
        whole = n // p * p
        b[:whole] = a[:whole].reshape(-1, p)[:, list(perm)].reshape(-1)
        return f"bytes {perm} in each word", b, None, {"lane_swap"}
    if kind == "relayout":
        m = n // rs
        b = a.copy()
        b[:m * rs] = a[:m * rs].reshape(m, rs)[rng.permutation(m)].reshape(-1)
        return "records shuffled", b, None, {"relayout"}
    if kind == "stale":
        p = _u8(previous)
        if rng.random() < 0.5:
            return "the previous run's buffer", p.copy(), previous, {"stale"}
        lo = int(rng.integers(0, n // 2))
        hi = min(n, lo + int(rng.integers(n // 8, n // 2)))
        b = a.copy()
        b[lo:hi] = p[lo:hi]
        return f"previous run's bytes at {lo}-{hi}", b, previous, {"stale"}
    if kind == "page":  # a scatter-gather list: two pages swapped, one repeated, or one dropped
        pages = [a[i:i + PAGE] for i in range(0, n, PAGE)]
        full = n // PAGE
        i, j = sorted(int(x) for x in rng.choice(full, 2, replace=False))
        how = int(rng.integers(3))
        if how == 0:
            pages[i], pages[j] = pages[j], pages[i]
            what = f"pages {i} and {j} swapped"
        elif how == 1:
            pages[j] = pages[i]
            what = f"page {j} holds page {i}"
        else:  # (not page 0: B = A from its second page on is a read at offset 4096, a shift)
            i = max(i, 1)
            del pages[i]
            what = f"page {i} dropped"
        return what, np.concatenate(pages), None, {"page"}
    if kind == "rotation":  # a ring buffer read from another start: by whole pages, or by records
        r = int(rng.integers(1, n // PAGE)) * PAGE if n >= 2 * PAGE and rng.random() < 0.6 else \
            int(rng.integers(1, n // rs)) * rs
        return f"rotated by {r}", np.roll(a, -r), None, {"rotation"}
    if kind == "cacheline":  # DMA into cached memory: scattered 64-byte lines keep a prefill or the last run
        lines = sorted(int(x) for x in rng.choice(n // 64, int(rng.integers(2, 40)), replace=False))
        b = a.copy()
        stale = rng.random() < 0.3
        pat = [b"\x00", b"\xcc", b"\xcd", b"\xff"][rng.integers(4)]
        for line in lines:
            lo = line * 64
            b[lo:lo + 64] = _u8(previous)[lo:lo + 64] if stale else _pattern(pat, lo, lo + 64)
        return (f"{len(lines)} lines hold " + ("the previous run" if stale else pat.hex()), b,
                previous if stale else None, {"cacheline"})
    if kind == "bits":  # a data bit stuck at 1 / 0 or inverted, in every byte or in one lane of a word
        period = int(rng.choice([1, 1, 2, 4, 8]))
        lane = int(rng.integers(period))
        bit = int(rng.integers(0, 8))
        op = ["clear", "set", "flip"][rng.integers(3)]
        b = a.copy()
        v = a[lane::period]
        b[lane::period] = v & ~np.uint8(1 << bit) if op == "clear" else (v | np.uint8(1 << bit) if op == "set"
                                                                           else v ^ np.uint8(1 << bit))
        ok = {"bits"}
        if bit == 7:
            ok.add("signedness")  # every byte it changed had its sign bit flipped
        if bit == 0:
            ok.add(None)  # at most 1 LSB: rounding, unless the bytes show a line
        return f"bit {bit} {op} in lane {lane} of {period}", b, None, ok
    if kind in ("saturation", "requantize"):  # values clamped, or a wrong scale / zero point; a third of them
        if kind == "saturation":              # on one lane of every 4 bytes only (one channel's range)
            lut = np.clip(np.arange(256), int(rng.integers(0, 40)), int(rng.integers(150, 255)))
        else:
            lut = np.clip(np.rint(np.arange(256) * rng.uniform(0.5, 1.8) + rng.uniform(-20, 20)), 0, 255)
        lut = lut.astype(np.uint8)
        b = a.copy()
        if rng.random() < 1 / 3:
            lane = int(rng.integers(4))
            b[lane::4] = lut[a[lane::4]]
        else:
            b = lut[a]
        ok = {kind} if kind == "saturation" else {"requantize", "saturation"}  # it clamps at 0 and 255 too
        if np.abs(b.astype(np.int16) - a).max() <= 1:
            ok.add(None)
        return kind, b, None, ok
    if kind == "stride":
        p = -(-z // 4) * 4
        if name.endswith("raw"):  # the chip's records read as the tensor's: each z of every p
            m = n // p
            b = a[:m * p].reshape(m, p)[:, :z].reshape(-1)
            return f"raw {p}-byte records packed to {z}", b, None, {"stride"}
        mult = int(rng.choice([4, 4, 8, 16]))  # channels padded to 4 lanes (the Edge TPU), or 8 / 16
        p = -(-z // mult) * mult
        m = n // z
        b = np.zeros((m, p), np.uint8)
        b[:, :z] = a[:m * z].reshape(m, z)
        return f"{z}-byte records padded to {p}", b.reshape(-1), None, {"stride"}
    if kind == "pitch":
        align = int(rng.choice([16, 32, 64, 128, 256]))
        pitch = -(-(row + 1) // align) * align
        rows = n // row
        b = np.zeros((rows, pitch), np.uint8)
        b[:, :row] = a[:rows * row].reshape(rows, row)
        b = b.reshape(-1)[:(rows - 1) * pitch + row]
        return f"rows of {row} at a {pitch}-byte pitch", b, None, {"pitch"}
    raise AssertionError(kind)


def part1(cases: int, seed: int, tmp: str, table: Table) -> None:
    rng = np.random.default_rng(seed)
    names = list(REFERENCES)
    right = total = exit0 = differing = 0
    misses = collections.Counter()
    per_kind = collections.Counter()
    dropped, pad_only = [], []
    t0 = time.perf_counter()
    for i in range(cases):
        name = names[i % len(names)]
        build, rs, pad, row, z = REFERENCES[name]
        a = build(rng)
        prev = build(rng)
        what, b, previous, ok = random_bug(rng, name, a, rs, row, z, prev)
        b = b.tobytes()
        if b == a:  # the bug changed no byte of this buffer: nothing to diagnose
            dropped.append(f"{what} on {name}")
            continue
        pa, pb, pp = (os.path.join(tmp, f"{x}.bin") for x in "abp")
        for path, data in ((pa, a), (pb, b), (pp, prev)):
            with open(path, "wb") as fh:
                fh.write(data)
        for layout in (None, RecordLayout(record_size=rs, pad_lanes=pad)):
            result = diagnose_dumps(pa, pb, layout=layout, previous=pp if previous is not None else None)
            total += 1
            differing += 1
            label = sorted(k for k in ok if k)[0]
            per_kind[label] += 1
            if result.primary in ok:
                right += 1
            else:
                misses[(label, result.primary, name)] += 1
            if result.exit_code == 0 and result.pad_only_bytes:
                pad_only.append(f"{what} on {name}")  # exit 0 as diff's MATCH: only pad lanes differ
            elif result.exit_code == 0:
                exit0 += 1
    dt = time.perf_counter() - t0
    print(f"part 1: {cases} bug cases generated ({len(names)} reference layouts, B built with plain numpy), "
          f"{cases - len(dropped)} diagnosed twice (without and with the layout) = {total} diagnoses, {dt:.1f} s")
    print(f"  dropped (the bug changed no byte): {len(dropped)}" + ("".join(f"\n    {d}" for d in dropped)))
    print(f"  named right (primary finding is one the bug's description allows): {right}/{total} = "
          f"{100 * right / max(1, total):.1f}% (goal >= 95%)")
    print(f"  differing pairs given exit 0: {exit0}/{differing} = {100 * exit0 / max(1, differing):.2f}% (goal 0)")
    print(f"  pad-only pairs (exit 0 with the layout's pad lanes ignored, as diff): {len(pad_only)}"
          + "".join(f"\n    {d}" for d in pad_only))
    print("  cases by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(per_kind.items())))
    for (exp, got, name), count in misses.most_common():
        print(f"  miss: {exp} named {got} on {name} x{count}")
    table.add("generated driver bugs named right (primary finding)", 100 * right / max(1, total), "%", goal_min=95,
              note=f"{right}/{total} diagnoses of {cases - len(dropped)} cases ({len(dropped)} dropped), seed {seed}")
    table.add("differing pairs given exit 0", exit0, "pairs", goal_value=0, note=f"of {differing}")


def _timed(cmd) -> tuple[float, float]:
    """(wall seconds, CPU seconds user + system) of one run of `cmd`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ,
                                                                                     "PYTHONPATH": ROOT})
    dt = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[:200]}")
    return dt, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _peak_rss_kib(cmd) -> int:
    """Peak RSS of `cmd` alone: run from a small fresh wrapper process, since a child started from this one
    (vfork + exec) is charged with this process's own peak in RUSAGE_CHILDREN."""
    wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    return int(out.stdout.strip())  # Linux reports KiB


def _write_pair(pa: str, pb: str, size: int, pattern: str) -> None:
    rng = np.random.default_rng(3)
    block = 8 << 20
    with open(pa, "wb") as fa, open(pb, "wb") as fb:
        for lo in range(0, size, block):
            a = rng.integers(0, 256, block, dtype=np.uint8)
            b = a.copy()
            if pattern == "block":
                if lo == size // 2:
                    b[4096:block] = a[:block - 4096]  # a block written 4 KiB late
                if lo + block == size:
                    b[block // 2:] = 0xCC  # the tail never written
            else:  # 1 % of the bytes changed, scattered over the whole pair
                where = rng.choice(block, block // 100, replace=False)
                b[where] ^= rng.integers(1, 256, where.size, dtype=np.uint8)
            fa.write(a.tobytes())
            fb.write(b.tobytes())


PATTERNS = {"block": "shifted block, unwritten tail", "scattered": "1% scattered changes"}


def part2(mib: int, tmp: str, table: Table) -> None:
    size = mib << 20
    pa, pb = os.path.join(tmp, "big_a.bin"), os.path.join(tmp, "big_b.bin")
    py = sys.executable
    base = [py, "-m", "forensics"]
    for pattern, label in PATTERNS.items():
        _write_pair(pa, pb, size, pattern)
        _timed(base + ["diff", pa, pb])  # warm the page cache
        diff_w, diff_c = min(_timed(base + ["diff", pa, pb]) for _ in range(2))
        diag_w, diag_c = min(_timed(base + ["diagnose", pa, pb]) for _ in range(2))
        rss = _peak_rss_kib(base + ["diagnose", pa, pb])
        print(f"part 2: {mib} MiB pair, {label}: forensics diff {diff_w:.2f} s wall / {diff_c:.2f} s CPU (baseline), "
              f"forensics diagnose {diag_w:.2f} s / {diag_c:.2f} s: ratio {diag_w / diff_w:.2f} wall, "
              f"{diag_c / diff_c:.2f} CPU (goal <= 2); peak RSS of diagnose {rss / 1024:.0f} MiB")
        table.add(f"diagnose {mib} MiB pair ({label}), wall", diag_w,
                  baseline="forensics diff of the same pair", baseline_value=diff_w, goal_ratio=2.0)
        table.add(f"diagnose {mib} MiB pair ({label}), CPU", diag_c,
                  baseline="forensics diff of the same pair", baseline_value=diff_c, goal_ratio=2.0)
        table.add(f"peak RSS of forensics diagnose on the {mib} MiB pair ({label})", rss / 1024, "MiB")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--cases", type=int, default=600)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--big-mib", type=int, default=256)
    p.add_argument("--skip-big", action="store_true")
    p.add_argument("--quick", action="store_true", help="120 cases and no big pair (a check, not a figure)")
    add_json_flag(p)
    args = p.parse_args()
    if args.quick:
        args.cases, args.skip_big = 120, True
    with Table(args.json, "bench_diagnose") as table, tempfile.TemporaryDirectory() as tmp:
        part1(args.cases, args.seed, tmp, table)
        if not args.skip_big:
            part2(args.big_mib, tmp, table)


if __name__ == "__main__":
    main()
