"""The sample the value kinds (bits, saturation, requantize) fit their maps on: A's and B's bytes of slices spread
over the scored region."""

from __future__ import annotations

import numpy as np

FIT_SLICES, FIT_SLICE = 8, 16 << 10   # bytes of the region a value fit (bits, value map) looks at
MIN_FIT = 0.99                        # ... and the share of them the fitted map must reproduce


def fit_sample(region) -> tuple[np.ndarray, np.ndarray, np.ndarray, bool]:
    """A's and B's bytes (and B's absolute offsets) of up to FIT_SLICES slices spread over the region's bytes
    that both sides hold: the sample the value fits are made on (the candidates are then scored on all); and
    whether every byte of it is within 1 LSB of A's (rounding, unless a stuck or flipped bit 0 says otherwise)."""
    n = region.diff.size
    if n > FIT_SLICES * FIT_SLICE:
        starts = np.linspace(0, n - FIT_SLICE, FIT_SLICES).astype(np.int64)
        idx = (starts[:, None] + np.arange(FIT_SLICE)[None, :]).reshape(-1)
        idx = idx[region.in_a[idx]]
    else:
        idx = np.flatnonzero(region.in_a)
    a, b = region.a[idx], region.b[idx]
    within_one = bool(np.abs(a.astype(np.int16) - b).max(initial=0) <= 1)
    return a, b, region.at(idx), within_one

