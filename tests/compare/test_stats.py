"""Error statistics against the straightforward numpy formulas, on random and adversarial data."""

import math

import numpy as np
import pytest

from forensics.compare import stats as stats_mod
from forensics.compare.stats import error_stats, locator


def nearest_rank(x, q):
    return float(np.percentile(x, q * 100, method="inverted_cdf")) if x.size else 0.0


def reference(a, b, scale=None, zero_point=0):
    """The formulas as written in the issue, on whole float64 arrays (finite elements only)."""
    a = a.astype(np.float64)
    b = b.astype(np.float64)
    if scale is not None:
        a, b = (a - zero_point) * scale, (b - zero_point) * scale
    keep = np.isfinite(a) & np.isfinite(b)
    a, b = a[keep], b[keep]
    err = np.abs(b - a)
    nz = a != 0
    sa, sb = np.sqrt(np.sum(a * a)), np.sqrt(np.sum(b * b))
    return {
        "max_abs": float(err.max()) if err.size else 0.0,
        "mean_abs": float(err.mean()) if err.size else 0.0,
        "median_abs": nearest_rank(err, 0.5),
        "p99_abs": nearest_rank(err, 0.99),
        "max_rel": float((err[nz] / np.abs(a[nz])).max()) if nz.any() and err[nz].any() else None,
        "cosine": float(np.dot(a, b) / (sa * sb)) if sa and sb else None,
        "sqnr_db": float(10 * np.log10(np.sum(a * a) / np.sum((b - a) ** 2))) if np.sum((b - a) ** 2) else math.inf,
    }


