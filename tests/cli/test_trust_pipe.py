"""A closed stdout (`forensics crc a a | head -1`) ends the process as `cat` does: by SIGPIPE, no traceback,
never the 0 / 1 of a result the reader did not get."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import numpy as np
import pytest

from forensics.cli import EXIT_BROKEN_PIPE

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGPIPE"), reason="no SIGPIPE on this platform")


def _run_into_closed_pipe(args, cwd):
    """Run `python -m forensics ARGS` with stdout a pipe whose reader has already left."""
    read_end, write_end = os.pipe()
    os.close(read_end)  # the reader is gone before the first byte: every write meets EPIPE
    try:
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        proc = subprocess.run([sys.executable, "-m", "forensics", *args], stdout=write_end,
                              stderr=subprocess.PIPE, cwd=cwd, env=env, timeout=120)
    finally:
        os.close(write_end)
    return proc


@pytest.fixture
def pair(tmp_path):
    rng = np.random.default_rng(7)
    data = rng.integers(0, 256, 50_000, dtype=np.uint8).tobytes()
    (tmp_path / "a.bin").write_bytes(data)
    (tmp_path / "a2.bin").write_bytes(data)
    changed = bytearray(data)
    changed[1234] ^= 0xFF
    (tmp_path / "b.bin").write_bytes(bytes(changed))
    return tmp_path


@pytest.mark.parametrize("args", [
    ["crc", "a.bin", "a2.bin"],              # equal inputs: never exit 1
    ["crc", "a.bin", "a2.bin", "--json"],    # JSON is buffered: the pipe is met at the last flush
    ["diff", "a.bin", "a2.bin"],
    ["diff", "a.bin", "b.bin"],              # differing inputs: not 1 either, the reader saw no verdict
    ["hexdump", "a.bin", "b.bin"],
])
def test_closed_stdout_ends_by_sigpipe_without_traceback(pair, args):
    proc = _run_into_closed_pipe(args, pair)
    assert proc.returncode == -signal.SIGPIPE, (proc.returncode, proc.stderr)
    assert b"Traceback" not in proc.stderr and b"Exception ignored" not in proc.stderr
    assert proc.stderr == b""


def test_main_in_process_says_closed_pipe(pair, monkeypatch):
    """main() on a stream whose writes raise BrokenPipeError returns the pipe status, not a verdict."""
    from forensics.cli import main

    class Closed:
        encoding = "utf-8"

        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

        def flush(self):
            raise BrokenPipeError(32, "Broken pipe")

        def isatty(self):
            return False

    monkeypatch.chdir(pair)
    import io

    err = io.StringIO()
    assert main(["crc", "a.bin", "a2.bin", "--json"], stdout=Closed(), stderr=err) == EXIT_BROKEN_PIPE
    assert err.getvalue() == ""
