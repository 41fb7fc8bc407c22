"""The reference's own noise: `capture --runtime` in each reference runtime (LiteRT with default delegates off,
with XNNPACK, tflite-runtime where installed) on the real models, `forensics tolerance` measuring the spread
between them (checked against LiteRT's own interpreters and against plain numpy on runs written here as a
driver writes them), the `--tolerance` flags it prints taken by compare as printed, and compare
--tolerance-from; bad input is one line, exit 2."""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
import types
import warnings
import zlib

import numpy as np
import pytest

from forensics.runs.run import load_run
from tests.conftest import assert_one_line_error, run_cli
from tests.runs.test_capture import HEAD, SSD_V2, _ssd_v2_dumps


# --- runs written as a driver writes them (the manifest by format string, CRCs by zlib) -------------------------

def _write_run(path, source, buffers, model_sha="ab" * 32):
    """buffers: (stage, tensor, bytes, extra manifest fields as JSON text)."""
    os.makedirs(path)
    entries = []
    for stage, tensor, data, extra in buffers:
        os.makedirs(os.path.join(path, stage), exist_ok=True)
        with open(os.path.join(path, stage, f"{tensor}.bin"), "wb") as fh:
            fh.write(data)
        entries.append('{"stage": "%s", "tensor": "%s", "file": "%s/%s.bin", "size": %d, "crc32": "0x%08x"%s}'
                       % (stage, tensor, stage, tensor, len(data), zlib.crc32(data), extra))
    text = ('{"format": "forensics-run", "version": 1, "source": "%s", "created": null, "tool": "test 1", '
            '"model": {"path": "m.tflite", "sha256": "%s"}, "input_image": null, "buffers": [%s]}\n'
            % (source, model_sha, ", ".join(entries)))
    with open(os.path.join(path, "manifest.json"), "w", encoding="utf-8") as fh:
        fh.write(text)
    return path


INPUT = bytes(range(64))


def _pair(tmp_path, a_values, b_values, *, scale=None, dtype="float32", shape=None, name="boxes", **kw):
    extra = f', "dtype": "{dtype}"'
    if scale is not None:
        extra += f', "scale": {scale!r}, "zero_point": 0'
    if shape is not None:
        extra += f', "shape": {json.dumps(list(shape))}'
    runs = []
    for source, values in (("litert", a_values), ("litert-xnnpack", b_values)):
        runs.append(_write_run(str(tmp_path / source), source,
                               [("input", "input", INPUT, ', "dtype": "uint8"'),
                                ("dequantized", name, np.asarray(values, dtype).tobytes(), extra)], **kw))
    return runs


