"""Capture a run from a TFLite runtime: input bytes, the accelerator's (or the decode's) tensors, dequantized
tensors and the detections, written as a run directory (forensics.runs.run).

- Edge TPU models run with the Edge TPU delegate (libedgetpu) when it loads; otherwise a DependencyError says so.
  `tail_only` runs just the CPU tail (the model without edgetpu-custom-op, forensics.model.tflite.tail) on given
  accelerator outputs; raw chip-layout dumps are relayouted into tensors with the model's layout tables.
- CPU models run in LiteRT with default delegates off (XNNPACK changes uint8 results); there is no
  `raw` stage, and the decode's inputs are recorded as `tensor`.
- Intermediate tensors (the custom op's outputs, DEQUANTIZE outputs) are read after `invoke()`, which needs
  `experimental_preserve_all_tensors=True`.
- `--image` prepares the input as pycoral's `set_resized_input` (adapters/common.py): scale =
  min(W_in / w, H_in / h), the image resized to (int(w * scale), int(h * scale)) with the chosen resampling
  (pycoral's examples use LANCZOS) and written at the top-left of a zero-filled input tensor.
"""

from __future__ import annotations

import contextlib
import os
import platform
import sys
import warnings
from dataclasses import dataclass

import numpy as np

from forensics.core.errors import DependencyError, InputError
from forensics.runs.run import Run, load_run, model_record, saved_run, write_run
from forensics.model.runtime import load_reference, load_runtime, reference_name

RESAMPLING = ("lanczos", "bilinear", "bicubic", "nearest", "box", "hamming")
EDGETPU_LIBRARIES = {"Linux": "libedgetpu.so.1", "Darwin": "libedgetpu.1.dylib", "Windows": "edgetpu.dll"}
DEQUANTIZE = 6
XNNPACK_LABEL = "xnnpack (LiteRT default delegates)"
KERNEL_ROLES = ("boxes", "classes", "scores", "num_detections")  # TFLite_Detection_PostProcess output order


# --- input preparation ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class PreparedImage:
    array: np.ndarray  # [1, H, W, C] uint8, as the input tensor
    image_size: tuple[int, int]  # (w, h) of the original image
    resized: tuple[int, int]  # (w, h) written at the top-left
    scale: float
    resampling: str

    # kept: the document holds the sizes, not the input tensor's array
    def to_dict(self) -> dict:
        return {"image_size": list(self.image_size), "resized": list(self.resized), "scale": self.scale,
                "resampling": self.resampling}

    @classmethod
    def from_dict(cls, doc: dict) -> "PreparedImage":
        """A saved capture's image: its sizes and resampling (the input tensor is the run's `input` buffer)."""
        return cls(None, tuple(doc["image_size"]), tuple(doc["resized"]), doc["scale"], doc["resampling"])


