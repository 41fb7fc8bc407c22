"""c/forensics_run.h inside kernels and at the C/Python border: the kernel part needs no compiler helper at any
optimisation level (32 and 64 bits), builds as a Linux module (kbuild) and links as an i686 / x64 WDM driver
(mingw's ddk); streamed fingerprints equal one-shot ones and `forensics verify`; fr_link_u32 follows the
bitstream rule; the dtypes and the source rule are the run reader's; errno survives the cleanup."""

from __future__ import annotations

import itertools
import json
import random
import re
import shutil
import subprocess
import sys
import unicodedata
import zlib
from pathlib import Path

import numpy as np
import pytest

from forensics.io.dump import RUN_DTYPES, is_numeric_dtype
from forensics.core.errors import FormatError
from forensics.runs.run import load_run
from tests.c.test_c_header import (CC, HEADER_DIR, STRICT, _check_fingerprint, _compile, _program, _run,
                                   builds)  # noqa: F401  (builds: the session fixture the tests use)
from tests.conftest import REPO, run_cli

HEADER = HEADER_DIR / "forensics_run.h"
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) on PATH")

# What a driver cannot link: libgcc's 64-bit division on 32-bit targets, and the C library's memory functions
# a compiler emits for copy and fill loops (a Windows driver has no C runtime; MSVC would call _aulldiv).
HELPERS = {"__udivdi3", "__umoddi3", "__udivmoddi4", "__divdi3", "__moddi3", "__divmoddi4", "__muldi3",
           "__ashldi3", "__lshrdi3", "__ashrdi3", "__popcountsi2", "__popcountdi2", "__clzdi2", "__ctzdi2",
           "__bswapsi2", "__bswapdi2", "memset", "memcpy", "memmove", "memcmp", "strlen", "_aulldiv",
           "_aullrem", "_allmul", "_aullshr", "_allshl"}
KERNEL_TU = "#define FORENSICS_RUN_KERNEL_ONLY\n#define FORENSICS_RUN_IMPLEMENTATION\n#include \"forensics_run.h\"\n"


def _undefined(obj: Path) -> list[str]:
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm to list the object's undefined symbols")
    return subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, check=True).stdout.split()[1::2]


def _m32_works(tmp_path: Path) -> bool:
    probe = tmp_path / "probe.c"
    probe.write_text("#include <stdint.h>\nuint64_t f(uint64_t a, uint64_t b) { return a / b; }\n")
    return subprocess.run([CC, "-m32", "-c", str(probe), "-o", str(tmp_path / "probe.o")],
                          capture_output=True).returncode == 0


# --- no compiler helpers -----------------------------------------------------------------------------------

@pytest.mark.parametrize("bits", ["-m64", "-m32"])
@pytest.mark.parametrize("opt", ["-O0", "-Os", "-O2", "-O3"])
@pytest.mark.parametrize("hosted", [True, False], ids=["hosted", "freestanding"])
def test_kernel_part_needs_no_compiler_helper(tmp_path, bits, opt, hosted):
    """The kernel part's object has no undefined symbol at all, so neither a 32-bit helper (__udivdi3 at -O0,
    __udivmoddi4 at -Os were the old decimal conversion's) nor a memset / memcpy the optimiser made up."""
    if bits == "-m32" and not _m32_works(tmp_path):
        pytest.skip("this compiler cannot build -m32 objects (Debian: gcc-multilib)")
    (tmp_path / "kernel.c").write_text(KERNEL_TU)
    flags = [bits, opt, "-fno-pic", "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", f"-I{HEADER_DIR}"]
    obj, error = _compile(CC, [*flags, *([] if hosted else ["-ffreestanding"]), "-c", str(tmp_path / "kernel.c")],
                          tmp_path / "kernel.o")
    assert error is None, error
    assert _undefined(obj) == []


def test_the_helper_check_would_see_a_64_bit_division(tmp_path):
    """The check above can fail: a 64-bit division at -m32 -O0 does call a helper."""
    if not _m32_works(tmp_path):
        pytest.skip("this compiler cannot build -m32 objects (Debian: gcc-multilib)")
    (tmp_path / "div.c").write_text("#include <stdint.h>\nuint64_t f(uint64_t a, uint64_t b) { return a / b; }\n")
    obj, error = _compile(CC, ["-m32", "-O0", "-fno-pic", "-c", str(tmp_path / "div.c")], tmp_path / "div.o")
    assert error is None, error
    assert set(_undefined(obj)) & HELPERS


