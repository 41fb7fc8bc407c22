"""Draw decoded detections on the original image (Pillow, imported lazily), in image space."""

from __future__ import annotations

import os

from forensics.core.errors import DependencyError, InputError

_COLOURS = [(255, 64, 64), (64, 200, 64), (64, 128, 255), (255, 200, 0), (200, 64, 255), (0, 200, 200)]


def draw_detections(image_path, output, report, *, score_threshold: float | None = None) -> dict:
    """Write `output` (PNG): the image with each detection's image-space box, label and score."""
    try:
        from PIL import Image, ImageDraw, UnidentifiedImageError
    except ImportError:
        raise DependencyError("{draw} needs Pillow: pip install 'npu-forensics[images]'", params=True) from None
    from forensics.io.outputs import atomic_write

    if report.letterbox is None:
        raise InputError("{draw} needs the image size and the model input size", params=True)
    image_path = os.fspath(image_path)
    from forensics.io.dump import check_readable_file

    check_readable_file(image_path)
    try:
        with Image.open(image_path) as src:
            img = src.convert("RGB")
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise InputError(f"cannot read the image: {exc}", image_path) from None
    draw = ImageDraw.Draw(img)
    drawn = 0
    for row in report.rows():
        if score_threshold is not None and row["score"] < score_threshold:
            continue
        b = row["image_box"]
        colour = _COLOURS[row["class"] % len(_COLOURS)]
        draw.rectangle([b["xmin"], b["ymin"], b["xmax"], b["ymax"]], outline=colour, width=2)
        text = f"{row.get('label') or row['class']} {row['score']:.3f}"
        ty = b["ymin"] - 12 if b["ymin"] >= 12 else b["ymin"] + 2
        draw.text((b["xmin"] + 2, ty), text, fill=colour)
        drawn += 1
    try:
        with atomic_write(output) as fh:
            img.save(fh, format="PNG")
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", output) from None
    return {"output": os.fspath(output), "boxes": drawn, "size": [img.width, img.height]}
