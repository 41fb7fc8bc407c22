"""Crafted hostile inputs (issue 17): each class ends in one line on stderr naming the file, exit 2, and finishes.

The inputs are built here (flatbuffers builder, hand-made flexbuffers, FIFOs, /dev/zero, sparse files). Commands
run in a subprocess with an address-space limit (RLIMIT_AS) as a memory guard and a generous `timeout=` as a
hang guard only: nothing here measures time.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys

import flatbuffers
import numpy as np
import pytest

from forensics.core.errors import FormatError, InputError
from tests.conftest import REPO, CliResult, assert_one_line_error

MEMORY = 1536 << 20  # far above what these commands need on good input, far below what the old code took
HANG_GUARD = 120


def guarded(*argv, memory: int = MEMORY, cwd=REPO, extra_env=None) -> CliResult:
    """`forensics ARGV` in a subprocess with at most `memory` bytes of address space."""

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (memory, memory))

    env = dict(os.environ, PYTHONPATH=str(REPO), OPENBLAS_NUM_THREADS="1", OMP_NUM_THREADS="1",
               PYTHONIOENCODING="utf-8")
    env.update(extra_env or {})
    r = subprocess.run([sys.executable, "-m", "forensics", *[str(a) for a in argv], "--no-color"], cwd=cwd,
                       env=env, capture_output=True, text=True, timeout=HANG_GUARD, preexec_fn=limit)
    return CliResult(r.returncode, r.stdout, r.stderr)


# --- builders -------------------------------------------------------------------------------------------

def flexbuffer_bomb(levels: int = 30) -> bytes:
    """A flexbuffer whose every vector holds the next one twice: 2^levels leaves in ~5 bytes per level."""
    from flatbuffers.flexbuffers import Type

    out = bytearray([2, 1, 2, (Type.INT << 2), (Type.INT << 2)])  # [len=2][1][2][types]
    target = 1
    for _ in range(levels):
        p = len(out)
        out += bytes([2, (p + 1) - target, (p + 2) - target, Type.VECTOR << 2, Type.VECTOR << 2])
        target = p + 1
    p = len(out)
    out += bytes([p - target, Type.VECTOR << 2, 1])  # root: offset back to the last vector, its type, width 1
    return bytes(out)


def model_with_options(options: bytes, custom_code: str = "TFLite_Detection_PostProcess") -> bytes:
    from forensics.model.tflite import writer

    anchors = np.full((4, 4), 0.5, np.float32)
    spec_bytes = writer.build_detection_model(anchors, num_classes=1)
    if custom_code == "TFLite_Detection_PostProcess":
        old = writer.postprocess_options
        writer.postprocess_options = lambda **_: options
        try:
            return writer.build_detection_model(anchors, num_classes=1)
        finally:
            writer.postprocess_options = old
    spec = writer.ModelSpec(tensors=[writer.TensorSpec("a", [1, 4], "uint8"), writer.TensorSpec("b", [1, 4], "uint8")],
                            opcodes=[writer.OpCodeSpec(custom_code=custom_code)],
                            operators=[writer.OperatorSpec(0, [0], [1], custom_options=options)],
                            inputs=[0], outputs=[1])
    assert spec_bytes
    return writer.build_model(spec)


def _offsets(b, offsets) -> int:
    """A vector of table (or string) offsets, in the given order."""
    b.StartVector(4, len(offsets), 4)
    for off in reversed(offsets):
        b.PrependUOffsetTRelative(off)
    return b.EndVector()


def shared_shape_model(n: int = 20000) -> bytes:
    """`n` tensors that all point at one Tensor table whose shape has `n` entries (n^2 elements to read)."""
    b = flatbuffers.Builder(0)
    b.StartVector(4, n, 4)
    for _ in range(n):
        b.PrependInt32(1)
    shape = b.EndVector()
    name = b.CreateString("t")
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, shape, 0)
    b.PrependUOffsetTRelativeSlot(3, name, 0)
    tensor = b.EndObject()
    tensors = _offsets(b, [tensor] * n)
    b.StartObject(5)
    b.PrependUOffsetTRelativeSlot(0, tensors, 0)
    subgraph = b.EndObject()
    subgraphs = _offsets(b, [subgraph])
    b.StartObject(1)
    buffer = b.EndObject()
    buffers = _offsets(b, [buffer])
    b.StartObject(5)
    b.PrependUint32Slot(0, 3, 0)
    b.PrependUOffsetTRelativeSlot(2, subgraphs, 0)
    b.PrependUOffsetTRelativeSlot(4, buffers, 0)
    root = b.EndObject()
    b.Finish(root, file_identifier=b"TFL3")
    return bytes(b.Output())


def deps_dir(tmp_path, name="deps", **changes):
    """A copy of dumps/face_ssd with postprocess.json changed by `changes` (dotted keys: "options.x")."""
    d = tmp_path / name
    d.mkdir()
    doc = json.loads((REPO / "dumps/face_ssd/postprocess.json").read_text())
    for key, value in changes.items():
        parts = key.split(".")
        target = doc
        for p in parts[:-1]:
            target = target[p]
        if value is _DELETE:
            target.pop(parts[-1], None)
        else:
            target[parts[-1]] = value
    (d / "postprocess.json").write_text(json.dumps(doc))
    (d / "anchors.bin").write_bytes((REPO / "dumps/face_ssd/anchors.bin").read_bytes())
    return d


_DELETE = object()
SQ = REPO / "dumps/ours/Squeeze1.bin"
SC = REPO / "dumps/ours/convert_scores.bin"


# --- hangs and memory -------------------------------------------------------------------------------------

def test_flexbuffer_bomb_is_refused_by_the_reader():
    from forensics.model.tflite.options import loads

    bomb = flexbuffer_bomb()
    assert len(bomb) < 200
    with pytest.raises(FormatError, match="references more values"):
        loads(bomb)


@pytest.mark.parametrize("command", ["graph", "extract", "decode", "anchors"])
def test_flexbuffer_bomb_in_postprocess_options(tmp_path, command):
    model = tmp_path / "bomb.tflite"
    model.write_bytes(model_with_options(flexbuffer_bomb()))
    argv = {"graph": ["graph", model], "extract": ["extract", model, "-o", tmp_path / "out"],
            "decode": ["decode", "--model", model, SQ, SC], "anchors": ["anchors", SC, "--model", model]}[command]
    r = guarded(*argv)
    assert_one_line_error(r, "bomb.tflite", "flexbuffer")


def test_flexbuffer_bomb_in_edgetpu_options(tmp_path):
    model = tmp_path / "bomb.tflite"
    model.write_bytes(model_with_options(flexbuffer_bomb(), custom_code="edgetpu-custom-op"))
    assert_one_line_error(guarded("graph", model), "bomb.tflite", "flexbuffer")


def test_shared_tables_bound_the_work_per_model(tmp_path):
    model = tmp_path / "shared.tflite"
    model.write_bytes(shared_shape_model())
    for argv in (["graph", model], ["extract", model, "-o", tmp_path / "o"], ["decode", "--model", model, SQ, SC]):
        assert_one_line_error(guarded(*argv), "shared.tflite", "far more elements")


def test_layer_sizes_are_checked_before_allocation(shared_data):
    import dataclasses

    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import layer_map

    model = open_model(shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite")
    layer = read_packages(model)[0].output_layer("convert_scores")
    with pytest.raises(FormatError, match="size_bytes is 176368"):
        layer_map(dataclasses.replace(layer, z_dim=91000))
    with pytest.raises(FormatError, match="more than the"):
        layer_map(dataclasses.replace(layer, z_dim=300_000_000 // layer.y_dim // layer.x_dim,
                                      size_bytes=300_000_000))
    with pytest.raises(FormatError, match="tensor of that name is 8136 bytes"):
        layer_map(layer, tensor_bytes=8136)
    with pytest.raises(InputError, match="is 8136 bytes"):
        layer_map(layer, dump_size=8136)


def test_relayout_checks_the_dump_before_building_the_map(tmp_path, shared_data):
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    (tmp_path / "small.bin").write_bytes(b"\0" * 100)
    assert_one_line_error(guarded("relayout", tmp_path / "small.bin", "--model", model, "--layer", "convert_scores",
                                  "-o", tmp_path / "o.bin"), "small.bin", "176368", "174447")


def test_fifo_and_devices_are_refused(tmp_path):
    fifo = tmp_path / "pipe.tflite"
    os.mkfifo(fifo)
    assert_one_line_error(guarded("graph", fifo), "pipe.tflite", "not a regular file")
    overlay = tmp_path / "other.json"
    os.mkfifo(overlay)
    assert_one_line_error(guarded("decode", "--deps", REPO / "dumps/face_ssd", SQ, SC, "--image-size", "640x480",
                                  "--draw", tmp_path / "o.png", "--overlay", overlay), "other.json",
                          "not a regular file")
    assert_one_line_error(guarded("ingest", tmp_path / "run", "--source", "ours", "--model", "/dev/zero",
                                  f"input={REPO / 'dumps/ours/input.bin'}"), "/dev/zero", "not a regular file")
    assert not (tmp_path / "run").exists()
    assert_one_line_error(guarded("crc", "/dev/zero"), "/dev/zero")
    assert_one_line_error(guarded("graph", tmp_path), str(tmp_path), "directory")


@pytest.mark.parametrize("record", ["2147483647", "2147483648"])
def test_huge_record_sizes(record):
    assert_one_line_error(guarded("diff", SC, SC, "--record", record), "--record", "at most")


@pytest.mark.parametrize("argv", [["--feature-maps", "5000,5000"], ["--feature-maps", "100000"],
                                  ["--input-size", "100000x100000"]])
def test_anchors_gen_is_bounded(argv):
    assert_one_line_error(guarded("anchors-gen", *argv), "more than")


def test_sparse_anchors_file_is_refused(tmp_path):
    d = deps_dir(tmp_path)
    with open(d / "anchors.bin", "r+b") as fh:
        fh.truncate(1 << 30)  # sparse: costs no disk
    r = guarded("anchors", SC, "--deps", d, "--nonuniform")
    assert_one_line_error(r, "anchors.bin", "num_anchors 2034")
    d2 = deps_dir(tmp_path, "nocount", num_anchors=_DELETE, **{"boxes.shape": _DELETE, "scores.shape": _DELETE})
    with open(d2 / "anchors.bin", "r+b") as fh:
        fh.truncate(1 << 30)
    assert_one_line_error(guarded("decode", "--deps", d2, SQ, SC), "anchors.bin", "more than")


# --- internal errors that are input errors ------------------------------------------------------------------

HOSTILE_JSON = {"deep": "{\"a\": " * 100000 + "1" + "}" * 100000, "digits": '{"a": ' + "1" * 5000 + "}",
                "overflow": '{"a": 1' + "0" * 400 + ".0}", "bigint": '{"a": 1' + "0" * 400 + "}"}


@pytest.mark.parametrize("kind", sorted(HOSTILE_JSON))
def test_hostile_json_everywhere(tmp_path, kind, cli):
    text = HOSTILE_JSON[kind]
    # sidecar
    (tmp_path / "d.bin").write_bytes(b"\0" * 16)
    (tmp_path / "d.bin.json").write_text(text)
    assert_one_line_error(cli("diff", tmp_path / "d.bin", tmp_path / "d.bin"), "d.bin.json", "malformed")
    # postprocess.json
    d = deps_dir(tmp_path)
    (d / "postprocess.json").write_text(text)
    assert_one_line_error(cli("decode", "--deps", d, SQ, SC), "postprocess.json", "malformed")
    # manifest.json
    run = tmp_path / "run"
    run.mkdir()
    (run / "manifest.json").write_text(text)
    assert_one_line_error(cli("compare", run, run), "manifest.json", "malformed")
    # csr snapshot
    (tmp_path / "snap.json").write_text(text)
    assert_one_line_error(cli("csr", tmp_path / "snap.json", tmp_path / "snap.json"), "snap.json", "malformed")


@pytest.mark.parametrize("header,fragment", [
    ("{'descr': '|u1', 'fortran_order': False, 'shape': (1.5,), }", "integers"),
    ("{'descr': '(-1,)u1', 'fortran_order': False, 'shape': (4,), }", "dtype"),
    ("{'descr': '(2,)u1', 'fortran_order': False, 'shape': (4,), }", "subarray"),
    ("{'descr': '|u1', 'fortran_order': False, 'shape': (-1,), }", "negative"),
    ("{'descr': '|u1', 'fortran_order': False, 'shape': (-2034, -4), }", "negative"),
])
def test_hostile_npy_headers(tmp_path, cli, header, fragment):
    body = header.encode("latin1")
    body += b" " * (63 - (10 + len(body)) % 64) + b"\n"
    (tmp_path / "x.npy").write_bytes(b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body + b"\0" * 8136)
    assert_one_line_error(cli("crc", tmp_path / "x.npy"), "x.npy", fragment)


@pytest.mark.parametrize("change", [{"options.num_classes": None, "num_classes": None},
                                    {"options.num_classes": _DELETE, "num_classes": _DELETE},
                                    {"options.max_detections": _DELETE}])
def test_missing_required_options(tmp_path, cli, change):
    d = deps_dir(tmp_path, **change)
    r = cli("decode", "--deps", d, SQ, SC)
    assert_one_line_error(r, "postprocess.json", "options lack")


def test_missing_max_detections_in_a_model(tmp_path, cli):
    from flatbuffers import flexbuffers

    from forensics.model.tflite.writer import POSTPROCESS_DEFAULTS

    opts = {k: v for k, v in POSTPROCESS_DEFAULTS.items() if k != "max_detections"}
    opts["num_classes"] = 1
    model = tmp_path / "m.tflite"
    model.write_bytes(model_with_options(bytes(flexbuffers.Dumps(opts))))
    (tmp_path / "b.bin").write_bytes(b"\0" * 16)
    (tmp_path / "s.bin").write_bytes(b"\0" * 8)
    assert_one_line_error(cli("decode", "--model", model, tmp_path / "b.bin", tmp_path / "s.bin"), "m.tflite",
                          "max_detections")


def test_uint8_anchors_with_a_huge_zero_point(tmp_path, cli):
    from forensics.model.tflite import writer

    anchors = np.full((4, 4), 10, np.uint8)
    model = tmp_path / "zp.tflite"
    model.write_bytes(writer.build_detection_model(anchors, anchors_quant=(0.01, 2 ** 40), dequantize=False,
                                                   num_classes=1))
    assert_one_line_error(cli("extract", model, "-o", tmp_path / "o"), "zp.tflite", "zero_point")


def test_float32_overflow_in_options_and_anchors_gen(tmp_path, cli):
    d = deps_dir(tmp_path, **{"options.y_scale": 1e300})
    assert_one_line_error(cli("decode", "--deps", d, SQ, SC), "postprocess.json", "y_scale")
    assert_one_line_error(cli("anchors-gen", "--max-scale", "1e300"), "max_scale")
    assert_one_line_error(cli("anchors-gen", "--interpolated-scale-aspect-ratio", "-1"),
                          "interpolated_scale_aspect_ratio")
    assert_one_line_error(cli("anchors-gen", "--interpolated-scale-aspect-ratio", "nan"),
                          "--interpolated-scale-aspect-ratio", "finite")  # refused by the flag's own grammar


@pytest.mark.parametrize("flag,value", [("--zero-point", "1" + "0" * 30), ("--zero-point", "-129"),
                                        ("--zero-point", "256"), ("--scale", "1_000"), ("--scale", "١٢")])
def test_cli_quantization_flags_are_bounded(cli, flag, value):
    assert_one_line_error(cli("diff", SC, SC, flag, value, "--scale" if flag == "--zero-point" else "--record",
                              "0.5" if flag == "--zero-point" else "4"), flag)


# --- runs: files outside the run, broken runs, writes that fail ------------------------------------------------

def _story(tmp_path, source="ours", name=None):
    from tests.runs.runs_support import story_run

    return story_run(tmp_path, source, name)


def test_a_run_file_that_is_a_symlink_is_refused(tmp_path, cli):
    import zlib

    from tests.runs.runs_support import edit_manifest

    a, b = _story(tmp_path, "libedgetpu"), _story(tmp_path, "ours")
    secret = tmp_path / "outside.bin"
    secret.write_bytes(b"secret bytes outside the run")
    target = b / "input" / "input.bin"
    target.unlink()
    target.symlink_to(secret)

    def point(doc):  # a manifest whose size and CRC match the file the link points at
        for e in doc["buffers"]:
            if e["stage"] == "input":
                e["size"], e["crc32"] = secret.stat().st_size, f"0x{zlib.crc32(secret.read_bytes()):08x}"
    edit_manifest(b, point)
    assert_one_line_error(cli("compare", a, b), "input.bin", "symbolic link")
    assert_one_line_error(cli("ingest", b, "--source", "ours", "tensor:Squeeze1=dumps/ours/Squeeze1.bin"),
                          "input.bin", "symbolic link")
    assert target.is_symlink()  # the run is left as it was


def test_a_run_directory_that_links_outside_is_refused(tmp_path, cli):
    """A link among the run's own directories (input/ -> elsewhere) is followed only while it stays inside."""
    import shutil

    a, b = _story(tmp_path, "libedgetpu"), _story(tmp_path, "ours")
    outside = tmp_path / "elsewhere"
    shutil.copytree(b / "input", outside)  # the same bytes: size and CRC in the manifest still match
    shutil.rmtree(b / "input")
    (b / "input").symlink_to(outside, target_is_directory=True)
    assert_one_line_error(cli("compare", a, b), "input.bin", "resolves outside the run directory")
    inside = b / "kept"
    shutil.copytree(outside, inside)
    (b / "input").unlink()
    (b / "input").symlink_to(inside, target_is_directory=True)  # a link that stays inside the run is fine
    assert cli("compare", a, b).code == 0  # libedgetpu's and ours are the same bytes