# --- a Linux kernel module, built with kbuild --------------------------------------------------------------

MODULE_C = r"""// SPDX-License-Identifier: GPL-2.0
/* frtest: the forensics header inside a Linux module (built, never loaded, by tests/c). */
#include <linux/module.h>
#include <linux/kernel.h>
#define FORENSICS_RUN_IMPLEMENTATION
#include "forensics_run.h"

static u8 frtest_data[4096];

static int __init frtest_init(void)
{
    char line[FR_FP_LINE_MAX + 1];
    fr_fp fp;
    size_t off;
    fr_fp_begin(&fp, sizeof frtest_data);
    for (off = 0; off < sizeof frtest_data; off += 1000)
        fr_fp_update(&fp, frtest_data + off, min_t(size_t, 1000, sizeof frtest_data - off));
    if (fr_fp_final(&fp, line, sizeof line, "frtest") > 0)
        pr_info("%s\n", line);
    if (fr_fingerprint_line(line, sizeof line, "whole", frtest_data, sizeof frtest_data) > 0)
        pr_info("%s\n", line);
    return fr_link_u32(frtest_data, sizeof frtest_data, 13, 0xdeadbeefu) == FR_OK ? 0 : -EINVAL;
}

static void __exit frtest_exit(void)
{
}

module_init(frtest_init);
module_exit(frtest_exit);
MODULE_LICENSE("GPL");
"""


def _kernel_build_dirs() -> list[Path]:
    return sorted(p for p in Path("/lib/modules").glob("*/build") if (p / "Makefile").is_file())


@pytest.mark.skipif(not _kernel_build_dirs() or shutil.which("make") is None,
                    reason="no kernel headers (/lib/modules/*/build; Debian: linux-headers-amd64) or no make")
def test_linux_module_builds_warning_free_with_kbuild(tmp_path):
    build = _kernel_build_dirs()[-1]
    (tmp_path / "frtest.c").write_text(MODULE_C)
    (tmp_path / "Makefile").write_text("obj-m := frtest.o\nccflags-y := -I$(FR_INCLUDE) -Werror\n")
    proc = subprocess.run(["make", "-C", str(build), f"M={tmp_path}", f"FR_INCLUDE={HEADER_DIR}", "W=1", "modules"],
                          capture_output=True, text=True, timeout=600)
    output = proc.stdout + proc.stderr
    broken_tree = re.search(r"not found|No such file or directory.*(gcc|scripts)|cannot execute", output)
    if proc.returncode != 0 and broken_tree and "forensics_run.h" not in output:
        pytest.skip(f"the kernel build tree at {build} cannot build modules here:\n{output[-800:]}")
    assert proc.returncode == 0, output
    assert "warning" not in output.lower(), output
    assert "undefined!" not in output, output  # modpost: a symbol the kernel does not export
    assert (tmp_path / "frtest.ko").is_file()
    assert not set(_undefined(tmp_path / "frtest.o")) & HELPERS


# --- a WDM driver, linked with mingw-w64's ddk headers and ntoskrnl only -----------------------------------

DRIVER_C = r"""#include <ddk/wdm.h>
#define FORENSICS_RUN_IMPLEMENTATION
#include "forensics_run.h"

static UCHAR frtest_data[4096];

NTSTATUS NTAPI DriverEntry(PDRIVER_OBJECT driver, PUNICODE_STRING registry);

NTSTATUS NTAPI DriverEntry(PDRIVER_OBJECT driver, PUNICODE_STRING registry)
{
    char line[FR_FP_LINE_MAX + 1];
    fr_fp fp;
    (void)driver;
    (void)registry;
    fr_fp_begin(&fp, sizeof frtest_data);
    fr_fp_update(&fp, frtest_data, 1000);
    fr_fp_update(&fp, frtest_data + 1000, sizeof frtest_data - 1000);
    if (fr_fp_final(&fp, line, sizeof line, "frtest") > 0)
        DbgPrint("%s\n", line);
    if (fr_fingerprint_line(line, sizeof line, "whole", frtest_data, sizeof frtest_data) > 0)
        DbgPrint("%s\n", line);
    return fr_link_u32(frtest_data, sizeof frtest_data, 13, 0xdeadbeefu) == FR_OK ? STATUS_SUCCESS
                                                                                : STATUS_UNSUCCESSFUL;
}
"""
MINGW = {"i686": ("i686-w64-mingw32-gcc", "_DriverEntry@8"), "x86_64": ("x86_64-w64-mingw32-gcc", "DriverEntry")}


