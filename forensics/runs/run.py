"""The run format: a directory with `manifest.json` (format version, source, model, input, buffers) and one file
per captured buffer; loading with validation, verifying CRCs, and writing atomically.

A new run is written under a hidden temporary name and renamed into place only after every buffer and the
manifest are on disk (forensics.io.outputs.atomic_directory), so a capture that crashes leaves no half-written
directory that looks like a run. A run that exists is added to in place (new buffer files under new names,
then the manifest in one rename), so it is whole at its name at every instant; writers take turns on a lock
(docs/reliability.md). The format is documented in docs/runs.md for drivers that write runs themselves.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as _dt
import hashlib
import json
import os
import re
import stat
from dataclasses import dataclass, field

from forensics import __version__
from forensics.compare.crc import crc32, format_crc
from forensics.core import serial
from forensics.io.dump import RUN_DTYPES
from forensics.core.errors import ForensicsError, FormatError, InputError
from forensics.io.outputs import atomic_directory, exclusive, make_parents, recover, write_text_atomic

FORMAT = "forensics-run"
VERSION = 1
MANIFEST = "manifest.json"
# The story's order: narrow the match down stage by stage and look for the bug in the first that differs.
# `image` is the picture the input was made from; `relayouted` holds forensics' relayout of a raw buffer when
# the run also holds the driver's own `tensor` of that name (a derived buffer never takes a provided one's place).
STAGES = ("params", "instructions", "image", "input", "raw", "relayouted", "tensor", "dequantized",
          "detections")  # link: instructions
STAGE_ALIASES = {"parameters": "params"}  # link: issue 23 calls the params stage `parameters`
# Where a derived buffer goes when the stage it stands in for holds the driver's own buffer of that name.
DERIVED_HOME = {"tensor": "relayouted"}
# Evidence beside the pipeline: no later stage takes them for granted, and a run without them misses nothing.
SIDE_STAGES = ("image", "relayouted")
ROLES = ("boxes", "scores", "classes", "num_detections")
_MAX_MANIFEST = 16 << 20
_COPY_BLOCK = 1 << 20
_CONTROL = re.compile(r"[\x00-\x1f]")


def _crc_field():
    return serial.json(encode=format_crc, decode=lambda s: int(s, 16))


def _optional():
    return serial.json(omit_none=True)


@dataclass(frozen=True)
class BufferEntry(serial.Serial):
    """One captured buffer: which stage and tensor it is, where its bytes are, and their size and CRC32. Its
    document is its manifest entry (a manifest is read back through _entry, which checks every key)."""

    JSON_ORDER = ("stage", "tensor", "file", "size", "crc32", "dtype", "scale", "zero_point", "record_size", "role",
                  "derived_from", "shape")

    stage: str
    tensor: str
    file: str  # relative to the run directory, '/' separated
    size: int
    crc32: int = field(metadata=_crc_field())
    dtype: str | None = field(default=None, metadata=_optional())
    shape: tuple[int, ...] | None = field(default=None, metadata=_optional())
    scale: float | None = field(default=None, metadata=_optional())
    zero_point: int | None = field(default=None, metadata=_optional())
    record_size: int | None = field(default=None, metadata=_optional())
    # boxes / scores (decode inputs), boxes / classes / scores / num_detections (outputs)
    role: str | None = field(default=None, metadata=_optional())
    # The label of the buffer forensics computed this one from (`raw:convert_scores` for its relayout); None
    # for a buffer the driver or the runtime provided, which is evidence and never replaced by a derived one.
    derived_from: str | None = field(default=None, metadata=_optional())
    # keys of the manifest entry this version does not know, kept as they were
    extra: dict = field(default_factory=dict, compare=False, metadata=serial.json(spread=True))

    @property
    def key(self) -> tuple[str, str]:
        return self.stage, self.tensor

    @property
    def derived(self) -> bool:
        return self.derived_from is not None

    @property
    def label(self) -> str:
        return self.stage if self.tensor == self.stage else f"{self.stage}:{self.tensor}"


@dataclass(frozen=True)
class LogEntry(serial.Serial):
    """A log the driver wrote while it made the run's buffers (DbgView, a console): stored as the bytes it was
    given, in whatever code page, with its size and CRC32; `tags` maps a tag the log names to a buffer label
    where the buffers' own names do not say it."""

    name: str
    file: str
    size: int
    crc32: int = field(metadata=_crc_field())
    # (logged tag, buffer label), written as {tag: label}
    tags: tuple[tuple[str, str], ...] = field(default=(), metadata=serial.json(
        omit=lambda tags: not tags, encode=dict, decode=lambda d: tuple(d.items())))
    extra: dict = field(default_factory=dict, compare=False, metadata=serial.json(spread=True))

    stage = "log"  # as a BufferCheck reads an entry

    @property
    def tensor(self) -> str:
        return self.name

    @property
    def key(self) -> tuple[str, str]:
        return "log", self.name

    @property
    def label(self) -> str:
        return f"log:{self.name}"


@dataclass(frozen=True)
class LogEvidence:
    """What a run's logs are checked against: each log with where its bytes are, and every tag a log may name
    for a buffer the driver provided -> that buffer's file (`buffers`, as forensics.buffer.fingerprint.verify_log
    takes them; tags match without case there) and -> its label (`labels`, to name the stage)."""

    logs: tuple[tuple[LogEntry, str], ...]
    buffers: dict = field(default_factory=dict)
    labels: dict = field(default_factory=dict)

    # kept: each log is written with the path its bytes are read from beside its entry
    def to_dict(self) -> dict:
        return {"logs": [dict(log.to_dict(), path=path) for log, path in self.logs], "buffers": dict(self.buffers),
                "labels": dict(self.labels)}


@dataclass(frozen=True)
class ImageInfo:
    """The run's `image` stage: the picture the input was made from and, when known, how (forensics.runs.capture
    records pycoral's set_resized_input: resized to `resized` and written at `offset` of an `input_size` tensor
    filled with zeros)."""

    entry: BufferEntry
    width: int | None = None
    height: int | None = None
    format: str | None = None  # as Pillow names it: JPEG, PNG, BMP ...
    mode: str | None = None  # RGB, L ...
    input_size: tuple[int, int] | None = None  # (width, height) of the input tensor
    resized: tuple[int, int] | None = None  # (width, height) of the image inside it
    offset: tuple[int, int] | None = None  # (x, y) of the resized image's top-left corner
    resampling: str | None = None

    @property
    def placement(self) -> str | None:
        """`top-left` (pycoral pads right and bottom), `centred`, `offset`, or None when not recorded."""
        if self.offset is None:
            return None
        if self.offset == (0, 0):
            return "top-left"
        if self.input_size and self.resized and all(
                abs(2 * o + r - i) <= 1 for o, r, i in zip(self.offset, self.resized, self.input_size)):
            return "centred"
        return "offset"

    # kept: the entry is written as its label, file, size and CRC, not the whole BufferEntry
    def to_dict(self) -> dict:
        out = {"label": self.entry.label, "file": self.entry.file, "size": self.entry.size,
               "crc32": format_crc(self.entry.crc32), "width": self.width, "height": self.height,
               "format": self.format, "mode": self.mode, "placement": self.placement}
        for name in ("input_size", "resized", "offset"):
            value = getattr(self, name)
            out[name] = list(value) if value is not None else None
        out["resampling"] = self.resampling
        return out


