"""Tables and verdict lines for `forensics csr`: the aligned register-access table and register lookups."""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from rich.table import Table
from rich.text import Text

from forensics.csr.compare import MISMATCH_KINDS, register_notes
from forensics.render.line import judgement_line
from forensics.render.style import titled_table

VERDICT_TEXT = {"match": "match", "value": "VALUE", "width": "WIDTH", "only_a": "ONLY A", "only_b": "ONLY B",
                "unchecked": "unchecked"}
COLUMNS = (("#", "right"), ("op", "left"), ("offset", "right"), ("name", "left"), ("group", "left"),
           ("A", "right"), ("B", "right"), ("verdict", "left"))
# register dumps by offset: the dump (its tag) instead of the op, which is a read on the dump's side and says
# in the other side's cell what that side did (W 0x5, POLL 0x1 x3)
DUMP_COLUMNS = (("#", "right"), ("dump", "left"), ("offset", "right"), ("name", "left"), ("group", "left"),
                ("A", "right"), ("B", "right"), ("verdict", "left"))
# Above this many rows the table is laid out here, one line per row, instead of by rich: a rich Table
# measures and wraps every cell (~0.4 ms a row: 43 s for `--all` on 100,000 rows, 1 s this way).
RICH_TABLE_ROWS = 1000


class FixedWidthTable:
    """The same columns as the rich table at fixed widths (each the widest cell), one line per row,
    never wrapped; `cells` are the rows' texts, the last column drawn in its row's style."""

    def __init__(self, cells: list[tuple[str, ...]], styles: list[str | None], columns=COLUMNS):
        self.cells = cells
        self.styles = styles
        self.columns = columns

    def __rich_console__(self, console, options):
        columns = self.columns
        widths = [max(len(name), *map(len, column)) for (name, _), column in zip(columns, zip(*self.cells))]

        def line(cells):
            return "   ".join(cell.rjust(w) if justify == "right" else cell.ljust(w)
                              for cell, w, (_, justify) in zip(cells, widths, columns))

        newline = Segment.line()
        yield Segment(line([name for name, _ in columns]).rstrip(), Style(bold=True))
        yield newline
        yield Segment("─" * (sum(widths) + 3 * (len(widths) - 1)))
        yield newline
        styles = {None: None, "red": Style(color="red")}
        for cells, style in zip(self.cells, self.styles):
            text = line(cells)
            verdict_at = len(text) - widths[-1]
            yield Segment(text[:verdict_at])
            yield Segment(text[verdict_at:].rstrip(), styles[style])
            yield newline



def _cell(access) -> str:
    """Compact hex (the op column carries the width); a poll says how many reads it took."""
    if access is None:
        return "-"
    return f"0x{access.value:x} x{access.count}" if access.count > 1 else f"0x{access.value:x}"


def _op(row) -> str:
    """`W64`, `R32`, `POLL64`: the op and the access width (A's, else B's; `W64/32` for a width mismatch)."""
    if row.kind == "width":
        return f"{row.a.op}{row.a.width}/{row.b.width}"
    width = (row.a.width if row.a is not None else None) or (row.b.width if row.b is not None else None)
    return (row.a or row.b).op + (str(width) if width else "")


def _taken_as(trace: dict) -> str:
    """What the file's access lines were read as: writes and reads, a snapshot, or a driver's register dumps."""
    taken = trace.get("taken_as") or {}
    if trace["kind"] == "dump":
        dumps = ", ".join(f"{d['tag']} {d['registers']}" for d in trace.get("dumps", ()))
        return (f"register dumps {dumps}: {taken.get('dump_reads', 0)} [CSR@tag] lines without an R/W word, "
                f"taken as reads")
    if trace["kind"] == "snapshot":
        return f"snapshot of {taken.get('snapshot', 0)} registers"
    return f"taken as {taken.get('writes', 0)} writes, {taken.get('reads', 0)} reads"