@pytest.mark.parametrize("damage", ["missing", "directory", "nul"])
def test_ingest_into_a_damaged_run(tmp_path, cli, damage):
    from tests.runs.runs_support import edit_manifest

    run = _story(tmp_path)
    target = run / "input" / "input.bin"
    if damage == "missing":
        target.unlink()
    elif damage == "directory":
        target.unlink()
        target.mkdir()
    else:
        edit_manifest(run, lambda doc: doc["buffers"][0].update(file="input/in\u0000put.bin"))
    r = cli("ingest", run, "--source", "ours", "tensor:Squeeze1=dumps/ours/Squeeze1.bin")
    assert_one_line_error(r, "manifest.json" if damage == "nul" else "input.bin")


def test_a_write_that_fails_for_lack_of_space(tmp_path):
    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (100_000, 100_000))

    env = dict(os.environ, PYTHONPATH=str(REPO))
    for argv in (["ingest", tmp_path / "run", "--source", "ours", "input=dumps/ours/input.bin"],
                 ["anchors-gen", "--input-size", "1000x1000", "-o", tmp_path / "a.bin"]):
        r = subprocess.run([sys.executable, "-m", "forensics", *map(str, argv)], cwd=REPO, env=env,
                           capture_output=True, text=True, timeout=HANG_GUARD, preexec_fn=limit)
        assert_one_line_error(CliResult(r.returncode, r.stdout, r.stderr), "cannot write")
    assert not (tmp_path / "run").exists() and not (tmp_path / "a.bin").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # no temporary left behind


