"""The `--deps DIR` format: anchors.bin (float32 [N, 4] ycenter, xcenter, h, w) + postprocess.json.

The same directory `forensics extract` writes, and what a user with only anchors and quantization
parameters (no model file) writes by hand. postprocess.json keys (the format `forensics extract` writes):
  num_anchors, num_classes (without background), options (the kernel's option names), boxes and scores
  ({"tensor", "scale", "zero_point", "shape"}), input_size ([width, height], optional), layouts (optional).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from forensics.decode.ssd import PostProcessOptions, Quantization
from forensics.io.dump import read_small_file
from forensics.core.errors import InputError
from forensics.model.tflite.extract import (
    ANCHORS_FILE,
    POSTPROCESS_FILE,
    read_anchors_file,
    write_deps_directory,
)

_MAX_JSON = 16 << 20
REQUIRED_OPTIONS = ("max_detections", "max_classes_per_detection", "nms_score_threshold", "nms_iou_threshold",
                    "num_classes", "y_scale", "x_scale", "h_scale", "w_scale")


@dataclass(frozen=True)
class TensorInfo:
    """One input of the decode: its name, uint8 quantization (None for float) and tensor shape."""

    name: str | None
    quant: Quantization | None
    shape: tuple[int, ...] | None

    @property
    def columns(self) -> int | None:
        return int(self.shape[-1]) if self.shape else None

    # kept: the document holds the quantization's scale and zero point, not the Quantization it came from
    def to_dict(self) -> dict:
        return {"tensor": self.name, "scale": self.quant.scale if self.quant else None,
                "zero_point": self.quant.zero_point if self.quant else None,
                "shape": list(self.shape) if self.shape else None}


@dataclass(frozen=True)
class DecodeDeps:
    """Everything the decode needs besides the two dumps."""

    anchors: np.ndarray
    options: PostProcessOptions
    boxes: TensorInfo
    scores: TensorInfo
    input_size: tuple[int, int] | None = None  # (width, height) of the detector's image input
    anchors_quant: Quantization | None = None  # when the kernel receives uint8 anchors (their codes below)
    anchors_codes: np.ndarray | None = None
    boxes_into_kernel: bool = False  # uint8 box encodings straight into the kernel (no DEQUANTIZE)
    raw_sizes: dict | None = None  # tensor name -> raw chip layer size_bytes, when a model says so
    source: str = ""

    @property
    def num_anchors(self) -> int:
        return int(self.anchors.shape[0])

    @property
    def score_columns(self) -> int:
        return self.scores.columns or self.options.num_classes + 1

    @property
    def box_columns(self) -> int:
        return self.boxes.columns or 4

    # kept: the document holds no anchors (numpy rows from anchors.bin or the model), so no DecodeDeps reads back
    def to_dict(self) -> dict:
        return {"source": self.source, "num_anchors": self.num_anchors, "options": self.options.to_dict(),
                "boxes": self.boxes.to_dict(), "scores": self.scores.to_dict(),
                "input_size": list(self.input_size) if self.input_size else None}


def _number(value, what: str, path: str, *, positive=False) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{what} must be a finite number, got {value!r}", path)
    if positive and value <= 0:
        raise InputError(f"{what} must be positive, got {value!r}", path)
    return float(value)


def _integer(value, what: str, path: str, *, minimum=None) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(f"{what} must be an integer, got {value!r}", path)
    if minimum is not None and value < minimum:
        raise InputError(f"{what} must be at least {minimum}, got {value}", path)
    return value


def _tensor_info(raw, key: str, path: str) -> TensorInfo:
    if raw is None:
        return TensorInfo(None, None, None)
    if not isinstance(raw, dict):
        raise InputError(f"{key} must be an object with scale and zero_point", path)
    name = raw.get("tensor")
    if name is not None and not isinstance(name, str):
        raise InputError(f"{key}.tensor must be a string", path)
    quant = None
    if raw.get("scale") is not None:
        scale = _number(raw["scale"], f"{key}.scale", path, positive=True)
        zp = _integer(raw.get("zero_point", 0), f"{key}.zero_point", path)
        if not 0 <= zp <= 255:
            raise InputError(f"{key}.zero_point must be 0..255 for uint8, got {zp}", path)
        quant = Quantization(scale, zp)
    shape = raw.get("shape")
    if shape is not None:
        if not isinstance(shape, list) or not shape or not all(
                isinstance(d, int) and not isinstance(d, bool) and d > 0 for d in shape):
            raise InputError(f"{key}.shape must be a list of positive integers", path)
        shape = tuple(shape)
    return TensorInfo(name, quant, shape)


def parse_postprocess(text: str, path: str) -> dict:
    from forensics.io.jsonio import loads

    raw = loads(text, path, "JSON")
    if not isinstance(raw, dict):
        raise InputError("must be a JSON object", path)
    return raw


def declared_anchors(raw: dict, path: str | None = None) -> int | None:
    """How many anchors postprocess.json (at `path`) says there are (num_anchors, else the scores/boxes shape)."""
    declared = raw.get("num_anchors")
    if declared is not None:
        return _integer(declared, "num_anchors", path, minimum=1)
    for key in ("scores", "boxes"):
        shape = raw.get(key, {}).get("shape") if isinstance(raw.get(key), dict) else None
        if isinstance(shape, list) and len(shape) >= 2 and isinstance(shape[-2], int) and shape[-2] > 0:
            return shape[-2]
    return None


def read_deps(directory) -> DecodeDeps:
    """Read and validate a deps directory; every problem is one InputError naming the file."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        if os.path.exists(directory):
            raise InputError("is not a directory ({deps} wants a directory with anchors.bin and "
                             "postprocess.json)", directory, params=True)
        raise InputError("no such directory", directory)
    json_path = os.path.join(directory, POSTPROCESS_FILE)
    anchors_path = os.path.join(directory, ANCHORS_FILE)
    raw = parse_postprocess(read_small_file(json_path, _MAX_JSON, "a postprocess description"), json_path)
    anchors = read_anchors_file(anchors_path, expected=declared_anchors(raw, json_path))
    return deps_from_document(raw, anchors, json_path=json_path, anchors_path=anchors_path, source=directory)


