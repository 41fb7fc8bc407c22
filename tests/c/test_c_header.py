"""c/forensics_run.h from C and C++: compiled warning-free (C99, C99 with ASan/UBSan, C++17, mingw-w64 for
Windows), run, and checked against zlib, numpy and forensics' own run reader, compare and verify."""

from __future__ import annotations

import concurrent.futures
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest

from forensics.runs.ingest import ingest
from forensics.runs.run import load_run, verify_run
from tests.conftest import REPO, run_cli

HEADER_DIR = REPO / "c"
EXAMPLE = HEADER_DIR / "examples" / "write_run.c"
CHECK = Path(__file__).with_name("fr_check.c")

CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
CXX = shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")
MINGW = shutil.which("x86_64-w64-mingw32-gcc")
# -O0 compiles three times faster; one build at -O1 keeps the warnings that need the optimizer's analysis.
STRICT = ["-std=c99", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O0", f"-I{HEADER_DIR}"]
STRICT_CXX = ["-std=c++17", "-Wall", "-Wextra", "-Werror", "-pedantic", "-O0", f"-I{HEADER_DIR}", "-x", "c++"]
SANITIZE = ["-g", "-fsanitize=address,undefined", "-fno-sanitize-recover=all", "-fno-omit-frame-pointer"]

# The brief's fingerprint line, strictly: lowercase hex as written, offsets without leading zeros.
_BYTES = r"(?:[0-9a-f]{2}(?: [0-9a-f]{2}){0,15})?"
_OFFSET = r"(?:0|[1-9a-f][0-9a-f]*)"
FP_LINE = re.compile(
    rf"\[FP\] (?P<tag>[A-Za-z0-9_.:-]+) size=(?P<size>0|[1-9][0-9]*) crc32=0x(?P<crc32>[0-9a-f]{{8}}) "
    rf"xor64=0x(?P<xor64>[0-9a-f]{{16}}) head@0x(?P<head_at>{_OFFSET})=(?P<head>{_BYTES}) "
    rf"mid@0x(?P<mid_at>{_OFFSET})=(?P<mid>{_BYTES}) tail@0x(?P<tail_at>{_OFFSET})=(?P<tail>{_BYTES})")

pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (cc, gcc or clang) on PATH")


def _compile(compiler, args, out: Path) -> tuple[Path, str | None]:
    """Compile; (output, None) or (output, the compiler's complaint)."""
    proc = subprocess.run([compiler, *args, "-o", str(out)], capture_output=True, text=True)
    return out, None if proc.returncode == 0 else proc.stderr + proc.stdout


def _sanitizers_work(build: Path) -> bool:
    probe = build / "probe.c"
    probe.write_text("int main(void) { return 0; }\n")
    proc = subprocess.run([CC, *SANITIZE, str(probe), "-o", str(build / "probe")], capture_output=True)
    return proc.returncode == 0 and subprocess.run([str(build / "probe")], capture_output=True).returncode == 0


def _m32_runs(build: Path) -> bool:
    probe = build / "probe32.c"
    probe.write_text("int main(void) { return 0; }\n")
    proc = subprocess.run([CC, "-m32", str(probe), "-o", str(build / "probe32")], capture_output=True)
    return proc.returncode == 0 and subprocess.run([str(build / "probe32")], capture_output=True).returncode == 0


@pytest.fixture(scope="session")
def builds(tmp_path_factory):
    """Every program the tests run, compiled at once (two cores): name -> (path, error or None)."""
    build = tmp_path_factory.mktemp("c_build")
    jobs = {
        "c99": (CC, [*STRICT, "-O1", str(CHECK), "-lm"], build / "fr_check"),
        "example": (CC, [*STRICT, str(EXAMPLE)], build / "write_run"),
    }
    if CXX is not None:
        jobs["c++17"] = (CXX, [*STRICT_CXX, str(CHECK), "-lm"], build / "fr_check_cxx")
        jobs["example-c++17"] = (CXX, [*STRICT_CXX, str(EXAMPLE)], build / "write_run_cxx")
    if _sanitizers_work(build):
        jobs["c99-asan-ubsan"] = (CC, [*STRICT, *SANITIZE, str(CHECK), "-lm"], build / "fr_check_san")
    if _m32_runs(build):  # 32-bit size_t and the helper-free 64-bit arithmetic, run for real
        jobs["c99-m32"] = (CC, [*STRICT, "-m32", "-O2", str(CHECK), "-lm"], build / "fr_check_m32")
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        futures = {name: pool.submit(_compile, *job) for name, job in jobs.items()}
        return {name: f.result() for name, f in futures.items()}


def _program(builds, name: str) -> Path:
    if name not in builds:
        reason = {"c++17": "no C++ compiler", "example-c++17": "no C++ compiler",
                  "c99-asan-ubsan": "this compiler cannot build with -fsanitize=address,undefined",
                  "c99-m32": "this compiler cannot build and run -m32 programs (Debian: gcc-multilib)"}[name]
        pytest.skip(reason)
    path, error = builds[name]
    assert error is None, f"{name} does not compile warning-free:\n{error}"
    return path


CHECK_BUILDS = ["c99", "c++17", "c99-asan-ubsan", "c99-m32"]


def _run(argv, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=1:abort_on_error=0", UBSAN_OPTIONS="print_stacktrace=1")
    return subprocess.run([str(a) for a in argv], capture_output=True, text=True, env=env, timeout=60, **kw)


def _xorfold64(data: bytes) -> int:
    padded = data + bytes(-len(data) % 8)
    return int(np.bitwise_xor.reduce(np.frombuffer(padded, dtype="<u8"), initial=np.uint64(0)))


def _check_fingerprint(line: str, data: bytes, tag: str) -> None:
    """Every value of the line against zlib, numpy and the offsets `forensics crc` picks."""
    m = FP_LINE.fullmatch(line)
    assert m, f"not the brief's [FP] line: {line!r}"
    size = len(data)
    assert m["tag"] == tag
    assert int(m["size"]) == size
    assert int(m["crc32"], 16) == zlib.crc32(data)
    assert int(m["xor64"], 16) == _xorfold64(data)
    for name, at in (("head", 0), ("mid", max(0, size // 2 - 8)), ("tail", max(0, size - 16))):
        assert int(m[f"{name}_at"], 16) == at, (name, line)
        assert m[name] == data[at:at + 16].hex(" "), (name, line)


# --- the kernel-safe part: CRC32, xor-fold, fingerprint line -------------------------------------------

@pytest.mark.parametrize("build", CHECK_BUILDS)
def test_crc_xorfold_and_fingerprint_equal_zlib_and_numpy(builds, build, tmp_path):
    program = _program(builds, build)
    rng = random.Random(15)
    blob = rng.randbytes((1 << 20) + 64)
    sizes = [0, 1, 2, 3, 7, 8, 9, 15, 16, 17, 18, 31, 32, 33, 63, 64, 65, 65535, 65536, 65537, 65543, 1 << 20]
    sizes += [rng.randrange(0, 1 << 20) | 1 for _ in range(10)] + [rng.randrange(0, 1 << 20) for _ in range(6)]
    cases = [(rng.randrange(0, 64) if s < (1 << 20) else 0, s) for s in sizes]  # unaligned starts too
    (tmp_path / "blob").write_bytes(blob)
    (tmp_path / "cases").write_text("".join(f"{o} {n}\n" for o, n in cases))
    proc = _run([program, "crc", tmp_path / "blob", tmp_path / "cases"])
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert len(lines) == 2 * len(cases)
    for i, (offset, size) in enumerate(cases):
        data = blob[offset:offset + size]
        _, index, whole, pieces, xor = lines[2 * i].split()
        assert int(index) == i
        assert int(whole, 16) == zlib.crc32(data), (offset, size)
        assert int(pieces, 16) == zlib.crc32(data), (offset, size)  # continued from a previous value, as zlib
        assert int(xor, 16) == _xorfold64(data), (offset, size)
        _check_fingerprint(lines[2 * i + 1], data, f"case{i}")


def test_kernel_only_part_calls_nothing_outside(builds, tmp_path):
    """FORENSICS_RUN_KERNEL_ONLY compiles freestanding and its object needs no symbol at all: no allocator,
    no file I/O, not even memcpy, so a KMDF driver can link it."""
    tu = tmp_path / "kernel.c"
    tu.write_text("#define FORENSICS_RUN_KERNEL_ONLY\n#define FORENSICS_RUN_IMPLEMENTATION\n"
                  '#include "forensics_run.h"\n')
    obj, error = _compile(CC, [*STRICT, "-O2", "-ffreestanding", f"-I{HEADER_DIR}", "-c", str(tu)],
                          tmp_path / "kernel.o")
    assert error is None, error
    nm = shutil.which("nm")
    if nm is None:
        pytest.skip("no nm to list the object's undefined symbols")
    undefined = subprocess.run([nm, "-u", str(obj)], capture_output=True, text=True, check=True).stdout.split()
    assert undefined == []
    defined = subprocess.run([nm, str(obj)], capture_output=True, text=True, check=True).stdout
    for name in ("fr_crc32", "fr_xorfold64", "fr_fingerprint_line"):
        assert re.search(rf" T {name}$", defined, re.M), name
    assert "fr_run_begin" not in defined


def test_header_is_clean_under_conversion_warnings():
    """Driver builds warn on every narrowing (MSVC /W4, gcc -Wconversion): the header gives them nothing to say."""
    tu = '#define FORENSICS_RUN_IMPLEMENTATION\n#include "forensics_run.h"\n'
    extra = ["-Wconversion", "-Wsign-conversion", "-Wshadow", "-Wcast-qual", "-Wstrict-prototypes",
             "-Wmissing-prototypes", "-fsyntax-only"]
    proc = subprocess.run([CC, *STRICT, *extra, "-x", "c", "-"], input=tu, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


# --- bad input --------------------------------------------------------------------------------------------

@pytest.mark.parametrize("build", CHECK_BUILDS)
def test_every_bad_input_has_its_code_and_writes_nothing(builds, build, tmp_path):
    program = _program(builds, build)
    (tmp_path / "existing").mkdir()
    (tmp_path / "existing" / "keep.txt").write_text("untouched")
    proc = _run([program, "errors", tmp_path])
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    codes = {}
    for name, got, want_name, want in rows:
        assert int(got) == int(want), f"{name}: got {got}, want {want_name} ({want})"
        codes.setdefault(want_name, set()).add(int(want))
    expected = {"FR_E_NULL", "FR_E_ARG", "FR_E_STAGE", "FR_E_TENSOR", "FR_E_DUPLICATE", "FR_E_EXISTS",
                "FR_E_META", "FR_E_BUFFER", "FR_E_TAG"}
    assert expected <= set(codes)
    assert {"add_pad_lanes_without_record_size", "add_pad_lanes_repeated", "add_pad_lane_outside_record",
            "add_pad_lane_negative", "add_pad_lanes_null", "add_pad_lanes_too_many"} <= {r[0] for r in rows}
    error_codes = {name: values.pop() for name, values in codes.items() if name.startswith("FR_E_")}
    assert all(v < 0 for v in error_codes.values())
    assert len(set(error_codes.values())) == len(error_codes), f"two error names share a code: {error_codes}"
    # Nothing written: the refused run, the aborted one and the one whose target appeared leave no trace.
    assert sorted(os.listdir(tmp_path)) == ["existing", "late"]
    assert os.listdir(tmp_path / "existing") == ["keep.txt"]
    assert (tmp_path / "existing" / "keep.txt").read_text() == "untouched"
    assert os.listdir(tmp_path / "late") == []


@pytest.mark.parametrize("build", CHECK_BUILDS)
def test_file_system_failures_are_reported_and_leave_nothing(builds, build, tmp_path):
    """A missing parent, then writes failing mid-run (a file size limit, as a full disk): FR_E_IO, then the
    run refuses more buffers and the commit (FR_E_FAILED) and removes everything it wrote."""
    if sys.platform == "win32":
        pytest.skip("RLIMIT_FSIZE is POSIX")
    program = _program(builds, build)
    proc = _run([program, "io", tmp_path])
    assert proc.returncode == 0, proc.stderr
    rows = [line.split() for line in proc.stdout.splitlines()]
    assert [r[0] for r in rows] == ["begin_parent_missing", "begin_full_ok", "add_before_full_ok", "setrlimit",
                                    "add_disk_full", "add_after_failure", "commit_after_failure"]
    for name, got, want_name, want in rows:
        assert int(got) == int(want), f"{name}: got {got}, want {want_name} ({want})"
    assert os.listdir(tmp_path) == []


# --- writing runs ------------------------------------------------------------------------------------------

TENSORS = ["input", "TFLite_Detection_PostProcess:1", 'q"uote', "pipe|star*?<>", "café €", "CON"]
SCALES = [0.10822763, 0.00390625, 0.1, 3.0000000000000004, 1e-300, 12345678.9]


def _expected_buffer(i: int) -> tuple[str, str, bytes]:
    """What fr_check's write mode adds as buffer i (same formulas as fr_check.c)."""
    size = i * 1031 + i % 2
    data = bytes((k * 31 + i) & 0xFF for k in range(size))
    return ("raw" if i % 2 else "detections"), TENSORS[i % 6], data


@pytest.mark.parametrize("build", CHECK_BUILDS)
def test_written_run_is_read_back_by_forensics(builds, build, tmp_path):
    program = _program(builds, build)
    target = tmp_path / "ré run"
    proc = _run([program, "write", target, 6, "commit"])
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(tmp_path)) == ["ré run"]  # the temporary directory is gone
    run = load_run(target)
    assert run.source == 'ours "C" \\ \u00f6\x02'
    assert run.tool == "fr_check 1"
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", run.created)
    assert all(check.ok for check in verify_run(run))
    by_key = {b.key: b for b in run.buffers}
    assert len(by_key) == 6
    for i in range(6):
        stage, tensor, data = _expected_buffer(i)
        entry = by_key[(stage, tensor)]
        assert entry.size == len(data)
        assert entry.crc32 == zlib.crc32(data)
        assert Path(run.file_path(entry)).read_bytes() == data
        assert entry.dtype == ("uint8" if i % 2 else "float32")
        assert entry.shape == (1, len(data), 1 << 40)[: i % 4]
        if i % 3 != 2:
            assert entry.scale == SCALES[i]  # exactly: doubles are printed round-trippable
            assert entry.zero_point == (-128 if i % 2 else 144)
        else:
            assert entry.scale is None and entry.zero_point is None
        assert entry.record_size == (i % 5 or None)
        assert entry.role == ("scores" if i == 1 else None)
        assert entry.extra.get("pad_lanes") == ([3, 2] if i % 5 == 4 else None)
    files = [b.file for b in run.buffers]
    assert all(re.fullmatch(r"(raw|detections)/[A-Za-z0-9._-]+\.bin", f) for f in files), files
    assert "raw/CON.bin" not in files  # a reserved device name on Windows


@pytest.mark.parametrize("build", CHECK_BUILDS)
def test_abort_removes_the_temporary_directory(builds, build, tmp_path):
    program = _program(builds, build)
    proc = _run([program, "write", tmp_path / "run", 6, "abort", 3])
    assert proc.returncode == 0, proc.stderr
    assert os.listdir(tmp_path) == []


@pytest.mark.parametrize("build", CHECK_BUILDS)
def test_killed_writer_leaves_no_complete_looking_run(builds, build, tmp_path):
    if sys.platform == "win32":
        pytest.skip("SIGKILL is POSIX")
    program = _program(builds, build)
    proc = _run([program, "write", tmp_path / "run", 6, "kill", 2])
    assert proc.returncode == -signal.SIGKILL, (proc.returncode, proc.stderr)
    assert not (tmp_path / "run").exists()
    left = os.listdir(tmp_path)
    assert len(left) == 1 and left[0].startswith(".run.") and left[0].endswith(".tmp"), left  # hidden
    manifests = [Path(d) / f for d, _, fs in os.walk(tmp_path) for f in fs if f == "manifest.json"]
    assert manifests == []
    written = sorted(p.name for p in (tmp_path / left[0]).rglob("*.bin"))
    assert len(written) == 2  # killed between the 2nd and 3rd file


# --- the example: the bundled dumps as a run, compared with the same files ingested ---------------------

@pytest.fixture
def example_run(builds, tmp_path):
    program = _program(builds, "example")
    target = tmp_path / "from_c"
    proc = _run([program, "dumps/ours", target])
    assert proc.returncode == 0, proc.stderr
    return target, proc.stdout


def test_example_run_equals_the_ingested_run(example_run, tmp_path):
    target, _ = example_run
    ingested = tmp_path / "ingested"
    ingest(ingested, "ours", ["input=dumps/ours/input.bin", "raw:convert_scores=dumps/ours/convert_scores.bin",
                              "tensor:Squeeze1=dumps/ours/Squeeze1.bin"])
    result = run_cli("compare", target, ingested, "--json")
    assert result.code == 0, result.out + result.err
    report = json.loads(result.out)
    assert [(s["stage"], s["tensor"], s["status"]) for s in report["stages"]] == [
        ("input", "input", "MATCH"), ("raw", "convert_scores", "MATCH"), ("tensor", "Squeeze1", "MATCH")]
    assert report["first_divergent_stage"] is None
    # The metadata the example writes is what ingest reads from the dumps' sidecars.
    ours, theirs = load_run(target), load_run(ingested)
    for entry in ours.buffers:
        other = theirs.buffer(entry.stage, entry.tensor)
        for field in ("size", "crc32", "dtype", "shape", "scale", "zero_point", "record_size", "role"):
            assert getattr(entry, field) == getattr(other, field), (entry.label, field)
        assert entry.extra.get("pad_lanes") == other.extra.get("pad_lanes"), entry.label  # [2, 3] for the scores


def test_pad_lanes_the_c_writer_records_are_ignored_by_compare(example_run, tmp_path):
    import shutil

    target, _ = example_run
    changed = tmp_path / "pads_changed"
    shutil.copytree(target, changed)
    scores = changed / "raw" / "convert_scores.bin"
    data = bytearray(scores.read_bytes())
    data[2::4] = bytes([0xCC]) * len(data[2::4])  # what another driver left in the pad lanes
    scores.write_bytes(bytes(data))
    manifest = json.loads((changed / "manifest.json").read_text(encoding="utf-8"))
    entry = next(b for b in manifest["buffers"] if b["stage"] == "raw")
    assert entry["pad_lanes"] == [2, 3]
    entry["crc32"] = f"0x{zlib.crc32(bytes(data)):08x}"
    (changed / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    result = run_cli("compare", target, changed, "--json")
    assert result.code == 0, result.out
    raw = next(s for s in json.loads(result.out)["stages"] if s["stage"] == "raw")
    assert raw["status"] == "MATCH" and raw["crc32_a"] != raw["crc32_b"] and raw["reasons"][0]["code"] == "pad_lanes"


def test_example_prints_fingerprint_lines_of_its_buffers(example_run):
    _, out = example_run
    lines = out.splitlines()
    assert len(lines) == 3
    for line, (tag, name) in zip(lines, (("input", "input.bin"), ("convert_scores", "convert_scores.bin"),
                                         ("Squeeze1", "Squeeze1.bin"))):
        _check_fingerprint(line, (REPO / "dumps" / "ours" / name).read_bytes(), tag)


def test_example_refuses_an_existing_run(builds, tmp_path):
    program = _program(builds, "example")
    (tmp_path / "taken").mkdir()
    proc = _run([program, "dumps/ours", tmp_path / "taken"])
    assert proc.returncode == 2
    assert "already exists" in proc.stderr
    assert os.listdir(tmp_path / "taken") == []
    assert os.listdir(tmp_path) == ["taken"]


def test_example_compiles_as_cxx(builds):
    _program(builds, "example-c++17")


def test_fingerprint_line_is_read_by_forensics_verify(example_run, tmp_path):
    from forensics.cli import COMMAND_HOMES

    if "verify" not in COMMAND_HOMES:
        pytest.skip("`forensics verify` is not registered in this tree yet (it is being added separately)")
    _, out = example_run
    log = tmp_path / "driver.log"
    # As DbgView saves DbgPrint output: line number and time before the line.
    log.write_text(f"00000042\t12.34567890\t{out.splitlines()[0]}\n")
    same = run_cli("verify", log, "dumps/ours/input.bin", "--json")
    assert same.code == 0, same.out + same.err
    checks = json.loads(same.out)["checks"]
    assert len(checks) == 6 and all(c["match"] for c in checks)  # size, crc32, xor64, head, mid, tail
    other = run_cli("verify", log, "dumps/broken/input.bin", "--json")
    assert other.code == 1, other.out + other.err
    assert not all(c["match"] for c in json.loads(other.out)["checks"])
    # All three lines of the example in one log, each buffer named by its tag.
    log.write_text("".join(f"00000{i}\t0.5\t{line}\n" for i, line in enumerate(out.splitlines())))
    every = run_cli("verify", log, "--buffer", "input=dumps/ours/input.bin",
                    "--buffer", "convert_scores=dumps/ours/convert_scores.bin",
                    "--buffer", "Squeeze1=dumps/ours/Squeeze1.bin", "--json")
    assert every.code == 0, every.out + every.err
    checks = json.loads(every.out)["checks"]
    assert len(checks) == 18 and all(c["match"] for c in checks)


# --- Windows: cross-compiled with mingw-w64 ------------------------------------------------------------

@pytest.mark.skipif(MINGW is None, reason="no mingw-w64 (x86_64-w64-mingw32-gcc): Debian's gcc-mingw-w64-x86-64")
def test_header_and_example_cross_compile_for_windows(tmp_path):
    kernel = tmp_path / "kernel.c"
    kernel.write_text("#define FORENSICS_RUN_KERNEL_ONLY\n#define FORENSICS_RUN_IMPLEMENTATION\n"
                      '#include "forensics_run.h"\n')
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        exe = pool.submit(_compile, MINGW, [*STRICT, str(EXAMPLE)], tmp_path / "write_run.exe")
        obj = pool.submit(_compile, MINGW, [*STRICT, "-c", str(kernel)], tmp_path / "kernel.o")
        exe, exe_error = exe.result()
        _, obj_error = obj.result()
    assert exe_error is None, exe_error
    assert obj_error is None, obj_error
    image = exe.read_bytes()
    assert image[:2] == b"MZ"
    for api in (b"CreateDirectoryW", b"MoveFileExW", b"DeleteFileW", b"RemoveDirectoryW",
                b"MultiByteToWideChar"):
        assert api in image, api  # the Win32 path of the header was compiled, not the POSIX one
