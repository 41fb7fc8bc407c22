"""TFLite_Detection_PostProcess in numpy: dequantize, box decode, fast and regular NMS, as the shipped kernel.

Every step follows tensorflow/lite/kernels/detection_postprocess.cc as LiteRT (ai-edge-litert 2.3) runs it,
checked against that interpreter in tests/decode:

- box decode (DecodeCenterSizeBoxes): `ycenter = dy / y_scale * ha + ya` and `half_h = 0.5 * exp(dh / h_scale)
  * ha` are computed in double and each rounded to float32; `ymin = ycenter - half_h` is a float32 operation.
  No clamping. Every box is decoded and validated (ValidateBoxes): a box with ymin > ymax fails the op.
- scores: the background column is skipped (label offset = score columns - num_classes, 0 or 1); thresholds
  are float32 and a candidate needs `score >= nms_score_threshold`.
- single-class NMS: candidates sorted with a stable descending sort (ties -> lower anchor), greedy selection,
  suppression when the float32 IoU (ComputeIntersectionOverUnion, areas <= 0 give 0) is `> nms_iou_threshold`.
- fast NMS: per anchor the top `max_classes_per_detection` classes (argmax, first maximum, when it is 1;
  `std::partial_sort` otherwise, whose order among equal scores is the C++ library's: we order equal scores
  by lower class), NMS over each anchor's best score, rows written at a stride of max_classes_per_detection.
- regular NMS: NMS per class with `min(detections_per_class, max_detections)`, results merged by a stable
  merge (ties -> lower class, then selection order) and cut to max_detections.

uint8 inputs are dequantized as the runtime does (docs/pitfalls.md): boxes and anchors fed as uint8 into the
kernel are `(q - zero_point) * scale` rounded once; the DEQUANTIZE op and the kernel's uint8 scores use
`optimized_ops::Dequantize`, which LiteRT's x86 build computes as `q*s - zp*s` (two roundings) in blocks of 8
elements and rounds once in the last n mod 8 elements ("litert"); the reference kernel and tflite-runtime 2.14
round once everywhere ("reference").

`postprocess` runs it once; a `PostProcessor` holds one model's checked constants (anchors, options,
quantization, decode tables) for many frames, as an interpreter is prepared once and invoked per frame.
"""

from __future__ import annotations

import contextlib
import functools
import math
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.layout import dequantize as dequantize_as

ROUNDINGS = ("reference", "litert")

_INT_KEYS = ("max_detections", "max_classes_per_detection", "detections_per_class", "num_classes")
_FLOAT_KEYS = ("nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale")


def _f32(value) -> float:
    """The float32 the kernel holds (flexbuffers AsFloat casts a stored double to float)."""
    return float(np.float32(value))


@dataclass(frozen=True)
class PostProcessOptions(serial.Serial):
    """The kernel's options under its own key names (the flexbuffer map of TFLite_Detection_PostProcess)."""

    JSON_ORDER = ("max_detections", "max_classes_per_detection", "detections_per_class", "use_regular_nms",
                  "nms_score_threshold", "nms_iou_threshold", "num_classes")

    num_classes: int
    max_detections: int = 10
    max_classes_per_detection: int = 1
    detections_per_class: int = 100  # kNumDetectionsPerClass when the map has no such key
    use_regular_nms: bool = False
    nms_score_threshold: float = 0.0
    nms_iou_threshold: float = 0.6
    y_scale: float = 10.0
    x_scale: float = 10.0
    h_scale: float = 5.0
    w_scale: float = 5.0

    def __post_init__(self):
        for key in _INT_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
                raise InputError(f"option {key} must be an integer, got {value!r}")
            object.__setattr__(self, key, int(value))
        for key in _FLOAT_KEYS:
            value = getattr(self, key)
            if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
                raise InputError(f"option {key} must be a number, got {value!r}")
            if not math.isfinite(float(value)) or abs(float(value)) > float(np.finfo(np.float32).max):
                raise InputError(f"option {key} must be a finite float32 number, got {value!r}")
            object.__setattr__(self, key, _f32(value))
        object.__setattr__(self, "use_regular_nms", bool(self.use_regular_nms))
        if self.num_classes < 1:
            raise InputError(f"option num_classes must be at least 1, got {self.num_classes}")
        if self.max_detections < 0:
            raise InputError(f"option max_detections must not be negative, got {self.max_detections}")
        if self.max_classes_per_detection < 1:
            raise InputError("option max_classes_per_detection must be at least 1 (the kernel rejects "
                             f"{self.max_classes_per_detection})")
        if not 0.0 < self.nms_iou_threshold <= 1.0:
            raise InputError(f"option nms_iou_threshold must be in (0, 1] (the kernel rejects "
                             f"{self.nms_iou_threshold})")
        if self.use_regular_nms and min(self.detections_per_class, self.max_detections) <= 0:
            raise InputError("regular NMS needs detections_per_class and max_detections above 0 (the kernel "
                             "rejects min(detections_per_class, max_detections) <= 0)")
        for key in ("y_scale", "x_scale", "h_scale", "w_scale"):
            if getattr(self, key) == 0.0:
                raise InputError(f"option {key} must not be 0")

    @classmethod
    def from_mapping(cls, options, where: str = "options") -> "PostProcessOptions":
        """From the kernel's key names (extra keys such as `_output_quantized` are ignored)."""
        if not isinstance(options, dict):
            raise InputError(f"{where} must be a JSON object with the kernel's option names")
        if "num_classes" not in options:
            raise InputError(f"{where} has no num_classes")
        known = {k: options[k] for k in _INT_KEYS + _FLOAT_KEYS + ("use_regular_nms",) if k in options
                 and options[k] is not None}
        try:
            return cls(**known)
        except InputError as exc:
            raise InputError(f"{where}: {exc}") from None

    @property
    def rows(self) -> int:
        """Rows of the kernel's output tensors: max_detections * max_classes_per_detection."""
        return self.max_detections * self.max_classes_per_detection

    @property
    def nms(self) -> str:
        return "regular" if self.use_regular_nms else "fast"



@dataclass(frozen=True)
class Quantization(serial.Serial):
    """uint8 affine quantization of one tensor: real = (q - zero_point) * scale, scale held as float32."""

    scale: float
    zero_point: int

    def __post_init__(self):
        if isinstance(self.scale, bool) or not isinstance(self.scale, (int, float, np.floating)) or \
                not (math.isfinite(float(self.scale)) and float(self.scale) > 0):
            raise InputError(f"quantization scale must be a positive finite number, got {self.scale!r}")
        if isinstance(self.zero_point, bool) or not isinstance(self.zero_point, (int, np.integer)):
            raise InputError(f"quantization zero_point must be an integer, got {self.zero_point!r}")
        object.__setattr__(self, "scale", _f32(self.scale))
        object.__setattr__(self, "zero_point", int(self.zero_point))


def dequantize_single(q, quant: Quantization) -> np.ndarray:
    """fl((q - zero_point) * scale): one rounding (the kernel's Dequantizer, the reference kernels)."""
    return dequantize_as(q, quant.scale, quant.zero_point, "reference")


def dequantize_litert(q, quant: Quantization) -> np.ndarray:
    """LiteRT x86 optimized Dequantize: fl(fl(q*s) - fl(zp*s)) in full blocks of 8 of the flat tensor, then
    fl(s*(q-zp)) for the last n mod 8 elements (measured on ai-edge-litert 2.3, x86-64)."""
    return dequantize_as(q, quant.scale, quant.zero_point, "litert")


