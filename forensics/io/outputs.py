"""Writing outputs atomically: a crash or a full disk never leaves a half-written file under the final name.

Outputs are guarded as well as written: an output that is one of the command's inputs or lies inside an input
run (check_outputs, which every command's outputs pass), the current directory (or one of its parents), or a
non-empty directory that is not an output of the same kind is refused before any work, and a write that fails
(a full disk, a file size limit) is one InputError naming the output with nothing left behind. Devices, FIFOs
and the process's own streams are written directly; a symbolic link keeps pointing to the file written.
Writers of one output take turns (exclusive), and the next writer cleans up after one that was killed: the
temporary names this module gives (`.NAME.<random>.tmp`), never anything else.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import shutil
import stat
import tempfile
import threading
import time

from forensics.core.errors import InputError

try:  # one writer at a time: an OS lock on a file beside the output, released by the kernel if the writer dies
    import fcntl
except ImportError:  # Windows
    fcntl = None
    import msvcrt


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
    """Refuse an output path that is (or resolves to) one of the command's inputs (see check_outputs)."""
    if output is not None:
        check_outputs([(output, "file", None)], inputs)


# --- outputs that would destroy inputs ---------------------------------------------------------------------

def _whole_input(directory: str) -> str | None:
    """What a directory is when the commands that take it read it whole, every file in it an input: "run"
    (manifest.json of format forensics-run) or "deps directory" (anchors.bin + postprocess.json from extract)."""
    manifest = os.path.join(directory, "manifest.json")
    if os.path.isfile(manifest):
        with contextlib.suppress(OSError):
            with open(manifest, "rb") as fh:
                if b"forensics-run" in fh.read(4096):
                    return "run"
    if os.path.isfile(os.path.join(directory, "postprocess.json")) and \
            os.path.isfile(os.path.join(directory, "anchors.bin")):
        return "deps directory"
    return None


def _real(path: str) -> str:
    """The path with every link resolved, in the case the file system compares names in (Windows)."""
    return os.path.normcase(os.path.realpath(os.path.abspath(path)))


def _within(child: str, parent: str) -> bool:
    return child.startswith(parent.rstrip(os.sep) + os.sep)


def _wholes_of(item: str, item_real: str, out_real: str):
    """(directory, what) read whole that `item` belongs to: the run or deps directory it is in (a buffer file is
    at most two levels down: RUN/stage/file), and, for a directory, any inside it on the way down to the output."""
    up = item_real if os.path.isdir(item) else os.path.dirname(item_real)
    for directory in (up, os.path.dirname(up), os.path.dirname(os.path.dirname(up))):
        what = _whole_input(directory)
        if what:
            yield directory, what
    if os.path.isdir(item) and _within(out_real, item_real):
        directory = item_real
        for part in os.path.relpath(os.path.dirname(out_real), item_real).split(os.sep):
            if part in (os.curdir, ""):
                break
            directory = os.path.join(directory, part)
            what = _whole_input(directory)
            if what:
                yield directory, what


def _written_through(path: str) -> bool:
    try:
        return output_target(path)[1]
    except InputError:  # a directory where a file is expected: its writer says so
        return False


def _check_output(output: str, kind: str, named: str, inputs: list) -> None:
    """check_outputs' rules for one output (a path, not a URL) against every input; `named`: the flag and a
    space, or nothing."""
    real = _real(output)
    cwd = _real(os.getcwd())
    if kind == "dir" and (cwd == real or _within(cwd, real)):
        raise InputError("is the current directory (or contains it); refusing to replace it", output)
    # a device, FIFO or stream is written through, not replaced: `import /dev/stdin -o /dev/stdout` on a
    # terminal names one device twice and destroys nothing
    exists = os.path.exists(output) and not (kind == "file" and _written_through(output))
    for item in inputs:
        if exists and _same_file(output, item):
            raise InputError(f"is also an input ({item}): {named}would overwrite it; choose another path",
                             output)
        item_real = _real(item)
        for whole, what in _wholes_of(item, item_real, real):
            if _within(real, whole):
                raise InputError(f"is inside {item if whole == item_real else whole}, a {what} this command "
                                 f"reads: {named}would change it; write it elsewhere", output)
        if kind == "dir" and _within(item_real, real):
            raise InputError(f"holds the input {item}: {named}would replace this directory with it; choose "
                             "another directory", output)


