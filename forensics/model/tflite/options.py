"""Custom options: a bounds-checked FlexBuffers reader, and TFLite_Detection_PostProcess's option keys.

FlexBuffers (flatbuffers/flexbuffers.h) is read back to front: the last byte is the root's byte width, the
one before it the root's packed type ((type << 2) | log2 width). Offsets point backwards from where they
are stored. The flatbuffers Python module trusts its input and decodes every string as UTF-8 (the Edge TPU
options hold a 4 MB binary *string*, the DWN1 package), so this reader checks every offset and length
against the buffer and returns long or non-UTF-8 strings as memoryviews into the model (no copy).
Type codes come from `flatbuffers.flexbuffers.Type`.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from flatbuffers.flexbuffers import Type

from forensics.core.errors import FormatError

POSTPROCESS_CUSTOM_CODE = "TFLite_Detection_PostProcess"
# The keys the kernel reads in Init (tensorflow/lite/kernels/detection_postprocess.cc), in its order.
POSTPROCESS_KEYS = ("max_detections", "max_classes_per_detection", "detections_per_class", "use_regular_nms",
                    "nms_score_threshold", "nms_iou_threshold", "num_classes", "y_scale", "x_scale", "h_scale",
                    "w_scale")
# The kernel's defaults for keys that may be absent (detections_per_class defaults to 100, regular NMS off).
POSTPROCESS_OPTIONAL_DEFAULTS = {"detections_per_class": 100, "use_regular_nms": False}
MAX_DEPTH = 32  # nesting guard: a hostile buffer cannot recurse without bound
# Work guard: vectors may point at the same child twice, so depth alone does not bound a walk (32 levels of
# "twice the next vector" are 2^32 leaves in 155 bytes). A well-formed flexbuffer stores each value once in
# at least one byte; a walk may visit at most this many values per byte of the options.
NODES_PER_BYTE = 4
_LONG_STRING = 4096  # strings longer than this stay bytes views (the DWN1 package is a 4 MB "string")

_INT = {1: "<b", 2: "<h", 4: "<i", 8: "<q"}
_UINT = {1: "<B", 2: "<H", 4: "<I", 8: "<Q"}
_FLOAT = {4: "<f", 8: "<d"}
_FIXED = {Type.VECTOR_INT2: (Type.INT, 2), Type.VECTOR_UINT2: (Type.UINT, 2), Type.VECTOR_FLOAT2: (Type.FLOAT, 2),
          Type.VECTOR_INT3: (Type.INT, 3), Type.VECTOR_UINT3: (Type.UINT, 3), Type.VECTOR_FLOAT3: (Type.FLOAT, 3),
          Type.VECTOR_INT4: (Type.INT, 4), Type.VECTOR_UINT4: (Type.UINT, 4), Type.VECTOR_FLOAT4: (Type.FLOAT, 4)}
_TYPED = {Type.VECTOR_INT: Type.INT, Type.VECTOR_UINT: Type.UINT, Type.VECTOR_FLOAT: Type.FLOAT,
          Type.VECTOR_KEY: Type.KEY, Type.VECTOR_STRING_DEPRECATED: Type.KEY, Type.VECTOR_BOOL: Type.BOOL}


class _Reader:
    def __init__(self, data, where):
        self.view = memoryview(data).cast("B") if not isinstance(data, memoryview) else data
        self.size = len(self.view)
        self.where = tuple(where)
        self.budget = NODES_PER_BYTE * self.size + 64

    def visit(self, count, offset, path):
        """Charge `count` values to the walk; a buffer that references its values over and over fails here."""
        self.budget -= count
        if self.budget < 0:
            raise self.fail(f"flexbuffer references more values than its {self.size} bytes can hold (shared or "
                            "cyclic references)", offset, path)

    def fail(self, message, offset, path=()):
        return FormatError(message, offset=offset, where=self.where + tuple(path))

    def need(self, offset, length, path):
        if offset < 0 or length < 0 or offset + length > self.size:
            raise self.fail(f"flexbuffer reference to {length} bytes at {offset} is outside the "
                            f"{self.size}-byte options", offset, path)

    def unpack(self, fmt_table, width, offset, path):
        if width not in fmt_table:
            raise self.fail(f"invalid byte width {width}", offset, path)
        self.need(offset, width, path)
        return struct.unpack_from(fmt_table[width], self.view, offset)[0]

    def indirect(self, slot, width, path):
        target = slot - self.unpack(_UINT, width, slot, path)
        self.need(target, 0, path)
        return target

    def key(self, at, path):
        self.need(at, 1, path)
        end = bytes(self.view[at:min(self.size, at + 256)]).find(b"\0")
        if end < 0:
            raise self.fail("key is not NUL-terminated within 256 bytes", at, path)
        return bytes(self.view[at:at + end]).decode("utf-8", errors="replace")

    def value(self, slot, parent_width, packed, path, depth=0):
        """Decode the value stored at `slot` (parent width) with packed type `packed`."""
        if depth > MAX_DEPTH:
            raise self.fail("flexbuffer nesting is too deep", slot, path)
        self.visit(1, slot, path)
        type_, width = packed >> 2, 1 << (packed & 3)
        if type_ == Type.NULL:
            return None
        if type_ == Type.INT:
            return self.unpack(_INT, parent_width, slot, path)
        if type_ == Type.UINT:
            return self.unpack(_UINT, parent_width, slot, path)
        if type_ == Type.FLOAT:
            return self.unpack(_FLOAT, parent_width, slot, path)
        if type_ == Type.BOOL:
            return bool(self.unpack(_UINT, parent_width, slot, path))
        target = self.indirect(slot, parent_width, path)
        if type_ == Type.INDIRECT_INT:
            return self.unpack(_INT, width, target, path)
        if type_ == Type.INDIRECT_UINT:
            return self.unpack(_UINT, width, target, path)
        if type_ == Type.INDIRECT_FLOAT:
            return self.unpack(_FLOAT, width, target, path)
        if type_ == Type.KEY:
            return self.key(target, path)
        if type_ in (Type.STRING, Type.BLOB):
            n = self.unpack(_UINT, width, target - width, path)
            self.need(target, n, path)
            raw = self.view[target:target + n]
            if type_ == Type.BLOB or n > _LONG_STRING:
                return raw
            try:
                return bytes(raw).decode("utf-8")
            except UnicodeDecodeError:
                return raw
        if type_ in _FIXED:
            elem, n = _FIXED[type_]
            return [self.value(target + i * width, width, (elem << 2) | (packed & 3), path + (str(i),), depth + 1)
                    for i in range(n)]
        if type_ in _TYPED or type_ in (Type.VECTOR, Type.MAP):
            n = self.unpack(_UINT, width, target - width, path)
            # The elements (and, for untyped vectors, one type byte each) must fit in the buffer.
            per = width + (1 if type_ in (Type.VECTOR, Type.MAP) else 0)
            if n > (self.size - target) // max(per, 1):
                raise self.fail(f"vector length {n} runs past the end of the {self.size}-byte options", target, path)
            self.visit(n, target, path)
            if type_ in _TYPED:
                elem = _TYPED[type_]
                elem_packed = (elem << 2) | (packed & 3)
                if elem == Type.KEY:
                    return [self.key(self.indirect(target + i * width, width, path), path + (str(i),))
                            for i in range(n)]
                return [self.value(target + i * width, width, elem_packed, path + (str(i),), depth + 1)
                        for i in range(n)]
            types_at = target + n * width
            items = [self.value(target + i * width, width, self.view[types_at + i], path + (str(i),), depth + 1)
                     for i in range(n)]
            if type_ == Type.VECTOR:
                return items
            keys_slot = target - 3 * width
            keys_width = self.unpack(_UINT, width, target - 2 * width, path)
            keys_at = self.indirect(keys_slot, width, path)
            nk = self.unpack(_UINT, keys_width, keys_at - keys_width, path)
            if nk != n:
                raise self.fail(f"map has {n} values but {nk} keys", target, path)
            self.need(keys_at, n * keys_width, path)
            keys = [self.key(self.indirect(keys_at + i * keys_width, keys_width, path), path + ("key", str(i)))
                    for i in range(n)]
            return dict(zip(keys, items))
        raise self.fail(f"unknown flexbuffer type {type_}", slot, path)


def loads(data, where=("custom_options",)):
    """Decode a flexbuffer (bytes / memoryview); FormatError on anything malformed."""
    r = _Reader(data, where)
    if r.size < 3:
        raise r.fail(f"{r.size} bytes is too short for a flexbuffer", 0)
    root_width = r.view[-1]
    if root_width not in (1, 2, 4, 8):
        raise r.fail(f"invalid root byte width {root_width}", r.size - 1)
    slot = r.size - 2 - root_width
    r.need(slot, root_width, ())
    return r.value(slot, root_width, r.view[-2], ())


@dataclass(frozen=True)
class PostProcessOptions:
    """TFLite_Detection_PostProcess options under the kernel's own key names; other keys kept as found."""

    values: dict
    extra: dict

    @property
    def missing(self) -> tuple[str, ...]:
        return tuple(k for k, v in self.values.items() if v is None)

    def __getattr__(self, name):
        values = object.__getattribute__(self, "values")
        if name in values:
            return values[name]
        raise AttributeError(name)

    # kept: custom options' blobs are written as their sizes, not the bytes
    def to_dict(self) -> dict:
        d = dict(self.values)
        d.update({k: _jsonable(v) for k, v in self.extra.items()})
        return d


