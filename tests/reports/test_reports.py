"""forensics.reports against the CLI: for every command, `reports.<cmd>(...).to_dict()` is exactly what
`forensics <cmd> ... --json` prints, and `exit_code` is the CLI's exit code; the reports render the CLI's
tables, as HTML for notebooks, and as DataFrames."""

from __future__ import annotations

import io
import json
import shutil

import numpy as np
import pytest

from forensics import reports
from forensics.cli import COMMAND_HOMES
from forensics.render.console import to_json
from tests.conftest import run_cli

LIBEDGETPU, OURS, BROKEN = "dumps/libedgetpu", "dumps/ours", "dumps/broken"
SSD_V2 = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
TRACE_A = "W 0x48788 0x7f\nW 0x48790 0x1\nR 0x486f0 0x0\nW 0x485a8 0x10\n"
TRACE_B = "W 0x48788 0x7f\nW 0x48790 0x2\nR 0x486f0 0x0\nW 0x48600 0x10\n"


def _same(argv, make, *, code: int = 0, reset=None):
    """Run the CLI with --json, then the report function (after `reset` undoes the CLI's side effects), and
    check the two agree: the document through a JSON round trip, and the exit code, which is `code`."""
    cli = run_cli(*argv, "--json")
    assert cli.code == code, (cli.code, cli.err)
    if reset is not None:
        reset()
    report = make()
    assert json.loads(to_json(report.to_dict())) == json.loads(cli.out)
    assert report.exit_code == cli.code
    return report, cli


def _rmtree(path):
    return lambda: shutil.rmtree(path, ignore_errors=True)


def _traces(tmp_path):
    a, b = tmp_path / "a.log", tmp_path / "b.log"
    a.write_text(TRACE_A)
    b.write_text(TRACE_B)
    return a, b


BUFFER_CASES = {
    "crc": (["crc", f"{LIBEDGETPU}/input.bin", f"{BROKEN}/input.bin", "--chunk", "960"],
            lambda: reports.crc(f"{LIBEDGETPU}/input.bin", f"{BROKEN}/input.bin", chunk=960)),
    "crc-match": (["crc", f"{LIBEDGETPU}/input.bin", f"{OURS}/input.bin"],
                  lambda: reports.crc(f"{LIBEDGETPU}/input.bin", f"{OURS}/input.bin")),
    "diff": (["diff", f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", "--limit", "3",
              "--deps", "dumps/face_ssd"],
             lambda: reports.diff(f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", limit=3,
                                  deps="dumps/face_ssd")),
    "diff-identical": (["diff", f"{LIBEDGETPU}/convert_scores.bin", f"{OURS}/convert_scores.bin"],
                       lambda: reports.diff(f"{LIBEDGETPU}/convert_scores.bin", f"{OURS}/convert_scores.bin")),
    "anchors": (["anchors", f"{OURS}/convert_scores.bin", "--nonuniform", "--deps", "dumps/face_ssd"],
                lambda: reports.anchors(f"{OURS}/convert_scores.bin", nonuniform=True, deps="dumps/face_ssd")),
    "anchors-top": (["anchors", f"{OURS}/convert_scores.bin", "--deps", "dumps/face_ssd", "--top", "3"],
                    lambda: reports.anchors(f"{OURS}/convert_scores.bin", deps="dumps/face_ssd", top=3)),
    "coverage": (["coverage", f"{BROKEN}/convert_scores.bin", "--sentinel", "cc", "--min-run", "4"],
                 lambda: reports.coverage(f"{BROKEN}/convert_scores.bin", sentinel=b"\xcc", min_run=4)),
    "hexdump": (["hexdump", f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", "--anchor", "1500",
                 "--context", "1"],
                lambda: reports.hexdump(f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin",
                                        anchor=1500, context=1)),
    "hexdump-at": (["hexdump", f"{OURS}/input.bin", "--at", "0x100", "--length", "64"],
                   lambda: reports.hexdump(f"{OURS}/input.bin", at=0x100, length=64)),
    "decode": (["decode", "--deps", "dumps/face_ssd", f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin",
                "--image-size", "640x480"],
               lambda: reports.decode(f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin", deps="dumps/face_ssd",
                                      image_size=(640, 480))),
    "anchors-gen": (["anchors-gen", "--input-size", "320x320", "--anchor", "203", "--check-deps", "dumps/face_ssd"],
                    lambda: reports.anchors_gen(input_size=(320, 320), anchor=203, check_deps="dumps/face_ssd")),
    "diagnose": (["diagnose", f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin",
                  "--max-shift", "4096", "--sentinel", "cd"],
                 lambda: reports.diagnose(f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin",
                                          max_shift=4096, sentinel=[b"\xcd"])),
    "csr-find": (["csr", "--find", "tileconfig"], lambda: reports.csr(find="tileconfig")),
    "csr-name": (["csr", "--name", "0x1"], lambda: reports.csr(name="0x1")),
}