def check_outputs(outputs, inputs) -> None:
    """The one rule every command's outputs pass, before anything is read or written: refuse an output that

    - is one of the inputs: the same file after links (a symbolic or hard link, another spelling of the name
      on a case-insensitive file system: os.path.samefile compares the files themselves);
    - lies inside a run or a deps directory that is an input, holds an input, or lies within an input
      directory: every file there is an input, and a report written into a run changes it;
    - is a directory that will be replaced whole (kind "dir") and holds an input;
    - is another output of the same command (check_distinct).

    `outputs`: (path, kind, flag) with kind "file" (a file written), "dir" (a directory replaced whole),
    "into" (a directory files are written into) or "run" (a run added to in place, which never removes a file
    before its new manifest is in); `flag` names the output in messages (None: the path alone). `inputs`:
    paths; missing ones and URLs are skipped.
    """
    check_distinct(outputs)
    inputs = [os.fspath(i) for i in inputs if i is not None]
    inputs = [i for i in inputs if "://" not in i and os.path.lexists(i)]
    if not inputs:
        return
    for output, kind, flag in outputs:
        if output is None:
            continue
        output = os.fspath(output)
        if "://" in output:
            continue
        _check_output(output, kind, f"{flag} " if flag else "", inputs)


def check_distinct(outputs) -> None:
    """Refuse two outputs of one command that are one file: the same path after links and case (`--html X
    --junit X`, or `-o s.csv --html s.parquet` where the summary writes s.parquet beside s.csv), or one inside a
    directory another replaces whole. Each would overwrite the other while both said "wrote". Devices, FIFOs
    and the process's own streams are written through, never replaced: `--html /dev/null --junit /dev/null`
    is fine. `outputs` as check_outputs takes them."""
    seen = []
    for output, kind, flag in outputs:
        if output is None or "://" in os.fspath(output):
            continue
        output = os.fspath(output)
        if kind == "file" and _written_through(output):
            continue
        real = _real(output)
        for other, other_kind, other_flag, other_real in seen:
            if real == other_real:
                clash = f"is the output of both {other_flag or other} and {flag or output}"
            elif other_kind == "dir" and _within(real, other_real):
                clash = f"({flag or 'an output'}) is inside {other}, which {other_flag or 'another output'} replaces"
            elif kind == "dir" and _within(other_real, real):
                clash = f"({flag or 'an output'}) holds {other}, the output of {other_flag or 'another output'}"
            else:
                continue
            raise InputError(f"{clash}: two outputs of one command are never one file; choose another path for "
                             "one of them", output)
        seen.append((output, kind, flag, real))


