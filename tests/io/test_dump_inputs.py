"""Dumps and sidecars: .npy data bytes, sidecar validation, bad input everywhere, inputs never modified."""

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from forensics.io.dump import open_dump
from forensics.core.errors import InputError
from tests.conftest import REPO, assert_one_line_error

BUFFER_COMMANDS = [
    ("diff", "{f}", "{f}"),
    ("anchors", "{f}"),
    ("coverage", "{f}", "--sentinel", "cc"),
    ("hexdump", "{f}"),
]


def test_npy_is_read_as_its_data_bytes(tmp_path, cli):
    arr = np.frombuffer(bytes.fromhex("ff008080" * 50 + "01ff8080"), dtype=np.uint8).reshape(1, 51, 4)
    np.save(tmp_path / "s.npy", arr)
    (tmp_path / "s.bin").write_bytes(arr.tobytes())
    d = open_dump(tmp_path / "s.npy")
    assert d.size == 204 and d.data_offset > 0 and d.npy_shape == (1, 51, 4)
    r = cli("diff", tmp_path / "s.npy", tmp_path / "s.bin")
    assert r.code == 0
    r = cli("anchors", tmp_path / "s.npy", "--nonuniform", "--json")
    assert json.loads(r.out)["nonuniform"][0]["index"] == 50


def test_corrupt_npy_is_an_input_error(tmp_path, cli):
    np.save(tmp_path / "t.npy", np.zeros(100, np.uint8))
    data = (tmp_path / "t.npy").read_bytes()
    (tmp_path / "trunc.npy").write_bytes(data[:-10])
    (tmp_path / "magic.npy").write_bytes(b"NOTNUMPY" + data[8:])
    assert_one_line_error(cli("anchors", tmp_path / "trunc.npy"), "truncated .npy data")
    assert_one_line_error(cli("anchors", tmp_path / "magic.npy"), "not a .npy file")


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_npz_arrays_are_read_in_place_as_their_data_bytes(tmp_path, cli, save):
    """An .npz (numpy's zip of .npy files, stored or deflated; what `forensics export` writes) is its one
    array, or the array NAME of `ARCHIVE.npz:NAME`: the same bytes, CRC and statistics as a .npy of it."""
    import zlib

    rng = np.random.default_rng(9)
    scores = rng.integers(0, 256, (1, 500, 4), dtype=np.uint8)
    boxes = rng.normal(size=(1, 500, 4)).astype(np.float32)
    moved = boxes.copy()
    moved[0, 321, 3] += np.float32(0.5)
    save(tmp_path / "one.npz", scores=scores)
    save(tmp_path / "a.npz", scores=scores, boxes=boxes)
    save(tmp_path / "b.npz", scores=scores, boxes=moved)
    d = open_dump(tmp_path / "one.npz")
    assert d.size == scores.nbytes and d.npy_shape == (1, 500, 4) and d.source_format == "npz (scores)"
    assert d.read(0, d.size) == scores.tobytes()
    doc = json.loads(cli("crc", tmp_path / "one.npz", f"{tmp_path / 'a.npz'}:scores", "--json").out)
    assert [f["crc32"] for f in doc["files"]] == [f"0x{zlib.crc32(scores.tobytes()):08x}"] * 2
    r = cli("diff", f"{tmp_path / 'a.npz'}:boxes", f"{tmp_path / 'b.npz'}:boxes", "--json")
    assert r.code == 1
    stats = json.loads(r.out)["stats"]
    assert stats["max_abs"] == pytest.approx(0.5, rel=1e-6) and stats["worst"]["record"] == 321
    assert cli("diff", f"{tmp_path / 'a.npz'}:scores", f"{tmp_path / 'b.npz'}:scores").code == 0
    save(tmp_path / "export.npz", **{"raw:convert_scores": scores, "tensor:Squeeze1": boxes})  # as export names them
    assert open_dump(f"{tmp_path / 'export.npz'}:raw:convert_scores").read(0, scores.nbytes) == scores.tobytes()


def test_bad_npz_is_one_line(tmp_path, cli):
    np.savez(tmp_path / "two.npz", x=np.zeros(8, np.uint8), y=np.ones(8, np.uint8))
    assert_one_line_error(cli("crc", tmp_path / "two.npz"), "holds 2 arrays (x, y)", "two.npz:NAME")
    assert_one_line_error(cli("crc", f"{tmp_path / 'two.npz'}:z"), "no array 'z'")
    (tmp_path / "junk.npz").write_bytes(b"PK\x03\x04" + bytes(100))
    assert_one_line_error(cli("crc", tmp_path / "junk.npz"), "not a readable .npz archive")
    np.savez_compressed(tmp_path / "c.npz", x=np.arange(100000, dtype=np.int64))
    data = bytearray((tmp_path / "c.npz").read_bytes())
    data[2000:2200] = bytes(200)  # corrupt the deflated data in the middle of the member
    (tmp_path / "corrupt.npz").write_bytes(bytes(data))
    r = cli("crc", tmp_path / "corrupt.npz")
    assert_one_line_error(r, "corrupt.npz")
    np.savez(tmp_path / "plain.npz", x=np.arange(10, dtype=np.uint8))
    stored = (tmp_path / "plain.npz").read_bytes()
    for name, flag_at, value, fragment in (("encrypted.npz", (6, 8), 1, "encrypted"),    # general-purpose bit 0
                                           ("method.npz", (8, 10), 99, "compression method")):
        data = bytearray(stored)
        local, central = data.find(b"PK\x03\x04"), data.find(b"PK\x01\x02")
        data[local + flag_at[0]] |= value
        data[central + flag_at[1]] |= value
        (tmp_path / name).write_bytes(bytes(data))
        assert_one_line_error(cli("crc", tmp_path / name), name, fragment)


