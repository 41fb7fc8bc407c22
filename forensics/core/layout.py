"""Record layouts: how a dump's bytes split into per-anchor records, lanes, pad lanes and quantization.

The Edge TPU writes outputs in 4-byte lanes, so a record is 4 bytes by default (`ff 00 80 80`: two score
bytes and two pad bytes). A layout can come from flags, from a dump's sidecar, or from a model (later).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from forensics.core.errors import InputError

DEFAULT_RECORD_SIZE = 4
MAX_RECORD_SIZE = 1 << 24  # 16 MiB per record: bounds what a hostile --record or sidecar can make us allocate
# Anchors an anchors.bin or a generator configuration may hold: far beyond any SSD (1,917 / 2,034 / 51,150
# anchors), and 64 MiB as float32 [N, 4], which bounds memory.
MAX_ANCHORS = 1 << 22
DEQUANTIZE_ROUNDINGS = ("exact", "reference", "litert", "block")


def dequantize(q, scale: float, zero_point: int = 0, rounding: str = "exact"):
    """TFLite's affine dequantization `real = (q - zero_point) * scale` of a code or an array of codes: the one
    place it is written. `rounding` says in which arithmetic:
      exact      float64: the values forensics shows and compares (statistics, heatmaps, record values);
      reference  float32, one rounding fl((q - zp) * s): the kernel's Dequantizer, the reference kernels;
      litert     ai-edge-litert 2.3 on x86-64: fl(fl(q * s) - fl(zp * s)) in full blocks of 8 of the flat tensor
                 and one rounding for the last n mod 8 (known pitfalls);
      block      every element as in a full block of `litert`.
    The float32 forms hold `scale` as float32, as a model does."""
    import numpy as np

    zp = zero_point or 0
    if rounding == "exact":
        if isinstance(q, (int, float)):
            return (q - zp) * scale
        return (np.asarray(q).astype(np.float64) - zp) * scale
    q = np.asarray(q)
    s = np.float32(scale)
    if rounding == "reference":
        return (q.astype(np.float32) - np.float32(zp)) * s
    if rounding == "block":
        return q.astype(np.float32) * s - np.float32(np.float32(zp) * s)
    if rounding == "litert":
        flat = q.reshape(-1).astype(np.float32)
        out = np.empty(flat.shape, np.float32)
        full = (flat.size // 8) * 8
        out[:full] = flat[:full] * s - np.float32(np.float32(zp) * s)
        out[full:] = (flat[full:] - np.float32(zp)) * s
        return out.reshape(q.shape)
    raise InputError(f"unknown dequantize rounding {rounding!r} (choose {', '.join(DEQUANTIZE_ROUNDINGS)})")


@dataclass(frozen=True)
class Region:
    """The part of a dump a layout looks at: `records` whole records from `start`, then `trailing` bytes."""

    start: int
    records: int
    record_size: int
    trailing: int

    @property
    def record_bytes(self) -> int:
        return self.records * self.record_size

    @property
    def stop(self) -> int:
        return self.start + self.record_bytes + self.trailing


@dataclass(frozen=True)
class RecordLayout:
    """Bytes per record, which lanes are padding, lane names and (optionally) uint8 quantization."""

    record_size: int = DEFAULT_RECORD_SIZE
    offset: int = 0
    count: int | None = None
    fields: tuple[str, ...] | None = None
    pad_lanes: tuple[int, ...] = ()
    scale: float | None = None
    zero_point: int | None = None
    element: str | None = None  # numpy dtype of multi-byte elements (a .npy of float32, int16): values decode it

    def __post_init__(self):
        self._check_record_size()
        if self.zero_point is not None and not -128 <= self.zero_point <= 255:
            raise InputError(f"zero point {self.zero_point} is outside uint8 (0..255) and int8 (-128..127)")
        self._check_records()
        self._check_scale()
        if self.element is not None:
            self._check_elements()

    def _check_record_size(self):
        """A positive integer, bounded: a hostile --record or sidecar must not make us allocate without end."""
        if not isinstance(self.record_size, int) or self.record_size <= 0:
            raise InputError(f"record size must be a positive integer, got {self.record_size}")
        if self.record_size > MAX_RECORD_SIZE:
            raise InputError(f"record size {self.record_size} is more than {MAX_RECORD_SIZE} bytes per record")

    def _check_records(self):
        """Where the records start, how many there are, and that lane names and pad lanes fit one record."""
        if self.offset < 0:
            raise InputError(f"offset must not be negative, got {self.offset}")
        if self.count is not None and self.count <= 0:
            raise InputError(f"count must be a positive number of records, got {self.count}")
        if self.fields is not None and len(self.fields) != self.record_size:
            raise InputError(f"{len(self.fields)} field names given for a {self.record_size}-byte record")
        bad = [lane for lane in self.pad_lanes if not 0 <= lane < self.record_size]
        if bad:
            raise InputError(f"pad lane {bad[0]} is outside a {self.record_size}-byte record (lanes 0..{self.record_size - 1})")

    def _check_scale(self):
        """A positive finite scale, and none of a zero point without one (TFLite's affine quantization)."""
        if self.scale is not None and not (math.isfinite(self.scale) and self.scale > 0):
            raise InputError(f"scale must be a positive finite number, got {self.scale}")
        if (self.scale is None) != (self.zero_point is None) and self.scale is None:
            raise InputError("a zero point needs a scale ({scale})", params=True)

    def _check_elements(self):
        """Multi-byte elements: a record holds whole ones, and byte names (fields, pad lanes) do not apply."""
        itemsize = self.element_dtype.itemsize
        if self.record_size % itemsize:
            raise InputError(f"a record of {self.record_size} bytes is not a whole number of "
                             f"{self.element_dtype.name} elements ({itemsize} bytes each)")
        if self.fields is not None or self.pad_lanes:
            raise InputError(f"field names and pad lanes name bytes: they do not apply to "
                             f"{self.element_dtype.name} elements")

    @property
    def element_dtype(self):
        """The elements' numpy dtype (None: bytes)."""
        if self.element is None:
            return None
        import numpy as np

        return np.dtype(self.element)

    @property
    def has_values(self) -> bool:
        """Whether `values` says more than the bytes do: dequantized lanes, or decoded elements."""
        return self.quantized or self.element is not None

    @property
    def quantized(self) -> bool:
        return self.scale is not None

    @property
    def field_names(self) -> tuple[str, ...]:
        if self.fields is not None:
            return self.fields
        return tuple("pad" if lane in self.pad_lanes else f"lane{lane}" for lane in range(self.record_size))

    @property
    def data_lanes(self) -> tuple[int, ...]:
        return tuple(lane for lane in range(self.record_size) if lane not in self.pad_lanes)

    def dequantize(self, q: int) -> float:
        """`(q - zero_point) * scale`, the TFLite affine dequantization of one uint8 value."""
        return dequantize(q, self.scale, self.zero_point)

    def values(self, record: bytes) -> list:
        """One number per lane: dequantized where quantization is known, raw for pad lanes; one per element
        when the record holds multi-byte elements."""
        if self.element is not None:
            import numpy as np

            elements = np.frombuffer(record[:len(record) - len(record) % self.element_dtype.itemsize],
                                     self.element_dtype)
            if self.quantized:
                return dequantize(elements, self.scale, self.zero_point).tolist()
            return elements.tolist()
        if not self.quantized:
            return list(record)
        return [q if lane in self.pad_lanes else self.dequantize(q) for lane, q in enumerate(record)]

    def region(self, size: int, path: str | None = None) -> Region:
        """Whole records of this layout inside a dump of `size` bytes; raises when the offset is past the end."""
        if self.offset >= size:
            raise InputError(f"offset {self.offset} is past the end of the data ({size} bytes)", path)
        available = size - self.offset
        if self.count is not None:
            wanted = self.count * self.record_size
            if wanted > available:
                raise InputError(
                    f"{self.count} records of {self.record_size} bytes from offset {self.offset} run past the end "
                    f"({available} bytes available)", path)
            return Region(self.offset, self.count, self.record_size, 0)
        records, trailing = divmod(available, self.record_size)
        return Region(self.offset, records, self.record_size, trailing)


def layout_from(meta=None, *, record_size=None, offset=None, count=None, fields=None, pad_lanes=None,
                scale=None, zero_point=None) -> RecordLayout:
    """Merge a sidecar's metadata with flags (flags win) into a validated layout."""
    def pick(flag, attr):
        if flag is not None:
            return flag
        return getattr(meta, attr, None) if meta is not None else None

    fields = pick(fields, "fields")
    chosen_size = pick(record_size, "record_size")
    if chosen_size is None:
        chosen_size = len(fields) if fields else DEFAULT_RECORD_SIZE
    chosen_scale = pick(scale, "scale")
    chosen_zp = pick(zero_point, "zero_point")
    if chosen_scale is not None and chosen_zp is None:
        chosen_zp = 0
    _check_zero_point(chosen_zp, meta, zero_point)
    sidecar = getattr(meta, "path", None) if meta is not None else None
    shaped_by_sidecar = sidecar is not None and _shaped_by(meta, record_size, fields, pad_lanes)
    try:
        return RecordLayout(
            record_size=chosen_size,
            offset=offset or 0,
            count=count,
            fields=tuple(fields) if fields else None,
            pad_lanes=tuple(sorted(set(pick(pad_lanes, "pad_lanes") or ()))),
            scale=chosen_scale,
            zero_point=chosen_zp,
        )
    except InputError as exc:  # a record the sidecar describes that does not hold together: name the sidecar
        if exc.path is not None or not shaped_by_sidecar:
            raise
        raise InputError(exc.template or str(exc), sidecar, params=exc.template is not None) from None


def _check_zero_point(chosen_zp, meta, flag) -> None:
    """The zero point within the sidecar's dtype (uint8 or int8; either without one), the sidecar named when
    it, not the flag, gave the zero point."""
    dtype = getattr(meta, "dtype", None) if meta is not None else None
    low, high = {"uint8": (0, 255), "int8": (-128, 127)}.get(dtype, (-128, 255))
    if chosen_zp is not None and not low <= chosen_zp <= high:
        raise InputError(f"zero point {chosen_zp} is outside {dtype or 'uint8/int8'} ({low}..{high})",
                         getattr(meta, "path", None) if flag is None else None)


def _shaped_by(meta, record_size, fields, pad_lanes) -> bool:
    """Whether the sidecar, not a flag, gave the record's shape (size, field names or pad lanes): then a
    record that does not hold together is the sidecar's fault, and the error names it."""
    return any(flag is None and getattr(meta, attr, None) is not None
               for flag, attr in ((record_size, "record_size"), (fields, "fields"), (pad_lanes, "pad_lanes")))


def value_lanes(layout: RecordLayout, lane: int | None = None) -> tuple[tuple[int, ...], str]:
    """The lanes whose maximum says how strongly an anchor scores, and a label for them.

    With `lane`, that lane. Otherwise the data lanes after the first (scores: lane 0 is the background class,
    whose maximum says nothing of objects); with two data lanes, the second; with one, that one.
    """
    data_lanes = layout.data_lanes
    if lane is not None:
        if not 0 <= lane < layout.record_size:
            raise InputError(f"{{lane}} {lane} is outside a {layout.record_size}-byte record "
                             f"(lanes 0..{layout.record_size - 1})", params=True)
        return (lane,), f"lane {lane} ({layout.field_names[lane]})"
    if len(data_lanes) > 2:
        return tuple(data_lanes[1:]), "max non-background lane"
    if len(data_lanes) == 2:
        return (data_lanes[1],), f"lane {data_lanes[1]} ({layout.field_names[data_lanes[1]]})"
    return tuple(data_lanes), f"lane {data_lanes[0]} ({layout.field_names[data_lanes[0]]})"
