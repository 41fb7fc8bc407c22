"""Capture many: one run per image of a folder or a list, laid out as a `compare --batch` farm
(RUNS_DIR/<image name>/<source>), resumable: a run already there is kept and a rerun captures the rest.

A run is kept only when it is what this capture would write (`stale_reason`): the same model (sha256), the
same way of running it (tail-only or whole, resampling, runtime and delegates) and the same input, checked
by content: the image is prepared again and its bytes compared with the run's input buffer (a folder that
now holds another picture under the same name), and a tail-only folder's files with the run's buffers. A run
capture wrote otherwise is captured again (`recaptured`, with the reason); a run capture did not write (a
driver's, ingested under the same source name) is evidence and is never replaced: that image fails.

Each run is written atomically (forensics.runs.run.write_run), so an interrupted batch leaves finished runs and
no half-written one. A failure that belongs to one image (unreadable, wrong size) is recorded for that image
and the batch goes on; a failure of the model or the runtime (no libedgetpu, a model without an image input)
stops it at once, since every other image would fail the same way.

With `tail_only`, the entries are folders, one per image, holding the accelerator's outputs for it as
`<tensor>.bin` (or `.npy`), the tensor named as in the model with characters other than letters, digits,
`.`, `_` and `-` replaced by `_`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from forensics.core import serial
from forensics.core.errors import ForensicsError, InputError
from forensics.runs.run import MANIFEST, load_run, safe_name

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".gif", ".webp", ".tif", ".tiff", ".ppm", ".pgm")


def list_images(images, *, folders: bool = False) -> list[str]:
    """The images of a folder (sorted, by extension) or of a list file (one path a line, relative to the list,
    `#` comments); with `folders`, the sub-folders of a folder instead. InputError when there is none."""
    images = os.fspath(images)
    if os.path.isdir(images):
        try:
            names = sorted(n for n in os.listdir(images) if not n.startswith("."))
        except OSError as exc:
            raise InputError(f"cannot list: {exc.strerror or exc}", images) from None
        paths = [os.path.join(images, n) for n in names]
        if folders:
            found = [p for p in paths if os.path.isdir(p)]
            what = "folders of accelerator outputs (one per image)"
        else:
            found = [p for p in paths if os.path.isfile(p) and p.lower().endswith(IMAGE_EXTENSIONS)]
            what = f"images ({', '.join(IMAGE_EXTENSIONS)})"
        if not found:
            raise InputError(f"holds no {what}", images)
        return found
    if not os.path.isfile(images):
        raise InputError("no such folder or image list", images)
    try:
        with open(images, encoding="utf-8") as fh:
            text = fh.read(16 << 20)
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read the image list: {getattr(exc, 'strerror', None) or exc}", images) from None
    base = os.path.dirname(os.path.abspath(images))
    found = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            found.append(line if os.path.isabs(line) else os.path.join(base, line))
    if not found:
        raise InputError("the image list names no image", images)
    return found


def run_name(image: str) -> str:
    """The pair folder of an image: its file name made safe (`face 1.jpg` -> `face_1.jpg`)."""
    return safe_name(os.path.basename(os.path.normpath(image)))


def _pairs(first: str, second: str):
    """A tuple of (a, b) pairs written as [{first: a, second: b}]."""
    return serial.json(encode=lambda pairs: [{first: a, second: b} for a, b in pairs],
                       decode=lambda docs: tuple((d[first], d[second]) for d in docs))


@dataclass(frozen=True)
class CaptureManyResult(serial.Serial):
    JSON_DERIVED = (("images", "image_count"),)
    JSON_ORDER = ("output", "source", "images", "captured", "kept", "failed", "recaptured")

    output: str
    source: str
    captured: tuple[str, ...]  # run paths written now
    kept: tuple[str, ...]  # run paths that were already there
    failed: tuple[tuple[str, str], ...] = field(metadata=_pairs("image", "error"))  # (image, one-line reason)
    # (run path, what differed: STALE_REASONS) among `captured`
    recaptured: tuple[tuple[str, str], ...] = field(default=(), metadata=_pairs("run", "because"))

    @property
    def image_count(self) -> int:
        return len(self.captured) + len(self.kept) + len(self.failed)

    @property
    def warnings(self) -> tuple[str, ...]:
        """One line per image that failed, naming it."""
        return tuple(error if image in error else f"{image}: {error}" for image, error in self.failed)

    @property
    def exit_code(self) -> int:
        from forensics.core import exitcodes

        return exitcodes.ERROR if self.failed else exitcodes.SAME


def _finished(path: str):
    """The run at `path` when a whole one is there, else None."""
    if not os.path.isfile(os.path.join(path, MANIFEST)):
        return None
    try:
        return load_run(path)
    except ForensicsError:
        return None


# What makes a run already there another capture than the one asked for (stale_reason), in the order checked.
STALE_REASONS = ("model", "mode", "resampling", "runtime", "delegate", "input")


@dataclass(frozen=True)
class Wanted:
    """What a run of this capture records: forensics.runs.capture writes these into each manifest."""

    model_sha256: str
    mode: str  # "full" / "tail-only"
    resampling: str | None
    reference: str | None  # forensics.model.runtime.REFERENCES name
    delegate: str | None  # the delegates' label (capture.delegate_label)
    input_shape: tuple | None = None  # the image input's shape and dtype, to prepare an image again
    input_dtype: str | None = None


def _wanted(model_path, *, tail_only: bool, resampling: str, delegate, runtime) -> Wanted:
    from forensics.model.runtime import load_reference, load_runtime, reference_name
    from forensics.model.tflite.model import open_model
    from forensics.runs.capture import _edgetpu_ops, delegate_label, edgetpu_library
    from forensics.runs.run import model_record

    if tail_only:  # the CPU tail runs without other delegates (capture's _capture_tail)
        delegate = None
    xnnpack = runtime == "litert-xnnpack" or bool(delegate and str(delegate).lower() == "xnnpack")
    package = load_reference(runtime).runtime.name if runtime is not None else load_runtime("capture").name
    external = bool(delegate and str(delegate).lower() != "xnnpack")
    model = open_model(model_path)
    try:
        edgetpu = bool(_edgetpu_ops(model))
        inputs = model.main.inputs
        shape = dtype = None
        if not tail_only and len(inputs) == 1:
            tensor = model.main.tensors[inputs[0]]
            shape, dtype = tuple(tensor.shape), tensor.dtype
    finally:
        model.close()
    label = delegate_label(edgetpu_library() if edgetpu and not tail_only else None, delegate, xnnpack)
    return Wanted(model_record(model_path)["sha256"], "tail-only" if tail_only else "full",
                  None if tail_only else resampling, None if external else reference_name(package, xnnpack),
                  label, shape, dtype)


def stale_reason(run, entry: str, wanted: Wanted, feeds=None) -> str | None:
    """Why the run at an image's place is not what capturing `entry` now would write (one of STALE_REASONS),
    or None when it is. `feeds`: a tail-only entry's (tensor, file) pairs."""
    from forensics.compare.crc import crc32

    from forensics.model.runtime import reference_name
    from forensics.runs.capture import XNNPACK_LABEL

    info = run.capture or {}
    reference = info.get("reference")
    if "reference" not in info:  # a run of an earlier forensics: the runtime and its delegates say which
        reference = reference_name(info.get("runtime"), XNNPACK_LABEL in (info.get("delegate") or ""))
    recorded = {"model": run.model_sha256, "mode": info.get("mode"), "resampling": info.get("resampling"),
                "runtime": reference, "delegate": info.get("delegate")}
    asked = {"model": wanted.model_sha256, "mode": wanted.mode, "resampling": wanted.resampling,
             "runtime": wanted.reference, "delegate": wanted.delegate}
    for reason in STALE_REASONS[:-1]:
        if recorded[reason] != asked[reason]:
            return reason
    try:
        if feeds is not None:  # the accelerator's outputs: each file as the run holds it (raw, or the tensor)
            from forensics.io.dump import open_dump

            for name, path in feeds:
                keys = {b.key: b for b in run.buffers}
                held = keys.get(("raw", name)) or keys.get(("tensor", name))
                dump = open_dump(path, use_sidecar=False)
                if held is None or held.size != dump.size or \
                        crc32(dump.read(0, dump.size)) != held.crc32:
                    return "input"
            return None
        from forensics.runs.capture import prepare_image

        held = run.buffer("input")
        prepared = prepare_image(entry, wanted.input_shape, wanted.input_dtype, wanted.resampling)
        data = prepared.array.tobytes()
        return None if held.size == len(data) and crc32(data) == held.crc32 else "input"
    except InputError:
        return "input"  # an image that cannot be prepared now, an input the run lacks: capture it again (and say why)


