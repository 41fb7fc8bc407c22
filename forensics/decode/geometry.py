"""Anchor geometry: which feature-map layer, row, column and box type every SSD anchor index stands for.

The TF Object Detection API's grid anchor generators (`multiple_grid_anchor_generator`,
`ssd_anchor_generator`) tile each feature map as `[rows, cols, boxes]` and concatenate the layers, largest
feature map first (grid_anchor_generator.tile_anchors: centres from a meshgrid, box sizes innermost). An
anchor index therefore decomposes as

    index = first_anchor(layer) + (row * cols + col) * boxes + box

and that decomposition is visible in the anchors tensor itself (ycenter, xcenter, h, w per row): the boxes
of one cell share a centre, a row of cells has one ycenter and evenly spaced xcenters, and the spacing
(stride) changes at a layer boundary. `infer_geometry` reads the layers off the tensor alone, so it works
for any such model without a pipeline config; anchors that are not laid out that way (hand-made, shuffled)
give a result that says why and falls back to plain indices.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError

# Two anchors belong to the same cell when their centres agree this closely. Real float32 anchors of one
# cell are bit-identical (tile_anchors repeats the centre); anchors dequantized from uint8 are identical too.
# Neighbouring cells are a whole stride apart (>= 1e-3 for any feature map below 1000 cells).
SAME_CENTRE = 1e-5
# A lattice position may be off by this fraction of the stride: uint8 anchors (the CPU head-layers model,
# scale 0.00645) sit up to half a quantization step from the float grid, ~6% of a 19x19 stride.
LATTICE_TOLERANCE = 0.25


@dataclass(frozen=True)
class AnchorPlace:
    """One anchor as a place: feature-map `layer`, `row`, `col` and `box` (the box type within the cell)."""

    anchor: int
    layer: int
    row: int
    col: int
    box: int

    @property
    def label(self) -> str:
        """`L0 r3 c7 b2`, the `where` column."""
        return f"L{self.layer} r{self.row} c{self.col} b{self.box}"

    def to_dict(self) -> dict:  # by hand: the anchor is the row the place is written beside, not in the place
        return {"layer": self.layer, "row": self.row, "col": self.col, "box": self.box}


@dataclass(frozen=True)
class GridLayer(serial.Serial):
    """One feature map: `rows` x `cols` cells of `boxes` anchors each, starting at anchor `first_anchor`.

    `stride` and `offset` are (y, x) in normalised image coordinates as measured from the centres (the TF OD
    API default is stride 1/rows, 1/cols and offset half a stride); `box_shapes` are the (h, w) of the first
    cell's boxes, in box order.
    """

    JSON_DERIVED = ("last_anchor", "count")
    JSON_ORDER = ("layer", "rows", "cols", "boxes", "first_anchor", "last_anchor", "count")

    index: int = field(metadata=serial.json("layer"))
    rows: int
    cols: int
    boxes: int
    first_anchor: int
    stride: tuple[float, float]
    offset: tuple[float, float]
    box_shapes: tuple[tuple[float, float], ...]

    @property
    def count(self) -> int:
        return self.rows * self.cols * self.boxes

    @property
    def last_anchor(self) -> int:
        return self.first_anchor + self.count - 1

    @property
    def shape_text(self) -> str:
        """`19x19x3`: rows x cols x boxes, as model cards write feature maps."""
        return f"{self.rows}x{self.cols}x{self.boxes}"



@dataclass(frozen=True)
class AnchorGeometry(serial.Serial):
    """The grid read off an anchors tensor, or why there is none (`reason`; then `layers` is empty).

    `anchors` keeps the [N, 4] ycenter, xcenter, h, w array so a caller can show an anchor's prior box.
    """

    JSON_DERIVED = (("grid", "is_grid"),)
    JSON_ORDER = ("grid",)

    num_anchors: int
    layers: tuple[GridLayer, ...]
    reason: str | None = None
    source: str | None = None
    anchors: np.ndarray | None = field(default=None, compare=False, repr=False, metadata=serial.json(skip=True))

    @property
    def is_grid(self) -> bool:
        return self.reason is None

    def __bool__(self) -> bool:
        return self.is_grid

    @property
    def feature_map_shapes(self) -> tuple[tuple[int, int], ...]:
        """(rows, cols) per layer, the `feature_map_shape_list` an anchor generator takes."""
        return tuple((layer.rows, layer.cols) for layer in self.layers)

    def _check_index(self, anchor: int) -> int:
        anchor = int(anchor)
        if not 0 <= anchor < self.num_anchors:
            raise InputError(f"anchor {anchor} is out of range (the model has {self.num_anchors} anchors: "
                             f"0..{self.num_anchors - 1})")
        return anchor

    def place(self, anchor: int) -> AnchorPlace | None:
        """`AnchorPlace` of one anchor index, or None when the anchors form no grid."""
        anchor = self._check_index(anchor)
        if not self.is_grid:
            return None
        layer = self.layers[self._layer_of(anchor)]
        local = anchor - layer.first_anchor
        cell, box = divmod(local, layer.boxes)
        row, col = divmod(cell, layer.cols)
        return AnchorPlace(anchor, layer.index, row, col, box)

    def _layer_of(self, anchor: int) -> int:
        starts = [layer.first_anchor for layer in self.layers]
        return int(np.searchsorted(starts, anchor, side="right")) - 1

    def where(self, anchor: int) -> str:
        """`L0 r3 c7 b2`, or the plain index `#203` when there is no grid."""
        place = self.place(anchor)
        return place.label if place is not None else f"#{int(anchor)}"

    def geometry_of(self, anchor: int) -> dict | None:
        """The JSON `geometry` object of one listed anchor: {"layer", "row", "col", "box"} or None."""
        place = self.place(anchor)
        return place.to_dict() if place is not None else None

    def prior(self, anchor: int) -> tuple[float, float, float, float] | None:
        """The anchor's prior box (ycenter, xcenter, h, w) as stored in the model, when the anchors are known."""
        anchor = self._check_index(anchor)
        if self.anchors is None:
            return None
        return tuple(float(v) for v in self.anchors[anchor])

    def index(self, layer: int, row: int, col: int, box: int) -> int:
        """The inverse of `place`: the anchor index of (layer, row, col, box)."""
        if not self.is_grid:
            raise InputError(f"the anchors form no grid ({self.reason}): there is no (layer, row, col, box)")
        if not 0 <= layer < len(self.layers):
            raise InputError(f"layer {layer} does not exist (layers 0..{len(self.layers) - 1})")
        g = self.layers[layer]
        for name, value, limit in (("row", row, g.rows), ("col", col, g.cols), ("box", box, g.boxes)):
            if not 0 <= value < limit:
                raise InputError(f"{name} {value} is outside layer {layer} ({g.shape_text})")
        return g.first_anchor + (row * g.cols + col) * g.boxes + box

    def places(self) -> np.ndarray:
        """[N, 4] int array of (layer, row, col, box) for every anchor, in index order (vectorised `place`)."""
        if not self.is_grid:
            raise InputError(f"the anchors form no grid ({self.reason})")
        out = np.empty((self.num_anchors, 4), dtype=np.int64)
        for g in self.layers:
            local = np.arange(g.count, dtype=np.int64)
            cell, box = np.divmod(local, g.boxes)
            row, col = np.divmod(cell, g.cols)
            block = out[g.first_anchor:g.first_anchor + g.count]
            block[:, 0] = g.index
            block[:, 1] = row
            block[:, 2] = col
            block[:, 3] = box
        return out


