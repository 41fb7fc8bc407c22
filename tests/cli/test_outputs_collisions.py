"""Two outputs of one command are never one file (issue 35): `--html X --junit X`, or `-o s.csv --html s.parquet`
where the summary writes s.parquet beside s.csv, used to overwrite one output with another while printing "wrote"
twice. Each case is one line, exit 2, before anything is read or written; devices are written through and may be
named twice. And what a SIGKILLed writer leaves (`.NAME.<random>.tmp`) is removed by the next write there, never
anything else."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from forensics.core.errors import InputError
from forensics.io.outputs import atomic_write, check_distinct, stale_temporaries, write_bytes_atomic
from tests.conftest import REPO, assert_one_line_error


@pytest.fixture
def runs(tmp_path, cli):
    for name, source in (("a", "libedgetpu"), ("b", "ours")):
        r = cli("ingest", tmp_path / name, f"input=dumps/{source}/input.bin", "--source", source)
        assert r.code == 0, r.err
    return tmp_path / "a", tmp_path / "b"


def test_html_and_junit_into_one_file_is_refused(runs, cli, tmp_path):
    out = tmp_path / "report"
    result = cli("compare", *runs, "--html", out, "--junit", out)
    assert_one_line_error(result, str(out), "--html", "--junit", "never one file")
    assert not out.exists()


def test_one_spelled_two_ways_is_one_file(runs, cli, tmp_path):
    os.chdir(tmp_path)
    try:
        result = cli("compare", *runs, "--html", "r.html", "--junit", "./sub/../r.html")
    finally:
        os.chdir(REPO)
    assert_one_line_error(result, "--html", "--junit")
    assert not (tmp_path / "r.html").exists()


def test_an_output_onto_what_another_writes_beside_itself_is_refused(cli, tmp_path):
    # the batch summary -o s.csv also writes s.parquet; --html s.parquet would be overwritten by it (or it by --html)
    farm = tmp_path / "farm"
    farm.mkdir()
    result = cli("compare", "--batch", farm, "-o", tmp_path / "s.csv", "--html", tmp_path / "s.parquet")
    assert_one_line_error(result, "s.parquet", "--html", "-o/--output (the summary's Parquet)")
    # and the other way round: the pair pages' folder is s_pairs beside --html s.html
    result = cli("compare", "--batch", farm, "-o", tmp_path / "s_pairs", "--html", tmp_path / "s.html")
    assert_one_line_error(result, "s_pairs", "pair pages")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["farm"]


def test_distinct_outputs_and_devices_pass(tmp_path):
    check_distinct([(tmp_path / "a.html", "file", "--html"), (tmp_path / "a.xml", "file", "--junit")])
    check_distinct([(os.devnull, "file", "--html"), (os.devnull, "file", "--junit")])  # written through, twice


def test_a_file_inside_a_directory_another_output_replaces_is_refused(tmp_path):
    with pytest.raises(InputError, match="inside .* which -o replaces"):
        check_distinct([(tmp_path / "run", "dir", "-o"), (tmp_path / "run" / "page.html", "file", "--html")])
    with pytest.raises(InputError, match="holds .*page.html"):
        check_distinct([(tmp_path / "run" / "page.html", "file", "--html"), (tmp_path / "run", "dir", "-o")])


_KILLED_WRITER = """
import os, signal, sys
from forensics.io.outputs import atomic_write
with atomic_write(sys.argv[1]) as fh:
    fh.write(b"half of it")
    fh.flush()
    os.kill(os.getpid(), signal.SIGKILL)  # as the OOM killer or `kill -9` would, mid-write
"""


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="POSIX signals")
def test_the_next_write_removes_what_a_killed_writer_left(tmp_path, cli):
    out = tmp_path / "anchors.bin"
    r = subprocess.run([sys.executable, "-c", _KILLED_WRITER, str(out)], cwd=REPO,
                       env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True)
    assert r.returncode == -signal.SIGKILL
    left = stale_temporaries(out)
    assert len(left) == 1 and os.path.basename(left[0]).startswith(".anchors.bin.") and not out.exists()
    # what is not ours stays: a user's file of a similar name, another output's temporary, a directory
    mine = [tmp_path / ".anchors.bin.backup.tmp", tmp_path / ".other.bin.abcd1234.tmp"]
    for path in mine:
        path.write_bytes(b"keep")
    (tmp_path / ".anchors.bin.dir12345.tmp").mkdir()
    result = cli("anchors-gen", "--input-size", "320x320", "-o", out)
    assert result.code == 0, result.err
    assert out.stat().st_size == 2034 * 16 and stale_temporaries(out) == []
    assert all(path.read_bytes() == b"keep" for path in mine) and (tmp_path / ".anchors.bin.dir12345.tmp").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [".anchors.bin.backup.tmp", ".anchors.bin.dir12345.tmp", ".other.bin.abcd1234.tmp", "anchors.bin"])


def test_a_write_that_fails_leaves_neither_its_temporary_nor_its_lock(tmp_path):
    out = tmp_path / "x.bin"
    with pytest.raises(RuntimeError):
        with atomic_write(out) as fh:
            fh.write(b"x")
            raise RuntimeError("a bug mid-write")
    write_bytes_atomic(tmp_path / "y.bin", b"y")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["y.bin"]
