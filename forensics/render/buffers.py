"""Tables and verdict lines for the buffer commands: crc, diff, anchors, coverage, hexdump."""

from __future__ import annotations

from rich.text import Text

from forensics.compare.crc import format_crc
from forensics.render.style import RowsTable
from forensics.render.style import table as _table
from forensics.render.style import verdict
from forensics.core.verdict import Verdict


def _num(value: float) -> str:
    """Compact but exact enough to recognise: 0.99609375 -> 0.996094, 128 -> 128."""
    if isinstance(value, int):
        return str(value)
    return f"{value:.4g}"


WIDE = 16  # records longer than this (e.g. 91 COCO classes + pad) are summarised, not spelled out lane by lane
SHOW_CHANGES = 6


def _hex(record: bytes) -> str:
    if len(record) <= WIDE:
        return record.hex(" ")
    return record[:8].hex(" ") + f" ... ({len(record)} bytes)"


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

def render_crc(report) -> list:
    out = []
    table = _table("file", ("size", "right"), "CRC32")
    if report.compared:
        table.add_column("vs first")
    for i, f in enumerate(report.files):
        row = [f.path, f"{f.size:,}", format_crc(f.crc32)]
        if report.compared:
            row.append("-" if i == 0 else Verdict.of(report.matches[i - 1]))
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
        out.append(Text(line))
    if report.expect is not None:
        wrong = [f for f, ok in zip(report.files, report.expect_matches) if not ok]
        if wrong:
            out.append(verdict(Verdict.DIFFER, "; ".join(f"{f.path}: CRC32 {format_crc(f.crc32)}, expected "
                                                   f"{format_crc(report.expect)}" for f in wrong)))
        else:
            out.append(verdict(Verdict.MATCH, f"CRC32 {format_crc(report.expect)} as expected"
                                        + (f" ({report.files[0].path})" if len(report.files) == 1 else
                                           f" in all {len(report.files)} files")))
    if report.compared:
        n = len(report.files)
        if all(report.matches):
            first = report.files[0]
            out.append(verdict(Verdict.MATCH, f"{n} files, {first.size:,} bytes each, CRC32 {format_crc(first.crc32)}"))
        else:
            differing = [f.path for f, same in zip(report.files[1:], report.matches) if not same]
            out.append(verdict(Verdict.DIFFER, f"{len(differing)} of {n - 1} files differ from {report.files[0].path}: "
                                         + ", ".join(differing)))
    return out


# --- diff --------------------------------------------------------------------------------------------------

def _configured(result) -> str:
    parts = []
    if result.layout.pad_lanes:
        parts.append("pad lanes " + ",".join(map(str, result.layout.pad_lanes)) + " ignored")
    policy = getattr(result, "policy", None)
    if policy is not None and not policy.exact:
        parts.append(f"tolerance {policy.describe()}")
    elif result.tolerance:
        parts.append(f"tolerance {result.tolerance} LSB")
    return "; ".join(parts)


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
    worst = stats.worst or {}
    at = ""
    if "anchor" in worst:
        at = f" at anchor {worst['anchor']} lane {worst['lane']}"
    elif "class" in worst:
        at = f" at class {worst['class']}" + (f" ({worst['label']})" if worst.get("label") else "")
    elif "record" in worst:
        at = f" at record {worst['record']} lane {worst['lane']}"
    elif "y" in worst:
        at = f" at y={worst['y']} x={worst['x']} z={worst['z']}"
    elif worst:
        at = f" at element {worst['index']}"
    parts = [f"max {_stat(stats.max_abs, stats.max_abs_lsb if lsb else None)}{at}",
             f"mean {_stat(stats.mean_abs)}"]
    more = [f"median {_stat(stats.median_abs)}", f"p99 {_stat(stats.p99_abs, stats.p99_abs_lsb if lsb else None)}"]
    if stats.max_rel is not None:
        more.append(f"max rel {_num(stats.max_rel)}")
    more.append(f"cosine {'-' if stats.cosine is None else f'{stats.cosine:.6f}'}")
    sqnr = stats.sqnr_db
    more.append(f"SQNR {'inf' if sqnr == float('inf') else ('-inf' if sqnr == -float('inf') else f'{sqnr:.2f}')} dB")
    if stats.nan or stats.inf:
        more.append(f"NaN {stats.nan}, Inf {stats.inf} ({stats.nonfinite_mismatch} do not match)")
    line = f"error{where}: " + "; ".join(parts)
    atol = "none (non-finite values differ)" if stats.min_atol is None else _stat(
        stats.min_atol, stats.min_atol_lsb if lsb else None)
    if stats.integer and not lsb and stats.min_atol is not None:
        atol += " LSB"
    out = [Text(line), Text("  " + "; ".join(more)), Text(f"  smallest atol that passes: {atol}")]
    if stats.histogram:
        from forensics.render.errorplot import terminal_histogram, unicode_ok

        if unicode is None:  # the block characters only where standard output can encode them
            import sys

            unicode = unicode_ok(sys.stdout)
        out.extend(Text(t) for t in terminal_histogram(*stats.histogram, unicode=unicode))
    return out


