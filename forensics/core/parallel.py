"""Two halves of one job on the two cores: the second on a thread of its own while the caller's thread does the
first. numpy's loops, ISA-L's CRC and zlib release the GIL, so the halves of a large buffer really run side by
side; callers merge the two results in order, so the outcome does not depend on which half finished first."""

from __future__ import annotations

import os
import threading


def two_cores() -> bool:
    """Whether a second thread can run beside this one (more than one CPU)."""
    return (os.cpu_count() or 1) > 1


def both(first, second, *, name: str = "forensics-half"):
    """(first(), second()), second() on another thread; an exception of either is raised on the caller's thread
    (the first's when both fail), after the other half has finished."""
    outcome: list = []

    def run_second():
        try:
            outcome.append((True, second()))
        except BaseException as exc:  # handed to the caller's thread below
            outcome.append((False, exc))

    worker = threading.Thread(target=run_second, name=name, daemon=True)
    worker.start()
    try:
        result = first()
    finally:
        worker.join()
    ok, value = outcome[0]
    if not ok:
        raise value
    return result, value


def shared_progress(progress, total: int, start: int = 0):
    """A thread-safe `add(nbytes)` for `progress(done, total)` callbacks fed by both halves (done counts from
    `start`); None when there is no callback."""
    if progress is None:
        return None
    lock, done = threading.Lock(), [start]

    def add(nbytes: int) -> None:
        with lock:
            done[0] += nbytes
            progress(done[0], total)

    return add
