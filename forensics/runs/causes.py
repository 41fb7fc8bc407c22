"""What explains a stage of two runs beyond its own bytes: how the stages depend on each other (a stage that
differs because an earlier one does is expected to), which analysis fits which stage (a device or DMA wrote
params, instructions, input and raw; the CPU tail computed dequantized and detections), and the explanations
that need more than one buffer or one run: buffers bound in the wrong order, an image placed elsewhere in the
input, another runtime's dequantize rounding, an executable never submitted, a link check against run A's
model, the image an input was made from, and the fingerprints the driver's log holds.

Each is a pure function over bytes, arrays and manifest entries returning a forensics.diagnose.Finding (or a
fact) or None; forensics.runs.compare decides where they apply. The functions another part of forensics
provides (the CPU tail's replay: forensics.decode.explain; the log's fingerprint check: forensics.buffer.fingerprint)
are called from one function each, below.
"""

from __future__ import annotations

import functools
import os
import re

import numpy as np

from forensics.core.errors import ForensicsError, InputError

# --- stages: who wrote them, what they follow from ---------------------------------------------------------

# What a device or its DMA wrote: only these get the bus's and the DMA's names (fill, truncation, page, ...).
DMA_STAGES = ("params", "instructions", "input", "raw")
# What the CPU tail computed from the tensors: explained by replaying the tail, never by a bus fault.
CPU_STAGES = ("dequantized", "detections")
# diagnose's kinds that name something a device or a DMA did to the bytes
DMA_KINDS = frozenset({"fill", "truncation", "page", "stale", "cacheline", "shift", "bits", "oversize", "rotation",
                       "pitch"})
# Each stage and the stages its bytes are computed from (the image the input was made from, the chip's
# output from its parameters, instructions and input, ...).
DEPENDS = {"params": (), "instructions": (), "image": (), "input": ("image",),
           "raw": ("params", "instructions", "input"), "tensor": ("raw",), "dequantized": ("tensor",),
           "detections": ("dequantized",), "relayouted": ("raw",)}  # relayouted: forensics' own, from raw


@functools.lru_cache(maxsize=None)
def upstream(stage: str) -> frozenset:
    """Every stage `stage` is computed from, directly or through others."""
    out = set()
    for before in DEPENDS.get(stage, ()):
        out.add(before)
        out |= upstream(before)
    return frozenset(out)


def finding(kind: str, evidence: str, hint: str = "", explains: float = 1.0, **details):
    """A forensics.diagnose.Finding (imported here, when there is one to make: diagnose's kinds load with it)."""
    from forensics.diagnose.result import Finding

    return Finding(kind, evidence, hint, details, explains)


# --- buffers bound in the wrong order ------------------------------------------------------------------------

def crossed(pairs) -> dict:
    """The buffers of one stage bound in the wrong order: `pairs` are (label, (size, crc32) of A's, (size,
    crc32) of B's) of the stage's buffers both runs hold. When every one of B's buffers that differs from A's
    of its name equals another of A's (by size and CRC32, that buffer unique in A), {label: label of A's buffer
    it holds}; else {}."""
    a_of = {}
    for label, a, _ in pairs:
        a_of.setdefault(a, []).append(label)
    out = {}
    for label, a, b in pairs:
        if a == b:
            continue
        holders = [other for other in a_of.get(b, ()) if other != label]
        if len(holders) != 1 or len(a_of[b]) != 1:
            return {}
        out[label] = holders[0]
    return out if len(out) >= 2 else {}


def crossed_finding(label: str, holds: str, crc: int, everyone: dict):
    from forensics.compare.crc import format_crc

    others = ", ".join(f"B's {k} holds A's {v}" for k, v in everyone.items() if k != label)
    return finding("buffer_order",
                   f"B's {label} holds A's {holds} byte for byte (CRC32 {format_crc(crc)}); {others}: the "
                   "buffers are bound in the wrong order",
                   "bind each buffer to its own output (the order the model's output layers list them: forensics "
                   "link MODEL --plan)", holds=holds)


# --- outputs written to one address; a relayout skipped ----------------------------------------------------------