def _source_line(label: str, trace: dict) -> str:
    formats = ", ".join(f"{name} {count}" for name, count in trace["formats"].items())
    formats += f"; {_taken_as(trace)}"
    ignored = trace.get("ignored_lines") or 0
    extra = f"; {ignored} other line{'s' if ignored != 1 else ''} ignored" if ignored else ""
    if trace.get("non_ascii_lines"):
        extra += f"; {trace['non_ascii_lines']} lines held non-ASCII text, read for their ASCII"
    if trace.get("malformed_lines"):
        extra += (f", {trace['malformed_lines']} of them malformed accesses (first at line "
                  f"{trace['first_malformed_line']})")
    polls = trace.get("raw_accesses", 0) - trace.get("accesses", 0) if trace["kind"] == "trace" else 0
    poll_note = f"; {polls} repeated reads collapsed into polls" if polls > 0 else ""
    return f"{label}: {trace['path']} ({trace['kind']}; formats: {formats}{extra}{poll_note})"


def _dump_cell(access, dump_side: bool) -> str:
    """A dump's read as its value; the other side's access with what it was (W 0x5, POLL 0x1 x3, a snapshot's
    value)."""
    if access is None:
        return "-"
    if dump_side or access.op == "SNAP":
        return _cell(access)
    return f"{access.op} {_cell(access)}"


def render_comparison(result, judgement, *, limit: int | None = 200, show_all: bool = False) -> list:
    """Header lines, the aligned table, and the one-line verdict."""
    out = [Text(_source_line("A", result.trace_a)), Text(_source_line("B", result.trace_b)), Text(_mode_line(result))]
    dumps = result.mode == "dump"
    rows, hidden_matches, truncated = _shown_rows(result, limit, show_all)
    unchecked = 0
    if dumps and not show_all:  # the registers the other side never touched: counted, listed with --all
        shown = [row for row in rows if row.kind != "unchecked"]
        unchecked, rows = len(rows) - len(shown), shown
    if rows:
        cells = [_row_cells(result, row) for row in rows]
        styles = ["red" if row.kind in MISMATCH_KINDS else None for row in rows]
        columns = DUMP_COLUMNS if dumps else COLUMNS
        out.append(_rich_table(cells, styles, columns) if len(cells) <= RICH_TABLE_ROWS
                   else FixedWidthTable(cells, styles, columns))
        out.extend(Text(f"note: {line}") for line in _register_notes(result, rows).values())
    out.extend(Text(line) for line in _tail_lines(result, unchecked, hidden_matches, truncated))
    out.append(judgement_line(judgement))  # the report's (csr.compare's judgement), printed as it is
    return out


def _mode_line(result) -> str:
    """What was compared: a dump comparison (whose dumps against whose accesses) or the traces' accesses."""
    if result.mode == "dump":
        whose = {"a": "A's", "b": "B's", "both": "A's and B's"}[result.dump_side]
        other = {"a": "B's", "b": "A's", "both": "the same dump's"}[result.dump_side]
        line = (f"dump comparison: {whose} register dumps by offset, each read against {other} last read or "
                "write of the register (a read of 32 bits against those bits)")
    else:
        reads = "writes and reads (polls collapsed)" if result.include_reads else "writes only (--reads adds reads)"
        line = f"{result.mode} comparison of {reads}"
    if result.masks:
        line += "; masked bits: " + ", ".join(f"0x{o:x} ignores 0x{m:x}" for o, m in sorted(result.masks.items()))
    return line


def _shown_rows(result, limit: int | None, show_all: bool):
    """(rows, matches hidden, differing rows past the limit): above `limit` rows only the first `limit`
    differing rows are built, never the matches nor rows past the limit."""
    if not show_all and limit is not None and result.row_count > limit:
        rows = result.mismatch_rows(limit)
        return rows, result.row_count - result.differing, result.differing - len(rows)
    return result.rows, 0, 0


def _row_cells(result, row) -> tuple[str, ...]:
    """A row's cells: its kind as the table words it (masked, 32 bits), the dump or op, both sides' accesses."""
    reg = result.registers[row.offset]
    verdict = VERDICT_TEXT[row.kind]
    if row.masked:
        verdict += " (masked)"
    if row.index in result.low_bits:
        verdict += " (32 bits)"
    if result.mode == "dump":
        first = result.dump_side != "b"  # the dump is A's (or both sides are dumps)
        return (str(row.index), result.row_dumps[row.index], f"0x{row.offset:05x}", reg["name"], reg["group"],
                _dump_cell(row.a, first), _dump_cell(row.b, result.dump_side != "a"), verdict)
    return (str(row.index), _op(row), f"0x{row.offset:05x}", reg["name"], reg["group"], _cell(row.a), _cell(row.b),
            verdict)


