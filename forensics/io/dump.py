"""Dumps: a raw `.bin` (any size) or a `.npy` array, opened read-only and streamed in chunks.

A dump is never copied whole into Python bytes: analyses walk it in fixed-size windows through one reader
(DumpReader / iter_windows), each window mapped pre-faulted or read into a reused buffer and let go before
the next, which keeps resident memory flat even for dumps larger than memory (a whole-file mmap's touched
pages would all count as resident; docs/pitfalls.md). Optional metadata comes from a sidecar JSON file
next to the dump (`ours.bin.json`, or `ours.json`).
"""

from __future__ import annotations

import errno
import mmap
import os
import queue
import threading
from dataclasses import dataclass, field, fields as dataclass_fields
from typing import Iterator

from forensics.core import serial
from forensics.core.errors import InputError, reading
from forensics.io.files import (  # noqa: F401  (callers import them from here too)
    ascii_share, check_readable_file, read_head, read_small_file, size_is_trustworthy, unsized_bytes)

DEFAULT_CHUNK = 8 << 20  # 8 MiB: large enough to amortise calls, small enough to stay in cache-friendly RSS

_NPY_MAGIC = b"\x93NUMPY"


def _optional():
    return field(default=None, metadata=serial.json(omit_none=True))


@dataclass(frozen=True)
class DumpMeta(serial.Serial):
    """What a sidecar says about a dump. Every field is optional; flags on the command line win. Its document is
    the sidecar (the keys it gave; the ones this version does not know spread back beside them)."""

    tensor: str | None = _optional()
    shape: tuple[int, ...] | None = _optional()
    dtype: str | None = _optional()
    record_size: int | None = _optional()
    fields: tuple[str, ...] | None = _optional()
    pad_lanes: tuple[int, ...] | None = _optional()
    scale: float | None = _optional()
    zero_point: int | None = _optional()
    source: str | None = _optional()
    extra: dict = field(default_factory=dict, metadata=serial.json(spread=True))
    path: str | None = field(default=None, metadata=serial.json(skip=True))  # the sidecar's own path


def _expect(cond: bool, message: str, path: str) -> None:
    if not cond:
        raise InputError(message, path)


def _is_int(v) -> bool:
    """A JSON integer (not a boolean, which Python counts as one)."""
    return isinstance(v, int) and not isinstance(v, bool)


def parse_sidecar(text: str, path: str) -> DumpMeta:
    """Validate a sidecar's JSON text; every problem is an InputError naming the sidecar."""
    from forensics.io.jsonio import loads

    raw = loads(text, path, "sidecar JSON")
    _expect(isinstance(raw, dict), "sidecar must be a JSON object", path)
    known = {f.name for f in dataclass_fields(DumpMeta)} - {"extra", "path"}
    values: dict = {"extra": {k: v for k, v in raw.items() if k not in known}, "path": path}
    _sidecar_names(raw, path, values)
    _sidecar_record(raw, path, values)
    _sidecar_quantization(raw, path, values)
    return DumpMeta(**values)


def _sidecar_names(raw: dict, path: str, values: dict) -> None:
    """The sidecar's strings (tensor, dtype, source) into `values`; the dtype a numeric one."""
    for key in ("tensor", "dtype", "source"):
        if raw.get(key) is not None:
            _expect(isinstance(raw[key], str), f"sidecar field {key!r} must be a string", path)
            values[key] = raw[key]
    if "dtype" in values:
        _expect(is_numeric_dtype(values["dtype"]),
                f"sidecar field 'dtype' must name a numeric dtype (e.g. uint8, float32), got {values['dtype']!r}", path)


def _sidecar_record(raw: dict, path: str, values: dict) -> None:
    """The sidecar's shape and record layout (record_size, fields, pad_lanes) into `values`, checked."""
    if raw.get("shape") is not None:
        _expect(isinstance(raw["shape"], list) and all(_is_int(d) and d >= 0 for d in raw["shape"]),
                "sidecar field 'shape' must be a list of non-negative integers", path)
        values["shape"] = tuple(raw["shape"])
    if raw.get("record_size") is not None:
        _expect(_is_int(raw["record_size"]) and raw["record_size"] > 0,
                "sidecar field 'record_size' must be a positive integer", path)
        values["record_size"] = raw["record_size"]
    if raw.get("fields") is not None:
        _expect(isinstance(raw["fields"], list) and all(isinstance(f, str) for f in raw["fields"]),
                "sidecar field 'fields' must be a list of strings", path)
        values["fields"] = tuple(raw["fields"])
    if raw.get("pad_lanes") is not None:
        _expect(isinstance(raw["pad_lanes"], list) and all(_is_int(v) and v >= 0 for v in raw["pad_lanes"]),
                "sidecar field 'pad_lanes' must be a list of lane indices", path)
        values["pad_lanes"] = tuple(raw["pad_lanes"])


def _sidecar_quantization(raw: dict, path: str, values: dict) -> None:
    """The sidecar's scale (positive, finite) and zero point (an integer) into `values`."""
    if raw.get("scale") is not None:
        s = raw["scale"]
        _expect(isinstance(s, (int, float)) and not isinstance(s, bool) and s > 0 and s == s and s != float("inf"),
                "sidecar field 'scale' must be a positive finite number", path)
        values["scale"] = float(s)
    if raw.get("zero_point") is not None:
        _expect(_is_int(raw["zero_point"]), "sidecar field 'zero_point' must be an integer", path)
        values["zero_point"] = raw["zero_point"]


