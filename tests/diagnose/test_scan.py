"""scan.fills_of: a sentinel run holding nearly every differing byte over whole pages is a page never written,
cut to those pages, even where the data beside it holds the sentinel too (a 0x00 hole in mostly-zero scores
differs from A only where A is not 0)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np

from forensics.diagnose import diagnose_dumps
from forensics.diagnose.scan import SENTINELS, fills_of

PAGE = 4096


def _scan(runs: dict, differing: int):
    return SimpleNamespace(runs={name: SimpleNamespace(runs=r) for name, r in runs.items()}, bytes_differing=differing)


def test_a_sparse_run_over_whole_pages_holding_nearly_every_difference_is_cut_to_its_pages():
    scan = _scan({"0x00": [(3 * PAGE - 70, 5 * PAGE + 33, 95)]}, 100)
    (name, pat, hits), = fills_of(scan, SENTINELS, end_b=20 * PAGE)
    assert (name, pat) == ("0x00", b"\x00") and hits == [(3 * PAGE, 5 * PAGE, 95)]


def test_a_sparse_run_holding_few_of_the_differences_or_no_whole_page_is_not_a_fill():
    assert fills_of(_scan({"0x00": [(3 * PAGE, 5 * PAGE, 50)]}, 100), SENTINELS, end_b=20 * PAGE) == []
    assert fills_of(_scan({"0x00": [(3 * PAGE + 8, 4 * PAGE + 8, 99)]}, 100), SENTINELS, end_b=20 * PAGE) == []


def test_a_dense_run_is_kept_whole():
    scan = _scan({"0xCC": [(100, 300, 200)]}, 1000)
    assert fills_of(scan, SENTINELS)[0][2] == [(100, 300, 200)]


def _records(n_rec: int, rs: int, seed: int) -> np.ndarray:
    """Mostly-zero records: a background score in lane 0, a few objects elsewhere."""
    rng = np.random.default_rng(seed)
    rec = np.zeros((n_rec, rs), np.uint8)
    rec[:, 0] = rng.integers(200, 256, n_rec)
    hot = rng.choice(n_rec, n_rec // 50, replace=False)
    rec[hot, rng.integers(1, rs, hot.size)] = rng.integers(30, 256, hot.size)
    return rec.reshape(-1)


def test_a_zero_page_hole_in_mostly_zero_data_is_a_fill_of_that_page(tmp_path):
    a = _records(3000, 60, 4)
    b = a.copy()
    page = 11
    b[page * PAGE:(page + 1) * PAGE] = 0
    (tmp_path / "a.bin").write_bytes(a.tobytes())
    (tmp_path / "b.bin").write_bytes(b.tobytes())
    result = diagnose_dumps(tmp_path / "a.bin", tmp_path / "b.bin")
    assert result.kinds == ("fill",), result.kinds
    f = result.finding("fill")
    assert f.details["ranges"][0]["start"] == page * PAGE and f.details["ranges"][0]["end"] == (page + 1) * PAGE
    assert f.details["pages"] == 1 and f"page {page}" in f.evidence and result.explained_fraction == 1.0
