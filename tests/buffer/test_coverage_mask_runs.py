"""The one run finder of never-written stretches (forensics.buffer.coverage.MaskRuns) against a plain Python scan of the
whole mask, over random masks cut into random chunks."""

import numpy as np
import pytest

from forensics.buffer.coverage import MaskRuns


def _reference(mask, weight, min_len):
    runs, start = [], None
    for i, bit in enumerate(list(mask) + [False]):
        if bit and start is None:
            start = i
        elif not bit and start is not None:
            if i - start >= min_len:
                runs.append((start, i, int(sum(weight[start:i]))))
            start = None
    return runs


@pytest.mark.parametrize("seed", range(12))
def test_runs_match_a_plain_scan(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 5000))
    # long stretches of set bits and of clear bits, with some noise, so runs cross chunk edges
    mask = np.repeat(rng.random(n // 40 + 1) < 0.5, 40)[:n] ^ (rng.random(n) < 0.02)
    weight = rng.random(n) < 0.3
    min_len = int(rng.integers(1, 64))
    cuts = np.sort(rng.choice(np.arange(1, n), size=min(n - 1, int(rng.integers(0, 20))), replace=False)) \
        if n > 1 else np.array([], int)
    finder = MaskRuns(min_len)
    for lo, hi in zip([0, *cuts.tolist()], [*cuts.tolist(), n]):
        finder.feed(lo, mask[lo:hi], weight[lo:hi])
    finder.finish(n)
    expected = _reference(mask, weight, min_len)
    assert finder.runs == expected
    assert finder.total == len(expected) and finder.total_length == sum(e - s for s, e, _ in expected)


def test_keep_bounds_the_list_not_the_counts():
    finder = MaskRuns(2, keep=3)
    finder.feed(0, np.array([1, 1, 0] * 10, dtype=bool))
    finder.finish(30)
    assert len(finder.runs) == 3 and finder.total == 10 and finder.total_length == 20
