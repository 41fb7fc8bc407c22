"""Fingerprints: what a kernel driver can afford to log about a buffer, computed here and checked from a log.

A driver prints, for each buffer it uploads, its size, CRC32 (zlib's), the xor-fold of its little-endian
64-bit words (the trailing partial word zero-extended), 16 bytes at HEAD / MID / TAIL (offsets as
`forensics crc` picks them) and, per page, the first and last 8 bytes. `fingerprint_dump` computes them;
`parse_log` reads them back from a driver log (the one-line `[FP]` form, the `[INPUT-CHK]` page style,
`size` / `CRC32` / `HEAD` lines, or a user pattern); `verify_log` checks every logged value against files.

The `[FP]` line (one per buffer; anything may precede it, e.g. DbgView columns):
`[FP] <tag> size=<dec> crc32=0x<8 hex> xor64=0x<16 hex> head@0x<hex>=<bytes> mid@0x<hex>=<bytes> tail@0x<hex>=<bytes>`
"""

from __future__ import annotations

import itertools
import os
import re
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from forensics.compare.crc import PEEK, crc_dump, format_crc
from forensics.io.dump import DEFAULT_CHUNK, Dump
from forensics.core.errors import InputError
from forensics.core.verdict import Verdict

EDGE = 8  # bytes of a page's first8 / last8
_TAG = re.compile(r"^[A-Za-z0-9_.:-]+$")


def xor_fold64(dump: Dump, *, progress=None) -> int:
    """XOR of all little-endian 64-bit words of the dump, the trailing partial word zero-extended."""
    return _stream(dump, 0, progress=progress)[0]