# The dtypes a run's manifest may name: numpy's canonical names, nothing else (no "u8", which numpy reads as
# uint64, no "<f4", no C spellings). c/forensics_run.h's FR_DTYPES is the same list (tests/c compares them).
RUN_DTYPES = ("bool", "int8", "uint8", "int16", "uint16", "int32", "uint32", "int64", "uint64",
              "float16", "float32", "float64")


def run_dtype(name: str | None) -> str | None:
    """The RUN_DTYPES name of a numeric dtype a sidecar or .npy spells its own way ("<f4", "u1": float32,
    uint8); None for none, and for big-endian ones, which a run (little-endian by definition) cannot name."""
    if name is None or not is_numeric_dtype(name):
        return None
    import numpy as np

    dtype = np.dtype(name)
    return dtype.name if dtype.byteorder != ">" and dtype.name in RUN_DTYPES else None


def is_numeric_dtype(name: str) -> bool:
    """Whether `name` is a dtype a dump can hold (integers, floats, bool; no structured or object types)."""
    import numpy as np

    try:
        dtype = np.dtype(name)
    except (TypeError, ValueError, SyntaxError):
        return False
    return dtype.kind in "biuf" and dtype.subdtype is None and dtype.names is None


def sidecar_path(path: str) -> str | None:
    """The sidecar of `x.bin` is `x.bin.json`, else `x.json`; None when neither exists."""
    candidates = [path + ".json"]
    stem, ext = os.path.splitext(path)
    if ext and ext.lower() != ".json":
        candidates.append(stem + ".json")
    for candidate in candidates:
        if os.path.isfile(candidate):
            return candidate
    return None


def load_sidecar(path: str) -> DumpMeta | None:
    found = sidecar_path(path)
    if found is None:
        return None
    try:
        with open(found, "rb") as fh:
            text = fh.read(1 << 20)  # a sidecar is small; refuse to slurp a huge file by mistake
    except OSError as exc:
        raise InputError(f"cannot read sidecar: {exc.strerror or exc}", found) from None
    try:
        return parse_sidecar(text.decode("utf-8"), found)
    except UnicodeDecodeError:
        raise InputError("sidecar is not UTF-8 text", found) from None


def _npy_header(path: str, file_size: int, fh=None) -> tuple[int, str, tuple[int, ...]]:
    """Parse a .npy header (format versions 1-3): data offset, dtype string, shape. `fh`: read it from this
    file object (an .npz member) instead of opening `path`."""
    start, header_len, header = _npy_header_text(path, file_size, fh)
    descr, shape = _npy_descr_shape(header, path)
    dtype = _npy_dtype(descr, path)
    count = 1
    for dim in shape:
        count *= dim
    data_offset = start + header_len
    if data_offset + count * dtype.itemsize > file_size:
        raise InputError(
            f"truncated .npy data: header says {count * dtype.itemsize} bytes, file has {file_size - data_offset}",
            path)
    return data_offset, dtype.str, shape


def _npy_header_text(path: str, file_size: int, fh=None) -> tuple[int, int, str]:
    """Where the header's dictionary starts, its length as the file says it and its text (latin-1, as the format says), after the magic and
    the version's header length (2 bytes in version 1, 4 in versions 2 and 3), bounded by the file and 1 MiB."""
    with (open(path, "rb") if fh is None else fh) as fh:
        head = fh.read(12)
        if not head.startswith(_NPY_MAGIC) or len(head) < 10:
            raise InputError("not a .npy file (missing \\x93NUMPY magic)", path)
        major = head[6]
        if major == 1:
            header_len = int.from_bytes(head[8:10], "little")
            start = 10
        elif major in (2, 3):
            if len(head) < 12:
                raise InputError("truncated .npy header", path)
            header_len = int.from_bytes(head[8:12], "little")
            start = 12
        else:
            raise InputError(f"unsupported .npy format version {major}", path)
        if start + header_len > file_size or header_len > 1 << 20:
            raise InputError("truncated .npy header", path)
        fh.seek(start)
        header = fh.read(header_len).decode("latin1")
    return start, header_len, header


def _npy_descr_shape(header: str, path: str) -> tuple:
    """The header dictionary's dtype descr and shape: a literal (never evaluated code), a shape of
    non-negative integers, no structured descr, no Fortran order for more than one dimension."""
    import ast  # only .npy dumps need it

    try:
        info = ast.literal_eval(header)
        descr, fortran, shape = info["descr"], info["fortran_order"], tuple(info["shape"])
    except Exception:
        raise InputError("malformed .npy header", path) from None
    if not all(isinstance(d, int) and not isinstance(d, bool) for d in shape):
        raise InputError(f"malformed .npy header: shape {shape!r} is not a tuple of integers", path)
    if any(d < 0 for d in shape):
        raise InputError(f"malformed .npy header: shape {shape!r} has a negative dimension", path)
    if not isinstance(descr, str):
        raise InputError("structured .npy arrays are not supported", path)
    if fortran and len(shape) > 1:
        raise InputError("Fortran-ordered .npy arrays are not supported; save with np.ascontiguousarray", path)
    return descr, shape


