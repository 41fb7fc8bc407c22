"""A run's buffers to and from other tools' formats: NumPy .npz and Polygraphy's RunResults JSON.

Names: every buffer is exported under its label (`input`, `raw:convert_scores`, `tensor:Squeeze1`), as a
typed array (dtype and shape from the manifest; a flat uint8 array when the manifest says neither or they do
not fit the size). Importing reads the same names back: `STAGE:TENSOR` or a stage alone; any other name
(a Polygraphy runner's output names) becomes a `tensor` buffer of that name.

Polygraphy's RunResults JSON (what `polygraphy run --save-outputs` writes and `--load-outputs` reads):
`{"lst": [[runner_name, [iteration, ...]], ...], "polygraphy_class": "RunResults"}`, an iteration being
`{"outputs": {name: {"values": {"array": <base64 of an .npy file>, "polygraphy_class": "ndarray"},
"polygraphy_class": "LazyArray"}}, "runtime": null, "runner_name": ..., "polygraphy_class": "IterationResult"}`.
Written here with the standard library and numpy's own .npy writer; read back the same way (one runner,
the first iteration), never with pickle.
"""

from __future__ import annotations

import base64
import io
import json
import os
import zipfile
from dataclasses import dataclass, field

import numpy as np

from forensics.core import serial
from forensics.core.errors import InputError
from forensics.runs.run import STAGES, BufferCheck, Run, load_run, saved_run, verify_run, write_run
from forensics.compare.stats import element_dtype

FORMATS = ("npz", "polygraphy")
MAX_JSON = 1 << 30
_CLASS = "polygraphy_class"


def _array(run: Run, entry) -> np.ndarray:
    data = np.fromfile(run.file_path(entry), dtype=np.uint8)
    try:
        dtype = element_dtype(entry.dtype or "uint8")
    except TypeError:
        dtype = np.dtype(np.uint8)
    if data.size % dtype.itemsize:
        return data
    values = data.view(dtype)
    if entry.shape is not None and int(np.prod(entry.shape)) == values.size:
        values = values.reshape(entry.shape)
    return values


def run_arrays(run) -> dict[str, np.ndarray]:
    """label -> typed array, in the run's order."""
    run = run if isinstance(run, Run) else load_run(run)
    out = {}
    for entry in run.buffers:
        path = run.file_path(entry)
        if not os.path.isfile(path):
            raise InputError(f"buffer {entry.label} is missing", path)
        out[entry.label] = _array(run, entry)
    return out


_KERNEL_OUTPUTS = ("boxes", "classes", "scores", "num_detections")  # TFLite_Detection_PostProcess's output order


def tail_arrays(run, deps=None):
    """A run's CPU tail as forensics.decode.explain.TailArrays: the tensor stage's box encodings and scores
    (the driver's own: a derived relayout is not read), the dequantized stage's values and the detections, found
    by `role` (what capture and ingest --model record), else by the model's tensor names (`deps`, DecodeDeps),
    the shapes ([..., 4] boxes, [..., classes + 1] scores) and the kernel's output order."""
    from forensics.decode.explain import Detections, TailArrays

    run = run if isinstance(run, Run) else load_run(run)

    def pick(stage, role, name=None, columns=None):
        entries = [e for e in run.buffers if e.stage == stage and not e.derived]
        for match in (lambda e: e.role == role, lambda e: name is not None and e.tensor == name,
                      lambda e: columns is not None and e.role is None and e.shape is not None
                      and len(e.shape) >= 2 and e.shape[-1] == columns):
            found = [e for e in entries if match(e)]
            if len(found) == 1:
                return _array(run, found[0])
        return None

    columns = deps.score_columns if deps is not None else None
    names = (deps.boxes.name, deps.scores.name) if deps is not None else (None, None)
    detections = None
    outputs = [e for e in run.buffers if e.stage == "detections"]
    by_role = {e.role: e for e in outputs if e.role in _KERNEL_OUTPUTS}
    ordered = [by_role.get(r) for r in _KERNEL_OUTPUTS] if len(by_role) == 4 else (outputs if len(outputs) == 4
                                                                                       else None)
    if ordered:
        detections = Detections.of(*(_array(run, e).view(np.float32) if e.dtype is None else _array(run, e)
                                     for e in ordered))
    return TailArrays(boxes=pick("tensor", "boxes", names[0]), scores=pick("tensor", "scores", names[1]),
                      boxes_dequantized=pick("dequantized", "boxes", columns=4),
                      scores_dequantized=pick("dequantized", "scores", columns=columns), detections=detections)


def _no_changed(docs: list) -> tuple:
    """A saved export's changed buffers: their documents name no file, so none reads back into a BufferCheck."""
    if docs:
        raise TypeError("an export of changed buffers cannot be read back (their checks name no file)")
    return ()