def test_ingest_refuses_a_tensor_of_the_wrong_size(tmp_path, cli):
    (tmp_path / "t.bin").write_bytes(b"\0" * 100)
    (tmp_path / "t.bin.json").write_text(json.dumps({"dtype": "uint8", "shape": [1, 2034, 4]}))
    assert_one_line_error(cli("ingest", tmp_path / "run", "--source", "ours", f"tensor:Squeeze1={tmp_path / 't.bin'}"),
                          "t.bin", "8136 bytes")


def test_replacing_raw_without_a_model_drops_the_stale_tensor(tmp_path, shared_data, cli):
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    raw = np.random.default_rng(1).integers(0, 256, 176368, dtype=np.uint8)
    (tmp_path / "raw.bin").write_bytes(raw.tobytes())
    run = tmp_path / "runs" / "ours"  # parents created as needed
    r = cli("ingest", run, "--source", "ours", "--model", model, f"raw:convert_scores={tmp_path / 'raw.bin'}",
            "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["relayouted"] == ["convert_scores"]
    (tmp_path / "raw2.bin").write_bytes((raw ^ 1).tobytes())
    r = cli("ingest", run, "--source", "ours", f"raw:convert_scores={tmp_path / 'raw2.bin'}", "--replace", "--json")
    assert r.code == 0, r.err
    doc = json.loads(r.out)
    assert "tensor:convert_scores" in doc["replaced"]
    assert [b["stage"] for b in doc["buffers"]] == ["raw"]


# --- outputs ------------------------------------------------------------------------------------------------

def test_extract_never_replaces_the_current_directory_or_an_input(tmp_path, shared_data):
    model = shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"
    work = tmp_path / "work"
    work.mkdir()
    (work / "precious.txt").write_text("keep me")
    local = work / "m.tflite"
    local.write_bytes(model.read_bytes())
    assert_one_line_error(guarded("extract", local, "-o", ".", "--force", cwd=work), "current directory")
    assert_one_line_error(guarded("extract", local, "-o", local, "--force", cwd=work), "m.tflite", "input")
    other = tmp_path / "other"
    other.mkdir()
    (other / "notes.txt").write_text("mine")
    assert_one_line_error(guarded("extract", local, "-o", other, "--force"), "other", "non-empty")
    os.mkfifo(tmp_path / "fifo")
    assert_one_line_error(guarded("extract", local, "-o", tmp_path / "fifo", "--force"), "fifo", "FIFO")
    assert (work / "precious.txt").read_text() == "keep me" and (other / "notes.txt").read_text() == "mine"
    assert local.read_bytes() == model.read_bytes()
    # an earlier extract output is replaced, with nothing left beside it
    assert guarded("extract", local, "-o", tmp_path / "deps").code == 0
    assert guarded("extract", local, "-o", tmp_path / "deps", "--force").code == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deps", "fifo", "other", "work"]


def test_replacing_a_symlink_or_file_output_leaves_no_tmp_old(tmp_path):
    from forensics.io.outputs import atomic_directory

    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "manifest.json").write_text("{}")
    (tmp_path / "link").symlink_to(tmp_path / "real")
    with atomic_directory(tmp_path / "link", replace=True, marker="manifest.json") as tmp:
        (tmp_path / tmp / "manifest.json").write_text("{}")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["link", "real"]