def _npy_dtype(descr: str, path: str):
    """The numpy dtype a descr names: plain elements only (no subarray, structured or object dtype)."""
    import numpy as np

    try:
        dtype = np.dtype(descr)
    except (TypeError, ValueError, SyntaxError, OverflowError):
        raise InputError(f"unknown .npy dtype {descr!r}", path) from None
    if dtype.subdtype is not None or dtype.names is not None:
        raise InputError(f"subarray or structured .npy dtype {descr!r} is not supported", path)
    if dtype.hasobject:
        raise InputError(".npy arrays of Python objects are not supported", path)
    return dtype


class _NpzMember:
    """One array of an .npz archive (a zip of .npy files, stored or deflated) as a file a DumpReader reads with
    seek + readinto; a corrupt member is an OSError, which the reader reports in one line."""

    def __init__(self, path: str, name: str):
        import zipfile

        def open_member():
            with zipfile.ZipFile(path) as archive:  # the member keeps the file open after the archive closes
                info = archive.getinfo(name)
                if info.compress_type == zipfile.ZIP_DEFLATED and not info.flag_bits & 1:
                    inflated = _InflatedMember.open(path, info)
                    if inflated is not None:
                        return inflated
                return archive.open(name)

        self._fh = self._guard(open_member)

    @staticmethod
    def _guard(call, *args):
        import zipfile
        import zlib

        try:
            return call(*args)
        except (zipfile.BadZipFile, zlib.error, EOFError) as exc:
            raise OSError(f"corrupt .npz member ({exc})") from None
        except (RuntimeError, NotImplementedError) as exc:  # encrypted, or a compression zipfile cannot undo
            raise OSError(f"unreadable .npz member ({exc})") from None

    def read(self, n: int = -1) -> bytes:
        return self._guard(self._fh.read, n)

    def seek(self, offset: int) -> int:
        return self._guard(self._fh.seek, offset)

    def readinto(self, view) -> int:
        return self._guard(self._fh.readinto, view)

    def close(self) -> None:
        self._fh.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _InflatedMember:
    """A deflated zip member, decompressed front to back by ISA-L's inflate (about 2.6x zlib's speed: most of
    what `ingest --from npz` of a large array costs), its CRC-32 checked at the end as zipfile checks it. The
    member's place and sizes come from the central directory (APPNOTE 4.3.7: the local header's name and extra
    lengths say where its data starts). None from open() where ISA-L is not installed: zipfile reads it then."""

    _IN = 1 << 20

    @classmethod
    def open(cls, path: str, info):
        try:
            from isal import isal_zlib
        except ImportError:
            return None
        return cls(path, info, isal_zlib)

    def __init__(self, path: str, info, isal_zlib):
        import struct
        import zipfile

        self._fh = open(path, "rb")
        try:
            self._fh.seek(info.header_offset)
            head = self._fh.read(30)
            if len(head) < 30 or head[:4] != b"PK\x03\x04":
                raise zipfile.BadZipFile(f"bad local file header for {info.filename!r}")
            name_len, extra_len = struct.unpack("<HH", head[26:30])
            self._fh.seek(info.header_offset + 30 + name_len + extra_len)
        except BaseException:
            self._fh.close()
            raise
        from forensics.core.checksum import crc32

        self._crc32, self._corrupt = crc32, isal_zlib.error
        self._inflate = isal_zlib.decompressobj(-15)  # raw deflate: a zip member has no zlib header
        self._left, self._size, self._expected = info.compress_size, info.file_size, info.CRC
        self._crc, self._out, self._eof = 0, 0, False

    def read(self, n: int = -1) -> bytes:
        import zlib

        want = self._size - self._out if n is None or n < 0 else n
        parts, got = [], 0
        while got < want and not self._eof:
            data = self._inflate.unconsumed_tail
            if not data and self._left:
                data = self._fh.read(min(self._IN, self._left))
                if not data:
                    raise EOFError("the archive ends inside the member's compressed data")
                self._left -= len(data)
            # With no input left this drains what the inflater holds (ISA-L keeps output back where zlib keeps
            # input back in unconsumed_tail).
            try:
                out = self._inflate.decompress(data, want - got)
            except self._corrupt as exc:  # ISA-L's own error type: the reader knows zlib's
                raise zlib.error(str(exc)) from None
            if out:
                parts.append(out)
                got += len(out)
                self._crc = self._crc32(out, self._crc)
            elif not data or self._inflate.eof:  # nothing more in, nothing more out: the stream must be whole
                self._eof = True
        self._out += got
        if self._out > self._size:
            raise zlib.error("the member inflates past its recorded size")
        if self._eof and (self._out != self._size or self._crc != self._expected or not self._inflate.eof):
            raise zlib.error("Bad CRC-32 for the member" if self._out == self._size else
                             f"the member inflates to {self._out} bytes, its header says {self._size}")
        return b"".join(parts)

    def readinto(self, view) -> int:
        data = self.read(len(view))
        view[:len(data)] = data
        return len(data)

    def seek(self, offset: int) -> int:  # _NpzSource reads members front to back and restarts instead
        raise OSError("a deflated member is read front to back")

    def close(self) -> None:
        self._fh.close()