def _stream(dump: Dump, page_size: int, *, progress=None) -> tuple[int, list[bytes], list[bytes]]:
    """One pass over the dump: its xor-fold, and (page_size > 0) the first and last EDGE bytes of every page
    (fewer in a page shorter than EDGE), taken from each window with numpy (a 4 GiB dump has a million pages:
    one read each cost minutes)."""
    acc = np.uint64(0)
    carry = b""
    firsts: list[bytes] = []
    lasts: list[bytes] = []
    chunk = DEFAULT_CHUNK if page_size <= 0 else max(page_size, DEFAULT_CHUNK // page_size * page_size)
    for pos, view in dump.iter_chunks(chunk_size=chunk):
        block = carry + bytes(view) if carry else view
        whole = len(block) // 8 * 8
        if whole:
            acc ^= np.bitwise_xor.reduce(np.frombuffer(block[:whole], dtype="<u8"))
        carry = bytes(block[whole:])
        if page_size > 0:  # windows start on page boundaries (chunk is a multiple of page_size)
            data = np.frombuffer(view, dtype=np.uint8)
            full = len(data) // page_size
            if full and page_size >= EDGE:
                pages = data[:full * page_size].reshape(full, page_size)
                head, tail = pages[:, :EDGE].tobytes(), pages[:, -EDGE:].tobytes()
                firsts.extend(head[i:i + EDGE] for i in range(0, full * EDGE, EDGE))
                lasts.extend(tail[i:i + EDGE] for i in range(0, full * EDGE, EDGE))
            else:
                full = 0
            for start in range(full * page_size, len(data), page_size):  # a short last page, or small pages
                page = bytes(data[start:start + page_size])
                firsts.append(page[:EDGE])
                lasts.append(page[max(0, len(page) - EDGE):])
        if progress is not None:
            progress(pos + len(view), dump.size)
    if carry:
        acc ^= np.uint64(int.from_bytes(carry.ljust(8, b"\0"), "little"))
    return int(acc), firsts, lasts


def peek_offsets(size: int) -> dict[str, int]:
    """HEAD / MID / TAIL offsets exactly as `forensics crc` picks them."""
    return {"head": 0, "mid": max(0, size // 2 - PEEK // 2), "tail": max(0, size - PEEK)}


def default_tag(path: str) -> str:
    stem = os.path.splitext(os.path.basename(path))[0]
    tag = re.sub(r"[^A-Za-z0-9_.:-]", "_", stem)
    return tag or "buffer"


class PageEdges(NamedTuple):
    """A page's first and last EDGE bytes (a tuple: a 4 GiB buffer has a million of them)."""

    index: int
    first8: bytes
    last8_offset: int
    last8: bytes

    def to_dict(self) -> dict:
        return {"page": self.index, "first8": self.first8.hex(" "), "last8_offset": self.last8_offset,
                "last8": self.last8.hex(" ")}


@dataclass(frozen=True)
class Fingerprint:
    tag: str
    path: str
    size: int
    crc32: int
    xor64: int
    head: bytes
    mid_offset: int
    mid: bytes
    tail_offset: int
    tail: bytes
    page_size: int
    pages: tuple[PageEdges, ...]
    source: dict = field(default_factory=dict)

    def fp_line(self) -> str:
        """The one-line `[FP]` form (lowercase hex)."""
        return (f"[FP] {self.tag} size={self.size} crc32={format_crc(self.crc32)} xor64=0x{self.xor64:016x} "
                f"head@0x0={self.head.hex(' ')} mid@0x{self.mid_offset:x}={self.mid.hex(' ')} "
                f"tail@0x{self.tail_offset:x}={self.tail.hex(' ')}")

    def to_dict(self) -> dict:
        return {
            "tag": self.tag, "path": self.path, "size": self.size, "crc32": format_crc(self.crc32),
            "xor64": f"0x{self.xor64:016x}", "head": {"offset": 0, "bytes": self.head.hex(" ")},
            "mid": {"offset": self.mid_offset, "bytes": self.mid.hex(" ")},
            "tail": {"offset": self.tail_offset, "bytes": self.tail.hex(" ")},
            "page_size": self.page_size, "pages": [p.to_dict() for p in self.pages],
            "fp_line": self.fp_line(), **self.source,
        }


MAX_PAGES = 1 << 20  # pages listed by a fingerprint (a 4 GiB buffer in 4 KiB pages); beyond, a larger page


def _check_pages(dump: Dump, page_size: int) -> int:
    if page_size <= 0:
        raise InputError(f"page size must be positive, got {page_size}")
    count = (dump.size + page_size - 1) // page_size
    if count > MAX_PAGES:
        raise InputError(f"{dump.size:,} bytes are {count:,} pages of {page_size:,} bytes, more than the "
                         f"{MAX_PAGES:,} a fingerprint lists (MAX_PAGES): give a larger {{page}}", dump.path,
                         params=True)
    return count


def _page_edges(dump: Dump, page_size: int, firsts: list[bytes], lasts: list[bytes]) -> tuple[PageEdges, ...]:
    full = dump.size // page_size if page_size >= EDGE else 0  # whole pages: their last EDGE bytes end them
    out = list(map(PageEdges, range(full), firsts[:full], range(page_size - EDGE, full * page_size, page_size),
                   lasts[:full]))
    for index in range(full, len(firsts)):
        start = index * page_size
        end = min(start + page_size, dump.size)
        out.append(PageEdges(index, firsts[index], max(start, end - EDGE), lasts[index]))
    return tuple(out)


def page_edges(dump: Dump, page_size: int) -> tuple[PageEdges, ...]:
    """The first and last EDGE bytes of every page of the dump (one streaming pass)."""
    _check_pages(dump, page_size)
    return _page_edges(dump, page_size, *_stream(dump, page_size)[1:])


def fingerprint_dump(dump: Dump, *, page_size: int = 4096, tag: str | None = None, progress=None) -> Fingerprint:
    """Every value a driver may log for this dump (`progress(done, total)` is called while streaming)."""
    tag = tag or default_tag(dump.path)
    if not _TAG.match(tag):
        raise InputError(f"tag {tag!r} must be letters, digits and _ . : - only")
    _check_pages(dump, page_size)
    crc = crc_dump(dump)
    offsets = peek_offsets(dump.size)
    xor64, firsts, lasts = _stream(dump, page_size, progress=progress)
    return Fingerprint(
        tag=tag, path=dump.path, size=dump.size, crc32=crc.crc32, xor64=xor64,
        head=crc.head, mid_offset=offsets["mid"], mid=crc.mid, tail_offset=offsets["tail"], tail=crc.tail,
        page_size=page_size, pages=_page_edges(dump, page_size, firsts, lasts),
        source={k: v for k, v in dump.source().items() if k != "path" and v != "binary"},
    )


# --- reading a driver log ------------------------------------------------------------------------------

_BYTES = r"((?:[0-9A-Fa-f]{2}[ \t]){0,63}[0-9A-Fa-f]{2}|)"
_NUM = r"(0[xX][0-9A-Fa-f]+|\d+)"
FP_LINE = re.compile(
    r"\[FP\]\s+(?P<tag>[A-Za-z0-9_.:-]+)\s+size=(?P<size>\d+)\s+crc32=0[xX](?P<crc32>[0-9A-Fa-f]{8})\s+"
    r"xor64=0[xX](?P<xor64>[0-9A-Fa-f]{16})\s+head@0[xX](?P<head_at>[0-9A-Fa-f]+)=(?P<head>" + _BYTES[1:-1] + r")"
    r"\s+mid@0[xX](?P<mid_at>[0-9A-Fa-f]+)=(?P<mid>" + _BYTES[1:-1] + r")"
    r"\s+tail@0[xX](?P<tail_at>[0-9A-Fa-f]+)=(?P<tail>" + _BYTES[1:-1] + r")\s*$")
_CHK_TAG = re.compile(r"\[([A-Za-z0-9_.:]+)-CHK\]")
_PAGE = re.compile(r"\bpage\[(\d+)\](?:\s*\(last\))?\s*first8\s*=\s*" + _BYTES, re.I)
_LAST8 = re.compile(r"\blast8\s*\(\s*@\s*" + _NUM + r"\s*\)\s*=\s*" + _BYTES, re.I)
_XOR = re.compile(r"\bxor(?:-?fold)?(?:-?64)?\b[^=\n]*=\s*0[xX]([0-9A-Fa-f]{1,16})\b(?:\s+over\s+([\d,]+)\s+bytes)?",
                  re.I)
_SIZE = re.compile(r"\bsize\s*[=:]\s*([\d,]+)\b(?:\s*bytes)?", re.I)
_CRC = re.compile(r"\bcrc-?32\s*[=:]\s*(?:0[xX])?([0-9A-Fa-f]{8})\b", re.I)
_PEEK = re.compile(r"\b(head|mid|tail)\b\s*(?:@\s*" + _NUM + r")?\s*[=:]\s*" + _BYTES + r"\s*$", re.I)
_CRC_TABLE_PEEK = re.compile(r"^\s*(HEAD|MID|TAIL)?\s+0x([0-9a-f]+)\s+" + _BYTES + r"(?:\s{2,}\S.*)?$")
_CRC_TABLE_FILE = re.compile(r"^\s*(\S+)\s+([\d,]+)\s+0x([0-9a-f]{8})(?:\s+(?:-|MATCH|DIFFER)\s*)?$")
PATTERN_GROUPS = ("offset", "page", "bytes", "crc32", "xor64", "size")


def _may_hold_values(line: str) -> bool:
    """False for a line _parse_line finds nothing in without --pattern: every value it reads needs one of these
    words ([FP], page[, last8, xor, crc, size, head / mid / tail; its searches are case-blind but [FP]'s).
    Substring tests of the lowered line: a case-blind alternation search cost 5 us a line."""
    low = line.lower()
    return ("[fp]" in low or "page[" in low or "last8" in low or "xor" in low or "crc" in low or "size" in low
            or "head" in low or "mid" in low or "tail" in low)


@dataclass(frozen=True)
class Logged:
    """One value a log states about a buffer: kind is size / crc32 / xor64 / bytes."""

    tag: str | None
    kind: str
    expected: object  # int for size / crc32 / xor64, bytes for a byte run
    line: int
    label: str
    offset: int | None = None  # byte runs: absolute offset; pages are resolved with the page size
    width: int | None = None  # byte runs: the bytes the form announces (16 for HEAD / MID / TAIL, 8 for
    #                           first8 / last8), fewer only where the buffer ends: a shorter run was cut


def _hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


def _int(text: str) -> int:
    return int(text.replace(",", ""), 0)


def _parse_line(line: str, lineno: int, page_size: int, pattern, tag_now: str | None) -> list[Logged]:
    out: list[Logged] = []
    if pattern is not None:
        m = pattern.search(line)
        if not m:
            return out
        g = {k: v for k, v in m.groupdict().items() if v is not None}
        tag = g.get("tag", tag_now)
        if "bytes" in g:
            if "offset" in g:
                offset = _int(g["offset"])
            elif "page" in g:
                offset = _int(g["page"]) * page_size
            else:
                raise InputError(f"line {lineno}: --pattern matched bytes without an 'offset' or 'page' group")
            out.append(Logged(tag, "bytes", _hexbytes(g["bytes"]), lineno, f"bytes@0x{offset:x}", offset))
        if "crc32" in g:
            out.append(Logged(tag, "crc32", int(g["crc32"].lower().removeprefix("0x"), 16), lineno, "crc32"))
        if "xor64" in g:
            out.append(Logged(tag, "xor64", int(g["xor64"].lower().removeprefix("0x"), 16), lineno, "xor64"))
        if "size" in g:
            out.append(Logged(tag, "size", _int(g["size"]), lineno, "size"))
        return out
    m = FP_LINE.search(line)
    if m:
        tag = m["tag"]
        out.append(Logged(tag, "size", int(m["size"]), lineno, "size"))
        out.append(Logged(tag, "crc32", int(m["crc32"], 16), lineno, "crc32"))
        out.append(Logged(tag, "xor64", int(m["xor64"], 16), lineno, "xor64"))
        for part in ("head", "mid", "tail"):
            offset = int(m[part + "_at"], 16)
            out.append(Logged(tag, "bytes", _hexbytes(m[part]), lineno, f"{part}@0x{offset:x}", offset, PEEK))
        return out
    if "[FP]" in line:  # the one-line form, but not whole: cut short (TRUNCATED), else malformed
        cut = truncated_fp_line(line, lineno)
        if cut is None:
            raise ValueError("malformed [FP] line")
        return cut
    chk = _CHK_TAG.search(line)
    tag = chk.group(1) if chk else tag_now
    found_any = False
    page = _PAGE.search(line)
    if page:
        index = int(page.group(1))
        out.append(Logged(tag, "bytes", _hexbytes(page.group(2)), lineno, f"page[{index}] first8",
                          index * page_size, EDGE))
        found_any = True
    last8 = _LAST8.search(line)
    if last8:
        offset = int(last8.group(1), 0)
        out.append(Logged(tag, "bytes", _hexbytes(last8.group(2)), lineno, f"last8@0x{offset:x}", offset, EDGE))
        found_any = True
    xor = _XOR.search(line)
    if xor:
        out.append(Logged(tag, "xor64", int(xor.group(1), 16), lineno, "xor64"))
        if xor.group(2):
            out.append(Logged(tag, "size", _int(xor.group(2)), lineno, "size"))
        found_any = True
    if found_any:
        return out
    crc = _CRC.search(line)
    if crc:
        out.append(Logged(tag, "crc32", int(crc.group(1), 16), lineno, "crc32"))
    size = _SIZE.search(line)
    if size:
        out.append(Logged(tag, "size", _int(size.group(1)), lineno, "size"))
    peek = _PEEK.search(line)
    if peek:
        part = peek.group(1).lower()
        offset = int(peek.group(2), 0) if peek.group(2) else (0 if part == "head" else None)
        label = part if peek.group(2) is None else f"{part}@0x{offset:x}"
        # MID / TAIL without an offset (offset None) are read where `forensics crc` takes them
        out.append(Logged(tag, "bytes", _hexbytes(peek.group(3)), lineno, label, offset, PEEK))
    return out


# The [FP] line's fields in order: (name, key, a whole value, a value cut short). A line that stops inside
# this sequence (DbgPrint's 512-byte limit, a paste) was truncated: what it holds before the cut is checked,
# and the line itself is judged TRUNCATED, never MATCH.
_HEX_RUN = r"(?:[0-9A-Fa-f]{2}(?:[ \t]+(?=[0-9A-Fa-f])|(?=\s|$)))*"
_CUT_RUN = r"[0-9A-Fa-f]*(?:=(?:[0-9A-Fa-f]{2}[ \t]+)*[0-9A-Fa-f]?)?"  # offset, then pairs, one digit of the last
_FP_FIELDS = (
    ("size", "size=", r"(\d+)(?=\s|$)", r"\d*"),
    ("crc32", "crc32=0x", r"([0-9A-Fa-f]{8})(?=\s|$)", r"[0-9A-Fa-f]{0,7}"),
    ("xor64", "xor64=0x", r"([0-9A-Fa-f]{16})(?=\s|$)", r"[0-9A-Fa-f]{0,15}"),
    ("head", "head@0x", r"([0-9A-Fa-f]+)=(" + _HEX_RUN + r")(?=\s|$)", _CUT_RUN),
    ("mid", "mid@0x", r"([0-9A-Fa-f]+)=(" + _HEX_RUN + r")(?=\s|$)", _CUT_RUN),
    ("tail", "tail@0x", r"([0-9A-Fa-f]+)=(" + _HEX_RUN + r")(?=\s|$)", _CUT_RUN),
)
_FP_START = re.compile(r"\[FP\](?:\s+(?P<tag>[A-Za-z0-9_.:-]+))?")


def _cut_inside(rest: str, key: str, partial: str) -> bool:
    """Whether `rest` (what follows the last whole field) is the start of field `key`, cut short."""
    piece = rest.strip()
    if not rest[:1].isspace() or any(c.isspace() for c in piece.split("=", 1)[0]):
        return False
    low, key = piece.lower(), key.lower()
    return key.startswith(low) or (low.startswith(key) and re.fullmatch(partial, piece[len(key):]) is not None)


def truncated_fp_line(line: str, lineno: int) -> list[Logged] | None:
    """An `[FP]` line cut short: the whole fields before the cut, then one `truncated` item naming the cut
    (a field missing, or the last one ending mid-value). None when the line is malformed, not cut."""
    start = _FP_START.search(line)
    tag = start["tag"]

    def cut(what: str) -> list[Logged]:
        return [Logged(tag, "truncated", what, lineno, "[FP] line")]

    if tag is None:
        return cut("ends before the tag") if not line[start.end():].strip() else None
    out: list[Logged] = []
    pos = start.end()
    for name, key, whole, partial in _FP_FIELDS:
        rest = line[pos:]
        if not rest.strip():
            if out and out[-1].kind == "size" and not line[pos:]:
                # the line ends right after this value: its digits may be cut too ("size=40" of 4096)
                return out[:-1] + cut(f"ends at {out[-1].label} (its value may be cut), before {name}")
            return out + cut(f"ends before {name}")
        if out and out[-1].kind == "bytes" and re.fullmatch(r"[ \t]+[0-9A-Fa-f]\s*", rest):
            return out[:-1] + cut(f"ends inside {out[-1].label.split('@')[0]} (half a byte)")
        m = re.match(r"\s+" + re.escape(key) + whole, rest, re.I)
        if m is None:
            return out + cut(f"ends inside {name}") if _cut_inside(rest, key, partial) else None
        if name == "size":
            out.append(Logged(tag, "size", int(m[1]), lineno, "size"))
        elif name in ("crc32", "xor64"):
            out.append(Logged(tag, name, int(m[1], 16), lineno, name))
        else:
            offset = int(m[1], 16)
            out.append(Logged(tag, "bytes", _hexbytes(m[2]), lineno, f"{name}@0x{offset:x}", offset, PEEK))
        pos += m.end()
    if re.fullmatch(r"[ \t]+[0-9A-Fa-f]\s*", line[pos:]):
        return out[:-1] + cut("ends inside tail (half a byte)")
    return out if not line[pos:].strip() else None


def _parse_crc_table(lines: list[str]) -> list[Logged]:
    """`forensics crc` output pasted into a log: the files table and the HEAD / MID / TAIL rows."""
    out: list[Logged] = []
    part = None
    for lineno, line in enumerate(lines, start=1):
        m = _CRC_TABLE_FILE.match(line)
        if m and not line.lstrip().startswith(("HEAD", "MID", "TAIL")):
            tag = default_tag(m.group(1))
            out.append(Logged(tag, "size", _int(m.group(2)), lineno, "size"))
            out.append(Logged(tag, "crc32", int(m.group(3), 16), lineno, "crc32"))
            continue
        m = _CRC_TABLE_PEEK.match(line)
        if m and (m.group(1) or part):
            part = (m.group(1) or part).lower()
            rest = line[m.end(3):].strip()
            tag = default_tag(rest) if rest else None
            offset = int(m.group(2), 16)
            out.append(Logged(tag, "bytes", _hexbytes(m.group(3)), lineno, f"{part}@0x{offset:x}", offset, PEEK))
    return out


def parse_log(text, *, path: str = "<log>", page_size: int = 4096, pattern: str | None = None) -> list[Logged]:
    """Every fingerprint value in a driver log (its text, or an iterable of its lines, read once). A log
    without any is an InputError naming it."""
    compiled = None
    if pattern is not None:
        try:
            compiled = re.compile(pattern)
        except re.error as exc:
            raise InputError("{pattern} is not a regular expression: " + str(exc).replace("{", "{{").replace("}", "}}"),
                             params=True) from None
        if not set(compiled.groupindex) & set(PATTERN_GROUPS):
            raise InputError(f"pattern needs a named group among {', '.join(PATTERN_GROUPS)}, e.g. "
                             r"(?P<crc32>[0-9a-f]{8})")
    from forensics.io.textdump import iter_lines

    lines = iter_lines(text) if isinstance(text, str) else iter(text)
    head = list(itertools.islice(lines, 2000))  # what tells a pasted `forensics crc` table
    lines = itertools.chain(head, lines)
    if compiled is None and any(l.lstrip().startswith(("HEAD ", "MID ", "TAIL ")) for l in head) \
            and any("CRC32" in l for l in head[:50]):
        found = _parse_crc_table(lines)
    else:
        found = []
        # a driver log is mostly other messages: one search for any word a fingerprint value needs skips them
        maybe = _may_hold_values if compiled is None else (lambda line: True)
        for lineno, line in enumerate(lines, start=1):
            if not maybe(line):
                continue
            try:
                found.extend(_parse_line(line, lineno, page_size, compiled, None))
            except ValueError as exc:
                what = "a malformed [FP] line (expected [FP] TAG size=N crc32=0x.. xor64=0x.. head@0x..=.. " \
                       "mid@0x..=.. tail@0x..=..)" if "[FP]" in str(exc) else "malformed fingerprint value"
                raise InputError(f"line {lineno}: {what}", path) from None
    if not found:
        raise InputError("no fingerprints found (expected [FP] lines, [..-CHK] page / xor-fold lines, size / "
                         "CRC32 / HEAD / MID / TAIL lines, or lines matching --pattern)", path)
    return found


# --- checking a log against files ----------------------------------------------------------------------

@dataclass(frozen=True)
class Check:
    tag: str | None
    file: str
    kind: str
    label: str
    line: int
    offset: int | None
    expected: str
    found: str
    match: bool

    def to_dict(self) -> dict:
        return {"tag": self.tag, "file": self.file, "kind": self.kind, "what": self.label, "line": self.line,
                "offset": self.offset, "expected": self.expected, "found": self.found, "match": self.match}


@dataclass(frozen=True)
class VerifyReport:
    log: str
    checks: tuple[Check, ...]
    unassigned: tuple[str, ...]  # tags in the log with no file to check them against
    sources: tuple[dict, ...] = ()

    @property
    def match(self) -> bool:
        return bool(self.checks) and all(c.match for c in self.checks)

    @property
    def truncated(self) -> tuple[Check, ...]:
        """The checks of logged values cut short (a line or a byte run): nothing can MATCH through them."""
        return tuple(c for c in self.checks if c.kind == "truncated")

    @property
    def verdict(self) -> Verdict:
        """MATCH; DIFFER when a whole logged value differs; else TRUNCATED when a logged line was cut short."""
        if self.match:
            return Verdict.MATCH
        if any(not c.match and c.kind != "truncated" for c in self.checks):
            return Verdict.DIFFER
        return Verdict.TRUNCATED

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def to_dict(self) -> dict:
        return {"log": self.log, "verdict": self.verdict, "checks": [c.to_dict() for c in self.checks],
                "matched": sum(c.match for c in self.checks), "differ": sum(not c.match for c in self.checks),
                "unassigned_tags": list(self.unassigned), "files": list(self.sources)}


def _assign(tags: list, files: list[str], buffers: dict[str, str]) -> dict:
    """tag -> file: --buffer TAG=FILE first, then a file whose stem is the tag, then the only file."""
    stems = {}
    for f in files:
        stems.setdefault(default_tag(f).lower(), f)
    out = {}
    for tag in tags:
        if tag is not None and tag in buffers:
            out[tag] = buffers[tag]
        elif tag is not None and tag.lower() in stems:
            out[tag] = stems[tag.lower()]
        elif tag is not None and tag.lower() in {t.lower() for t in buffers}:
            out[tag] = next(v for k, v in buffers.items() if k.lower() == tag.lower())
        elif len(files) == 1:  # the only positional file takes every buffer not named otherwise
            out[tag] = files[0]
    return out


def verify_log(log_path: str, files=(), *, buffers: dict[str, str] | None = None, page_size: int = 4096,
               pattern: str | None = None, progress=None, **dump_options) -> VerifyReport:
    """Check every fingerprint value of a driver log against the files (dump_options go to open_dump)."""
    from forensics.io.dump import open_dump
    from forensics.io.textdump import text_lines

    buffers = dict(buffers or {})
    open_lines, _ = text_lines(log_path, "a driver log")  # read line by line: memory follows the values found
    logged = parse_log(open_lines(), path=log_path, page_size=page_size, pattern=pattern)
    if not files and not buffers:
        raise InputError("give the files to check: FILE... or {buffer:TAG=FILE}", params=True)
    tags = list(dict.fromkeys(item.tag for item in logged))
    where = _assign(tags, list(files), buffers)
    dumps: dict[str, Dump] = {}
    cache: dict[tuple, object] = {}
    checks = []
    readers: dict[str, object] = {}  # one open reader per file for the byte runs (a page log has thousands)
    for item in logged:
        path = where.get(item.tag)
        if path is None:
            continue
        if path not in dumps:
            dumps[path] = open_dump(path, allow_empty=True, use_sidecar=False, **dump_options)
        dump = dumps[path]
        offset = item.offset
        if item.kind == "truncated":  # the line stops before what it announces: judged TRUNCATED, never MATCH
            checks.append(Check(item.tag, path, "truncated", item.label, item.line, None, "the whole line",
                                item.expected, False))
            continue
        if item.kind == "size":
            expected, found = f"{item.expected:,}", f"{dump.size:,}"
            match = item.expected == dump.size
        elif item.kind == "crc32":
            key = ("crc", path)
            if key not in cache:
                cache[key] = crc_dump(dump).crc32
            expected, found = format_crc(item.expected), format_crc(cache[key])
            match = item.expected == cache[key]
        elif item.kind == "xor64":
            key = ("xor", path)
            if key not in cache:
                cache[key] = xor_fold64(dump, progress=progress)
            expected, found = f"0x{item.expected:016x}", f"0x{cache[key]:016x}"
            match = item.expected == cache[key]
        else:
            if offset is None:  # MID / TAIL named without an offset: where `forensics crc` takes them
                offset = peek_offsets(dump.size)[item.label]
            got = _read(readers, dump, offset, len(item.expected))
            expected, found = item.expected.hex(" "), got.hex(" ") if got else "(past the end)"
            match = got == item.expected
            announced = None if item.width is None else min(item.width, max(0, dump.size - offset))
            if match and announced is not None and len(item.expected) < announced:
                # fewer bytes than the form announces, and the buffer does not end there: the run was cut
                checks.append(Check(item.tag, path, "truncated", item.label, item.line, offset,
                                    f"{announced} bytes", f"{len(item.expected)} logged (cut short)", False))
                continue
        checks.append(Check(item.tag, path, item.kind, item.label, item.line, offset, expected, found, match))
    for reader in readers.values():  # (on an error they close as the dict goes)
        reader.close()
    unassigned = tuple(sorted({str(t) if t is not None else "(untagged)" for t in tags if t not in where}))
    if not checks:
        names = ", ".join(unassigned)
        raise InputError(f"no file given for the buffers the log names ({names}): use {{buffer:TAG=FILE}}", log_path,
                         params=True)
    return VerifyReport(log_path, tuple(checks), unassigned, tuple(d.source() for d in dumps.values()))


def _read(readers: dict, dump: Dump, offset: int, length: int) -> bytes:
    """Up to `length` bytes of the dump at `offset` (short at the end, empty past it), through its one reader."""
    from forensics.io.dump import DumpReader

    if offset >= dump.size or length <= 0:
        return b""
    if dump.path not in readers:
        readers[dump.path] = DumpReader(dump)
    buf = bytearray(min(length, dump.size - offset))
    readers[dump.path].read_exact(offset, memoryview(buf))
    return bytes(buf)