def test_output_equal_to_an_input_is_refused(tmp_path):
    data = tmp_path / "in.bin"
    data.write_bytes(b"\1" * 176368)
    r = guarded("relayout", data, "--model", REPO / "README.md", "--layer", "x", "-o", data)
    assert r.code == 2 and len(r.err.strip().splitlines()) == 1
    assert data.read_bytes() == b"\1" * 176368
    img = tmp_path / "img.png"
    img.write_bytes(b"not really a png")
    assert_one_line_error(guarded("decode", "--deps", REPO / "dumps/face_ssd", SQ, SC, "--image", img,
                                  "--draw", img), "img.png", "input")
    assert img.read_bytes() == b"not really a png"


def test_relayout_output_equal_to_input(tmp_path, shared_data):
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    data = tmp_path / "in.bin"
    data.write_bytes(b"\1" * 176368)
    assert_one_line_error(guarded("relayout", data, "--model", model, "--layer", "convert_scores", "-o", data),
                          "in.bin", "input")
    assert data.read_bytes() == b"\1" * 176368


def test_params_out_leaves_no_partial_directory(tmp_path, shared_data):
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))  # the 3.6 MB parameters do not fit

    r = subprocess.run([sys.executable, "-m", "forensics", "graph", str(model), "--params-out", str(tmp_path / "p")],
                       cwd=REPO, env=dict(os.environ, PYTHONPATH=str(REPO)), capture_output=True, text=True,
                       timeout=HANG_GUARD, preexec_fn=limit)
    assert_one_line_error(CliResult(r.returncode, r.stdout, r.stderr), "cannot write")
    assert list(tmp_path.iterdir()) == []


