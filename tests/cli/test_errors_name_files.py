"""Every input error names the file it is about (issue 17): a table-driven sweep over every command that takes files.

Each case makes ONE file argument (or file-valued option, sidecar, postprocess.json, manifest.json, output path)
bad in one way -- missing, empty, a directory, garbage, malformed JSON, wrong size -- with every other argument
good, and asserts: exit 2, exactly one line on stderr, and that line holds the bad file's name as given.
The bad files get distinctive names (`bad_<command>_<argument>_<defect>`) so a message naming a different file
cannot pass by accident.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import run_cli

GOOD_DUMP = "dumps/libedgetpu/convert_scores.bin"
GOOD_BOXES = "dumps/ours/Squeeze1.bin"
GOOD_SCORES = "dumps/ours/convert_scores.bin"
DEPS = "dumps/face_ssd"
GARBAGE = bytes(range(256)) * 3 + b"\xff\xfe garbage \x00"

# defect -> how the bad file is made at `path` (None: it does not exist)
DEFECTS = {
    "missing": None,
    "empty": lambda p: p.write_bytes(b""),
    "dir": lambda p: p.mkdir(),
    "garbage": lambda p: p.write_bytes(GARBAGE),
    "badjson": lambda p: p.write_text('{"tensor": "x", "shape": [1, 2,', encoding="utf-8"),
    "notutf8": lambda p: p.write_bytes(b'{"a": "\xff\xfe"}'),
    "jsonlist": lambda p: p.write_text("[1, 2, 3]", encoding="utf-8"),
    "truncated": lambda p: p.write_bytes(_small_model()[:200]),
    "short": lambda p: p.write_bytes(b"\x01" * 7),
    "nodetect": lambda p: p.write_bytes(_plain_model()),
    "prose": lambda p: p.write_text("nothing here but words\nand more words\n", encoding="utf-8"),
    "xxd-badhex": lambda p: p.write_text("00000000: zz zz\n", encoding="utf-8"),
    "snap-json-value": lambda p: p.write_text('{"0x48788": "nope"}', encoding="utf-8"),
    "snap-csv-value": lambda p: p.write_text("offset,value\n0x1,zz\n", encoding="utf-8"),
    "nanfloats": lambda p: p.write_bytes(b"\xff" * (2034 * 16)),
    "npy-badshape": lambda p: p.write_bytes(_npy_header("{'descr': '|u1', 'fortran_order': False, 'shape': ('a',), }")),
    "npy-neg": lambda p: p.write_bytes(_npy_header("{'descr': '|u1', 'fortran_order': False, 'shape': (-2034, -4), }")),
    "npy-trunc": lambda p: p.write_bytes(_npy_header("{'descr': '|u1', 'fortran_order': False, 'shape': (2034, 4), }")),
}

DUMP = ("missing", "empty", "dir")
NPY = ("npy-badshape", "npy-neg", "npy-trunc")
# JSON that parses but holds a value the reader must refuse
SIDECAR_FIELDS = ("sc-fields-str", "sc-pad-lane-far", "sc-shape-str", "sc-dtype", "sc-record0", "sc-record-str", "sc-scale-str", "sc-zp-huge",
                  "sc-shape-neg")
PP_FIELDS = ("pp-boxes-noscale", "pp-scores-zp-str", "pp-scores-str", "pp-empty", "pp-classes-null", "pp-classes-str", "pp-yscale-huge", "pp-no-maxdet", "pp-options-list",
             "pp-anchors-str")
MANIFEST_FIELDS = ("mf-dtype", "mf-shape-str", "mf-record0", "mf-crc-str", "mf-buffer-str", "mf-empty", "mf-buffers-str", "mf-version", "mf-buffer-nofile", "mf-size-str",
                   "mf-file-escape")
ANY_BYTES = ("missing", "dir")  # commands for which an empty file is a valid (empty) buffer
MODEL = ("missing", "empty", "dir", "garbage", "truncated")
JSON = ("missing", "empty", "dir", "badjson", "notutf8", "jsonlist")
TEXT = ("missing", "empty", "dir", "garbage")
LABELS = ("missing", "empty", "dir", "notutf8")
IMAGE = ("missing", "empty", "dir", "garbage")


def _npy_header(text: str) -> bytes:
    body = text.encode("latin1")
    body += b" " * (-(10 + len(body) + 1) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body


def _plain_model(shape=(1, 4)) -> bytes:
    """A one-operator model (RELU) without detection anchors; with an image-shaped input for `capture --image`."""
    from forensics.model.tflite import writer

    spec = writer.ModelSpec(tensors=[writer.TensorSpec("a", list(shape), "uint8"),
                                     writer.TensorSpec("b", list(shape), "uint8")],
                            opcodes=[writer.OpCodeSpec(builtin_code=19)],  # RELU
                            operators=[writer.OperatorSpec(0, [0], [1])], inputs=[0], outputs=[1])
    return writer.build_model(spec)


def _small_model() -> bytes:
    from forensics.model.tflite import writer

    return writer.build_detection_model(np.full((4, 4), 0.5, np.float32), num_classes=1)


def _good_model(tmp: Path) -> Path:
    path = tmp / "good_model.tflite"
    if not path.exists():
        path.write_bytes(_small_model())
    return path


def _image_model(tmp: Path) -> Path:
    path = tmp / "good_image_model.tflite"
    if not path.exists():
        path.write_bytes(_plain_model((1, 8, 8, 3)))
    return path


def _good_run(tmp: Path, source="ours", name=None) -> Path:
    from tests.runs.runs_support import story_run

    path = tmp / (name or f"good_run_{source}")
    if not path.exists():
        story_run(tmp, source, path.name)
    return path


def _copy_dump(tmp: Path, src: str, name: str) -> Path:
    """A copy of a bundled dump and its sidecar under a new name (to spoil one of the two)."""
    dst = tmp / f"{name}.bin"
    shutil.copyfile(src, dst)
    return dst


# --- the table: (command, argument, defects, build) -------------------------------------------------------
# build(tmp, bad) -> argv, where `bad` is the path of the bad file (already made bad). A build may also make the
# bad file itself (e.g. a sidecar next to a dump): then `bad` names where it goes.

def _sidecar(cmd_argv):
    """Cases spoiling the sidecar JSON of a dump: the dump is copied to BAD.bin, the sidecar is BAD.json."""
    def build(tmp, bad):
        dump = bad.with_suffix(".bin")
        shutil.copyfile(GOOD_DUMP, dump)
        return cmd_argv(tmp, dump)
    return build


def _deps_with(defect_file: str):
    """A copy of the face_ssd deps directory with `defect_file` (postprocess.json / anchors.bin) spoiled."""
    def make(tmp, bad, defect):
        deps = tmp / f"deps_{bad.name}"
        shutil.copytree(DEPS, deps)
        target = deps / defect_file
        target.unlink()
        _make(target, defect)
        return target
    return make


CASES = [
    ("crc", "FILE", ANY_BYTES, lambda t, b: ["crc", b]),
    ("crc", "FILE2", ANY_BYTES, lambda t, b: ["crc", GOOD_DUMP, b]),
    ("diff", "A", DUMP, lambda t, b: ["diff", b, GOOD_DUMP]),
    ("diff", "B", DUMP, lambda t, b: ["diff", GOOD_DUMP, b]),
    ("diff", "sidecar", JSON[3:] + SIDECAR_FIELDS, _sidecar(lambda t, d: ["diff", d, GOOD_DUMP])),
    ("diff", "--model", MODEL, lambda t, b: ["diff", GOOD_DUMP, GOOD_SCORES, "--model", b]),
    ("diff", "--deps", ("missing", "empty"), lambda t, b: ["diff", GOOD_DUMP, GOOD_SCORES, "--deps", b]),
    ("anchors", "FILE", DUMP, lambda t, b: ["anchors", b]),
    ("anchors", "sidecar", JSON[3:] + SIDECAR_FIELDS, _sidecar(lambda t, d: ["anchors", d])),
    ("anchors", "--model", MODEL, lambda t, b: ["anchors", GOOD_SCORES, "--model", b]),
    ("anchors", "--deps", ("missing", "empty"), lambda t, b: ["anchors", GOOD_SCORES, "--deps", b]),
    ("anchors", "FILE", ("short",), lambda t, b: ["anchors", b, "--deps", DEPS, "--grid"]),
    ("anchors", "FILE", ("short",), lambda t, b: ["anchors", b, "--deps", DEPS, "--heatmap", t / "heat.png"]),
    ("diff", "A", ("short",), lambda t, b: ["diff", b, GOOD_DUMP, "--deps", DEPS, "--grid"]),
    ("hexdump", "FILE", ("short",), lambda t, b: ["hexdump", b, "--record", "4", "--anchor", "5"]),
    ("diff", "A.npy", NPY, lambda t, b: ["diff", b, GOOD_DUMP]),
    ("crc", "FILE.npy", NPY, lambda t, b: ["crc", b]),
    ("decode", "BOXES.npy", NPY, lambda t, b: ["decode", "--deps", DEPS, b, GOOD_SCORES]),
    ("ingest", "STAGE=FILE.npy", NPY, lambda t, b: ["ingest", t / "ingest_run", f"input={b}", "--source", "x"]),
    ("csr", "A-snapshot", ("badjson", "notutf8", "jsonlist"), lambda t, b: ["csr", "--snapshot", b, _snapshot(t)]),
    ("csr", "B-snapshot", ("badjson", "notutf8", "jsonlist"), lambda t, b: ["csr", "--snapshot", _snapshot(t), b]),
    ("csr", "A-snapshot", TEXT, lambda t, b: ["csr", "--snapshot", b, _snapshot(t)]),
    ("decode", "--overlay-boxes", DUMP, lambda t, b: ["decode", "--deps", DEPS, "--overlay-boxes", b,
                                                      "--overlay-scores", GOOD_SCORES, "--image", _png(t),
                                                      "--draw", t / "d.png", GOOD_BOXES, GOOD_SCORES]),
    ("decode", "--overlay-scores", DUMP, lambda t, b: ["decode", "--deps", DEPS, "--overlay-boxes", GOOD_BOXES,
                                                       "--overlay-scores", b, "--image", _png(t),
                                                       "--draw", t / "d.png", GOOD_BOXES, GOOD_SCORES]),
    ("compare", "--batch", ("missing", "empty"), lambda t, b: ["compare", "--batch", b, "-o", t / "s.csv"]),
    ("compare", "--labels", LABELS, lambda t, b: ["compare", _good_run(t), _good_run(t, "broken"), "--deps", DEPS,
                                                  "--labels", b]),
    ("ingest", "--from npz", ("missing", "empty", "dir", "garbage"),
     lambda t, b: ["ingest", t / "ingest_run", f"tensor={b}", "--from", "npz", "--source", "x"]),
    ("anchors-gen", "--check-model", ("nodetect",), lambda t, b: ["anchors-gen", "--check-model", b]),
    ("capture", "--image", IMAGE, lambda t, b: ["capture", "--model", _image_model(t), "--image", b,
                                                "-o", t / "capture_run"]),
    ("capture", "--images", ("missing", "empty"), lambda t, b: ["capture", "--model", _good_model(t), "--images", b,
                                                                "-o", t / "capture_run"]),
    ("extract", "MODEL", ("nodetect",), lambda t, b: ["extract", b, "-o", t / "extract_out"]),
    ("tail", "MODEL", ("nodetect",), lambda t, b: ["tail", b, "-o", t / "tail_out.tflite"]),
    ("relayout", "--model", ("nodetect",),
     lambda t, b: ["relayout", GOOD_DUMP, "--model", b, "--layer", "x", "-o", t / "relayout_out.bin"]),
    ("decode", "--model", ("nodetect",), lambda t, b: ["decode", "--model", b, GOOD_BOXES, GOOD_SCORES]),
    ("anchors", "--model", ("nodetect",), lambda t, b: ["anchors", GOOD_SCORES, "--model", b]),
    ("anchors", "--model --grid", ("nodetect",), lambda t, b: ["anchors", GOOD_SCORES, "--model", b, "--grid"]),
    ("diff", "--model --tensor", ("nodetect",),
     lambda t, b: ["diff", GOOD_DUMP, GOOD_SCORES, "--model", b, "--tensor", "nosuch"]),
    ("compare", "--model", ("nodetect",),
     lambda t, b: ["compare", _good_run(t), _good_run(t, "broken"), "--model", b]),
    ("import", "TEXT", ("xxd-badhex",), lambda t, b: ["import", b, "--format", "xxd", "-o", t / "import_out.bin"]),
    ("import", "TEXT", ("prose",), lambda t, b: ["import", b, "--format", "windbg", "-o", t / "import_out.bin"]),
    ("import", "TEXT", ("prose",), lambda t, b: ["import", b, "-o", t / "import_out.bin"]),
    ("verify", "LOG", ("prose",), lambda t, b: ["verify", b, GOOD_DUMP]),
    ("csr", "A", ("prose",), lambda t, b: ["csr", b, _trace(t)]),
    ("csr", "A-snapshot", ("snap-json-value", "snap-csv-value"), lambda t, b: ["csr", "--snapshot", b, _snapshot(t)]),
    ("coverage", "FILE", DUMP, lambda t, b: ["coverage", b, "--sentinel", "cc"]),
    ("hexdump", "FILE", DUMP, lambda t, b: ["hexdump", b]),
    ("hexdump", "FILE2", DUMP, lambda t, b: ["hexdump", GOOD_DUMP, b]),
    ("hexdump", "sidecar", JSON[3:] + SIDECAR_FIELDS, _sidecar(lambda t, d: ["hexdump", d])),
    ("hexdump", "--model", MODEL, lambda t, b: ["hexdump", GOOD_SCORES, "--model", b]),
    ("graph", "MODEL", MODEL, lambda t, b: ["graph", b]),
    ("extract", "MODEL", MODEL, lambda t, b: ["extract", b, "-o", t / "extract_out"]),
    ("tail", "MODEL", MODEL, lambda t, b: ["tail", b, "-o", t / "tail_out.tflite"]),
    ("relayout", "--model", MODEL,
     lambda t, b: ["relayout", GOOD_DUMP, "--model", b, "--layer", "x", "-o", t / "relayout_out.bin"]),
    ("decode", "BOXES", DUMP, lambda t, b: ["decode", "--deps", DEPS, b, GOOD_SCORES]),
    ("decode", "SCORES", DUMP, lambda t, b: ["decode", "--deps", DEPS, GOOD_BOXES, b]),
    ("decode", "BOXES", ("short",), lambda t, b: ["decode", "--deps", DEPS, b, GOOD_SCORES]),
    ("decode", "SCORES", ("short",), lambda t, b: ["decode", "--deps", DEPS, GOOD_BOXES, b]),
    ("decode", "--model", MODEL, lambda t, b: ["decode", "--model", b, GOOD_BOXES, GOOD_SCORES]),
    ("decode", "--deps", ("missing", "empty"), lambda t, b: ["decode", "--deps", b, GOOD_BOXES, GOOD_SCORES]),
    ("decode", "--labels", LABELS, lambda t, b: ["decode", "--deps", DEPS, "--labels", b, GOOD_BOXES, GOOD_SCORES]),
    ("decode", "--image", IMAGE, lambda t, b: ["decode", "--deps", DEPS, "--image", b, GOOD_BOXES, GOOD_SCORES]),
    ("decode", "--overlay", JSON,
     lambda t, b: ["decode", "--deps", DEPS, "--overlay", b, "--image", _png(t), "--draw", t / "draw.png",
                   GOOD_BOXES, GOOD_SCORES]),
    ("anchors-gen", "--check-model", MODEL, lambda t, b: ["anchors-gen", "--check-model", b]),
    ("anchors-gen", "--check-deps", ("missing", "empty"), lambda t, b: ["anchors-gen", "--check-deps", b]),
    ("capture", "--model", MODEL,
     lambda t, b: ["capture", "--model", b, "--input", f"input={GOOD_DUMP}", "-o", t / "capture_run"]),
    ("ingest", "STAGE=FILE", DUMP, lambda t, b: ["ingest", t / "ingest_run", f"input={b}", "--source", "x"]),
    ("ingest", "--model", MODEL,
     lambda t, b: ["ingest", t / "ingest_run", f"tensor:Squeeze1={GOOD_BOXES}", "--model", b, "--source", "x"]),
    ("ingest", "RUN", ("empty",), lambda t, b: ["ingest", b, f"input={GOOD_DUMP}", "--source", "x"]),
    ("compare", "RUN_A", ("missing", "empty"), lambda t, b: ["compare", b, _good_run(t)]),
    ("compare", "RUN_B", ("missing", "empty"), lambda t, b: ["compare", _good_run(t), b]),
    ("compare", "--previous", ("missing", "empty"),
     lambda t, b: ["compare", _good_run(t), _good_run(t, "broken"), "--previous", b]),
    ("compare", "--model", MODEL, lambda t, b: ["compare", _good_run(t), _good_run(t, "broken"), "--model", b]),
    ("compare", "--deps", ("missing", "empty"),
     lambda t, b: ["compare", _good_run(t), _good_run(t, "broken"), "--deps", b]),
    ("diagnose", "A", DUMP, lambda t, b: ["diagnose", b, GOOD_DUMP]),
    ("diagnose", "B", DUMP, lambda t, b: ["diagnose", GOOD_DUMP, b]),
    ("diagnose", "--previous", DUMP, lambda t, b: ["diagnose", GOOD_DUMP, GOOD_SCORES, "--previous", b]),
    ("diagnose", "--model", MODEL, lambda t, b: ["diagnose", GOOD_DUMP, GOOD_SCORES, "--model", b, "--tensor", "x"]),
    ("simulate", "A", DUMP, lambda t, b: ["simulate", b, "--bug", "lane_swap:16", "-o", t / "sim_out.bin"]),
    ("simulate", "--previous", DUMP,
     lambda t, b: ["simulate", GOOD_DUMP, "--bug", "stale", "--previous", b, "-o", t / "sim_out.bin"]),
    ("csr", "A", TEXT, lambda t, b: ["csr", b, _trace(t)]),
    ("csr", "B", TEXT, lambda t, b: ["csr", _trace(t), b]),
    ("import", "TEXT", TEXT, lambda t, b: ["import", b, "-o", t / "import_out.bin"]),
    ("fingerprint", "FILE", ANY_BYTES, lambda t, b: ["fingerprint", b]),
    ("verify", "LOG", TEXT, lambda t, b: ["verify", b, GOOD_DUMP]),
    ("verify", "FILE", ANY_BYTES, lambda t, b: ["verify", _fp_log(t), b]),
    ("verify", "--buffer", ANY_BYTES, lambda t, b: ["verify", _fp_log(t), "--buffer", f"input={b}"]),
    ("export", "RUN", ("missing", "empty"), lambda t, b: ["export", b, "--format", "npz", "-o", t / "out.npz"]),
]

# Files inside a directory argument (postprocess.json, anchors.bin, manifest.json): make(tmp, bad, defect) -> the
# bad file, build(tmp, bad_file) -> argv.
INNER = [
    ("decode", "postprocess.json", JSON + PP_FIELDS, _deps_with("postprocess.json"),
     lambda t, f: ["decode", "--deps", f.parent, GOOD_BOXES, GOOD_SCORES]),
    ("decode", "anchors.bin", ("missing", "dir", "short"), _deps_with("anchors.bin"),
     lambda t, f: ["decode", "--deps", f.parent, GOOD_BOXES, GOOD_SCORES]),
    ("anchors", "postprocess.json", JSON[1:] + ("pp-anchors-str",), _deps_with("postprocess.json"),
     lambda t, f: ["anchors", GOOD_SCORES, "--deps", f.parent]),
    ("anchors", "anchors.bin", ("missing", "dir", "short"), _deps_with("anchors.bin"),
     lambda t, f: ["anchors", GOOD_SCORES, "--deps", f.parent]),
    ("anchors", "anchors.bin", ("nanfloats",), _deps_with("anchors.bin"),
     lambda t, f: ["anchors", GOOD_SCORES, "--deps", f.parent, "--grid"]),
    ("decode", "anchors.bin", ("nanfloats",), _deps_with("anchors.bin"),
     lambda t, f: ["decode", "--deps", f.parent, GOOD_BOXES, GOOD_SCORES]),
    ("anchors-gen", "postprocess.json", JSON + PP_FIELDS[1:], _deps_with("postprocess.json"),
     lambda t, f: ["anchors-gen", "--check-deps", f.parent]),
    ("compare", "manifest.json", JSON + MANIFEST_FIELDS, lambda t, b, d: _spoil_manifest(t, b, d),
     lambda t, f: ["compare", f.parent, _good_run(t, "broken")]),
    ("export", "manifest.json", JSON + MANIFEST_FIELDS, lambda t, b, d: _spoil_manifest(t, b, d),
     lambda t, f: ["export", f.parent, "--format", "npz", "-o", t / "out.npz"]),
    ("ingest", "manifest.json", JSON + MANIFEST_FIELDS, lambda t, b, d: _spoil_manifest(t, b, d),
     lambda t, f: ["ingest", f.parent, f"input={GOOD_DUMP}", "--source", "ours"]),
]

# Output paths that cannot be written: a directory where a file goes, or a parent that is a file.
OUTPUTS = [
    ("diff", "--plot", lambda t, o: ["diff", GOOD_DUMP, "dumps/broken/convert_scores.bin", "--plot", o]),
    ("anchors", "--heatmap", lambda t, o: ["anchors", GOOD_SCORES, "--deps", DEPS, "--heatmap", o]),
    ("compare", "--html", lambda t, o: ["compare", _good_run(t), _good_run(t, "broken"), "--html", o]),
    ("compare", "--junit", lambda t, o: ["compare", _good_run(t), _good_run(t, "broken"), "--junit", o]),
    ("decode", "--draw", lambda t, o: ["decode", "--deps", DEPS, "--image", _png(t), "--draw", o, GOOD_BOXES,
                                       GOOD_SCORES]),
    ("extract", "-o", lambda t, o: ["extract", _good_model(t), "-o", o]),
    ("simulate", "-o", lambda t, o: ["simulate", GOOD_DUMP, "--bug", "lane_swap:16", "-o", o]),
    ("import", "-o", lambda t, o: ["import", _hex_text(t), "-o", o]),
    ("anchors-gen", "-o", lambda t, o: ["anchors-gen", "-o", o]),
    ("export", "-o", lambda t, o: ["export", _good_run(t), "--format", "npz", "-o", o]),
]


def _png(tmp: Path) -> Path:
    pil = pytest.importorskip("PIL.Image")
    path = tmp / "good_image.png"
    if not path.exists():
        pil.new("RGB", (32, 24)).save(path)
    return path


def _good_text(tmp: Path, name: str, text: str) -> Path:
    path = tmp / name
    path.write_text(text, encoding="utf-8")
    return path


def _snapshot(tmp: Path) -> Path:
    return _good_text(tmp, "good_snapshot.txt", "0x48788=0x7f\n")


def _trace(tmp: Path) -> Path:
    return _good_text(tmp, "good_trace.log", "W 0x48788 0x7f\nR 0x48788 0x7f\n")


def _hex_text(tmp: Path) -> Path:
    return _good_text(tmp, "good_hex.txt", "00000000: 0102 0304 0506 0708  ........\n")


def _fp_log(tmp: Path) -> Path:
    path = tmp / "good_fp.log"
    if not path.exists():
        printed = run_cli("fingerprint", GOOD_DUMP, "--tag", "input")
        assert printed.code == 0 and "[FP] input" in printed.out, printed
        path.write_text(printed.out, encoding="utf-8")
    return path


def _spoil_manifest(tmp, bad, defect):
    run = _good_run(tmp, "ours", f"run_{bad.name}")
    target = run / "manifest.json"
    if not (defect in FIELD_EDITS and FIELD_EDITS[defect][0] == "manifest"):
        target.unlink()
    _make(target, defect)
    return target


def _spoil_run_buffer(tmp, bad, defect):
    run = _good_run(tmp, "ours", f"run_{bad.name}")
    doc = json.loads((run / "manifest.json").read_text(encoding="utf-8"))
    rel = _first_buffer(doc)
    target = run / rel
    target.unlink()
    _make(target, defect)
    return target


def _first_buffer(doc) -> str:
    """The relative path of the first buffer file a manifest names (wherever its schema keeps it)."""
    found = []

    def walk(x):
        if isinstance(x, dict):
            for k, v in x.items():
                if k in ("file", "path") and isinstance(v, str):
                    found.append(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(doc)
    if not found:
        pytest.skip("no buffer file named in the manifest")
    return found[0]


def _json_edit(path: Path, base, change) -> None:
    doc = json.loads(Path(base).read_text(encoding="utf-8")) if base else {}
    change(doc)
    path.write_text(json.dumps(doc), encoding="utf-8")


def _set(*pairs):
    def change(doc):
        for keys, value in pairs:
            d = doc
            for k in keys[:-1]:
                d = d[k]
            if value is _DELETE:
                d.pop(keys[-1], None)
            else:
                d[keys[-1]] = value
    return change


_DELETE = object()
SIDECAR_BASE = "dumps/libedgetpu/convert_scores.json"
PP_BASE = "dumps/face_ssd/postprocess.json"
FIELD_EDITS = {
    "sc-shape-str": (SIDECAR_BASE, _set((["shape"], "abc"))),
    "sc-dtype": (SIDECAR_BASE, _set((["dtype"], "complex999"))),
    "sc-record0": (SIDECAR_BASE, _set((["record_size"], 0))),
    "sc-record-str": (SIDECAR_BASE, _set((["record_size"], "four"))),
    "sc-scale-str": (SIDECAR_BASE, _set((["scale"], "x"))),
    "sc-zp-huge": (SIDECAR_BASE, _set((["zero_point"], 10 ** 30))),
    "sc-shape-neg": (SIDECAR_BASE, _set((["shape"], [-1, 4]))),
    "pp-empty": (None, _set()),
    "pp-boxes-noscale": (PP_BASE, _set((["boxes", "scale"], _DELETE))),
    "pp-scores-zp-str": (PP_BASE, _set((["scores", "zero_point"], "zero"))),
    "pp-scores-str": (PP_BASE, _set((["scores"], "convert_scores"))),
    "pp-classes-null": (PP_BASE, _set((["num_classes"], None), (["options", "num_classes"], None))),
    "pp-classes-str": (PP_BASE, _set((["num_classes"], "one"), (["options", "num_classes"], "one"))),
    "pp-yscale-huge": (PP_BASE, _set((["options", "y_scale"], 1e300))),
    "pp-no-maxdet": (PP_BASE, _set((["options", "max_detections"], _DELETE))),
    "pp-options-list": (PP_BASE, _set((["options"], [1, 2]))),
    "pp-anchors-str": (PP_BASE, _set((["num_anchors"], "many"))),
    "mf-empty": (None, _set()),
    "mf-dtype": ("manifest", lambda d: d["buffers"][0].__setitem__("dtype", "complex999")),
    "mf-shape-str": ("manifest", lambda d: d["buffers"][0].__setitem__("shape", "wide")),
    "mf-record0": ("manifest", lambda d: d["buffers"][0].__setitem__("record_size", 0)),
    "mf-crc-str": ("manifest", lambda d: d["buffers"][0].__setitem__("crc32", "crc")),
    "mf-buffer-str": ("manifest", lambda d: d["buffers"].__setitem__(0, "input.bin")),
    "sc-fields-str": (SIDECAR_BASE, _set((["fields"], "abc"))),
    "sc-pad-lane-far": (SIDECAR_BASE, _set((["pad_lanes"], [40]))),
    "mf-buffers-str": ("manifest", _set((["buffers"], "x"))),
    "mf-version": ("manifest", _set((["version"], 99))),
    "mf-buffer-nofile": ("manifest", lambda d: d["buffers"][0].pop("file")),
    "mf-size-str": ("manifest", lambda d: d["buffers"][0].__setitem__("size", "big")),
    "mf-file-escape": ("manifest", lambda d: d["buffers"][0].__setitem__("file", "../../../etc/passwd")),
}


def _make(path: Path, defect: str) -> None:
    if defect in FIELD_EDITS:
        base, change = FIELD_EDITS[defect]
        if base == "manifest":
            base = path  # edited in place (the run's own manifest, already written)
        _json_edit(path, base, change)
        return
    maker = DEFECTS[defect]
    if maker is not None:
        maker(path)


def _params():
    for cmd, arg, defects, build in CASES:
        for defect in defects:
            yield pytest.param(cmd, arg, defect, build, id=f"{cmd}-{arg}-{defect}")


def _inner_params():
    for cmd, arg, defects, make, build in INNER:
        for defect in defects:
            yield pytest.param(cmd, arg, defect, make, build, id=f"{cmd}-{arg}-{defect}")


def _slug(*parts) -> str:
    return "_".join("".join(c if c.isalnum() else "" for c in str(p)) for p in parts)


def _suffix(arg: str, defect: str) -> str:
    if defect.startswith("npy"):
        return ".npy"
    if arg == "sidecar":
        return ".json"
    if arg in ("--model", "MODEL", "--check-model"):
        return ".tflite"
    if arg in ("--overlay",):
        return ".json"
    if arg in ("--labels", "LOG", "A", "B", "TEXT") and defect in TEXT:
        return ".txt"
    if arg == "--image":
        return ".png"
    return ".bin"


def assert_names_file(result, name: str) -> None:
    assert result.code == 2, (result.code, result.out[-500:], result.err)
    lines = result.err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0], result.err
    assert "Traceback" not in result.err
    assert name in lines[0], (name, lines[0])


@pytest.mark.parametrize("cmd, arg, defect, build", list(_params()))
def test_file_argument(tmp_path, cmd, arg, defect, build):
    bad = tmp_path / f"bad_{_slug(cmd, arg, defect)}{_suffix(arg, defect)}"
    if arg != "sidecar":
        _make(bad, defect)
    argv = build(tmp_path, bad)
    if arg == "sidecar":
        _make(bad, defect)
    assert_names_file(run_cli(*argv), str(bad))


@pytest.mark.parametrize("cmd, arg, defect, make, build", list(_inner_params()))
def test_file_inside_a_directory(tmp_path, cmd, arg, defect, make, build):
    bad = tmp_path / f"bad_{_slug(cmd, arg, defect)}"
    target = make(tmp_path, bad, defect)
    result = run_cli(*build(tmp_path, target))
    # the directory as given, so the user knows which directory's copy is bad, and the file in it
    assert_names_file(result, str(target.parent))
    assert target.name in result.err, result.err


SLICED = [
    ("crc", lambda t, b, *o: ["crc", b, *o]),
    ("diff", lambda t, b, *o: ["diff", b, GOOD_DUMP, *o]),
    ("anchors", lambda t, b, *o: ["anchors", b, *o]),
    ("coverage", lambda t, b, *o: ["coverage", b, "--sentinel", "cc", *o]),
    ("hexdump", lambda t, b, *o: ["hexdump", b, *o]),
    ("fingerprint", lambda t, b, *o: ["fingerprint", b, *o]),
    ("diagnose", lambda t, b, *o: ["diagnose", b, GOOD_DUMP, *o]),
    ("decode", lambda t, b, *o: ["decode", "--deps", DEPS, b, GOOD_SCORES, *o]),
    ("ingest", lambda t, b, *o: ["ingest", t / "run", f"input={b}", "--source", "x", *o]),
    ("verify", lambda t, b, *o: ["verify", _fp_log(t), b, *o]),
]


@pytest.mark.parametrize("window", [("--offset", "100000"), ("--offset", "16", "--length", "100000")],
                         ids=["offset-past-end", "length-past-end"])
@pytest.mark.parametrize("cmd, build", [pytest.param(*c, id=c[0]) for c in SLICED])
def test_window_past_the_end(tmp_path, cmd, build, window):
    """--offset / --length beyond a (small) file: the error names the file whose end it is."""
    if cmd == "hexdump" and "--length" in window:
        pytest.skip("hexdump's --length is how much to show, clipped at the end like xxd -l")
    bad = tmp_path / f"bad_{cmd}_window.bin"
    bad.write_bytes(bytes(64))
    assert_names_file(run_cli(*build(tmp_path, bad, *window)), str(bad))


@pytest.mark.parametrize("defect", ["missing", "dir", "short"])
def test_damaged_run_buffer_is_named(tmp_path, defect):
    """compare reports a run's missing or changed buffer file beside its table (exit 1, as documented), naming it."""
    target = _spoil_run_buffer(tmp_path, tmp_path / f"bad_run_buffer_{defect}", defect)
    run = target.parent.parent
    result = run_cli("compare", run, _good_run(tmp_path, "broken"))
    assert result.code == 1, result  # a stage that differs (DIFFER), the damaged buffer named on stderr
    assert "Traceback" not in result.err
    assert str(target) in result.err, result.err


