"""A DMA that stopped into a zeroed buffer of mostly-zero data (a detector's scores: 99% of the bytes 0) differs
from A only where A is not 0 past the stop: few differing bytes in a long run of 0x00, yet nothing else differs.
That run is the tail never written (truncation), while the same zeros where other bytes differ too are not."""

from __future__ import annotations

import numpy as np

from forensics.diagnose import diagnose_dumps


def _sparse_scores(seed: int, n: int = 176_368) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = np.zeros(n, np.uint8)
    hot = rng.choice(n, n // 100, replace=False)  # ~1% of the scores are not 0, as on a frame with few objects
    a[hot] = rng.integers(1, 256, hot.size, dtype=np.uint8)
    return a


def _pair(tmp_path, a, b):
    pa, pb = tmp_path / "a.bin", tmp_path / "b.bin"
    pa.write_bytes(a.tobytes())
    pb.write_bytes(b.tobytes())
    return pa, pb


def test_a_dma_stopped_into_zeros_of_sparse_data_is_a_truncation(tmp_path):
    a = _sparse_scores(1)
    stop = 100_000
    b = a.copy()
    b[stop:] = 0
    result = diagnose_dumps(*_pair(tmp_path, a, b))
    assert "truncation" in result.kinds, result.kinds
    trunc = next(f for f in result.findings if f.kind == "truncation")
    start = trunc.details["tail_unwritten_from"]
    # the tail starts after A's last non-zero byte before the stop, never after the first differing byte
    assert start <= int(np.flatnonzero(a != b)[0])
    assert start > int(np.flatnonzero(a[:stop])[-1])


def test_zeros_in_the_tail_beside_other_differences_are_not_a_truncation(tmp_path):
    a = _sparse_scores(2)
    b = a.copy()
    b[100_000:] = 0
    rng = np.random.default_rng(3)
    elsewhere = rng.choice(100_000, 4_000, replace=False)  # far more differing bytes before the tail
    b[elsewhere] ^= 0x5A
    result = diagnose_dumps(*_pair(tmp_path, a, b))
    assert "truncation" not in result.kinds, result.kinds