def dequantize(q, quant: Quantization, rounding: str = "reference") -> np.ndarray:
    """What a DEQUANTIZE op (or the kernel's uint8 scores path) produces under `rounding`."""
    if rounding == "litert":
        return dequantize_litert(q, quant)
    if rounding == "reference":
        return dequantize_single(q, quant)
    raise InputError(f"unknown dequantize rounding {rounding!r} (choose {', '.join(ROUNDINGS)})")


@functools.lru_cache(maxsize=64)
def _score_tables(scale: float, zero_point: int, rounding: str) -> tuple[np.ndarray, np.ndarray, bool]:
    """(value of each byte at block positions, at tail positions, both strictly increasing) for one tensor's
    quantization: constants of the model, so computed once per (scale, zero_point, rounding)."""
    codes = np.arange(256, dtype=np.uint8)
    quant = Quantization(scale, zero_point)
    tail = dequantize_single(codes, quant)
    block = tail
    if rounding == "litert":
        block = dequantize_as(codes, scale, zero_point, "block")
        if np.array_equal(block.view(np.uint32), tail.view(np.uint32)):
            block = tail  # e.g. zero_point 0: both roundings agree on every byte
    tail.setflags(write=False)
    block.setflags(write=False)
    monotone = bool(np.all(np.diff(block) > 0) and np.all(np.diff(tail) > 0))
    return block, tail, monotone


@functools.lru_cache(maxsize=64)
def _score_values(scale: float, zero_point: int, rounding: str) -> tuple:
    """The single table's values as Python floats (exactly the float32 values), for building result rows."""
    return tuple(_score_tables(scale, zero_point, rounding)[1].tolist())


@functools.lru_cache(maxsize=256)
def _min_code(scale: float, zero_point: int, rounding: str, threshold: float) -> int:
    """Smallest code whose value can reach `threshold` in either table (256 when none can); a constant of the
    model and its options, like the tables."""
    block, tail, _ = _score_tables(scale, zero_point, rounding)
    thr = np.float32(threshold)
    # both tables increase: the first code reaching thr in either of them
    return int(min(np.searchsorted(block, thr, side="left"), np.searchsorted(tail, thr, side="left")))


