"""Trace comparison: alignment against an LCS oracle, the open sequence with each mismatch planted once,
masks, reads and polls, snapshots, the golden table, JSON, and a 100,000-access trace."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import forensics.csr.align as align_module
import forensics.csr.compare as compare_module
from forensics.csr.align import align
from forensics.csr.compare import compare_files, compare_traces
from forensics.csr.parse import parse_text
from tests.csr import reference_align
from tests.conftest import assert_golden
from tests.csr.traces import driver_open_trace, libedgetpu_open_trace

GOLDEN = Path(__file__).parent / "data" / "open_sequence_table.txt"


def lcs_length(a, b) -> int:
    """Textbook O(N*M) dynamic programme: an independent oracle for the alignment's match count."""
    prev = [0] * (len(b) + 1)
    for x in a:
        cur = [0]
        for j, y in enumerate(b):
            cur.append(prev[j] + 1 if x == y else max(prev[j + 1], cur[j]))
        prev = cur
    return prev[-1]


def check_alignment(a, b, pairs):
    assert [i for i, _ in pairs if i is not None] == list(range(len(a)))
    assert [j for _, j in pairs if j is not None] == list(range(len(b)))
    assert all(a[i] == b[j] for i, j in pairs if i is not None and j is not None)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.integers(0, 4), max_size=40), st.lists(st.integers(0, 4), max_size=40))
def test_alignment_is_a_longest_common_subsequence(a, b):
    pairs, _ = align(a, b)
    check_alignment(a, b, pairs)
    assert sum(1 for i, j in pairs if i is not None and j is not None) == lcs_length(a, b)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_long_common_runs_between_differing_ends_align_as_a_longest_common_subsequence(seed):
    # Runs of 64 and more equal keys inside the region Myers works on (the ends differ): the snakes
    # move 64 keys at a time there, then one at a time.
    rng = random.Random(seed)
    common = [rng.randrange(3) for _ in range(rng.randrange(60, 200))]
    a = [7, 8] + common[:100] + [rng.randrange(3) for _ in range(rng.randrange(4))] + common[100:] + [9]
    b = [8, 7] + common[:100] + common[100:] + [5, 9, 9]
    for _ in range(rng.randrange(3)):
        b.insert(rng.randrange(len(b)), rng.randrange(3))
    pairs, methods = align(a, b)
    check_alignment(a, b, pairs)
    assert methods == ("myers",)
    assert sum(1 for i, j in pairs if i is not None and j is not None) == lcs_length(a, b)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1))
def test_greedy_walk_equals_the_walk_as_first_written(seed):
    # Seeded random sequences over 2..6 keys (hypothesis' own lists are mostly too uniform to tell the
    # repairs apart), on a random sub-range.
    rng = random.Random(seed)
    keys = rng.randrange(2, 7)
    a = [rng.randrange(keys) for _ in range(rng.randrange(60))]
    b = [rng.randrange(keys) for _ in range(rng.randrange(60))]
    alo, blo = rng.randrange(len(a) + 1), rng.randrange(len(b) + 1)
    ahi, bhi = rng.randrange(alo, len(a) + 1), rng.randrange(blo, len(b) + 1)
    ours, reference = [], []
    align_module._greedy(a, alo, ahi, b, blo, bhi, ours)
    reference_align.greedy(a, alo, ahi, b, blo, bhi, reference)
    assert ours == reference


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 6), max_size=60), st.lists(st.integers(0, 6), max_size=60))
def test_capped_alignment_stays_valid(a, b):
    # With a tiny edit budget the anchored and greedy fallbacks run; the result must still be an alignment.
    old = align_module.MYERS_MAX_D
    align_module.MYERS_MAX_D = 2
    try:
        pairs, methods = align(a, b)
    finally:
        align_module.MYERS_MAX_D = old
    check_alignment(a, b, pairs)


def test_fallbacks_still_find_shared_structure():
    rng = random.Random(7)
    a = [rng.randrange(50) for _ in range(400)]
    b = list(a)
    for k in range(0, 400, 9):
        b[k] = 1000 + k          # many substitutions: far more edits than the budget
    old = align_module.MYERS_MAX_D
    align_module.MYERS_MAX_D = 10
    try:
        pairs, methods = align(a, b)
    finally:
        align_module.MYERS_MAX_D = old
    check_alignment(a, b, pairs)
    assert set(methods) & {"anchored", "greedy"}
    # Every untouched position is still matched to itself.
    matched = {(i, j) for i, j in pairs if i is not None and j is not None}
    assert sum(1 for k in range(400) if k % 9 and (k, k) in matched) >= 0.95 * sum(1 for k in range(400) if k % 9)


