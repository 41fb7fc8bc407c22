"""Two register traces lined up access by access (or two snapshots offset by offset) -> CsrComparison.

Sequences are aligned on the key (op, offset), where a POLL counts as a read, so a driver that reads
a register once lines up with libedgetpu polling it three times. Aligned pairs are then judged:
`width` (a 32-bit and a 64-bit access to one register), `value` (after `masks`), or match; what the
alignment leaves over is `only_a` (missing in B) or `only_b` (extra in B).

The alignment is Myers' O((N+M)·D) greedy diff (Myers 1986, "An O(ND) Difference Algorithm and Its
Variations") after stripping the common prefix and suffix, so two long traces that differ in a few
places cost little more than reading them. When a region differs in more than `MYERS_MAX_D` places,
it is cut at keys that occur exactly once on each side and in the same order (patience anchors) and
each piece is aligned again; a piece with no such anchors falls back to a greedy walk that skips to the
nearest next occurrence. difflib.SequenceMatcher is not used: it is quadratic on the repetitive
sequences register traces are (the same few queue and run-control offsets over and over).
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import NamedTuple, Sequence

from forensics.csr.parse import Access, Trace, format_value, read_trace
from forensics.csr.registers import UNKNOWN, RegisterTable, beagle_table, in_pcie_window

MYERS_MAX_D = 300
GREEDY_WINDOW = 16   # how far the fallback looks for a local repair
GREEDY_CONFIRM = 4   # accesses that must agree after it
KINDS = ("match", "value", "width", "only_a", "only_b")
MISMATCH_KINDS = KINDS[1:]


class CsrRow(NamedTuple):
    """One line of the aligned table. `a`/`b` is None on the side where the access is missing."""

    index: int
    kind: str            # one of KINDS
    a: Access | None
    b: Access | None
    masked: bool = False  # values differ only in masked bits (kind is then "match")

    @property
    def offset(self) -> int:
        return (self.a or self.b).offset

    @property
    def op(self) -> str:
        return (self.a or self.b).op


# ---------------------------------------------------------------------------------------------------
# Alignment over integer keys


def _myers(a: Sequence[int], b: Sequence[int], dmax: int):
    """Edit script [(i, j)] (None on the missing side) of a shortest edit, or None if it needs > dmax edits."""
    n, m = len(a), len(b)
    maxd = min(n + m, dmax)
    off = maxd + 1
    v = [0] * (2 * maxd + 3)
    history = []
    for d in range(maxd + 1):
        # v before step d, for diagonals -d-1..d+1: all the backtrack needs from this step.
        history.append(v[off - d - 1: off + d + 2])
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[off + k - 1] < v[off + k + 1]):
                x = v[off + k + 1]          # step down: b[y-1] is an insertion
            else:
                x = v[off + k - 1] + 1      # step right: a[x-1] is a deletion
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[off + k] = x
            if x >= n and y >= m:
                return _backtrack(history, n, m, d)
    return None


def _backtrack(history, n: int, m: int, depth: int):
    x, y = n, m
    rev = []
    for d in range(depth, 0, -1):
        hv = history[d]
        base = d + 1
        k = x - y
        if k == -d or (k != d and hv[k - 1 + base] < hv[k + 1 + base]):
            prev_k = k + 1
        else:
            prev_k = k - 1
        prev_x = hv[prev_k + base]
        prev_y = prev_x - prev_k
        while x > prev_x and y > prev_y:
            x -= 1
            y -= 1
            rev.append((x, y))
        if x == prev_x:
            rev.append((None, prev_y))
        else:
            rev.append((prev_x, None))
        x, y = prev_x, prev_y
    while x > 0 and y > 0:
        x -= 1
        y -= 1
        rev.append((x, y))
    rev.reverse()
    return rev


def _unique_anchors(a, alo, ahi, b, blo, bhi):
    """Keys occurring once in a[alo:ahi] and once in b[blo:bhi], kept in a longest increasing order."""
    count_a, count_b = {}, {}
    for i in range(alo, ahi):
        count_a[a[i]] = -1 if a[i] in count_a else i
    for j in range(blo, bhi):
        count_b[b[j]] = -1 if b[j] in count_b else j
    pairs = [(i, count_b[key]) for key, i in count_a.items()
             if i >= 0 and count_b.get(key, -1) >= 0]
    pairs.sort()
    # Longest increasing subsequence of the b positions (patience sorting), O(k log k).
    tails, tails_idx, prev = [], [], [-1] * len(pairs)
    for idx, (_, j) in enumerate(pairs):
        pos = bisect_left(tails, j)
        if pos == len(tails):
            tails.append(j)
            tails_idx.append(idx)
        else:
            tails[pos] = j
            tails_idx[pos] = idx
        prev[idx] = tails_idx[pos - 1] if pos else -1
    chain = []
    idx = tails_idx[-1] if tails_idx else -1
    while idx >= 0:
        chain.append(pairs[idx])
        idx = prev[idx]
    chain.reverse()
    return chain


def _greedy(a, alo, ahi, b, blo, bhi, out):
    """Fallback for wildly different regions: walk both; at a difference take the smallest substitution,
    deletion or insertion after which GREEDY_CONFIRM accesses agree, else skip to the nearer next occurrence.
    O((N+M)·GREEDY_WINDOW·GREEDY_CONFIRM); not minimal, but it re-synchronises after local damage."""
    pos_a, pos_b = {}, {}
    for i in range(alo, ahi):
        pos_a.setdefault(a[i], []).append(i)
    for j in range(blo, bhi):
        pos_b.setdefault(b[j], []).append(j)

    def next_at(positions, key, start):
        lst = positions.get(key)
        if not lst:
            return None
        k = bisect_left(lst, start)
        return lst[k] if k < len(lst) else None

    def agrees(i, j, n=GREEDY_CONFIRM):
        """a and b agree for n elements from (i, j) (or to the end of either)."""
        for k in range(n):
            if i + k >= ahi or j + k >= bhi:
                return True
            if a[i + k] != b[j + k]:
                return False
        return True

    i, j = alo, blo
    while i < ahi and j < bhi:
        if a[i] == b[j]:
            out.append((i, j))
            i += 1
            j += 1
            continue
        # The cheapest local repair that the following accesses confirm: s substituted, deleted or
        # inserted accesses, s = 1, 2, ... GREEDY_WINDOW.
        for s in range(1, GREEDY_WINDOW + 1):
            if i + s <= ahi and j + s <= bhi and agrees(i + s, j + s):
                out.extend((ii, None) for ii in range(i, i + s))
                out.extend((None, jj) for jj in range(j, j + s))
                i += s
                j += s
                break
            if i + s <= ahi and agrees(i + s, j):
                out.extend((ii, None) for ii in range(i, i + s))
                i += s
                break
            if j + s <= bhi and agrees(i, j + s):
                out.extend((None, jj) for jj in range(j, j + s))
                j += s
                break
        else:
            jb = next_at(pos_b, a[i], j)   # where a[i] shows up again in b
            ia = next_at(pos_a, b[j], i)   # where b[j] shows up again in a
            if jb is not None and (ia is None or jb - j <= ia - i):
                out.extend((None, jj) for jj in range(j, jb))
                j = jb
            elif ia is not None:
                out.extend((ii, None) for ii in range(i, ia))
                i = ia
            else:
                out.append((i, None))
                out.append((None, j))
                i += 1
                j += 1
    out.extend((ii, None) for ii in range(i, ahi))
    out.extend((None, jj) for jj in range(j, bhi))


def _align_range(a, alo, ahi, b, blo, bhi, out, methods, depth=0):
    while alo < ahi and blo < bhi and a[alo] == b[blo]:
        out.append((alo, blo))
        alo += 1
        blo += 1
    tail = []
    while alo < ahi and blo < bhi and a[ahi - 1] == b[bhi - 1]:
        ahi -= 1
        bhi -= 1
        tail.append((ahi, bhi))
    if alo == ahi or blo == bhi:
        out.extend((i, None) for i in range(alo, ahi))
        out.extend((None, j) for j in range(blo, bhi))
    else:
        script = _myers(a[alo:ahi], b[blo:bhi], MYERS_MAX_D)
        if script is not None:
            methods.add("myers")
            out.extend((None if i is None else i + alo, None if j is None else j + blo) for i, j in script)
        else:
            anchors = _unique_anchors(a, alo, ahi, b, blo, bhi) if depth < 32 else []
            if anchors:
                methods.add("anchored")
                pa, pb = alo, blo
                for ia, jb in anchors:
                    _align_range(a, pa, ia, b, pb, jb, out, methods, depth + 1)
                    out.append((ia, jb))
                    pa, pb = ia + 1, jb + 1
                _align_range(a, pa, ahi, b, pb, bhi, out, methods, depth + 1)
            else:
                methods.add("greedy")
                _greedy(a, alo, ahi, b, blo, bhi, out)
    out.extend(reversed(tail))


def align(a: Sequence, b: Sequence) -> tuple[list[tuple[int | None, int | None]], tuple[str, ...]]:
    """Align two key sequences: [(i, j)] with None on the side that lacks the element, and the methods used.

    Inside each run of edits the deletions (only in `a`) come first, then the insertions.
    """
    out: list = []
    methods: set = set()
    _align_range(a, 0, len(a), b, 0, len(b), out, methods)
    # Tidy each block of edits: all of A's leftovers, then B's, each in order.
    tidy, dels, ins = [], [], []
    for pair in out:
        if pair[0] is None:
            ins.append(pair)
        elif pair[1] is None:
            dels.append(pair)
        else:
            if dels or ins:
                tidy.extend(dels)
                tidy.extend(ins)
                dels, ins = [], []
            tidy.append(pair)
    tidy.extend(dels)
    tidy.extend(ins)
    return tidy, tuple(sorted(methods)) or ("identical",)


# ---------------------------------------------------------------------------------------------------
# Judging and the result object


def _judge(ea: Access, eb: Access, masks: dict) -> tuple[str, bool]:
    if ea.width is not None and eb.width is not None and ea.width != eb.width:
        return "width", False
    diff = ea.value ^ eb.value
    if not diff:
        return "match", False
    mask = masks.get(ea.offset)
    if mask is not None and not diff & ~mask:
        return "match", True
    return "value", False


def _norm(name: str) -> str:
    return "".join(c for c in name.lower() if c.isalnum())


@dataclass(frozen=True)
class CsrComparison:
    """Two register traces (or snapshots) compared; truthy when everything matched."""

    mode: str                       # "sequence" or "snapshot"
    trace_a: dict
    trace_b: dict
    rows: tuple[CsrRow, ...]
    include_reads: bool
    masks: dict                     # offset -> bits ignored
    counts: dict                    # kind -> rows
    masked: int
    accesses_a: int
    accesses_b: int
    registers: dict                 # offset -> {"name", "group", "known", "pcie_window", "usb_only"}
    label_notes: dict = field(default_factory=dict)   # offset -> "B names it X ..." (driver name disagrees)
    alignment: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def matched(self) -> int:
        return self.counts.get("match", 0)

    @property
    def passed(self) -> bool:
        return all(self.counts.get(kind, 0) == 0 for kind in MISMATCH_KINDS)

    def __bool__(self) -> bool:
        return self.passed

    @property
    def mismatches(self) -> tuple[CsrRow, ...]:
        return tuple(row for row in self.rows if row.kind != "match")

    def register(self, offset: int) -> dict:
        return self.registers[offset]

    def verdict(self) -> str:
        if self.passed:
            extra = f" ({self.masked} only in masked bits)" if self.masked else ""
            return f"PASSED | all {self.matched} accesses match{extra}"
        parts = [f"{self.counts[k]} {k}" for k in MISMATCH_KINDS if self.counts.get(k)]
        return f"FAILED | {self.matched} match, " + ", ".join(parts)

    def _row_dict(self, row: CsrRow) -> dict:
        reg = self.registers[row.offset]
        ea, eb = row.a, row.b
        out = {
            "index": row.index, "kind": row.kind, "op": row.op, "offset": f"0x{row.offset:x}",
            "name": reg["name"], "group": reg["group"],
            "a": format_value(ea.value, ea.width) if ea else None,
            "b": format_value(eb.value, eb.width) if eb else None,
            "width_a": ea.width if ea else None, "width_b": eb.width if eb else None,
            "line_a": ea.line if ea else None, "line_b": eb.line if eb else None,
        }
        if row.op == "POLL" or (ea and ea.count > 1) or (eb and eb.count > 1):
            out["count_a"] = ea.count if ea else None
            out["count_b"] = eb.count if eb else None
        notes = register_notes(reg)
        if row.offset in self.label_notes:
            notes.append(self.label_notes[row.offset])
        if notes:
            out["notes"] = notes
        return out

    def to_dict(self) -> dict:
        unknown = sorted(o for o, r in self.registers.items() if not r["known"])
        outside = sorted(o for o, r in self.registers.items() if not r["pcie_window"])
        return {
            "mode": self.mode,
            "verdict": "PASSED" if self.passed else "FAILED",
            "summary": self.verdict(),
            "a": self.trace_a,
            "b": self.trace_b,
            "reads_included": self.include_reads,
            "masks": {f"0x{o:x}": f"0x{m:x}" for o, m in sorted(self.masks.items())},
            "accesses_a": self.accesses_a,
            "accesses_b": self.accesses_b,
            "matched": self.matched,
            "masked": self.masked,
            "counts": {k: self.counts.get(k, 0) for k in KINDS},
            "mismatches": [self._row_dict(row) for row in self.rows if row.kind != "match"],
            "unknown_offsets": [f"0x{o:x}" for o in unknown],
            "outside_pcie_windows": [f"0x{o:x}" for o in outside],
            "label_notes": {f"0x{o:x}": note for o, note in sorted(self.label_notes.items())},
            "alignment": list(self.alignment),
            "notes": list(self.notes),
        }


def register_notes(reg: dict) -> list[str]:
    notes = []
    if not reg["known"]:
        notes.append("not named by libedgetpu")
    if reg["usb_only"]:
        notes.append("USB-only block")
    if not reg["pcie_window"]:
        notes.append("outside PCIe windows")
    return notes


def describe_offset(offset: int, table: RegisterTable) -> dict:
    reg = table.lookup(offset)
    return {
        "name": reg.name if reg else UNKNOWN,
        "group": reg.group if reg else "",
        "known": reg is not None,
        "width": reg.width if reg else None,
        "usb_only": bool(reg and reg.usb_only),
        "pcie_window": in_pcie_window(offset),
    }


def _snapshot_of(trace: Trace, include_reads: bool) -> tuple[dict, str | None]:
    """A snapshot as is; a trace reduced to the last value written (or read, with reads) per offset."""
    if trace.kind == "snapshot":
        return dict(trace.snapshot), None
    state = {}
    for access in trace.accesses:
        if access.op == "W" or include_reads:
            state[access.offset] = access
    note = f"{trace.path or 'trace'}: reduced to the last {'access' if include_reads else 'write'} per offset"
    return state, note


def _label_note(side: str, label: str, offset: int, table: RegisterTable) -> str | None:
    reg = table.lookup(offset)
    if reg is not None and _norm(label) == _norm(reg.name):
        return None
    elsewhere = [r for r in table.registers if _norm(r.name) == _norm(label)]
    if elsewhere:
        where = ", ".join(f"0x{r.offset:x}" for r in elsewhere)
        return f"{side} calls it {label}, which libedgetpu puts at {where}"
    if reg is not None:
        return f"{side} calls it {label}"
    return None


def compare_traces(a: Trace, b: Trace, *, include_reads: bool = False, masks: dict | None = None,
                   table: RegisterTable | None = None, snapshot: bool = False) -> CsrComparison:
    """Compare trace `a` (the reference, e.g. libedgetpu) with trace `b` (e.g. a driver)."""
    table = table or beagle_table()
    masks = dict(masks or {})
    notes: list[str] = []
    rows: list[CsrRow] = []
    counts = dict.fromkeys(KINDS, 0)
    masked = 0
    alignment: tuple[str, ...] = ()
    if snapshot or a.kind == "snapshot" or b.kind == "snapshot":
        mode = "snapshot"
        state_a, note_a = _snapshot_of(a, include_reads)
        state_b, note_b = _snapshot_of(b, include_reads)
        notes.extend(n for n in (note_a, note_b) if n)
        for index, offset in enumerate(sorted(set(state_a) | set(state_b))):
            ea = _as_access(state_a.get(offset), offset)
            eb = _as_access(state_b.get(offset), offset)
            if ea is None:
                kind, was_masked = "only_b", False
            elif eb is None:
                kind, was_masked = "only_a", False
            else:
                kind, was_masked = _judge(ea, eb, masks)
            counts[kind] += 1
            masked += was_masked
            rows.append(CsrRow(index, kind, ea, eb, was_masked))
        accesses_a, accesses_b = len(state_a), len(state_b)
    else:
        mode = "sequence"
        seq_a = [x for x in a.accesses if include_reads or x.op == "W"]
        seq_b = [x for x in b.accesses if include_reads or x.op == "W"]
        # Key: offset * 2 + is_read. A POLL and a single READ of one offset share a key.
        keys_a = [(x.offset << 1) | (x.op != "W") for x in seq_a]
        keys_b = [(x.offset << 1) | (x.op != "W") for x in seq_b]
        pairs, alignment = align(keys_a, keys_b)
        judge = _judge
        for index, (i, j) in enumerate(pairs):
            if i is None:
                rows.append(CsrRow(index, "only_b", None, seq_b[j]))
                counts["only_b"] += 1
            elif j is None:
                rows.append(CsrRow(index, "only_a", seq_a[i], None))
                counts["only_a"] += 1
            else:
                ea, eb = seq_a[i], seq_b[j]
                kind, was_masked = judge(ea, eb, masks)
                counts[kind] += 1
                masked += was_masked
                rows.append(CsrRow(index, kind, ea, eb, was_masked))
        accesses_a, accesses_b = len(seq_a), len(seq_b)
    offsets = {row.offset for row in rows}
    registers = {offset: describe_offset(offset, table) for offset in offsets}
    label_notes = {}
    seen_labels = set()
    for side, trace in (("A", a), ("B", b)):
        for access in trace.accesses:
            if access.label and (side, access.label, access.offset) not in seen_labels:
                seen_labels.add((side, access.label, access.offset))
                note = _label_note(side, access.label, access.offset, table)
                if note and access.offset in registers:
                    label_notes.setdefault(access.offset, note)
    for offset in masks:
        if offset not in registers:
            notes.append(f"mask for 0x{offset:x} matched no access")
    return CsrComparison(
        mode=mode, trace_a=a.to_dict(), trace_b=b.to_dict(), rows=tuple(rows), include_reads=include_reads,
        masks=masks, counts=counts, masked=masked, accesses_a=accesses_a, accesses_b=accesses_b,
        registers=registers, label_notes=label_notes, alignment=alignment, notes=tuple(notes),
    )


def _as_access(item, offset: int) -> Access | None:
    if item is None or isinstance(item, Access):
        return item
    return Access("SNAP", offset, item, None, 0, "snapshot")


def compare_files(path_a, path_b, *, include_reads: bool = False, masks: dict | None = None,
                  snapshot: bool = False, table: RegisterTable | None = None) -> CsrComparison:
    """Read two trace or snapshot files and compare them (the `forensics csr A B` library call)."""
    table = table or beagle_table()
    trace_a = read_trace(path_a, table)
    trace_b = read_trace(path_b, table)
    return compare_traces(trace_a, trace_b, include_reads=include_reads, masks=masks, table=table,
                          snapshot=snapshot)
