"""Benchmark: does `diagnose` name generated driver bugs right, and is it never silently wrong?

  python benchmarks/bench_diagnose.py [--cases 600] [--seed 1] [--big-mib 256] [--skip-big] [--quick] [--json]

Part 1 builds references with the real SSD MobileNet v2 segment's layouts (raw convert_scores: 1,917 anchors
of z=91 at a 92-byte stride, 176,368 bytes; its tensor, 174,447; Squeeze1 raw 7,672 / tensor 7,668; the
19x19x576 feature-map input, 207,936 bytes; a 128x128x3 image input) with random contents, applies a random
bug with random parameters (forensics.simulate generators) and runs diagnose_dumps without and with the
model's layout. Prints the share of cases whose top finding names the bug (goal >= 95%), and the share of
differing pairs given exit 0 (goal 0), with the misses by kind.

Part 2 times `forensics diagnose` and `forensics diff` (the baseline, measured in the same run) on a
--big-mib pair with a shifted block and an unwritten tail, and reports the ratio (goal <= 2) and diagnose's peak
RSS. `--json`: the rows only, as benchmarks/_table.py describes.
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
from forensics.layout import RecordLayout  # noqa: E402
from forensics.simulate import (SENTINEL_PATTERNS, ArraySource, Bits, CacheLines, Fill, LaneSwap,  # noqa: E402
                                Oversize, Pages, Relayout, Shift, Signedness, Stale, Strided, Truncation, ValueMap,
                                apply_bug)

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


def random_bug(rng, name, data, rs, row, z, previous):
    n = len(data)
    kinds = ["shift", "shift_local", "fill", "truncation", "truncation_fill", "oversize", "signedness",
             "lane_swap", "relayout", "stale"]
    kinds += ["cacheline", "bits", "saturation", "requantize"]
    if n >= 3 * 4096:
        kinds += ["page", "page"]
    if z is not None:
        kinds += ["stride", "stride"]
    if row is not None:
        kinds += ["pitch", "pitch"]
    kind = kinds[rng.integers(len(kinds))]
    if kind == "shift":
        k = int(rng.integers(1, 257)) * (1 if rng.random() < 0.5 else -1)
        return "shift", Shift(k)
    if kind == "shift_local":
        records = n // rs
        lo = int(rng.integers(0, records // 2)) * rs
        hi = min(n, lo + int(rng.integers(max(2, 256 // rs + 1), max(3, records // 3))) * rs)
        k = rs * int(rng.choice([1, -1, 2]))
        return "shift", Shift(k, max(lo, -k, 0) if k < 0 else lo, min(hi, n + k) if k < 0 else hi)
    if kind == "fill":
        lo = int(rng.integers(0, n - 256))
        hi = min(n - 16, lo + int(rng.integers(64, max(65, n // 4))))
        pat = SENTINEL_PATTERNS[rng.integers(len(SENTINEL_PATTERNS))]
        return "fill", Fill(((lo, hi),), pat)
    if kind == "truncation":
        return "truncation", Truncation(int(rng.integers(n // 10, n - 16)))
    if kind == "truncation_fill":
        pat = SENTINEL_PATTERNS[rng.integers(len(SENTINEL_PATTERNS))]
        return "truncation", Truncation(int(rng.integers(n // 10, n - 64)), pat)
    if kind == "oversize":
        extra = (-n) % 4096 or 4096 if rng.random() < 0.6 else int(rng.integers(16, 8192))
        off = 0 if rng.random() < 0.7 else int(rng.integers(0, extra + 1))
        return "oversize", Oversize(off, extra)
    if kind == "signedness":
        return "signedness", Signedness(1, (0,))
    if kind == "lane_swap":
        perm = [(1, 0), (3, 2, 1, 0), (7, 6, 5, 4, 3, 2, 1, 0)][rng.integers(3)]
        if name == "image input" and rng.random() < 0.5:
            perm = (2, 1, 0)
        return "lane_swap", LaneSwap(perm)
    if kind == "relayout":
        order = rng.permutation(n // rs)
        return "relayout", Relayout(rs, tuple(order.tolist()))
    if kind == "stale":
        src = ArraySource(previous)
        if rng.random() < 0.5:
            return "stale", Stale(src, ())
        lo = int(rng.integers(0, n // 2))
        return "stale", Stale(src, ((lo, min(n, lo + int(rng.integers(n // 8, n // 2)))),))
    if kind == "page":  # a scatter-gather list: two pages swapped, one repeated, or one dropped
        pages = n // 4096
        order = list(range(pages))
        i, j = sorted(int(x) for x in rng.choice(pages, 2, replace=False))
        how = rng.integers(3)
        if how == 0:
            order[i], order[j] = j, i
        elif how == 1:
            order[j] = i
        else:  # (not page 0: B = A from its second page on is a read at offset 4096, a shift)
            i = max(i, 1)
            return "page", Pages(4096, tuple(order[:i] + order[i + 1:]), size=n - 4096)
        return "page", Pages(4096, tuple(order))
    if kind == "cacheline":  # DMA into cached memory: scattered 64-byte lines keep a prefill or the last run
        lines = tuple(sorted(int(x) for x in rng.choice(n // 64, int(rng.integers(2, 40)), replace=False)))
        if rng.random() < 0.3:
            return "cacheline", CacheLines(lines, previous=ArraySource(previous), pattern=None)
        return "cacheline", CacheLines(lines, pattern=[b"\x00", b"\xcc", b"\xcd", b"\xff"][rng.integers(4)])
    if kind == "bits":  # a data bit stuck at 1 / 0 or inverted, in every byte or in one lane of a word
        period = int(rng.choice([1, 1, 2, 4]))
        lane = int(rng.integers(period))
        masks = [[0xFF] * period, [0] * period, [0] * period]
        mask = 1 << int(rng.integers(0, 8))
        op = int(rng.integers(3))
        masks[op][lane] = 0xFF & ~mask if op == 0 else mask
        return "bits", Bits(period, *(tuple(m) for m in masks))
    if kind in ("saturation", "requantize"):  # values clamped, or a wrong scale / zero point; a third of them
        if kind == "saturation":              # on one lane of every 4 bytes only (one channel's range)
            lut = np.clip(np.arange(256), int(rng.integers(0, 40)), int(rng.integers(150, 255)))
        else:
            lut = np.clip(np.rint(np.arange(256) * rng.uniform(0.5, 1.8) + rng.uniform(-20, 20)), 0, 255)
        lanes = {"period": 4, "lanes": (int(rng.integers(4)),)} if rng.random() < 1 / 3 else {}
        return kind, ValueMap(bytes(lut.astype(np.uint8)), kind, **lanes)
    if kind == "stride":
        p = -(-z // 4) * 4
        if name.endswith("raw"):
            return "stride", Strided(z, p, z, size=[ANCHORS * z, n][rng.integers(2)])
        m = int(rng.choice([4, 4, 8, 16]))  # channels padded to 4 lanes (the Edge TPU), or 8 / 16
        p = -(-z // m) * m
        return "stride", Strided(z, z, p, size=[ANCHORS * p, n][rng.integers(2)])
    if kind == "pitch":
        align = int(rng.choice([16, 32, 64, 128, 256]))
        pitch = -(-(row + 1) // align) * align
        return "pitch", Strided(row, row, pitch, kind_name="pitch")
    raise AssertionError(kind)


def _not_an_offset(bug, xa, xb) -> bool:
    """A bit-0 line the bytes show: in every lane it touches, at least 10 % of the bytes moved and at least 10 %
    did what no +-1 LSB offset does (stayed where an offset in the same direction, short of saturation, would
    have moved them, or moved the other way)."""
    d = xb.astype(np.int16) - xa
    for lane in {lane for lane, _, _ in bug.ops()}:
        dl, al = d[lane::bug.period], xa[lane::bug.period]
        up, down = np.count_nonzero(dl > 0), np.count_nonzero(dl < 0)
        if up and down:
            telling, moved = min(up, down), up + down
        elif up:
            telling, moved = np.count_nonzero((dl == 0) & ~np.isin(al, (0xFF, 0x7F))), up
        else:
            telling, moved = np.count_nonzero((dl == 0) & ~np.isin(al, (0x00, 0x80))), down
        if min(telling, moved) < 0.1 * dl.size:
            return False
    return True


def _observable(expected, bug, a, b, rs):
    """The kind the bytes can show, or None to skip: a bit or value change of at most 1 LSB is rounding (left to
    a tolerance) unless it is a bit-0 line no offset makes; a stuck or flipped sign bit that changed every byte it touched is signedness; a requantization
    whose every changed value landed on the range's ends is saturation."""
    if expected not in ("bits", "saturation", "requantize"):
        return expected
    xa, xb = np.frombuffer(a, np.uint8), np.frombuffer(b, np.uint8)
    if np.count_nonzero(xa != xb) < 8:
        return None
    if np.abs(xa.astype(np.int16) - xb).max() <= 1:
        return "bits" if expected == "bits" and _not_an_offset(bug, xa, xb) else None
    if expected == "bits":
        for p in sorted({1, 2, 4, rs}):
            m = len(xa) // p * p
            flipped = ((xa[:m] ^ xb[:m]) == 0x80).reshape(-1, p)
            lanes = np.flatnonzero(flipped.any(axis=0))
            sim = apply_bug(Signedness(p, tuple(lanes.tolist())), a) if lanes.size else None
            if sim == b:
                return "signedness"
        return "bits"
    changed = xb[xa != xb]
    if expected == "requantize" and np.isin(changed, (changed.min(), changed.max())).all():
        return None
    return expected


