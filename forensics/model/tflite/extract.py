"""What a standalone SSD post-processor needs from a model: anchors.bin and postprocess.json.

anchors.bin: float32 little-endian [num_anchors, 4] in the kernel's order (ycenter, xcenter, h, w),
dequantized when the model stores uint8 anchors. postprocess.json: the kernel options, the quantization of
the uint8 box/score tensors the decode starts from, the image input size when the graph has an image
input, and for Edge TPU models each output layer's chip layout. `decode --deps DIR` reads this format, so
a user without the model can write it by hand (docs/decode.md documents every key).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

import numpy as np

from forensics.compare.crc import crc32, format_crc
from forensics.core.errors import FormatError, InputError
from forensics.core.layout import MAX_ANCHORS, dequantize
from forensics.model.tflite.edgetpu import Package
from forensics.model.tflite.graph import postprocess_info
from forensics.model.tflite.model import Model, Tensor

FORMAT = "forensics-postprocess/1"
ANCHORS_FILE = "anchors.bin"
POSTPROCESS_FILE = "postprocess.json"
ANCHOR_ORDER = ("ycenter", "xcenter", "h", "w")


def _quant(t: Tensor) -> dict:
    return {"tensor": t.name, "index": t.index, "dtype": t.dtype, "scale": t.scale, "zero_point": t.zero_point,
            "shape": list(t.shape)}


def image_input_size(model: Model) -> list[int] | None:
    """[width, height] of a 4-D NHWC graph input with 1 or 3 channels; None for feature-map inputs."""
    for i in model.main.inputs:
        t = model.main.tensors[i]
        if len(t.shape) == 4 and t.shape[3] in (1, 3) and t.shape[1] > 1 and t.shape[2] > 1:
            return [int(t.shape[2]), int(t.shape[1])]
    return None


@dataclass(frozen=True)
class Extracted:
    anchors: np.ndarray  # float32 [N, 4]
    postprocess: dict

    # Kept by hand (not forensics.core.serial): the document is the post-processing options (postprocess.json);
    # the anchors go to anchors.bin.
    def to_dict(self) -> dict:
        return dict(self.postprocess)

    @classmethod
    def from_dict(cls, doc: dict) -> "Extracted":
        """The extraction a saved document (postprocess.json, or extract's --json beside the report's own keys)
        stands for: its anchors are not in it (NaN of their saved shape)."""
        postprocess = {k: v for k, v in doc.items() if k not in ("files", "command", "report")}
        shape = tuple((postprocess.get("anchors") or {}).get("shape") or (postprocess.get("num_anchors", 0), 4))
        return cls(np.broadcast_to(np.float32(np.nan), shape), postprocess)


def extract(model: Model, packages: list[Package] | None = None) -> Extracted:
    """Read anchors and post-processing parameters; InputError when the model has no PostProcess op."""
    pp = postprocess_info(model)
    if pp is None:
        ops = ", ".join(sorted({op.op for op in model.main.operators}))
        raise InputError(f"no TFLite_Detection_PostProcess operator in the model (operators: {ops})", model.path)
    a = pp.anchors
    where = ("Model", "subgraphs", "0", "tensors", str(a.index))
    if len(a.shape) != 2 or a.shape[1] != 4:
        raise FormatError(f"anchors tensor {a.name!r} has shape {list(a.shape)}, expected [N, 4]", where=where,
                          path=model.path)
    values = model.tensor_data(a)
    if values is None:
        raise FormatError(f"anchors tensor {a.name!r} is not a constant (no buffer data)", where=where,
                          path=model.path)
    if a.dtype == "float32":
        anchors = np.asarray(values, dtype="<f4")
    elif a.dtype in ("uint8", "int8"):
        if a.scale is None:
            raise FormatError(f"{a.dtype} anchors {a.name!r} have no quantization", where=where, path=model.path)
        low, high = (0, 255) if a.dtype == "uint8" else (-128, 127)
        if not low <= a.zero_point <= high:
            raise FormatError(f"{a.dtype} anchors {a.name!r} have zero_point {a.zero_point}, outside {low}..{high}",
                              where=where + ("quantization",), path=model.path)
        if not (np.isfinite(np.float32(a.scale)) and a.scale > 0):
            raise FormatError(f"{a.dtype} anchors {a.name!r} have scale {a.scale}, not a positive finite float32",
                              where=where + ("quantization",), path=model.path)
        # TFLite dequantization: real = scale * (q - zero_point), computed in float32 like the kernel.
        anchors = dequantize(values.astype(np.int32), a.scale, a.zero_point, "reference").astype("<f4")
    else:
        raise FormatError(f"anchors tensor {a.name!r} is {a.dtype}; expected float32 or uint8", where=where,
                          path=model.path)
    options = pp.options.to_dict()
    d = {
        "format": FORMAT,
        "model": os.path.basename(model.path) if model.path else None,
        "num_anchors": int(a.shape[0]),
        "num_classes": options.get("num_classes"),
        "options": options,
        "boxes": _quant(pp.boxes),
        "scores": _quant(pp.scores),
        "anchors": {"file": ANCHORS_FILE, "dtype": "float32", "shape": [int(a.shape[0]), 4],
                    "order": list(ANCHOR_ORDER), "tensor": a.name, "stored_dtype": a.dtype,
                    "stored_scale": a.scale, "stored_zero_point": a.zero_point,
                    "crc32": format_crc(crc32(anchors.tobytes()))},
        "input_size": image_input_size(model),
    }
    if packages:
        layers = []
        for pkg in packages:
            for exe in pkg.executables:
                if exe.type == "PARAMETER_CACHING":
                    continue
                for layer in exe.output_layers:
                    layers.append(dict(layer.to_dict(with_layout=True), executable=exe.index))
        d["output_layers"] = layers
    return Extracted(anchors, d)


def write_deps_directory(directory, anchors, postprocess: dict, replace: bool = False) -> list[str]:
    """Write the deps format (anchors.bin + postprocess.json) into `directory`, created atomically as a whole."""
    from forensics.io.outputs import atomic_directory

    directory = os.fspath(directory)
    if os.path.isdir(directory) and not os.listdir(directory):
        replace = True  # an empty directory the user made for us
    with atomic_directory(directory, replace=replace, marker=POSTPROCESS_FILE) as tmp:
        with open(os.path.join(tmp, ANCHORS_FILE), "wb") as fh:
            fh.write(np.ascontiguousarray(anchors, dtype="<f4").tobytes())
        with open(os.path.join(tmp, POSTPROCESS_FILE), "w", encoding="utf-8") as fh:
            json.dump(postprocess, fh, indent=2)
            fh.write("\n")
    return [os.path.join(directory, ANCHORS_FILE), os.path.join(directory, POSTPROCESS_FILE)]


def write_extract(result: Extracted, directory, replace: bool = False) -> list[str]:
    """Write anchors.bin and postprocess.json of an extracted model into `directory`."""
    return write_deps_directory(directory, result.anchors, result.postprocess, replace=replace)


def read_anchors_file(path, expected: int | None = None) -> np.ndarray:
    """An anchors.bin: float32 little-endian [N, 4] (ycenter, xcenter, h, w); InputError when it is not.

    The size is checked before anything is read: against `expected` anchors when postprocess.json says how
    many there are, else against MAX_ANCHORS (a sparse 1 GiB file is refused, not read)."""
    from forensics.io.dump import check_readable_file
    from forensics.core.errors import reading

    path = os.fspath(path)
    size = check_readable_file(path)
    if size == 0 or size % 16:
        raise InputError(f"is {size} bytes, not float32 [N, 4] anchors (a non-zero multiple of 16 bytes)", path)
    if expected is not None and size != expected * 16:
        raise InputError(f"is {size} bytes ({size // 16} anchors); postprocess.json says num_anchors "
                         f"{expected} ({expected * 16} bytes)", path)
    if size // 16 > MAX_ANCHORS:
        raise InputError(f"is {size} bytes ({size // 16} anchors), more than {MAX_ANCHORS} anchors", path)
    with reading(path, "anchors.bin"):
        return np.fromfile(path, dtype="<f4").astype(np.float32).reshape(-1, 4)
