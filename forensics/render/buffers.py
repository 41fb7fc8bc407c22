"""Tables and verdict lines for the buffer commands: crc, diff, anchors, coverage, hexdump."""

from __future__ import annotations

from forensics.compare.crc import format_crc
from forensics.render.line import Line, judgement_line
from forensics.render.style import table as _table


class Listing:
    """Rows of plain-text cells laid out at the speed of a plain loop (`diff --all` and `hexdump` list hundreds of
    thousands of records); `marks` (one per row: byte lanes) marks those bytes of the hex cells of the `marked`
    columns (the bytes that differ).

    Cells of the `whole` columns (byte records, offsets, anchors) are never broken: where the widest cells do
    not fit the console, a short listing is drawn as a rich table whose other columns fold (where the whole
    columns fit beside them), and otherwise, or for a long one (more than RICH_ROWS rows: rich measures each
    cell, ~0.3 ms a row), each row folds at cell boundaries onto indented continuation lines. Nothing is cut."""

    RICH_ROWS = 2000
    BATCH = 1024  # lines handed to the console as one segment
    FOLDED = 10   # the least width of a column that folds
    whole_lines = True  # its lines fit the width by construction: printed uncropped (console.Output.print)

    PART = 16384  # rows printed at a time (parts): the console holds one print's segments until it ends

    def __init__(self, *columns, rows, title=None, whole=(), marks=None, marked=(), widths=None, head=True,
                 total=None):
        self.columns, self.title, self.rows = columns, title, rows
        self.names = [c[0] if isinstance(c, tuple) else c for c in columns]
        self.justify = [c[1] if isinstance(c, tuple) else "left" for c in columns]
        self.whole, self.marks, self.marked = set(whole), marks, tuple(marked)
        self.widths, self.head = widths, head
        self.total = len(rows) if total is None else total  # rows of the whole listing (this may be a part)

    def parts(self) -> list:
        """The listing as renderables of at most PART rows (the header on the first), laid out alike: what a
        report prints, so that memory stays bounded by a part however many rows there are."""
        if len(self.rows) <= self.PART:
            return [self]
        widths = self._widths()
        return [Listing(*self.columns, rows=self.rows[i:i + self.PART], title=self.title, whole=self.whole,
                        marks=None if self.marks is None else self.marks[i:i + self.PART], marked=self.marked,
                        widths=widths, head=i == 0, total=len(self.rows))
                for i in range(0, len(self.rows), self.PART)]

    def rich_table(self):
        from rich.text import Text

        out = _table(*self.columns, title=self.title, whole=self.whole)
        for i, row in enumerate(self.rows):
            cells = list(row)
            for k in self.marked if self.marks is not None and self.marks[i] else ():
                cells[k] = Text(row[k])
                for lane in self.marks[i]:
                    cells[k].stylize(MARK, 3 * lane, 3 * lane + 2)
            out.add_row(*cells)
        return out

    def _widths(self) -> list[int]:
        from rich.cells import cell_len

        return self.widths or [max([cell_len(name)] + [len(row[i]) for row in self.rows])
                               for i, name in enumerate(self.names)]

    def __rich_console__(self, console, options):
        room = options.max_width
        widths = self._widths()
        gaps = 3 * (len(widths) - 1)
        fits = sum(widths) + gaps <= room
        # a rich table whose other columns fold keeps the whole columns whole only where they fit with room
        least = sum(w if name in self.whole else min(w, self.FOLDED) for name, w in zip(self.names, widths))
        if not self.rows or (not fits and least + gaps <= room and self.total <= self.RICH_ROWS):
            # as a table prints (Output prints a Listing soft-wrapped: its own lines fit by construction)
            yield from console.render(self.rich_table(), options.update(no_wrap=False, overflow=None))
            return
        if self.head:
            yield from self._head(console, options, widths, fits)
        marks = None if console.no_color or console.color_system is None else self.marks
        if not fits:
            for i, row in enumerate(self.rows):
                yield from self._row(row, widths, room, marks[i] if marks is not None else ())
        else:
            yield from self._lines(widths, marks)

    def _lines(self, widths, marks):
        """The rows that fit the width. The console's cost is per segment: plain lines go BATCH to a segment,
        and with marks the plain text between two marked spans (across line ends) is one segment."""
        from rich.segment import Segment

        line = "   ".join("{:%s%d}" % ({"right": ">", "center": "^"}.get(j, "<"), w)
                           for w, j in zip(widths, self.justify)).format
        if marks is None:
            for i in range(0, len(self.rows), self.BATCH):
                yield Segment("\n".join(line(*row) for row in self.rows[i:i + self.BATCH]))
                yield Segment.line()
            return
        starts = self._starts(widths)
        style, pending = _style(MARK), []
        for row, lanes in zip(self.rows, marks):
            text, pos = line(*row), 0
            for k in self.marked if lanes else ():
                for lo, hi in _spans(lanes, len(row[k])):
                    pending.append(text[pos:starts[k] + lo])
                    yield Segment("".join(pending))
                    yield Segment(text[starts[k] + lo:starts[k] + hi], style)
                    pending, pos = [], starts[k] + hi
            pending += (text[pos:], "\n")
        yield Segment("".join(pending))

    def _starts(self, widths) -> list[int]:
        """Where each column's cell text starts in a line (left-justified columns: the marked hex cells)."""
        out, at = [], 0
        for width in widths:
            out.append(at)
            at += width + 3
        return out

    def _head(self, console, options, widths, fits: bool):
        """The title and the header: rich's own (over one stand-in row of the widest cells) when they fit."""
        from rich.segment import Segment

        if fits:
            head = _table(*self.columns, title=self.title)
            head.add_row(*("x" * w for w in widths))
            table_options = options.update(no_wrap=False, overflow=None)  # as a table prints (not soft-wrapped)
            lines = console.render_lines(head, table_options, pad=False, new_lines=False)
            for line in lines[:-1]:  # the title and header rows, without the stand-in row
                yield from line
                yield Segment.line()
            return
        if self.title:
            yield Segment(self.title)
            yield Segment.line()
        yield from self._row(self.names, widths, options.max_width, ())
        yield Segment("─" * min(options.max_width, sum(widths) + 3 * (len(widths) - 1)))
        yield Segment.line()

    def _row(self, row, widths, fold: int | None, lanes):
        """One row, its marked bytes styled; with `fold` (the width), folded at cell boundaries: cells while
        they fit, then an indented continuation line; a cell wider than a line is broken between bytes (a hex
        cell every 3 characters: `6d` never split)."""
        from rich.segment import Segment

        indent = widths[0] + 3 if fold is not None and fold - widths[0] - 3 >= 12 else 0
        used = 0
        for k, (cell, width, how) in enumerate(zip(row, widths, self.justify)):
            need = width + (3 if k else 0)
            if fold is not None and used and used + need > fold:
                yield Segment.line()
                yield Segment(" " * indent)
                used, need = indent, width
            elif k:
                yield Segment("   ")
            spans = _spans(lanes, len(cell)) if lanes and k in self.marked else ()
            if fold is not None and width > fold - used:  # wider than the line: break it between bytes
                room = fold - used
                room = max(3, (room + 1) // 3 * 3) if self.names[k] in self.whole else max(1, room)
                for lo in range(0, len(cell), room):
                    if lo:
                        yield Segment.line()
                        yield Segment(" " * used)
                    yield from self._marked(cell[lo:lo + room], lo, spans)
                used = fold
                continue
            room = width - len(cell)
            start = room if how == "right" else (room // 2 if how == "center" else 0)
            yield Segment(" " * start)
            yield from self._marked(cell, 0, spans)
            yield Segment(" " * (room - start))
            used += need
        yield Segment.line()

    @staticmethod
    def _marked(text: str, at: int, spans):
        """`text` (a cell's characters from `at`) as segments, the parts inside `spans` styled."""
        from rich.segment import Segment

        pos = 0
        for lo, hi in spans:
            lo, hi = max(lo - at, pos), min(hi - at, len(text))
            if lo >= hi:
                continue
            if lo > pos:
                yield Segment(text[pos:lo])
            yield Segment(text[lo:hi], _style(MARK))
            pos = hi
        yield Segment(text[pos:])


def _spans(lanes, length: int) -> list[tuple[int, int]]:
    """[lo, hi) of the marked bytes of a hex cell (`aa bb cc`), neighbouring bytes in one span (with the space
    between them), within the cell's `length`."""
    out: list[list[int]] = []
    for lane in lanes:
        lo = 3 * lane
        if lo >= length:
            break
        if out and out[-1][1] + 1 == lo:
            out[-1][1] = lo + 2
        else:
            out.append([lo, lo + 2])
    return [(lo, hi) for lo, hi in out]


_STYLES: dict = {}


def _style(name):
    """rich's Style of a style name, parsed once."""
    if name not in _STYLES:
        from rich.style import Style

        _STYLES[name] = Style.parse(name)
    return _STYLES[name]


def _num(value: float) -> str:
    """Compact but exact enough to recognise: 0.99609375 -> 0.996094, 128 -> 128."""
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"


SHOW_CHANGES = 6
WIDE = 16  # records longer than this are summarised (forensics.buffer.anchors.WIDE: the library words them alike)


def _hex(record: bytes) -> str:
    """forensics.buffer.anchors.record_hex (imported here: crc and coverage print without numpy)."""
    from forensics.buffer.anchors import record_hex

    return record_hex(record)
MARK = "bold red"  # the bytes that differ, in hexdump
RECORD_COLUMNS = ("anchor", "offset", "bytes", "A", "B", "XOR", "hex", "ascii")  # never broken across lines


def _lane_value(layout, lane: int, q: int) -> str:
    return _num(layout.dequantize(q)) if layout.quantized and lane not in layout.pad_lanes else f"{q:02x}"


SHOW_ELEMENTS = 8  # decoded elements (float32, int16) spelled out before the rest is counted


def _values(layout, record: bytes) -> str:
    """Dequantized data lanes (pad lanes left out: the raw bytes column shows them). A wide record names
    only its lanes that are not at the zero point. Multi-byte elements: their values, the first few of a long
    record."""
    vals = layout.values(record)
    if layout.element is not None:
        shown = " ".join(_num(v) for v in vals[:SHOW_ELEMENTS])
        return shown + (f" ... ({len(vals)} values)" if len(vals) > SHOW_ELEMENTS else "")
    if len(record) <= WIDE:
        return " ".join(_num(v) for lane, v in enumerate(vals) if lane not in layout.pad_lanes)
    zero = layout.zero_point or 0
    names = layout.field_names
    busy = [f"{names[lane]} {_lane_value(layout, lane, q)}" for lane, q in enumerate(record)
            if lane not in layout.pad_lanes and q != zero]
    rest = len(layout.data_lanes) - len(busy)
    shown = ", ".join(busy[:SHOW_CHANGES]) + (f", ... {len(busy) - SHOW_CHANGES} more" if len(busy) > SHOW_CHANGES else "")
    return (shown + "; " if shown else "") + f"{rest} lanes at the zero point"


def _changes(layout, a: bytes, b: bytes) -> str:
    """`face 0 -> 0.9961, background 0.9961 -> 0.003906`: the data lanes where b departs from a (the elements,
    `e3 0.25 -> 0.5`, of a record of multi-byte elements)."""
    if layout.element is not None:
        va, vb = layout.values(a), layout.values(b)
        differ = [i for i, (x, y) in enumerate(zip(va, vb)) if x != y and not (x != x and y != y)]  # NaN == NaN
        parts = [f"e{i} {_num(va[i])} -> {_num(vb[i])}" for i in differ[:SHOW_CHANGES]]
        if len(differ) > SHOW_CHANGES:
            parts.append(f"... {len(differ) - SHOW_CHANGES} more elements")
        return ", ".join(parts) if parts else "no element differs in value (bits only: -0.0, NaN payloads)"
    names = layout.field_names
    lanes = [lane for lane in range(min(len(a), len(b))) if a[lane] != b[lane] and lane not in layout.pad_lanes]
    parts = [f"{names[lane]} {_lane_value(layout, lane, a[lane])} -> {_lane_value(layout, lane, b[lane])}"
             for lane in lanes[:SHOW_CHANGES]]
    if len(lanes) > SHOW_CHANGES:
        parts.append(f"... {len(lanes) - SHOW_CHANGES} more lanes")
    return ", ".join(parts) if parts else "pad lanes only"


# --- crc ---------------------------------------------------------------------------------------------------

def render_crc(report, judgement) -> list:
    """The files' table, their HEAD / MID / TAIL bytes, then the one verdict line (forensics.compare.crc.judge_crc)."""
    out = []
    table = _table("file", ("size", "right"), "CRC32")
    if report.compared:
        table.add_column("vs first")
    verdicts = ("-",) + report.file_verdicts if report.compared else ()
    for i, f in enumerate(report.files):
        row = [f.path, f"{f.size:,}", format_crc(f.crc32)]
        if report.compared:
            row.append(str(verdicts[i]))
        table.add_row(*row)
    out.append(table)
    # HEAD / MID / TAIL of every file stacked, so the same region of two files lines up for the eye.
    peek = _table("", ("offset", "right"), "bytes (16)", "file")
    for label, pick in (("HEAD", lambda f: (0, f.head)), ("MID", lambda f: (f.mid_offset, f.mid)),
                        ("TAIL", lambda f: (max(0, f.size - len(f.tail)), f.tail))):
        for i, f in enumerate(report.files):
            offset, data = pick(f)
            peek.add_row(label if i == 0 else "", f"{offset:#x}", data.hex(" "), f.path)
    out.append(peek)
    if report.chunk_size is not None:
        counts = ", ".join(f"{len(f.chunk_crcs)}" for f in report.files)
        line = f"per-chunk CRC32s: {report.chunk_size:,} bytes per chunk ({counts} chunks)"
        chunk = report.first_differing_chunk
        if chunk is not None:
            lo = chunk * report.chunk_size
            line += f"; first differing chunk: {chunk} (bytes {lo:,}..{lo + report.chunk_size:,})"
        elif len(report.files) == 2:
            line += "; every chunk matches"
        out.append(Line(line))
    out.append(judgement_line(judgement))
    return out


# --- diff --------------------------------------------------------------------------------------------------

def _where(geometry, index: int) -> list[str]:
    from forensics.decode.geometry import where_and_prior

    return list(where_and_prior(geometry, index)) if index >= 0 else ["pad record", ""]


def _stat(value, lsb=None) -> str:
    if value is None:
        return "-"
    text = "inf" if value == float("inf") else _num(float(value))
    return f"{text} ({_num(lsb)} LSB)" if lsb is not None and lsb != value else text


def stats_lines(stats, *, where: str = "", unicode: bool | None = None) -> list:
    """`error: max ... at anchor 1500 lane face; mean ...; p99 ...; cosine ...; SQNR ... dB; min atol ...`."""
    if stats is None or not stats.differing:
        return []
    lsb = stats.integer and stats.units == "dequantized"
    parts = [f"max {_stat(stats.max_abs, stats.max_abs_lsb if lsb else None)}{_worst_at(stats.worst or {})}",
             f"mean {_stat(stats.mean_abs)}"]
    line = f"error{where}: " + "; ".join(parts)
    out = [Line(line), Line("  " + "; ".join(_more_stats(stats, lsb))),
           Line(f"  smallest atol that passes: {_atol_text(stats, lsb)}")]
    if stats.histogram:
        from forensics.render.errorplot import terminal_histogram, unicode_ok

        if unicode is None:  # the block characters only where standard output can encode them
            import sys

            unicode = unicode_ok(sys.stdout)
        out.extend(Line(t) for t in terminal_histogram(*stats.histogram, unicode=unicode))
    return out


def _worst_at(worst: dict) -> str:
    """Where the largest difference is, as the statistics located it (anchor, class, record, y/x/z, element)."""
    if "anchor" in worst:
        return f" at anchor {worst['anchor']} lane {worst['lane']}"
    if "class" in worst:
        return f" at class {worst['class']}" + (f" ({worst['label']})" if worst.get("label") else "")
    if "record" in worst:
        return f" at record {worst['record']} lane {worst['lane']}"
    if "y" in worst:
        return f" at y={worst['y']} x={worst['x']} z={worst['z']}"
    return f" at element {worst['index']}" if worst else ""


def _more_stats(stats, lsb: bool) -> list[str]:
    more = [f"median {_stat(stats.median_abs)}", f"p99 {_stat(stats.p99_abs, stats.p99_abs_lsb if lsb else None)}"]
    if stats.max_rel is not None:
        more.append(f"max rel {_num(stats.max_rel)}")
    more.append(f"cosine {'-' if stats.cosine is None else f'{stats.cosine:.6f}'}")
    sqnr = stats.sqnr_db
    more.append(f"SQNR {'inf' if sqnr == float('inf') else ('-inf' if sqnr == -float('inf') else f'{sqnr:.2f}')} dB")
    if stats.nan or stats.inf:
        more.append(f"NaN {stats.nan}, Inf {stats.inf} ({stats.nonfinite_mismatch} do not match)")
    return more


def _atol_text(stats, lsb: bool) -> str:
    atol = "none (non-finite values differ)" if stats.min_atol is None else _stat(
        stats.min_atol, stats.min_atol_lsb if lsb else None)
    if stats.integer and not lsb and stats.min_atol is not None:
        atol += " LSB"
    return atol


def render_diff(result, judgement, geometry=None, *, unicode: bool | None = None, classes: bool = False,
                fits=()) -> list:
    """`judgement`: the pair's one judgement (forensics.compare.diff.judge_diff), printed as it is; `classes`: the
    dumps are a classifier's score vector (one record whose lanes are classes); `fits`: the dumps' TensorFit
    (A's, B's) when --model / --deps say which tensor they hold."""
    out = [judgement_line(judgement)]
    if result.bytes_identical and result.sizes_equal:
        return out
    # a differing pair that is also a head window: the clause its message does not word, on its own line
    out.extend(Line(r.text) for r in judgement.reasons if r.code == "head_window" and not r.worded)
    files = _table("", "file", ("size", "right"), "CRC32", overflow="fold")  # a long path folds, whole
    files.add_row("A", result.path_a, f"{result.size_a:,}", format_crc(result.crc32_a))
    files.add_row("B", result.path_b, f"{result.size_b:,}", format_crc(result.crc32_b))
    out.append(files)
    out += _facts(result, fits)
    out.extend(stats_lines(result.stats, unicode=unicode))
    if result.records_differing:
        out += _lanes(result) + _differing_records(result, geometry)
    return out


def _facts(result, fits) -> list:
    """Where the bytes differ, what the comparison left out (pad lanes with their own count), what a size
    difference means."""
    facts = [f"bytes differing: {result.bytes_differing:,}"]
    if result.first_differing_offset is not None:
        facts.append(f"first differing byte: {result.first_differing_offset:#x} ({result.first_differing_offset:,})")
    if result.region_start:
        facts.append(f"compared from offset {result.region_start:#x}")
    if result.trailing_bytes:
        facts.append(f"{result.trailing_bytes} trailing bytes after the last whole record")
    out = [Line("   ".join(facts))]
    from forensics.compare.diff import configured, size_note

    if configured(result):
        out.append(Line(configured(result)))
    note = size_note(result, fits).text
    if note is not None:
        out.append(Line(note))
    return out


def _lanes(result) -> list:
    """The byte lanes' counts (of float32 or int16 elements byte lanes say nothing: none)."""
    if result.layout.element is not None:
        return []
    wide = result.layout.record_size > WIDE
    lanes = _table(("lane", "right"), "name", ("records differing", "right"), ("max |delta|", "right"),
                   title="lanes")
    hidden = 0
    for lane, (name, n, d) in enumerate(zip(result.layout.field_names, result.lane_differences,
                                            result.lane_max_delta)):
        if wide and n == 0:
            hidden += 1
            continue
        lanes.add_row(str(lane), name, f"{n:,}", str(d))
    return [lanes] + ([Line(f"{hidden} lanes without differences not shown")] if hidden else [])


def _differing_records(result, geometry) -> list:
    """The listed differing records (every one with --all: a Listing, folded, never cut)."""
    layout = result.layout
    wide = layout.record_size > WIDE
    quant = layout.has_values and not wide
    cols = [("anchor", "right")] + (["where", "prior box"] if geometry is not None else [])
    cols += [("offset", "right")] + (["differing lanes: A -> B"] if wide else ["A", "B", "XOR"])
    if quant:
        cols += ["A values", "B values", "delta"]
    rows = []
    for r in result.records:
        row = [str(r.index)] + (_where(geometry, r.index) if geometry is not None else [])
        row.append(f"{r.offset:#x}")
        if wide:
            row.append(_changes(layout, r.a, r.b))
        else:
            row += [r.a.hex(" "), r.b.hex(" "), bytes(x ^ y for x, y in zip(r.a, r.b)).hex(" ")]
        if quant:
            va, vb = layout.values(r.a), layout.values(r.b)
            deltas = " ".join(_num(y - x) for lane, (x, y) in enumerate(zip(va, vb)) if lane not in layout.pad_lanes)
            row += [_values(layout, r.a), _values(layout, r.b), deltas]
        rows.append(row)
    out = Listing(*cols, rows=rows, title="differing records", whole=RECORD_COLUMNS).parts()
    if result.records_truncated:
        more = result.records_differing - len(result.records)
        out.append(Line(f"... and {more:,} more (--all or --limit N to list them)"))
    return out


# --- anchors -----------------------------------------------------------------------------------------------

def _notes(judgement) -> list:
    """The judgement's clauses its message does not already say, one line each (a tied mode, the head-window
    trap): printed as they are, under the one verdict line."""
    return [Line(r.text, style="yellow") for r in judgement.reasons if r.text and not r.worded]


def _render_top_scores(result, geometry) -> list:
    """A buffer without a dominant record (real COCO scores): its highest-scoring anchors come first."""
    layout = result.layout
    cols = [("anchor", "right")] + (["where", "prior box"] if geometry is not None else [])
    cols += ["class", ("score", "right")]
    table = _table(*cols, title="anchors with the highest non-background scores")
    for t in result.top_scores:
        row = [str(t.index)] + (_where(geometry, t.index) if geometry is not None else [])
        score = f"{t.q}" if t.value is None else f"{t.q} -> {_num(t.value)}"
        # the kernel's class id: the lane after the background lane is class 0
        background = 1 if len(layout.data_lanes) > 2 else 0
        table.add_row(*row, f"{t.lane - background} {t.name}", score)
    return [table]


def render_anchors(result, judgement, geometry=None) -> list:
    """The anchors table under the buffer's one judgement (forensics.buffer.anchors.judge_anchors)."""
    if not result.dominated and result.top_scores and result.nonuniform is None:
        return ([judgement_line(judgement)] + _notes(judgement) + _render_top_scores(result, geometry)
                + _render_summary_tables(result))
    out = [_dominant_head(result), judgement_line(judgement)] + _notes(judgement)
    if result.nonuniform is not None:
        if result.nonuniform:
            out.append(_departing(result, geometry))
            if result.nonuniform_truncated:
                more = result.nonuniform_total - len(result.nonuniform)
                out.append(Line(f"... and {more:,} more (--all or --limit N to list them)"))
    else:
        out += _render_summary_tables(result)
        if not result.uniform:
            out.append(Line("--nonuniform lists every anchor that departs from the dominant record"))
    return out


def _dominant_head(result) -> Line:
    """`N / M anchors match RECORD (P%)`, with the record's values when the layout has them."""
    layout, dom = result.layout, result.dominant
    head = Line()
    head.append(f"{dom.count:,} / {result.records:,} anchors match ", style="bold")
    head.append(_hex(dom.record), style="bold cyan")
    head.append(f" ({100.0 * dom.count / result.records:.2f}%)")
    if layout.has_values:
        head.append(f"  values: {_values(layout, dom.record)}")
    return head


def _departing(result, geometry) -> Listing:
    """The anchors that depart from the dominant record: where (with geometry), the bytes, and how they depart
    (the lanes that changed for a wide record, the values, or each quantized lane but the pad lanes)."""
    layout, dom = result.layout, result.dominant
    cols = [("anchor", "right")] + (["where", "prior box"] if geometry is not None else [])
    cols += [("offset", "right"), "bytes"]
    wide = layout.record_size > WIDE
    if wide:
        cols.append("departs from the dominant record in")
    elif layout.element is not None:
        cols.append("values")
    elif layout.quantized:
        cols += [(n, "right") for lane, n in enumerate(layout.field_names) if lane not in layout.pad_lanes]
    rows = []
    for r in result.nonuniform:
        row = [str(r.index)] + (_where(geometry, r.index) if geometry is not None else [])
        row += [f"{r.offset:#x}", _hex(r.record)]
        if wide:
            row.append(_changes(layout, dom.record, r.record))
        elif layout.element is not None:
            row.append(_values(layout, r.record))
        elif layout.quantized:
            row += [_num(v) for lane, v in enumerate(layout.values(r.record)) if lane not in layout.pad_lanes]
        rows.append(row)
    return Listing(*cols, rows=rows, title="anchors that depart from the dominant record", whole=RECORD_COLUMNS)


def _render_summary_tables(result) -> list:
    """The most frequent records (when one dominates: else they are a tie of ones) and the lanes."""
    layout = result.layout
    out = []
    if result.dominated or not result.top_scores:
        top = _table(("#", "right"), "record", ("count", "right"), ("share", "right"), ("first anchor", "right"),
                     title=f"top records ({result.distinct:,} distinct)")
        for rank, r in enumerate(result.top, 1):
            top.add_row(str(rank), _hex(r.record), f"{r.count:,}", f"{100.0 * r.count / result.records:.2f}%",
                        str(r.first_index))
        out.append(top)
    if layout.element is not None:  # byte lanes of float32 or int16 elements say nothing of their values
        out.append(Line(f"records of {layout.record_size // layout.element_dtype.itemsize} "
                        f"{layout.element_dtype.name} values"))
        return out
    lanes = _table(("lane", "right"), "name", ("min", "right"), ("max", "right"), ("distinct", "right"),
                   title="lanes")
    shown = [lane for lane in result.lanes if layout.record_size <= WIDE or lane.distinct > 1]
    for lane in shown:
        lanes.add_row(str(lane.lane), lane.name, f"{lane.min:#04x}", f"{lane.max:#04x}", str(lane.distinct))
    out.append(lanes)
    if len(shown) < len(result.lanes):
        out.append(Line(f"{len(result.lanes) - len(shown)} lanes hold one value throughout (not shown)"))
    return out


# --- coverage ----------------------------------------------------------------------------------------------

def render_coverage(result, judgement, limit: int = 20) -> list:
    out = [judgement_line(judgement)]
    if result.untouched_ranges:
        out.append(Line("untouched ranges [start, end):"))
        table = _table(("start", "right"), ("end", "right"), ("bytes", "right"))
        for start, end in result.untouched_ranges[:limit]:
            table.add_row(f"{start:#x}", f"{end:#x}", f"{end - start:,}")
        out.append(table)
        if result.ranges_total > min(limit, len(result.untouched_ranges)):
            out.append(Line(f"... and {result.ranges_total - min(limit, len(result.untouched_ranges)):,} more "
                            f"(--json lists up to {len(result.untouched_ranges):,})"))
    return out


# --- hexdump -----------------------------------------------------------------------------------------------

_PRINTABLE = bytes(c if 32 <= c < 127 else ord(".") for c in range(256))


def _ascii(data: bytes) -> str:
    return data.translate(_PRINTABLE).decode("ascii")


def render_hexdump(result) -> list:
    """Hex + ASCII by record (no verdict: hexdump shows, diff judges)."""
    two = result.path_b is not None
    layout = result.layout
    cols = ["", ("anchor", "right"), ("offset", "right"), "A" if two else "hex", "ascii"]
    if two:
        cols += ["B", "ascii", "differs"]
    if layout.has_values:
        cols.append("A values")
    rows, marks = [], [] if two else None
    values, rs, focus = layout.has_values, layout.record_size, result.focus
    for r in result.rows:
        mark = ">" if focus is not None and r.index == focus else ""
        row = [mark, str(r.index), f"{r.offset:#x}", r.a.hex(" "), _ascii(r.a)]
        if two:
            diff = r.differing
            b = r.b or b""
            row += [b.hex(" "), _ascii(b), ("lanes " + ",".join(map(str, diff))) if diff else ""]
            marks.append(diff)
        if values:
            row.append(_values(layout, r.a) if len(r.a) == rs else "")
        rows.append(row)
    out = [Line(f"{result.path_a}" + (f"  vs  {result.path_b}" if two else "")),
           *Listing(*cols, rows=rows, whole=RECORD_COLUMNS, marks=marks, marked=(3, 5)).parts()]
    if two:
        out.append(Line(f"{result.differing_rows} of {len(result.rows)} records shown differ"))
    return out
