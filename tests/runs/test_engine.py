"""compare --batch on other engines: a Dask LocalCluster (2 workers, started and torn down here) gives the same
summary and aggregates as the local process pool; a worker lost mid-pair has its pairs run again and counted;
runs read through fsspec (memory://); bad schedulers and URLs are one-line errors; dask stays out of start-up."""

from __future__ import annotations

import json
import os
import shutil
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


def _rich_farm(tmp_path):
    """test_aggregate's farm (input, raw anchors, detections; two pairs broken) plus a pair whose B scores
    tensor differs by a few LSB (the delta histograms), a pair with a corrupt manifest, one with a single run
    and one whose B lost a buffer file."""
    from forensics.runs.run import write_run
    from tests.runs.test_aggregate import _farm as aggregate_farm, _stage_dirs

    farm = aggregate_farm(tmp_path)
    _stage_dirs(farm)
    scores = bytes(range(256)) * 8
    for source, data in (("a_libedgetpu", scores), ("b_ours", scores[:100] + bytes([scores[100] ^ 3]) + scores[101:])):
        with write_run(farm / "pair-6" / source, source) as b:
            b.add_bytes("tensor", "convert_scores", data, dtype="uint8", shape=(1, 512, 4), role="scores")
    corrupt = farm / "pair-7"
    shutil.copytree(farm / "pair-0", corrupt)
    (corrupt / "b_ours" / "manifest.json").write_text('{"format": "forensics-run", "version": 1, "sour',
                                                      encoding="utf-8")
    single = farm / "pair-8"
    shutil.copytree(farm / "pair-0" / "a_libedgetpu", single / "a_libedgetpu")
    lost = farm / "pair-9"
    shutil.copytree(farm / "pair-0", lost)
    os.unlink(lost / "b_ours" / "raw" / "convert_scores.bin")
    return farm


@pytest.fixture
def memory_farm(tmp_path):
    """(local farm, its copy at a memory:// URL); the copy is removed afterwards."""
    fsspec = pytest.importorskip("fsspec")
    farm = _rich_farm(tmp_path)
    fs = fsspec.filesystem("memory")
    root = f"/farm-{tmp_path.name}"
    fs.put(str(farm), root, recursive=True)
    try:
        yield farm, f"memory://{root.lstrip('/')}"
    finally:
        fs.rm(root, recursive=True)


def test_a_farm_read_through_fsspec_gives_the_same_summary_as_on_disk(memory_farm):
    farm, url = memory_farm
    local = batch_compare(farm, workers=1)
    remote = batch_compare(url, workers=1)
    verdicts = [r["verdict"] for r in local.rows]
    assert verdicts == ["MATCH", "DIFFER", "MATCH", "MATCH", "DIFFER", "MATCH", "DIFFER", "ERROR", "ERROR",
                        "DIFFER"]
    # the rows are the same but where an error names the pair, by its path there and by its URL here
    assert [dict(r, error=None) for r in remote.rows] == [dict(r, error=None) for r in local.rows]
    assert [r["error"] for r in remote.rows] == [r["error"] and r["error"].replace(str(farm), url)
                                                 for r in local.rows]
    aggregates = remote.aggregates.to_dict()
    assert aggregates == local.aggregates.to_dict()
    assert aggregates["stages"] and aggregates["anchors"] and aggregates["deltas"]["scores"]["differing"] == 1
    assert aggregates["detections"]["fp"] == 1
    # and the summaries written from them are the same
    from forensics.runs.batch import write_summary

    out = farm.parent
    write_summary(local, out / "local.csv")
    write_summary(remote, out / "remote.csv")
    assert (out / "local.csv").read_text().replace(str(farm), url) == (out / "remote.csv").read_text()


def test_remote_errors_are_rows_naming_the_url(memory_farm):
    _, url = memory_farm
    rows = {r["pair"]: r for r in batch_compare(url, workers=1).rows}
    assert rows["pair-7"]["error"].startswith(f"{url}/pair-7/b_ours/manifest.json: ")
    assert rows["pair-8"]["error"] == f"{url}/pair-8: holds 1 runs, expected 2"
    # a lost buffer file is a stage whose file is missing, as on disk
    assert rows["pair-9"]["raw"] == "DIFFER" and "file missing in B" in rows["pair-9"]["summary"]


