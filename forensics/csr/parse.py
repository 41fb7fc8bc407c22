"""Register traces and snapshots as text -> accesses: formats detected line by line, polls collapsed.

Trace formats (any other line of a log is ignored, and the result says which formats were seen):
  libedgetpu   driver/kernel/kernel_registers.cc VLOG(5), behind a plain or a glog prefix:
               `Write: offset = 0x%016llx, value = 0x%016llx` (Write32 prints `0x%08x`),
               `Read: offset = 0x%016llx, value: = 0x%016llx` (note the `value: =` of reads).
  csr-name     `[CSR@tag] W NAME @0x48788 = 0x0000007f`   (an R/W word before NAME says the access)
  csr-offval   `[CSR@tag] W off=0x48788 val=0x000000000000007f`   (an R/W word before off=)
               Without an R/W word a `[CSR@tag]` line is a value the driver READ: the real driver's register
               dump, `[CSR@%s] %-32s @0x%05x = 0x%08x` (npu_driver Device.c, npudriverDumpKnownCsrs, one
               apex_read_register_32 per line). A file whose accesses are all such lines is a `dump`: one
               register snapshot per run of lines of one tag (`Trace.dumps`), compared by offset, never
               as a sequence of writes.
  init-tag     `[INIT][RunCtrl] name @0x44018 write=0x1`   (or read=)
  plain        `W 0x48788 0x7f`, `R32 0x1a30c = 0x1`, `W64 0x48788 = 0x7f`
Snapshot formats (a register dump, compared by offset rather than by order):
  `offset=value` lines (`0x48788 = 0x7f`, `tileconfig0: 0x7f`, `0x48788,0x7f`), CSV with `offset` and
  `value` columns, or a JSON object {"0x48788": "0x7f", "tileconfig0": 127}.

Width: an explicit R32/W64 says it; otherwise a value zero-padded to 8 hex digits is a 32-bit access
and one padded to 16 digits a 64-bit access (libedgetpu prints exactly so); anything else is unknown.
Reads of one offset that follow each other collapse into one POLL (final value, count): that is how
libedgetpu's Registers::Poll shows in a trace (SpinReadHelper reads until the value matches).
"""

from __future__ import annotations

import csv
import dataclasses
import gc
import io
import re
from collections import Counter, deque
from collections.abc import Iterable
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import partial
from itertools import compress, count, islice, repeat
from operator import add, contains, eq, getitem, gt, itemgetter, not_, or_, sub
from typing import NamedTuple

from forensics.core.errors import FormatError, InputError
from forensics.core.options import integer

MAX_VALUE = (1 << 64) - 1

FORMAT_LIBEDGETPU = "libedgetpu"
FORMAT_CSR_NAME = "csr-name"
FORMAT_CSR_OFFVAL = "csr-offval"
FORMAT_INIT_TAG = "init-tag"
FORMAT_PLAIN = "plain"
FORMAT_SNAPSHOT = "snapshot"
FORMAT_SNAPSHOT_CSV = "snapshot-csv"
FORMAT_SNAPSHOT_JSON = "snapshot-json"

_HEX = r"0x[0-9a-fA-F]+"
_NUM = r"(?:0x[0-9a-fA-F]+|\d+)"
_OPWORD = r"(?:(?P<op>R|W|RD|WR|READ|WRITE|R32|R64|W32|W64)\s+)?"

# `\b(Write|Read): offset = 0x(hex), value:? = 0x(hex)`, written to start at its literal so the regex
# engine skips to "offset = 0x" instead of trying every W and R of a long glog line (2x faster); the op
# is checked behind it. Groups: ("W" for Write, None for Read), offset digits, value digits.
_LIBEDGETPU = re.compile(r"offset = 0x(?:(?<=\b(W)rite: offset = 0x)|(?<=\bRead: offset = 0x))"
                         r"([0-9a-fA-F]+), value:? = 0x([0-9a-fA-F]+)")
_CSR_NAME = re.compile(r"\[CSR@([^\]]*)\]\s*" + _OPWORD + r"(?P<name>[A-Za-z_][\w.]*)\s*@\s*(?P<off>" + _HEX
                       + r")\s*=\s*(?P<val>" + _NUM + r")\b", re.IGNORECASE)
_CSR_OFFVAL = re.compile(r"\[CSR@([^\]]*)\]\s*" + _OPWORD + r"off(?:set)?\s*=\s*(?P<off>" + _NUM
                         + r")[\s,]+val(?:ue)?\s*=\s*(?P<val>" + _NUM + r")\b", re.IGNORECASE)