@pytest.mark.parametrize("arch", ["i686", "x86_64"])
@pytest.mark.parametrize("opt", ["-O0", "-Os", "-O2", "-O3"])
def test_wdm_driver_links_against_ntoskrnl_alone(tmp_path, arch, opt):
    """-nostdlib: no libgcc, no C runtime. A helper call (__udivmoddi4 at -Os on i686 before) or a memset
    would be an undefined reference; the image imports ntoskrnl.exe and nothing else."""
    compiler, entry = MINGW[arch]
    if shutil.which(compiler) is None:
        pytest.skip(f"no {compiler} (Debian: gcc-mingw-w64-{arch.replace('_', '-')})")
    (tmp_path / "drv.c").write_text(DRIVER_C)
    probe = subprocess.run([compiler, "-E", "-x", "c", "-"], input="#include <ddk/wdm.h>\n", capture_output=True,
                           text=True)
    if probe.returncode != 0:
        pytest.skip(f"{compiler} has no ddk headers (mingw-w64's ddk/wdm.h)")
    sys_file, error = _compile(compiler, [opt, "-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic",
                                          f"-I{HEADER_DIR}", "-nostdlib", "-shared", "-Wl,--subsystem,native",
                                          f"-Wl,--entry,{entry}", str(tmp_path / "drv.c"), "-lntoskrnl"],
                               tmp_path / "frtest.sys")
    assert error is None, error
    objdump = shutil.which(f"{arch}-w64-mingw32-objdump") or shutil.which("objdump")
    if objdump is not None:
        imports = subprocess.run([objdump, "-p", str(sys_file)], capture_output=True, text=True).stdout
        assert re.findall(r"DLL Name: (\S+)", imports) == ["ntoskrnl.exe"], imports


# --- streaming fingerprints --------------------------------------------------------------------------------

def _compositions(n: int):
    """Every way to cut n bytes into chunks in order (2^(n-1) of them; one for n = 0)."""
    if n == 0:
        yield []
        return
    for cuts in itertools.product((False, True), repeat=n - 1):
        chunks, last = [], 0
        for i, cut in enumerate(cuts, 1):
            if cut:
                chunks.append(i - last)
                last = i
        chunks.append(n - last)
        yield chunks


