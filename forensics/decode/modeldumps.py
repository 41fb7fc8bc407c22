"""Model-aware dumps: a dump's record layout from a model's tensor, its anchor geometry, its record order.

`--model MODEL --tensor NAME` makes the buffer commands read a dump as that tensor: raw (the chip's layout,
z padded to the 4-byte lane) or tensor (TFLite's), with the model's quantization and field names.
`--model` or `--deps` alone gives the anchor geometry for `where` columns and pictures. Raw dumps whose
tiles put records out of anchor order are analysed in file order and their indices mapped back to anchors.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.layout import RecordLayout, layout_from
from forensics.core.options import ModelContext


@dataclass(frozen=True)
class TensorFit(serial.Serial):
    """Which of a detection model's two tensors (box deltas, class scores) a dump holds, as --model / --deps
    describe them, and how much of it: a dump shorter than the whole tensor holds only its head (the story's
    trap: 256 bytes of `ff 00 80 80` said nothing of anchor 1,278)."""

    JSON_DERIVED = (("anchors_held", "held"), "head_window")
    JSON_ORDER = ("tensor", "role", "mode", "anchors", "anchors_held", "record_size", "full_size", "size", "chosen_by")

    tensor: str | None
    role: str                 # "scores" / "boxes"
    mode: str                 # "tensor" (TFLite's layout), "padded" (4-byte lanes), "raw" (the chip's layer)
    anchors: int              # the model's
    record_size: int          # bytes per anchor in that layout
    full_size: int            # bytes of the whole tensor in that layout
    size: int                 # the dump's bytes
    how: str = field(metadata=serial.json("chosen_by"))  # what chose it: "sidecar", "size", "content" (pad lanes)

    @property
    def held(self) -> int:
        """Whole anchors the dump holds."""
        return min(self.size, self.full_size) // self.record_size

    @property
    def head_window(self) -> bool:
        return self.size < self.full_size

    def describe(self) -> str:
        """`64 of the 2,034 anchors the model has: the head-window trap (256 of the 8,136 bytes of ...)`."""
        name = f"{self.tensor} ({self.role})" if self.tensor else self.role
        return (f"{self.held:,} of the {self.anchors:,} anchors the model has: the head-window trap ({self.size:,} "
                f"of the {self.full_size:,} bytes of {name}, {self.mode} layout); judge the whole buffer")



@dataclass(frozen=True)
class DumpContext:
    layout: RecordLayout
    view: object | None = None          # forensics.model.tflite.tensors.ModelTensorView
    geometry: object | None = None      # forensics.decode.geometry.AnchorGeometry
    fit: TensorFit | None = None        # which detection tensor --model / --deps say the dump holds
    deps: object | None = None          # forensics.decode.deps.DecodeDeps that --model / --deps gave (diff fits B too)

    @property
    def record_order(self) -> np.ndarray | None:
        """record_order[anchor] = raw record index, for raw dumps whose records are not in anchor order."""
        return None if self.view is None else self.view.record_order

    def anchor_of_record(self, index: int) -> int | None:
        order = self.record_order
        if order is None:
            return index
        hits = np.flatnonzero(order == index)
        return int(hits[0]) if len(hits) else None

    # kept: the document holds the geometry's source and kind, not the geometry
    def to_dict(self) -> dict:
        out = {}
        if self.view is not None:
            out["model_tensor"] = self.view.to_dict()
        if self.geometry is not None:
            out["geometry_source"] = getattr(self.geometry, "source", None)
            out["grid"] = bool(getattr(self.geometry, "is_grid", False))
        if self.fit is not None:
            out["tensor_fit"] = self.fit.to_dict()
        return out


    @classmethod
    def from_dict(cls, doc: dict, layout: RecordLayout, rows=()) -> "DumpContext":
        """The context a saved diff or anchors document was read with, as far as it says: the layout, the
        model tensor's facts (SavedTensorView), the geometry's source and kind with the places and priors of
        the anchors `rows` list (SavedGeometry: the listed rows carry them), and the tensor fit."""
        view = SavedTensorView(doc["model_tensor"]) if isinstance(doc.get("model_tensor"), dict) else None
        geometry = None
        if "geometry_source" in doc:
            geometry = SavedGeometry.from_rows(doc["geometry_source"], bool(doc.get("grid")), rows)
        fit = doc.get("tensor_fit")
        fit = TensorFit.from_dict(fit) if isinstance(fit, dict) and "role" in fit else None
        return cls(layout, view, geometry, fit)


@dataclass(frozen=True)
class SavedTensorView:
    """A model tensor's facts as a saved document holds them (forensics.model.tflite.tensors.ModelTensorView's
    document): written back as they were; no record order (the records were mapped to anchors already)."""

    facts: dict
    record_order: None = None

    @property
    def role(self) -> str | None:
        return self.facts.get("role")

    @property
    def class_vector(self) -> bool:
        """A classifier's score vector: no detection role and one record (the document keeps no tensor shape)."""
        return self.facts.get("role") is None and self.facts.get("records") == 1

    def to_dict(self) -> dict:
        return dict(self.facts)


