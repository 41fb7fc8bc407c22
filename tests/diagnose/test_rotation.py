"""shift vs rotation on periodic records (a scores buffer: every record repeats the background): a window of B
matches A every period along, so the names are decided by what is at the ends: a rotation wraps A's tail to B's
head, a shift leaves its vacated head holding a fill (even when A's tail holds that same fill)."""

from __future__ import annotations

import numpy as np
import pytest

from forensics.diagnose import diagnose_dumps


def _periodic(n_rec: int = 1500, rs: int = 52, seed: int = 3) -> np.ndarray:
    rng = np.random.default_rng(seed)
    rec = np.zeros((n_rec, rs), np.uint8)
    rec[:, 0] = 240
    hot = rng.choice(n_rec, 20, replace=False)
    rec[hot, rng.integers(1, rs, hot.size)] = rng.integers(40, 230, hot.size)
    return np.concatenate([rec.reshape(-1), np.zeros(12, np.uint8)])  # tile padding after the last record


def _diagnose(tmp_path, a, b):
    (tmp_path / "a.bin").write_bytes(a.tobytes())
    (tmp_path / "b.bin").write_bytes(b.tobytes())
    return diagnose_dumps(tmp_path / "a.bin", tmp_path / "b.bin")


@pytest.mark.parametrize("by", [3000 + 20, 52 * 7 + 5])
def test_a_rotation_of_periodic_records_is_a_rotation(tmp_path, by):
    a = _periodic()
    result = _diagnose(tmp_path, a, np.roll(a, by))
    assert result.primary == "rotation", result.kinds
    assert result.finding("rotation").details["rotate_bytes"] == a.size - by


@pytest.mark.parametrize("head", [b"\xcc", b"\x00"])
def test_a_shift_of_periodic_records_is_a_shift_whatever_its_head_holds(tmp_path, head):
    a = _periodic()
    k = 20
    b = np.concatenate([np.frombuffer(head * k, np.uint8), a[:-k]])
    result = _diagnose(tmp_path, a, b)
    assert result.primary == "shift" and "rotation" not in result.kinds, result.kinds
    assert result.finding("shift").details["shift_bytes"] == k