def aliased(label: str, data_a: bytes, data_b: bytes, others_b: dict):
    """B's `label` (differing from A's) holds another of B's buffers of its stage, or the first bytes of it, as
    two outputs the link step gave one device address hold what the chip wrote there last: a finding naming
    that buffer, else None. `others_b`: {label: bytes} of B's other buffers of the stage."""
    if not data_b or data_a == data_b:
        return None
    for other, data in others_b.items():
        if other == label or not data:
            continue
        n = min(len(data), len(data_b))  # whichever output the chip wrote last, the other's first n bytes are it
        if n < 64 or data_b[:n] != data[:n] or data_a[:n] == data_b[:n] or len(set(data_b[:n])) < 2:
            continue  # a prefill both outputs kept is no address they share
        return finding("aliased",
                       f"B's {label} holds {'the first ' + format(n, ',') + ' bytes of ' if n < len(data) else ''}"
                       f"B's {other}{' in its first ' + format(n, ',') + ' bytes' if n < len(data_b) else ''} byte "
                       "for byte: the two outputs were written to one address (the link step "
                       "gave them the same device address, or the driver maps one buffer for both)",
                       "link each output to its own address (forensics link MODEL --check the linked bitstream)",
                       aliased_with=other, bytes=n)
    return None


def relayout_skipped(label: str, tensor_b: bytes, raw_b: bytes, record: int | None):
    """B's tensor is B's raw output's first bytes as the chip laid them out (records with their pad lanes):
    the relayout was skipped. None when it is not."""
    if not tensor_b or len(raw_b) < len(tensor_b) or raw_b[:len(tensor_b)] != tensor_b:
        return None
    lanes = f" (records of {record} bytes with their pad lanes)" if record else ""
    return finding("relayout",
                   f"B's {label} is the first {len(tensor_b):,} bytes of its raw output as the chip wrote them"
                   f"{lanes}: the relayout was skipped",
                   "relayout the raw output into the tensor: each record's pad lanes dropped, tiles in order "
                   "(forensics relayout)", skipped=True)


# --- an image placed elsewhere in the input -------------------------------------------------------------------

def _content_box(image: np.ndarray) -> tuple[int, int, int, int] | None:
    """(top, left, bottom, right) of the pixels that are not the zero padding, or None when all are zero."""
    nonzero = np.any(image != 0, axis=2)
    rows, cols = np.flatnonzero(nonzero.any(axis=1)), np.flatnonzero(nonzero.any(axis=0))
    if not rows.size:
        return None
    return int(rows[0]), int(cols[0]), int(rows[-1]) + 1, int(cols[-1]) + 1


def placement(a: np.ndarray, b: np.ndarray) -> dict | None:
    """How B's image sits in the input relative to A's, when B holds A's very pixels elsewhere in a zero-filled
    tensor of the same [H, W, C]: {"rows", "columns" (B's offset from A's, positive down / right), "height",
    "width", "centred_b", "top_left_a"}; None when the pixels differ or sit at the same place."""
    if a.shape != b.shape or a.ndim != 3:
        return None
    box_a, box_b = _content_box(a), _content_box(b)
    if box_a is None or box_b is None:
        return None
    (ta, la, ba, ra), (tb, lb, bb, rb) = box_a, box_b
    if (ba - ta, ra - la) != (bb - tb, rb - lb) or (ta, la) == (tb, lb):
        return None
    if not np.array_equal(a[ta:ba, la:ra], b[tb:bb, lb:rb]):
        return None
    height, width = a.shape[0], a.shape[1]

    def centred(top, left, h, w):
        return abs(2 * top + h - height) <= 1 and abs(2 * left + w - width) <= 1

    return {"rows": tb - ta, "columns": lb - la, "height": ba - ta, "width": ra - la,
            "top_left_a": ta == 0 and la == 0, "centred_b": centred(tb, lb, bb - tb, rb - lb),
            "centred_a": centred(ta, la, ba - ta, ra - la), "top_left_b": tb == 0 and lb == 0}


def _moved(n: int, unit: str, more: str, less: str) -> str:
    """'49 rows lower', '1 column further left'."""
    return f"{abs(n):,} {unit}{'s' if abs(n) != 1 else ''} {more if n > 0 else less}"


def placement_finding(p: dict):
    moves = [_moved(p["rows"], "row", "lower", "higher") if p["rows"] else None,
             _moved(p["columns"], "column", "further right", "further left") if p["columns"] else None]
    where = " and ".join(m for m in moves if m)
    how = ""
    if p["top_left_a"] and p["centred_b"]:
        how = ": centred (letterboxed) where pycoral's set_resized_input puts the image at the top-left and pads " \
              "right and bottom"
    elif p["centred_a"] and p["top_left_b"]:
        how = ": at the top-left where A's image is centred"
    return finding("placement",
                   f"B's input holds A's {p['width']}x{p['height']} image pixels unchanged, {where} than A's "
                   f"in the zero-filled input{how}",
                   "place the resized image where the reference runtime does (pycoral: the top-left corner, zero "
                   "padding right and bottom) before the input DMA", **{k: v for k, v in p.items()})


