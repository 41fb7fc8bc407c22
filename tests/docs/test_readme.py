"""Every `forensics ...` command in the README and in docs/*.md runs as written, in order, on a fresh clone's files,
and every `$ forensics ...` example prints what the page shows.

Generic on purpose: in a fenced block that is not code (json, python, c), a line starting with `forensics ` or
`$ forensics ` is a command (a trailing `\\` continues it on the next line; `# ...` is a comment). A `$` command
followed by lines shows its output: the lines up to the next command or the end of the block. A command that
names a placeholder, a word in CAPITALS such as `FACE_SSD_EDGETPU.tflite` or `runs/OURS_FROM_C` (a file the
repository cannot ship: a user's own model, image or capture), is skipped; every other command must exit with the
code the page says: the one of the verdict its shown output prints (`MATCH | ...`, `MISLINKED: ...`), else the one
a `# exit N` comment on the command gives, else 0 (never 2, bad input, or 3, a bug; a command whose optional
dependency is not installed is skipped, as its one-line message asks for `pip install 'npu-forensics[...]'`). Each page runs in its own copy of the repository's dumps/ (what a fresh clone
has), from the top, so a command may use what an earlier command of the same page wrote; `> FILE` sends its
output to a file as the shell would. Commands run in a subprocess (as a reader types them) with the pages' width
and no colour; only trailing spaces are normalised (editors strip them).
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import REPO

README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = [README, *sorted(DOCS.glob("*.md"))]
WIDTH = 110               # the width the pages' tables are shown at (a wide terminal)
README_MAX_LINES = 300    # the README says what forensics is, the quick start, the story, where to read next
CODE_BLOCKS = {"json", "python", "py", "c", "cpp", "c++", "toml", "yaml"}
PLACEHOLDER = re.compile(r"[A-Z]{2,}[A-Z0-9]*")   # a whole word of capitals (hex such as 0xCC is not a word)


@dataclass
class Example:
    page: str
    line: int
    command: str
    expected: str | None          # the output the page shows (for `$ forensics` lines followed by output)
    lines: list[str] = field(default_factory=list)
    out_start: int = 0            # the line the shown output starts at (tools/gen_docs_examples.py rewrites it)


def examples(text: str, page: str = "README.md") -> list[Example]:
    """Every `forensics` command inside a non-code ``` block, with the output shown after a `$` command."""
    found: list[Example] = []
    current: Example | None = None
    in_block, code, pending = False, False, ""

    def close():
        nonlocal current
        if current is not None:
            out = "\n".join(current.lines)
            current.expected = out if current.expected == "$" and out.strip() else None
            found.append(current)
            current = None

    for number, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            close()
            in_block = not in_block
            code = in_block and line.strip()[3:].strip().lower() in CODE_BLOCKS
            pending = ""
            continue
        if not in_block or code:
            continue
        if pending:                                   # a continuation of the command above
            current.command += " " + line.strip().rstrip("\\").strip()
            pending = line.rstrip().endswith("\\")
            current.out_start = number + 1
            continue
        shown = line.startswith("$ ")
        body = line[2:] if shown else line
        if body.startswith("forensics ") or (shown and current is not None):
            close()
            if body.startswith("forensics "):
                current = Example(page, number, body.rstrip().rstrip("\\").strip(), "$" if shown else None)
                pending = body.rstrip().endswith("\\")
                current.out_start = number + 1
        elif current is not None:
            current.lines.append(line)
    close()
    return found


_EXIT_NOTE = re.compile(r"#\s*exit ([0-9])\b")  # a comment that starts with it: `# exit 1: oversize`
# A verdict word at the start of a shown line, as `VERDICT | message` or `VERDICT: ...` (link).
_VERDICT_LINE = re.compile(r"^([A-Z][A-Z ]*[A-Z])(?: \||:)")


def expected_exit(example: Example) -> int:
    """The exit code the page says the command has: its `# exit N` comment, else the verdict its shown output
    prints, else 0. A page whose shown output holds verdicts of different exit codes must say which with `# exit N`."""
    from forensics.core.verdict import Verdict

    noted = _EXIT_NOTE.search(example.command)
    if noted:
        return int(noted.group(1))
    words = {v.value: v.exit_code for v in Verdict}
    codes = {words[m.group(1)] for line in (example.expected or "").splitlines()
             if (m := _VERDICT_LINE.match(line)) and m.group(1) in words}
    assert len(codes) <= 1, f"{example.page} line {example.line}: verdicts of exit codes {sorted(codes)}: add `# exit N`"
    return codes.pop() if codes else 0


def is_placeholder(command: str) -> bool:
    words = (part for arg in shlex.split(command, comments=True)[1:] for part in re.split(r"[^A-Za-z0-9]+", arg))
    return any(PLACEHOLDER.fullmatch(word) for word in words)


EXAMPLES = [example for page in PAGES
            for example in examples(page.read_text(encoding="utf-8"), str(page.relative_to(REPO)))]


def _normalise(text: str) -> str:
    return "\n".join(line.rstrip() for line in text.strip("\n").splitlines())


