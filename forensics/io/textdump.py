"""Text hex dumps as dumps: WinDbg, xxd, hexdump, od, PowerShell Format-Hex, certutil, C arrays, plain hex -> bytes.

A kernel driver cannot write files, so its engineer copies memory out of WinDbg, a DbgView log, PowerShell or
certutil, or on Linux out of xxd / hexdump / od. This module recognises those texts by their content and decodes
them to the bytes they show. Facts used (from the tools' documented output, and for the Linux tools checked
against their real output):

- WinDbg `db`: `ADDRESS  b0 b1 .. b7-b8 .. b15  ASCII`; the address may carry the 64-bit backtick
  (`ffffb20c`4a3b2000`); byte i sits at column 3*i after the two spaces, `-` between the 8th and 9th byte, a
  short last line is padded so the ASCII column stays aligned; `??` marks memory that could not be read (an
  error, or filled with `gap_fill` like a hole between addresses). `dw` / `dd` / `dq` print 8 / 4 / 2 words per
  line (dq as `hhhhhhhh`llllllll`), `dc` dwords then ASCII; words are little-endian in memory. `dyb` prints up
  to 4 bytes a line in binary, then the same bytes in hex (read only where the two agree).
  The physical-memory extensions `!db` / `!dw` / `!dd` / `!dq` / `!dc` print the same body behind `#` and the
  physical address and one space: `#  1a3c000 4d 5a 90 00 03 00 00 00-04 00 00 00 ff ff 00 00 MZ..............`.
- `xxd`: `ADDRESS: hhhh hhhh ...  ASCII` (any -c, -g, -u, -s, -o; `-d` decimal addresses; `-b` binary
  digits). The ASCII column holds
  exactly as many characters as the line has bytes, which splits hex from ASCII on every line. With `-e` each
  group is a little-endian word (a short last group right-aligned): the byte order is told by the ASCII column
  (bytes in memory order) or by that right-aligned group; 4-byte or wider groups that give no such evidence
  either way are refused. `xxd -p` is plain hex; `xxd -i` is a C array.
- C array (`xxd -i`): `unsigned char NAME[] = {`, lines of `0x4d, 0x5a, ...`, `};`, `unsigned int NAME_len = N;`.
- `hexdump -C`: `ADDRESS  hh .. hh  hh .. hh  |ASCII|`, a final line with the size, `*` for repeated lines.
  `hexdump` without a flag (and `-x`): 7-digit hex addresses and 16-bit words in the host's (little-endian) order,
  the last word zero-padded, the final size line says where the bytes end.
- `od -t x1` / `x2` / `x4` / `x8` (with `z`, `-v`, `-w`): `ADDRESS hh hh ..` (words in the host's little-endian
  order, the last word zero-padded), `>ASCII<` with `z`, a final line with the size, `*` repeats. The address
  radix (`-A o`, od's default, `-A d`, `-A x`) is the one in which every line starts where the one before ended;
  hexdump pads a short last line with blanks, od does not. When two radices still fit every line and read a `*`
  differently the dump is refused rather than guessed, except octal against decimal, where od's default octal
  is taken (as it is when they differ only in how much zero padding the size line cuts off the last word).
  od's octal or decimal forms (its default `od FILE`, `-t o*`, `-t d*`, `-t u*`, `-c`; `hexdump -b/-c/-d/-o`)
  are refused with a clear message.
- PowerShell `Format-Hex`: 5.1 prints a column header (`           00 01 02 ... 0F`) and rows
  `00000000   4D 5A 90 00 ...  MZ..` (8-digit address, three spaces); 7 prints `Label:` and column headers and
  rows `0000000000000000 4D 5A 90 00 ... MZ..` (16-digit offset, one space). Byte i sits at column 3*i.
- `certutil -encodehex FILE OUT` (type 4, the default): `0000<TAB>4d 5a 90 00 03 00 00 00  04 00 ... 00   MZ..`,
  the address 4 hex digits (more past 0xffff), a tab, two spaces after the 8th byte, then the ASCII column.
- plain hex: lines of hex digits, spaced or not, no addresses (`xxd -p`, `od -A n -t x1`, `0x4d, 0x5a,`).

Any of these may sit behind DbgView prefixes (`00000012<TAB>0.00123400<TAB>`, `[1234] `) and the file may be
UTF-16 (with a byte-order mark, or without one when every other byte of its ASCII text is NUL). The text is read
line by line (memory bounded by the decoded bytes, at most MAX_TEXT_BYTES); `*` repeats are expanded by
multiplying the repeated line, full WinDbg `db` lines (the common DbgView log) a block at a time.
"""

from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.io.files import NOT_PRINTABLE, SNIFF_BYTES, ascii_share, read_head  # textdump's names too

MAX_TEXT_BYTES = 256 << 20  # bytes a text dump may decode to (with `*` repeats and gap fills); held in memory
MAX_TEXT_FILE = 1 << 30  # a text file (dump or driver log) is read line by line; beyond this, split it
MAX_NUMBER_DIGITS = 20  # digits of a decimal number in a text dump (xxd -i's NAME_len): 2^64 has 20
MAX_DRIVER_LOG = 64 << 20  # a text read to its end to find a driver's hex rows past its head (larger: not)
_BLOCK = 4096  # lines decoded together where they are all of the common form (one regular expression per block)
_TEXT_CHUNK = 1 << 20  # characters of a text file read at a time (text_lines)

FORMATS = ("windbg", "xxd", "hexdump", "od", "format-hex", "certutil", "c-array", "plain", "driver")
FORMAT_NAMES = {
    "windbg": "WinDbg d* output", "xxd": "xxd output", "hexdump": "hexdump output", "od": "od output",
    "format-hex": "PowerShell Format-Hex output", "certutil": "certutil -encodehex output",
    "c-array": "C array (xxd -i)", "plain": "plain hex", "driver": "the driver's hex rows",
}
# what a message lists as readable
KNOWN_TEXT = ("WinDbg d*/!d*, xxd, hexdump, od -t x*, PowerShell Format-Hex, certutil -encodehex, C array (xxd -i), "
              "plain hex, a driver's [DPC-OUT] [00] / console [0000] rows")

_HEX = "0-9a-fA-F"
_HEX_TEXT = frozenset("0123456789abcdefABCDEFxX ,\t\r")  # what a one-line plain hex dump is made of
_HEXCHARS = frozenset("0123456789abcdefABCDEF")
_BITCHARS = frozenset("01")


class _Patterns:
    """The regular expressions, compiled on first use: a binary dump (most of them) never needs them, and
    compiling them all cost every command's start-up a few milliseconds."""

    SOURCES = dict(
        # DbgView's saved-log columns (line number, time) and DbgPrint's "[pid] " / "[pid:tid] " prefix.
        DBGVIEW=r"^\s*(?:\d+\t(?:[0-9.:]+(?:\s*[AP]M)?\t)?)?(?:\[[0-9a-fA-Fx:]+\]\s?)?",
        # certutil's `0010<TAB>4d 5a ` would otherwise lose its address as a DbgView line number
        CERTUTIL_RAW=rf"^[{_HEX}]{{4,16}}\t[{_HEX}]{{2}}(?: |$)",
        # a WinDbg command line pasted with its output: `0: kd> `, `lkd> `, `0:000> `, `0:000:x86> `
        PROMPT=r"^\s*(?:(?:\d+: )?[kl]?kd> |\d+:\d+(?::\w+)?> )",
        CONTROL="[\x00-\x08\x0b\x0e-\x1f\x7f]",
        NON_ASCII="[^\x00-\x7f]+",
        # bytes: a run of non-ASCII bytes and the byte after it when that may be a double-byte trail
        HIGH_BYTES=rb"([\x80-\xff]+)([\x40-\x7e]?)",
        CONTROL_BYTES=rb"[\x00-\x08\x0b\x0e-\x1f\x7f]",
        WINDBG_ADDR=rf"^([{_HEX}]{{8}}(?:`[{_HEX}]{{8}})?)  (?=\S)",
        # !db / !dd ...: `#` then the physical address (right-aligned), one space, the d* body
        WINDBG_PHYS=rf"^#\s*([{_HEX}]{{1,16}}(?:`[{_HEX}]{{8}})?) (?=[{_HEX}?]{{2}})",
        XXD=rf"^([{_HEX}]{{4,16}}): ?",
        HEXSPACE=rf"[ {_HEX}]*",
        BITSPACE=r"[ 01]*",
        HEXDUMP=rf"^([{_HEX}]{{8,16}})  ((?:[{_HEX}]{{2}} {{1,2}}){{0,15}}[{_HEX}]{{2}}) +\|.*\|?$",
        # od -t x1/x2/x4/x8 (any -A) and hexdump without -C: address, values, optional `>ASCII<`
        WORDS=rf"^([{_HEX}]{{6,16}})((?: +[{_HEX}]{{2,16}})+)(?: +>.*<?)?$",
        WORDS_X1=rf"^([{_HEX}]{{6,16}})((?: [{_HEX}]{{2}})+)(?: +>.*<?)?$",  # the common od -t x1 line, in one step
        SIZE_ONLY=rf"^([{_HEX}]{{6,16}})$",
        PS5=rf"^([{_HEX}]{{8}})   (?=[{_HEX}]{{2}}(?: |$))",
        PS7=rf"^([{_HEX}]{{16}}) (?=[{_HEX}]{{2}}(?: |$))",
        # column headers: Format-Hex's (5.1 and 7), dyb's bit numbers
        PS_HEADER=r"^(?:Label: .*|Path: .*|Offset +Bytes +Ascii|-+(?: +-+)+|76543210(?: 76543210)*"
                  r"|00 01 02 03 04 05 06 07 08 09 0A 0B 0C 0D 0E 0F)$",
        CERTUTIL=rf"^([{_HEX}]{{4,16}})\t(?=[{_HEX}]{{2}}(?: |$))",
        C_HEAD=r"^(?:static\s+)?(?:const\s+)?(?:unsigned\s+char|uint8_t|UCHAR|BYTE)\s+(\w+)\s*\[\s*\d*\s*\]\s*=\s*\{$",
        C_LEN=r"^(?:static\s+)?(?:const\s+)?(?:unsigned\s+int|size_t|unsigned\s+long)\s+(\w+)\s*=\s*(\d+)\s*;$",
        C_BODY=rf"^(?:0[xX][{_HEX}]{{2}}\s*,\s*)*(?:0[xX][{_HEX}]{{2}}\s*,?)?$",
        # od / hexdump in octal, decimal or characters: a 7/8-digit address, then short non-hex fields
        NUMERIC=rf"^[{_HEX}]{{7,8}}(?: +(?:[0-7]{{3}}|[0-9]{{5,6}}|[+-]?[0-9]{{1,20}}|\\\S|\S))+$",
        DB_FULL=rf"(?:[{_HEX}]{{2}} ){{7}}[{_HEX}]{{2}}[- ](?:[{_HEX}]{{2}} ){{7}}[{_HEX}]{{2}}(?:  |$)",
        PAIR=f"[{_HEX}]{{2}}",
        HEXRUN=f"[{_HEX}]+",
        PLAIN=rf"^(?:0x)?[{_HEX}]{{2}}(?:[ ,]*(?:0x)?[{_HEX}]{{2}})*[ ,]*$",
        BAD_0X=rf"0x(?![{_HEX}]{{2}})",
        BLANK="[ ,]",  # a 0x that no pair follows: no plain hex (see _is_plain)
        # a full WinDbg db line, behind DbgView's columns or not, one per line of a block (_fast_db): DBGVIEW,
        # WINDBG_ADDR and DB_FULL with blanks that never cross a line
        FAST_DB=r"(?m)^[ \t]*(?:\d+\t(?:[0-9.:]+(?:[ \t]*[AP]M)?\t)?)?(?:\[[0-9a-fA-Fx:]+\][ \t]?)?"
                rf"([{_HEX}]{{8}}(?:`[{_HEX}]{{8}})?)  ((?:[{_HEX}]{{2}} ){{7}}[{_HEX}]{{2}}[- ](?:[{_HEX}]{{2}} ){{7}}"
                rf"[{_HEX}]{{2}})(?:  [^\n]*)?$",
    )

    def __getattr__(self, name: str):
        if name not in self.SOURCES:
            raise AttributeError(name)
        compiled = re.compile(self.SOURCES[name])
        setattr(self, name, compiled)
        return compiled