@pytest.mark.parametrize("cmd, arg, build", [pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in OUTPUTS])
@pytest.mark.parametrize("defect", ["dir", "parent-is-file"])
def test_output_path(tmp_path, cmd, arg, build, defect):
    if defect == "dir":
        out = tmp_path / f"bad_out_{_slug(cmd)}_dir"
        out.mkdir()
        (out / "keep").write_text("x")
    else:
        parent = tmp_path / f"bad_out_{_slug(cmd)}_parentfile"
        parent.write_text("x")
        out = parent / "out.bin"
    result = run_cli(*build(tmp_path, out))
    assert_names_file(result, str(out) if defect == "dir" else str(out.parent))


REAL_MODELS = ["ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
               "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"]


@pytest.mark.parametrize("model", REAL_MODELS)
@pytest.mark.parametrize("cut", [64, 4096])
@pytest.mark.parametrize("cmd", ["graph", "extract", "tail", "relayout"])
def test_truncated_real_models(tmp_path, shared_data, model, cut, cmd):
    bad = tmp_path / f"bad_real_{cut}_{model}"
    bad.write_bytes((shared_data / model).read_bytes()[:cut])
    argv = {"graph": ["graph", bad], "extract": ["extract", bad, "-o", tmp_path / "x"],
            "tail": ["tail", bad, "-o", tmp_path / "t.tflite"],
            "relayout": ["relayout", GOOD_DUMP, "--model", bad, "--layer", "Squeeze1", "-o", tmp_path / "r.bin"]}[cmd]
    assert_names_file(run_cli(*argv), str(bad))