def _as_anchor_array(anchors) -> np.ndarray:
    array = np.asarray(anchors)
    if array.ndim == 1 and array.size % 4 == 0:
        array = array.reshape(-1, 4)
    if array.ndim != 2 or array.shape[1] != 4:
        raise InputError(f"anchors must be an [N, 4] array of ycenter, xcenter, h, w; got shape {list(array.shape)}")
    if array.shape[0] == 0:
        raise InputError("there are no anchors (an empty [0, 4] array)")
    if not np.issubdtype(array.dtype, np.number):
        raise InputError(f"anchors must be numbers, got dtype {array.dtype}")
    return array


def _no_grid(anchors: np.ndarray, reason: str, source) -> AnchorGeometry:
    return AnchorGeometry(len(anchors), (), reason, source, anchors)


def _lattice(centres: np.ndarray) -> tuple[float, float, str | None]:
    """(stride, offset, problem) of centres that should be `offset + i * stride`, centred in [0, 1].

    Centred means the first and last centres are symmetric about 0.5 (the TF OD API's default anchor
    offset of half a stride); a single centre must sit at 0.5 itself.
    """
    n = len(centres)
    if n == 1:
        stride = 1.0
    else:
        stride = float(centres[-1] - centres[0]) / (n - 1)
    if n > 1 and stride <= 0:
        return stride, float(centres[0]), "centres do not increase"
    expected = centres[0] + stride * np.arange(n)
    slack = LATTICE_TOLERANCE * stride
    if n > 2 and np.max(np.abs(centres - expected)) > slack:
        return stride, float(centres[0]), "centres are not evenly spaced"
    # one cell: centred when within a quarter of the image of 0.5; more: within a quarter stride
    if abs(float(centres[0] + centres[-1]) - 1.0) > slack:
        if n == 1:
            return stride, float(centres[0]), (f"a lone cell at {float(centres[0]):.4g} is not a row of a grid "
                                               f"(nor a 1-cell map centred at 0.5)")
        return stride, float(centres[0]), (f"centres are not centred in the image "
                                           f"(first {float(centres[0]):.4g}, last {float(centres[-1]):.4g})")
    return stride, float(centres[0]), None


