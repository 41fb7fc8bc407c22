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

import dataclasses
import functools
import itertools
import os
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import NamedTuple

import numpy as np

from forensics.core import serial
from forensics.compare.crc import PEEK, crc_dump, format_crc
from forensics.io.dump import DEFAULT_CHUNK, Dump
from forensics.io.textdump import CONSOLE_HEAD, CONSOLE_TOTAL, DRIVER_BUFFERS, PREFILL_SIZE, DriverRows, driver_buffer
from forensics.core.errors import InputError, verbatim
from forensics.core.judgement import Judgement, Reason
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

    def to_dict(self) -> dict:  # a NamedTuple (a million per 4 GiB buffer), not a Serial dataclass
        return {"page": self.index, "first8": self.first8.hex(" "), "last8_offset": self.last8_offset,
                "last8": self.last8.hex(" ")}


def _peek(offset_of, bytes_of):
    """A HEAD / MID / TAIL field pair: its document is one object {"offset", "bytes"} under the peek's name."""
    def write(fp):
        return {"offset": offset_of(fp), "bytes": bytes_of(fp).hex(" ")}

    return write


def _pages(doc: list) -> tuple[PageEdges, ...]:
    return tuple(PageEdges(p["page"], bytes.fromhex(p["first8"]), p["last8_offset"], bytes.fromhex(p["last8"]))
                 for p in doc)