def test_batch_where_every_pair_fails(tmp_path, cli):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    (tmp_path / "farm" / "pair1").mkdir(parents=True)
    (tmp_path / "farm" / "pair2").mkdir(parents=True)
    r = cli("compare", "--batch", tmp_path / "farm", "-o", tmp_path / "summary.csv", "--workers", "1")
    assert r.code == 2
    assert len(r.err.strip().splitlines()) == 1 and "no pair could be compared" in r.err and "farm" in r.err
    assert (tmp_path / "summary.csv").exists() == (tmp_path / "summary.parquet").exists()


# --- csr -----------------------------------------------------------------------------------------------------

def test_a_million_line_trace_is_bounded(tmp_path):
    from forensics.csr.parse import MAX_TRACE_LINES

    line = b"W 0x48788 0x7f\n"
    (tmp_path / "big.log").write_bytes(line * (MAX_TRACE_LINES * 5))  # 10^6 lines
    r = guarded("csr", tmp_path / "big.log", tmp_path / "big.log", "--json", memory=1 << 30)
    assert_one_line_error(r, "big.log", f"at most {MAX_TRACE_LINES} lines")
    with open(tmp_path / "huge.log", "wb") as fh:
        fh.truncate(1 << 30)  # sparse
    assert_one_line_error(guarded("csr", tmp_path / "huge.log", tmp_path / "big.log"), "huge.log", "bytes")


