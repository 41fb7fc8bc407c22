"""Nothing outside a run is ever written or removed by a write to it (issue 35): not through a directory of
the run that is a symbolic link, not through a `.forensics-journal` that names a file elsewhere; and what a
write of the project left (an empty journal after a full disk) is cleaned by the next write to the run."""

from __future__ import annotations

import errno
import json
import os
import sys

import pytest

from forensics.runs.ingest import ingest
from forensics.runs.run import JOURNAL, load_run, verify_run

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="symbolic links need privileges on Windows")


@pytest.fixture
def run(tmp_path):
    (tmp_path / "a.bin").write_bytes(b"\x01" * 32)
    (tmp_path / "b.bin").write_bytes(b"\x02" * 48)
    ingest(tmp_path / "R", "ours", [f"input={tmp_path / 'a.bin'}"])
    return tmp_path / "R"


def _tree(path) -> dict:
    return {os.path.relpath(os.path.join(d, f), path): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(path) for f in files}


def test_a_stage_directory_that_is_a_link_is_never_written_through(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (run / "tensor").symlink_to(elsewhere, target_is_directory=True)
    result = ingest(run, "ours", [f"tensor:b={tmp_path / 'b.bin'}"])
    assert list(elsewhere.iterdir()) == []
    entry = load_run(run).buffer("tensor", "b")
    assert entry.file == "tensor-2/b.bin" and not os.path.islink(run / "tensor-2")
    assert (run / "tensor-2" / "b.bin").read_bytes() == b"\x02" * 48
    assert all(c.ok for c in verify_run(result.run))
    assert (run / "tensor").is_symlink()  # the link is the user's: it stays


def test_a_stage_directory_link_to_inside_the_run_is_not_written_through_either(run, tmp_path):
    (run / "inner").mkdir()
    (run / "dequantized").symlink_to(run / "inner", target_is_directory=True)
    ingest(run, "ours", [f"dequantized:b={tmp_path / 'b.bin'}"])
    assert list((run / "inner").iterdir()) == []
    assert load_run(run).buffer("dequantized", "b").file == "dequantized-2/b.bin"


def _journal(run, *items) -> None:
    (run / JOURNAL).write_text("".join(json.dumps(item) + "\n" for item in items), encoding="utf-8")


def test_a_journal_naming_a_file_through_a_link_removes_nothing_outside(run, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.bin").write_bytes(b"precious")
    (elsewhere / "old.bin").write_bytes(b"precious too")
    (run / "tensor").symlink_to(elsewhere, target_is_directory=True)
    _journal(run, {"dir": "tensor"}, {"file": "tensor/b.bin"}, {"old": "tensor/old.bin"})
    ingest(run, "ours", [f"dequantized:b={tmp_path / 'b.bin'}"])
    assert (elsewhere / "b.bin").read_bytes() == b"precious"
    assert (elsewhere / "old.bin").read_bytes() == b"precious too"
    assert (run / "tensor").is_symlink() and not (run / JOURNAL).exists()


def test_a_journal_removes_only_the_names_a_writer_of_the_project_gives(run, tmp_path):
    (run / "notes.txt").write_text("the driver engineer's notes")
    (run / "tensor").mkdir()
    (run / "tensor" / "b.bin").write_bytes(b"left by a killed writer")
    _journal(run, {"file": "notes.txt"}, {"file": "tensor/b.bin"}, {"dir": "tensor"})
    ingest(run, "ours", [f"dequantized:b={tmp_path / 'b.bin'}"])
    assert (run / "notes.txt").read_text() == "the driver engineer's notes"
    assert not (run / "tensor").exists()  # the killed writer's file and directory went
    assert sorted(_tree(run)) == sorted(["manifest.json", "input/input.bin", "dequantized/b.bin", "notes.txt"])


def test_a_journal_never_removes_a_file_the_manifest_lists(run, tmp_path):
    before = _tree(run)
    _journal(run, {"file": "input/input.bin"}, {"old": "input/input.bin"})
    ingest(run, "ours", [f"dequantized:b={tmp_path / 'b.bin'}"])
    after = _tree(run)
    assert after["input/input.bin"] == before["input/input.bin"]


class _FullDisk:
    """A file of the run on a full disk: writes are buffered, every flush and the close fail with ENOSPC."""

    def __init__(self, fh):
        self.fh = fh

    def write(self, data):
        return len(data)

    def flush(self):
        raise OSError(errno.ENOSPC, "No space left on device")

    def close(self):
        self.fh.close()
        raise OSError(errno.ENOSPC, "No space left on device")

    def fileno(self):
        return self.fh.fileno()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def test_a_full_disk_leaves_an_empty_journal_that_the_next_write_cleans(run, tmp_path, monkeypatch, cli):
    import builtins

    real_open = builtins.open
    inside = str(run)

    def full_open(file, mode="r", *args, **kwargs):
        fh = real_open(file, mode, *args, **kwargs)
        if str(file).startswith(inside) and any(c in mode for c in "wxa"):
            return _FullDisk(fh)
        return fh

    before = _tree(run)
    monkeypatch.setattr(builtins, "open", full_open)
    r = cli("ingest", run, "--source", "ours", f"tensor:b={tmp_path / 'b.bin'}")
    monkeypatch.undo()
    assert r.code == 2 and "No space left on device" in r.err and len(r.err.splitlines()) == 1
    assert (run / JOURNAL).exists() and (run / JOURNAL).stat().st_size == 0  # what the full disk left
    assert load_run(run).buffers == load_run(run).buffers  # the run reads as before
    left = _tree(run)
    left.pop(JOURNAL)
    assert left == before
    r = cli("ingest", run, "--source", "ours", f"tensor:b={tmp_path / 'b.bin'}")
    assert r.code == 0, r.err
    assert not (run / JOURNAL).exists()
    assert sorted(_tree(run)) == ["input/input.bin", "manifest.json", "tensor/b.bin"]
