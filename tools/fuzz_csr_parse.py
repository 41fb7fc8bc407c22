"""Fuzz the bulk register-trace parser against the per-line reference with random seeds (`make fuzz`).

The generated logs are those of tests/csr/test_parse_bulk.py (every trace format, snapshots, junk, odd
whitespace and line breaks, with and without Windows log viewers' columns); the test suite runs a fixed,
derandomized few hundred of them, this runs as many as asked from a random seed. A failure is printed as the
`@example(...)` line that makes it a regression test of the suite.

    python tools/fuzz_csr_parse.py --logs 20000 [--seed N] [--workers 2]
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)


def check(case: tuple[int, int, int, bool]) -> str | None:
    """One generated log (kind 0: plain, 1: with columns); the @example line of a failure, else None."""
    from tests.csr.test_parse_bulk import TABLE, _log, assert_same, with_columns

    kind, seed, n, with_table = case
    rng = random.Random(seed)
    text = _log(rng, n) if kind == 0 else with_columns(rng, _log(rng, n))
    try:
        assert_same(text, TABLE if with_table or kind == 1 else None)
    except AssertionError as exc:
        test = ("test_bulk_parser_equals_the_per_line_parser", f"@example({seed}, {n}, {with_table})") if kind == 0 \
            else ("test_bulk_parser_equals_the_per_line_parser_with_log_columns", f"@example({seed}, {n})")
        return f"{test[0]}: {test[1]}  # {str(exc).splitlines()[0][:120]}"
    return None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--logs", type=int, default=20000, help="generated logs to compare (each with and without table)")
    p.add_argument("--seed", type=int, default=None, help="default: a random one (printed, to reproduce)")
    p.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    args = p.parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**32)
    meta = random.Random(seed)
    cases = [(i % 2, meta.randrange(2**32), meta.randrange(1, 41), meta.random() < 0.5) for i in range(args.logs)]
    print(f"fuzz_csr_parse: seed {seed}, {args.logs} logs, {args.workers} workers", flush=True)
    start = time.monotonic()
    with multiprocessing.get_context("spawn").Pool(args.workers) as pool:
        failures = [f for f in pool.imap_unordered(check, cases, chunksize=64) if f]
    print(f"fuzz_csr_parse: {args.logs} logs, {len(failures)} differences in {time.monotonic() - start:.0f} s "
          f"(seed {seed})")
    for line in failures[:20]:
        print("  " + line)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
