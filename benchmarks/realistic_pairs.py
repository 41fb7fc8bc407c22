"""Realistic run pairs for the scale benchmark: an SSD MobileNet v2 run with every stage a capture records.

Per run: the three feature-map inputs, the chip's raw outputs (Squeeze1 and convert_scores in the chip's padded
size_bytes), the tensors, their DEQUANTIZE outputs (float32) and the four TFLite_Detection_PostProcess outputs,
13 buffers (about 1.4 MB) with their dtypes, shapes and quantization, written through forensics' own run writer
so the manifests carry CRCs as a capture's do. Detections are real: forensics' TFLite_Detection_PostProcess
(bit for bit with the kernel) on the run's own tensors and the model's anchors. Sizes, quantization, anchors and
options come from the real SSD MobileNet v2 segment when `model` is given; without it a stand-in of the same
sizes and stage list (anchors from the SSD anchor generator, the model's options) is used, and `Farm.stand_in`
says so.

Nine pairs in ten are byte-identical (as a farm that works mostly is); one in ten differs where a driver bug
would put it: a few anchors' scores and box deltas, in the raw, tensor and dequantized stages and the
detections that follow from them.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

ANCHORS, COLUMNS, RAW_SCORE_STRIDE = 1917, 91, 92
INPUTS = (("feature_map_0", (1, 19, 19, 576)), ("feature_map_1", (1, 10, 10, 1280)),
          ("feature_map_2", (1, 10, 10, 256)))
BOXES_QUANT, SCORES_QUANT = (0.09133967, 179), (0.00390625, 0)


@dataclass(frozen=True)
class Farm:
    root: str
    pairs: int
    differing: int
    stand_in: bool
    buffers_per_run: int


def _deps(model):
    from forensics.decode.ssd import PostProcessOptions

    if model is not None and os.path.isfile(model):
        from forensics.decode.model_deps import deps_from_model

        deps = deps_from_model(model)[0]
        return deps.anchors, deps.options, False
    from forensics.decode.ssd_anchors import generate_anchors, standard_config

    anchors = np.asarray(generate_anchors(standard_config(300)), np.float32).reshape(-1, 4)  # 1917 anchors
    options = PostProcessOptions(max_detections=20, max_classes_per_detection=1, detections_per_class=100,
                                 use_regular_nms=False, nms_score_threshold=1e-8, nms_iou_threshold=0.6,
                                 num_classes=90, y_scale=10.0, x_scale=10.0, h_scale=5.0, w_scale=5.0)
    return anchors, options, True


def _tensors(rng):
    """One frame's uint8 Squeeze1 [N, 4] and convert_scores [N, 91]: mostly background, a few objects."""
    boxes = rng.integers(150, 210, (ANCHORS, 4), dtype=np.uint8)
    scores = np.zeros((ANCHORS, COLUMNS), np.uint8)
    scores[:, 0] = 250
    objects = rng.choice(ANCHORS, 40, replace=False)
    scores[objects, rng.integers(1, COLUMNS, 40)] = rng.integers(60, 250, 40).astype(np.uint8)
    scores[rng.choice(ANCHORS, 400, replace=False), rng.integers(1, COLUMNS, 400)] = rng.integers(1, 20, 400)
    return boxes, scores


def _raw(tensor: np.ndarray, stride: int) -> bytes:
    """The chip's padded layout (each anchor's record padded to `stride` bytes), as size_bytes says."""
    rows = np.zeros((tensor.shape[0], stride), np.uint8)
    rows[:, :tensor.shape[1]] = tensor
    return rows.tobytes()