def _stream(builds, build: str, tmp_path: Path, blob: bytes, cases) -> list[tuple[str, str]]:
    """cases: (tag, offset, length, chunks); the (streamed, one-shot) line pairs fr_check prints."""
    program = _program(builds, build)
    (tmp_path / "blob").write_bytes(blob)
    (tmp_path / "chunks").write_text("".join(f"{t} {o} {n}{''.join(f' {c}' for c in cs)}\n" for t, o, n, cs in cases))
    proc = _run([program, "stream", tmp_path / "blob", tmp_path / "chunks"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 * len(cases)
    return list(zip(lines[::2], lines[1::2]))


@pytest.mark.parametrize("build", ["c99", "c99-asan-ubsan", "c99-m32"])
def test_every_chunking_of_small_buffers_gives_the_one_shot_line(builds, build, tmp_path):
    """All 2^(n-1) chunkings of every size up to 11 bytes, at every start offset mod 8 (the xor-fold's words and
    the HEAD/MID/TAIL windows straddle chunks in every way)."""
    rng = random.Random(26)
    blob = rng.randbytes(64)
    cases = []
    for n in range(12):
        for chunks in _compositions(n):
            offset = len(cases) % 8
            cases.append((f"n{n}.{len(cases)}", offset, n, chunks[:-1]))  # the last chunk: the rest
    pairs = _stream(builds, build, tmp_path, blob, cases)
    for (tag, offset, n, _), (streamed, whole) in zip(cases, pairs):
        assert streamed == whole
        _check_fingerprint(streamed, blob[offset:offset + n], tag)


@pytest.mark.parametrize("build", ["c99", "c99-asan-ubsan", "c99-m32"])
def test_random_chunkings_of_random_buffers_match_and_verify(builds, build, tmp_path):
    """Random buffers (sizes around 8-byte words, the 16-byte windows and the 64 KiB four-way CRC path) cut
    at random, including empty chunks: the streamed line is the one-shot line, zlib's and numpy's values, and
    `forensics verify` says MATCH for every buffer."""
    rng = random.Random(2026)
    blob = rng.randbytes(300_000)
    sizes = [0, 1, 7, 8, 9, 15, 16, 17, 31, 32, 33, 34, 63, 65, 4095, 4096, 4097, 65535, 65536, 65537, 65543,
             131_072 + 5, 262_144 + 3] + [rng.randrange(0, 290_000) for _ in range(20)]
    cases = []
    for i, n in enumerate(sizes):
        offset = rng.randrange(0, len(blob) - n + 1)
        chunks, left = [], n
        while left and rng.random() < 0.9:
            c = min(left, rng.choice([0, 1, 3, 7, 8, 9, 4096, rng.randrange(0, left + 1)]))
            chunks.append(c)
            left -= c
        cases.append((f"buf{i}", offset, n, chunks))
    pairs = _stream(builds, build, tmp_path, blob, cases)
    buffers = []
    for (tag, offset, n, _), (streamed, whole) in zip(cases, pairs):
        data = blob[offset:offset + n]
        assert streamed == whole
        _check_fingerprint(streamed, data, tag)
        (tmp_path / f"{tag}.bin").write_bytes(data)
        buffers += ["--buffer", f"{tag}={tmp_path / f'{tag}.bin'}"]
    from forensics.cli import COMMAND_HOMES

    if "verify" not in COMMAND_HOMES:
        pytest.skip("`forensics verify` is not registered in this tree")
    log = tmp_path / "driver.log"
    log.write_text("".join(f"{i:08d}\t0.{i:06d}\t{s}\n" for i, (s, _) in enumerate(pairs)))  # as DbgView saves
    result = run_cli("verify", log, *buffers, "--json")
    assert result.code == 0, result.out + result.err
    checks = json.loads(result.out)["checks"]
    assert len(checks) == 6 * len(cases) and all(c["match"] for c in checks)


def test_line_is_capped_at_511_bytes(builds, tmp_path):
    """The longest tag on a buffer with 16-byte peeks: one DbgPrint call (512 bytes with the newline)."""
    pairs = _stream(builds, "c99", tmp_path, bytes(range(256)) * 512,
                    [("t" * 238, 0, 131_072, [65_536])])
    line = pairs[0][0]
    assert len(line) <= 511
    _check_fingerprint(line, (bytes(range(256)) * 512)[:131_072], "t" * 238)


# --- fr_link_u32: the Edge TPU bitstream rule --------------------------------------------------------------

def _link_reference(bits: bytes, offset_bit: int, value: int) -> bytes:
    """Bit k of value to bit (offset_bit + k) % 8 of byte (offset_bit + k) // 8, one bit at a time."""
    out = bytearray(bits)
    for k in range(32):
        pos = offset_bit + k
        if (value >> k) & 1:
            out[pos // 8] |= 1 << (pos % 8)
        else:
            out[pos // 8] &= ~(1 << (pos % 8)) & 0xFF
    return bytes(out)


@pytest.mark.parametrize("build", ["c99", "c++17", "c99-asan-ubsan", "c99-m32"])
def test_link_u32_equals_a_bit_loop(builds, build, tmp_path):
    program = _program(builds, build)
    rng = random.Random(23)
    cases = []
    for i in range(600):
        size = rng.choice([4, 5, 6, 8, 9, 16, 33, rng.randrange(4, 200)])
        background = rng.choice([bytes(size), b"\xff" * size, rng.randbytes(size)])
        value = rng.choice([0, 0xFFFFFFFF, 1, 0x80000000, rng.getrandbits(32)])
        offset = rng.choice([0, 1, 7, 8, size * 8 - 32, size * 8 - 33 if size > 4 else 0,
                             rng.randrange(0, size * 8 - 31)])
        cases.append((background, offset, value))
    # Out of range: nothing written, FR_E_RANGE.
    cases += [(b"\x5a" * 8, 33, 1), (b"\x5a" * 8, 64, 7), (b"\x5a" * 3, 0, 7), (b"\x5a" * 8, 2**64 - 1, 7)]
    (tmp_path / "cases").write_text("".join(f"{b.hex()} {o} {v}\n" for b, o, v in cases))
    proc = _run([program, "link", tmp_path / "cases"])
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert len(rows) == len(cases)
    for (background, offset, value), row in zip(cases, rows):
        code, after = int(row[0]), bytes.fromhex(row[1] if len(row) > 1 else "")
        if offset + 32 <= 8 * len(background):
            assert code == 0 and after == _link_reference(background, offset, value), (background.hex(), offset, value)
        else:
            assert code == -15 and after == background  # FR_E_RANGE


# --- parity with the run reader ----------------------------------------------------------------------------

def _header_dtypes() -> tuple[str, ...]:
    text = HEADER.read_text(encoding="utf-8")
    m = re.search(r"#define FR_DTYPES ((?:[^\n]*\\\n)*[^\n]*)", text)
    assert m, "FR_DTYPES is not defined in the header"
    return tuple(re.findall(r'"([^"]*)"', m.group(1)))


def test_header_dtype_list_is_the_readers():
    assert _header_dtypes() == RUN_DTYPES
    # The reader's list is numpy's canonical name of every numeric fixed-width type a dump holds.
    assert all(np.dtype(name).name == name and is_numeric_dtype(name) for name in RUN_DTYPES)


def test_header_stage_list_is_the_readers():
    # A stage Python accepts and C refuses (or the other way round) splits the run format in two: the link
    # work added `instructions`, and C must write it in the reader's place.
    from forensics.runs.run import STAGES

    text = HEADER.read_text(encoding="utf-8")
    m = re.search(r"fr__stages\[FR__NSTAGES\] = \{([^}]*)\}", text)
    assert m, "fr__stages is not defined in the header"
    assert tuple(re.findall(r'"([^"]*)"', m.group(1))) == STAGES
    assert re.search(r"#define FR__NSTAGES (\d+)", text).group(1) == str(len(STAGES))


def _reader_accepts_dtype(tmp_path: Path, name: str) -> bool:
    run = tmp_path / "probe_run"
    run.mkdir(exist_ok=True)
    (run / "raw").mkdir(exist_ok=True)
    (run / "raw" / "t.bin").write_bytes(b"\0" * 4)
    manifest = {"format": "forensics-run", "version": 1, "source": "ours", "buffers": [
        {"stage": "raw", "tensor": "t", "file": "raw/t.bin", "size": 4, "crc32": f"0x{zlib.crc32(bytes(4)):08x}",
         "dtype": name}]}
    (run / "manifest.json").write_text(json.dumps(manifest))
    try:
        load_run(run)
    except FormatError:
        return False
    return True


DTYPE_CANDIDATES = [*RUN_DTYPES, "uint8_t", "UINT8", "Uint8", "u8", "u1", "i1", "<f4", ">f4", "=f4", "f4", "f2",
                    "float", "int", "double", "half", "single", "b", "?", "B", "h", "bfloat16", "object", "O",
                    "str", "complex64", "float128", "longdouble", "int4", "V4", "S4", "uint8 ", " uint8",
                    "uint8\n", "uint8\x00x", "ui\u00e9", "", "float32,float32", "(2,)u1"]


@pytest.mark.parametrize("build", ["c99", "c99-asan-ubsan"])
def test_c_refuses_exactly_the_dtypes_the_reader_refuses(builds, build, tmp_path):
    program = _program(builds, build)
    # NUL cannot reach C in a string: a name with one is cut there, so compare only what C can be given.
    names = [n for n in DTYPE_CANDIDATES + [t for t in np.sctypeDict if isinstance(t, str)] if "\x00" not in n]
    (tmp_path / "names").write_text("".join(n.encode().hex() + "\n" for n in names))
    proc = _run([program, "dtype", tmp_path, tmp_path / "names"])
    assert proc.returncode == 0, proc.stderr
    rows = (line.split() for line in proc.stdout.splitlines())
    codes = {bytes.fromhex(h if h != "-" else "").decode(): int(c) for h, c in rows}
    assert len(codes) == len(set(names))
    for name in set(names):
        python = _reader_accepts_dtype(tmp_path, name)
        assert (codes[name] == 0) == python, (name, codes[name], python)
        assert codes[name] in (0, -13), (name, codes[name])  # FR_E_DTYPE: one clear error
    assert {n for n, c in codes.items() if c == 0} == set(RUN_DTYPES)


def _whitespace_candidates() -> list[str]:
    space = [chr(c) for c in range(0x110000) if chr(c).isspace()]
    near = [chr(c) for c in (0x08, 0x0e, 0x1b, 0x21, 0x7f, 0x84, 0x86, 0x9f, 0xa1, 0x167f, 0x1681, 0x180e, 0x1fff,
                             0x200b, 0x200c, 0x2027, 0x202a, 0x202e, 0x2030, 0x205e, 0x2060, 0x2fff, 0x3001, 0xfeff)]
    out = space + near + ["".join(space), " ours ", "\u3000ours", "\u3000\u3000", "\u00a0\u2003\t"]
    return [s for s in out if unicodedata.category(s[0]) != "Cs"]


@pytest.mark.parametrize("build", ["c99", "c99-asan-ubsan"])
def test_c_refuses_the_sources_the_reader_refuses(builds, build, tmp_path):
    """Python's str.strip() names the whitespace (U+3000, U+0085, U+001C-U+001F ...); C follows it exactly."""
    if sys.platform == "win32":
        pytest.skip("POSIX paths")
    program = _program(builds, build)
    sources = _whitespace_candidates()
    (tmp_path / "names").write_text("".join(s.encode().hex() + "\n" for s in sources))
    proc = _run([program, "source", tmp_path, tmp_path / "names"])
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert len(rows) == len(sources)
    for source, (_, code) in zip(sources, rows):
        reader_ok = bool(source.strip())
        assert (int(code) == 0) == reader_ok, (source.encode(), code)
        assert int(code) in (0, -2)  # FR_E_ARG
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # every probe run aborted


@pytest.mark.parametrize("build", ["c99", "c++17", "c99-asan-ubsan"])
def test_errno_survives_the_cleanup_of_a_failed_commit(builds, build, tmp_path):
    if sys.platform == "win32":
        pytest.skip("RLIMIT_FSIZE is POSIX")
    program = _program(builds, build)
    proc = _run([program, "errno", tmp_path])
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert [r[0] for r in rows][-2:] == ["commit_manifest_too_big", "errno_after_commit"]
    for name, got, want_name, want in rows:
        assert int(got) == int(want), f"{name}: got {got}, want {want_name} ({want})"
    assert list(tmp_path.iterdir()) == []  # and the failed run is gone


@pytest.mark.parametrize("name", ["u8", "uint8_t", "UINT8", "bfloat16", "object", "<f4"])
def test_reader_refuses_a_non_canonical_dtype_in_one_line(tmp_path, name):
    """What C refuses, `forensics compare` refuses too: one line naming the dtype and the list, exit 2."""
    from tests.conftest import assert_one_line_error

    assert not _reader_accepts_dtype(tmp_path, name)
    result = run_cli("compare", tmp_path / "probe_run", tmp_path / "probe_run")
    assert_one_line_error(result, repr(name), "float32")


def test_ingest_writes_a_sidecars_numpy_spelling_as_the_canonical_name(tmp_path):
    """A sidecar may say "<f4" (numpy reads it); the run it is ingested into says float32, which the reader
    (and C) accept, so the run stays readable."""
    from forensics.runs.ingest import ingest

    (tmp_path / "scores.bin").write_bytes(np.arange(8, dtype="<f4").tobytes())
    (tmp_path / "scores.json").write_text(json.dumps({"dtype": "<f4", "shape": [2, 4]}))
    ingest(tmp_path / "run", "ours", [f"raw:scores={tmp_path / 'scores.bin'}"])
    run = load_run(tmp_path / "run")
    assert [b.dtype for b in run.buffers] == ["float32"]