def infer_geometry(anchors, *, source: str | None = None) -> AnchorGeometry:
    """Read the (layer, row, col, box) grid off an [N, 4] ycenter, xcenter, h, w anchors array.

    Raises InputError only for an array that is not anchors at all (wrong shape, empty); anchors that are
    simply not a grid give a result with `is_grid` False and the `reason`.
    """
    array = _as_anchor_array(anchors)
    data = array.astype(np.float64)
    n = len(data)
    finite = np.isfinite(data).all(axis=1)
    if not finite.all():
        bad = int(np.argmin(finite))
        return _no_grid(array, f"anchor {bad} is not finite", source)

    # 1. cells: runs of consecutive anchors with one centre
    yc, xc = data[:, 0], data[:, 1]
    new_cell = np.ones(n, dtype=bool)
    new_cell[1:] = (np.abs(np.diff(yc)) > SAME_CENTRE) | (np.abs(np.diff(xc)) > SAME_CENTRE)
    cell_start = np.flatnonzero(new_cell)
    cell_boxes = np.diff(np.append(cell_start, n))
    cell_y, cell_x = yc[cell_start], xc[cell_start]
    num_cells = len(cell_start)

    # 2. layers: from each layer's first cell, one row (same ycenter, increasing xcenter, same box count),
    #    then further rows with the same xcenters and an increasing ycenter
    layers = []
    c = 0
    while c < num_cells:
        boxes = int(cell_boxes[c])
        first = int(cell_start[c])
        y0 = cell_y[c]
        cols = 1
        while (c + cols < num_cells and cell_boxes[c + cols] == boxes
               and abs(cell_y[c + cols] - y0) <= SAME_CENTRE
               and cell_x[c + cols] > cell_x[c + cols - 1] + SAME_CENTRE):
            cols += 1
        row_x = cell_x[c:c + cols]
        x_stride, x_offset, problem = _lattice(row_x)
        where = f"the layer starting at anchor {first}"
        if problem:
            return _no_grid(array, f"{where}: x {problem}", source)
        x_slack = LATTICE_TOLERANCE * x_stride
        rows = 1
        row_y = [y0]
        while True:
            s = c + rows * cols
            if s + cols > num_cells:
                break
            ys = cell_y[s:s + cols]
            if (np.any(cell_boxes[s:s + cols] != boxes)
                    or np.any(np.abs(ys - ys[0]) > SAME_CENTRE)
                    or ys[0] <= row_y[-1] + SAME_CENTRE
                    or np.any(np.abs(cell_x[s:s + cols] - row_x) > x_slack)):
                break
            row_y.append(ys[0])
            rows += 1
        y_stride, y_offset, problem = _lattice(np.asarray(row_y))
        if problem:
            return _no_grid(array, f"{where}: y {problem}", source)
        shapes = tuple((float(data[first + b, 2]), float(data[first + b, 3])) for b in range(boxes))
        layers.append(GridLayer(len(layers), rows, cols, boxes, first, (y_stride, x_stride),
                                (y_offset, x_offset), shapes))
        c += rows * cols
    return AnchorGeometry(n, tuple(layers), None, source, array)


