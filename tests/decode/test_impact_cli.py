"""`forensics impact RUN_A RUN_B` and `compare --impact` on runs written as a driver writes them
(tests/decode/impact_support.py): the table (golden), --json (its shape and the report function's document),
exit codes, --draw, bad input (one line, exit 2) and a legacy console encoding."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from forensics import reports
from forensics.render.console import to_json
from tests.conftest import REPO, assert_golden, assert_one_line_error
from tests.decode.impact_support import FACE_ANCHORS, STORY_FACES, face_boxes, face_run, face_scores, write_run

GOLDEN = REPO / "tests" / "golden"
DEPS = ["--deps", "dumps/face_ssd"]
CLASSIFIER = "mobilenet_v1_0.25_128_quant_edgetpu.tflite"


@pytest.fixture
def story(tmp_path):
    """Run A: no face anywhere; run B: the story's nine anchors, one a 0.996 face."""
    return (face_run(tmp_path / "empty", "ours", face_scores()),
            face_run(tmp_path / "reference", "libedgetpu", face_scores(STORY_FACES)))


@pytest.fixture
def calm(tmp_path):
    """Two runs whose scores differ only where no detection changes."""
    scores = face_scores(STORY_FACES)
    b = scores.copy()
    b[10, 0] = 0xfe   # a background byte, 1 LSB
    b[12, 0] = 0xfd
    return face_run(tmp_path / "a", "libedgetpu", scores), face_run(tmp_path / "b", "ours", b)


def test_the_story_table(cli, story, tmp_path):
    labels = tmp_path / "labels.txt"
    labels.write_text("face\n")
    result = cli("impact", *story, *DEPS, "--labels", labels)
    assert result.code == 1, result.err
    assert_golden(GOLDEN / "impact_story.txt", result.out)
    assert result.out.rstrip().splitlines()[-1].startswith("DIFFER | 9 of 2,034 anchors differ")


def test_the_story_json(cli, story):
    result = cli("impact", *story, *DEPS, "--json")
    doc = json.loads(result.out)
    assert result.code == 1 and doc["exit_code"] == 1 and doc["verdict"] == "DIFFER"
    assert sorted(c["detection"]["anchor"] for c in doc["changes"]) == sorted(STORY_FACES)
    for change in doc["changes"]:
        assert change["kind"] == "added" and change["records"] == [change["detection"]["anchor"]]
        assert all(isinstance(r, int) for r in change["records"])
        assert change["detection"] == change["b"] and change["a"] is None
    face = [c for c in doc["changes"] if c["detection"]["score"] == 255 / 256]
    assert face[0]["records"] == [203] and face[0]["detection"]["geometry"] == {"layer": 0, "row": 3, "col": 7,
                                                                                "box": 2}
    assert doc["harmless"] == [] and doc["differing"] == sorted(STORY_FACES)
    assert doc["inputs"]["scores"]["stage"] == "raw" and doc["inputs"]["boxes"]["stage"] == "tensor"
    # the report function's document is the CLI's
    report = reports.impact(*story, deps="dumps/face_ssd")
    assert json.loads(to_json(report.to_dict())) == doc and report.exit_code == 1


def test_nothing_changes_exits_0_and_lists_every_differing_record(cli, calm):
    result = cli("impact", *calm, *DEPS, "--json")
    doc = json.loads(result.out)
    assert result.code == 0 and doc["verdict"] == "MATCH" and doc["exit_code"] == 0
    assert doc["changes"] == [] and doc["harmless"] == [10, 12] == doc["differing"]
    table = cli("impact", *calm, *DEPS)
    assert table.code == 0
    assert_golden(GOLDEN / "impact_harmless.txt", table.out)


def test_identical_runs_have_an_empty_harmless_list(cli, tmp_path):
    a = face_run(tmp_path / "a", "libedgetpu", face_scores(STORY_FACES))
    b = face_run(tmp_path / "b", "ours", face_scores(STORY_FACES))
    doc = json.loads(cli("impact", a, b, *DEPS, "--json").out)
    assert doc["harmless"] == [] and doc["changes"] == [] and doc["exit_code"] == 0


