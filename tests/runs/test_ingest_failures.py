"""A failed ingest leaves the run exactly as it was: every check runs before anything is replaced."""

from __future__ import annotations

import os

import numpy as np
import pytest

from forensics.core.errors import ForensicsError
from forensics.runs import run as run_module
from forensics.runs.ingest import ingest
from forensics.runs.run import load_run
from tests.conftest import assert_one_line_error, run_cli


def tree(path) -> dict:
    """Every file under `path` (relative name -> bytes) and every directory: what a byte-identical run keeps."""
    out = {}
    for root, dirs, files in os.walk(path):
        rel = os.path.relpath(root, path)
        out[rel + "/"] = None
        for name in files:
            with open(os.path.join(root, name), "rb") as fh:
                out[os.path.join(rel, name)] = fh.read()
    return out


@pytest.fixture
def run(tmp_path):
    a = tmp_path / "a.bin"
    a.write_bytes(bytes(range(64)))
    path = tmp_path / "R"
    ingest(path, "ours", [f"input={a}"])
    return path


def _assert_untouched(run, before, parent_before):
    assert tree(run) == before
    assert sorted(os.listdir(run.parent)) == parent_before  # no temporary directory or lock left beside it
    result = run_cli("compare", run, run)
    assert result.code == 0, result.err


def test_a_string_array_into_an_existing_run_leaves_it_byte_identical(run, tmp_path):
    npz = tmp_path / "s.npz"
    np.savez(npz, x=np.array(["ab", "cd"]))
    before, parent = tree(run), sorted(os.listdir(tmp_path))
    result = run_cli("ingest", run, "--source", "ours", f"tensor:x={npz}")
    assert_one_line_error(result, "s.npz", "not numbers")
    _assert_untouched(run, before, parent)


def test_a_string_npy_is_refused_before_a_new_run_exists(tmp_path):
    npy = tmp_path / "s.npy"
    np.save(npy, np.array(["ab", "cd"]))
    assert_one_line_error(run_cli("ingest", tmp_path / "new", "--source", "ours", f"tensor:x={npy}"), "not numbers")
    assert sorted(os.listdir(tmp_path)) == ["s.npy"]


def test_growing_a_run_past_the_manifest_limit_leaves_it_byte_identical(run, tmp_path, monkeypatch):
    size = os.path.getsize(run / "manifest.json")
    monkeypatch.setattr(run_module, "_MAX_MANIFEST", size + 100)  # one more buffer entry does not fit
    b = tmp_path / "b.bin"
    b.write_bytes(bytes(32))
    before, parent = tree(run), sorted(os.listdir(tmp_path))
    with pytest.raises(ForensicsError, match="over the .* bytes a reader accepts"):
        ingest(run, "ours", [f"tensor:b={b}"])
    _assert_untouched(run, before, parent)
    assert [e.label for e in load_run(run).buffers] == ["input"]


def test_the_manifest_limit_is_the_readers(run, tmp_path, monkeypatch):
    """What the writer refuses is exactly what load_run would refuse: a manifest at the limit is written."""
    b = tmp_path / "b.bin"
    b.write_bytes(bytes(32))
    probe = tmp_path / "probe"
    ingest(probe, "ours", [f"input={tmp_path / 'a.bin'}", f"tensor:b={b}"])
    limit = os.path.getsize(probe / "manifest.json")
    monkeypatch.setattr(run_module, "_MAX_MANIFEST", limit)
    ingest(run, "ours", [f"tensor:b={b}"])
    assert os.path.getsize(run / "manifest.json") <= limit
    assert [e.label for e in load_run(run).buffers] == ["input", "tensor:b"]