def _sizes_note(result, fits=()) -> str | None:
    """What a size difference means. A `--length` hint only where the shorter side is the whole tensor the
    model describes: a slice must never drop bytes one side lacks (a truncated B would then MATCH)."""
    if result.sizes_equal:
        return None
    common, extra = min(result.size_a, result.size_b), abs(result.size_a - result.size_b)
    shorter, longer = ("B", "A") if result.size_b < result.size_a else ("A", "B")
    prefix_equal = not result.bytes_differing and not result.trailing_differ
    fit = (fits[0] if shorter == "A" else fits[1]) if fits else None
    if fit is not None and not fit.head_window and fit.full_size == common:
        if prefix_equal:
            return (f"the first {common:,} bytes (the whole {fit.tensor or fit.role} tensor) match; {longer} has "
                    f"{extra:,} more past the tensor (a page-rounded DMA allocation?): compare the tensor's bytes "
                    f"only with --length {common}")
        return f"{longer} has {extra:,} bytes past the whole {fit.tensor or fit.role} tensor ({common:,} bytes)"
    if fit is not None and fit.head_window:
        return f"{shorter} is truncated: {common:,} of {longer}'s {max(result.size_a, result.size_b):,} bytes"
    if not prefix_equal:
        return None
    if shorter == "B":
        return f"B is truncated: it holds the first {common:,} of A's {result.size_a:,} bytes, and they match A's"
    return (f"A holds the first {common:,} of B's {result.size_b:,} bytes, and they match: A is truncated, or B is "
            f"a larger allocation holding A at its start (--model or --deps say which: they know the tensor's size)")