def _frame(boxes, scores, anchors, options):
    from forensics.decode.ssd import Quantization, dequantize, postprocess

    bq, sq = Quantization(*BOXES_QUANT), Quantization(*SCORES_QUANT)
    fb, fs = dequantize(boxes, bq), dequantize(scores, sq)
    out = postprocess(fb, fs, anchors, options)
    det_boxes, classes, det_scores, num, _ = out.output_tensors()
    rows = options.rows
    return {
        ("raw", "Squeeze1"): (_raw(boxes, 4), "uint8", [1, ANCHORS, 4], None),
        ("raw", "convert_scores"): (_raw(scores, RAW_SCORE_STRIDE), "uint8", [1, ANCHORS, RAW_SCORE_STRIDE], None),
        ("tensor", "Squeeze1"): (boxes.tobytes(), "uint8", [1, ANCHORS, 4], ("boxes", BOXES_QUANT)),
        ("tensor", "convert_scores"): (scores.tobytes(), "uint8", [1, ANCHORS, COLUMNS], ("scores", SCORES_QUANT)),
        ("dequantized", "Squeeze2"): (fb.astype(np.float32).tobytes(), "float32", [1, ANCHORS, 4], None),
        ("dequantized", "convert_scores1"): (fs.astype(np.float32).tobytes(), "float32", [1, ANCHORS, COLUMNS], None),
        ("detections", "TFLite_Detection_PostProcess"): (det_boxes.tobytes(), "float32", [1, rows, 4], ("boxes", None)),
        ("detections", "TFLite_Detection_PostProcess:1"): (classes.tobytes(), "float32", [1, rows], ("classes", None)),
        ("detections", "TFLite_Detection_PostProcess:2"): (det_scores.tobytes(), "float32", [1, rows], ("scores", None)),
        ("detections", "TFLite_Detection_PostProcess:3"): (num.tobytes(), "float32", [1], ("num_detections", None)),
    }


def _write(path, source, inputs, frame) -> None:
    from forensics.runs.run import write_run

    with write_run(path, source) as run:
        for name, data in inputs:
            run.add_bytes("input", name, data, dtype="uint8", shape=list(dict(INPUTS)[name]),
                          scale=0.023528477, zero_point=0)
        for (stage, tensor), (data, dtype, shape, extra) in frame.items():
            meta = {"dtype": dtype, "shape": shape}
            if extra is not None:
                role, quant = extra
                meta["role"] = role
                if quant is not None:
                    meta["scale"], meta["zero_point"] = quant
            run.add_bytes(stage, tensor, data, **meta)


def make_farm(root: str, pairs: int, *, model: str | None = None, seed: int = 27, differ_every: int = 10,
              frames: int = 16) -> Farm:
    """`pairs` pair folders under `root` (pair-000000 ...), A `a_libedgetpu` and B `b_ours` in each; the
    distinct runs are written once under root/.templates (hidden: not a pair) and linked into the pairs."""
    anchors, options, stand_in = _deps(model)
    rng = np.random.default_rng(seed)
    bank = []
    for _ in range(frames):  # a few distinct frames, reused: the farm is written quickly, compared in full
        inputs = [(name, rng.integers(0, 256, int(np.prod(shape)), dtype=np.uint8).tobytes()) for name, shape in INPUTS]
        boxes, scores = _tensors(rng)
        bad_boxes, bad_scores = boxes.copy(), scores.copy()
        hit = rng.choice(ANCHORS, 6, replace=False)
        bad_scores[hit, rng.integers(1, COLUMNS, 6)] ^= 0x40  # a driver bug in a few anchors
        bad_boxes[hit, rng.integers(0, 4, 6)] += 3
        bank.append((inputs, _frame(boxes, scores, anchors, options),
                     _frame(bad_boxes, bad_scores, anchors, options)))
    templates = os.path.join(root, ".templates")  # each distinct run written once; pairs link its files
    for f, (inputs, good, bad) in enumerate(bank):
        _write(os.path.join(templates, f"{f}-a"), "libedgetpu", inputs, good)
        _write(os.path.join(templates, f"{f}-good"), "ours", inputs, good)
        _write(os.path.join(templates, f"{f}-bad"), "ours", inputs, bad)
    differing = 0
    for i in range(pairs):
        f = i % frames
        pair = os.path.join(root, f"pair-{i:06d}")
        differs = bool(differ_every) and i % differ_every == differ_every - 1
        differing += differs
        _link_run(os.path.join(templates, f"{f}-a"), os.path.join(pair, "a_libedgetpu"))
        _link_run(os.path.join(templates, f"{f}-{'bad' if differs else 'good'}"), os.path.join(pair, "b_ours"))
    return Farm(root, pairs, differing, stand_in, len(INPUTS) + len(bank[0][1]))


def _link_run(template: str, path: str) -> None:
    """A copy of a run whose buffer files are hard links to the template's (same bytes, no disk), manifest
    copied."""
    import shutil

    for directory, _, files in os.walk(template):
        target = os.path.join(path, os.path.relpath(directory, template))
        os.makedirs(target, exist_ok=True)
        for name in files:
            src, dst = os.path.join(directory, name), os.path.join(target, name)
            if name == "manifest.json":
                shutil.copyfile(src, dst)
            else:
                os.link(src, dst)
