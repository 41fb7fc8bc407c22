"""compare of runs read in place from a zip archive (zip://RUN::file://ARCHIVE.zip): the same answer as the
runs unpacked, and every deflated buffer inflated once (a byte range per window inflated
everything before it each time: quadratic in the buffer's size)."""

from __future__ import annotations

import json
import os
import zipfile

import numpy as np
import pytest

from tests.runs.driver_runs import write_driver_run

SIZE = 8 << 20


def _zipped_pair(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.integers(0, 4, SIZE, dtype=np.uint8)  # deflates to about a quarter
    b = a.copy()
    b[SIZE // 2 + 5] ^= 0x40
    for name, data in (("ref", a), ("drv", b)):
        write_driver_run(tmp_path / name, name, [("raw", "out", data, {"dtype": "uint8", "record_size": 4})])
    archive = tmp_path / "runs.zip"
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as z:
        for name in ("ref", "drv"):
            for folder, _, files in os.walk(tmp_path / name):
                for f in files:
                    full = os.path.join(folder, f)
                    z.write(full, os.path.relpath(full, tmp_path))
    return archive


def test_runs_in_a_zip_compare_as_unpacked_inflating_each_buffer_a_few_times(tmp_path, cli, monkeypatch):
    pytest.importorskip("fsspec")
    archive = _zipped_pair(tmp_path)
    inflated = []
    read1 = zipfile.ZipExtFile._read1

    def counting(self, n):  # every byte zipfile inflates passes here, whoever seeks or reads
        data = read1(self, n)
        inflated.append(len(data))
        return data

    monkeypatch.setattr(zipfile.ZipExtFile, "_read1", counting)
    url = f"file://{archive.as_posix()}"
    zipped = cli("compare", f"zip://ref::{url}", f"zip://drv::{url}", "--json")
    monkeypatch.undo()
    local = cli("compare", tmp_path / "ref", tmp_path / "drv", "--json")
    assert zipped.code == local.code == 1, zipped.err
    a, b = json.loads(zipped.out), json.loads(local.out)
    assert [(s["status"], s["summary"], s["crc32_a"], s["crc32_b"]) for s in a["stages"]] == \
        [(s["status"], s["summary"], s["crc32_a"], s["crc32_b"]) for s in b["stages"]]
    assert a["verdict"] == b["verdict"] and a["message"] == b["message"]
    # Two buffers of SIZE bytes verified, diffed and diagnosed: each inflated once.
    assert sum(inflated) <= 1.05 * 2 * SIZE, sum(inflated) / SIZE