_CSR_TAG = re.compile(r"\[CSR@", re.IGNORECASE)   # where _CSR_NAME / _CSR_OFFVAL matches can start
_INIT_TAG = re.compile(r"^\s*(?:\[[^\]\[]*\])+\s*(?P<name>[A-Za-z_][\w.]*)\s*@\s*(?P<off>" + _HEX
                       + r")\s+(?P<op>write|read)\s*=\s*(?P<val>" + _NUM + r")\s*$", re.IGNORECASE)
_PLAIN = re.compile(r"^\s*(?P<op>[RW])(?P<width>32|64)?\s+(?P<off>" + _NUM + r")\s*(?:=\s*)?(?P<val>" + _NUM
                    + r")\s*$", re.IGNORECASE)
_SNAPSHOT = re.compile(r"^\s*(?P<key>" + _HEX + r"|[A-Za-z_]\w*)\s*[=:,]\s*(?P<val>" + _NUM + r")\s*$")


class Access(NamedTuple):
    """One register access. `count` > 1 only for a POLL (that many reads collapsed, `value` the last)."""

    op: str              # "W", "R" or "POLL"
    offset: int          # BAR2-relative
    value: int
    width: int | None    # 32, 64, or None when the trace does not say
    line: int            # 1-based line of the (first) access in its file
    format: str
    count: int = 1
    label: str | None = None   # the name the trace itself printed, if any
    tag: str | None = None     # a `[CSR@tag]` line without an R/W word (a register dump's read): its tag

    @property
    def is_read(self) -> bool:
        return self.op != "W"

    def to_dict(self) -> dict:  # a NamedTuple (a trace holds 10^5 of them), not a Serial dataclass
        return {"op": self.op, "offset": f"0x{self.offset:x}", "value": format_value(self.value, self.width),
                "width": self.width, "line": self.line, "format": self.format, "count": self.count,
                "label": self.label, "tag": self.tag}


def format_value(value: int | None, width: int | None) -> str | None:
    """`0x0000007f` for a 32-bit access, 16 digits for 64-bit, `0x7f` when the width is unknown."""
    if value is None:
        return None
    if width == 32:
        return f"0x{value:08x}"
    if width == 64:
        return f"0x{value:016x}"
    return f"0x{value:x}"


@dataclass(frozen=True)
class Trace:
    """A parsed file: an ordered trace (`accesses`), a snapshot (`snapshot`: offset -> value), or a driver's
    register dumps (`accesses` all reads of `[CSR@tag]` lines without an R/W word; `dumps` groups them)."""

    path: str | None
    kind: str                               # "trace", "snapshot" or "dump"
    accesses: tuple[Access, ...] = ()
    snapshot: dict = field(default_factory=dict)
    formats: dict = field(default_factory=dict)   # format -> number of lines in it
    lines: int = 0
    ignored: int = 0                         # lines in no known format (other log output)
    raw_accesses: int = 0                    # before reads were collapsed into polls
    # ignored lines that look like accesses but do not parse, and the first one's line number (diagnostics:
    # not part of what a trace is, so the per-line reference parser need not compute them)
    malformed: int = field(default=0, compare=False)
    first_malformed: int | None = field(default=None, compare=False)

    # lines that held characters outside ASCII (a code page's text), read for their ASCII (set by read_trace)
    non_ascii_lines: int = field(default=0, compare=False)

    @property
    def taken_as(self) -> dict:
        """How the file's access lines were read: {"writes": n, "reads": n} (a poll's reads counted one by one),
        or for a dump {"dump_reads": n}, or for a snapshot {"snapshot": registers}."""
        if self.kind == "snapshot":
            return {"snapshot": len(self.snapshot)}
        if self.kind == "dump":
            return {"dump_reads": len(self.accesses)}
        writes = sum(1 for a in self.accesses if a.op == "W")
        return {"writes": writes, "reads": self.raw_accesses - writes}

    @property
    def dumps(self) -> tuple[tuple[str, tuple[Access, ...]], ...]:
        """A dump's snapshots, in order: (name, reads) for each run of lines of one tag, a run ending where a
        register comes again (the next inference's dump of that tag). Names are the tag, then `tag#2`..."""
        if self.kind != "dump":
            return ()
        out: list = []
        seen: dict[str, int] = {}
        current: list = []
        offsets: set = set()
        for access in self.accesses:
            if current and (access.tag != current[0].tag or access.offset in offsets):
                out.append(current)
                current, offsets = [], set()
            current.append(access)
            offsets.add(access.offset)
        if current:
            out.append(current)
        named = []
        for run in out:
            tag = run[0].tag
            seen[tag] = seen.get(tag, 0) + 1
            named.append((tag if seen[tag] == 1 else f"{tag}#{seen[tag]}", tuple(run)))
        return tuple(named)

    # Kept by hand (not forensics.core.serial): the document summarises the accesses (their count, how they were
    # taken, the dumps' tags) and does not list them.
    def to_dict(self) -> dict:
        out = {"path": self.path, "kind": self.kind, "formats": dict(self.formats), "lines": self.lines,
               "ignored_lines": self.ignored, "malformed_lines": self.malformed,
               "first_malformed_line": self.first_malformed, "raw_accesses": self.raw_accesses,
               "accesses": len(self.accesses) if self.kind != "snapshot" else len(self.snapshot),
               "taken_as": self.taken_as, "non_ascii_lines": self.non_ascii_lines}
        if self.kind == "dump":
            out["dumps"] = [{"tag": name, "registers": len(reads), "first_line": reads[0].line}
                            for name, reads in self.dumps]
        return out