def _jsonable(v):
    if isinstance(v, memoryview):
        return {"bytes": len(v)}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    return v


def postprocess_options(custom_options, where=("custom_options",)) -> PostProcessOptions:
    """Decode the PostProcess options map; a key the kernel needs and the map lacks is None (see `missing`)."""
    decoded = loads(custom_options, where)
    if not isinstance(decoded, dict):
        raise FormatError(f"options are a {type(decoded).__name__}, expected a flexbuffer map", where=where)
    values = {}
    for key in POSTPROCESS_KEYS:
        if key in decoded:
            v = decoded[key]
            if key == "use_regular_nms":
                v = bool(v)
            elif key in ("nms_score_threshold", "nms_iou_threshold", "y_scale", "x_scale", "h_scale", "w_scale"):
                if not isinstance(v, (int, float)):
                    raise FormatError(f"option {key} is {type(v).__name__}, expected a number", where=where)
                v = float(v)
            elif not isinstance(v, (int, float)):
                raise FormatError(f"option {key} is {type(v).__name__}, expected a number", where=where)
            else:
                v = int(v)
            values[key] = v
        elif key in POSTPROCESS_OPTIONAL_DEFAULTS:
            values[key] = POSTPROCESS_OPTIONAL_DEFAULTS[key]
        else:
            values[key] = None  # the kernel would read 0 here; shown as missing rather than guessed
    extra = {k: v for k, v in decoded.items() if k not in POSTPROCESS_KEYS}
    return PostProcessOptions(values, extra)
