"""The terminal `--grid`: per-anchor values as a block-character map per feature-map layer (rich).

The same information as the heatmap PNG for a user over SSH: every cell is two characters wide (so a cell
looks square in a terminal), its shade says how large the cell's value is, and a marked cell (non-uniform
or differing anchor) carries a `*`. Colour only adds to the characters, so `--no-color` output reads the same.
"""

from __future__ import annotations

import numpy as np

from forensics.decode.geometry import AnchorGeometry, cell_marks, cell_values

# Level 0 is the bottom of the scale (e.g. score 0, no difference); 1..4 split the rest in equal quarters,
# so any value above the minimum is visible.
SHADES = ("·", "░", "▒", "▓", "█")
STYLES = ("grey37", "blue", "cyan", "yellow", "bright_white")
MARK_STYLE = "bold red"


def levels(grid: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """0 at or below `lo`; 1..4 for the quarters (lo, q1], (q1, q2], (q2, q3], (q3, hi] and above; NaN -> -1."""
    grid = np.asarray(grid, dtype=np.float64)
    t = (grid - lo) / (hi - lo)
    with np.errstate(invalid="ignore"):
        out = np.where(t <= 0, 0, np.clip(np.ceil(np.nan_to_num(t) * 4), 1, 4)).astype(int)
    out[np.isnan(grid)] = -1
    return out


def _layer_lines(g, level_grid, mark_grid):
    """The block of one layer as equal-width rich Text lines: its title, then one line per row of cells."""
    from rich.text import Text

    title = f"L{g.index} {g.rows}x{g.cols}x{g.boxes}"
    width = max(2 * g.cols, len(title))
    lines = [Text(title.ljust(width), style="bold")]
    for r in range(g.rows):
        line = Text()
        for c in range(g.cols):
            level = level_grid[r, c]
            shade = "?" if level < 0 else SHADES[level]
            if mark_grid[r, c]:
                line.append(shade + "*", style=MARK_STYLE)
            else:
                line.append(shade * 2, style=STYLES[max(level, 0)])
        line.append(" " * (width - 2 * g.cols))
        lines.append(line)
    return width, lines


class LayerBlocks:
    """Layer blocks side by side, wrapped to the console width (a block wider than the console stands alone)."""

    def __init__(self, blocks, spacing: int = 2):
        self.blocks = blocks
        self.spacing = spacing

    def __rich_console__(self, console, options):
        from rich.text import Text

        rows, current, used = [], [], 0
        for width, lines in self.blocks:
            needed = width if not current else used + self.spacing + width
            if current and needed > options.max_width:
                rows.append(current)
                current, used = [], 0
                needed = width
            current.append((width, lines))
            used = needed
        if current:
            rows.append(current)
        for row in rows:
            height = max(len(lines) for _, lines in row)
            for i in range(height):
                out = Text(no_wrap=True, overflow="crop")
                for j, (width, lines) in enumerate(row):
                    if j:
                        out.append(" " * self.spacing)
                    out.append(lines[i] if i < len(lines) else " " * width)
                out.rstrip()
                yield out


def grid_map(geometry: AnchorGeometry, values, *, marked=(), title: str | None = None, vmin=None, vmax=None,
             value_label: str = "value", reduce: str = "max"):
    """A rich renderable: an optional title, one block map per layer side by side (wrapping), and a legend."""
    from rich.console import Group
    from rich.text import Text

    from forensics.render.pictures import value_range

    cells = cell_values(geometry, values, reduce=reduce)   # InputError without a grid / wrong length
    marks = cell_marks(geometry, marked)
    lo, hi = value_range(np.concatenate([c.reshape(-1) for c in cells]), vmin, vmax)
    blocks = [_layer_lines(g, levels(c, lo, hi), m) for g, c, m in zip(geometry.layers, cells, marks)]
    parts = []
    if title:
        parts.append(Text(title, style="bold"))
    parts.append(LayerBlocks(blocks))
    q = (hi - lo) / 4
    legend = Text(no_wrap=False)
    legend.append(f"{value_label} (max over a cell's boxes): ")
    legend.append("··", style=STYLES[0])
    legend.append(f" <={lo:.4g}  ")
    for i in range(1, 5):
        legend.append(SHADES[i] * 2, style=STYLES[i])
        legend.append(f" <={lo + q * i:.4g}  ")
    if any(m.any() for m in marks):
        legend.append("▒*", style=MARK_STYLE)
        legend.append(" marked")
    parts.append(legend)
    return Group(*parts)


def grid_for(geometry: AnchorGeometry, heat, *, title: str | None = None):
    """The `--grid` map of an `AnchorHeat` (forensics.buffer.heat.anchors_heat / diff_heat)."""
    return grid_map(geometry, heat.values, marked=heat.marked, title=title, vmin=heat.vmin, vmax=heat.vmax,
                    value_label=heat.label)