def check(got, want, rel=1e-9):
    for key, value in want.items():
        have = getattr(got, key)
        if value is None:
            assert have is None or have == 0, key
        elif math.isinf(value):
            assert have == value, key
        else:
            assert have == pytest.approx(value, rel=rel, abs=1e-12), key


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_random_uint8_quantized_matches_numpy(seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(0, 256, 5000, dtype=np.uint8)
    b = a.copy()
    hit = rng.choice(a.size, 400, replace=False)
    b[hit] = rng.integers(0, 256, hit.size, dtype=np.uint8)
    got = error_stats(a, b, scale=0.0078125, zero_point=128)
    check(got, reference(a, b, 0.0078125, 128))
    lsb = np.abs(a.astype(int) - b.astype(int))
    assert got.max_abs_lsb == lsb.max()
    assert got.p99_abs_lsb == nearest_rank(lsb, 0.99)
    assert got.median_abs_lsb == nearest_rank(lsb, 0.5)
    assert got.mean_abs_lsb == pytest.approx(lsb.mean())
    assert got.min_atol_lsb == lsb.max()  # the default check is max
    assert got.units == "dequantized"


def test_int8_and_int16_signed_values():
    rng = np.random.default_rng(5)
    for dtype in (np.int8, np.int16):
        info = np.iinfo(dtype)
        a = rng.integers(info.min, info.max, 3000).astype(dtype)
        b = rng.integers(info.min, info.max, 3000).astype(dtype)
        got = error_stats(a, b)
        check(got, reference(a, b))
        assert got.max_abs_lsb == np.abs(a.astype(int) - b.astype(int)).max()


def test_random_float32_matches_numpy():
    rng = np.random.default_rng(3)
    a = rng.normal(size=20000).astype(np.float32)
    b = (a + rng.normal(scale=1e-3, size=a.size)).astype(np.float32)
    check(error_stats(a, b), reference(a, b))


def test_float_quantiles_beyond_the_exact_limit_are_bounded(monkeypatch):
    monkeypatch.setattr(stats_mod, "EXACT_LIMIT", 1000)
    assert stats_mod._FloatTail().limit == 1000  # the histogram is what is measured here
    rng = np.random.default_rng(4)
    a = rng.normal(size=50000).astype(np.float32)
    b = (a + rng.exponential(scale=0.01, size=a.size)).astype(np.float32)
    b[::3] = a[::3]  # a third exact: zero errors among the binned ones
    got = error_stats(a, b)
    assert got.differing == int(np.count_nonzero(a != b))
    want = reference(a, b)
    # The histogram's bin edge: never below the exact value, at most 2**-7 above it.
    for key in ("median_abs", "p99_abs"):
        assert want[key] <= getattr(got, key) <= want[key] * (1 + 2 ** -7)
    assert got.max_abs == pytest.approx(want["max_abs"])


def test_all_equal():
    a = np.arange(100, dtype=np.uint8)
    got = error_stats(a, a.copy(), scale=0.5, zero_point=3)
    assert (got.max_abs, got.mean_abs, got.p99_abs, got.differing, got.min_atol) == (0, 0, 0, 0, 0)
    assert got.cosine == pytest.approx(1.0)
    assert got.sqnr_db == math.inf and got.to_dict()["sqnr_db"] is None
    assert got.worst is None


def test_constant_offset():
    a = np.full(1000, 100, dtype=np.uint8)
    b = a + 2
    got = error_stats(a, b, scale=0.1, zero_point=0)
    assert got.max_abs_lsb == 2 and got.median_abs_lsb == 2 and got.p99_abs_lsb == 2
    assert got.max_abs == pytest.approx(0.2) and got.mean_abs == pytest.approx(0.2)
    assert got.sqnr_db == pytest.approx(10 * math.log10(100 ** 2 / 2 ** 2))
    assert got.max_rel == pytest.approx(0.02)
    assert got.worst["index"] == 0  # the first of the equally bad


def test_zero_vectors_for_cosine():
    z = np.zeros(16, dtype=np.float32)
    assert error_stats(z, z.copy()).cosine == 1.0
    one = z.copy()
    one[3] = 1
    got = error_stats(z, one)
    assert got.cosine is None and got.to_dict()["cosine"] is None
    assert got.sqnr_db == -math.inf and got.max_rel is None
    assert error_stats(one, z).cosine is None


def test_nan_and_inf_are_counted_and_never_pass():
    a = np.array([1.0, np.nan, np.inf, 4.0, np.nan], dtype=np.float32)
    b = np.array([1.5, np.nan, np.inf, np.nan, 2.0], dtype=np.float32)
    got = error_stats(a, b)
    assert got.nan == 4 and got.inf == 2
    assert got.nonfinite_mismatch == 2      # index 3 (4 -> NaN) and 4 (NaN -> 2)
    assert got.worst["index"] == 3
    assert got.min_atol is None
    assert got.max_abs == pytest.approx(0.5)  # over the elements finite on both sides
    d = got.to_dict()
    assert d["min_atol"] is None and d["nan"] == 4


def test_min_atol_for_each_check_and_rtol():
    rng = np.random.default_rng(9)
    a = rng.normal(size=4000)
    b = a + rng.normal(scale=0.1, size=a.size)
    err = np.abs(b - a)
    assert error_stats(a, b, check="mean").min_atol == pytest.approx(err.mean())
    assert error_stats(a, b, check="p99").min_atol == pytest.approx(nearest_rank(err, 0.99))
    got = error_stats(a, b, rtol=0.05, check="max")
    excess = err - 0.05 * np.abs(a)
    assert got.min_atol == pytest.approx(max(0.0, excess.max()))
    # that atol passes numpy's allclose with the same rtol; a little less does not
    assert np.allclose(b, a, rtol=0.05, atol=got.min_atol * (1 + 1e-12))
    assert not np.allclose(b, a, rtol=0.05, atol=got.min_atol * 0.99)
    p99 = error_stats(a, b, rtol=0.05, check="p99")
    assert p99.min_atol == pytest.approx(nearest_rank(np.maximum(excess, 0), 0.99))


def test_violations_count_elements_outside_atol():
    a = np.array([0, 10, 20, 30], dtype=np.uint8)
    b = np.array([1, 10, 23, 30], dtype=np.uint8)
    assert error_stats(a, b, atol=1).violations == 1
    assert error_stats(a, b, atol=0).violations == 2
    assert error_stats(a, b, atol=3).violations == 0


def test_worst_located_as_anchor_and_lane():
    a = np.zeros((10, 4), dtype=np.uint8)
    b = a.copy()
    b[7, 1] = 9
    b[2, 0] = 3
    where = locator(record_size=4, lane_names=("background", "face", "pad", "pad"))
    got = error_stats(a, b, locate=where)
    assert got.worst == {"index": 29, "anchor": 7, "lane": "face"}


def test_worst_located_as_y_x_z():
    a = np.zeros((1, 5, 6, 3), dtype=np.int8)
    b = a.copy()
    b[0, 4, 2, 1] = -7
    got = error_stats(a, b, locate=locator(shape=(1, 5, 6, 3), unit="tensor"))
    assert got.worst == {"index": int(np.ravel_multi_index((0, 4, 2, 1), a.shape)), "y": 4, "x": 2, "z": 1}


def test_chunking_does_not_change_the_result(monkeypatch):
    rng = np.random.default_rng(11)
    a = rng.integers(0, 256, 10000, dtype=np.uint8)
    b = rng.integers(0, 256, 10000, dtype=np.uint8)
    whole = error_stats(a, b, scale=0.25, zero_point=7)
    monkeypatch.setattr(stats_mod, "CHUNK", 7)
    monkeypatch.setattr(stats_mod, "BYTE_CHUNK", 300)  # 8-bit reference sums: whole rows of 256 and a rest
    pieces = error_stats(a, b, scale=0.25, zero_point=7)
    for key in ("max_abs", "median_abs", "p99_abs", "max_rel", "worst"):
        assert getattr(whole, key) == getattr(pieces, key)
    for key in ("mean_abs", "cosine", "sqnr_db"):
        assert getattr(whole, key) == pytest.approx(getattr(pieces, key), rel=1e-12)


def test_float_chunks_with_and_without_non_finite_values(monkeypatch):
    """The dense float path (finite chunks) and the careful one (chunks holding NaN/Inf) add up the same."""
    rng = np.random.default_rng(12)
    a = rng.normal(size=3000).astype(np.float32)
    b = (a + rng.normal(scale=0.01, size=a.size)).astype(np.float32)
    b[2500] = np.inf
    monkeypatch.setattr(stats_mod, "CHUNK", 64)
    got = error_stats(a, b)
    keep = np.arange(a.size) != 2500
    check(got, reference(a[keep], b[keep]))
    assert got.nonfinite_mismatch == 1 and got.inf == 1 and got.worst["index"] == 2500
    assert got.differing == int(np.count_nonzero(a != b))


def test_wide_integers_do_not_need_a_histogram_of_every_lsb():
    a = np.array([0, 2_000_000_000, -5], dtype=np.int32)
    b = np.array([-2_000_000_000, 2_000_000_000, -4], dtype=np.int32)
    got = error_stats(a, b)
    assert got.max_abs_lsb == 2_000_000_000 and got.median_abs_lsb == 1 and got.worst["index"] == 0


@pytest.mark.parametrize("kind", ["uint8", "float32", "float32-nonfinite", "float32-binned"])
def test_two_threads_give_the_one_pass_result(monkeypatch, kind):
    """A large pair is fed as two halves on two threads and merged: the same statistics as one pass (sums to
    rounding), the worst element still the first largest, quantiles still exact or equally binned."""
    rng = np.random.default_rng(21)
    if kind == "uint8":
        a = rng.integers(0, 256, 50001, dtype=np.uint8)
        b = a.copy()
        hit = rng.choice(a.size, 3000, replace=False)
        b[hit] = rng.integers(0, 256, hit.size, dtype=np.uint8)
        a[[100, 40000]], b[[100, 40000]] = 0, 255  # two equal largest errors: the first one is the worst
        kwargs = dict(scale=0.1, zero_point=128)
    else:
        a = rng.normal(size=50001).astype(np.float32)
        b = (a + rng.normal(scale=0.01, size=a.size)).astype(np.float32)
        a[[7, 30000]], b[[7, 30000]] = 1.0, 51.0  # two equal largest errors: the first one is the worst
        kwargs = dict(rtol=0.01, check="p99")
        if kind == "float32-nonfinite":
            a[[5, 45000]] = np.nan
            b[[5, 45000]] = np.nan
            b[[20, 40000]] = np.inf
        if kind == "float32-binned":
            monkeypatch.setattr(stats_mod, "EXACT_LIMIT", 1000)
    monkeypatch.setattr(stats_mod, "CHUNK", 4096)
    monkeypatch.setattr(stats_mod, "PARALLEL_MIN", 1 << 62)
    one = error_stats(a, b, **kwargs).to_dict()
    monkeypatch.setattr(stats_mod, "PARALLEL_MIN", 1000)
    two = error_stats(a, b, **kwargs).to_dict()
    assert set(one) == set(two)
    for key, value in one.items():
        if isinstance(value, float):
            assert two[key] == pytest.approx(value, rel=1e-12), key
        else:
            assert two[key] == value, key


@pytest.mark.parametrize("dtype, scale, zero_point, atol", [
    (np.uint8, 1 / 256, 0, 0.0), (np.uint8, 0.10822763, 144, 0.2), (np.int8, 0.05, -3, 0.0), (np.int8, None, 0, 2.0)])
def test_many_differing_bytes_counted_as_pairs_give_the_element_by_element_result(monkeypatch, dtype, scale,
                                                                                  zero_point, atol):
    """Past CODE_PAIRS_MIN differing 8-bit codes, only the count of each (a, b) byte pair is kept: every
    statistic, the worst element, the per-lane maxima and the histogram come out as element by element."""
    rng = np.random.default_rng(31)
    a = rng.integers(0, 256, 80_000, dtype=np.uint8).view(dtype)
    b = a.copy()
    hit = rng.choice(a.size, 30_000, replace=False)
    b[hit] = (b[hit].view(np.uint8) + rng.integers(1, 256, hit.size).astype(np.uint8)).view(dtype)
    info = np.iinfo(dtype)
    a[[10, 70_000]], b[[10, 70_000]] = info.min, info.max  # two equal largest errors: the first is the worst
    kwargs = dict(scale=scale, zero_point=zero_point, atol=atol)

    def run():
        acc = stats_mod.ErrorAccumulator(integer=True, itemsize=1, lanes=4, **kwargs)
        for lo in range(0, a.size, 20_000):  # the way a diff feeds it: the differing pairs of each block
            pa, pb = a[lo:lo + 20_000], b[lo:lo + 20_000]
            acc.add_reference(pa)
            where = np.flatnonzero(pa != pb)
            acc.add_differing(pa[where], pb[where], lambda k, _w=where, _lo=lo: _lo + int(_w[k]), lane=(lo + where) % 4)
        return acc.finish(locator(record_size=4))

    monkeypatch.setattr(stats_mod, "CODE_PAIRS_MIN", 1 << 62)
    by_element = run()
    monkeypatch.setattr(stats_mod, "CODE_PAIRS_MIN", 1000)
    by_pairs = run()
    assert by_pairs.to_dict() == by_element.to_dict()
    assert by_pairs.per_lane_max == by_element.per_lane_max
    assert np.array_equal(by_pairs.histogram[1], by_element.histogram[1])
    check(by_pairs, reference(a, b, scale, zero_point))
    assert by_pairs.worst == {"index": 10, "anchor": 2, "lane": 2}
    assert by_pairs.violations == by_element.violations > 0
    lsb = np.abs(a.astype(int) - b.astype(int))
    assert by_pairs.differing == int(np.count_nonzero(lsb))
    assert by_pairs.p99_abs_lsb == nearest_rank(lsb, 0.99)
    assert by_pairs.per_lane_max == tuple(float(lsb[lane::4].max()) * (scale or 1.0) for lane in range(4))
