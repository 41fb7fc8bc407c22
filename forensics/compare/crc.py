"""CRC32 of dumps: size, zlib/IEEE CRC32, head/mid/tail bytes, optional per-chunk CRCs, match verdict.

The CRC is zlib's (IEEE 802.3), computed by `crc32` (forensics.core.checksum, re-exported here): Intel ISA-L's
vectorised CRC through python-isal (3.5-4x zlib 1.2's speed) when it is installed, else zlib itself. Every CRC
forensics takes goes through that one function. Large files are split in two halves that two threads checksum
at once (both implementations release the GIL), joined with `crc32_combine`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.core import serial

from forensics.core.checksum import CRC32_BACKEND, crc32  # noqa: F401  (re-exported: forensics.compare.crc.crc32)
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.io.dump import Dump, iter_windows, open_dump
from forensics.core.parallel import both, two_cores


PEEK = 16  # bytes shown for HEAD / MID / TAIL
BLOCK = 4 << 20
PARALLEL_MIN = 32 << 20  # below this, a second thread costs more than it saves


def _gf2_times(matrix: list[int], vector: int) -> int:
    total, i = 0, 0
    while vector:
        if vector & 1:
            total ^= matrix[i]
        vector >>= 1
        i += 1
    return total


def _gf2_square(matrix: list[int]) -> list[int]:
    return [_gf2_times(matrix, row) for row in matrix]


def crc32_combine(crc1: int, crc2: int, len2: int) -> int:
    """CRC32 of A+B from crc32(A), crc32(B) and len(B): feed len2 zero bytes through crc1 by repeated
    squaring of the one-zero-bit operator over GF(2), then xor crc2 (the method zlib documents)."""
    if len2 <= 0:
        return crc1
    # Operator for one zero bit: the reflected polynomial in row 0, then a shift.
    odd = [0xEDB88320] + [1 << n for n in range(31)]
    even = _gf2_square(odd)  # two zero bits
    odd = _gf2_square(even)  # four zero bits
    while True:
        even = _gf2_square(odd)  # first pass: one zero byte
        if len2 & 1:
            crc1 = _gf2_times(even, crc1)
        len2 >>= 1
        if not len2:
            break
        odd = _gf2_square(even)
        if len2 & 1:
            crc1 = _gf2_times(odd, crc1)
        len2 >>= 1
        if not len2:
            break
    return crc1 ^ crc2


def format_crc(value: int) -> str:
    return f"0x{value:08x}"


def _hex_bytes():
    return serial.json(encode=lambda b: b.hex(" "), decode=bytes.fromhex)


def _crc_field():
    return serial.json(encode=format_crc, decode=lambda s: int(s, 16))


@dataclass(frozen=True)
class FileCrc(serial.Serial):
    JSON_ORDER = ("path", "size", "crc32", "head", "mid", "mid_offset", "tail", "data_offset", "source_format")

    path: str
    size: int
    crc32: int = field(metadata=_crc_field())
    head: bytes = field(metadata=_hex_bytes())
    mid: bytes = field(metadata=_hex_bytes())
    mid_offset: int
    tail: bytes = field(metadata=_hex_bytes())
    data_offset: int = field(default=0, metadata=serial.json(omit=lambda v: v == 0))
    chunk_crcs: tuple[int, ...] | None = field(default=None, metadata=serial.json(
        omit_none=True, encode=lambda crcs: [format_crc(c) for c in crcs],
        decode=lambda crcs: tuple(int(c, 16) for c in crcs)))
    # a binary or .npy dump is the document's default (a saved .npy reads back as binary)
    source_format: str = field(default="binary", metadata=serial.json(omit=lambda v: v in ("binary", "npy")))


@dataclass(frozen=True)
class CrcReport(serial.Serial):
    JSON_DERIVED = ("match", "first_differing_chunk")
    JSON_DERIVED_OPTIONAL = ("expect_match",)
    JSON_ORDER = ("files", "match", "first_differing_chunk", "chunk_size")

    files: tuple[FileCrc, ...]
    chunk_size: int | None = field(default=None, metadata=serial.json(omit_none=True))
    # a CRC32 the files should have (e.g. one a driver logged)
    expect: int | None = field(default=None, metadata=serial.json(omit_none=True, encode=format_crc,
                                                                   decode=lambda s: int(s, 16)))

    @property
    def expect_match(self) -> bool | None:
        """Every file has the expected CRC32 (None without `expect`)."""
        return None if self.expect is None else all(self.expect_matches)

    @property
    def expect_matches(self) -> tuple[bool, ...] | None:
        if self.expect is None:
            return None
        return tuple(f.crc32 == self.expect for f in self.files)

    @property
    def compared(self) -> bool:
        return len(self.files) >= 2

    @property
    def matches(self) -> tuple[bool, ...]:
        """For each file after the first: equal to the first in size and CRC32."""
        first = self.files[0]
        return tuple(f.size == first.size and f.crc32 == first.crc32 for f in self.files[1:])

    @property
    def file_verdicts(self) -> tuple[Verdict, ...]:
        """For each file after the first: MATCH or DIFFER against the first (the table's `vs first` column)."""
        return tuple(Verdict.of(same) for same in self.matches)

    @property
    def match(self) -> bool | None:
        """Every file equals the first (two or more files) and every file has the expected CRC (expect)."""
        verdicts = []
        if self.compared:
            verdicts.append(all(self.matches))
        if self.expect is not None:
            verdicts.append(all(self.expect_matches))
        return all(verdicts) if verdicts else None

    @property
    def first_differing_chunk(self) -> int | None:
        """With two files and --chunk: the index of the first chunk whose CRC (or presence) differs."""
        if self.chunk_size is None or len(self.files) != 2:
            return None
        a, b = self.files[0].chunk_crcs, self.files[1].chunk_crcs
        for index in range(max(len(a), len(b))):
            if index >= len(a) or index >= len(b) or a[index] != b[index]:
                return index
        return None

    def __bool__(self) -> bool:
        return self.match is not False


def judge_crc(report: CrcReport) -> Judgement:
    """The one judgement of `forensics crc`: OK (one file, nothing to compare), else MATCH when every file equals
    the first and (with `expect`) every file has the expected CRC32, DIFFER otherwise; both clauses in one line."""
    files, parts, reasons = report.files, [], []
    if report.expect is not None:
        wrong = [f for f, ok in zip(files, report.expect_matches) if not ok]
        if wrong:
            parts.append("; ".join(f"{f.path}: CRC32 {format_crc(f.crc32)}, expected {format_crc(report.expect)}"
                                   for f in wrong))
            reasons.append(Reason("expect_differ", parts[-1]))
        else:
            parts.append(f"CRC32 {format_crc(report.expect)} as expected"
                         + (f" ({files[0].path})" if len(files) == 1 else f" in all {len(files)} files"))
    if report.compared:
        n = len(files)
        if all(report.matches):
            parts.append(f"{n} files, {files[0].size:,} bytes each, CRC32 {format_crc(files[0].crc32)}")
        else:
            differing = [f.path for f, same in zip(files[1:], report.matches) if not same]
            parts.append(f"{len(differing)} of {n - 1} files differ from {files[0].path}: " + ", ".join(differing))
            reasons.append(Reason("files_differ", parts[-1]))
    if report.match is None:
        f = files[0]
        return Judgement(Verdict.OK, f"{f.path}: {f.size:,} bytes, CRC32 {format_crc(f.crc32)}")
    return Judgement(Verdict.of(report.match), "; ".join(parts), tuple(reasons))


def crc32_range(dump: Dump, start: int, stop: int, crc: int = 0, *, block: int = BLOCK, cancelled=None) -> int | None:
    """`crc` continued over the dump's data bytes [start, stop), read in windows of `block` bytes; None as soon
    as the event `cancelled` is set (another thread failed)."""
    bounds = [(lo, min(lo + block, stop)) for lo in range(start, stop, block)]
    for _, view, _ in iter_windows(dump, bounds, prefetch=False):
        if cancelled is not None and cancelled.is_set():
            return None
        crc = crc32(view, crc)
    return crc


def _crc_range(dump: Dump, start: int, stop: int, chunk_size: int | None) -> tuple[int, int, list[int]]:
    """(CRC32, length, per-chunk CRCs when chunk_size is set) of data bytes [start, stop) (start chunk-aligned)."""
    crc = 0
    chunks: list[int] = []
    chunk_crc, chunk_fill = 0, 0
    bounds = [(lo, min(lo + BLOCK, stop)) for lo in range(start, stop, BLOCK)]
    for _, block, _ in iter_windows(dump, bounds, prefetch=False):
        got = len(block)
        crc = crc32(block, crc)
        if chunk_size:
            i = 0
            while i < got:
                take = min(chunk_size - chunk_fill, got - i)
                chunk_crc = crc32(block[i:i + take], chunk_crc)
                chunk_fill += take
                i += take
                if chunk_fill == chunk_size:
                    chunks.append(chunk_crc)
                    chunk_crc, chunk_fill = 0, 0
    if chunk_size and chunk_fill:
        chunks.append(chunk_crc)
    return crc, stop - start, chunks


def crc_dump(dump: Dump, chunk_size: int | None = None, *, threads: int = 2) -> FileCrc:
    """Checksum one dump's data bytes (streamed; two threads for large files)."""
    size = dump.size
    if threads > 1 and size >= PARALLEL_MIN and two_cores():
        align = chunk_size or 1
        half = (size // 2) // align * align
        if half % BLOCK and chunk_size is None:
            half -= half % BLOCK
        parts = [(0, half), (half, size)]
    else:
        parts = [(0, size)]
    def work(slot):
        return _crc_range(dump, parts[slot][0], parts[slot][1], chunk_size)

    results = both(lambda: work(0), lambda: work(1), name="forensics-crc") if len(parts) > 1 else [work(0)]
    crc, chunks = 0, []
    for (lo, hi), (part_crc, part_len, part_chunks) in zip(parts, results):
        crc = crc32_combine(crc, part_crc, part_len) if lo else part_crc
        chunks.extend(part_chunks)
    mid_offset = max(0, size // 2 - PEEK // 2)
    return FileCrc(
        path=dump.path,
        size=size,
        crc32=crc,
        head=dump.read(0, PEEK),
        mid=dump.read(mid_offset, PEEK),
        mid_offset=mid_offset,
        tail=dump.read(max(0, size - PEEK), PEEK),
        data_offset=dump.data_offset,
        chunk_crcs=tuple(chunks) if chunk_size else None,
        source_format=dump.source_format,
    )


def crc_files(paths, chunk_size: int | None = None, *, threads: int = 2, expect: int | None = None,
              progress=None, **dump_options) -> CrcReport:
    """CRC32 report for one or more dumps; empty files are allowed here (and only here). `dump_options`
    (offset, length, gap_fill, text_format) go to open_dump for every file."""
    dumps = [open_dump(p, allow_empty=True, use_sidecar=False, **dump_options) for p in paths]
    total, done, files = sum(d.size for d in dumps), 0, []
    for dump in dumps:
        files.append(crc_dump(dump, chunk_size, threads=threads))
        done += dump.size
        if progress is not None:
            progress(done, total)
    return CrcReport(tuple(files), chunk_size, expect)
