"""The bulk trace parser against the original per-line parser (tests/csr/reference_parse.py).

Generated logs mix every trace format (with op words, widths, case and spacing variants), snapshot
lines (offsets, unique, ambiguous and unknown register names), junk that looks almost like a format,
blank lines, repeated lines, odd whitespace (\\t \\x1f \\xa0) and every line break splitlines knows.
Both parsers must give the same Trace (formats in the same first-seen order) or the same error.
"""

from __future__ import annotations

import random
from unittest import mock

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import forensics.csr.parse as parse_module
from forensics.csr.parse import collapse_polls, parse_text
from forensics.csr.registers import beagle_table
from forensics.core.errors import FormatError, InputError
from tests.csr import reference_parse
from tests.csr.traces import driver_open_trace, libedgetpu_open_trace

TABLE = beagle_table()
OFFSETS = [0x48788, 0x44018, 0x1A30C, 0x486C4, 0x48570]
SPACE = [" ", "  ", "\t", "\x1f", "\xa0"]
BREAKS = ["\n", "\r\n", "\r", "\x0b", "\x0c", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029"]


def _hex(rng: random.Random, value: int, bad: bool) -> str:
    style = rng.randrange(6 if bad else 5)
    if style == 0:
        return f"0x{value:08x}"
    if style == 1:
        return f"0x{value:016x}"
    if style == 2:
        return f"0X{value:X}"
    if style == 3:
        return str(value)
    if style == 4:
        return f"00{value}"                      # decimal with leading zeros
    return "0x" + "f" * rng.choice([16, 17, 20])  # fits, or does not fit, in 64 bits


def _value(rng: random.Random) -> int:
    return rng.choice([0, 1, 0x7F, 0xFFFFFFFF, 2**64 - 1, rng.randrange(2**64)])


def _line(rng: random.Random, bad: bool, snapshot: bool = False) -> str:
    """One line of some format (or junk); `bad` allows numbers over 64 bits and ambiguous names;
    `snapshot`: only snapshot lines, blank lines and junk."""
    sp = rng.choice(SPACE)
    off = rng.choice(OFFSETS)
    val = _value(rng)
    kind = rng.choice([5, 6, 8, 9]) if snapshot else rng.randrange(14)
    if kind == 0:   # libedgetpu, plain or glog prefix, 8/16/odd/too many digits
        op = rng.choice(["Write", "Read"])
        digits = rng.choice([f"{val & 0xFFFFFFFF:08x}", f"{val:016x}", f"{val:x}", "0" + f"{val:016x}"]
                            + ["1" + f"{val:016x}"] * bad)
        prefix = rng.choice(["I driver/kernel/kernel_registers.cc:190] ",
                             f"I0413 08:35:26.{rng.randrange(10**6):06d}  4793 kernel_registers.cc:173] ",
                             "x", "", "pre:"])
        sep = "value: =" if op == "Read" and rng.random() < 0.8 else "value ="
        off_digits = rng.choice([f"{off:016x}", f"{off:x}", "0" * 17 + "1"] + ["1" * 17] * bad)
        return f"{prefix}{op}: offset = 0x{off_digits}, {sep} 0x{digits}"
    if kind == 1:   # [CSR@tag] NAME @0x.. = value
        tag = rng.choice(["[CSR@open]", "[csr@q]", "[Csr@x]", "[CSR@]", "12.5 [CSR@t]", "[c\u017fr@x] [CSR@y]",
                          "[Csr@a] [CSR@b]", "[1.5] [csr@x]"])
        word = rng.choice(["", "R ", "W ", "rd ", "WRITE ", "R32 ", "w64 "])
        name = rng.choice(["tileconfig0", "reg", "K_reg", "a.b"])
        # A trailing exact tag makes a line led by [Csr@x] a tagged line whose match starts at [Csr@x].
        return f"{tag}{sp}{word}{name}{sp}@{rng.choice(['', ' '])}0x{off:x} = {_hex(rng, val, bad)}" \
               + rng.choice(["", "", " [CSR@z]"])
    if kind == 2:   # [CSR@tag] off= val=
        tag = rng.choice(["[CSR@irq]", "[csr@irq]", "[cSR@irq]"])
        word = rng.choice(["", "R ", "READ ", "W64 "])
        return f"{tag} {word}{rng.choice(['off', 'offset', 'OFF'])}={_hex(rng, off, bad)}{rng.choice([' ', ', '])}" \
               f"{rng.choice(['val', 'value'])}={_hex(rng, val, bad)}"
    if kind == 3:   # [INIT][RunCtrl] name @0x.. write=
        tags = rng.choice(["[INIT][RunCtrl]", "[INIT]", " [1.5][INIT] ", "[CSR@x][INIT]", "[Csr@x]"])
        return f"{tags} {rng.choice(['scalarCoreRunControl', 'x'])} @0x{off:x} " \
               f"{rng.choice(['write', 'read', 'WRITE', 'Read'])}={_hex(rng, val, bad)}{rng.choice(['', sp])}"
    if kind == 4:   # plain
        word = rng.choice(["W", "R", "w", "r", "W32", "R64", "w64"])
        eq = rng.choice([" ", " = ", "=", sp])
        return f"{rng.choice(['', sp])}{word}{sp}{_hex(rng, off, bad)}{eq}{_hex(rng, val, bad)}{rng.choice(['', sp])}"
    if kind == 5:   # snapshot: offsets, unique / ambiguous / unknown names
        key = rng.choice([f"0x{off:x}", "tileconfig0", "not_a_register", "1234"]
                         + ["fatal_err_int_control", "0x" + "1" * 17] * bad)
        return f"{key}{rng.choice([' = ', ': ', ',', sp + '=' + sp])}{_hex(rng, val, bad)}"
    if kind == 6:   # blank or whitespace only
        return rng.choice(["", " ", "\t", "\x1f", "\xa0 "])
    if kind == 7:   # unicode digits and look-alike letters
        return rng.choice(["W 0x48788 \u0663", "R \u0661\u0662 0x1", "[CSR@t] \u212a @0x48788 = 0x1",
                           "W 0x48788 0x7f\u0663", "\u212a = 5", "[INIT] \u017fx @0x1 write=0x2"])
    # junk built from the formats' own pieces
    pieces = ["offset = 0x", "Write: ", "Read: ", "value = 0x", "@", "[CSR@", "[csr@", "]", "[", "=", ":", ",",
              "0x1f", "12", "W", "R", " ", "write=", "off=", "val=", "48788", "\t", "zz"]
    return "".join(rng.choice(pieces) for _ in range(rng.randrange(1, 9)))


def _log(rng: random.Random, n: int) -> str:
    bad = rng.random() < 0.3   # most logs parse, so the comparison covers whole traces, not first errors
    snapshot = rng.random() < 0.15
    pool = [_line(rng, bad, snapshot) for _ in range(max(1, n // 3))]
    lines = ["log start"] + [rng.choice(pool) if rng.random() < 0.5 else _line(rng, bad, snapshot)
                             for _ in range(n)]
    out = []
    for line in lines:
        out.append(line)
        out.append("\n" if rng.random() < 0.7 else rng.choice(BREAKS))
    if rng.random() < 0.5:
        out.pop()
    return "".join(out)


def _outcome(parse, text: str, table):
    try:
        trace = parse(text, "t.log", table)
    except FormatError as exc:
        return "FormatError", str(exc)
    except InputError:
        return "InputError", None   # the reference words "no register accesses" more briefly
    return "Trace", trace, list(trace.formats)


def assert_same(text: str, table=TABLE):
    """Same outcome as the reference, both when every line is classified where it is and when each
    distinct line is classified once (the parser picks one by sampling the log), and with regex stages
    cut into chunks of 3 lines as well as whole (real chunks are 8192 lines)."""
    expected = _outcome(reference_parse.parse_log, text, table)
    for repetitive, chunk in ((False, 3), (True, 3), (False, 10**9), (True, 10**9)):
        with mock.patch.object(parse_module, "_repetitive", lambda lines, answer=repetitive: answer), \
                mock.patch.object(parse_module, "_CHUNK_LINES", chunk):
            assert _outcome(parse_text, text, table) == expected, f"repetitive={repetitive} chunk={chunk}"


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40), st.booleans())
# Found by `make fuzz` (tools/fuzz_csr_parse.py): a last line `48788<TAB>:<TAB>` read as DbgView's columns
# was cut to nothing, so the bulk parser counted 34 lines and 26 ignored where the text has 35 and 27.
@example(2867386347, 34, True)
def test_bulk_parser_equals_the_per_line_parser(seed, n, with_table):
    assert_same(_log(random.Random(seed), n), TABLE if with_table else None)


def with_columns(rng: random.Random, text: str) -> str:
    """The log as a Windows viewer saves it: DbgView columns (with or without `[pid] `) or tracefmt's prefix
    before most lines, nothing before some; a line's message may be empty."""
    out = []
    for i, piece in enumerate(text.splitlines(keepends=True) or [""], start=1):
        r = rng.random()
        if r < 0.5:
            piece = f"{i:08d}\t{rng.random():.8f}\t{rng.choice(['', '[4] ', '[4]'])}" + piece
        elif r < 0.8:
            piece = f"[0]0A2C.0B18::11/30/2026-09:24:35.{i:03d} {rng.choice(['', '[EdgeTpu]', '[t] '])}" + piece
        out.append(piece)
    return "".join(out)


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 40))
def test_bulk_parser_equals_the_per_line_parser_with_log_columns(seed, n):
    rng = random.Random(seed)
    assert_same(with_columns(rng, _log(rng, n)))


