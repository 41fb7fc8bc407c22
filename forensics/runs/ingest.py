"""Bring a driver's dumps into a run: `STAGE[:TENSOR]=FILE` specs copied in with size and CRC32.

Without `:TENSOR` a buffer is named after its stage, so `input=FILE` in two runs compares. With a model, the
manifest records its path and sha256, tensors get their dtype/shape/quantization, and a `raw` buffer of an Edge
TPU output layer is relayouted (libedgetpu's relayout, forensics.model.tflite.relayout) into the `tensor` stage,
marked `derived_from`; when the driver gave that tensor (now or before), the driver's stays in `tensor` and the
relayout goes beside it, into `relayouted`. A buffer the run holds is replaced only with `replace`. A dump's
sidecar JSON (forensics.io.dump) fills in what the model does not say. `image=FILE` is the picture the input was
made from (its width and height read when Pillow is installed), `log[:NAME]=FILE` a driver's log: both stored
as the bytes given.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import InputError
from forensics.runs.run import (DERIVED_HOME, STAGE_ALIASES, STAGES, Run, check_tensor_name, model_record, saved_run,
                                write_run)


@dataclass(frozen=True)
class IngestSpec:
    stage: str
    tensor: str
    path: str

    @property
    def label(self) -> str:
        return self.stage if self.tensor == self.stage else f"{self.stage}:{self.tensor}"


LOG = "log"  # `log[:NAME]=FILE`: not a stage of the inference, a log of the driver that made it


def parse_spec(text: str) -> IngestSpec:
    """`raw:convert_scores=dump.bin` -> IngestSpec("raw", "convert_scores", "dump.bin"); `log=dbgview.log` ->
    IngestSpec("log", "log", "dbgview.log")."""
    left, sep, path = str(text).partition("=")
    if not sep or not left or not path:
        raise InputError(f"expected STAGE[:TENSOR]=FILE (e.g. input=input.bin, raw:convert_scores=scores.bin), "
                         f"got {text!r}")
    stage, _, tensor = left.partition(":")
    stage = STAGE_ALIASES.get(stage, stage)  # link: parameters -> params
    if stage not in STAGES and stage != LOG:
        raise InputError(f"unknown stage {stage!r} in {text!r} (stages: {', '.join(STAGES)}; or log for the "
                         "driver's log)")
    if stage in DERIVED_HOME.values():
        raise InputError(f"{stage} holds what forensics derives (ingest --model relayouts raw:LAYER into it): "
                         f"give the driver's own relayout as tensor:LAYER=FILE ({text!r})")
    if ":" in left and not tensor:
        raise InputError(f"empty tensor name in {text!r}")
    try:
        check_tensor_name(tensor or stage)
    except InputError as exc:
        raise InputError(f"{exc} in {text!r}") from None
    return IngestSpec(stage, tensor or stage, path)


@dataclass(frozen=True)
class IngestResult:
    run: Run
    created: bool
    added: tuple[str, ...]
    replaced: tuple[str, ...]
    relayouted: tuple[str, ...]
    derived: tuple[str, ...] = ()  # labels of the buffers forensics derived (tensor:X or relayouted:X)

    # kept: the run is written as its path, source, model, buffers and logs, not the whole Run
    def to_dict(self) -> dict:
        return {"run": self.run.path, "source": self.run.source, "created": self.created,
                "added": list(self.added), "replaced": list(self.replaced), "relayouted": list(self.relayouted),
                "derived": list(self.derived), "model": self.run.model,
                "buffers": [b.to_dict() for b in self.run.buffers], "logs": [log.to_dict() for log in self.run.logs]}

    @classmethod
    def from_dict(cls, doc: dict) -> "IngestResult":
        """A saved ingest: the run as its document lists it (forensics.runs.run.saved_run)."""
        return cls(saved_run(doc), bool(doc["created"]), tuple(doc["added"]), tuple(doc["replaced"]),
                   tuple(doc["relayouted"]), tuple(doc.get("derived", ())))


def _tensor_meta(model, name: str) -> dict:
    try:
        t = model.tensor(name)
    except InputError:
        return {}
    meta = {"dtype": t.dtype, "shape": tuple(t.shape)}
    if t.scale is not None:
        meta["scale"] = float(t.scale)
        meta["zero_point"] = int(t.zero_point or 0)
    from forensics.model.tflite.graph import postprocess_info

    pp = postprocess_info(model)
    if pp is not None:
        role = {pp.boxes.name: "boxes", pp.scores.name: "scores"}.get(name)
        if role:
            meta["role"] = role
    return meta


def _check_size(spec: IngestSpec, meta: dict, dump) -> None:
    """A tensor's dump (its data bytes: a slice, a text dump's, an array's) must hold exactly shape x dtype
    bytes when the model or the sidecar says both."""
    from forensics.model.tflite.model import NUMPY_DTYPES

    shape, dtype = meta.get("shape"), meta.get("dtype")
    if shape is None or dtype not in NUMPY_DTYPES:
        return
    import numpy as np

    want = int(np.prod([int(d) for d in shape], dtype=np.int64)) * np.dtype(NUMPY_DTYPES[dtype]).itemsize
    size = dump.size
    if size != want:
        raise InputError(f"is {size} bytes; {spec.label} is {list(shape)} {dtype}, {want} bytes", spec.path)


def _array_meta(dump, spec: IngestSpec) -> dict:
    """dtype and shape of a .npy / .npz array dump (its header says them), else nothing. A run holds numbers:
    an array of strings or objects is refused here, before anything is written (a reader refuses the run)."""
    if dump.npy_dtype is None:
        return {}
    import numpy as np

    from forensics.io.dump import RUN_DTYPES, is_numeric_dtype, run_dtype

    dtype = np.dtype(dump.npy_dtype)
    name = run_dtype(dtype.str)
    if name is None:
        what = "not numbers" if not is_numeric_dtype(dtype.str) else "not a dtype a run can name"
        raise InputError(f"holds a {dtype.str!r} array, {what}; a run's buffers are little-endian "
                         f"{', '.join(RUN_DTYPES)}, so {spec.label} cannot be ingested", spec.path)
    return {"dtype": name, "shape": tuple(dump.npy_shape)}


def _sidecar_meta(path: str) -> dict:
    from forensics.io.dump import load_sidecar, run_dtype

    meta = load_sidecar(path)
    if meta is None:
        return {}
    out = {"dtype": run_dtype(meta.dtype), "shape": meta.shape, "scale": meta.scale, "zero_point": meta.zero_point,
           "record_size": meta.record_size}
    if meta.pad_lanes:
        out["pad_lanes"] = list(meta.pad_lanes)
    if meta.fields:
        out["fields"] = list(meta.fields)
    return {k: v for k, v in out.items() if v is not None}


def _check_specs(specs: list) -> None:
    """Refuse what no run can hold before anything is read: nothing, a buffer given twice, two images, an
    empty file."""
    if not specs:
        raise InputError("nothing to ingest: give STAGE[:TENSOR]=FILE")
    seen = set()
    for s in specs:
        if (s.stage, s.tensor) in seen:
            raise InputError(f"{s.label} is given twice")
        seen.add((s.stage, s.tensor))
    if sum(s.stage == "image" for s in specs) > 1:
        raise InputError("a run holds one image (the one its input was made from)")
    from forensics.io.dump import check_readable_file, npz_path

    for s in specs:
        if check_readable_file(npz_path(s.path)[0] if s.stage not in ("image", LOG) else s.path) == 0:
            raise InputError(f"empty {'log' if s.stage == LOG else 'dump'} (0 bytes)", s.path)


def _opened_dumps(specs: list, opened, dump_options: dict) -> list:
    """(spec, meta, dump) of every spec, each dump opened and checked before the first byte is written."""
    from forensics.io.dump import open_dump

    dumps = []
    for s in specs:
        if s.stage in ("image", LOG):
            dumps.append((s, image_meta(s.path) if s.stage == "image" else {}, None))
            continue
        # opened once (a text dump is decoded here) and handed to every step below
        dump = open_dump(s.path, allow_empty=True, use_sidecar=False, **dump_options)
        meta = {**_array_meta(dump, s), **_sidecar_meta(s.path)}
        if opened is not None and s.stage in ("input", "tensor", "dequantized"):
            meta.update(_tensor_meta(opened, s.tensor))
        if s.stage == "raw":
            meta.pop("shape", None)  # a sidecar's tensor shape is not the raw buffer's
        else:
            _check_size(s, meta, dump)
        dumps.append((s, meta, dump))
    return dumps


def _write_dumps(builder, dumps: list) -> list:
    """Add what the driver provided (logs, the image, the dumps) to the run; the labels added."""
    added = []
    for s, meta, dump in dumps:
        if s.stage == LOG:
            builder.add_log(s.tensor, s.path, from_file=os.path.abspath(s.path))
        elif s.stage == "image":  # the picture's own bytes, never decoded as a text dump
            builder.add_file("image", s.tensor, s.path, from_file=os.path.abspath(s.path), **meta)
            builder.input_image = builder.input_image or s.path
        else:
            _add_dump(builder, s, meta, dump)
        added.append(s.label)
    return added


def _check_model(existing, record, model, run_path) -> None:
    if record and existing is not None and existing.model_sha256 and existing.model_sha256 != record["sha256"]:
        raise InputError(f"the run was made with another model ({existing.model.get('path')}, sha256 "
                         f"{existing.model_sha256[:12]}...), not {model}", run_path)


def ingest(run_path, source: str, specs, *, model=None, dump_options: dict | None = None,
           replace: bool = False) -> IngestResult:
    """Create the run at `run_path` or add to it (atomically: the old run stays whole until the new one is in).

    `dump_options` (offset, length, gap_fill) go to open_dump for every dump: a text dump is stored as the
    bytes it shows and a slice as its bytes, and the manifest records `source_format` and `slice`. A buffer or
    log the run already holds is refused (nothing written) unless `replace`."""
    dump_options = dict(dump_options or {})
    run_path = os.fspath(run_path)
    specs = [s if isinstance(s, IngestSpec) else parse_spec(s) for s in specs]
    _check_specs(specs)
    record = model_record(model) if model is not None else None
    opened = None
    if model is not None:
        from forensics.model.tflite.model import open_model

        opened = open_model(model)
    relayouted, derived = [], []
    try:
        if opened is not None:  # a tensor named on the command line must be the model's (a typo, else)
            for s in specs:
                if s.stage in ("input", "tensor", "dequantized") and s.tensor != s.stage:
                    opened.tensor(s.tensor)
        # add=True: the run is created when missing, else read under the writers' lock, so that two ingests
        # into one run each start from the other's manifest and neither loses a buffer
        with write_run(run_path, source, add=True, replace_buffers=replace) as builder:
            existing = builder.base
            created = existing is None
            _check_model(existing, record, model, run_path)
            if record is not None:
                builder.model = record
            dumps = _opened_dumps(specs, opened, dump_options)
            added = _write_dumps(builder, dumps)  # what the driver provided first, then what forensics derives
            for s, meta, dump in dumps:
                if s.stage == "raw" and opened is not None:
                    entry = _relayout_into(builder, opened, s, dump)
                    if entry is not None:
                        relayouted.append(s.tensor)
                        derived.append(entry.label)
            replaced = list(builder.replaced)
    finally:
        if opened is not None:
            opened.close()
    # the run as this ingest wrote it (another writer may have added to it since: never a buffer we did not write)
    return IngestResult(builder.run, created, tuple(added), tuple(replaced), tuple(relayouted), tuple(derived))


def image_meta(path) -> dict:
    """An image's width, height, format and mode from its header (Pillow, when installed). A file Pillow does
    not read as an image is refused: `image=` holds the picture the input was made from."""
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:  # the bytes are kept all the same; the geometry is what Pillow would have said
        return {}
    path = os.fspath(path)
    try:
        with Image.open(path) as img:
            return {"width": int(img.size[0]), "height": int(img.size[1]), "format": img.format, "mode": img.mode}
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise InputError(f"is not an image Pillow reads ({why}); image=FILE is the picture the input was made "
                         "from", path) from None


def _add_dump(builder, spec: IngestSpec, meta: dict, dump) -> None:
    """Copy a binary dump as it is; store a text dump's decoded bytes or a slice's bytes, saying so."""
    if dump.size == 0:
        from forensics.io.dump import npz_path

        raise InputError("empty dump (0 data bytes)", npz_path(spec.path)[0])
    if dump.source_format == "binary" and dump.slice is None:
        builder.add_file(spec.stage, spec.tensor, spec.path, from_file=os.path.abspath(spec.path), **meta)
        return
    # a text dump, a .npy / .npz array (its header is no data) or a slice: the data bytes it holds
    extra = {"source_format": dump.source_format} if dump.text is not None or dump.npy_dtype else {}
    if dump.slice is not None:
        extra["slice"] = dump.slice
    builder.add_dump(spec.stage, spec.tensor, dump, from_file=os.path.abspath(dump.path),
                      **extra, **meta)


def _relayout_into(builder, model, spec: IngestSpec, dump):
    """Add forensics' relayout of a raw dump of the Edge TPU output layer NAME, derived from `raw:NAME`: as
    `tensor:NAME`, or `relayouted:NAME` when the run holds the driver's own tensor (RunBuilder). The entry, or
    None when the model has no such layer."""
    import numpy as np

    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.relayout import layer_map, relayout

    layer = None
    for package in read_packages(model):
        layer = package.output_layer(spec.tensor)
        if layer is not None:
            break
    if layer is None:
        return None
    from forensics.core.errors import FormatError

    try:
        m = layer_map(layer, tensor_bytes=model.tensor(spec.tensor).size_bytes)
    except FormatError as exc:
        raise exc.with_path(model.path) from None
    if dump.size != m.raw_size:
        raise InputError(f"is {dump.size} bytes; the Edge TPU writes {spec.tensor!r} as {m.raw_size} bytes (raw) "
                         f"and the tensor is {m.tensor_size} bytes: ingest it as tensor:{spec.tensor}=FILE if it "
                         "is already relayouted", spec.path)
    tensor = relayout(dump.read(0, dump.size), m)
    return builder.add_bytes("tensor", spec.tensor, np.ascontiguousarray(tensor), derived_from=spec.label,
                             **_tensor_meta(model, spec.tensor))