def _register_notes(result, rows) -> dict[int, str]:
    """One note per register shown that differs, is unknown or lies outside the PCIe window, in row order."""
    noted: dict[int, str] = {}
    for row in rows:
        reg = result.registers[row.offset]
        if row.kind != "match" or not reg["known"] or not reg["pcie_window"]:
            notes = register_notes(reg)
            if row.offset in result.label_notes:
                notes.append(result.label_notes[row.offset])
            if notes and row.offset not in noted:
                noted[row.offset] = f"0x{row.offset:05x} {reg['name']}: " + "; ".join(notes)
    return noted


def _tail_lines(result, unchecked: int, hidden_matches: int, truncated: int) -> list[str]:
    """The rows not shown, then the comparison's notes."""
    dumps = result.mode == "dump"
    out = []
    if unchecked:
        out.append(f"{unchecked} unchecked rows not shown: registers the dump reads that the other side never "
                   "touched (--all shows every row)")
    if hidden_matches:
        out.append(f"{hidden_matches} matching{' or unchecked' if dumps else ''} rows not shown "
                   "(--all shows every row)")
    if truncated:
        out.append(f"... {truncated} more differing rows (--limit N or --all)")
    out.extend(f"note: {note}" for note in result.notes)
    if dumps and result.unpaired_dumps:
        out.append(f"note: dumps on one side only (not compared): {', '.join(result.unpaired_dumps)}")
    if dumps and result.untouched:
        out.append(f"note: {result.untouched} registers the other side accessed are in no dump")
    return out


def _rich_table(cells: list[tuple[str, ...]], styles: list[str | None], columns=COLUMNS) -> Table:
    table = titled_table(None, *columns)
    for col in (1, 2, 5, 6, 7):
        table.columns[col].no_wrap = True
    table.columns[3].min_width = 20
    table.columns[4].max_width = 18
    table.columns[7].min_width = 11
    for row, style in zip(cells, styles):
        table.add_row(*row[:-1], Text(row[-1], style=style))
    return table


def render_lookup(result, judgement) -> list:
    """The registers named, then the report's one judgement (FOUND / NOT FOUND: csr.registers.judge_lookup)."""
    out = []
    if result.registers:
        table = titled_table(None, ("offset", "right"), ("name", "left"), ("group", "left"), ("width", "right"),
                       ("notes", "left"))
        for reg in result.registers:
            notes = register_notes({"known": True, "usb_only": reg.usb_only,
                                    "pcie_window": _in_window(reg.offset)})
            other = [g for g in reg.groups if g != reg.group]
            if other:
                notes.append("also in " + ", ".join(other))
            table.add_row(f"0x{reg.offset:05x}", reg.name, reg.group, str(reg.width), "; ".join(notes))
        out.append(table)
    out.append(judgement_line(judgement))
    return out


def _in_window(offset: int) -> bool:
    from forensics.csr.registers import in_pcie_window

    return in_pcie_window(offset)


def write_json(stream, doc: dict, rows) -> None:
    """The compact --json document of a comparison with its "mismatches" written row by row from `rows` (the
    document's list left empty): the same text json.dumps gives the whole, with one row dict alive at a time."""
    import json

    dump = json.JSONEncoder(separators=(",", ":"), allow_nan=False).encode
    head, tail = dump(doc).split('"mismatches":[]', 1)
    stream.write(head + '"mismatches":[')
    batch: list = []
    first = True
    for row in rows:
        batch.append(row)
        if len(batch) == 4096:  # encoded as one list, at C speed, without its brackets
            stream.write(("" if first else ",") + dump(batch)[1:-1])
            first, batch = False, []
    if batch:
        stream.write(("" if first else ",") + dump(batch)[1:-1])
    stream.write("]" + tail + "\n")