def deps_from_document(raw: dict, anchors: np.ndarray, *, json_path: str, anchors_path: str,
                       source: str) -> DecodeDeps:
    """DecodeDeps from a postprocess.json document and its float32 [N, 4] anchors, validated.

    The one path for both sources: `--deps DIR` (the files) and `--model MODEL` (forensics.model.tflite.extract's
    document and anchors, the same data before it is written). Problems name `json_path` / `anchors_path`.
    """
    options_raw = raw.get("options")
    if not isinstance(options_raw, dict):
        raise InputError("needs an \"options\" object with the kernel's option names", json_path)
    options_raw = dict(options_raw)
    if options_raw.get("num_classes") is None and raw.get("num_classes") is not None:
        options_raw["num_classes"] = raw["num_classes"]
    # The kernel reads every option without a default except these two (a missing max_detections is 0
    # detections there, not 10): a missing option is an error, never a guessed value.
    missing = [k for k in REQUIRED_OPTIONS if options_raw.get(k) is None]
    if missing:
        raise InputError(f"options lack {', '.join(missing)} (the kernel has no default for "
                         f"{'it' if len(missing) == 1 else 'them'}; only detections_per_class and "
                         "use_regular_nms may be left out)", json_path)
    try:
        options = PostProcessOptions.from_mapping(options_raw)
    except InputError as exc:
        raise InputError(str(exc), json_path) from None
    if raw.get("num_classes") is not None and raw["num_classes"] != options.num_classes:
        raise InputError(f"num_classes {raw['num_classes']!r} disagrees with options.num_classes "
                         f"{options.num_classes}", json_path)
    boxes = _tensor_info(raw.get("boxes"), "boxes", json_path)
    scores = _tensor_info(raw.get("scores"), "scores", json_path)
    if scores.columns is not None and scores.columns - options.num_classes not in (0, 1):
        raise InputError(f"scores.shape has {scores.columns} columns for {options.num_classes} classes "
                         "(expected num_classes or num_classes + 1)", json_path)
    if boxes.columns is not None and boxes.columns < 4:
        raise InputError(f"boxes.shape has {boxes.columns} columns, the kernel needs at least 4", json_path)

    input_size = raw.get("input_size")
    if input_size is not None:
        if not (isinstance(input_size, list) and len(input_size) == 2 and all(
                isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in input_size)):
            raise InputError("input_size must be [width, height] in pixels", json_path)
        input_size = (input_size[0], input_size[1])

    anchors = np.asarray(anchors, dtype=np.float32).reshape(-1, 4)
    if not np.all(np.isfinite(anchors)):
        bad = int(np.argwhere(~np.isfinite(anchors))[0][0])
        raise InputError(f"anchor {bad} is NaN or infinite", anchors_path)
    n = anchors.shape[0]
    declared = raw.get("num_anchors")
    if declared is not None and declared != n:
        raise InputError(f"num_anchors is {declared!r} but {ANCHORS_FILE} holds {n} anchors", json_path)
    for info, key in ((boxes, "boxes"), (scores, "scores")):
        if info.shape is not None and len(info.shape) >= 2 and info.shape[-2] != n:
            raise InputError(f"{key}.shape {list(info.shape)} is not for {n} anchors", json_path)
    return DecodeDeps(anchors=anchors, options=options, boxes=boxes, scores=scores, input_size=input_size,
                      source=source)


def write_deps(directory, anchors, options: PostProcessOptions, *, boxes: TensorInfo, scores: TensorInfo,
               input_size=None) -> None:
    """Write a deps directory atomically (used by dumps/make_deps.py and tests)."""
    anchors = np.ascontiguousarray(anchors, dtype="<f4").reshape(-1, 4)
    doc = {"num_anchors": int(anchors.shape[0]), "num_classes": options.num_classes,
           "options": options.to_dict(), "boxes": boxes.to_dict(), "scores": scores.to_dict()}
    if input_size is not None:
        doc["input_size"] = [int(input_size[0]), int(input_size[1])]
    write_deps_directory(directory, anchors, doc, replace=True)