class _NpzSource:
    """The opener of one .npz member, shared by its readers. The member is decompressed front to back once:
    readers that go forward take the bytes as they come (ingest copies a 1 GiB member in one pass); the first
    read behind what was decompressed starts over once, now keeping every byte in an anonymous temporary file
    that later reads in any order use (crc's two halves, HEAD / MID / TAIL, a fingerprint's pages). Seeking
    inside a deflate stream restarts it from the start: reading a 64 MiB member that way never ended."""

    _STEP = 8 << 20

    def __init__(self, path: str, filename: str):
        self.path, self.filename = path, filename
        self._lock = threading.Lock()
        self._src = self._spill = None
        self._done, self._eof, self._handles = 0, False, 0

    def __call__(self) -> "_NpzHandle":
        with self._lock:
            self._handles += 1
        return _NpzHandle(self)

    def _restart(self) -> None:
        if self._src is not None:
            self._src.close()
        self._src = _NpzMember(self.path, self.filename)
        self._done, self._eof = 0, False

    def _pull(self, n: int) -> int:
        data = self._src.read(n)
        if not data:
            self._eof = True
        elif self._spill is not None:
            self._spill.seek(self._done)
            self._spill.write(data)
        self._done += len(data)
        return len(data)

    def read_at(self, pos: int, view: memoryview) -> int:
        with self._lock:
            if self._src is None:
                self._restart()
            if self._spill is None and pos < self._done:  # behind the stream: once more from the start, kept
                import tempfile

                self._spill = tempfile.TemporaryFile()
                self._restart()
            while self._done < pos and not self._eof:  # ahead: decompress up to it (kept only when spilling)
                self._pull(min(pos - self._done, self._STEP))
            if self._spill is None:
                n = self._src.readinto(view) if self._done == pos else 0
                self._done += n
                return n
            want = pos + len(view)
            while self._done < want and not self._eof:
                self._pull(min(max(want - self._done, 1 << 20), self._STEP))
            n = max(0, min(len(view), self._done - pos))
            if n:
                self._spill.seek(pos)
                n = self._spill.readinto(view[:n])
            return n

    def release(self) -> None:
        """A handle closed: with none left, a stream that keeps nothing lets its archive go."""
        with self._lock:
            self._handles -= 1
            if self._handles <= 0 and self._spill is None and self._src is not None:
                self._src.close()
                self._src, self._done, self._eof = None, 0, False


class _NpzHandle:
    """One reader's position in an .npz member (seek / readinto / read, as a DumpReader and _npy_header use)."""

    def __init__(self, source: _NpzSource):
        self._source, self._pos, self._closed = source, 0, False

    def seek(self, offset: int) -> int:
        self._pos = offset
        return offset

    def readinto(self, view) -> int:
        n = self._source.read_at(self._pos, memoryview(view).cast("B"))
        self._pos += n
        return n

    def read(self, n: int) -> bytes:
        buf = bytearray(n)
        got = self.readinto(buf)
        return bytes(buf[:got])

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            self._source.release()

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def npz_path(path: str) -> tuple[str, str | None]:
    """(archive, array name) of `ARCHIVE.npz:NAME`, else (path, None). The name may hold colons itself
    (`forensics export` names arrays `raw:convert_scores`); a Windows drive colon is no name."""
    if os.path.exists(path):
        return path, None
    at = path.lower().find(".npz:")
    while at >= 0:
        base, name = path[:at + 4], path[at + 5:]
        if name and os.path.isfile(base):
            return base, name
        at = path.lower().find(".npz:", at + 1)
    return path, None


MAX_NPZ_MEMBERS = 10_000  # arrays an .npz archive may hold (a run has a few hundred buffers at most)


def _npz_members(path: str) -> dict:
    """{array name: ZipInfo} of an .npz archive's .npy members, at most MAX_NPZ_MEMBERS of them."""
    import zipfile

    try:
        with zipfile.ZipFile(path) as archive:
            infos = archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError) as exc:
        raise InputError(f"not a readable .npz archive ({exc})", path) from None
    if len(infos) > MAX_NPZ_MEMBERS:
        raise InputError(f"the .npz archive holds {len(infos):,} members, more than the {MAX_NPZ_MEMBERS:,} read "
                         f"from one archive (MAX_NPZ_MEMBERS)", path)
    members = {info.filename[:-4]: info for info in infos if info.filename.endswith(".npy")}
    if not members:
        raise InputError("the .npz archive holds no arrays", path)
    return members


def _npz_member(path: str, name: str, info):
    """(opener, .npy header) of one member: the header checked against the member's real size (a header
    claiming 2^40 bytes in a 200-byte member is refused here, before anything is allocated)."""
    opener = _NpzSource(path, info.filename)
    with reading(path, "an .npz archive", "dump file"):
        header = _npy_header(f"{path}:{name}", info.file_size, opener())
    return opener, header


def _npz_array(path: str, name: str | None):
    """(opener, member name, .npy header of that member) of the array `name` of an .npz archive (its only array
    when `name` is None)."""
    members = _npz_members(path)
    listed = ", ".join(sorted(members)[:8]) + (", ..." if len(members) > 8 else "")
    if name is None:
        if len(members) > 1:
            raise InputError(f"the .npz archive holds {len(members)} arrays ({listed}): name one as "
                             f"{os.path.basename(path)}:NAME", path)
        name = next(iter(members))
    elif name not in members:
        raise InputError(f"the .npz archive has no array {name!r} (it holds {listed})", path)
    opener, header = _npz_member(path, name, members[name])
    return opener, name, header


