"""N runs of one input (a driver's loop over the same job): which content each buffer holds most often, which runs
depart from it, where each of those first diverges and what diagnose finds there, and how the outliers depend on
the runs around them.

- Per buffer (stage, tensor) the modal content: the (size, CRC32) most runs hold (ties: the one seen first, in
  the order the runs are given), and how many hold it; with a reference run its content is the baseline instead.
  A buffer most runs lack (or the reference lacks) is not judged; a run that lacks a judged buffer differs.
- A run is `modal` when it holds the baseline content of every judged buffer, else an `outlier`; per stage the
  divergence rate is the share of the runs that differ in one of its buffers.
- For each outlier: its first divergent stage (the story's order, forensics.runs.run.STAGES) and diagnose's
  finding there (forensics.diagnose, with the run before it as `previous`), against the modal run (the first
  run that holds every baseline content) or the reference.
- Run-to-run dependence: `previous` when, in every differing buffer of its first divergent stage, the
  outlier's differing bytes are the previous run's (that run itself differed there: stale from the previous
  job); `cold` when the first run differs and every other outlier is `previous` (the first run alone, or the
  runs carrying its bytes); and a `period` when the other outliers come every P-th run (P >= 2, at least 3 of
  them, none missing up to the last run). A buffer no run holds the baseline of (every run differs from the
  reference the same way) is a consistent difference: no run depends on another through it.

The runs' manifests are read by the engine that runs `compare --batch` (forensics.runs.engine: the local pool or
Dask, each run read where it is, paths or fsspec URLs); the CRC32s they recorded are trusted unless
`verify_files` (the files' sizes are always checked). Only the outliers' buffers are read, here, to diagnose.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field, replace

from forensics.core import serial
from forensics.core.errors import ForensicsError, InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.compare.crc import format_crc
from forensics.runs.run import STAGES

MODAL, OUTLIER = "modal", "outlier"
PREVIOUS, COLD = "previous", "cold"
MISSING = "missing"  # the content of a buffer whose file the manifest lists and that is not there
_WINDOW = 4 << 20


# --- what the engine reads of each run (in the worker) ----------------------------------------------------------

def read_signature(location: str, *, verify_files: bool = False) -> dict:
    """What one run holds, small and picklable: its source, model and per buffer (stage, tensor, size, CRC32,
    status), or {"location", "error"} for a run that cannot be read. Never raises."""
    from forensics.runs.run import load_run, verify_run

    try:
        run = load_run(location)
        checks = verify_run(run, verify=verify_files)
    except ForensicsError as exc:
        return {"location": location, "error": str(exc)}
    except Exception as exc:  # noqa: BLE001 - a broken run is an error of that run, named, never a crash
        return {"location": location, "error": f"{location}: {type(exc).__name__}: {exc}"}
    return {"location": location, "source": run.source, "model_sha256": run.model_sha256,
            "buffers": [(c.entry.stage, c.entry.tensor, c.size, c.crc32, c.status) for c in checks],
            "warnings": [c.message(run.path) for c in checks if not c.ok]}


def signature_chunk(locations, policy=None, verify_files: bool = False) -> list[dict]:
    """The engine's task (forensics.runs.engine): one signature per run location."""
    return [read_signature(location, verify_files=verify_files) for location in locations]


def _lost(location: str, reason: str) -> dict:
    return {"location": location, "error": f"{location}: {reason}"}


def _contents(signature: dict) -> dict:
    """(stage, tensor) -> (size, crc32), or MISSING for a listed file that is not there."""
    return {(stage, tensor): (size, crc) if status != MISSING else MISSING
            for stage, tensor, size, crc, status in signature["buffers"]}


# --- the result -----------------------------------------------------------------------------------------------

def _content_of(doc: dict) -> tuple | None:
    """A saved buffer's baseline content: its (size, crc32), None when it was not judged."""
    return None if doc.get("size") is None else (doc["size"], int(doc["crc32"], 16))