def _check_existing_output(path: str, *, directory: bool) -> None:
    """A directory output: what is at `path` (through links) must be a directory, or nothing."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise InputError(f"cannot access: {exc.strerror or exc}", path) from None
    if stat.S_ISDIR(st.st_mode):
        if not directory:
            raise InputError("is a directory, expected an output file path", path)
        return
    if stat.S_ISREG(st.st_mode) and directory:
        raise InputError("exists and is a file, expected an output directory", path)
    if directory:
        raise InputError("exists and is not a directory (a FIFO or a device); refusing to replace it", path)


# The calling process's own streams: written through the open descriptor (its offset, its append mode: `>>`),
# never reopened nor replaced (as root a rename would put a file where /dev/stdout was).
_OWN_STREAMS = re.compile(r"/dev/(?:std(?P<std>out|err)|fd/(?P<fd>\d+))|/proc/self/fd/(?P<pfd>\d+)")


def output_target(path) -> tuple[str, bool]:
    """Where a file output goes, and whether it is written directly (True) rather than atomically.

    Directly: the process's own stdout / stderr / fd N, character devices (/dev/null, a terminal), FIFOs and
    sockets: there is nothing to rename over. Atomically: a regular file or a new path; through a symbolic link,
    the file it points to is replaced (the link stays a link). A block device or a directory is refused."""
    path = os.fspath(path)
    if _OWN_STREAMS.fullmatch(path):
        return path, True
    try:
        st = os.stat(path)  # through links
    except FileNotFoundError:
        if os.path.islink(path):  # a dangling link: the file it names is created
            return os.path.realpath(path), False
        return path, False
    except OSError as exc:
        raise InputError(f"cannot access: {exc.strerror or exc}", path) from None
    if stat.S_ISCHR(st.st_mode) or stat.S_ISFIFO(st.st_mode) or stat.S_ISSOCK(st.st_mode):
        return path, True
    if stat.S_ISDIR(st.st_mode):
        raise InputError("is a directory, expected an output file path", path)
    if not stat.S_ISREG(st.st_mode):
        raise InputError("is a block device (or another special file); refusing to write to it", path)
    return (os.path.realpath(path) if os.path.islink(path) else path), False


def _open_direct(path: str) -> int:
    """A descriptor to write a device, FIFO or own stream through (see output_target)."""
    own = _OWN_STREAMS.fullmatch(path)
    try:
        if own:
            number = {"out": 1, "err": 2}.get(own.group("std") or "") or int(own.group("fd") or own.group("pfd"))
            return os.dup(number)
        nonblock = getattr(os, "O_NONBLOCK", 0)  # POSIX: a FIFO nobody reads is an error, not a hang
        fd = os.open(path, os.O_WRONLY | nonblock | getattr(os, "O_NOCTTY", 0))
        if nonblock:
            os.set_blocking(fd, True)
        return fd
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise InputError("is a FIFO that nobody reads (start its reader first)", path) from None
        raise _write_failed(exc, path) from None


@contextlib.contextmanager
def atomic_write(path, mode: str = "wb", *, durable: bool = False):
    """Open a temporary file beside `path`; on success it replaces `path` in one rename (after an fsync when
    `durable`: a run's manifest, which must not be renamed in before its bytes are on the disk). A device,
    FIFO or the process's own stream is written directly, and through a symbolic link its target is replaced
    (output_target)."""
    path = os.fspath(path)
    target, direct = output_target(path)
    if direct:
        with os.fdopen(_open_direct(path), mode) as fh:
            yield fh
        return
    check_writable(target)
    directory = os.path.dirname(os.path.abspath(target))
    with exclusive(target):  # one writer at a time: what is left beside the output is no live writer's
        for stale in stale_temporaries(target):
            with contextlib.suppress(OSError):
                os.unlink(stale)
        try:
            fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(target) + ".", suffix=".tmp", dir=directory)
        except OSError as exc:
            raise _write_failed(exc, path) from None
        try:
            with contextlib.suppress(OSError):
                os.chmod(tmp, _usual_mode(0o666))
            with os.fdopen(fd, mode) as fh:
                yield fh
                if durable:
                    fh.flush()
                    os.fsync(fh.fileno())
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise


# The temporary file atomic_write makes beside an output: `.NAME.` + tempfile's 8 random characters + `.tmp`.
_TEMPORARY = re.compile(r"[a-z0-9_]{8}\.tmp")


def stale_temporaries(path) -> list[str]:
    """The temporary files a killed writer of the file output `path` left beside it (`.NAME.k3j_x9q2.tmp`: this
    project's own name for them, and regular files only), which the next write to `path` removes under the
    writer's lock. Nothing else is ever touched: not another output's, not a user's `.NAME.backup.tmp`."""
    path = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(path)
    prefix = "." + name + "."
    try:
        names = [n for n in os.listdir(parent) if n.startswith(prefix) and _TEMPORARY.fullmatch(n[len(prefix):])]
    except OSError:
        return []
    found = []
    for n in names:
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(os.path.join(parent, n)).st_mode):
                found.append(os.path.join(parent, n))
    return sorted(found)


def check_writable(path) -> None:
    """Fail early, before any work, when an output file cannot be created where asked."""
    path = os.fspath(path)
    target, direct = output_target(path)
    if direct:
        return
    directory = os.path.dirname(os.path.abspath(target))
    if not os.path.isdir(directory):
        raise InputError("output directory does not exist", path)
    if not os.access(directory, os.W_OK):
        raise InputError("output directory is not writable", path)


def write_bytes_atomic(path, data, *, durable: bool = False) -> None:
    try:
        with atomic_write(path, durable=durable) as fh:
            fh.write(data)
    except OSError as exc:
        raise _write_failed(exc, path) from None


def write_text_atomic(path, text: str, *, durable: bool = False) -> None:
    write_bytes_atomic(path, text.encode("utf-8"), durable=durable)


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


# --- one writer per output, and what a killed writer left -------------------------------------------

LOCK_TIMEOUT = 600.0  # seconds a writer waits for another writer of the same output (a capture can take minutes)
_held: dict[tuple[str, int], int] = {}  # (lock file, thread) -> depth: write_run holds it around atomic_directory
_held_guard = threading.Lock()


def lock_path(path) -> str:
    """The lock file of an output: `.NAME.lock` beside it (a run that does not exist yet has no inside)."""
    path = os.path.abspath(os.fspath(path))
    return os.path.join(os.path.dirname(path), "." + os.path.basename(path) + ".lock")


def _try_lock(fd: int) -> bool:
    try:
        if fcntl is not None:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        else:  # byte 1 MiB, so that another process can still read the holder's pid at the start of the file
            os.lseek(fd, 1 << 20, os.SEEK_SET)
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        return True
    except OSError as exc:
        if isinstance(exc, (BlockingIOError, PermissionError)) or exc.errno in (errno.EAGAIN, errno.EACCES):
            return False
        raise


def _unlock_and_close(fd: int, lock: str) -> None:
    if fcntl is not None:
        # Unlinked while still held: a waiter that then gets this file's lock sees that the name no longer
        # leads to it and starts over on a fresh file, so two writers never hold "the" lock at once.
        with contextlib.suppress(OSError):
            os.unlink(lock)
        os.close(fd)
        return
    with contextlib.suppress(OSError):
        os.lseek(fd, 1 << 20, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)
    os.close(fd)
    with contextlib.suppress(OSError):  # fails while a waiter has it open, which is as good
        os.unlink(lock)


def _holder(lock: str) -> str:
    with contextlib.suppress(OSError, ValueError):
        with open(lock, "rb") as fh:
            return f" (pid {int(fh.read(32).split()[0])})"
    return ""


@contextlib.contextmanager
def exclusive(path, *, timeout: float | None = None):
    """Hold the writer's lock of output `path` for the block; another writer of the same path waits.

    The lock is the kernel's (flock; msvcrt.locking on Windows) on `.NAME.lock` beside the output, so a writer
    that is killed releases it: no stale lock to break. Re-entrant within a thread. A file system that cannot
    lock (some network mounts) is written unlocked, as before locks existed.
    """
    lock = lock_path(path)
    key = (lock, threading.get_ident())
    with _held_guard:
        if key in _held:
            _held[key] += 1
            nested = True
        else:
            nested = False
    if nested:
        try:
            yield
        finally:
            with _held_guard:
                _held[key] -= 1
        return
    deadline = time.monotonic() + (LOCK_TIMEOUT if timeout is None else timeout)
    delay, fd = 0.001, None
    while fd is None:
        try:
            fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o666)
        except OSError as exc:
            raise _write_failed(exc, path) from None
        try:
            got = _try_lock(fd)
        except OSError:  # ENOLCK, EOPNOTSUPP: no locks on this file system
            os.close(fd)
            with contextlib.suppress(OSError):
                os.unlink(lock)
            yield
            return
        if got:
            try:  # the name must still lead to the file locked (see _unlock_and_close)
                same = os.path.samestat(os.fstat(fd), os.stat(lock))
            except OSError:
                same = False
            if same:
                break
            os.close(fd)
            fd = None
            continue
        os.close(fd)
        fd = None
        if time.monotonic() > deadline:
            raise InputError(f"another process{_holder(lock)} has been writing it for over "
                             f"{LOCK_TIMEOUT if timeout is None else timeout:.0f} s; if none is running, delete "
                             f"{os.path.basename(lock)} beside it", path)
        time.sleep(delay)  # waiting for another writer: polled, as the lock must also be given up on time
        delay = min(delay * 2, 0.05)
    with contextlib.suppress(OSError):
        os.ftruncate(fd, 0)
        os.lseek(fd, 0, os.SEEK_SET)
        os.write(fd, f"{os.getpid()}\n".encode())
    with _held_guard:
        _held[key] = 1
    try:
        yield
    finally:
        with _held_guard:
            del _held[key]
        _unlock_and_close(fd, lock)