@dataclass(frozen=True)
class SavedGeometry:
    """An anchor geometry as a saved document holds it: its source, whether it is a grid, and the place
    (layer, row, col, box) and prior box of each anchor the document lists: what the renderers and
    `annotate` ask of forensics.decode.geometry.AnchorGeometry for those anchors."""

    source: str | None
    is_grid: bool
    places: dict = field(default_factory=dict)   # anchor -> {"layer", "row", "col", "box"} or None
    priors: dict = field(default_factory=dict)   # anchor -> (ycenter, xcenter, h, w) or None

    @classmethod
    def from_rows(cls, source, is_grid: bool, rows) -> "SavedGeometry":
        places, priors = {}, {}
        for row in rows:
            if isinstance(row, dict) and "geometry" in row and isinstance(row.get("index"), int):
                places[row["index"]] = row["geometry"]
                prior = row.get("prior")
                priors[row["index"]] = None if prior is None else (
                    prior["ycenter"], prior["xcenter"], prior["h"], prior["w"])
        return cls(source, is_grid, places, priors)

    def __bool__(self) -> bool:
        return self.is_grid

    def geometry_of(self, anchor: int) -> dict | None:
        return self.places.get(int(anchor))

    def where(self, anchor: int) -> str:
        """`L0 r3 c7 b2`, or `#203` (no grid, or an anchor the document does not list)."""
        place = self.places.get(int(anchor))
        if place is None:
            return f"#{int(anchor)}"
        return f"L{place['layer']} r{place['row']} c{place['col']} b{place['box']}"

    def prior(self, anchor: int):
        return self.priors.get(int(anchor))


def dump_context(dump, known: ModelContext = ModelContext(), **flags) -> DumpContext:
    """Layout (model tensor, else sidecar; flags override either) and geometry (model or deps) for one dump.
    `known`: the --model/--tensor/--labels/--deps group, whose rules (tensor needs model, ...) it holds."""
    model, tensor, labels, deps = known.model, known.tensor, known.labels, known.deps
    geometry = None
    if model is not None or deps is not None:
        from forensics.decode.geometry import geometry_for

        try:
            geometry = geometry_for(model=model, deps=deps)
        except InputError:
            if tensor is None:
                raise
            geometry = None  # the layout still helps when the model has no detection anchors
    view = None
    fit, known, decode_deps = None, None, None
    if tensor is None and (model is not None or deps is not None):
        try:
            decode_deps = detection_deps(model=model, deps=deps)
        except InputError:  # anchors alone (no postprocess.json) still give the geometry, as they always did
            decode_deps = None
        if decode_deps is not None:
            fit, known = fit_detection_tensor(dump, decode_deps, flags)
            if fit is not None and model is not None and not fit.head_window and fit.mode != "padded" \
                    and fit.tensor and not any(v is not None for v in flags.values()):
                tensor = fit.tensor  # the whole tensor of a model: read it as --tensor NAME would
    if tensor is not None:
        view = tensor_view(dump, model, tensor, labels)
        given = {k: v for k, v in flags.items() if v is not None}
        if "pad_lanes" in given:
            given["pad_lanes"] = tuple(sorted(set(given["pad_lanes"])))
        if "fields" in given:
            given["fields"] = tuple(given["fields"])
        if ("record_size" in given or "offset" in given) and "count" not in given:
            given["count"] = None  # the model's record count no longer applies to a re-cut layout
        if "record_size" in given and "fields" not in given:
            given["fields"] = None
        layout = dataclasses.replace(view.layout, **given)
    else:
        layout = _shaped_by_array(dump, layout_from(dump.meta, **flags), flags)
        if known is not None:
            layout = _known_where_unsaid(layout, known, dump.meta, flags)
    return DumpContext(layout, view, geometry, fit, decode_deps)


