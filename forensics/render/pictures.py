"""Heatmap PNGs of per-anchor values on the anchor grid: one panel per feature-map layer, a colour bar, marks.

Drawn with Pillow alone (the `images` extra, imported lazily): every pixel is placed by this module, so a
cell is an exact square, the panels' pixel boxes are known (and returned, for tests and HTML image maps),
and the same input gives the same PNG bytes (no timestamps or software tags are written).
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import numpy as np

from forensics.core.errors import DependencyError
from forensics.decode.geometry import AnchorGeometry, cell_marks, cell_values

PANEL = 228          # the longer side of every panel in pixels: 12 px cells for 19x19, one 228 px square for 1x1
GAP = 1              # background between neighbouring cells, so single cells stay visible
MARGIN = 16
PANEL_SPACING = 24
TITLE_HEIGHT = 18
COLOURBAR_WIDTH = 16
MARK_WIDTH = 2
LEGEND_HEIGHT = 18

BACKGROUND = (255, 255, 255)
TEXT = (20, 20, 20)
MISSING = (170, 170, 170)   # a cell whose value is NaN
MARK = (230, 20, 20)        # marked anchors' cells: not a colour of the ramp below

# A dark-to-bright ramp (blue-violet, teal, green, yellow), perceptually ordered and readable in grey print;
# interpolated linearly between these stops.
RAMP = ((68, 1, 84), (59, 82, 139), (33, 145, 140), (94, 201, 98), (253, 231, 37))


def _pil():
    try:
        from PIL import Image, ImageDraw, ImageFont
    except ImportError:
        raise DependencyError("pictures need Pillow: pip install 'npu-forensics[images]'") from None
    return Image, ImageDraw, ImageFont


def ramp_colours(t) -> np.ndarray:
    """RGB uint8 for values t in [0, 1] (clipped) along RAMP; NaN -> MISSING."""
    t = np.asarray(t, dtype=np.float64)
    stops = np.asarray(RAMP, dtype=np.float64)
    pos = np.clip(np.nan_to_num(t, nan=0.0), 0.0, 1.0) * (len(stops) - 1)
    lo = np.minimum(np.floor(pos).astype(int), len(stops) - 2)
    frac = (pos - lo)[..., None]
    rgb = np.rint(stops[lo] * (1 - frac) + stops[lo + 1] * frac).astype(np.uint8)
    rgb[np.isnan(t)] = MISSING
    return rgb


def value_range(values, vmin=None, vmax=None) -> tuple[float, float]:
    """The colour scale: the finite data range with 0 included unless given; a flat range is widened by 1."""
    finite = np.asarray(values, dtype=np.float64)
    finite = finite[np.isfinite(finite)]
    lo = float(min(0.0, finite.min())) if vmin is None and len(finite) else (0.0 if vmin is None else float(vmin))
    hi = float(finite.max()) if vmax is None and len(finite) else (lo + 1.0 if vmax is None else float(vmax))
    if not hi > lo:
        hi = lo + 1.0
    return lo, hi


@dataclass(frozen=True)
class Panel:
    """Where one layer's panel sits in the picture: top-left pixel and cell size (cells are `cell` px squares)."""

    layer: int
    rows: int
    cols: int
    left: int
    top: int
    cell: int

    def cell_box(self, row: int, col: int) -> tuple[int, int, int, int]:
        """(x0, y0, x1, y1) inclusive pixel box of one cell's coloured square."""
        x0 = self.left + col * self.cell
        y0 = self.top + row * self.cell
        return x0, y0, x0 + self.cell - 1 - GAP, y0 + self.cell - 1 - GAP

    def cell_centre(self, row: int, col: int) -> tuple[int, int]:
        x0, y0, x1, y1 = self.cell_box(row, col)
        return (x0 + x1) // 2, (y0 + y1) // 2

    def to_dict(self) -> dict:
        return {"layer": self.layer, "rows": self.rows, "cols": self.cols, "left": self.left, "top": self.top,
                "cell": self.cell}


@dataclass(frozen=True)
class Picture:
    """A rendered PNG and where its panels are; `save()` writes it atomically."""

    png: bytes
    width: int
    height: int
    panels: tuple[Panel, ...] = ()
    vmin: float | None = None
    vmax: float | None = None

    def save(self, path) -> str:
        from forensics.io.outputs import write_bytes_atomic

        write_bytes_atomic(path, self.png)
        return str(path)

    def data_uri(self) -> str:
        """`data:image/png;base64,...` for embedding in an HTML report."""
        import base64

        return "data:image/png;base64," + base64.b64encode(self.png).decode("ascii")

    def to_dict(self) -> dict:
        return {"width": self.width, "height": self.height, "bytes": len(self.png),
                "panels": [p.to_dict() for p in self.panels], "vmin": self.vmin, "vmax": self.vmax}


def _font(ImageFont, size: int = 12):
    try:
        return ImageFont.load_default(size=size)
    except TypeError:  # Pillow < 10.1: the fixed bitmap font
        return ImageFont.load_default()


