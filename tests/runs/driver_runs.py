"""Runs as a driver engineer writes them: plain numpy bytes, one file per buffer and a manifest.json written
here by hand (zlib's CRC32), never through forensics' own run writer; and printf-style log lines in the
formats the npu_driver prints (DbgPrint's `[FP]`-style fingerprints and `[INPUT-CHK]` page checks)."""

from __future__ import annotations

import json
import os
import zlib
from pathlib import Path

import numpy as np

CORAL_SSD_V2 = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
CORAL_SSD_V1 = "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"


def write_driver_run(path, source: str, buffers, *, model=None, capture=None, input_image=None) -> Path:
    """A run directory: `buffers` are (stage, tensor, bytes or array, {manifest fields}) in order."""
    path = os.fspath(path)
    os.makedirs(path)
    entries, used = [], set()
    for stage, tensor, data, meta in buffers:
        data = data.tobytes() if isinstance(data, np.ndarray) else bytes(data)
        stem = "".join(c if c.isalnum() or c in "._-" else "_" for c in tensor)[:60]
        rel = f"{stage}/{stem}.bin"
        n = 2
        while rel in used:
            rel, n = f"{stage}/{stem}-{n}.bin", n + 1
        used.add(rel)
        os.makedirs(os.path.join(path, stage), exist_ok=True)
        with open(os.path.join(path, *rel.split("/")), "wb") as fh:
            fh.write(data)
        entry = {"stage": stage, "tensor": tensor, "file": rel, "size": len(data),
                 "crc32": f"0x{zlib.crc32(data):08x}"}
        entry.update(meta or {})
        entries.append(entry)
    manifest = {"format": "forensics-run", "version": 1, "source": source, "created": "2026-12-01T12:00:00Z",
                "tool": "ourdriver 0.3", "model": model, "input_image": input_image, "buffers": entries}
    if capture is not None:
        manifest["capture"] = capture
    with open(os.path.join(path, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh, indent=2)
    return Path(path)


def model_record(path) -> dict:
    """The manifest's `model` for a model file (its path and sha256), as a driver's tool would write it."""
    import hashlib

    with open(path, "rb") as fh:
        return {"path": os.fspath(path), "sha256": hashlib.sha256(fh.read()).hexdigest()}


def u8(shape, *, scale=None, zero_point=None, **extra) -> dict:
    meta = {"dtype": "uint8", "shape": list(shape)}
    if scale is not None:
        meta["scale"], meta["zero_point"] = float(scale), int(zero_point or 0)
    meta.update(extra)
    return meta


def f32(shape, **extra) -> dict:
    return {"dtype": "float32", "shape": list(shape), **extra}


# --- a whole SSD MobileNet capture, as a driver engineer dumps it -----------------------------------------------

class SsdFacts:
    """What the real SSD segment says about its buffers (read from the .tflite: sizes, quantization, the output
    layers' chip layouts, the executables' parameters and bitstreams); the buffers are made here with numpy."""

    def __init__(self, model_path):
        from forensics.model.tflite.edgetpu import read_packages
        from forensics.model.tflite.model import open_model

        self.path = os.fspath(model_path)
        with open_model(self.path) as model:
            tensors = {t.name: t for t in model.main.tensors}
            self.inputs = [(model.main.tensors[i].name, tuple(model.main.tensors[i].shape)) for i in model.main.inputs]
            self.quant = {name: (tensors[name].scale, tensors[name].zero_point)
                          for name in ("Squeeze1", "convert_scores")}
            packages = read_packages(model)
        exes = packages[0].executables
        self.layers = {l.name: l for e in exes for l in e.output_layers}
        self.raw_size = {name: layer.size_bytes for name, layer in self.layers.items()}  # 7,672 and 176,368
        self.anchors = 1917
        self.params = {f"op0_exe{e.index}_{e.type.lower()}": bytes(e.parameters) for e in exes}
        self.bitstreams = {f"{e.index}_{k}": bytes(b) for e in exes for k, b in enumerate(e.bitstreams)}
        self.record = model_record(self.path)


def chip_layout(tensor: np.ndarray, raw_size: int, pad: int = 0x00, tail: int = 0x00) -> bytes:
    """A [N, z] uint8 tensor as the chip writes it: each record padded to a 4-byte lane, `tail` bytes after
    the last record up to size_bytes (the SSD layers' tiles keep records in order)."""
    n, z = tensor.shape
    stride = -(-z // 4) * 4
    rows = np.full((n, stride), pad, np.uint8)
    rows[:, :z] = tensor
    out = np.full(raw_size, tail, np.uint8)
    out[:rows.size] = rows.reshape(-1)
    return out.tobytes()


def dequantize_once(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """tflite-runtime's DEQUANTIZE: fl(s * (q - zp)), one rounding."""
    return (np.float32(scale) * (q.astype(np.float32) - np.float32(zero_point))).astype(np.float32)


def dequantize_blocks(q: np.ndarray, scale: float, zero_point: int) -> np.ndarray:
    """ai-edge-litert 2.3's on x86-64: fl(fl(q*s) - fl(zp*s)) for each full block of 8 elements of the flat
    tensor, fl(s * (q - zp)) for the last n mod 8 (docs/pitfalls.md)."""
    flat = q.reshape(-1).astype(np.float32)
    s, zp = np.float32(scale), np.float32(zero_point)
    out = (s * (flat - zp)).astype(np.float32)
    full = flat.size // 8 * 8
    out[:full] = (flat[:full] * s).astype(np.float32) - np.float32(zp * s)
    return out.reshape(q.shape)


def ssd_frame(seed: int = 0):
    """One frame's uint8 box deltas [1917, 4] and scores [1917, 91]: background mostly, a few objects."""
    rng = np.random.default_rng(seed)
    boxes = rng.integers(150, 210, (1917, 4), dtype=np.uint8)
    scores = np.zeros((1917, 91), np.uint8)
    scores[:, 0] = 250
    objects = rng.choice(1917, 12, replace=False)
    scores[objects, rng.integers(1, 91, 12)] = rng.integers(60, 250, 12).astype(np.uint8)
    return boxes, scores


def detection_outputs(rows, max_rows: int = 20, garbage=None):
    """The four PostProcess outputs for `rows` (class, score, box); rows past num_detections hold `garbage`
    (a numpy generator: what an uninitialised buffer held) or zeros."""
    boxes = np.zeros((1, max_rows, 4), np.float32)
    classes = np.zeros((1, max_rows), np.float32)
    scores = np.zeros((1, max_rows), np.float32)
    if garbage is not None:
        boxes[:] = garbage.random(boxes.shape, np.float32)
        classes[:] = garbage.integers(0, 90, classes.shape)
        scores[:] = garbage.random(scores.shape, np.float32)
    for i, (cls, score, box) in enumerate(rows):
        boxes[0, i], classes[0, i], scores[0, i] = box, cls, score
    num = np.array([len(rows)], np.float32)
    return [("TFLite_Detection_PostProcess", boxes, f32(boxes.shape, role="boxes")),
            ("TFLite_Detection_PostProcess:1", classes, f32(classes.shape, role="classes")),
            ("TFLite_Detection_PostProcess:2", scores, f32(scores.shape, role="scores")),
            ("TFLite_Detection_PostProcess:3", num, f32(num.shape, role="num_detections"))]


DETECTIONS = [(0, 0.96484375, (0.1, 0.2, 0.5, 0.6)), (17, 0.71484375, (0.3, 0.1, 0.9, 0.4)),
              (2, 0.5, (0.05, 0.6, 0.3, 0.95))]


def ssd_buffers(facts: SsdFacts, *, seed: int = 0, raw_pad: int = 0x00, raw_tail: int = 0x00,
                dequantize=dequantize_once, boxes=None, scores=None, inputs=None, detections=DETECTIONS,
                garbage=None, instructions=True, params=True, raw_meta=None, max_rows: int = 20):
    """Every stage of one capture of the SSD segment: params and instruction bitstreams (the model's), the three
    feature-map inputs, raw outputs in the chip's layout, tensors, dequantized and the detections."""
    rng = np.random.default_rng(seed)
    fb, fs = ssd_frame(seed)
    boxes = fb if boxes is None else boxes
    scores = fs if scores is None else scores
    out = []
    if params:
        for name, blob in facts.params.items():
            if blob:
                out.append(("params", name, blob, {"dtype": "uint8"}))
    if instructions:
        for name, blob in facts.bitstreams.items():
            out.append(("instructions", name, blob, {"dtype": "uint8"}))
    for (name, shape) in facts.inputs:
        data = inputs[name] if inputs and name in inputs else rng.integers(0, 256, shape, dtype=np.uint8)
        out.append(("input", name, data, u8(shape, scale=0.023528477, zero_point=0)))
    (bs, bz), (ss, sz) = facts.quant["Squeeze1"], facts.quant["convert_scores"]
    for name, tensor in (("Squeeze1", boxes), ("convert_scores", scores)):
        out.append(("raw", name, chip_layout(tensor, facts.raw_size[name], raw_pad, raw_tail),
                    {"dtype": "uint8", **(raw_meta or {})}))
    out.append(("tensor", "Squeeze1", boxes, u8((1, 1917, 4), scale=bs, zero_point=bz, role="boxes")))
    out.append(("tensor", "convert_scores", scores, u8((1, 1917, 91), scale=ss, zero_point=sz, role="scores")))
    out.append(("dequantized", "Squeeze2", dequantize(boxes, bs, bz).reshape(1, 1917, 4), f32((1, 1917, 4))))
    out.append(("dequantized", "convert_scores1", dequantize(scores, ss, sz).reshape(1, 1917, 91),
                f32((1, 1917, 91))))
    for name, arr, meta in detection_outputs(detections, max_rows=max_rows, garbage=garbage):
        out.append(("detections", name, arr, meta))
    return out


def replace_buffer(buffers, stage, tensor, data=None, meta=None):
    """The buffer list with (stage, tensor)'s bytes (and/or manifest fields) replaced; data=... removed."""
    out = []
    for s, t, d, m in buffers:
        if (s, t) == (stage, tensor):
            if data is Ellipsis:
                continue
            d = d if data is None else data
            m = m if meta is None else meta
        out.append((s, t, d, m))
    return out


# --- a capture whose every stage is computed from the one before it ------------------------------------------

def unpack_records(raw: bytes, n: int, z: int) -> np.ndarray:
    """What a relayout makes of a raw output: `n` records of `z` bytes, each padded to a 4-byte lane."""
    stride = -(-z // 4) * 4
    return np.frombuffer(raw, np.uint8)[:n * stride].reshape(n, stride)[:, :z].copy()


def postprocess_rows(deps, boxes_f, scores_f, *, anchors=None, **changed):
    """The PostProcess rows (class, score, box) of the kernel on dequantized boxes and scores (TFLite's
    TFLite_Detection_PostProcess, bit-exact in forensics.decode.ssd), the model's options with `changed` ones."""
    import dataclasses

    from forensics.decode.ssd import postprocess

    options = dataclasses.replace(deps.options, **changed)
    boxes, classes, scores, num, _ = postprocess(
        np.asarray(boxes_f, np.float32).reshape(-1, 4), np.asarray(scores_f, np.float32).reshape(1917, -1),
        deps.anchors if anchors is None else anchors, options).output_tensors()
    return [(int(classes[i]), float(scores[i]), tuple(map(float, boxes[i]))) for i in range(int(num[0]))]


def capture_buffers(facts: SsdFacts, deps, *, input_seed: int = 0, frame=None, inputs=None, params=None,
                    instructions=None, raw=None, tensors=None, dequantized=None, dequantize=dequantize_once,
                    quant=None, anchors=None, options=None, raw_pad: int = 0, raw_tail: int = 0, garbage=None,
                    drop=()):
    """Every stage of one capture, each computed from the stage before it unless given: the model's params and
    bitstreams ({name: bytes} replace them, None drops one), the inputs, raw outputs laid out from the frame
    (boxes, scores), tensors relayouted from raw, dequantized from the tensors (`quant`: {tensor: (scale,
    zero_point)} the host used), detections from the kernel on the dequantized ones (`options`, `anchors`)."""
    boxes, scores = ssd_frame() if frame is None else frame
    out = []
    blobs = dict(facts.params)
    blobs.update(params or {})
    for name, blob in blobs.items():
        if blob:
            out.append(("params", name, blob, {"dtype": "uint8"}))
    streams = dict(facts.bitstreams)
    streams.update(instructions or {})
    for name, blob in streams.items():
        if blob is not None:
            out.append(("instructions", name, blob, {"dtype": "uint8"}))
    rng = np.random.default_rng(input_seed)
    for name, shape in facts.inputs:
        data = rng.integers(0, 256, shape, dtype=np.uint8)
        if inputs and name in inputs:
            data = inputs[name]
        out.append(("input", name, data, u8(shape, scale=0.023528477, zero_point=0)))
    raws = {"Squeeze1": chip_layout(boxes, facts.raw_size["Squeeze1"], raw_pad, raw_tail),
            "convert_scores": chip_layout(scores, facts.raw_size["convert_scores"], raw_pad, raw_tail)}
    raws.update(raw or {})
    for name in ("Squeeze1", "convert_scores"):
        out.append(("raw", name, raws[name], {"dtype": "uint8"}))
    tens = dict(tensors or {})
    for name, z in (("Squeeze1", 4), ("convert_scores", 91)):
        if name not in tens:
            tens[name] = unpack_records(raws[name], 1917, z)
    q = dict(facts.quant)
    out.append(("tensor", "Squeeze1", tens["Squeeze1"], u8((1, 1917, 4), scale=q["Squeeze1"][0],
                                                            zero_point=q["Squeeze1"][1], role="boxes")))
    out.append(("tensor", "convert_scores", tens["convert_scores"],
                u8((1, 1917, 91), scale=q["convert_scores"][0], zero_point=q["convert_scores"][1], role="scores")))
    q.update(quant or {})
    deq = {"Squeeze2": dequantize(tens["Squeeze1"], *q["Squeeze1"]).reshape(1, 1917, 4),
           "convert_scores1": dequantize(tens["convert_scores"], *q["convert_scores"]).reshape(1, 1917, 91)}
    deq.update(dequantized or {})
    out.append(("dequantized", "Squeeze2", deq["Squeeze2"], f32((1, 1917, 4))))
    out.append(("dequantized", "convert_scores1", deq["convert_scores1"], f32((1, 1917, 91))))
    rows = postprocess_rows(deps, deq["Squeeze2"], deq["convert_scores1"], anchors=anchors, **(options or {}))
    for name, arr, meta in detection_outputs(rows, max_rows=deps.options.rows, garbage=garbage):
        out.append(("detections", name, arr, meta))
    return [b for b in out if b[0] not in drop]


def xor_fold(data: bytes) -> int:
    words = np.frombuffer(bytes(data) + bytes(-len(data) % 8), "<u8")
    return int(np.bitwise_xor.reduce(words)) if words.size else 0


def fp_log_line(tag: str, data: bytes, n: int = 0) -> str:
    """A DbgView line holding the driver's one-line fingerprint of `data` (`[FP] tag size= crc32= xor64= head@
    mid@ tail@`, 16 bytes each, mid at size/2 - 8), as DbgPrint writes it."""
    data = bytes(data)
    size, mid = len(data), max(0, len(data) // 2 - 8)
    tail = max(0, size - 16)
    line = ("[FP] %s size=%d crc32=0x%08x xor64=0x%016x head@0x0=%s mid@0x%x=%s tail@0x%x=%s"
            % (tag, size, zlib.crc32(data), xor_fold(data), data[:16].hex(" "), mid, data[mid:mid + 16].hex(" "),
               tail, data[tail:].hex(" ")))
    return "%08d\t%.8f\t%s\n" % (n, 0.125 * n, line)


def add_log(run_path, name: str, text: str, tags=None) -> None:
    """The driver's log written into a run and named in its manifest's `logs` (size, CRC32, tag map)."""
    run_path = Path(run_path)
    data = text.encode("ascii")
    (run_path / "log").mkdir(exist_ok=True)
    (run_path / "log" / name).write_bytes(data)
    manifest = json.loads((run_path / "manifest.json").read_text(encoding="utf-8"))
    entry = {"name": name, "file": f"log/{name}", "size": len(data), "crc32": f"0x{zlib.crc32(data):08x}"}
    if tags:
        entry["tags"] = dict(tags)
    manifest.setdefault("logs", []).append(entry)
    (run_path / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")


def input_chk_log(data: bytes, page: int = 4096, first_line: int = 0) -> str:
    """The npu_driver's pre-submit input check as DbgView prints it (Queue.c: "[INPUT-CHK] page[%u] first8=%02x
    ... last8(@0x%llx)=...", "[INPUT-CHK] page[%u] (last) first8=...", "[INPUT-CHK] xor-fold pre-submit =
    0x%016llX over %llu bytes (%lu pages)")."""
    data = bytes(data)
    lines = []
    pages = -(-len(data) // page)
    for i in range(pages):
        chunk = data[i * page:(i + 1) * page]
        first = " ".join("%02x" % x for x in chunk[:8])
        if len(chunk) == page:
            last = " ".join("%02x" % x for x in chunk[-8:])
            lines.append("[INPUT-CHK] page[%u] first8=%s  last8(@0x%x)=%s" % (i, first, i * page + page - 8, last))
        else:
            lines.append("[INPUT-CHK] page[%u] (last) first8=%s" % (i, first))
    lines.append("[INPUT-CHK] xor-fold pre-submit = 0x%016X over %u bytes (%u pages)" % (xor_fold(data), len(data),
                                                                                          pages))
    return "".join("%08d\t%.8f\t%s\n" % (first_line + n, 0.125 * n, line) for n, line in enumerate(lines))