def detection_deps(*, model=None, deps=None):
    """The decode's deps (anchors, both tensors' names, shapes and quantization) from --deps or --model;
    InputError when they do not hold them (a classifier, a directory with anchors.bin only)."""
    if deps is not None:
        from forensics.decode.deps import read_deps

        return read_deps(deps)
    # Not all of decode's deps_from_model: its relayout maps and CPU tail cost ~100 ms this needs none of.
    from forensics.decode.model_deps import document_deps, output_layers
    from forensics.model.tflite.model import open_model

    with open_model(model) as opened:
        found, _ = document_deps(opened, opened.path)
        raw_sizes = {name: layer.size_bytes for name, layer in output_layers(opened, found).items()}
    return dataclasses.replace(found, raw_sizes=raw_sizes)


def _candidates(decode_deps) -> list[dict]:
    """Each way a dump can hold one of the two tensors: TFLite's layout, records padded to the chip's 4-byte
    lanes, and the chip's raw layer (its size from the model's Edge TPU package)."""
    from forensics.decode.inputs import padded_columns
    from forensics.model.tflite.tensors import BOX_FIELDS

    anchors = decode_deps.num_anchors
    out = []
    for role, info in (("scores", decode_deps.scores), ("boxes", decode_deps.boxes)):
        columns = decode_deps.score_columns if role == "scores" else decode_deps.box_columns
        if role == "boxes" and columns == 4:
            names = list(BOX_FIELDS)
        else:  # PostProcess scores: the background column first when there are num_classes + 1
            first = ["background"] if columns == decode_deps.options.num_classes + 1 else []
            names = first + [f"class{c}" for c in range(columns - len(first))]
        quant = info.quant
        base = {"role": role, "tensor": info.name, "anchors": anchors, "columns": columns,
                "scale": quant.scale if quant else None, "zero_point": quant.zero_point if quant else None}
        out.append({**base, "mode": "tensor", "record_size": columns, "pad_lanes": (), "fields": tuple(names)})
        padded = padded_columns(columns)
        if padded != columns:
            out.append({**base, "mode": "padded", "record_size": padded, "pad_lanes": tuple(range(columns, padded)),
                        "fields": tuple(names) + ("pad",) * (padded - columns)})
        raw = (decode_deps.raw_sizes or {}).get(info.name)
        if raw and raw not in (anchors * columns, anchors * padded) and raw % anchors == 0:
            size = raw // anchors  # z padded to the lane (convert_scores 91 -> 92 bytes per anchor)
            out.append({**base, "mode": "raw", "record_size": size, "pad_lanes": tuple(range(columns, size)),
                        "fields": tuple(names) + ("pad",) * (size - columns)})
        elif raw and raw not in (anchors * columns, anchors * padded):
            out.append({**base, "mode": "raw", "record_size": padded, "pad_lanes": tuple(range(columns, padded)),
                        "fields": tuple(names) + ("pad",) * (padded - columns), "raw_size": raw})
    raws = {(c["role"], c["record_size"]) for c in out if c["mode"] == "raw"}
    out = [c for c in out if not (c["mode"] == "padded" and (c["role"], c["record_size"]) in raws)]  # the chip's
    for c in out:
        c.setdefault("raw_size", None)
        c["full_size"] = c["raw_size"] or c["anchors"] * c["record_size"]
    return out


def _pad_lanes_constant(dump, candidate) -> bool | None:
    """Whether the candidate's pad lanes hold one value in every record of the dump (the chip writes pad
    lanes alike; box deltas and class scores vary): None when it has no pad lanes or the dump no two records."""
    lanes = candidate["pad_lanes"]
    size = candidate["record_size"]
    records = min(dump.size, candidate["full_size"]) // size
    if not lanes or records < 2:
        return None
    data = dump.read_array(0, records * size).reshape(records, size)
    pads = data[:, list(lanes)]
    return bool(np.all(pads == pads[0]))


