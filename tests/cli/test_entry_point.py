"""The command's process ends without the interpreter's teardown (forensics.cli._exit_quickly), and loses nothing
by it: every line reaches stdout and stderr, the exit code is main()'s, exit functions still run, and a program
that still has a thread of its own running takes the ordinary exit."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

from forensics.cli import _exit_quickly
from tests.conftest import REPO

ENV = dict(os.environ, PYTHONPATH=str(REPO), PYTHONIOENCODING="utf-8")


def _python(code: str, *args) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], cwd=REPO, env=ENV, capture_output=True,
                          text=True, timeout=120)


def test_every_line_and_the_exit_code_survive_the_quick_exit(tmp_path):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(bytes(range(256)) * 64)
    b.write_bytes(bytes(range(256)) * 63 + bytes(255 - i for i in range(256)))
    r = subprocess.run([sys.executable, "-m", "forensics", "diff", a, b, "--all", "--no-color"], cwd=REPO, env=ENV,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 1, r.stderr
    # --all lists all 64 differing records of the last 256 bytes: the last of them is the table's last row
    assert r.stdout.count("\n") > 64
    assert r.stdout.rstrip().splitlines()[-1].split()[:2] == ["4095", "0x3ffc"]  # the last record, last row
    missing = subprocess.run([sys.executable, "-m", "forensics", "crc", tmp_path / "none.bin"], cwd=REPO, env=ENV,
                             capture_output=True, text=True, timeout=120)
    assert missing.returncode == 2 and "none.bin" in missing.stderr and missing.stdout == ""


def test_exit_functions_still_run_and_print(tmp_path):
    dump = tmp_path / "d.bin"
    dump.write_bytes(b"\x01\x02\x03\x04" * 100)
    code = ("import atexit, sys\n"
            "atexit.register(lambda: print('exit function ran'))\n"
            "sys.argv = ['forensics', 'crc', sys.argv[1]]\n"
            "from forensics.cli import run\n"
            "run()\n"
            "print('not reached')\n")
    r = _python(code, dump)
    assert r.returncode == 0, r.stderr
    assert "0x" in r.stdout and r.stdout.rstrip().endswith("exit function ran")
    assert "not reached" not in r.stdout


def test_a_running_thread_of_the_program_keeps_the_ordinary_exit():
    release = threading.Event()
    worker = threading.Thread(target=release.wait, daemon=False)
    worker.start()
    try:
        assert _exit_quickly(0) is None  # returned: this process is still here
    finally:
        release.set()
        worker.join()


def test_an_unflushable_stdout_keeps_the_ordinary_exit():
    code = ("import sys\n"
            "from forensics.cli import _exit_quickly\n"
            "class Closed:\n"
            "    def write(self, text): return len(text)\n"
            "    def flush(self): raise OSError('pipe closed')\n"
            "sys.stdout = Closed()\n"
            "_exit_quickly(0)\n"
            "sys.stdout = sys.__stdout__\n"
            "print('returned')\n")
    r = _python(code)
    assert r.returncode == 0 and r.stdout.strip() == "returned"


def test_version_is_the_installed_distributions():
    # from the package metadata when npu-forensics is installed; from the package itself when it is not (a
    # checkout on PYTHONPATH)
    from importlib import metadata

    from forensics import __version__
    from forensics.cli import DISTRIBUTION, version

    r = subprocess.run([sys.executable, "-m", "forensics", "--version"], cwd=REPO, env=ENV, capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == version()
    try:
        assert version() == f"forensics {metadata.version(DISTRIBUTION)} ({DISTRIBUTION})"
    except metadata.PackageNotFoundError:
        assert version().startswith(f"forensics {__version__} (not installed as {DISTRIBUTION}")
