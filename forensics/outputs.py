"""Writing outputs atomically: a crash or a full disk never leaves a half-written file under the final name.

Outputs are guarded as well as written: an output that is one of the command's inputs, a FIFO or device, the
current directory (or one of its parents), or a non-empty directory that is not an output of the same kind is
refused before any work, and a write that fails (a full disk, a file size limit) is one InputError naming the
output with nothing left behind.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import stat
import tempfile

from forensics.errors import InputError


def _usual_mode(mode: int) -> int:
    """What open()/mkdir() would have given under the process umask; mkstemp and mkdtemp give 0600/0700,
    which would make every output (a run, a relayouted dump, a deps directory) private by accident."""
    umask = os.umask(0)
    os.umask(umask)
    return mode & ~umask


def _write_failed(exc: OSError, path) -> InputError:
    return InputError(f"cannot write: {exc.strerror or exc}", path)


def make_parents(path) -> None:
    """Create the missing parent directories of an output (`-o runs/libedgetpu` without `runs/`)."""
    parent = os.path.dirname(os.path.abspath(os.fspath(path)))
    if os.path.isdir(parent):
        return
    try:
        os.makedirs(parent, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create the parent directory: {exc.strerror or exc}", path) from None


def _remove(path: str) -> None:
    """Remove what was replaced, whatever it is (directory, file, symlink)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(OSError):
            os.unlink(path)


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def check_not_input(output, *inputs) -> None:
    """Refuse an output path that is (or resolves to) one of the command's inputs."""
    if output is None:
        return
    output = os.fspath(output)
    for item in inputs:
        if item is not None and _same_file(output, os.fspath(item)):
            raise InputError(f"is also an input ({os.fspath(item)}); choose another output path", output)


def _check_existing_output(path: str, *, directory: bool) -> None:
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot access: {exc.strerror or exc}", path) from None
    if stat.S_ISLNK(st.st_mode) or stat.S_ISREG(st.st_mode):
        if directory and stat.S_ISREG(st.st_mode):
            raise InputError("exists and is a file, expected an output directory", path)
        return
    if stat.S_ISDIR(st.st_mode):
        if not directory:
            raise InputError("is a directory, expected an output file path", path)
        return
    raise InputError("exists and is not a regular file or directory (a FIFO or a device); refusing to replace it",
                     path)


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb"):
    """Open a temporary file beside `path`; on success it replaces `path` in one rename."""
    path = os.fspath(path)
    check_writable(path)
    directory = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    except OSError as exc:
        raise _write_failed(exc, path) from None
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
    _check_existing_output(path, directory=False)
    directory = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(directory):
        raise InputError("output directory does not exist", path)
    if not os.access(directory, os.W_OK):
        raise InputError("output directory is not writable", path)


def write_bytes_atomic(path, data) -> None:
    try:
        with atomic_write(path) as fh:
            fh.write(data)
    except OSError as exc:
        raise _write_failed(exc, path) from None


def write_text_atomic(path, text: str) -> None:
    write_bytes_atomic(path, text.encode("utf-8"))


def _replaceable_directory(path: str, marker: str | None) -> None:
    """An existing directory may be replaced only when it is empty or holds `marker` (an output of the same
    kind), and never when it is the current directory or one of its parents."""
    cwd = os.path.realpath(os.getcwd())
    real = os.path.realpath(path)
    if cwd == real or cwd.startswith(real.rstrip(os.sep) + os.sep):
        raise InputError("is the current directory (or contains it); refusing to replace it", path)
    try:
        names = os.listdir(path)
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", path) from None
    if names and (marker is None or marker not in names):
        what = f"no {marker}" if marker else "not an output"
        raise InputError(f"is a non-empty directory ({what}): refusing to replace it; choose a new directory",
                         path)


@contextlib.contextmanager
def atomic_directory(path, *, replace: bool = False, marker: str | None = None):
    """Build a directory under a temporary name and rename it into place when the block succeeds.

    A crashed writer leaves only a hidden `.name.*.tmp` directory, never a `path` that looks complete.
    `replace` allows replacing an existing directory that is empty or holds the file `marker` (what this
    writer puts in every directory it makes, e.g. manifest.json); missing parents are created.
    """
    path = os.path.abspath(os.fspath(path))
    _check_existing_output(path, directory=True)
    exists = os.path.lexists(path)
    if exists and not replace:
        raise InputError("already exists", path)
    if exists:
        _replaceable_directory(path, marker)
    make_parents(path)
    parent = os.path.dirname(path)
    try:
        tmp = tempfile.mkdtemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=parent)
    except OSError as exc:
        raise _write_failed(exc, path) from None
    with contextlib.suppress(OSError):
        os.chmod(tmp, _usual_mode(0o777))
    try:
        try:
            yield tmp
            if os.path.lexists(path):
                old = tmp + ".old"
                os.replace(path, old)
                os.replace(tmp, path)
                _remove(old)
            else:
                os.replace(tmp, path)
        except OSError as exc:
            if exc.filename is not None and not os.path.abspath(str(exc.filename)).startswith(tmp):
                raise InputError(f"cannot read: {exc.strerror or exc}", exc.filename) from None
            raise _write_failed(exc, path) from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
