"""The reference's own noise: per tensor, how far runs of one model and input in different reference runtimes
(`capture --runtime all`) are apart, and the `--tolerance TENSOR=SPEC` that `compare` takes for it.

Per (stage, tensor) held by every run, element by element over the runs: the spread max - min, in the tensor's
real units (dequantized with its scale for a quantized integer tensor), in LSB (integer tensors: codes) and in
ulps (float tensors: the distance between the two floats in the float's own order); its maximum, its p99
(nearest rank), where the worst element is (anchor and lane, row, y/x/z) and the runs' values there; and the
smallest cosine similarity between the first run and each other. The spec is the maximum (an integer tensor
`Klsb`, a float tensor its atol in units, rounded up), so every pair of these runs passes it. A spread of 0
is the answer on models where the runtimes agree exactly; such a tensor needs no flag (compare is exact by
default) and is left out of `tolerance_args`.

Metrics disagree when the cosine rounds to 1.0000 while the largest error is 1 % or more of the tensor's
largest magnitude: cosine weighs elements by their size, so large-magnitude tensors hide large absolute
errors; the tolerance follows the maximum.

The runs must be of one model (sha256) fed one input: the `input` and `raw` stages (and the `tensor` stage
of tail-only captures, which holds what was fed) must be equal, else the spread would measure the inputs.
Buffers are read in windows (memory bounded by the window times the number of runs).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.runs.run import STAGES

COSINE_ONE = 0.99995  # prints as 1.0000
LARGE_SHARE = 0.01    # a max error of at least 1 % of the largest magnitude is large
_WINDOW = 1 << 20  # bytes of each run's buffer at a time
_INPUT_STAGES = ("input", "raw")


def _worst_doc(spread) -> dict | None:
    return None if spread.worst_index is None else {"index": spread.worst_index, "where": spread.worst_where,
                                                    "values": list(spread.worst_values)}


def _worst(key: str, convert=lambda v: v):
    """A field of the document's `worst` ({index, where, values}, written from worst_index): read back from it."""
    return serial.json("worst", omit=lambda v: True, read=lambda doc: None if doc.get("worst") is None
                       else convert(doc["worst"][key]))