@dataclass(frozen=True)
class BufferModal(serial.Serial):
    """One buffer over the runs: its baseline content (the modal one, or the reference's) and who holds it."""

    JSON_DERIVED = ("label", "judged", ("crc32", "crc32_text"))
    JSON_ORDER = ("stage", "tensor", "label", "judged", "baseline", "size", "crc32", "runs_holding", "runs",
                  "distinct")

    stage: str
    tensor: str
    # (size, crc32) of the baseline; None when it is not judged. Written as its size (the CRC: crc32_text)
    content: tuple | None = field(metadata=serial.json(
        "size", write=lambda b: b.content[0] if b.content is not None else None, read=_content_of))
    holding: int = field(metadata=serial.json("runs_holding"))  # runs holding the baseline content
    runs: int              # runs in the list
    distinct: int          # distinct contents among the runs (lacking the buffer is one)
    baseline: str          # "modal" / "reference"

    @property
    def label(self) -> str:
        return self.stage if self.tensor == self.stage else f"{self.stage}:{self.tensor}"

    @property
    def judged(self) -> bool:
        return self.content is not None

    @property
    def crc32_text(self) -> str | None:
        return format_crc(self.content[1]) if self.content is not None else None


@dataclass(frozen=True)
class RunRow(serial.Serial):
    """One run of the list: modal or outlier, and for an outlier where and how it differs."""

    index: int
    run: str                             # the run's location as given
    source: str | None
    status: str                          # MODAL / OUTLIER
    differing: tuple[str, ...] = ()      # labels of the buffers that differ from the baseline
    first_divergent_stage: str | None = None
    first_divergent_tensor: str | None = None
    finding: str | None = None           # diagnose's primary finding there (a kind), or None
    evidence: str | None = None          # that finding's evidence sentence
    depends: str | None = None           # PREVIOUS / COLD / None
    against: str | None = None           # the run it was diagnosed against (the modal run or the reference)

    JSON_ORDER = ("run", "index", "source", "status", "first_divergent_stage", "first_divergent_tensor", "differing")

    @property
    def name(self) -> str:
        return _name(self.run)


@dataclass(frozen=True)
class StageRate(serial.Serial):
    JSON_DERIVED = ("divergence_rate",)
    JSON_ORDER = ("stage", "divergence_rate", "runs_differing", "runs")

    stage: str
    runs: int
    runs_differing: int

    @property
    def divergence_rate(self) -> float:
        return self.runs_differing / self.runs if self.runs else 0.0


@dataclass(frozen=True)
class Period(serial.Serial):
    """Outliers every `every`-th run from run index `first` on, to the end of the list."""

    every: int
    first: int
    runs: tuple[int, ...]


@dataclass(frozen=True)
class RepeatResult(serial.Serial):
    JSON_DERIVED = (("outliers", "outlier_count"), "not_judged")
    JSON_ORDER = ("runs", "stages", "buffers", "reference", "modal_run", "outliers", "period", "not_judged")

    runs: tuple[RunRow, ...]
    stages: tuple[StageRate, ...]
    buffers: tuple[BufferModal, ...]
    reference: str | None = None
    modal_run: str | None = None
    period: Period | None = None
    warnings: tuple[str, ...] = ()
    scheduler: str = "local"
    workers: int = 1

    @property
    def outliers(self) -> tuple[RunRow, ...]:
        return tuple(r for r in self.runs if r.status == OUTLIER)

    @property
    def not_judged(self) -> tuple[str, ...]:
        return tuple(b.label for b in self.buffers if not b.judged)

    @property
    def outlier_count(self) -> int:
        return len(self.outliers)


def _name(location: str) -> str:
    """A run's last name (of a path or a URL), to name it in sentences."""
    head = location.partition("::")[0] if "://" in location else location
    return os.path.basename(head.rstrip("/\\")) or head


def _names(rows) -> str:
    names = [r.name for r in rows]
    return ", ".join(names[:5]) + (f" and {len(names) - 5} more" if len(names) > 5 else "")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(n % 10, 'th')}"


