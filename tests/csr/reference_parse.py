"""The original per-line trace parser, kept as the oracle for the bulk parser in forensics/csr/parse.py.

One line at a time, in order, exactly as `forensics csr` parsed before the bulk parser: cheap substring
tests pick a format, the per-line regex decides, numbers are converted and checked as they come, and
reads are collapsed into polls by a plain loop. Slow (a few microseconds a line) and obviously right;
test_parse_bulk.py checks that the bulk parser gives the same Trace, or the same error, on any log.
(One fix over the original: a libedgetpu value of more than 16 digits is checked even when the offset
also has more than 16 digits; the original only checked the offset then.)
"""

from __future__ import annotations

import re

from forensics.csr.parse import (
    FORMAT_CSR_NAME,
    FORMAT_CSR_OFFVAL,
    FORMAT_INIT_TAG,
    FORMAT_LIBEDGETPU,
    FORMAT_PLAIN,
    FORMAT_SNAPSHOT,
    MAX_VALUE,
    Access,
    Trace,
)
from forensics.core.errors import FormatError, InputError

_HEX = r"0x[0-9a-fA-F]+"
_NUM = r"(?:0x[0-9a-fA-F]+|\d+)"
_OPWORD = r"(?:(?P<op>R|W|RD|WR|READ|WRITE|R32|R64|W32|W64)\s+)?"

_LIBEDGETPU = re.compile(r"\b(?P<op>Write|Read): offset = 0x(?P<off>[0-9a-fA-F]+), value:? = 0x(?P<val>[0-9a-fA-F]+)")
_CSR_NAME = re.compile(r"\[CSR@(?P<tag>[^\]]*)\]\s*" + _OPWORD + r"(?P<name>[A-Za-z_][\w.]*)\s*@\s*(?P<off>" + _HEX
                       + r")\s*=\s*(?P<val>" + _NUM + r")\b", re.IGNORECASE)
_CSR_OFFVAL = re.compile(r"\[CSR@(?P<tag>[^\]]*)\]\s*" + _OPWORD + r"off(?:set)?\s*=\s*(?P<off>" + _NUM
                         + r")[\s,]+val(?:ue)?\s*=\s*(?P<val>" + _NUM + r")\b", re.IGNORECASE)
_INIT_TAG = re.compile(r"^\s*(?:\[[^\]\[]*\])+\s*(?P<name>[A-Za-z_][\w.]*)\s*@\s*(?P<off>" + _HEX
                       + r")\s+(?P<op>write|read)\s*=\s*(?P<val>" + _NUM + r")\s*$", re.IGNORECASE)
_PLAIN = re.compile(r"^\s*(?P<op>[RW])(?P<width>32|64)?\s+(?P<off>" + _NUM + r")\s*(?:=\s*)?(?P<val>" + _NUM
                    + r")\s*$", re.IGNORECASE)
_SNAPSHOT = re.compile(r"^\s*(?P<key>" + _HEX + r"|[A-Za-z_]\w*)\s*[=:,]\s*(?P<val>" + _NUM + r")\s*$")


def _int(text, lineno, what, path):
    if not text.isascii():  # the project's number grammar reads ASCII digits only (`٣` is no 3)
        raise FormatError("unparseable number", where=[f"line {lineno}"], path=path)
    try:
        value = int(text, 0)
    except ValueError:
        value = int(text, 10)
    if value > MAX_VALUE:
        raise FormatError(f"{what} {text} does not fit in 64 bits", where=[f"line {lineno}"], path=path)
    return value


def _digits_width(text):
    if text[:2].lower() == "0x":
        text = text[2:]
    return 32 if len(text) == 8 else 64 if len(text) == 16 else None


def _op_word(word):
    if not word:
        return "W", None
    word = word.upper()
    op = "R" if word.startswith("R") else "W"
    width = 32 if word.endswith("32") else 64 if word.endswith("64") else None
    return op, width