@dataclass(frozen=True)
class TensorSpread(serial.Serial):
    """One tensor's spread over the runs (see the module doc). Its document leaves out the scale (what only
    the measurement used); `integer` is read back from the LSB spread being there."""

    JSON_DERIVED = ("label", "name", "metrics_disagree", "spec", "reason")
    JSON_ORDER = ("tensor", "stage", "label", "name", "dtype", "elements", "differing", "max_abs", "max_lsb",
                  "ulps", "p99_abs", "worst", "cosine", "largest_abs", "metrics_disagree", "spec", "reason")

    stage: str
    tensor: str
    dtype: str
    elements: int
    differing: int              # elements that are not equal in every run
    max_abs: float              # in the tensor's real units
    max_lsb: int | None         # integer tensors
    ulps: int | None            # float tensors
    p99_abs: float
    worst_index: int | None = field(metadata=serial.json("worst", write=_worst_doc,
                                                         read=lambda doc: (doc.get("worst") or {}).get("index")))
    worst_where: dict | None = field(metadata=_worst("where"))
    # each run's value at the worst element (real units)
    worst_values: tuple | None = field(metadata=_worst("values", tuple))
    cosine: float | None        # the smallest, first run against each other
    largest: float = field(metadata=serial.json("largest_abs"))  # the largest |value| in any run
    # an integer tensor's spread is in LSB too (max_lsb is None for a float tensor)
    integer: bool = field(metadata=serial.json("max_lsb", omit=lambda v: True,
                                               read=lambda doc: doc.get("max_lsb") is not None))
    scale: float | None = field(default=None, compare=False, metadata=serial.json(skip=True))  # measuring only

    @property
    def label(self) -> str:
        return self.stage if self.tensor == self.stage else f"{self.stage}:{self.tensor}"

    @property
    def name(self) -> str:
        """The name `--tolerance NAME=SPEC` takes for this buffer (stage:tensor, never ambiguous)."""
        return f"{self.stage}:{self.tensor}"

    @property
    def exact(self) -> bool:
        return self.differing == 0

    @property
    def finite(self) -> bool:
        return math.isfinite(self.max_abs)

    @property
    def spec(self) -> str | None:
        """The tolerance compare takes; None when a NaN or an infinity differs (no tolerance passes that)."""
        if not self.finite:
            return None
        if self.integer:
            return f"{self.max_lsb}lsb"
        return "0" if self.exact else round_up(self.max_abs)

    @property
    def metrics_disagree(self) -> bool:
        return (self.cosine is not None and self.cosine >= COSINE_ONE and not self.exact and self.finite
                and self.max_abs >= LARGE_SHARE * self.largest)

    @property
    def passable(self) -> bool:
        """Whether compare's `--tolerance NAME=SPEC` can name it (its grammar splits at the first '=')."""
        return "=" not in self.name and self.finite

    @property
    def reason(self) -> str:
        if not self.finite:
            where = _where_text(self.worst_where, self.worst_index)
            return (f"{self.differing:,} of {self.elements:,} values differ; at {where} a NaN or an infinity differs "
                    "between the runs, which no tolerance passes (compare says how NaN and infinity compare)")
        if self.exact:
            what = "value" if self.elements == 1 else f"{self.elements:,} values"
            return f"every run holds the same {what}: the runtimes agree exactly (spread 0)"
        where = _where_text(self.worst_where, self.worst_index)
        values = ", ".join(f"{v:.9g}" for v in self.worst_values or ())  # enough digits to tell them apart
        unit = f"{self.max_lsb} LSB ({_value_text(self.max_abs)})" if self.integer else (
            f"{_value_text(self.max_abs)} ({self.ulps:,} ulps)" if self.ulps is not None else
            _value_text(self.max_abs))
        text = (f"{self.differing:,} of {self.elements:,} values differ between the runs, by at most {unit} at "
                f"{where} ({values}); p99 {_value_text(self.p99_abs)}")
        if self.metrics_disagree:
            text += (f"; the cosine is {self.cosine:.4f} but the max error is {self.max_abs / self.largest:.1%} of "
                     "the largest value: cosine hides errors of large-magnitude tensors, the tolerance follows "
                     "the max")
        if "=" in self.name:
            text += "; its name holds '=', which --tolerance cannot name: set it with --atol instead"
        return text


@dataclass(frozen=True)
class SpreadResult(serial.Serial):
    JSON_DERIVED = ("tolerance_args", "tolerance_flags")
    JSON_ORDER = ("runs", "sources", "tensors", "tolerance_args", "tolerance_flags", "skipped")

    runs: tuple[str, ...]
    sources: tuple[str, ...]
    tensors: tuple[TensorSpread, ...]
    # (label, why it was not measured), written as {buffer, reason}
    skipped: tuple[tuple[str, str], ...] = field(default=(), metadata=serial.json(
        encode=lambda skipped: [{"buffer": label, "reason": why} for label, why in skipped],
        decode=lambda docs: tuple((d["buffer"], d["reason"]) for d in docs)))

    @property
    def tolerance_items(self) -> tuple[tuple[str, str], ...]:
        """(name, spec) of every tensor whose spread is not 0: what compare --tolerance-from uses."""
        return tuple((t.name, t.spec) for t in self.tensors if not t.exact and t.passable)

    @property
    def tolerance_flags(self) -> tuple[str, ...]:
        """One shell-quoted `--tolerance NAME=SPEC` per tolerance item: the flags a renderer lays out one a line."""
        return tuple(f"--tolerance {shlex.quote(f'{name}={spec}')}" for name, spec in self.tolerance_items)

    @property
    def tolerance_args(self) -> str:
        """The flags joined into the one line a shell takes after `compare RUN_A RUN_B`."""
        return " ".join(self.tolerance_flags)


