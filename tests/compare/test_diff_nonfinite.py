"""NaN and infinity in `diff` (issue 35): any bit difference that is not a declared tolerance is a difference; a
NaN or an infinity equals only the same bits (NaN vs NaN of the same bits is equal), and no tolerance passes a
non-finite value that does not match. Pairs built with plain numpy; the reference is numpy's own bit view."""

from __future__ import annotations

import numpy as np
import pytest

from forensics import reports
from forensics.compare.stats import error_stats
from tests.conftest import run_cli

NAN = np.float32(np.nan)
QUIET_NAN_BITS = 0x7FC00000


def _pair(tmp_path, a, b) -> tuple[str, str]:
    pa, pb = str(tmp_path / "a.npy"), str(tmp_path / "b.npy")
    np.save(pa, np.asarray(a, np.float32))
    np.save(pb, np.asarray(b, np.float32))
    return pa, pb


def _bits(*values: int) -> np.ndarray:
    return np.array(values, np.uint32).view(np.float32)


CASES = {  # (A, B): pairs of float32 that differ only in non-finite values, or not at all
    "nan vs 7.0": ([1, np.nan, 3], [1, 7.0, 3]),
    "+inf vs -inf": ([1, np.inf, 3], [1, -np.inf, 3]),
    "inf vs a large finite": ([np.inf, 2], [3.4e38, 2]),
    "7.0 vs nan": ([7.0, 2], [np.nan, 2]),
    "nan vs nan, another payload": (_bits(QUIET_NAN_BITS, 0), _bits(QUIET_NAN_BITS | 1, 0)),
    "nan vs -nan": (_bits(QUIET_NAN_BITS, 0), _bits(QUIET_NAN_BITS | 0x80000000, 0)),
    "nan vs nan, the same bits": (_bits(QUIET_NAN_BITS, 0x3F800000), _bits(QUIET_NAN_BITS, 0x3F800000)),
    "inf vs inf": ([np.inf, -np.inf, 1], [np.inf, -np.inf, 1]),
}


@pytest.mark.parametrize("case", CASES)
def test_the_verdict_follows_the_bits(tmp_path, case):
    a, b = (np.asarray(x, np.float32) for x in CASES[case])
    pa, pb = _pair(tmp_path, a, b)
    same_bits = np.array_equal(a.view(np.uint32), b.view(np.uint32))  # the reference: numpy's bit view
    report = reports.diff(pa, pb)
    assert report.verdict == ("MATCH" if same_bits else "DIFFER"), case
    assert report.exit_code == (0 if same_bits else 1)
    assert run_cli("diff", pa, pb).code == report.exit_code
    if not same_bits:
        mismatch = int(np.count_nonzero((a.view(np.uint32) != b.view(np.uint32)) & ~(np.isfinite(a) & np.isfinite(b))))
        assert report.result.stats.nonfinite_mismatch == mismatch
        assert "NaN or infinite" in report.judgement.message and "equals only the same bits" in report.judgement.message
        # no tolerance passes them
        assert reports.diff(pa, pb, atol="1e30").exit_code == 1
        assert reports.diff(pa, pb, atol="1e30", rtol="1", check="p99").exit_code == 1


def test_library_statistics_agree(tmp_path):
    """error_stats (runs compare's statistics) reads non-finite values by the same rule."""
    a, b = (np.asarray(x, np.float32) for x in CASES["nan vs nan, another payload"])
    assert error_stats(a, b).nonfinite_mismatch == 1
    a, b = (np.asarray(x, np.float32) for x in CASES["nan vs nan, the same bits"])
    assert error_stats(a, b).nonfinite_mismatch == 0 and error_stats(a, b).differing == 0


def test_negative_zero_differs_without_a_tolerance(tmp_path):
    a = np.array([0.0, 1.0, 2.0], np.float32)
    b = np.array([-0.0, 1.0, 2.0], np.float32)
    pa, pb = _pair(tmp_path, a, b)
    plain = reports.diff(pa, pb)
    assert plain.verdict == "DIFFER" and plain.judgement.has("bits_only")
    assert "-0.0 vs +0.0" in plain.judgement.message
    # a declared tolerance passes a difference of 0
    assert reports.diff(pa, pb, atol="1e-30").verdict == "WITHIN TOLERANCE"


def test_nan_inside_finite_differences_still_differs_with_a_large_tolerance(tmp_path):
    rng = np.random.default_rng(8)
    a = rng.normal(size=2000).astype(np.float32)
    b = a + np.float32(1e-3)
    b[1234] = np.nan
    pa, pb = _pair(tmp_path, a, b)
    assert reports.diff(pa, pb, atol="1").verdict == "DIFFER"
    b[1234] = a[1234] + np.float32(1e-3)
    np.save(pb, b)
    assert reports.diff(pa, pb, atol="1").verdict == "WITHIN TOLERANCE"