# --- integration helpers for the commands (anchors / diff / decode with --model or --deps) -------------------

def model_anchors(model) -> np.ndarray:
    """The constant anchors a model's TFLite_Detection_PostProcess reads, as float32 [N, 4] (uint8 anchors
    dequantized), exactly as `extract` writes them to anchors.bin. `model` is a forensics.model.tflite Model."""
    from forensics.model.tflite.extract import extract

    return extract(model).anchors.reshape(-1, 4)


def geometry_for_model(path) -> AnchorGeometry:
    """Geometry for `--model MODEL`: the anchors of the model's TFLite_Detection_PostProcess."""
    from forensics.model.tflite.model import open_model

    with open_model(path) as model:
        anchors = model_anchors(model)
    return infer_geometry(anchors, source=os.fspath(path))


def geometry_for(model=None, deps=None) -> AnchorGeometry | None:
    """What the commands call: geometry from `--model` or `--deps`, None when neither is given."""
    if model is not None:
        return geometry_for_model(model)
    if deps is not None:
        return geometry_for_deps(deps)
    return None


def check_standard(geometry: AnchorGeometry, tolerance: float = 1e-5):
    """Cross-check with the anchor generator: do the anchors equal the TF OD API SSD defaults (min_scale 0.2,
    max_scale 0.95, aspect ratios 1, 2, 1/2, 3, 1/3, reduced lowest layer) on the inferred feature maps?

    Returns the generator's AnchorCheck, or None when there is no grid to build a config from.
    """
    if not geometry.is_grid or geometry.anchors is None:
        return None
    from forensics.decode.ssd_anchors import AnchorConfig, check_anchors

    return check_anchors(geometry.anchors, AnchorConfig(feature_map_sizes=geometry.feature_map_shapes),
                         tolerance=tolerance)


def geometry_from_anchors_file(path) -> AnchorGeometry:
    """Geometry of an `anchors.bin` (the `extract` format: float32 little-endian [N, 4] ycenter, xcenter, h, w)."""
    from forensics.model.tflite.extract import read_anchors_file

    path = os.fspath(path)
    return infer_geometry(read_anchors_file(path), source=path)


def geometry_for_deps(directory) -> AnchorGeometry:
    """Geometry for `--deps DIR`: the directory's `anchors.bin`."""
    directory = os.fspath(directory)
    if not os.path.isdir(directory):
        raise InputError("is not a directory (expected the extract format: anchors.bin + postprocess.json)",
                         directory)
    anchors_path = os.path.join(directory, "anchors.bin")
    json_path = os.path.join(directory, "postprocess.json")
    if not os.path.lexists(json_path):  # anchors.bin alone: bounded by MAX_ANCHORS only
        return geometry_from_anchors_file(anchors_path)
    from forensics.decode.deps import declared_anchors, parse_postprocess
    from forensics.io.dump import read_small_file
    from forensics.model.tflite.extract import read_anchors_file

    raw = parse_postprocess(read_small_file(json_path, 16 << 20, "a postprocess description"), json_path)
    anchors = read_anchors_file(anchors_path, expected=declared_anchors(raw, json_path))
    return infer_geometry(anchors, source=anchors_path)