def test_a_dequantized_stage_is_taken_before_the_tensor(cli, tmp_path):
    """Both runs hold the scores' tensor and dequantized stages: the one the kernel received is used."""
    def run(path, scores):
        floats = (scores.astype(np.float64) / 256).astype(np.float32)
        return write_run(path, "x", [
            ("tensor", "convert_scores", scores, {"dtype": "uint8"}),
            ("dequantized", "convert_scores_dq", floats, {"dtype": "float32", "role": "scores"}),
            ("tensor", "Squeeze1", face_boxes(), {"dtype": "uint8"})])

    b_scores = face_scores(STORY_FACES)
    b_scores[700] = (0x20, 0xe0)
    doc = json.loads(cli("impact", run(tmp_path / "a", face_scores(STORY_FACES)), run(tmp_path / "b", b_scores),
                         *DEPS, "--json").out)
    assert doc["inputs"]["scores"]["stage"] == "dequantized"
    assert [(c["kind"], c["records"]) for c in doc["changes"]] == [("added", [700])]


def test_draw_writes_the_changed_boxes(cli, story, tmp_path):
    PIL = pytest.importorskip("PIL.Image")
    png = tmp_path / "changed.png"
    result = cli("impact", *story, *DEPS, "--draw", png, "--json")
    doc = json.loads(result.out)
    assert result.code == 1 and doc["drawing"]["output"] == str(png) and doc["drawing"]["boxes"] == [0, 9]
    with PIL.open(png) as img:
        assert img.size == (320, 320)  # a canvas of the model input
        pixels = {tuple(p) for p in np.asarray(img.convert("RGB")).reshape(-1, 3).tolist()}
    assert (230, 20, 20) in pixels  # B's added boxes, in red


def test_draw_on_the_image(cli, story, tmp_path, shared_data):
    PIL = pytest.importorskip("PIL.Image")
    png = tmp_path / "on_face.png"
    result = cli("impact", *story, *DEPS, "--image", shared_data / "face.jpg", "--draw", png)
    assert result.code == 1, result.err
    with PIL.open(shared_data / "face.jpg") as img, PIL.open(png) as out:
        assert out.size == img.size
    assert f"wrote {png}" in result.out


def test_the_broken_driver_in_the_terminal(cli, tmp_path):
    scores = face_scores(STORY_FACES)
    broken = scores.copy()
    broken[1500:] = 0xcc
    a, b = face_run(tmp_path / "a", "libedgetpu", scores), face_run(tmp_path / "b", "broken", broken)
    result = cli("impact", a, b, *DEPS)
    assert result.code == 1
    assert_golden(GOLDEN / "impact_broken.txt", result.out)


def test_compare_impact_adds_the_section_and_keeps_its_verdict(cli, story):
    plain = cli("compare", *story, "--json")
    result = cli("compare", *story, *DEPS, "--impact", "--json")
    doc = json.loads(result.out)
    assert result.code == plain.code == 1 and doc["verdict"] == json.loads(plain.out)["verdict"]
    assert sorted(c["records"][0] for c in doc["impact"]["changes"]) == sorted(STORY_FACES)
    table = cli("compare", *story, *DEPS, "--impact")
    assert "caused by anchors" in table.out
    assert sum(1 for line in table.out.splitlines() if line.startswith(("DIFFER |", "MATCH |"))) == 1
    report = reports.compare(*story, deps="dumps/face_ssd", impact=True)
    assert json.loads(to_json(report.to_dict())) == doc


def test_classifier_runs(cli, tmp_path, shared_data):
    from forensics.model.classes import class_vector_of
    from forensics.model.tflite.model import open_model

    with open_model(shared_data / CLASSIFIER) as model:
        name = class_vector_of(model).name
    q = np.zeros(1001, np.uint8)
    q[[281, 282, 285]] = (180, 120, 90)
    b = q.copy()
    b[7] = 200
    b[40] = 1
    raw = np.zeros(1008, np.uint8)  # the chip's lane padding after the last class
    raw[:1001] = b
    run_a = write_run(tmp_path / "a", "libedgetpu", [("tensor", name, q, {"dtype": "uint8"})])
    run_b = write_run(tmp_path / "b", "ours", [("raw", name, raw, {"dtype": "uint8"}),
                                               ("tensor", name, b, {"dtype": "uint8"})])
    result = cli("impact", run_a, run_b, "--model", shared_data / CLASSIFIER, "--top-k", "3", "--json")
    doc = json.loads(result.out)
    assert result.code == 1 and doc["model"] == "classifier" and doc["record_unit"] == "class"
    kinds = {(c["kind"], c["detection"]["class"]): c["records"] for c in doc["changes"]}
    assert kinds[("added", 7)] == [7] and kinds[("relabelled", 281)] == [7] and kinds[("removed", 285)] == [7]
    assert doc["harmless"] == [40]
    table = cli("impact", run_a, run_b, "--model", shared_data / CLASSIFIER, "--top-k", "3")
    assert "relabelled" in table.out and "\nDIFFER | 2 of 1,001 classes differ" in table.out