def prepare_image(image_path, input_shape, dtype: str = "uint8", resampling: str = "lanczos") -> PreparedImage:
    """The input tensor pycoral's `set_resized_input` would fill from this image (zero padding right/bottom)."""
    if resampling not in RESAMPLING:
        raise InputError(f"unknown resampling {resampling!r} (choose {', '.join(RESAMPLING)})")
    shape = tuple(int(d) for d in input_shape)
    if len(shape) != 4 or shape[0] != 1 or shape[3] not in (1, 3) or shape[1] < 1 or shape[2] < 1:
        raise InputError(f"{{image}} needs a model whose input is an image [1, H, W, 1 or 3]; this input is "
                         f"{list(shape)} (give the input bytes with {{input:NAME=FILE}})", params=True)
    if dtype != "uint8":
        raise InputError(f"{{image}} prepares uint8 inputs as pycoral does; this input is {dtype} "
                         "(give the input bytes with {input:NAME=FILE})", params=True)
    from forensics.io.dump import check_readable_file

    image_path = os.fspath(image_path)
    check_readable_file(image_path)
    try:
        from PIL import Image, UnidentifiedImageError
    except ImportError:
        raise DependencyError("{image} needs Pillow: pip install 'npu-forensics[images]'", params=True) from None
    methods = {"lanczos": Image.Resampling.LANCZOS, "bilinear": Image.Resampling.BILINEAR,
               "bicubic": Image.Resampling.BICUBIC, "nearest": Image.Resampling.NEAREST,
               "box": Image.Resampling.BOX, "hamming": Image.Resampling.HAMMING}
    _, height, width, channels = shape
    try:
        with Image.open(image_path) as img:
            img = img.convert("RGB" if channels == 3 else "L")
            w, h = img.size
            scale = min(width / w, height / h)
            nw, nh = int(w * scale), int(h * scale)
            if nw < 1 or nh < 1:
                raise InputError(f"the image ({w}x{h}) resizes to {nw}x{nh} pixels for a {width}x{height} input",
                                 image_path)
            resized = np.asarray(img.resize((nw, nh), methods[resampling]), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as exc:
        raise InputError(f"cannot read the image: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}",
                         image_path) from None
    tensor = np.zeros(shape, dtype=np.uint8)
    tensor[0, :nh, :nw] = resized.reshape(nh, nw, channels)
    return PreparedImage(tensor, (w, h), (nw, nh), scale, resampling)


def read_input_file(path, name: str, shape, dtype: str) -> np.ndarray:
    """A graph input's bytes from a file: exactly the tensor's size (raw bytes or a .npy of that size)."""
    from forensics.io.dump import open_dump

    dump = open_dump(path, use_sidecar=False)
    itemsize = np.dtype(_np_dtype(dtype)).itemsize
    want = int(np.prod(shape, dtype=np.int64)) * itemsize
    if dump.size != want:
        raise InputError(f"is {dump.size} bytes; input {name!r} {list(shape)} {dtype} is {want} bytes", dump.path)
    return np.frombuffer(dump.read(0, dump.size), dtype=_np_dtype(dtype)).reshape(shape)


def _np_dtype(dtype: str) -> str:
    from forensics.model.tflite.model import NUMPY_DTYPES

    if dtype not in NUMPY_DTYPES:
        raise InputError(f"tensors of type {dtype} cannot be captured")
    return NUMPY_DTYPES[dtype]


# --- runtime ---------------------------------------------------------------------------------------------

def _runtime(reference: str | None = None):
    """(Interpreter, OpResolverType, load_delegate, runtime name): the named reference's runtime
    (forensics.model.runtime.REFERENCES), else ai-edge-litert, else tflite-runtime."""
    runtime = load_reference(reference).runtime if reference is not None else load_runtime("capture")
    return runtime.Interpreter, runtime.OpResolverType, runtime.load_delegate, runtime.name


@contextlib.contextmanager
def _quiet_unraisable():
    # A Delegate whose library failed to load complains from __del__ ("Exception ignored ..."); the user gets
    # our one-line error instead.
    old = sys.unraisablehook
    sys.unraisablehook = lambda *_: None
    try:
        yield
    finally:
        sys.unraisablehook = old


def load_external_delegate(library: str, what: str, reference: str | None = None):
    """Load a delegate library (through the runtime that will use it) or raise a DependencyError naming it and
    what to do."""
    import ctypes

    _, _, load_delegate, _ = _runtime(reference)
    try:
        ctypes.CDLL(library)  # probe first: a failed load_delegate leaves noise on stderr
    except OSError as exc:
        raise DependencyError(f"{what} {library} did not load ({str(exc).splitlines()[0]})") from None
    try:
        with _quiet_unraisable():
            return load_delegate(library)
    except (ValueError, OSError, RuntimeError) as exc:
        raise DependencyError(f"{what} {library} did not load ({str(exc).splitlines()[0]})") from None


def edgetpu_library() -> str:
    return EDGETPU_LIBRARIES.get(platform.system(), "libedgetpu.so.1")


def load_edgetpu_delegate(reference: str | None = None):
    library = edgetpu_library()
    try:
        return load_external_delegate(library, "the Edge TPU delegate", reference), library
    except DependencyError as exc:
        raise DependencyError(f"{exc}: install the Edge TPU runtime (libedgetpu) and connect the device, or run "
                              "only the CPU tail with {tail_only} {input:TENSOR=FILE} for the accelerator's "
                              "outputs", params=True) from None


def make_interpreter(model_bytes: bytes, *, delegates=(), default_delegates: bool = False,
                     reference: str | None = None):
    Interpreter, OpResolverType, _, name = _runtime(reference)
    kwargs = {"model_content": bytes(model_bytes), "num_threads": 1, "experimental_preserve_all_tensors": True}
    if delegates:
        kwargs["experimental_delegates"] = list(delegates)
    if not default_delegates:
        kwargs["experimental_op_resolver_type"] = OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
    try:
        with warnings.catch_warnings():  # LiteRT warns that preserving every tensor is for debugging: it is
            warnings.simplefilter("ignore", UserWarning)
            it = Interpreter(**kwargs)
        it.allocate_tensors()
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"the TFLite runtime rejected the model: {str(exc).splitlines()[0]}") from None
    return it, name


