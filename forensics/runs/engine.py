"""Where `compare --batch` runs its pairs: a local process pool, or Dask (a LocalCluster on this machine, or an
existing cluster at tcp://HOST:PORT), all calling the same per-pair function; and where the runs are read from:
local paths or fsspec URLs (memory://, s3://, gs:// when their protocol packages are installed).

Dask and fsspec are imported only when a batch asks for them, so other commands start as fast as before.
A pair at a URL is read in place by the worker that compares it (forensics.runs.remote: the manifests read
whole, the buffers streamed through the filesystem); nothing of the farm is copied to local disk. A pair that
fails is an ERROR row; a worker that dies has its pairs run again by the Dask scheduler, and those pairs are
counted (`retried`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import DependencyError, InputError
from forensics.runs.remote import is_url, list_folders
from forensics.core.verdict import Verdict

PLUGIN = "forensics-lost-work"
KEY_PREFIX = "forensics-pairs-"
# Our LocalCluster's housekeeping, slowed down: measured on an idle 2-worker cluster over 10 s, the event loops'
# 20 ms tick, the 0.5 s system monitor and the workers' 0.1 s memory monitor cost 0.08 of a core in this
# process and 0.03 in each worker; at 1 s / 2 s / 1 s, 0.015 and 0.006. That CPU is the pairs': on a shared
# machine the whole batch (this process and its workers) gets one session's share of the cores. The workers'
# statistical profiler (it samples every stack 100 times a second) is off for the same reason.
QUIET_CLUSTER = {"distributed.worker.profile.enabled": False, "distributed.admin.tick.interval": "1s",
                 "distributed.admin.system-monitor.interval": "2s",
                 "distributed.worker.memory.monitor-interval": "1s"}


# --- where the runs are --------------------------------------------------------------------------------------

def resolve_location(location) -> str:
    """`location` as every worker can read it, wherever it runs: a local path made absolute, file:// taken off,
    and in a chained URL (zip://farm::file://x.zip) each local part made absolute. memory:// is kept (the
    scheduler check refuses it where it cannot be read)."""
    text = os.fspath(location)
    if not is_url(text) and "::" not in text:
        return os.path.abspath(text[len("file://"):] if text.startswith("file://") else text)
    head, *chain = text.split("::")
    resolved = []
    for part in chain:
        if part.startswith("file://"):
            part = "file://" + os.path.abspath(part[len("file://"):])
        elif "://" not in part:
            part = os.path.abspath(part)
        resolved.append(part)
    return "::".join([head, *resolved])


def list_pairs(directory) -> list[str]:
    """The pair folders under `directory` (a path or URL), sorted, each resolved on this machine (absolute
    paths, chained URLs with absolute local parts); InputError when there is none."""
    from forensics.runs.pairs import find_pairs

    text = resolve_location(directory)
    if not is_url(text):
        return find_pairs(text)
    pairs = list_folders(text)
    if not pairs:
        raise InputError("holds no pair directories (each pair is a folder with two runs)", text)
    return pairs


def check_reachable(directory, kind: str) -> None:
    """Refuse, before any pair is sent, a farm that the scheduler's workers cannot read: memory:// lives in
    this process only (the local pool's forked workers inherit it; a Dask worker has its own, empty one)."""
    text = os.fspath(directory)
    if kind != "local" and text.startswith("memory://"):
        raise InputError("a memory:// farm lives in this process only: its pairs can be compared by "
                         "{scheduler} local, not by Dask workers (copy the farm to a path or an object "
                         "store they can read)", text, params=True)


def compare_location(pair: str, policy=None, verify_files: bool = False) -> tuple[dict, dict | None]:
    """The per-pair function every scheduler runs: (summary row, stats for the aggregates). Never raises."""
    from forensics.runs.pairs import compare_pair

    return compare_pair(pair, policy, stats=True, verify_files=verify_files)


def compare_chunk(pairs: list[str], policy=None, verify_files: bool = False) -> list[tuple[dict, dict | None]]:
    return [compare_location(p, policy, verify_files) for p in pairs]


# --- schedulers ----------------------------------------------------------------------------------------------

def scheduler_kind(scheduler: str) -> str:
    """"local", "dask" or "remote"; InputError for anything else."""
    if scheduler in ("local", "dask"):
        return scheduler
    if isinstance(scheduler, str) and scheduler.startswith(("tcp://", "tls://")) and ":" in scheduler[6:]:
        return "remote"
    raise InputError("{scheduler} must be local, dask or tcp://HOST:PORT, got " + repr(scheduler).replace("{", "{{")
                     .replace("}", "}}"), params=True)


@dataclass
class Outcome:
    """Iterating yields (row, stats) in pair order; `workers`, `name`, `retried` are known once it is done."""

    items: object
    workers: int
    name: str
    retried: int | None = 0

    def __iter__(self):
        yield from self.items


STALL_TIMEOUT = 120.0


class Stalled(InputError):
    """No pair finished for `stall_timeout` seconds: the scheduler or all its workers are gone. `done` is how
    many pairs were compared (their rows were yielded before this was raised)."""

    def __init__(self, message: str, *, done: int, total: int, scheduler: str):
        super().__init__(message)
        self.done, self.total, self.scheduler = done, total, scheduler


def _stalled(done: int, total: int, scheduler: str, seconds: float) -> Stalled:
    return Stalled(f"no pair finished for {seconds:g} s on {scheduler} (its workers are gone or hung): "
                   f"{total - done:,} of {total:,} pairs not compared", done=done, total=total, scheduler=scheduler)


def _die_with_parent() -> None:
    """A pool worker's initializer: end this process when the process that made the pool ends, however it
    ends (kill -9 too), instead of waiting for work forever as an orphan."""
    import multiprocessing
    import threading

    parent = multiprocessing.parent_process()
    if parent is None:
        return

    def watch():
        from multiprocessing.connection import wait

        wait([parent.sentinel])  # ready when the parent is gone
        os._exit(3)

    threading.Thread(target=watch, name="forensics-die-with-parent", daemon=True).start()


def _in_order(chunks, submit, wait_first, *, in_flight, stall_timeout, scheduler, lost=None):
    """Yield each chunk's rows in chunk order as results arrive, keeping a few chunks in flight; Stalled when
    none finishes for `stall_timeout` seconds. `submit(i)` returns a future, `wait_first(futures, timeout)`
    the finished ones (or none); a chunk whose worker failed becomes `lost(location, reason)` items (default:
    ERROR rows)."""
    lost = lost or _error_row
    results, futures, emit, done, nxt = {}, {}, 0, 0, 0
    total = sum(len(chunk) for chunk in chunks)

    def refill():
        nonlocal nxt
        while nxt < len(chunks) and len(futures) < in_flight:
            futures[submit(nxt)] = nxt
            nxt += 1

    refill()
    while futures:
        finished = wait_first(list(futures), stall_timeout)
        if not finished:
            raise _stalled(done, total, scheduler, stall_timeout)
        for fut in finished:
            i = futures.pop(fut)
            try:
                results[i] = fut.result()
            except Exception as exc:  # noqa: BLE001 - a lost worker: those pairs become ERROR rows
                results[i] = [lost(p, f"the worker comparing it was lost ({type(exc).__name__})")
                              for p in chunks[i]]
        refill()
        while emit in results:
            rows = results.pop(emit)
            done += len(rows)
            yield from rows
            emit += 1


def _task_options(policy, verify_files: bool) -> dict:
    """The keywords every task takes (compare_chunk's), only those set: a task that has no policy needs none."""
    options = {"policy": policy} if policy is not None else {}
    if verify_files:
        options["verify_files"] = True
    return options


def run_local(pairs, *, workers=None, policy=None, verify_files: bool = False,
              stall_timeout: float = STALL_TIMEOUT, task=None, lost=None, **_) -> Outcome:
    """`task` (default compare_chunk) maps a list of locations to one item each, in a pool of `workers`
    processes (one per core by default; one: in this process); `lost(location, reason)` is the item of a
    location whose worker was lost (default: an ERROR row)."""
    task = task or compare_chunk
    options = _task_options(policy, verify_files)
    workers = max(1, min(workers or os.cpu_count() or 1, len(pairs)))

    def items():
        if workers == 1:
            for p in pairs:
                yield from task([p], **options)
            return
        from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
        from concurrent.futures.process import BrokenProcessPool

        size = max(1, min(256, len(pairs) // (workers * 8)))
        chunks = [pairs[i:i + size] for i in range(0, len(pairs), size)]
        state = {"pool": ProcessPoolExecutor(max_workers=workers, initializer=_die_with_parent)}

        def submit(i):
            try:
                return state["pool"].submit(task, chunks[i], **options)
            except BrokenProcessPool:  # a worker died: the pool is gone; a new one takes the rest
                state["pool"].shutdown(wait=False, cancel_futures=True)
                state["pool"] = ProcessPoolExecutor(max_workers=workers, initializer=_die_with_parent)
                return state["pool"].submit(task, chunks[i], **options)

        def first(futures, timeout):
            return wait(futures, timeout=timeout, return_when=FIRST_COMPLETED).done

        try:
            yield from _in_order(chunks, submit, first, in_flight=workers * 4, stall_timeout=stall_timeout,
                                 scheduler="the local pool", lost=lost)
        finally:
            state["pool"].shutdown(wait=False, cancel_futures=True)

    return Outcome(items(), workers, "local")


def _dask():
    try:
        import distributed
    except ImportError:
        raise DependencyError("{scheduler} dask needs Dask: pip install 'npu-forensics[scale]'", params=True) from None
    return distributed


def _plugin_class():
    from distributed.diagnostics.plugin import SchedulerPlugin

    class LostWork(SchedulerPlugin):
        """Counts how often each of our tasks went back from `processing` (its worker was lost)."""

        name = PLUGIN

        def __init__(self):
            self.lost = {}

        def transition(self, key, start, finish, *args, **kwargs):
            if start == "processing" and finish in ("released", "waiting") and str(key).startswith(KEY_PREFIX):
                self.lost[str(key)] = self.lost.get(str(key), 0) + 1

    return LostWork


def _lost(dask_scheduler=None):
    plugin = dask_scheduler.plugins.get(PLUGIN)
    return dict(plugin.lost) if plugin is not None else None


# A Dask comm's handshake is one message of a few hundred bytes (distributed.comm.core.connect); a peer that
# announces more is not a Dask scheduler.
MAX_HANDSHAKE = 1 << 16
MAX_FRAMES = 64


class NotDask(InputError):
    """Something answered at a scheduler address, but not as a Dask scheduler does."""


def probe_scheduler(address: str, timeout: float = 5.0) -> None:
    """Refuse within `timeout` seconds an address where no Dask scheduler answers (InputError), before
    distributed's client reads from it: that client takes the first 8 bytes a peer sends as the length of a
    message and allocates it (an SSH banner, `SSH-2.0-`, is a length of 2.82 EiB) and waits for the message
    without end (a peer that sends a length and then nothing hangs it).

    A Dask server speaks first: on accepting a connection it writes its handshake (distributed.comm.core:
    `on_connection` writes, then reads), a TCP comm message being an 8-byte little-endian length, then that
    many bytes: a frame count, one 8-byte length per frame, the frames (distributed.comm.tcp). The probe reads
    one such message within the time left, checks its lengths, and closes the connection."""
    import socket
    import struct
    import time

    deadline = time.monotonic() + timeout
    host, _, port = address.split("://", 1)[1].rpartition(":")
    host = host.strip("[]")
    try:
        port_number = int(port)
    except ValueError:
        raise InputError(f"not a Dask scheduler address: the port {port!r} is not a number", address) from None

    def left() -> float:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError
        return remaining

    sent = 0  # bytes the peer sent so far

    def read(sock, n: int) -> bytes:
        nonlocal sent
        buf = bytearray()
        while len(buf) < n:
            try:
                sock.settimeout(left())
                chunk = sock.recv(n - len(buf))
            except (TimeoutError, socket.timeout):
                what = f"{sent + len(buf)} bytes and then nothing" if sent + len(buf) else "nothing"
                raise NotDask(f"no Dask scheduler answers: the peer sent {what} within {timeout:g} s (a Dask "
                              "scheduler sends its handshake at once)", address) from None
            if not chunk:
                raise NotDask(f"no Dask scheduler answers: the peer closed the connection after "
                              f"{sent + len(buf)} bytes, before a handshake", address)
            buf += chunk
        sent += n
        return bytes(buf)

    try:
        sock = socket.create_connection((host, port_number), timeout=timeout)
    except (OSError, OverflowError) as exc:
        reason = (exc.strerror if isinstance(exc, OSError) else None) or str(exc) or type(exc).__name__
        raise InputError(f"cannot reach the Dask scheduler within {timeout:g} s ({reason[:160]})", address) from None
    with sock:
        try:
            (total,) = struct.unpack("<Q", read(sock, 8))
            if not 16 <= total <= MAX_HANDSHAKE:
                head = read_banner(sock, total)
                raise NotDask(f"no Dask scheduler answers: the peer sent {head} (a Dask handshake is one "
                              "message of at most 64 KiB)", address)
            body = read(sock, total)
        except OSError as exc:
            raise InputError(f"cannot reach the Dask scheduler: {exc.strerror or exc}", address) from None
    (frames,) = struct.unpack_from("<Q", body)
    if not 1 <= frames <= MAX_FRAMES or 8 * (1 + frames) > total:
        raise NotDask(f"no Dask scheduler answers: the peer's first message is no Dask handshake ({frames} frames "
                      f"in {total} bytes)", address)


def read_banner(sock, total: int) -> str:
    """What a peer that is no Dask scheduler sent first, for the message: its first bytes as text when they read
    as text (an SSH or HTTP banner), else the length they would announce."""
    import struct

    head = struct.pack("<Q", total)
    try:
        sock.settimeout(0.2)
        head += sock.recv(56)
    except OSError:
        pass
    text = head.split(b"\r")[0].split(b"\n")[0]
    if text and all(32 <= c < 127 for c in text):
        return repr(text.decode("ascii"))
    return f"a message length of {total:,} bytes"


def connect(scheduler: str, *, workers=None, connect_timeout: float = 5.0):
    """(client, cluster or None, worker count) for "dask" (a LocalCluster) or a scheduler address (probed first:
    probe_scheduler)."""
    import logging

    distributed = _dask()
    if scheduler == "dask":
        n = max(1, workers or os.cpu_count() or 1)
        import dask

        with dask.config.set(QUIET_CLUSTER):
            try:
                cluster = distributed.LocalCluster(n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1",
                                                   scheduler_port=0, dashboard_address="127.0.0.1:0",
                                                   silence_logs=logging.ERROR)
            except (OSError, RuntimeError, TimeoutError) as exc:
                raise DependencyError(f"could not start a Dask LocalCluster of {n} workers: "
                                      f"{str(exc).splitlines()[0] if str(exc) else type(exc).__name__}") from None
            return distributed.Client(cluster, set_as_default=False), cluster, n
    if scheduler.startswith("tcp://"):  # a TLS server speaks second: only its handshake in distributed says
        probe_scheduler(scheduler, connect_timeout)
    try:
        client = distributed.Client(scheduler, timeout=connect_timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        reason = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"cannot reach the Dask scheduler within {connect_timeout:g} s ({reason[:160]})",
                         scheduler) from None
    except ValueError as exc:
        raise InputError(f"not a Dask scheduler address: {exc}", scheduler) from None
    n = len(client.scheduler_info().get("workers", {})) or 1
    return client, None, n


def run_dask(pairs, *, workers=None, scheduler="dask", connect_timeout: float = 5.0, in_flight: int = 4,
             chunk: int | None = None, task=None, policy=None, verify_files: bool = False,
             stall_timeout: float = STALL_TIMEOUT, lost=None) -> Outcome:
    """The same per-pair function on Dask, in chunks of pairs (`chunk` pairs per task), at most `in_flight`
    chunks per worker queued. `task` (default compare_chunk) maps a list of pair locations to (row, stats);
    `lost` as for run_local."""
    task = task or compare_chunk
    import uuid

    client, cluster, n = connect(scheduler, workers=workers, connect_timeout=connect_timeout)
    outcome = Outcome(None, n, "dask" if cluster is not None else scheduler, None)
    try:
        client.register_plugin(_plugin_class()(), name=PLUGIN)
        tracked = True
    except Exception:  # noqa: BLE001 - a cluster that refuses plugins still compares; retries are then unknown
        tracked = False

    size = chunk or max(1, min(256, len(pairs) // (n * 16) or 1))
    chunks = [pairs[i:i + size] for i in range(0, len(pairs), size)]
    token = uuid.uuid4().hex[:12]

    def items():
        import distributed

        def submit(i):
            return client.submit(task, chunks[i], **_task_options(policy, verify_files),
                                 key=f"{KEY_PREFIX}{token}-{i}", pure=False)

        def first(futures, timeout):
            try:
                with client.as_current():  # distributed.wait looks for its client there
                    return distributed.wait(futures, timeout=timeout, return_when="FIRST_COMPLETED").done
            except TimeoutError:
                return set()

        try:
            yield from _in_order(chunks, submit, first, in_flight=n * in_flight, stall_timeout=stall_timeout,
                                 scheduler=outcome.name, lost=lost)
            if tracked:
                lost_keys = client.run_on_scheduler(_lost) or {}
                outcome.retried = sum(len(chunks[int(k.rsplit("-", 1)[1])]) for k in lost_keys if token in k)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    outcome.items = items()
    return outcome


def _error_row(pair: str, reason: str) -> tuple[dict, None]:
    from forensics.runs.pairs import COLUMNS, basename

    row = {c: None for c in COLUMNS}
    row.update(pair=basename(pair), verdict=Verdict.ERROR,
               error=f"{pair}: {reason}")
    return row, None
