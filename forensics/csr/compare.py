"""Two register traces lined up access by access (or two snapshots offset by offset) -> CsrComparison.

Sequences are aligned on the key (op, offset), where a POLL counts as a read, so a driver that reads
a register once lines up with libedgetpu polling it three times. Aligned pairs are then judged:
`width` (a 32-bit and a 64-bit access to one register), `value` (after `masks`), or match; what the
alignment leaves over is `only_a` (missing in B) or `only_b` (extra in B).

A driver's register dumps (`[CSR@tag]` lines without an R/W word: values it read, forensics.csr.parse) are
compared by offset, each dump (one tag, one inference) on its own, with the value the other side last read
or wrote there (a trace's last access, a snapshot's value, the same tag's dump): `value` where they differ,
`unchecked` where the other side never touched the register (not a mismatch: a dump reads registers
libedgetpu may never touch). A dump read with 32 bits (`0x%08x`, apex_read_register_32) of a 64-bit register
is compared in those 32 bits.

The alignment itself (Myers' diff over integer keys, with its fallbacks) is forensics.csr.align. The verdict,
its reasons and its one-line message are made once, by judge_comparison.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property, partial
from itertools import compress, count, repeat
from operator import eq, itemgetter, lshift, ne, or_
from typing import NamedTuple

from forensics.csr.align import align_parts
from forensics.csr.parse import Access, GuessedWidth, Trace, format_value, gc_paused, read_trace
from forensics.csr.registers import UNKNOWN, RegisterTable, beagle_table, in_pcie_window
from forensics.core.errors import InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict

KINDS = ("match", "value", "width", "only_a", "only_b")
MISMATCH_KINDS = KINDS[1:]
DUMP_KINDS = ("match", "value", "unchecked")  # a register dump's rows (never a mismatch: unchecked)
LOW32 = 0xFFFFFFFF

_OP, _OFFSET, _VALUE_WIDTH, _LABEL = itemgetter(0), itemgetter(1), itemgetter(2, 3), itemgetter(7)
# Stands in for the missing access of an only_a / only_b row while rows are judged in bulk: its
# (value, width) equals no real access's.
_GAP = Access("", -1, float("nan"), -1, 0, "")


class CsrRow(NamedTuple):
    """One line of the aligned table. `a`/`b` is None on the side where the access is missing."""

    index: int
    kind: str            # one of KINDS, or of DUMP_KINDS
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
# Judging and the result object


def _judge(ea: Access, eb: Access, masks: dict, table: RegisterTable | None = None) -> tuple[str, bool]:
    if ea.width is not None and eb.width is not None and ea.width != eb.width:
        if not _widths_agree(ea, eb, table):
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


_new_row = partial(tuple.__new__, CsrRow)


@dataclass(frozen=True)
class CsrComparison:
    """Two register traces (or snapshots) compared; truthy when everything matched.

    Rows are kept as two columns (`side_a`, `side_b`: the access of each row on each side, _GAP where
    missing) and `judged` (row index -> (kind, masked) for every row that is not a plain match), so two
    100,000-access traces that agree cost no row objects; `rows` builds all of them when asked.
    """

    mode: str                       # "sequence" or "snapshot"
    trace_a: dict
    trace_b: dict
    side_a: list = field(repr=False)
    side_b: list = field(repr=False)
    judged: dict = field(repr=False)
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
    # dumps compared by offset (mode "dump"): each row's dump (its tag, `tag#2` for a later inference's), the
    # rows compared in the 32 bits the dump read of a 64-bit register, and the dumps on one side only
    row_dumps: list = field(default_factory=list, repr=False)
    low_bits: frozenset = frozenset()
    dump_side: str | None = None      # "a", "b" or "both": which side holds the dumps
    unpaired_dumps: tuple[str, ...] = ()
    untouched: int = 0                # offsets the reference side accessed that no dump reads

    @property
    def matched(self) -> int:
        return self.counts.get("match", 0)

    @property
    def passed(self) -> bool:
        return all(self.counts.get(kind, 0) == 0 for kind in MISMATCH_KINDS)

    def __bool__(self) -> bool:
        return self.passed

    @property
    def row_count(self) -> int:
        return len(self.side_a)

    def _row(self, index: int) -> CsrRow:
        kind, masked = self.judged.get(index, ("match", False))
        ea, eb = self.side_a[index], self.side_b[index]
        return CsrRow(index, kind, None if ea is _GAP else ea, None if eb is _GAP else eb, masked)

    @cached_property
    def rows(self) -> tuple[CsrRow, ...]:
        """Every row of the aligned table, in order."""
        n = len(self.side_a)
        kinds, masked = ["match"] * n, [False] * n
        for index, (kind, was_masked) in self.judged.items():
            kinds[index], masked[index] = kind, was_masked
        side_a = [None if x is _GAP else x for x in self.side_a]
        side_b = [None if x is _GAP else x for x in self.side_b]
        with gc_paused():
            return tuple(map(_new_row, zip(range(n), kinds, side_a, side_b, masked)))

    @property
    def differing(self) -> int:
        """How many rows are a mismatch (not a match, nor a dump's unchecked register)."""
        return sum(self.counts.get(kind, 0) for kind in MISMATCH_KINDS)

    def mismatch_rows(self, limit: int | None = None) -> tuple[CsrRow, ...]:
        """The rows that are a mismatch, in order, the first `limit` of them (without building the others)."""
        indices = sorted(index for index, (kind, _) in self.judged.items() if kind in MISMATCH_KINDS)
        return tuple(map(self._row, indices[:limit]))

    @cached_property
    def mismatches(self) -> tuple[CsrRow, ...]:
        """The rows that are not a match, in order (without building the matching ones)."""
        return self.mismatch_rows()

    def register(self, offset: int) -> dict:
        return self.registers[offset]

    @cached_property
    def judgement(self) -> Judgement:
        """The comparison's one verdict, reasons and message (judge_comparison)."""
        return judge_comparison(self)

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict

    def summary(self) -> str:
        """`FAILED | 14 accesses in A, 13 in B: 12 match, 1 value, 1 only_a`: the verdict line."""
        return self.judgement.line

    def dump_names(self) -> list[str]:
        """The dumps compared (mode "dump"), in order."""
        return list(dict.fromkeys(self.row_dumps))

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
        if self.row_dumps:
            out["tag"] = self.row_dumps[row.index]
            out["op_a"], out["op_b"] = (ea.op if ea else None), (eb.op if eb else None)
            if row.index in self.low_bits:
                out["compared_bits"] = 32
        return out

    def match_dicts(self):
        """The matching rows as the JSON document's dicts (a row matching only in masked bits says so: "masked"),
        one at a time, in order: what a table of every row shows beyond the mismatches and unchecked rows."""
        for row in self.rows:
            if row.kind == "match":
                out = self._row_dict(row)
                if row.masked:
                    out["masked"] = True
                yield out

    def mismatch_dicts(self):
        """The mismatch rows as the JSON document's dicts, one at a time, in order (never all at once: two traces
        that differ everywhere have 400,000 of them)."""
        for index in sorted(index for index, (kind, _) in self.judged.items() if kind in MISMATCH_KINDS):
            yield self._row_dict(self._row(index))

    # Kept by hand (not forensics.core.serial): the document is a summary of the rows (counts, mismatches streamed
    # by a writer, offsets as hex keys) with the judgement's keys spread in, not the rows themselves.
    def to_dict(self, *, mismatches: bool = True) -> dict:
        """The JSON document; `mismatches=False` leaves its "mismatches" list empty for a writer that streams
        mismatch_dicts() in its place."""
        unknown = sorted(o for o, r in self.registers.items() if not r["known"])
        outside = sorted(o for o, r in self.registers.items() if not r["pcie_window"])
        return {
            "mode": self.mode,
            **self.judgement.to_dict(),
            "summary": self.summary(),
            "a": self.trace_a,
            "b": self.trace_b,
            "reads_included": self.include_reads,
            "masks": {f"0x{o:x}": f"0x{m:x}" for o, m in sorted(self.masks.items())},
            "accesses_a": self.accesses_a,
            "accesses_b": self.accesses_b,
            "matched": self.matched,
            "masked": self.masked,
            "counts": {k: self.counts.get(k, 0) for k in (KINDS + DUMP_KINDS[2:] if self.mode == "dump" else KINDS)},
            "dumps": self.dump_names(),
            "dump_side": self.dump_side,
            "unpaired_dumps": list(self.unpaired_dumps),
            "untouched_offsets": self.untouched,
            "mismatches": list(self.mismatch_dicts()) if mismatches else [],
            "unchecked": [self._row_dict(self._row(index)) for index, (kind, _) in sorted(self.judged.items())
                          if kind == "unchecked"],
            "unknown_offsets": [f"0x{o:x}" for o in unknown],
            "outside_pcie_windows": [f"0x{o:x}" for o in outside],
            "label_notes": {f"0x{o:x}": note for o, note in sorted(self.label_notes.items())},
            "alignment": list(self.alignment),
            "notes": list(self.notes),
        }

    @classmethod
    def from_dict(cls, doc: dict) -> "CsrComparison":
        """The comparison a saved document stands for: its rows are the document's mismatches and unchecked rows,
        and the matching rows when the document lists them (`table.matches`, written beside a table of every
        row); a row the document does not list is a gap on both sides. What the rows do not say is not kept:
        an access's line format and the label its trace printed, a register's width."""
        counts = dict(doc["counts"])
        n = sum(counts.values())
        dumps = doc["mode"] == "dump"
        side_a, side_b, judged, low, tags = [_GAP] * n, [_GAP] * n, {}, set(), [None] * (n if dumps else 0)
        unknown = {int(o, 16) for o in doc["unknown_offsets"]}
        outside = {int(o, 16) for o in doc["outside_pcie_windows"]}
        registers: dict = {}
        for row in [*doc["mismatches"], *doc["unchecked"], *((doc.get("table") or {}).get("matches") or ())]:
            index, offset = int(row["index"]), int(row["offset"], 16)
            side_a[index], side_b[index] = _saved_access(row, "a", offset), _saved_access(row, "b", offset)
            if row["kind"] != "match" or row.get("masked"):
                judged[index] = (row["kind"], bool(row.get("masked")))
            if row.get("compared_bits") == 32:
                low.add(index)
            if dumps:
                tags[index] = row["tag"]
            registers.setdefault(offset, _saved_register(offset, row["name"], row["group"], unknown, outside,
                                                         "USB-only block" in row.get("notes", ())))
        for offset in sorted((unknown | outside) - set(registers)):
            registers[offset] = _saved_register(offset, UNKNOWN, "", unknown, outside, False)
        return cls(
            mode=doc["mode"], trace_a=doc["a"], trace_b=doc["b"], side_a=side_a, side_b=side_b, judged=judged,
            include_reads=doc["reads_included"], masks={int(o, 16): int(m, 16) for o, m in doc["masks"].items()},
            counts=counts, masked=doc["masked"], accesses_a=doc["accesses_a"], accesses_b=doc["accesses_b"],
            registers=registers, label_notes={int(o, 16): note for o, note in doc["label_notes"].items()},
            alignment=tuple(doc["alignment"]), notes=tuple(doc["notes"]), row_dumps=_filled(tags, doc["dumps"]),
            low_bits=frozenset(low), dump_side=doc["dump_side"], unpaired_dumps=tuple(doc["unpaired_dumps"]),
            untouched=doc["untouched_offsets"],
        )


def _saved_access(row: dict, side: str, offset: int) -> Access:
    """One side's access of a saved row (_GAP where the row has none): its op (a dump row's own per side),
    value, width, line and count."""
    if row[side] is None:
        return _GAP
    return Access(row.get(f"op_{side}") or row["op"], offset, int(row[side], 16), row[f"width_{side}"],
                  row[f"line_{side}"], "", row.get(f"count_{side}") or 1)


def _saved_register(offset: int, name: str, group: str, unknown: set, outside: set, usb_only: bool) -> dict:
    """describe_offset's entry as a saved document gives it (no width)."""
    return {"name": name, "group": group, "known": offset not in unknown, "width": None, "usb_only": usb_only,
            "pcie_window": offset not in outside}


def _filled(tags: list, names: list) -> list:
    """Each row's dump: the saved rows' tags, a row not saved taking the tag of the row before it (a dump's rows
    are consecutive) or the first dump's."""
    out, last = [], names[0] if names else None
    for tag in tags:
        last = tag if tag is not None else last
        out.append(last)
    return out


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


def _chosen(accesses, include_reads: bool) -> list:
    """The accesses a comparison uses: all of them with reads, else the writes."""
    if include_reads:
        return list(accesses)
    return list(compress(accesses, map(eq, map(_OP, accesses), repeat("W"))))


def _snapshot_of(trace: Trace, include_reads: bool) -> tuple[dict, str | None]:
    """A snapshot as is; a trace reduced to the last value written (or read, with reads) per offset."""
    if trace.kind == "snapshot":
        return dict(trace.snapshot), None
    chosen = _chosen(trace.accesses, include_reads)
    state = dict(zip(map(_OFFSET, chosen), chosen))
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


def _judge_rows(side_a: list, side_b: list, masks: dict, table: RegisterTable | None = None) -> dict:
    """Row index -> (kind, masked) for the rows that are not a plain match. Rows whose two accesses
    have equal (value, width) are matches and are passed over by C-level iteration; _judge sees the rest."""
    judged = {}
    for index in compress(count(), map(ne, map(_VALUE_WIDTH, side_a), map(_VALUE_WIDTH, side_b))):
        ea, eb = side_a[index], side_b[index]
        if ea is _GAP:
            judged[index] = ("only_b", False)
        elif eb is _GAP:
            judged[index] = ("only_a", False)
        else:
            kind, was_masked = _judge(ea, eb, masks, table)
            if kind != "match" or was_masked:
                judged[index] = (kind, was_masked)
    return judged


def compare_traces(a: Trace, b: Trace, *, include_reads: bool = False, masks: dict | None = None,
                   table: RegisterTable | None = None, snapshot: bool = False) -> CsrComparison:
    """Compare trace `a` (the reference, e.g. libedgetpu) with trace `b` (e.g. a driver)."""
    table = table or beagle_table()
    masks = dict(masks or {})
    if a.kind == "dump" or b.kind == "dump":
        return _compare_dumps(a, b, masks, table)
    notes: list[str] = []
    alignment: tuple[str, ...] = ()
    with gc_paused():
        if snapshot or a.kind == "snapshot" or b.kind == "snapshot":
            mode = "snapshot"
            state_a, note_a = _snapshot_of(a, include_reads)
            state_b, note_b = _snapshot_of(b, include_reads)
            notes.extend(n for n in (note_a, note_b) if n)
            offsets = sorted(set(state_a) | set(state_b))
            side_a = [_as_access(state_a.get(offset), offset) or _GAP for offset in offsets]
            side_b = [_as_access(state_b.get(offset), offset) or _GAP for offset in offsets]
            accesses_a, accesses_b = len(state_a), len(state_b)
        else:
            mode = "sequence"
            seq_a = _chosen(a.accesses, include_reads)
            seq_b = _chosen(b.accesses, include_reads)
            # Key: offset * 2 + is_read. A POLL and a single READ of one offset share a key.
            keys_a, keys_b = _keys(seq_a), _keys(seq_b)
            head, middle, tail, alignment = align_parts(keys_a, keys_b)
            # Rows of the common prefix and suffix are slices of the two sequences; between them each
            # row's missing side indexes the _GAP appended here.
            rows_a, rows_b = zip(*middle) if middle else ((), ())
            # missing(i, i) is i, or -1 when i is None (dict.get(key, default) with the index as its own
            # default), and index -1 of [*seq, _GAP] is the _GAP: so each side is
            #     [seq[i] if i is not None else _GAP for i in rows]
            # computed by map() in C, without a Python-level step per row.
            missing = {None: -1}.get
            side_a = [*seq_a[:head], *map([*seq_a, _GAP].__getitem__, map(missing, rows_a, rows_a)),
                      *seq_a[len(seq_a) - tail:]]
            side_b = [*seq_b[:head], *map([*seq_b, _GAP].__getitem__, map(missing, rows_b, rows_b)),
                      *seq_b[len(seq_b) - tail:]]
            accesses_a, accesses_b = len(seq_a), len(seq_b)
            offsets = {key >> 1 for key in set(keys_a) | set(keys_b)}
        judged = _judge_rows(side_a, side_b, masks, table)
        counts = dict.fromkeys(KINDS, 0)
        for kind, _ in judged.values():
            counts[kind] += 1
        counts["match"] = len(side_a) - sum(counts[k] for k in MISMATCH_KINDS)
        masked = sum(was_masked for _, was_masked in judged.values())
        registers = {offset: describe_offset(offset, table) for offset in offsets}
        label_notes = _label_notes(a, b, registers, table)
    for offset in masks:
        if offset not in registers:
            notes.append(f"mask for 0x{offset:x} matched no access")
    return CsrComparison(
        mode=mode, trace_a=a.to_dict(), trace_b=b.to_dict(), side_a=side_a, side_b=side_b, judged=judged,
        include_reads=include_reads, masks=masks, counts=counts, masked=masked, accesses_a=accesses_a,
        accesses_b=accesses_b, registers=registers, label_notes=label_notes, alignment=alignment,
        notes=tuple(notes),
    )


def _label_notes(a: Trace, b: Trace, registers: dict, table: RegisterTable) -> dict:
    """offset -> a note where a trace names a register otherwise than libedgetpu (first such name per offset)."""
    label_notes: dict = {}
    for side, trace in (("A", a), ("B", b)):
        # Each (label, offset) once, in trace order.
        labels = list(map(_LABEL, trace.accesses))
        if not any(labels):
            continue
        for label, offset in dict.fromkeys(zip(labels, map(_OFFSET, trace.accesses))):
            if label and offset in registers:
                note = _label_note(side, label, offset, table)
                if note:
                    label_notes.setdefault(offset, note)
    return label_notes


def _reference_state(trace: Trace) -> dict:
    """offset -> the access that says a register's value last: a trace's last access there (a write, a read,
    a poll's last read), a snapshot's value."""
    if trace.kind == "snapshot":
        return {offset: _as_access(value, offset) for offset, value in trace.snapshot.items()}
    return dict(zip(map(_OFFSET, trace.accesses), trace.accesses))


def _dump_judge(read: Access, other: Access, masks: dict) -> tuple[str, bool, bool]:
    """(kind, masked, in 32 bits) of a dump's read against the other side's value: a read of 32 bits
    (`0x%08x`) of a register whose value is wider is compared in those bits (said only where the value has
    more: else 32 bits say all there is)."""
    low = read.width == 32 and other.value > LOW32
    diff = (read.value ^ other.value) & (LOW32 if low else -1)
    if not diff:
        return "match", False, low
    mask = masks.get(read.offset)
    if mask is not None and not diff & ~mask:
        return "match", True, low
    return "value", False, low


def _paired_dumps(a: Trace, b: Trace) -> tuple[list, list]:
    """Both sides dumps: (B's dumps as (name, reads, A's dump of that name by offset or None), the unpaired
    names); one dump each, named differently, is one pair."""
    theirs = dict(a.dumps)
    mine = b.dumps
    if len(mine) == len(theirs) == 1 and mine[0][0] not in theirs:  # one dump each, named differently
        theirs = {mine[0][0]: next(iter(theirs.values()))}
    pairs = []
    for name, reads in mine:
        ref = theirs.get(name)
        pairs.append((name, reads, None if ref is None else {r.offset: r for r in ref}))
    unpaired = [f"A {name}" for name in theirs if name not in dict(mine)]
    unpaired += [f"B {name}" for name, _, ref in pairs if ref is None]
    return pairs, unpaired


@dataclass
class _DumpRows:
    """The rows of a dump comparison as they are judged: both sides, each row's dump name, the rows not
    plainly matching (index -> (kind, masked)), the rows compared in 32 bits and the count of each kind."""

    side_a: list = field(default_factory=list)
    side_b: list = field(default_factory=list)
    names: list = field(default_factory=list)
    judged: dict = field(default_factory=dict)
    low: set = field(default_factory=set)
    counts: dict = field(default_factory=lambda: dict.fromkeys(KINDS + DUMP_KINDS[2:], 0))


def _dump_rows(pairs: list, side: str, masks: dict) -> _DumpRows:
    """Each dump's reads against the reference state paired with it, in the order read."""
    rows = _DumpRows()
    mine_first = side == "a"
    for name, reads, ref in pairs:
        for read in reads:
            index = len(rows.names)
            theirs = (ref or {}).get(read.offset)
            rows.names.append(name)
            rows.side_a.append(read if mine_first else (theirs or _GAP))
            rows.side_b.append((theirs or _GAP) if mine_first else read)
            if theirs is None:
                rows.judged[index] = ("unchecked", False)
                rows.counts["unchecked"] += 1
                continue
            kind, was_masked, in_low = _dump_judge(read, theirs, masks)
            if in_low:
                rows.low.add(index)
            if kind != "match" or was_masked:
                rows.judged[index] = (kind, was_masked)
            rows.counts[kind] += 1
    return rows


def _nothing_in_common(a: Trace, b: Trace, side: str, pairs: list) -> InputError:
    what = "the dumps of A and B share no register" if side == "both" else \
        f"no register {'A' if side == 'a' else 'B'}'s [CSR@tag] dumps read is one " \
        f"{'B' if side == 'a' else 'A'} read or wrote"
    return InputError(f"nothing to compare: {what} (dumps {', '.join(n for n, _, _ in pairs)})",
                      (a if side != "b" else b).path)


def _compare_dumps(a: Trace, b: Trace, masks: dict, table: RegisterTable) -> CsrComparison:
    """Register dumps by offset: each dump of the dump side (both sides: dumps of one name paired) against the
    value the other side last read or wrote at each offset it reads."""
    side = "both" if a.kind == b.kind == "dump" else ("a" if a.kind == "dump" else "b")
    dumps, other = (a, b) if side == "a" else (b, a)
    unpaired: list = []
    if side == "both":
        pairs, unpaired = _paired_dumps(a, b)  # (name, reads, reference state or None)
        untouched = 0
    else:
        state = _reference_state(other)
        pairs = [(name, reads, state) for name, reads in dumps.dumps]
        read_offsets = {r.offset for _, reads, _ in pairs for r in reads}
        untouched = len(set(state) - read_offsets)
    rows = _dump_rows(pairs, side, masks)
    side_a, side_b, counts = rows.side_a, rows.side_b, rows.counts
    if not counts["match"] and not counts["value"]:
        raise _nothing_in_common(a, b, side, pairs)
    masked = sum(was for _, was in rows.judged.values())
    offsets = {x.offset for x in (*side_a, *side_b) if x is not _GAP}
    registers = {offset: describe_offset(offset, table) for offset in offsets}
    notes = [f"mask for 0x{offset:x} matched no access" for offset in masks if offset not in registers]
    return CsrComparison(
        mode="dump", trace_a=a.to_dict(), trace_b=b.to_dict(), side_a=side_a, side_b=side_b, judged=rows.judged,
        include_reads=True, masks=masks, counts=counts, masked=masked,
        accesses_a=sum(x is not _GAP for x in side_a), accesses_b=sum(x is not _GAP for x in side_b),
        registers=registers, label_notes=_label_notes(a, b, registers, table), notes=tuple(notes),
        row_dumps=rows.names, low_bits=frozenset(rows.low), dump_side=side, unpaired_dumps=tuple(unpaired),
        untouched=untouched,
    )


def judge_comparison(result: CsrComparison) -> Judgement:
    """The one verdict of two traces compared: PASSED when no row is a value, width, only_a or only_b
    mismatch, else FAILED; its message says what was compared and how many rows of each kind."""
    counts = result.counts
    parts = "".join(f", {counts[k]} {k}" for k in MISMATCH_KINDS if counts.get(k))
    masked = f" ({result.masked} masked)" if result.masked else ""
    reasons = [Reason(k, f"{counts[k]} {k}") for k in MISMATCH_KINDS if counts.get(k)]
    if result.mode == "dump":
        dumps = result.dump_names()
        whose = {"a": "A's", "b": "B's", "both": "the"}[result.dump_side]
        other = {"a": "B", "b": "A", "both": "the other side's dump"}[result.dump_side]
        unchecked = counts.get("unchecked", 0)
        message = (f"{len(result.row_dumps)} registers of {whose} [CSR@tag] dumps ({', '.join(dumps)}) against "
                   f"what {other} last read or wrote: {counts['match']} match{masked}{parts}"
                   + (f"; {unchecked} unchecked ({other} never touched them)" if unchecked else ""))
        reasons.insert(0, Reason("dump_reads", "[CSR@tag] lines without an R/W word are values the driver read"))
        if unchecked:
            reasons.append(Reason("unchecked", f"{unchecked} registers not compared"))
    else:
        message = (f"{result.accesses_a} accesses in A, {result.accesses_b} in B: {counts['match']} match"
                   f"{masked}{parts}")
    if result.masked:
        reasons.append(Reason("masked", f"{result.masked} rows differ only in masked bits"))
    passed = all(counts.get(kind, 0) == 0 for kind in MISMATCH_KINDS)
    return Judgement(Verdict.PASSED if passed else Verdict.FAILED, message, tuple(reasons))


def _widths_agree(ea: Access, eb: Access, table: RegisterTable | None) -> bool:
    """Widths that differ only where one is a guess from printed digits (GuessedWidth) and the register
    table gives the register's true width, equal to the other side's."""
    reg = table.lookup(ea.offset) if table is not None else None
    if reg is None:
        return False
    width_a = reg.width if isinstance(ea.width, GuessedWidth) else ea.width
    width_b = reg.width if isinstance(eb.width, GuessedWidth) else eb.width
    return width_a == width_b


def _keys(accesses: list) -> list:
    return list(map(or_, map(lshift, map(_OFFSET, accesses), repeat(1)), map(ne, map(_OP, accesses), repeat("W"))))


def _as_access(item, offset: int) -> Access | None:
    if item is None or isinstance(item, Access):
        return item
    return Access("SNAP", offset, item, None, 0, "snapshot")


def compare_files(path_a, path_b, *, include_reads: bool = False, masks: dict | None = None,
                  snapshot: bool = False, table: RegisterTable | None = None,
                  line_pattern: str | None = None) -> CsrComparison:
    """Read two trace or snapshot files and compare them (the `forensics csr A B` library call)."""
    table = table or beagle_table()
    # One GC pause for the whole: each pause that ends leaves its 10^5 new tuples to the next cyclic
    # collection, which would otherwise walk them at the start of the next stage (~10 ms each).
    with gc_paused():
        trace_a = read_trace(path_a, table, line_pattern=line_pattern)
        trace_b = read_trace(path_b, table, line_pattern=line_pattern)
        return compare_traces(trace_a, trace_b, include_reads=include_reads, masks=masks, table=table,
                              snapshot=snapshot)
