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

from forensics.errors import DependencyError, ForensicsError, InputError
from forensics.runs.run import STAGES

COLUMNS = ("pair", "run_a", "run_b", "source_a", "source_b", "verdict", "first_divergent_stage",
           "first_divergent_tensor", "stages_compared", "stages_differing", "changed", "summary", "error") + STAGES


def find_pairs(directory) -> list[str]:
    """The pair directories under `directory` (sorted); InputError when there is none."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise InputError("is not a directory (expected a folder of run pairs)", directory)
    try:
        names = sorted(n for n in os.listdir(directory) if not n.startswith("."))
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", directory) from None
    pairs = [os.path.join(directory, n) for n in names if os.path.isdir(os.path.join(directory, n))]
    if not pairs:
        raise InputError("holds no pair directories (each pair is a folder with two runs)", directory)
    return pairs


def compare_pair(pair_dir: str, policy=None) -> dict:
    """One summary row; never raises for a bad pair (the error becomes the row). `policy`: a
    forensics.tolerance.TolerancePolicy judging the differing buffers (default: exact)."""
    from forensics.runs.compare import compare_runs, find_runs

    row = {c: None for c in COLUMNS}
    row["pair"] = os.path.basename(pair_dir.rstrip("/\\"))
    try:
        runs = find_runs(pair_dir)
        if len(runs) != 2:
            raise InputError(f"holds {len(runs)} runs, expected 2", pair_dir)
        row["run_a"], row["run_b"] = (os.path.basename(r) for r in runs)
        result = compare_runs(runs[0], runs[1], diagnose=False, limit=1, policy=policy)
    except ForensicsError as exc:
        row["verdict"] = "ERROR"
        row["error"] = str(exc)
        return row
    row["source_a"], row["source_b"] = result.run_a.source, result.run_b.source
    first = result.first_divergent
    row["verdict"] = result.verdict
    row["first_divergent_stage"] = first.stage if first else None
    row["first_divergent_tensor"] = first.tensor if first else None
    row["stages_compared"] = sum(1 for r in result.rows if r.compared)
    row["stages_differing"] = sum(1 for r in result.rows if r.compared and not r.passed)
    row["changed"] = "; ".join(result.changed) or None
    row["summary"] = f"{first.label}: {first.summary}" if first else None
    for stage in STAGES:
        statuses = [r.status for r in result.rows if r.stage == stage]
        if statuses:
            row[stage] = "MATCH" if all(s == "MATCH" for s in statuses) else (
                "DIFFER" if any(s in ("DIFFER", "MISSING") for s in statuses) else (
                    "WITHIN TOLERANCE" if all(s in ("MATCH", "WITHIN TOLERANCE") for s in statuses)
                    else statuses[0]))
    return row


@dataclass(frozen=True)
class BatchResult:
    directory: str
    rows: tuple[dict, ...]
    workers: int
    outputs: tuple[str, ...] = field(default=())

    @property
    def counts(self) -> Counter:
        return Counter(r["verdict"] for r in self.rows)

    @property
    def exit_code(self) -> int:
        """0 every pair matches (or is within tolerance); 1 some differ (or failed); 2 none could be compared."""
        from forensics import exitcodes

        counts = self.counts
        if counts.get("ERROR", 0) == len(self.rows):
            return exitcodes.ERROR
        passed = counts.get("MATCH", 0) + counts.get("WITHIN TOLERANCE", 0)
        return exitcodes.SAME if passed == len(self.rows) else exitcodes.DIFFERENT

    def frame(self):
        try:
            import pandas as pd
        except ImportError:
            raise DependencyError("batch summaries need pandas: pip install 'forensics[export]'") from None
        return pd.DataFrame(list(self.rows), columns=list(COLUMNS))

    def to_dict(self) -> dict:
        return {"directory": self.directory, "pairs": len(self.rows), "workers": self.workers,
                "counts": dict(self.counts), "outputs": list(self.outputs), "rows": list(self.rows)}


def batch_compare(directory, *, workers: int | None = None, policy=None, progress=None) -> BatchResult:
    """Compare every pair under `directory`, `workers` processes at a time (default: one per core), judging
    differing buffers by `policy` (forensics.tolerance.TolerancePolicy; default exact);
    `progress(pairs_done, pairs)` is called as rows come in."""
    import functools

    pairs = find_pairs(directory)
    workers = workers or os.cpu_count() or 1
    workers = max(1, min(workers, len(pairs)))
    rows = []
    if workers == 1:
        for p in pairs:
            rows.append(compare_pair(p, policy))
            if progress is not None:
                progress(len(rows), len(pairs))
    else:
        from concurrent.futures import ProcessPoolExecutor

        chunk = max(1, len(pairs) // (workers * 8))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            for row in pool.map(functools.partial(compare_pair, policy=policy), pairs, chunksize=chunk):
                rows.append(row)
                if progress is not None:
                    progress(len(rows), len(pairs))
    return BatchResult(os.fspath(directory), tuple(rows), workers)


def write_summary(result: BatchResult, output) -> BatchResult:
    """Write `output` (.csv) and the same table as Parquet beside it (or .parquet and a .csv beside it)."""
    from forensics.outputs import atomic_write, check_writable

    output = os.fspath(output)
    stem, ext = os.path.splitext(output)
    if ext.lower() not in (".csv", ".parquet"):
        raise InputError("the summary must be a .csv or .parquet path (both are written)", output)
    csv_path, parquet_path = stem + ".csv", stem + ".parquet"
    frame = result.frame()
    try:
        import pyarrow  # noqa: F401  (pandas' Parquet engine)
    except ImportError:
        raise DependencyError("Parquet output needs pyarrow: pip install 'forensics[export]'") from None
    import io

    # Both tables are made in memory first and then renamed into place: a failure leaves neither file
    # behind, never a summary.csv without its Parquet.
    csv_bytes = frame.to_csv(index=False).encode("utf-8")
    parquet = io.BytesIO()
    frame.to_parquet(parquet, index=False)
    check_writable(csv_path)
    check_writable(parquet_path)
    existed = os.path.lexists(csv_path)
    try:
        with atomic_write(csv_path, "wb") as fh:
            fh.write(csv_bytes)
        try:
            with atomic_write(parquet_path, "wb") as fh:
                fh.write(parquet.getvalue())
        except BaseException:
            if not existed:
                os.unlink(csv_path)
            raise
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", output) from None
    return BatchResult(result.directory, result.rows, result.workers, (csv_path, parquet_path))