def test_open_sequence_reports_each_planted_mismatch_once(open_traces):
    result = compare_files(*open_traces)
    assert not result.passed
    assert result.counts == {"match": 15, "value": 1, "width": 1, "only_a": 1, "only_b": 1}
    by_kind = {row.kind: row for row in result.mismatches}
    assert by_kind["value"].offset == 0x485A0 and (by_kind["value"].a.value, by_kind["value"].b.value) == (0x100, 0x80)
    assert by_kind["width"].offset == 0x48788 and (by_kind["width"].a.width, by_kind["width"].b.width) == (64, 32)
    assert by_kind["only_a"].offset == 0x486E8 and by_kind["only_a"].b is None
    assert by_kind["only_b"].offset == 0x486C4 and by_kind["only_b"].a is None
    assert result.registers[0x486C4]["name"] == "UNKNOWN"
    assert "0x486c0" in result.label_notes[0x486C4]


def test_identical_traces_pass_in_any_formats(tmp_path):
    a = parse_text(libedgetpu_open_trace())
    plain = "\n".join(f"{x.op if x.op == 'W' else 'R'}{x.width} 0x{x.offset:x} = 0x{x.value:x}"
                      for x in a.accesses)
    b = parse_text(plain)
    result = compare_traces(a, b, include_reads=True)
    assert result.passed and result.matched == len(a.accesses)


def test_reads_add_polls_and_a_poll_lines_up_with_a_single_read(open_traces):
    result = compare_files(*open_traces, include_reads=True)
    assert result.counts["only_a"] == 2       # status_block_update and the tileconfig0 poll
    missing = [row for row in result.rows if row.kind == "only_a"]
    assert {(row.op, row.offset) for row in missing} == {("W", 0x486E8), ("POLL", 0x48788)}
    status = next(row for row in result.rows if row.offset == 0x48570)
    assert status.kind == "match" and status.a.op == "POLL" and status.a.count == 3 and status.b.op == "R"


def test_masks_ignore_fields_that_legitimately_differ(tmp_path, csr_cli):
    a = tmp_path / "a.log"
    b = tmp_path / "b.log"
    a.write_text(libedgetpu_open_trace())
    b.write_text(libedgetpu_open_trace().replace("0x0000000000100000", "0x0000000000200000")
                 .replace("0x0000000000101000", "0x0000000000201000"))
    assert compare_files(a, b).counts["value"] == 2
    masked = compare_files(a, b, masks={0x48590: (1 << 64) - 1, 0x48598: 0xF00000})
    assert masked.passed and masked.masked == 2
    # A mask that leaves the differing bit visible does not hide the mismatch.
    assert compare_files(a, b, masks={0x48590: 0x100000}).counts["value"] == 2
    res = csr_cli("csr", a, b, "--mask", "instruction_queue_base", "--mask", "0x48598=0xf00000", "--json")
    assert res.code == 0, res.out
    doc = json.loads(res.out)
    assert doc["masked"] == 2 and doc["masks"] == {"0x48590": "0xffffffffffffffff", "0x48598": "0xf00000"}


def test_snapshots_compare_by_offset(tmp_path, csr_cli):
    a = tmp_path / "a.snap"
    b = tmp_path / "b.json"
    a.write_text("0x48788 = 0x7f\n0x44018 = 0x1\n0x485a0 = 0x100\n")
    b.write_text(json.dumps({"scalarCoreRunControl": "0x1", "0x48788": 127, "0x485a0": "0x80", "0x486c4": 1}))
    result = compare_files(a, b)
    assert result.mode == "snapshot"
    kinds = {row.offset: row.kind for row in result.rows}
    assert kinds == {0x44018: "match", 0x48788: "match", 0x485A0: "value", 0x486C4: "only_b"}
    res = csr_cli("csr", a, b, "--json")
    assert res.code == 1 and json.loads(res.out)["mode"] == "snapshot"


def test_a_trace_against_a_snapshot_uses_the_last_write(tmp_path, open_traces):
    snap = tmp_path / "state.txt"
    snap.write_text("0x485a0 = 0x100\n0x48788 = 0x7f\n")
    result = compare_files(open_traces[0], snap)
    assert result.mode == "snapshot"
    assert {row.offset: row.kind for row in result.rows if row.kind != "only_a"} == {0x485A0: "match",
                                                                                    0x48788: "match"}


