"""Runs on an fsspec filesystem (memory://, s3://, gs:// when their protocol packages are installed), read in
place: the manifest is read whole (it is small and its size is checked first) and every buffer is streamed
in bounded windows, each one byte range read from the filesystem (`cat_file(start, end)`: one ranged GET on an
object store), like a local dump; nothing is copied to local disk. Ranges rather than the filesystem's file
objects: those keep a position, and some filesystems (memory://) hand every opener the same object, so two
readers of one buffer (a diff and the CRC beside it, in two threads) would move each other's position.

A run loaded here is an ordinary forensics.runs.run.Run whose `files` is a RemoteFiles: Run.file_path names a
buffer by its URL (in messages), Run.open_buffer gives a Dump reading through the filesystem, and
forensics.runs.run.check_buffer takes its CRC32 the same way. fsspec is imported only when a URL is opened.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from forensics.core.errors import DependencyError, InputError

_CRC_BLOCK = 1 << 20


class RangeFile:
    """One reader's view of a file on an fsspec filesystem: `seek` and `readinto` as a file object has them,
    each read one byte range, so readers share nothing."""

    def __init__(self, fs, path: str):
        self.fs, self.path, self.pos = fs, path, 0

    def seek(self, pos: int) -> int:
        self.pos = pos
        return pos

    def readinto(self, view) -> int:
        data = self.fs.cat_file(self.path, start=self.pos, end=self.pos + len(view))
        n = len(data)
        view[:n] = data
        self.pos += n
        return n

    def close(self) -> None:
        pass


def is_url(location) -> bool:
    """Whether `location` is an fsspec URL other than file:// (local paths and file:// are read directly)."""
    text = location if isinstance(location, str) else os.fspath(location)
    return "://" in text and not text.startswith("file://")


def join(url: str, *parts: str) -> str:
    """`parts` under `url`; in a chained URL (zip://farm::file:///x.zip) under its first link, the path inside
    the archive."""
    head, sep, chain = url.partition("::")
    protocol, marker, path = head.partition("://") if "://" in head else ("", "", head)
    path = path.rstrip("/")  # `zip://` is the archive's root: its folders are `zip://NAME`, not `zip:/NAME`
    joined = "/".join([path, *parts]) if path else "/".join(parts)
    return (protocol + marker + joined if marker else joined) + sep + chain


# reference:// maps name byte ranges of arbitrary other files (local devices among them): not read as runs
REFUSED_PROTOCOLS = frozenset({"reference"})


def _check_chain(url: str) -> None:
    """Refuse what an fsspec URL would read without bound: a refused protocol anywhere in a chain, and a local
    file at its end (`zip://farm::file://farm.zip`) that is no regular file (zip://::file:///dev/zero read
    /dev/zero without end)."""
    from forensics.io.dump import check_readable_file

    parts = url.split("::")
    for part in parts:
        protocol = part.split("://", 1)[0].lower() if "://" in part else ""
        if protocol in REFUSED_PROTOCOLS:
            raise InputError(f"{protocol}:// URLs are not read as runs (they map byte ranges of other files: "
                             f"REFUSED_PROTOCOLS)", url)
    last = parts[-1]
    if len(parts) > 1 and ("://" not in last or last.lower().startswith(("file://", "local://"))):
        local = last.split("://", 1)[1] if "://" in last else last
        check_readable_file(local)  # a device, a FIFO or a directory: one line naming it


def open_fs(url: str):
    """(filesystem, path) of an fsspec URL; one-line errors for unknown protocols and missing packages."""
    protocol = url.split("://", 1)[0]
    _check_chain(url)
    try:
        import fsspec
    except ImportError:
        raise DependencyError(f"{url}: reading runs from URLs needs fsspec: pip install 'npu-forensics[scale]'") from None
    try:
        fs, path = fsspec.core.url_to_fs(url)
    except ValueError as exc:
        if "Protocol not known" in str(exc):
            raise InputError(f"unknown URL protocol {protocol}:// (fsspec knows no such filesystem)", url) from None
        raise InputError(f"cannot open: {exc}", url) from None
    except ImportError as exc:
        reason = str(exc).splitlines()[0] if str(exc) else f"the package for {protocol}:// is not installed"
        raise DependencyError(f"{url}: the {protocol}:// protocol is not installed ({reason})") from None
    except Exception as exc:  # noqa: BLE001 - a filesystem's own errors at connect (ftp: no such host): one line
        raise InputError(f"cannot open: {_reason(exc).removeprefix('cannot read: ')}", url) from None
    return fs, path


