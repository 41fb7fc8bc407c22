"""`forensics anchors-gen`: generate TF OD API SSD anchors, write them, check a model's or deps' anchors."""

from __future__ import annotations

import os

import numpy as np

from forensics.decode.ssd_anchors import AnchorConfig, check_anchors, generate_anchors, standard_config
from forensics.errors import InputError
from forensics.outputs import write_bytes_atomic


def _model_anchors(path):
    """(float32 anchors, tolerance) of a model's PostProcess: uint8 anchors are compared within half a step."""
    from forensics.decode.model_deps import deps_from_model

    deps, _, _ = deps_from_model(path)
    tol = 1e-6 if deps.anchors_quant is None else deps.anchors_quant.scale / 2 + 1e-6
    return deps.anchors, tol


def anchors_gen(*, input_size=None, feature_maps=None, min_scale=0.2, max_scale=0.95,
                aspect_ratios=(1.0, 2.0, 0.5, 3.0, 0.3333), interpolated_scale_aspect_ratio=1.0,
                reduce_boxes_in_lowest_layer=True, output=None, check_model=None, check_deps=None,
                show=5, anchor=None) -> dict:
    if input_size is not None and feature_maps is not None:
        raise InputError("give --input-size or --feature-maps, not both")
    if check_model is not None and check_deps is not None:
        raise InputError("give --check-model or --check-deps, not both")
    overrides = dict(min_scale=min_scale, max_scale=max_scale, aspect_ratios=tuple(aspect_ratios),
                     interpolated_scale_aspect_ratio=interpolated_scale_aspect_ratio,
                     reduce_boxes_in_lowest_layer=reduce_boxes_in_lowest_layer)
    if feature_maps is not None:
        config = AnchorConfig(feature_map_sizes=tuple(feature_maps), **overrides)
    else:
        w, h = input_size if input_size is not None else (300, 300)
        config = standard_config(w, h, **overrides)
    anchors = generate_anchors(config)
    result = {"config": config.to_dict(), "anchors": [], "output": None, "check": None}
    picks = list(range(min(max(show, 0), len(anchors))))
    if anchor is not None:
        if not 0 <= anchor < len(anchors):
            raise InputError(f"anchor {anchor} is out of range (0..{len(anchors) - 1})")
        picks = [anchor]
    result["anchors"] = [{"anchor": i, "value": [float(v) for v in anchors[i]]} for i in picks]
    if output is not None:
        write_bytes_atomic(output, np.ascontiguousarray(anchors, "<f4").tobytes())
        result["output"] = os.fspath(output)
    if check_model is not None or check_deps is not None:
        if check_model is not None:
            theirs, tol = _model_anchors(check_model)
            source = os.fspath(check_model)
        else:
            from forensics.decode.deps import read_deps

            theirs, tol, source = read_deps(check_deps).anchors, 1e-6, os.fspath(check_deps)
        check = check_anchors(theirs, config, tolerance=tol).to_dict()
        check["source"] = source
        check.pop("config", None)
        result["check"] = check
    return result