class _TooBig(ValueError):
    """A number that does not fit in 64 bits; becomes a FormatError naming the first line that has one."""


def _number(text: str, what: str) -> int:
    value = integer(text)  # the project's one number grammar (the regexes above let only digits through)
    if value > MAX_VALUE:
        raise _TooBig(f"{what} {text} does not fit in 64 bits")
    return value


def _int(text: str, lineno, what: str, path: str | None) -> int:
    try:
        return _number(text, what)
    except _TooBig as exc:
        raise FormatError(str(exc), where=[f"line {lineno}"], path=path) from None


class GuessedWidth(int):
    """A width read off how many hex digits a value was printed with (`%08X` -> 32): a guess that the
    register table's width overrides when comparing (a 64-bit register printed as %08X is no width
    mismatch). Equal to the plain int, so traces compare and serialise as before."""


GUESS_32, GUESS_64 = GuessedWidth(32), GuessedWidth(64)


def _digits_width(text: str) -> int | None:
    if text[:2].lower() == "0x":
        text = text[2:]
    return GUESS_32 if len(text) == 8 else GUESS_64 if len(text) == 16 else None


def _csr_op(word: str | None) -> tuple[str, int | None]:
    """A `[CSR@tag]` line's op: its R/W word, or none: a value read (the driver's register dump)."""
    return _op_word(word) if word else ("R", None)


def _op_word(word: str | None) -> tuple[str, int | None]:
    """(`W` or `R`, explicit width) from an op word; no word means a write (an assignment: `W 0x.. 0x..`,
    a --line-pattern without an op group)."""
    if not word:
        return "W", None
    word = word.upper()
    op = "R" if word.startswith("R") else "W"
    width = 32 if word.endswith("32") else 64 if word.endswith("64") else None
    return op, width


# ---------------------------------------------------------------------------------------------------
# Bulk parsing. A trace is one format repeated 10^5 times, and mostly the same few accesses: each
# format's regex runs over the lines in one C-level `map` (over each distinct line once when lines
# repeat; for [CSR@ lines over each distinct tail once), each distinct match is converted to numbers
# once, and the accesses are assembled from per-line verdicts without a Python statement per line.
# The rules are those of the per-line parser this replaced (kept in tests/csr/reference_parse.py as
# the oracle of a differential test), applied to a line in this order:
#   1. a libedgetpu match wins;
#   2. else a line containing `[CSR@`/`[csr@` is csr-name, else csr-offval, else ignored;
#   3. else a line containing `@` is init-tag or ignored (plain and snapshot lines cannot contain `@`);
#   4. else plain, else snapshot, else ignored.

_CHUNK_LINES = 8192    # lines a regex stage holds matches for at a time
_SAMPLE_LINES = 1000    # lines looked at to decide whether classifying distinct lines once pays
# Bounds on one trace: parsing costs ~10-25 us per line, so 10^6 lines took half a minute and 1.7 GB. Twice
# the benchmark's 100,000 accesses per side is allowed; a longer log is cut to the inferences compared.
MAX_TRACE_LINES = 200_000
MAX_TRACE_BYTES = 64 << 20
_NEVER = float("nan")   # poll key of a non-read: equal to nothing, not even itself
_new_access = partial(tuple.__new__, Access)   # Access from one 8-tuple without a Python-level __new__
_ACCESS = repeat(Access)                       # map(tuple.__new__, _ACCESS, tuples): the same, faster