def image_array(entry, data: bytes) -> np.ndarray | None:
    """An input buffer as [H, W, C] uint8 when its manifest shape says it is one image ([1, H, W, C])."""
    shape = entry.shape
    if not shape or len(shape) != 4 or shape[0] != 1 or (entry.dtype or "uint8") != "uint8":
        return None
    if int(np.prod(shape)) != len(data):
        return None
    return np.frombuffer(data, np.uint8).reshape(shape[1:])


# --- another runtime's dequantize rounding -------------------------------------------------------------------

def within_rounding(a: np.ndarray, b: np.ndarray, scale: float, zero_point: int) -> float | None:
    """The largest |a - b| when every element of two float32 dequantizations of the same codes is within 1 ulp
    (float32) of |value| + |zero_point x scale|: what separates fl(fl(q*s) - fl(zp*s)) (ai-edge-litert's blocks
    of 8) from fl(s*(q - zp)) (tflite-runtime; docs/pitfalls.md). None when some element is further apart or
    one is NaN / infinite where the other is not."""
    a = np.asarray(a, np.float32).reshape(-1)
    b = np.asarray(b, np.float32).reshape(-1)
    if a.shape != b.shape:
        return None
    same = (a == b) | (np.isnan(a) & np.isnan(b))
    if same.all():
        return 0.0
    x, y = a[~same], b[~same]
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        return None
    offset = np.float32(abs(float(np.float32(zero_point) * np.float32(scale))))
    bound = np.spacing(np.maximum(np.abs(x), np.abs(y)) + offset).astype(np.float64)
    delta = np.abs(x.astype(np.float64) - y.astype(np.float64))
    return float(delta.max()) if np.all(delta <= bound) else None


def rounding_text(delta: float, scale: float, zero_point: int, source: str) -> str:
    return (f"every value is within 1 ulp of |value| + |zero_point x scale| (largest |B - A| {delta:.3g}; scale "
            f"{scale:.6g}, zero_point {zero_point} from {source}): another runtime's dequantize rounding "
            "(q*s - zp*s against s*(q - zp): docs/pitfalls.md), tolerated")


# --- the model: packages, executables, link checks -----------------------------------------------------------

@functools.lru_cache(maxsize=8)
def _packages(path: str, _mtime: float):
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model

    try:
        return tuple(read_packages(open_model(path)))
    except ForensicsError:
        return ()


def packages(model: str | None):
    """The model's Edge TPU packages (empty without a model, or for a CPU model)."""
    if model is None:
        return ()
    try:
        return _packages(os.path.abspath(model), os.path.getmtime(model))
    except OSError:
        return ()


def dequantize_source(model: str | None, tensor: str):
    """(scale, zero_point, where) of the tensor the model's DEQUANTIZE op that produces `tensor` reads, or None."""
    if model is None:
        return None
    try:
        return _dequantize_sources(os.path.abspath(model), os.path.getmtime(model)).get(tensor)
    except OSError:
        return None


@functools.lru_cache(maxsize=8)
def _dequantize_sources(path: str, _mtime: float) -> dict:
    from forensics.model.tflite.model import open_model

    out = {}
    try:
        with open_model(path) as model:
            tensors = model.main.tensors
            for op in model.main.operators:
                if op.op != "DEQUANTIZE" or not op.inputs or not op.outputs:
                    continue
                source, target = tensors[op.inputs[0]], tensors[op.outputs[0]]
                if source.scale is not None:
                    out[target.name] = (float(source.scale), int(source.zero_point or 0),
                                        f"the model's DEQUANTIZE of {source.name}")
    except (ForensicsError, AttributeError, TypeError):
        return {}
    return out


_CACHING_PARAMS = re.compile(r"exe(\d+)_parameter_caching$")


def executables_of(run) -> set[int]:
    """The executables whose instruction bitstreams the run holds (instructions `E_K`)."""
    bitstreams = [b for b in run.buffers if b.stage == "instructions"]
    if not bitstreams:
        return set()
    from forensics.link.bugs import stage_executable

    out = set()
    for b in bitstreams:
        where = stage_executable(b.tensor)
        if where is not None:
            out.add(where[0])
    return out