def judge_repeat(result: RepeatResult) -> Judgement:
    """The one judgement of a repeat: MATCH when every run holds the baseline content of every judged buffer,
    else DIFFER, with the dependence found as reasons."""
    n, outliers = len(result.runs), result.outliers
    against = f"the reference {_name(result.reference)}" if result.reference else "the modal content"
    reasons = []
    if result.reference:
        reasons.append(Reason("reference", f"baseline: the reference run {result.reference}"))
    if result.not_judged:
        reasons.append(Reason("not_judged", f"not judged (most runs or the reference lack them): "
                                            f"{', '.join(result.not_judged)}"))
    if result.warnings:
        reasons.append(Reason("changed_after_capture", f"{len(result.warnings)} buffer files no longer match their "
                                                       "manifests (their contents were judged as they are now)"))
    judged = sum(1 for b in result.buffers if b.judged)
    if not outliers:
        return Judgement(Verdict.MATCH, f"all {n} runs hold {against} in every buffer ({judged} buffers)",
                         tuple(reasons))
    firsts = Counter(r.first_divergent_stage for r in outliers)
    where = ", ".join(f"{stage} ({count})" for stage, count in sorted(firsts.items(), key=lambda kv:
                                                                       STAGES.index(kv[0])))
    clauses = [f"{len(outliers)} of {n} runs differ from {against}; first divergent stage: {where}"]
    reasons.insert(0, Reason("outliers", f"{len(outliers)} of {n} runs: {_names(outliers)}"))
    stale = [r for r in outliers if r.depends == PREVIOUS]
    cold = [r for r in outliers if r.depends == COLD]
    if cold:
        text = f"the first run {cold[0].name} differs" + (" alone" if not stale else ", the others carry its bytes")
        clauses.append(f"{text} (cold start)")
        reasons.append(Reason("cold_start", text))
    if stale:
        text = f"{_names(stale)} {'holds' if len(stale) == 1 else 'hold'} the previous run's bytes where " \
               f"{'it differs' if len(stale) == 1 else 'they differ'}"
        clauses.append(f"{text} (stale from the previous job)")
        reasons.append(Reason("stale_previous", text))
    if result.period is not None:
        p = result.period
        text = f"every {_ordinal(p.every)} run from {result.runs[p.first].name} on differs ({len(p.runs)} runs)"
        clauses.append(text)
        reasons.append(Reason("period", text))
    return Judgement(Verdict.DIFFER, "; ".join(clauses), tuple(reasons))


# --- the analysis ---------------------------------------------------------------------------------------------

def _ordered_keys(signatures) -> list[tuple[str, str]]:
    seen = {}
    for sig in signatures:
        for stage, tensor, *_ in sig["buffers"]:
            seen.setdefault((stage, tensor), len(seen))
    order = {s: i for i, s in enumerate(STAGES)}
    return sorted(seen, key=lambda key: (order[key[0]], seen[key]))


def _modal(values: list):
    """The most common value (ties: the one seen first)."""
    counts = Counter(values)
    best = max(counts.values())
    return next(v for v in values if counts[v] == best)


def _carries_previous(base, run, prev) -> bool:
    """Whether, where `run`'s buffer differs from `base`'s, it holds `prev`'s bytes (three Dumps of one size)."""
    if not (base.size == run.size == prev.size):
        return False
    import numpy as np

    differs = False
    for lo in range(0, base.size, _WINDOW):
        a, b, p = (np.frombuffer(d.read(lo, _WINDOW), np.uint8) for d in (base, run, prev))
        mask = a != b
        if mask.any():
            differs = True
            if not np.array_equal(b[mask], p[mask]):
                return False
    return differs


def _period(indices: list[int], n: int) -> Period | None:
    if len(indices) < 3:
        return None
    every = indices[1] - indices[0]
    if every < 2 or indices != list(range(indices[0], n, every)):
        return None
    return Period(every, indices[0], tuple(indices))


class _Loaded:
    """Runs loaded here when their bytes are read (the outliers and what they are diagnosed against)."""

    def __init__(self):
        self.runs = {}

    def __call__(self, location: str):
        from forensics.runs.run import load_run

        if location not in self.runs:
            self.runs[location] = load_run(location)
        return self.runs[location]

    def dump(self, location: str, key):
        run = self(location)
        entry = next((b for b in run.buffers if b.key == key), None)
        if entry is None or not run.has_file(entry):
            return None, None
        return entry, run.open_buffer(entry)


def _diagnose(loaded: _Loaded, base: str, location: str, previous: str | None, key) -> tuple[str | None, str | None]:
    """diagnose's primary finding (kind, evidence) for one buffer of an outlier against the baseline's holder."""
    from forensics.diagnose import diagnose_dumps
    from forensics.runs.compare import buffer_layout

    try:
        entry_a, dump_a = loaded.dump(base, key)
        _, dump_b = loaded.dump(location, key)
        if dump_a is None or dump_b is None:
            return None, None
        prev = loaded.dump(previous, key)[1] if previous is not None else None
        layout, _ = buffer_layout(entry_a, min(dump_a.size, dump_b.size))
        found = diagnose_dumps(dump_a, dump_b, layout=layout, previous=prev)
    except ForensicsError:
        return None, None
    if found.primary is None:
        return None, None
    finding = next(f for f in found.findings if f.kind == found.primary)
    return finding.kind, finding.evidence


