"""`forensics decode` as one library call: deps + two dumps -> kernel result, image boxes, labels, replay."""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.decode.deps import POSTPROCESS_FILE, DecodeDeps
from forensics.decode.inputs import LoadedInput, load_input
from forensics.decode.letterbox import Letterbox
from forensics.decode.ssd import DecodeResult, postprocess
from forensics.io.dump import check_readable_file
from forensics.core.errors import DependencyError, InputError
from forensics.io.labels import read_labels


def image_size(path) -> tuple[int, int]:
    """(width, height) of an image file (Pillow, read lazily; only the header is parsed)."""
    path = os.fspath(path)
    check_readable_file(path)
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise DependencyError("{image} needs Pillow: pip install 'npu-forensics[images]'", params=True) from None
    try:
        with Image.open(path) as img:
            return int(img.width), int(img.height)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(f"cannot read the image: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         path) from None


def detection_row(det, *, label=None, score_quant=None, input_size=None, letterbox=None) -> dict:
    """One kernel row as the decode's table and JSON show it: label, byte x scale, model and image boxes."""
    row = det.to_dict()
    row["label"] = label
    if det.score_code is not None and score_quant is not None:
        row["score_dequantization"] = {"byte": det.score_code, "scale": score_quant.scale,
                                       "zero_point": score_quant.zero_point}
    if input_size is not None:
        w, h = input_size
        ymin, xmin, ymax, xmax = det.box
        row["model_box"] = {"xmin": xmin * w, "ymin": ymin * h, "xmax": xmax * w, "ymax": ymax * h}
    if letterbox is not None:
        row["image_box"] = letterbox.to_image(det.box)
    return row


def letterbox_for(image_wh, input_size) -> Letterbox | None:
    """The letterbox of an image of `image_wh` (None: no image) into the model input `input_size`."""
    if image_wh is None:
        return None
    if input_size is None:
        raise InputError("an image size needs the model's input size: give {input_size:WxH} (Edge TPU "
                         "segments take feature maps, so their graphs do not say)", params=True)
    return Letterbox(int(image_wh[0]), int(image_wh[1]), int(input_size[0]), int(input_size[1]))


@dataclass(frozen=True)
class DecodeReport:
    result: DecodeResult
    boxes_input: LoadedInput
    scores_input: LoadedInput
    deps: DecodeDeps
    letterbox: Letterbox | None = None
    input_size: tuple[int, int] | None = None
    labels: tuple[str, ...] | None = None
    image_path: str | None = None
    replay: object | None = None

    def label(self, class_id: int) -> str | None:
        if self.labels is None or not 0 <= class_id < len(self.labels):
            return None
        return self.labels[class_id] or None

    def rows(self) -> list[dict]:
        """Each kernel row with what the table and JSON add: label, byte x scale, model and image boxes."""
        return [detection_row(det, label=self.label(det.class_id), score_quant=self.result.scores_quant,
                              input_size=self.input_size, letterbox=self.letterbox)
                for det in self.result.detections]

    def in_image_space(self, rows: list[dict]) -> list[dict]:
        """Another decode's rows (an `--overlay` source) with `image_box` added through this decode's
        letterbox where they lack one: their normalised boxes are in the same model space."""
        if self.letterbox is None:
            return list(rows)
        return [row if row.get("image_box") else {**row, "image_box": self.letterbox.to_image(row["box"])}
                for row in rows]

    # Kept by hand (not forensics.core.serial): the document is the kernel result's own keys with its detections
    # written as rows (label, byte x scale, model and image boxes), and the inputs' shapes, not the arrays decoded.
    def to_dict(self) -> dict:
        doc = self.result.to_dict()
        doc["detections"] = self.rows()
        doc["inputs"] = {"boxes": self.boxes_input.to_dict(), "scores": self.scores_input.to_dict()}
        doc["deps"] = self.deps.source
        doc["input_size"] = list(self.input_size) if self.input_size else None
        doc["letterbox"] = self.letterbox.to_dict() if self.letterbox else None
        if self.image_path:
            doc["image"] = self.image_path
        if self.replay is not None:
            doc["replay"] = self.replay.to_dict()
        return doc

    @classmethod
    def from_dict(cls, doc: dict) -> "DecodeReport":
        """The decode a saved document stands for, which renders and saves as it did: the kernel's result, the
        inputs' shapes, the letterbox, the input size, the replay, and the labels its rows name. The arrays are
        not in the document: the inputs' are zeros of their shape, the deps' anchors unknown (NaN)."""
        import numpy as np

        from forensics.decode.deps import TensorInfo
        from forensics.decode.replay import ReplayResult

        result = DecodeResult.from_dict(doc)
        inputs = {side: LoadedInput.from_dict(doc["inputs"][side]) for side in ("boxes", "scores")}
        input_size = tuple(doc["input_size"]) if doc.get("input_size") else None
        deps = DecodeDeps(np.broadcast_to(np.float32(np.nan), (result.num_anchors, 4)), result.options,
                          TensorInfo(None, result.boxes_quant, inputs["boxes"].array.shape),
                          TensorInfo(None, result.scores_quant, inputs["scores"].array.shape),
                          input_size=input_size, source=doc.get("deps") or "")
        return cls(result=result, boxes_input=inputs["boxes"], scores_input=inputs["scores"], deps=deps,
                   letterbox=Letterbox.from_dict(doc["letterbox"]) if doc.get("letterbox") else None,
                   input_size=input_size, labels=_named_labels(doc["detections"]), image_path=doc.get("image"),
                   replay=ReplayResult.from_dict(doc["replay"]) if doc.get("replay") else None)


def _named_labels(rows: list[dict]) -> tuple[str, ...] | None:
    """The labels a saved decode's rows name, by class id ("" for a class no row names): what `label()` gives them
    back; None when no row has a label."""
    named = {int(row["class"]): row["label"] for row in rows if row.get("label")}
    if not named:
        return None
    return tuple(named.get(class_id, "") for class_id in range(max(named) + 1))


def _description_file(deps: DecodeDeps) -> str | None:
    """The file that describes the dumps: a deps directory's postprocess.json, else the model deps came from."""
    if deps.source and os.path.isdir(deps.source):
        return os.path.join(deps.source, POSTPROCESS_FILE)
    return deps.source or None


def decode_dumps(deps: DecodeDeps, boxes_path, scores_path, *, layout: str = "auto", rounding: str = "reference",
                 image=None, image_wh: tuple[int, int] | None = None, input_wh: tuple[int, int] | None = None,
                 labels_path=None, replay: bool = False, relayouts: dict | None = None,
                 tail_model: bytes | None = None, dump_options: dict | None = None) -> DecodeReport:
    """Decode two dumps with the kernel's semantics; optional image-space boxes, labels and a LiteRT replay.
    `dump_options` (offset, length, gap_fill) go to open_dump for both dumps."""
    relayouts = relayouts or {}
    raw = deps.raw_sizes or {}
    n = deps.num_anchors
    boxes_in = load_input(boxes_path, "box deltas", n, deps.box_columns, layout=layout,
                          raw_size=raw.get(deps.boxes.name), relayout=relayouts.get(deps.boxes.name),
                          dump_options=dump_options)
    scores_in = load_input(scores_path, "scores", n, deps.score_columns, layout=layout,
                           raw_size=raw.get(deps.scores.name), relayout=relayouts.get(deps.scores.name),
                           dump_options=dump_options)
    for loaded, info, what in ((boxes_in, deps.boxes, "box deltas"), (scores_in, deps.scores, "scores")):
        if not loaded.dequantized and info.quant is None:
            raise InputError(f"uint8 {what} need a scale and zero_point ({what.split()[0]} in postprocess.json)",
                             _description_file(deps))
    anchors = deps.anchors_codes if deps.anchors_codes is not None else deps.anchors
    result = postprocess(boxes_in.array, scores_in.array, anchors, deps.options, boxes_quant=deps.boxes.quant,
                         scores_quant=deps.scores.quant, anchors_quant=deps.anchors_quant, rounding=rounding,
                         boxes_into_kernel=deps.boxes_into_kernel)
    input_size = input_wh or deps.input_size
    image_path = None
    if image is not None:
        image_path = os.fspath(image)
        image_wh = image_size(image_path)
    letterbox = letterbox_for(image_wh, input_size)
    labels = read_labels(labels_path) if labels_path is not None else None
    replay_result = None
    if replay:
        from forensics.decode import replay as replay_mod

        tail_inputs = (deps.boxes.name, deps.scores.name) if tail_model is not None else None
        replay_result = replay_mod.replay(
            result, boxes_in.array, scores_in.array, anchors, boxes_quant=deps.boxes.quant,
            scores_quant=deps.scores.quant, anchors_quant=deps.anchors_quant,
            boxes_into_kernel=deps.boxes_into_kernel, tail_model=tail_model, tail_inputs=tail_inputs)
    return DecodeReport(result=result, boxes_input=boxes_in, scores_input=scores_in, deps=deps, letterbox=letterbox,
                        input_size=tuple(input_size) if input_size else None, labels=labels, image_path=image_path,
                        replay=replay_result)