def test_cli_json_fields(csr_cli, open_traces):
    res = csr_cli("csr", *open_traces, "--json")
    assert res.code == 1
    doc = json.loads(res.out)
    assert doc["accesses_a"] == 18 and doc["accesses_b"] == 18 and doc["matched"] == 15
    assert doc["a"]["formats"] == {"libedgetpu": 25}
    assert set(doc["b"]["formats"]) == {"csr-name", "csr-offval", "init-tag", "plain"}
    kinds = [(m["kind"], m["op"], m["offset"], m["name"], m["a"], m["b"]) for m in doc["mismatches"]]
    assert kinds == [
        ("value", "W", "0x485a0", "instruction_queue_size", "0x0000000000000100", "0x0000000000000080"),
        ("width", "W", "0x48788", "tileconfig0", "0x000000000000007f", "0x0000007f"),
        ("only_a", "W", "0x486e8", "status_block_update", "0x0000000000000000", None),
        ("only_b", "W", "0x486c4", "UNKNOWN", None, "0x0000000000000001"),
    ]
    assert "0x486c4" in doc["unknown_offsets"]


def test_cli_exit_0_when_everything_matches(csr_cli, open_traces):
    res = csr_cli("csr", open_traces[0], open_traces[0])
    assert res.code == 0 and "PASSED" in res.out


def test_cli_usage_errors(csr_cli, open_traces):
    from tests.conftest import assert_one_line_error

    assert_one_line_error(csr_cli("csr", open_traces[0]), "two traces")
    assert_one_line_error(csr_cli("csr", *open_traces, "--mask", "0x48590=zz"), "mask")
    assert_one_line_error(csr_cli("csr", *open_traces, "--mask", "no_such_register"), "no_such_register")
    assert_one_line_error(csr_cli("csr", *open_traces, "--name", "0x48788"), "take no trace files")


