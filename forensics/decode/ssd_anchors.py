"""SSD anchors as the TF Object Detection API's multiple-grid anchor generator makes them, and a check.

Follows object_detection/anchor_generators/multiple_grid_anchor_generator.py (`create_ssd_anchors`) and
grid_anchor_generator.py (`tile_anchors`), computed in float32 as the TF graph does:
- layer scales: `min_scale + (max_scale - min_scale) * i / (num_layers - 1)`, then 1.0 for the last pair;
- per layer the box specs (scale, aspect ratio): the lowest layer with `reduce_boxes_in_lowest_layer` uses
  (0.1, 1.0), (scale, 2.0), (scale, 0.5); every other layer one box per aspect ratio plus, when
  `interpolated_scale_aspect_ratio > 0`, (sqrt(scale * next_scale), interpolated_scale_aspect_ratio);
- height = scale / sqrt(ar) * base_h, width = scale * sqrt(ar) * base_w; stride 1/grid, offset half a stride;
- anchors run row by row, column by column, box spec by box spec (anchor index = (y * W + x) * specs + s);
- the exported tensor is [N, 4] ycenter, xcenter, h, w after a round trip through corner coordinates
  (what box_list_ops.get_center_coordinates_and_sizes does to the generated corner boxes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.judgement import Judgement, Reason
from forensics.core.verdict import Verdict
from forensics.core.layout import MAX_ANCHORS
from forensics.io.outputs import write_bytes_atomic

_F32_MAX = float(np.finfo(np.float32).max)


def _float32(value, what: str) -> float:
    """A finite number that stays finite in float32 (the generator computes in float32)."""
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be a number, got {value!r}") from None
    if not math.isfinite(value) or abs(value) > _F32_MAX:
        raise InputError(f"{what} {value!r} is not a finite float32 number")
    return value


def _checked_sizes(feature_map_sizes) -> tuple[tuple[int, int], ...]:
    """(height, width) per feature map (an integer is a square map), positive, with at most MAX_ANCHORS cells."""
    sizes = tuple((int(s), int(s)) if isinstance(s, (int, np.integer)) else tuple(int(v) for v in s)
                  for s in feature_map_sizes)
    if not sizes or any(len(s) != 2 or s[0] <= 0 or s[1] <= 0 for s in sizes):
        raise InputError("feature map sizes must be positive (height, width) pairs or integers")
    cells = 0
    for h, w in sizes:  # bound before anything is allocated: 5000x5000 maps would be 150 M anchors
        cells += h * w
        if cells > MAX_ANCHORS:
            raise InputError(f"feature maps {[list(s) for s in sizes]} have more than {MAX_ANCHORS} cells "
                             "(more anchors than any SSD; check the sizes)")
    return sizes


def _checked_scales(scales, layers: int) -> tuple[float, ...]:
    """Explicit layer scales: one positive float32 number per feature map."""
    scales = tuple(_float32(s, "scale") for s in scales)
    if len(scales) != layers:
        raise InputError(f"{len(scales)} scales given for {layers} feature maps")
    if not all(s > 0 for s in scales):
        raise InputError(f"scales must be positive, got {list(scales)}")
    return scales


@dataclass(frozen=True)
class AnchorConfig(serial.Serial):
    """ssd_anchor_generator {...} of a TF OD API pipeline config (defaults are the API's)."""

    JSON_DERIVED = ("num_anchors",)

    feature_map_sizes: tuple[tuple[int, int], ...]
    min_scale: float = 0.2
    max_scale: float = 0.95
    aspect_ratios: tuple[float, ...] = (1.0, 2.0, 0.5, 3.0, 0.3333)  # as the sample pipeline configs write 1/3
    interpolated_scale_aspect_ratio: float = 1.0
    reduce_boxes_in_lowest_layer: bool = True
    base_anchor_size: tuple[float, float] = (1.0, 1.0)
    scales: tuple[float, ...] | None = None

    def __post_init__(self):
        sizes = _checked_sizes(self.feature_map_sizes)
        object.__setattr__(self, "feature_map_sizes", sizes)
        object.__setattr__(self, "aspect_ratios", tuple(_float32(a, "aspect ratio") for a in self.aspect_ratios))
        if not self.aspect_ratios or any(not a > 0 for a in self.aspect_ratios):
            raise InputError("aspect ratios must be positive numbers")
        object.__setattr__(self, "min_scale", _float32(self.min_scale, "min_scale"))
        object.__setattr__(self, "max_scale", _float32(self.max_scale, "max_scale"))
        if not (0 < self.min_scale <= self.max_scale):
            raise InputError(f"need 0 < min_scale <= max_scale, got {self.min_scale}, {self.max_scale}")
        ratio = _float32(self.interpolated_scale_aspect_ratio, "interpolated_scale_aspect_ratio")
        if ratio < 0:
            raise InputError(f"interpolated_scale_aspect_ratio must be 0 (no interpolated box) or positive, "
                             f"got {ratio}")
        object.__setattr__(self, "interpolated_scale_aspect_ratio", ratio)
        base = tuple(_float32(v, "base_anchor_size") for v in self.base_anchor_size)
        if len(base) != 2 or not all(v > 0 for v in base):
            raise InputError(f"base_anchor_size must be two positive numbers, got {list(base)}")
        object.__setattr__(self, "base_anchor_size", base)
        if self.scales is not None:
            object.__setattr__(self, "scales", _checked_scales(self.scales, len(sizes)))
        if self.num_anchors > MAX_ANCHORS:
            raise InputError(f"this configuration makes {self.num_anchors} anchors, more than {MAX_ANCHORS}")

    @property
    def layer_scales(self) -> list[float]:
        n = len(self.feature_map_sizes)
        if self.scales is not None:
            scales = list(self.scales)
        elif n == 1:
            scales = [self.min_scale]
        else:
            scales = [self.min_scale + (self.max_scale - self.min_scale) * i / (n - 1) for i in range(n)]
        return scales + [1.0]

    def box_specs(self) -> list[list[tuple[float, float]]]:
        """(scale, aspect ratio) per box, per layer."""
        scales = self.layer_scales
        specs = []
        for layer, (scale, scale_next) in enumerate(zip(scales[:-1], scales[1:])):
            if layer == 0 and self.reduce_boxes_in_lowest_layer:
                layer_specs = [(0.1, 1.0), (scale, 2.0), (scale, 0.5)]
            else:
                layer_specs = [(scale, ar) for ar in self.aspect_ratios]
                if self.interpolated_scale_aspect_ratio > 0.0:
                    layer_specs.append((math.sqrt(scale * scale_next), self.interpolated_scale_aspect_ratio))
            specs.append(layer_specs)
        return specs

    @property
    def num_anchors(self) -> int:
        return sum(h * w * len(s) for (h, w), s in zip(self.feature_map_sizes, self.box_specs()))


def mobilenet_feature_maps(input_size: int, num_layers: int = 6) -> tuple[int, ...]:
    """Grid sizes of the SSD MobileNet feature extractors: ceil(input / 16), then halved (ceil) per layer.

    300 -> 19, 10, 5, 3, 2, 1 (1917 anchors); 320 -> 20, 10, 5, 3, 2, 1 (2034 anchors).
    """
    if input_size <= 0 or num_layers <= 0:
        raise InputError("input size and number of layers must be positive")
    if input_size > 65536:
        raise InputError(f"input size {input_size} is more than 65536 pixels (beyond any SSD)")
    if num_layers > 64:
        raise InputError(f"{num_layers} feature map layers is more than 64")
    sizes = [-(-input_size // 16)]
    while len(sizes) < num_layers:
        sizes.append(-(-sizes[-1] // 2))
    return tuple(sizes)


def standard_config(input_width: int, input_height: int | None = None, **overrides) -> AnchorConfig:
    """The TF OD API SSD MobileNet default ssd_anchor_generator for an input size."""
    input_height = input_width if input_height is None else input_height
    ys = mobilenet_feature_maps(input_height)
    xs = mobilenet_feature_maps(input_width)
    return AnchorConfig(feature_map_sizes=tuple(zip(ys, xs)), **overrides)


def generate_anchors(config: AnchorConfig) -> np.ndarray:
    """float32 [N, 4] ycenter, xcenter, h, w in normalised coordinates, in the model's anchor order."""
    f32 = np.float32
    base_h, base_w = f32(config.base_anchor_size[0]), f32(config.base_anchor_size[1])
    out = []
    for (grid_h, grid_w), specs in zip(config.feature_map_sizes, config.box_specs()):
        scales = np.array([s for s, _ in specs], f32)
        ratios = np.array([a for _, a in specs], f32)
        ratio_sqrts = np.sqrt(ratios)
        heights = scales / ratio_sqrts * base_h
        widths = scales * ratio_sqrts * base_w
        stride_y, stride_x = f32(1.0) / f32(grid_h), f32(1.0) / f32(grid_w)
        offset_y, offset_x = f32(0.5) * stride_y, f32(0.5) * stride_x
        y_centers = np.arange(grid_h, dtype=f32) * stride_y + offset_y
        x_centers = np.arange(grid_w, dtype=f32) * stride_x + offset_x
        yc = np.repeat(y_centers, grid_w * len(specs))
        xc = np.tile(np.repeat(x_centers, len(specs)), grid_h)
        hh = np.tile(heights, grid_h * grid_w)
        ww = np.tile(widths, grid_h * grid_w)
        # corners (center -/+ 0.5 * size), then back to center/size as the exporter does
        ymin, ymax = yc - f32(0.5) * hh, yc + f32(0.5) * hh
        xmin, xmax = xc - f32(0.5) * ww, xc + f32(0.5) * ww
        h = ymax - ymin
        w = xmax - xmin
        out.append(np.stack([ymin + h / f32(2.0), xmin + w / f32(2.0), h, w], axis=1).astype(f32))
    return np.concatenate(out, axis=0)


@dataclass(frozen=True)
class AnchorCheck(serial.Serial):
    """Does a model's anchors tensor equal a generated configuration?"""

    matches: bool
    num_anchors: int
    expected_anchors: int
    max_abs_diff: float | None
    worst_anchor: int | None
    mismatched: int
    tolerance: float
    config: AnchorConfig
    first_mismatches: tuple[dict, ...] = field(default=())

    def __bool__(self) -> bool:
        return self.matches


def check_anchors(anchors, config: AnchorConfig, tolerance: float = 1e-6) -> AnchorCheck:
    """Compare [N, 4] anchors with the generated ones; float32 exporters differ by an ulp or two at most."""
    anchors = np.asarray(anchors, dtype=np.float32)
    if anchors.ndim != 2 or anchors.shape[1] != 4:
        raise InputError(f"anchors must be [N, 4], got shape {list(anchors.shape)}")
    expected = generate_anchors(config)
    if anchors.shape[0] != expected.shape[0]:
        return AnchorCheck(False, int(anchors.shape[0]), int(expected.shape[0]), None, None,
                           abs(int(anchors.shape[0]) - int(expected.shape[0])), tolerance, config)
    diff = np.abs(anchors.astype(np.float64) - expected.astype(np.float64))
    per_anchor = diff.max(axis=1) if diff.size else np.zeros(0)
    bad = np.flatnonzero(~(per_anchor <= tolerance))
    worst = int(np.argmax(per_anchor)) if per_anchor.size else None
    firsts = tuple({"anchor": int(i), "model": [float(v) for v in anchors[i]],
                    "generated": [float(v) for v in expected[i]]} for i in bad[:5])
    return AnchorCheck(bad.size == 0, int(anchors.shape[0]), int(expected.shape[0]),
                       float(per_anchor.max()) if per_anchor.size else 0.0, worst, int(bad.size), tolerance,
                       config, firsts)


def judge_check(check: AnchorCheck, source) -> Judgement:
    """anchors-gen --check-*'s one judgement: MATCH when `source`'s anchors are the generated ones, else DIFFER
    (another count, or the anchors that differ by more than the tolerance)."""
    if check.matches:
        return Judgement(Verdict.MATCH, f"{source}: all {check.num_anchors} anchors equal the generated ones within "
                                        f"{check.tolerance:.2g} (max diff {check.max_abs_diff:.2g})")
    if check.max_abs_diff is None:
        return Judgement(Verdict.DIFFER, f"{source}: {check.num_anchors} anchors, the config makes "
                                         f"{check.expected_anchors}", (Reason("anchor_count"),))
    return Judgement(Verdict.DIFFER, f"{source}: {check.mismatched} anchor(s) differ by more than "
                                     f"{check.tolerance:.2g}; worst anchor {check.worst_anchor} by "
                                     f"{check.max_abs_diff:.3g}", (Reason("anchors_differ"),))


# --- `forensics anchors-gen`: generate, write, check a model's or a deps directory's anchors ----------------

DEFAULT_ASPECT_RATIOS = (1.0, 2.0, 0.5, 3.0, 0.3333)  # as the sample pipeline configs


def _shown_to_json(anchors) -> list[dict]:
    return [{"anchor": i, "value": list(value)} for i, value in anchors]


def _shown_from_json(rows) -> tuple:
    return tuple((int(row["anchor"]), tuple(float(v) for v in row["value"])) for row in rows)


def _check_to_json(result: "AnchorsGenResult") -> dict | None:
    """The check without its configuration (the document's own) and with the source it was checked against."""
    if result.check is None:
        return None
    check = result.check.to_dict()
    check.pop("config", None)
    check["source"] = result.check_source
    return check


def _check_from_json(doc: dict) -> AnchorCheck | None:
    check = doc.get("check")
    if check is None:
        return None
    return AnchorCheck.from_dict({**{k: v for k, v in check.items() if k != "source"}, "config": doc["config"]})


@dataclass(frozen=True)
class AnchorsGenResult(serial.Serial):
    """Generated anchors: the configuration, the anchors asked to be shown, the file written, the check."""

    config: AnchorConfig
    anchors: tuple[tuple[int, tuple[float, float, float, float]], ...] = field(  # (anchor index, yc, xc, h, w)
        metadata=serial.json(encode=_shown_to_json, decode=_shown_from_json))
    output: str | None = None
    check: AnchorCheck | None = field(default=None, metadata=serial.json(write=_check_to_json, read=_check_from_json))
    # the model or deps directory whose anchors were checked: written inside the check (as its "source")
    check_source: str | None = field(default=None, metadata=serial.json(
        name="check", omit=lambda _: True, read=lambda doc: (doc.get("check") or {}).get("source")))


def _model_anchors(path):
    """(float32 anchors, tolerance) of a model's PostProcess: uint8 anchors are compared within half a step."""
    from forensics.decode.model_deps import deps_from_model

    deps, _, _ = deps_from_model(path)
    tol = 1e-6 if deps.anchors_quant is None else deps.anchors_quant.scale / 2 + 1e-6
    return deps.anchors, tol


def anchors_gen(*, input_size=None, feature_maps=None, min_scale=0.2, max_scale=0.95,
                aspect_ratios=DEFAULT_ASPECT_RATIOS, interpolated_scale_aspect_ratio=1.0,
                reduce_boxes_in_lowest_layer=True, output=None, check_model=None, check_deps=None,
                show=5, anchor=None) -> AnchorsGenResult:
    """Generate anchors for an input size (default 300x300) or square feature maps; write them to `output`
    (float32 [N, 4] little-endian); check `check_model`'s or `check_deps`'s anchors against them."""
    import os

    if input_size is not None and feature_maps is not None:
        raise InputError("give {input_size} or {feature_maps}, not both", params=True)
    if check_model is not None and check_deps is not None:
        raise InputError("give {check_model} or {check_deps}, not both", params=True)
    overrides = dict(min_scale=min_scale, max_scale=max_scale, aspect_ratios=tuple(aspect_ratios),
                     interpolated_scale_aspect_ratio=interpolated_scale_aspect_ratio,
                     reduce_boxes_in_lowest_layer=reduce_boxes_in_lowest_layer)
    if feature_maps is not None:
        config = AnchorConfig(feature_map_sizes=tuple(feature_maps), **overrides)
    else:
        w, h = input_size if input_size is not None else (300, 300)
        config = standard_config(w, h, **overrides)
    anchors = generate_anchors(config)
    picks = list(range(min(max(show, 0), len(anchors))))
    if anchor is not None:
        if not 0 <= anchor < len(anchors):
            raise InputError(f"anchor {anchor} is out of range (0..{len(anchors) - 1})")
        picks = [anchor]
    shown = tuple((i, tuple(float(v) for v in anchors[i])) for i in picks)
    written = None
    if output is not None:
        write_bytes_atomic(output, np.ascontiguousarray(anchors, "<f4").tobytes())
        written = os.fspath(output)
    check = source = None
    if check_model is not None:
        theirs, tol = _model_anchors(check_model)
        source = os.fspath(check_model)
        check = check_anchors(theirs, config, tolerance=tol)
    elif check_deps is not None:
        from forensics.decode.deps import read_deps

        source = os.fspath(check_deps)
        check = check_anchors(read_deps(check_deps).anchors, config, tolerance=1e-6)
    return AnchorsGenResult(config, shown, written, check, source)
