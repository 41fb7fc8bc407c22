"""forensics.render.line: a report made of lines only is written to a pipe as plain text without rich, and that
text is exactly what rich writes for the same lines (a differential test against rich itself); on a terminal,
in colour, or for anything rich must lay out, rich draws it."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from forensics.render.console import PIPED_WIDTH, Output, make_console, print_all
from forensics.render.line import Line, Paste, verdict
from tests.conftest import REPO


def _through_rich(renderables, width=PIPED_WIDTH) -> str:
    out = io.StringIO()
    print_all(make_console(out, width=width, color_system=None), renderables)
    return out.getvalue()


def _through_output(renderables, **options) -> tuple[str, bool]:
    """What Output writes, and whether it took the plain path (no console was made)."""
    stream = io.StringIO()
    output = Output(stream, io.StringIO(), **options)
    output.print(*renderables)
    return stream.getvalue(), output._console is None


SAMPLES = [
    "MATCH | 8,136 bytes, CRC32 0xb509329c, 2,034 records of 4 bytes",
    "",
    "  indented by two",
    "x" * PIPED_WIDTH,            # exactly the width: rich does not wrap it
    "x" * (PIPED_WIDTH + 1),      # one more: rich wraps it (rich's path)
    "trailing spaces   ",         # rich's own rule for them (rich's path)
    "tab\there",                  # rich expands tabs (rich's path)
    "names a file \x1b[31mred\x1b[0m and \u202e",  # controls escaped on both paths
    "café, 2 × 3 ≥ 5",            # not ASCII: cell widths are rich's (rich's path)
    "漢字 are two cells wide",
    "a word " * 30,               # long prose: rich folds it at word boundaries
]


@pytest.mark.parametrize("text", SAMPLES)
def test_a_line_is_written_as_rich_writes_it(text):
    styled = Line().append(text[:3], style="bold red").append(text[3:])
    written, _ = _through_output([styled, Line("second line", style="yellow")])
    assert written == _through_rich([styled, Line("second line", style="yellow")])
    assert written.splitlines()[-1] == "second line"


@given(st.lists(st.text(max_size=140), min_size=1, max_size=4), st.integers(20, 200))
def test_any_lines_are_written_as_rich_writes_them(texts, width):
    lines = [Line(t) for t in texts]
    written, _ = _through_output(lines, width=width)
    assert written == _through_rich(lines, width=width)


def test_the_plain_path_is_taken_for_short_ascii_lines_and_left_for_the_rest():
    assert _through_output([verdict("MATCH", "same"), Line("note")])[1]
    assert not _through_output([Line("x" * (PIPED_WIDTH + 1))])[1]
    assert not _through_output([Line("café")])[1]
    assert not _through_output([Paste("$ forensics crc A")])[1]  # whole at any width: rich's soft wrap
    assert not _through_output([Line("ok"), "a string rich parses"])[1]


def test_colour_is_drawn_by_rich():
    written, plain = _through_output([verdict("DIFFER", "2 bytes")], color=True)
    assert not plain and "\x1b[" in written and "DIFFER" in written


def test_a_paste_is_whole_at_any_width():
    command = "forensics crc " + "x" * 60
    out = io.StringIO()
    print_all(make_console(out, width=40, color_system=None), [Paste(command)])
    assert out.getvalue() == command + "\n"


def test_equal_dumps_are_judged_and_written_without_importing_rich():
    code = ("import io, sys\n"
            "from forensics.cli import main\n"
            "out = io.StringIO()\n"
            "code = main(['diff', 'dumps/libedgetpu/convert_scores.bin', 'dumps/ours/convert_scores.bin'], "
            "stdout=out, stderr=io.StringIO())\n"
            "print(code, out.getvalue().split(' ')[0], sorted(m for m in sys.modules if m.split('.')[0] == 'rich'))\n")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True)
    assert done.stdout.split(" ", 2) == ["0", "MATCH", "[]\n"]
    # and a differing pair, which has tables, is drawn by rich
    done = subprocess.run([sys.executable, "-c", code.replace("dumps/ours", "dumps/broken")], cwd=REPO,
                          capture_output=True, text=True, check=True)
    assert done.stdout.startswith("1 DIFFER ['rich")