def _narrowed(candidates: list, meta, flags: dict) -> tuple[list, str, int | None]:
    """The candidates the sidecar's tensor name and the flags' (else sidecar's) record size leave, how they
    were chosen (sidecar / size) and that record size."""
    how = "size"
    said_tensor = getattr(meta, "tensor", None)
    if said_tensor and any(c["tensor"] == said_tensor for c in candidates):
        candidates = [c for c in candidates if c["tensor"] == said_tensor]
        how = "sidecar"
    record = flags.get("record_size") or getattr(meta, "record_size", None)
    if record is not None:
        candidates = [c for c in candidates if c["record_size"] == record] or candidates
    return candidates, how, record


def _by_content(dump, pool: list, how: str) -> tuple[list, str]:
    """Where sizes coincide: padded scores have constant pad lanes, box deltas do not."""
    constant = [(c, _pad_lanes_constant(dump, c)) for c in pool]
    padded = [c for c, same in constant if same]
    unpadded = [c for c, same in constant if same is None]
    varying = [c for c, same in constant if same is False]
    if padded and len({c["role"] for c in padded}) == 1:
        return padded[:1], "content"
    if varying and len({c["role"] for c in unpadded}) == 1:
        return unpadded, "content"  # pad lanes that vary: the dump is the tensor without pad lanes
    return pool, how


def _open_roles(pool: list, size: int, how: str) -> tuple[TensorFit | None, None]:
    """A pool of several roles: one shape (box deltas and scores of 4 columns each, no pad lanes) is a fit of
    either role, the same anchors either way; several shapes fit nothing."""
    if len({(c["record_size"], c["full_size"]) for c in pool}) > 1:
        return None, None
    c = pool[0]
    roles = " or ".join(sorted({p["role"] for p in pool}))
    return TensorFit(None, roles, c["mode"], c["anchors"], c["record_size"], c["full_size"], size, how), None


def fit_detection_tensor(dump, decode_deps, flags: dict) -> tuple[TensorFit | None, dict | None]:
    """Which detection tensor (and layout) the dump holds, by its sidecar's tensor name and record size, the
    flags' record size, its size, and where sizes coincide (the face model's 2,034 x 4 box deltas and its
    scores padded to 4-byte lanes are both 8,136 bytes) its content: padded scores have constant pad lanes,
    box deltas do not. A dump shorter than every layout it could be is the head of one: a head-window fit.
    (None, None) when nothing fits or the choice stays open."""
    size = dump.size
    candidates, how, record = _narrowed(_candidates(decode_deps), dump.meta, flags)
    exact = [c for c in candidates if c["full_size"] == size]
    pool = exact or [c for c in candidates if c["full_size"] > size]
    if not pool:
        return None, None
    if len(pool) > 1:
        pool, how = _by_content(dump, pool, how)
        if not exact and len({c["record_size"] for c in pool}) > 1:
            # a head too short to tell: the candidates with the record the flags, sidecar or default (4) say
            pool = [c for c in pool if c["record_size"] == (record or 4)] or pool
        if len({c["role"] for c in pool}) > 1:
            return _open_roles(pool, size, how)
    chosen = pool[0]
    fit = TensorFit(chosen["tensor"], chosen["role"], chosen["mode"], chosen["anchors"], chosen["record_size"],
                    chosen["full_size"], size, how)
    return fit, chosen


def _known_where_unsaid(layout: RecordLayout, known: dict, meta, flags: dict) -> RecordLayout:
    """The layout with what the model knows (record size, lane names, pad lanes, quantization) filled in where
    neither flags nor the sidecar said it."""
    def said(attr):
        return flags.get(attr) is not None or getattr(meta, attr, None) is not None

    if layout.element is not None:
        return layout
    changes = {}
    if not said("record_size") and not said("fields"):
        changes["record_size"] = known["record_size"]
    size = changes.get("record_size", layout.record_size)
    if size == known["record_size"]:
        if not said("fields"):
            changes["fields"] = known["fields"]
        if not said("pad_lanes"):
            changes["pad_lanes"] = known["pad_lanes"]
    if not said("scale") and not said("zero_point") and known["scale"] is not None:
        changes.update(scale=known["scale"], zero_point=known["zero_point"])
    return dataclasses.replace(layout, **changes) if changes else layout


def _said_dtype(dump) -> str | None:
    """The element type a dump says it holds: its .npy / .npz header's, else its sidecar's `dtype`."""
    return getattr(dump, "npy_dtype", None) or getattr(dump.meta, "dtype", None)