# --- capture ---------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class CaptureResult:
    run: Run
    runtime: str
    mode: str  # "full" / "tail-only"
    delegate: str | None
    image: PreparedImage | None = None

    # kept: the run is written as its path, source, model and buffers, not the whole Run
    def to_dict(self) -> dict:
        return {"run": self.run.path, "source": self.run.source, "runtime": self.runtime, "mode": self.mode,
                "delegate": self.delegate, "model": self.run.model,
                "image": self.image.to_dict() if self.image else None,
                "buffers": [b.to_dict() for b in self.run.buffers]}

    @classmethod
    def from_dict(cls, doc: dict) -> "CaptureResult":
        """A saved capture: the run as its document lists it (forensics.runs.run.saved_run)."""
        image = PreparedImage.from_dict(doc["image"]) if doc.get("image") is not None else None
        return cls(saved_run(doc), doc["runtime"], doc["mode"], doc.get("delegate"), image)


def _meta_of(tensor, array=None) -> dict:
    shape = tuple(array.shape) if array is not None else tuple(tensor.shape)
    meta = {"dtype": tensor.dtype, "shape": shape}
    if tensor.scale is not None:
        meta["scale"] = float(tensor.scale)
        meta["zero_point"] = int(tensor.zero_point or 0)
    return meta


def _parse_feeds(inputs) -> dict:
    feeds = {}
    for item in inputs or ():
        if isinstance(item, (tuple, list)):
            name, path = item
        else:
            name, sep, path = str(item).partition("=")
            if not sep or not name or not path:
                raise InputError(f"expected NAME=FILE, got {item!r}", param="input", value=item)
        if name in feeds:
            raise InputError(f"{name} is given twice", param="input", value=name)
        feeds[name] = os.fspath(path)
    return feeds


def _edgetpu_ops(model):
    from forensics.model.tflite.tail import EDGETPU_CUSTOM_CODE

    return [op for op in model.main.operators if op.is_custom and op.custom_code == EDGETPU_CUSTOM_CODE]


def _record_tail(builder, model, it) -> None:
    """dequantized: DEQUANTIZE outputs; detections: the PostProcess outputs; without a PostProcess the graph
    outputs go under tensor (a classifier's scores are not detections)."""
    from forensics.model.tflite.graph import postprocess_info

    index_of = {d["name"]: d["index"] for d in it.get_tensor_details()}
    sg = model.main
    pp = postprocess_info(model)
    roles = {}
    if pp is not None:
        roles = {pp.boxes.name: "boxes", pp.scores.name: "scores", pp.boxes_input.name: "boxes",
                 pp.scores_input.name: "scores"}
    for op in sg.operators:
        if op.builtin_code == DEQUANTIZE and op.outputs:
            t = sg.tensors[op.outputs[0]]
            value = it.get_tensor(index_of[t.name])
            builder.add_bytes("dequantized", t.name, np.ascontiguousarray(value), role=roles.get(t.name),
                              **_meta_of(t, value))
    if pp is not None:
        outputs = [sg.tensors[i] for i in pp.operator.outputs]
        values = [it.get_tensor(index_of[t.name]) for t in outputs]
        for t, role, value in zip(outputs, KERNEL_ROLES, _written_rows(values, pp.options)):
            builder.add_bytes("detections", t.name, np.ascontiguousarray(value), role=role, **_meta_of(t, value))
    else:
        # No PostProcess: the outputs are tensors (a classifier's class scores, a feature map), not detections.
        for d in it.get_output_details():
            t = model.tensor(d["name"])
            if ("tensor", t.name) in builder.entries:
                continue  # the accelerator's own output, already recorded
            value = it.get_tensor(d["index"])
            builder.add_bytes("tensor", t.name, np.ascontiguousarray(value), **_meta_of(t, value))