def test_a_line_of_columns_alone_stays_a_line():
    """`48788<TAB>:<TAB>` looks like DbgView's columns with nothing after them: it is kept (an ignored line),
    never cut to a blank line nor, last in the text, to no line at all."""
    for text in ("W 0x48788 0x7f\n48788\t:\t", "W 0x48788 0x7f\n48788\t:\t\nW 0x48788 0x1",
                 "00000001\t0.0\t[4] W 0x48788 0x7f\n00000002\t0.1\t[4] "):
        trace = parse_text(text)
        assert (trace.lines, trace.ignored) == (len(text.splitlines()), 1), text
        assert_same(text)


@pytest.mark.parametrize("seed", range(3))
def test_bulk_parser_equals_the_per_line_parser_on_long_logs(seed):
    rng = random.Random(seed)
    text = _log(rng, 4000)
    # A long run of reads (polls) first, then the mixed log.
    lines = [f"R 0x{rng.choice(OFFSETS[:2]):x} 0x{rng.randrange(3):x}" for _ in range(2000)]
    assert_same("log start\n" + "\n".join(lines) + "\n" + text)


def test_open_sequence_fixtures_equal_the_per_line_parser():
    for text in (libedgetpu_open_trace(), driver_open_trace(), libedgetpu_open_trace() + driver_open_trace()):
        assert_same(text)
        assert parse_text(text).accesses   # and they are traces, not errors


def test_the_first_bad_line_is_reported_whatever_its_format():
    text = "W 0x48788 0x1\nfatal_err_int_control = 1\nW 0x48788 0x1ffffffffffffffff\n"
    with pytest.raises(FormatError, match="line 2"):
        parse_text(text, table=TABLE)
    with pytest.raises(FormatError, match="line 3"):
        parse_text(text.replace("fatal_err_int_control", "tileconfig0"), table=TABLE)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["R", "W", "POLL"]), st.sampled_from([1, 2]),
                          st.sampled_from([32, 64, None])), max_size=30))
def test_collapse_polls_equals_the_per_line_loop(ops):
    accesses = [reference_parse.Access(op, off, k, width, k + 1, "plain")
                for k, (op, off, width) in enumerate(ops)]
    assert collapse_polls(accesses) == reference_parse.collapse_polls(accesses)