@pytest.mark.parametrize("argv,fragment", [
    (lambda s, t: ["impact", *s], "give exactly one of --model MODEL or --deps DIR"),
    (lambda s, t: ["impact", *s, *DEPS, "--model", "dumps/face_ssd/face_ssd_tail.tflite"], "exactly one"),
    (lambda s, t: ["impact", t / "missing", s[1], *DEPS], "no such run directory"),
    (lambda s, t: ["impact", *s, *DEPS, "--top-k", "3"], "--top-k"),
    (lambda s, t: ["impact", *s, *DEPS, "--max-decodes", "0"], "--max-decodes"),
    (lambda s, t: ["impact", *s, *DEPS, "--image-size", "640x480", "--image", "dumps/ours/input.bin"],
     "not both"),
    (lambda s, t: ["impact", *s, *DEPS, "--draw", t / "nowhere" / "x.png"], "output directory does not exist"),
    (lambda s, t: ["impact", *s, "--deps", "dumps/ours"], "postprocess.json"),
])
def test_bad_input_is_one_line_and_exit_2(cli, story, tmp_path, argv, fragment):
    assert_one_line_error(cli(*argv(story, tmp_path)), fragment)


def test_runs_without_the_decode_inputs_or_with_a_wrong_size_are_one_line(cli, story, tmp_path):
    only_input = write_run(tmp_path / "input_only", "x", [("input", "input", np.zeros(16, np.uint8), {})])
    assert_one_line_error(cli("impact", story[0], only_input, *DEPS), "share no stage holding the box deltas")
    short = write_run(tmp_path / "short", "x", [
        ("raw", "convert_scores", np.zeros(FACE_ANCHORS * 4 - 4, np.uint8), {}),
        ("tensor", "Squeeze1", face_boxes(), {})])
    assert_one_line_error(cli("impact", story[0], short, *DEPS), "2,033 padded of the 2,034 anchors")
    draw = tmp_path / "c.png"
    classifier_pair = [write_run(tmp_path / n, "x", [("tensor", "t", np.zeros(4, np.uint8), {})]) for n in "xy"]
    assert_one_line_error(cli("impact", *classifier_pair, "--model", "dumps/face_ssd/face_ssd_tail.tflite",
                              "--draw", draw), "share no stage")


def test_compare_impact_without_a_model_is_one_line(cli, story):
    assert_one_line_error(cli("compare", *story, "--impact"), "--impact needs --model MODEL or --deps DIR")


def test_a_legacy_console_encoding(story, calm, tmp_path):
    runner = ("import sys; from forensics.cli import main; "
              "codes = [main(a) for a in [" + ", ".join(
                  repr(["impact", str(a), str(b), *DEPS]) for a, b in (story, calm)) + ", " +
              repr(["compare", str(story[0]), str(story[1]), *DEPS, "--impact"]) + "]]; "
              "sys.stderr.write(repr(codes))")
    env = dict(os.environ, PYTHONIOENCODING="cp1252", PYTHONPATH=str(REPO), COLUMNS="100")
    proc = subprocess.run([sys.executable, "-c", runner], cwd=REPO, env=env, capture_output=True, timeout=300)
    err = proc.stderr.decode("cp1252", errors="replace")
    assert proc.returncode == 0 and "internal error" not in err, err
    assert err.endswith("[1, 0, 1]"), err
    assert "caused by anchors" in proc.stdout.decode("cp1252")
