"""Text hex dumps as dumps: WinDbg db/dw/dd/dq/dc, xxd, hexdump -C, od -A x -t x1, plain hex -> bytes.

A kernel driver cannot write files, so its engineer copies memory out of WinDbg or a DbgView log. This module
recognises those texts by their content and decodes them to the bytes they show. Facts used (from the tools'
documented output):

- WinDbg `db`: `ADDRESS  b0 b1 .. b7-b8 .. b15  ASCII`; the address may carry the 64-bit backtick
  (`ffffb20c`4a3b2000`); byte i sits at column 3*i after the two spaces, `-` between the 8th and 9th byte, a
  short last line is padded so the ASCII column stays aligned; `??` marks memory that could not be read.
  `dw` / `dd` / `dq` print 8 / 4 / 2 words per line (dq as `hhhhhhhh`llllllll`), `dc` dwords then ASCII;
  words are little-endian in memory.
- `xxd`: `ADDRESS: hhhh hhhh ...  ASCII` (any -g grouping, bytes in memory order).
- `hexdump -C`: `ADDRESS  hh .. hh  hh .. hh  |ASCII|`, a final line with the size, `*` for repeated lines.
- `od -A x -t x1`: `ADDRESS hh hh ..` (optional `>ASCII<` with `z`), a final line with the size, `*` repeats;
  od's default octal addresses (`-A o`) and `-A d` are recognised by the step between the first two lines.
- plain hex: lines of hex digits, spaced or not, no addresses.

Any of these may sit behind DbgView prefixes (`00000012<TAB>0.00123400<TAB>`, `[1234] `) and the file may be
UTF-16 with a byte-order mark. Decoding is in memory: a text dump is refused above MAX_TEXT_BYTES.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from forensics.errors import InputError

MAX_TEXT_BYTES = 256 << 20  # a text dump is ~4x its bytes; beyond this, convert it in pieces
SNIFF_BYTES = 64 << 10

FORMATS = ("windbg", "xxd", "hexdump", "od", "plain")
FORMAT_NAMES = {
    "windbg": "WinDbg d* output", "xxd": "xxd output", "hexdump": "hexdump -C output",
    "od": "od -A x -t x1 output", "plain": "plain hex",
}

_HEX = "0-9a-fA-F"


class _Patterns:
    """The regular expressions, compiled on first use: a binary dump (most of them) never needs them, and
    compiling them all cost every command's start-up a few milliseconds."""

    SOURCES = dict(
        # DbgView's saved-log columns (line number, time) and DbgPrint's "[pid] " / "[pid:tid] " prefix.
        DBGVIEW=r"^\s*(?:\d+\t(?:[0-9.:]+(?:\s*[AP]M)?\t)?)?(?:\[[0-9a-fA-Fx:]+\]\s?)?",
        # a WinDbg command line pasted with its output: `0: kd> `, `lkd> `, `0:000> `, `0:000:x86> `
        PROMPT=r"^\s*(?:(?:\d+: )?[kl]?kd> |\d+:\d+(?::\w+)?> )",
        CONTROL="[\x00-\x08\x0b\x0e-\x1f\x7f]",
        WINDBG_ADDR=rf"^([{_HEX}]{{8}}(?:`[{_HEX}]{{8}})?)  (?=\S)",
        XXD=rf"^([{_HEX}]{{4,16}}): ",
        HEXDUMP=rf"^([{_HEX}]{{8,16}})  ((?:[{_HEX}]{{2}} {{1,2}}){{0,15}}[{_HEX}]{{2}}) +\|.*\|?$",
        OD=rf"^([{_HEX}]{{6,16}})((?: [{_HEX}]{{2}}){{1,}})(?:\s+>.*<?)?$",
        SIZE_ONLY=rf"^([{_HEX}]{{6,16}})$",
        DB_FULL=rf"(?:[{_HEX}]{{2}} ){{7}}[{_HEX}]{{2}}[- ](?:[{_HEX}]{{2}} ){{7}}[{_HEX}]{{2}}(?:  |$)",
        PAIR=f"[{_HEX}]{{2}}",
        HEXRUN=f"[{_HEX}]+",
        PLAIN=rf"^(?:0x)?[{_HEX}]{{2}}(?:[ ,]*(?:0x)?[{_HEX}]{{2}})*[ ,]*$",
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
    variant: str           # e.g. "db", "dd", "xxd -g 2", "plain"
    start_address: int | None
    lines: int             # dump lines decoded
    encoding: str

    @property
    def description(self) -> str:
        """`WinDbg db`, `xxd`, `hexdump -C`, `od -A x -t x1`, `plain hex`, with `, UTF-16` for such logs."""
        name = {"windbg": f"WinDbg {self.variant}", "xxd": "xxd", "hexdump": "hexdump -C",
                "od": "od -A x -t x1", "plain": "plain hex"}[self.format]
        return name + (", UTF-16" if self.encoding.startswith("utf-16") else "")

    def to_dict(self) -> dict:
        return {"format": self.format, "variant": self.variant, "start_address": self.start_address,
                "lines": self.lines, "encoding": self.encoding, "size": len(self.data)}


def decode_text(head: bytes) -> tuple[str, str] | None:
    """(text, encoding) when these bytes are text, else None: a binary file is never taken for text.

    Text is UTF-16 with a BOM, or UTF-8 / ASCII without control characters other than tab, CR, LF, FF.
    `head` may be cut mid-character at the end (a sniffed prefix)."""
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        encoding = "utf-16-le" if head.startswith(b"\xff\xfe") else "utf-16-be"
        body = head[2:]
        body = body[: len(body) // 2 * 2]
        try:
            text = body.decode(encoding)
        except UnicodeDecodeError:
            return None
    else:
        encoding = "utf-8"
        body = head[3:] if head.startswith(b"\xef\xbb\xbf") else head
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            if exc.start < len(body) - 3:  # not just a character cut by the sniff window
                return None
            text = body[: exc.start].decode("utf-8")
    if _rx.CONTROL.search(text):
        return None
    return text, encoding


_NOT_PRINTABLE = bytes(b for b in range(256) if not (32 <= b < 127 or b in (9, 10, 13)))


def ascii_share(head: bytes) -> float:
    """The share of printable ASCII (and tab / CR / LF) bytes: what a warning quotes for near-text files.
    Counted at C speed (every binary dump a command opens is sniffed): what is left once the others are deleted."""
    if not head:
        return 0.0
    return len(bytes(head).translate(None, _NOT_PRINTABLE)) / len(head)


def _strip(line: str) -> str:
    return _rx.DBGVIEW.sub("", line, count=1).rstrip()


def _classify(line: str) -> str | None:
    """The format a single (prefix-stripped) line looks like, or None."""
    if _rx.HEXDUMP.match(line):
        return "hexdump"
    if _rx.XXD.match(line):
        return "xxd"
    if _rx.WINDBG_ADDR.match(line):
        return "windbg"
    if _rx.OD.match(line) and len(line.split()[0]) >= 6:
        return "od"
    if _rx.PLAIN.match(line):
        return "plain"
    return None


def detect_format(text: str) -> str | None:
    """The format of a text dump, judged on its first dump lines; None when it is not one."""
    votes: dict[str, int] = {}
    seen = 0
    for raw in text.splitlines()[:400]:
        line = _strip(raw)
        if not line or _rx.PROMPT.match(line) or line == "*" or _rx.SIZE_ONLY.match(line):
            continue
        seen += 1
        kind = _classify(line)
        if kind is not None:
            votes[kind] = votes.get(kind, 0) + 1
        if seen >= 64:
            break
    if not votes:
        return None
    best = max(votes, key=votes.get)
    if best == "plain":  # plain hex has no addresses: every line must be hex, no stray text
        return "plain" if votes["plain"] == seen else None
    return best if votes[best] * 2 > seen else None


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
            while len(self.out) + self.start < address:
                take = min(len(self.last_line), address - (self.start + len(self.out)))
                self.out += self.last_line[:take]
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

    def add(self, address: int | None, data: bytes, lineno: int) -> None:
        if address is not None:
            self.advance_to(address, lineno)
        self.out += data
        self.last_line = data
        self.lines += 1
        if len(self.out) > MAX_TEXT_BYTES:
            self.fail(lineno, f"decodes to more than {MAX_TEXT_BYTES >> 20} MiB")


def _hexbytes(tokens, lineno: int, builder: _Builder) -> bytes:
    try:
        return bytes.fromhex("".join(tokens))
    except ValueError:
        builder.fail(lineno, "malformed hex bytes")


def _windbg_line(line: str, m: re.Match, lineno: int, b: _Builder) -> tuple[int, bytes, str]:
    address = int(m.group(1).replace("`", ""), 16)
    body = line[m.end():]
    if "??" in body.split("  ")[0] if body else False:
        b.fail(lineno, "'??': WinDbg could not read this memory")
    first = body.split()[0] if body.split() else ""
    width = len(first.split("-")[0].replace("`", ""))
    if width == 2:  # db: byte i at column 3*i, '-' after the 8th byte, then the ASCII column
        if _rx.DB_FULL.match(body):  # the common full line, in one step
            return address, bytes.fromhex(body[:47].replace("-", " ")), "db"
        data = bytearray()
        for i in range(16):
            pair = body[3 * i:3 * i + 2]
            if len(pair) < 2 or pair[0] == " ":
                break
            sep = body[3 * i + 2:3 * i + 3]
            if not _rx.PAIR.fullmatch(pair) or sep not in ("", " ", "-"):
                b.fail(lineno, f"malformed WinDbg db line: {pair!r} at byte {i}")
            data.append(int(pair, 16))
        return address, bytes(data), "db"
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
        if len(clean) != width or not _rx.HEXRUN.fullmatch(clean):
            if words and "  " in rest:  # dc / partial line: the ASCII column starts
                variant = "dc" if width == 8 else variant
                break
            b.fail(lineno, f"malformed WinDbg {variant} value {token!r}")
        words.append(clean)
    if len(words) == per_line and len(rest.split()) > per_line and width == 8:
        variant = "dc"
    data = b"".join(int(w, 16).to_bytes(width // 2, "little") for w in words)
    return address, data, variant


def _od_address_base(text: str) -> int:
    """od prints addresses in octal by default (`-A o`), or decimal (`-A d`) or hex (`-A x`): the radix in
    which the second line's address is the first's plus the first line's byte count."""
    lines = []
    for raw in text.splitlines():
        m = _rx.OD.match(_strip(raw))
        if m:
            lines.append((m.group(1), len(m.group(2).split())))
            if len(lines) == 2:
                break
    if len(lines) == 2:
        (a1, n1), (a2, _) = lines
        for base in (16, 8, 10):
            try:
                if int(a2, base) - int(a1, base) == n1:
                    return base
            except ValueError:
                continue
    return 16


def decode_text_dump(text: str, *, path: str = "<text>", fmt: str = "auto", gap_fill: int | None = None,
                     encoding: str = "utf-8") -> TextDump:
    """Decode a text hex dump to its bytes. `fmt` is "auto" or one of FORMATS; `gap_fill` (0-255) fills
    holes between addresses, else a hole is an InputError naming the line."""
    if fmt not in ("auto",) + FORMATS:
        raise InputError(f"unknown text dump format {fmt!r} (expected auto, {', '.join(FORMATS)})", path)
    if gap_fill is not None and not 0 <= gap_fill <= 255:
        raise InputError(f"gap_fill must be a byte value 0-255, got {gap_fill}", path)
    if fmt == "auto":
        found = detect_format(text)
        if found is None:
            raise InputError("not a text hex dump this tool knows (WinDbg db/dw/dd/dq, xxd, hexdump -C, "
                             "od -A x -t x1, plain hex)", path)
        fmt = found
    b = _Builder(path, gap_fill)
    variant = {"xxd": "xxd", "hexdump": "hexdump -C", "od": "od", "plain": "plain"}.get(fmt, "")
    base = _od_address_base(text) if fmt == "od" else 16
    started = False
    pending_error: tuple[int, str] | None = None
    for lineno, raw in enumerate(text.splitlines(), start=1):
        line = _strip(raw)
        if not line or _rx.PROMPT.match(line):
            continue
        if line == "*" and fmt in ("hexdump", "od", "xxd"):
            if not started:
                b.fail(lineno, "'*' before any dump line")
            b.repeat_pending = True
            continue
        size_only = _rx.SIZE_ONLY.match(line) if fmt in ("hexdump", "od") else None
        if size_only:  # the final line: the total size (also closes a '*' run)
            if started:
                b.advance_to(int(size_only.group(1), base), lineno)
                b.last_line = b""
            continue
        parsed = None
        if fmt == "windbg":
            m = _rx.WINDBG_ADDR.match(line)
            if m:
                address, data, variant = _windbg_line(line, m, lineno, b)
                parsed = (address, data)
        elif fmt == "xxd":
            m = _rx.XXD.match(line)
            if m:
                hexpart = line[m.end():].split("  ")[0]
                parsed = (int(m.group(1), 16), _hexbytes(hexpart.split(), lineno, b))
        elif fmt == "hexdump":
            m = _rx.HEXDUMP.match(line)
            if m:
                parsed = (int(m.group(1), 16), _hexbytes(m.group(2).split(), lineno, b))
        elif fmt == "od":
            m = _rx.OD.match(line)
            if m:
                try:
                    address = int(m.group(1), base)
                except ValueError:
                    b.fail(lineno, f"od address {m.group(1)!r} is not base {base} like the lines before")
                parsed = (address, _hexbytes(m.group(2).split(), lineno, b))
        elif fmt == "plain":
            if _rx.PLAIN.match(line):
                cleaned = line.replace(",", " ").replace("0x", " ").replace("0X", " ")
                parsed = (None, _hexbytes(cleaned.split(), lineno, b))
        if parsed is None:
            if not started or fmt == "plain":
                if fmt == "plain":
                    b.fail(lineno, f"not a line of {FORMAT_NAMES[fmt]}: {line[:60]!r}")
                continue  # text before the dump (a header, a log message) is skipped
            pending_error = pending_error or (lineno, line)
            continue
        if pending_error is not None:  # a stray line between dump lines: the dump is damaged
            b.fail(pending_error[0], f"not a line of {FORMAT_NAMES[fmt]}: {pending_error[1][:60]!r}")
        started = True
        b.add(parsed[0], parsed[1], lineno)
    if b.repeat_pending and b.last_line:
        b.fail(len(text.splitlines()), "'*' at the end without a closing address")
    if not started:
        raise InputError(f"no lines of {FORMAT_NAMES[fmt]} found", path)
    if fmt == "xxd":
        variant = "xxd"
    return TextDump(data=bytes(b.out), format=fmt, variant=variant or fmt, start_address=b.start,
                    lines=b.lines, encoding=encoding)


def read_text_dump(path: str, *, fmt: str = "auto", gap_fill: int | None = None) -> TextDump:
    """Read and decode a text dump file (refused above MAX_TEXT_BYTES)."""
    text, encoding = read_text_file(path, "a text hex dump")
    return decode_text_dump(text, path=path, fmt=fmt, gap_fill=gap_fill, encoding=encoding)


def read_text_file(path: str, what: str) -> tuple[str, str]:
    """(text, encoding) of a text file (UTF-8, or UTF-16 with a BOM) of at most MAX_TEXT_BYTES; `what` names
    it in the errors ("a text hex dump", "a driver log")."""
    from forensics.dump import check_readable_file
    from forensics.errors import reading

    size = check_readable_file(path)
    if size > MAX_TEXT_BYTES:
        raise InputError(f"{size:,} bytes is larger than the {MAX_TEXT_BYTES >> 20} MiB limit for {what}; "
                         f"split it", path)
    with reading(path):
        with open(path, "rb") as fh:
            raw = fh.read()
    decoded = decode_text(raw)
    if decoded is None:
        raise InputError(f"not text (binary bytes or an unknown encoding): not {what}", path)
    return decoded


def sniff_file(path: str, file_size: int) -> tuple[str, float] | None:
    """Look at a file's head: ("text-dump", share) when it is a text hex dump, ("text", share) when it is
    text of no known format, None when it is binary (share = printable ASCII share of the head)."""
    if file_size == 0:
        return None
    from forensics.errors import reading

    with reading(path):
        with open(path, "rb") as fh:
            head = fh.read(SNIFF_BYTES)
    decoded = decode_text(head)
    share = ascii_share(head)
    if decoded is None or "\n" not in decoded[0][:4096] and len(head) < 4096:
        return ("binary", share)  # a few printable bytes without a line break are not a text file
    text = decoded[0]
    if file_size > len(head):  # the last line of the sniff window may be cut
        text = text[: text.rfind("\n") + 1] or text
    return ("text-dump" if detect_format(text) else "text", share)


@dataclass(frozen=True)
class ImportResult:
    source: str
    output: str
    text: TextDump

    def to_dict(self) -> dict:
        return {"source": self.source, "output": self.output, "bytes_written": len(self.text.data),
                "source_format": f"text ({self.text.description})", **self.text.to_dict()}


def import_text_dump(path: str, output: str, *, fmt: str = "auto", gap_fill: int | None = None) -> ImportResult:
    """Decode a text dump and write its bytes to `output` (atomically)."""
    from forensics.outputs import check_writable, write_bytes_atomic

    if fmt not in ("auto",) + FORMATS:
        raise InputError(f"unknown text dump format {fmt!r} (expected auto, {', '.join(FORMATS)})", path)
    check_writable(output)
    text = read_text_dump(path, fmt=fmt, gap_fill=gap_fill)
    write_bytes_atomic(output, text.data)
    return ImportResult(path, output, text)
