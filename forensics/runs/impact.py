"""impact of two runs: each run's SSD decode inputs (the raw, tensor or dequantized stage) or a classifier's
scores, read for one model, then forensics.decode.impact on them (`forensics impact`, `compare --impact`)."""

from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np

from forensics.core.errors import InputError
from forensics.decode.impact import MAX_DECODES, ClassifierModel, SsdArrays, SsdModel, impact

# The decode's inputs in the order they are taken: nearest the kernel first (a dequantized stage is what it
# received; a raw stage is relayouted or unpadded to the tensor first).
STAGES = ("dequantized", "tensor", "raw")


@dataclass(frozen=True)
class ImpactContext:
    """The model side of an impact: the decode's deps (an SsdModel) or a classifier's output (ClassifierModel),
    with the Edge TPU relayout of each output layer a raw stage needs."""

    model: SsdModel | ClassifierModel
    relayouts: dict
    source: str

    @property
    def deps(self):
        return getattr(self.model, "deps", None)


def impact_context(*, model=None, deps=None, rounding: str = "reference", input_size=None, labels=None,
                   top_k: int | None = None, image_wh=None) -> ImpactContext:
    """The context from `model` (an SSD with TFLite_Detection_PostProcess, or a classifier) or a `deps`
    directory; `image_wh` (the original image's size) adds image-space boxes through the letterbox."""
    if (model is None) == (deps is None):
        raise InputError("give exactly one of {model:MODEL} or {deps:DIR}", params=True)
    names = None
    if labels is not None:
        from forensics.io.labels import read_labels

        names = read_labels(labels)
    relayouts = {}
    if deps is not None:
        from forensics.decode.deps import read_deps

        if top_k is not None:
            raise InputError("{top_k} is for a classifier {model:MODEL}; a {deps} directory is an SSD's", params=True)
        decode_deps = read_deps(deps)
        source = os.fspath(deps)
    else:
        from forensics.model.tflite.graph import postprocess_info
        from forensics.model.tflite.model import open_model

        source = os.fspath(model)
        with open_model(source) as opened:
            detector = postprocess_info(opened) is not None
            if not detector:
                from forensics.model.classes import class_vector_of

                vector = class_vector_of(opened)
        if not detector:
            if vector is None:
                raise InputError("has neither a TFLite_Detection_PostProcess nor a classifier output (a graph "
                                 "output of shape [N] or [1, N])", source)
            if image_wh is not None or input_size is not None:
                raise InputError("{image}, {image_size} and {input_size} place an SSD's boxes; MODEL is a "
                                 "classifier", params=True)
            return ImpactContext(ClassifierModel(vector, top_k or 5, names), {}, source)
        if top_k is not None:
            raise InputError("{top_k} is for a classifier; this model decodes detections "
                             "(TFLite_Detection_PostProcess)", params=True)
        from forensics.decode.model_deps import deps_from_model

        decode_deps, relayouts, _ = deps_from_model(source)
    from forensics.decode.report import letterbox_for

    size = tuple(input_size) if input_size is not None else decode_deps.input_size
    letterbox = letterbox_for(image_wh, size)
    return ImpactContext(SsdModel(decode_deps, rounding, size, names, letterbox), relayouts, source)


def _entries(run, stage: str, role: str | None, name: str | None) -> list:
    """The run's buffers of `stage` that are the decode's `role` input: by role, else by tensor name."""
    by_role = [e for e in run.buffers if e.stage == stage and role is not None and e.role == role]
    return by_role or [e for e in run.buffers if e.stage == stage and name is not None and e.tensor == name]


def _common_stage(run_a, run_b, role: str | None, name: str | None, what: str):
    """(stage, entry of A, entry of B): the first of STAGES both runs hold for one input."""
    for stage in STAGES:
        found = [_entries(run, stage, role, name) for run in (run_a, run_b)]
        if all(len(f) == 1 for f in found):
            return stage, found[0][0], found[1][0]
        for run, f in zip((run_a, run_b), found):
            if len(f) > 1:
                raise InputError(f"the run has {len(f)} {stage} buffers for the {what} "
                                 f"({', '.join(e.tensor for e in f)})", run.path)
    held = [", ".join(s for s in STAGES if _entries(run, s, role, name)) or "none" for run in (run_a, run_b)]
    raise InputError(f"the runs share no stage holding the {what} ({name or role}): A has {held[0]}, B has "
                     f"{held[1]} of {', '.join(STAGES)}", run_b.path if held[0] != "none" else run_a.path)


def _local(run, entry) -> str:
    if run.files is not None:
        raise InputError("impact reads runs on this machine (copy the run here first)", run.path)
    return run.file_path(entry)


