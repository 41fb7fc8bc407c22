"""Outputs onto devices, FIFOs, the process's own streams and symbolic links: written through, never replaced."""

from __future__ import annotations

import os
import stat
import subprocess
import sys

import pytest

from forensics.io.outputs import atomic_directory, output_target, write_bytes_atomic
from tests.conftest import REPO, assert_one_line_error

posix = pytest.mark.skipif(sys.platform == "win32", reason="POSIX devices, FIFOs and links")


def _dump_text(tmp_path):
    text = tmp_path / "x.txt"
    text.write_text("00000000: 0102 0304 0506 0708  ........\n")
    return text


@posix
def test_dev_null_is_written_not_replaced(cli, tmp_path):
    assert cli("import", _dump_text(tmp_path), "-o", "/dev/null").code == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)  # as root a rename would have put a file there


@posix
def test_a_link_to_dev_null_stays_a_link(cli, tmp_path):
    link = tmp_path / "out.bin"
    link.symlink_to("/dev/null")
    assert cli("import", _dump_text(tmp_path), "-o", link).code == 0
    assert link.is_symlink() and os.readlink(link) == "/dev/null"


@posix
def test_a_link_to_a_file_keeps_the_link_and_replaces_the_file(cli, tmp_path):
    target = tmp_path / "real.bin"
    target.write_bytes(b"old contents")
    link = tmp_path / "out.bin"
    link.symlink_to(target)
    assert cli("import", _dump_text(tmp_path), "-o", link).code == 0
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_bytes() == bytes(range(1, 9))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.bin", "real.bin", "x.txt"]


@posix
def test_a_dangling_link_gets_its_file(tmp_path):
    link = tmp_path / "out.bin"
    link.symlink_to(tmp_path / "new.bin")
    write_bytes_atomic(link, b"abc")
    assert link.is_symlink() and (tmp_path / "new.bin").read_bytes() == b"abc"


@posix
def test_a_fifo_with_a_reader_receives_the_output(cli, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # the reader is there before the writer opens it
    try:
        assert cli("import", _dump_text(tmp_path), "-o", fifo).code == 0
        assert os.read(reader, 100) == bytes(range(1, 9))
    finally:
        os.close(reader)
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@posix
def test_a_fifo_nobody_reads_is_one_line_not_a_hang(cli, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    assert_one_line_error(cli("import", _dump_text(tmp_path), "-o", fifo), "FIFO that nobody reads")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


@posix
@pytest.mark.parametrize("path", ["/dev/stdout", "/dev/fd/1", "/proc/self/fd/1"])
def test_dev_stdout_is_the_process_stdout_and_stays_what_it_is(tmp_path, path):
    if not os.path.exists(path):
        pytest.skip(f"no {path} here")
    before = os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None
    out = tmp_path / "captured.bin"
    out.write_bytes(b"earlier\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")])}
    with open(out, "ab") as fh:  # `>> captured.bin`: appended to, through the process's descriptor
        proc = subprocess.run([sys.executable, "-m", "forensics", "import", str(_dump_text(tmp_path)), "-o", path],
                              stdout=fh, stderr=subprocess.PIPE, env=env)
    assert proc.returncode == 0, proc.stderr
    assert out.read_bytes().startswith(b"earlier\n" + bytes(range(1, 9)))
    assert (os.readlink("/dev/stdout") if os.path.islink("/dev/stdout") else None) == before


def test_the_streams_and_devices_are_written_directly():
    assert output_target("/dev/stdout") == ("/dev/stdout", True)
    assert output_target("/proc/self/fd/2") == ("/proc/self/fd/2", True)
    if os.path.exists("/dev/null"):
        assert output_target("/dev/null") == ("/dev/null", True)


@posix
def test_a_block_device_is_refused(tmp_path):
    from forensics.core.errors import InputError

    devices = [os.path.join("/dev", n) for n in sorted(os.listdir("/dev"))
               if stat.S_ISBLK(os.stat(os.path.join("/dev", n)).st_mode)] if os.path.isdir("/dev") else []
    if not devices:
        pytest.skip("no block device here")
    with pytest.raises(InputError, match="block device"):
        write_bytes_atomic(devices[0], b"x")


@posix
def test_a_directory_output_through_a_link_replaces_the_directory_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "postprocess.json").write_text("old")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with atomic_directory(tmp_path / "link", replace=True, marker="postprocess.json") as tmp:
        with open(os.path.join(tmp, "postprocess.json"), "w") as fh:
            fh.write("new")
    assert (tmp_path / "link").is_symlink()
    assert (tmp_path / "real" / "postprocess.json").read_text() == "new"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


@posix
def test_ingest_through_a_link_to_a_run_keeps_the_link(tmp_path):
    from forensics.runs.ingest import ingest
    from forensics.runs.run import load_run

    (tmp_path / "a.bin").write_bytes(b"aaaa")
    ingest(tmp_path / "real", "ours", [f"input={tmp_path / 'a.bin'}"])
    (tmp_path / "latest").symlink_to(tmp_path / "real")
    ingest(tmp_path / "latest", "ours", [f"tensor:b={tmp_path / 'a.bin'}"])
    assert (tmp_path / "latest").is_symlink()
    assert [e.label for e in load_run(tmp_path / "real").buffers] == ["input", "tensor:b"]


@posix
def test_one_device_as_input_and_output_is_not_refused(cli, tmp_path):
    """Writing to a device destroys no input: `import /dev/null -o /dev/null` answers like any empty input."""
    r = cli("import", "/dev/null", "-o", "/dev/null")
    assert "would overwrite" not in r.err
