"""Error statistics of a pair of numeric buffers, streamed in bounded memory: how far B is from A (the reference).

Everything is computed in float64 from chunks. The accumulator is fed the reference's values once
(`add_reference`: the signal sums and non-finite counts) and the pairs whose bits differ (`add_differing`);
elements that are bit-identical add no error, so a diff that already knows where two dumps differ adds
only one cheap pass over A. Pairs that are bit-equal contribute `a*a` to the cross sums; the differing pairs
correct them, so sum(a*b) and sum(b*b) come out exact without reading the equal part of B.

Integer buffers are compared in LSB (the integer codes) and, when the quantization (scale, zero point) is
known, in dequantized units `(q - zero_point) * scale` too; the absolute errors are a histogram of LSB
errors, so the median and p99 are exact. Float buffers keep the non-zero errors themselves up to
`EXACT_LIMIT` of them (exact quantiles) and beyond that a histogram over the error's float64 exponent and
its top 7 mantissa bits: a quantile is then the largest value of its bin, less than 2**-7 (0.8 %) above the
exact value. Quantiles are nearest-rank: the k-th smallest error with k = ceil(q * n) (numpy's
`method="inverted_cdf"`).

Definitions (A the reference, errors over the elements where both sides are finite):
  max_abs / mean_abs / median_abs / p99_abs   of |b - a|
  max_rel     max |b - a| / |a| over the elements whose reference is not zero
  cosine      sum(a*b) / sqrt(sum(a*a) * sum(b*b)); 1.0 when both are all zero, None when exactly one is
  sqnr_db     10 log10(sum(a*a) / sum((b - a)**2)); inf when equal (JSON null)
  nan / inf   NaN / infinite elements in A and B together; `nonfinite_mismatch` counts the positions whose
              non-finite value is not the same on both sides (no tolerance passes those): a NaN or an infinity
              equals only the same bits (NaN vs NaN of another payload or sign, +inf vs -inf, NaN vs 7.0 and
              inf vs 1e38 all differ)
  min_atol    the smallest absolute tolerance that passes the chosen check (with the chosen rtol)
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.parallel import both, two_cores

CHUNK = 1 << 17          # elements converted to float64 at a time (1 MiB of float64: stays in cache)
EXACT_LIMIT = 1 << 21    # float errors kept exactly up to this many non-zero errors (16 MiB)
PARALLEL_MIN = 1 << 22  # elements: below this a second thread costs more than it saves
BYTE_CHUNK = 1 << 20     # 8-bit codes converted to float32 at a time for the reference sums (4 MiB)
CODE_PAIRS_MIN = 1 << 13  # differing 8-bit pairs from which counting byte pairs beats per-element sums
HIST_BINS = 64           # bins of the coarse histogram kept for pictures
SCATTER_POINTS = 20000   # pairs kept for a scatter picture: the first differing ones, then an even sample of A
MAP_CELLS = 1 << 18      # per-record maxima kept for an error map (more records are folded, by max)
_HIST_SHIFT = 45         # float64 bits >> 45: the 11 exponent bits and the top 7 mantissa bits


# --- quantiles of the non-zero errors ---------------------------------------------------------------------

class _LsbHistogram:
    """Counts of integer errors 1..: exact quantiles of LSB errors."""

    def __init__(self):
        self.counts = np.zeros(0, dtype=np.int64)

    def add(self, values: np.ndarray) -> None:
        if values.size:
            self.add_counts(np.bincount(values.astype(np.int64, copy=False)))

    def add_counts(self, counts: np.ndarray) -> None:
        """Add counts[e] errors of e LSB each (e = 0, 1, ...); `counts` is not kept."""
        if counts.size > self.counts.size:
            counts = counts.astype(np.int64, copy=True)
            counts[: self.counts.size] += self.counts
            self.counts = counts
        else:
            self.counts[: counts.size] += counts

    def merge(self, other: "_LsbHistogram") -> None:
        self.add_counts(other.counts)

    @property
    def total(self) -> int:
        return int(self.counts[1:].sum()) if self.counts.size > 1 else 0

    def weighted(self):
        """(values, counts) of the non-zero errors."""
        values = np.flatnonzero(self.counts)
        values = values[values > 0]
        return values.astype(np.float64), self.counts[values]

    def kth(self, k: int) -> float:
        """The k-th smallest (1-based) of the values added that are not zero."""
        cumulative = np.cumsum(self.counts[1:])
        return float(int(np.searchsorted(cumulative, k)) + 1)


class _FloatTail:
    """Non-zero float errors: exact up to EXACT_LIMIT values, then a histogram of their float64 bit patterns."""

    def __init__(self, limit: int | None = None):
        self.limit = EXACT_LIMIT if limit is None else limit
        self.values: list[np.ndarray] | None = []
        self.kept = 0
        self.hist = None
        self.total = 0

    def add(self, values: np.ndarray) -> None:
        values = values[values > 0]
        if not values.size:
            return
        self.total += int(values.size)
        if self.values is not None:
            self.values.append(values.astype(np.float64, copy=True))
            self.kept += int(values.size)
            if self.kept <= self.limit:
                return
            pending, self.values = np.concatenate(self.values), None
            self._bin(pending)
            return
        self._bin(values)

    def merge(self, other: "_FloatTail") -> None:
        if other.values is not None:
            for part in other.values:
                self.add(part)
            return
        if self.values is not None:  # the other one is binned already: bin ours too
            pending, self.values = (np.concatenate(self.values) if self.values else np.zeros(0)), None
            if pending.size:
                self._bin(pending)
        if self.hist is None:
            self.hist = np.zeros_like(other.hist)
        self.hist += other.hist
        self.total += other.total

    def add_nonnegative(self, values: np.ndarray) -> None:
        """`add` for float64 values known to be >= 0 (absolute errors): zeros are binned and taken out again
        instead of being masked away, which saves two passes over a dense chunk."""
        if self.values is not None:
            self.add(values)
            return
        nonzero = int(np.count_nonzero(values))
        if not nonzero:
            return
        self.total += nonzero
        self._bin(values)
        self.hist[0] -= values.size - nonzero  # +0.0 has the bit pattern 0: it fell in bin 0

    def _bin(self, values: np.ndarray) -> None:
        # The float64 bit pattern of a positive value, shifted: its exponent and top 7 mantissa bits. A bin
        # holds [edge, next edge) exactly; only the populated span of bins is counted per call.
        bins = values.view(np.int64) >> _HIST_SHIFT  # non-negative floats: the sign bit is 0
        lo = int(bins.min())
        if lo:
            bins -= lo
        counts = np.bincount(bins)
        if self.hist is None:
            self.hist = np.zeros(1 << (63 - _HIST_SHIFT), dtype=np.int64)
        self.hist[lo:lo + counts.size] += counts

    def weighted(self):
        """(values, counts): the values themselves, or the histogram bins' upper edges."""
        if self.values is not None:
            data = np.concatenate(self.values) if self.values else np.zeros(0)
            return data, np.ones(data.size, dtype=np.int64)
        bins = np.flatnonzero(self.hist)
        return self._upper(bins), self.hist[bins]

    @staticmethod
    def _upper(bins) -> np.ndarray:
        """The largest float64 in each bin."""
        edges = (np.asarray(bins, dtype=np.uint64) + np.uint64(1)) << np.uint64(_HIST_SHIFT)
        return np.nextafter(edges.view(np.float64), 0.0)

    def kth(self, k: int) -> float:
        if self.values is not None:
            data = np.concatenate(self.values) if self.values else np.zeros(0)
            return float(np.partition(data, k - 1)[k - 1])
        cumulative = np.cumsum(self.hist)
        b = int(np.searchsorted(cumulative, k))
        return float(self._upper([b])[0])