def render_diff(result, geometry=None, *, unicode: bool | None = None, classes: bool = False, fits=()) -> list:
    """`classes`: the dumps are a classifier's score vector (one record whose lanes are classes); `fits`: the
    dumps' TensorFit (A's, B's) when --model / --deps say which tensor they hold."""
    rs = result.layout.record_size
    if result.verdict is Verdict.MATCH and result.bytes_identical:
        return [verdict(Verdict.MATCH, f"{result.size_a:,} bytes, CRC32 {format_crc(result.crc32_a)}, "
                                 f"{result.records_compared:,} records of {rs} bytes")]
    out = []
    if result.verdict is Verdict.WITHIN:
        stats = result.stats
        what = (f"{stats.differing:,} of {stats.count:,} values differ" if stats is not None else
                "data bytes differ")
        out.append(verdict(Verdict.WITHIN, f"{what}, within {result.policy.describe()}"
                                               + ("" if stats is not None else " (statistics left out)")))
    elif result.verdict is Verdict.MATCH:
        out.append(verdict(Verdict.MATCH, f"as configured ({_configured(result) or 'data lanes'}): "
                                    f"{result.records_compared:,} records of {rs} bytes match; the bytes themselves "
                                    "differ"))
    else:
        what = []
        if result.records_differing and classes:
            stats = result.stats
            if stats is not None:  # in elements, whatever their width
                what.append(f"{stats.differing:,} of {stats.count:,} class scores differ")
            else:
                data = rs - len(result.layout.pad_lanes)
                what.append(f"{sum(1 for n in result.lane_differences if n):,} of {data:,} class score bytes "
                            "differ")
        elif result.records_differing:
            what.append(f"{result.records_differing:,} of {result.records_compared:,} records differ "
                        f"({rs} bytes per record)")
        if not result.sizes_equal:
            note = _sizes_note(result, fits)
            if note is not None and "truncated" in note:
                what.append(note.split(":")[0])  # `B is truncated`: the verdict; the note below says how much
            what.append(f"sizes differ: {result.size_a:,} vs {result.size_b:,} bytes")
        if result.trailing_differ:
            what.append(f"the {result.trailing_bytes} trailing bytes differ")
        out.append(verdict(Verdict.DIFFER, "; ".join(what) or "files differ"))
    files = _table("", "file", ("size", "right"), "CRC32")
    files.add_row("A", result.path_a, f"{result.size_a:,}", format_crc(result.crc32_a))
    files.add_row("B", result.path_b, f"{result.size_b:,}", format_crc(result.crc32_b))
    out.append(files)
    facts = [f"bytes differing: {result.bytes_differing:,}"]
    if result.first_differing_offset is not None:
        facts.append(f"first differing byte: {result.first_differing_offset:#x} ({result.first_differing_offset:,})")
    if result.region_start:
        facts.append(f"compared from offset {result.region_start:#x}")
    if _configured(result):
        facts.append(_configured(result))
    if result.trailing_bytes:
        facts.append(f"{result.trailing_bytes} trailing bytes after the last whole record")
    out.append(Text("   ".join(facts)))
    note = _sizes_note(result, fits)
    if note is not None:
        out.append(Text(note))
    out.extend(stats_lines(result.stats, unicode=unicode))
    if result.records_differing:
        wide = rs > WIDE
        if result.layout.element is None:  # byte lanes; of float32 or int16 elements they say nothing
            lanes = _table(("lane", "right"), "name", ("records differing", "right"), ("max |delta|", "right"),
                           title="lanes")
            hidden = 0
            for lane, (name, n, d) in enumerate(zip(result.layout.field_names, result.lane_differences,
                                                    result.lane_max_delta)):
                if wide and n == 0:
                    hidden += 1
                    continue
                lanes.add_row(str(lane), name, f"{n:,}", str(d))
            out.append(lanes)
            if hidden:
                out.append(Text(f"{hidden} lanes without differences not shown"))
        quant = result.layout.has_values and not wide
        cols = [("anchor", "right")] + (["where", "prior box"] if geometry is not None else [])
        cols += [("offset", "right")] + (["differing lanes: A -> B"] if wide else ["A", "B", "XOR"])
        if quant:
            cols += ["A values", "B values", "delta"]
        table = _table(*cols, title="differing records")
        for r in result.records:
            row = [str(r.index)] + (_where(geometry, r.index) if geometry is not None else [])
            row.append(f"{r.offset:#x}")
            if wide:
                row.append(_changes(result.layout, r.a, r.b))
            else:
                row += [r.a.hex(" "), r.b.hex(" "), r.xor.hex(" ")]
            if quant:
                va, vb = result.layout.values(r.a), result.layout.values(r.b)
                deltas = " ".join(_num(y - x) for lane, (x, y) in enumerate(zip(va, vb))
                                  if lane not in result.layout.pad_lanes)
                row += [_values(result.layout, r.a), _values(result.layout, r.b), deltas]
            table.add_row(*row)
        out.append(table)
        if result.records_truncated:
            more = result.records_differing - len(result.records)
            out.append(Text(f"... and {more:,} more (--all or --limit N to list them)"))
    return out