def _tail_feeds(folder: str, names) -> list[tuple[str, str]]:
    feeds = []
    for name in names:
        for ext in (".bin", ".npy"):
            path = os.path.join(folder, safe_name(name) + ext)
            if os.path.isfile(path):
                feeds.append((name, path))
                break
        else:
            raise InputError(f"holds no {safe_name(name)}.bin (or .npy) for the accelerator output {name!r}", folder)
    return feeds


def _tail_inputs(model_path) -> list[str]:
    from forensics.runs.capture import _edgetpu_ops
    from forensics.model.tflite.model import open_model

    model = open_model(model_path)
    try:
        ops = _edgetpu_ops(model)
        if not ops:
            raise InputError("{tail_only} runs what follows edgetpu-custom-op; this model has none (run it "
                             "whole without {tail_only})", model_path, params=True)
        return [model.main.tensors[i].name for op in ops for i in op.outputs]
    finally:
        model.close()


def capture_many(model_path, images, output, *, source: str = "litert", resampling: str = "lanczos",
                 tail_only: bool = False, delegate: str | None = None, progress=None,
                 runtime: str | None = None) -> CaptureManyResult:
    """One run per image under `output` (created when missing) as output/<image name>/<source>.

    `progress(done, total, name)` is called after each image (for a progress bar).
    """
    from forensics.runs.capture import capture

    model_path, output = os.fspath(model_path), os.fspath(output)
    if not isinstance(source, str) or not source.strip() or safe_name(source) != source.strip():
        raise InputError(f"the source names each run's folder: use letters, digits, '.', '_', '-' (got {source!r})")
    entries = list_images(images, folders=tail_only)
    names = [run_name(e) for e in entries]
    seen = {}
    for entry, name in zip(entries, names):
        if name in seen:
            raise InputError(f"two images give the same run name {name!r}: {seen[name]} and {entry}")
        seen[name] = entry
    tail_names = _tail_inputs(model_path) if tail_only else None
    wanted = _wanted(model_path, tail_only=tail_only, resampling=resampling, delegate=delegate, runtime=runtime)
    if os.path.exists(output) and not os.path.isdir(output):
        raise InputError("is not a directory (the folder to write runs into)", output)
    try:
        os.makedirs(output, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create: {exc.strerror or exc}", output) from None
    captured, kept, failed, recaptured = [], [], [], []
    for done, (entry, name) in enumerate(zip(entries, names), start=1):
        run_path = os.path.join(output, name, source)
        there = _finished(run_path)
        try:
            feeds = _tail_feeds(entry, tail_names) if tail_only else None
            if there is not None and not (there.capture or {}).get("mode"):
                failed.append((entry, f"{run_path}: holds a run that capture did not write (source {there.source}), "
                                      "kept as it is: capture under another source name or into another folder"))
                continue
            why = stale_reason(there, entry, wanted, feeds) if there is not None else None
            if there is not None and why is None:
                kept.append(run_path)
            else:
                os.makedirs(os.path.join(output, name), exist_ok=True)
                if tail_only:
                    capture(model_path, run_path, source=source, inputs=feeds, tail_only=True, replace=True,
                            input_image=entry, runtime=runtime)
                else:
                    capture(model_path, run_path, source=source, image=entry, resampling=resampling,
                            delegate=delegate, replace=True, runtime=runtime)
                captured.append(run_path)
                if why is not None:
                    recaptured.append((run_path, why))
        except InputError as exc:
                if exc.path is None or os.path.abspath(exc.path) != os.path.abspath(entry) and \
                        not os.path.abspath(exc.path).startswith(os.path.abspath(entry) + os.sep):
                    raise  # the model's or runtime's problem: every image would fail the same way
                failed.append((entry, str(exc)))
        if progress is not None:
            progress(done, len(entries), name)
    return CaptureManyResult(output, source, tuple(captured), tuple(kept), tuple(failed), tuple(recaptured))