def _shaped_by_array(dump, layout, flags):
    """The layout as a .npy / .npz dump's own header shapes it, where flags and sidecar leave it open: one row of
    the last axis is a record (an anchor's 4 box deltas, its 91 class scores), and multi-byte elements (float32,
    int16), as the header or a sidecar's `dtype` names them, are decoded by `values`."""
    from forensics.compare.stats import element_dtype

    meta = dump.meta

    def said(attr):
        return flags.get(attr) is not None or getattr(meta, attr, None) is not None

    changes = {}
    shape = getattr(dump, "npy_shape", None)
    name = _said_dtype(dump)
    try:
        dtype = element_dtype(name) if name else None
    except TypeError:
        dtype = None  # a sidecar dtype numpy does not know: the bytes as they are
    itemsize = dtype.itemsize if dtype is not None else 1
    rows = int(np.prod(shape[:-1], dtype=np.int64)) if shape else 0
    if rows > 1 and shape[-1] > 0 and not said("record_size") and not said("fields"):  # one row: a class vector
        changes["record_size"] = int(shape[-1]) * itemsize
    if dtype is not None and (itemsize > 1 or dtype.kind == "f") and dtype.kind in "iuf" and not said("fields") \
            and not said("pad_lanes"):
        size = changes.get("record_size", layout.record_size)
        if size % itemsize == 0:
            changes["element"] = dtype.str
        elif not said("record_size"):  # the default 4-byte record is narrower than one float64
            changes.update(record_size=itemsize, element=dtype.str)
    return dataclasses.replace(layout, **changes) if changes else layout


def element_type(dumps, context: DumpContext, *, record_given: bool) -> tuple[np.dtype, DumpContext]:
    """The dtype the error statistics read the dumps' data lanes as, and the context to read them with: the
    model tensor's dtype, else what the dumps say of themselves (a .npy header, a sidecar's `dtype`), else
    uint8 (raw chip output). Dumps that say different dtypes are an InputError. A layout whose record is
    narrower than one element (the default 4 bytes and float64) widens to one element, unless a record size
    was given, which must then hold whole elements."""
    from forensics.compare.stats import element_dtype

    if context.view is not None:
        from forensics.model.tflite.model import NUMPY_DTYPES

        said = [(NUMPY_DTYPES.get(context.view.tensor.dtype, "u1"), None)]
    else:
        said = [(_said_dtype(d), d.path) for d in dumps]
        said = [(name, path) for name, path in said if name]
    names = {element_dtype(name) for name, _ in said}
    if len(names) > 1:
        (first, path_a), (second, path_b) = said[0], said[1]
        raise InputError(f"{path_a} holds {element_dtype(first).name} and {path_b} {element_dtype(second).name}: "
                         f"compare dumps of one element type")
    if not names:
        return np.dtype(np.uint8), context
    dtype = names.pop()
    size, k = context.layout.record_size, dtype.itemsize
    if size % k:
        if record_given or size > k or context.layout.fields is not None:
            raise InputError(f"a record of {size} bytes is not a whole number of {dtype.name} elements "
                             f"({k} bytes each)")
        context = dataclasses.replace(context, layout=dataclasses.replace(context.layout, record_size=k))
    return dtype, context


def tensor_view(dump, model, tensor: str, labels=None):
    """How `dump` holds the model's `tensor` (raw or tensor layout), from the dump's size."""
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.tensors import tensor_record_layout

    with open_model(model) as opened:
        return tensor_record_layout(opened, tensor, dump.size, labels=labels, dump_path=getattr(dump, "path", None))


def remap_indices(result, context: DumpContext, attribute: str):
    """The result with the listed records' `index` mapped from raw record order to anchor order."""
    if context.record_order is None:
        return result
    rows = getattr(result, attribute)
    if rows is None:
        return result
    mapped = []
    for row in rows:
        anchor = context.anchor_of_record(row.index)
        mapped.append(dataclasses.replace(row, index=-1 if anchor is None else anchor))
    mapped.sort(key=lambda r: (r.index < 0, r.index))
    return dataclasses.replace(result, **{attribute: tuple(mapped)})