def test_malformed_trace_lines_are_counted_and_reported(tmp_path, cli):
    (tmp_path / "a.log").write_text("W 0x48788 0x7f\nW 0x48790 0x1\n")
    (tmp_path / "b.log").write_text("W 0x48788 0x7f\nW 0x4879 zz\nsome other log line\nW 0x48790 0x1\n")
    r = cli("csr", tmp_path / "a.log", tmp_path / "b.log", "--json")
    doc = json.loads(r.out)
    assert (doc["b"]["malformed_lines"], doc["b"]["first_malformed_line"]) == (1, 2)
    assert doc["b"]["ignored_lines"] == 2 and doc["a"]["malformed_lines"] == 0
    r = cli("csr", tmp_path / "a.log", tmp_path / "b.log", width=200)
    assert "1 of them malformed accesses (first at line 2)" in r.out


# --- a run output never replaces what is not a run ---------------------------------------------------------

def test_write_run_refuses_the_current_directory_and_foreign_directories(tmp_path, monkeypatch):
    from forensics.runs.run import write_run

    (tmp_path / "mine.txt").write_text("keep")
    monkeypatch.chdir(tmp_path)
    with pytest.raises(InputError, match="non-empty"):
        with write_run(".", "ours", replace=True) as b:
            b.add_bytes("input", None, b"x")
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("keep")
    with pytest.raises(InputError, match="non-empty"):
        with write_run(other, "ours", replace=True) as b:
            b.add_bytes("input", None, b"x")
    assert (tmp_path / "mine.txt").read_text() == "keep" and (other / "x").read_text() == "keep"
    with write_run(tmp_path / "runs" / "a", "ours") as b:  # missing parents are created
        b.add_bytes("input", None, b"x")
    with write_run(tmp_path / "runs" / "a", "ours", replace=True) as b:  # a run is replaced
        b.add_bytes("input", None, b"y")
    assert sorted(p.name for p in (tmp_path / "runs").iterdir()) == ["a"]


