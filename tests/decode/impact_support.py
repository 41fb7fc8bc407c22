"""Builders for the impact tests, independent of forensics' writers: score and box buffers made with plain numpy
from the story's published bytes (dumps/README.md) and realistic COCO SSD outputs, and runs written as a driver
writes them (a manifest in plain JSON with zlib CRC32s, one file per buffer)."""

from __future__ import annotations

import json
import os
import zlib

import numpy as np

from tests.conftest import REPO

FACE_ANCHORS = 2034
# The story's reference scores (dumps/README.md): [background, face] bytes of the nine anchors that are not
# `ff 00`; anchor 203 is the face, 255/256 = 0.996.
STORY_FACES = {143: (0xff, 0x01), 146: (0xff, 0x01), 200: (0xfb, 0x05), 203: (0x01, 0xff), 206: (0x02, 0xfe),
               263: (0x80, 0x80), 266: (0x80, 0x80), 1278: (0xf6, 0x0a), 1284: (0xf6, 0x0a)}
FACE_DEPS = REPO / "dumps" / "face_ssd"


def face_scores(faces: dict | None = None) -> np.ndarray:
    """uint8 [2034, 2] scores: every anchor background (`ff 00`) but those given as (background, face)."""
    scores = np.zeros((FACE_ANCHORS, 2), np.uint8)
    scores[:, 0] = 0xff
    for anchor, pair in (faces or {}).items():
        scores[anchor] = pair
    return scores


def face_boxes() -> np.ndarray:
    """The story's uint8 box deltas [2034, 4] (the bundled reference dump, read as plain bytes)."""
    return np.fromfile(REPO / "dumps" / "libedgetpu" / "Squeeze1.bin", np.uint8).reshape(FACE_ANCHORS, 4).copy()


def padded(scores: np.ndarray) -> np.ndarray:
    """Scores as the chip writes them: each record padded to a 4-byte lane with 0x80 (`ff 00 80 80`)."""
    out = np.full((scores.shape[0], 4), 0x80, np.uint8)
    out[:, :scores.shape[1]] = scores
    return out


def coco_outputs(rng, n: int = 1917, *, objects: int = 6, zero_point: int = 179, noise: int = 4):
    """A realistic SSD MobileNet COCO output pair: box deltas near the zero point, the background column high,
    class scores of a few bytes, and `objects` clusters of anchors scoring one class high. Returns (boxes
    [n, 4], scores [n, 91], {anchor: class} of the strongest anchor of each object)."""
    boxes = rng.integers(zero_point - 12, zero_point + 13, (n, 4)).astype(np.uint8)
    scores = rng.integers(0, noise, (n, 91)).astype(np.uint8)
    scores[:, 0] = rng.integers(220, 256, n)
    strongest = {}
    for _ in range(objects):
        centre = int(rng.integers(0, n - 8))
        cls = int(rng.integers(1, 91))
        cluster = np.arange(centre, centre + 6)
        scores[cluster, cls] = rng.integers(120, 200, cluster.size)
        scores[centre, cls] = 230
        scores[cluster, 0] = 30
        strongest[centre] = cls
    return boxes, scores, strongest


def write_run(path, source: str, buffers) -> str:
    """A run directory as a driver writes one: `buffers` are (stage, tensor, array, extra manifest keys)."""
    path = os.fspath(path)
    os.makedirs(path)
    entries = []
    for stage, tensor, array, extra in buffers:
        data = np.ascontiguousarray(array).tobytes()
        name = f"{stage}/{tensor.replace('/', '_')}.bin"
        os.makedirs(os.path.join(path, stage), exist_ok=True)
        with open(os.path.join(path, name), "wb") as fh:
            fh.write(data)
        entries.append({"stage": stage, "tensor": tensor, "file": name, "size": len(data),
                        "crc32": f"0x{zlib.crc32(data):08x}", **extra})
    manifest = {"format": "forensics-run", "version": 1, "source": source, "created": None,
                "tool": "impact test builder", "model": None, "input_image": None, "buffers": entries}
    with open(os.path.join(path, "manifest.json"), "w", encoding="utf-8") as fh:
        json.dump(manifest, fh)
    return path


def face_run(path, source: str, scores: np.ndarray, boxes: np.ndarray | None = None) -> str:
    """A face SSD run: the scores in the chip's padded raw layout, the box deltas as the tensor."""
    boxes = face_boxes() if boxes is None else boxes
    return write_run(path, source, [
        ("raw", "convert_scores", padded(scores), {"dtype": "uint8", "record_size": 4}),
        ("tensor", "Squeeze1", boxes, {"dtype": "uint8", "shape": [1, FACE_ANCHORS, 4], "role": "boxes"})])