def _pair(value) -> tuple[int, int] | None:
    if isinstance(value, list) and len(value) == 2 and all(_is_int(v) and v >= 0 for v in value):
        return int(value[0]), int(value[1])
    return None


@dataclass(frozen=True)
class Run:
    """A loaded run: the manifest's fields and the run directory its buffer files are relative to."""

    path: str
    source: str
    buffers: tuple[BufferEntry, ...]
    model: dict | None = None  # {"path": ..., "sha256": ...}
    input_image: str | None = None
    created: str | None = None
    tool: str | None = None
    version: int = VERSION
    capture: dict | None = None  # how it was captured (runtime, resampling, delegate, tail_only ...)
    logs: tuple[LogEntry, ...] = ()  # the driver's logs (ingest log=PATH)
    # Where the buffer files are read from when `path` is an fsspec URL (forensics.runs.remote.RemoteFiles);
    # None for a local directory.
    files: object | None = field(default=None, repr=False, compare=False)

    @property
    def stages(self) -> tuple[str, ...]:
        present = {b.stage for b in self.buffers}
        return tuple(s for s in STAGES if s in present)

    def buffer(self, stage: str, tensor: str | None = None) -> BufferEntry:
        """The buffer of `stage` (named `tensor`, or the stage's only buffer); InputError when absent."""
        matches = [b for b in self.buffers if b.stage == stage and (tensor is None or b.tensor == tensor)]
        if not matches:
            have = ", ".join(b.label for b in self.buffers) or "no buffers"
            want = stage if tensor is None else f"{stage}:{tensor}"
            raise InputError(f"the run has no {want} buffer (it has {have})", self.path)
        if len(matches) > 1:
            raise InputError(f"the run has {len(matches)} {stage} buffers; name one as {stage}:TENSOR "
                             f"({', '.join(b.tensor for b in matches)})", self.path)
        return matches[0]

    def file_path(self, entry: BufferEntry) -> str:
        """Where `entry`'s bytes are; InputError when that is a symbolic link or resolves outside the run
        (a manifest with a matching size and CRC must not make us read /etc/passwd through the run). A run at
        a URL names its buffer by URL (read it with `open_buffer`)."""
        if self.files is not None:
            return self.files.url_of(entry.file)
        parts = entry.file.split("/")
        path = os.path.join(self.path, *parts)
        if os.path.islink(path):
            raise InputError(f"buffer {entry.label} is a symbolic link; a run's buffers are read only from "
                             "inside the run directory", path)
        # The manifest's names are relative with no '.' or '..' parts (_check_relative), so only a link among
        # the run's own directories can lead outside: resolve the path (an lstat of every ancestor, which
        # costs more than the buffer's CRC in a batch) only when there is one.
        directory = self.path
        for part in parts[:-1]:
            directory = os.path.join(directory, part)
            if os.path.islink(directory):
                root = os.path.realpath(self.path)
                if not os.path.realpath(path).startswith(root.rstrip(os.sep) + os.sep):
                    raise InputError(f"buffer {entry.label} resolves outside the run directory", path)
                break
        return path

    def open_buffer(self, entry: BufferEntry):
        """`entry`'s bytes as a forensics.io.dump.Dump (not read yet), wherever the run is."""
        if self.files is not None:
            return self.files.dump(entry.file)
        from forensics.io.dump import open_dump

        # A run's buffers are the bytes ingest or capture wrote, typed by the manifest: never a text dump.
        return open_dump(self.file_path(entry), allow_empty=True, use_sidecar=False, text_format="binary")

    def has_file(self, entry: BufferEntry) -> bool:
        """Whether `entry`'s file is there (a regular file)."""
        if self.files is not None:
            return self.files.size(entry.file) is not None
        return os.path.isfile(self.file_path(entry))

    def read_buffer(self, entry: BufferEntry, count: int | None = None) -> bytes:
        """The first `count` bytes of `entry`'s file (all of it by default), wherever the run is; for the
        small buffers read whole (detections). OSError or InputError when it cannot be read."""
        if self.files is not None:
            dump = self.files.dump(entry.file)
            return dump.read(0, dump.size if count is None else count)
        from forensics.io.dump import check_readable_file

        path = self.file_path(entry)
        check_readable_file(path)  # a FIFO where a buffer should be would block the read
        with open(path, "rb") as fh:
            return fh.read(-1 if count is None else count)

    @property
    def model_sha256(self) -> str | None:
        return (self.model or {}).get("sha256")

    def log_path(self, log: LogEntry) -> str:
        """Where `log`'s bytes are (a URL in a run at a URL); InputError as for a buffer (file_path)."""
        return self.file_path(log)

    def log_evidence(self) -> LogEvidence:
        """The run's logs and the buffers they are checked against: for every buffer the driver provided (a
        derived one is not what the driver fingerprinted), its label, its tensor name and, when it is its
        stage's only provided buffer, the stage name; then the tags a log's manifest entry maps itself.
        `forensics.buffer.fingerprint.verify_log(path, buffers=evidence.buffers)` checks one log."""
        provided = [b for b in self.buffers if not b.derived]
        per_stage: dict[str, list[BufferEntry]] = {}
        for b in provided:
            per_stage.setdefault(b.stage, []).append(b)
        labels: dict[str, str] = {}
        for b in provided:  # the most specific name first: a label is never shadowed by a tensor or a stage
            labels.setdefault(b.label, b.label)
        for b in provided:
            labels.setdefault(b.tensor, b.label)
        for stage, entries in per_stage.items():
            if len(entries) == 1:
                labels.setdefault(stage, entries[0].label)
        by_label = {b.label: b for b in provided}
        for log in self.logs:
            for tag, label in log.tags:
                if label in by_label:
                    labels[tag] = label
        buffers = {tag: self.file_path(by_label[label]) for tag, label in labels.items()}
        return LogEvidence(tuple((log, self.log_path(log)) for log in self.logs), buffers, labels)

    def image_info(self) -> ImageInfo | None:
        """The `image` stage's picture and its geometry, or None when the run holds no image."""
        entries = [b for b in self.buffers if b.stage == "image"]
        if not entries:
            return None
        entry = entries[0]
        x = entry.extra
        return ImageInfo(entry, width=x.get("width") if _is_int(x.get("width")) else None,
                         height=x.get("height") if _is_int(x.get("height")) else None,
                         format=x.get("format") if isinstance(x.get("format"), str) else None,
                         mode=x.get("mode") if isinstance(x.get("mode"), str) else None,
                         input_size=_pair(x.get("input_size")), resized=_pair(x.get("resized")),
                         offset=_pair(x.get("offset")),
                         resampling=x.get("resampling") if isinstance(x.get("resampling"), str) else None)

    # kept: the manifest (manifest_dict), which load_run reads back checking every key
    def to_dict(self) -> dict:
        return manifest_dict(self.source, self.buffers, model=self.model, input_image=self.input_image,
                             created=self.created, tool=self.tool, capture=self.capture, path=self.path,
                             logs=self.logs)