def _written_rows(values: list, options) -> list:
    """The PostProcess outputs with every row past the ones the kernel wrote set to zero: fast NMS leaves them
    as the interpreter's memory was (two captures of one input differ there), regular NMS writes zeros itself.
    Written rows: num_detections, times max_classes_per_detection with fast NMS (num_detections counts anchors
    there, docs/pitfalls.md)."""
    if len(values) < 4 or np.asarray(values[3]).size != 1:
        return values
    num = float(np.asarray(values[3]).reshape(-1)[0])
    if not (np.isfinite(num) and num >= 0):  # not a count the kernel writes: the rows are kept as they are
        return values
    keep = int(num) * (1 if options.use_regular_nms else int(options.max_classes_per_detection or 1))
    out = []
    for value in values[:3]:  # boxes [1, rows, 4], classes and scores [1, rows]
        value = np.array(value)  # a copy: the interpreter's tensor is not ours to change
        if value.ndim >= 2:
            value[:, keep:] = 0
        out.append(value)
    return out + list(values[3:])


def _tensor_role(model, name: str) -> str | None:
    from forensics.model.tflite.graph import postprocess_info

    pp = postprocess_info(model)
    if pp is None:
        return None
    return {pp.boxes.name: "boxes", pp.scores.name: "scores"}.get(name)


def capture(model_path, output, *, source: str = "litert", image=None, inputs=None, resampling: str = "lanczos",
            tail_only: bool = False, delegate: str | None = None, replace: bool = False,
            progress=None, input_image: str | None = None, runtime: str | None = None) -> CaptureResult:
    """Run `model_path` once and write everything it produced as the run `output`. `progress(step, steps)`
    is called as the steps (interpreter ready, model run, run written) finish. `input_image` names the image
    in the manifest when the inputs are given as files (default: `image`). `runtime` names the reference to
    run in (forensics.model.runtime.REFERENCES; default: LiteRT, else tflite-runtime, default delegates off)."""
    from forensics.model.tflite.model import open_model

    model_path = os.fspath(model_path)
    feeds = _parse_feeds(inputs)
    if runtime is not None:
        load_reference(runtime)  # an unknown or missing runtime: one line before the model is read
        if delegate:
            raise InputError("give {runtime} or {delegate}, not both: a reference runs with its own delegates "
                             "only (XNNPACK: {runtime} litert-xnnpack)", params=True)
    if image is not None and feeds:
        raise InputError("give {image} or {input:NAME=FILE}, not both", params=True)
    if image is None and not feeds:
        raise InputError("nothing to run on: give {image:IMG} or {input:NAME=FILE}", params=True)
    record = model_record(model_path)
    model = open_model(model_path)
    try:
        model_bytes = bytes(model.data)
        edgetpu_ops = _edgetpu_ops(model)
        if tail_only:
            if not edgetpu_ops:
                raise InputError("{tail_only} runs what follows edgetpu-custom-op; this model has none (run it "
                                 "whole without {tail_only})", model_path, params=True)
            if image is not None:
                raise InputError("{tail_only} takes the accelerator's outputs as {input:TENSOR=FILE}, not {image}",
                                 params=True)
            return _capture_tail(model, model_bytes, record, output, source, feeds, replace, input_image, runtime)
        result = _capture_full(model, model_bytes, record, output, source, image, feeds, resampling, delegate,
                               bool(edgetpu_ops), replace, progress, runtime)
        if progress is not None:
            progress(3, 3)
        return result
    finally:
        model.close()


def delegate_label(edgetpu: str | None, delegate: str | None, default_delegates: bool) -> str | None:
    """What a run records as its delegates (capture.delegate): the Edge TPU library, XNNPACK, a library."""
    names = [edgetpu] if edgetpu else []
    if default_delegates:
        names.append(XNNPACK_LABEL)
    if delegate and delegate.lower() != "xnnpack":
        names.append(delegate)
    return ", ".join(names) or None