@dataclass(frozen=True)
class Fingerprint(serial.Serial):
    """Every value a driver may log for a buffer. Its document writes HEAD / MID / TAIL with their offsets as one
    object each, the [FP] line beside them, and the source's keys (a text dump's, a slice's) spread in."""

    JSON_DERIVED = (("fp_line", "line"),)
    JSON_ORDER = ("tag", "path", "size", "crc32", "xor64", "head", "mid", "tail", "page_size", "pages", "fp_line")

    tag: str
    path: str
    size: int
    crc32: int = field(metadata=serial.json(encode=format_crc))
    xor64: int = field(metadata=serial.json(encode=lambda x: f"0x{x:016x}"))
    head: bytes = field(metadata=serial.json(write=_peek(lambda fp: 0, lambda fp: fp.head),
                                             read=lambda doc: bytes.fromhex(doc["head"]["bytes"])))
    mid_offset: int = field(metadata=serial.json("mid", write=_peek(lambda fp: fp.mid_offset, lambda fp: fp.mid),
                                                 read=lambda doc: doc["mid"]["offset"]))
    mid: bytes = field(metadata=serial.json(omit=lambda _: True, read=lambda doc: bytes.fromhex(doc["mid"]["bytes"])))
    tail_offset: int = field(metadata=serial.json("tail", write=_peek(lambda fp: fp.tail_offset, lambda fp: fp.tail),
                                                  read=lambda doc: doc["tail"]["offset"]))
    tail: bytes = field(metadata=serial.json(omit=lambda _: True,
                                             read=lambda doc: bytes.fromhex(doc["tail"]["bytes"])))
    page_size: int
    pages: tuple[PageEdges, ...] = field(metadata=serial.json(encode=lambda pages: [p.to_dict() for p in pages],
                                                              decode=_pages))
    source: dict = field(default_factory=dict, metadata=serial.json(spread=True))

    def fp_line(self) -> str:
        """The one-line `[FP]` form (lowercase hex)."""
        return (f"[FP] {self.tag} size={self.size} crc32={format_crc(self.crc32)} xor64=0x{self.xor64:016x} "
                f"head@0x0={self.head.hex(' ')} mid@0x{self.mid_offset:x}={self.mid.hex(' ')} "
                f"tail@0x{self.tail_offset:x}={self.tail.hex(' ')}")

    @property
    def line(self) -> str:
        """The `[FP]` line, as the document writes it (`fp_line`)."""
        return self.fp_line()


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
    words ([FP], page[, last8, xor, crc, size, head / mid / tail; a driver tag's -OUT / BS-DUMP / SCAN-, sz=;
    the consoles' `--- ` headers and `actual`; BS-SCAN, VA[0]=, BOUNCE first, host buf; its searches are
    case-blind but [FP]'s). Substring tests of the lowered line: a case-blind alternation search cost 5 us a
    line. (The consoles' byte rows, which hold none of them, are read by the DriverRows that follows every
    line.)"""
    low = line.lower()
    return ("[fp]" in low or "page[" in low or "last8" in low or "xor" in low or "crc" in low or "size" in low
            or "head" in low or "mid" in low or "tail" in low or "-out" in low or "bs-dump" in low
            or "scan-" in low or "bs-scan" in low or "va[0]=" in low or "bounce first" in low or "host buf" in low
            or "sz=" in low or "--- " in low or "total=" in low or "actual" in low)


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
    # counts (nonzero / non_sentinel / first_non_sentinel): over [start, end) of the buffer (end None: its end),
    # of bytes that are not `sentinel` (nonzero: not 0)
    sentinel: int | None = None
    start: int = 0
    end: int | None = None


def _hexbytes(text: str) -> bytes:
    return bytes.fromhex("".join(text.split()))


def _int(text: str) -> int:
    return int(text.replace(",", ""), 0)


def _pattern_values(line: str, lineno: int, page_size: int, pattern, tag_now: str | None) -> list[Logged]:
    """What --pattern's named groups read off one line."""
    out: list[Logged] = []
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


def _fp_values(m, lineno: int) -> list[Logged]:
    """The values of a whole [FP] line (FP_LINE's match)."""
    tag = m["tag"]
    out = [Logged(tag, "size", int(m["size"]), lineno, "size"),
           Logged(tag, "crc32", int(m["crc32"], 16), lineno, "crc32"),
           Logged(tag, "xor64", int(m["xor64"], 16), lineno, "xor64")]
    for part in ("head", "mid", "tail"):
        offset = int(m[part + "_at"], 16)
        out.append(Logged(tag, "bytes", _hexbytes(m[part]), lineno, f"{part}@0x{offset:x}", offset, PEEK))
    return out


def _chk_values(line: str, lineno: int, page_size: int, tag_now: str | None) -> list[Logged]:
    """The values of a [..-CHK] line (page first8 / last8, xor-fold, size, CRC32, HEAD / MID / TAIL)."""
    out: list[Logged] = []
    chk = _CHK_TAG.search(line)
    tag = tag_now
    if chk:
        tag = chk.group(1)
        tag = driver_buffer(tag + "-CHK") if driver_buffer(tag + "-CHK") != tag + "-CHK" else tag
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
    size = _SIZE.search(line) if chk else None  # a size is a buffer's only on its own fingerprint line
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


def _parse_line(line: str, lineno: int, page_size: int, pattern, tag_now: str | None) -> list[Logged]:
    if pattern is not None:
        return _pattern_values(line, lineno, page_size, pattern, tag_now)
    m = FP_LINE.search(line)
    if m:
        return _fp_values(m, lineno)
    if "[FP]" in line:  # the one-line form, but not whole: cut short (TRUNCATED), else malformed
        cut = truncated_fp_line(line, lineno)
        if cut is None:
            raise ValueError("malformed [FP] line")
        return cut
    driver = _driver_line(line, lineno)
    if driver is not None:
        return driver
    return _chk_values(line, lineno, page_size, tag_now)


# The real driver's lines of its buffers (npu_driver Device.c, Queue.c; the consoles), each read for what it states
# and where: sizes, byte runs at their offsets, and the counts of its scans (nonzero, non-0xCC with the first
# non-0xCC offset over the whole output; non-0xA5 past the descriptors of the ring and the status block).
_B16 = r"((?:[0-9A-Fa-f]{2}[ \t]{1,2}){15}[0-9A-Fa-f]{2})"
_B32 = r"((?:[0-9A-Fa-f]{2}[ \t]{1,2}){31}[0-9A-Fa-f]{2})"
_B8 = r"((?:[0-9A-Fa-f]{2}[ \t]{1,2}){7}[0-9A-Fa-f]{2})"
_DRIVER_TAG = re.compile(r"\[((?:DPC-)?SCAN-[A-Za-z]+|DPC-OUT(?:/\w+)?|DONE-OUT|BS-DUMP|BS-SCAN|INPUT-VERIFY)\]")
_DPC_OUT = re.compile(r"kernel VA=\S+\s+outVA=0x[0-9A-Fa-f]+\s+size=(\d+)\s+nonzero=(\d+)\s+non-0xCC=(\d+)\s+"
                      r"\(FULL scan\)\s+firstNon0xCC@0x([0-9A-Fa-f]+)")
_DONE_OUT = re.compile(r"kernel VA=\S+\s+outVA=0x[0-9A-Fa-f]+\s+size=(\d+)\s+nonzero\(first (\d+) B\)=(\d+)")
_BS_SIZE = re.compile(r"kernel VA=\S+\s+size=(\d+)\s+\(0x[0-9A-Fa-f]+\)")
_SCAN_SZ = re.compile(r"\bsz=(\d+)\s+first16=" + _B16 + r"\s*\|\s*(?:tail16=" + _B16 + r"|@\+0x[0-9A-Fa-f]+ "
                      r"\(=[^)]*=0x([0-9A-Fa-f]+)\):\s+" + _B16 + r")")
_SCAN_HEAD32 = re.compile(r"(?:descs|head)\[0\.\.31\]=" + _B32 + r"\s*\|\s*post-(\d+) non-A5 bytes=(\d+) "
                          r"firstAt=0x([0-9A-Fa-f]+)")
_SCAN_FIRST32 = re.compile(r"\bfirst32=" + _B32)
_SCAN_RING = re.compile(r"\bpost-(\d+) non-0xA5=(\d+) firstAt=0x([0-9A-Fa-f]+)")
# Queue.c's scan of the bitstream for each patch value, as a 32-bit little-endian dword at offsets stepping by 4:
# `[BS-SCAN]   %s=0x%x found at off=0x%lx` (the first 4 hits): those 4 bytes there; `[BS-SCAN] %s 0x%08x: %lu
# hit(s)%s`: how many dwords at offsets 0, 4, .. (the last whole one) hold the value
_BS_HITS = re.compile(r"^\s*([\w\[\]]+) 0x([0-9A-Fa-f]{8}): (\d+) hit\(s\)")
_BS_FOUND = re.compile(r"^\s*([\w\[\]]+)=0x([0-9A-Fa-f]{1,8}) found at off=0x([0-9A-Fa-f]+)\s*$")
# Queue.c's readback of the input's page-table entries (simple addresses, the first up-to-4 pages):
# `[%s] PTE[%lu+%u]: expected=0x%llX readback=0x%llX %s | VA[0]=0x%llX`, VA[0] the page's first 8 bytes read as
# one little-endian qword (0xDEADDEAD when the driver could not map the buffer: no value)
_PTE_VA0 = re.compile(r"\bPTE\[(\d+)\+(\d+)\]: expected=0x[0-9A-Fa-f]+ readback=0x[0-9A-Fa-f]+ \w+ \| "
                      r"VA\[0\]=0x([0-9A-Fa-f]{1,16})\s*$")
_NOT_MAPPED = 0xDEADDEAD
# Device.c's DPC after copying the bounce buffer (what the chip wrote) to the user's output:
# `[%s] BOUNCE first 16B: %02x x8  %02x x8`, the output's first 16 bytes
_BOUNCE16 = re.compile(r"\bBOUNCE first 16B: " + _B16 + r"\s*$")
_VERIFY_XOR = re.compile(r"xor-fold post-DONE = 0x([0-9A-Fa-f]{16}) \(pre=0x([0-9A-Fa-f]{16})\)")
_VERIFY_PAGE = re.compile(r"page\[0\] first8 post-DONE=" + _B8)
_NONE = 0xFFFFFFFF  # the driver's "no such byte" offset (firstNon0xCC, firstAt)
RING_PAGE = 4096  # the descriptor ring's and the status block's page (the driver's PAGE_SIZE)


def _counts(tag, lineno, sentinel, start, end, nonzero, non, first, what) -> list[Logged]:
    out = []
    if nonzero is not None:
        out.append(Logged(tag, "nonzero", int(nonzero), lineno, "nonzero", start=start, end=end))
    name = f"non-0x{sentinel:02X}"
    out.append(Logged(tag, "non_sentinel", int(non), lineno, name + what, sentinel=sentinel, start=start, end=end))
    at = int(first, 16)
    out.append(Logged(tag, "first_non_sentinel", None if at == _NONE else at, lineno, f"first {name}" + what,
                      sentinel=sentinel, start=start, end=end))
    return out


def _driver_line(line: str, lineno: int) -> list[Logged] | None:
    """What one of the real driver's buffer lines states, or None when it is none of them."""
    if "Output buffer pre-filled" in line:
        m = PREFILL_SIZE.search(line)
        return [Logged("output", "size", int(m.group(1)), lineno, "size")] if m else None
    if "host buf" in line and (m := _HOST_INPUT.match(line)):
        return [Logged("input", "bytes", _hexbytes(m.group(1)), lineno, "host buf first 16", 0)]
    if "[" not in line:
        return None
    if "VA[0]=" in line and (m := _PTE_VA0.search(line)):
        page, value = int(m.group(2)), int(m.group(3), 16)
        if value == _NOT_MAPPED:
            return []
        return [Logged("input", "bytes", value.to_bytes(8, "little"), lineno, f"page[{page}] VA[0]",
                       page * RING_PAGE, EDGE)]
    if "BOUNCE first 16B" in line and (m := _BOUNCE16.search(line)):
        return [Logged("output", "bytes", _hexbytes(m.group(1)), lineno, "BOUNCE first 16B", 0, 16)]
    row = DriverRows().row(line, lineno)  # `[DPC-OUT] [00] ..`, `[DPC-OUT/USER] tail64@0x..: ..`
    if row is not None:
        label = f"[{row.tag}] {row.label}" if row.label.startswith("[") else row.label  # tail64@0x1fc0
        return [Logged(row.buffer, "bytes", row.data, lineno, label, row.offset, 16)]
    m = _DRIVER_TAG.search(line)
    if m is None:
        return None
    tag = m.group(1)
    buffer = driver_buffer(tag)
    rest = line[m.end():]
    if tag == "BS-SCAN":
        return _bs_scan_values(buffer, rest, lineno)
    if tag == "INPUT-VERIFY":
        return _input_verify_values(buffer, rest, lineno)
    sized = _sized_values(tag, buffer, rest, lineno)
    return sized if sized is not None else _scan_values(buffer, rest, lineno)


def _sized_values(tag: str, buffer: str, rest: str, lineno: int) -> list[Logged] | None:
    """[DPC-OUT]'s full scan, [DONE-OUT]'s and [BS-DUMP]'s sizes (None: not one of them)."""
    if tag.startswith("DPC-OUT") and (h := _DPC_OUT.search(rest)):
        return [Logged(buffer, "size", int(h.group(1)), lineno, "size"),
                *_counts(buffer, lineno, 0xCC, 0, None, h.group(2), h.group(3), h.group(4), "")]
    if tag == "DONE-OUT" and (h := _DONE_OUT.search(rest)):
        scanned = int(h.group(2))
        return [Logged(buffer, "size", int(h.group(1)), lineno, "size"),
                Logged(buffer, "nonzero", int(h.group(3)), lineno, f"nonzero (first {scanned} B)", end=scanned)]
    if tag == "BS-DUMP" and (h := _BS_SIZE.search(rest)):
        return [Logged(buffer, "size", int(h.group(1)), lineno, "size")]
    return None


def _bs_scan_values(buffer: str, rest: str, lineno: int) -> list[Logged] | None:
    """[BS-SCAN]: a patch value found at an offset (its 4 bytes there), or how many dwords hold it."""
    if h := _BS_FOUND.search(rest):
        at = int(h.group(3), 16)
        return [Logged(buffer, "bytes", int(h.group(2), 16).to_bytes(4, "little"), lineno,
                       f"{h.group(1)}@0x{at:x}", at, 4)]
    if h := _BS_HITS.search(rest):
        return [Logged(buffer, "dword_hits", int(h.group(3)), lineno, f"{h.group(1)} 0x{h.group(2).lower()} hits",
                       sentinel=int(h.group(2), 16))]
    return None


def _input_verify_values(buffer: str, rest: str, lineno: int) -> list[Logged] | None:
    """[INPUT-VERIFY]: the xor-folds after DONE and before submitting, and page 0's first8 after DONE."""
    if h := _VERIFY_XOR.search(rest):
        return [Logged(buffer, "xor64", int(h.group(1), 16), lineno, "xor64 post-DONE"),
                Logged(buffer, "xor64", int(h.group(2), 16), lineno, "xor64 pre-submit")]
    if h := _VERIFY_PAGE.search(rest):
        return [Logged(buffer, "bytes", _hexbytes(h.group(1)), lineno, "page[0] first8 post-DONE", 0, EDGE)]
    return None


def _scan_values(buffer: str, rest: str, lineno: int) -> list[Logged] | None:
    """The [SCAN-..] / [DPC-SCAN-..] lines: sizes with first16 / tail16, first32 and the 0xA5 counts."""
    if h := _SCAN_SZ.search(rest):
        sz = int(h.group(1))
        out = [Logged(buffer, "size", sz, lineno, "size"),
               Logged(buffer, "bytes", _hexbytes(h.group(2)), lineno, "first16", 0, 16)]
        if h.group(3):
            out.append(Logged(buffer, "bytes", _hexbytes(h.group(3)), lineno, f"tail16@0x{sz - 16:x}", sz - 16, 16))
        else:  # SCAN-ParamData: bytes it held at that offset (past its end it prints 0)
            at = int(h.group(4), 16)
            held = _hexbytes(h.group(5))[:max(0, min(16, sz - at))]
            if held:
                out.append(Logged(buffer, "bytes", held, lineno, f"@0x{at:x}", at, len(held)))
        return out
    if h := _SCAN_HEAD32.search(rest):
        start = int(h.group(2))
        what = f" in [0x{start:x}, 0x{RING_PAGE:x})"
        return [Logged(buffer, "bytes", _hexbytes(h.group(1)), lineno, "first32", 0, 32),
                *_counts(buffer, lineno, 0xA5, start, RING_PAGE, None, h.group(3), h.group(4), what)]
    if h := _SCAN_FIRST32.search(rest):
        return [Logged(buffer, "bytes", _hexbytes(h.group(1)), lineno, "first32", 0, 32)]
    if h := _SCAN_RING.search(rest):
        start = int(h.group(1))
        what = f" in [0x{start:x}, 0x{RING_PAGE:x})"
        return _counts(buffer, lineno, 0xA5, start, RING_PAGE, None, h.group(2), h.group(3), what)
    return None


class _Console:
    """The consoles' output dumps, read line by line: the header's size and non-zero count (npu_test_console),
    `total= non-zero=` (add_model), the `  [%04x] ` rows, and the golden compare's `  actual  :` bytes."""

    def __init__(self):
        self.rows = DriverRows()
        self.golden = False

    def read(self, line: str, lineno: int) -> list[Logged]:
        row = self.rows.row(line, lineno)
        if row is not None and row.tag == "console":
            return [Logged("output", "bytes", row.data, lineno, f"console {row.label}", row.offset)]
        if "---" in line:
            self.golden = "--- golden compare ---" in line
            m = CONSOLE_HEAD.match(line)
            if m and m.group(1):
                return [Logged("output", "size", int(m.group(1)), lineno, "size"),
                        Logged("output", "nonzero", int(m.group(2)), lineno, "non-zero")]
        if "total=" in line and (m := CONSOLE_TOTAL.match(line)):
            return [Logged("output", "size", int(m.group(1)), lineno, "size"),
                    Logged("output", "nonzero", int(m.group(2)), lineno, "non-zero")]
        if self.golden and (m := _ACTUAL.match(line)):
            return [Logged("output", "bytes", _hexbytes(m.group(1)), lineno, "golden compare actual", 0)]
        return []


# add_model_test_console before INFER: `HexDump("input  (host buf, first 16)", in, min(INPUT_SIZE, 16))`, i.e.
# `  input  (host buf, first 16): xx xx ...` (std::hex, setw(2), setfill('0')): the input's first bytes
_HOST_INPUT = re.compile(r"^\s*input\s+\(host buf, first 16\):((?:\s[0-9a-f]{2}){1,16})\s*$")
_ACTUAL = re.compile(r"^\s*actual\s*:((?:\s[0-9a-f]{2})+)\s*$")


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


def _parse_crc_table(lines: list[str], texts: dict | None = None) -> list[Logged]:
    """`forensics crc` output pasted into a log: the files table and the HEAD / MID / TAIL rows."""
    out: list[Logged] = []
    part = None
    for lineno, line in enumerate(lines, start=1):
        if texts is not None:
            texts[lineno] = line
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


def _compiled_pattern(pattern: str | None):
    """--pattern compiled, or an InputError: not a regular expression, or none of PATTERN_GROUPS named."""
    if pattern is None:
        return None
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise InputError("{pattern} is not a regular expression: " + str(exc).replace("{", "{{").replace("}", "}}"),
                         params=True) from None
    if not set(compiled.groupindex) & set(PATTERN_GROUPS):
        raise InputError(f"pattern needs a named group among {', '.join(PATTERN_GROUPS)}, e.g. "
                         r"(?P<crc32>[0-9a-f]{8})")
    return compiled


def _parse_lines(lines, *, path: str, page_size: int, compiled, texts: dict | None) -> list[Logged]:
    """The values of a driver log's lines (a console's output dumps, a driver's own lines, --pattern's)."""
    found = []
    # a driver log is mostly other messages: one search for any word a fingerprint value needs skips them
    maybe = _may_hold_values if compiled is None else (lambda line: True)
    console = _Console() if compiled is None else None
    for lineno, line in enumerate(lines, start=1):
        if console is not None and (console.rows.console or "--- " in line or console.golden):
            items = console.read(line, lineno)
            if items:
                found.extend(items)
                if texts is not None:
                    texts[lineno] = line
                continue
        if not maybe(line):
            continue
        try:
            items = _parse_line(line, lineno, page_size, compiled, None)
            if items:
                found.extend(items)
                if texts is not None:
                    texts[lineno] = line
        except ValueError as exc:
            what = "a malformed [FP] line (expected [FP] TAG size=N crc32=0x.. xor64=0x.. head@0x..=.. " \
                   "mid@0x..=.. tail@0x..=..)" if "[FP]" in str(exc) else "malformed fingerprint value"
            raise InputError(f"line {lineno}: {what}", path) from None
    return found


def parse_log(text, *, path: str = "<log>", page_size: int = 4096, pattern: str | None = None,
              texts: dict | None = None) -> list[Logged]:
    """Every fingerprint value in a driver log (its text, or an iterable of its lines, read once). A log
    without any is an InputError naming it. `texts` (a dict) gets the text of each line that held values."""
    compiled = _compiled_pattern(pattern)
    from forensics.io.textdump import iter_lines

    lines = iter_lines(text) if isinstance(text, str) else iter(text)
    head = list(itertools.islice(lines, 2000))  # what tells a pasted `forensics crc` table
    lines = itertools.chain(head, lines)
    if compiled is None and any(l.lstrip().startswith(("HEAD ", "MID ", "TAIL ")) for l in head) \
            and any("CRC32" in l for l in head[:50]):
        found = _parse_crc_table(lines, texts)
    else:
        found = _parse_lines(lines, path=path, page_size=page_size, compiled=compiled, texts=texts)
    if not found:
        raise InputError("no fingerprints found (expected [FP] lines, [..-CHK] page / xor-fold / size / CRC32 / "
                         "HEAD / MID / TAIL lines, the driver's [DPC-OUT] / [DPC-SCAN-..] / [BS-DUMP] / "
                         "[INPUT-VERIFY] lines, a console's output dump, or lines matching --pattern)", path)
    return found


# --- checking a log against files ----------------------------------------------------------------------

@dataclass(frozen=True)
class Check(serial.Serial):
    JSON_ORDER = ("tag", "file", "kind", "what", "line", "offset", "expected", "found", "match", "past_end")

    tag: str | None
    file: str
    kind: str
    label: str = field(metadata=serial.json("what"))
    line: int
    offset: int | None
    expected: str
    found: str
    match: bool
    text: str = ""     # the log line the value is on
    past_end: int = 0  # bytes the log shows past the file's end (the driver read past the buffer: not judged)

    @property
    def verdict(self) -> Verdict:
        """This check's own verdict: MATCH, TRUNCATED (the logged value was cut short) or DIFFER."""
        return Verdict.MATCH if self.match else Verdict.TRUNCATED if self.kind == "truncated" else Verdict.DIFFER


@dataclass(frozen=True)
class LogChecks(serial.Serial):
    """Every fingerprint a log states, checked against the buffers given (check_log): `checks` in log order,
    the log's buffers no buffer was given for (`unmatched`) and the names given that no log line is about
    (`unused`)."""

    log: str
    checks: tuple[Check, ...]
    unmatched: tuple[str, ...]
    unused: tuple[str, ...]
    sources: tuple[dict, ...] = field(default=(), metadata=serial.json("files"))
    non_ascii_lines: int = 0


@dataclass(frozen=True)
class VerifyReport(serial.Serial):
    """A log's fingerprints checked against files. Its document spreads the judgement's keys in after `log`
    (read back from the checks: they decide it) and writes past_end as rows of its own."""

    JSON_DERIVED = ("verdict", "exit_code", "message", "reasons", "matched", "differ", ("past_end", "past_end_rows"))
    JSON_ORDER = ("log", "verdict", "exit_code", "message", "reasons", "checks", "matched", "differ", "past_end",
                  "unassigned_tags", "files", "non_ascii_lines")

    log: str
    checks: tuple[Check, ...]
    # tags in the log with no file to check them against
    unassigned: tuple[str, ...] = field(metadata=serial.json("unassigned_tags"))
    sources: tuple[dict, ...] = field(default=(), metadata=serial.json("files"))
    non_ascii_lines: int = 0

    @property
    def match(self) -> bool:
        return bool(self.checks) and all(c.match for c in self.checks)

    @property
    def truncated(self) -> tuple[Check, ...]:
        """The checks of logged values cut short (a line or a byte run): nothing can MATCH through them."""
        return tuple(c for c in self.checks if c.kind == "truncated")

    @property
    def past_end(self) -> tuple[Check, ...]:
        """The byte runs the log shows past the file's end (the driver read past its buffer): not judged."""
        return tuple(c for c in self.checks if c.past_end)

    @cached_property
    def judgement(self) -> Judgement:
        return judge_verify(self)

    @property
    def verdict(self) -> Verdict:
        return self.judgement.verdict

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def message(self) -> str:
        return self.judgement.message

    @property
    def reasons(self) -> tuple[Reason, ...]:
        return self.judgement.reasons

    @property
    def matched(self) -> int:
        return sum(c.match for c in self.checks)

    @property
    def differ(self) -> int:
        return sum(not c.match for c in self.checks)

    @property
    def past_end_rows(self) -> list[dict]:
        """past_end as the document writes it: line, tag, what and the bytes past the file's end."""
        return [{"line": c.line, "tag": c.tag, "what": c.label, "bytes": c.past_end} for c in self.past_end]


def _files(n: int) -> str:
    return f"{n} file{'s' if n != 1 else ''}"


def judge_verify(report: VerifyReport) -> Judgement:
    """The one verdict of a log checked against files: DIFFER when a whole logged value differs; TRUNCATED when
    none differs but a logged line was cut short; else MATCH. Bytes the driver read past a buffer's end (a page
    of fewer than 8 bytes: INPUT-CHK's first8 is not clamped) are said, never judged."""
    checks = report.checks
    cut = report.truncated
    n = len(checks) - len(cut)
    where = _files(len({c.file for c in checks}))
    bad = [c for c in checks if not c.match and c.kind != "truncated"]
    reasons = []
    if report.unassigned:
        reasons.append(Reason("not_checked", "no file for " + ", ".join(report.unassigned)))
    past = report.past_end
    past_note = ""
    if past:
        first = past[0]
        past_note = (f"; the log reads {first.past_end} byte{'s' if first.past_end != 1 else ''} past the end of "
                     f"the file (line {first.line}, {first.label})"
                     + (f", {len(past) - 1} more such run{'s' if len(past) > 2 else ''}" if len(past) > 1 else ""))
        reasons.append(Reason("reads_past_end", past_note[2:]))
    lines = sorted({c.line for c in cut})
    cut_note = (f"; line{'s' if len(lines) > 1 else ''} {', '.join(map(str, lines[:5]))}"
                f"{' ...' if len(lines) > 5 else ''} cut short" if cut else "")
    if cut:
        reasons.append(Reason("truncated", cut_note[2:]))
    if bad:
        first = bad[0]
        reasons.insert(0, Reason("differ", f"{len(bad)} values differ"))
        message = (f"{len(bad)} of {n} logged values differ from {where}; first: line {first.line} "
                   f"{first.tag or ''} {first.label}".replace("  ", " ") + cut_note + past_note)
        return Judgement(Verdict.DIFFER, message, tuple(reasons))
    if cut:
        first = cut[0]
        more = f"; {len(cut) - 1} more cut short" if len(cut) > 1 else ""
        message = (f"line {first.line} ({first.tag or 'untagged'}): {first.label} {first.found}; what it would "
                   f"have logged is not checked ({n} whole values match {where}){more}" + past_note)
        return Judgement(Verdict.TRUNCATED, message, tuple(reasons))
    return Judgement(Verdict.MATCH, f"all {n} logged values match {where}" + past_note, tuple(reasons))


@functools.lru_cache(maxsize=4096)  # a log names a few buffers, 10^5 times
def _norm(name) -> str:
    """A buffer's name as names are matched: case and punctuation aside (`INPUT-CHK`'s input, `input.bin`)."""
    return "".join(c for c in str(name).lower() if c.isalnum())


UNTAGGED = "(untagged)"
_DRIVER_NAMES = frozenset(_norm(name) for name in DRIVER_BUFFERS.values())  # the driver's buffers, as matched


def _as_dump(name: str, value, dump_options: dict) -> Dump:
    from forensics.io.dump import open_dump

    if isinstance(value, Dump):
        return value
    if isinstance(value, (bytes, bytearray, memoryview)):
        return Dump(path=f"<{name}>", size=len(value), data=bytes(value))
    return open_dump(os.fspath(value), allow_empty=True, use_sidecar=False, **dump_options)


def _log_items(log, page_size: int, pattern, texts: dict) -> tuple[str, list[Logged], int]:
    """(the log's name, its values, lines that held non-ASCII) of a log path or of its bytes."""
    from forensics.io.textdump import as_ascii, iter_lines, text_lines

    if isinstance(log, (bytes, bytearray)):
        text, marked = as_ascii(bytes(log))
        return "<log>", parse_log(iter_lines(text), path="<log>", page_size=page_size, pattern=pattern,
                                  texts=texts), marked
    path = os.fspath(log)
    open_lines, _ = text_lines(path, "a driver log")  # read line by line: memory follows the values found
    found = parse_log(open_lines(), path=path, page_size=page_size, pattern=pattern, texts=texts)
    return path, found, open_lines.non_ascii_lines


def log_buffers(logged: list[Logged]) -> dict[str, str]:
    """The buffers a log's values are about, by their matching name (_norm) -> the name as the log says it."""
    out: dict[str, str] = {}
    for item in logged:
        name = item.tag if item.tag is not None else UNTAGGED
        out.setdefault(_norm(name) if item.tag is not None else UNTAGGED, name)
    return out


def check_log(log, buffers, *, page_size: int = 4096, pattern: str | None = None, progress=None,
              **dump_options) -> LogChecks:
    """Every fingerprint a driver log states about the buffers given, checked: the one library call.

    `log` is a log's path or its bytes (read as every command reads text: forensics.io.textdump); `buffers`
    maps a buffer tag or a stage name (matched to the log's tags case and punctuation aside: `input` is the
    `[INPUT-CHK]` buffer, `output` the `[DPC-OUT]` one; `(untagged)` takes values no tag names) to a file
    path, bytes or a Dump. Each check has the tag, the line's number and text, what was expected and found and
    whether it matches; values of buffers not given are listed in `unmatched`, names no line is about in
    `unused`. Prints nothing; dump_options (offset, length, gap_fill, text_format) go to open_dump."""
    texts: dict[int, str] = {}
    log_name, logged, non_ascii = _log_items(log, page_size, pattern, texts)
    names = log_buffers(logged)
    wanted = {}
    unused = []
    for name, value in dict(buffers).items():
        key = UNTAGGED if name == UNTAGGED else _norm(name)
        if key not in names and _norm(driver_buffer(str(name))) in names:
            key = _norm(driver_buffer(str(name)))  # a tag that prints the buffer: DPC-OUT for output
        if key in names:
            wanted[key] = (str(name), value)
        else:
            unused.append(str(name))
    dumps: dict[str, Dump] = {key: _as_dump(name, value, dump_options) for key, (name, value) in wanted.items()}
    checks = _check_items(logged, dumps, texts, progress)
    unmatched = tuple(names[k] for k in names if k not in dumps)
    return LogChecks(log_name, tuple(checks), unmatched, tuple(unused),
                     tuple(d.source() for d in dumps.values()), non_ascii)


def _check_items(logged: list[Logged], dumps: dict, texts: dict, progress=None) -> list[Check]:
    """Each logged value whose buffer has a dump, checked against it (checksums and counts computed once)."""
    cache: dict[tuple, object] = {}
    checks = []
    readers: dict[str, object] = {}  # one open reader per file for the byte runs (a page log has thousands)
    try:
        for item in logged:
            key = UNTAGGED if item.tag is None else _norm(item.tag)
            dump = dumps.get(key)
            if dump is None:
                continue
            checks.append(_check(item, dump, cache, readers, texts.get(item.line, ""), progress))
    finally:
        for key, reader in readers.items():
            if isinstance(key, str):  # (the others are byte runs read)
                reader.close()
    return checks


def _check(item: Logged, dump: Dump, cache: dict, readers: dict, text: str, progress) -> Check:
    path = dump.path
    offset = item.offset
    past = 0

    def check(kind, expected, found, match, at=offset):
        return Check(item.tag, path, kind, item.label, item.line, at, expected, found, match, text, past)

    if item.kind == "truncated":  # the line stops before what it announces: judged TRUNCATED, never MATCH
        return check("truncated", "the whole line", item.expected, False, None)
    if item.kind == "size":
        return check("size", f"{item.expected:,}", f"{dump.size:,}", item.expected == dump.size)
    if item.kind == "crc32":
        value = _cached(cache, ("crc", path), lambda: crc_dump(dump).crc32)
        return check("crc32", format_crc(item.expected), format_crc(value), item.expected == value)
    if item.kind == "xor64":
        value = _cached(cache, ("xor", path), lambda: xor_fold64(dump, progress=progress))
        return check("xor64", f"0x{item.expected:016x}", f"0x{value:016x}", item.expected == value)
    if item.kind in ("nonzero", "non_sentinel", "first_non_sentinel"):
        return _check_counts(item, dump, cache, check)
    if item.kind == "dword_hits":
        count = _cached(cache, ("dwords", path, item.sentinel), lambda: _dword_hits(dump, item.sentinel))
        return check("dword_hits", f"{item.expected:,}", f"{count:,}", item.expected == count, 0)
    if offset is None:  # MID / TAIL named without an offset: where `forensics crc` takes them
        offset = peek_offsets(dump.size)[item.label]
    got = _read(readers, dump, offset, len(item.expected))
    expected = item.expected.hex(" ")
    if got and len(got) < len(item.expected):
        # the run starts in the file and goes past its end: the driver read past its buffer (INPUT-CHK's
        # first8 of a last page shorter than 8 bytes); the bytes the file holds are judged, the rest said
        past = len(item.expected) - len(got)
        return check("bytes", expected, got.hex(" ") + f" (+{past} past the end)",
                     got == item.expected[:len(got)], offset)
    match = got == item.expected
    announced = None if item.width is None else min(item.width, max(0, dump.size - offset))
    if match and announced is not None and len(item.expected) < announced:
        # fewer bytes than the form announces, and the buffer does not end there: the run was cut
        return check("truncated", f"{announced} bytes", f"{len(item.expected)} logged (cut short)", False, offset)
    return check("bytes", expected, got.hex(" ") if got else "(past the end)", match, offset)


def _dword_hits(dump: Dump, value: int) -> int:
    """Queue.c's patch scan: the little-endian dwords at offsets 0, 4, .. (every whole one) equal to `value`."""
    from forensics.io.dump import iter_windows

    whole = dump.size // 4 * 4
    step = DEFAULT_CHUNK // 4 * 4
    count = 0
    for _, view, _ in iter_windows(dump, [(lo, min(lo + step, whole)) for lo in range(0, whole, step)]):
        count += int(np.count_nonzero(np.frombuffer(view, dtype="<u4") == value))
    return count


def _cached(cache: dict, key: tuple, compute):
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def _check_counts(item: Logged, dump: Dump, cache: dict, check) -> Check:
    """A driver's scan of a buffer, redone on the file with `forensics coverage`'s arithmetic (sentinel runs of
    one byte: every byte equal to the sentinel): bytes not 0 / not the sentinel in [start, end), and the first
    that is not the sentinel (none: the driver's 0xFFFFFFFF)."""
    from forensics.buffer.coverage import analyse_coverage

    end = dump.size if item.end is None else item.end
    stop = min(end, dump.size)
    past = max(0, end - max(dump.size, item.start))
    sentinel = 0 if item.kind == "nonzero" else item.sentinel

    def scan():
        if stop <= item.start:
            return 0, None
        result = analyse_coverage(dump, bytes([sentinel]), min_run=1, offset=item.start, length=stop - item.start)
        ranges = result.untouched_ranges
        first = item.start if not ranges or ranges[0][0] > item.start else ranges[0][1]
        return result.length - result.untouched_bytes, (first if first < stop else None)

    count, first = _cached(cache, ("scan", dump.path, sentinel, item.start, stop), scan)
    note = f" (+{past} bytes past the end)" if past else ""
    if item.kind == "first_non_sentinel":
        spell = (lambda at: "none" if at is None else f"0x{at:x}")
        return dataclasses.replace(check(item.kind, spell(item.expected), spell(first) + note, item.expected == first,
                                         item.start), past_end=past)
    return dataclasses.replace(check(item.kind, f"{item.expected:,}", f"{count:,}" + note, item.expected == count,
                                     item.start), past_end=past)


def _other_buffer(tags: dict, f: str, key: str) -> bool:
    """A file named after one of the driver's buffers (input.bin) is never another's dump (the log holding only
    the output's lines): those lines would all DIFFER from a correct file."""
    stem, buffer = _norm(default_tag(f)), _norm(driver_buffer(str(tags.get(key, key))))
    return stem in _DRIVER_NAMES and (buffer in _DRIVER_NAMES or key in _DRIVER_NAMES) and stem not in (key, buffer)


def _given(tags: dict, buffers: dict[str, str]) -> dict[str, str]:
    """--buffer TAG=FILE by matching name (a tag that prints a buffer names it: DPC-OUT is output)."""
    out: dict[str, str] = {}
    for name, path in buffers.items():
        key = _norm(name)
        if key not in tags and _norm(driver_buffer(name)) in tags:
            key = _norm(driver_buffer(name))
        out[key if key in tags else name] = path
    return out


def _by_size(tags: dict, out: dict, left: list, free: list, sizes: dict) -> None:
    """The files left each to the only buffer left whose logged size is the file's (`out`, `left` and `free`
    updated)."""
    for f in list(left):
        size = os.path.getsize(f) if os.path.isfile(f) else None
        fits = [k for k in free if size is not None and size in sizes.get(k, ()) and not _other_buffer(tags, f, k)]
        if len(fits) == 1:
            out[fits[0]] = f
            free.remove(fits[0])
            left.remove(f)


def _assign(tags: dict, files: list[str], buffers: dict[str, str], sizes: dict) -> tuple[dict, list]:
    """(name -> file, files no buffer was found for): --buffer TAG=FILE first (a tag that prints a buffer
    names it: DPC-OUT is output), then the file whose stem is a buffer's name (case and punctuation aside),
    then the only file left for the only buffer left, then the only buffer left whose logged size is the
    file's. `tags` maps matching names to the log's names, `sizes` matching names to the sizes logged."""
    out = _given(tags, buffers)
    left = [f for f in files if f not in out.values()]
    for f in list(left):
        key = _norm(default_tag(f))
        if key in tags and key not in out:
            out[key] = f
            left.remove(f)
    free = [k for k in tags if k not in out]
    if len(left) == 1 and len(free) == 1 and not _other_buffer(tags, left[0], free[0]):
        out[free[0]] = left.pop()
        free = []
    _by_size(tags, out, left, free, sizes)
    return out, left


def verify_log(log_path: str, files=(), *, buffers: dict[str, str] | None = None, page_size: int = 4096,
               pattern: str | None = None, progress=None, **dump_options) -> VerifyReport:
    """Check the fingerprint values of a driver log against the files (dump_options go to open_dump): each
    file is matched to one buffer of the log (_assign), only that buffer's values are checked against it, and
    the buffers without a file are listed as not checked."""
    buffers = dict(buffers or {})
    texts: dict[int, str] = {}
    log_name, logged, non_ascii = _log_items(log_path, page_size, pattern, texts)
    if not files and not buffers:
        raise InputError("give the files to check: FILE... or {buffer:TAG=FILE}", params=True)
    names = log_buffers(logged)
    sizes: dict[str, set] = {}
    for item in logged:
        if item.kind == "size":
            sizes.setdefault(UNTAGGED if item.tag is None else _norm(item.tag), set()).add(item.expected)
    where, left = _assign(names, [os.fspath(f) for f in files], {k: os.fspath(v) for k, v in buffers.items()},
                          sizes)
    if left:
        listing = ", ".join(f"{names[k]}" + (f" ({', '.join(f'{s:,}' for s in sorted(sizes[k]))} bytes)"
                                              if sizes.get(k) else "") for k in names)
        raise InputError(f"which buffer of the log is {verbatim(left[0])}? Its name is none of theirs: "
                         f"{verbatim(listing)}; give {{buffer:TAG={verbatim(left[0])}}}", log_name, params=True)
    dumps = {key: _as_dump(names.get(key, key), path, dump_options) for key, path in where.items() if key in names}
    checks = _check_items(logged, dumps, texts, progress)
    unassigned = tuple(names[k] for k in names if k not in dumps)
    if not checks:
        raise InputError(f"no file given for the buffers the log names ({', '.join(unassigned)}): use "
                         "{buffer:TAG=FILE}", log_name, params=True)
    return VerifyReport(log_name, tuple(checks), unassigned, tuple(d.source() for d in dumps.values()), non_ascii)


def _read(readers: dict, dump: Dump, offset: int, length: int) -> bytes:
    """Up to `length` bytes of the dump at `offset` (short at the end, empty past it), through its one reader."""
    from forensics.io.dump import DumpReader

    if offset >= dump.size or length <= 0:
        return b""
    key = (dump.path, offset, length)  # a log repeats its lines (each inference logs the same places)
    if key in readers:
        return readers[key]
    if dump.path not in readers:
        readers[dump.path] = DumpReader(dump)
    buf = bytearray(min(length, dump.size - offset))
    readers[dump.path].read_exact(offset, memoryview(buf))
    if len(readers) < 1 << 16:  # (bounded: a page log of a 4 GiB buffer names a million places once each)
        readers[key] = bytes(buf)
    return bytes(buf)