# each case's exit code: 1 where the story's files differ (the broken driver), a register is unknown or a
# buffer is not fully written
EXIT = {"anchors": 0, "anchors-gen": 0, "anchors-top": 0, "coverage": 1, "crc": 1, "crc-match": 0, "csr-find": 0,
        "csr-name": 1, "decode": 0, "diagnose": 1, "diff": 1, "diff-identical": 0, "hexdump": 0, "hexdump-at": 0}


@pytest.mark.parametrize("case", sorted(BUFFER_CASES))
def test_report_is_what_the_cli_prints(case):
    argv, make = BUFFER_CASES[case]
    report, _ = _same(argv, make, code=EXIT[case])
    assert bool(report) is report.passed is (EXIT[case] == 0)
    # The tables are the CLI's too.
    text = run_cli(*argv).out
    assert _rendered(report) == text


def _rendered(report, width: int = 100) -> str:
    from forensics.render.console import make_console, print_all

    stream = io.StringIO()
    print_all(make_console(stream, width=width, color_system=None), report.renderables())
    return stream.getvalue()


def test_diff_heatmap_and_grid_are_recorded(tmp_path):
    pytest.importorskip("PIL")
    png = tmp_path / "diff.png"
    args = [f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin"]
    report, _ = _same(["diff", *args, "--deps", "dumps/face_ssd", "--heatmap", png, "--grid"],
                      lambda: reports.diff(*args, deps="dumps/face_ssd", heatmap=str(png), grid=True),
                      code=1, reset=png.unlink)
    assert png.stat().st_size > 0 and report.to_dict()["heatmap"]["path"] == str(png)
    assert _rendered(report) == (run_cli("diff", *args, "--deps", "dumps/face_ssd", "--grid").out
                                 + f"wrote {png} ({png.stat().st_size:,} bytes)\n")  # what writing it adds


def test_decode_draw_writes_the_picture(tmp_path):
    pytest.importorskip("PIL")
    png = tmp_path / "boxes.png"
    args = [f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin"]
    other = tmp_path / "other.json"
    other.write_text(run_cli("decode", "--deps", "dumps/face_ssd", *args, "--json").out)
    report, _ = _same(["decode", "--deps", "dumps/face_ssd", *args, "--draw", png, "--overlay", other,
                       "--image-size", "640x480"],
                      lambda: reports.decode(*args, deps="dumps/face_ssd", draw=str(png), overlay=str(other),
                                             image_size=(640, 480)),
                      reset=png.unlink)
    assert png.stat().st_size > 0 and report.to_dict()["drawing"]["output"] == str(png)


def test_csr_compare(tmp_path):
    a, b = _traces(tmp_path)
    report, cli = _same(["csr", a, b, "--reads", "--mask", "0x48790"],
                        lambda: reports.csr(a, b, reads=True, mask=[("0x48790", (1 << 64) - 1)]), code=1)
    assert _rendered(report) == run_cli("csr", a, b, "--reads", "--mask", "0x48790").out


def test_runs_ingest_and_compare(tmp_path):
    runs = {}
    for source in ("libedgetpu", "broken"):
        path = tmp_path / source
        buffers = [f"input=dumps/{source}/input.bin", f"raw:convert_scores=dumps/{source}/convert_scores.bin"]
        _same(["ingest", path, *buffers, "--source", source],
              lambda: reports.ingest(path, buffers, source=source), reset=_rmtree(path))  # noqa: B023
        runs[source] = path
    html = tmp_path / "report.html"
    report, cli = _same(["compare", runs["libedgetpu"], runs["broken"], "--html", html, "--limit", "3"],
                        lambda: reports.compare(runs["libedgetpu"], runs["broken"], html=str(html), limit=3),
                        code=1)
    assert html.stat().st_size > 0
    # Replacing a buffer (asked for: evidence is kept otherwise) is a warning on stderr, and the report carries it.
    again = reports.ingest(runs["broken"], ["input=dumps/ours/input.bin"], source="broken", replace=True)
    assert again.warnings == (f"{runs['broken']}: replaced the run's input buffer",)


def test_compare_batch(tmp_path):
    farm = tmp_path / "farm"
    for i, other in enumerate(("ours", "broken")):
        (farm / f"pair-{i}").mkdir(parents=True)
        for source in ("libedgetpu", other):
            reports.ingest(farm / f"pair-{i}" / source, [f"input=dumps/{source}/input.bin"], source=source)
    summary = tmp_path / "summary.csv"
    pytest.importorskip("pandas")
    report, cli = _same(["compare", "--batch", farm, "-o", summary, "--workers", "1"],
                        lambda: reports.compare(batch=farm, output=str(summary), workers=1), code=1)
    assert len(report.to_frame()) == 2


def test_model_commands(tmp_path, shared_data):
    model = shared_data / SSD_V2
    _same(["graph", model], lambda: reports.graph(model))
    params = tmp_path / "params"
    _same(["graph", model, "--params-out", params], lambda: reports.graph(model, params_out=params),
          reset=_rmtree(params))
    deps = tmp_path / "deps"
    _same(["extract", model, "-o", deps], lambda: reports.extract(model, output=deps), reset=_rmtree(deps))
    tail = tmp_path / "tail.tflite"
    _same(["tail", model, "-o", tail], lambda: reports.tail(model, output=tail), reset=tail.unlink)
    raw, tensor = tmp_path / "raw.bin", tmp_path / "tensor.bin"
    tensor.write_bytes(np.random.default_rng(5).integers(0, 256, 174447, dtype=np.uint8).tobytes())
    _same(["relayout", tensor, "--model", model, "--layer", "convert_scores", "-o", raw, "--inverse"],
          lambda: reports.relayout(tensor, model=model, layer="convert_scores", output=raw, inverse=True))
    back = tmp_path / "back.bin"
    _same(["relayout", raw, "--model", model, "--layer", "convert_scores", "-o", back],
          lambda: reports.relayout(raw, model=model, layer="convert_scores", output=back))
    assert back.read_bytes() == tensor.read_bytes()


def test_capture(tmp_path):
    pytest.importorskip("ai_edge_litert.interpreter")
    from forensics.model.tflite.writer import build_detection_model

    # 12 anchors on a grid, far apart, every score high: the kernel fills all of its output rows (LiteRT leaves
    # rows past num_detections unwritten, so their bytes would differ between two runs).
    centres = [(y, x) for y in (0.15, 0.5, 0.85) for x in (0.125, 0.375, 0.625, 0.875)]
    anchors = np.array([(y, x, 0.1, 0.1) for y, x in centres], np.float32)
    model = tmp_path / "det.tflite"
    model.write_bytes(build_detection_model(anchors, num_classes=2))
    boxes, scores = tmp_path / "boxes.bin", tmp_path / "scores.bin"
    boxes.write_bytes(bytes([128]) * (12 * 4))   # zero deltas: each box is its anchor
    scores.write_bytes(bytes([255]) * (12 * 3))
    run = tmp_path / "run"
    inputs = [("boxes", str(boxes)), ("scores", str(scores))]
    report, _ = _same(["capture", "--model", model, "--input", f"boxes={boxes}", "--input", f"scores={scores}",
                       "-o", run],
                      lambda: reports.capture(model=model, input=inputs, output=run), reset=_rmtree(run))
    assert len(report.to_frame()) == len(report.to_dict()["buffers"])


def test_every_command_has_a_report_function():
    import keyword

    for command in COMMAND_HOMES:
        name = command.replace("-", "_")
        name += "_" if keyword.iskeyword(name) else ""  # `forensics import` -> reports.import_
        assert callable(getattr(reports, name)), command


def test_reports_render_in_notebooks():
    report = reports.diff(f"{LIBEDGETPU}/convert_scores.bin", f"{BROKEN}/convert_scores.bin", limit=3)
    html = report._repr_html_()
    assert html.lstrip().startswith("<!DOCTYPE html>") and "DIFFER" in html
    pytest.importorskip("pandas")
    frame = report.to_frame()
    assert list(frame["index"]) == [row["index"] for row in report.to_dict()["records"]]
    assert not report and report.exit_code == 1
    with pytest.raises(TypeError):  # a report without rows
        reports.RelayoutReport("relayout", None).to_frame()


def test_reports_are_frozen():
    import dataclasses

    report = reports.crc(f"{LIBEDGETPU}/input.bin", f"{OURS}/input.bin")
    with pytest.raises(dataclasses.FrozenInstanceError):
        report.exit_code = 1  # type: ignore[misc]


def test_library_errors_name_parameters_and_the_cli_words_flags():
    from forensics.core.errors import InputError

    with pytest.raises(InputError) as caught:
        reports.anchors_gen(input_size=(300, 300), feature_maps=(19, 10))
    assert str(caught.value) == "give input_size or feature_maps, not both"
    with pytest.raises(InputError, match=r"^give exactly one of model=MODEL or deps=DIR$"):
        reports.decode(f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin")
    assert run_cli("decode", f"{OURS}/Squeeze1.bin", f"{OURS}/convert_scores.bin").err.endswith(
        "give exactly one of --model MODEL or --deps DIR\n")
    result = run_cli("anchors-gen", "--input-size", "300x300", "--feature-maps", "19,10")
    assert result.code == 2
    assert result.err.strip() == "forensics anchors-gen: error: give --input-size or --feature-maps, not both"