def judge_spread(result: SpreadResult) -> Judgement:
    """A measurement, not a comparison: OK, with what was measured as its message."""
    n, differ = len(result.runs), [t for t in result.tensors if not t.exact]
    reasons = []
    if result.skipped:
        reasons.append(Reason("skipped", "not measured: " + "; ".join(f"{label} ({why})" for label, why
                                                                        in result.skipped)))
    for t in result.tensors:
        if t.metrics_disagree:
            reasons.append(Reason("cosine_hides_max", f"{t.label}: cosine {t.cosine:.4f}, max error "
                                                      f"{_value_text(t.max_abs)} ({t.max_abs / t.largest:.1%} of the "
                                                      "largest value)"))
    if not differ:
        reasons.insert(0, Reason("exact", "the spread is 0: compare needs no tolerance for these runtimes"))
        return Judgement(Verdict.OK, f"the {n} runs agree exactly on all {len(result.tensors)} tensors (spread 0)",
                         tuple(reasons))
    worst = max(differ, key=lambda t: (t.max_abs / t.largest if t.largest and t.finite else 0.0))
    reasons.insert(0, Reason("spread", f"{len(differ)} of {len(result.tensors)} tensors differ between the runs"))
    flags = len(result.tolerance_items)
    return Judgement(Verdict.OK, f"{len(differ)} of {len(result.tensors)} tensors differ between the {n} runs "
                                 f"(largest relative: {worst.label}, max {_value_text(worst.max_abs)}): "
                                 f"{flags} tolerance{'s' if flags != 1 else ''} to give compare", tuple(reasons))


# --- numbers ----------------------------------------------------------------------------------------------

def round_up(value: float, digits: int = 3) -> str:
    """`value` in at most `digits` significant digits (more if needed), never below it: an atol every measured
    difference passes."""
    if value <= 0 or not math.isfinite(value):
        return f"{value:g}"
    for d in range(digits, 18):
        step = 10.0 ** (math.floor(math.log10(value)) - d + 1)
        text = f"{math.ceil(value / step) * step:.{d}g}"
        if float(text) >= value:
            return text
    return repr(value)


def _value_text(value) -> str:
    return f"{value:.4g}" if isinstance(value, float) else str(value)


def _where_text(where: dict | None, index) -> str:
    if where:
        return " ".join(f"{k} {v}" for k, v in where.items())
    return f"element {index:,}"


def _ordered(values: np.ndarray) -> np.ndarray:
    """Floats as integers in the floats' order (adjacent floats differ by 1; +0 and -0 are both 0): ulps."""
    bits = {2: np.int16, 4: np.int32, 8: np.int64}[values.dtype.itemsize]
    raw = values.view(bits).astype(np.int64)
    magnitude = raw & np.int64((1 << (8 * values.dtype.itemsize - 1)) - 1)
    return np.where(raw < 0, -magnitude, raw)


# --- the measurement ----------------------------------------------------------------------------------------

def _input_stages(runs) -> tuple[str, ...]:
    """The stages that hold what the runs were fed (equal in every run, never measured)."""
    if all((run.capture or {}).get("mode") == "tail-only" for run in runs):
        return _INPUT_STAGES + ("tensor",)
    return _INPUT_STAGES


def _check_same_feed(runs) -> None:
    models = {run.model_sha256 for run in runs if run.model_sha256}
    if len(models) > 1:
        raise InputError("the runs were captured with different models (their sha256 differ): the spread between "
                         "reference runs is measured on one model and one input")
    first = runs[0]
    for stage in _input_stages(runs):
        for entry in (b for b in first.buffers if b.stage == stage):
            for run in runs[1:]:
                other = next((b for b in run.buffers if b.key == entry.key), None)
                if other is not None and (other.size, other.crc32) != (entry.size, entry.crc32):
                    raise InputError(f"the runs were fed different inputs ({entry.label} differs between "
                                     f"{first.path} and {run.path}): the spread would measure the inputs, not the "
                                     "runtimes; capture every run from one input")


def _real(raw: np.ndarray, integer: bool, scale, zero_point) -> np.ndarray:
    values = raw.astype(np.float64)
    if integer and scale is not None:
        values = (values - (zero_point or 0)) * scale
    return values


