"""Register traces and snapshots as text -> accesses: formats detected line by line, polls collapsed.

Trace formats (any other line of a log is ignored, and the result says which formats were seen):
  libedgetpu   driver/kernel/kernel_registers.cc VLOG(5), behind a plain or a glog prefix:
               `Write: offset = 0x%016llx, value = 0x%016llx` (Write32 prints `0x%08x`),
               `Read: offset = 0x%016llx, value: = 0x%016llx` (note the `value: =` of reads).
  csr-name     `[CSR@tag] NAME @0x48788 = 0x0000007f`   (optional R/W word before NAME)
  csr-offval   `[CSR@tag] off=0x48788 val=0x000000000000007f`   (optional R/W word before off=)
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
import io
import json
import re
from dataclasses import dataclass, field
from typing import Iterable, NamedTuple

from forensics.errors import FormatError, InputError

MAX_VALUE = (1 << 64) - 1

FORMAT_LIBEDGETPU = "libedgetpu"
FORMAT_CSR_NAME = "csr-name"
FORMAT_CSR_OFFVAL = "csr-offval"
FORMAT_INIT_TAG = "init-tag"
FORMAT_PLAIN = "plain"
FORMAT_SNAPSHOT = "snapshot"
FORMAT_SNAPSHOT_CSV = "snapshot-csv"
FORMAT_SNAPSHOT_JSON = "snapshot-json"
TRACE_FORMATS = (FORMAT_LIBEDGETPU, FORMAT_CSR_NAME, FORMAT_CSR_OFFVAL, FORMAT_INIT_TAG, FORMAT_PLAIN)

_HEX = r"0x[0-9a-fA-F]+"
_NUM = r"(?:0x[0-9a-fA-F]+|\d+)"
_OPWORD = r"(?:(?P<op>R|W|RD|WR|READ|WRITE|R32|R64|W32|W64)\s+)?"

_LIBEDGETPU = re.compile(r"\b(?P<op>Write|Read): offset = 0x(?P<off>[0-9a-fA-F]+), value:? = 0x(?P<val>[0-9a-fA-F]+)")
_CSR_NAME = re.compile(r"\[CSR@[^\]]*\]\s*" + _OPWORD + r"(?P<name>[A-Za-z_][\w.]*)\s*@\s*(?P<off>" + _HEX
                       + r")\s*=\s*(?P<val>" + _NUM + r")\b", re.IGNORECASE)
_CSR_OFFVAL = re.compile(r"\[CSR@[^\]]*\]\s*" + _OPWORD + r"off(?:set)?\s*=\s*(?P<off>" + _NUM
                         + r")[\s,]+val(?:ue)?\s*=\s*(?P<val>" + _NUM + r")\b", re.IGNORECASE)
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

    @property
    def is_read(self) -> bool:
        return self.op != "W"

    def to_dict(self) -> dict:
        return {"op": self.op, "offset": f"0x{self.offset:x}", "value": format_value(self.value, self.width),
                "width": self.width, "line": self.line, "format": self.format, "count": self.count,
                "label": self.label}


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
    """A parsed file: either an ordered trace (`accesses`) or a snapshot (`snapshot`: offset -> value)."""

    path: str | None
    kind: str                               # "trace" or "snapshot"
    accesses: tuple[Access, ...] = ()
    snapshot: dict = field(default_factory=dict)
    formats: dict = field(default_factory=dict)   # format -> number of lines in it
    lines: int = 0
    ignored: int = 0                         # lines in no known format (other log output)
    raw_accesses: int = 0                    # before reads were collapsed into polls

    def to_dict(self) -> dict:
        return {"path": self.path, "kind": self.kind, "formats": dict(self.formats), "lines": self.lines,
                "ignored_lines": self.ignored, "raw_accesses": self.raw_accesses,
                "accesses": len(self.accesses) if self.kind == "trace" else len(self.snapshot)}


def _int(text: str, lineno: int, what: str, path: str | None) -> int:
    try:
        value = int(text, 0)
    except ValueError:  # decimal with leading zeros ("007"): int(text, 0) refuses, base 10 does not
        value = int(text, 10)
    if value > MAX_VALUE:
        raise FormatError(f"{what} {text} does not fit in 64 bits", where=[f"line {lineno}"], path=path)
    return value


def _digits_width(text: str) -> int | None:
    if text[:2].lower() == "0x":
        text = text[2:]
    return 32 if len(text) == 8 else 64 if len(text) == 16 else None


def _op_word(word: str | None) -> tuple[str, int | None]:
    """(`W` or `R`, explicit width) from an op word; no word means a write (an assignment)."""
    if not word:
        return "W", None
    word = word.upper()
    op = "R" if word.startswith("R") else "W"
    width = 32 if word.endswith("32") else 64 if word.endswith("64") else None
    return op, width


def _parse_line(line: str, lineno: int, path: str | None):
    """(format, Access) for a trace line, (FORMAT_SNAPSHOT, (key, value)) for a snapshot line, or None."""
    # Cheap substring tests first: most lines of a real log are something else entirely.
    if "offset = 0x" in line:
        m = _LIBEDGETPU.search(line)
        if m:
            off, val = m.group("off", "val")
            if len(off) > 16 or len(val) > 16:
                _int("0x" + (off if len(off) > 16 else val), lineno, "offset" if len(off) > 16 else "value", path)
            return FORMAT_LIBEDGETPU, Access("W" if m.group("op") == "Write" else "R", int(off, 16), int(val, 16),
                                             32 if len(val) == 8 else 64 if len(val) == 16 else None,
                                             lineno, FORMAT_LIBEDGETPU)
    if "[CSR@" in line or "[csr@" in line:
        for fmt, rx in ((FORMAT_CSR_NAME, _CSR_NAME), (FORMAT_CSR_OFFVAL, _CSR_OFFVAL)):
            m = rx.search(line)
            if m:
                op, width = _op_word(m.group("op"))
                val = m.group("val")
                label = m.group("name") if fmt == FORMAT_CSR_NAME else None
                return fmt, Access(op, _int(m.group("off"), lineno, "offset", path),
                                   _int(val, lineno, "value", path), width or _digits_width(val),
                                   lineno, fmt, 1, label)
        return None
    if "@" in line:
        m = _INIT_TAG.match(line)
        if m:
            op = "W" if m.group("op").lower() == "write" else "R"
            val = m.group("val")
            return FORMAT_INIT_TAG, Access(op, _int(m.group("off"), lineno, "offset", path),
                                           _int(val, lineno, "value", path), _digits_width(val),
                                           lineno, FORMAT_INIT_TAG, 1, m.group("name"))
        return None
    m = _PLAIN.match(line)
    if m:
        width = m.group("width")
        val = m.group("val")
        return FORMAT_PLAIN, Access(m.group("op").upper(), _int(m.group("off"), lineno, "offset", path),
                                    _int(val, lineno, "value", path),
                                    int(width) if width else _digits_width(val), lineno, FORMAT_PLAIN)
    m = _SNAPSHOT.match(line)
    if m:
        return FORMAT_SNAPSHOT, (m.group("key"), _int(m.group("val"), lineno, "value", path), lineno)
    return None


def collapse_polls(accesses: Iterable[Access]) -> list[Access]:
    """Runs of reads of one offset (and width) become one POLL carrying the final value and the count."""
    out: list[Access] = []
    run_first = None
    run_last = None
    run_count = 0

    def flush():
        if run_count == 1:
            out.append(run_first)
        elif run_count > 1:
            out.append(run_last._replace(op="POLL", line=run_first.line, count=run_count))

    for access in accesses:
        if access.op == "R":
            if run_count and access.offset == run_first.offset and access.width == run_first.width:
                run_last = access
                run_count += 1
                continue
            flush()
            run_first = run_last = access
            run_count = 1
            continue
        flush()
        run_count = 0
        out.append(access)
    flush()
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
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"malformed JSON snapshot: {exc.msg} at line {exc.lineno} column {exc.colno}", path) from None
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


def _snapshot_from_csv(text: str, path, table) -> Trace | None:
    """CSV with a header naming `offset` and `value` columns; None when the first line is no such header."""
    first = text.lstrip().split("\n", 1)[0]
    header = [h.strip().lower() for h in first.split(",")]
    if "offset" not in header or "value" not in header:
        return None
    reader = csv.reader(io.StringIO(text.lstrip()))
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


def parse_text(text: str, path: str | None = None, table=None) -> Trace:
    """Parse a whole trace or snapshot. `table` (a RegisterTable) lets snapshot keys be register names."""
    if not text.strip():
        raise InputError("empty: no register accesses", path)
    if "\x00" in text[:4096]:
        raise InputError("binary data, not a text register trace", path)
    stripped = text.lstrip()
    if stripped.startswith("{"):
        return _snapshot_from_json(stripped, path, table)
    csv_trace = _snapshot_from_csv(text, path, table)
    if csv_trace is not None:
        return csv_trace
    formats: dict[str, int] = {}
    accesses: list[Access] = []
    snapshot: dict[int, int] = {}
    ignored = 0
    lineno = 0
    for lineno, line in enumerate(text.splitlines(), 1):
        try:
            parsed = _parse_line(line, lineno, path)
        except ValueError:  # a regex-matched number that int() refuses cannot happen; keep the boundary honest
            raise FormatError("unparseable number", where=[f"line {lineno}"], path=path) from None
        if parsed is None:
            if line.strip():
                ignored += 1
            continue
        fmt, item = parsed
        if fmt == FORMAT_SNAPSHOT:
            offset = _resolve_key(item[0], lineno, path, table)
            if offset is None:
                ignored += 1
                continue
            snapshot[offset] = item[1]
        else:
            accesses.append(item)
        formats[fmt] = formats.get(fmt, 0) + 1
    if accesses:
        # A trace wins: `0x48788 = 0x7f` lines inside a log are counted under "snapshot" but not used.
        return Trace(path=path, kind="trace", accesses=tuple(collapse_polls(accesses)), formats=formats,
                     lines=lineno, ignored=ignored + formats.get(FORMAT_SNAPSHOT, 0), raw_accesses=len(accesses))
    if snapshot:
        return Trace(path=path, kind="snapshot", snapshot=snapshot, formats=formats, lines=lineno,
                     ignored=ignored)
    raise InputError(f"no register accesses in {lineno} lines (expected libedgetpu VLOG(5) `Write: offset = "
                     f"0x...` lines, [CSR@..] lines, `W 0x48788 0x7f` lines, or an offset=value snapshot)", path)


def read_trace(path, table=None) -> Trace:
    """Open a trace or snapshot file read-only and parse it; one InputError/FormatError when unusable."""
    from forensics.dump import check_readable_file

    path = str(path)
    size = check_readable_file(path)
    if size == 0:
        raise InputError("empty file: no register accesses", path)
    try:
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", path) from None
    # Logs from Windows tools are often UTF-16 or carry a BOM; garbage bytes elsewhere are replaced,
    # they can only be in lines we ignore.
    if data[:2] in (b"\xff\xfe", b"\xfe\xff"):
        text = data.decode("utf-16", errors="replace")
    elif b"\x00" in data[:4096]:
        raise InputError("binary data, not a text register trace", path)
    else:
        text = data.decode("utf-8-sig", errors="replace")
    return parse_text(text, path, table)