def not_submitted(run_a, run_b, model: str | None) -> dict:
    """{executable: finding} for every PARAMETER_CACHING executable whose bitstream A holds and B holds none of
    (the type from the model, else from A's params named `..._exeE_parameter_caching`). A run B that dumped no
    bitstream at all says nothing of what it submitted: a driver that dumps fewer stages is no finding."""
    held_b = executables_of(run_b)
    missing = executables_of(run_a) - held_b
    if not missing or not held_b:
        return {}
    caching = {e.index for p in packages(model) for e in p.executables if e.type == "PARAMETER_CACHING"}
    if not caching:
        caching = {int(m.group(1)) for b in run_a.buffers if b.stage == "params"
                   for m in [_CACHING_PARAMS.search(b.tensor)] if m}
    out = {}
    for index in sorted(missing & caching):
        out[index] = finding(
            "not_submitted",
            f"executable {index} (PARAMETER_CACHING) was never submitted: A's run holds its bitstream "
            f"(instructions:{index}_K), B's none; without the caching run the weights are never loaded into the "
            "chip and every inference computes on whatever the cache held",
            "run the parameter caching executable once before the first inference (forensics link MODEL --plan "
            "lists the order)", executable=index, type="PARAMETER_CACHING")
    return out


def link_check(run_b, entry_b, model: str | None):
    """Seam: the link check of B's `params` or `instructions` buffer against run A's model
    (forensics.link.bugs.check_stage, the link part's): its LinkCheck, or None without a model to check."""
    if model is None or not packages(model):
        return None
    from forensics.link.bugs import check_stage

    try:
        return check_stage(run_b, entry_b, model=model)
    except (ForensicsError, OSError):
        return None


# --- the CPU tail (forensics.decode.explain) -----------------------------------------------------------------

def explain_tail(run_a, run_b, model: str | None):
    """The CPU tail's analysis of two runs (forensics.decode.explain.explain_tail): B's dequantized stage
    replayed from B's own tensor stage and B's detections from B's own dequantized stage (or tensor stage), with
    the decode constants of `model` (run A's: anchors, PostProcess options, the outputs' quantization). Returns
    the TailExplanation, or None when there is no model or the runs do not hold the tail's buffers."""
    if model is None:
        return None
    from forensics.decode.explain import explain_tail as replay
    from forensics.runs.interop import tail_arrays

    try:
        deps = _model_deps(os.path.realpath(model))
        return replay(deps, tail_arrays(run_a, deps), tail_arrays(run_b, deps))
    except (ForensicsError, OSError, ValueError):
        return None


@functools.lru_cache(maxsize=4)
def _model_deps(path: str):
    from forensics.decode.model_deps import deps_from_model

    return deps_from_model(path)[0]


# What each explanation of the tail is, as a finding of compare's (kinds that need no finding: the stage is the
# same, follows from upstream, or the search found nothing it knows).
TAIL_FINDINGS = {"option": "postprocess_option", "anchors": "anchors", "dequantize_swapped": "dequantize_swapped",
                 "dequantize_parameter": "dequantize_parameter", "rounding": "runtime_rounding"}
TAIL_HINTS = {"postprocess_option": "give the PostProcess op the model's options (the driver's host code, or the "
                                    "tail model it runs)",
              "anchors": "decode with the model's own anchors (forensics extract MODEL writes them)",
              "dequantize_swapped": "dequantize each output with its own scale and zero point",
              "dequantize_parameter": "dequantize with the model's scale and zero point (forensics graph MODEL)",
              "runtime_rounding": "harmless: another runtime's dequantize rounding (docs/pitfalls.md)"}


def tail_finding(explanation):
    """One stage's explanation of the tail as a finding (None when it needs none)."""
    kind = TAIL_FINDINGS.get(getattr(explanation, "kind", None))
    if kind is None:
        return None
    return finding(kind, explanation.sentence, TAIL_HINTS[kind], explanation=explanation.to_dict())


# --- the driver's log (the run's logs, forensics.buffer.fingerprint) -------------------------------------------

def run_logs(run) -> list[str]:
    """The paths of the driver logs a run holds (forensics.runs.run.Run.log_evidence; a remote run's logs are not
    read)."""
    if getattr(run, "files", None) is not None:
        return []
    return [path for _, path in run.log_evidence().logs]


# The stage each buffer name of the driver's logs stands for (forensics.io.textdump.DRIVER_BUFFERS: `[INPUT-CHK]`
# is the input, `[DPC-OUT]` the output, `[BS-DUMP]` the instruction bitstream), where the run has one buffer there.
_DRIVER_STAGES = {"input": "input", "output": "raw", "bitstream": "instructions", "param_bitstream": "params"}