# --- anchors -----------------------------------------------------------------------------------------------

def _render_top_scores(result, geometry) -> list:
    """A buffer without a dominant record (real COCO scores): its highest-scoring anchors come first."""
    layout = result.layout
    dom = result.dominant
    head = Text()
    head.append(f"no dominant record: {result.distinct:,} distinct records in {result.records:,} anchors",
                style="bold")
    head.append(f" (the most frequent occurs {dom.count:,} time{'s' if dom.count != 1 else ''})")
    cols = [("anchor", "right")] + (["where", "prior box"] if geometry is not None else [])
    cols += ["class", ("score", "right")]
    table = _table(*cols, title="anchors with the highest non-background scores")
    for t in result.top_scores:
        row = [str(t.index)] + (_where(geometry, t.index) if geometry is not None else [])
        score = f"{t.q}" if t.value is None else f"{t.q} -> {_num(t.value)}"
        # the kernel's class id: the lane after the background lane is class 0
        background = 1 if len(layout.data_lanes) > 2 else 0
        table.add_row(*row, f"{t.lane - background} {t.name}", score)
    return [head, table]


def render_anchors(result, geometry=None, *, head_window: bool = False) -> list:
    """The anchors table; `head_window`: the dump holds only the head of its tensor, so no OK verdict."""
    layout = result.layout
    dom = result.dominant
    if not result.dominated and result.top_scores and result.nonuniform is None:
        return _render_top_scores(result, geometry) + _render_summary_tables(result)
    pct = 100.0 * dom.count / result.records
    head = Text()
    head.append(f"{dom.count:,} / {result.records:,} anchors match ", style="bold")
    head.append(_hex(dom.record), style="bold cyan")
    head.append(f" ({pct:.2f}%)")
    if layout.has_values:
        head.append(f"  values: {_values(layout, dom.record)}")
    out = [head]
    if result.tied:
        out.append(verdict(Verdict.WARNING, f"the mode is tied: {result.tied_total:,} other record(s) also occur "
                                      f"{dom.count:,} times ({', '.join(_hex(t.record) for t in result.tied[:4])}"
                                      f"{', ...' if result.tied_total > 4 else ''}); the first to occur is shown"))
    if result.records == 1:
        out.append(Text("a single record: nothing to compare it with"))
    elif result.uniform and head_window:
        out.append(Text(f"uniform: all {result.records:,} records are {_hex(dom.record)}, but they are the head "
                        f"of the tensor only"))
    elif result.uniform:
        out.append(verdict(Verdict.OK, f"uniform: all {result.records:,} records are {_hex(dom.record)}"))
    else:
        first_index = (result.first_nonuniform_offset - result.region.start) // layout.record_size
        n = result.nonuniform_total
        out.append(Text(f"{n:,} {'anchor departs' if n == 1 else 'anchors depart'} from it; the first is anchor {first_index:,} "
                        f"(byte {result.first_nonuniform_offset:#x})"))
    if result.head_window_trap:
        window_bytes = result.window_records * layout.record_size
        out.append(verdict(Verdict.WARNING, f"the first {window_bytes} bytes ({result.window_records} records) are all "
                                      f"{_hex(dom.record)}, but {result.nonuniform_total:,} later records are "
                                      f"not: do not judge this buffer by its head"))
    if result.region.trailing:
        out.append(Text(f"{result.region.trailing} trailing bytes after the last whole record were not analysed"))
    if result.nonuniform is not None:
        if result.nonuniform:
            cols = [("anchor", "right")] + (["where", "prior box"] if geometry is not None else [])
            cols += [("offset", "right"), "bytes"]
            names = layout.field_names
            wide = layout.record_size > WIDE
            if wide:
                cols.append("departs from the dominant record in")
            elif layout.element is not None:
                cols.append("values")
            elif layout.quantized:
                cols += [(n, "right") for lane, n in enumerate(names) if lane not in layout.pad_lanes]
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
            out.append(RowsTable(*cols, rows=rows, title="anchors that depart from the dominant record"))
            if result.nonuniform_truncated:
                more = result.nonuniform_total - len(result.nonuniform)
                out.append(Text(f"... and {more:,} more (--all or --limit N to list them)"))
    else:
        out += _render_summary_tables(result)
        if not result.uniform:
            out.append(Text("--nonuniform lists every anchor that departs from the dominant record"))
    return out


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
        out.append(Text(f"records of {layout.record_size // layout.element_dtype.itemsize} "
                        f"{layout.element_dtype.name} values"))
        return out
    lanes = _table(("lane", "right"), "name", ("min", "right"), ("max", "right"), ("distinct", "right"),
                   title="lanes")
    shown = [lane for lane in result.lanes if layout.record_size <= WIDE or lane.distinct > 1]
    for lane in shown:
        lanes.add_row(str(lane.lane), lane.name, f"{lane.min:#04x}", f"{lane.max:#04x}", str(lane.distinct))
    out.append(lanes)
    if len(shown) < len(result.lanes):
        out.append(Text(f"{len(result.lanes) - len(shown)} lanes hold one value throughout (not shown)"))
    return out


