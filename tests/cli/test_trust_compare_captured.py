"""compare concludes only from the stages both runs captured: two runs holding only `raw:` outputs must not
say that inputs and parameters match. Runs are written here by hand (manifest.json + files, as a driver
writes them), not by forensics' capture."""

from __future__ import annotations

import io
import itertools
import json
import zlib

import numpy as np
import pytest

from forensics.cli import main

STAGES = ("params", "input", "raw", "tensor", "dequantized")


def write_run(directory, buffers: dict) -> None:
    """buffers: stage -> bytes; one uint8 buffer per stage, tensor named after the stage."""
    directory.mkdir(parents=True)
    entries = []
    for stage, data in buffers.items():
        (directory / f"{stage}.bin").write_bytes(data)
        entries.append({"stage": stage, "tensor": stage, "file": f"{stage}.bin", "size": len(data),
                        "crc32": f"0x{zlib.crc32(data):08x}", "dtype": "uint8"})
    (directory / "manifest.json").write_text(json.dumps({"format": "forensics-run", "version": 1,
                                                         "source": directory.name, "buffers": entries}))


def compare(tmp_path, *extra):
    out = io.StringIO()
    code = main(["compare", str(tmp_path / "a"), str(tmp_path / "b"), "--width", "200", "--no-color", *extra],
                stdout=out, stderr=io.StringIO())
    return code, out.getvalue()


def _cases():
    """Every set of captured stages, and every captured stage as the first that differs."""
    for n in range(1, len(STAGES) + 1):
        for captured in itertools.combinations(STAGES, n):
            for differing in captured:
                yield captured, differing


@pytest.mark.parametrize("captured, differing", list(_cases()))
def test_advice_claims_only_captured_stages(tmp_path, captured, differing):
    rng = np.random.default_rng(len(captured) * 7 + STAGES.index(differing))
    a, b = {}, {}
    later = False
    for stage in captured:
        data = rng.integers(0, 256, 64, dtype=np.uint8).tobytes()
        a[stage] = data
        later = later or stage == differing
        b[stage] = bytes(x ^ 1 for x in data) if later else data  # the first difference and what follows it
    write_run(tmp_path / "a", a)
    write_run(tmp_path / "b", b)
    code, text = compare(tmp_path, "--json")
    doc = json.loads(text)
    assert code == 1
    assert doc["first_divergent_stage"] == differing
    missing = [s for s in STAGES if s not in captured]
    assert [s for s in doc["not_captured"] if s != "detections"] == missing
    advice = doc["advice"]
    # the advice's premises: "inputs and parameters match", "the raw output matches", "the tensors match"
    claims = {"params": "parameters match", "input": "inputs and", "raw": "the raw output matches",
              "tensor": "the tensors match"}
    earlier = STAGES[:STAGES.index(differing)]
    for stage in earlier:
        if stage not in captured and stage in claims and not (differing == "input" and stage == "params"):
            assert claims[stage] not in advice, (captured, differing, advice)
    unseen = [s for s in earlier if s not in captured]
    if differing != "input":
        for stage in unseen:
            assert stage in advice, (captured, differing, advice)


def test_raw_only_runs_say_what_was_not_captured(tmp_path):
    """The issue's case: two runs with only raw outputs."""
    data = np.arange(256, dtype=np.uint8).tobytes()
    write_run(tmp_path / "a", {"raw": data})
    write_run(tmp_path / "b", {"raw": data[:-1] + b"\x00"})
    code, text = compare(tmp_path)
    flat = " ".join(text.split())
    assert code == 1
    assert "inputs and parameters match" not in flat
    assert "params and input were not captured in both runs" in flat
    assert "not captured in both runs: params, input, tensor, dequantized, detections" in flat


def test_full_runs_keep_the_stage_advice(tmp_path):
    """With params and input captured and equal, the raw advice stands as before."""
    rng = np.random.default_rng(3)
    common = {s: rng.integers(0, 256, 32, dtype=np.uint8).tobytes() for s in ("params", "input")}
    write_run(tmp_path / "a", {**common, "raw": b"\x01" * 32})
    write_run(tmp_path / "b", {**common, "raw": b"\x02" * 32})
    code, text = compare(tmp_path, "--json")
    assert json.loads(text)["advice"].startswith("inputs and parameters match but the chip's raw output differs")