def saved_run(doc: dict) -> Run:
    """The run a saved capture or ingest document names (`run` its path, beside it its source, model, buffers
    and logs as the manifest lists them): what the report shows of it, no file read."""
    return Run(doc["run"], doc.get("source") or "", tuple(BufferEntry.from_dict(b) for b in doc.get("buffers", ())),
               model=doc.get("model"), logs=tuple(LogEntry.from_dict(log) for log in doc.get("logs", ())))


def manifest_dict(source, buffers, *, model=None, input_image=None, created=None, tool=None, capture=None,
                  path=None, logs=()) -> dict:
    out = {"format": FORMAT, "version": VERSION, "source": source, "created": created, "tool": tool,
           "model": model, "input_image": input_image}
    if capture:
        out["capture"] = capture
    if path is not None:
        out["path"] = path
    out["buffers"] = [b.to_dict() for b in buffers]
    if logs:
        out["logs"] = [log.to_dict() for log in logs]
    return out


# --- loading -------------------------------------------------------------------------------------------

def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _parse_crc(value, where, path) -> int:
    if _is_int(value) and 0 <= value <= 0xFFFFFFFF:
        return value
    if isinstance(value, str):
        text = value.strip().lower()
        text = text[2:] if text.startswith("0x") else text
        if re.fullmatch(r"[0-9a-f]{1,8}", text):
            return int(text, 16)
    raise FormatError(f"crc32 must be a 32-bit number or hex string like \"0x1a2b3c4d\", got {value!r}",
                      where=where, path=path)


def _check_relative(file: str, where, path) -> str:
    """Buffer files live inside the run: relative, '/' separated, no '..' (a hostile manifest reads nothing else)."""
    if isinstance(file, str) and len(file) >= 2 and file[1] == ":" and file[0].isalpha():
        raise FormatError(f"file {file!r} has a Windows drive letter: buffer files are relative to the run, "
                          f"e.g. 'raw/convert_scores.bin'", where=where + ("file",), path=path)
    if isinstance(file, str) and "\\" in file:
        suggestion = file.replace("\\", "/").lstrip("/")
        raise FormatError(f"file {file!r} uses backslashes: write it with '/' separators, relative to the run "
                          f"(e.g. {suggestion!r})", where=where + ("file",), path=path)
    if (not isinstance(file, str) or not file or file.startswith("/") or ":" in file
            or _CONTROL.search(file)):
        raise FormatError(f"file must be a relative path inside the run with '/' separators, got {file!r}",
                          where=where + ("file",), path=path)
    parts = file.split("/")
    if any(p in ("", ".", "..") for p in parts) or file == MANIFEST:
        raise FormatError(f"file {file!r} must name a file inside the run (no '.', '..' or empty parts)",
                          where=where + ("file",), path=path)
    return file


def _file_fields(raw: dict, where: tuple, path: str) -> tuple[str, int, int]:
    """(file, size, crc32) of a buffer's or a log's manifest entry, validated."""
    file = _check_relative(raw.get("file"), where, path)
    size = raw.get("size")
    if not _is_int(size) or size < 0:
        raise FormatError(f"size must be a non-negative integer, got {size!r}", where=where + ("size",), path=path)
    if "crc32" not in raw:
        raise FormatError("crc32 is missing", where=where, path=path)
    return file, size, _parse_crc(raw["crc32"], where + ("crc32",), path)


def _element_fields(raw: dict, where: tuple, path: str) -> dict:
    """A buffer entry's dtype, shape, scale and zero_point, those it gives, validated."""
    kw = {}
    if raw.get("dtype") is not None:
        if not isinstance(raw["dtype"], str):
            raise FormatError("dtype must be a string like \"uint8\"", where=where + ("dtype",), path=path)
        if raw["dtype"] not in RUN_DTYPES:
            raise FormatError(f"dtype {raw['dtype']!r} is not one of {', '.join(RUN_DTYPES)}",
                              where=where + ("dtype",), path=path)
        kw["dtype"] = raw["dtype"]
    if raw.get("shape") is not None:
        shape = raw["shape"]
        if not isinstance(shape, list) or not all(_is_int(d) and d >= 0 for d in shape):
            raise FormatError("shape must be a list of non-negative integers", where=where + ("shape",), path=path)
        kw["shape"] = tuple(shape)
    if raw.get("scale") is not None:
        s = raw["scale"]
        if not isinstance(s, (int, float)) or isinstance(s, bool) or not (s > 0 and s != float("inf")):
            raise FormatError("scale must be a positive finite number", where=where + ("scale",), path=path)
        kw["scale"] = float(s)
    if raw.get("zero_point") is not None:
        if not _is_int(raw["zero_point"]):
            raise FormatError("zero_point must be an integer", where=where + ("zero_point",), path=path)
        kw["zero_point"] = raw["zero_point"]
    return kw


def _record_fields(raw: dict, tensor: str, where: tuple, path: str) -> dict:
    """A buffer entry's record_size, role and derived_from, those it gives, validated."""
    kw = {}
    if raw.get("record_size") is not None:
        if not _is_int(raw["record_size"]) or raw["record_size"] <= 0:
            raise FormatError("record_size must be a positive integer", where=where + ("record_size",), path=path)
        kw["record_size"] = raw["record_size"]
    if raw.get("role") is not None:
        if raw["role"] not in ROLES:
            raise FormatError(f"role must be one of {', '.join(ROLES)}, got {raw['role']!r}",
                              where=where + ("role",), path=path)
        kw["role"] = raw["role"]
    if raw.get("derived_from") is not None:
        if not isinstance(raw["derived_from"], str) or not raw["derived_from"]:
            raise FormatError("derived_from must be the label of the buffer it was computed from, e.g. "
                              "\"raw:convert_scores\"", where=where + ("derived_from",), path=path)
        kw["derived_from"] = raw["derived_from"]
    elif raw.get("relayouted_from") == "raw":  # runs ingested before derived_from: the relayout of raw:TENSOR
        kw["derived_from"] = f"raw:{tensor}"
    return kw


def _entry(raw, i: int, path: str) -> BufferEntry:
    where = ("buffers", str(i))
    if not isinstance(raw, dict):
        raise FormatError("each buffer must be a JSON object", where=where, path=path)
    stage = raw.get("stage")
    if isinstance(stage, str):  # (a list or an object is no stage, and no key of the aliases either)
        stage = STAGE_ALIASES.get(stage, stage)  # link: parameters -> params
    if stage not in STAGES:
        raise FormatError(f"stage must be one of {', '.join(STAGES)}, got {stage!r}", where=where + ("stage",),
                          path=path)
    tensor = raw.get("tensor", stage)
    if not isinstance(tensor, str) or not tensor:
        raise FormatError("tensor must be a non-empty string", where=where + ("tensor",), path=path)
    file, size, crc = _file_fields(raw, where, path)
    kw = {**_element_fields(raw, where, path), **_record_fields(raw, tensor, where, path)}
    known = {"stage", "tensor", "file", "size", "crc32", "dtype", "shape", "scale", "zero_point", "record_size",
             "role", "derived_from"}
    extra = {k: v for k, v in raw.items() if k not in known}
    return BufferEntry(stage, tensor, file, size, crc, extra=extra, **kw)


