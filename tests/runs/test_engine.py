"""compare --batch on other engines: a Dask LocalCluster (2 workers, started and torn down here) gives the same
summary and aggregates as the local process pool; a worker lost mid-pair has its pairs run again and counted;
runs read through fsspec (memory://); bad schedulers and URLs are one-line errors; dask stays out of start-up."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from forensics.runs.batch import batch_compare
from forensics.runs.engine import compare_chunk, run_dask
from tests.conftest import assert_one_line_error
from tests.runs.test_batch import _farm

pytest.importorskip("distributed")


def test_local_and_dask_local_cluster_agree(tmp_path):
    farm = _farm(tmp_path)
    local = batch_compare(farm, workers=2)
    dask = batch_compare(farm, workers=2, scheduler="dask")
    assert dask.scheduler == "dask" and dask.workers == 2 and dask.retried == 0
    assert dask.rows == local.rows
    assert dask.aggregates.to_dict() == local.aggregates.to_dict()
    assert [r["verdict"] for r in dask.rows] == ["MATCH"] * 4 + ["DIFFER", "ERROR"]


def lose_worker_once(pairs):
    """The first time a pair is seen, its worker process dies (as a board farm's node would)."""
    marker = os.path.join(os.path.dirname(pairs[0]), "." + os.path.basename(pairs[0]) + ".seen")
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(1)
    return compare_chunk(pairs)


def test_lost_worker_pairs_are_run_again_and_counted(tmp_path):
    farm = _farm(tmp_path)
    pairs = [str(farm / "pair-0"), str(farm / "pair-4")]
    outcome = run_dask(pairs, workers=2, scheduler="dask", chunk=1, task=lose_worker_once)
    rows = [row for row, _ in outcome]
    assert [r["verdict"] for r in rows] == ["MATCH", "DIFFER"]
    assert outcome.retried == 2


def test_runs_read_through_fsspec_memory(tmp_path):
    fsspec = pytest.importorskip("fsspec")
    farm = _farm(tmp_path)
    fs = fsspec.filesystem("memory")
    fs.put(str(farm), "/farm", recursive=True)
    try:
        remote = batch_compare("memory://farm", workers=1)
        local = batch_compare(farm, workers=1)
        assert remote.rows[:5] == local.rows[:5]
        assert remote.rows[5]["verdict"] == "ERROR" and "holds 1 runs" in remote.rows[5]["error"]
        assert remote.aggregates.to_dict() == local.aggregates.to_dict()
    finally:
        fs.rm("/farm", recursive=True)


def test_broken_pair_is_an_error_row_and_the_batch_goes_on(tmp_path):
    farm = _farm(tmp_path)
    (farm / "pair-2" / "b_ours" / "manifest.json").write_text("{not json", encoding="utf-8")
    result = batch_compare(farm, workers=1)
    row = {r["pair"]: r for r in result.rows}["pair-2"]
    assert row["verdict"] == "ERROR" and "malformed manifest JSON" in row["error"]
    assert sum(r["verdict"] == "MATCH" for r in result.rows) == 3


@pytest.mark.parametrize("where, argv, fragment", [
    ("tmp", ["--scheduler", "tcp://127.0.0.1:9"], "cannot reach the Dask scheduler"),
    ("tmp", ["--scheduler", "yarn"], "scheduler must be local, dask or tcp://HOST:PORT"),
    ("nosuch://farm", [], "unknown URL protocol nosuch://"),
    ("s3://bucket/farm", [], "the s3:// protocol is not installed"),
    ("memory://empty-farm", [], "holds no pair directories"),
])
def test_bad_engines_and_urls(tmp_path, cli, where, argv, fragment):
    if where.startswith("s3://"):
        try:
            import s3fs  # noqa: F401
            pytest.skip("s3fs is installed here")
        except ImportError:
            pass
    if where.startswith("memory://"):
        import fsspec

        fsspec.filesystem("memory").mkdir("/empty-farm")
    farm = _farm(tmp_path) if where == "tmp" else where
    assert_one_line_error(cli("compare", "--batch", farm, "-o", tmp_path / "s.csv", *argv), fragment)


def test_dask_is_not_imported_by_other_commands():
    code = ("import sys; from forensics.cli import main; main(['crc', 'dumps/ours/input.bin']); "
            "print(json.dumps(sorted(m for m in ('dask', 'distributed', 'fsspec', 'faster_coco_eval') "
            "if m in sys.modules)))")
    out = subprocess.run([sys.executable, "-c", "import json; " + code], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": os.getcwd()}, check=True).stdout
    assert json.loads(out.strip().splitlines()[-1]) == []


def test_large_summaries_are_partitioned_parquet(tmp_path):
    import pandas as pd

    from forensics.runs.batch import write_summary

    farm = _farm(tmp_path)
    result = write_summary(batch_compare(farm, workers=1), tmp_path / "s.csv", partition_rows=4)
    parts = sorted(os.listdir(tmp_path / "s.parquet"))
    assert parts == ["part-00000.parquet", "part-00001.parquet"]
    table = pd.read_parquet(tmp_path / "s.parquet")
    csv = pd.read_csv(tmp_path / "s.csv")
    assert list(table["pair"]) == list(csv["pair"]) == [r["pair"] for r in result.rows]
    assert list(table["verdict"]) == list(csv["verdict"])
    # a small batch later replaces the directory with one file
    write_summary(batch_compare(farm, workers=1), tmp_path / "s.csv")
    assert os.path.isfile(tmp_path / "s.parquet")
