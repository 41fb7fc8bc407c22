"""compare --batch fails loudly and loses nothing: a scheduler that makes no progress ends the batch (exit 2) with
the finished rows kept; paths and URLs are resolved on the client (workers elsewhere, in other directories,
read the same pairs); chained zip:// farms work on every scheduler and memory:// is refused where workers cannot
read it; outputs are checked before the first pair; the local pool's workers end with their client."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import zipfile

import pytest

from forensics.runs import engine
from forensics.runs.batch import batch_compare
from forensics.runs.engine import Stalled, compare_chunk, list_pairs, run_dask
from tests.conftest import assert_one_line_error
from tests.runs.test_batch import _farm

distributed = pytest.importorskip("distributed")


def compare_elsewhere(pairs, **kwargs):
    """A worker that runs in another directory than the client (as on another machine)."""
    import tempfile

    os.chdir(tempfile.mkdtemp(prefix="forensics-worker-"))
    return compare_chunk(pairs, **kwargs)


def hang_on_pair_3(pairs, **kwargs):
    """A worker that hangs on pair-3 (a board that never answers), but compares the others."""
    import threading

    if any(p.rstrip("/").endswith("pair-3") for p in pairs):
        threading.Event().wait()  # never set: no progress, ever
    return compare_chunk(pairs, **kwargs)


def test_relative_farm_paths_are_resolved_on_the_client(tmp_path, monkeypatch):
    farm = _farm(tmp_path)
    expected = [r["verdict"] for r in batch_compare(farm, workers=1).rows]
    monkeypatch.chdir(tmp_path)
    pairs = list_pairs("farm")
    assert pairs and all(os.path.isabs(p) for p in pairs)
    rows = [row for row, _ in run_dask(pairs, workers=1, scheduler="dask", chunk=1, task=compare_elsewhere)]
    assert [r["verdict"] for r in rows] == expected
    assert "ERROR" not in expected[:5]


def _zip_farm(tmp_path, *, at_root: bool = False):
    """The farm zipped as farm/pair-0/... (or, `at_root`, as pair-0/... at the archive's root)."""
    farm = _farm(tmp_path)
    archive = tmp_path / "farm.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for root, _, files in os.walk(farm):
            for name in files:
                full = os.path.join(root, name)
                z.write(full, os.path.relpath(full, farm if at_root else tmp_path))
    return farm, archive


@pytest.mark.parametrize("scheduler", ["local", "dask"])
def test_a_zip_farm_with_a_relative_path_works_on_every_scheduler(tmp_path, monkeypatch, scheduler):
    pytest.importorskip("fsspec")
    farm, _ = _zip_farm(tmp_path)
    on_disk = batch_compare(farm, workers=1)
    monkeypatch.chdir(tmp_path)
    url = "zip://farm::file://farm.zip"
    result = batch_compare(url, workers=2, scheduler=scheduler)
    assert [r["verdict"] for r in result.rows] == [r["verdict"] for r in on_disk.rows]
    assert [r["pair"] for r in result.rows] == [r["pair"] for r in on_disk.rows]
    assert all(r["error"] is None for r in result.rows[:5])


def test_memory_farms_are_refused_up_front_where_workers_cannot_read_them(cli):
    fsspec = pytest.importorskip("fsspec")
    fsspec.filesystem("memory").mkdir("/farm-in-this-process")
    result = cli("compare", "--batch", "memory://farm-in-this-process", "-o", "never.csv", "--scheduler", "dask")
    assert_one_line_error(result, "memory:// farm lives in this process only")
    assert not os.path.exists("never.csv")


def test_outputs_are_checked_before_the_first_pair(tmp_path, cli, monkeypatch):
    farm = _farm(tmp_path)
    calls = []
    monkeypatch.setattr(engine, "compare_location", lambda *a, **k: calls.append(a) or (None, None))
    result = cli("compare", "--batch", farm, "-o", tmp_path / "missing" / "summary.csv", "--workers", "1")
    assert_one_line_error(result, "output directory does not exist")
    assert calls == []


def test_a_hung_worker_ends_the_batch_and_keeps_the_finished_rows(tmp_path):
    farm = _farm(tmp_path)
    pairs = list_pairs(farm)
    outcome = run_dask(pairs, workers=1, scheduler="dask", chunk=1, in_flight=1, task=hang_on_pair_3,
                       stall_timeout=3)
    rows = []
    with pytest.raises(Stalled) as caught:
        for row, _ in outcome:
            rows.append(row)
    assert [r["pair"] for r in rows] == ["pair-0", "pair-1", "pair-2"]
    assert caught.value.done == 3 and caught.value.total == 6
    assert "3 of 6 pairs not compared" in str(caught.value)


def test_a_cluster_without_workers_ends_the_batch_with_one_line(tmp_path, cli):
    farm = _farm(tmp_path)
    cluster = distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", scheduler_port=0,
                                       dashboard_address="127.0.0.1:0")
    try:
        result = cli("compare", "--batch", farm, "-o", tmp_path / "summary.csv", "--scheduler",
                     cluster.scheduler_address, "--stall-timeout", "2")
    finally:
        cluster.close()
    assert_one_line_error(result, "no pair finished for 2 s")
    assert "6 of 6 pairs not compared" in result.err and "no row was finished" in result.err


def test_a_stalled_batch_writes_the_rows_it_finished(tmp_path, monkeypatch):
    from forensics import reports

    farm = _farm(tmp_path)
    real = engine.run_local

    def stalls_after_two(pairs, **kwargs):
        outcome = real(pairs, **kwargs)

        def items():
            for i, item in enumerate(outcome.items):
                if i == 2:
                    raise engine._stalled(2, len(pairs), "the local pool", 120)
                yield item

        return engine.Outcome(items(), outcome.workers, outcome.name)

    monkeypatch.setattr(engine, "run_local", stalls_after_two)
    with pytest.raises(Exception) as caught:
        reports.compare(batch=farm, output=tmp_path / "summary.csv", workers=1)
    assert "the 2 finished rows are in" in str(caught.value)
    lines = (tmp_path / "summary.csv").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3 and lines[1].startswith("pair-0,") and lines[2].startswith("pair-1,")


_CLIENT = r"""
import os, sys, threading
from concurrent.futures import ProcessPoolExecutor
from forensics.runs.engine import _die_with_parent
pool = ProcessPoolExecutor(max_workers=2, initializer=_die_with_parent)
pids = set()
for _ in range(8):
    pids.add(pool.submit(os.getpid).result())
print(" ".join(map(str, sorted(pids))), flush=True)
threading.Event().wait()  # the client waits until it is killed
"""


@pytest.mark.skipif(not hasattr(os, "pidfd_open"), reason="waits on the workers with pidfd (Linux)")
def test_the_pool_dies_with_its_client(tmp_path):
    import select

    client = subprocess.Popen([sys.executable, "-c", _CLIENT], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.getcwd()})
    workers = [int(p) for p in client.stdout.readline().split()]
    assert workers
    fds = [os.pidfd_open(pid) for pid in workers]
    try:
        client.send_signal(signal.SIGKILL)
        client.wait()
        for fd in fds:  # readable when that process has ended; 30 s is a bound, not a measurement
            assert select.select([fd], [], [], 30)[0] == [fd]
    finally:
        for fd in fds:
            os.close(fd)
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
