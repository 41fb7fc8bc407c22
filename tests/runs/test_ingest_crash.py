"""A writer killed at any step leaves a whole run at its name (the old one or the new one), and the next write
cleans up or puts back what it left: killed for real (a forked process that `os._exit`s after its k-th change
to the file system), at every k."""

from __future__ import annotations

import builtins
import multiprocessing
import os
import sys

import pytest

from forensics.runs.ingest import ingest
from forensics.runs.run import load_run, verify_run, write_run

KILLED = 86
# every call that changes the file system (open for writing included): a kill may come after any of them
_CHANGES = ("replace", "rename", "unlink", "remove", "rmdir", "mkdir", "link", "open", "ftruncate", "write")


def _kill_after(k: int, counter: list) -> None:
    """Patch the file-system calls of this (child) process: after the k-th change, die without any cleanup."""
    def wrap(fn, changes):
        def call(*args, **kwargs):
            result = fn(*args, **kwargs)
            if changes(*args, **kwargs):
                counter[0] += 1
                if counter[0] == k:
                    os._exit(KILLED)
            return result
        return call

    def open_changes(file, mode="r", *a, **kw):
        return any(c in mode for c in "wxa+")

    def os_open_changes(path, flags, *a, **kw):
        return bool(flags & (os.O_CREAT | os.O_WRONLY | os.O_RDWR))

    for name in _CHANGES:
        if name == "open":
            os.open = wrap(os.open, os_open_changes)
            builtins.open = wrap(builtins.open, open_changes)
        else:
            setattr(os, name, wrap(getattr(os, name), lambda *a, **kw: True))


def _child(k: int, run: str, specs: list[str], conn) -> None:
    counter = [0]
    _kill_after(k, counter)
    try:
        ingest(run, "ours", specs, replace=True)  # replaces a buffer: the kill must not lose the old one
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("error", repr(exc)))
        os._exit(1)
    conn.send(("done", counter[0]))
    os._exit(0)


def _run_child(k: int, run, specs) -> tuple[int, object]:
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    here, there = ctx.Pipe()
    proc = ctx.Process(target=_child, args=(k, os.fspath(run), specs, there))
    proc.start()
    proc.join()
    return proc.exitcode, (here.recv() if here.poll() else None)


def _buffers(run) -> dict:
    loaded = load_run(run)
    assert all(c.ok for c in verify_run(loaded)), [c.to_dict() for c in verify_run(loaded)]
    return {e.label: e.crc32 for e in loaded.buffers}


def _files(run) -> set:
    return {os.path.relpath(os.path.join(d, f), run).replace(os.sep, "/") for d, _, fs in os.walk(run) for f in fs}


@pytest.fixture
def dumps(tmp_path):
    d = tmp_path / "dumps"
    d.mkdir()
    for name, fill in (("a", 1), ("b", 2), ("b2", 3), ("c", 4), ("p", 5)):
        (d / f"{name}.bin").write_bytes(bytes([fill]) * (64 + fill))
    return d


@pytest.mark.skipif(sys.platform == "win32", reason="forks a child per step")
@pytest.mark.parametrize("exists", [True, False], ids=["add-to-a-run", "create-a-run"])
def test_a_writer_killed_after_any_step_leaves_a_whole_run(tmp_path, dumps, exists):
    run = tmp_path / "runs" / "R"
    specs = [f"tensor:b={dumps / 'b2.bin'}", f"dequantized:c={dumps / 'c.bin'}"]  # replaces b, adds a stage
    run.parent.mkdir()
    if exists:
        ingest(run, "ours", [f"input={dumps / 'a.bin'}", f"tensor:b={dumps / 'b.bin'}"])
    old = _buffers(run) if exists else None
    before = sorted(os.listdir(run.parent))
    snapshot = {f: (run / f).read_bytes() for f in _files(run)} if exists else None
    new, k = None, 0
    while True:
        k += 1
        assert k < 100, "the write never finished"
        code, message = _run_child(k, run, specs)
        if code == 0:  # k is past the write's last change: it finished
            break
        assert code == KILLED, (k, code, message)
        if os.path.isdir(run) and os.path.exists(run / "manifest.json"):
            now = _buffers(run)  # readable, every buffer whole
            if now != old:
                new = new or now
                assert now == new and set(now) == {*(old or {}), "tensor:b", "dequantized:c"}, (k, now)
        else:
            assert not exists, f"killed after change {k}: the run is gone"
        # the next write finds what the killed one left, and the run is then exactly its manifest's
        with write_run(run, "ours", add=True) as b:
            b.add_bytes("params", "p", b"\x05" * 9)
        after = _buffers(run)
        assert _files(run) == {"manifest.json", *(e.file for e in load_run(run).buffers)}, k
        assert sorted(os.listdir(run.parent)) == (before if exists else ["R"]), k
        assert {k_: v for k_, v in after.items() if k_ != "params:p"} in (old or {}, new), k
        _restore(run, snapshot)
        if exists:
            assert _buffers(run) == old
    assert k > 6 and message == ("done", k - 1)
    assert _buffers(run) == new or not exists  # some kill came after the new manifest was in