class _Proto(NamedTuple):
    """What one distinct access text parses to: everything of an Access but its line."""

    format: str
    head: tuple      # (op, offset, value, width)
    tail: tuple      # (format, count, label, tag)
    poll_key: object  # _poll_key(): equal keys in a row make a POLL


class _Snap(NamedTuple):
    key: str
    value: int


class _Bad(NamedTuple):
    message: str


def _poll_key(op: str, offset: int, width) -> object:
    """One int per (offset, width) of a read; _NEVER (equal to nothing) for anything else."""
    return (offset << 7) | (width or 0) if op == "R" else _NEVER


def _proto(fmt: str, op: str, offset: int, value: int, width, label=None, tag=None) -> _Proto:
    return _Proto(fmt, (op, offset, value, width), (fmt, 1, label, tag), _poll_key(op, offset, width))


def _libedgetpu_item(groups) -> _Proto:
    write, off, val = groups
    if len(off) > 16:
        _number("0x" + off, "offset")
    if len(val) > 16:
        _number("0x" + val, "value")
    return _proto(FORMAT_LIBEDGETPU, "W" if write else "R", int(off, 16), int(val, 16),
                  32 if len(val) == 8 else 64 if len(val) == 16 else None)


def _csr_name_item(groups) -> _Proto:
    tag, word, name, off, val = groups
    op, width = _csr_op(word)
    return _proto(FORMAT_CSR_NAME, op, _number(off, "offset"), _number(val, "value"),
                  width or _digits_width(val), name, None if word else tag)


def _csr_offval_item(groups) -> _Proto:
    tag, word, off, val = groups
    op, width = _csr_op(word)
    return _proto(FORMAT_CSR_OFFVAL, op, _number(off, "offset"), _number(val, "value"), width or _digits_width(val),
                  None, None if word else tag)


def _init_tag_item(groups) -> _Proto:
    name, off, word, val = groups
    return _proto(FORMAT_INIT_TAG, "W" if word.lower() == "write" else "R", _number(off, "offset"),
                  _number(val, "value"), _digits_width(val), name)


def _plain_item(groups) -> _Proto:
    word, width, off, val = groups
    return _proto(FORMAT_PLAIN, word.upper(), _number(off, "offset"), _number(val, "value"),
                  int(width) if width else _digits_width(val))


def _snapshot_item(groups) -> _Snap:
    key, val = groups
    return _Snap(key, _number(val, "value"))


def _item(build, groups):
    try:
        return build(groups)
    except _TooBig as exc:
        return _Bad(str(exc))
    except ValueError:  # a regex-matched number that int() refuses cannot happen; keep the boundary honest
        return _Bad("unparseable number")


_consume = deque(maxlen=0).extend   # runs a map for its side effects at C speed


def _stage(lines: list, where, find, build, verdicts: list) -> tuple[list, list, bool]:
    """Try `find` (a bound regex search/match) on every line; set `verdicts[where[k]]` for each line k it
    matches (the groups of distinct matches are converted once). Returns the lines it did not match
    with their positions, and whether any verdict is not an access (a snapshot line, a number too big).
    Lines go _CHUNK_LINES at a time, so their match objects and group tuples never all exist at once."""
    items: dict = {}
    rest_lines: list = []
    rest_where: list = []
    for start in range(0, len(lines), _CHUNK_LINES):
        chunk, chunk_where = lines[start:start + _CHUNK_LINES], where[start:start + _CHUNK_LINES]
        found = list(map(find, chunk))
        keys = list(map(re.Match.groups, filter(None, found)))
        for key in dict.fromkeys(keys):
            if key not in items:
                items[key] = _item(build, key)
        _consume(map(verdicts.__setitem__, compress(chunk_where, found), map(items.__getitem__, keys)))
        missed = list(map(not_, found))
        rest_lines += compress(chunk, missed)
        rest_where += compress(chunk_where, missed)
    return rest_lines, rest_where, not all(map(isinstance, items.values(), repeat(_Proto)))