def npz_arrays(path) -> dict:
    """{name: Dump} of every array of an .npz archive, each header checked (numeric dtype, a size the member
    holds) before any data is read; the data is streamed from the archive when a Dump is read (`ingest --from
    npz` copies 2 x 1 GiB deflated arrays in windows, not as arrays in memory)."""
    import numpy as np

    path = os.fspath(path)
    check_readable_file(path)
    out = {}
    for name, info in _npz_members(path).items():
        opener, (data_offset, dtype, shape) = _npz_member(path, name, info)
        if not is_numeric_dtype(dtype):
            raise InputError(f"array {name!r} is not a numeric array (dtype {dtype})", path)
        size = int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize
        out[name] = Dump(path=f"{path}:{name}", size=size, data_offset=data_offset, npy_dtype=dtype,
                         npy_shape=shape, source_format=f"npz ({name})", opener=opener)
    return out


@dataclass(frozen=True)
class Dump:
    """A read-only view of a dump's data bytes: `[data_offset, data_offset + size)` of the file."""

    path: str
    size: int
    data_offset: int = 0
    npy_dtype: str | None = None
    npy_shape: tuple[int, ...] | None = None
    meta: DumpMeta | None = None
    source_format: str = "binary"  # "binary", "npy", or "text (...)" for a text dump ("text (WinDbg db)")
    text: object | None = field(default=None, repr=False, compare=False)  # the TextDump a text file decoded to
    slice_offset: int = 0          # the slice of the file's data this dump is (offset= / length=)
    slice_length: int | None = None
    # A dump that is no local file (a run's buffer on an fsspec filesystem, forensics.runs.remote): a callable
    # giving each reader its own object with seek / readinto / close, read in windows like any other dump.
    opener: object | None = field(default=None, repr=False, compare=False)
    # The bytes of a file whose size the file system does not tell (procfs, sysfs: st_size 0 or one page),
    # read to its end when it was opened (unsized_bytes).
    data: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def slice(self) -> dict | None:
        """{"offset", "length"} when the dump is a slice of its file's data (e.g. a DMA allocation's tensor)."""
        if self.slice_offset == 0 and self.slice_length is None:
            return None
        return {"offset": self.slice_offset, "length": self.size}

    def source(self) -> dict:
        """Where the bytes come from, for JSON: the format and any slice."""
        out: dict = {"path": self.path, "source_format": self.source_format}
        if self.text is not None:
            out["text"] = self.text.to_dict()
        if self.slice is not None:
            out["slice"] = self.slice
        return out

    def read(self, offset: int, length: int) -> bytes:
        """Up to `length` data bytes starting at data offset `offset` (short at the end)."""
        if offset >= self.size or length <= 0:
            return b""
        length = min(length, self.size - offset)
        buf = bytearray(length)
        with DumpReader(self) as reader:
            reader.read_exact(offset, memoryview(buf))
        return bytes(buf)

    def read_array(self, offset: int = 0, length: int | None = None):
        """A region as a uint8 numpy array (for regions that fit in memory, e.g. one tensor)."""
        import numpy as np

        length = self.size - offset if length is None else length
        return np.frombuffer(self.read(offset, length), dtype=np.uint8)

    def iter_chunks(self, start: int = 0, stop: int | None = None,
                    chunk_size: int = DEFAULT_CHUNK, *, prefetch: bool = True) -> Iterator[tuple[int, memoryview]]:
        """Yield `(data_offset, view)` over `[start, stop)`; the view is valid until the next step.

        With `prefetch` the next chunk is fetched by a second thread while the caller works on this one."""
        stop = self.size if stop is None else min(stop, self.size)
        bounds = [(pos, min(pos + chunk_size, stop)) for pos in range(start, stop, chunk_size)]
        for lo, view, _ in iter_windows(self, bounds, prefetch=prefetch):
            yield lo, view


# --- the one reader of dump data -----------------------------------------------------------------------------

# Windows are mapped pre-faulted where the platform can (Linux MAP_POPULATE): the kernel fills the page tables in
# one call and nothing is copied; a window's pages leave resident memory when it is released. Elsewhere (or when
# a file cannot be mapped) windows are read with pread into reused buffers.
_MAP_FLAGS = getattr(mmap, "MAP_SHARED", 0) | getattr(mmap, "MAP_POPULATE", 0)
CAN_MAP = hasattr(mmap, "MAP_POPULATE")
_GRANULE = mmap.ALLOCATIONGRANULARITY
_CAN_SEEK_HOLES = hasattr(os, "SEEK_DATA") and hasattr(os, "SEEK_HOLE")
_MAX_EXTENTS = 64  # data extents of one window read around its holes; more, and the window is read whole


