"""Hostile inputs, second sweep (issue 28, the reading side): special files, terminal escapes, numbers and sizes
from flags and files, sparse files, text dumps, npz archives, deep JSON, large logs.

Each class ends in a correct answer or one line on stderr and exit 2, with memory bounded (an address-space
limit on a subprocess, or a structural bound checked directly) and the inputs unchanged. Nothing here measures
time; `timeout=` in `guarded` is a hang guard only.
"""

from __future__ import annotations

import hashlib
import os
import zipfile

import numpy as np
import pytest

from tests.conftest import assert_one_line_error
from tests.test_hostile_inputs import guarded

ESC_TITLE = "\x1b]0;PWNED\x07"
ESC_CLEAR = "\x1b[2J"


def digest(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


def no_controls(text: str) -> bool:
    """Nothing a terminal would act on: no ESC, BEL, CR or C1 control."""
    return not any(c in text for c in "\x1b\x07\r\x9b")


# --- terminal escape injection ---------------------------------------------------------------------------

def test_escape_controls_spells_every_control_and_is_idempotent():
    from forensics.render.console import escape_controls

    text = f"a{ESC_TITLE}b{ESC_CLEAR}c\x9bd\u202ee\tf"
    once = escape_controls(text)
    assert no_controls(once) and "\u202e" not in once
    assert once == "a\\x1b]0;PWNED\\x07b\\x1b[2Jc\\x9bd\\u202ee\tf"
    assert escape_controls(once) == once
    assert escape_controls("plain name.bin") == "plain name.bin"


@pytest.mark.parametrize("argv", [["crc", "{f}"], ["crc", "{f}", "{f}"], ["hexdump", "{f}"], ["fingerprint", "{f}"],
                                  ["coverage", "{f}", "--sentinel", "cc"], ["anchors", "{f}"], ["diff", "{f}", "{f}"],
                                  ["diff", "{f}", "{f}.missing"]])
def test_a_file_name_with_escapes_never_reaches_the_terminal(tmp_path, monkeypatch, cli, argv):
    monkeypatch.chdir(tmp_path)  # a short relative name: the table shows it whole
    name = f"a{ESC_TITLE}{ESC_CLEAR}b.bin"
    open(name, "wb").write(bytes(range(256)) * 4)
    before = digest(name)
    r = cli(*[a.replace("{f}", name) for a in argv])
    assert r.code in (0, 1, 2), r
    assert no_controls(r.out) and no_controls(r.err), (r.out, r.err)
    if argv[0] in ("crc", "hexdump"):  # the name is shown, its controls spelled out
        assert "\\x1b]0;PWNED" in r.out
    assert digest(name) == before


def test_manifest_strings_with_escapes_are_escaped_on_every_run_command(tmp_path, cli):
    a, b = tmp_path / "a.bin", tmp_path / "b.bin"
    a.write_bytes(bytes(range(256)) * 4)
    b.write_bytes(bytes(range(255, -1, -1)) * 4)
    tensor = f"raw:t{ESC_CLEAR}x"
    assert cli("ingest", tmp_path / "R1", "--source", f"drv{ESC_TITLE}", f"{tensor}={a}").code == 0
    assert cli("ingest", tmp_path / "R2", "--source", "d", f"{tensor}={b}").code == 0
    for argv in (["compare", tmp_path / "R1", tmp_path / "R2"], ["compare", tmp_path / "R1", tmp_path / "R1"]):
        r = cli(*argv)
        assert r.code in (0, 1), r
        assert no_controls(r.out) and no_controls(r.err), r.out
        assert "t\\x1b[2Jx" in r.out


def test_error_lines_are_escaped_and_bounded(cli):
    r = cli("diff", "a.bin", "b.bin", "--atol", "1" * 5000)
    assert_one_line_error(r)
    assert len(r.err) < 1200 and "characters cut" in r.err
    r = cli("crc", f"missing{ESC_CLEAR}.bin")
    assert_one_line_error(r, "missing\\x1b[2J.bin")
    r = cli("crc", "--no-such-flag" + ESC_TITLE)
    assert_one_line_error(r)
    assert no_controls(r.err)