def log_buffers(run) -> dict:
    """{name a log may give a buffer: BufferEntry} for the buffers the driver provided: Run.log_evidence's
    labels (labels, tensor names, a stage's only buffer, the tags a log's manifest entry maps), then the
    driver's own buffer names for a stage with one provided buffer."""
    by_label = {b.label: b for b in run.buffers}
    out = {tag: by_label[label] for tag, label in run.log_evidence().labels.items() if label in by_label}
    for name, stage in _DRIVER_STAGES.items():
        provided = [b for b in run.buffers if b.stage == stage and not b.derived]
        if len(provided) == 1:
            out.setdefault(name, provided[0])
    return out


def log_disagreements(run) -> list[dict]:
    """The logged fingerprint values of a run's log(s) that disagree with the run's buffers: each {"label",
    "stage", "tensor", "log", "line" (its number), "text" (the line), "what", "expected", "found"}; the check
    is forensics.buffer.fingerprint.check_log's."""
    out = []
    for log in run_logs(run):
        out.extend(_check_log(run, log))
    return out


def _check_log(run, log: str) -> list[dict]:
    from forensics.buffer.fingerprint import check_log

    named = log_buffers(run)
    named.update(_sized(run, log, named))
    files = {name: run.file_path(entry) for name, entry in named.items()}
    by_file = {os.path.realpath(path): named[name] for name, path in files.items()}
    try:
        checks = check_log(log, files).checks
    except InputError:
        return []
    out = []
    for check in checks:
        entry = by_file.get(os.path.realpath(check.file))
        if check.match or entry is None:
            continue
        out.append({"label": entry.label, "stage": entry.stage, "tensor": entry.tensor, "log": log,
                    "line": check.line, "text": check.text[:300], "what": check.label,
                    "expected": check.expected, "found": check.found})
    return out


def _sized(run, log: str, named: dict) -> dict:
    """The driver's own buffer names (`input` of [INPUT-CHK], ...) of a stage that holds several buffers, each
    resolved to the one buffer of the size the log states for it (the segment's three inputs: the one the
    driver checked is the one of its `over N bytes`)."""
    from forensics.buffer.fingerprint import check_log

    out = {}
    for name, stage in _DRIVER_STAGES.items():
        provided = [b for b in run.buffers if b.stage == stage and not b.derived and run.has_file(b)]
        if name in named or len(provided) < 2:
            continue
        sized = []
        for entry in provided:
            try:
                checks = check_log(log, {name: run.file_path(entry)}).checks
            except InputError:
                return out
            if not checks:
                break  # the log says nothing of this name
            if any(c.label == "size" and c.match for c in checks):
                sized.append(entry)
        if len(sized) == 1:
            out[name] = sized[0]
    return out


def logged_finding(items: list[dict]):
    first = items[0]
    more = f" (and {len(items) - 1} more logged value{'s' if len(items) > 2 else ''})" if len(items) > 1 else ""
    return finding("logged_fingerprint",
                   f"the driver's log line {first['line']} ({os.path.basename(first['log'])}: {first['text']!r}) "
                   f"says {first['what']} {first['expected']}, the dumped buffer holds {first['found']}{more}: the "
                   "bytes the device read or wrote are not the bytes dumped",
                   "the buffer changed between the transfer and the dump: wait for the DMA's completion before the "
                   "transfer is started / the buffer is read (and dump it at the moment the log line is printed)",
                   lines=[{k: i[k] for k in ("log", "line", "text", "what", "expected", "found")} for i in items])


# --- the image an input was made from ------------------------------------------------------------------------

RESAMPLINGS = ("lanczos", "bilinear", "bicubic", "nearest", "box", "hamming")


def image_entry(run):
    """The run's `image` stage buffer (the image its input was made from), or None."""
    found = [b for b in run.buffers if b.stage == "image"]
    return found[0] if len(found) == 1 else None


def resize_explains(image_path: str, input_entry, data_b: bytes, resampling_a: str | None) -> str | None:
    """The resampling (pycoral's set_resized_input with another filter) that turns the image into B's input
    bytes exactly, when it is not A's; None when none does (or Pillow is not installed)."""
    from forensics.core.errors import DependencyError
    from forensics.runs.capture import prepare_image

    shape = input_entry.shape
    if not shape or len(shape) != 4:
        return None
    for method in RESAMPLINGS:
        if method == resampling_a:
            continue
        try:
            prepared = prepare_image(image_path, shape, input_entry.dtype or "uint8", method)
        except (DependencyError, InputError):
            return None
        if prepared.array.tobytes() == data_b:
            return method
    return None