@dataclass(frozen=True)
class ErrorSample:
    """What a picture of the error needs, collected by the statistics pass (ErrorAccumulator(sample=...)):
    in units (dequantized when known), data elements only. `scatter_a`/`scatter_b`: the first differing pairs
    (up to half of SCATTER_POINTS), then an even sample of A's values, which lie on the identity line (equal
    elements, and the differing ones' A side seen as equal: the differing pairs are all among the first when
    there are few). `record_max`: max |b - a| per record, `fold` records to a cell."""

    scatter_a: np.ndarray
    scatter_b: np.ndarray
    record_max: np.ndarray
    fold: int
    records: int


class _Sample:
    """Collects an ErrorSample chunk by chunk: `records` records of `per` elements (a differing element's flat
    position // per is its record), `elements` data elements in all (A's sample is spread over them)."""

    def __init__(self, records: int, per: int, elements: int):
        self.records, self.per, self.elements = records, max(1, per), elements
        self.fold = max(1, -(-self.records // MAP_CELLS))
        self.cells = np.zeros(-(-self.records // self.fold), dtype=np.float64)
        self.pairs_a: list = []
        self.pairs_b: list = []
        self.kept = 0
        self.reference: list = []
        self.referenced = 0
        self.stride = max(1, elements // (SCATTER_POINTS // 2))

    def fresh(self) -> "_Sample":
        return _Sample(self.records, self.per, self.elements)

    def add_pairs(self, fa, fb, err, positions) -> None:
        """Differing pairs (centred codes or raw values), their |b - a| and flat element positions."""
        if positions is None or not len(err):
            return
        cells = np.asarray(positions) // self.per // self.fold
        np.maximum.at(self.cells, np.minimum(cells, len(self.cells) - 1), err)
        room = SCATTER_POINTS // 2 - self.kept
        if room > 0:
            self.pairs_a.append(np.array(fa[:room], np.float64))
            self.pairs_b.append(np.array(fb[:room], np.float64))
            self.kept += min(room, len(fa))

    def add_reference(self, values) -> None:
        """A chunk of A's data elements (raw), sampled every `stride`-th."""
        if self.referenced >= SCATTER_POINTS // 2:
            return
        taken = np.asarray(values).reshape(-1)[:: self.stride][: SCATTER_POINTS // 2 - self.referenced]
        self.reference.append(taken.astype(np.float64))
        self.referenced += taken.size

    def merge(self, other: "_Sample") -> None:
        np.maximum(self.cells, other.cells, out=self.cells)
        for mine, theirs in ((self.pairs_a, other.pairs_a), (self.pairs_b, other.pairs_b)):
            mine.extend(theirs)
        self.kept += other.kept
        self.reference.extend(other.reference)
        self.referenced += other.referenced

    def finish(self, unit: float, zero_point: int) -> ErrorSample:
        half = SCATTER_POINTS // 2
        pa = np.concatenate(self.pairs_a)[:half] if self.pairs_a else np.zeros(0)
        pb = np.concatenate(self.pairs_b)[:half] if self.pairs_b else np.zeros(0)
        ref = (np.concatenate(self.reference)[:half] - zero_point) if self.reference else np.zeros(0)
        ref = ref[np.isfinite(ref)]
        return ErrorSample(np.concatenate((pa, ref)) * unit, np.concatenate((pb, ref)) * unit, self.cells * unit,
                           self.fold, self.records)


def _dot(x: np.ndarray, y: np.ndarray) -> float:
    """sum(x * y) in float64 without BLAS: BLAS dot starts threads for every call, which on a busy machine
    costs more than the arithmetic on a cache-sized chunk."""
    return float(np.einsum("i,i->", x, y))


_VECDOT = getattr(np, "vecdot", None)  # numpy >= 2


def _row_dots(rows: np.ndarray) -> np.ndarray:
    """Each row's dot product with itself (numpy >= 2's vecdot ufunc, else einsum: the same sums)."""
    return _VECDOT(rows, rows) if _VECDOT is not None else np.einsum("ij,ij->i", rows, rows)


def _nearest_rank(q: float, n: int) -> int:
    return max(1, math.ceil(q * n - 1e-9))


# --- the result ---------------------------------------------------------------------------------------

def _lsb():
    """An LSB statistic: in the document of an integer buffer's statistics only."""
    return serial.json(when=lambda stats: stats.integer)


@dataclass(frozen=True)
class ErrorStats(serial.Serial):
    """How far B is from A; values in dequantized units when the quantization is known, raw units otherwise.
    Its document leaves out what only the pictures and the verdict need (integer is read back from the LSB
    statistics being there)."""

    JSON_ORDER = ("max_abs", "mean_abs", "median_abs", "p99_abs", "max_rel", "cosine", "sqnr_db", "nan", "inf",
                  "nonfinite_mismatch", "min_atol", "worst", "count", "differing", "units")

    count: int
    differing: int
    max_abs: float
    mean_abs: float
    median_abs: float
    p99_abs: float
    max_rel: float | None
    cosine: float | None
    sqnr_db: float
    nan: int
    inf: int
    nonfinite_mismatch: int
    min_atol: float | None
    worst: dict | None
    integer: bool = field(default=False, metadata=serial.json(skip=True))
    # dequantized unit per LSB (integer buffers with known quantization)
    scale: float | None = field(default=None, metadata=serial.json(skip=True))
    max_abs_lsb: int | None = field(default=None, metadata=_lsb())
    mean_abs_lsb: float | None = field(default=None, metadata=_lsb())
    median_abs_lsb: float | None = field(default=None, metadata=_lsb())
    p99_abs_lsb: float | None = field(default=None, metadata=_lsb())
    min_atol_lsb: int | None = field(default=None, metadata=_lsb())
    # elements outside the tolerance the statistics were computed for
    violations: int = field(default=0, metadata=serial.json(skip=True))
    units: str = "raw"                # "dequantized" or "raw"
    # per lane (record buffers): max |b - a|
    per_lane_max: tuple = field(default=(), repr=False, metadata=serial.json(skip=True))
    # (edges, counts) of the non-zero |b - a|
    histogram: tuple = field(default=(), repr=False, compare=False, metadata=serial.json(skip=True))
    # for pictures, when asked
    sample: ErrorSample | None = field(default=None, repr=False, compare=False, metadata=serial.json(skip=True))

    @classmethod
    def from_dict(cls, doc: dict) -> "ErrorStats":
        return dataclasses.replace(serial.decode(cls, doc), integer="max_abs_lsb" in doc)


# --- the accumulator ------------------------------------------------------------------------------------

def _cosine(s_aa: float, s_bb: float, s_ab: float) -> float | None:
    """Cosine similarity from the sums of squares and products: 1 when both sides are all zeros, None when one
    is (no direction to compare), clipped to [-1, 1] against rounding."""
    if s_aa == 0 and s_bb == 0:
        return 1.0
    if s_aa == 0 or s_bb == 0:
        return None
    return max(-1.0, min(1.0, s_ab / math.sqrt(s_aa * s_bb)))


def _sqnr(s_aa: float, s_err2: float) -> float:
    """Signal-to-quantization-noise ratio in dB: infinite without error, minus infinite for a zero signal."""
    if s_err2 == 0:
        return math.inf
    if s_aa == 0:
        return -math.inf
    return 10.0 * math.log10(s_aa / s_err2)


def _min_lsb(min_atol: float | None, unit: float) -> int | None:
    """The smallest tolerance in LSB that passes (min_atol in units of one code step, rounded up)."""
    if min_atol is None:
        return None
    return int(math.ceil(min_atol / unit - 1e-9)) if unit else 0


class ErrorAccumulator:
    """Streams a pair into ErrorStats. `integer` buffers hold codes (zero point subtracted by the caller's
    `zero_point`); `scale` turns LSB into units. `atol` (in units) / `rtol` / `check` describe the tolerance
    whose violations are counted and whose min_atol is reported."""

    def __init__(self, *, integer: bool, scale: float | None = None, zero_point: int = 0,
                 atol: float = 0.0, rtol: float = 0.0, check: str = "max", lanes: int = 0, itemsize: int = 1,
                 sample: tuple[int, int, int] | None = None):
        self.integer = integer
        self.itemsize = itemsize
        self.scale = scale
        self.unit = scale if (integer and scale is not None) else 1.0
        self.zero_point = zero_point if integer else 0
        self.atol, self.rtol, self.check = float(atol), float(rtol), check
        self.n = 0
        self.s_aa = 0.0
        self.d_bb = 0.0   # sum over differing pairs of b*b - a*a
        self.d_ab = 0.0   # sum over differing pairs of a*b - a*a
        self.s_err2 = 0.0
        self.s_err = 0.0
        self.s_abs_a = 0.0
        self.max_err = 0.0
        self.max_rel = None
        self.worst_index = None
        self.nan_a = self.inf_a = 0
        self.nan_b_delta = self.inf_b_delta = 0
        self.nonfinite_mismatch = 0
        self.b_only_nonfinite = 0  # positions where A is finite and B is not (left out of the error statistics)
        self.first_nonfinite_mismatch = None
        self.differing = 0
        self.violations = 0
        self.max_excess = 0.0
        # LSB errors of 8- and 16-bit codes fit a histogram (exact quantiles); wider integers are kept like floats.
        self.tail = _LsbHistogram() if integer and itemsize <= 2 else _FloatTail()
        self.excess_tail = _FloatTail() if rtol > 0 else None
        self.lane_max = np.zeros(lanes, dtype=np.float64) if lanes else None
        # 8-bit codes: how often each (a, b) byte pair differs, for many pairs at once (_add_code_pairs).
        self.code_pairs: np.ndarray | None = None
        self._code_dtype = None  # int8 or uint8: how the counted bytes read as codes
        self._scratch: np.ndarray | None = None  # _add_reference_bytes' conversion buffer
        # (records, elements per record, data elements): also collect an ErrorSample for pictures
        # (add_differing then takes the pairs' flat positions)
        self.sample = _Sample(*sample) if sample is not None else None

    @property
    def seen_difference(self) -> bool:
        """Whether a pair differed in its bits (a finite error, or a NaN / infinity that is not the same)."""
        return bool(self.differing or self.nonfinite_mismatch)

    def fresh(self) -> "ErrorAccumulator":
        """An empty accumulator with the same settings (for another thread's share of the work)."""
        out = ErrorAccumulator(integer=self.integer, scale=self.scale, zero_point=self.zero_point, atol=self.atol,
                               rtol=self.rtol, check=self.check, itemsize=self.itemsize,
                               lanes=0 if self.lane_max is None else self.lane_max.size)
        out.sample = self.sample.fresh() if self.sample is not None else None
        return out

    def merge(self, other: "ErrorAccumulator") -> None:
        """Fold in `other`, fed with elements that all come after this one's (ties for the worst element go to
        the earlier one, as in one pass). Sums are added in a fixed order, so the result does not depend on
        which thread finished first."""
        for name in ("n", "s_aa", "d_bb", "d_ab", "s_err2", "s_err", "s_abs_a", "nan_a", "inf_a", "nan_b_delta",
                     "inf_b_delta", "nonfinite_mismatch", "b_only_nonfinite", "differing", "violations"):
            setattr(self, name, getattr(self, name) + getattr(other, name))
        if other.max_err > self.max_err:
            self.max_err, self.worst_index = other.max_err, other.worst_index
        if other.max_rel is not None:
            self.max_rel = other.max_rel if self.max_rel is None else max(self.max_rel, other.max_rel)
        if other.first_nonfinite_mismatch is not None and self.first_nonfinite_mismatch is None:
            self.first_nonfinite_mismatch = other.first_nonfinite_mismatch
        self.max_excess = max(self.max_excess, other.max_excess)
        self.tail.merge(other.tail)
        if self.excess_tail is not None:
            self.excess_tail.merge(other.excess_tail)
        if self.lane_max is not None and other.lane_max is not None:
            np.maximum(self.lane_max, other.lane_max, out=self.lane_max)
        if self.sample is not None and other.sample is not None:
            self.sample.merge(other.sample)
        if other.code_pairs is not None:
            self._code_dtype = other._code_dtype
            if self.code_pairs is None:
                self.code_pairs = other.code_pairs.copy()
            else:
                self.code_pairs += other.code_pairs

    # The reference once: signal sums and non-finite counts. `values` any numeric array (flattened).
    def add_reference(self, values) -> None:
        flat = np.asarray(values).reshape(-1)
        if self.sample is not None:
            self.sample.add_reference(flat)
        if flat.dtype.itemsize == 1 and flat.dtype.kind in "iu" and self.integer:
            self._add_reference_bytes(flat)
            return
        self.n += int(flat.size)
        buf = np.empty(min(CHUNK, max(1, flat.size)), dtype=np.float64)
        for i in range(0, flat.size, CHUNK):
            part = flat[i:i + CHUNK]
            x = buf[: part.size]
            np.copyto(x, part, casting="unsafe")
            if self.zero_point:
                x -= self.zero_point
            if not self.integer:
                finite = np.isfinite(x)
                if not finite.all():
                    self.nan_a += int(np.isnan(x).sum())
                    self.inf_a += int(np.isinf(x).sum())
                    x = x[finite]
            self.s_aa += _dot(x, x)
            if self.rtol > 0 and self.check == "mean":
                self.s_abs_a += float(np.abs(x).sum())

    def _add_reference_bytes(self, flat: np.ndarray) -> None:
        """sum((q - zero_point)^2) of 8-bit codes, exactly, in float32: a row of 256 squares of at most 255^2
        sums to less than 2^24, so every partial sum of a row is an integer float32 holds exactly; the rows'
        sums are added in float64. Half the memory traffic of converting to float64. The codes are converted
        BYTE_CHUNK at a time into one buffer kept for the accumulator's life (by measurement: numpy's per-call
        cost and a fresh buffer's page faults made 128 Ki-element chunks ~20 % slower)."""
        self.n += int(flat.size)
        zp = np.float32(self.zero_point)
        if self._scratch is None or self._scratch.size < min(BYTE_CHUNK, flat.size):
            self._scratch = np.empty(min(BYTE_CHUNK, max(256, flat.size)), dtype=np.float32)
        buf = self._scratch
        for i in range(0, flat.size, BYTE_CHUNK):
            part = flat[i:i + BYTE_CHUNK]
            whole = part.size - part.size % 256
            x = buf[:part.size]
            np.copyto(x, part, casting="unsafe")
            if self.zero_point:
                np.subtract(x, zp, out=x)
            if whole:
                rows = x[:whole].reshape(-1, 256)
                self.s_aa += float(_row_dots(rows).sum(dtype=np.float64))
            if whole < part.size:
                rest = x[whole:].astype(np.float64)
                self.s_aa += _dot(rest, rest)

    # The pairs whose bits differ (any order, any chunking). `index_of(i)` maps a position in these arrays to
    # the element's flat index in the buffer; `lane` (optional, same length) names each element's lane.
    def add_differing(self, a, b, index_of, lane=None, positions=None) -> None:
        a = np.asarray(a).reshape(-1)
        b = np.asarray(b).reshape(-1)
        if not a.size:
            return
        if self.sample is not None:  # the pairs for pictures: centred codes or raw values, and where they are
            zp = self.zero_point if self.integer else 0
            fa, fb = a.astype(np.float64) - zp, b.astype(np.float64) - zp
            err = np.abs(fb - fa)
            finite = np.isfinite(err)
            if not finite.all():
                fa, fb, err = fa[finite], fb[finite], err[finite]
                positions = np.asarray(positions)[finite] if positions is not None else None
            self.sample.add_pairs(fa, fb, err, positions)
        if self.integer and a.dtype.itemsize == 1 and a.size >= CODE_PAIRS_MIN and self.excess_tail is None:
            self._add_code_pairs(a, b, index_of, lane)
            return
        if self.integer:
            # Codes of up to 16 bits minus their zero point, and their differences, fit int32 exactly.
            wide = np.int32 if a.dtype.itemsize <= 2 else np.int64
            ai = a.astype(wide) - wide(self.zero_point)
            bi = b.astype(wide) - wide(self.zero_point)
            lsb = np.abs(bi - ai)
            # equal codes add a count at 0, which the histogram's quantiles leave out
            self.tail.add(lsb if isinstance(self.tail, _LsbHistogram) else lsb[lsb > 0].astype(np.float64))
            fa, fb = ai.astype(np.float64), bi.astype(np.float64)
            err = lsb.astype(np.float64)
            self._pairs(fa, fb, err, index_of, lane)
            return
        fa, fb = a.astype(np.float64), b.astype(np.float64)
        fin_a, fin_b = np.isfinite(fa), np.isfinite(fb)
        both = fin_a & fin_b
        if not both.all():
            nan_a, nan_b = np.isnan(fa), np.isnan(fb)
            # B's non-finite counts = A's + what changes at the differing positions.
            self.nan_b_delta += int(nan_b.sum()) - int(nan_a.sum())
            self.inf_b_delta += int(np.isinf(fb).sum()) - int(np.isinf(fa).sum())
            b_only = fin_a & ~fin_b
            if b_only.any():  # the pair leaves the statistics: take A's value out of the signal sum again
                self.b_only_nonfinite += int(np.count_nonzero(b_only))
                self.s_aa -= _dot(fa[b_only] - self.zero_point, fa[b_only] - self.zero_point)
            # A non-finite value equals only its own bits (NaN vs NaN of another payload or sign differs, as
            # +inf vs -inf does): no tolerance passes a pair that is not the same NaN or infinity.
            same = bit_view(a) == bit_view(b)
            mismatch = ~both & ~same
            if mismatch.any():
                self.nonfinite_mismatch += int(mismatch.sum())
                first = index_of(int(np.flatnonzero(mismatch)[0]))
                if self.first_nonfinite_mismatch is None or first < self.first_nonfinite_mismatch:
                    self.first_nonfinite_mismatch = first
            # A's non-finite values were left out of the signal sum; B's cross terms likewise.
            keep = np.flatnonzero(both)
            fa, fb = fa[keep], fb[keep]
            lane = lane[keep] if lane is not None else None
            base = index_of
            index_of = lambda i, _keep=keep, _base=base: _base(int(_keep[i]))  # noqa: E731
        err = np.abs(fb - fa)
        self.tail.add(err)
        self._pairs(fa, fb, err, index_of, lane)

    def _add_code_pairs(self, a, b, index_of, lane) -> None:
        """`add_differing` for many 8-bit codes: only the count of each (a, b) byte pair is kept here, and
        `_fold_code_pairs` turns the 65,536 counts into the same sums `_pairs` adds one element at a time (the
        sums are of integers, exact in float64, so the order does not matter). What needs positions (the worst
        element, the per-lane maxima) is taken here, from the errors in LSB."""
        err = np.abs(b.astype(np.int16) - a.astype(np.int16))  # codes of one byte: |b - a| <= 255
        self.differing += int(a.size)
        k = int(np.argmax(err))
        if err[k] > self.max_err:  # the first largest, as in _pairs
            self.max_err = float(err[k])
            self.worst_index = index_of(k)
        if self.lane_max is not None and lane is not None:
            top = np.zeros(self.lane_max.size, dtype=np.int16)
            np.maximum.at(top, lane, err)
            np.maximum(self.lane_max, top * self.unit, out=self.lane_max)
        key = a.view(np.uint8).astype(np.intp)
        key <<= 8
        key |= b.view(np.uint8)
        counts = np.bincount(key, minlength=1 << 16)
        if self.code_pairs is None:
            self.code_pairs = counts
        else:
            self.code_pairs += counts
        self._code_dtype = a.dtype

    def _fold_code_pairs(self) -> None:
        """Move the byte-pair counts into the sums (once, before the statistics are read)."""
        counts, self.code_pairs = self.code_pairs, None
        if counts is None:
            return
        codes = np.arange(256, dtype=np.uint8).view(self._code_dtype).astype(np.int64) - self.zero_point
        pairs = np.flatnonzero(counts)
        weight = counts[pairs]
        fa, fb = codes[pairs >> 8], codes[pairs & 0xFF]   # key = a_byte << 8 | b_byte
        err = np.abs(fb - fa)
        self.d_bb += float(np.dot(weight, fb * fb - fa * fa))
        self.d_ab += float(np.dot(weight, fa * fb - fa * fa))
        self.s_err2 += float(np.dot(weight, err * err))
        self.s_err += float(np.dot(weight, err))
        self.tail.add_counts(np.bincount(err, weights=weight).astype(np.int64))
        nz = fa != 0
        if nz.any():
            rel = float((err[nz] / np.abs(fa[nz])).max())
            self.max_rel = rel if self.max_rel is None else max(self.max_rel, rel)
        self.violations += int(weight[err * self.unit > self.atol].sum())

    def add_dense(self, a, b, start: int) -> None:
        """A whole chunk of float pairs (flat; element i has flat index start + i), in one cache-sized pass
        per CHUNK: the common case of a float stage where (almost) every value differs a little."""
        a = np.asarray(a).reshape(-1)
        b = np.asarray(b).reshape(-1)
        size = min(CHUNK, max(1, a.size))
        fa, fb, d, r, q = (np.empty(size) for _ in range(5))
        for i in range(0, a.size, CHUNK):
            pa, pb = a[i:i + CHUNK], b[i:i + CHUNK]
            m = pa.size
            A, B, D, R = fa[:m], fb[:m], d[:m], r[:m]
            np.copyto(A, pa, casting="unsafe")
            np.copyto(B, pb, casting="unsafe")
            with np.errstate(all="ignore"):
                np.subtract(B, A, out=D)
                aa, err2 = _dot(A, A), _dot(D, D)
                finite = math.isfinite(aa + err2 + _dot(B, B))
            if not finite:  # a NaN or an infinity: the careful path
                self.add_reference(pa)
                where = np.flatnonzero(bit_view(pa) != bit_view(pb))
                if where.size:
                    self.add_differing(pa[where], pb[where], lambda k, _w=where, _b=start + i: _b + int(_w[k]))
                continue
            self.n += m
            self.s_aa += aa
            self.d_bb += _dot(B, B) - aa
            self.d_ab += _dot(A, B) - aa
            self.s_err2 += err2
            np.abs(D, out=D)
            self.s_err += float(D.sum())
            self.differing += int(np.count_nonzero(bit_view(pa) != bit_view(pb)))
            k = int(np.argmax(D))
            if D[k] > self.max_err:
                self.max_err = float(D[k])
                self.worst_index = start + i + k
            np.abs(A, out=R)
            if self.rtol > 0 and self.check == "mean":
                self.s_abs_a += float(R.sum())
            nz = R > 0
            Q = q[:m]
            Q.fill(0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                rel = np.divide(D, R, out=Q, where=nz)
            if nz.any():
                top = float(rel.max())
                self.max_rel = top if self.max_rel is None else max(self.max_rel, top)
            if self.rtol > 0:
                np.multiply(R, self.rtol, out=R)
                np.subtract(D, R, out=R)  # the excess over rtol * |a|
                self.violations += int(np.count_nonzero(R > self.atol))
                self.max_excess = max(self.max_excess, float(R.max()))
                self.excess_tail.add(R)
            else:
                self.violations += int(np.count_nonzero(D > self.atol))
            self.tail.add_nonnegative(D)

    def _pairs(self, fa, fb, err, index_of, lane) -> None:
        """Finite differing pairs, in centred units of LSB (integers) or raw units (floats)."""
        if not fa.size:
            return
        self.differing += int(fa.size)
        aa = _dot(fa, fa)
        self.d_bb += _dot(fb, fb) - aa
        self.d_ab += _dot(fa, fb) - aa
        self.s_err2 += _dot(err, err)
        self.s_err += float(err.sum())
        k = int(np.argmax(err))
        # Chunks arrive in index order and argmax takes the first maximum: the worst is the first largest.
        if err[k] > self.max_err:
            self.max_err = float(err[k])
            self.worst_index = index_of(k)
        nz = fa != 0
        if nz.any():
            rel = float(np.divide(err, np.abs(fa), out=np.zeros_like(err), where=nz).max())
            self.max_rel = rel if self.max_rel is None else max(self.max_rel, rel)
        unit = self.unit
        if self.rtol > 0:
            excess = err * unit - self.rtol * np.abs(fa) * unit
            self.violations += int((excess > self.atol).sum())
            self.max_excess = max(self.max_excess, float(excess.max()))
            self.excess_tail.add(excess)
        else:
            self.violations += int((err * unit > self.atol).sum())
        if self.lane_max is not None and lane is not None:
            np.maximum.at(self.lane_max, lane, err * unit)

    def finish(self, locate=None) -> ErrorStats:
        """The statistics; `locate(flat_index) -> dict` adds where the worst element is (anchor/lane, y/x/z)."""
        self._fold_code_pairs()
        n, unit = self.n, self.unit
        finite_n = n - self.nan_a - self.inf_a - self.b_only_nonfinite if not self.integer else n
        s_aa = self.s_aa
        s_bb = s_aa + self.d_bb
        s_ab = s_aa + self.d_ab
        cosine = _cosine(s_aa, s_bb, s_ab)
        sqnr = _sqnr(s_aa, self.s_err2)
        denom = max(1, finite_n)
        nonzero = self.tail.total
        zeros = finite_n - nonzero

        def quantile(q):
            if finite_n <= 0:
                return 0.0
            k = _nearest_rank(q, finite_n)
            return 0.0 if k <= zeros else self.tail.kth(k - zeros)

        median, p99 = quantile(0.5), quantile(0.99)
        mean = self.s_err / denom
        max_abs = self.max_err * unit
        min_atol = self._min_atol(max_abs, mean * unit, p99 * unit, denom, finite_n)
        worst = self._worst(locate)
        nan_b = self.nan_a + self.nan_b_delta
        inf_b = self.inf_a + self.inf_b_delta
        out = dict(count=n, differing=self.differing + self.nonfinite_mismatch, max_abs=max_abs,
                   mean_abs=mean * unit, median_abs=median * unit, p99_abs=p99 * unit,
                   max_rel=self.max_rel, cosine=cosine, sqnr_db=sqnr, nan=self.nan_a + nan_b,
                   inf=self.inf_a + inf_b, nonfinite_mismatch=self.nonfinite_mismatch, min_atol=min_atol,
                   worst=worst, integer=self.integer, scale=self.scale if self.integer else None,
                   violations=self.violations + self.nonfinite_mismatch,
                   units="dequantized" if self.integer and self.scale is not None else "raw",
                   per_lane_max=tuple(float(v) for v in self.lane_max) if self.lane_max is not None else ())
        out["histogram"] = self._histogram(max_abs)
        if self.sample is not None:
            out["sample"] = self.sample.finish(unit, self.zero_point if self.integer else 0)
        if self.integer:
            out.update(max_abs_lsb=int(self.max_err), mean_abs_lsb=mean, median_abs_lsb=median, p99_abs_lsb=p99,
                       min_atol_lsb=_min_lsb(min_atol, unit))
        return ErrorStats(**out)

    def _worst(self, locate) -> dict | None:
        """Where the worst element is: the first non-finite mismatch if any (it outweighs every finite error),
        else the largest error's; `locate` adds its anchor/lane or y/x/z."""
        index = self.first_nonfinite_mismatch if self.nonfinite_mismatch else self.worst_index
        if index is None:
            return None
        worst = {"index": int(index)}
        if locate is not None:
            worst.update(locate(int(index)))
        return worst

    def _histogram(self, max_abs: float) -> tuple:
        """(edges, counts) of the nonzero errors: one bin per LSB (centred on 1, 2, ...) for codes whose largest
        error fits HIST_BINS, else HIST_BINS equal bins up to the largest error (errors clipped into the last)."""
        unit = self.unit
        values, weights = self.tail.weighted()
        if self.integer and 0 < self.max_err <= HIST_BINS:  # one bin per LSB, centred on 1, 2, ...
            edges = (np.arange(int(self.max_err) + 1) + 0.5) * unit
        else:
            edges = np.linspace(0.0, max_abs if max_abs > 0 else 1.0, HIST_BINS + 1)
        counts = np.histogram(np.minimum(values * unit, edges[-1]), bins=edges, weights=weights)[0] \
            if values.size else np.zeros(HIST_BINS)
        return edges, counts.astype(np.int64)

    def _min_atol(self, max_abs, mean_abs, p99_abs, denom, finite_n):
        if self.nonfinite_mismatch:
            return None
        if self.rtol <= 0:
            return {"max": max_abs, "mean": mean_abs, "p99": p99_abs}[self.check]
        if self.check == "max":
            return max(0.0, self.max_excess)
        if self.check == "mean":
            return max(0.0, (self.s_err * self.unit - self.rtol * self.s_abs_a * self.unit) / denom)
        nonzero = self.excess_tail.total
        k = _nearest_rank(0.99, finite_n)
        zeros = finite_n - nonzero
        return 0.0 if k <= zeros else self.excess_tail.kth(k - zeros)


# --- whole arrays (tests, small buffers, the library) -------------------------------------------------------

def error_stats(a, b, *, scale: float | None = None, zero_point: int = 0, atol: float = 0.0, rtol: float = 0.0,
                check: str = "max", locate=None) -> ErrorStats:
    """Statistics of two same-shaped numeric arrays (A the reference), streamed chunk by chunk."""
    a = np.asarray(a).reshape(-1)
    b = np.asarray(b).reshape(-1)
    if a.shape != b.shape:
        from forensics.core.errors import InputError

        raise InputError(f"the arrays hold {a.size} and {b.size} elements")
    integer = a.dtype.kind in "iub"
    acc = ErrorAccumulator(integer=integer, scale=scale, zero_point=zero_point, atol=atol, rtol=rtol, check=check,
                           itemsize=a.dtype.itemsize)
    feed_pair_split(acc, a, b)
    return acc.finish(locate)


def feed_in_halves(acc: ErrorAccumulator, lo: int, hi: int, feed, *, align: int = 1,
                   name: str = "forensics-stats") -> None:
    """`feed(accumulator, lo, hi)` over [lo, hi) in two halves (split at a multiple of `align` from lo): the
    second half on another core into a fresh accumulator, merged after the first's, which gives the result of
    one pass (sums up to rounding)."""
    mid = lo + (hi - lo) // 2 // align * align
    second = acc.fresh()
    both(lambda: feed(acc, lo, mid), lambda: feed(second, mid, hi), name=name)
    acc.merge(second)


def feed_pair_split(acc: ErrorAccumulator, a: np.ndarray, b: np.ndarray, start: int = 0) -> None:
    """`feed_pair` over a whole pair, in two halves on the two cores when the pair is large (feed_in_halves)."""
    if a.size < PARALLEL_MIN or not two_cores():
        feed_pair(acc, a, b, start)
        return
    feed_in_halves(acc, 0, a.size, lambda part, lo, hi: feed_pair(part, a[lo:hi], b[lo:hi], start + lo))


def element_dtype(name) -> np.dtype:
    """The dtype of the elements a dump stores: little-endian (the chip's and the host's order) unless the name
    says big-endian (`>f4`, e.g. a .npy written on such a machine)."""
    dtype = np.dtype(name)
    return dtype if dtype.itemsize == 1 or dtype.byteorder == ">" else dtype.newbyteorder("<")


def bit_view(x: np.ndarray) -> np.ndarray:
    """The same elements as unsigned integers of their width (bitwise comparison: NaN == NaN, -0 != +0)."""
    return x.view(np.dtype(f"u{x.dtype.itemsize}")) if x.dtype.kind == "f" else x


def feed_pair(acc: ErrorAccumulator, a: np.ndarray, b: np.ndarray, start: int) -> None:
    """One chunk of a pair (flat, same dtype) whose first element has flat index `start`."""
    if not acc.integer:
        acc.add_dense(a, b, start)
        return
    for i in range(0, a.size, CHUNK * 8):
        pa, pb = a[i:i + CHUNK * 8], b[i:i + CHUNK * 8]
        acc.add_reference(pa)
        where = np.flatnonzero(bit_view(pa) != bit_view(pb))
        if where.size:
            base = start + i
            acc.add_differing(pa[where], pb[where], lambda k, _w=where, _b=base: _b + int(_w[k]))


# --- where an element is -------------------------------------------------------------------------------------

def locator(*, shape=None, record_size: int | None = None, lane_names=None, itemsize: int = 1, unit: str = "anchors"):
    """`flat index -> {"anchor", "lane"}` for per-anchor records, `{"y", "x", "z"}` for (1, H, W, C) tensors,
    `{"record", "lane"}` for other (1, N, C) tensors."""
    if unit == "anchors" and record_size:
        per = record_size // itemsize

        def where(index):
            lane = index % per
            out = {"anchor": index // per, "lane": lane}
            if lane_names is not None and lane < len(lane_names):
                out["lane"] = lane_names[lane]
            return out

        return where
    if shape is not None and len(shape) == 3 and shape[-1]:  # (1, rows, lanes): a row and its lane
        per_row = shape[-1]

        def where(index):
            return {"record": index // per_row, "lane": index % per_row}

        return where
    if shape is not None and len(shape) >= 4:
        h, w, c = shape[-3], shape[-2], shape[-1]
        if h and w and c:
            def where(index):
                return {"y": (index // c // w) % h, "x": (index // c) % w, "z": index % c}

            return where
    return None