@dataclass
class _Judged:
    """The state analyse shares with its helpers: the runs' contents, the baseline and who holds it."""

    locations: list
    contents: list
    baseline: dict
    differing: list
    reference_location: str | None
    modal_index: int | None
    modal_run: str | None
    produced: set
    loaded: _Loaded

    def holder(self, key):
        """Where the baseline bytes of `key` are read: the reference, the modal run, or the first run holding them."""
        if self.modal_index is None:
            return self.reference_location
        if self.contents[self.modal_index].get(key) == self.baseline[key]:
            return self.modal_run
        return next(self.locations[i] for i in range(len(self.contents))
                    if self.contents[i].get(key) == self.baseline[key])


def _baseline(keys, contents, ref_contents, n: int) -> tuple[list, dict]:
    """Each buffer's modal entry and the baseline content per key (the reference's, else the modal one)."""
    buffers, baseline = [], {}
    for key in keys:
        values = [c.get(key) for c in contents]
        if ref_contents is not None:
            content, kind = ref_contents.get(key), "reference"
        else:
            content, kind = _modal(values), "modal"
        if content == MISSING:
            content = None
        if content is not None:
            baseline[key] = content
        buffers.append(BufferModal(key[0], key[1], content, sum(1 for v in values if v == content) if content else 0,
                                   n, len(set(values)), kind))
    return buffers, baseline


def _depends(judged: _Judged, i: int, at_stage: list):
    """PREVIOUS when every first-stage difference of run `i` carries the previous run's bytes, else None."""
    contents, location, previous = judged.contents, judged.locations[i], judged.locations[i - 1]
    if not all(contents[i].get(k) not in (None, MISSING) and k in judged.produced for k in at_stage):
        return None
    carried = []
    for key in at_stage:
        if contents[i - 1].get(key) == contents[i][key]:
            carried.append(True)  # the same bytes as the previous run's (its CRC): nothing to read
            continue
        base, here, prev = (judged.loaded.dump(where, key)[1] for where in (judged.holder(key), location, previous))
        carried.append(None not in (base, here, prev) and _carries_previous(base, here, prev))
    return PREVIOUS if all(carried) else None


def _run_row(judged: _Judged, i: int, sig: dict, diagnose: bool) -> RunRow:
    """One run's row: modal, or an outlier with its first differing stage, diagnose's finding and dependence."""
    differing, locations = judged.differing[i], judged.locations
    if not differing:
        return RunRow(i, locations[i], sig.get("source"), MODAL)
    first = differing[0]
    at_stage = [key for key in differing if key[0] == first[0]]
    location, previous = locations[i], locations[i - 1] if i else None
    finding = evidence = None
    if diagnose and judged.contents[i].get(first) not in (None, MISSING):
        finding, evidence = _diagnose(judged.loaded, judged.holder(first), location, previous, first)
    depends = _depends(judged, i, at_stage) if previous is not None else None
    return RunRow(i, locations[i], sig.get("source"), OUTLIER, tuple(_label(k) for k in differing),
                  first[0], first[1], finding, evidence, depends, judged.modal_run)


def _stage_rates(baseline: dict, differing: list, n: int) -> list:
    """Per judged stage, how many runs differ there."""
    stages = []
    for stage in STAGES:
        judged = [key for key in baseline if key[0] == stage]
        if judged:
            stages.append(StageRate(stage, n, sum(1 for d in differing if any(k[0] == stage for k in d))))
    return stages


def _cold_or_period(rows: list, n: int) -> tuple[list, Period | None]:
    """A first outlier every later one carries is COLD (no period); otherwise the period of the independent
    outliers."""
    outliers = [r for r in rows if r.status == OUTLIER]
    if n >= 2 and rows[0].status == OUTLIER and all(r.depends == PREVIOUS for r in outliers[1:]):
        rows[0] = replace(rows[0], depends=COLD)
        return rows, None
    return rows, _period([r.index for r in outliers if r.depends is None], n)


