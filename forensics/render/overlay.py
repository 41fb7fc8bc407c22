"""Two decodes' boxes on one image in two colours with a legend (`decode --draw OUT.png --overlay OTHER`).

A box that moved between two runs (libedgetpu vs ours, two dump pairs) is seen at once: set A is drawn as a
frame whose outer 2 pixels lie outside the box, set B as a 2-pixel line on and inside the box edge, so
identical boxes show both colours (A just outside B) and a moved box shows two separate frames. Pillow only, imported lazily.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.render.pictures import Picture, _font, _pil, png_bytes

COLOUR_A = (0, 170, 0)      # e.g. libedgetpu: green
COLOUR_B = (230, 20, 20)    # e.g. ours: red
WIDTH_A = 4                 # drawn from 2 px outside the box inward: 2 px stay visible outside set B's line
WIDTH_B = 2
CANVAS = (235, 235, 235)    # background when there is no image to draw on
MAX_CANVAS_PIXELS = 1 << 26  # a blank canvas (--image-size) of at most 64 Mi pixels (8192 x 8192), 192 MiB of RGB


@dataclass(frozen=True)
class OverlayBox:
    """One detection in image pixels (xmin, ymin, xmax, ymax) with the text drawn beside it."""

    xmin: float
    ymin: float
    xmax: float
    ymax: float
    label: str = ""

    def to_dict(self) -> dict:
        return {"xmin": self.xmin, "ymin": self.ymin, "xmax": self.xmax, "ymax": self.ymax, "label": self.label}


def boxes_from_detections(detections, image_size, *, labels=None, score_threshold: float = 0.0):
    """OverlayBoxes from decode detections (the decode JSON rows or objects with the same fields).

    Each row has `box` = [ymin, xmin, ymax, xmax] normalised, and optionally `image_box` = {"xmin", "ymin",
    "xmax", "ymax"} in original-image pixels, which wins. `image_size` = (width, height) scales normalised
    boxes (the model input when there is no image). Rows under `score_threshold` are left out (display only).
    """
    width, height = image_size
    out = []
    for row in detections:
        get = row.get if isinstance(row, dict) else (lambda key, default=None, _r=row: getattr(_r, key, default))
        score = get("score")
        if score is not None and float(score) < score_threshold:
            continue
        image_box = get("image_box")
        if image_box:
            box = (float(image_box["xmin"]), float(image_box["ymin"]), float(image_box["xmax"]),
                   float(image_box["ymax"]))
        else:
            ymin, xmin, ymax, xmax = (float(v) for v in get("box"))
            box = (xmin * width, ymin * height, xmax * width, ymax * height)
        cls = get("class")
        name = get("label") or (labels[int(cls)] if labels is not None and cls is not None
                                and 0 <= int(cls) < len(labels) else (str(cls) if cls is not None else ""))
        text = f"{name} {float(score):.3f}" if score is not None else name
        anchor = get("anchor")
        if anchor is not None:
            text = f"#{int(anchor)} {text}"
        out.append(OverlayBox(*box, label=text.strip()))
    return out


def _load_image(image):
    Image, _, _ = _pil()
    if image is None:
        return None
    if isinstance(image, (tuple, list)) and len(image) == 2:
        width, height = (int(v) for v in image)
        if width <= 0 or height <= 0:
            raise InputError(f"image size must be positive, got {width}x{height}")
        if width * height > MAX_CANVAS_PIXELS:  # checked before Pillow allocates it (100000x100000: 28 GiB)
            raise InputError(f"an image size of {width}x{height} is {width * height:,} pixels, more than the "
                             f"{MAX_CANVAS_PIXELS:,} a drawing canvas may have (MAX_CANVAS_PIXELS)")
        return Image.new("RGB", (width, height), CANVAS)
    if hasattr(image, "mode") and hasattr(image, "size"):
        return image.convert("RGB")
    from forensics.io.dump import check_readable_file

    check_readable_file(os.fspath(image))  # a FIFO or a device would block Image.open
    try:
        with Image.open(image) as opened:
            return opened.convert("RGB")
    except FileNotFoundError:
        raise InputError("no such file", image) from None
    except (OSError, ValueError, Image.DecompressionBombError) as exc:  # UnidentifiedImageError is an OSError
        raise InputError(f"cannot read the image: {exc}", image) from None


def _drawable(boxes, width: int, height: int) -> list:
    """The boxes with finite coordinates, clamped to the canvas and a margin of 16 pixels."""
    import math

    out = []
    for box in boxes:
        xs, ys = (box.xmin, box.xmax), (box.ymin, box.ymax)
        if not all(math.isfinite(v) for v in xs + ys):
            continue
        cx = [min(max(v, -16.0), width + 16.0) for v in xs]
        cy = [min(max(v, -16.0), height + 16.0) for v in ys]
        out.append(OverlayBox(cx[0], cy[0], cx[1], cy[1], box.label))
    return out


def overlay(image, boxes_a, boxes_b, *, names=("libedgetpu", "ours"), colours=(COLOUR_A, COLOUR_B),
            title: str | None = None) -> Picture:
    """Both box sets on `image` (a path, a Pillow image, or (width, height) for a plain canvas)."""
    Image, ImageDraw, ImageFont = _pil()
    canvas = _load_image(image)
    if canvas is None:
        raise InputError("an overlay needs an image or an image size")
    draw = ImageDraw.Draw(canvas)
    font = _font(ImageFont, 12)
    w, h = canvas.size
    # coordinates from input (another decode's JSON, a hostile dump's boxes) may be NaN or far off the canvas:
    # those boxes are left out, the others kept to the canvas and a margin (a 1e300 would overflow Pillow)
    boxes_a, boxes_b = _drawable(boxes_a, w, h), _drawable(boxes_b, w, h)
    for boxes, colour, width, outset in ((boxes_a, colours[0], WIDTH_A, 2), (boxes_b, colours[1], WIDTH_B, 0)):
        for box in boxes:
            x0, y0 = round(min(box.xmin, box.xmax)), round(min(box.ymin, box.ymax))
            x1, y1 = round(max(box.xmin, box.xmax)), round(max(box.ymin, box.ymax))
            draw.rectangle((x0 - outset, y0 - outset, x1 + outset, y1 + outset), outline=colour, width=width)
    # labels after all frames, A above its box, B below, so the two sets' texts do not overlap each other
    for boxes, colour, above in ((boxes_a, colours[0], True), (boxes_b, colours[1], False)):
        for box in boxes:
            if not box.label:
                continue
            x0 = round(min(box.xmin, box.xmax))
            y = round(min(box.ymin, box.ymax)) - 16 if above else round(max(box.ymin, box.ymax)) + 3
            x0 = min(max(x0, 0), max(w - 8, 0))
            y = min(max(y, 0), max(h - 14, 0))
            _, _, tx1, ty1 = draw.textbbox((x0 + 2, y), box.label, font=font)
            draw.rectangle((x0, y, tx1 + 2, ty1 + 1), fill=colour)
            draw.text((x0 + 2, y), box.label, fill=(255, 255, 255), font=font)
    # legend: top-left, a swatch and a name (with the box count) per set
    entries = [(names[0], colours[0], len(boxes_a)), (names[1], colours[1], len(boxes_b))]
    if title:
        entries.insert(0, (title, None, None))
    lines = [f"{name} ({count})" if count is not None else name for name, _, count in entries]
    text_w = max(draw.textbbox((0, 0), line, font=font)[2] for line in lines)
    lx, ly = 6, 6
    draw.rectangle((lx, ly, lx + 30 + text_w, ly + 8 + 16 * len(entries)), fill=(255, 255, 255),
                   outline=(60, 60, 60))
    for i, ((_, colour, _), line) in enumerate(zip(entries, lines)):
        y = ly + 4 + 16 * i
        if colour is not None:
            draw.rectangle((lx + 5, y + 3, lx + 19, y + 11), fill=colour)
        draw.text((lx + 24 if colour is not None else lx + 5, y), line, fill=(20, 20, 20), font=font)
    return Picture(png_bytes(canvas), w, h)


def load_detections(path) -> list[dict]:
    """The detection rows of another decode saved with `forensics decode ... --json > OTHER.json`.

    Accepts that document ({"detections": [...]}) or a bare list of rows; each row needs `box`
    ([ymin, xmin, ymax, xmax], normalised) or `image_box`. Anything else: one InputError naming the file.
    """
    from forensics.io.dump import read_small_file

    path = os.fspath(path)
    text = read_small_file(path, 64 * 1024 * 1024, "a decode --json output")
    from forensics.io.jsonio import loads

    try:
        doc = loads(text, path, "JSON")
    except InputError as exc:
        raise InputError(f"is not a decode --json output ({exc.reason})", path) from None
    rows = doc.get("detections") if isinstance(doc, dict) else doc
    if not isinstance(rows, list):
        raise InputError("has no \"detections\" list (is it a decode --json output?)", path)
    for i, row in enumerate(rows):
        ok = isinstance(row, dict) and (
            (isinstance(row.get("image_box"), dict)
             and all(isinstance(row["image_box"].get(k), (int, float)) for k in ("xmin", "ymin", "xmax", "ymax")))
            or (isinstance(row.get("box"), list) and len(row["box"]) == 4
                and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row["box"])))
        if not ok or not isinstance(row.get("score", 0.0), (int, float)):
            raise InputError(f"detection {i} has no usable box ([ymin, xmin, ymax, xmax] or image_box)", path)
        values = list(row["image_box"].values()) if isinstance(row.get("image_box"), dict) else row["box"]
        if not all(math.isfinite(v) for v in values if isinstance(v, (int, float))):
            raise InputError(f"detection {i} has a box coordinate that is not a finite number (NaN or infinity)",
                             path)
    return rows


def overlay_rows(image, rows_a, rows_b, *, image_size=None, names=("other", "this"), labels=None,
                 score_threshold: float = 0.0, title: str | None = None) -> Picture:
    """`decode --draw OUT.png --overlay OTHER`: two decodes' rows (DecodeReport.rows() or load_detections())
    on one image. `image` is the original image path (or None with `image_size` = (width, height) for a blank
    canvas); rows with `image_box` are drawn in image pixels, others scaled from their normalised `box`.
    """
    if image is not None and image_size is None:
        Image, _, _ = _pil()
        canvas = _load_image(image)
        image, image_size = canvas, canvas.size
    if image_size is None:
        raise InputError("{overlay} needs {image:IMG} or an image size to draw on", params=True)
    a = boxes_from_detections(rows_a, image_size, labels=labels, score_threshold=score_threshold)
    b = boxes_from_detections(rows_b, image_size, labels=labels, score_threshold=score_threshold)
    return overlay(image if image is not None else tuple(image_size), a, b, names=names, title=title)