def anchor_locator(context: DumpContext):
    """`flat byte index -> {"anchor", "lane", "offset", "record"}` for statistics over a raw-layout dump."""
    layout = context.layout
    names = layout.field_names

    def where(index: int) -> dict:
        record, lane = divmod(index, layout.record_size)
        anchor = context.anchor_of_record(record)
        return {"anchor": -1 if anchor is None else anchor, "lane": names[lane], "record": record,
                "offset": layout.offset + index}

    return where


def class_locator(layout, itemsize: int, labels=None):
    """`flat element index -> {"class", "label", "offset"}` for a classifier's score vector (one record whose
    lanes are classes; `labels` by class id, as decode reads them)."""
    per = layout.record_size // itemsize

    def where(index: int) -> dict:
        out = {"class": index % per, "offset": layout.offset + index * itemsize}
        if labels is not None and index % per < len(labels) and labels[index % per]:
            out["label"] = labels[index % per]
        return out

    return where


def array_locator(shape, itemsize: int):
    """`flat element index -> where` for a .npy / .npz array: (y, x, z) of a 4-D tensor, (record, lane) of
    (1, N, C), else only the offset (a class vector holds no anchors)."""
    from forensics.compare.stats import locator

    where = locator(shape=tuple(shape), unit="tensor") or (lambda index: {})
    return lambda index: {**where(index), "offset": index * itemsize}


def records_by_anchor(dump, context: DumpContext) -> np.ndarray:
    """[anchors, record_size] uint8 in anchor order, for pictures; the count must match the geometry."""
    layout = context.layout
    region = layout.region(dump.size, dump.path)
    data = dump.read_array(region.start, region.record_bytes).reshape(region.records, layout.record_size)
    if context.record_order is not None:
        data = data[context.record_order]
    anchors = getattr(context.geometry, "num_anchors", None)
    if anchors is not None and len(data) != anchors:
        raise InputError(f"holds {len(data)} records of {layout.record_size} bytes but the model has {anchors} "
                         "anchors: no per-anchor picture (give {{model}}/{{tensor}} or {{record}})", dump.path, params=True)
    return data


def annotate_rows(rows: list[dict], geometry) -> list[dict]:
    """JSON rows with `geometry` and `prior` added from each row's `index` (when it is an anchor)."""
    if geometry is None:
        return rows
    from forensics.decode.geometry import annotate

    return [annotate(geometry, row, row["index"]) if row.get("index", -1) >= 0 else row for row in rows]


def pair_context(dump_a, dump_b, known: ModelContext = ModelContext(), *, record_given: bool = False,
                 **flags) -> tuple[np.dtype, DumpContext, object]:
    """The element type and context two dumps are compared with, and the dump the context is of: the one that
    says what it holds (A's sidecar, else B's); both dumps in the same layout of a model tensor (raw chip layout
    or the TFLite tensor's: else an InputError saying to relayout one); the dtype their data lanes are read as."""
    first = dump_a if dump_a.meta is not None or dump_b.meta is None else dump_b
    context = dump_context(first, known, **flags)
    model, tensor = known.model, known.tensor
    if context.view is not None:
        other = tensor_view(dump_b, model, tensor)
        if other.mode != context.view.mode:
            import shlex

            raw = dump_a if context.view.mode == "raw" else dump_b
            command = shlex.join(["forensics", "relayout", str(raw.path), "--model", str(model), "--layer", tensor,
                                  "-o", f"{os.path.splitext(str(raw.path))[0]}.tensor.bin"])
            raise InputError(f"A is the {context.view.mode} layout ({dump_a.size:,} bytes) and B the "
                             f"{other.mode} layout ({dump_b.size:,} bytes) of {tensor!r}: relayout the raw one "
                             f"first ({command})")
    record_given = record_given or bool(getattr(dump_a.meta, "record_size", None))
    return (*element_type((dump_a, dump_b), context, record_given=record_given), first)


def locator_for(context: DumpContext, dump, element: np.dtype, labels=None):
    """How statistics name the worst element of `dump` read as `element`s: by anchor (raw chip layout), by class
    (a classifier's score vector), by (y, x, z) of a .npy array; None: the default (record and lane)."""
    if context.record_order is not None:
        return anchor_locator(context)
    if context.view is not None and context.view.class_vector:
        from forensics.io.labels import read_labels

        return class_locator(context.layout, element.itemsize, read_labels(labels) if labels else None)
    if dump.npy_shape is not None and context.view is None and context.layout.offset == 0:
        return array_locator(dump.npy_shape, element.itemsize)
    return None