def _tolerance(*runs):
    result = run_cli("tolerance", *runs, "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["exit_code"] == 0 and doc["verdict"] == "OK"
    return doc


def test_float_spread_max_ulps_p99_and_where(tmp_path):
    rng = np.random.default_rng(3)
    a = rng.normal(0, 4, (1, 500, 4)).astype(np.float32)
    b = a.copy()
    b[0, 17, 2] = np.nextafter(np.nextafter(a[0, 17, 2], np.float32(np.inf)), np.float32(np.inf))  # 2 ulps
    b[0, 300, 1] += np.float32(1e-3)
    runs = _pair(tmp_path, a, b, shape=(1, 500, 4))
    doc = _tolerance(*runs)
    (t,) = doc["tensors"]
    diff = np.abs(b.astype(np.float64) - a.astype(np.float64)).ravel()
    assert t["tensor"] == "boxes" and t["max_abs"] == diff.max() and t["max_lsb"] is None
    worst = int(np.argmax(diff))
    assert t["worst"]["index"] == worst and t["worst"]["where"] == {"anchor": 300, "lane": 1}
    assert t["worst"]["values"] == [float(a.ravel()[worst]), float(b.ravel()[worst])]
    ulp_300 = abs(int(b.view(np.int32)[0, 300, 1]) - int(a.view(np.int32)[0, 300, 1]))  # same sign: bits order
    assert t["ulps"] == max(2, ulp_300)
    assert t["differing"] == 2 and t["p99_abs"] == np.sort(diff)[math.ceil(0.99 * diff.size) - 1] == 0.0
    assert float(t["spec"]) >= t["max_abs"] and doc["tolerance_args"] == f"--tolerance dequantized:boxes={t['spec']}"


def test_quantized_spread_in_lsb_and_real_units(tmp_path):
    a = np.array([10, 20, 30, 40, 200, 5], np.uint8)
    b = np.array([10, 23, 30, 39, 200, 5], np.uint8)
    runs = _pair(tmp_path, a, b, scale=0.125, dtype="uint8", name="codes")
    (t,) = _tolerance(*runs)["tensors"]
    assert (t["max_lsb"], t["max_abs"], t["spec"], t["ulps"]) == (3, 3 * 0.125, "3lsb", None)
    assert t["worst"]["index"] == 1 and t["worst"]["values"] == [20 * 0.125, 23 * 0.125]


def test_cosine_one_but_a_large_max_error_is_said(tmp_path):
    a = np.full(1000, 1000.0, np.float32)
    a[::2] = -1000.0
    b = a.copy()
    b[7] += 40.0  # 4 % of the largest magnitude; the cosine still rounds to 1.0000
    runs = _pair(tmp_path, a, b)
    doc = _tolerance(*runs)
    (t,) = doc["tensors"]
    cosine = float(a.astype(np.float64) @ b / (np.linalg.norm(a.astype(np.float64)) * np.linalg.norm(b)))
    assert t["cosine"] == pytest.approx(cosine) and round(cosine, 4) == 1.0
    assert t["metrics_disagree"] and "cosine hides errors" in t["reason"]
    assert any(r["code"] == "cosine_hides_max" for r in doc["reasons"])
    # a small error is no disagreement
    small = tmp_path / "small"
    small.mkdir()
    c = a.copy()
    c[7] += 0.5
    (t,) = _tolerance(*_pair(small, a, c))["tensors"]
    assert not t["metrics_disagree"]


def test_the_printed_flags_are_what_compare_takes(tmp_path):
    rng = np.random.default_rng(9)
    a = rng.normal(0, 1, 2000).astype(np.float32)
    b = (a + rng.normal(0, 1e-6, a.size)).astype(np.float32)
    runs = _pair(tmp_path, a, b, shape=(1, 500, 4))  # (compare judges float buffers by their shape's records)
    doc = _tolerance(*runs)
    args = shlex.split(doc["tolerance_args"])
    assert run_cli("compare", *runs).code == 1
    passed = run_cli("compare", *runs, *args, "--json")
    assert passed.code == 0 and json.loads(passed.out)["verdict"] == "WITHIN TOLERANCE"
    # just below the measured maximum it no longer passes: the spec is the spread, not a guess
    below = f"dequantized:boxes={doc['tensors'][0]['max_abs'] * 0.999:.9g}"
    assert run_cli("compare", *runs, "--tolerance", below).code == 1
    # compare --tolerance-from measures the same spread itself (runs, or their folder)
    for source in (runs, [tmp_path]):
        direct = run_cli("compare", *runs, "--tolerance-from", *source, "--json")
        assert direct.code == 0 and json.loads(direct.out)["verdict"] == "WITHIN TOLERANCE"
    # a tensor given its own tolerance keeps it
    own = run_cli("compare", *runs, "--tolerance-from", *runs, "--tolerance", "dequantized:boxes=0", "--json")
    assert own.code == 1


def test_the_table_shows_the_flags_whole_and_the_verdict_line(tmp_path):
    rng = np.random.default_rng(9)
    a = rng.normal(0, 1, 200).astype(np.float32)
    runs = _pair(tmp_path, a, a + np.float32(2e-6))
    doc = _tolerance(*runs)
    out = run_cli("tolerance", *runs).out
    assert doc["tolerance_args"] in out.splitlines()
    assert out.count("OK |") == 1 and " ".join(f"OK | {doc['message']}".split()) in " ".join(out.split())


@pytest.mark.parametrize("case, fragment", [
    ("one", "at least two runs"),
    ("models", "different models"),
    ("inputs", "fed different inputs"),
    ("nothing", "share no tensor to measure"),
    ("missing", "no such run"),
])
def test_bad_input_is_one_line(tmp_path, case, fragment):
    a = np.arange(8, dtype=np.float32)
    if case == "models":
        runs = [_pair(tmp_path / "x", a, a)[0], _pair(tmp_path / "y", a, a, model_sha="cd" * 32)[1]]
    elif case == "inputs":
        runs = _pair(tmp_path, a, a)
        data = bytes(range(1, 65))
        with open(os.path.join(runs[1], "input", "input.bin"), "wb") as fh:
            fh.write(data)
        manifest = os.path.join(runs[1], "manifest.json")
        text = open(manifest, encoding="utf-8").read().replace(f"0x{zlib.crc32(INPUT):08x}",
                                                              f"0x{zlib.crc32(data):08x}")
        open(manifest, "w", encoding="utf-8").write(text)
    elif case == "nothing":
        runs = [_write_run(str(tmp_path / s), s, [("input", "input", INPUT, "")]) for s in ("a", "b")]
    else:
        runs = _pair(tmp_path, a, a)
        runs = runs[:1] if case == "one" else [runs[0], tmp_path / "nowhere"]
    assert_one_line_error(run_cli("tolerance", *runs), fragment)
    assert_one_line_error(run_cli("tolerance", *runs, "--json"), fragment)
    if case in ("one", "models"):
        other = _pair(tmp_path / "other", a, a)
        assert_one_line_error(run_cli("compare", *other, "--tolerance-from", *runs), fragment)


# --- the real models in their reference runtimes ------------------------------------------------------------------

def _ssd_tail_feeds(tmp_path, shared_data, files=None):
    """capture's --input flags for the SSD v2 tail: the chip's raw outputs (`files` gets them by tensor)."""
    _, written = _ssd_v2_dumps(tmp_path, shared_data)
    if files is not None:
        files.update({name: str(path) for name, path in written.items()})
    return [a for name, path in written.items() for a in ("--input", f"{name}={path}")]


def _litert_spread(model_path, files):
    """The dequantized boxes of the SSD v2 tail in LiteRT's own interpreters, default delegates off and on."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from forensics.model.tflite.relayout import layer_map, relayout
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.tail import remove_custom_op

    with open_model(model_path) as model:
        tail = remove_custom_op(bytes(model.data))
        maps = {n: layer_map(read_packages(model)[0].output_layer(n)) for n in files}
    outs = []
    for kwargs in ({"experimental_op_resolver_type": OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}, {}):
        with warnings.catch_warnings():  # LiteRT's note that preserving every tensor is for debugging
            warnings.simplefilter("ignore", UserWarning)
            it = Interpreter(model_content=tail, num_threads=1, experimental_preserve_all_tensors=True, **kwargs)
        it.allocate_tensors()
        for d in it.get_input_details():
            raw = np.fromfile(files[d["name"]], np.uint8)
            it.set_tensor(d["index"], relayout(raw, maps[d["name"]]).reshape(d["shape"]))
        it.invoke()
        index = {d["name"]: d["index"] for d in it.get_tensor_details()}
        outs.append(it.get_tensor(index["Squeeze2"]).astype(np.float64))
    return float(np.abs(outs[1] - outs[0]).max())


def test_ssd_tail_in_each_runtime_and_its_measured_spread(tmp_path, shared_data):
    pytest.importorskip("ai_edge_litert")
    model = shared_data / SSD_V2
    files = {}
    feeds = _ssd_tail_feeds(tmp_path, shared_data, files)
    result = run_cli("capture", "--model", model, "--tail-only", *feeds, "-o", tmp_path / "refs", "--runtime", "all",
                     "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["runtimes"][:2] == ["litert", "litert-xnnpack"]
    assert load_run(tmp_path / "refs" / "litert").capture["reference"] == "litert"
    xnn = load_run(tmp_path / "refs" / "litert-xnnpack")
    assert xnn.capture["reference"] == "litert-xnnpack" and "xnnpack" in xnn.capture["delegate"]
    spread = _tolerance(tmp_path / "refs")
    by = {t["label"]: t for t in spread["tensors"]}
    expected = _litert_spread(model, files)
    assert by["dequantized:Squeeze2"]["max_abs"] == expected > 0  # XNNPACK's dequantize differs
    assert by["dequantized:convert_scores1"]["max_abs"] == 0 and by["dequantized:convert_scores1"]["spec"] == "0"
    args = shlex.split(spread["tolerance_args"])
    assert "dequantized:convert_scores1" not in spread["tolerance_args"]  # spread 0: compare is exact already
    runs = [tmp_path / "refs" / "litert", tmp_path / "refs" / "litert-xnnpack"]
    default = run_cli("compare", *runs, "--json")  # XNNPACK's rounding and the detection boxes it moved: tolerated
    assert default.code == 0 and json.loads(default.out)["verdict"] == "WITHIN TOLERANCE"
    assert run_cli("compare", *runs, *args).code == 0
    assert run_cli("compare", *runs, "--tolerance-from", tmp_path / "refs").code == 0


def test_the_cpu_head_model_agrees_exactly_in_both_runtimes(tmp_path, shared_data):
    pytest.importorskip("ai_edge_litert")
    from forensics.model.tflite.model import open_model

    model_path = shared_data / HEAD
    rng = np.random.default_rng(21)
    argv = []
    with open_model(model_path) as model:
        for i in model.main.inputs:
            t = model.main.tensors[i]
            path = tmp_path / f"in{i}.bin"
            path.write_bytes(rng.integers(0, 256, t.num_elements, dtype=np.uint8).tobytes())
            argv += ["--input", f"{t.name}={path}"]
    assert run_cli("capture", "--model", model_path, *argv, "-o", tmp_path / "refs", "--runtime", "all").code == 0
    doc = _tolerance(tmp_path / "refs")
    assert doc["tensors"] and all(t["max_abs"] == 0 and t["differing"] == 0 for t in doc["tensors"])
    assert doc["tolerance_args"] == "" and any(r["code"] == "exact" for r in doc["reasons"])
    assert "agree exactly" in doc["message"]


def test_one_runtime_by_name_and_its_source(tmp_path, shared_data):
    pytest.importorskip("ai_edge_litert")
    feeds = _ssd_tail_feeds(tmp_path, shared_data)
    out = tmp_path / "xnn"
    assert run_cli("capture", "--model", shared_data / SSD_V2, "--tail-only", *feeds, "-o", out, "--runtime",
                   "litert-xnnpack").code == 0
    run = load_run(out)
    assert run.source == "litert-xnnpack" and run.capture["reference"] == "litert-xnnpack"


def _has_litert() -> bool:
    try:
        import ai_edge_litert  # noqa: F401
    except ImportError:
        return False
    return True


def _no_tflite_runtime(monkeypatch):
    monkeypatch.setitem(sys.modules, "tflite_runtime", None)
    monkeypatch.setitem(sys.modules, "tflite_runtime.interpreter", None)


def test_tflite_runtime_not_installed_says_so(tmp_path, shared_data, monkeypatch):
    _no_tflite_runtime(monkeypatch)
    feeds = _ssd_tail_feeds(tmp_path, shared_data)
    argv = ["capture", "--model", shared_data / SSD_V2, "--tail-only", *feeds]
    assert_one_line_error(run_cli(*argv, "-o", tmp_path / "t", "--runtime", "tflite-runtime"),
                          "tflite-runtime is not installed here", "numpy < 2")
    assert not (tmp_path / "t").exists()
    if _has_litert():
        result = run_cli(*argv, "-o", tmp_path / "all", "--runtime", "all", "--json")
        assert result.code == 0, result.err
        skipped = json.loads(result.out)["skipped"]
        assert [s["runtime"] for s in skipped] == ["tflite-runtime"] and "not installed" in skipped[0]["reason"]
        assert sorted(os.listdir(tmp_path / "all")) == ["litert", "litert-xnnpack"]


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="the trap only exists with numpy 2")
def test_tflite_runtime_under_numpy_2_says_why(tmp_path, shared_data, monkeypatch):
    monkeypatch.setitem(sys.modules, "tflite_runtime", types.ModuleType("tflite_runtime"))
    feeds = _ssd_tail_feeds(tmp_path, shared_data)
    assert_one_line_error(run_cli("capture", "--model", shared_data / SSD_V2, "--tail-only", *feeds, "-o",
                                  tmp_path / "t", "--runtime", "tflite-runtime"), "only works with numpy < 2")


@pytest.mark.parametrize("extra, fragment", [
    (["--runtime", "onnx"], "--runtime: unknown runtime 'onnx'"),
    (["--runtime", "litert", "--delegate", "xnnpack"], "give --runtime or --delegate"),
    (["--runtime", "all", "--source", "x"], "give no --source"),
])
def test_bad_runtime_flags(tmp_path, shared_data, extra, fragment):
    feeds = _ssd_tail_feeds(tmp_path, shared_data)
    assert_one_line_error(run_cli("capture", "--model", shared_data / SSD_V2, "--tail-only", *feeds, "-o",
                                  tmp_path / "r", *extra), fragment)


def test_the_report_is_what_the_cli_prints(tmp_path):
    from forensics import reports
    from forensics.render.console import to_json

    a = np.arange(40, dtype=np.float32)
    runs = _pair(tmp_path, a, a + np.float32(0.25))
    report = reports.tolerance(*runs)
    assert json.loads(to_json(report.to_dict())) == _tolerance(*runs)
    assert report.exit_code == 0 and report.judgement.has("spread")


def test_a_tensor_over_many_windows_and_nan_of_one_pattern(tmp_path):
    rng = np.random.default_rng(12)
    n = 700_000  # 2.8 MB of float32: read in windows
    a = rng.normal(0, 1, n).astype(np.float32)
    b = a.copy()
    hit = rng.choice(n, 20_000, replace=False)
    b[hit] += rng.normal(0, 1e-4, hit.size).astype(np.float32)
    a[5] = b[5] = np.float32("nan")  # the same NaN in both: no spread
    runs = _pair(tmp_path, a, b, shape=(1, n // 4, 4))
    (t,) = _tolerance(*runs)["tensors"]
    d = np.abs(b.astype(np.float64) - a.astype(np.float64))
    d[5] = 0.0
    assert t["max_abs"] == d.max() and t["worst"]["index"] == int(np.argmax(d))
    assert t["differing"] == int(np.count_nonzero(a.view(np.uint32) != b.view(np.uint32)))
    assert t["p99_abs"] == np.sort(d)[math.ceil(0.99 * n) - 1]
    other = tmp_path / "nan"
    other.mkdir()
    c = a.copy()
    c[5] = 7.0  # NaN against a number is a difference without a finite size
    (t,) = _tolerance(*_pair(other, a, c, shape=(1, n // 4, 4)))["tensors"]
    (other / "again").mkdir()
    assert t["differing"] == 1 and t["max_abs"] is None and t["spec"] is None  # JSON has no infinity
    assert "no tolerance passes" in t["reason"]
    table = run_cli("tolerance", *_pair(other / "again", a, c, shape=(1, n // 4, 4)))
    assert table.code == 0 and "no tolerance passes" in " ".join(table.out.split())


def test_tolerance_prints_under_cp1252(tmp_path):
    import subprocess

    from tests.conftest import REPO

    a = np.arange(40, dtype=np.float32)
    runs = _pair(tmp_path, a, a + np.float32(0.25))
    env = dict(os.environ, PYTHONIOENCODING="cp1252")
    proc = subprocess.run([sys.executable, "-m", "forensics", "tolerance", *map(str, runs)], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and "internal error" not in proc.stderr, proc.stderr