def test_sweep_is_broad():
    """The table covers every command that takes files (so a new command is not silently left out)."""
    covered = {c[0] for c in CASES} | {c[0] for c in INNER} | {c[0] for c in OUTPUTS}
    assert covered >= {"crc", "diff", "anchors", "coverage", "hexdump", "graph", "extract", "relayout", "decode",
                       "tail", "anchors-gen", "capture", "ingest", "compare", "diagnose", "simulate", "csr",
                       "import", "fingerprint", "verify", "export"}


# --- wrong sizes against a real model (needs ../shared; skipped cleanly without it) --------------------------
SEG = "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
HEAD = "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"
SSD_SCORES, SSD_BOXES = 174447, 7668  # the segment's convert_scores and Squeeze1 tensor sizes (1917 anchors)


def _zeros(tmp: Path, size: int) -> Path:
    path = tmp / f"good_zeros_{size}.bin"
    if not path.exists():
        path.write_bytes(bytes(size))
    return path
REAL_CASES = [
    ("relayout", "RAW", lambda m, t, b: ["relayout", b, "--model", m(SEG), "--layer", "convert_scores",
                                         "-o", t / "r.bin"]),
    ("relayout", "RAW-inverse", lambda m, t, b: ["relayout", b, "--model", m(SEG), "--layer", "Squeeze1", "--inverse",
                                                 "-o", t / "r.bin"]),
    ("decode", "BOXES", lambda m, t, b: ["decode", "--model", m(SEG), b, _zeros(t, SSD_SCORES)]),
    ("decode", "SCORES", lambda m, t, b: ["decode", "--model", m(SEG), _zeros(t, SSD_BOXES), b]),
    ("decode", "BOXES-raw", lambda m, t, b: ["decode", "--model", m(SEG), "--layout", "raw", b,
                                             _zeros(t, SSD_SCORES)]),
    ("anchors", "FILE-grid", lambda m, t, b: ["anchors", b, "--model", m(SEG), "--grid"]),
    ("diff", "A", lambda m, t, b: ["diff", b, _zeros(t, SSD_SCORES), "--model", m(SEG), "--tensor", "convert_scores"]),
    ("diff", "B", lambda m, t, b: ["diff", _zeros(t, SSD_SCORES), b, "--model", m(SEG), "--tensor", "convert_scores"]),
    ("hexdump", "FILE", lambda m, t, b: ["hexdump", b, "--model", m(SEG), "--tensor", "convert_scores"]),
    ("diagnose", "A", lambda m, t, b: ["diagnose", b, _zeros(t, SSD_SCORES), "--model", m(SEG),
                                       "--tensor", "convert_scores"]),
    ("diagnose", "B", lambda m, t, b: ["diagnose", _zeros(t, SSD_SCORES), b, "--model", m(SEG),
                                       "--tensor", "convert_scores"]),
    ("ingest", "tensor", lambda m, t, b: ["ingest", t / "run", f"tensor:convert_scores={b}", "--model", m(SEG),
                                          "--source", "x"]),
    ("ingest", "raw", lambda m, t, b: ["ingest", t / "run", f"raw:convert_scores={b}", "--model", m(SEG),
                                       "--source", "x"]),
    ("capture", "--input", lambda m, t, b: ["capture", "--model", m(SEG), "--tail-only", "--input",
                                            f"convert_scores={b}", "--input", f"Squeeze1={_zeros(t, SSD_BOXES)}",
                                            "-o", t / "run"]),
    ("capture", "--input2", lambda m, t, b: ["capture", "--model", m(SEG), "--tail-only", "--input",
                                             f"convert_scores={_zeros(t, SSD_SCORES)}", "--input", f"Squeeze1={b}",
                                             "-o", t / "run"]),
]