def _fmt(value: float) -> str:
    return f"{value:.4g}"


def png_bytes(image) -> bytes:
    """PNG bytes of a Pillow image with no metadata chunks, so equal pixels give equal bytes."""
    buffer = io.BytesIO()
    image.save(buffer, format="PNG", optimize=False, compress_level=6)
    return buffer.getvalue()


def heatmap(geometry: AnchorGeometry, values, *, marked=(), title: str | None = None, vmin=None, vmax=None,
            value_label: str = "value", reduce: str = "max") -> Picture:
    """Per-cell heatmap of per-anchor `values` (the `reduce` over each cell's boxes), one panel per layer.

    `marked` anchor indices (non-uniform records, differing records) get a red frame around their cell.
    Each panel's title gives the layer and its grid size (`L0 19x19, 3 boxes`). Raises InputError when the
    anchors have no grid geometry, DependencyError without Pillow.
    """
    cells = cell_values(geometry, values, reduce=reduce)   # InputError without a grid / wrong length
    marks = cell_marks(geometry, marked)
    lo, hi = value_range(np.concatenate([c.reshape(-1) for c in cells]), vmin, vmax)
    Image, ImageDraw, ImageFont = _pil()
    font = _font(ImageFont, 12)
    title_font = _font(ImageFont, 14)

    # layout: panels side by side, top-aligned, under a picture title; the colour bar at the right
    figure_title_h = TITLE_HEIGHT + 6 if title else 0
    top = MARGIN + figure_title_h + TITLE_HEIGHT
    panels, x = [], MARGIN
    for g in geometry.layers:
        cell = max(4, PANEL // max(g.rows, g.cols))
        panels.append(Panel(g.index, g.rows, g.cols, x, top, cell))
        x += max(g.cols * cell, 1) + PANEL_SPACING
    bar_left = x + 4
    label_w = 90
    width = bar_left + COLOURBAR_WIDTH + 6 + label_w + MARGIN
    panel_h = max(p.rows * p.cell for p in panels)
    body = max(panel_h, PANEL)
    height = top + body + LEGEND_HEIGHT + MARGIN

    canvas = np.empty((height, width, 3), dtype=np.uint8)
    canvas[:] = BACKGROUND
    for panel, grid, mark in zip(panels, cells, marks):
        span = hi - lo
        colours = ramp_colours((grid - lo) / span)
        for r in range(panel.rows):
            for c in range(panel.cols):
                x0, y0, x1, y1 = panel.cell_box(r, c)
                canvas[y0:y1 + 1, x0:x1 + 1] = colours[r, c]
                if mark[r, c]:
                    w = min(MARK_WIDTH, max(1, (panel.cell - GAP) // 4))
                    canvas[y0:y0 + w, x0:x1 + 1] = MARK
                    canvas[y1 + 1 - w:y1 + 1, x0:x1 + 1] = MARK
                    canvas[y0:y1 + 1, x0:x0 + w] = MARK
                    canvas[y0:y1 + 1, x1 + 1 - w:x1 + 1] = MARK
    # colour bar: hi at the top, lo at the bottom, PANEL pixels tall
    ramp = ramp_colours(np.linspace(1.0, 0.0, PANEL))
    canvas[top:top + PANEL, bar_left:bar_left + COLOURBAR_WIDTH] = ramp[:, None, :]

    image = Image.fromarray(canvas, "RGB")
    draw = ImageDraw.Draw(image)
    if title:
        draw.text((MARGIN, MARGIN), title, fill=TEXT, font=title_font)
    for panel, g in zip(panels, geometry.layers):
        draw.text((panel.left, top - TITLE_HEIGHT), f"L{g.index} {g.rows}x{g.cols}, {g.boxes} box"
                  f"{'es' if g.boxes != 1 else ''}", fill=TEXT, font=font)
    tx = bar_left + COLOURBAR_WIDTH + 6
    draw.text((tx, top - 2), _fmt(hi), fill=TEXT, font=font)
    draw.text((tx, top + PANEL - 14), _fmt(lo), fill=TEXT, font=font)
    draw.text((tx, top + PANEL // 2 - 7), value_label[:14], fill=TEXT, font=font)
    if any(m.any() for m in marks):
        y = top + body + 4
        draw.rectangle((MARGIN, y + 2, MARGIN + 9, y + 11), outline=MARK, width=MARK_WIDTH)
        draw.text((MARGIN + 14, y), "marked anchors", fill=TEXT, font=font)
    return Picture(png_bytes(image), width, height, tuple(panels), lo, hi)


def heatmap_for(geometry: AnchorGeometry, heat, *, title: str | None = None) -> Picture:
    """The `--heatmap OUT.png` picture of an `AnchorHeat` (forensics.buffer.heat.anchors_heat / diff_heat)."""
    return heatmap(geometry, heat.values, marked=heat.marked, title=title, vmin=heat.vmin, vmax=heat.vmax,
                   value_label=heat.label)