def _csr_stage(lines: list, where: list, verdicts: list) -> bool:
    """csr-name, else csr-offval, on lines holding `[CSR@`/`[csr@`. Both patterns start with `\\[CSR@`
    (any case) and look only forward, so they match a line exactly as they match its tail from the first
    `[CSR@` (any case); the tails of a driver's timestamped lines repeat, so each distinct tail is tried once."""
    tails = list(map(getitem, lines, map(slice, map(re.Match.start, map(_CSR_TAG.search, lines)), repeat(None))))
    distinct = list(dict.fromkeys(tails))
    found: list = [None] * len(distinct)
    rest, rest_where, others_name = _stage(distinct, range(len(distinct)), _CSR_NAME.search, _csr_name_item, found)
    others_offval = _stage(rest, rest_where, _CSR_OFFVAL.search, _csr_offval_item, found)[2]
    _consume(map(verdicts.__setitem__, where, map(dict(zip(distinct, found)).__getitem__, tails)))
    return others_name or others_offval


def _classify(lines: list, text: str) -> tuple[list, bool]:
    """The verdict on each line: _Proto, _Snap or _Bad; None for other log output; False if blank.
    Also says whether there is any _Snap or _Bad. `text` holds all the lines (for quick absence tests)."""
    verdicts: list = [None] * len(lines)
    pending, where = lines, range(len(lines))
    others = False
    if "offset = 0x" in text:
        pending, where, others = _stage(pending, where, _LIBEDGETPU.search, _libedgetpu_item, verdicts)
        text = "\n".join(pending)   # what is left to look at: often nothing, so no more scans of a long log
    if "[CSR@" in text or "[csr@" in text:
        tagged = list(map(or_, map(contains, pending, repeat("[CSR@")), map(contains, pending, repeat("[csr@"))))
        # A tagged line is csr-name, else csr-offval, else ignored: it is not tried as another format.
        others = _csr_stage(list(compress(pending, tagged)), list(compress(where, tagged)), verdicts) or others
        untagged = list(map(not_, tagged))
        pending, where = list(compress(pending, untagged)), list(compress(where, untagged))
    for marker, find, build in (("@", _INIT_TAG.match, _init_tag_item), ("", _PLAIN.match, _plain_item),
                                ("", _SNAPSHOT.match, _snapshot_item)):
        if pending and marker in text:
            pending, where, found_others = _stage(pending, where, find, build, verdicts)
            others = others or found_others
    _consume(map(verdicts.__setitem__, compress(where, map(not_, map(str.strip, pending))), repeat(False)))
    return verdicts, others


@contextmanager
def gc_paused():
    """No cyclic-GC passes while 10^5 acyclic tuples are built: each full pass walks every object built
    so far, which costs more than building them (measured 3x on 300,000 Access tuples). The pause is
    process-wide, so the parser never takes it itself: the caller that does the bulk work decides
    (compare_files around reading and comparing two traces, the comparison around its alignment and rows,
    the CLI until its report is freed); a library user parsing many traces can wrap read_trace in it.
    Reference counting still frees everything as usual. Nested uses are fine (only the outermost one
    re-enables GC), and GC stays off if the caller had turned it off."""
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def collapse_polls(accesses: Iterable[Access], poll_keys: list | None = None) -> list[Access]:
    """Runs of reads of one offset (and width) become one POLL carrying the final value and the count
    (and the line of the first read). `poll_keys` (the parser has them) saves recomputing them."""
    accesses = list(accesses)
    if poll_keys is None:
        poll_keys = [_poll_key(a.op, a.offset, a.width) for a in accesses]
    # continues[k]: access k+1 repeats the read of access k
    continues = list(map(eq, poll_keys, islice(poll_keys, 1, None)))
    if not any(continues):
        return accesses
    starts = [0, *compress(count(1), map(not_, continues))]
    lengths = list(map(sub, [*islice(starts, 1, None), len(accesses)], starts))
    out = list(map(accesses.__getitem__, starts))
    for k in compress(count(), map(gt, lengths, repeat(1))):
        first, n = starts[k], lengths[k]
        _, offset, value, width, _, fmt, _, label, tag = accesses[first + n - 1]
        out[k] = _new_access(("POLL", offset, value, width, accesses[first].line, fmt, n, label, tag))
    return out


def _resolve_key(key: str, lineno, path, table) -> int | None:
    """A snapshot key: an offset, or a register name the table knows (unknown names: not a snapshot line)."""
    if key[:2].lower() == "0x":
        return _int(key, lineno, "offset", path)
    if key.isdigit():
        return _int(key, lineno, "offset", path)
    if table is None:
        return None
    matches = table.by_name(key)
    if len(matches) == 1:
        return matches[0].offset
    if len(matches) > 1:
        raise FormatError(f"register name {key!r} is ambiguous (offsets "
                          + ", ".join(f"0x{r.offset:x}" for r in matches) + "): write the offset",
                          where=[f"line {lineno}"], path=path)
    return None