@dataclass
class _Streamed:
    """What _measure keeps over the windows of one buffer: the maximum spread and where it is, the count of
    differing elements, the k largest spreads seen so far (for the p99, nearest rank), the widest code / ulp
    spread, and each run's dot product with the first run and its norm (for the cosines)."""

    dtype: np.dtype
    integer: bool
    scale: float | None
    zero_point: int | None
    keep: int
    runs: int
    top: np.ndarray = field(init=False)
    max_abs: float = 0.0
    worst: int | None = None
    count: int = 0
    max_lsb: int = 0
    max_ulps: int = 0
    dots: np.ndarray = field(init=False)
    norms: np.ndarray = field(init=False)
    largest: float = 0.0

    def __post_init__(self):
        self.top = np.zeros(0, np.float64)
        self.dots, self.norms = np.zeros(self.runs), np.zeros(self.runs)

    def add(self, raws: list, at: int) -> None:
        """One window of every run's elements, the first at element `at`."""
        bits = np.dtype(f"<u{self.dtype.itemsize}")
        # the same bits in every run is no spread (NaN and NaN of one pattern too); any other difference is one
        same = np.logical_and.reduce([r.view(bits) == raws[0].view(bits) for r in raws[1:]])
        stack = np.stack([_real(r, self.integer, self.scale, self.zero_point) for r in raws])
        with np.errstate(invalid="ignore"):
            spread = np.nan_to_num(stack.max(0) - stack.min(0), nan=np.inf, posinf=np.inf)
        spread[same] = 0.0
        self.count += int(np.count_nonzero(~same))
        if self.integer:
            codes = np.stack([r.astype(np.int64) for r in raws])
            self.max_lsb = max(self.max_lsb, int((codes.max(0) - codes.min(0)).max(initial=0)))
        else:
            ordered = np.stack([_ordered(r.astype(self.dtype.newbyteorder("="))) for r in raws])
            ulp = ordered.max(0) - ordered.min(0)
            ulp[same] = 0
            self.max_ulps = max(self.max_ulps, int(ulp.max(initial=0)))
        if spread.size and (self.worst is None or spread.max() > self.max_abs):
            i = int(np.argmax(spread))
            if spread[i] > 0:
                self.max_abs, self.worst = float(spread[i]), at + i
        top = np.concatenate([self.top, spread])
        if top.size > self.keep:
            top = np.partition(top, top.size - self.keep)[top.size - self.keep:]
        self.top = top
        finite = np.where(np.isfinite(stack), stack, 0.0)
        self.dots += finite @ finite[0]
        self.norms += (finite * finite).sum(1)
        self.largest = max(self.largest, float(np.abs(finite).max(initial=0.0)))

    def cosines(self) -> list:
        dots, norms = self.dots, self.norms
        return [dots[k] / math.sqrt(norms[0] * norms[k]) if norms[0] and norms[k] else (1.0 if norms[0] == norms[k]
                else 0.0) for k in range(1, self.runs)]


def _unmeasurable(entries) -> str | None:
    """Why one buffer's spread cannot be measured, or None."""
    first = entries[0]
    if len({e.size for e in entries}) > 1:
        return "its size differs between the runs"
    if len({e.dtype or "uint8" for e in entries}) > 1:
        return "its dtype differs between the runs"
    dtype = np.dtype(first.dtype or "uint8").newbyteorder("<")
    if dtype.kind not in "iuf" or first.size % dtype.itemsize:
        return f"its elements ({dtype}) are not numbers this measures"
    return None


def _worst_place(first, dtype: np.dtype, dumps: list, worst: int, scale) -> tuple:
    """Where the widest spread is (the buffer's layout names it) and each run's real value there."""
    from forensics.runs.compare import _locate, buffer_layout

    layout, unit = buffer_layout(first, first.size)
    where = _locate(first, layout, unit, dtype.itemsize)(worst) or None
    values = tuple(float(_real(np.frombuffer(d.read(worst * dtype.itemsize, dtype.itemsize), dtype),
                               dtype.kind in "iu", scale, first.zero_point)[0]) for d in dumps)
    return where, values


