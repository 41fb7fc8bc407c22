"""Pictures of the error between two numeric buffers: a 2x2 PNG panel and a terminal histogram.

Panels (each PANEL_W x PANEL_H pixels, so the picture is at least 800x600):
  histogram  counts of |B - A| over the differing values (log scale), 0 .. max
  scatter    B against A with the identity line: a slope is a scale bug, a +-128 band a signedness bug,
             a flat line saturation
  map        max |B - A| over the tensor's (y, x) (max over z), over the anchors' feature-map cells (SSD
             outputs, one block per layer), else per record in a near-square grid
  lanes      max |B - A| per lane / channel
The data come from the statistics pass that compared the pair (forensics.compare.stats.ErrorSample): the scatter holds
at most stats.SCATTER_POINTS points (the first differing values and an even sample of the rest), the map at most
stats.MAP_CELLS cells (records folded by max). Nothing is read or dequantized again here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from forensics.render.pictures import BACKGROUND, TEXT, Picture, _font, _pil, ramp_colours

PANEL_W, PANEL_H = 480, 360
TITLE_H = 28
PAD = 36
POINT = (31, 119, 180)
LINE = (150, 150, 150)
BAR = (214, 39, 40)
PANEL_NAMES = ("histogram", "scatter", "map", "lanes")


@dataclass(frozen=True)
class ErrorPanel:
    name: str
    left: int
    top: int
    width: int
    height: int

    def to_dict(self) -> dict:
        return {"name": self.name, "left": self.left, "top": self.top, "width": self.width, "height": self.height}


@dataclass(frozen=True)
class ErrorPlotData:
    """What the panels show, in units (dequantized when known)."""

    hist_edges: np.ndarray
    hist_counts: np.ndarray
    scatter_a: np.ndarray
    scatter_b: np.ndarray
    maps: tuple[np.ndarray, ...]      # one 2-D grid, or one per feature-map layer
    map_label: str
    lane_max: np.ndarray
    lane_names: tuple[str, ...]


def plot_data(stats, *, lanes, lane_names=None, shape=None, geometry=None) -> ErrorPlotData:
    """The panels' data, from the statistics pass (stats.ErrorStats with a `sample`: the histogram, per-lane
    maxima, scatter pairs and per-record maxima it collected): nothing is read again here. `lanes` are the
    element lanes shown (the data lanes); `shape` (…, H, W, C) or `geometry` choose the map."""
    sample = stats.sample
    if sample is None:
        raise ValueError("these statistics collected no sample for a picture: diff_dumps(..., sample=True)")
    edges, counts = stats.histogram if stats.histogram else (np.linspace(0.0, 1.0, 2), np.zeros(1, np.int64))
    records, fold, per_record = sample.records, sample.fold, sample.record_max
    if geometry is not None and getattr(geometry, "is_grid", False) and fold == 1 and \
            records == geometry.num_anchors:
        from forensics.decode.geometry import cell_values

        maps, label = cell_values(geometry, per_record), "max |B-A| per anchor cell, one block per layer"
    elif shape is not None and len(shape) >= 3 and fold == 1 and int(np.prod(shape[:-1])) == records and \
            shape[-3] * shape[-2] == records:
        maps, label = (per_record.reshape(shape[-3], shape[-2]),), "max |B-A| over z at each (y, x)"
    else:
        side = max(1, math.ceil(math.sqrt(len(per_record))))
        grid = np.full(side * side, np.nan)
        grid[: len(per_record)] = per_record
        what = "record" if fold == 1 else f"{fold} records"
        maps, label = (grid.reshape(side, side),), f"max |B-A| per {what}, row by row"
    per_lane = stats.per_lane_max
    lane_max = np.array([per_lane[e] if e < len(per_lane) else 0.0 for e in lanes], dtype=np.float64)
    names = tuple(lane_names) if lane_names is not None and len(lane_names) == len(lanes) else \
        tuple(str(e) for e in lanes)
    return ErrorPlotData(np.asarray(edges), np.asarray(counts), sample.scatter_a, sample.scatter_b, tuple(maps),
                         label, lane_max, names)


def error_plot(stats, layout, *, dtype: str = "uint8", geometry=None, shape=None, title: str = "B vs A") -> Picture:
    """The 2x2 picture of the error between two dumps compared as records of `layout` holding `dtype` values,
    drawn from the statistics of that comparison (forensics.compare.diff.diff_dumps(..., sample=True))."""
    k = np.dtype(dtype).itemsize
    keep = [e for e in range(layout.record_size // k) if (e * k) not in layout.pad_lanes]
    names = [layout.field_names[e * k] for e in keep] if k == 1 else [str(e) for e in keep]
    return draw_error_plot(plot_data(stats, lanes=keep, lane_names=names, shape=shape, geometry=geometry),
                           title=title)


# --- drawing ----------------------------------------------------------------------------------------------

def _axes(draw, font, box, title: str, xlabel: str, ylabel: str):
    x0, y0, x1, y1 = box
    draw.text((x0, y0 - 20), title, fill=TEXT, font=font)
    draw.rectangle((x0, y0, x1, y1), outline=(120, 120, 120))
    draw.text((x0, y1 + 4), xlabel, fill=TEXT, font=font)
    draw.text((x0 - PAD + 2, y0), ylabel, fill=TEXT, font=font)


def _fmt(v: float) -> str:
    return f"{v:.3g}"


def draw_error_plot(data: ErrorPlotData, *, title: str = "B vs A") -> Picture:
    Image, ImageDraw, ImageFont = _pil()
    width, height = 2 * PANEL_W, 2 * PANEL_H + TITLE_H
    img = Image.new("RGB", (width, height), BACKGROUND)
    draw = ImageDraw.Draw(img)
    font = _font(ImageFont, 12)
    draw.text((8, 6), title, fill=TEXT, font=font)
    panels = []
    for i, name in enumerate(PANEL_NAMES):
        left, top = (i % 2) * PANEL_W, TITLE_H + (i // 2) * PANEL_H
        panels.append(ErrorPanel(name, left, top, PANEL_W, PANEL_H))
        box = (left + PAD, top + PAD, left + PANEL_W - 12, top + PANEL_H - PAD)
        getattr(_Draw, name)(draw, font, box, data, img)
    import io

    buf = io.BytesIO()
    img.save(buf, format="PNG", optimize=False)
    return Picture(buf.getvalue(), width, height, tuple(panels))


def _max_pool(grid: np.ndarray, width: int, height: int) -> np.ndarray:
    """Shrink a grid to fit width x height cells by the max of each block (a lone bad cell stays visible)."""
    rows, cols = grid.shape
    f = max(1, math.ceil(rows / max(1, height)), math.ceil(cols / max(1, width)))
    if f == 1:
        return grid
    padded = np.full((-(-rows // f) * f, -(-cols // f) * f), np.nan)
    padded[:rows, :cols] = grid
    blocks = padded.reshape(padded.shape[0] // f, f, padded.shape[1] // f, f)
    with np.errstate(all="ignore"):
        finite = np.isfinite(blocks).any(axis=(1, 3))
        out = np.where(finite, np.nanmax(np.where(np.isfinite(blocks), blocks, -np.inf), axis=(1, 3)), np.nan)
    return out


class _Draw:
    @staticmethod
    def histogram(draw, font, box, data, img):
        x0, y0, x1, y1 = box
        counts = data.hist_counts
        _axes(draw, font, box, f"|B-A| of the {int(counts.sum()):,} differing values (log count)",
              f"0 .. {_fmt(data.hist_edges[-1])}", "")
        if not counts.any():
            draw.text((x0 + 8, y0 + 8), "no differences", fill=TEXT, font=font)
            return
        logc = np.log10(counts + 1.0)
        top = logc.max()
        w = (x1 - x0 - 2) / len(counts)
        for i, c in enumerate(logc):
            if c <= 0:
                continue
            h = (y1 - y0 - 2) * c / top
            draw.rectangle((x0 + 1 + i * w, y1 - 1 - h, x0 + (i + 1) * w, y1 - 1), fill=BAR)

    @staticmethod
    def scatter(draw, font, box, data, img):
        x0, y0, x1, y1 = box
        a, b = data.scatter_a, data.scatter_b
        ok = np.isfinite(a) & np.isfinite(b)
        a, b = a[ok], b[ok]
        lo = float(min(a.min(), b.min())) if a.size else 0.0
        hi = float(max(a.max(), b.max())) if a.size else 1.0
        if not hi > lo:
            hi = lo + 1.0
        _axes(draw, font, box, "B against A (grey: B = A)", f"A {_fmt(lo)} .. {_fmt(hi)}", "B")
        draw.line((x0, y1, x1, y0), fill=LINE, width=1)
        if not a.size:
            return
        px = x0 + 1 + (a - lo) / (hi - lo) * (x1 - x0 - 3)
        py = y1 - 1 - (b - lo) / (hi - lo) * (y1 - y0 - 3)
        for x, y in zip(np.rint(px).astype(int).tolist(), np.rint(py).astype(int).tolist()):
            draw.rectangle((x - 1, y - 1, x + 1, y + 1), fill=POINT)

    @staticmethod
    def map(draw, font, box, data, img):
        Image, _, _ = _pil()
        x0, y0, x1, y1 = box
        _axes(draw, font, box, data.map_label, "", "")
        finite = np.concatenate([m[np.isfinite(m)].ravel() for m in data.maps]) if data.maps else np.zeros(0)
        hi = float(finite.max()) if finite.size and finite.max() > 0 else 1.0
        n = len(data.maps)
        slot = (x1 - x0 - 4) // max(1, n)
        for i, grid in enumerate(data.maps):
            grid = _max_pool(grid, slot - 4, y1 - y0 - 4)
            rows, cols = grid.shape
            cell = max(1, min((slot - 4) // max(1, cols), (y1 - y0 - 4) // max(1, rows)))
            rgb = ramp_colours(grid / hi)
            tile = Image.fromarray(rgb, "RGB").resize((max(1, cols * cell), max(1, rows * cell)), Image.NEAREST)
            img.paste(tile, (x0 + 2 + i * slot, y0 + 2))
        draw.text((x1 - 120, y1 + 4), f"max {_fmt(hi)}", fill=TEXT, font=font)

    @staticmethod
    def lanes(draw, font, box, data, img):
        x0, y0, x1, y1 = box
        values = data.lane_max
        _axes(draw, font, box, "max |B-A| per lane / channel", f"{len(values)} lanes", "")
        if not values.size:
            return
        top = float(values.max()) if values.max() > 0 else 1.0
        w = (x1 - x0 - 2) / len(values)
        for i, v in enumerate(values.tolist()):
            if v <= 0:
                continue
            h = (y1 - y0 - 2) * v / top
            draw.rectangle((x0 + 1 + i * w, y1 - 1 - h, x0 + 1 + (i + 1) * w - (1 if w > 3 else 0), y1 - 1),
                           fill=BAR)
        if len(values) <= 16:
            for i, name in enumerate(data.lane_names):
                draw.text((x0 + 2 + i * w, y1 - 14), name[:8], fill=TEXT, font=font)
        draw.text((x1 - 120, y0 + 4), f"max {_fmt(top)}", fill=TEXT, font=font)


# --- terminal ---------------------------------------------------------------------------------------------

TERMINAL_BINS = 32
BLOCKS = " ▁▂▃▄▅▆▇█"
ASCII = " .:-=+*#@"


def terminal_histogram(edges, counts, *, unicode: bool = True) -> list[str]:
    """One line of bars (log counts) and the range under it: `▁▃█▅ ...` or `.-#= ...` without Unicode."""
    counts = np.asarray(counts)
    ramp = BLOCKS if unicode else ASCII
    if not counts.any():
        return []
    if len(counts) > TERMINAL_BINS:  # fold neighbouring bins so the line fits a terminal
        factor = -(-len(counts) // TERMINAL_BINS)
        counts = np.pad(counts, (0, (-len(counts)) % factor)).reshape(-1, factor).sum(axis=1)
    logc = np.log10(counts + 1.0)
    levels = np.where(counts > 0, np.maximum(1, np.rint(logc / logc.max() * (len(ramp) - 1))), 0).astype(int)
    bars = "".join(ramp[v] for v in levels)
    return [f"|B-A| histogram (log count): [{bars}] {_fmt(float(edges[0]))} .. {_fmt(float(edges[-1]))}, "
            f"{int(counts.sum()):,} values"]


def unicode_ok(stream) -> bool:
    """Whether block characters can be written to `stream` (a legacy code page gets the ASCII ramp)."""
    encoding = getattr(stream, "encoding", None) or "utf-8"
    try:
        BLOCKS.encode(encoding)
    except (UnicodeEncodeError, LookupError):
        return False
    return True


def error_plot_for_row(result, row) -> Picture:
    """The error picture of one differing (stage, tensor) of a forensics.runs.compare.CompareResult, from the
    statistics its comparison collected."""
    from forensics.runs.compare import element_type

    layout = row.diff.layout
    dtype, _, _ = element_type(result.run_a.buffer(row.stage, row.tensor), layout)
    geometry = result.geometry if row.unit == "anchors" else None
    return error_plot(row.stats, layout, dtype=dtype or "uint8", geometry=geometry,
                      shape=result.run_a.buffer(row.stage, row.tensor).shape,
                      title=f"{row.label}: {result.run_b.source} vs {result.run_a.source}")