def _reason(exc: BaseException) -> str:
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return f"cannot read: {text}"


@dataclass(frozen=True)
class RemoteFiles:
    """The files of one run directory on an fsspec filesystem: `root` its path there, `url` its URL."""

    fs: object
    root: str
    url: str

    def url_of(self, rel: str) -> str:
        return join(self.url, rel)

    def size(self, rel: str) -> int | None:
        """The size of a regular file of the run; None when there is none (missing, or a directory)."""
        try:
            info = self.fs.info(join(self.root, rel))
        except FileNotFoundError:
            return None
        except Exception as exc:  # noqa: BLE001 - a filesystem's own errors: one line naming the URL
            raise InputError(_reason(exc), self.url_of(rel)) from None
        if info.get("type") not in (None, "file") or info.get("size") is None:
            return None
        return int(info["size"])

    def read_small(self, rel: str, limit: int, what: str = "file") -> bytes | None:
        """The whole of a small file (a manifest), refusing one over `limit` bytes; None when it is missing."""
        size = self.size(rel)
        if size is None:
            return None
        url = self.url_of(rel)
        if size > limit:
            raise InputError(f"is {size} bytes, too large for {what} (at most {limit})", url)
        try:
            data = self.fs.cat_file(join(self.root, rel), start=0, end=limit + 1)
        except Exception as exc:  # noqa: BLE001
            raise InputError(_reason(exc), url) from None
        if len(data) > limit:
            raise InputError(f"grew past {limit} bytes while reading", url)
        return data

    def dump(self, rel: str, size: int | None = None):
        """A buffer file as a forensics.io.dump.Dump read through the filesystem (streamed in windows)."""
        from forensics.io.dump import Dump

        size = self.size(rel) if size is None else size
        if size is None:
            raise InputError("no such dump file", self.url_of(rel))
        return Dump(path=self.url_of(rel), size=size,
                    opener=functools.partial(RangeFile, self.fs, join(self.root, rel)))

    def checksum(self, rel: str) -> tuple[int, int] | None:
        """(size, CRC32) of a buffer file, streamed; None when it is missing."""
        from forensics.compare.crc import crc32_range

        size = self.size(rel)
        if size is None:
            return None
        return size, crc32_range(self.dump(rel, size), 0, size, block=_CRC_BLOCK)


def _folders(fs, path: str, url: str) -> list[str]:
    """The names of the folders directly inside `path` (at `url`), sorted, hidden ones left out."""
    try:
        entries = fs.ls(path, detail=True)
    except FileNotFoundError:
        raise InputError("cannot list: no such directory", url) from None
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"cannot list: {_reason(exc)}", url) from None
    names = sorted(e["name"].rstrip("/").rsplit("/", 1)[-1] for e in entries if e.get("type") == "directory")
    return [n for n in names if not n.startswith(".")]


def find_runs(url: str, manifest: str) -> list[str]:
    """The URLs of the run directories (holding `manifest`) directly inside the folder at `url`, by name."""
    fs, path = open_fs(url)
    runs = []
    for name in _folders(fs, path, url):
        files = RemoteFiles(fs, join(path, name), join(url, name))
        if files.size(manifest) is not None:
            runs.append(files.url)
    return runs


def list_folders(url: str) -> list[str]:
    """The URLs of the folders directly inside `url` (not hidden), sorted; InputError when it is no folder."""
    fs, path = open_fs(url)
    try:
        is_folder = fs.isdir(path)
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"cannot list: {_reason(exc)}", url) from None
    if not is_folder:
        raise InputError("is not a directory (expected a folder of run pairs)", url)
    return [join(url, n) for n in _folders(fs, path, url)]


def run_files(url: str) -> RemoteFiles:
    fs, path = open_fs(url)
    return RemoteFiles(fs, path.rstrip("/"), url.rstrip("/"))