def _full_delegates(delegate, edgetpu, reference) -> tuple[list, object, bool]:
    """(the delegates to load, the Edge TPU library, whether the runtime's default delegates stay on)."""
    delegates, library = [], None
    default_delegates = reference == "litert-xnnpack" or bool(delegate and delegate.lower() == "xnnpack")
    if edgetpu:
        handle, library = load_edgetpu_delegate(reference)
        delegates.append(handle)
    if delegate and delegate.lower() != "xnnpack":
        delegates.append(load_external_delegate(delegate, "the delegate"))
    return delegates, library, default_delegates


def _input_values(model, details, image, feeds, resampling) -> tuple[object, dict]:
    """(the prepared image or None, input name -> value): one image for a one-input model, else a file for
    each input the model has."""
    values = {}
    if image is not None:
        if len(details) != 1:
            raise InputError(f"{{image}} fills one image input; the model has {len(details)} inputs "
                             f"({', '.join(d['name'] for d in details)}): give {{input:NAME=FILE}} for each",
                             params=True)
        d = details[0]
        prepared = prepare_image(image, d["shape"], model.tensor(d["name"]).dtype, resampling)
        values[d["name"]] = prepared.array
        return prepared, values
    names = [d["name"] for d in details]
    unknown = [n for n in feeds if n not in names]
    if unknown:
        raise InputError(f"the model has no input {unknown[0]!r} (inputs: {', '.join(names)})")
    missing = [n for n in names if n not in feeds]
    if missing:
        raise InputError(f"none given for {', '.join(missing)} (the model has {len(names)} inputs)", param="input")
    for d in details:
        values[d["name"]] = read_input_file(feeds[d["name"]], d["name"], d["shape"], model.tensor(d["name"]).dtype)
    return None, values


def _add_parameters(builder, model) -> None:
    """Each Edge TPU executable's parameters, as the package in the model holds them."""
    from forensics.model.tflite.edgetpu import read_packages

    for package in read_packages(model):
        for exe in package.executables:
            builder.add_bytes("params", f"op{package.operator}_exe{exe.index}_{exe.type.lower()}",
                              bytes(exe.parameters), dtype="uint8")


def _produced_tensors(model) -> list:
    """The tensors a full capture records: the Edge TPU operators' outputs, else (a CPU model) the decode's
    inputs."""
    sg = model.main
    produced = []
    for op in _edgetpu_ops(model):
        produced += [sg.tensors[i] for i in op.outputs]
    if not produced:  # a CPU model: the decode's inputs
        from forensics.model.tflite.graph import postprocess_info

        pp = postprocess_info(model)
        if pp is not None:
            produced = [pp.boxes, pp.scores]
    return produced


def _capture_full(model, model_bytes, record, output, source, image, feeds, resampling, delegate, edgetpu,
                  replace, progress=None, reference=None) -> CaptureResult:
    delegates, library, default_delegates = _full_delegates(delegate, edgetpu, reference)
    delegate_name = delegate_label(library, delegate, default_delegates)
    it, runtime = make_interpreter(model_bytes, delegates=delegates, default_delegates=default_delegates,
                                   reference=reference)
    if progress is not None:
        progress(1, 3)
    details = it.get_input_details()
    prepared, values = _input_values(model, details, image, feeds, resampling)
    for d in details:
        it.set_tensor(d["index"], values[d["name"]])
    try:
        it.invoke()
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"the TFLite runtime failed to run the model: {str(exc).splitlines()[0]}") from None
    if progress is not None:
        progress(2, 3)
    index_of = {d["name"]: d["index"] for d in it.get_tensor_details()}
    capture_info = {"runtime": runtime, "mode": "full", "delegate": delegate_name,
                    "resampling": resampling if image is not None else None,
                    "reference": None if delegate and delegate.lower() != "xnnpack" else
                    reference_name(runtime, default_delegates)}
    with write_run(output, source, replace=replace) as builder:
        builder.model = record
        builder.input_image = os.fspath(image) if image is not None else None
        builder.capture = {k: v for k, v in capture_info.items() if v is not None}
        if edgetpu:
            _add_parameters(builder, model)
        if prepared is not None:  # the picture itself, and how the input was made from it (top-left, pycoral)
            from forensics.runs.ingest import image_meta

            height, width = (int(v) for v in details[0]["shape"][1:3])
            builder.add_file("image", "image", image, **image_meta(image), input_size=[width, height],
                             resized=list(prepared.resized), offset=[0, 0], resampling=resampling)
        single = len(details) == 1
        for d in details:
            t = model.tensor(d["name"])
            # One input is named `input`, as a driver's ingested `input=FILE`, so the two compare.
            builder.add_bytes("input", "input" if single else t.name, np.ascontiguousarray(values[d["name"]]),
                              model_tensor=t.name, **_meta_of(t, values[d["name"]]))
        for t in _produced_tensors(model):
            value = it.get_tensor(index_of[t.name])
            builder.add_bytes("tensor", t.name, np.ascontiguousarray(value), role=_tensor_role(model, t.name),
                              **_meta_of(t, value))
        _record_tail(builder, model, it)
    return CaptureResult(load_run(output), runtime, "full", delegate_name, prepared)


