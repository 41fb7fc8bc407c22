"""Writing outputs atomically: a crash or a full disk never leaves a half-written file under the final name."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile

from forensics.errors import InputError


def _usual_mode(mode: int) -> int:
    """What open()/mkdir() would have given under the process umask; mkstemp and mkdtemp give 0600/0700,
    which would make every output (a run, a relayouted dump, a deps directory) private by accident."""
    umask = os.umask(0)
    os.umask(umask)
    return mode & ~umask


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb"):
    """Open a temporary file beside `path`; on success it replaces `path` in one rename."""
    path = os.fspath(path)
    check_writable(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path) from None
    try:
        with contextlib.suppress(OSError):
            os.chmod(tmp, _usual_mode(0o666))
        with os.fdopen(fd, mode) as fh:
            yield fh
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def check_writable(path) -> None:
    """Fail early, before any work, when an output file cannot be created where asked."""
    path = os.fspath(path)
    directory = os.path.dirname(os.path.abspath(path))
    if os.path.isdir(path):
        raise InputError("is a directory, expected an output file path", path)
    if not os.path.isdir(directory):
        raise InputError("output directory does not exist", path)
    if not os.access(directory, os.W_OK):
        raise InputError("output directory is not writable", path)


def write_bytes_atomic(path, data) -> None:
    try:
        with atomic_write(path) as fh:
            fh.write(data)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path) from None


def write_text_atomic(path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


@contextlib.contextmanager
def atomic_directory(path, *, replace: bool = False):
    """Build a directory under a temporary name and rename it into place when the block succeeds.

    A crashed writer leaves only a hidden `.name.*.tmp` directory, never a `path` that looks complete.
    """
    path = os.path.abspath(os.fspath(path))
    parent = os.path.dirname(path)
    if not os.path.isdir(parent):
        raise InputError("parent directory does not exist", path)
    if os.path.exists(path) and not replace:
        raise InputError("already exists", path)
    try:
        tmp = tempfile.mkdtemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", path) from None
    with contextlib.suppress(OSError):
        os.chmod(tmp, _usual_mode(0o777))
    try:
        yield tmp
        if os.path.exists(path):
            old = tmp + ".old"
            os.replace(path, old)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