class Window:
    """Data bytes `[lo, hi)` of a dump as a read-only memoryview, until `release()`."""

    __slots__ = ("lo", "view", "_map", "_buf", "_pool")

    def __init__(self, lo: int, view: memoryview, mapping=None, buf=None, pool=None):
        self.lo, self.view, self._map, self._buf, self._pool = lo, view, mapping, buf, pool

    def release(self) -> None:
        view, self.view = self.view, None
        if view is not None:
            try:
                view.release()
            except BufferError:  # the caller still holds an array over it: it stays valid until that goes
                return
        if self._map is not None:
            try:
                self._map.close()
            except BufferError:
                pass
            self._map = None
        elif self._pool is not None and self._buf is not None:
            self._pool.append(self._buf)
            self._buf = None


class DumpReader:
    """One dump opened read-only: reads and windows of its data bytes, from any thread.

    This is the one place where the operating system's errors on a dump's bytes become an InputError naming the
    file; every streaming pass (crc, diff, diagnose, anchors, coverage) reads through it.
    """

    def __init__(self, dump: "Dump", *, use_map: bool = True):
        self.dump = dump
        self._pool: list[bytearray] = []
        self._zeros = b""
        self._memory = None
        self._fd = None
        if dump.text is not None or dump.data is not None:  # decoded or read in memory: windows are views
            self._memory = memoryview(dump.data if dump.text is None else dump.text.data)
            self._fh, self._use_map, self._lock = None, False, None
            return
        if dump.opener is not None:  # another filesystem's file: seek + readinto, never mapped
            with reading(dump.path, "a dump file", "dump file"):
                self._fh = dump.opener()
            self._fd, self._use_map, self._lock = None, False, threading.Lock()
            return
        with reading(dump.path, "a dump file", "dump file"):
            self._fh = open(dump.path, "rb", buffering=0)
        self._fd = self._fh.fileno()
        self._use_map = use_map and CAN_MAP
        self._lock = None if hasattr(os, "preadv") else threading.Lock()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()

    def __enter__(self) -> "DumpReader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def read_into(self, offset: int, view: memoryview) -> int:
        """Fill `view` from data offset `offset`; fewer bytes only where the file ends."""
        total, want, start = 0, len(view), self.dump.data_offset + offset
        if self._memory is not None:
            got = max(0, min(want, len(self._memory) - start))
            view[:got] = self._memory[start:start + got]
            return got
        with reading(self.dump.path, "a dump file", "dump file"):
            while total < want:
                if self._lock is None:
                    n = os.preadv(self._fd, [view[total:]], start + total)
                else:  # no preadv (Windows) or no descriptor: seek + read under a lock, so threads can share it
                    with self._lock:
                        self._fh.seek(start + total)
                        n = self._fh.readinto(view[total:])
                if not n:
                    break
                total += n
        return total

    def read_exact(self, offset: int, view: memoryview) -> memoryview:
        got = self.read_into(offset, view)
        if got != len(view):
            raise InputError(f"file shrank while reading (expected {offset + len(view)} data bytes, "
                             f"ended at {offset + got})", self.dump.path)
        return view

    def _extents(self, start: int, end: int) -> list[tuple[int, int]] | None:
        """The data extents of file bytes [start, end) (SEEK_DATA / SEEK_HOLE), or None when it is all data
        (or the file system cannot tell). Holes read as zeros (POSIX), so they need not be read at all."""
        extents, pos = [], start
        try:
            while pos < end:
                try:
                    data = os.lseek(self._fd, pos, os.SEEK_DATA)
                except OSError as exc:
                    if exc.errno == errno.ENXIO:  # no data after pos: the rest is a hole
                        break
                    raise
                if data >= end:
                    break
                hole = min(os.lseek(self._fd, data, os.SEEK_HOLE), end)
                if data == start and hole >= end:
                    return None  # all data: the ordinary path
                extents.append((data, hole))
                if len(extents) > _MAX_EXTENTS:  # finely fragmented: one mapping beats many small reads
                    return None
                pos = hole
        except OSError:  # e.g. EINVAL where the file system has no idea of holes
            return None
        return extents

    def _hole_window(self, lo: int, hi: int) -> Window | None:
        """A window over a sparse file's holes without touching them: a shared zero page run when the window
        is all hole, a buffer filled only where there is data when it is part hole; None when it is all data."""
        start, n = self.dump.data_offset + lo, hi - lo
        if os.fstat(self._fd).st_size < start + n:  # past the end is no hole: the file shrank, said below
            return None
        extents = self._extents(start, start + n)
        if extents is None:
            return None
        if not extents:
            if len(self._zeros) < n:
                self._zeros = bytes(n)  # calloc'd: its pages are the kernel's one zero page until written
            return Window(lo, memoryview(self._zeros)[:n])
        buf = self._pool.pop() if self._pool else bytearray(n)
        if len(buf) < n:
            buf = bytearray(n)
        view = memoryview(buf)[:n]
        view[:] = bytes(n) if len(self._zeros) < n else memoryview(self._zeros)[:n]
        for a, b in extents:
            self.read_exact(a - self.dump.data_offset, view[a - start:b - start])
        return Window(lo, view, buf=buf, pool=self._pool)

    def window(self, lo: int, hi: int, *, populate: bool = True) -> Window:
        """Data bytes [lo, hi) (within the dump's size) as a Window; release it when done. Without `populate`
        a mapped window's pages are brought in only where they are touched (for sparse reads)."""
        n = hi - lo
        if self._memory is not None:
            start = self.dump.data_offset + lo
            if start + n > len(self._memory):
                raise InputError(f"has only {len(self._memory) - self.dump.data_offset} data bytes, "
                                 f"expected {hi}", self.dump.path)
            return Window(lo, self._memory[start:start + n])
        if n > 0 and self._fd is not None and _CAN_SEEK_HOLES:
            holes = self._hole_window(lo, hi)
            if holes is not None:
                return holes
        if self._use_map and n > 0:
            start = self.dump.data_offset + lo
            base = start - start % _GRANULE
            with reading(self.dump.path, "a dump file", "dump file"):
                end = os.fstat(self._fd).st_size
            if end < start + n:  # checked before mapping: touching a page past the end would kill the process
                raise InputError(f"file shrank while reading (expected {hi} data bytes, "
                                 f"has {max(0, end - self.dump.data_offset)})", self.dump.path)
            try:
                flags = _MAP_FLAGS if populate else _MAP_FLAGS & ~getattr(mmap, "MAP_POPULATE", 0)
                mapping = mmap.mmap(self._fd, start + n - base, flags=flags, prot=mmap.PROT_READ, offset=base)
            except (OSError, ValueError):
                self._use_map = False  # e.g. a file system that cannot map: read instead, from now on
            else:
                return Window(lo, memoryview(mapping)[start - base:start - base + n], mapping=mapping)
        buf = self._pool.pop() if self._pool else bytearray(n)
        if len(buf) < n:
            buf = bytearray(n)
        return Window(lo, self.read_exact(lo, memoryview(buf)[:n]), buf=buf, pool=self._pool)