@dataclass(frozen=True)
class ExportResult(serial.Serial):
    run: str
    format: str
    output: str
    # (name, dtype, shape), written as {"name", "dtype", "shape"}
    arrays: tuple[tuple[str, str, tuple[int, ...]], ...] = field(metadata=serial.json(
        encode=lambda arrays: [{"name": n, "dtype": d, "shape": list(s)} for n, d, s in arrays],
        decode=lambda docs: tuple((d["name"], d["dtype"], tuple(d["shape"])) for d in docs)))
    # buffers whose bytes no longer match the manifest (allow_changed)
    changed: tuple[BufferCheck, ...] = field(default=(), metadata=serial.json(
        encode=lambda checks: [c.to_dict() for c in checks], decode=_no_changed))

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(f"{c.message(self.run)}: exported as it is now" for c in self.changed)


def _npy_bytes(array: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, array, allow_pickle=False)
    return buf.getvalue()


def polygraphy_document(arrays: dict[str, np.ndarray], runner: str) -> dict:
    outputs = {name: {"values": {"array": base64.b64encode(_npy_bytes(a)).decode("ascii"), _CLASS: "ndarray"},
                      _CLASS: "LazyArray"} for name, a in arrays.items()}
    iteration = {"outputs": outputs, "runtime": None, "runner_name": runner, _CLASS: "IterationResult"}
    return {"lst": [[runner, [iteration]]], _CLASS: "RunResults"}


def member_name(label: str) -> str:
    """An .npz member name for a buffer label that no unzip can turn into a path outside its target, whatever
    the manifest holds: '%', backslashes, control characters, a leading '/' and '.' / '..' parts are written as
    %XX (reversible); the labels of ordinary runs (`raw:convert_scores`, `tensor:Conv/Relu6`) are unchanged."""
    def quote(chars: str) -> str:
        return "".join(f"%{b:02X}" for b in chars.encode("utf-8"))

    text = "".join(quote(c) if c in "%\\" or ord(c) < 0x20 or ord(c) == 0x7F else c for c in label)
    if any(part in ("", ".", "..") for part in text.split("/")):  # one flat name: every '/' and '.' quoted
        text = "".join(quote(c) if c in "/." else c for c in text)
    return text


def export_run(run, fmt: str, output, *, allow_changed: bool = False) -> ExportResult:
    """Write the run's buffers as `fmt` (npz or polygraphy) to `output`, atomically. A buffer whose bytes no
    longer match the manifest (what compare shows CHANGED) is refused, nothing written, unless `allow_changed`
    (then it is exported as it is now, and the result says which)."""
    from forensics.io.outputs import atomic_write

    if fmt not in FORMATS:
        raise InputError(f"must be one of {', '.join(FORMATS)}, got {fmt!r}", param="format", value=fmt)
    run = run if isinstance(run, Run) else load_run(run)
    checks = verify_run(run)
    missing = [c for c in checks if c.status == "missing"]
    if missing:
        raise InputError(missing[0].message(run.path))
    changed = tuple(c for c in checks if not c.ok)
    if changed and not allow_changed:
        more = f" (and {len(changed) - 1} more)" if len(changed) > 1 else ""
        first = changed[0].message(run.path).replace("{", "{{").replace("}", "}}")  # a template (params=True)
        raise InputError(f"{first}{more}; nothing was exported (the run is not what was captured): give "
                         "{allow_changed} to export the bytes as they are now", params=True)
    arrays = run_arrays(run)
    output = os.fspath(output)
    try:
        if fmt == "npz":
            with atomic_write(output, "wb") as fh:
                np.savez(fh, **{member_name(name): a for name, a in arrays.items()})
        else:
            text = json.dumps(polygraphy_document(arrays, run.source), indent=1)
            with atomic_write(output, "w") as fh:
                fh.write(text)
    except OSError as exc:
        raise InputError(f"cannot write: {exc.strerror or exc}", output) from None
    name = member_name if fmt == "npz" else str
    return ExportResult(run.path, fmt, output,
                        tuple((name(n), a.dtype.name, tuple(a.shape)) for n, a in arrays.items()), changed)


# --- reading -----------------------------------------------------------------------------------------------

def _load_npy(data: bytes, name: str, path: str) -> np.ndarray:
    try:
        array = np.load(io.BytesIO(data), allow_pickle=False)
    except (ValueError, OSError, EOFError) as exc:
        raise InputError(f"array {name!r} is not a valid .npy payload ({exc})", path) from None
    if not isinstance(array, np.ndarray) or array.dtype.hasobject:
        raise InputError(f"array {name!r} is not a numeric array", path)
    return array


