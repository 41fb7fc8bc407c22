"""The engine's rules on small synthetic pairs: generators equal independent numpy constructions, combinations
are reported together, sizes alone never explain a pair, and the verdict/exit code contract holds."""

from __future__ import annotations

import numpy as np
import pytest

from forensics.diagnose import EXIT_CODES, diagnose_dumps
from forensics.core.errors import InputError
from forensics.diagnose.simulate import apply_bug, parse_bug

RNG = np.random.default_rng(42)
A = RNG.integers(0, 256, 12_000, dtype=np.uint8).tobytes()


@pytest.fixture
def put(tmp_path):
    counter = iter(range(1000))

    def write(data) -> str:
        path = tmp_path / f"d{next(counter)}.bin"
        path.write_bytes(bytes(data))
        return str(path)

    return write


@pytest.mark.parametrize("spec,expected", [
    ("shift:7", bytes(7) + A[:-7]),
    ("shift:-3", A[3:] + bytes(3)),
    ("fill:100-200:cc", A[:100] + b"\xcc" * 100 + A[200:]),
    ("truncation:5000", A[:5000]),
    ("truncation:5000:ff", A[:5000] + b"\xff" * 7000),
    ("oversize:96:32", bytes(32) + A + bytes(64)),
    ("lane_swap:32", np.frombuffer(A, np.uint8).reshape(-1, 4)[:, ::-1].tobytes()),
    ("lane_swap:16@4000-8000", A[:4000] + np.frombuffer(A[4000:8000], np.uint8).reshape(-1, 2)[:, ::-1].tobytes()
     + A[8000:]),
    ("signedness", bytes(x ^ 0x80 for x in A)),
    ("pitch:1000:1024", b"".join(A[i:i + 1000] + bytes(24) for i in range(0, 12_000, 1000))[:-24]),
    ("stride:3:4:3", np.frombuffer(A, np.uint8).reshape(-1, 4)[:, :3].tobytes()),
    ("bits:set:80", (np.frombuffer(A, np.uint8) | 0x80).tobytes()),
    ("bits:clear:20:4:2", b"".join(A[i:i + 2] + bytes([A[i + 2] & 0xDF]) + A[i + 3:i + 4] for i in range(0, 12_000, 4))),
    ("saturation:20-230", bytes(min(230, max(20, x)) for x in A)),
    ("requantize:2:-100", bytes(min(255, max(0, 2 * x - 100)) for x in A)),
    ("saturation:20-230:4:1", bytes(min(230, max(20, x)) if i % 4 == 1 else x for i, x in enumerate(A))),
    ("requantize:2:-100:3:0,2", bytes(min(255, max(0, 2 * x - 100)) if i % 3 != 1 else x for i, x in enumerate(A))),
    ("page:0=2,2=0@4000", A[8000:] + A[4000:8000] + A[:4000]),
    ("page:missing:1@4000", A[:4000] + A[8000:]),
    ("rotation:5000", A[5000:] + A[:5000]),
    ("lane_swap:halves64", np.frombuffer(A, np.uint8).reshape(-1, 8)[:, [4, 5, 6, 7, 0, 1, 2, 3]].tobytes()),
])
def test_generators_equal_independent_constructions(spec, expected):
    assert apply_bug(parse_bug(spec, len(A)), A) == expected


@pytest.mark.parametrize("spec", ["shift:7", "fill:100-200:cc", "truncation:5000", "oversize:96:32", "lane_swap:32",
                                  "signedness", "pitch:1000:1024", "stride:3:4:3", "lane_swap:16", "bits:flip:08",
                                  "bits:set:40:4:1", "saturation:20-230", "requantize:1.5:-10", "cacheline:12:cc",
                                  "bits:set:01", "bits:flip:01:4:3", "saturation:30-220:4:2", "requantize:0.5:40:2:1",
                                  "rotation:3000", "bits:set:10:8:5"])