# --- Edge TPU package with a huge patch table -------------------------------------------------------------------

def edgetpu_model(rows: int) -> bytes:
    """A model whose edgetpu-custom-op holds a DWN1 package: one executable with `rows` patch-table rows."""
    from flatbuffers import flexbuffers

    b = flatbuffers.Builder(0)
    b.StartObject(4)
    b.PrependInt16Slot(0, 2, 0)
    meta = b.EndObject()
    fos = []
    for i in range(min(rows, 8)):  # past 8 rows, the rows share tables (quick to build, as hostile files do)
        b.StartObject(2)
        b.PrependUOffsetTRelativeSlot(0, meta, 0)
        b.PrependInt32Slot(1, i, 0)
        fos.append(b.EndObject())
    fos += [fos[-1]] * (rows - len(fos))
    vec = _offsets(b, fos)
    bits = b.CreateByteVector(b"\0" * 64)
    b.StartObject(2)
    b.PrependUOffsetTRelativeSlot(0, bits, 0)
    b.PrependUOffsetTRelativeSlot(1, vec, 0)
    bitstream = b.EndObject()
    bitstreams = _offsets(b, [bitstream])
    b.StartObject(17)
    b.PrependUOffsetTRelativeSlot(5, bitstreams, 0)
    b.Finish(b.EndObject())
    executable = bytes(b.Output())

    multi = _table_holding(executable, fields=1, slot=0, in_vector=True)  # MultiExecutable: [string]
    package = _table_holding(multi, fields=8, slot=1, identifier=b"DWN1")  # Package: serialized_multi_executable
    return model_with_options(bytes(flexbuffers.Dumps({"4": package})), custom_code="edgetpu-custom-op")


def _table_holding(blob: bytes, *, fields: int, slot: int, in_vector: bool = False, identifier=None) -> bytes:
    """A flatbuffer whose root table has `blob` as a [ubyte] at `slot` (or as the one string of a vector)."""
    b = flatbuffers.Builder(0)
    value = b.CreateByteVector(blob)  # a [ubyte] has the layout of a string's bytes
    if in_vector:
        value = _offsets(b, [value])
    b.StartObject(fields)
    b.PrependUOffsetTRelativeSlot(slot, value, 0)
    b.Finish(b.EndObject(), file_identifier=identifier)
    return bytes(b.Output())


def test_a_huge_patch_table_is_bounded(tmp_path, cli):
    small = tmp_path / "small.tflite"
    small.write_bytes(edgetpu_model(3))
    d = json.loads(cli("graph", small, "--json").out)
    assert [f["offset_bit"] for f in d["edgetpu"]["packages"][0]["executables"][0]["field_offsets"]] == [0, 1, 2]
    big = tmp_path / "big.tflite"
    big.write_bytes(edgetpu_model(300_000))
    assert_one_line_error(guarded("graph", big), "big.tflite", "300,000 rows")
    shown = tmp_path / "shown.tflite"  # a long table that is read is not printed whole
    shown.write_bytes(edgetpu_model(1000))
    r = cli("graph", shown)
    assert r.code == 0, r.err
    assert "936 more patch table rows" in r.out and len(r.out.splitlines()) < 200


def test_numpy_runtime_warnings_never_reach_stderr(monkeypatch, cli, capsys, recwarn):
    import forensics.cli.buffers as buffers

    def noisy(args, out):
        np.float32(3e38) * np.float32(10)  # overflow: numpy warns
        np.array([0.0]) / np.array([0.0])  # invalid value
        from forensics.core.errors import InputError
        raise InputError("the one line", "x.bin")

    monkeypatch.setattr(buffers, "cmd_crc", noisy)
    import warnings

    warnings.simplefilter("default")  # as a user's interpreter: warnings shown
    r = cli("crc", SC)
    assert_one_line_error(r, "x.bin: the one line")
    assert "RuntimeWarning" not in r.err + capsys.readouterr().err
    assert not [w for w in recwarn if issubclass(w.category, RuntimeWarning)]


