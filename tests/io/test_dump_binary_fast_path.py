"""open_dump's fast path for binary dumps (no textdump import): wherever it says "certainly binary", textdump's
own sniff says binary too and open_dump warns of nothing, over binaries, texts, UTF-16 with and without a BOM,
text dumps and near-text buffers; a text dump never takes the fast path."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from forensics.io import textdump
from forensics.io.dump import _certainly_binary, open_dump


def _cases():
    rng = np.random.default_rng(11)
    yield "random", rng.integers(0, 256, 8192, dtype=np.uint8).tobytes()
    yield "zeros", bytes(4096)
    yield "scores", (b"\xff\x00\x80\x80" * 2034)
    yield "printable_with_a_nul", bytes(rng.integers(0x40, 0x80, 3000, dtype=np.uint8)) + b"\0"
    yield "short_printable_with_a_nul", bytes(rng.integers(0x20, 0x7f, 600, dtype=np.uint8)) + b"\0"
    text = "".join(f"{i * 16:08x}: " + " ".join(f"{b:02x}" for b in range(16)) + "\n" for i in range(200))
    yield "xxd_like", text.encode()
    yield "utf16le_bom", "\ufeff".encode("utf-16-le") + text.encode("utf-16-le")
    yield "utf16be_bom", "\ufeff".encode("utf-16-be") + text.encode("utf-16-be")
    yield "utf16le_bomless", text.encode("utf-16-le")
    yield "utf16le_korean", ("[INPUT-CHK] 입력 확인 → page[0] first8=00 01\n" * 40).encode("utf-16-le")
    yield "mostly_nul_pairs", bytes(b for i in range(4096) for b in ((0x41 + i % 26), 0))
    yield "int16_small_values", np.arange(-500, 500, dtype="<i2").tobytes() * 4
    yield "float32", rng.standard_normal(2048).astype("<f4").tobytes()


@pytest.mark.parametrize("name,data", list(_cases()), ids=[c[0] for c in _cases()])
def test_the_fast_path_agrees_with_textdumps_sniff(tmp_path, name, data):
    path = tmp_path / f"{name}.bin"
    path.write_bytes(data)
    fast = _certainly_binary(str(path), len(data))
    sniffed = textdump.sniff_file(str(path), len(data))
    if fast:
        assert sniffed is not None and sniffed[0] == "binary", sniffed
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # open_dump warns of nothing for a file the fast path takes
            assert open_dump(str(path)).size == len(data)
    if sniffed is not None and sniffed[0] != "binary":
        assert not fast


def test_the_fast_path_is_taken_for_a_typical_dump_and_never_for_text(tmp_path):
    dump, text = tmp_path / "scores.bin", tmp_path / "log.txt"
    dump.write_bytes(b"\xff\x00\x80\x80" * 2034)
    text.write_bytes(b"00000000: 00 01 02 03\n" * 50)
    assert _certainly_binary(str(dump), dump.stat().st_size)
    assert not _certainly_binary(str(text), text.stat().st_size)
