"""Text for the driver-side evidence commands: import, fingerprint (the driver's own log style), verify."""

from __future__ import annotations

from rich.text import Text

from forensics.render.style import table as _table
from forensics.render.style import verdict
from forensics.core.verdict import Verdict


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


def render_verify(report) -> list:
    out = []
    for source in report.sources:
        if source.get("source_format", "binary") not in ("binary", "npy") or source.get("slice"):
            out.append(Text(f"note: {source['path']} is {source['source_format']}"
                            + (f", slice 0x{source['slice']['offset']:x} + {source['slice']['length']:,} bytes"
                               if source.get("slice") else "")))
    table = _table(("line", "right"), "buffer", "what", "expected", "found", "")
    for c in report.checks:
        status = Text(Verdict.MATCH, style="green") if c.match else \
            Text(Verdict.TRUNCATED, style="bold yellow") if c.kind == "truncated" else \
            Text(Verdict.DIFFER, style="bold red")
        table.add_row(str(c.line), c.tag or "-", c.label, c.expected, c.found if not c.match else "(same)", status)
    out.append(table)
    cut = report.truncated
    n, bad = len(report.checks) - len(cut), sum(not c.match and c.kind != "truncated" for c in report.checks)
    if report.unassigned:
        out.append(Text(f"not checked (no file for these buffers): {', '.join(report.unassigned)}; "
                        f"give --buffer TAG=FILE"))
    files = len({c.file for c in report.checks})
    where = f"{files} file{'s' if files != 1 else ''}"
    lines = sorted({c.line for c in cut})
    cut_note = (f"; line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:5]))}"
                f"{' ...' if len(lines) > 5 else ''} cut short" if cut else "")
    if bad:
        first = next(c for c in report.checks if not c.match and c.kind != "truncated")
        out.append(verdict(Verdict.DIFFER, f"{bad} of {n} logged values differ from {where}; first: line {first.line} "
                                     f"{first.tag or ''} {first.label}".replace("  ", " ") + cut_note))
    elif cut:
        first = cut[0]
        more = f"; {len(cut) - 1} more cut short" if len(cut) > 1 else ""
        out.append(verdict(Verdict.TRUNCATED, f"line {first.line} ({first.tag or 'untagged'}): {first.label} "
                                        f"{first.found}; what it would have logged is not checked ({n} whole "
                                        f"values match {where}){more}"))
    else:
        out.append(verdict(Verdict.MATCH, f"all {n} logged values match {where}"))
    return out
