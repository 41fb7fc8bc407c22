"""head_window: the story's trap: the first bytes a hexdump shows are identical and uniform in both dumps while
later records differ. Said beside the findings (it explains no byte), never as the bug."""

from __future__ import annotations

from forensics.diagnose.kinds.base import Kind, n
from forensics.diagnose.kinds.base import shell_arg as _arg
from forensics.diagnose.region import record_of
from forensics.diagnose.result import Finding

DEFAULT_WINDOW = 256  # the first 256 bytes shown by a hexdump


def head_window(dump_a, dump_b, layout, scan, window: int) -> Finding | None:
    """The first `window` bytes are identical and uniform in both while later records differ (widely)."""
    rs, off = layout.record_size, layout.offset
    common = min(dump_a.size, dump_b.size)
    if scan.first is None and dump_a.size == dump_b.size:
        return None
    if off + window >= common and dump_a.size == dump_b.size:
        return None
    head_a, head_b = dump_a.read(off, window), dump_b.read(off, window)
    if len(head_a) < window or head_a != head_b:
        return None
    unit = rs if rs <= window // 2 else 1
    whole = window // unit * unit
    first = head_a[:unit]
    if head_a[:whole] != first * (whole // unit):
        return None
    later = max(1, scan.records - whole // rs) if rs <= window else max(1, scan.records)
    missing = abs(dump_a.size - dump_b.size) // rs
    differing = scan.records_differing + missing
    if differing < 0.05 * later:
        return None
    where = f"first at 0x{scan.first:x}, record {record_of(layout, scan.first)}" if scan.first is not None else \
        f"B ends at 0x{dump_b.size:x}"
    return Finding("head_window", (
        f"the first {window} bytes are identical in A and B and all `{first.hex(' ')}`, yet "
        f"{n(differing)} of {n(later)} later records differ ({where}): the head alone would call these "
        "buffers equal"),
        "judge every record, not the first bytes",
        {"window": window, "head_record": first.hex(" "), "records_differing_after": differing,
         "first_differing_offset": scan.first, "ratio": round(differing / later, 6)},
        # diff judges every record of the pair (`anchors B` would call a B holding only the head uniform)
        command=f"forensics diff {_arg(dump_a.path)} {_arg(dump_b.path)}")


KIND = Kind("head_window", rank=15, display=15)