class _ScoreLookup:
    """uint8 scores dequantized lazily, position by position, exactly as a full dequantization would."""

    def __init__(self, q: np.ndarray, quant: Quantization, rounding: str):
        self.q = q
        self.cols = q.shape[1]
        self.table_key = (quant.scale, quant.zero_point, rounding)
        self.lut_block, self.lut_tail, self._monotone = _score_tables(*self.table_key)
        self.full = (q.size // 8) * 8  # flat positions >= full use lut_tail

    def values(self, rows, cols) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        cols = np.asarray(cols, dtype=np.int64)
        codes = self.q[rows, cols]
        if self.lut_block is self.lut_tail:
            return self.lut_tail[codes]
        flat = rows * self.cols + cols
        return np.where(flat < self.full, self.lut_block[codes], self.lut_tail[codes])

    def min_code(self, threshold: float) -> int:
        """Smallest code whose value can reach `threshold` at any position (256 when none can)."""
        return _min_code(*self.table_key, float(threshold))

    def monotone(self) -> bool:
        return self._monotone

    def rows_in_tail(self) -> np.ndarray:
        """Rows holding at least one position rounded differently (the last n mod 8 elements)."""
        if self.full == self.q.size or self.lut_block is self.lut_tail:
            return np.empty(0, np.int64)
        first = self.full // self.cols
        return np.arange(first, self.q.shape[0], dtype=np.int64)

    def dense(self) -> np.ndarray:
        rows, cols = np.indices(self.q.shape)
        return self.values(rows.reshape(-1), cols.reshape(-1)).reshape(self.q.shape)


def _exp_exact(x: np.ndarray) -> np.ndarray:
    """exp in double with the C library's rounding (numpy's SIMD exp differs from libm in the last bit)."""
    flat = x.reshape(-1)
    if flat.size <= 512:  # a plain loop beats sorting out the repeats
        return np.array([math.exp(v) if v < 709.8 else math.inf for v in flat.tolist()],
                        dtype=np.float64).reshape(x.shape)
    unique, inverse = np.unique(flat, return_inverse=True)
    values = np.array([math.exp(v) if v < 709.8 else math.inf for v in unique.tolist()], dtype=np.float64)
    return values[inverse].reshape(x.shape)


def decode_boxes(deltas: np.ndarray, anchors: np.ndarray, options: PostProcessOptions) -> np.ndarray:
    """DecodeCenterSizeBoxes: float32 [N, >=4] deltas (dy, dx, dh, dw) and float32 [N, 4] anchors (ycenter,
    xcenter, h, w) -> float32 [N, 4] boxes (ymin, xmin, ymax, xmax), unclamped."""
    d = np.asarray(deltas, dtype=np.float32)[:, :4].astype(np.float64)
    a = np.asarray(anchors, dtype=np.float32).astype(np.float64)
    sy, sx, sh, sw = (float(np.float32(getattr(options, k))) for k in ("y_scale", "x_scale", "h_scale", "w_scale"))
    with np.errstate(all="ignore"):
        ycenter = (d[:, 0] / sy * a[:, 2] + a[:, 0]).astype(np.float32)
        xcenter = (d[:, 1] / sx * a[:, 3] + a[:, 1]).astype(np.float32)
        half_h = (0.5 * _exp_exact(d[:, 2] / sh) * a[:, 2]).astype(np.float32)
        half_w = (0.5 * _exp_exact(d[:, 3] / sw) * a[:, 3]).astype(np.float32)
        boxes = np.empty((d.shape[0], 4), np.float32)
        boxes[:, 0] = ycenter - half_h
        boxes[:, 1] = xcenter - half_w
        boxes[:, 2] = ycenter + half_h
        boxes[:, 3] = xcenter + half_w
    return boxes


@functools.lru_cache(maxsize=64)
def _code_factors(scale: float, zero_point: int, two_roundings: bool, scales: tuple) -> np.ndarray:
    """[2, 4, 256] float64: for each byte of a box encoding, at block (0) and tail (1) positions, the double
    factor decode_boxes derives from it: dy / y_scale, dx / x_scale, 0.5 * exp(dh / h_scale),
    0.5 * exp(dw / w_scale). With them the decode of a uint8 row is decode_boxes' arithmetic minus the
    per-call exp: constants of the model, computed once per (quantization, rounding, scales)."""
    codes = np.arange(256, dtype=np.uint8)
    tail = dequantize_single(codes, Quantization(scale, zero_point))
    block = tail
    if two_roundings:
        block = dequantize_as(codes, scale, zero_point, "block")
    sy, sx, sh, sw = scales
    out = np.empty((2, 4, 256), np.float64)
    with np.errstate(all="ignore"):
        for t, lut in enumerate((block, tail)):
            d = lut.astype(np.float64)
            out[t, 0] = d / sy
            out[t, 1] = d / sx
            out[t, 2] = 0.5 * _exp_exact(d / sh)
            out[t, 3] = 0.5 * _exp_exact(d / sw)
    out.setflags(write=False)
    return out


_COORDS = np.arange(4)
# Decoded coordinates known to stay within +-_BOX_BOUND (from the factor tables and the anchors, per model) cannot
# overflow in the decode, nor in areas and unions of two boxes: such boxes skip finiteness checks and errstate.
_BOX_BOUND = 1e18
_NO_ERRSTATE = contextlib.nullcontext()
_COORD_BASE = (np.arange(4, dtype=np.uint16) * 256)[:, None]  # coordinate j's factors start at j * 256


class _QuantizedDecoder:
    """decode_boxes of uint8 box encodings row by row, through _code_factors: each row's bytes pick their
    factors (block or tail ones by flat position under LiteRT's rounding), then the anchor arithmetic."""

    def __init__(self, codes: np.ndarray, anchors: np.ndarray, quant: Quantization, two_roundings: bool,
                 options: PostProcessOptions, anchors_t: np.ndarray | None = None, bounded: bool = False):
        self.codes = codes
        self.bounded = bounded  # _decode_bound(...) < _BOX_BOUND, worked out by PostProcessor
        # float64 [6, N]: ycenter, xcenter, h, w, h, w, one row each (_anchor_rows, once per model by PostProcessor)
        self.anchors_t = _anchor_rows(anchors) if anchors_t is None else anchors_t
        self.table = _code_factors(quant.scale, quant.zero_point, two_roundings,
                                   (options.y_scale, options.x_scale, options.h_scale, options.w_scale)).reshape(-1)
        self.stride = codes.shape[1]
        self.full = (codes.size // 8) * 8  # flat positions >= full take the tail factors
        # the first row holding a tail position; none when both roundings agree
        self.first_tail = self.full // self.stride if two_roundings else codes.shape[0]

    def __call__(self, rows: np.ndarray) -> np.ndarray:
        """float32 [k, 4] boxes of anchors `rows`: a view of a C-contiguous [4, k], one row per coordinate,
        which keeps numpy's inner loops over the k boxes (with [k, 2] operands it would loop over pairs)."""
        index = np.add(self.codes[rows, :4].T, _COORD_BASE, order="C")  # uint16 [4, k]
        if rows.size and int(rows.max()) >= self.first_tail:
            index += ((rows * self.stride + _COORDS[:, None]) >= self.full) * np.uint16(1024)
        a = self.anchors_t[:, rows]
        boxes = np.empty((4, rows.size), np.float32)
        with _NO_ERRSTATE if self.bounded else np.errstate(all="ignore"):
            f = self.table[index] * a[2:]  # dy / y_scale * h, dx / x_scale * w, half height, half width
            centre = (f[:2] + a[:2]).astype(np.float32)
            half = f[2:].astype(np.float32)
            np.subtract(centre, half, out=boxes[:2])
            np.add(centre, half, out=boxes[2:])
        return boxes.T


def _decode_bound(maxima: tuple[float, float], anchor_rows: np.ndarray) -> float:
    """An upper bound of |coordinate| over every box _QuantizedDecoder can make from a factor table with these
    _factor_maxima and these anchors (_anchor_rows): |centre factor| * size + |centre| plus |half factor| *
    size, with a margin far above the float32 rounding of each step (inf when a factor is not finite)."""
    if not anchor_rows.shape[1]:
        return math.inf
    a = np.abs(anchor_rows[:4])
    size, centre = float(a[2:].max()), float(a[:2].max())
    return 2.0 * (maxima[0] * size + centre + maxima[1] * size) + 1.0


@functools.lru_cache(maxsize=64)
def _factor_maxima(scale: float, zero_point: int, two_roundings: bool, scales: tuple) -> tuple[float, float]:
    """(largest |centre factor|, largest |half factor|) of that _code_factors table; inf when not finite."""
    factors = np.abs(_code_factors(scale, zero_point, two_roundings, scales))
    if not np.isfinite(factors).all():
        return math.inf, math.inf
    return float(factors[:, :2].max()), float(factors[:, 2:].max())


def _anchor_rows(anchors: np.ndarray) -> np.ndarray:
    """float64 [6, N] rows ycenter, xcenter, h, w, h, w of float32 [N, 4] anchors: rows 2..5 line up with the
    four decode factors, so one multiply scales them all."""
    anchors = np.asarray(anchors, dtype=np.float32)
    rows = np.empty((6, anchors.shape[0]), np.float64)
    rows[:4] = anchors.T
    rows[4:] = rows[2:4]
    return rows


def _max_f(a, b):
    """std::max<float>(a, b) = (a < b) ? b : a (NaN in b is not propagated, NaN in a is)."""
    return np.where(a < b, b, a)


def _min_f(a, b):
    """std::min<float>(a, b) = (b < a) ? b : a."""
    return np.where(b < a, b, a)


def iou_one_to_many(boxes: np.ndarray, i: int, others: np.ndarray) -> np.ndarray:
    """ComputeIntersectionOverUnion(i, j) for every j in `others`, in float32 as the kernel writes it."""
    others = np.asarray(others, dtype=np.int64)
    return iou_matrix(boxes[i][None], boxes[others])[0]


def iou_matrix(bi: np.ndarray, bj: np.ndarray) -> np.ndarray:
    """ComputeIntersectionOverUnion(i, j) for boxes bi [..., P, 4] against bj [..., Q, 4] -> float32 [..., P, Q].

    Every operation is the kernel's float32 operation in its order: area_i = (ymax - ymin) * (xmax - xmin),
    0 when either area <= 0, intersection = max(min(ymax) - max(ymin), 0) * max(min(xmax) - max(xmin), 0),
    iou = intersection / ((area_i + area_j) - intersection). std::max/std::min differ from np.maximum/minimum
    only when a NaN is involved (overflowed boxes); the exact forms are used then.
    """
    bi = np.asarray(bi, dtype=np.float32)
    bj = np.asarray(bj, dtype=np.float32)
    finite = bool(np.isfinite(bi).all() and np.isfinite(bj).all())
    mx, mn = (np.maximum, np.minimum) if finite else (_max_f, _min_f)
    f0 = np.float32(0.0)
    a = bi[..., :, None, :]
    b = bj[..., None, :, :]
    with np.errstate(all="ignore"):
        area_i = (bi[..., 2] - bi[..., 0]) * (bi[..., 3] - bi[..., 1])
        area_j = (bj[..., 2] - bj[..., 0]) * (bj[..., 3] - bj[..., 1])
        inter = mx(mn(a[..., 2], b[..., 2]) - mx(a[..., 0], b[..., 0]), f0) * \
            mx(mn(a[..., 3], b[..., 3]) - mx(a[..., 1], b[..., 1]), f0)
        iou = inter / ((area_i[..., :, None] + area_j[..., None, :]) - inter)
    degenerate_i, degenerate_j = area_i <= 0, area_j <= 0
    if degenerate_i.any() or degenerate_j.any():
        iou = np.where(degenerate_i[..., :, None] | degenerate_j[..., None, :], f0, iou)
    return iou


def greedy_nms(boxes, group_sizes, limit: int, iou_threshold: float, chunk: int = 32) -> np.ndarray:
    """NonMaxSuppressionSingleClassHelper's greedy pass, for several independent groups at once.

    `boxes` [M, 4] (or anything that returns the boxes of an index array or a slice, such as lazily decoded
    boxes) are the candidates already sorted as the kernel sorts them (descending score, ties -> lower anchor),
    group after group (one group for fast NMS, one per class for regular NMS); `group_sizes` their counts. In each group
    candidate i is selected when no earlier selected candidate j has IoU(j, i) > `iou_threshold`, until
    `limit` are selected. Returns a bool [M] mask of the selected candidates.

    The kernel computes IoU lazily, pair by pair; an IoU is a pure function of the two boxes, so computing it
    for more pairs changes nothing. Work is done in chunks: the first `chunk` candidates of every open group
    are compared with each other in one [groups, chunk, chunk] float32 matrix, and the greedy walk jumps from
    one still-active candidate to the next over bit rows of that matrix; a group still short of `limit`
    continues with its next (doubled) chunk, whose candidates are first checked against everything that group
    has selected. Only the boxes of walked chunks are ever requested from `boxes`.
    """
    sizes = np.asarray(group_sizes, dtype=np.int64)
    total = int(sizes.sum()) if sizes.size else 0
    selected = np.zeros(total, bool)
    if total == 0 or limit <= 0:
        return selected
    limit = int(min(limit, sizes.max()))
    if sizes.size == 1:
        selected[_greedy_one(boxes, total, limit, np.float32(iou_threshold), chunk)[0]] = True
        return selected
    starts = np.cumsum(sizes) - sizes
    thr = np.float32(iou_threshold)
    count = np.zeros(len(sizes), np.int64)
    # each group's selected boxes in selection order, packed: at most min(limit, size) per group, so this
    # never exceeds the candidates themselves
    room = np.minimum(sizes, limit)
    picked_at = np.cumsum(room) - room
    picked = np.zeros((int(room.sum()), 4), np.float32)
    live = np.flatnonzero(sizes > 0)
    done = 0  # candidates of every live group already walked
    while live.size:
        width = int(min(chunk, (sizes[live] - done).max()))
        # groups per pass: keeps the [groups, width, width] and [groups, selected, width] matrices small
        per_pass = max(1, _NMS_MATRIX_ELEMENTS // (width * max(width, int(count[live].max()))))
        for lo in range(0, live.size, per_pass):
            _greedy_pass(boxes, live[lo:lo + per_pass], starts, sizes, done, width, limit, thr, count, picked,
                         picked_at, selected)
        done += width
        chunk = min(chunk * 2, _NMS_MAX_CHUNK)
        live = live[(count[live] < limit) & (sizes[live] > done)]
    return selected


_NMS_MATRIX_ELEMENTS = 1 << 20  # IoU matrix elements per pass (a few MB of float32 temporaries)
_NMS_MAX_CHUNK = 256
# Above this many groups in a pass (and at most this wide), the greedy walks of all groups run at once in numpy as
# a fixed point instead of candidate by candidate in Python (by measurement with benchmarks/bench_decode.py).
_NMS_COLUMN_GROUPS = 8
_NMS_COLUMN_WIDTH = 64


def _greedy_one(boxes, size, limit, thr, chunk, bounded: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """greedy_nms for a single group (fast NMS): the same chunked walk without the bookkeeping that runs
    many groups side by side, which costs more than the walk itself at a few dozen candidates. Returns the
    selected positions and their boxes, in selection order. `bounded` as for _self_suppression."""
    picked = None  # the selected boxes so far, in selection order
    positions = []
    count = done = 0
    while count < limit and done < size:
        width = min(chunk, size - done)
        cand = np.asarray(boxes[done:done + width], dtype=np.float32)
        active = (1 << width) - 1
        if picked is not None:  # candidates suppressed by what earlier chunks selected
            hit = (iou_matrix(picked, cand) > thr).any(axis=0)
            active &= ~int.from_bytes(np.packbits(hit, bitorder="little").tobytes(), "little")
        rows = np.packbits(_self_suppression(cand, thr, bounded), axis=-1, bitorder="little")
        row_bytes, nb = rows.tobytes(), rows.shape[-1]
        new = []
        while active and count < limit:
            i = (active & -active).bit_length() - 1  # the first still-active candidate
            new.append(i)
            count += 1
            active &= ~int.from_bytes(row_bytes[i * nb:(i + 1) * nb], "little") & ~(1 << i)
        if new:
            positions += [done + i for i in new]
            new = cand[np.array(new)]
            picked = new if picked is None else np.concatenate([picked, new])
        done += width
        chunk = min(chunk * 2, _NMS_MAX_CHUNK)
    return (np.array(positions, dtype=np.int64),
            picked if picked is not None else np.empty((0, 4), np.float32))


def _self_suppression(boxes: np.ndarray, thr, bounded: bool = False) -> np.ndarray:
    """iou_matrix(boxes, boxes) > thr for float32 boxes [W, 4] (thr > 0), in fewer numpy calls: the boxes as
    one contiguous row per coordinate (free for the decoders' output), (y, x) extents of all pairs as one
    [2, W, W] array, in place. Any NaN or infinity takes iou_matrix's exact std::max/std::min forms.
    `bounded`: every coordinate is known to lie within +-_BOX_BOUND, so with positive areas nothing can
    overflow or divide by zero, and neither the finiteness check nor the floating-point error state is needed."""
    t = np.ascontiguousarray(boxes.T)
    lo, hi = t[:2], t[2:]  # (ymin, xmin), (ymax, xmax)
    if bounded:
        size = hi - lo
        area = size[0] * size[1]
        if area.min() > 0:  # every union is then at least the larger area: positive
            return _pair_iou(lo, hi, area) > thr
    elif not np.isfinite(t).all():
        return iou_matrix(boxes, boxes) > thr
    with np.errstate(all="ignore"):
        size = hi - lo
        area = size[0] * size[1]
        suppress = _pair_iou(lo, hi, area) > thr
    if area.min() <= 0:  # a degenerate box has IoU 0 against anything
        degenerate = area <= 0
        suppress &= ~(degenerate[:, None] | degenerate[None, :])
    return suppress


def _pair_iou(lo: np.ndarray, hi: np.ndarray, area: np.ndarray) -> np.ndarray:
    """The kernel's IoU of every pair of finite boxes given as (ymin, xmin) rows `lo`, (ymax, xmax) rows `hi`
    and their areas: float32 [W, W] (degenerate pairs not yet zeroed)."""
    extent = np.minimum(hi[:, :, None], hi[:, None, :])
    extent -= np.maximum(lo[:, :, None], lo[:, None, :])
    np.maximum(extent, np.float32(0.0), out=extent)
    inter = extent[0]
    inter *= extent[1]
    union = area[:, None] + area[None, :]
    union -= inter
    inter /= union
    return inter


def _greedy_pass(boxes, live, starts, sizes, done, width, limit, thr, count, picked, picked_at, selected):
    """One chunk of `width` candidates (from position `done`) of each group in `live`; updates count, picked
    and selected in place."""
    steps = np.arange(width)
    valid = steps[None, :] < (sizes[live] - done)[:, None]
    pos = np.where(valid, starts[live][:, None] + done + steps[None, :], starts[live][:, None])
    cand = np.asarray(boxes[pos], dtype=np.float32)  # [L, width, 4]
    active = valid
    have = count[live]
    kmax = int(have.max())
    if kmax:  # candidates suppressed by what their group selected in earlier chunks
        slots = np.arange(kmax)[None, :]
        known = slots < have[:, None]
        prior_boxes = picked[np.where(known, picked_at[live][:, None] + slots, 0)]  # [L, kmax, 4]
        prior = (iou_matrix(prior_boxes, cand) > thr) & known[:, :, None]
        active = active & ~prior.any(axis=1)
    suppresses = iou_matrix(cand, cand) > thr  # [g, i, j]: selecting candidate i of group g suppresses j
    if len(live) >= _NMS_COLUMN_GROUPS and width <= _NMS_COLUMN_WIDTH:
        # Many small groups (regular NMS on sparse scores): all groups' walks at once, as a fixed point. A
        # candidate is selected iff it is active and no earlier selected candidate of its group suppresses it.
        # Applying that rule to "every active candidate" and again to the result settles position by position
        # on the greedy selection (position 0 is final after one round, position 1 after two, ...), and a
        # round that changes nothing has settled: the rule has one fixed point. Suppression chains are short,
        # so a few rounds replace a round per column. The limit cuts each group's selection afterwards, where
        # the kernel's walk stops.
        later = np.triu(suppresses, k=1)  # [g, i, j], i < j: an earlier candidate over a later one
        chosen = active
        for _ in range(width + 1):
            settled = active & ~np.any(chosen[:, :, None] & later, axis=1)
            if np.array_equal(settled, chosen):
                break
            chosen = settled
        chosen = chosen & (np.cumsum(chosen, axis=1) <= (limit - have)[:, None])
        gg, ii = np.nonzero(chosen)  # group-major, ascending within a group: the order of selection
    else:
        # One or few groups: jump from one still-active candidate to the next over bit rows.
        rows = np.packbits(suppresses, axis=-1, bitorder="little")
        row_bytes = rows.tobytes()
        nb = rows.shape[-1]
        bits = np.packbits(active, axis=-1, bitorder="little").tobytes()
        new_g, new_i = [], []
        for g, already in enumerate(have.tolist()):
            left = limit - already
            act = int.from_bytes(bits[g * nb:(g + 1) * nb], "little")
            base = g * width * nb
            while act and left:
                i = (act & -act).bit_length() - 1  # the first still-active candidate
                new_g.append(g)
                new_i.append(i)
                left -= 1
                at = base + i * nb
                act &= ~int.from_bytes(row_bytes[at:at + nb], "little") & ~(1 << i)
        gg, ii = np.array(new_g, dtype=np.int64), np.array(new_i, dtype=np.int64)
    if gg.size:
        selected[pos[gg, ii]] = True
        slot = have[gg] + (np.arange(len(gg)) - np.searchsorted(gg, gg, side="left"))
        picked[picked_at[live[gg]] + slot] = cand[gg, ii]
        count[live] = have + np.bincount(gg, minlength=len(live))


class _Ranked:
    """Boxes of candidates by rank: ranked[pos] -> boxes[anchors[pos]] (decoded on demand when lazy), or
    boxes(anchors[pos]) with `call` (a decoder)."""

    def __init__(self, boxes, anchors: np.ndarray, call: bool = False):
        self.boxes, self.anchors, self.call = boxes, anchors, call

    def __getitem__(self, pos):
        return self.boxes(self.anchors[pos]) if self.call else self.boxes[self.anchors[pos]]


@dataclass(frozen=True, slots=True)  # slots: a third cheaper to build, and fast NMS builds one per row
class Detection(serial.Serial):
    """One row the kernel writes: output slot, anchor, class (background excluded), float32 score, box."""

    row: int
    anchor: int
    class_id: int = field(metadata=serial.json("class"))
    score: float
    box: tuple[float, float, float, float]  # ymin, xmin, ymax, xmax (normalised, float32 values)
    # the raw uint8 byte, when the scores were quantized
    score_code: int | None = field(default=None, metadata=serial.json("score_byte", omit_none=True))


@dataclass(frozen=True)
class DecodeResult(serial.Serial):
    """What TFLite_Detection_PostProcess writes, row by row, with how it was computed."""

    JSON_DERIVED = ("nms", "label_offset")
    JSON_ORDER = ("num_detections", "detections", "nms", "dequantize", "num_anchors", "score_columns",
                  "label_offset", "candidates", "options")

    num_detections: int
    detections: tuple[Detection, ...]
    options: PostProcessOptions
    num_anchors: int
    score_columns: int
    # "reference" / "litert" for uint8 inputs, "none" when the inputs were float32
    rounding: str = field(metadata=serial.json("dequantize"))
    boxes_quant: Quantization | None = field(default=None, metadata=serial.json("boxes_quantization"))
    scores_quant: Quantization | None = field(default=None, metadata=serial.json("scores_quantization"))
    candidates: int = 0  # scores at or above nms_score_threshold that entered NMS
    decoded_boxes: np.ndarray | None = field(default=None, repr=False, compare=False,
                                             metadata=serial.json(skip=True))

    @property
    def nms(self) -> str:
        """The options' NMS ("fast" or "regular")."""
        return self.options.nms

    @property
    def label_offset(self) -> int:
        return self.score_columns - self.options.num_classes

    def output_tensors(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """(boxes [R,4], classes [R], scores [R], num_detections [1], written [R]) as the kernel's outputs.

        Rows the kernel does not write (fast NMS leaves them untouched) are zero here, and False in `written`.
        """
        rows = self.options.rows
        boxes = np.zeros((rows, 4), np.float32)
        classes = np.zeros(rows, np.float32)
        scores = np.zeros(rows, np.float32)
        written = np.zeros(rows, bool)
        if self.options.use_regular_nms:
            written[: self.options.max_detections] = True
        for det in self.detections:
            boxes[det.row] = det.box
            classes[det.row] = det.class_id
            scores[det.row] = det.score
            written[det.row] = True
        return boxes, classes, scores, np.array([self.num_detections], np.float32), written


def _check_anchors(anchors):
    if anchors.ndim != 2 or anchors.shape[1] != 4:
        raise InputError(f"anchors must be [anchors, 4], got shape {list(anchors.shape)}")


def _check_shapes(boxes, scores, anchors, options: PostProcessOptions):
    if boxes.ndim != 2 or boxes.shape[1] < 4:
        raise InputError(f"box encodings must be [anchors, >=4], got shape {list(boxes.shape)}")
    if scores.ndim != 2:
        raise InputError(f"scores must be [anchors, classes], got shape {list(scores.shape)}")
    _check_anchors(anchors)
    n = boxes.shape[0]
    if scores.shape[0] != n or anchors.shape[0] != n:
        raise InputError(f"anchor counts differ: box encodings {n}, scores {scores.shape[0]}, "
                         f"anchors {anchors.shape[0]}")
    extra = scores.shape[1] - options.num_classes
    if extra not in (0, 1):
        raise InputError(f"scores have {scores.shape[1]} columns but num_classes is {options.num_classes}: the "
                         "kernel accepts num_classes or num_classes + 1 (background) columns")


def _check_dtype(name: str, array: np.ndarray):
    if array.dtype not in (np.uint8, np.float32):
        raise InputError(f"{name} must be uint8 or float32, got {array.dtype}")
    _check_finite(name, array)


def _check_finite(name: str, array: np.ndarray):
    # min and max propagate NaN: two vectorised reductions instead of a mask of the whole array
    if array.dtype.kind == "f" and array.size and not (np.isfinite(array.min()) and np.isfinite(array.max())):
        bad = np.argwhere(~np.isfinite(array))[0]
        raise InputError(f"{name} contain NaN or infinity (first at {tuple(int(i) for i in bad)})")


class PostProcessor:
    """TFLite_Detection_PostProcess prepared for one model, called on each frame's box encodings and scores.

    What belongs to the model is checked and tabulated once here, as the interpreter's Prepare does: the
    anchors (copied, so later changes to the caller's array do not matter), the options, the quantizations and
    rounding, the byte tables of the box and score decodes. `postprocess` is one call of a new PostProcessor.
    """

    def __init__(self, anchors, options: PostProcessOptions, *, boxes_quant: Quantization | None = None,
                 scores_quant: Quantization | None = None, anchors_quant: Quantization | None = None,
                 rounding: str = "reference", boxes_into_kernel: bool = False):
        if rounding not in ROUNDINGS:
            raise InputError(f"unknown dequantize rounding {rounding!r} (choose {', '.join(ROUNDINGS)})")
        anchors = np.asarray(anchors)
        _check_anchors(anchors)
        _check_dtype("anchors", anchors)
        if anchors.dtype == np.uint8:
            if anchors_quant is None:
                raise InputError("uint8 anchors need a scale and zero point")
            anchors = dequantize_single(anchors, anchors_quant)
        self.anchors = np.array(anchors, dtype=np.float32)  # a copy: checked once, nobody else's to change
        self.anchors.setflags(write=False)
        self.anchors_t = _anchor_rows(self.anchors)  # for the box decode
        # Only a negative anchor size can give a decoded box min > max, which fails the kernel (ValidateBoxes):
        # with one, every frame's boxes are decoded and checked.
        self.negative_size = bool(self.anchors.size and self.anchors_t[2:4].min() < 0)
        self.options, self.rounding, self.boxes_into_kernel = options, rounding, boxes_into_kernel
        self.boxes_quant, self.scores_quant = boxes_quant, scores_quant
        self.bounded = boxes_quant is not None and _decode_bound(
            _factor_maxima(boxes_quant.scale, boxes_quant.zero_point, rounding == "litert" and not boxes_into_kernel,
                           (options.y_scale, options.x_scale, options.h_scale, options.w_scale)),
            self.anchors_t) < _BOX_BOUND

    def __call__(self, boxes, scores) -> DecodeResult:
        """Run the kernel on [N, 4] box encodings and [N, C] scores (uint8 with the Quantization given at
        construction, or float32 as the kernel received them)."""
        options, rounding, anchors_f = self.options, self.rounding, self.anchors
        boxes = np.asarray(boxes)
        scores = np.asarray(scores)
        _check_shapes(boxes, scores, anchors_f, options)
        _check_dtype("box encodings", boxes)
        _check_dtype("scores", scores)
        quantized_any = False
        if boxes.dtype == np.uint8:
            if self.boxes_quant is None:
                raise InputError("uint8 box encodings need a scale and zero point")
            quantized_any = True
        if scores.dtype == np.uint8:
            if self.scores_quant is None:
                raise InputError("uint8 scores need a scale and zero point")
            quantized_any = True
            lookup = _ScoreLookup(np.ascontiguousarray(scores), self.scores_quant, rounding)
            if not lookup.monotone():  # a degenerate scale: give up the byte-domain shortcuts
                score_f, lookup = lookup.dense(), None
            else:
                score_f = None
        else:
            lookup, score_f = None, scores

        if boxes.dtype == np.uint8:
            decode = _QuantizedDecoder(boxes, anchors_f, self.boxes_quant,
                                       rounding == "litert" and not self.boxes_into_kernel, options, self.anchors_t,
                                       self.bounded)
        else:
            decode = functools.partial(_decode_rows, boxes, anchors_f, options)
        decoded = _LazyBoxes(decode, boxes.shape[0])
        if self.negative_size:
            full = decoded.all()
            bad = np.flatnonzero((full[:, 0] > full[:, 2]) | (full[:, 1] > full[:, 3]))
            if bad.size:
                raise InputError(f"the kernel rejects these inputs: decoded box of anchor {int(bad[0])} has min > "
                                 "max (negative anchor height or width)")

        offset = scores.shape[1] - options.num_classes
        if options.use_regular_nms:
            dets, candidates = _regular(decoded, scores, lookup, score_f, offset, options)
            num = len(dets)
        else:
            dets, candidates, num = _fast(decoded, scores, lookup, score_f, offset, options)
        return DecodeResult(
            num_detections=num, detections=tuple(dets), options=options, num_anchors=int(boxes.shape[0]),
            score_columns=int(scores.shape[1]), rounding=rounding if quantized_any else "none",
            boxes_quant=self.boxes_quant if boxes.dtype == np.uint8 else None,
            scores_quant=self.scores_quant if scores.dtype == np.uint8 else None,
            candidates=candidates, decoded_boxes=decoded.rows)


def postprocess(boxes, scores, anchors, options: PostProcessOptions, *, boxes_quant: Quantization | None = None,
                scores_quant: Quantization | None = None, anchors_quant: Quantization | None = None,
                rounding: str = "reference", boxes_into_kernel: bool = False) -> DecodeResult:
    """Run TFLite_Detection_PostProcess on [N, 4] box encodings, [N, C] scores and [N, 4] anchors.

    float32 inputs are taken as the tensors the kernel received. uint8 inputs need their Quantization;
    they are dequantized as a DEQUANTIZE op would under `rounding`, except boxes with `boxes_into_kernel`
    (uint8 straight into the kernel: its own per-element Dequantizer). uint8 anchors need `anchors_quant`.
    Frames of one model are cheaper through one PostProcessor.
    """
    boxes = np.asarray(boxes)
    scores = np.asarray(scores)
    anchors = np.asarray(anchors)
    if rounding not in ROUNDINGS:
        raise InputError(f"unknown dequantize rounding {rounding!r} (choose {', '.join(ROUNDINGS)})")
    _check_shapes(boxes, scores, anchors, options)  # the frame's shapes first, as before PostProcessor existed
    return PostProcessor(anchors, options, boxes_quant=boxes_quant, scores_quant=scores_quant,
                         anchors_quant=anchors_quant, rounding=rounding,
                         boxes_into_kernel=boxes_into_kernel)(boxes, scores)


class _LazyBoxes:
    """Decoded boxes computed on first use, row by row: the kernel decodes every anchor, but only the
    candidates' boxes can reach the output (the rest only matter to ValidateBoxes, checked separately)."""

    def __init__(self, decode, count: int):
        self.decode = decode  # anchor indices -> float32 [k, 4] boxes
        self.rows = np.zeros((count, 4), np.float32)
        self.done = np.zeros(count, bool)

    def all(self) -> np.ndarray:
        return self[np.arange(self.rows.shape[0])]

    def __getitem__(self, index):
        index = np.asarray(index)
        if not self.done[index].all():
            # each missing anchor once (regular NMS asks for an anchor in several classes, and pads): a mask
            # over the anchors, cheaper than sorting the request
            need = np.zeros_like(self.done)
            need[index] = True
            need &= ~self.done
            need = np.flatnonzero(need)
            self.rows[need] = self.decode(need)
            self.done[need] = True
        return self.rows[index]


def _decode_rows(deltas, anchors, options, rows):
    """decode_boxes of some rows of float32 box encodings."""
    return decode_boxes(deltas[rows], anchors[rows], options)


def _code_hits(scores: np.ndarray, offset: int, code_lo: int) -> tuple[np.ndarray, np.ndarray]:
    """(anchor, class) of every uint8 score >= code_lo outside the background column, row-major order.

    One comparison over the contiguous bytes and a flat nonzero: far cheaper than a per-row reduction or a 2-D
    nonzero over the strided class columns.
    """
    if code_lo >= 256:
        empty = np.empty(0, np.int64)
        return empty, empty
    flat = np.flatnonzero(scores.reshape(-1) >= code_lo) if code_lo > 0 else np.arange(scores.size)
    rows, cols = np.divmod(flat, scores.shape[1])
    if offset:
        keep = cols >= offset
        rows, cols = rows[keep], cols[keep]
    return rows, cols - offset


def _looks_dense(above: np.ndarray, shape) -> bool:
    """More class hits than twice the anchors, estimated from every 61st byte (a stride that walks through
    the columns unless there are a multiple of 61). Twice: a model may score the background column high on
    every anchor, one hit per anchor that is no candidate. A wrong guess costs time, never exactness."""
    return np.count_nonzero(above[::61]) * 61 > 2 * shape[0]


def _best_classes(scores: np.ndarray, offset: int, code_lo: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(ascending anchors with a class byte >= code_lo, the first class holding that row's largest byte, that
    byte).

    The row's largest class byte is >= code_lo, so it is among the hits: sparse scores are decided from the
    hits alone (sorted by row, then descending byte; a stable sort keeps the lower class first among equal
    bytes, as the kernel's argmax keeps the first maximum).
    """
    if code_lo >= 256:
        empty = np.empty(0, np.int64)
        return empty, empty, np.empty(0, np.uint8)
    above = scores.reshape(-1) >= code_lo
    # Dense: one argmax per row is cheaper than sorting the hits. numpy's float32 argmax is vectorised and its
    # uint8 one is not; the bytes convert exactly, so the first maximum is the same.
    if _looks_dense(above, scores.shape):
        cls = scores[:, offset:]
        best = cls.astype(np.float32).argmax(axis=1)
        codes = cls[np.arange(cls.shape[0]), best]
        rows = np.flatnonzero(codes >= code_lo)
        return rows, best[rows], codes[rows]
    flat = np.flatnonzero(above)
    rows, cols = np.divmod(flat, scores.shape[1])
    codes = scores.reshape(-1)[flat]
    if offset:
        keep = cols >= offset
        rows, cols, codes = rows[keep], cols[keep], codes[keep]
    order = np.argsort(rows * 256 + (255 - codes), kind="stable")
    rows, cols, codes = rows[order], cols[order], codes[order]
    first = np.empty(rows.size, bool)
    first[:1] = True
    first[1:] = rows[1:] != rows[:-1]
    return rows[first], cols[first] - offset, codes[first]


def _fast(decoded, scores, lookup, score_f, offset, options):
    """NonMaxSuppressionMultiClassFastHelper."""
    thr = np.float32(options.nms_score_threshold)
    if lookup is not None:
        # Candidate anchors in the byte domain. The lookup tables are strictly increasing, so a byte >= the
        # smallest code whose value can reach the threshold is a superset of the float32 test `score >= thr`
        # (exact once the values are compared below), and within a row of one table the first maximum byte
        # is the first maximum value.
        code_lo = lookup.min_code(thr)
        if lookup.lut_block is lookup.lut_tail and min(options.max_classes_per_detection, options.num_classes) == 1:
            done = _fast_sparse_bytes(decoded, scores, lookup, offset, options, code_lo)
            if done is not None:
                return done
        rows, best, codes = _best_classes(scores, offset, code_lo)
        if lookup.lut_block is lookup.lut_tail:
            # One table for every position: a byte >= the cut-off is exactly a value >= thr, and the bytes
            # rank the candidates as their values do (equal bytes, equal values).
            best_val = lookup.lut_tail[codes]
            chosen, boxes = _fast_selection(decoded, rows, 255 - codes, options.max_detections,
                                            options.nms_iou_threshold)
            return _fast_rows(decoded, scores, lookup, score_f, offset, options, rows, best, best_val, chosen,
                              boxes, codes)
        tail = lookup.rows_in_tail()
        if tail.size:  # rows where equal bytes may dequantize to different floats: decide on floats
            keep = ~np.isin(rows, tail)
            rows, best = rows[keep], best[keep]
        best_val = lookup.values(rows, best + offset)
        if tail.size:
            rr, cc = np.meshgrid(tail, np.arange(offset, scores.shape[1]), indexing="ij")
            tv = lookup.values(rr.reshape(-1), cc.reshape(-1)).reshape(rr.shape)
            tb = tv.argmax(axis=1)
            rows = np.concatenate([rows, tail])
            best = np.concatenate([best, tb])
            best_val = np.concatenate([best_val, tv[np.arange(len(tail)), tb]])
    else:
        cls = score_f[:, offset:]
        best = cls.argmax(axis=1)
        best_val = cls[np.arange(cls.shape[0]), best]
        rows = np.arange(cls.shape[0])
    keep = best_val >= thr
    rows, best, best_val = rows[keep], best[keep], best_val[keep]
    chosen, boxes = _fast_selection(decoded, rows, _descending_u32(best_val), options.max_detections,
                                    options.nms_iou_threshold)
    return _fast_rows(decoded, scores, lookup, score_f, offset, options, rows, best, best_val, chosen, boxes)


class _RankedHits:
    """Candidate anchors in the kernel's rank order (descending best score, ties -> lower anchor), with each
    one's best class and byte, produced on demand from the hits sorted by (descending byte, flat position).

    The class hits (background column left out) come row-major, and a stable sort on the byte keeps that order
    among equal bytes: an anchor's first hit in that order holds its largest byte in its lowest class (the
    kernel's argmax keeps the first maximum), and first hits come in rank order. Under one dequantization table
    equal bytes are equal scores. Boxes of rank positions decode on demand, so the greedy walk reads only the
    hits it reaches.
    """

    def __init__(self, flat: list, codes: list, columns: int, offset: int, decode):
        self.flat, self.codes, self.columns, self.offset, self.decode = flat, codes, columns, offset, decode
        self.next = 0
        self.seen = set()
        self.rows, self.classes, self.bytes = [], [], []

    def extend(self, count: int):
        flat, codes, rows, seen = self.flat, self.codes, self.rows, self.seen
        while len(rows) < count and self.next < len(flat):
            row, col = divmod(flat[self.next], self.columns)  # a class column: background hits are out
            code = codes[self.next]
            self.next += 1
            if row not in seen:
                seen.add(row)
                rows.append(row)
                self.classes.append(col - self.offset)
                self.bytes.append(code)

    def __getitem__(self, pos: slice) -> np.ndarray:
        self.extend(pos.stop)
        return self.decode(np.array(self.rows[pos], dtype=np.int64))


def _fast_sparse_bytes(decoded, scores, lookup, offset, options, code_lo):
    """Fast NMS, one class per anchor, one dequantization table, sparse scores: (detections, candidates,
    anchors) with the ranking and best classes of _RankedHits; None when the scores are dense."""
    if code_lo >= 256:
        return [], 0, 0
    flat_scores = scores.reshape(-1)
    above = flat_scores >= code_lo
    if _looks_dense(above, scores.shape):
        return None
    flat = np.flatnonzero(above)
    rows = flat // scores.shape[1]
    if offset:  # background hits out
        keep = flat - rows * scores.shape[1] >= offset
        flat, rows = flat[keep], rows[keep]
    candidates = int(rows.size and np.count_nonzero(rows[1:] != rows[:-1]) + 1)  # rows ascend: count runs
    codes = flat_scores[flat]
    order = np.argsort(255 - codes, kind="stable")  # one-byte keys: a radix sort
    ranked = _RankedHits(flat[order].tolist(), codes[order].tolist(), scores.shape[1], offset, decoded.decode)
    chosen, boxes = _greedy_one(ranked, candidates, min(options.max_detections, candidates),
                                np.float32(options.nms_iou_threshold), 32, getattr(decoded.decode, "bounded", False))
    chosen = chosen.tolist()
    anchors = [ranked.rows[p] for p in chosen]
    decoded.rows[anchors] = boxes  # what DecodeResult.decoded_boxes shows of them
    values = _score_values(*lookup.table_key)
    stride = options.max_classes_per_detection
    dets = []
    for out_index, (p, box) in enumerate(zip(chosen, boxes.tolist())):
        code = ranked.bytes[p]
        # positional: Detection(row, anchor, class_id, score, box, score_code)
        dets.append(Detection(stride * out_index, ranked.rows[p], ranked.classes[p], values[code], tuple(box), code))
    return dets, candidates, len(dets)


def _fast_rows(decoded, scores, lookup, score_f, offset, options, rows, best, best_val, chosen, boxes,
               best_codes=None):
    """The rows fast NMS writes for the selected candidates `chosen` (positions in rows / best / best_val,
    and best_codes when known) whose decoded boxes are `boxes`."""
    k = min(options.max_classes_per_detection, options.num_classes)
    sel = rows[chosen]
    dets = []
    if not sel.size:
        return dets, int(len(rows)), 0
    decoded.rows[sel] = boxes  # what DecodeResult.decoded_boxes shows of them
    decoded.done[sel] = True
    stride = options.max_classes_per_detection
    boxes_sel = boxes.tolist()
    if k == 1:  # the anchor's best class, already known: one row per anchor
        if best_codes is not None:
            codes = best_codes[chosen].tolist()
        elif scores.dtype == np.uint8:
            codes = scores[sel, best[chosen] + offset].tolist()
        else:
            codes = [None] * sel.size
        for out_index, (anchor, class_id, score, code, box) in enumerate(
                zip(sel.tolist(), best[chosen].tolist(), best_val[chosen].tolist(), codes, boxes_sel)):
            # positional: Detection(row, anchor, class_id, score, box, score_code)
            dets.append(Detection(stride * out_index, anchor, class_id, score, tuple(box), code))
        return dets, int(len(rows)), int(sel.size)
    # std::partial_sort: equal scores ordered by lower class here (the library's order may differ)
    if lookup is not None:
        cols = np.arange(offset, scores.shape[1])
        all_vals = lookup.values(np.repeat(sel, len(cols)), np.tile(cols, sel.size)).reshape(sel.size, -1)
    else:
        all_vals = score_f[sel, offset:]
    top = np.argsort(-all_vals, axis=1, kind="stable")[:, :k]
    top_vals = np.take_along_axis(all_vals, top, axis=1)
    codes = scores[sel[:, None], top + offset].tolist() if scores.dtype == np.uint8 else None
    top, top_vals = top.tolist(), top_vals.tolist()
    for out_index, anchor in enumerate(sel.tolist()):
        box = tuple(boxes_sel[out_index])
        for col in range(len(top[out_index])):
            dets.append(Detection(stride * out_index + col, anchor, top[out_index][col], top_vals[out_index][col],
                                  box, codes[out_index][col] if codes is not None else None))
    return dets, int(len(rows)), int(sel.size)


_FAST_PREFIX = 128  # fast NMS ranks this many candidates (or 4x max_detections) before the rest


def _fast_selection(decoded, rows, descending, limit, iou_threshold) -> tuple[np.ndarray, np.ndarray]:
    """(positions in `rows` (ascending anchors) of the anchors fast NMS selects, in selection order, their
    decoded boxes).

    `descending`: keys ascending as the candidates' scores descend, equal for equal scores: uint8 (255 - the
    byte) or int64 in 0..2^32-1. The kernel sorts every candidate by descending score, stable (ties -> lower
    anchor), then walks greedily until `limit` are selected; the walk seldom goes past the first few dozen.
    Byte keys are sorted whole (numpy's stable sort of one-byte keys is a radix sort). Otherwise the keys
    (descending score, position) are distinct and order candidates exactly as that sort, so the smallest are
    partitioned out and sorted first. Only when the walk over a prefix ends short of `limit` is everything
    walked.
    """
    n = rows.size
    limit = min(limit, n)
    if limit <= 0:
        return np.empty(0, np.int64), np.empty((0, 4), np.float32)
    thr = np.float32(iou_threshold)
    prefix = max(_FAST_PREFIX, 4 * limit)
    if descending.dtype == np.uint8:
        full = np.argsort(descending, kind="stable")
    else:
        keys = (descending << 32) | np.arange(n)
    for size in ((prefix, n) if n > prefix else (n,)):
        if descending.dtype == np.uint8:
            order = full[:size]
        else:
            order = (np.sort(np.partition(keys, size - 1)[:size]) if size < n else np.sort(keys)) & 0xFFFFFFFF
        chosen, boxes = _greedy_one(_Ranked(decoded.decode, rows[order], call=True), size, limit, thr, 32)
        if chosen.size >= limit or size == n:
            return order[chosen], boxes


def _descending_u32(values: np.ndarray) -> np.ndarray:
    """int64 keys in 0..2^32-1 that sort float32 `values` descending (no NaN here: inputs are checked finite).

    The IEEE bit pattern, sign-folded, orders floats as unsigned integers; -0.0 is first made +0.0 because the
    kernel's comparison holds them equal.
    """
    bits = (np.asarray(values, np.float32) + np.float32(0.0)).view(np.uint32).astype(np.int64)
    ascending = np.where(bits >= 0x80000000, 0xFFFFFFFF - bits, bits + 0x80000000)
    return 0xFFFFFFFF - ascending


def _regular(decoded, scores, lookup, score_f, offset, options):
    """NonMaxSuppressionMultiClassRegularHelper (single-threaded order; see replay for num_threads=1).

    All classes at once: candidates sorted by (class, descending score, anchor) are exactly each class's
    stable descending sort laid end to end, and greedy_nms runs the classes' greedy passes side by side.
    """
    thr = np.float32(options.nms_score_threshold)
    per_class = min(options.detections_per_class, options.max_detections)
    if lookup is not None:
        rows, cols = _code_hits(scores, offset, lookup.min_code(thr))
        vals = lookup.values(rows, cols + offset)
    else:
        rows, cols = np.nonzero(score_f[:, offset:] >= thr)
        vals = score_f[rows, cols + offset]
    keep = vals >= thr
    rows, cols, vals = rows[keep], cols[keep], vals[keep]
    # (class, descending score), stable: the hits are row-major, so equal keys keep anchors ascending
    order = np.argsort((cols.astype(np.int64) << 32) | _descending_u32(vals), kind="stable")
    rows, cols, vals = rows[order], cols[order], vals[order]
    sizes = np.bincount(cols)
    sizes = sizes[sizes > 0]
    chosen = np.flatnonzero(greedy_nms(_Ranked(decoded, rows), sizes, per_class, options.nms_iou_threshold))
    # Stable merge by descending score of the class-ordered selections == a stable sort of them.
    final = chosen[np.argsort(-vals[chosen], kind="stable")[: options.max_detections]]
    anchors, classes = rows[final], cols[final]
    codes = scores[anchors, classes + offset].tolist() if scores.dtype == np.uint8 else None
    boxes_sel = decoded[anchors].tolist() if final.size else []
    dets = []
    for row, (anchor, class_id, score) in enumerate(zip(anchors.tolist(), classes.tolist(), vals[final].tolist())):
        # positional: Detection(row, anchor, class_id, score, box, score_code)
        dets.append(Detection(row, anchor, class_id, score, tuple(boxes_sel[row]),
                              codes[row] if codes is not None else None))
    return dets, int(len(rows))
