"""Capture many: one run per image of a folder or a list, laid out as a `compare --batch` farm
(RUNS_DIR/<image name>/<source>), resumable: a run already there is kept and a rerun captures the rest.

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
from dataclasses import dataclass

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


@dataclass(frozen=True)
class CaptureManyResult:
    output: str
    source: str
    captured: tuple[str, ...]  # run paths written now
    kept: tuple[str, ...]  # run paths that were already there
    failed: tuple[tuple[str, str], ...]  # (image, one-line reason)

    @property
    def exit_code(self) -> int:
        from forensics.core import exitcodes

        return exitcodes.ERROR if self.failed else exitcodes.SAME

    def to_dict(self) -> dict:
        return {"output": self.output, "source": self.source, "images": len(self.captured) + len(self.kept)
                + len(self.failed), "captured": list(self.captured), "kept": list(self.kept),
                "failed": [{"image": i, "error": e} for i, e in self.failed]}


def _finished(path: str) -> bool:
    if not os.path.isfile(os.path.join(path, MANIFEST)):
        return False
    try:
        load_run(path)
    except ForensicsError:
        return False
    return True


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
                 tail_only: bool = False, delegate: str | None = None, progress=None) -> CaptureManyResult:
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
    if os.path.exists(output) and not os.path.isdir(output):
        raise InputError("is not a directory (the folder to write runs into)", output)
    try:
        os.makedirs(output, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot create: {exc.strerror or exc}", output) from None
    captured, kept, failed = [], [], []
    for done, (entry, name) in enumerate(zip(entries, names), start=1):
        run_path = os.path.join(output, name, source)
        if _finished(run_path):
            kept.append(run_path)
        else:
            try:
                os.makedirs(os.path.join(output, name), exist_ok=True)
                if tail_only:
                    capture(model_path, run_path, source=source, inputs=_tail_feeds(entry, tail_names),
                            tail_only=True, replace=True, input_image=entry)
                else:
                    capture(model_path, run_path, source=source, image=entry, resampling=resampling,
                            delegate=delegate, replace=True)
                captured.append(run_path)
            except InputError as exc:
                if exc.path is None or os.path.abspath(exc.path) != os.path.abspath(entry) and \
                        not os.path.abspath(exc.path).startswith(os.path.abspath(entry) + os.sep):
                    raise  # the model's or runtime's problem: every image would fail the same way
                failed.append((entry, str(exc)))
        if progress is not None:
            progress(done, len(entries), name)
    return CaptureManyResult(output, source, tuple(captured), tuple(kept), tuple(failed))