def test_the_html_summary_of_a_remote_batch_links_each_differing_pairs_report(memory_farm, tmp_path, cli):
    _, url = memory_farm
    html = tmp_path / "summary.html"
    result = cli("compare", "--batch", url, "-o", tmp_path / "s.csv", "--html", html, "--json")
    assert result.code == 1, result.err
    doc = json.loads(result.out)
    differing = [r["pair"] for r in doc["rows"] if r["verdict"] == "DIFFER"]
    assert differing == ["pair-1", "pair-4", "pair-6", "pair-9"]
    page = html.read_text(encoding="utf-8")
    for pair in differing:
        report = tmp_path / "summary_pairs" / f"{pair}.html"
        assert f'href="summary_pairs/{pair}.html"' in page
        assert f"{url}/{pair}/b_ours" in report.read_text(encoding="utf-8")  # compared where it is


def test_a_buffer_that_cannot_be_read_is_an_error_row_naming_its_url(memory_farm, monkeypatch):
    from fsspec.implementations.memory import MemoryFileSystem

    _, url = memory_farm
    read = MemoryFileSystem.cat_file

    def vanishing(self, path, *args, **kwargs):  # the object store lost it between listing and reading
        if "pair-4/b_ours/input" in path:
            raise FileNotFoundError(path)
        return read(self, path, *args, **kwargs)

    monkeypatch.setattr(MemoryFileSystem, "cat_file", vanishing)
    rows = {r["pair"]: r for r in batch_compare(url, workers=1).rows}
    assert rows["pair-4"]["verdict"] == "ERROR"
    assert rows["pair-4"]["error"].startswith(f"{url}/pair-4/b_ours/input/") and "no such" in rows["pair-4"]["error"]
    assert rows["pair-0"]["verdict"] == "MATCH" and rows["pair-1"]["verdict"] == "DIFFER"


def test_a_remote_buffer_is_read_in_bounded_ranges_and_a_huge_manifest_refused(tmp_path, monkeypatch):
    fsspec = pytest.importorskip("fsspec")
    from fsspec.implementations.memory import MemoryFileSystem

    from forensics.io.dump import DEFAULT_CHUNK
    from forensics.runs import run as run_format
    from forensics.runs.run import write_run

    size = 12 << 20
    big = bytearray(size)
    for name in ("a_ref", "b_ours"):
        with write_run(tmp_path / "farm" / "pair-0" / name, name) as b:
            b.add_bytes("raw", "output", big, record_size=4)
        big[size - 5] = 1  # B differs in its last record
    fs = fsspec.filesystem("memory")
    root = f"/big-{tmp_path.name}"
    fs.put(str(tmp_path / "farm"), root, recursive=True)
    ranges = []
    read = MemoryFileSystem.cat_file

    def recording(self, path, start=None, end=None, **kwargs):
        data = read(self, path, start=start, end=end, **kwargs)
        ranges.append(len(data))
        return data

    monkeypatch.setattr(MemoryFileSystem, "cat_file", recording)
    try:
        row = batch_compare(f"memory://{root.lstrip('/')}", workers=1).rows[0]
        assert row["verdict"] == "DIFFER" and "1 of 3,145,728 anchors differ" in row["summary"]
        assert max(ranges) <= DEFAULT_CHUNK < size  # windows of the 12 MiB buffers, never the whole of one
        monkeypatch.setattr(run_format, "_MAX_MANIFEST", 64)
        row = batch_compare(f"memory://{root.lstrip('/')}", workers=1).rows[0]
        assert row["verdict"] == "ERROR" and "too large for a manifest (at most 64)" in row["error"]
        assert row["error"].startswith(f"memory://{root.lstrip('/')}/pair-0/a_ref/manifest.json: ")
    finally:
        fs.rm(root, recursive=True)


def test_remote_pairs_are_read_in_place_not_copied(memory_farm, monkeypatch):
    import tempfile

    from fsspec.spec import AbstractFileSystem

    farm, url = memory_farm

    def refuse(*args, **kwargs):
        raise AssertionError("a remote pair was copied")

    for name in ("mkdtemp", "mkstemp", "TemporaryDirectory", "NamedTemporaryFile"):
        monkeypatch.setattr(tempfile, name, refuse)
    for name in ("get", "get_file", "download", "cp_file", "copy"):
        monkeypatch.setattr(AbstractFileSystem, name, refuse)
    remote = batch_compare(url, workers=1)
    assert [r["verdict"] for r in remote.rows].count("DIFFER") == 4


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
