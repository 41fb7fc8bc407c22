"""Text for the driver-side evidence commands: import, fingerprint (the driver's own log style), verify."""

from __future__ import annotations

from rich.text import Text

from forensics.render.line import VERDICT_STYLES, judgement_line
from forensics.render.style import table as _table


def render_import(result) -> list:
    return [Text(f"{result.source}: {result.text.description}, {result.text.lines:,} lines -> "
                 f"{len(result.text.data):,} bytes"),
            Text(f"wrote {result.output} ({len(result.text.data):,} bytes)")]


def fingerprint_lines(fp) -> list[str]:
    """What a driver logs for this buffer, line by line: per-page first8 / last8, the xor-fold, size, CRC32,
    HEAD / MID / TAIL, then the one-line [FP] form."""
    label = f"[{fp.tag.upper()}-CHK]"
    lines = []
    last = len(fp.pages) - 1
    for page in fp.pages:
        mark = " (last)" if page.index == last and last > 0 else ""
        lines.append(f"{label} page[{page.index}]{mark} first8={page.first8.hex(' ')}  "
                     f"last8(@0x{page.last8_offset:x})={page.last8.hex(' ')}")
    lines.append(f"{label} xor-fold = 0x{fp.xor64:016X} over {fp.size} bytes ({len(fp.pages)} pages)")
    lines.append(f"{label} size={fp.size} CRC32=0x{fp.crc32:08x}")
    lines.append(f"{label} HEAD@0x0={fp.head.hex(' ')}")
    lines.append(f"{label} MID@0x{fp.mid_offset:x}={fp.mid.hex(' ')}")
    lines.append(f"{label} TAIL@0x{fp.tail_offset:x}={fp.tail.hex(' ')}")
    lines.append(fp.fp_line())
    return lines


def render_fingerprint(fp) -> list[str]:
    """Plain lines (never wrapped: a driver's log lines are compared with them character by character)."""
    out = []
    if fp.source.get("source_format", "binary") not in ("binary", "npy") or fp.source.get("slice"):
        note = fp.source.get("source_format", "binary")
        if fp.source.get("slice"):
            s = fp.source["slice"]
            note += f", slice 0x{s['offset']:x} + {s['length']:,} bytes"
        out.append(f"# {fp.path}: {note}")
    out.extend(fingerprint_lines(fp))
    return out


# Above this many checks the table holds only the values that do not match (a log of 20,000 [FP] lines is
# 120,000 checks: a rich table takes ~0.4 ms a row to lay out); --json lists every one.
TABLE_ROWS = 1000


def render_verify(report, judgement) -> list:
    out = []
    for source in report.sources:
        if source.get("source_format", "binary") not in ("binary", "npy") or source.get("slice"):
            out.append(Text(f"note: {source['path']} is {source['source_format']}"
                            + (f", slice 0x{source['slice']['offset']:x} + {source['slice']['length']:,} bytes"
                               if source.get("slice") else "")))
    if report.non_ascii_lines:
        out.append(Text(f"note: {report.log}: {report.non_ascii_lines:,} lines held non-ASCII text (a code page's), "
                        "read for their ASCII"))
    checks = report.checks
    hidden = 0
    if len(checks) > TABLE_ROWS:
        shown = [c for c in checks if not c.match][:TABLE_ROWS]
        hidden = len(checks) - len(shown)
        checks = shown
    table = _table(("line", "right"), "buffer", "what", "expected", "found", "")
    for c in checks:
        status = Text(c.verdict, style=VERDICT_STYLES[c.verdict])  # the check's own verdict
        found = c.found if not c.match or c.past_end else "(same)"
        table.add_row(str(c.line), c.tag or "-", c.label, c.expected, found, status)
    if checks:
        out.append(table)
    if hidden:
        bad = sum(not c.match for c in report.checks)
        shown = f"the first {len(checks):,} that do not match are" if bad > len(checks) else \
            "all that do not match are" if checks else "they all match"
        out.append(Text(f"{hidden:,} of {len(report.checks):,} checks not shown: {shown} (--json lists every check)"))
    if report.unassigned:
        out.append(Text(f"not checked (no file for these buffers): {', '.join(report.unassigned)}; "
                        f"give --buffer TAG=FILE"))
    out.append(judgement_line(judgement))  # the report's (buffer.fingerprint.judge_verify), as it is
    return out