def _restore(run, snapshot) -> None:
    """Put the run back as it was before the write (or remove it when there was none)."""
    import shutil

    if snapshot is None:
        shutil.rmtree(run)
        return
    files = _files(run)
    for f in files - set(snapshot):
        os.unlink(run / f)
    for d in sorted({os.path.dirname(f) for f in files} - {os.path.dirname(f) for f in snapshot}, reverse=True):
        os.rmdir(run / d)
    for f, data in snapshot.items():
        (run / f).write_bytes(data)


def test_a_run_moved_aside_by_an_older_writer_is_put_back(tmp_path, dumps):
    """The state the issue found: killed between its two renames, the old writer left no run at its name, the
    old run in `.R.*.tmp.old` and the new one in `.R.*.tmp`. The next write puts the old one back."""
    run = tmp_path / "R"
    ingest(run, "ours", [f"input={dumps / 'a.bin'}"])
    newer = tmp_path / "newer"
    ingest(newer, "ours", [f"input={dumps / 'a.bin'}", f"tensor:b={dumps / 'b.bin'}"])
    os.rename(run, tmp_path / ".R.k3j9x_q2.tmp.old")
    os.rename(newer, tmp_path / ".R.k3j9x_q2.tmp")
    result = ingest(run, "ours", [f"tensor:c={dumps / 'c.bin'}"])
    assert not result.created
    assert [e.label for e in result.run.buffers] == ["input", "tensor:c"]
    assert sorted(os.listdir(tmp_path)) == ["R", "dumps"]
    assert all(c.ok for c in verify_run(load_run(run)))


def test_leftovers_of_other_runs_are_not_touched(tmp_path, dumps):
    """`.R.x.<random>.tmp` belongs to the run `R.x`, not to `R`."""
    other = tmp_path / ".R.x.abc123.tmp"
    other.mkdir()
    ingest(tmp_path / "R", "ours", [f"input={dumps / 'a.bin'}"])
    assert other.is_dir()


def test_an_interrupted_add_removes_what_it_wrote(tmp_path, dumps):
    run = tmp_path / "R"
    ingest(run, "ours", [f"input={dumps / 'a.bin'}"])
    files = {f: (run / f).read_bytes() for f in _files(run)}
    with pytest.raises(KeyboardInterrupt):
        with write_run(run, "ours", add=True, replace_buffers=True) as b:
            b.add_bytes("input", None, b"new")
            b.add_bytes("detections", "d", b"\0" * 8)
            raise KeyboardInterrupt
    assert {f: (run / f).read_bytes() for f in _files(run)} == files
    assert sorted(os.listdir(run)) == ["input", "manifest.json"]


def test_a_failed_rename_of_a_replaced_directory_puts_the_old_one_back(tmp_path, monkeypatch):
    from forensics.core.errors import InputError
    from forensics.io.outputs import atomic_directory

    out = tmp_path / "deps"
    out.mkdir()
    (out / "postprocess.json").write_text("old")
    real, calls = os.replace, []

    def replace(src, dst):
        calls.append(dst)
        if len(calls) == 2:  # the new directory into place
            raise OSError(28, "No space left on device")
        return real(src, dst)

    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(InputError, match="No space left"):
        with atomic_directory(out, replace=True, marker="postprocess.json") as tmp:
            with open(os.path.join(tmp, "postprocess.json"), "w") as fh:
                fh.write("new")
    assert (out / "postprocess.json").read_text() == "old"
    assert sorted(os.listdir(tmp_path)) == ["deps"]
