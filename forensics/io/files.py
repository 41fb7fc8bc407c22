"""Files read safely: a regular, readable file's size (one InputError saying what is wrong), small files read
whole with a limit, and files whose size cannot be trusted (procfs, sysfs) read to their end. The layer under
dumps and text dumps, which both read through it."""

from __future__ import annotations

import functools
import os
import stat

from forensics.core.errors import InputError, reading


def check_readable_file(path: str) -> int:
    """Return the size of a regular, readable file, or raise one InputError that says what is wrong."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise InputError("no such file", path) from None
    except OSError as exc:
        raise InputError(f"cannot access: {exc.strerror or exc}", path) from None
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a directory, expected a file", path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError("is not a regular file", path)
    if not os.access(path, os.R_OK):
        raise InputError("cannot read: permission denied", path)
    return st.st_size


MAX_UNSIZED = 64 << 20  # bytes read from a file that reports no size (procfs, sysfs): they are held in memory


@functools.lru_cache(maxsize=1)
def _pseudo_devices() -> frozenset:
    """st_dev of /proc and /sys, whose files report a size of 0 or one page whatever they hold."""
    devices = set()
    for root in ("/proc", "/sys"):
        try:
            devices.add(os.stat(root).st_dev)
        except OSError:
            pass
    return frozenset(devices)


def size_is_trustworthy(path: str, size: int) -> bool:
    """Whether a regular file's st_size is how many bytes it holds. Not on procfs / sysfs (cpuinfo says 0,
    sysfs attributes 4096), nor for any file that says 0 bytes yet reads some (another pseudo file system)."""
    try:
        if os.stat(path).st_dev in _pseudo_devices():
            return False
        if size == 0:
            with open(path, "rb") as fh:
                return fh.read(1) == b""
    except OSError:
        return True  # the ordinary reading reports it
    return True


def unsized_bytes(path: str, limit: int | None = None) -> bytes:
    """All the bytes of a file whose size cannot be trusted, read until EOF, at most `limit` (MAX_UNSIZED)."""
    limit = MAX_UNSIZED if limit is None else limit
    with reading(path, "a dump file", "dump file"), open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"reports no size (a procfs / sysfs file) and holds more than the {limit >> 20} MiB "
                         f"read from such a file (MAX_UNSIZED); copy it to a regular file", path)
    return data


def read_small_file(path, limit: int, what: str = "file") -> bytes:
    """The whole of a small regular file (a JSON description, a label list), refusing FIFOs, devices and
    anything over `limit` bytes: one InputError naming the file."""
    path = os.fspath(path)
    size = check_readable_file(path)
    if size > limit:
        raise InputError(f"is {size} bytes, too large for {what} (at most {limit})", path)
    with reading(path, what), open(path, "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise InputError(f"grew past {limit} bytes while reading", path)
    return data


SNIFF_BYTES = 64 << 10  # the head a file is judged by: binary, text, or a text hex dump (forensics.io.textdump)
NOT_PRINTABLE = bytes(b for b in range(256) if not (32 <= b < 127 or b in (9, 10, 13)))


def read_head(path: str, size: int = SNIFF_BYTES) -> bytes:
    """The first `size` bytes of a file (fewer when it is shorter), an OSError as one InputError naming it."""
    with reading(path), open(path, "rb") as fh:
        return fh.read(size)


def ascii_share(head: bytes) -> float:
    """The share of printable ASCII (and tab / CR / LF) bytes: what a warning quotes for near-text files.
    Counted at C speed (every binary dump a command opens is sniffed): what is left once the others are deleted."""
    if not head:
        return 0.0
    return len(bytes(head).translate(None, NOT_PRINTABLE)) / len(head)