_DONE = object()


def iter_windows(dump: "Dump", bounds, *, work=None, prefetch: bool = True, depth: int = 1):
    """Yield `(lo, view, work(view))` for each `(lo, hi)` of `bounds`, in order; each view is valid until the
    next step. With `prefetch` a second thread fetches the windows (and runs `work`, e.g. a CRC that releases
    the GIL) up to `depth` ahead of the caller: at most depth + 2 windows are held at once."""
    bounds = list(bounds)
    if not bounds:
        return
    reader = DumpReader(dump)
    try:
        if not prefetch or len(bounds) == 1:
            for lo, hi in bounds:
                window = reader.window(lo, hi)
                try:
                    yield lo, window.view, work(window.view) if work else None
                finally:
                    window.release()
            return
        ready: queue.Queue = queue.Queue(maxsize=depth)
        stop = threading.Event()

        def produce():
            try:
                for lo, hi in bounds:
                    if stop.is_set():
                        return
                    window = reader.window(lo, hi)
                    ready.put((window, work(window.view) if work else None))
                ready.put(_DONE)
            except BaseException as exc:  # handed to the caller's thread, which raises it
                ready.put(exc)

        producer = threading.Thread(target=produce, daemon=True)
        producer.start()
        try:
            while True:
                item = ready.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                window, result = item
                try:
                    yield window.lo, window.view, result
                finally:
                    window.release()
        finally:
            stop.set()
            while producer.is_alive():  # unblock a producer waiting on a full queue, then let it finish
                try:
                    item = ready.get(timeout=0.05)
                except queue.Empty:
                    continue
                if isinstance(item, tuple):
                    item[0].release()
            producer.join()
            while not ready.empty():
                item = ready.get_nowait()
                if isinstance(item, tuple):
                    item[0].release()
    finally:
        reader.close()


def with_sources(doc: dict, *dumps) -> dict:
    """Add `sources` (format and slice of each dump) to a JSON document when a dump is a text dump or a
    slice; plain binary dumps leave the document as it was."""
    if any(d is not None and (d.text is not None or d.slice is not None) for d in dumps):
        doc["sources"] = [d.source() for d in dumps if d is not None]
    return doc


class DumpNotice(UserWarning):
    """Something a user should know about how a dump was read (a text dump decoded, a text file read as
    binary). The library raises it with `warnings.warn`; the CLI prints it as one line on stderr."""


class DumpWarning(UserWarning):
    """A dump was read in a way that may not be what the user meant."""


def open_dump(path, *, allow_empty: bool = False, use_sidecar: bool = True, offset: int = 0,
              length: int | None = None, text_format: str = "auto", gap_fill: int | None = None) -> Dump:
    """Check and describe a dump without reading its data. Empty dumps are input errors unless allowed.

    A text hex dump (WinDbg, xxd, hexdump, od, Format-Hex, certutil, plain hex...; see forensics.io.textdump) is decoded
    in memory and the Dump reads those bytes; `text_format` forces a format ("binary" reads the file as is),
    `gap_fill` fills holes between its addresses. `offset` / `length` cut a slice of the data (e.g. the
    tensor inside a page-rounded DMA allocation); a slice past the end is an InputError naming the file."""
    path, member = npz_path(os.fspath(path))
    file_size = check_readable_file(path)
    src = _source(path, member, file_size, text_format, gap_fill)
    data_offset, size, npy_dtype, npy_shape = src.data_offset, src.size, src.npy_dtype, src.npy_shape
    if offset or length is not None:
        size = _sliced_size(path, size, offset, length)
        data_offset += offset
        npy_dtype, npy_shape = None, None  # a slice of a .npy is bytes, not the array its header describes
    if size == 0 and not allow_empty:
        raise InputError("empty dump (0 data bytes)", path)
    meta = load_sidecar(path) if use_sidecar else None
    return Dump(path=path if src.member is None else f"{path}:{src.member}", size=size, data_offset=data_offset,
                npy_dtype=npy_dtype, npy_shape=npy_shape, meta=meta, source_format=src.source_format,
                text=src.text, slice_offset=offset, slice_length=length, opener=src.opener, data=src.data)