def _measure(runs, key) -> TensorSpread | str:
    """One buffer's spread over the runs, or why it cannot be measured."""
    entries = [next(b for b in run.buffers if b.key == key) for run in runs]
    first = entries[0]
    why = _unmeasurable(entries)
    if why is not None:
        return why
    dtype = np.dtype(first.dtype or "uint8").newbyteorder("<")
    integer = dtype.kind in "iu"
    scale = first.scale if integer else None
    dumps = [run.open_buffer(e) for run, e in zip(runs, entries)]
    n = first.size // dtype.itemsize
    # Streamed over windows: the maximum and where it is, the count, and for the p99 (nearest rank) the k largest
    # spreads seen so far (k = n - ceil(0.99 n) + 1: a hundredth of the elements).
    keep = n - math.ceil(0.99 * n) + 1 if n else 0
    acc = _Streamed(dtype, integer, scale, first.zero_point, keep, len(runs))
    window = max(dtype.itemsize, _WINDOW // dtype.itemsize * dtype.itemsize)
    for lo in range(0, first.size, window):
        raws = [np.frombuffer(d.read(lo, window), dtype) for d in dumps]
        if len({r.size for r in raws}) > 1:
            raise InputError("a buffer file is shorter than its manifest says (it changed since capture)",
                             runs[0].path)
        acc.add(raws, lo // dtype.itemsize)
    cosines = acc.cosines()
    worst = acc.worst
    where, values = _worst_place(first, dtype, dumps, worst, scale) if worst is not None else (None, None)
    p99 = float(acc.top.min()) if keep and acc.top.size else 0.0
    return TensorSpread(key[0], key[1], str(dtype.newbyteorder("=")), n, acc.count, acc.max_abs,
                        acc.max_lsb if integer else None, None if integer else acc.max_ulps, p99, worst, where, values,
                        float(min(cosines)) if cosines else None, acc.largest, integer, scale)


def measure_spread(locations) -> SpreadResult:
    """The spread between reference runs (runs or folders of runs: forensics.runs.runlist), per tensor every
    run holds. InputError for fewer than two runs, runs of different models or inputs, no tensor to measure."""
    from forensics.runs.run import load_run
    from forensics.runs.runlist import expand_runs

    paths = expand_runs(locations if isinstance(locations, (list, tuple)) else [locations])
    if len(paths) < 2:
        raise InputError("measuring the spread between reference runs needs at least two runs (capture them with "
                         "{runtime} all)", params=True)
    runs = [load_run(p) for p in paths]
    _check_same_feed(runs)
    fed = set(_input_stages(runs)) | {"params", "instructions"}
    order = {s: i for i, s in enumerate(STAGES)}
    keys = sorted({b.key for b in runs[0].buffers if b.stage not in fed},
                  key=lambda k: (order[k[0]], [b.key for b in runs[0].buffers].index(k)))
    tensors, skipped = [], []
    for key in keys:
        label = key[0] if key[1] == key[0] else f"{key[0]}:{key[1]}"
        if not all(any(b.key == key for b in run.buffers) for run in runs[1:]):
            skipped.append((label, "not every run holds it"))
            continue
        got = _measure(runs, key)
        if isinstance(got, str):
            skipped.append((label, got))
        else:
            tensors.append(got)
    if not tensors:
        raise InputError("the runs share no tensor to measure (after the stages they were fed: "
                         f"{', '.join(s for s in STAGES if s in fed)})")
    return SpreadResult(tuple(paths), tuple(run.source for run in runs), tuple(tensors), tuple(skipped))


def with_measured(tolerance, runs) -> list:
    """compare's `tolerance` items with the measured spread of `runs` added (compare --tolerance-from): a
    tensor given its own tolerance keeps it."""
    items = [] if tolerance is None else ([tolerance] if isinstance(tolerance, (int, str, tuple)) else
                                          list(tolerance))
    given = {item[0] if isinstance(item, tuple) else str(item).partition("=")[0] for item in items
             if isinstance(item, tuple) or (isinstance(item, str) and "=" in item)}
    return items + [item for item in measure_spread(runs).tolerance_items if item[0] not in given]