def part1(cases: int, seed: int, tmp: str, table: Table) -> None:
    rng = np.random.default_rng(seed)
    names = list(REFERENCES)
    right = total = exit0 = differing = 0
    misses = collections.Counter()
    per_kind = collections.Counter()
    t0 = time.perf_counter()
    for i in range(cases):
        name = names[i % len(names)]
        build, rs, pad, row, z = REFERENCES[name]
        a = build(rng)
        prev = build(rng)
        expected, bug = random_bug(rng, name, a, rs, row, z, prev)
        b = apply_bug(bug, a)
        if b == a:
            continue
        expected = _observable(expected, bug, a, b, rs)
        if expected is None:
            continue
        pa, pb, pp = (os.path.join(tmp, f"{x}.bin") for x in "abp")
        for path, data in ((pa, a), (pb, b), (pp, prev)):
            with open(path, "wb") as fh:
                fh.write(data)
        for layout in (None, RecordLayout(record_size=rs, pad_lanes=pad)):
            result = diagnose_dumps(pa, pb, layout=layout, previous=pp if getattr(bug, "previous", None) is not None else None)
            total += 1
            differing += 1
            per_kind[expected] += 1
            top = result.primary
            if top == expected:
                right += 1
            else:
                misses[(expected, top, name)] += 1
            if result.exit_code == 0:
                exit0 += 1
    dt = time.perf_counter() - t0
    print(f"part 1: {total} diagnoses of {total // 2} generated bug cases ({len(names)} reference layouts), "
          f"{dt:.1f} s")
    print(f"  named right (top finding is the generated kind): {right}/{total} = {100 * right / max(1, total):.1f}% "
          "(goal >= 95%)")
    print(f"  differing pairs given exit 0: {exit0}/{differing} = {100 * exit0 / max(1, differing):.2f}% (goal 0)")
    print("  cases by kind: " + ", ".join(f"{k} {v}" for k, v in sorted(per_kind.items())))
    for (exp, got, name), count in misses.most_common(12):
        print(f"  miss: {exp} named {got} on {name} x{count}")
    table.add("generated driver bugs named right (top finding)", 100 * right / max(1, total), "%", goal_min=95,
              note=f"{right}/{total} diagnoses of {total // 2} cases, seed {seed}")
    table.add("differing pairs given exit 0", exit0, "pairs", goal_value=0, note=f"of {differing}")