def _snapshot_from_json(text: str, path, table) -> Trace:
    from forensics.io.jsonio import loads

    data = loads(text, path, "JSON snapshot")
    if isinstance(data, dict) and isinstance(data.get("registers"), dict):
        data = data["registers"]
    if not isinstance(data, dict) or not data:
        raise InputError("a JSON snapshot must be a non-empty object {\"0x48788\": \"0x7f\", ...}", path)
    snapshot = {}
    for key, value in data.items():
        offset = _resolve_key(str(key).strip(), "?", path, table)
        if offset is None:
            raise FormatError(f"key {key!r} is neither an offset nor a Beagle register name",
                              where=["JSON", str(key)], path=path)
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise FormatError(f"value {value!r} is not an integer or a hex string", where=["JSON", str(key)],
                              path=path)
        try:
            number = value if isinstance(value, int) else int(value.strip().replace("_", ""), 0)
        except ValueError:
            raise FormatError(f"value {value!r} is not an integer or a hex string", where=["JSON", str(key)],
                              path=path) from None
        if not 0 <= number <= MAX_VALUE:
            raise FormatError(f"value {value!r} does not fit in 64 bits", where=["JSON", str(key)], path=path)
        snapshot[offset] = number
    return Trace(path=path, kind="snapshot", snapshot=snapshot, formats={FORMAT_SNAPSHOT_JSON: len(snapshot)},
                 lines=text.count("\n") + 1)


def _snapshot_from_csv(text: str, start: int, path, table) -> Trace | None:
    """CSV with a header naming `offset` and `value` columns; None when the first line (the first with
    anything on it, from `start`) is no such header."""
    end = text.find("\n", start)
    first = text[start:] if end < 0 else text[start:end]
    header = [h.strip().lower() for h in first.split(",")]
    if "offset" not in header or "value" not in header:
        return None
    reader = csv.reader(io.StringIO(text[start:]))
    next(reader)
    col_off, col_val = header.index("offset"), header.index("value")
    snapshot = {}
    lines = 1
    for lineno, row in enumerate(reader, 2):
        lines = lineno
        if not row or all(not cell.strip() for cell in row):
            continue
        if len(row) <= max(col_off, col_val):
            raise FormatError(f"expected {len(header)} columns, found {len(row)}", where=[f"line {lineno}"],
                              path=path)
        key, value = row[col_off].strip(), row[col_val].strip()
        try:
            offset = _resolve_key(key, lineno, path, table)
            number = _int(value, lineno, "value", path)
        except ValueError:
            offset = None
        if offset is None:
            raise FormatError(f"bad offset/value {key!r},{value!r}", where=[f"line {lineno}"], path=path)
        snapshot[offset] = number
    if not snapshot:
        raise InputError("CSV snapshot has a header but no rows", path)
    return Trace(path=path, kind="snapshot", snapshot=snapshot, formats={FORMAT_SNAPSHOT_CSV: len(snapshot)},
                 lines=lines)


_VISIBLE = re.compile(r"\S")


# Columns a Windows log viewer puts before each message, stripped before the formats are tried:
# DbgView's saved log `00000012<TAB>0.00123400<TAB>` (line number, time; optional DbgPrint `[pid] `) and
# tracefmt's default WPP/ETW prefix `[%9!d!]%8!04X!.%3!04X!::%4!s! [%1!s!]`, i.e. `[CPU]PID.TID::TIMESTAMP
# [FriendlyName]` as Microsoft documents it (`[0]0A2C.0B18::11/30/2026-09:24:35.123 [EdgeTpu]W 0x48788 0x7f`).
# A prefix starts a line as str.splitlines() cuts them (after any of its line breaks, not only '\n') and is
# stripped only when a visible character follows it on its line: a line that is nothing but columns (an
# empty DbgPrint, or other output such as `48788<TAB>:<TAB>`) stays as it is, an ignored line, so stripping
# never turns a line blank nor drops a last line (a trace's line count is the text's).
_BREAKS = "\n\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
_LOG_PREFIX = re.compile(r"(?:^|(?<=[" + _BREAKS + r"]))"
                         r"(?:[ \t]*\d+\t[0-9.:]+(?:[ \t]*[AP]M)?\t(?:\[\d+\][ \t]?)?"
                         r"|\[\d+\][0-9A-Fa-f]+\.[0-9A-Fa-f]+::\S+[ \t]+(?:\[[^\]\s]*\][ \t]*)?)"
                         r"(?=[^" + _BREAKS + r"]*\S)",
                         re.MULTILINE)


