"""Helpers for the runs tests: story runs from the bundled dumps, runs with detections, manifest edits."""

from __future__ import annotations

import json
import os

import numpy as np

from forensics.runs.ingest import ingest
from forensics.runs.run import write_run

STORY = ("libedgetpu", "ours", "broken")


def story_run(tmp_path, source: str, name: str | None = None):
    """A run of the bundled story dumps of `source` (input, raw convert_scores, tensor Squeeze1)."""
    path = tmp_path / (name or source)
    ingest(path, source, [f"input=dumps/{source}/input.bin",
                          f"raw:convert_scores=dumps/{source}/convert_scores.bin",
                          f"tensor:Squeeze1=dumps/{source}/Squeeze1.bin"])
    return path


def detections_run(path, source: str, rows, *, max_rows: int = 10):
    """A run with only the four PostProcess outputs; rows are (class, score, (ymin, xmin, ymax, xmax))."""
    boxes = np.zeros((1, max_rows, 4), np.float32)
    classes = np.zeros((1, max_rows), np.float32)
    scores = np.zeros((1, max_rows), np.float32)
    for i, (cls, score, box) in enumerate(rows):
        boxes[0, i], classes[0, i], scores[0, i] = box, cls, score
    num = np.array([len(rows)], np.float32)
    with write_run(path, source) as b:
        for name, arr, role in (("TFLite_Detection_PostProcess", boxes, "boxes"),
                                ("TFLite_Detection_PostProcess:1", classes, "classes"),
                                ("TFLite_Detection_PostProcess:2", scores, "scores"),
                                ("TFLite_Detection_PostProcess:3", num, "num_detections")):
            b.add_bytes("detections", name, arr, dtype="float32", shape=arr.shape, role=role)
    return path


def edit_manifest(run_path, change) -> None:
    manifest = os.path.join(run_path, "manifest.json")
    with open(manifest, encoding="utf-8") as fh:
        doc = json.load(fh)
    change(doc)
    with open(manifest, "w", encoding="utf-8") as fh:
        json.dump(doc, fh)


def skip_with_libedgetpu() -> None:
    """Skip a test of the Edge TPU runtime's absence on a machine that has it."""
    import ctypes

    import pytest

    try:
        ctypes.CDLL("libedgetpu.so.1")
    except OSError:
        return
    pytest.skip("libedgetpu is installed here")