def _timed(cmd) -> tuple[float, int]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env={**os.environ,
                                                                                     "PYTHONPATH": ROOT})
    dt = time.perf_counter() - t0
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(cmd)} failed: {proc.stderr.decode()[:200]}")
    return dt, max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)


def _peak_rss_kib(cmd) -> int:
    """Peak RSS of `cmd` alone: run from a small fresh wrapper process, since a child started from this one
    (vfork + exec) is charged with this process's own peak in RUSAGE_CHILDREN."""
    wrapper = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL); "
               "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": ROOT})
    return int(out.stdout.strip())  # Linux reports KiB


def part2(mib: int, tmp: str, table: Table) -> None:
    size = mib << 20
    pa, pb = os.path.join(tmp, "big_a.bin"), os.path.join(tmp, "big_b.bin")
    rng = np.random.default_rng(3)
    block = 8 << 20
    with open(pa, "wb") as fa, open(pb, "wb") as fb:
        for lo in range(0, size, block):
            a = rng.integers(0, 256, block, dtype=np.uint8)
            b = a.copy()
            if lo == size // 2:
                b[4096:block] = a[:block - 4096]  # a block written 4 KiB late
            if lo + block == size:
                b[block // 2:] = 0xCC  # the tail never written
            fa.write(a.tobytes())
            fb.write(b.tobytes())
    py = sys.executable
    base = [py, "-m", "forensics"]
    _timed(base + ["diff", pa, pb])  # warm the page cache
    diff_t = min(_timed(base + ["diff", pa, pb])[0] for _ in range(2))
    diag_t = min(_timed(base + ["diagnose", pa, pb])[0] for _ in range(2))
    rss = _peak_rss_kib(base + ["diagnose", pa, pb])
    print(f"part 2: {mib} MiB pair: forensics diff {diff_t:.2f} s (baseline), forensics diagnose {diag_t:.2f} s, "
          f"ratio {diag_t / diff_t:.2f} (goal <= 2); peak RSS of forensics diagnose {rss / 1024:.0f} MiB")
    table.add(f"diagnose {mib} MiB pair (shifted block, unwritten tail)", diag_t,
              baseline="forensics diff of the same pair", baseline_value=diff_t, goal_ratio=2.0)
    table.add(f"peak RSS of forensics diagnose on the {mib} MiB pair", rss / 1024, "MiB")


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