def _floats(run, entry, what: str, anchors: int, columns: int) -> np.ndarray:
    """A float32 stage buffer as [anchors, columns], all finite."""
    path = _local(run, entry)
    from forensics.io.dump import open_dump

    dump = open_dump(path, use_sidecar=False, text_format="binary")
    want = anchors * columns * 4
    if dump.size != want:
        raise InputError(f"{what} ({entry.label}) is {dump.size:,} bytes; float32 [{anchors}, {columns}] is "
                         f"{want:,}", path)
    array = np.frombuffer(dump.read(0, dump.size), "<f4").astype(np.float32).reshape(anchors, columns)
    if not np.isfinite(array).all():
        bad = np.argwhere(~np.isfinite(array))[0]
        raise InputError(f"{what} contain NaN or infinity (anchor {int(bad[0])}, column {int(bad[1])})", path)
    return array


def _ssd_input(run, entry, what: str, info, columns: int, context: ImpactContext) -> np.ndarray:
    deps = context.deps
    if entry.dtype == "float32" or (entry.dtype is None and entry.stage == "dequantized"):
        return _floats(run, entry, what, deps.num_anchors, columns)
    if entry.dtype not in (None, "uint8"):
        raise InputError(f"{what} ({entry.label}) are {entry.dtype}; the decode takes uint8 or float32", run.path)
    from forensics.decode.inputs import load_input

    raw = (deps.raw_sizes or {}).get(info.name)
    return load_input(_local(run, entry), what, deps.num_anchors, columns,
                      layout="tensor" if entry.stage == "tensor" else "auto", raw_size=raw,
                      relayout=context.relayouts.get(info.name), dump_options={"text_format": "binary"}).array


def _side(entry_a, entry_b, stage, run_a, run_b) -> dict:
    return {"stage": stage, "tensor": entry_a.tensor, "a": run_a.file_path(entry_a) if run_a.files is None else None,
            "b": run_b.file_path(entry_b) if run_b.files is None else None}


def _classifier_scores(run_a, run_b, context: ImpactContext):
    vector = context.model.vector
    from forensics.model.classes import MAX_PADDING, read_scores

    for stage in ("tensor", "raw"):
        found = []
        for run in (run_a, run_b):
            named = _entries(run, stage, None, vector.name)
            found.append(named if named else [e for e in run.buffers if e.stage == stage])
        if all(len(f) == 1 for f in found):
            scores = []
            for run, (entry,) in zip((run_a, run_b), found):
                path = _local(run, entry)
                limit = vector.num_classes * 8 + MAX_PADDING
                data = run.read_buffer(entry, limit + 1)
                if len(data) > limit:
                    raise InputError(f"is over {limit:,} bytes: too large for {vector.num_classes:,} class scores",
                                     path)
                scores.append(read_scores(data, vector, path))
            return scores, {"scores": _side(found[0][0], found[1][0], stage, run_a, run_b)}
    raise InputError(f"the runs share no tensor or raw buffer of the classifier's output {vector.name!r}",
                     run_a.path)


def impact_of_runs(run_a, run_b, context: ImpactContext, *, max_decodes: int = MAX_DECODES):
    """forensics.decode.impact.ImpactResult of two loaded runs (forensics.runs.run.Run) for one model."""
    if isinstance(context.model, ClassifierModel):
        (a, b), inputs = _classifier_scores(run_a, run_b, context)
        return impact(a, b, context.model, max_decodes=max_decodes, inputs=inputs)
    deps = context.deps
    sides, inputs = {}, {}
    for role, info, columns, what in (("boxes", deps.boxes, deps.box_columns, "box deltas"),
                                      ("scores", deps.scores, deps.score_columns, "scores")):
        stage, entry_a, entry_b = _common_stage(run_a, run_b, role, info.name, what)
        sides[role] = (_ssd_input(run_a, entry_a, what, info, columns, context),
                       _ssd_input(run_b, entry_b, what, info, columns, context))
        inputs[role] = _side(entry_a, entry_b, stage, run_a, run_b)
    a = SsdArrays(sides["boxes"][0], sides["scores"][0])
    b = SsdArrays(sides["boxes"][1], sides["scores"][1])
    return impact(a, b, context.model, max_decodes=max_decodes, inputs=inputs)


def compare_impact(run_a, run_b, *, model=None, deps=None, labels=None):
    """`compare --impact`: the impact of two loaded runs with `model` or `deps`, else run A's recorded model
    when that file is here (an SSD's decode or a classifier's top-k, defaults as `forensics impact`)."""
    if model is None and deps is None:
        recorded = (run_a.model or {}).get("path")
        if not recorded or not os.path.isfile(recorded):
            raise InputError("{impact} needs {model:MODEL} or {deps:DIR} (run A names no model file found here)",
                             params=True)
        model = recorded
    return impact_of_runs(run_a, run_b, impact_context(model=model, deps=deps, labels=labels))