def test_a_colon_in_a_file_name_is_no_npz_array(tmp_path, cli):
    odd = tmp_path / "run:1.bin"
    odd.write_bytes(b"\xff\x00\x80\x80" * 4)
    assert open_dump(odd).size == 16


def test_sidecar_supplies_layout_and_flags_override(tmp_path, cli):
    (tmp_path / "x.bin").write_bytes(bytes.fromhex("ff008080" * 3 + "01ff8080"))
    (tmp_path / "x.json").write_text(json.dumps({"record_size": 4, "pad_lanes": [2, 3], "scale": 0.00390625,
                                                 "zero_point": 0, "fields": ["bg", "face", "p", "p"]}))
    doc = json.loads(cli("anchors", tmp_path / "x.bin", "--nonuniform", "--json").out)
    assert doc["nonuniform"][0]["values"] == [1 / 256, 255 / 256, 128, 128]
    doc = json.loads(cli("anchors", tmp_path / "x.bin", "--nonuniform", "--json", "--record", "2",
                         "--fields", "a,b", "--pad", "1").out)
    assert doc["record_size"] == 2 and doc["records"] == 8


@pytest.mark.parametrize("content, fragment", [
    ("{", "malformed sidecar JSON"),
    ("[1, 2]", "must be a JSON object"),
    ('{"record_size": 0}', "record_size"),
    ('{"record_size": "4"}', "record_size"),
    ('{"scale": -1}', "scale"),
    ('{"zero_point": 1.5}', "zero_point"),
    ('{"pad_lanes": "2,3"}', "pad_lanes"),
    ('{"fields": [1, 2]}', "fields"),
])
def test_bad_sidecars(tmp_path, cli, content, fragment):
    (tmp_path / "x.bin").write_bytes(bytes(8))
    (tmp_path / "x.bin.json").write_text(content)
    assert_one_line_error(cli("anchors", tmp_path / "x.bin"), "x.bin.json", fragment)


@pytest.mark.parametrize("argv", BUFFER_COMMANDS, ids=[c[0] for c in BUFFER_COMMANDS])
def test_missing_directory_empty(tmp_path, cli, argv):
    (tmp_path / "empty.bin").write_bytes(b"")
    for target, fragment in ((tmp_path / "none.bin", "no such file"), (tmp_path, "is a directory"),
                             (tmp_path / "empty.bin", "empty")):
        args = [a.format(f=target) for a in argv]
        assert_one_line_error(cli(*args), fragment)


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root can read any file")
def test_unreadable_file(tmp_path, cli):
    path = tmp_path / "locked.bin"
    path.write_bytes(bytes(8))
    path.chmod(0)
    assert_one_line_error(cli("anchors", path), "permission denied")


def test_inputs_are_never_modified(tmp_path, cli):
    files = ["dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", "dumps/ours/input.bin"]
    before = {f: (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.stat(f).st_mtime_ns) for f in files}
    cli("crc", *files, "--chunk", "100")
    cli("diff", files[0], files[1], "--all")
    cli("anchors", files[1], "--nonuniform")
    cli("coverage", files[1], "--sentinel", "cc")
    cli("hexdump", files[0], files[1])
    after = {f: (hashlib.sha256(open(f, "rb").read()).hexdigest(), os.stat(f).st_mtime_ns) for f in files}
    assert before == after


def test_layout_validation_errors_are_input_errors():
    from forensics.core.layout import RecordLayout

    for kwargs in ({"record_size": 0}, {"offset": -1}, {"pad_lanes": (4,)}, {"fields": ("a",)}, {"scale": 0.0}):
        with pytest.raises(InputError):
            RecordLayout(**kwargs)


def test_python_dash_m_help_and_traceback_flag(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(REPO))
    r = subprocess.run([sys.executable, "-m", "forensics", "--help"], capture_output=True, text=True, env=env)
    assert r.returncode == 0 and "crc" in r.stdout and "anchors" in r.stdout
    r = subprocess.run([sys.executable, "-m", "forensics", "anchors", str(tmp_path / "none.bin"), "--traceback"],
                       capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "Traceback" in r.stderr and r.stderr.strip().endswith("no such file")


def test_unknown_command_is_one_line(cli):
    assert_one_line_error(cli("frobnicate"), "unknown command 'frobnicate'", "(see forensics --help)")


@pytest.mark.skipif(os.name != "posix", reason="POSIX permission bits")
def test_atomic_outputs_get_the_usual_permissions(tmp_path):
    # mkstemp/mkdtemp create 0600/0700; outputs must look as if open()/mkdir() had made them.
    from forensics.io.outputs import atomic_directory, write_bytes_atomic

    umask = os.umask(0o022)
    try:
        write_bytes_atomic(tmp_path / "out.bin", b"x")
        with atomic_directory(tmp_path / "run") as tmp:
            (Path(tmp) / "a.bin").write_bytes(b"y")
    finally:
        os.umask(umask)
    assert (tmp_path / "out.bin").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "run").stat().st_mode & 0o777 == 0o755