def _entries(items, key: str, parse, seen: set, names: set, path: str) -> tuple:
    """The manifest's list `key` parsed entry by entry; two entries of one (stage, tensor) or one file are refused."""
    if not isinstance(items, list):
        raise FormatError(f"{key} must be a list", where=(key,), path=path)
    out = []
    for i, item in enumerate(items):
        entry = parse(item, i, path)
        if entry.key in seen:
            raise FormatError(f"two {key} are {entry.label}", where=(key, str(i)), path=path)
        if entry.file in names:
            raise FormatError(f"two {key} share the file {entry.file!r}", where=(key, str(i)), path=path)
        seen.add(entry.key)
        names.add(entry.file)
        out.append(entry)
    return tuple(out)


def _log_entry(raw, i: int, path: str) -> LogEntry:
    where = ("logs", str(i))
    if not isinstance(raw, dict):
        raise FormatError("each log must be a JSON object", where=where, path=path)
    name = raw.get("name")
    if not isinstance(name, str) or not name:
        raise FormatError("name must be a non-empty string", where=where + ("name",), path=path)
    file, size, crc = _file_fields(raw, where, path)
    tags = raw.get("tags") or {}
    if not isinstance(tags, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in tags.items()):
        raise FormatError("tags must map a logged tag to a buffer label, e.g. {\"INPUT\": \"input\"}",
                          where=where + ("tags",), path=path)
    extra = {k: v for k, v in raw.items() if k not in ("name", "file", "size", "crc32", "tags")}
    return LogEntry(name, file, size, crc, tuple(tags.items()), extra=extra)


def location(run_path: str, file: str) -> str:
    """A file of a run, named for messages: a path inside a local run, a URL inside a run at a URL."""
    if "://" in run_path:
        return run_path.rstrip("/") + "/" + file
    return os.path.join(run_path, *file.split("/"))


def parse_manifest(text: str, run_path: str, files=None) -> Run:
    """Validate a manifest's JSON text; every problem is an error naming the manifest and where in it.
    `files`: where the run's buffers are read from when it is not a local directory (Run.files)."""
    path = location(run_path, MANIFEST)
    from forensics.io.jsonio import loads

    raw = loads(text, path, "manifest JSON")
    if not isinstance(raw, dict):
        raise FormatError("the manifest must be a JSON object", path=path)
    if raw.get("format") != FORMAT:
        raise FormatError(f"format must be {FORMAT!r}, got {raw.get('format')!r} (not a forensics run)",
                          where=("format",), path=path)
    version = raw.get("version")
    if not _is_int(version) or version < 1:
        raise FormatError(f"version must be a positive integer, got {version!r}", where=("version",), path=path)
    if version > VERSION:
        raise InputError(f"run format version {version} is newer than this forensics reads ({VERSION}); "
                         "upgrade forensics", path)
    source = raw.get("source")
    if not isinstance(source, str) or not source.strip():
        raise FormatError("source must be a non-empty string such as \"libedgetpu\" or \"ours\"",
                          where=("source",), path=path)
    model = raw.get("model")
    if model is not None:
        if not isinstance(model, dict) or not all(isinstance(model.get(k), (str, type(None)))
                                                  for k in ("path", "sha256")):
            raise FormatError("model must be null or {\"path\": ..., \"sha256\": ...}", where=("model",), path=path)
        sha = model.get("sha256")
        if sha is not None and not re.fullmatch(r"[0-9a-f]{64}", sha):
            raise FormatError("model sha256 must be 64 lowercase hex digits", where=("model", "sha256"), path=path)
    for key in ("input_image", "created", "tool"):
        if raw.get(key) is not None and not isinstance(raw[key], str):
            raise FormatError(f"{key} must be a string or null", where=(key,), path=path)
    capture = raw.get("capture")
    if capture is not None and not isinstance(capture, dict):
        raise FormatError("capture must be an object", where=("capture",), path=path)
    seen, names = set(), set()  # (stage, tensor) and file of every buffer and log: each once
    entries = _entries(raw.get("buffers"), "buffers", _entry, seen, names, path)
    logs = _entries(raw.get("logs", []), "logs", _log_entry, seen, names, path)
    return Run(path=run_path, source=source.strip(), buffers=entries, model=model,
               input_image=raw.get("input_image"), created=raw.get("created"), tool=raw.get("tool"),
               version=version, capture=capture, logs=logs, files=files)


def load_run(path) -> Run:
    """Open a run directory (a path, or an fsspec URL: forensics.runs.remote) read-only and validate its
    manifest (files are checked by `verify_run`)."""
    path = os.fspath(path)
    from forensics.runs.remote import is_url

    if is_url(path):
        return _load_remote_run(path)
    if not os.path.exists(path):
        raise InputError("no such run directory", path)
    if not os.path.isdir(path):
        raise InputError("is not a directory (a run is a directory with manifest.json)", path)
    manifest = os.path.join(path, MANIFEST)
    if not os.path.lexists(manifest):
        raise InputError("no manifest.json: not a run (or a capture that did not finish)", path)
    from forensics.io.dump import read_small_file

    if os.path.islink(manifest):
        raise InputError("is a symbolic link; a run's files are read only from inside the run", manifest)
    return _manifest_run(read_small_file(manifest, _MAX_MANIFEST, "a manifest"), path)


def _manifest_run(data: bytes, path: str, files=None) -> Run:
    manifest = location(path, MANIFEST)
    if not data.strip():
        raise InputError("manifest is empty", manifest)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("manifest is not UTF-8 text", manifest) from None
    return parse_manifest(text, path, files)


def _load_remote_run(url: str) -> Run:
    """A run at an fsspec URL, its manifest read through the filesystem (buffers are read when needed)."""
    from forensics.runs.remote import run_files

    files = run_files(url)
    data = files.read_small(MANIFEST, _MAX_MANIFEST, "a manifest")
    if data is None:
        raise InputError("no manifest.json: not a run (or a capture that did not finish)", files.url)
    return _manifest_run(data, files.url, files)


# --- verifying -----------------------------------------------------------------------------------------

def file_crc32(path) -> tuple[int, int]:
    """(size, CRC32) of a file, streamed."""
    crc, size = 0, 0
    with open(path, "rb", buffering=0) as fh:
        # A buffer the size of the file (up to 1 MiB): a fresh 1 MiB per small buffer costs a page-faulted
        # allocation each time where malloc returns memory eagerly (Dask workers set MALLOC_TRIM_THRESHOLD_).
        view = memoryview(bytearray(max(1, min(_COPY_BLOCK, os.fstat(fh.fileno()).st_size))))
        while True:
            n = fh.readinto(view)
            if not n:
                break
            crc = crc32(view[:n], crc)
            size += n
    return size, crc


