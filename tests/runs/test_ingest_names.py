"""Buffer names that could name a path: ingest refuses them, and export writes safe .npz members whatever a run
holds (a manifest written by another tool)."""

from __future__ import annotations

import os
import shutil
import subprocess
import zipfile

import numpy as np
import pytest

from forensics.core.errors import InputError
from forensics.runs.ingest import ingest, parse_spec
from forensics.runs.interop import export_run, ingest_arrays, member_name
from tests.conftest import assert_one_line_error
from tests.runs.runs_support import edit_manifest

HOSTILE = ["../../escape_b", "..", "a/../../b", "/etc/passwd", "C:evil", "a\\b", "x\0y", "./x", "a/./b"]
# what another tool may have written into a manifest: control characters are no path, yet no member holds one
EXPORTED = HOSTILE + ["\x1b]0;title\x07", "tab\there"]


@pytest.mark.parametrize("name", HOSTILE)
def test_ingest_refuses_a_tensor_name_that_is_a_path(tmp_path, name):
    (tmp_path / "a.bin").write_bytes(b"abc")
    with pytest.raises(InputError, match="tensor name"):
        ingest(tmp_path / "R", "ours", [f"tensor:{name}={tmp_path / 'a.bin'}"])
    assert os.listdir(tmp_path) == ["a.bin"]


@pytest.mark.parametrize("name", ["MobilenetV1/Conv2d_0/Relu6", "TFLite_Detection_PostProcess:1", "a..b", ".hidden"])
def test_real_tensor_names_stay_allowed(name):
    assert parse_spec(f"tensor:{name}=x.bin").tensor == name


def test_the_cli_says_it_in_one_line(cli, tmp_path):
    (tmp_path / "a.bin").write_bytes(b"abc")
    assert_one_line_error(cli("ingest", tmp_path / "R", "--source", "ours", f"tensor:../../x={tmp_path / 'a.bin'}"),
                          "'..' part")


def test_an_npz_import_refuses_a_member_that_is_a_path(tmp_path):
    npz = tmp_path / "in.npz"
    np.savez(npz, **{"tensor:../../escape": np.arange(3, dtype=np.uint8)})
    with pytest.raises(InputError, match="tensor name"):
        ingest_arrays(tmp_path / "R", "npz", npz, source="ours")
    assert sorted(os.listdir(tmp_path)) == ["in.npz"]


@pytest.fixture
def hostile_run(tmp_path):
    """A run whose manifest (written by something else than forensics) names its tensors as paths."""
    (tmp_path / "a.bin").write_bytes(b"abcd")
    run = tmp_path / "R"
    names = [f"t{i}" for i in range(len(EXPORTED))]
    ingest(run, "ours", [f"tensor:{n}={tmp_path / 'a.bin'}" for n in names])

    def rename(doc):
        for buf, name in zip(doc["buffers"], EXPORTED):
            buf["tensor"] = name

    edit_manifest(run, rename)
    return run



def _safe(member: str) -> bool:
    parts = member.replace("\\", "/").split("/")
    return (not member.startswith("/") and "\\" not in member and ".." not in parts and "." not in parts
            and "" not in parts and not any(ord(c) < 0x20 for c in member))


def test_export_npz_member_names_are_safe_whatever_the_run_holds(hostile_run, tmp_path):
    out = tmp_path / "out" / "x.npz"
    out.parent.mkdir()
    result = export_run(hostile_run, "npz", out)
    with zipfile.ZipFile(out) as zf:
        members = zf.namelist()
    assert len(members) == len(EXPORTED) and all(_safe(m) for m in members), members
    assert sorted(members) == sorted(n + ".npy" for n, _, _ in result.arrays)
    assert len(set(member_name(f"tensor:{n}") for n in EXPORTED)) == len(EXPORTED)  # no two collide
    with np.load(out) as z:  # every buffer is there, under its member name
        assert sorted(z.files) == sorted(member_name(f"tensor:{n}") for n in EXPORTED)


@pytest.mark.skipif(shutil.which("unzip") is None, reason="no unzip here")
def test_unzip_of_the_export_writes_only_inside_its_target(hostile_run, tmp_path):
    out = tmp_path / "box" / "deep" / "x.npz"
    out.parent.mkdir(parents=True)
    export_run(hostile_run, "npz", out)
    before = sorted(p for p in tmp_path.rglob("*"))
    target = out.parent / "unzipped"
    proc = subprocess.run(["unzip", "-o", "-q", str(out), "-d", str(target)], capture_output=True)
    assert proc.returncode in (0, 1), proc.stderr  # 1: warnings only
    new = sorted(set(tmp_path.rglob("*")) - set(before))
    assert new and all(target == p or target in p.parents for p in new), new


def test_member_names_of_ordinary_runs_are_their_labels():
    for label in ("input", "raw:convert_scores", "tensor:MobilenetV1/Conv2d_0/Relu6",
                  "detections:TFLite_Detection_PostProcess:3"):
        assert member_name(label) == label
