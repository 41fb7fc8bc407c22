"""compare --batch after issue 35: what a batch wrote inside its farm (the pages of differing pairs beside the
summary page, a summary Parquet of part files) is no pair the next time; a zip farm at the archive's root
(`zip://::file://farm.zip`) reads its pairs; a --scheduler address where something other than Dask answers (an
SSH or HTTP banner, a peer that sends a message length and then nothing) is one line, exit 2, within the
connect timeout. The peers are servers this test starts on 127.0.0.1, serving a few connections each and
stopping by themselves."""

from __future__ import annotations

import json
import os
import socket
import threading

import pytest

from forensics.runs.batch import batch_compare, write_summary
from forensics.runs.engine import NotDask, probe_scheduler
from forensics.runs.remote import join
from tests.conftest import assert_one_line_error
from tests.runs.test_batch import _farm
from tests.runs.test_engine_faults import _zip_farm


def _pairs_of(doc):
    return [row["pair"] for row in doc["rows"]]


def test_a_batch_with_its_page_inside_the_farm_reads_the_same_pairs_next_time(tmp_path, cli):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    farm = _farm(tmp_path)
    argv = ["compare", "--batch", farm, "-o", farm / "summary.csv", "--html", farm / "summary.html", "--json"]
    first = json.loads(cli(*argv).out)
    assert (farm / "summary_pairs").is_dir() and os.listdir(farm / "summary_pairs")  # pair-4's page is there
    second = json.loads(cli(*argv).out)
    assert _pairs_of(second) == _pairs_of(first) == [f"pair-{i}" for i in range(6)]
    assert [r["verdict"] for r in second["rows"]] == [r["verdict"] for r in first["rows"]]


def test_a_summary_of_part_files_inside_the_farm_is_no_pair(tmp_path):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    farm = _farm(tmp_path)
    result = batch_compare(farm, workers=1)
    write_summary(result, farm / "big.parquet", partition_rows=2)  # a directory of part files
    assert (farm / "big.parquet").is_dir()
    assert [r["pair"] for r in batch_compare(farm, workers=1).rows] == [r["pair"] for r in result.rows]


def test_a_folder_that_only_looks_like_pages_is_still_a_pair(tmp_path):
    farm = _farm(tmp_path)
    (farm / "night_pairs").mkdir()  # no night.html beside it: not what a batch writes
    rows = {r["pair"]: r for r in batch_compare(farm, workers=1).rows}
    assert rows["night_pairs"]["verdict"] == "ERROR" and "holds 0 runs" in rows["night_pairs"]["error"]


def test_a_zip_farm_at_the_archive_root(tmp_path):
    pytest.importorskip("fsspec")
    farm, archive = _zip_farm(tmp_path, at_root=True)  # pair-0/... at the root, no farm/ folder
    on_disk = batch_compare(farm, workers=1)
    zipped = batch_compare(f"zip://::file://{archive}", workers=1)
    assert [r["pair"] for r in zipped.rows] == [r["pair"] for r in on_disk.rows]
    assert [r["verdict"] for r in zipped.rows] == [r["verdict"] for r in on_disk.rows]
    assert [r["error"] is None for r in zipped.rows] == [r["error"] is None for r in on_disk.rows]


def test_joining_under_a_url_root():
    assert join("zip://", "pair-1") == "zip://pair-1"
    assert join("zip://::file:///x/farm.zip", "pair-1", "a") == "zip://pair-1/a::file:///x/farm.zip"
    assert join("zip://farm/", "pair-1") == "zip://farm/pair-1"
    assert join("s3://bucket/farm", "p") == "s3://bucket/farm/p"
    assert join("farm", "p") == "farm/p"


class Peer:
    """A TCP server on 127.0.0.1 that does `behave(conn, stop)` for each of up to `connections` clients, then
    stops; it stops anyway when the test leaves it or after `lifetime` seconds."""

    def __init__(self, behave, connections: int = 4, lifetime: float = 30.0):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.sock.settimeout(0.05)
        self.address = f"tcp://127.0.0.1:{self.sock.getsockname()[1]}"
        self.behave, self.left = behave, connections
        self.stop = threading.Event()
        timer = threading.Timer(lifetime, self.stop.set)
        timer.daemon = True
        timer.start()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        with self.sock:
            while self.left > 0 and not self.stop.is_set():
                try:
                    conn, _ = self.sock.accept()
                except (TimeoutError, socket.timeout):
                    continue
                except OSError:
                    return
                self.left -= 1
                with conn:
                    self.behave(conn, self.stop)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(timeout=10)


def _hold(conn, stop):
    """Keep the connection open without a word, until the client leaves or the server stops."""
    conn.settimeout(0.05)
    while not stop.is_set():
        try:
            if not conn.recv(4096):
                return
        except (TimeoutError, socket.timeout):
            continue
        except OSError:
            return


def ssh(conn, stop):
    conn.sendall(b"SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13\r\n")
    _hold(conn, stop)


def http(conn, stop):
    conn.sendall(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")


def length_then_nothing(conn, stop):
    conn.sendall((200).to_bytes(8, "little"))  # a message of 200 bytes is announced; none follows
    _hold(conn, stop)


def silent(conn, stop):
    _hold(conn, stop)


@pytest.mark.parametrize("behave, fragment", [(ssh, "'SSH-2.0-OpenSSH_9.6p1 Ubuntu-3ubuntu13'"),
                                              (http, "'HTTP/1.1 400 Bad Request'")])
def test_a_banner_at_the_scheduler_address_is_one_line(tmp_path, cli, behave, fragment):
    pytest.importorskip("distributed")
    farm = _farm(tmp_path)
    with Peer(behave) as peer:
        result = cli("compare", "--batch", farm, "-o", tmp_path / "s.csv", "--scheduler", peer.address)
    assert_one_line_error(result, peer.address, "no Dask scheduler answers", fragment)
    assert "MemoryError" not in result.err


def test_a_length_and_then_nothing_is_one_line_within_the_timeout(tmp_path, cli):
    pytest.importorskip("distributed")
    farm = _farm(tmp_path)
    with Peer(length_then_nothing) as peer:
        result = cli("compare", "--batch", farm, "-o", tmp_path / "s.csv", "--scheduler", peer.address)
    assert_one_line_error(result, "the peer sent 8 bytes and then nothing within 5 s")


@pytest.mark.parametrize("behave, fragment", [(silent, "the peer sent nothing within 1 s"),
                                              (length_then_nothing, "sent 8 bytes and then nothing within 1 s")])
def test_the_probe_ends_at_its_timeout(behave, fragment):
    with Peer(behave) as peer:
        with pytest.raises(NotDask, match=fragment):
            probe_scheduler(peer.address, timeout=1.0)


def test_a_closed_port_and_a_real_scheduler():
    distributed = pytest.importorskip("distributed")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]
    with pytest.raises(Exception, match="cannot reach the Dask scheduler"):
        probe_scheduler(f"tcp://127.0.0.1:{free}", timeout=1.0)
    cluster = distributed.LocalCluster(n_workers=0, processes=True, host="127.0.0.1", scheduler_port=0,
                                       dashboard_address="127.0.0.1:0")
    try:
        probe_scheduler(cluster.scheduler_address, timeout=5.0)  # a Dask scheduler passes
    finally:
        cluster.close()
