"""Heat data: one number per anchor (a lane's value, or how much two dumps differ) and the anchors to mark,
for `--heatmap` pictures and `--grid` maps (forensics/render/pictures.py, forensics/render/grid.py).

Values come from records in anchor order ([anchors, record_size] uint8, forensics.decode.modeldumps.records_by_anchor);
where each anchor sits is forensics.decode.geometry's business, not this module's.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core.errors import InputError
from forensics.core.layout import dequantize


def anchor_values(records, lanes=None, *, scale: float | None = None, zero_point: int = 0) -> np.ndarray:
    """One number per anchor for a heatmap: the maximum over `lanes` of each record (all lanes when None).

    `records` is an [N, lanes] uint8 (or float) array. For scores, pass the non-background class lanes
    (e.g. lanes=(1,) for the face model's `ff 00 80 80` records) or one chosen `--lane`. With `scale`, the
    values are dequantized as (q - zero_point) * scale.
    """
    records = np.asarray(records)
    if records.ndim != 2:
        raise InputError(f"records must be an [N, lanes] array, got shape {list(records.shape)}")
    lanes = tuple(range(records.shape[1])) if lanes is None else tuple(int(v) for v in lanes)
    if not lanes:
        raise InputError("no lanes chosen for the heatmap")
    bad = [lane for lane in lanes if not 0 <= lane < records.shape[1]]
    if bad:
        raise InputError(f"lane {bad[0]} is outside a {records.shape[1]}-lane record (lanes 0..{records.shape[1] - 1})")
    values = records[:, list(lanes)].astype(np.float64)
    if scale is not None:
        values = dequantize(values, scale, zero_point)
    return values.max(axis=1)


def anchor_differences(a, b, lanes=None, *, scale: float | None = None) -> np.ndarray:
    """One number per anchor for a diff heatmap: max |a - b| over `lanes` (in LSB, or times `scale`)."""
    a, b = np.asarray(a), np.asarray(b)
    if a.shape != b.shape or a.ndim != 2:
        raise InputError(f"the two record arrays differ in shape: {list(a.shape)} vs {list(b.shape)}")
    lanes = tuple(range(a.shape[1])) if lanes is None else tuple(int(v) for v in lanes)
    delta = np.abs(a[:, list(lanes)].astype(np.float64) - b[:, list(lanes)].astype(np.float64)).max(axis=1)
    return delta * scale if scale is not None else delta


@dataclass(frozen=True)
class AnchorHeat:
    """One value per anchor for `--heatmap` / `--grid`, the anchors to mark, and how to label the scale."""

    values: np.ndarray = field(repr=False)
    marked: tuple[int, ...]
    label: str
    vmin: float | None = None
    vmax: float | None = None

    @property
    def peak_anchor(self) -> int | None:
        finite = np.where(np.isfinite(self.values), self.values, -np.inf)
        return int(np.argmax(finite)) if len(finite) and np.isfinite(finite.max()) else None

    # Kept by hand (not forensics.core.serial): the document says the peak of `values` and not the values.
    def to_dict(self) -> dict:
        peak = self.peak_anchor
        return {"label": self.label, "marked": list(self.marked), "vmin": self.vmin, "vmax": self.vmax,
                "peak_anchor": peak, "peak_value": float(self.values[peak]) if peak is not None else None}


def _value_lanes(layout, lane):
    from forensics.core.layout import value_lanes

    return value_lanes(layout, lane)


def anchors_heat(records, layout, *, lane: int | None = None, dominant: bytes | None = None,
                 marked: tuple[int, ...] | None = None) -> AnchorHeat:
    """`anchors --heatmap/--grid`: per anchor the maximum non-background lane (lanes after the first data
    lane; pad lanes skipped) or the chosen `lane`, dequantized when the layout has a scale (for multi-byte
    elements, float32 or int16, lanes are elements and the value is theirs); the anchors whose
    record departs from `dominant` (the mode) are marked, or the anchors in `marked` when given (a buffer
    without a dominant record: its highest-scoring anchors).
    """
    records = np.asarray(records, dtype=np.uint8)
    if layout.element is not None:  # float32 / int16 elements: their values, lanes counted in elements
        lanes, label = _value_lanes(_element_layout(layout), lane)
        values = anchor_values(_elements(records, layout), lanes)
        finite = values[np.isfinite(values)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (None, None)
        return _heat(records, values, label, lo, hi, dominant, marked)
    lanes, label = _value_lanes(layout, lane)
    if layout.quantized:
        values = anchor_values(records, lanes, scale=layout.scale, zero_point=layout.zero_point or 0)
        lo = (0 - (layout.zero_point or 0)) * layout.scale
        hi = (255 - (layout.zero_point or 0)) * layout.scale
    else:
        values = anchor_values(records, lanes)
        lo, hi = 0.0, 255.0
    return _heat(records, values, label, lo, hi, dominant, marked)


def _heat(records, values, label, lo, hi, dominant, marked) -> AnchorHeat:
    """The heat with its marked anchors: `marked` when given, else the records that depart from `dominant`."""
    if marked is not None:
        return AnchorHeat(values, tuple(int(i) for i in marked), label, lo, hi)
    marked = ()
    if dominant is not None:
        ref = np.frombuffer(bytes(dominant), dtype=np.uint8)
        if len(ref) == records.shape[1]:
            marked = tuple(int(i) for i in np.flatnonzero(np.any(records != ref, axis=1)))
    return AnchorHeat(values, marked, label, lo, hi)


def diff_heat(records_a, records_b, layout, *, lane: int | None = None, tolerance: int = 0) -> AnchorHeat:
    """`diff --heatmap/--grid`: per anchor the largest |a - b| over the data lanes (or `lane`), in LSB (in the
    elements' own units for float32 / int16 elements); anchors differing by more than `tolerance` are marked."""
    a = np.asarray(records_a, dtype=np.uint8)
    b = np.asarray(records_b, dtype=np.uint8)
    unit = " (LSB)"
    if layout.element is not None:  # float32 / int16 elements: differences of their values
        a, b = _elements(a, layout), _elements(b, layout)
        layout, unit = _element_layout(layout), ""
    if lane is not None:
        lanes, label = _value_lanes(layout, lane)
    else:
        lanes, label = tuple(layout.data_lanes), "max |a - b| over lanes"
    delta = anchor_differences(a, b, lanes)
    marked = tuple(int(i) for i in np.flatnonzero(delta > tolerance))
    return AnchorHeat(delta, marked, label + unit, 0.0, None)


def _elements(records: np.ndarray, layout) -> np.ndarray:
    """[N, record bytes] uint8 as [N, elements] of the layout's element type (float64 values)."""
    dtype = layout.element_dtype
    return np.ascontiguousarray(records).view(dtype).astype(np.float64)


def _element_layout(layout):
    """A layout whose lanes are the elements (for value_lanes: element 0 is the background class)."""
    from forensics.core.layout import RecordLayout

    return RecordLayout(record_size=layout.record_size // layout.element_dtype.itemsize)