@dataclass
class _Source:
    """Where a dump's data bytes are, before a slice: how many, what they were read from, and the .npy / .npz
    array, decoded text dump or in-memory bytes that hold them."""

    size: int
    source_format: str = "binary"
    data_offset: int = 0
    npy_dtype: str | None = None
    npy_shape: tuple | None = None
    text: object = None  # forensics.io.textdump.TextDump
    opener: object = None
    data: bytes | None = None
    member: str | None = None


def _source(path: str, member: str | None, file_size: int, text_format: str, gap_fill: int | None) -> _Source:
    """The data of the file at `path`: read whole when its size cannot be trusted, a .npz member's or a .npy's
    array, a text hex dump decoded, else the file's bytes."""
    if member is None and not size_is_trustworthy(path, file_size):
        data = unsized_bytes(path)
        return _Source(len(data), "binary (read to its end: the file system reports no size)", data=data)
    if path.lower().endswith(".npz") or member is not None:
        opener, member, (data_offset, npy_dtype, npy_shape) = _npz_array(path, member)
        import numpy as np

        size = int(np.prod(npy_shape, dtype=np.int64)) * np.dtype(npy_dtype).itemsize
        return _Source(size, f"npz ({member})", data_offset, npy_dtype, npy_shape, opener=opener, member=member)
    if path.lower().endswith(".npy"):
        if file_size == 0:
            raise InputError("empty file (no .npy header)", path)
        data_offset, npy_dtype, npy_shape = _npy_header(path, file_size)
        import numpy as np

        count = 1
        for dim in npy_shape:
            count *= dim
        return _Source(count * np.dtype(npy_dtype).itemsize, "npy", data_offset, npy_dtype, npy_shape)
    if text_format != "binary":
        return _text_source(path, file_size, text_format, gap_fill)
    return _Source(file_size)


def _certainly_binary(path: str, file_size: int) -> bool:
    """Whether textdump.sniff_file would call this file binary and open_dump warn of nothing, decided without
    importing textdump (every binary dump a command opens is sniffed; its regular expressions cost ~8 ms of a
    command's start): a NUL byte in the head (textdump.looks_binary), no UTF-16 byte-order mark, neither byte
    parity of the first 4 KiB at least 3/4 NUL (textdump's UTF-16 without a BOM), and not the short near-text
    file open_dump warns about. Anything else takes textdump's own sniff."""
    if file_size == 0:
        return False
    head = read_head(path)
    if b"\0" not in head or head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return False
    sample = head[:4096]
    sample = sample[: len(sample) // 2 * 2]
    for zeros in (sample[0::2], sample[1::2]):
        if zeros.count(0) * 4 >= len(zeros) * 3:
            return False
    return not (ascii_share(head) >= 0.95 and 256 <= file_size < 4096)


def _text_source(path: str, file_size: int, text_format: str, gap_fill: int | None) -> _Source:
    """A text hex dump decoded (said in a DumpNotice), or the file's bytes (a DumpWarning when it looks like
    text nonetheless). The warnings name open_dump's caller (stacklevel 4)."""
    if text_format == "auto" and _certainly_binary(path, file_size):
        return _Source(file_size)
    import warnings

    from forensics.io import textdump

    sniffed = textdump.sniff_file(path, file_size) if text_format == "auto" else ("text-dump", 0.0)
    if sniffed is not None and sniffed[0] == "text-dump":
        text = textdump.read_text_dump(path, fmt=text_format, gap_fill=gap_fill)
        size = len(text.data)
        start = "" if text.start_address is None else f" from address 0x{text.start_address:x}"
        warnings.warn(DumpNotice(f"{path}: a text hex dump ({text.description}): {text.lines:,} lines "
                                 f"decoded to {size:,} bytes{start}"), stacklevel=4)
        return _Source(size, f"text ({text.description})", text=text)
    # a short printable file without line breaks is likely text too; a long one is a buffer whose bytes happen
    # to be printable
    if sniffed is not None and (sniffed[0] == "text" or sniffed[1] >= 0.95 and 256 <= file_size < 4096):
        warnings.warn(DumpWarning(
            f"{path}: looks like text ({sniffed[1]:.0%} printable ASCII) but is no hex dump format "
            f"forensics knows ({textdump.KNOWN_TEXT}); "
            f"reading its bytes as binary"), stacklevel=4)
    return _Source(file_size)


def _sliced_size(path: str, size: int, offset: int, length: int | None) -> int:
    """The size of the slice `offset` / `length` of `size` data bytes; an InputError when it is not inside."""
    if offset < 0 or (length is not None and length <= 0):
        raise InputError(f"bad slice offset={offset} length={length}", path)
    if offset > size or (length is not None and offset + length > size):
        end = "the end" if length is None else f"0x{offset + length:x}"
        raise InputError(f"slice from 0x{offset:x} to {end} is past the end of the data "
                         f"({size:,} bytes)", path)
    return size - offset if length is None else length