def parse_line(line, lineno, path):
    """(format, Access) for a trace line, (FORMAT_SNAPSHOT, (key, value, lineno)) for a snapshot line, or None."""
    if "offset = 0x" in line:
        m = _LIBEDGETPU.search(line)
        if m:
            off, val = m.group("off", "val")
            if len(off) > 16:
                _int("0x" + off, lineno, "offset", path)
            if len(val) > 16:
                _int("0x" + val, lineno, "value", path)
            return FORMAT_LIBEDGETPU, Access("W" if m.group("op") == "Write" else "R", int(off, 16), int(val, 16),
                                             32 if len(val) == 8 else 64 if len(val) == 16 else None,
                                             lineno, FORMAT_LIBEDGETPU)
    if "[CSR@" in line or "[csr@" in line:
        for fmt, rx in ((FORMAT_CSR_NAME, _CSR_NAME), (FORMAT_CSR_OFFVAL, _CSR_OFFVAL)):
            m = rx.search(line)
            if m:
                # no R/W word: a value the driver read (its register dump), kept with its tag
                op, width = _op_word(m.group("op")) if m.group("op") else ("R", None)
                val = m.group("val")
                label = m.group("name") if fmt == FORMAT_CSR_NAME else None
                return fmt, Access(op, _int(m.group("off"), lineno, "offset", path),
                                   _int(val, lineno, "value", path), width or _digits_width(val),
                                   lineno, fmt, 1, label, None if m.group("op") else m.group("tag"))
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


def collapse_polls(accesses):
    """Runs of reads of one offset (and width) become one POLL carrying the final value and the count."""
    out = []
    run_first = run_last = None
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


def resolve_key(key, lineno, path, table):
    if key[:2].lower() == "0x" or key.isdigit():
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


# DbgView / tracefmt columns before each message, as forensics.csr.parse documents them, cut here line by line
# (the bulk parser runs one regex over the whole text): when a line that starts in the first 64 KiB has them,
# they are cut from every line whose message after them is not blank.
_PREFIX = re.compile(r"[ \t]*\d+\t[0-9.:]+(?:[ \t]*[AP]M)?\t(?:\[\d+\][ \t]?)?"
                     r"|\[\d+\][0-9A-Fa-f]+\.[0-9A-Fa-f]+::\S+[ \t]+(?:\[[^\]\s]*\][ \t]*)?")


def _cut_prefix(line: str) -> str:
    m = _PREFIX.match(line)
    return line[m.end():] if m and line[m.end():].strip() else line


def without_prefixes(text: str) -> list:
    lines, start, head = [], 0, False
    for piece in text.splitlines(keepends=True):
        line = piece.splitlines()[0] if piece.splitlines() else ""
        head = head or (start < 1 << 16 and _cut_prefix(line) != line)
        lines.append(line)
        start += len(piece)
    return list(map(_cut_prefix, lines)) if head else lines


def parse_log(text, path=None, table=None) -> Trace:
    """The line-by-line loop of the original parse_text (a log: not JSON, not a CSV snapshot), on the lines
    without their log viewer's columns."""
    formats, accesses, snapshot = {}, [], {}
    ignored = 0
    lineno = 0
    for lineno, line in enumerate(without_prefixes(text), 1):
        parsed = parse_line(line, lineno, path)
        if parsed is None:
            if line.strip():
                ignored += 1
            continue
        fmt, item = parsed
        if fmt == FORMAT_SNAPSHOT:
            offset = resolve_key(item[0], lineno, path, table)
            if offset is None:
                ignored += 1
                continue
            snapshot[offset] = item[1]
        else:
            accesses.append(item)
        formats[fmt] = formats.get(fmt, 0) + 1
    if accesses and all(a.tag is not None for a in accesses):  # all of them a register dump's reads
        return Trace(path=path, kind="dump", accesses=tuple(accesses), formats=formats, lines=lineno,
                     ignored=ignored + formats.get(FORMAT_SNAPSHOT, 0), raw_accesses=len(accesses))
    if accesses:
        return Trace(path=path, kind="trace", accesses=tuple(collapse_polls(accesses)), formats=formats,
                     lines=lineno, ignored=ignored + formats.get(FORMAT_SNAPSHOT, 0), raw_accesses=len(accesses))
    if snapshot:
        return Trace(path=path, kind="snapshot", snapshot=snapshot, formats=formats, lines=lineno,
                     ignored=ignored)
    raise InputError(f"no register accesses in {lineno} lines", path)