# --- coverage ----------------------------------------------------------------------------------------------

def render_coverage(result, limit: int = 20) -> list:
    pct = 100.0 * result.written_fraction
    summary = (f"{pct:.2f}% of {result.length:,} bytes written; {result.untouched_bytes:,} bytes untouched in "
               f"{result.ranges_total:,} range(s) (sentinel {result.sentinel.hex()}, runs of >= {result.min_run} bytes)")
    out = [verdict(Verdict.OK if result.fully_written else Verdict.WARNING, summary)]
    if result.untouched_ranges:
        out.append(Text("untouched ranges [start, end):"))
        table = _table(("start", "right"), ("end", "right"), ("bytes", "right"))
        for start, end in result.untouched_ranges[:limit]:
            table.add_row(f"{start:#x}", f"{end:#x}", f"{end - start:,}")
        out.append(table)
        if result.ranges_total > min(limit, len(result.untouched_ranges)):
            out.append(Text(f"... and {result.ranges_total - min(limit, len(result.untouched_ranges)):,} more "
                            f"(--json lists up to {len(result.untouched_ranges):,})"))
    return out


# --- hexdump -----------------------------------------------------------------------------------------------

def _ascii(data: bytes) -> str:
    return "".join(chr(c) if 32 <= c < 127 else "." for c in data)


def _hex_marked(data: bytes, marked: tuple[int, ...]) -> Text:
    text = Text()
    for i, byte in enumerate(data):
        if i:
            text.append(" ")
        text.append(f"{byte:02x}", style="bold red" if i in marked else None)
    return text


def render_hexdump(result) -> list:
    two = result.path_b is not None
    layout = result.layout
    cols = ["", ("anchor", "right"), ("offset", "right"), "A" if two else "hex", "ascii"]
    if two:
        cols += ["B", "ascii", "differs"]
    if layout.has_values:
        cols.append("A values")
    table = _table(*cols)
    for r in result.rows:
        diff = r.differing
        mark = ">" if result.focus is not None and r.index == result.focus else ""
        row = [mark, str(r.index), f"{r.offset:#x}", _hex_marked(r.a, diff), _ascii(r.a)]
        if two:
            row += [_hex_marked(r.b or b"", diff), _ascii(r.b or b""),
                    ("lanes " + ",".join(map(str, diff))) if diff else ""]
        if layout.has_values:
            row.append(_values(layout, r.a) if len(r.a) == layout.record_size else "")
        table.add_row(*row)
    out = [Text(f"{result.path_a}" + (f"  vs  {result.path_b}" if two else "")), table]
    if two:
        out.append(Text(f"{result.differing_rows} of {len(result.rows)} records shown differ"))
    return out