def test_every_generated_kind_is_named_and_exits_1(put, spec):
    b = apply_bug(parse_bug(spec, len(A)), A)
    result = diagnose_dumps(put(A), put(b))
    assert result.primary == spec.split(":")[0] and result.verdict == "EXPLAINED" and result.exit_code == 1


def test_shift_and_fill_are_reported_together(put):
    b = bytearray(bytes(16) + A[:-16])
    b[6000:6800] = b"\xaa" * 800
    result = diagnose_dumps(put(A), put(b))
    assert set(result.kinds) == {"shift", "fill"} and result.verdict == "EXPLAINED"
    assert result.finding("shift")["shift_bytes"] == 16
    assert 0.9 < result.finding("shift").explains < 1 and 0 < result.finding("fill").explains < 0.1


def test_sizes_alone_never_explain_a_pair(put):
    other = RNG.integers(0, 256, 70_000, dtype=np.uint8).tobytes()
    longer = diagnose_dumps(put(A[:70]), put(other))
    assert longer.findings == () and longer.verdict == "UNEXPLAINED"
    cut = diagnose_dumps(put(A), put(other[:500]))  # shorter AND different: another buffer, not A cut short
    assert cut.findings == () and cut.verdict == "UNEXPLAINED" and cut.residual["ranges"][0][0] == 0
    half = bytearray(A[:5000])
    half[:400] = other[:400]  # A cut short with its head overwritten: still a truncation, partly
    part = diagnose_dumps(put(A), put(half))
    assert part.primary == "truncation" and part.verdict == "PARTLY EXPLAINED"


def test_partly_explained_points_at_the_residual(put):
    b = bytearray(A)
    b[1000:1400] = b"\xcd" * 400
    b[9000:9050] = RNG.integers(0, 256, 50, dtype=np.uint8).tobytes()
    result = diagnose_dumps(put(A), put(b))
    assert result.verdict == "PARTLY EXPLAINED" and result.kinds == ("fill",)
    lo, hi = result.residual["ranges"][0]
    assert 9000 <= lo and hi <= 9050 and result.to_dict()["residual"]["bytes"] == result.residual["bytes"]


def test_verdict_contract():
    assert {v: c for v, c in EXIT_CODES.items() if c == 0} == {"IDENTICAL": 0, "WITHIN TOLERANCE": 0}


def test_tolerance_applies_only_to_same_size_pairs(put):
    nudged = (np.frombuffer(A, np.uint8) ^ 1).tobytes()
    assert diagnose_dumps(put(A), put(nudged), tolerance=1).exit_code == 0
    assert diagnose_dumps(put(A), put(nudged[:-1]), tolerance=1).exit_code == 1
    with pytest.raises(InputError):
        diagnose_dumps(put(A), put(A), tolerance=-1)


@pytest.mark.parametrize("spec,fragment", [("nope:1", "unknown bug kind"), ("shift", "missing parameters"),
                                           ("fill:9-3", "START < END"), ("lane_swap:0,0", "reorder"),
                                           ("pitch:100:50", "PITCH"), ("relayout:99999", "2 records"),
                                           ("bits:stuck:80", "set|clear|flip"), ("saturation:200-10", "LO < HI"),
                                           ("requantize:x", "number"), ("page:1-2", "I=J"),
                                           ("page:missing:9", "K <"), ("cacheline:0", "between"), ("rotation:0", "R must"),
                                           ("saturation:20-200:4:4", "LANES"), ("bits:set:01:0", "PERIOD"),
                                           ("requantize:2:0:2:1-2", "LANES")])
def test_bad_bug_specs(spec, fragment):
    with pytest.raises(InputError, match=fragment):
        parse_bug(spec, len(A))


def test_cacheline_bug_changes_only_whole_lines():
    b = np.frombuffer(apply_bug(parse_bug("cacheline:9:cd:3", len(A)), A), np.uint8)
    assert b[11_968:].tobytes() == A[11_968:]
    lines = np.flatnonzero((b != np.frombuffer(A, np.uint8))[:11_968].reshape(-1, 64).any(axis=1))
    assert lines.size == 9 and (b[:11_968].reshape(-1, 64)[lines] == 0xCD).all()
