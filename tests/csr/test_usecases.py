"""forensics.csr.usecases: --mask bits given for one register more than once add up; a lookup takes no traces."""

from __future__ import annotations

import pytest

from forensics.core.errors import InputError
from forensics.csr import usecases


def test_masks_of_one_register_add_up(tmp_path):
    a, b = tmp_path / "a.trace", tmp_path / "b.trace"
    a.write_text("W 0x48788 0x7f\nW 0x48790 0x1\n")
    b.write_text("W 0x48788 0x7f\nW 0x48790 0x7\n")  # bits 0x2 and 0x4 differ
    _, differ = usecases.csr(a, b, mask=[("0x48790", 0x2)])
    _, masked = usecases.csr(a, b, mask=[("0x48790", 0x2), ("0x48790", 0x4)])
    assert differ.exit_code == 1 and masked.exit_code == 0


def test_a_lookup_takes_no_traces(tmp_path):
    with pytest.raises(InputError, match="take no trace files"):
        usecases.csr(tmp_path / "a.trace", name="0x48790")
    with pytest.raises(InputError, match="not both"):
        usecases.csr(name="0x48790", find="scalar")