def test_golden_table(csr_cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Path("libedgetpu.log").write_text(libedgetpu_open_trace())
    Path("driver.log").write_text(driver_open_trace())
    res = csr_cli("csr", "libedgetpu.log", "driver.log", "--reads", width=100)
    assert res.code == 1
    assert_golden(GOLDEN, res.out)


def test_long_repetitive_traces_are_aligned_exactly():
    """100,000 accesses over a handful of offsets (the case difflib is quadratic on), a few planted edits."""
    rng = random.Random(2024)
    offsets = [0x485A8, 0x48788, 0x44018, 0x400C0, 0x486A0]
    base = [(rng.choice(offsets), rng.randrange(4)) for _ in range(100_000)]
    lines_a = [f"W64 0x{o:x} = 0x{v:x}" for o, v in base]
    lines_b = list(lines_a)
    lines_b[10_000] = f"W64 0x{base[10_000][0]:x} = 0x999"    # value
    del lines_b[50_000]                                     # only_a
    lines_b.insert(70_000, "W64 0x486c4 = 0x1")             # only_b (an UNKNOWN offset)
    lines_b[90_000] = lines_b[90_000].replace("W64", "W32")  # width
    result = compare_traces(parse_text("\n".join(lines_a)), parse_text("\n".join(lines_b)))
    counts = result.counts
    assert (counts["value"], counts["only_a"], counts["only_b"], counts["width"]) == (1, 1, 1, 1)
    assert counts["match"] == 100_000 - 3
    assert result.alignment == ("myers",)



def _rows_as_first_written(a, b, include_reads, masks):
    """Rows of a sequence comparison by the original loop: align() pairs, each judged in turn."""
    seq_a = [x for x in a.accesses if include_reads or x.op == "W"]
    seq_b = [x for x in b.accesses if include_reads or x.op == "W"]
    pairs, _ = align([(x.offset << 1) | (x.op != "W") for x in seq_a],
                     [(x.offset << 1) | (x.op != "W") for x in seq_b])
    rows = []
    for index, (i, j) in enumerate(pairs):
        if i is None:
            rows.append((index, "only_b", None, seq_b[j], False))
        elif j is None:
            rows.append((index, "only_a", seq_a[i], None, False))
        else:
            kind, masked = compare_module._judge(seq_a[i], seq_b[j], masks)
            rows.append((index, kind, seq_a[i], seq_b[j], masked))
    return rows


def _random_lines(rng: random.Random, n: int) -> list[str]:
    lines = []
    for _ in range(n):
        op = rng.choice(["W", "W", "W", "R"])
        line = f"{op}{rng.choice(['', '32', '64'])} 0x{rng.choice([0x48788, 0x44018, 0x486C4]):x} 0x{rng.randrange(4):x}"
        lines.extend([line] * (rng.randrange(1, 4) if op == "R" else 1))
    return lines


def _edited(rng: random.Random, lines: list[str]) -> list[str]:
    """The lines with some dropped, some values or widths changed, and some new lines put in."""
    out = []
    for line in lines:
        roll = rng.random()
        if roll < 0.05:
            continue
        if roll < 0.12:
            op, offset, value = line.split()
            line = f"{op} {offset} 0x{int(value, 16) ^ rng.randrange(1, 4):x}"
        elif roll < 0.15:
            op, offset, value = line.split()
            line = f"{op[0]}{rng.choice(['', '32', '64'])} {offset} {value}"
        out.append(line)
        if rng.random() < 0.05:
            out.extend(_random_lines(rng, rng.randrange(1, 3)))
    return out or ["W 0x48788 0x1"]


@settings(max_examples=150, deadline=None)
@given(st.integers(0, 2**32 - 1), st.booleans())
def test_rows_equal_the_pair_by_pair_judging(seed, include_reads):
    # Bulk judging (only rows whose values or widths differ reach _judge), rows taken as slices of the
    # common prefix and suffix, and the lazily built rows and mismatches, against the original loop.
    rng = random.Random(seed)
    lines = _random_lines(rng, rng.randrange(1, 150))
    a, b = parse_text("\n".join(lines) + "\n"), parse_text("\n".join(_edited(rng, lines)) + "\n")
    masks = {0x48788: rng.choice([1, 3, 2**64 - 1])} if rng.random() < 0.5 else {}
    result = compare_traces(a, b, include_reads=include_reads, masks=masks)
    expected = _rows_as_first_written(a, b, include_reads, masks)
    assert [tuple(row) for row in result.rows] == expected
    assert [tuple(row) for row in result.mismatches] == [row for row in expected if row[1] != "match"]
    assert result.counts == {kind: sum(1 for row in expected if row[1] == kind) for kind in compare_module.KINDS}
    assert result.masked == sum(row[4] for row in expected)


@pytest.mark.parametrize("color", [False, True])
def test_a_table_past_the_rich_row_limit_has_the_same_cells(open_traces, monkeypatch, color):
    # `--all` on 10^5 rows is laid out line by line instead of by rich; the cells must be the same.
    import io
    import re

    import forensics.render.csr as render_csr
    from forensics.render.console import Output

    result = compare_files(*open_traces, include_reads=True)

    def table_lines(rich_rows, keep_colour=False):
        monkeypatch.setattr(render_csr, "RICH_TABLE_ROWS", rich_rows)
        out = io.StringIO()
        Output(out, width=250, color=color).print(*render_csr.render_comparison(result, result.judgement,
                                                                                show_all=True))
        lines = out.getvalue().splitlines()
        plain = [re.sub(r"\x1b\[[0-9;]*m", "", line) for line in lines]
        start = next(k for k, line in enumerate(plain) if line.lstrip().startswith("#"))
        return (lines if keep_colour else plain)[start:]   # the header, the rule, the rows, notes, verdict

    def rows(lines):
        """Each row's cells (rich folds a long name or group onto a continuation line: skipped)."""
        return [line.split() for line in lines[2:] if line.split() and line.split()[0].isdigit()]

    rich_lines, fixed_lines = table_lines(10**9), table_lines(0)
    assert fixed_lines[0].split() == rich_lines[0].split()
    rich_rows, fixed_rows = rows(rich_lines), rows(fixed_lines)
    assert len(fixed_rows) == len(rich_rows) == result.row_count
    for fixed, rich in zip(fixed_rows, rich_rows):
        assert len(fixed) == len(rich)
        assert fixed[:3] == rich[:3] and fixed[5:] == rich[5:]
        assert fixed[3].startswith(rich[3]) and fixed[4].startswith(rich[4])   # name, group: whole, never folded
    if not color:
        # The verdict column starts at one place on every line.
        header, lines = fixed_lines[0], fixed_lines[2:2 + result.row_count]
        assert {len(line) - len(line.split("   ")[-1].strip()) for line in lines} == {header.index("verdict")}
        # Right-justified columns (# and offset: cells 0 and 2) end where their headers end.
        def ends(line):
            return [m.end() for m in re.finditer(r"\S+", line)]
        for column in (0, 2):
            assert {ends(line)[column] for line in lines} == {ends(header)[column]}
    else:
        red = [line for line in table_lines(0, keep_colour=True)[2:2 + result.row_count] if "\x1b[31m" in line]
        assert len(red) == len(result.mismatches) > 0