def read_polygraphy(path) -> tuple[str, dict[str, np.ndarray]]:
    """(runner name, outputs) of the first runner's first iteration of a RunResults JSON file."""
    path = os.fspath(path)
    from forensics.io.dump import read_small_file
    from forensics.io.jsonio import loads

    # the one way a whole file is opened and sized, and the one safe JSON reader (depth, number lengths)
    doc = loads(read_small_file(path, MAX_JSON, "Polygraphy RunResults JSON"), path)
    if not isinstance(doc, dict) or doc.get(_CLASS) != "RunResults" or not isinstance(doc.get("lst"), list):
        raise InputError("not a Polygraphy RunResults file (expected {\"lst\": [...], \"polygraphy_class\": "
                         "\"RunResults\"})", path)
    if not doc["lst"]:
        raise InputError("the RunResults hold no runner", path)
    entry = doc["lst"][0]
    if not (isinstance(entry, list) and len(entry) == 2 and isinstance(entry[0], str) and isinstance(entry[1], list)
            and entry[1] and isinstance(entry[1][0], dict) and isinstance(entry[1][0].get("outputs"), dict)):
        raise InputError("lst[0] must be [runner_name, [{\"outputs\": {...}}, ...]]", path)
    out = {}
    for name, value in entry[1][0]["outputs"].items():
        payload = value.get("values", value) if isinstance(value, dict) else None
        text = payload.get("array") if isinstance(payload, dict) else None
        if not isinstance(text, str):
            raise InputError(f"output {name!r} has no base64 \"array\"", path)
        try:
            data = base64.b64decode(text.encode("ascii"), validate=True)
        except (ValueError, UnicodeEncodeError):
            raise InputError(f"output {name!r}: \"array\" is not base64", path) from None
        out[name] = _load_npy(data, name, path)
    if not out:
        raise InputError("the first iteration has no outputs", path)
    return entry[0], out


@dataclass(frozen=True)
class ArraysIngest:
    run: Run
    added: tuple[str, ...]
    source_format: str

    # kept: the run is written as its path and buffers, not the whole Run
    def to_dict(self) -> dict:
        return {"run": self.run.path, "format": self.source_format, "added": list(self.added),
                "buffers": [b.to_dict() for b in self.run.buffers]}

    @classmethod
    def from_dict(cls, doc: dict) -> "ArraysIngest":
        """A saved ingest --from: the run as its document lists it (forensics.runs.run.saved_run)."""
        return cls(saved_run(doc), tuple(doc["added"]), doc["format"])


def _stage_and_tensor(name: str) -> tuple[str, str]:
    stage, sep, tensor = name.partition(":")
    if stage in STAGES:
        return stage, (tensor if sep and tensor else stage)
    return "tensor", name


def _little_endian_chunks(dump):
    """A dump's data bytes in windows, a big-endian array's values byte-swapped to the run's little-endian."""
    dtype = np.dtype(dump.npy_dtype)
    for _, view in dump.iter_chunks(chunk_size=(8 << 20) // dtype.itemsize * dtype.itemsize):
        yield view if dtype.byteorder != ">" else np.frombuffer(view, dtype).byteswap().view(np.uint8)


def ingest_arrays(run_path, fmt: str, path, *, source: str | None = None, replace: bool = False) -> ArraysIngest:
    """Add the arrays of an npz / Polygraphy file to the run at `run_path` (created when missing); a buffer the
    run holds is replaced only with `replace`."""
    if fmt not in FORMATS:
        raise InputError(f"must be one of {', '.join(FORMATS)}, got {fmt!r}", param="format", value=fmt)
    if fmt == "npz":
        from forensics.io.dump import npz_arrays

        arrays = npz_arrays(path)  # {name: Dump}: headers checked now, data streamed into the run below
        runner = None
    else:
        runner, arrays = read_polygraphy(path)
    source = source or runner
    if not source:
        raise InputError("a run needs a source name: give {source:NAME}", params=True)
    added = []
    seen = set()
    with write_run(run_path, source, add=True, replace_buffers=replace) as builder:
        for name, array in arrays.items():
            stage, tensor = _stage_and_tensor(name)
            if (stage, tensor) in seen:
                raise InputError(f"two arrays name the buffer {stage}:{tensor}", path)
            seen.add((stage, tensor))
            if not isinstance(array, np.ndarray):  # an .npz member: copied in windows, never whole in memory
                builder.add_chunks(stage, tensor, _little_endian_chunks(array), shape=array.npy_shape,
                                   dtype=np.dtype(array.npy_dtype).newbyteorder("<").name)
                added.append(f"{stage}:{tensor}" if tensor != stage else stage)
                continue
            array = np.ascontiguousarray(array)
            if array.dtype.byteorder == ">":
                array = array.astype(array.dtype.newbyteorder("<"))
            builder.add_bytes(stage, tensor, array.reshape(-1).view(np.uint8), dtype=array.dtype.name,
                              shape=array.shape)
            added.append(f"{stage}:{tensor}" if tensor != stage else stage)
    return ArraysIngest(builder.run, tuple(added), fmt)  # as written (another writer may add to it later)