_rx = _Patterns()


@dataclass(frozen=True)
class TextDump:
    """Bytes decoded from a text dump, and where they came from."""

    data: bytes
    format: str            # one of FORMATS
    variant: str           # e.g. "db", "!dd", "xxd -e", "hexdump -C", "od -A o -t x2", "plain"
    start_address: int | None
    lines: int             # dump lines decoded
    encoding: str
    non_ascii_lines: int = 0  # lines that held other characters (a code page's text, U+FFFD to the decoder)

    @property
    def description(self) -> str:
        """`WinDbg db`, `xxd`, `hexdump -C`, `od -A x -t x1`, `Format-Hex`, `plain hex`, with `, UTF-16`."""
        if self.format == "windbg":
            name = f"WinDbg {self.variant}"
        elif self.format == "plain":
            name = "plain hex"
        else:
            name = self.variant
        return name + (", UTF-16" if self.encoding.startswith("utf-16") else ", a code page" if self.encoding == "8-bit"
                       else "")

    # kept: the document holds the decoded bytes' size, not the bytes, so it cannot be read back into a TextDump
    def to_dict(self) -> dict:
        return {"format": self.format, "variant": self.variant, "start_address": self.start_address,
                "lines": self.lines, "encoding": self.encoding, "non_ascii_lines": self.non_ascii_lines,
                "size": len(self.data)}


