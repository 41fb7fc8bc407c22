"""Model space <-> image space as pycoral's `set_resized_input` letterboxes an image.

pycoral (adapters/common.py `set_resized_input`, adapters/detect.py `get_objects`): scale =
min(W_in / w, H_in / h); the image is resized to (int(w * scale), int(h * scale)) and written at the
top-left of the zeroed input tensor, so padding is on the right and bottom. A normalised box coordinate
maps back to image pixels as `x * W_in / scale` (y likewise); we clip to the image, which pycoral leaves
to the caller.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from forensics.core import serial
from forensics.core.errors import InputError


def _size(key: str, width: str, height: str, index: int):
    """One side of a (width, height) pair the document writes as one list under `key`."""
    return field(metadata=serial.json(key, write=lambda b: [getattr(b, width), getattr(b, height)],
                                      read=lambda doc: doc[key][index]))


@dataclass(frozen=True)
class Letterbox(serial.Serial):
    JSON_DERIVED = ("scale", "resized")

    image_width: int = _size("image_size", "image_width", "image_height", 0)
    image_height: int = _size("image_size", "image_width", "image_height", 1)
    input_width: int = _size("input_size", "input_width", "input_height", 0)
    input_height: int = _size("input_size", "input_width", "input_height", 1)

    def __post_init__(self):
        for name in ("image_width", "image_height", "input_width", "input_height"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                raise InputError(f"{name.replace('_', ' ')} must be a positive integer, got {value!r}")

    @property
    def scale(self) -> float:
        """Model pixels per image pixel (the factor between the two spaces, the same on both axes)."""
        return min(self.input_width / self.image_width, self.input_height / self.image_height)

    @property
    def resized(self) -> tuple[int, int]:
        """(width, height) of the image inside the input tensor; the rest is zero padding."""
        return int(self.image_width * self.scale), int(self.image_height * self.scale)

    def to_model_pixels(self, box) -> dict:
        """A normalised (ymin, xmin, ymax, xmax) box in input-tensor pixels."""
        ymin, xmin, ymax, xmax = box
        return {"xmin": xmin * self.input_width, "ymin": ymin * self.input_height,
                "xmax": xmax * self.input_width, "ymax": ymax * self.input_height}

    def to_image(self, box, clip: bool = True) -> dict:
        """A normalised (ymin, xmin, ymax, xmax) box in original-image pixels (inverse letterbox)."""
        m = self.to_model_pixels(box)
        s = self.scale
        out = {k: v / s for k, v in m.items()}
        if clip:
            out["xmin"] = min(max(out["xmin"], 0.0), float(self.image_width))
            out["xmax"] = min(max(out["xmax"], 0.0), float(self.image_width))
            out["ymin"] = min(max(out["ymin"], 0.0), float(self.image_height))
            out["ymax"] = min(max(out["ymax"], 0.0), float(self.image_height))
        return out

    def to_normalized(self, image_box: dict) -> tuple[float, float, float, float]:
        """The forward map: image pixels -> normalised model coordinates (ymin, xmin, ymax, xmax)."""
        s = self.scale
        return (image_box["ymin"] * s / self.input_height, image_box["xmin"] * s / self.input_width,
                image_box["ymax"] * s / self.input_height, image_box["xmax"] * s / self.input_width)