class _Sandbox:
    """One page's working directory: a copy of what a fresh clone ships, and how far its commands have run."""

    def __init__(self, root: Path):
        self.root = root
        shutil.copytree(REPO / "dumps", root / "dumps", ignore=shutil.ignore_patterns("__pycache__"))
        self.done = 0

    def run(self, command: str) -> subprocess.CompletedProcess:
        argv = shlex.split(command, comments=True)
        target = None
        if ">" in argv:
            at = argv.index(">")
            argv, target = argv[:at], argv[at + 1]
        env = dict(os.environ, PYTHONPATH=str(REPO), COLUMNS=str(WIDTH), PYTHONIOENCODING="utf-8")
        env.pop("FORCE_COLOR", None)
        result = subprocess.run([sys.executable, "-m", "forensics", *argv[1:], "--width", str(WIDTH), "--no-color"],
                                cwd=self.root, env=env, capture_output=True, text=True, encoding="utf-8",
                                timeout=600)
        if target is not None:
            (self.root / target).write_text(result.stdout, encoding="utf-8")
        return result


_SANDBOXES: dict[str, _Sandbox] = {}


@pytest.fixture(scope="session")
def sandboxes(tmp_path_factory):
    def get(page: str) -> _Sandbox:
        if page not in _SANDBOXES:
            _SANDBOXES[page] = _Sandbox(tmp_path_factory.mktemp(re.sub(r"\W", "_", page)))
        return _SANDBOXES[page]

    yield get
    _SANDBOXES.clear()


def test_the_pages_have_examples():
    assert len([e for e in EXAMPLES if e.page == "README.md" and e.expected]) >= 5, \
        "the README's story (`$ forensics` examples with their output) was not found"
    assert len({e.page for e in EXAMPLES}) >= 8, "docs/ pages with runnable examples were not found"


def test_the_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines: move reference text to a docs/ page"


def test_every_docs_page_is_linked_from_the_readme():
    readme = README.read_text(encoding="utf-8")
    missing = [page.name for page in sorted(DOCS.glob("*.md")) if f"(docs/{page.name}" not in readme]
    assert not missing, f"README.md does not link these docs/ pages: {missing}"


def _anchor(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as dashes."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_links_between_pages_point_at_headings_that_exist():
    for page in PAGES:
        text = page.read_text(encoding="utf-8")
        for target, anchor in re.findall(r"\]\(((?:[\w./-]+\.md)?)#([\w-]+)\)", text):
            linked = (page.parent / target) if target else page
            if not linked.exists():
                continue  # a page another change adds; the anchor is checked once it is here
            headings = {_anchor(h) for h in re.findall(r"^#+ (.*)$", linked.read_text(encoding="utf-8"), re.M)}
            assert anchor in headings, f"{page.name}: link to {target}#{anchor}: no such heading"


def test_parser_reads_blocks():
    text = ("```\n$ forensics crc a\nline 1\n$ forensics diff a b\nx\n```\nprose\n```sh\nforensics anchors a \\\n"
            "    --nonuniform   # a comment\n$ ls\nno\n```\n```json\nforensics in json\n```\n")
    found = [(e.line, e.command, e.expected) for e in examples(text)]
    assert found == [(2, "forensics crc a", "line 1"), (4, "forensics diff a b", "x"),
                     (9, "forensics anchors a --nonuniform   # a comment", None)]


def test_each_command_says_its_exit_code():
    shown = examples("```\n$ forensics diff a b\nDIFFER | 3 records\n$ forensics anchors a   # exit 0: listed\n"
                     "WARNING | head\nforensics csr a b   # exit 1: differences\nforensics crc a   # not exit 1\n"
                     "$ forensics link m --check d\nMISLINKED: executable 0\n```\n")
    assert [expected_exit(e) for e in shown] == [1, 0, 1, 0, 1]


def test_placeholders_are_words_in_capitals():
    assert is_placeholder("forensics graph FACE_SSD_EDGETPU.tflite")
    assert is_placeholder("forensics compare runs/OURS_FROM_C runs/ours")
    assert not is_placeholder("forensics coverage dumps/broken/convert_scores.bin --sentinel 0xCC")
    assert not is_placeholder("forensics verify x.log --pattern 'crc (?P<crc32>[0-9A-F]{8})'")
    assert not is_placeholder("forensics crc a.bin  # COMMENTS do not count")


@pytest.mark.parametrize("example", EXAMPLES, ids=[f"{e.page}:{e.line}" for e in EXAMPLES])
def test_example_runs_as_written(example, sandboxes):
    if is_placeholder(example.command):
        pytest.skip(f"names a placeholder (a file the repository cannot ship): {example.command}")
    sandbox = sandboxes(example.page)
    page = [e for e in EXAMPLES if e.page == example.page]
    index = page.index(example)
    for earlier in page[sandbox.done:index]:   # what the page ran before this one (when run alone: -k)
        if not is_placeholder(earlier.command):
            sandbox.run(earlier.command)
    sandbox.done = index + 1
    result = sandbox.run(example.command)
    where = f"{example.page} line {example.line}: `{example.command}`"
    if result.returncode == 2 and "pip install 'npu-forensics[" in result.stderr:  # a DependencyError
        pytest.skip(f"{where} needs an optional dependency: {result.stderr.strip()}")
    expected = expected_exit(example)
    assert result.returncode == expected, f"{where} exited {result.returncode}, the page says {expected}:\n" \
                                          f"{result.stderr}"
    if example.expected is not None:
        shown = _normalise(result.stdout + result.stderr)
        assert shown == _normalise(example.expected), (
            f"{where} printed (exit {result.returncode}):\n{shown}\n--- the page shows:\n"
            f"{_normalise(example.expected)}")
