"""The diagnose report: one verdict line, the pair's sizes and CRCs, the named bug patterns with what each
explains, and what is left unexplained (where, how large, what it looks like)."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from forensics.diagnose.result import percent as _pct
from forensics.render.line import Paste, judgement_line


def command_line(command: str) -> Paste:
    """A suggested command as the shell takes it, whole, alone on its line at any width (forensics.render.line.
    Paste), indented by two spaces, which the shell ignores when it is pasted (a line that starts with
    `forensics ` or `$ forensics ` reads as a command a docs page shows)."""
    return Paste(f"  {command}")


def _summary(result) -> str:
    pad = ""
    if result.pad_bytes_differing:
        lanes = ",".join(map(str, result.pad_lanes))
        pad = f"; {result.pad_bytes_differing:,} more in pad lanes {lanes} (ignored, as diff)"
    if result.size_a != result.size_b:
        sizes = f"A is {result.size_a:,} bytes, B {result.size_b:,}"
        return (sizes if not result.bytes_differing else f"{sizes}; {result.bytes_differing:,} common bytes differ") + pad
    return (f"{result.bytes_differing:,} bytes differ in {result.records_differing:,} of "
            f"{result.records_compared:,} {result.record_size}-byte records{pad}")


def _where_text(where: dict) -> str:
    ranges = ", ".join(f"0x{s:x}-0x{e:x}" for s, e in where.get("ranges", [])[:4])
    more = where.get("range_count", 0) - min(4, len(where.get("ranges", [])))
    if more > 0:
        ranges += f" and {more:,} more"
    text = f"at {ranges}" if ranges else ""
    if where.get("records"):
        text += f"; records {where['records']}"
    if where.get("lanes"):
        text += f"; lanes {where['lanes']} of {where['record_size']}-byte records"
    return text


def render_diagnose(result, judgement) -> list:
    """Renderables for `forensics diagnose`: the judgement's verdict line, the pair, the findings table (each
    finding's command whole on its own line under it), residual / characterization, the hint and its command."""
    out = [judgement_line(judgement)]
    pair = Text()
    if not result.identical and not result.pad_only_bytes:
        pair.append(_summary(result) + "\n")
    pair.append(f"A {result.path_a}  {result.size_a:,} bytes  CRC32 0x{result.crc32_a:08x}\n")
    pair.append(f"B {result.path_b}  {result.size_b:,} bytes  CRC32 0x{result.crc32_b:08x}")
    if result.previous:
        pair.append(f"\nprevious {result.previous}")
    out.append(pair)
    if result.findings:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
        table.add_column("finding", style="bold", no_wrap=True)
        table.add_column("explains", justify="right", no_wrap=True)
        table.add_column("evidence", ratio=3)
        table.add_column("what to do", ratio=2)
        for f in result.findings:
            shown = "-" if f.kind == "head_window" else _pct(f.explains)
            table.add_row(f.kind, shown, Text(f.evidence), Text(f.hint + (" (the command below)" if f.command else "")))
        out.append(table)
        out += [command_line(f.command) for f in result.findings if f.command]
    lines = Text()
    if result.residual:
        r = result.residual
        lines.append(f"residual: {r['bytes']:,} differing bytes ({_pct(r['fraction'])}) that no finding explains, "
                     f"{_where_text(r)}".rstrip(", ") + "\n")
    c = result.characterization
    if c and not result.named:  # nothing named: what the differences look like
        if c.get("max_delta") is not None:
            lines.append(f"magnitude: at most {c['max_delta']} LSB; {c['bytes_off_by_one']:,} bytes differ by 1\n")
        lines.append(f"byte-value histogram distance {c['histogram_distance']:.3f}"
                     + ("" if c.get("pad_lanes_intact") is None else
                        f"; pad lanes {'intact' if c['pad_lanes_intact'] else 'differ'}") + "\n")
    if result.hint:
        lines.append(f"hint: {result.hint}" + (":" if result.command else "") + "\n")
    if len(lines):
        lines.rstrip()
        out.append(lines)
    if result.command:
        out.append(command_line(result.command))
    return out


def render_bug_list(rows) -> Table:
    """`forensics simulate --bug list`: each kind, its `--bug` spelling on a line of its own (a spelling is never
    broken), what B becomes folded under it (a listing folds at any width, never cut)."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
    table.add_column("kind", style="bold", no_wrap=True)
    table.add_column("--bug KIND[:PARAMS] / what B becomes", overflow="fold")
    for kind, usage, text in rows:
        table.add_row(Text(kind), Text.assemble(Text(usage, style="cyan"), "\n", Text(text)))
    return table


def render_simulated(result) -> list:
    """`forensics simulate ... -o B`: one line, `wrote PATH (N bytes)`."""
    return [Text(f"wrote {result.output} ({result.size_b:,} bytes)")]
