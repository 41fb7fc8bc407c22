"""cacheline without --previous: lines of B holding well-formed other data (values A holds, not a prefill,
most of each line rewritten) are stale cache lines, named with the wording that they were not checked against
the previous frame; small drift in the same lines is not."""

from __future__ import annotations

import numpy as np

from forensics.diagnose import diagnose_dumps

LINE = 64


def _frame(seed: int, n: int = 16_384) -> np.ndarray:
    return np.random.default_rng(seed).integers(120, 220, n, dtype=np.uint8)


def _diagnose(tmp_path, a, b):
    (tmp_path / "a.bin").write_bytes(a.tobytes())
    (tmp_path / "b.bin").write_bytes(b.tobytes())
    return diagnose_dumps(tmp_path / "a.bin", tmp_path / "b.bin")


def _with_lines(a, other, lines):
    b = a.copy()
    for line in lines:
        b[line * LINE:(line + 1) * LINE] = other[line * LINE:(line + 1) * LINE]
    return b


def test_lines_of_another_frame_are_stale_cache_lines_unchecked(tmp_path):
    a, prev = _frame(0), _frame(1)
    lines = (3, 40, 97, 180, 201, 250)
    result = _diagnose(tmp_path, a, _with_lines(a, prev, lines))
    assert result.kinds == ("cacheline",), result.kinds
    f = result.finding("cacheline")
    assert f.details["source"] == "unchecked" and f.details["first_lines"] == list(lines)
    assert "not checked against the previous frame" in f.evidence and "--previous" in f.evidence
    assert "invalidate" in f.hint


def test_lines_of_a_prefill_keep_the_prefill_name(tmp_path):
    a = _frame(2)
    result = _diagnose(tmp_path, a, _with_lines(a, np.full(a.size, 0xCD, np.uint8), (5, 77, 130)))
    assert "cacheline" in result.kinds or "fill" in result.kinds
    if "cacheline" in result.kinds:
        assert result.finding("cacheline").details["source"] != "unchecked"


def test_small_drift_in_scattered_lines_is_not_named(tmp_path):
    a = _frame(3)
    drift = a.copy()
    rng = np.random.default_rng(4)
    for line in (9, 60, 150):
        pos = line * LINE + rng.choice(LINE, 6, replace=False)  # a few bytes off by one: another input
        drift[pos] = drift[pos] + 1
    result = _diagnose(tmp_path, a, drift)
    assert "cacheline" not in result.kinds, result.kinds
