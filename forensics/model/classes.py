"""Classifier outputs: a 1-D vector of class scores (MobileNet's 1001), read, ranked and compared top-k.

A classifier's output is "classes", not "anchors": one record whose lanes are the classes. The Edge TPU
writes it padded to its lane width (1001 uint8 scores arrive as 1,008 bytes), so a dump may be the tensor
(N * itemsize bytes) or the raw output with up to 63 padding bytes after the last class; the padding is
ignored. Ranks are 1-based, by score (highest first), ties by the lower class id.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.core.layout import dequantize
from forensics.compare.stats import element_dtype
from forensics.model.tflite.tensors import is_class_vector_shape
from forensics.core.verdict import Verdict

MAX_PADDING = 63


@dataclass(frozen=True)
class ClassVector(serial.Serial):
    """A classifier output tensor: its element count, dtype and quantization (from a model or given)."""

    JSON_ORDER = ("tensor",)

    num_classes: int
    dtype: str = "uint8"
    scale: float | None = None
    zero_point: int = 0
    name: str | None = field(default=None, metadata=serial.json("tensor"))


def class_vector_of(model) -> ClassVector | None:
    """The model's classifier output: a graph output of shape [N] or [1, N] (N > 1), when there is one."""
    sg = model.main
    for i in sg.outputs:
        t = sg.tensors[i]
        if is_class_vector_shape(t.shape):
            return ClassVector(t.shape[-1], t.dtype.lower(), t.scale, t.zero_point or 0, t.name)
    return None


def read_scores(data, vector: ClassVector, path: str | None = None) -> np.ndarray:
    """Dequantized float64 scores of one dump (tensor layout or lane-padded raw output)."""
    dtype = element_dtype(vector.dtype)
    raw = np.frombuffer(bytes(data), np.uint8)
    need = vector.num_classes * dtype.itemsize
    if not need <= raw.size <= need + MAX_PADDING:
        raise InputError(f"is {raw.size:,} bytes; {vector.num_classes:,} {vector.dtype} class scores are {need:,} "
                         f"bytes (up to {MAX_PADDING} more for the accelerator's lane padding)", path)
    values = raw[:need].view(dtype).astype(np.float64)
    if vector.scale is not None and dtype.kind in "iu":
        values = dequantize(values, vector.scale, vector.zero_point)
    return values


def ranking(scores: np.ndarray) -> np.ndarray:
    """Class ids from the best score down (ties: the lower class id first)."""
    return np.lexsort((np.arange(scores.size), -scores))


@dataclass(frozen=True)
class RankedClass(serial.Serial):
    JSON_DERIVED = ("rank_change",)

    class_id: int = field(metadata=serial.json("class"))
    label: str | None
    score_a: float
    score_b: float
    rank_a: int
    rank_b: int

    @property
    def name(self) -> str:
        return self.label or f"class {self.class_id}"

    @property
    def rank_change(self) -> int:
        return self.rank_b - self.rank_a


@dataclass(frozen=True)
class TopKComparison(serial.Serial):
    """Both sides' top-k and where each of those classes ranks on the other side."""

    JSON_DERIVED = ("verdict", "top1_same", "same_order", "message")
    JSON_ORDER = ("verdict", "k", "top1_same", "same_order", "message", "classes")

    k: int
    top_a: tuple[RankedClass, ...]
    top_b: tuple[RankedClass, ...]
    vector: ClassVector = field(metadata=serial.json("classes"))

    @property
    def top1_same(self) -> bool:
        return self.top_a[0].class_id == self.top_b[0].class_id

    @property
    def same_order(self) -> bool:
        return [c.class_id for c in self.top_a] == [c.class_id for c in self.top_b]

    @property
    def verdict(self) -> Verdict:
        return Verdict.of(self.same_order)

    @property
    def message(self) -> str:
        a, b = self.top_a[0], self.top_b[0]
        if not self.top1_same:
            return f"top-1 differs: {a.name} {a.score_a:.2f} vs {b.name} {b.score_b:.2f}"
        tail = "same top-{} order".format(self.k) if self.same_order else f"the top-{self.k} order differs"
        return f"top-1 agrees: {a.name} {a.score_a:.2f} vs {b.score_b:.2f}; {tail}"



def compare_top_k(scores_a: np.ndarray, scores_b: np.ndarray, vector: ClassVector, *, k: int = 5,
                  labels=None) -> TopKComparison:
    """Top-k of both score vectors with each class's rank and score on both sides."""
    if k <= 0:
        raise InputError(f"top-k must be a positive number, got {k}")
    k = min(k, scores_a.size)
    order_a, order_b = ranking(scores_a), ranking(scores_b)
    rank_a = np.empty(scores_a.size, np.int64)
    rank_b = np.empty(scores_b.size, np.int64)
    rank_a[order_a] = np.arange(1, scores_a.size + 1)
    rank_b[order_b] = np.arange(1, scores_b.size + 1)

    def entry(c: int) -> RankedClass:
        label = labels[c] if labels is not None and c < len(labels) and labels[c] else None
        return RankedClass(int(c), label, float(scores_a[c]), float(scores_b[c]), int(rank_a[c]), int(rank_b[c]))

    return TopKComparison(k, tuple(entry(c) for c in order_a[:k]), tuple(entry(c) for c in order_b[:k]), vector)


def classify_dumps(path_a, path_b, *, model, k: int = 5, labels_path=None, dump_options=None) -> TopKComparison:
    """Top-k of two dumps of a classifier's output (tensor layout or the accelerator's padded raw bytes),
    dequantized with the model's output quantization (`dump_options`: open_dump's slice keywords)."""
    from forensics.io.dump import open_dump
    from forensics.model.tflite.model import open_model

    with open_model(model) as m:
        vector = class_vector_of(m)
    if vector is None:
        raise InputError("has no classifier output (a graph output of shape [N] or [1, N])", model)
    labels = None
    if labels_path is not None:
        from forensics.io.labels import read_labels

        labels = read_labels(labels_path)
    scores = []
    for path in (path_a, path_b):
        dump = open_dump(path, use_sidecar=False, **(dump_options or {}))
        if dump.size > vector.num_classes * 8 + MAX_PADDING:
            raise InputError(f"is {dump.size:,} bytes: too large for {vector.num_classes:,} class scores", path)
        scores.append(read_scores(dump.read(0, dump.size), vector, str(path)))
    return compare_top_k(scores[0], scores[1], vector, k=k, labels=labels)