@dataclass(frozen=True)
class BufferCheck:
    """A buffer's file against its manifest entry: ok, changed (size or CRC), or missing."""

    entry: BufferEntry
    status: str  # "ok" / "changed" / "missing"
    size: int | None
    crc32: int | None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def message(self, run_path: str) -> str:
        where = location(run_path, self.entry.file)
        if self.status == "missing":
            return f"{where}: buffer {self.entry.label} is missing (the manifest lists it)"
        if self.size != self.entry.size:
            return (f"{where}: buffer {self.entry.label} changed after capture: {self.size} bytes, the manifest "
                    f"says {self.entry.size}")
        return (f"{where}: buffer {self.entry.label} changed after capture: CRC32 {format_crc(self.crc32)}, the "
                f"manifest says {format_crc(self.entry.crc32)}")

    # kept: the document names the entry's stage, tensor, size and CRC, not its file, so no entry is read back
    def to_dict(self) -> dict:
        return {"stage": self.entry.stage, "tensor": self.entry.tensor, "status": self.status,
                "size": self.size, "crc32": format_crc(self.crc32) if self.crc32 is not None else None,
                "manifest_size": self.entry.size, "manifest_crc32": format_crc(self.entry.crc32)}


def check_buffer(run: Run, entry: BufferEntry, *, verify: bool = True) -> BufferCheck:
    """`entry`'s file against the manifest. With `verify` its CRC32 is taken again (the file is read whole);
    without, only its size is checked and the manifest's CRC32, written when the run was captured or ingested,
    is trusted: a batch of runs then reads no byte of the buffers that match."""
    if run.files is not None:  # a run at a URL: streamed through its filesystem
        if not verify:
            size = run.files.size(entry.file)
            if size == entry.size:
                return BufferCheck(entry, "ok", size, entry.crc32)
        got = run.files.checksum(entry.file)
        if got is None:
            return BufferCheck(entry, "missing", None, None)
        status = "ok" if got == (entry.size, entry.crc32) else "changed"
        return BufferCheck(entry, status, *got)
    path = run.file_path(entry)
    try:
        if not verify:
            st = os.stat(path)
            if not stat.S_ISREG(st.st_mode):
                return BufferCheck(entry, "missing", None, None)
            if st.st_size == entry.size:
                return BufferCheck(entry, "ok", st.st_size, entry.crc32)
            return BufferCheck(entry, "changed", *file_crc32(path))  # rare: say what it holds now
        if not os.path.isfile(path):
            return BufferCheck(entry, "missing", None, None)
        size, crc = file_crc32(path)
    except OSError:
        return BufferCheck(entry, "missing", None, None)
    status = "ok" if (size, crc) == (entry.size, entry.crc32) else "changed"
    return BufferCheck(entry, status, size, crc)


def verify_run(run: Run, *, verify: bool = True) -> tuple[BufferCheck, ...]:
    """Every buffer of `run` against its manifest entry (`verify`: see check_buffer)."""
    return tuple(check_buffer(run, e, verify=verify) for e in run.buffers)


def verify_logs(run: Run) -> tuple[BufferCheck, ...]:
    """Every log of `run` against its manifest entry (its CRC32 taken again)."""
    return tuple(check_buffer(run, log) for log in run.logs)


# --- writing -------------------------------------------------------------------------------------------

def sha256_file(path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(_COPY_BLOCK), b""):
            h.update(block)
    return h.hexdigest()


def model_record(path) -> dict:
    """The manifest's `model`: the path as given and the file's sha256 (runs of different models say so)."""
    from forensics.io.dump import check_readable_file

    path = os.fspath(path)
    try:
        check_readable_file(path)  # /dev/zero would hash forever, a FIFO would block
    except InputError as exc:
        if str(exc).endswith("no such file"):
            raise InputError("no such model file", path) from None
        raise
    try:
        return {"path": path, "sha256": sha256_file(path)}
    except FileNotFoundError:
        raise InputError("no such model file", path) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a .tflite file", path) from None
    except OSError as exc:
        raise InputError(f"cannot read the model: {exc.strerror or exc}", path) from None


def now_utc() -> str:
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat().replace("+00:00", "Z")