@pytest.mark.parametrize("defect", ["short", "missing", "dir"])
@pytest.mark.parametrize("cmd, arg, build", [pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in REAL_CASES])
def test_wrong_size_against_a_real_model(tmp_path, shared_data, cmd, arg, build, defect):
    if cmd == "diagnose" and defect == "short":
        pytest.skip("diagnose takes dumps of different sizes as evidence (truncation, stride), not as bad input")
    bad = tmp_path / f"bad_{_slug(cmd, arg, defect)}.bin"
    _make(bad, defect)
    argv = build(lambda name: shared_data / name, tmp_path, bad)
    assert_names_file(run_cli(*argv), str(bad))


@pytest.mark.parametrize("defect", LABELS)
@pytest.mark.parametrize("cmd", ["diff", "anchors", "hexdump"])
def test_labels_with_a_real_model(tmp_path, shared_data, cmd, defect):
    bad = tmp_path / f"bad_{cmd}_labels_{defect}.txt"
    _make(bad, defect)
    good = _zeros(tmp_path, SSD_SCORES)
    files = [good, good] if cmd == "diff" else [good]
    argv = [cmd, *files, "--model", shared_data / SEG, "--tensor", "convert_scores", "--labels", bad]
    assert_names_file(run_cli(*argv), str(bad))