def decode_text(head: bytes, *, code_page_share: float = 0.5) -> tuple[str, str] | None:
    """(text as ASCII, encoding) when these sniffed bytes are a text, else None: a binary file is never taken for
    text. As text_lines reads it (text_encoding, as_ascii), but stricter, since a dump argument may be either:
    no control character at all but tab, CR, LF, FF, and a text in a code page (not UTF-8) at least
    `code_page_share` printable ASCII (binary buffers have high bytes too). `head` may be cut mid-character at
    the end (a sniffed prefix)."""
    encoding = text_encoding(head)
    if encoding is None:
        return None
    if encoding.startswith("utf-16"):
        body = head[2:] if head.startswith((b"\xff\xfe", b"\xfe\xff")) and not _utf16_without_bom(head) else head
        try:
            text = body[: len(body) // 2 * 2].decode(encoding)
        except UnicodeDecodeError:
            return None
    else:
        text = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
        if _rx.CONTROL_BYTES.search(text) or encoding == "8-bit" and ascii_share(text) < code_page_share:
            return None
    text = as_ascii(text)[0]
    if _rx.CONTROL.search(text):
        return None
    return text, encoding


_REPLACEMENT = "\ufffd"


def _code_page_run(m: re.Match) -> bytes:
    """One run of non-ASCII bytes (and the byte after it when that may be a double-byte trail) as U+FFFD in
    UTF-8: one per character when the run is UTF-8, else one for the run. In the double-byte code pages
    (cp932, cp936, cp949, cp950) a character is a lead byte >= 0x81 and a trail byte that may be ASCII
    (0x40-0x7e: cp932's em dash is 81 5c, a backslash): a run of odd length ends on a lead byte, and its
    trail is taken with it, never read as ASCII. (In an 8-bit code page that trail is a letter of the same
    word: lost, but never a character of a value forensics reads, which are ASCII through and through.)"""
    run, trail = m.group(1), m.group(2)
    try:
        count = len(run.decode("utf-8"))
    except UnicodeDecodeError:
        return b"\xef\xbf\xbd" if len(run) % 2 else b"\xef\xbf\xbd" + trail
    return b"\xef\xbf\xbd" * count + trail


def as_ascii(data) -> tuple[str, int]:
    """(text, lines with non-ASCII) of bytes in any ASCII-compatible encoding, or of a str (decoded UTF-16):
    ASCII kept as it is, everything else U+FFFD (_code_page_run), so that no reader ever sees a digit, blank or
    letter that is not ASCII (`\\d` and `\\s` match Arabic-Indic digits and U+2028 in a str) and a code page
    need not be known. The count is of lines holding a U+FFFD."""
    if isinstance(data, str):
        if data.isascii():
            return data, 0
        text = _rx.NON_ASCII.sub(_REPLACEMENT, data)
    else:
        if data.isascii():
            return data.decode("ascii"), 0
        text = _rx.HIGH_BYTES.sub(_code_page_run, data).decode("utf-8")
    return text, _lines_with(text, _REPLACEMENT)


def _lines_with(text: str, char: str) -> int:
    """How many lines of `text` (split as str.splitlines() splits an ASCII text) hold `char`."""
    count, at = 0, text.find(char)
    while at >= 0:
        count += 1
        end = min((e for e in (text.find(c, at) for c in "\n\r\x0c") if e >= 0), default=len(text))
        at = text.find(char, end)
    return count


def _utf16_without_bom(head: bytes) -> str | None:
    """"utf-16-le" / "utf-16-be" when `head` is ASCII text saved as UTF-16 without a byte-order mark (Windows
    tools, PowerShell redirections): every odd (LE) or even (BE) byte NUL and the others printable or line
    breaks. A binary buffer with NULs at one parity and printable bytes at the other is vanishingly rare."""
    sample = head[:4096]
    if len(sample) < 8:
        return None
    sample = sample[: len(sample) // 2 * 2]
    for encoding, zeros, chars in (("utf-16-le", sample[1::2], sample[0::2]), ("utf-16-be", sample[0::2], sample[1::2])):
        if not zeros.strip(b"\0") and len(chars.translate(None, NOT_PRINTABLE)) == len(chars):
            return encoding
        # a log with some text that is not ASCII (the story driver's Korean, its arrows and dashes): most code
        # units ASCII, and every character of the head printable once decoded
        if zeros.count(0) * 4 >= len(zeros) * 3 and _printable_utf16(sample, encoding):
            return encoding
    return None


def _printable_utf16(sample: bytes, encoding: str) -> bool:
    try:
        text = sample.decode(encoding)
    except UnicodeDecodeError:  # a surrogate pair cut by the sniff window
        try:
            text = sample[:-2].decode(encoding)
        except UnicodeDecodeError:
            return False
    return all(c.isprintable() or c in "\t\r\n" for c in text)


def iter_lines(text: str):
    """The lines of `text` one at a time, as str.splitlines() would give them all at once."""
    if len(text) <= _LONG_LINE:
        yield from text.splitlines()
        return
    at = 0
    while at < len(text):  # pieces up to each \n (a \r\n stays whole), split as splitlines() would
        nl = text.find("\n", at)
        end = len(text) if nl < 0 else nl + 1
        yield from text[at:end].splitlines()
        at = end


def _blocks(lines):
    """(first line number, up to _BLOCK lines) from an iterator of lines."""
    first = 1
    while True:
        block = list(itertools.islice(lines, _BLOCK))
        if not block:
            return
        yield first, block
        first += len(block)


def _fast_db(block: list[str]) -> tuple[int, bytes, bytes] | None:
    """(address, bytes, last line's bytes) of a block of lines that are all full WinDbg `db` lines (behind DbgView
    columns or not) at contiguous addresses; None otherwise (the lines are then decoded one by one). The
    pattern matches a subset of what the line-by-line decoding reads, with the same bytes (tested)."""
    found = _rx.FAST_DB.findall("\n".join(block))
    if len(found) != len(block):
        return None
    addresses = [int(a.replace("`", ""), 16) for a, _ in found]
    start = addresses[0]
    if addresses != list(range(start, start + 16 * len(addresses), 16)):
        return None
    data = bytes.fromhex(" ".join(body for _, body in found).replace("-", " "))
    return start, data, data[-16:]


def _strip(line: str, keep_blanks: bool = False) -> str:
    """A line without DbgView's columns and trailing blanks (`keep_blanks`: xxd's ASCII column may end in spaces)."""
    if "\t" in line[:17] and _rx.CERTUTIL_RAW.match(line):
        return line.rstrip()
    line = _rx.DBGVIEW.sub("", line, count=1)
    return line if keep_blanks and line.strip() else line.rstrip()


_HEX_BYTES = frozenset(b"0123456789abcdefABCDEF")
_IS_HEX = None


def _hex_runs(text: str):
    """Lengths of the runs of hex digits in ASCII `text`, in order (numpy: a 12 MB line is one array pass)."""
    import numpy as np

    global _IS_HEX
    if _IS_HEX is None:
        _IS_HEX = np.zeros(256, dtype=bool)
        _IS_HEX[list(_HEX_BYTES)] = True
    hexes = _IS_HEX[np.frombuffer(text.encode("ascii", "replace"), dtype=np.uint8)]
    edges = np.flatnonzero(np.diff(np.concatenate(([False], hexes, [False])).view(np.int8)))
    return edges[1::2] - edges[::2]


_PLAIN_CHARS = frozenset("0123456789abcdefABCDEFx ,")
_LONG_LINE = 4096


def _is_plain(line: str) -> bool:
    """Whether a line is plain hex (_rx.PLAIN): pairs of hex digits, each maybe behind 0x, separated by blanks
    or commas or nothing. A long line (one 12 MB line of `xxd -p -c 0`) is checked without the regular
    expression, whose repeated group keeps a backtracking record per pair (1.9 GiB for 12 MB): hex runs of
    even length once each `0x` (followed by a pair) is blanked, and no other `x` (equal on short lines: tested)."""
    if len(line) <= _LONG_LINE:
        return bool(_rx.PLAIN.match(line))
    if line[0] in " ," or not _PLAIN_CHARS.issuperset(line) or _rx.BAD_0X.search(line):
        return False
    blanked = line.replace("0x", "  ")  # PLAIN takes a lowercase 0x only
    if "x" in blanked:
        return False
    at, step = 0, 1 << 20
    while at < len(blanked):  # in slices cut at a blank or comma: memory follows the slice, not the line
        end = len(blanked) if at + step >= len(blanked) else max(blanked.rfind(" ", at, at + step),
                                                                   blanked.rfind(",", at, at + step))
        if end <= at:  # no blank in the slice: up to the next one
            m = _rx.BLANK.search(blanked, at + step)
            end = m.start() if m else len(blanked)
        runs = _hex_runs(blanked[at:end])
        if (runs % 2).any():
            return False
        at = end
    return True


def _classify(line: str) -> str | None:
    """The format a single (prefix-stripped) line looks like, or None."""
    if _rx.HEXDUMP.match(line):
        return "hexdump"
    if _rx.XXD.match(line):
        return "xxd"
    if _rx.CERTUTIL.match(line):
        return "certutil"
    if _rx.PS5.match(line) or _rx.PS7.match(line):
        return "format-hex"
    if _rx.WINDBG_ADDR.match(line) or _rx.WINDBG_PHYS.match(line):
        return "windbg"
    if _words(line) is not None:
        return "od"
    if _is_plain(line):
        return "plain"
    if _rx.C_HEAD.match(line):
        return "c-array"
    return None


def _dump_lines(text: str, limit: int = 400):
    """The first prefix-stripped lines that may hold dump content (no blanks, prompts or headers)."""
    for raw in itertools.islice(iter_lines(text), limit):
        line = _strip(raw)
        if line and not _rx.PROMPT.match(line) and not _rx.PS_HEADER.match(line):
            yield raw, line


def has_driver_rows(lines) -> bool:
    """Whether any of these lines is a row of the driver's own hex dumps (DriverRows)."""
    reader = DriverRows()
    return any(reader.row(line, n) is not None for n, line in enumerate(lines, start=1))


def detect_format(text: str) -> str | None:
    """The format of a text dump, judged on its first dump lines; None when it is not one. A text in none of
    the dump formats that holds the driver's own hex rows (a DbgView log of npu_driver, the console's output) is
    "driver"."""
    found = _detect_dump_format(text)
    if found is None and ("[" in text or "--- " in text) and has_driver_rows(iter_lines(text)):
        return "driver"
    if found == "windbg" and "[" in text and not _rx.FAST_DB.search(text) and has_driver_rows(iter_lines(text)):
        return "driver"  # DbgView's columns pasted with spaces (`00000001  0.0000125  [DPC-OUT] [00] ..`)
    return found


def _detect_dump_format(text: str) -> str | None:
    votes: dict[str, int] = {}
    seen = 0
    sizes: list[str] = []
    for _raw, line in _dump_lines(text):
        if line == "*":
            continue
        if _rx.SIZE_ONLY.match(line):  # od / hexdump's closing size line, or plain hex of 3-8 bytes
            sizes.append(line)
            continue
        seen += 1
        kind = _classify(line)
        if kind == "c-array":
            return kind
        if kind is not None:
            votes[kind] = votes.get(kind, 0) + 1
        if seen >= 64:
            break
    if not votes:
        if sizes and seen == 0:
            if sizes == ["000000"] or len(sizes) == 1 and len(sizes[0]) == 7:
                return "od"  # od of nothing (an empty file, -j to its end): the size line alone (-A x: 6 digits)
            if _lone_offset(sizes):
                return None
            if all(len(s) % 2 == 0 for s in sizes):
                return "plain"  # `xxd -p -c 4`: every line a short run of hex digits
        return None
    best = max(votes, key=votes.get)
    if best == "plain":  # plain hex has no addresses: every line must be hex, no stray text
        return "plain" if votes["plain"] == seen else None
    return best if votes[best] * 2 > seen else None


def _lone_offset(sizes: list[str]) -> bool:
    """One line like `00000010`: hexdump -C's or od -A x's closing offset with nothing before it (-s / -j to the
    end of the file), or as many bytes of plain hex as it has digit pairs."""
    return len(sizes) == 1 and len(sizes[0]) in (6, 8) and sizes[0].startswith("00")


def _refusal(text: str) -> str | None:
    """Why a text that is a dump of a kind this module does not decode is refused, or None."""
    sizes = [line for _raw, line in _dump_lines(text, 3)]
    if _lone_offset(sizes) and _rx.SIZE_ONLY.match(sizes[0]):
        return (f"a single line {sizes[0]!r} is either hexdump's / od's closing offset of an empty dump or "
                f"{len(sizes[0]) // 2} bytes of plain hex: give the format (plain) to read it as bytes")
    lines = [line for _raw, line in _dump_lines(text, 200) if line != "*" and not _rx.SIZE_ONLY.match(line)][:64]
    numeric = sum(1 for line in lines if _rx.NUMERIC.match(line))
    if lines and numeric * 2 > len(lines):
        return ("od / hexdump output in octal, decimal or characters (e.g. od's default octal words, od -c, "
                "hexdump -d): not read, its byte order and radix are ambiguous; dump with `od -A x -t x1z -v` "
                "or `hexdump -C` instead")
    return None


class _Builder:
    """Collects lines' bytes at their addresses: contiguous, or gap-filled, else an error naming the line."""

    def __init__(self, path: str, gap_fill: int | None):
        self.path = path
        self.gap_fill = gap_fill
        self.out = bytearray()
        self.start: int | None = None
        self.last_line = b""
        self.repeat_pending = False
        self.lines = 0

    def expected(self) -> int | None:
        return None if self.start is None else self.start + len(self.out)

    def fail(self, lineno: int, message: str, *, params: bool = False):
        raise InputError(f"line {lineno}: {message}", self.path, params=params)

    def advance_to(self, address: int, lineno: int) -> None:
        """Bring the output up to `address`: `*` repeats, a gap fill, or an error."""
        if self.start is None:
            self.start = address
            return
        want = self.expected()
        if address > want and address - self.start > MAX_TEXT_BYTES:
            self.fail(lineno, f"address 0x{address:x} is {address - self.start:,} bytes after the first "
                              f"(0x{self.start:x}): more than the {MAX_TEXT_BYTES >> 20} MiB a text dump may hold")
        if self.repeat_pending:
            self.repeat_pending = False
            if address < want or not self.last_line:
                self.fail(lineno, f"address 0x{address:x} after '*' is before 0x{want:x}")
            need = address - want  # whole copies of the line, then the part the address cuts (checked above)
            self.out += self.last_line * (need // len(self.last_line)) + self.last_line[:need % len(self.last_line)]
            return
        if address == want:
            return
        if address > want and self.gap_fill is not None:
            self.out += bytes([self.gap_fill]) * (address - want)
            return
        if address > want:
            self.fail(lineno, f"addresses are not contiguous: expected 0x{want:x}, found 0x{address:x} "
                              f"(a gap of {address - want:,} bytes; fill it with {{gap_fill}})", params=True)
        self.fail(lineno, f"addresses are not contiguous: expected 0x{want:x}, found 0x{address:x} (goes back)")

    def end_at(self, address: int, lineno: int, slack: int) -> None:
        """The closing size line of od / hexdump: the dump ends here (the last word's zero padding is cut)."""
        want = self.expected()
        if self.start is None:
            self.start = address
        elif not self.repeat_pending and want - slack <= address < want:
            del self.out[address - self.start:]
        else:
            self.advance_to(address, lineno)
        self.last_line = b""

    def add(self, address: int | None, data: bytes, lineno: int) -> None:
        if address is not None:
            self.advance_to(address, lineno)
        self.out += data
        self.last_line = data
        self.lines += 1
        if len(self.out) > MAX_TEXT_BYTES:
            self.fail(lineno, f"decodes to more than {MAX_TEXT_BYTES >> 20} MiB")


    def add_block(self, address: int, data: bytes, lines: int, last_line: bytes, lineno: int) -> None:
        """`lines` contiguous lines' bytes from `address` at once (the caller checked they are contiguous)."""
        self.advance_to(address, lineno)
        self.out += data
        self.last_line = last_line
        self.lines += lines
        if len(self.out) > MAX_TEXT_BYTES:
            self.fail(lineno + lines - 1, f"decodes to more than {MAX_TEXT_BYTES >> 20} MiB")


def _hexbytes(tokens, lineno: int, builder: _Builder) -> bytes:
    try:
        return bytes.fromhex("".join(tokens))
    except ValueError:
        builder.fail(lineno, "malformed hex bytes")


def _columns(body: str, lineno: int, b: _Builder, what: str, *, dash: bool = False, gap_after_8: bool = False,
             fill: str | None = None) -> bytes:
    """Bytes printed at fixed columns: byte i at 3*i (plus one past the 8th byte for certutil), separated by one
    space (or WinDbg's `-` after the 8th); a pair of spaces ends a short line, 16 bytes end a full one."""
    data = bytearray()
    for i in range(16):
        col = 3 * i + (1 if gap_after_8 and i >= 8 else 0)
        pair = body[col:col + 2]
        if len(pair) < 2 or pair[0] == " ":
            break
        if pair == "??" and fill is not None:
            pair = fill
        sep = body[col + 2:col + 3]
        if not _rx.PAIR.fullmatch(pair) or sep not in ("", " ", "-" if dash and i == 7 else " "):
            if pair == "??":
                b.fail(lineno, "'??': WinDbg could not read this memory (fill it with {gap_fill})", params=True)
            b.fail(lineno, f"malformed {what} line: {pair!r} at byte {i}")
        data.append(int(pair, 16))
    return bytes(data)


def _windbg_line(line: str, m: re.Match, lineno: int, b: _Builder) -> tuple[int, bytes, str]:
    address = int(m.group(1).replace("`", ""), 16)
    body = line[m.end():]
    physical = line.startswith("#")
    fill = None if b.gap_fill is None else f"{b.gap_fill:02x}"
    first = body.split()[0] if body.split() else ""
    width = len(first.split("-")[0].replace("`", ""))
    if width == 2:  # db: byte i at column 3*i, '-' after the 8th byte, then the ASCII column
        if _rx.DB_FULL.match(body):  # the common full line, in one step
            return address, bytes.fromhex(body[:47].replace("-", " ")), "!db" if physical else "db"
        if "??" in body[:47] and fill is None:
            b.fail(lineno, "'??': WinDbg could not read this memory (fill it with {gap_fill})", params=True)
        return address, _columns(body, lineno, b, "WinDbg db", dash=True, fill=fill), "!db" if physical else "db"
    if width == 8 and set(first) <= {"0", "1"}:
        dyb = _windbg_dyb(body)
        if dyb is not None:
            return address, dyb, "dyb"
    data, variant = _windbg_words(body, width, lineno, b, fill)
    return address, data, ("!" if physical else "") + variant


def _windbg_words(body: str, width: int, lineno: int, b: _Builder, fill: str | None) -> tuple[bytes, str]:
    """(bytes, variant) of a dw / dd / dq / dc line's words of `width` hex digits (little-endian), up to the
    ASCII column (dc, or a partial line)."""
    per_line = {4: 8, 8: 4, 16: 2}.get(width)
    if per_line is None:
        b.fail(lineno, f"malformed WinDbg line: a first value of {width} hex digits")
    variant = {4: "dw", 8: "dd", 16: "dq"}[width]
    words = []
    rest = body.replace("-", " ")
    for token in rest.split():
        if len(words) == per_line:
            break
        clean = token.replace("`", "")
        if len(clean) == width and set(clean) == {"?"}:
            if fill is None:
                b.fail(lineno, "'??': WinDbg could not read this memory (fill it with {gap_fill})", params=True)
            clean = fill * (width // 2)
        if len(clean) != width or not _rx.HEXRUN.fullmatch(clean):
            if words and "  " in rest:  # dc / partial line: the ASCII column starts
                variant = "dc" if width == 8 else variant
                break
            b.fail(lineno, f"malformed WinDbg {variant} value {token!r}")
        words.append(clean)
    if len(words) == per_line and len(rest.split()) > per_line and width == 8:
        variant = "dc"
    return b"".join(int(w, 16).to_bytes(width // 2, "little") for w in words), variant


def _windbg_dyb(body: str) -> bytes | None:
    """`dyb`: up to 4 bytes as 8 binary digits, then the same bytes in hex; None unless the two columns agree
    (a dd line of words such as `00000001 00010000` is not taken for one)."""
    tokens = body.split()
    bits = []
    for token in tokens[:4]:
        if len(token) != 8 or set(token) - {"0", "1"}:
            break
        bits.append(int(token, 2))
    pairs = tokens[len(bits):2 * len(bits)]
    if not bits or len(pairs) != len(bits) or not all(_rx.PAIR.fullmatch(p) for p in pairs) \
            or [int(p, 16) for p in pairs] != bits:
        return None
    return bytes(bits)


def _column_split(body: str, per_byte: int, digit_chars: frozenset, area_rx: re.Pattern) -> tuple[str, str] | None:
    """(digits area, ASCII column) of a line whose ASCII column has one character per byte: exactly one split
    leaves `per_byte` digits before it per character after it (the count before falls by at most one per
    character the count after gains): found in one step on an ordinary line, else by a scan."""
    i = body.find("  ")
    if i > 0:
        area, text = body[:i], body[i + 2:]
        if len(area) - area.count(" ") == per_byte * len(text) and area_rx.fullmatch(area):
            return area, text
    digits = sum(1 for c in body if c in digit_chars)
    for k in range(1, len(body)):
        if body[-k] in digit_chars:
            digits -= 1
        if digits < per_byte * k:
            break
        if digits == per_byte * k and body[-k - 1] == " " and area_rx.fullmatch(body[:-k]):
            return body[:-k], body[-k:]
    return None


def _xxd_split(line: str) -> tuple[str, str, str, bool] | None:
    """(address, digits area, ASCII column, bits) of an xxd line: hex digits, or with `xxd -b` binary digits
    (8 per byte); the ASCII column is empty when neither fits (the caller reports the line)."""
    m = _rx.XXD.match(line)
    if not m:
        return None
    body = line[m.end():]
    if body[:1] in ("0", "1") and not body[:8].strip("01"):
        split = _column_split(body, 8, _BITCHARS, _rx.BITSPACE)
        if split is not None:
            return m.group(1), split[0], split[1], True
    split = _column_split(body, 2, _HEXCHARS, _rx.HEXSPACE)
    if split is not None:
        return m.group(1), split[0], split[1], False
    # an editor or a log that trimmed trailing blanks cut spaces (bytes 0x20) off the ASCII column's end
    i = body.find("  ")
    if i > 0:
        hexarea, text = body[:i], body[i + 2:]
        digits = len(hexarea) - hexarea.count(" ")
        if text and text == text.rstrip() and len(text) < digits // 2 and not digits % 2 \
                and _rx.HEXSPACE.fullmatch(hexarea):
            return m.group(1), hexarea, text + " " * (digits // 2 - len(text)), False
    return m.group(1), body, "", False


def _printable_as_xxd(data: bytes, text: str) -> bool:
    return len(data) == len(text) and all(c == (chr(v) if 32 <= v < 127 else ".") for v, c in zip(data, text))


def _xxd_bytes(hexarea: str, little_endian: bool, bits: bool = False) -> bytes:
    groups = hexarea.split()
    if bits:
        if any(len(g) % 8 for g in groups):
            raise ValueError("a group of binary digits that is no whole byte")
        return b"".join(int(g, 2).to_bytes(len(g) // 8, "big") for g in groups)
    if not little_endian:
        return bytes.fromhex("".join(groups))
    return b"".join(bytes.fromhex(g)[::-1] for g in groups)


class _Radix:
    """Which address radices fit every line so far: each line starts where the one before ended, a `*` stands
    for at least one repeat of the line before, the closing size line ends within the last line and what it
    cuts off is the zero padding of the last word."""

    def __init__(self, candidates: tuple[int, ...], prefer_first: bool = False):
        self.candidates = candidates
        self.prefer_first = prefer_first
        # per radix: [address of the last line, its byte count, '*' since, bytes the size line cut]
        self.alive = {r: [None, 0, False, 0] for r in candidates}
        self.tail = b""  # the last line's last bytes (what a size line may cut)
        self.saw_star = False
        self.differing: list[str] = []  # addresses that read differently in the candidate radices (the first few)

    @staticmethod
    def _value(radix: int, token: str) -> int | None:
        try:
            return int(token, radix)
        except ValueError:
            return None

    def _fits(self, value: int, state: list, closing: bool) -> bool:
        prev, n, star, _ = state
        if prev is None:
            return True
        if star:
            return n > 0 and value >= prev + 2 * n and (value - prev) % n == 0
        if not closing:
            return value == prev + n
        cut = prev + n - value
        if not 0 <= cut <= len(self.tail) or any(self.tail[len(self.tail) - cut:]):
            return False
        state[3] = cut
        return True

    def _step(self, token: str, n: int, closing: bool) -> None:
        if len(self.differing) < 64 and len({self._value(r, token) for r in self.candidates}) > 1:
            self.differing.append(token)
        for radix in list(self.alive):
            state = self.alive[radix]
            value = self._value(radix, token)
            if value is None or not self._fits(value, state, closing):
                del self.alive[radix]
                continue
            state[0], state[1], state[2] = value, n, False

    def data(self, token: str, data: bytes, slack: int) -> None:
        self._step(token, len(data), False)
        self.tail = data[len(data) - slack:] if slack else b""

    def keep(self, radix: int) -> None:
        self.alive = {radix: self.alive[radix]}

    def drop(self, radix: int) -> None:
        del self.alive[radix]

    def star(self) -> None:
        self.saw_star = True
        for state in self.alive.values():
            state[2] = True

    def size(self, token: str) -> None:
        self._step(token, 0, True)

    def resolve(self, path: str, what: str) -> int:
        alive = [r for r in self.candidates if r in self.alive]
        if not alive:
            return self.candidates[0]  # no radix fits: decoding names the first line that does not
        if len(alive) == 1 or self.prefer_first:
            return alive[0]
        # Radices that fit every line read the same bytes (only the start address differs) unless a `*` (as many
        # lines as the next address says) reads differently: that is refused. Where only the size line's cut of
        # the last word's zero padding differs (od -t x4 of 9 bytes: `0000011` is 9 octal, 11 decimal), the
        # tool's default radix is taken (od's octal; hexdump's hexadecimal before od -A d).
        same_star = all(len({self._value(r, t) for r in alive}) == 1 for t in self.differing) \
            and len(self.differing) < 64
        if not self.saw_star or same_star:
            return alive[0]
        if alive == [8, 10]:
            # od's default octal against -A d, which the user asked for by name: a -A d text fits octal only when
            # every address after a '*' happens to have no 8 or 9 in it, an octal one fits decimal far more often
            return 8
        names = {8: "octal", 10: "decimal", 16: "hexadecimal"}
        raise InputError(f"{what} addresses read as {' or '.join(names[r] for r in alive)} both fit every line, "
                         f"and give different bytes: dump it again with hexadecimal addresses and -v "
                         f"(`od -A x -t x1 -v`, `hexdump -C -v`)", path)


def _words(line: str) -> tuple[str, list[str], bool] | None:
    """(address, values, has `>ASCII<`) of an od -t x* / hexdump (no -C) line, else None. The values are all of one
    width (2, 4, 8 or 16 digits) one space apart, or 4 digits four spaces apart (hexdump -x): od -t u1 pads
    its decimals with spaces (`  65`), which must not read as the hex byte 0x65."""
    m = _rx.WORDS_X1.match(line)
    if m:
        return m.group(1), m.group(2).split(), line.endswith("<")
    m = _rx.WORDS.match(line)
    if not m:
        return None
    values = m.group(2)
    tokens = values.split()
    width = len(tokens[0])
    if width not in (2, 4, 8, 16) or any(len(t) != width for t in tokens):
        return None
    if values != " " + " ".join(tokens) and not (width == 4 and values == "    " + "    ".join(tokens)):
        return None
    return m.group(1), tokens, line.rstrip().endswith("<")


def _word_bytes(tokens: list[str]) -> tuple[bytes, int]:
    """Bytes of od / hexdump values (all one width, see _words): words in little-endian order, and how many
    bytes of zero padding the last word of a dump may carry."""
    width = len(tokens[0])
    if width == 2:
        return bytes.fromhex("".join(tokens)), 0
    size = width // 2
    return b"".join(int(t, 16).to_bytes(size, "little") for t in tokens), size - 1


def _prepass(fmt: str, lines: list[str], path: str) -> tuple[int, bool | None, str]:
    """Settle what a line cannot say alone: the address radix (od, xxd -d) and xxd's byte order (-e).
    Returns (radix, little_endian for xxd, the word format's first address)."""
    return _xxd_prepass(lines, path) if fmt == "xxd" else _words_prepass(fmt, lines, path)


def _xxd_prepass(lines, path: str) -> tuple[int, bool, str]:
    """xxd's address radix (-d is decimal) and byte order (-e: little-endian words), from its first lines."""
    radix = _Radix((16, 10), prefer_first=True)  # xxd -d (decimal) is rare; -a's '*' must not refuse xxd
    order: bool | None = None
    differs = False
    group = 0
    for raw in lines:
        line = _strip(raw, keep_blanks=True)
        if not line or _rx.PROMPT.match(line):
            continue
        if line.rstrip() == "*":
            radix.star()
            continue
        split = _xxd_split(line)
        if split is None or not split[2]:
            continue
        token, hexarea, text, bits = split
        radix.data(token, b"\0" * len(text), 0)
        groups = hexarea.split()
        if not bits:
            group = max(group, max(len(g) for g in groups) // 2) if groups else group
            if order is None and group > 1:
                order, seen = _xxd_order(hexarea, groups, text, group)
                differs = differs or seen
        if len(radix.alive) <= 1 and (order is not None or group == 1):
            break
    if order is None and differs and group >= 4:
        raise InputError(f"xxd groups of {group} bytes whose ASCII column cannot tell `xxd -e` (little-endian "
                         f"words) from `xxd -g {group}` (bytes in order): re-run xxd with -g 1", path)
    return radix.resolve(path, "xxd"), bool(order), ""


def _xxd_order(hexarea: str, groups: list[str], text: str, group: int) -> tuple[bool | None, bool]:
    """(little-endian, or None when this line cannot tell; whether its bytes read differently in the two
    orders) of one xxd line with groups of `group` bytes."""
    if hexarea.startswith(" ") or "  " in hexarea.strip():
        return True, False  # -e right-aligns a short last group
    if groups and len(groups[-1]) < 2 * group:
        return False, False  # without -e a short last group starts right after the one before
    forward, backward = _xxd_bytes(hexarea, False), _xxd_bytes(hexarea, True)
    if forward == backward:
        return None, False
    ok_f, ok_b = _printable_as_xxd(forward, text), _printable_as_xxd(backward, text)
    return (ok_b if ok_f != ok_b else None), True


def _words_prepass(fmt: str, lines, path: str) -> tuple[int, None, str]:
    """od's / hexdump's address radix (and the first address, which names the variant) from the first lines."""
    radix = None
    first_addr = ""
    first_count = 0
    for raw in lines:
        line = _strip(raw, keep_blanks=fmt != "hexdump")
        padded = line != line.rstrip()
        line = line.rstrip()
        if not line or _rx.PROMPT.match(line):
            continue
        if line == "*":
            if radix is not None:
                radix.star()
            continue
        if radix is None and _rx.HEXDUMP.match(line):
            return 16, None, ""  # hexdump -C: hexadecimal addresses, bytes in order
        size_only = _rx.SIZE_ONLY.match(line)
        words = None if size_only else _words(line)
        if radix is None:
            if words is None:
                continue
            first_addr = words[0]
            radix = _Radix(_radices(fmt, first_addr, len(words[1][0])))
        if size_only:
            radix.size(size_only.group(1))
        elif words is not None:
            radix.data(words[0], *_word_bytes(words[1]))
            first_count = first_count or len(words[1])
            if len(words[1]) < first_count and not words[2]:
                _short_line(radix, padded)
        if len(radix.alive) <= 1:
            break
    if radix is None:
        return 16, None, ""
    return radix.resolve(path, "od / hexdump"), None, first_addr


def _short_line(radix: _Radix, padded: bool) -> None:
    """A line shorter than the first: hexdump pads it with blanks to the full width, od does not."""
    if 16 in radix.alive and len(radix.alive) > 1:
        if padded:
            radix.keep(16)
        else:
            radix.drop(16)


def _radices(fmt: str, first_addr: str, word_width: int) -> tuple[int, ...]:
    """The address radices a word dump's first line allows (its address's digits, its words' width)."""
    if fmt == "hexdump":
        return (16,)
    if len(first_addr) == 6:
        return (16,)  # GNU od -A x pads addresses to 6 digits, -A o / -A d to 7
    if len(first_addr) == 7 and word_width != 4:
        return (8, 10)
    return (8, 16, 10)  # 7 digits and 16-bit words: od -A o/-A d, or hexdump without -C


def _decode_c_array(lines, path: str, encoding: str) -> TextDump:
    """`xxd -i`: the bytes between `unsigned char NAME[] = {` and `};`, checked against `NAME_len = N;`."""
    b = _Builder(path, None)
    state = "before"
    name = ""
    for lineno, raw in enumerate(lines, start=1):
        line = raw.strip()
        if not line:
            continue
        if state == "before":
            m = _rx.C_HEAD.match(line)
            if m:
                state, name, b.start = "body", m.group(1), 0
            continue
        if state == "body":
            if line in ("};", "}"):
                state = "after"
                continue
            if not _rx.C_BODY.match(line):
                b.fail(lineno, f"not a line of a C array (xxd -i): {line[:60]!r}")
            b.add(None, bytes(int(t, 16) for t in re.findall(r"0[xX]([0-9a-fA-F]{2})", line)), lineno)
            continue
        m = _rx.C_LEN.match(line)
        if m and len(m.group(2)) > MAX_NUMBER_DIGITS:
            b.fail(lineno, f"{m.group(1)} has {len(m.group(2)):,} digits, more than the {MAX_NUMBER_DIGITS} of a "
                           f"size (MAX_NUMBER_DIGITS)")
        if m and m.group(1) == f"{name}_len" and int(m.group(2)) != len(b.out):
            b.fail(lineno, f"{name}_len says {int(m.group(2)):,} bytes, the array holds {len(b.out):,}")
    if state == "before":
        raise InputError("no `unsigned char NAME[] = {` line of a C array (xxd -i) found", path)
    if state == "body":
        raise InputError(f"the C array {name}[] has no closing `}};`: the text is cut", path)
    return TextDump(data=bytes(b.out), format="c-array", variant="C array (xxd -i)", start_address=0,
                    lines=b.lines, encoding=encoding)


# --- the real driver's own hex rows (npu_driver Device.c / Queue.c, npu_test_console, add_model_test_console) --

# Which buffer each of the driver's tags prints (DbgPrint's `[TAG]`, `/USER` or `/BOUNCE` after DPC-OUT: which
# copy of the output it scanned), and the console's output dump. A tag the driver does not use is its own buffer.
DRIVER_BUFFERS = {
    "DPC-OUT": "output", "DONE-OUT": "output", "console": "output",
    "BS-DUMP": "bitstream", "BS-SCAN": "bitstream", "DPC-SCAN-INFERBitstream": "bitstream",
    "SCAN-INFERBitstream": "bitstream",
    "INPUT-CHK": "input", "INPUT-VERIFY": "input", "DPC-SCAN-InputImage": "input", "SCAN-InputImage": "input",
    "DPC-SCAN-PARAMBitstream": "param_bitstream", "SCAN-PARAMBitstream": "param_bitstream",
    "SCAN-ParamData": "param_data", "DPC-SCAN-DescRing": "desc_ring", "SCAN-DescRing": "desc_ring",
    "DPC-SCAN-StatusBlock": "status_block", "SCAN-StatusBlock": "status_block", "SCAN-PageTable": "page_table",
}
_DRIVER_KEYS = {key.lower(): value for key, value in DRIVER_BUFFERS.items()}


def driver_buffer(tag: str) -> str:
    """The buffer a driver tag's lines describe (`DPC-OUT/USER` -> output); an unknown tag is its own name."""
    return _DRIVER_KEYS.get(tag.split("/", 1)[0].lower(), tag)


_PAIRS16 = r"((?:[0-9A-Fa-f]{2}[ \t]{1,2}){15}[0-9A-Fa-f]{2})"
# `[DPC-OUT] [00] %02x x8  %02x x8`, `[BS-DUMP] [10] ...`, `[DONE-OUT] [@+0x2000 OUTPUT[1] start] ...`
DRIVER_ROW = re.compile(r"\[([A-Za-z][\w/.-]*)\][ \t]+\[(?:([0-9A-Fa-f]{2,8})|@\+0x([0-9A-Fa-f]+)[^\n]*?)\][ \t]+"
                        + _PAIRS16 + r"[ \t]*$")
# `[DPC-OUT/USER] firstNon0xCC@0x%lx: ...`, `tail64@0x%lx: ...`, `[DPC-SCAN-DescRing] @0x%lx: ...`
DRIVER_AT = re.compile(r"\[([A-Za-z][\w/.-]*)\][ \t]+(\w*)@0x([0-9A-Fa-f]+):[ \t]+" + _PAIRS16 + r"[ \t]*$")
# the consoles: `--- Output buffer (%zu bytes, %zu non-zero) ---` / `--- output buffer dump ---`, then
# (add_model) `  total=%zu  non-zero=%zu`, then `  [%04x] ` and `%02x ` per byte, 16 a row, 64 bytes at most
CONSOLE_HEAD = re.compile(r"^\s*--- (?:Output buffer \((\d+) bytes, (\d+) non-zero\)|output buffer dump) ---\s*$")
CONSOLE_TOTAL = re.compile(r"^\s*total=(\d+)\s+non-zero=(\d+)\s*$")
CONSOLE_ROW = re.compile(r"^\s*\[([0-9a-f]{4,16})\] ((?:[0-9a-f]{2} ?){1,16})\s*$")
# the size the driver states of a buffer it prints rows of: `[DPC-OUT/%s] kernel VA=%p outVA=0x%llx size=%llu`,
# `[DONE-OUT] kernel VA=..`, `[BS-DUMP] kernel VA=%p size=%lu`, `Output buffer pre-filled with 0xCC (size=%llu)`
DRIVER_SIZE = re.compile(r"\[([A-Za-z][\w/.-]*)\][ \t]+kernel VA=\S+[ \t]+(?:outVA=\S+[ \t]+)?size=(\d+)")
PREFILL_SIZE = re.compile(r"Output buffer pre-filled with 0xCC \(size=(\d+)\)")


@dataclass(frozen=True)
class DriverRow:
    """One row of bytes the driver printed: the buffer, the tag that printed it, its offset and bytes."""

    buffer: str
    tag: str
    offset: int
    data: bytes
    line: int
    label: str = ""  # how the line names the place: `[10]`, `tail64@0x1fc0`, `[@+0x2000]`, `[0010]`


class DriverRows:
    """The driver's hex rows among a log's lines, fed one line at a time (the console's rows follow its header)."""

    def __init__(self):
        self.console = False
        self.sizes: dict[str, int] = {}  # buffer -> the size the driver states (the last one)

    def row(self, line: str, lineno: int) -> DriverRow | None:
        if "size=" in line:
            m = DRIVER_SIZE.search(line)
            if m:
                self.sizes[driver_buffer(m.group(1))] = int(m.group(2))
            elif (m := PREFILL_SIZE.search(line)):
                self.sizes["output"] = int(m.group(1))
        if self.console:
            m = CONSOLE_ROW.match(line)
            if m:
                return DriverRow("output", "console", int(m.group(1), 16), bytes.fromhex(m.group(2)), lineno,
                                 f"[{m.group(1)}]")
            if line.strip() and not CONSOLE_TOTAL.match(line):
                self.console = False
        if "--- " in line and (m := CONSOLE_HEAD.match(line)):
            self.console = True
            if m.group(1):
                self.sizes["output"] = int(m.group(1))
            return None
        if "[" not in line:
            return None
        m = DRIVER_ROW.search(line)
        if m:
            offset = int(m.group(2) or m.group(3), 16)
            label = f"[{m.group(2)}]" if m.group(2) else f"[@+0x{m.group(3)}]"
        else:
            m = DRIVER_AT.search(line)
            if not m:
                return None
            offset = int(m.group(3), 16)
            label = f"{m.group(2)}@0x{m.group(3)}"
        return DriverRow(driver_buffer(m.group(1)), m.group(1), offset, bytes.fromhex(m.group(4)), lineno, label)


def _decode_driver(open_lines, path: str, gap_fill: int | None, encoding: str, tag: str | None) -> TextDump:
    """The driver's hex rows of one buffer as its bytes, from the first row's offset: rows at their bracketed
    offsets, a single `...@0xOFF:` row at its own, rows that overlap agreeing byte for byte; a hole between
    rows is filled only with `gap_fill`. `tag` picks the buffer (by name, `output`, or a tag that prints it,
    `DPC-OUT`) when the log shows several."""
    reader = DriverRows()
    rows: dict[str, list[DriverRow]] = {}
    for lineno, raw in enumerate(open_lines(), start=1):
        row = reader.row(raw, lineno)  # (searched: DbgView's columns may precede them; the console's rows not)
        if row is not None:
            rows.setdefault(row.buffer, []).append(row)
    if not rows:
        raise InputError("no rows of the driver's hex dumps found ([DPC-OUT] [00] .., [BS-DUMP] [10] .., "
                         "`--- Output buffer (...) ---` and its `  [0000] ..` rows)", path)
    wanted = _wanted_buffer(rows, tag, path)
    found = rows[wanted]
    held = _held_bytes(found, wanted, path)
    size = reader.sizes.get(wanted)
    cut = size is not None and max(held) >= size > min(held)
    if cut:  # the driver prints whole rows of a shorter buffer: the bytes past its end are not the buffer's
        held = {at: value for at, value in held.items() if at < size}
    start = min(held)
    tags = ", ".join(dict.fromkeys(f"[{r.tag}]" for r in found))
    variant = f"driver {wanted} {tags}" + (f", cut at its size {size:,}" if cut else "")
    return TextDump(data=_driver_bytes(held, found, gap_fill, path), format="driver", variant=variant,
                    start_address=start, lines=len(found), encoding=encoding)


def _wanted_buffer(rows: dict, tag: str | None, path: str) -> str:
    """The buffer whose rows are decoded: the one `tag` names, or the only one the log shows."""
    listing = ", ".join(f"{name} ({', '.join(dict.fromkeys(f'[{r.tag}]' for r in found))}, lines "
                        f"{found[0].line}-{found[-1].line})" for name, found in rows.items())
    if tag is not None:
        wanted = tag if tag in rows else driver_buffer(tag)
        if wanted not in rows:
            raise InputError(f"no hex rows of buffer {tag!r}: the log shows {listing}", path)
        return wanted
    if len(rows) > 1:
        first = next(iter(rows))
        raise InputError(f"the driver printed hex rows of {len(rows)} buffers: {listing}; import one: "
                         f"forensics import {path} --tag {first} -o {first}.bin", path)
    return next(iter(rows))


def _held_bytes(found, wanted: str, path: str) -> dict[int, tuple[int, int]]:
    """offset -> (byte, line) of every byte the rows show; rows that overlap must agree."""
    held: dict[int, tuple[int, int]] = {}
    for row in found:
        for k, byte in enumerate(row.data):
            at = row.offset + k
            if at in held and held[at][0] != byte:
                raise InputError(f"line {row.line}: [{row.tag}] shows 0x{byte:02x} at 0x{at:x} where line "
                                 f"{held[at][1]} shows 0x{held[at][0]:02x}: two different dumps of {wanted} "
                                 f"(cut the log to one inference)", path)
            held.setdefault(at, (byte, row.line))
    return held


def _driver_bytes(held: dict, found, gap_fill: int | None, path: str) -> bytes:
    """The bytes from the first held offset to the last; a hole is filled with `gap_fill`, else an error."""
    start, end = min(held), max(held) + 1
    if end - start > MAX_TEXT_BYTES:
        raise InputError(f"rows from 0x{start:x} to 0x{end:x}: more than the {MAX_TEXT_BYTES >> 20} MiB a text dump "
                         "may hold", path)
    out = bytearray(end - start)
    missing = end - start - len(held)
    if missing:
        hole = next(at for at in range(start, end) if at not in held)
        if gap_fill is None:
            after = next(r for r in sorted(found, key=lambda r: r.offset) if r.offset > hole)
            raise InputError(f"line {after.line}: the rows leave a gap of {missing:,} bytes from 0x{hole:x} "
                             f"(fill it with {{gap_fill}})", path, params=True)
        out[:] = bytes([gap_fill]) * len(out)
    for at, (byte, _) in held.items():
        out[at - start] = byte
    return bytes(out)


def decode_text_dump(text: str, *, path: str = "<text>", fmt: str = "auto", gap_fill: int | None = None,
                     encoding: str = "utf-8", tag: str | None = None) -> TextDump:
    """Decode a text hex dump to its bytes. `fmt` is "auto" or one of FORMATS; `gap_fill` (0-255) fills
    holes between addresses and WinDbg's `??`, else either is an InputError naming the line."""
    text, marked = as_ascii(text)
    return dataclasses.replace(_decode(lambda: iter_lines(text), path=path, fmt=fmt, gap_fill=gap_fill,
                                       encoding=encoding, tag=tag), non_ascii_lines=marked)


def _decode(open_lines, *, path: str, fmt: str, gap_fill: int | None, encoding: str,
            tag: str | None = None) -> TextDump:
    """decode_text_dump over lines: `open_lines()` gives a fresh iterator of them each time (the format is judged
    on the first lines, od's radix and xxd's byte order in a first pass that usually stops early)."""
    fmt = _format_of(open_lines, path, fmt, gap_fill, tag)
    if fmt == "driver":
        return _decode_driver(open_lines, path, gap_fill, encoding, tag)
    if tag is not None:
        raise InputError(f"{{tag}} picks a buffer among a driver's hex rows; this is {FORMAT_NAMES[fmt]}", path,
                         params=True)
    if fmt == "c-array":
        return _decode_c_array(open_lines(), path, encoding)
    scan = _Scan(fmt, path)
    if fmt in ("xxd", "od", "hexdump"):
        scan.radix, scan.little_endian, scan.first_addr = _prepass(fmt, open_lines(), path)
    scan.b = _Builder(path, gap_fill)
    scan.variant = _first_variant(fmt, scan.radix, scan.little_endian)
    total = 0
    for first, block in _blocks(open_lines()):
        total = first + len(block) - 1
        if not _fast_block(scan, first, block):
            for lineno, raw in enumerate(block, start=first):
                _scan_line(scan, raw, lineno)
    b = scan.b
    if b.repeat_pending and b.last_line:
        b.fail(total, "'*' at the end without a closing address")
    if not scan.started and not scan.closed:
        raise InputError(f"no lines of {scan.what} found", path)
    return TextDump(data=bytes(b.out), format=_settled_format(fmt, scan.variant), variant=scan.variant or fmt,
                    start_address=b.start, lines=b.lines, encoding=encoding)


def _format_of(open_lines, path: str, fmt: str, gap_fill: int | None, tag: str | None = None) -> str:
    """The format `fmt` names, checked, or for "auto" the one the first lines show (the driver's rows may be
    further down its log; a `tag` asked for picks the driver's rows whatever columns precede them); an
    InputError when it is none we know."""
    if fmt not in ("auto",) + FORMATS:
        raise InputError(f"unknown text dump format {fmt!r} (expected auto, {', '.join(FORMATS)})", path)
    if gap_fill is not None and not 0 <= gap_fill <= 255:
        raise InputError(f"gap_fill must be a byte value 0-255, got {gap_fill}", path)
    if fmt != "auto":
        return fmt
    if tag is not None and has_driver_rows(open_lines()):
        return "driver"  # a buffer among the driver's rows was asked for: whatever columns precede them
    head = "\n".join(itertools.islice(open_lines(), 400))  # what detect_format and _refusal look at
    found = detect_format(head)
    if found is None and has_driver_rows(open_lines()):  # the driver's rows further down its log
        found = "driver"
    if found is None:
        raise InputError(_refusal(head) or f"not a text hex dump this tool knows ({KNOWN_TEXT})", path)
    return found


def _first_variant(fmt: str, radix: int, little_endian: bool | None) -> str:
    """The variant a format's dump is taken for before its lines say more ("" while unknown)."""
    variant = {"xxd": "xxd -e" if little_endian else "xxd", "plain": "plain", "certutil": "certutil -encodehex",
               "format-hex": "Format-Hex"}.get(fmt, "")
    return variant + " -d" if fmt == "xxd" and radix == 10 else variant


def _settled_format(fmt: str, variant: str) -> str:
    """hexdump and od print alike in some modes: the variant the lines showed names the tool."""
    if fmt in ("od", "hexdump") and variant.startswith("hexdump") and variant != "hexdump -C":
        return "hexdump"
    if fmt == "hexdump" and variant.startswith("od"):
        return "od"
    return fmt


@dataclass
class _Scan:
    """What _decode knows while it walks one text dump's lines: the format, its radix / byte order / first
    address from the prepass, the variant seen so far, and where the dump stands (started, closed by a size
    line, a stray line waiting to be judged by what follows it)."""

    fmt: str
    path: str
    b: _Builder | None = None
    radix: int = 16
    little_endian: bool | None = None
    first_addr: str = ""
    variant: str = ""
    slack: int = 0
    started: bool = False
    closed: bool = False
    pending_error: tuple[int, str] | None = None

    @property
    def what(self) -> str:
        return FORMAT_NAMES[self.fmt]

    def fail_pending(self) -> None:
        if self.pending_error is not None:  # a stray line between dump lines: the dump is damaged
            self.b.fail(self.pending_error[0], f"not a line of {self.what}: {self.pending_error[1][:60]!r}")


def _fast_block(scan: _Scan, first: int, block) -> bool:
    """Whether a WinDbg block was decoded at once (every line a full `db` line, contiguous)."""
    if scan.fmt != "windbg" or scan.pending_error is not None or scan.b.repeat_pending:
        return False
    fast = _fast_db(block)
    if fast is None:
        return False
    scan.b.add_block(fast[0], fast[1], len(block), fast[2], first)
    scan.started, scan.variant = True, "db"
    return True


def _scan_line(scan: _Scan, raw: str, lineno: int) -> None:
    """One line of the dump: skipped, a repeat mark, the closing size line, or a dump line added."""
    fmt, b = scan.fmt, scan.b
    line = _strip(raw, fmt == "xxd")  # xxd's ASCII column may end in spaces
    if not line or _rx.PROMPT.match(line) or (fmt == "format-hex" and _rx.PS_HEADER.match(line)):
        return
    if line == "*":
        if fmt not in ("hexdump", "od", "xxd"):
            b.fail(lineno, "'*' (repeated lines) without addresses: how many lines it stands for is unknown; "
                           "dump again with -v")
        if not scan.started:
            b.fail(lineno, "'*' before any dump line")
        b.repeat_pending = True
        return
    size_only = _rx.SIZE_ONLY.match(line) if fmt in ("hexdump", "od") else None
    if size_only:  # the final line: the total size (also closes a '*' run)
        try:
            end = int(size_only.group(1), scan.radix)
        except ValueError:
            b.fail(lineno, f"address {size_only.group(1)!r} is not base {scan.radix} like the lines before")
        scan.fail_pending()
        b.end_at(end, lineno, scan.slack)
        scan.closed = True
        return
    parser = _LINE_PARSERS.get(fmt)
    parsed = parser(scan, line, raw, lineno) if parser is not None else None
    if parsed is None:
        if fmt == "plain":
            b.fail(lineno, f"not a line of {scan.what}: {line[:60]!r}")
        if scan.started:
            scan.pending_error = scan.pending_error or (lineno, line)
        return  # text before the dump (a header, a log message) is skipped
    scan.fail_pending()
    if scan.closed:
        b.fail(lineno, f"a dump line after the closing size line: {line[:60]!r}")
    scan.started = True
    b.add(parsed[0], parsed[1], lineno)


def _windbg_parsed(scan: _Scan, line: str, raw: str, lineno: int):
    m = _rx.WINDBG_ADDR.match(line) or _rx.WINDBG_PHYS.match(line)
    if not m:
        return None
    address, data, scan.variant = _windbg_line(line, m, lineno, scan.b)
    return address, data


def _xxd_parsed(scan: _Scan, line: str, raw: str, lineno: int):
    split = _xxd_split(line)
    if split is None:
        return None
    token, hexarea, text_col, bits = split
    if bits and scan.variant == "xxd":
        scan.variant = "xxd -b"
    if not text_col:
        scan.b.fail(lineno, f"malformed xxd line (no ASCII column of as many characters as bytes): {line[:60]!r}")
    try:
        data = _xxd_bytes(hexarea, bool(scan.little_endian), bits)
    except ValueError:
        scan.b.fail(lineno, "malformed hex bytes")
    return int(token, scan.radix), data


def _hexdump_parsed(scan: _Scan, line: str, raw: str, lineno: int):
    m = _rx.HEXDUMP.match(line)
    if not m:
        return _words_parsed(scan, line, raw, lineno)
    scan.variant = "hexdump -C"
    return int(m.group(1), 16), _hexbytes(m.group(2).split(), lineno, scan.b)


def _words_parsed(scan: _Scan, line: str, raw: str, lineno: int):
    words = _words(line)
    if words is None:
        return None
    token, tokens, z = words
    try:
        address = int(token, scan.radix)
    except ValueError:
        scan.b.fail(lineno, f"address {token!r} is not base {scan.radix} like the lines before")
    data, scan.slack = _word_bytes(tokens)
    if not scan.variant:
        scan.variant = _words_variant(scan.radix, scan.first_addr, raw, len(tokens[0]), z)
    return address, data


def _format_hex_parsed(scan: _Scan, line: str, raw: str, lineno: int):
    m = _rx.PS7.match(line) or _rx.PS5.match(line)
    if not m:
        return None
    scan.variant = "Format-Hex (PowerShell 7)" if len(m.group(1)) == 16 else "Format-Hex (PowerShell 5.1)"
    return int(m.group(1), 16), _columns(line[m.end():], lineno, scan.b, "Format-Hex")


def _certutil_parsed(scan: _Scan, line: str, raw: str, lineno: int):
    m = _rx.CERTUTIL.match(line)
    if not m:
        return None
    return int(m.group(1), 16), _columns(line[m.end():], lineno, scan.b, "certutil", gap_after_8=True)


def _plain_parsed(scan: _Scan, line: str, raw: str, lineno: int):
    if not _is_plain(line):
        return None
    cleaned = line.replace(",", " ").replace("0x", " ").replace("0X", " ")
    if not scan.started and raw[:1].isspace():
        runs = _hex_runs(cleaned[:_LONG_LINE].rsplit(None, 1)[0] if len(cleaned) > _LONG_LINE
                         else cleaned)  # the first words tell
        if runs[0] in (4, 8, 16) and (runs == runs[0]).all():
            raise InputError("words without addresses (`od -A n -t x2`?): their byte order is "
                             "unknown; dump with `od -A x -t x1` instead", scan.path)
    return None, _hexbytes((cleaned,), lineno, scan.b)  # runs of pairs: fromhex skips the blanks


# (address or None, bytes) of one line in each format, or None when it is no dump line of it
_LINE_PARSERS = {"windbg": _windbg_parsed, "xxd": _xxd_parsed, "hexdump": _hexdump_parsed, "od": _words_parsed,
                 "format-hex": _format_hex_parsed, "certutil": _certutil_parsed, "plain": _plain_parsed}


def _words_variant(radix: int, first_addr: str, raw: str, width: int, z: bool) -> str:
    """`hexdump` / `hexdump -x` (7-digit hexadecimal addresses, 16-bit words) or `od -A ? -t x?[z]`."""
    if radix == 16 and len(first_addr) == 7 and width == 4:
        return "hexdump -x" if "    " in raw else "hexdump"
    return f"od -A { {8: 'o', 10: 'd', 16: 'x'}[radix]} -t x{width // 2}{'z' if z else ''}"


def read_text_dump(path: str, *, fmt: str = "auto", gap_fill: int | None = None, tag: str | None = None) -> TextDump:
    """Read and decode a text dump file, line by line (refused above MAX_TEXT_FILE; its bytes above
    MAX_TEXT_BYTES)."""
    if fmt not in ("auto",) + FORMATS:
        raise InputError(f"unknown text dump format {fmt!r} (expected auto, {', '.join(FORMATS)})", path)
    open_lines, encoding = text_lines(path, "a text hex dump")
    decoded = _decode(open_lines, path=path, fmt=fmt, gap_fill=gap_fill, encoding=encoding, tag=tag)
    return dataclasses.replace(decoded, non_ascii_lines=open_lines.non_ascii_lines)


def text_lines(path: str, what: str):
    """(open_lines, encoding) of a text file of at most MAX_TEXT_FILE bytes: `open_lines()` (a TextLines) reads
    it afresh, one ASCII line at a time (as str.splitlines() splits), so memory does not grow with the file.
    Every command reads its text this way: UTF-16 (a BOM, or NUL-interleaved ASCII without one) decoded, any
    other file taken as bytes in an ASCII-compatible encoding (UTF-8 or a code page, as_ascii); what is not
    ASCII is U+FFFD and counted (`open_lines.non_ascii_lines`). A file whose head is binary (NUL bytes, or
    control bytes beyond a stray one: looks_binary) is an InputError, `what` naming it ("a text hex dump", "a
    driver log")."""
    from forensics.io.files import check_readable_file

    size = check_readable_file(path)
    if size > MAX_TEXT_FILE:
        raise InputError(f"{size:,} bytes is larger than the {MAX_TEXT_FILE >> 20} MiB limit for {what} "
                         f"(MAX_TEXT_FILE); split it", path)
    head = read_head(path)
    encoding = text_encoding(head)
    if encoding is None:
        raise InputError(f"not text (binary bytes): not {what}", path)
    skip = 0
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) and encoding.startswith("utf-16"):
        skip = 2
    elif head.startswith(b"\xef\xbb\xbf"):
        skip = 3
    return TextLines(path, encoding, skip), encoding


def text_encoding(head: bytes) -> str | None:
    """How a file a command reads as text is decoded, from its head: "utf-16-le" / "utf-16-be", "utf-8" (its
    head is UTF-8, or ASCII) or "8-bit" (a code page); None when the head is binary (looks_binary)."""
    bomless = _utf16_without_bom(head)
    if bomless:
        return bomless
    if head.startswith(b"\xff\xfe"):
        return "utf-16-le"
    if head.startswith(b"\xfe\xff"):
        return "utf-16-be"
    if looks_binary(head):
        return None
    body = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
    try:
        body.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(body) - 3:  # not just a character cut by the sniff window
            return "8-bit"
    return "utf-8"


def looks_binary(head: bytes) -> bool:
    """Whether a file given as text is binary after all: a NUL byte, or control bytes (other than tab, line
    breaks and form feed) in more than 1 of 1,000 bytes of its head. One stray control byte in a log is the
    rest of a text (U+FFFD, counted), not a reason to refuse it."""
    if b"\0" in head:
        return True
    return len(head) - len(head.translate(None, _CONTROL_BYTES)) > len(head) // 1000


_CONTROL_BYTES = bytes(b for b in range(32) if b not in (9, 10, 12, 13)) + b"\x7f"


class TextLines:
    """A text file's lines as ASCII (as_ascii), read afresh at each call, one at a time. A call that reads them
    all sets `non_ascii_lines`: lines that held non-ASCII characters, control characters or bytes no text
    has (each is U+FFFD in the line)."""

    def __init__(self, path: str, encoding: str, skip: int):
        self.path, self.encoding, self.skip = path, encoding, skip
        self.non_ascii_lines = 0

    def __call__(self):
        from forensics.core.errors import reading

        marked = 0
        utf16 = self.encoding.startswith("utf-16")
        pending = "" if utf16 else b""  # the start of a line that goes on past the chunks read so far
        with reading(self.path), open(self.path, "rb") as raw:
            raw.seek(self.skip)
            if utf16:
                import io

                read = io.TextIOWrapper(raw, encoding=self.encoding, errors="replace", newline="").read
                breaks = ("\n", "\r", "\x0c")
            else:
                read = raw.read
                breaks = (b"\n", b"\r", b"\x0c")
            while True:  # 1 MiB at a time, cut at its last line break (never inside a character), converted,
                chunk = read(_TEXT_CHUNK)  # checked and split at C speed
                if chunk:
                    # the last line break of the chunk, but a final \r (its \n may come next)
                    cut = max(chunk.rfind(breaks[0]), chunk.rfind(breaks[1], 0, len(chunk) - 1),
                              chunk.rfind(breaks[2]))
                    if cut < 0:
                        pending += chunk
                        continue
                    whole, pending = pending + chunk[:cut + 1], chunk[cut + 1:]
                else:
                    whole, pending = pending, None
                text, held = as_ascii(_marked_controls(whole))
                del whole
                marked += held
                lines = text.splitlines()
                del text
                if pending is None:  # the end: what was pending was the last line
                    self.non_ascii_lines = marked
                    yield from lines
                    return
                yield from lines


def _marked_controls(chunk):
    """Bytes or str with each control character (but tab, line breaks, form feed) as U+FFFD: the rest of a text."""
    if isinstance(chunk, str):
        return _rx.CONTROL.sub(_REPLACEMENT, chunk) if _rx.CONTROL.search(chunk) else chunk
    if len(chunk.translate(None, _CONTROL_BYTES)) == len(chunk):  # none (a C pass; a regex search took 10x)
        return chunk
    return _rx.CONTROL_BYTES.sub(b"\xef\xbf\xbd", chunk)


def read_text(path: str, limit: int, what: str, *, too_large: str | None = None) -> tuple[str, str, int]:
    """(ASCII text, encoding, lines that held anything else) of a whole text file of at most `limit` bytes,
    read as text_lines reads it (a register trace: parsed as one string). `what` names it ("a register
    trace"), `too_large` in the error of a file over the limit (default `what`)."""
    from forensics.io.files import read_small_file

    data = read_small_file(path, limit, too_large or what)
    encoding = text_encoding(data[:SNIFF_BYTES])
    if encoding is None:
        raise InputError(f"not text (binary bytes): not {what}", path)
    if encoding.startswith("utf-16"):
        body = data[2:] if data.startswith((b"\xff\xfe", b"\xfe\xff")) else data
        raw = body.decode(encoding, errors="replace")
        del data, body
    else:
        raw = data[3:] if data.startswith(b"\xef\xbb\xbf") else data
        del data
    text, marked = as_ascii(_marked_controls(raw))
    return text, encoding, marked


def sniff_file(path: str, file_size: int) -> tuple[str, float] | None:
    """Look at a file's head: ("text-dump", share) when it is a text hex dump, ("text", share) when it is
    text of no known format, None when it is binary (share = printable ASCII share of the head)."""
    if file_size == 0:
        return None
    head = read_head(path)
    decoded = decode_text(head)
    share = ascii_share(head)
    if decoded is None:
        return ("binary", share)
    if "\n" not in decoded[0][:4096] and (len(head) < 4096 or not _HEX_TEXT.issuperset(decoded[0][:4096])):
        # no line break: a few printable bytes, or a binary buffer whose bytes happen to be printable (uint8
        # scores of 0.25..0.5 are 0x40..0x7f), unless it is one long line of hex digits
        return ("binary", share)
    text = decoded[0]
    if file_size > len(head):  # the last line of the sniff window may be cut
        cut = text[: text.rfind("\n") + 1]
        # one long line (`xxd -p -c 0`, spaced hex): cut at its last blank or comma, not inside a pair
        blank = max(text.rfind(" "), text.rfind(","))
        text = cut or (text[:blank].rstrip(" ,") if blank > 0 else text)
    # a dump in a form that is refused (od's octal words...) still goes to decoding, which says why
    if detect_format(text) or _refusal(text):
        return ("text-dump", share)
    if len(head) < file_size <= MAX_DRIVER_LOG:  # a driver log whose hex rows come after its first 64 KiB
        open_lines, _ = text_lines(path, "a text")
        if has_driver_rows(open_lines()):
            return ("text-dump", share)
    return ("text", share)


@dataclass(frozen=True)
class ImportResult:
    source: str
    output: str
    text: TextDump

    # kept: its document is the TextDump's (no bytes) beside where they were written
    def to_dict(self) -> dict:
        return {"source": self.source, "output": self.output, "bytes_written": len(self.text.data),
                "source_format": f"text ({self.text.description})", **self.text.to_dict()}


def import_text_dump(path: str, output: str, *, fmt: str = "auto", gap_fill: int | None = None,
                     tag: str | None = None) -> ImportResult:
    """Decode a text dump and write its bytes to `output` (atomically)."""
    from forensics.io.outputs import check_writable, write_bytes_atomic

    if fmt not in ("auto",) + FORMATS:
        raise InputError(f"unknown text dump format {fmt!r} (expected auto, {', '.join(FORMATS)})", path)
    check_writable(output)
    text = read_text_dump(path, fmt=fmt, gap_fill=gap_fill, tag=tag)
    write_bytes_atomic(output, text.data)
    return ImportResult(path, output, text)