def safe_name(text: str) -> str:
    """A file name for a tensor name (`TFLite_Detection_PostProcess:1` -> `TFLite_Detection_PostProcess_1`)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", text).strip("._") or "buffer"
    return name[:120]


JOURNAL = ".forensics-journal"  # inside a run being added to: what the write created, for a killed writer


def check_tensor_name(tensor: str) -> str:
    """A buffer's tensor name, refused when it could name a path outside the run wherever it is used as one
    (an .npz member on export, a file name in another tool): no NUL, no '.' or '..' parts, no absolute path,
    drive letter or backslash. TFLite names use '/' and ':' ("MobilenetV1/Conv2d_0/Relu6",
    "TFLite_Detection_PostProcess:1"), which stay allowed; other control characters are a display matter
    (they are escaped wherever a name is printed, and quoted in export's member names)."""
    if not isinstance(tensor, str) or not tensor:
        raise InputError("a buffer needs a tensor name")
    shown = ascii(tensor[:80])
    if "\0" in tensor:
        raise InputError(f"tensor name {shown} holds a NUL character")
    if len(tensor) > 1024:
        raise InputError(f"tensor name {shown}... is {len(tensor)} characters long (at most 1024)")
    if "\\" in tensor:
        raise InputError(f"tensor name {shown} holds a backslash (a path separator on Windows)")
    if tensor.startswith("/") or (len(tensor) >= 2 and tensor[1] == ":" and tensor[0].isascii()
                                  and tensor[0].isalpha()):
        raise InputError(f"tensor name {shown} is an absolute path")
    if any(part in (".", "..") for part in tensor.split("/")):
        raise InputError(f"tensor name {shown} has a '.' or '..' part (it would name a path outside the run)")
    return tensor


class _Journal:
    """The files and directories an in-place write creates, each noted (flushed) before it is created, and the
    old files it will delete: what the next writer removes if this one is killed (`_recover_in_place`)."""

    def __init__(self, run_path: str):
        self.path = os.path.join(run_path, JOURNAL)
        self._fh = None
        self._mode = "x"  # made by this write (a journal left by a killed one was dealt with first)

    def note(self, kind: str, rel: str) -> None:
        if self._fh is None:
            self._fh = open(self.path, self._mode, encoding="utf-8")
            self._mode = "a"
        self._fh.write(json.dumps({kind: rel}) + "\n")
        self._fh.flush()

    def close(self) -> None:
        if self._fh is not None:
            self._fh.close()
            self._fh = None

    def remove(self) -> None:
        self.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


def _journal_items(path: str) -> list[tuple[str, str]]:
    """(kind, relative path) of a journal; lines cut short by a kill (the last one) are skipped."""
    items = []
    with open(path, "rb") as fh:
        data = fh.read(_MAX_MANIFEST + 1)
    for line in data.splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and len(item) == 1:
            (kind, rel), = item.items()
            if kind in ("file", "dir", "old") and isinstance(rel, str):
                try:
                    _check_relative(rel, (), path)
                except FormatError:
                    continue
                items.append((kind, rel))
    return items


def _remove_empty_dirs(run_path: str, rels) -> None:
    for rel in sorted(set(rels), key=lambda r: -r.count("/")):
        path = _inside(run_path, rel)
        if path is not None and not os.path.islink(path):
            with contextlib.suppress(OSError):
                os.rmdir(path)


def _recover_in_place(run_path: str) -> None:
    """Under the writer's lock: finish or undo what a killed in-place writer left in the run. The manifest in
    place (the old one or the new one: it is replaced in one rename) decides: every file the journal names that
    it does not list is removed, and the run is then exactly that manifest's."""
    for name in os.listdir(run_path):
        if name.startswith("." + MANIFEST + ".") and name.endswith(".tmp"):
            with contextlib.suppress(OSError):
                os.unlink(os.path.join(run_path, name))
    journal = os.path.join(run_path, JOURNAL)
    if not os.path.lexists(journal):
        return
    if not os.path.isfile(journal) or os.path.islink(journal):
        raise InputError(f"{JOURNAL} is not a regular file; remove it to write to this run", run_path)
    try:  # no manifest: the killed writer was writing the first one into an empty directory
        if os.path.lexists(os.path.join(run_path, MANIFEST)):
            run = load_run(run_path)
            used = {e.file for e in run.buffers + run.logs}
        else:
            used = set()
    except ForensicsError as exc:  # a manifest we cannot read: nothing is removed on a guess
        raise InputError(f"the run has a {JOURNAL} from a write that did not finish, and its manifest cannot "
                         f"be read ({exc}): repair the manifest or write a new run", run_path) from None
    items = _journal_items(journal)
    for kind, rel in items:
        # only what a writer of the project made (its own file names; the old files a manifest listed), and
        # only inside the run: a journal naming a file through a directory that is a link removes nothing
        if kind in ("file", "old") and rel not in used and (kind == "old" or _PROJECT_FILE.fullmatch(rel)):
            _unlink_inside(run_path, rel)
    _remove_empty_dirs(run_path, [rel for kind, rel in items if kind == "dir"])
    os.unlink(journal)


# The names RunBuilder gives the files it writes: <stage or logs>[-N]/<safe_name>[-N].bin or .log
_PROJECT_FILE = re.compile(r"[a-z]+(?:-[0-9]+)?/[A-Za-z0-9._-]+\.(?:bin|log)")


def _inside(run_path: str, rel: str) -> str | None:
    """The path of `rel` in the run when no directory on the way to it is a symbolic link (so that it is
    inside the run whatever the links point at), else None."""
    parts = rel.split("/")
    directory = run_path
    for part in parts[:-1]:
        directory = os.path.join(directory, part)
        if os.path.islink(directory) or not os.path.isdir(directory):
            return None
    return os.path.join(directory, parts[-1])


def _unlink_inside(run_path: str, rel: str) -> None:
    """Remove the run's file `rel` (a link itself, never what it points at); nothing outside the run."""
    path = _inside(run_path, rel)
    if path is not None:
        with contextlib.suppress(OSError):
            os.unlink(path)


class RunBuilder:
    """Collects the buffers of a run being written.

    A new run is built in a temporary directory that `write_run` renames into place. A run that exists is
    written in place: new buffers get file names no file has, a replaced buffer's old file stays until the
    new manifest is in, and the manifest is replaced in one rename, so at every instant the run at its name is
    whole, the old one or the new one (a journal lets the next writer clean up after a killed one).

    Evidence is never replaced by accident: a buffer the driver provided is replaced by another only with
    `replace_buffers`; a derived buffer (`derived_from`) never takes a provided one's place (it goes to its
    DERIVED_HOME stage beside it), and a provided buffer arriving where a derived one stands moves it there.
    Every file is written inside the run: a directory of the run that is a symbolic link is never written
    through (the buffer goes into a directory of another name)."""

    def __init__(self, directory: str, source: str, base: Run | None, *, journal: _Journal | None = None,
                 replaced_run: Run | None = None, replace_buffers: bool = False):
        self.directory = directory
        self.source = source
        self.base = base
        self.entries: dict[tuple[str, str], BufferEntry] = {}
        self.logs: dict[str, LogEntry] = {}
        self.replace_buffers = replace_buffers
        self._replaced: list[str] = []  # provided buffers this write replaced (replace_buffers)
        self._dropped: list[str] = []  # derived buffers dropped (what they were derived from was replaced)
        self.run: Run | None = None  # what was written, once write_run is done
        self.model = base.model if base else None
        self.input_image = base.input_image if base else None
        self.capture = dict(base.capture) if base and base.capture else None
        self.created = base.created if base else None
        self._journal = journal
        self._new: set[str] = set()  # files this write created (removed again if it fails)
        self._new_dirs: list[str] = []
        self._old: set[str] = set()  # files of the run in place, removed once the new manifest is in
        if replaced_run is not None:  # replace=True over a run: its files go once the new run is in
            self._old.update(e.file for e in replaced_run.buffers + replaced_run.logs)
        if base is not None:
            for entry in base.buffers + base.logs:
                src = base.file_path(entry)
                if not os.path.isfile(src):
                    what = "a directory" if os.path.isdir(src) else "missing"
                    raise InputError(f"{'log' if entry.stage == 'log' else 'buffer'} {entry.label} of the run is "
                                     f"{what} (the manifest lists it): repair the run or ingest into a new one", src)
                if isinstance(entry, LogEntry):
                    self.logs[entry.name] = entry
                else:
                    self.entries[entry.key] = entry
                self._old.add(entry.file)

    @property
    def replaced(self) -> list[str]:
        """The labels of the buffers this write replaced: provided ones (with replace_buffers), and derived ones
        dropped and not derived again."""
        now = {e.label for e in self.entries.values()}
        return self._replaced + [label for label in self._dropped if label not in now and label not in self._replaced]

    def _used(self) -> set[str]:
        files = [e.file for e in self.entries.values()] + [log.file for log in self.logs.values()]
        return {f.casefold() for f in files} | {f.casefold() for f in self._old}

    def _dir_for(self, name: str) -> str:
        """A directory of the run to put `name`'s files in: `name` itself, or `name-2` ... when that is a
        symbolic link or not a directory (nothing is written through a link, wherever it points)."""
        rel, n = name, 2
        while True:
            path = os.path.join(self.directory, rel)
            if not os.path.islink(path) and (os.path.isdir(path) or not os.path.lexists(path)):
                return rel
            rel, n = f"{name}-{n}", n + 1

    def _file_for(self, stage: str, tensor: str, suffix: str = ".bin") -> str:
        """A file name no buffer uses and no file has (compared without case: a run is also read on Windows)."""
        used = self._used()
        base = f"{self._dir_for(stage)}/{safe_name(tensor)}"
        name, n = base + suffix, 2
        while name.casefold() in used or os.path.lexists(os.path.join(self.directory, *name.split("/"))):
            name, n = f"{base}-{n}{suffix}", n + 1
        return name

    def _remove_new(self, file: str) -> None:
        if file in self._new:  # written by this write: nobody else lists it
            self._new.discard(file)
            _unlink_inside(self.directory, file)

    def _drop(self, stage: str, tensor: str) -> None:
        old = self.entries.pop((stage, tensor), None)
        if old is None:
            return
        (self._dropped if old.derived else self._replaced).append(old.label)
        self._remove_new(old.file)
        if not old.derived:  # what forensics derived from the replaced buffer goes with it
            for entry in [e for e in self.entries.values() if e.derived_from == old.label]:
                self._drop(entry.stage, entry.tensor)

    def _refuse_replacing(self, old, what: str) -> None:
        if self.replace_buffers or old.file in self._new:
            return
        given = old.extra.get("from_file")
        held = f"{what} {old.label}{f' (from {given})' if given else ''}".replace("{", "{{").replace("}", "}}")
        raise InputError(f"the run already holds {held}; evidence is not replaced unless asked: give {{replace}} "
                         "to replace it, or write a new run",
                         self.base.path if self.base is not None else self.directory, params=True)

    def _place(self, stage: str, tensor: str, derived_from: str | None) -> str:
        """The stage a new buffer (stage, tensor) is written to, after making room for it."""
        old = self.entries.get((stage, tensor))
        if old is None:
            return stage
        if derived_from is not None:
            if not old.derived:  # the driver's own stays where it is; the derived one goes beside it
                stage = DERIVED_HOME.get(stage, stage)
                beside = self.entries.get((stage, tensor))
                if beside is not None and not beside.derived or beside is old:
                    raise InputError(f"the run holds the driver's {old.label}"
                                     f"{f' and {beside.label}' if beside is not old else ''}: forensics' buffer "
                                     f"derived from {derived_from} has no place beside them (nothing was written)")
            self._drop(stage, tensor)
            return stage
        if old.derived and stage in DERIVED_HOME:  # the driver's own takes its place; the derived one moves aside
            home = DERIVED_HOME[stage]
            del self.entries[(stage, tensor)]
            beside = self.entries.get((home, tensor))
            if beside is None or beside.derived:
                self._drop(home, tensor)
                moved = dataclasses.replace(old, stage=home)
                self.entries[moved.key] = moved
            else:  # the home holds a provided buffer too: the derived one goes
                self.entries[(stage, tensor)] = old
                self._drop(stage, tensor)
            return stage
        if not old.derived:
            self._refuse_replacing(old, "buffer")
        self._drop(stage, tensor)
        return stage

    def _make_dir(self, rel: str) -> None:
        path = os.path.join(self.directory, *rel.split("/"))
        if os.path.isdir(path) and not os.path.islink(path):
            return
        if self._journal is not None:
            self._journal.note("dir", rel)
        os.mkdir(path)
        self._new_dirs.append(rel)

    def add_bytes(self, stage: str, tensor: str | None, data, **meta) -> BufferEntry:
        view = memoryview(data).cast("B") if not isinstance(data, (bytes, bytearray)) else data
        return self.add_chunks(stage, tensor, (view,), **meta)

    def add_file(self, stage: str, tensor: str | None, src, **meta) -> BufferEntry:
        """Copy a file into the run (streamed), with its size and CRC32."""
        with _source_file(src) as fin:
            return self.add_chunks(stage, tensor, iter(lambda: fin.read(_COPY_BLOCK), b""), **meta)

    def add_dump(self, stage: str, tensor: str | None, dump, **meta) -> BufferEntry:
        """Copy a dump's data bytes (a text dump's, an array's without its header, a slice) into the run,
        streamed in windows: memory stays bounded for any size."""
        return self.add_chunks(stage, tensor, (view for _, view in dump.iter_chunks(chunk_size=_COPY_BLOCK)),
                               **meta)

    def add_chunks(self, stage: str, tensor: str | None, chunks, *, derived_from: str | None = None,
                   **meta) -> BufferEntry:
        """Write byte chunks as one buffer of the run, with its size and CRC32. `derived_from`: the label of the
        buffer forensics computed these bytes from (they never take the place of a provided buffer)."""
        tensor = tensor or stage
        self._check(stage, tensor)
        if meta.get("dtype") is not None and meta["dtype"] not in RUN_DTYPES:
            raise InputError(f"dtype {meta['dtype']!r} of {stage}:{tensor} is not numeric (a run holds numbers)")
        stage = self._place(stage, tensor, derived_from)
        rel = self._file_for(stage, tensor)
        crc, size = self._write(rel, chunks)
        entry = BufferEntry(stage, tensor, rel, size, crc, derived_from=derived_from, **_meta(meta))
        self.entries[entry.key] = entry
        return entry

    def add_log(self, name: str, src, **extra) -> LogEntry:
        """Copy a driver's log into the run as the bytes it is (any code page), with its size and CRC32."""
        check_tensor_name(name)
        old = self.logs.get(name)
        if old is not None:
            self._refuse_replacing(old, "log")
            del self.logs[name]
            self._replaced.append(old.label)
            self._remove_new(old.file)
        rel = self._file_for("logs", name, ".log")
        with _source_file(src) as fin:
            crc, size = self._write(rel, iter(lambda: fin.read(_COPY_BLOCK), b""))
        log = LogEntry(name, rel, size, crc, extra={k: v for k, v in extra.items() if v is not None})
        self.logs[name] = log
        return log

    def _write(self, rel: str, chunks) -> tuple[int, int]:
        """Write a new file of the run (noted in the journal first); (CRC32, size)."""
        self._make_dir(rel.split("/", 1)[0])
        if self._journal is not None:
            self._journal.note("file", rel)
        dst = os.path.join(self.directory, *rel.split("/"))
        crc, size = 0, 0
        with open(dst, "xb") as fout:  # a failing write is reported by write_run naming the run
            self._new.add(rel)
            for block in chunks:
                crc = crc32(block, crc)
                size += len(block)
                fout.write(block)
        return crc, size

    @staticmethod
    def _check(stage: str, tensor: str) -> None:
        if stage not in STAGES:
            raise InputError(f"unknown stage {stage!r} (stages: {', '.join(STAGES)})")
        check_tensor_name(tensor)

    def ordered(self) -> list[BufferEntry]:
        order = {s: i for i, s in enumerate(STAGES)}
        entries = list(self.entries.values())
        return sorted(entries, key=lambda e: order[e.stage])  # stable: capture order within a stage

    def manifest(self) -> dict:
        return manifest_dict(self.source, self.ordered(), model=self.model, input_image=self.input_image,
                             created=self.created or now_utc(), tool=f"forensics {__version__}",
                             capture=self.capture, logs=tuple(self.logs.values()))

    def _undo(self) -> None:
        """A write that failed before its manifest went in: remove what it created."""
        for rel in self._new:
            _unlink_inside(self.directory, rel)
        _remove_empty_dirs(self.directory, self._new_dirs)


@contextlib.contextmanager
def _source_file(src):
    """A file to copy into a run, opened for reading (checked first: a FIFO or a device would block)."""
    src = os.fspath(src)
    from forensics.io.dump import check_readable_file

    check_readable_file(src)
    try:
        fin = open(src, "rb")
    except OSError as exc:
        raise InputError(f"cannot read: {exc.strerror or exc}", src) from None
    with fin:
        yield fin


_ENTRY_FIELDS = ("dtype", "shape", "scale", "zero_point", "record_size", "role")


def _meta(meta: dict) -> dict:
    """Keyword fields of a BufferEntry; anything else (model_tensor, from_file ...) goes to `extra`."""
    out, extra = {}, {}
    for key, value in meta.items():
        if value is None:
            continue
        if key == "shape":
            value = tuple(int(d) for d in value)
        (out if key in _ENTRY_FIELDS else extra)[key] = value
    if extra:
        out["extra"] = extra
    return out


def check_manifest(text: str, run_path: str) -> None:
    """Refuse, before anything is replaced, a manifest that load_run would not read back: over the size
    limit, or a field the reader rejects. A write that fails leaves the run as it was."""
    size = len(text.encode("utf-8"))
    if size > _MAX_MANIFEST:
        raise InputError(f"the manifest would be {size} bytes, over the {_MAX_MANIFEST} bytes a reader accepts; "
                         "nothing was written: put the buffers into several runs", run_path)
    parse_manifest(text, run_path)


@contextlib.contextmanager
def write_run(path, source: str, *, add: bool = False, replace: bool = False, replace_buffers: bool = False):
    """Build a run atomically: `with write_run(dir, "ours") as b: b.add_file(...)`.

    add=True starts from the run already at `path` (when there is one); replace=True replaces a run there.
    Either way the new manifest is checked (the reader's limits) before anything is replaced, and the run at
    `path` is at every instant whole: a new run appears in one rename of its temporary directory, a run that
    exists gets its new buffers under new names and then its manifest in one rename (RunBuilder). A buffer
    the run holds is replaced by a provided one only with replace_buffers (RunBuilder). Writers of
    one run take turns (forensics.io.outputs.exclusive), each starting from the manifest the last one wrote, and
    whatever a killed writer left is cleaned up (or the run it moved aside put back) by the next one.
    `builder.run` is then the run as written.
    """
    path, source = _target(path, source, add=add, replace=replace)
    make_parents(path)
    with exclusive(path):
        recover(path, MANIFEST)  # beside the run: a killed writer's temporary directory, a run moved aside
        if not os.path.lexists(path):
            with atomic_directory(path, marker=MANIFEST) as tmp:
                builder = RunBuilder(tmp, source, None)
                yield builder
                text = _manifest_text(builder, path)
                _write_manifest(tmp, text)
            builder.run = parse_manifest(text, path)
            return
        if not os.path.isdir(path):
            raise InputError("exists and is not a directory (a run is a directory with manifest.json)", path)
        if not (add or replace):
            raise InputError("already exists (choose a new run directory)", path)
        _recover_in_place(path)
        base, replaced_run = _there(path, source, add=add)
        journal = _Journal(path)
        try:
            builder = RunBuilder(path, source, base, journal=journal, replaced_run=replaced_run,
                                 replace_buffers=replace_buffers)
            try:
                yield builder
                text = _manifest_text(builder, path)
                journal.close()
            except BaseException:
                builder._undo()
                journal.remove()
                raise
            _commit_in_place(path, text, builder, journal)
        except OSError as exc:
            if exc.filename is not None and not os.path.abspath(str(exc.filename)).startswith(path + os.sep):
                raise InputError(f"cannot read: {exc.strerror or exc}", exc.filename) from None
            raise InputError(f"cannot write: {exc.strerror or exc}", path) from None
        builder.run = parse_manifest(text, path)


def _target(path, source, *, add: bool, replace: bool) -> tuple[str, str]:
    """(the run directory, written where a link to it leads; the source name), checked: a source is named, and a
    run that exists is added to or replaced only when asked."""
    path = os.path.abspath(os.fspath(path))
    if os.path.islink(path):  # a run reached through a link is written where it is; the link stays
        path = os.path.realpath(path)
    if not isinstance(source, str) or not source.strip():
        raise InputError("a run needs a source name such as libedgetpu or ours")
    source = source.strip()
    if os.path.lexists(path) and not (add or replace) and os.path.lexists(os.path.join(path, MANIFEST)):
        raise InputError("already exists (choose a new run directory)", path)
    return path, source


def _there(path: str, source: str, *, add: bool) -> tuple[Run | None, Run | None]:
    """(the run added to, the run replaced) of the directory at `path`: with `add`, the run there of this source;
    else the run there, whose files go once the new one is in (None when it does not load). A non-empty
    directory that is no run is refused."""
    if add and os.path.lexists(os.path.join(path, MANIFEST)):
        base = load_run(path)
        if base.source != source:
            raise InputError(f"the run's source is {base.source!r}, not {source!r} (one run per source)", path)
        return base, None
    if os.listdir(path):
        if not os.path.lexists(os.path.join(path, MANIFEST)):
            raise InputError("is a non-empty directory (no manifest.json): refusing to write a run into it; "
                             "choose a new directory", path)
        with contextlib.suppress(ForensicsError):
            return None, load_run(path)  # its files go once the new run is in
    return None, None


def _manifest_text(builder: RunBuilder, path: str) -> str:
    text = json.dumps(builder.manifest(), indent=2) + "\n"
    check_manifest(text, path)
    return text


def _write_manifest(directory: str, text: str) -> None:
    with open(os.path.join(directory, MANIFEST), "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())


def _manifest_is(path: str, text: str) -> bool:
    with contextlib.suppress(OSError):
        with open(os.path.join(path, MANIFEST), "rb") as fh:
            return fh.read(len(text.encode("utf-8")) + 1) == text.encode("utf-8")
    return False


def _commit_in_place(path: str, text: str, builder: RunBuilder, journal: _Journal) -> None:
    """The new manifest in one rename, then the files it no longer lists removed, then the journal."""
    used = {e.file for e in builder.entries.values()} | {log.file for log in builder.logs.values()}
    old = sorted(f for f in builder._old if f not in used)
    dirs = sorted({rel.rsplit("/", 1)[0] for rel in old if "/" in rel})
    try:
        for rel in old:  # noted before the rename: a writer killed after it still has them removed
            journal.note("old", rel)
        for rel in dirs:
            journal.note("dir", rel)
        journal.close()
        write_text_atomic(os.path.join(path, MANIFEST), text, durable=True)
    except BaseException:
        if not _manifest_is(path, text):  # (an interrupt may come just after the rename)
            builder._undo()
            journal.remove()
        raise
    for rel in old:
        _unlink_inside(path, rel)
    _remove_empty_dirs(path, dirs)
    journal.remove()
