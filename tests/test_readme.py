"""Every `$ forensics ...` example in the README runs as written from the repository root and prints what
the README shows.

Generic on purpose: any code block line starting with `$ forensics ` is an example; its expected output is
the block's following lines up to the next `$ ` line or the end of the block. Commands run in a subprocess
from the repository root (as a reader types them), with the README's width and no colour. Only trailing
spaces are normalised (editors strip them). An example whose files are neither in the repository nor made by
dumps/make_dumps.py fails here: rewrite it to use files the repository has.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
WIDTH = 110  # the width the README's tables are shown at (a wide terminal)


def examples(text: str) -> list[tuple[int, str, str]]:
    """(line number, command, expected output) for every `$ forensics` line inside a ``` block."""
    found = []
    in_block = False
    current = None
    for number, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if current is not None:
                found.append(current)
                current = None
            in_block = not in_block
            continue
        if not in_block:
            continue
        if line.startswith("$ "):
            if current is not None:
                found.append(current)
            current = (number, line[2:], []) if line.startswith("$ forensics ") else None
        elif current is not None:
            current[2].append(line)
    return [(n, cmd, "\n".join(out)) for n, cmd, out in found]


EXAMPLES = examples(README.read_text(encoding="utf-8"))


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


def test_the_readme_has_examples():
    assert len(EXAMPLES) >= 5, "the README's `$ forensics` examples were not found"


def test_parser_reads_blocks():
    text = "```\n$ forensics crc a\nline 1\n$ forensics diff a b\nx\n```\nprose\n```\n$ ls\nno\n```\n"
    assert examples(text) == [(2, "forensics crc a", "line 1"), (4, "forensics diff a b", "x")]


@pytest.mark.parametrize("line,command,expected", EXAMPLES, ids=[f"README:{n}" for n, _, _ in EXAMPLES])
def test_readme_example(line, command, expected):
    argv = shlex.split(command)
    assert argv[0] == "forensics"
    for arg in argv[1:]:
        if re.match(r"^[\w./-]+\.(bin|npy|tflite|json|log|txt|jpg|png)$", arg) and not arg.startswith("-"):
            source = (REPO / arg)
            assert source.exists() or "-o" in argv or "--draw" in argv or "--heatmap" in argv, \
                f"README line {line}: {arg} is not in the repository (use files the repository has)"
    env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS=str(WIDTH), PYTHONIOENCODING="utf-8")
    env.pop("FORCE_COLOR", None)
    result = subprocess.run([sys.executable, "-m", "forensics", *argv[1:], "--width", str(WIDTH), "--no-color"],
                            cwd=REPO, env=env, capture_output=True, text=True, encoding="utf-8", timeout=300)
    shown = _normalise(result.stdout + result.stderr)
    assert shown == _normalise(expected), (
        f"README line {line}: `{command}` printed (exit {result.returncode}):\n{shown}\n--- the README shows:\n"
        f"{_normalise(expected)}")
