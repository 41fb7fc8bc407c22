"""Every ```c block of README.md and docs/*.md compiles as written: user-mode blocks with the host compiler
(linked when they have a main), Windows-kernel blocks (<ntddk.h>, <wdm.h>) with mingw-w64's ddk headers for
i686 and x64 (a small stand-in ntddk.h where mingw-w64 is absent), Linux-module blocks with kbuild against the
installed kernel headers (skipped without them). The error-code tables list exactly the header's codes."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.c.test_c_header import CC, HEADER_DIR, STRICT, _compile
from tests.c.test_c_kernel import _kernel_build_dirs
from tests.conftest import REPO

STUBS = Path(__file__).with_name("stubs")
DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
MINGW = ["i686-w64-mingw32-gcc", "x86_64-w64-mingw32-gcc"]


def _c_blocks() -> list[tuple[str, str]]:
    """(doc:line, text) of every ```c block, in document order."""
    out = []
    for doc in DOCS:
        if not doc.is_file():
            continue
        text = doc.read_text(encoding="utf-8")
        for m in re.finditer(r"^```c[ \t]*\n(.*?)^```", text, re.M | re.S):
            out.append((f"{doc.relative_to(REPO)}:{text.count(chr(10), 0, m.start()) + 1}", m.group(1)))
    return out


BLOCKS = _c_blocks()


def _ddk_dir(compiler: str) -> Path | None:
    """The directory holding mingw-w64's ntddk.h for this compiler, from its include search list."""
    proc = subprocess.run([compiler, "-E", "-v", "-x", "c", "-"], input="", capture_output=True, text=True)
    for line in proc.stderr.splitlines():
        candidate = Path(line.strip()) / "ddk"
        if (candidate / "ntddk.h").is_file():
            return candidate
    return None


def _windows_kernel(block: str, tmp_path: Path) -> None:
    compilers = [(c, _ddk_dir(c)) for c in MINGW if shutil.which(c)]
    compilers = [(c, d) for c, d in compilers if d is not None]
    if not compilers:  # no mingw-w64: the host compiler and the stand-in header still check the C
        compilers = [(CC, STUBS)]
    # The WDK's headers use anonymous unions (C11) and other extensions: no -pedantic for them.
    flags = ["-std=c11", "-Wall", "-Wextra", "-Werror", "-O0", f"-I{HEADER_DIR}"]
    for compiler, include in compilers:
        _, error = _compile(compiler, [*flags, f"-I{include}", "-c", str(tmp_path / "block.c")],
                            tmp_path / "block.o")
        assert error is None, f"{Path(compiler).name}:\n{error}"


def _linux_module(block: str, tmp_path: Path) -> None:
    builds = _kernel_build_dirs()
    if not builds or shutil.which("make") is None:
        pytest.skip("no kernel headers (/lib/modules/*/build) or no make to build a Linux-module block")
    (tmp_path / "Makefile").write_text("obj-m := block.o\nccflags-y := -I$(FR_INCLUDE) -Werror\n")
    proc = subprocess.run(["make", "-C", str(builds[-1]), f"M={tmp_path}", f"FR_INCLUDE={HEADER_DIR}", "W=1",
                           "modules"], capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    assert proc.returncode == 0 and "warning" not in output.lower(), output


@pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) on PATH")
@pytest.mark.parametrize("where,block", BLOCKS, ids=[w for w, _ in BLOCKS])
def test_c_block_compiles_as_written(where, block, tmp_path):
    (tmp_path / "block.c").write_text(block)
    if re.search(r"#include <linux/", block):
        _linux_module(block, tmp_path)
    elif re.search(r"#include <(ntddk|wdm|ntifs)\.h>", block):
        _windows_kernel(block, tmp_path)
    else:
        link = re.search(r"\bint\s+main\s*\(", block) is not None
        _, error = _compile(CC, [*STRICT, *([] if link else ["-c"]), str(tmp_path / "block.c"), "-lm"],
                            tmp_path / "block")
        assert error is None, f"{where}:\n{block}\n{error}"


def test_the_docs_have_c_blocks():
    assert any(w.startswith("docs/kernel.md") for w, _ in BLOCKS)


def _defined_codes() -> dict[str, int]:
    header = (HEADER_DIR / "forensics_run.h").read_text(encoding="utf-8")
    return {name: int(value) for name, value in re.findall(r"^#define (FR_E_\w+)\s+(-\d+)", header, re.M)}


def _documented_codes(doc) -> dict[str, str]:
    return dict(re.findall(r"^\| `(FR_E_\w+)` \| (-\d+) \|", doc.read_text(encoding="utf-8"), re.M))


# Only the pages that have a table of codes (a skipped case per page without one would say nothing).
TABLES = [d for d in DOCS if d.is_file() and _documented_codes(d)]


def test_some_page_has_the_table_of_codes():
    assert TABLES, "no page documents the header's error codes"


@pytest.mark.parametrize("doc", TABLES, ids=lambda d: str(d.relative_to(REPO)))
def test_error_tables_are_the_headers(doc):
    """A page with a table of codes lists every code the header defines, with its value."""
    assert {k: int(v) for k, v in _documented_codes(doc).items()} == _defined_codes()
