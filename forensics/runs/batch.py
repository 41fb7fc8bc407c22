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


def compare_pair(pair_dir: str) -> dict:
    """One summary row; never raises for a bad pair (the error becomes the row)."""
    from forensics.runs.compare import compare_runs, find_runs

    row = {c: None for c in COLUMNS}
    row["pair"] = os.path.basename(pair_dir.rstrip("/\\"))
    try:
        runs = find_runs(pair_dir)
        if len(runs) != 2:
            raise InputError(f"holds {len(runs)} runs, expected 2", pair_dir)
        row["run_a"], row["run_b"] = (os.path.basename(r) for r in runs)
        result = compare_runs(runs[0], runs[1], diagnose=False, limit=1)
    except ForensicsError as exc:
        row["verdict"] = "ERROR"
        row["error"] = str(exc)
        return row
    row["source_a"], row["source_b"] = result.run_a.source, result.run_b.source
    first = result.first_divergent
    row["verdict"] = "MATCH" if result.match else "DIFFER"
    row["first_divergent_stage"] = first.stage if first else None
    row["first_divergent_tensor"] = first.tensor if first else None
    row["stages_compared"] = sum(1 for r in result.rows if r.compared)
    row["stages_differing"] = sum(1 for r in result.rows if r.compared and not r.match)
    row["changed"] = "; ".join(result.changed) or None
    row["summary"] = f"{first.label}: {first.summary}" if first else None
    for stage in STAGES:
        statuses = [r.status for r in result.rows if r.stage == stage]
        if statuses:
            row[stage] = "MATCH" if all(s == "MATCH" for s in statuses) else (
                "DIFFER" if any(s in ("DIFFER", "MISSING") for s in statuses) else statuses[0])
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
        """0 every pair matches; 1 some differ (or failed); 2 no pair could be compared at all."""
        from forensics import exitcodes

        counts = self.counts
        if counts.get("ERROR", 0) == len(self.rows):
            return exitcodes.ERROR
        return exitcodes.SAME if counts.get("MATCH", 0) == len(self.rows) else exitcodes.DIFFERENT

    def frame(self):
        try:
            import pandas as pd
        except ImportError:
            raise DependencyError("batch summaries need pandas: pip install 'forensics[export]'") from None
        return pd.DataFrame(list(self.rows), columns=list(COLUMNS))

    def to_dict(self) -> dict:
        return {"directory": self.directory, "pairs": len(self.rows), "workers": self.workers,
                "counts": dict(self.counts), "outputs": list(self.outputs), "rows": list(self.rows)}


def batch_compare(directory, *, workers: int | None = None) -> BatchResult:
    """Compare every pair under `directory`, `workers` processes at a time (default: one per core)."""
    pairs = find_pairs(directory)
    workers = workers or os.cpu_count() or 1
    workers = max(1, min(workers, len(pairs)))
    if workers == 1:
        rows = [compare_pair(p) for p in pairs]
    else:
        from concurrent.futures import ProcessPoolExecutor

        chunk = max(1, len(pairs) // (workers * 8))
        with ProcessPoolExecutor(max_workers=workers) as pool:
            rows = list(pool.map(compare_pair, pairs, chunksize=chunk))
    return BatchResult(os.fspath(directory), tuple(rows), workers)


def write_summary(result: BatchResult, output) -> BatchResult:
    """Write `output` (.csv) and the same table as Parquet beside it (or .parquet and a .csv beside it)."""
    from forensics.outputs import atomic_write

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
    try:
        with atomic_write(csv_path, "w") as fh:
            frame.to_csv(fh, index=False)
        with atomic_write(parquet_path, "wb") as fh:
            frame.to_parquet(fh, index=False)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", output) from None
    return BatchResult(result.directory, result.rows, result.workers, (csv_path, parquet_path))