def test_geometry_errors_name_the_anchors_file(tmp_path, cli):
    d = deps_dir(tmp_path)
    a = np.fromfile(d / "anchors.bin", "<f4")
    a[:] = np.nan
    a.tofile(d / "anchors.bin")
    assert_one_line_error(cli("anchors", SC, "--deps", d, "--heatmap", tmp_path / "h.png"), "anchors.bin",
                          "not finite")


# --- newcomer: COCO scores without a dominant record -----------------------------------------------------------

def _coco_scores(path):
    rng = np.random.default_rng(0)
    s = rng.integers(0, 40, (1917, 91), dtype=np.uint8)
    s[:, 0] = rng.integers(200, 256, 1917)  # background
    s[500, 18] = 230                        # class 17 (dog in coco_labels.txt) at anchor 500
    s[1200, 1] = 250                        # a person at anchor 1200 (class 0)
    s.tofile(path)
    return s


def test_anchors_without_a_dominant_record_leads_with_the_top_scores(tmp_path, cli, shared_data):
    scores = _coco_scores(tmp_path / "coco.bin")
    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    argv = ("anchors", tmp_path / "coco.bin", "--model", model, "--tensor", "convert_scores", "--labels",
            shared_data / "coco_labels.txt", "--top", "3")
    r = cli(*argv, width=120)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    # the one verdict line, the JSON's (issue 33: the terminal printed no verdict, the JSON NONUNIFORM)
    assert lines[0].startswith("NONUNIFORM | no dominant record: 1,917 distinct records in 1,917 anchors")
    assert "match" not in r.out and "tied" not in r.out + r.err
    rows = [line.split() for line in lines[4:7]]
    best = scores[:, 1:].max(axis=1).astype(int)
    best[[500, 1200]] = -1
    third = int(np.lexsort((np.arange(1917), -best))[0])  # the highest of the rest, lowest index first
    assert [row[0] for row in rows] == ["1200", "500", str(third)]
    assert rows[0][1:3] == ["L1", "r1"] and "0 person" in lines[4] and "17 dog" in lines[5]
    doc = json.loads(cli(*argv, "--json", "--heatmap", tmp_path / "h.png").out)
    assert not doc["dominated"]
    assert [t["index"] for t in doc["top_scores"]][:2] == [1200, 500]
    assert doc["heatmap"]["marked"] == [t["index"] for t in doc["top_scores"]]  # not every cell


def test_a_dominated_buffer_keeps_the_story_view(cli):
    r = cli("anchors", SC)
    assert "2,025 / 2,034 anchors match" in r.out and "no dominant record" not in r.out


def test_batch_never_leaves_a_csv_without_its_parquet(tmp_path, cli):
    pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from tests.runs.runs_support import story_run

    pair = tmp_path / "farm" / "p1"
    pair.mkdir(parents=True)
    story_run(pair, "libedgetpu", "a_libedgetpu")
    story_run(pair, "ours", "b_ours")
    (tmp_path / "summary.parquet").mkdir()  # the Parquet file cannot be written
    r = cli("compare", "--batch", tmp_path / "farm", "-o", tmp_path / "summary.csv", "--workers", "1")
    assert_one_line_error(r, "summary.parquet")
    assert not (tmp_path / "summary.csv").exists()


def test_zero_point_bounded_by_the_dumps_dtype(tmp_path, cli):
    (tmp_path / "d.bin").write_bytes(b"\0" * 16)
    (tmp_path / "d.bin.json").write_text(json.dumps({"dtype": "uint8", "scale": 0.5, "zero_point": 300}))
    assert_one_line_error(cli("diff", tmp_path / "d.bin", tmp_path / "d.bin"), "d.bin.json", "0..255")
    (tmp_path / "d.bin.json").write_text(json.dumps({"dtype": "uint8", "scale": 0.5}))
    assert_one_line_error(cli("diff", tmp_path / "d.bin", tmp_path / "d.bin", "--zero-point", "-1"), "0..255")
    (tmp_path / "d.bin.json").write_text(json.dumps({"dtype": "int8", "scale": 0.5}))
    assert cli("diff", tmp_path / "d.bin", tmp_path / "d.bin", "--zero-point", "-1").code == 0