def _capture_tail(model, model_bytes, record, output, source, feeds, replace, input_image=None,
                  reference=None) -> CaptureResult:
    from forensics.io.dump import open_dump
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.relayout import layer_map, relayout
    from forensics.model.tflite.tail import remove_custom_op

    tail = remove_custom_op(model_bytes)
    default_delegates = reference == "litert-xnnpack"
    it, runtime = make_interpreter(tail, default_delegates=default_delegates, reference=reference)
    details = {d["name"]: d for d in it.get_input_details()}
    unknown = [n for n in feeds if n not in details]
    if unknown:
        raise InputError(f"{unknown[0]!r} is not an input of the CPU tail (the accelerator's outputs: "
                         f"{', '.join(details)})")
    missing = [n for n in details if n not in feeds]
    if missing:
        raise InputError(f"no {{input}} for {', '.join(missing)} (the CPU tail reads {', '.join(details)})",
                         params=True)
    layers = {}
    for package in read_packages(model):
        for name in details:
            layer = package.output_layer(name)
            if layer is not None and name not in layers:
                layers[name] = layer
    raw_kept, tensors = {}, {}
    for name, d in details.items():
        t = model.tensor(name)
        want = t.size_bytes
        dump = open_dump(feeds[name], use_sidecar=False)
        data = dump.read(0, dump.size)
        layer = layers.get(name)
        if dump.size == want:
            tensors[name] = np.frombuffer(data, dtype=_np_dtype(t.dtype)).reshape(d["shape"])
        elif layer is not None and dump.size == layer.size_bytes:
            m = layer_map(layer)
            raw_kept[name] = (data, m)
            tensors[name] = relayout(data, m).view(_np_dtype(t.dtype)).reshape(d["shape"])
        else:
            raw = f" or {layer.size_bytes} bytes as the chip writes it (raw)" if layer is not None else ""
            raise InputError(f"is {dump.size} bytes; {name!r} is {want} bytes as the tensor{raw}", dump.path)
        it.set_tensor(d["index"], tensors[name])
    try:
        it.invoke()
    except (RuntimeError, ValueError) as exc:
        raise InputError(f"the TFLite runtime failed to run the tail: {str(exc).splitlines()[0]}") from None
    from forensics.model.tflite.model import read_model

    tail_model = read_model(tail)
    with write_run(output, source, replace=replace) as builder:
        builder.model = record
        builder.input_image = os.fspath(input_image) if input_image is not None else None
        builder.capture = {"runtime": runtime, "mode": "tail-only",
                           "reference": reference_name(runtime, default_delegates)}
        if default_delegates:
            builder.capture["delegate"] = XNNPACK_LABEL
        for name, (data, m) in raw_kept.items():
            builder.add_bytes("raw", name, data, dtype="uint8", record_size=m.z_bytes_padded,
                              from_file=feeds[name])
        for name in details:
            t = model.tensor(name)
            builder.add_bytes("tensor", name, np.ascontiguousarray(tensors[name]), role=_tensor_role(model, name),
                              **_meta_of(t, tensors[name]))
        _record_tail(builder, tail_model, it)
    return CaptureResult(load_run(output), runtime, "tail-only", XNNPACK_LABEL if default_delegates else None, None)
