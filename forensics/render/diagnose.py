"""The diagnose report: one verdict line, the pair's sizes and CRCs, and a table of named bug patterns."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

from forensics.render.style import verdict


def _summary(result) -> str:
    if result.identical:
        return "A and B are byte-identical"
    if result.size_a != result.size_b:
        sizes = f"A is {result.size_a:,} bytes, B {result.size_b:,}"
        return sizes if not result.bytes_differing else f"{sizes}; {result.bytes_differing:,} common bytes differ"
    return (f"{result.bytes_differing:,} bytes differ in {result.records_differing:,} of "
            f"{result.records_compared:,} {result.record_size}-byte records")


def render_diagnose(result) -> list:
    """Renderables for `forensics diagnose`: verdict, pair line, findings table (when there are findings)."""
    out = []
    if result.findings:
        kinds = ", ".join(result.kinds)
        n = len(result.findings)
        out.append(verdict("FOUND", f"{n} known bug pattern{'s' if n > 1 else ''}: {kinds}"))
    elif result.identical:
        out.append(verdict("CLEAN", "A and B are byte-identical"))
    else:
        out.append(verdict("CLEAN", "they differ, but match no known bug pattern"))
    pair = Text()
    if not result.identical:
        pair.append(_summary(result) + "\n")
    pair.append(f"A {result.path_a}  {result.size_a:,} bytes  CRC32 0x{result.crc32_a:08x}\n")
    pair.append(f"B {result.path_b}  {result.size_b:,} bytes  CRC32 0x{result.crc32_b:08x}")
    if result.previous:
        pair.append(f"\nprevious {result.previous}")
    out.append(pair)
    if result.findings:
        table = Table(box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False, expand=False)
        table.add_column("finding", style="bold", no_wrap=True)
        table.add_column("evidence", ratio=3)
        table.add_column("what to do", ratio=2)
        for f in result.findings:
            table.add_row(f.kind, f.evidence, f.hint)
        out.append(table)
    return out
