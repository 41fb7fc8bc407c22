"""compare --batch: a folder of run pairs -> CSV + Parquet summaries that agree with each other and with a
per-pair byte comparison; both worker modes give the same table; bad folders are one-line errors."""

from __future__ import annotations

import filecmp
import json
import os

import pytest

from forensics.runs.batch import batch_compare
from forensics.runs.ingest import ingest
from forensics.runs.run import load_run
from tests.conftest import assert_one_line_error


def _farm(tmp_path):
    """pair-0..3 identical, pair-4 broken input/scores, pair-5 holds one run only."""
    farm = tmp_path / "farm"
    farm.mkdir()
    for i in range(6):
        pair = farm / f"pair-{i}"
        pair.mkdir()
        ingest(pair / "a_libedgetpu", "libedgetpu", ["input=dumps/libedgetpu/input.bin",
                                                      "raw:convert_scores=dumps/libedgetpu/convert_scores.bin"])
        if i == 5:
            continue
        src = "broken" if i == 4 else "ours"
        ingest(pair / "b_ours", "ours", [f"input=dumps/{src}/input.bin",
                                         f"raw:convert_scores=dumps/{src}/convert_scores.bin"])
    return farm


def _oracle(pair):
    runs = sorted(p for p in os.listdir(pair) if os.path.isfile(os.path.join(pair, p, "manifest.json")))
    if len(runs) != 2:
        return "ERROR"
    a, b = (load_run(os.path.join(pair, r)) for r in runs)
    same = all(filecmp.cmp(a.file_path(e), b.file_path(b.buffer(e.stage, e.tensor)), shallow=False)
               for e in a.buffers)
    return "MATCH" if same else "DIFFER"


def test_batch_summary_csv_and_parquet(tmp_path, cli):
    pd = pytest.importorskip("pandas")  # the `tables` extra; collecting this module must not need it
    pytest.importorskip("pyarrow")
    farm = _farm(tmp_path)
    out = tmp_path / "summary.csv"
    result = cli("compare", "--batch", farm, "-o", out, "--workers", "2", "--json")
    assert result.code == 1, result.err  # pair-4 differs
    doc = json.loads(result.out)
    assert doc["workers"] == 2 and doc["pairs"] == 6
    csv = pd.read_csv(out)
    parquet = pd.read_parquet(tmp_path / "summary.parquet")
    assert list(csv["pair"]) == list(parquet["pair"]) == [f"pair-{i}" for i in range(6)]
    assert list(csv["verdict"]) == list(parquet["verdict"])
    for pair, verdict in zip(csv["pair"], csv["verdict"]):
        assert verdict == _oracle(farm / pair), pair
    broken = parquet.set_index("pair").loc["pair-4"]
    assert broken["first_divergent_stage"] == "input" and broken["input"] == "DIFFER" and broken["raw"] == "DIFFER"
    assert "holds 1 runs, expected 2" in parquet.set_index("pair").loc["pair-5", "error"]
    text = cli("compare", "--batch", farm, "-o", out).out
    assert "6 pairs: 4 match, 1 differ, 1 errors (2 worker processes)" in text


def test_one_worker_and_two_workers_agree(tmp_path):
    farm = _farm(tmp_path)
    one, two = batch_compare(farm, workers=1), batch_compare(farm, workers=2)
    assert one.rows == two.rows and two.workers == 2


@pytest.mark.parametrize("setup, argv, fragment", [
    ("empty", ["-o", "OUT"], "holds no pair directories"),
    ("missing", ["-o", "OUT"], "is not a directory"),
    ("empty", [], "needs -o SUMMARY.csv"),
    ("empty", ["-o", "summary.txt"], "must be a .csv or .parquet"),
])
def test_bad_batches(tmp_path, cli, setup, argv, fragment):
    farm = tmp_path / "farm"
    if setup == "empty":
        farm.mkdir()
    if setup == "empty" and "summary.txt" in argv:
        (farm / "p").mkdir()
    argv = [str(tmp_path / "s.csv") if a == "OUT" else (str(tmp_path / a) if a.endswith(".txt") else a) for a in argv]
    assert_one_line_error(cli("compare", "--batch", farm, *argv), fragment)