def strip_log_prefixes(text: str) -> str:
    """The text without DbgView / tracefmt columns (unchanged, not copied, when its head has none)."""
    if _LOG_PREFIX.search(text, 0, 1 << 16) is None:
        return text
    return _LOG_PREFIX.sub("", text)


def parse_with_pattern(text: str, pattern: str, path: str | None = None) -> Trace:
    """A trace in a format of the user's: `pattern` is a regular expression with named groups `offset` and
    `value` (numbers, 0x-hex or decimal) and optionally `op` (R/READ/W/WRITE and 32/64; default a write)."""
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise InputError("{line_pattern} is not a regular expression: "
                         + str(exc).replace("{", "{{").replace("}", "}}"), params=True) from None
    missing = {"offset", "value"} - set(compiled.groupindex)
    if missing:
        raise InputError(f"{{line_pattern}} needs named groups offset and value (missing {', '.join(sorted(missing))}),"
                         r" e.g. (?P<op>[RW]) (?P<offset>0x[0-9a-f]+) (?P<value>0x[0-9a-f]+)", params=True)
    accesses = []
    lines = text.splitlines()
    for lineno, line in enumerate(lines, start=1):
        m = compiled.search(line)
        if not m:
            continue
        groups = m.groupdict()
        op, width = _op_word(groups.get("op"))
        offset = _int(groups["offset"], lineno, "offset", path)
        value = _int(groups["value"], lineno, "value", path)
        accesses.append(Access(op, offset, value, width or _digits_width(groups["value"]), lineno, "pattern"))
    if not accesses:
        raise InputError(f"no line of {len(lines)} matches {{line_pattern}}", path, params=True)
    polled = collapse_polls(accesses)
    return Trace(path=path, kind="trace", accesses=tuple(polled), formats={"pattern": len(accesses)},
                 lines=len(lines), ignored=len(lines) - len(accesses), raw_accesses=len(accesses))


def parse_text(text: str, path: str | None = None, table=None, *, line_pattern: str | None = None) -> Trace:
    """Parse a whole trace or snapshot. `table` (a RegisterTable) lets snapshot keys be register names;
    `line_pattern` (named groups op, offset, value) reads a format of the user's instead of the built-in ones."""
    first = _VISIBLE.search(text)   # not text.strip(): no copy of a 100 MB log
    if first is None:
        raise InputError("empty: no register accesses", path)
    if "\x00" in text[:4096]:
        raise InputError("binary data, not a text register trace", path)
    text = strip_log_prefixes(text)
    if line_pattern is not None:
        return parse_with_pattern(text, line_pattern, path)
    first = _VISIBLE.search(text)
    if text[first.start()] == "{":
        return _snapshot_from_json(text[first.start():], path, table)
    csv_trace = _snapshot_from_csv(text, first.start(), path, table)
    if csv_trace is not None:
        return csv_trace
    return _parse_log(text, path, table)


def _repetitive(lines: list) -> bool:
    """Whether classifying each distinct line once pays: at most half the first lines are distinct."""
    sample = lines[:_SAMPLE_LINES]
    return len(set(sample)) * 2 <= len(sample)