def leftovers(path) -> list[str]:
    """The hidden directories and files a killed writer of `path` left beside it: `.NAME.<random>.tmp` (built,
    not renamed into place yet) and `.NAME.<random>.tmp.old` (the old output, moved aside for the new one).
    The C writer (c/forensics_run.h) names its temporary directory the same way. Oldest first."""
    path = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(path)
    pattern = re.compile(re.escape("." + name + ".") + r"[A-Za-z0-9_-]+\.tmp(\.old)?")
    try:
        names = [n for n in os.listdir(parent) if pattern.fullmatch(n)]
    except OSError:
        return []
    found = []
    for n in names:
        with contextlib.suppress(OSError):
            found.append((os.lstat(os.path.join(parent, n)).st_mtime_ns, os.path.join(parent, n)))
    return [p for _, p in sorted(found)]


def recover(path, marker: str | None = None) -> str | None:
    """Under the writer's lock: put back an output a writer moved aside and died before replacing (`path`
    missing, `.NAME.*.tmp.old` holding `marker`), and remove every other leftover. Returns what was put back."""
    path = os.path.abspath(os.fspath(path))
    found = leftovers(path)
    restored = None
    if not os.path.lexists(path):
        for old in reversed(found):
            if old.endswith(".old") and os.path.isdir(old) and not os.path.islink(old) and \
                    (marker is None or os.path.isfile(os.path.join(old, marker))):
                with contextlib.suppress(OSError):
                    os.rename(old, path)
                    restored = old
                    break
    for item in found:
        if item != restored:
            _remove(item)
    return restored