def cell_values(geometry: AnchorGeometry, values, *, reduce: str = "max") -> tuple[np.ndarray, ...]:
    """Per layer, a [rows, cols] array: `reduce` ("max" or "sum") of the per-anchor `values` over the cell's boxes."""
    _require_grid(geometry)
    values = np.asarray(values, dtype=np.float64).reshape(-1)
    if len(values) != geometry.num_anchors:
        raise InputError(f"{len(values)} values for {geometry.num_anchors} anchors: the dump and the model's "
                         f"anchors do not have the same number of records")
    if reduce not in ("max", "sum"):
        raise ValueError(f"reduce must be 'max' or 'sum', not {reduce!r}")
    out = []
    for g in geometry.layers:
        block = values[g.first_anchor:g.first_anchor + g.count].reshape(g.rows, g.cols, g.boxes)
        out.append(block.max(axis=2) if reduce == "max" else block.sum(axis=2))
    return tuple(out)


def cell_marks(geometry: AnchorGeometry, anchors) -> tuple[np.ndarray, ...]:
    """Per layer, a [rows, cols] bool array: True where a cell holds one of the given anchor indices."""
    _require_grid(geometry)
    marks = [np.zeros((g.rows, g.cols), dtype=bool) for g in geometry.layers]
    indices = np.asarray(list(anchors), dtype=np.int64).reshape(-1)
    if len(indices):
        bad = indices[(indices < 0) | (indices >= geometry.num_anchors)]
        if len(bad):
            geometry._check_index(int(bad[0]))
        places = geometry.places()[indices]
        for layer, row, col, _box in places:
            marks[layer][row, col] = True
    return tuple(marks)


def _require_grid(geometry: AnchorGeometry) -> None:
    if not geometry.is_grid:
        raise InputError(f"the anchors have no grid geometry ({geometry.reason}): no per-cell picture possible",
                         geometry.source)


# --- what the commands put in their tables, JSON and pictures ---------------------------------------------------

def where_and_prior(geometry: AnchorGeometry | None, anchor: int) -> tuple[str, str]:
    """The `where` and `prior box` table cells of one anchor: ("L0 r3 c7 b2", "0.175 0.375 0.2828 0.1414")."""
    if geometry is None:
        return "", ""
    prior = geometry.prior(anchor)
    return geometry.where(anchor), (" ".join(f"{v:.4g}" for v in prior) if prior is not None else "")


def annotate(geometry: AnchorGeometry | None, row: dict, anchor: int) -> dict:
    """A JSON row (listed anchor, detection, differing record) with `geometry` and `prior` added."""
    if geometry is None:
        return row
    prior = geometry.prior(anchor)
    return {**row, "geometry": geometry.geometry_of(anchor),
            "prior": {"ycenter": prior[0], "xcenter": prior[1], "h": prior[2], "w": prior[3]} if prior else None}


def saved_geometry(saved: dict, num_anchors: int, rows) -> AnchorGeometry:
    """The geometry a saved document stands for: its `anchor_geometry` ({"grid", "reason", "layers": ["20x20x3",
    ...]}) gives the layers' shapes in anchor order, and its `rows` (dicts with "anchor" and "prior") the priors
    of the anchors they list. What the document does not hold stays unknown: the layers' strides and offsets
    (NaN) and box shapes (none), and every other anchor's prior (NaN); no anchors at all when no row has one."""
    layers, first = [], 0
    for index, text in enumerate(saved.get("layers") or ()):
        rows_, cols, boxes = (int(v) for v in text.split("x"))
        layers.append(GridLayer(index, rows_, cols, boxes, first, (np.nan, np.nan), (np.nan, np.nan), ()))
        first += rows_ * cols * boxes
    priors = {int(row["anchor"]): row["prior"] for row in rows if row is not None and row.get("prior")}
    anchors = None
    if priors:
        anchors = np.full((num_anchors, 4), np.nan)
        for anchor, prior in priors.items():
            anchors[anchor] = (prior["ycenter"], prior["xcenter"], prior["h"], prior["w"])
    return AnchorGeometry(num_anchors, tuple(layers), reason=saved.get("reason"), anchors=anchors)
