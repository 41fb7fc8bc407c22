"""One pair of a farm: the pair folders under a farm's directory, and one pair compared into one summary row
(the per-pair function every scheduler of forensics.runs.engine runs; forensics.runs.batch gathers the rows)."""

from __future__ import annotations

import os

from forensics.core.errors import ForensicsError, InputError
from forensics.core.verdict import Verdict, combined
from forensics.runs.run import STAGES

COLUMNS = ("pair", "run_a", "run_b", "source_a", "source_b", "verdict", "first_divergent_stage",
           "first_divergent_tensor", "stages_compared", "stages_differing", "changed", "summary", "error") + STAGES


def find_pairs(directory) -> list[str]:  # local folders; forensics.runs.engine.list_pairs takes URLs too
    """The pair directories under `directory` (sorted); InputError when there is none."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise InputError("is not a directory (expected a folder of run pairs)", directory)
    try:
        names = sorted(n for n in os.listdir(directory) if not n.startswith("."))
    except OSError as exc:
        raise InputError(f"cannot list: {exc.strerror or exc}", directory) from None
    pairs = [os.path.join(directory, n) for n in names if os.path.isdir(os.path.join(directory, n))
             and not batch_output(directory, n)]
    if not pairs:
        raise InputError("holds no pair directories (each pair is a folder with two runs)", directory)
    return pairs


def batch_output(directory: str, name: str) -> bool:
    """Whether the folder `name` in a farm is what an earlier batch wrote there (its summary or pages inside the
    farm): the pages of differing pairs, `OUT_pairs/` beside `OUT.html`, or a summary Parquet written as a
    directory of part files. It holds no run, so it is not taken for a pair."""
    path = os.path.join(directory, name)
    if partitioned_summary(path):
        return True
    if not name.endswith("_pairs") or not os.path.isfile(os.path.join(directory, name[:-len("_pairs")] + ".html")):
        return False
    try:
        return all(n.endswith(".html") and os.path.isfile(os.path.join(path, n)) for n in os.listdir(path))
    except OSError:
        return False


def basename(location: str) -> str:
    """The last name of a path or a URL (a pair's, a run's)."""
    if "://" in location:  # a chained URL names its pair in its first link (zip://farm/pair-1::file://x.zip)
        return location.partition("::")[0].rstrip("/").rsplit("/", 1)[-1]
    return os.path.basename(location.rstrip("/\\"))


def compare_pair(pair_dir: str, policy=None, *, stats: bool = False, name: str | None = None,
                 verify_files: bool = False):
    """One summary row of the pair at `pair_dir` (a path, or an fsspec URL read in place); never raises for a
    bad pair (the error becomes the row). `policy`: a forensics.core.tolerance.TolerancePolicy judging the differing
    buffers (default: exact). With `stats`, the pair's compact statistics for forensics.runs.aggregate too:
    (row, stats or None). The manifests' CRCs are trusted unless `verify_files` (see compare_runs)."""
    from forensics.runs.compare import compare_runs, find_runs

    row = {c: None for c in COLUMNS}
    row["pair"] = name or basename(pair_dir)
    try:
        runs = find_runs(pair_dir)
        if len(runs) != 2:
            raise InputError(f"holds {len(runs)} runs, expected 2", name or pair_dir)
        row["run_a"], row["run_b"] = (basename(r) for r in runs)
        result = compare_runs(runs[0], runs[1], diagnose=False, limit=1, policy=policy,
                              verify_files=verify_files)
        pair_stats = None
        if stats:
            from forensics.runs.aggregate import pair_stats as _pair_stats

            pair_stats = _pair_stats(result)
    except ForensicsError as exc:
        row["verdict"] = Verdict.ERROR
        row["error"] = str(exc)
        return (row, None) if stats else row
    except Exception as exc:  # noqa: BLE001 - a broken pair is an ERROR row and never stops the batch
        row["verdict"] = Verdict.ERROR
        row["error"] = f"{name or pair_dir}: {type(exc).__name__}: {exc}"
        return (row, None) if stats else row
    _fill_row(row, result)
    return (row, pair_stats) if stats else row


def _fill_row(row: dict, result) -> None:
    """The summary row's columns of a compared pair (a forensics.runs.compare.CompareResult)."""
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
            row[stage] = combined(statuses)


def partitioned_summary(path: str) -> bool:
    """A directory of part-NNNNN.parquet files only: the summary of an earlier, larger batch."""
    import re

    try:
        names = os.listdir(path) if os.path.isdir(path) else []
    except OSError:
        return False
    return bool(names) and all(re.fullmatch(r"part-\d{5}\.parquet", n) for n in names)
