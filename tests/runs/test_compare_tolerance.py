"""compare with a tolerance policy: per-tensor tolerances, WITHIN TOLERANCE verdicts, error statistics that
agree with numpy on the same arrays, float stages compared as numbers, labelled detections, --batch."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forensics.runs.batch import batch_compare
from forensics.runs.ingest import ingest
from forensics.runs.run import write_run
from forensics.compare.stats import error_stats
from forensics.core.tolerance import make_policy
from tests.conftest import assert_one_line_error
from tests.runs.runs_support import detections_run, story_run


@pytest.fixture
def story(tmp_path):
    return story_run(tmp_path, "libedgetpu"), story_run(tmp_path, "broken")


def _stage(doc, stage):
    return next(s for s in doc["stages"] if s["stage"] == stage)


def test_per_tensor_tolerances_decide_the_verdicts(story, cli):
    a, b = story
    r = cli("compare", a, b, "--json", "--tolerance", "convert_scores=204lsb")
    doc = json.loads(r.out)
    assert r.code == 1 and doc["verdict"] == "DIFFER"
    assert _stage(doc, "raw")["verdict"] == "WITHIN TOLERANCE" and _stage(doc, "input")["verdict"] == "DIFFER"
    assert doc["first_divergent_stage"] == "input"
    r = cli("compare", a, b, "--json", "--tolerance", "convert_scores=204lsb", "--tolerance", "input=15lsb")
    doc = json.loads(r.out)
    assert r.code == 0 and doc["verdict"] == "WITHIN TOLERANCE" and doc["first_divergent_stage"] is None
    assert doc["match"] is False  # the bytes differ: not a MATCH
    r = cli("compare", a, b, "--tolerance", "raw:convert_scores=203lsb", "--tolerance", "input=15lsb")
    assert r.code == 1 and "first divergent stage: raw:convert_scores" in r.out
    # one K for every integer buffer, today's spelling
    assert cli("compare", a, b, "--tolerance", "204").code == 0
    r = cli("compare", a, b, "--atol", "15lsb", "--tolerance", "convert_scores=204lsb")
    assert r.code == 0 and "WITHIN TOLERANCE | 2 buffers differ within tolerance" in r.out


def test_stats_agree_with_numpy_on_the_same_arrays(story, cli):
    a, b = story
    doc = json.loads(cli("compare", a, b, "--json").out)
    raw = _stage(doc, "raw")["stats"]
    qa = np.fromfile("dumps/libedgetpu/convert_scores.bin", np.uint8).reshape(-1, 4)[:, :2]
    qb = np.fromfile("dumps/broken/convert_scores.bin", np.uint8).reshape(-1, 4)[:, :2]
    lsb = np.abs(qa.astype(int) - qb.astype(int))
    assert raw["max_abs_lsb"] == lsb.max() and raw["mean_abs_lsb"] == pytest.approx(lsb.mean())
    assert raw["worst"]["anchor"] == int(np.argmax(lsb.max(axis=1)))
    ia = np.fromfile("dumps/libedgetpu/input.bin", np.uint8).astype(np.float64)
    ib = np.fromfile("dumps/broken/input.bin", np.uint8).astype(np.float64)
    inp = _stage(doc, "input")["stats"]
    assert inp["sqnr_db"] == pytest.approx(10 * np.log10(np.sum(ia ** 2) / np.sum((ib - ia) ** 2)))
    assert inp["cosine"] == pytest.approx(ia @ ib / np.sqrt((ia @ ia) * (ib @ ib)))
    assert inp["worst"]["y"] == 117  # the row-stride bug's row


def _float_run(path, source, values):
    with write_run(path, source) as builder:
        builder.add_bytes("dequantized", "scores", values.astype("<f4"), dtype="float32", shape=values.shape)
    return path


def test_float_stages_are_compared_as_numbers(tmp_path, cli):
    rng = np.random.default_rng(0)
    va = rng.random((1, 50, 4)).astype(np.float32)
    vb = va.copy()
    vb[0, 7, 2] += np.float32(0.004)
    vb[0, 9, 1] = np.nan
    a, b = _float_run(tmp_path / "a", "ref", va), _float_run(tmp_path / "b", "ours", vb)
    doc = json.loads(cli("compare", a, b, "--json").out)
    stats = _stage(doc, "dequantized")["stats"]
    want = error_stats(va, vb)
    assert stats["max_abs"] == pytest.approx(want.max_abs) and stats["nonfinite_mismatch"] == 1
    assert stats["nan"] == 1 and stats["min_atol"] is None and "max_abs_lsb" not in stats
    assert stats["worst"] == {"index": 9 * 4 + 1, "anchor": 9, "lane": 1}
    vb[0, 9, 1] = va[0, 9, 1]
    b = _float_run(tmp_path / "b2", "ours", vb)
    assert cli("compare", a, b, "--atol", "0.005").code == 0
    assert cli("compare", a, b, "--atol", "0.003").code == 1
    assert cli("compare", a, b, "--tolerance", "3").code == 1  # LSB means nothing for floats: exact


def test_detections_are_labelled_boxes(tmp_path, cli):
    face = (0, 0.99609375, (0.2, 0.3, 0.6, 0.7))
    moved = (0, 0.98828125, (0.21, 0.3, 0.61, 0.7))
    detections_run(tmp_path / "a", "ref", [face])
    detections_run(tmp_path / "b", "ours", [moved, (1, 0.25, (0.0, 0.0, 0.05, 0.05))])
    labels = tmp_path / "labels.txt"
    labels.write_text("face\nhand\n", encoding="utf-8")
    r = cli("compare", tmp_path / "a", tmp_path / "b", "--labels", labels, "--json")
    det = json.loads(r.out)["detections"]
    assert det["pairs"][0]["label_a"] == "face"
    assert det["pairs"][0]["box_deltas"] == pytest.approx([0.01, 0.0, 0.01, 0.0], abs=1e-6)
    assert det["only_b"][0]["label"] == "hand"
    text = cli("compare", tmp_path / "a", tmp_path / "b", "--labels", labels, width=160).out
    assert "face (0)" in text and "hand (1)" in text and "+0.0100" in text
    assert "0x" not in text.split("detections, matched by IoU")[1]  # boxes, never hex


@pytest.mark.parametrize("argv, fragment", [
    (["--tolerance", "nosuch=1lsb"], "'nosuch': the runs have no such tensor"),
    (["--check", "p98"], "--check: must be one of max, mean, p99"),
    (["--tolerance", "convert_scores=atol=1lsb,bogus=2"], "unknown tolerance field"),
    (["--tolerance", "convert_scores=1lsb", "--tolerance", "convert_scores=2lsb"], "two tolerances"),
    (["--labels", "no/such/labels.txt"], "no/such/labels.txt"),
])
def test_bad_tolerances_are_one_line(story, cli, argv, fragment):
    a, b = story
    assert_one_line_error(cli("compare", a, b, *argv), fragment)


def test_batch_uses_the_policy(tmp_path):
    farm = tmp_path / "farm"
    for i, src in enumerate(("ours", "broken")):
        pair = farm / f"pair-{i}"
        pair.mkdir(parents=True)
        ingest(pair / "a_ref", "libedgetpu", ["raw:convert_scores=dumps/libedgetpu/convert_scores.bin"])
        ingest(pair / "b_ours", "ours", [f"raw:convert_scores=dumps/{src}/convert_scores.bin"])
    exact = batch_compare(farm, workers=1)
    assert [r["verdict"] for r in exact.rows] == ["MATCH", "DIFFER"] and exact.exit_code == 1
    loose = batch_compare(farm, workers=1, policy=make_policy(atol="204lsb"))
    assert [r["verdict"] for r in loose.rows] == ["MATCH", "WITHIN TOLERANCE"] and loose.exit_code == 0
    assert loose.rows[1]["raw"] == "WITHIN TOLERANCE"
