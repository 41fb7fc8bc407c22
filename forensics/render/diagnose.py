"""The diagnose report: one verdict line, the pair's sizes and CRCs, the named bug patterns with what each
explains, and what is left unexplained (where, how large, what it looks like)."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from forensics.render.style import verdict
from forensics.core.verdict import Verdict


def _summary(result) -> str:
    if result.size_a != result.size_b:
        sizes = f"A is {result.size_a:,} bytes, B {result.size_b:,}"
        return sizes if not result.bytes_differing else f"{sizes}; {result.bytes_differing:,} common bytes differ"
    return (f"{result.bytes_differing:,} bytes differ in {result.records_differing:,} of "
            f"{result.records_compared:,} {result.record_size}-byte records")


def _pct(x: float) -> str:
    p = 100 * x
    if 0 < p < 0.1:
        return "<0.1%"
    if 99.9 < p < 100:
        return ">99.9%"
    return f"{p:.1f}%".replace(".0%", "%")


def _headline(result) -> str:
    named = [f for f in result.findings if f.kind != "head_window"]
    counts: dict[str, int] = {}
    for f in named:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    kinds = ", ".join(kind if n == 1 else f"{n} {kind}s" for kind, n in counts.items())  # 2 shifts: two blocks
    verb = "explains" if len(named) == 1 else "explain"
    if result.verdict == Verdict.IDENTICAL:
        if getattr(result, "pad_only_bytes", 0):
            return "A and B are identical outside the pad lanes (pad lanes ignored, as diff ignores them)"
        return "A and B are byte-identical"
    if result.verdict == Verdict.WITHIN:
        unit = f"{result.dtype} element" if getattr(result, "dtype", None) else "byte"
        return f"A and B differ by at most {result.tolerance} LSB per {unit}"
    if result.verdict == Verdict.EXPLAINED:
        return f"{kinds} {verb} the differing bytes"
    if result.verdict == Verdict.PARTLY_EXPLAINED:
        return f"{kinds} {verb} {_pct(result.explained_fraction)} of the differing bytes"
    return f"no known bug pattern explains these {result.bytes_differing + abs(result.size_a - result.size_b):,} differing bytes"


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


def render_diagnose(result) -> list:
    """Renderables for `forensics diagnose`: verdict, pair line, findings table, residual / characterization."""
    out = [verdict(result.verdict, _headline(result))]
    pair = Text()
    if not result.identical and not getattr(result, "pad_only_bytes", 0):
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
            table.add_row(f.kind, "-" if f.kind == "head_window" else _pct(f.explains), Text(f.evidence), Text(f.hint))
        out.append(table)
    lines = Text()
    if result.residual:
        r = result.residual
        lines.append(f"residual: {r['bytes']:,} differing bytes ({_pct(r['fraction'])}) that no finding explains, "
                     f"{_where_text(r)}".rstrip(", ") + "\n")
    c = result.characterization
    if c and result.verdict == Verdict.UNEXPLAINED:
        if c.get("max_delta") is not None:
            lines.append(f"magnitude: at most {c['max_delta']} LSB; {c['bytes_off_by_one']:,} bytes differ by 1\n")
        lines.append(f"byte-value histogram distance {c['histogram_distance']:.3f}"
                     + ("" if c.get("pad_lanes_intact") is None else
                        f"; pad lanes {'intact' if c['pad_lanes_intact'] else 'differ'}") + "\n")
    if result.hint:
        lines.append(f"hint: {result.hint}\n")
    if len(lines):
        lines.rstrip()
        out.append(lines)
    return out


def render_bug_list(rows) -> Table:
    """`forensics simulate --bug list`: kind, parameters, what it does."""
    table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
    table.add_column("kind", style="bold", no_wrap=True)
    table.add_column("--bug", no_wrap=True)
    table.add_column("what B becomes")
    for kind, usage, text in rows:
        table.add_row(Text(kind), Text(usage), Text(text))
    return table


def render_simulated(result) -> list:
    """`forensics simulate ... -o B`: one line, `wrote PATH (N bytes)`."""
    return [Text(f"wrote {result.output} ({result.size_b:,} bytes)")]