def analyse(signatures: list[dict], reference: dict | None = None, *, locations=None, reference_location=None,
            diagnose: bool = True, scheduler: str = "local", workers: int = 1) -> RepeatResult:
    """The repeat result of runs' signatures (read_signature, in the order given) and a reference's.
    `locations`, `reference_location`: the runs as given (default: the signatures' locations), which the result
    names."""
    locations = list(locations) if locations is not None else [s["location"] for s in signatures]
    if reference is not None and reference_location is None:
        reference_location = reference["location"]
    everyone = signatures + ([reference] if reference is not None else [])
    contents = [_contents(s) for s in signatures]
    keys = _ordered_keys(everyone)
    n = len(signatures)
    buffers, baseline = _baseline(keys, contents, _contents(reference) if reference is not None else None, n)
    differing = [[key for key in keys if key in baseline and c.get(key) != baseline[key]] for c in contents]
    if reference is not None:
        modal_index, modal_run = None, reference_location
    else:
        modal_index = min(range(n), key=lambda i: (len(differing[i]), i))
        modal_run = locations[modal_index]
    # A buffer no run holds the baseline of differs the same way in every run: a consistent difference, which
    # says nothing about one run depending on another.
    produced = {key for key in baseline if any(c.get(key) == baseline[key] for c in contents)}
    # the runs as given: the client reads them where the user named them
    judged = _Judged(locations, contents, baseline, differing, reference_location, modal_index, modal_run, produced,
                     _Loaded())
    rows, period = _cold_or_period([_run_row(judged, i, sig, diagnose) for i, sig in enumerate(signatures)], n)
    stages = _stage_rates(baseline, differing, n)
    warnings = tuple(w for s in everyone for w in s["warnings"])
    return RepeatResult(tuple(rows), tuple(stages), tuple(buffers), reference=reference_location,
                        modal_run=modal_run, period=period, warnings=warnings, scheduler=scheduler, workers=workers)


def _label(key) -> str:
    stage, tensor = key
    return stage if tensor == stage else f"{stage}:{tensor}"


def repeat_runs(runs, *, reference=None, scheduler: str = "local", workers: int | None = None,
                verify_files: bool = False, connect_timeout: float = 5.0, stall_timeout: float | None = None,
                diagnose: bool = True, progress=None) -> RepeatResult:
    """Repeat analysis of `runs` (runs or folders of runs, paths or URLs; forensics.runs.runlist) in that order,
    against `reference` (a run) or the modal content. `scheduler`: local (a process pool of `workers`; default
    one process, or one per core with `verify_files`), dask, or tcp://HOST:PORT, as compare --batch. InputError
    for fewer than two runs (one with a reference) and for a run that cannot be read (naming it)."""
    from forensics.runs import engine
    from forensics.runs.runlist import expand_runs

    kind = engine.scheduler_kind(scheduler)
    locations = expand_runs(runs if isinstance(runs, (list, tuple)) else [runs])
    if len(locations) < (1 if reference is not None else 2):
        raise InputError("repeat needs at least two runs (or one and {reference:RUN}): the runs of one input, "
                         "in the order they ran", params=True)
    for location in locations:
        engine.check_reachable(location, kind)
    resolved = [engine.resolve_location(location) for location in locations]
    if kind == "local" and workers is None and not verify_files:
        workers = 1  # a manifest each: a pool's start costs more than it saves
    run = engine.run_dask if kind != "local" else engine.run_local
    outcome = run(resolved, workers=workers, scheduler=scheduler, connect_timeout=connect_timeout,
                  verify_files=verify_files, task=signature_chunk, lost=_lost,
                  stall_timeout=engine.STALL_TIMEOUT if stall_timeout is None else stall_timeout)
    signatures = []
    for signature in outcome:
        signatures.append(signature)
        if progress is not None:
            progress(len(signatures), len(resolved))
    ref = None
    if reference is not None:
        ref = read_signature(engine.resolve_location(reference), verify_files=verify_files)
        signatures_checked = signatures + [ref]
    else:
        signatures_checked = signatures
    bad = [s for s in signatures_checked if "error" in s]
    if bad:
        more = f" (and {len(bad) - 1} more runs cannot be read)" if len(bad) > 1 else ""
        raise InputError(f"{bad[0]['error']}{more}")
    return analyse(signatures, ref, locations=locations,
                   reference_location=os.fspath(reference) if reference is not None else None, diagnose=diagnose,
                   scheduler=outcome.name, workers=outcome.workers)
