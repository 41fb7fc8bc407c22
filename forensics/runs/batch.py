"""Compare many run pairs (a regression farm's nightly output) into one summary table, on every core.

Layout: DIR/<pair>/ holds exactly two runs (directories with manifest.json); A is the first by name (name them
`a_libedgetpu` / `b_ours`, or `1-reference` / `2-candidate`). Each pair is compared in a worker process
(ProcessPoolExecutor, one per core by default) and summarised as one row; a pair that cannot be compared is a
row with verdict ERROR and the one-line reason. The table is written as CSV and Parquet with pandas (the
`tables` extra, imported lazily).
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property

from forensics.core import serial
from forensics.core.errors import DependencyError, InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict, overall
from forensics.runs.pairs import COLUMNS, partitioned_summary


def _aggregates_of(doc: dict):
    from forensics.runs.aggregate import BatchAggregates

    return BatchAggregates.from_dict(doc)


@dataclass(frozen=True)
class BatchResult(serial.Serial):
    JSON_DERIVED = (("pairs", "pair_count"), "counts")
    JSON_ORDER = ("directory", "pairs", "workers", "counts", "outputs", "rows", "scheduler", "retried")

    directory: str
    rows: tuple[dict, ...]
    workers: int
    outputs: tuple[str, ...] = field(default=())
    # forensics.runs.aggregate.BatchAggregates
    aggregates: object | None = field(default=None, compare=False,
                                      metadata=serial.json(omit_none=True, decode=_aggregates_of))
    scheduler: str = "local"
    retried: int | None = 0  # pairs whose worker was lost and that the scheduler ran again (None: not known)

    @property
    def counts(self) -> Counter:
        return Counter(r["verdict"] for r in self.rows)

    @property
    def pair_count(self) -> int:
        return len(self.rows)

    @cached_property
    def judgement(self) -> Judgement:
        """The batch's one judgement (judge_batch): its verdict line on every face (made once: a farm's rows)."""
        return judge_batch(self)

    @property
    def verdict(self) -> Verdict:
        """MATCH / WITHIN TOLERANCE when every pair passes; DIFFER when some differ (or failed); ERROR when none
        could be compared."""
        return self.judgement.verdict

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    def frame(self):
        try:
            import pandas as pd
        except ImportError:
            raise DependencyError("batch summaries need pandas: pip install 'npu-forensics[export]'") from None
        return pd.DataFrame(list(self.rows), columns=list(COLUMNS))



def judge_batch(result: BatchResult) -> Judgement:
    """A batch's one judgement: the pairs' verdicts as one (forensics.core.verdict.overall), and the message
    counting them (`6 pairs: 4 match, 1 differ, 1 errors (2 worker processes)`), with a reason per kind of pair
    that does not pass."""
    counts = Counter(Verdict(r["verdict"]) for r in result.rows)
    verdict = overall(counts.elements())
    within = f"{counts[Verdict.WITHIN]} within tolerance, " if counts[Verdict.WITHIN] else ""
    engine = (f"{result.workers} worker processes" if result.scheduler == "local"
              else f"{result.scheduler}, {result.workers} workers")
    differing = sum(n for v, n in counts.items() if not v.passed and v is not Verdict.ERROR)
    message = (f"{len(result.rows)} pairs: {counts[Verdict.MATCH]} match, {within}{differing} differ, "
               f"{counts[Verdict.ERROR]} errors ({engine})")
    if result.retried:
        message += f"; {result.retried} pairs run again after a worker was lost"
    reasons = []
    if differing:
        reasons.append(Reason("pairs_differ", f"{differing} pairs differ"))
    if counts[Verdict.ERROR]:
        reasons.append(Reason("pairs_failed", f"{counts[Verdict.ERROR]} pairs could not be compared"))
    if verdict is Verdict.WITHIN:
        reasons.append(Reason("within_tolerance", f"{counts[Verdict.WITHIN]} pairs within tolerance"))
    return Judgement(verdict, message, tuple(reasons))


def batch_compare(directory, *, workers: int | None = None, scheduler: str = "local", geometry=None,
                  policy=None, progress=None, connect_timeout: float = 5.0,
                  verify_files: bool = False, stall_timeout: float | None = None) -> BatchResult:
    """Compare every pair under `directory` (a path or an fsspec URL) and aggregate them, streamed.

    `scheduler`: "local" (a process pool, `workers` processes, default one per core), "dask" (a Dask
    LocalCluster of `workers` worker processes on this machine) or "tcp://HOST:PORT" (an existing Dask cluster).
    `geometry` (forensics.decode.geometry.AnchorGeometry) names the worst anchors' places; `policy`
    (forensics.core.tolerance.TolerancePolicy; default exact) judges differing buffers; `progress(pairs_done, pairs)`
    is called as rows come in. Each pair's buffers are judged by the CRCs their manifests recorded at capture
    or ingest (a file whose size disagrees is read); `verify_files` reads every file and takes its CRC again.
    Paths and URLs are resolved here, before any pair is sent. When no pair finishes for `stall_timeout`
    seconds (default forensics.runs.engine.STALL_TIMEOUT) the batch ends with engine.Stalled, whose
    `partial` holds the rows finished so far.
    """
    from forensics.runs import engine
    from forensics.runs.aggregate import Aggregator

    kind = engine.scheduler_kind(scheduler)
    engine.check_reachable(directory, kind)
    pairs = engine.list_pairs(directory)
    aggregator = Aggregator(geometry=geometry)
    rows = []
    run = engine.run_dask if kind != "local" else engine.run_local
    outcome = run(pairs, workers=workers, scheduler=scheduler, connect_timeout=connect_timeout, policy=policy,
                  verify_files=verify_files,
                  stall_timeout=engine.STALL_TIMEOUT if stall_timeout is None else stall_timeout)
    try:
        for row, stats in outcome:
            rows.append(row)
            aggregator.add(stats)
            if progress is not None:
                progress(len(rows), len(pairs))
    except engine.Stalled as exc:  # the rows finished so far are kept: the caller writes them, then says so
        exc.partial = BatchResult(os.fspath(directory), tuple(rows), outcome.workers,
                                  aggregates=aggregator.result(), scheduler=outcome.name, retried=outcome.retried)
        raise
    return BatchResult(os.fspath(directory), tuple(rows), outcome.workers, aggregates=aggregator.result(),
                       scheduler=outcome.name, retried=outcome.retried)


PARTITION_ROWS = 250_000


def _write_parquet(path: str, parts: list[bytes]) -> None:
    """One Parquet file, or a directory of part files when there are several; each replaces what was there
    (a file or the directory of an earlier, larger batch) in one rename."""
    import shutil
    import tempfile

    from forensics.io.outputs import atomic_directory, atomic_write

    if len(parts) > 1:
        if os.path.isfile(path):
            os.unlink(path)
        with atomic_directory(path, replace=True) as tmp:
            for i, data in enumerate(parts):
                with open(os.path.join(tmp, f"part-{i:05d}.parquet"), "wb") as fh:
                    fh.write(data)
        return
    earlier = os.path.isdir(path)
    with atomic_write(path + ".new" if earlier else path, "wb") as fh:
        fh.write(parts[0])
    if earlier:
        old = tempfile.mkdtemp(prefix=".old.", dir=os.path.dirname(os.path.abspath(path)))
        os.replace(path, os.path.join(old, "summary"))
        os.replace(path + ".new", path)
        shutil.rmtree(old, ignore_errors=True)


def summary_paths(output) -> tuple[str, str]:
    """(CSV path, Parquet path) of a summary named `output` (.csv or .parquet); InputError otherwise."""
    output = os.fspath(output)
    stem, ext = os.path.splitext(output)
    if ext.lower() not in (".csv", ".parquet"):
        raise InputError("the summary must be a .csv or .parquet path (both are written)", output)
    return stem + ".csv", stem + ".parquet"


def check_summary_output(output) -> None:
    """Everything write_summary needs, checked before a batch runs: a .csv / .parquet name, pandas and
    pyarrow, and both paths writable (their directory exists). A batch of hours must not end in 'cannot write'."""
    from forensics.io.outputs import check_writable

    csv_path, parquet_path = summary_paths(output)
    try:
        import pandas  # noqa: F401
        import pyarrow  # noqa: F401  (pandas' Parquet engine)
    except ImportError:
        raise DependencyError("batch summaries need pandas and pyarrow: pip install 'npu-forensics[export]'") from None
    check_writable(csv_path)
    if not partitioned_summary(parquet_path):
        check_writable(parquet_path)


def write_summary(result: BatchResult, output, *, partition_rows: int = PARTITION_ROWS) -> BatchResult:
    """Write `output` (.csv) and the same table as Parquet beside it (or .parquet and a .csv beside it), both or
    neither. More than `partition_rows` rows make the Parquet a directory of part files of that many rows."""
    import io
    from dataclasses import replace

    from forensics.io.outputs import atomic_write, check_writable

    output = os.fspath(output)
    csv_path, parquet_path = summary_paths(output)
    frame = result.frame()
    try:
        import pyarrow  # noqa: F401  (pandas' Parquet engine)
    except ImportError:
        raise DependencyError("Parquet output needs pyarrow: pip install 'npu-forensics[export]'") from None
    # Both tables are made in memory first and then renamed into place: a failure leaves neither file
    # behind, never a summary.csv without its Parquet.
    csv_bytes = frame.to_csv(index=False).encode("utf-8")
    parts = []
    for start in range(0, max(len(frame), 1), partition_rows):
        buffer = io.BytesIO()
        frame.iloc[start:start + partition_rows].to_parquet(buffer, index=False)
        parts.append(buffer.getvalue())
    check_writable(csv_path)
    if not partitioned_summary(parquet_path):  # any other directory there is not ours to replace
        check_writable(parquet_path)
    existed = os.path.lexists(csv_path)
    try:
        with atomic_write(csv_path, "wb") as fh:
            fh.write(csv_bytes)
        try:
            _write_parquet(parquet_path, parts)
        except BaseException:
            if not existed:
                os.unlink(csv_path)
            raise
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", output) from None
    return replace(result, outputs=(csv_path, parquet_path))
