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

from forensics.errors import DependencyError, InputError
from forensics.runs.remote import is_url, list_folders
from forensics.verdict import Verdict

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

def list_pairs(directory) -> list[str]:
    """The pair folders under `directory` (a path or URL), sorted; InputError when there is none."""
    from forensics.runs.batch import find_pairs

    text = os.fspath(directory)
    if text.startswith("file://"):
        text = text[len("file://"):]
    if not is_url(text):
        return find_pairs(text)
    pairs = list_folders(text)
    if not pairs:
        raise InputError("holds no pair directories (each pair is a folder with two runs)", text)
    return pairs


def compare_location(pair: str, policy=None) -> tuple[dict, dict | None]:
    """The per-pair function every scheduler runs: (summary row, stats for the aggregates). Never raises."""
    from forensics.runs.batch import compare_pair

    return compare_pair(pair, policy, stats=True)


def compare_chunk(pairs: list[str], policy=None) -> list[tuple[dict, dict | None]]:
    return [compare_location(p, policy) for p in pairs]


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


def run_local(pairs, *, workers=None, policy=None, **_) -> Outcome:
    workers = max(1, min(workers or os.cpu_count() or 1, len(pairs)))

    def items():
        if workers == 1:
            for p in pairs:
                yield compare_location(p, policy)
            return
        import functools
        from concurrent.futures import ProcessPoolExecutor

        chunk = max(1, min(256, len(pairs) // (workers * 8)))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            yield from pool.map(functools.partial(compare_location, policy=policy), pairs, chunksize=chunk)

    return Outcome(items(), workers, "local")


def _dask():
    try:
        import distributed
    except ImportError:
        raise DependencyError("{scheduler} dask needs Dask: pip install 'forensics[scale]'", params=True) from None
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


def connect(scheduler: str, *, workers=None, connect_timeout: float = 5.0):
    """(client, cluster or None, worker count) for "dask" (a LocalCluster) or a scheduler address."""
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
             chunk: int | None = None, task=None, policy=None) -> Outcome:
    """The same per-pair function on Dask, in chunks of pairs (`chunk` pairs per task), at most `in_flight`
    chunks per worker queued. `task` (default compare_chunk) maps a list of pair locations to (row, stats)."""
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
        from distributed import as_completed

        try:
            results: dict[int, list] = {}
            futures = {}
            it = iter(enumerate(chunks))
            ac = as_completed(loop=client.loop)

            def submit_next():
                nxt = next(it, None)
                if nxt is not None:
                    i, part = nxt
                    fut = client.submit(task, part, **({"policy": policy} if policy is not None else {}),
                                        key=f"{KEY_PREFIX}{token}-{i}", pure=False)
                    futures[fut.key] = i
                    ac.add(fut)

            for _ in range(n * in_flight):
                submit_next()
            emit = 0
            for fut in ac:
                i = futures.pop(fut.key)
                try:
                    results[i] = fut.result()
                except Exception as exc:  # noqa: BLE001 - e.g. KilledWorker: those pairs become ERROR rows
                    results[i] = [_error_row(p, f"the worker comparing it was lost ({type(exc).__name__})")
                                  for p in chunks[i]]
                fut.release()
                submit_next()
                while emit in results:
                    yield from results.pop(emit)
                    emit += 1
            if tracked:
                lost = client.run_on_scheduler(_lost) or {}
                outcome.retried = sum(len(chunks[int(k.rsplit("-", 1)[1])]) for k in lost if token in k)
        finally:
            client.close()
            if cluster is not None:
                cluster.close()

    outcome.items = items()
    return outcome


def _error_row(pair: str, reason: str) -> tuple[dict, None]:
    from forensics.runs.batch import COLUMNS

    row = {c: None for c in COLUMNS}
    row.update(pair=pair.rstrip("/").rsplit("/", 1)[-1].rsplit(os.sep, 1)[-1], verdict=Verdict.ERROR,
               error=f"{pair}: {reason}")
    return row, None