def _parse_log(text: str, path, table) -> Trace:
    lines = text.splitlines()
    if not _repetitive(lines):
        # Mostly distinct lines (glog timestamps): classify every line where it is.
        per_line, others = _classify(lines, text)
    else:
        # A few lines over and over: classify each distinct line once.
        distinct = list(dict.fromkeys(lines))
        verdicts, others = _classify(distinct, text)
        per_line = list(map(dict(zip(distinct, verdicts)).__getitem__, lines))
    ignored = per_line.count(None)
    malformed, first_malformed = _malformed(lines, per_line) if ignored else (0, None)
    items = list(filter(None, per_line))
    line_nos = list(compress(count(1), per_line))
    snapshot: dict[int, int] = {}
    if not others:
        protos, proto_lines = items, line_nos
        formats = dict(Counter(map(itemgetter(0), protos)))
    else:
        is_proto = list(map(isinstance, items, repeat(_Proto)))
        protos = list(compress(items, is_proto))
        proto_lines = list(compress(line_nos, is_proto))
        formats, unresolved = _snapshot_lines(items, line_nos, snapshot, path, table)
        ignored += unresolved
    # Each Access is its proto's head + (line,) + tail, i.e. for every proto p on line n:
    #     Access(*p.head, n, *p.tail)
    # written as nested map(add, ...) over the columns (head tuples, 1-tuples of line numbers, tail
    # tuples) and tuple.__new__ so that no Python-level loop or call runs per access: measured 1.8x
    # faster than that comprehension on 10^5 accesses.
    accesses = list(map(tuple.__new__, _ACCESS, map(add, map(add, map(itemgetter(1), protos), zip(proto_lines)),
                                                        map(itemgetter(2), protos))))
    if accesses and None not in map(itemgetter(8), accesses):
        # Every access a [CSR@tag] line without an R/W word: the driver's register dumps, values it read, kept
        # one by one (a dump reads each register once; nothing to collapse).
        return Trace(path=path, kind="dump", accesses=tuple(accesses), formats=formats, lines=len(lines),
                     ignored=ignored + formats.get(FORMAT_SNAPSHOT, 0), raw_accesses=len(accesses),
                     malformed=malformed, first_malformed=first_malformed)
    if accesses:
        # A trace wins: `0x48788 = 0x7f` lines inside a log are counted under "snapshot" but not used.
        polled = collapse_polls(accesses, list(map(itemgetter(3), protos)))
        return Trace(path=path, kind="trace", accesses=tuple(polled), formats=formats, lines=len(lines),
                     ignored=ignored + formats.get(FORMAT_SNAPSHOT, 0), raw_accesses=len(accesses),
                     malformed=malformed, first_malformed=first_malformed)
    if snapshot:
        return Trace(path=path, kind="snapshot", snapshot=snapshot, formats=formats, lines=len(lines),
                     ignored=ignored)
    raise InputError(f"no register accesses in {len(lines)} lines (expected libedgetpu VLOG(5) `Write: offset = "
                     f"0x...` lines, [CSR@..] lines, `W 0x48788 0x7f` lines, or an offset=value snapshot)", path)


# An ignored line that starts like an access (`W 0x...`, `R ...`) or carries a driver's access marker is not
# other log output: it is a malformed access, counted and reported rather than skipped without a word.
_LOOKS_LIKE_ACCESS = re.compile(r"^\s*[WRwr]\s+\S|offset = |\[CSR@|\[csr@")


def _malformed(lines: list, per_line: list) -> tuple[int, int | None]:
    flagged = [n for n, (line, verdict) in enumerate(zip(lines, per_line), 1)
               if verdict is None and _LOOKS_LIKE_ACCESS.search(line)]
    return len(flagged), (flagged[0] if flagged else None)


def _snapshot_lines(items: list, line_nos: list, snapshot: dict, path, table) -> tuple[dict, int]:
    """Snapshot lines and errors, in line order (a log with them is rare and short: a plain loop).
    Fills `snapshot`; returns the formats seen in first-seen order and the snapshot lines not used."""
    formats: dict[str, int] = {}
    unresolved = 0
    for item, lineno in zip(items, line_nos):
        kind = type(item)
        if kind is _Bad:
            raise FormatError(item.message, where=[f"line {lineno}"], path=path)
        if kind is _Snap:
            offset = _resolve_key(item.key, lineno, path, table)
            if offset is None:
                unresolved += 1
                continue
            snapshot[offset] = item.value
            fmt = FORMAT_SNAPSHOT
        else:
            fmt = item.format
        formats[fmt] = formats.get(fmt, 0) + 1
    return formats, unresolved


def read_trace(path, table=None, *, line_pattern: str | None = None) -> Trace:
    """Open a trace or snapshot file read-only and parse it; one InputError/FormatError when unusable."""
    from forensics.io.textdump import read_text

    path = str(path)
    # Every command reads its text so (forensics.io.textdump): UTF-16 decoded, any other file as bytes in a
    # code page it need not know (a Korean Windows' DbgView log is cp949); what is not ASCII is U+FFFD, counted.
    text, _, non_ascii = read_text(path, MAX_TRACE_BYTES, "a register trace",
                                   too_large="a register trace (cut the log to the inferences you compare)")
    if not text:
        raise InputError("empty file: no register accesses", path)
    lines = text.count("\n")
    if lines > MAX_TRACE_LINES:
        raise InputError(f"has {lines} lines; forensics csr compares traces of at most {MAX_TRACE_LINES} lines "
                         "(cut the log to the inferences you compare)", path)
    trace = parse_text(text, path, table, line_pattern=line_pattern)
    return dataclasses.replace(trace, non_ascii_lines=non_ascii) if non_ascii else trace