@contextlib.contextmanager
def atomic_directory(path, *, replace: bool = False, marker: str | None = None):
    """Build a directory under a temporary name and rename it into place when the block succeeds.

    A crashed writer leaves only a hidden `.name.*.tmp` directory, never a `path` that looks complete, and the
    next writer of `path` removes it. `replace` allows replacing an existing directory that is empty or holds
    the file `marker` (what this writer puts in every directory it makes, e.g. manifest.json): the old one is
    moved aside and the new one renamed in, and a writer killed between the two renames has its old directory
    put back by the next writer. Writers of one path take turns (`exclusive`); missing parents are created.
    """
    path = os.path.abspath(os.fspath(path))
    if os.path.islink(path):  # the directory it points to is replaced; the link stays a link
        path = os.path.realpath(path)
    _check_existing_output(path, directory=True)
    make_parents(path)
    with exclusive(path):
        recover(path, marker)
        _check_existing_output(path, directory=True)
        exists = os.path.lexists(path)
        if exists and not replace:
            raise InputError("already exists", path)
        if exists:
            _replaceable_directory(path, marker)
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
                    try:
                        os.replace(tmp, path)
                    except BaseException:
                        with contextlib.suppress(OSError):
                            os.replace(old, path)  # the old one back before the new one is removed
                        raise
                    _remove(old)
                else:
                    os.rename(tmp, path)
            except OSError as exc:
                if exc.filename is not None and not os.path.abspath(str(exc.filename)).startswith(tmp):
                    raise InputError(f"cannot read: {exc.strerror or exc}", exc.filename) from None
                raise _write_failed(exc, path) from None
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
