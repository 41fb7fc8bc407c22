"""Writers of one run take turns: concurrent ingests (real processes, started together) lose no buffer, and each
reports only buffers that are in the manifest it wrote."""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys

import pytest

from forensics.io.outputs import exclusive, lock_path
from forensics.runs.ingest import ingest
from forensics.runs.run import load_run, verify_run

WRITERS = 6


def _writer(run: str, spec: str, barrier, conn) -> None:
    barrier.wait()  # all writers start together
    try:
        result = ingest(run, "ours", [spec])
        conn.send(("ok", [e.label for e in result.run.buffers], result.created))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent
        conn.send(("error", repr(exc), None))


@pytest.mark.parametrize("exists", [True, False], ids=["into-a-run", "into-no-run-yet"])
def test_concurrent_ingests_keep_every_buffer(tmp_path, exists):
    run = tmp_path / "R"
    specs = []
    for i in range(WRITERS):
        (tmp_path / f"t{i}.bin").write_bytes(bytes([i]) * (100 + i))
        specs.append(f"tensor:t{i}={tmp_path / f't{i}.bin'}")
    if exists:
        (tmp_path / "in.bin").write_bytes(b"input")
        ingest(run, "ours", [f"input={tmp_path / 'in.bin'}"])
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    barrier = ctx.Barrier(WRITERS)
    pipes, procs = [], []
    for spec in specs:
        here, there = ctx.Pipe()
        proc = ctx.Process(target=_writer, args=(os.fspath(run), spec, barrier, there))
        proc.start()
        pipes.append(here)
        procs.append(proc)
    reports = [pipe.recv() for pipe in pipes]
    for proc in procs:
        proc.join()
    assert [r[0] for r in reports] == ["ok"] * WRITERS, reports
    final = load_run(run)
    want = {f"tensor:t{i}" for i in range(WRITERS)} | ({"input"} if exists else set())
    assert {e.label for e in final.buffers} == want
    assert all(c.ok for c in verify_run(final))
    for i, (_, labels, _) in enumerate(reports):
        assert f"tensor:t{i}" in labels  # what each writer reports is in the manifest it wrote
    assert sum(created for _, _, created in reports) == (0 if exists else 1)  # one made it, the others added
    assert sorted(os.listdir(tmp_path)) == sorted([*(f"t{i}.bin" for i in range(WRITERS)), "R",
                                                   *(["in.bin"] if exists else [])])  # no lock, no temporary
    names = sorted(os.listdir(run))
    assert names == ["input", "manifest.json", "tensor"] if exists else ["manifest.json", "tensor"]


def test_concurrent_cli_ingests_as_in_the_issue(tmp_path):
    """`forensics ingest R tensor:a=A & forensics ingest R tensor:b=B; wait`: both buffers are in R."""
    for name in "ab":
        (tmp_path / f"{name}.bin").write_bytes(name.encode() * 50)
    (tmp_path / "in.bin").write_bytes(b"input")
    ingest(tmp_path / "R", "ours", [f"input={tmp_path / 'in.bin'}"])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")])}
    procs = [subprocess.Popen([sys.executable, "-m", "forensics", "ingest", str(tmp_path / "R"), "--source", "ours",
                               f"tensor:{n}={tmp_path / f'{n}.bin'}"], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE) for n in "ab"]
    results = [p.communicate() + (p.returncode,) for p in procs]
    assert [r[2] for r in results] == [0, 0], results
    assert {e.label for e in load_run(tmp_path / "R").buffers} == {"input", "tensor:a", "tensor:b"}


def _hold(path: str, conn, release) -> None:
    with exclusive(path):
        conn.send("held")
        release.wait()


def test_a_second_writer_waits_and_gives_up_naming_the_holder(tmp_path):
    from forensics.core.errors import InputError

    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    here, there = ctx.Pipe()
    release = ctx.Event()
    holder = ctx.Process(target=_hold, args=(os.fspath(tmp_path / "R"), there, release))
    holder.start()
    try:
        assert here.recv() == "held"
        with pytest.raises(InputError, match=rf"another process \(pid {holder.pid}\) has been writing it"):
            with exclusive(tmp_path / "R", timeout=0):
                pass
    finally:
        release.set()
        holder.join()
    with exclusive(tmp_path / "R", timeout=0):  # free again
        assert os.path.exists(lock_path(tmp_path / "R"))
    assert not os.path.exists(lock_path(tmp_path / "R"))


def test_a_killed_writer_leaves_no_stale_lock(tmp_path):
    """The kernel lets go of a dead writer's lock: the next writer proceeds at once (no timeout needed)."""
    ctx = multiprocessing.get_context("fork" if sys.platform != "win32" else "spawn")
    here, there = ctx.Pipe()
    holder = ctx.Process(target=_hold, args=(os.fspath(tmp_path / "R"), there, ctx.Event()))
    holder.start()
    assert here.recv() == "held"
    holder.kill()
    holder.join()
    assert os.path.exists(lock_path(tmp_path / "R"))  # the file is left, its lock is not
    with exclusive(tmp_path / "R", timeout=0):
        pass
    assert not os.path.exists(lock_path(tmp_path / "R"))
