"""compare on the story's runs: verdicts against cmp-style oracles, summaries against numpy counts, the first
divergent stage, stages in one run only, mismatched models, detections matched by IoU, golden table, bad input."""

from __future__ import annotations

import filecmp
import json
import numpy as np
import pytest

from forensics.decode.ssd import Detection, iou_one_to_many
from forensics.runs.compare import compare_runs, match_detections
from forensics.runs.ingest import ingest
from forensics.runs.run import load_run
from tests.conftest import REPO, assert_golden, assert_one_line_error
from tests.runs.runs_support import detections_run, edit_manifest, story_run


@pytest.mark.parametrize("other", ["ours", "broken"])
def test_stage_verdicts_agree_with_byte_comparison(tmp_path, cli, other):
    a = story_run(tmp_path, "libedgetpu")
    b = story_run(tmp_path, other)
    result = cli("compare", a, b, "--json")
    doc = json.loads(result.out)
    ra, rb = load_run(a), load_run(b)
    expected = {}
    for row in doc["stages"]:
        ea, eb = ra.buffer(row["stage"], row["tensor"]), rb.buffer(row["stage"], row["tensor"])
        expected[row["stage"]] = filecmp.cmp(ra.file_path(ea), rb.file_path(eb), shallow=False)
        assert row["match"] == expected[row["stage"]]
    assert [r["stage"] for r in doc["stages"]] == ["input", "raw", "tensor"]
    assert result.code == (0 if all(expected.values()) else 1)
    first = next((s for s in ("input", "raw", "tensor") if not expected[s]), None)
    assert doc["first_divergent_stage"] == first


def test_the_broken_pair_names_the_input_first_and_says_what_to_do(tmp_path, cli):
    a, b = story_run(tmp_path, "libedgetpu"), story_run(tmp_path, "broken")
    result = cli("compare", a, b)
    assert result.code == 1
    assert "first divergent stage: input: inputs differ: fix the input path first" in " ".join(result.out.split())
    summaries = {r["stage"]: r["summary"] for r in json.loads(cli("compare", a, b, "--json").out)["stages"]}
    assert summaries["input"] == "1 of 320 rows differ (first: row 117)"  # the row-stride bug of dumps/README.md
    assert summaries["raw"] == "534 of 2,034 anchors differ (first: anchor 1500)"  # DMA stopped at anchor 1500


def test_anchor_count_summary_matches_a_numpy_count(tmp_path, cli):
    rng = np.random.default_rng(7)
    ref = np.fromfile(REPO / "dumps/libedgetpu/Squeeze1.bin", np.uint8).reshape(-1, 4)
    changed = ref.copy()
    picked = rng.choice(len(ref), size=9, replace=False)
    changed[picked, rng.integers(0, 4, size=9)] ^= 0x01
    dump = tmp_path / "Squeeze1.bin"
    changed.tofile(dump)
    ingest(tmp_path / "a", "libedgetpu", ["tensor:Squeeze1=dumps/libedgetpu/Squeeze1.bin"])
    ingest(tmp_path / "b", "ours", [f"tensor:Squeeze1={dump}"])
    doc = json.loads(cli("compare", tmp_path / "a", tmp_path / "b", "--json").out)
    n = int(np.count_nonzero(np.any(ref != changed, axis=1)))
    assert n == 9
    assert doc["stages"][0]["summary"].startswith(f"{n} of {len(ref):,} anchors differ (first: anchor {picked.min()})")
    assert doc["stages"][0]["diff"]["records_differing"] == n
    assert doc["first_divergent_stage"] == "tensor"
    assert "relayout" in doc["advice"]


def test_stages_in_one_run_only_are_shown_not_compared(tmp_path, cli):
    a = story_run(tmp_path, "libedgetpu")
    ingest(tmp_path / "b", "ours", ["input=dumps/ours/input.bin"])
    result = cli("compare", a, tmp_path / "b", "--json")
    doc = json.loads(result.out)
    assert result.code == 0  # the one common stage matches
    only = [r for r in doc["stages"] if r["status"] == "ONLY_A"]
    assert {r["tensor"] for r in only} == {"convert_scores", "Squeeze1"}
    assert all(r["match"] is None for r in only)
    assert "only in A (libedgetpu)" in cli("compare", a, tmp_path / "b").out


def test_runs_without_a_common_stage_are_exit_2(tmp_path, cli):
    ingest(tmp_path / "a", "libedgetpu", ["input=dumps/libedgetpu/input.bin"])
    ingest(tmp_path / "b", "ours", ["tensor:Squeeze1=dumps/ours/Squeeze1.bin"])
    assert_one_line_error(cli("compare", tmp_path / "a", tmp_path / "b"), "share no stage")


def test_runs_of_different_models_say_so_and_compare_anyway(tmp_path, cli):
    a, b = story_run(tmp_path, "libedgetpu"), story_run(tmp_path, "ours")
    edit_manifest(a, lambda d: d.update(model={"path": "face_v1.tflite", "sha256": "a" * 64}))
    edit_manifest(b, lambda d: d.update(model={"path": "face_v2.tflite", "sha256": "b" * 64}))
    result = cli("compare", a, b, "--json")
    assert result.code == 0
    assert "different models" in result.err and "face_v1.tflite" in result.err
    assert json.loads(result.out)["models_differ"] is True


def iou(a, b) -> float:
    """The decode kernel's IoU, the one compare matches detections with."""
    return float(iou_one_to_many(np.array([a, b], np.float32), 0, np.array([1]))[0])


def test_detections_side_by_side(tmp_path, cli):
    face = (0, 0.99609375, (0.2, 0.3, 0.6, 0.7))
    other = (0, 0.5, (0.7, 0.7, 0.9, 0.9))
    moved = (0, 0.98828125, (0.21, 0.3, 0.61, 0.7))
    detections_run(tmp_path / "a", "libedgetpu", [face, other])
    detections_run(tmp_path / "b", "ours", [moved, (0, 0.25, (0.0, 0.0, 0.05, 0.05))])
    result = cli("compare", tmp_path / "a", tmp_path / "b", "--json")
    assert result.code == 1
    det = json.loads(result.out)["detections"]
    assert len(det["pairs"]) == 1 and det["pairs"][0]["row_a"] == 0 and det["pairs"][0]["row_b"] == 0
    assert det["pairs"][0]["score_delta"] == pytest.approx(moved[1] - face[1])
    assert det["pairs"][0]["iou"] == pytest.approx(iou(face[2], moved[2]), rel=1e-6)
    assert [d["row"] for d in det["only_a"]] == [1] and [d["row"] for d in det["only_b"]] == [1]
    assert json.loads(result.out)["first_divergent_stage"] == "detections"
    assert "post-processing" in json.loads(result.out)["advice"]
    text = cli("compare", tmp_path / "a", tmp_path / "b").out
    assert "detections, matched by IoU" in text and "-0.007812" in text


def test_matching_is_one_to_one_and_prefers_the_highest_iou():
    box = (0.1, 0.1, 0.5, 0.5)
    a = [Detection(0, -1, 1, 0.9, box), Detection(1, -1, 1, 0.8, box)]
    b = [Detection(0, -1, 1, 0.9, (0.1, 0.1, 0.5, 0.52)), Detection(1, -1, 1, 0.9, (0.1, 0.1, 0.5, 0.5))]
    pairs, only_a, only_b = match_detections(a, b)
    # the exact box pairs first (IoU 1), the other A row takes the remaining B row
    assert [(p.row_a, p.row_b) for p in pairs] == [(0, 1), (1, 0)] and not only_a and not only_b
    pairs, only_a, only_b = match_detections(a, b[:1])
    assert len(pairs) == 1 and len(only_a) == 1 and not only_b
    # corners written the other way round are the same box
    flipped = [Detection(0, -1, 1, 0.9, (0.5, 0.5, 0.1, 0.1))]
    assert match_detections(a[:1], flipped)[0][0].iou == pytest.approx(1.0)


def test_identical_detections_match(tmp_path, cli):
    rows = [(2, 0.75, (0.1, 0.2, 0.3, 0.4))]
    detections_run(tmp_path / "a", "x", rows)
    detections_run(tmp_path / "b", "y", rows)
    result = compare_runs(tmp_path / "a", tmp_path / "b")
    assert result.match and result.detections.same and result.first_divergent is None


def test_golden_compare_table(tmp_path, cli):
    for name in ("libedgetpu", "broken"):
        story_run(tmp_path, name)
    import os

    old = os.getcwd()
    os.chdir(tmp_path)
    try:
        result = cli("compare", "libedgetpu", "broken", "--limit", "2")
    finally:
        os.chdir(old)
    assert_golden(REPO / "tests/runs/golden/compare_broken.txt", result.out)
    assert result.code == 1


@pytest.mark.parametrize("argv, fragment", [
    (["compare", "only-one"], "needs two runs"),
    (["compare", "--batch", "x", "a", "b"], "not both"),
    (["ingest", "RUN", "--source", "x", "nostage"], "expected STAGE[:TENSOR]=FILE"),
    (["ingest", "RUN", "--source", "x", "outfeed=dumps/ours/input.bin"], "unknown stage 'outfeed'"),
    (["ingest", "RUN", "--source", "x", "input=does/not/exist.bin"], "no such file"),
])
def test_bad_command_lines(tmp_path, cli, argv, fragment):
    argv = [str(tmp_path / a) if a == "RUN" else a for a in argv]
    assert_one_line_error(cli(*argv), fragment)


def test_previous_run_feeds_the_stale_heuristic(tmp_path, cli):
    # B's raw scores are the previous inference's buffer: diagnose's `stale` fires through compare.
    ingest(tmp_path / "prev", "ours", ["raw:convert_scores=dumps/broken/convert_scores.bin"])
    ingest(tmp_path / "a", "libedgetpu", ["raw:convert_scores=dumps/libedgetpu/convert_scores.bin"])
    ingest(tmp_path / "b", "ours", ["raw:convert_scores=dumps/broken/convert_scores.bin"])
    doc = json.loads(cli("compare", tmp_path / "a", tmp_path / "b", "--previous", tmp_path / "prev", "--json").out)
    kinds = [f["kind"] for f in doc["stages"][0]["findings"]]
    assert "stale" in kinds and "fill" in kinds


def test_clean_pairs_have_no_findings(tmp_path):
    a, b = story_run(tmp_path, "libedgetpu"), story_run(tmp_path, "ours")
    result = compare_runs(a, b)
    assert all(not row.findings for row in result.rows)


def test_ingest_with_model_relayouts_raw_layers(tmp_path, cli, shared_data):
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map

    model_path = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    with open_model(model_path) as model:
        layer = read_packages(model)[0].output_layer("convert_scores")
        m = layer_map(layer)
    tensor = np.random.default_rng(5).integers(0, 256, m.tensor_size, dtype=np.uint8)
    raw = inverse_relayout(tensor, m, pad_byte=0xCC)
    (tmp_path / "scores.bin").write_bytes(raw.tobytes())
    result = cli("ingest", tmp_path / "r", "--source", "ours", "--model", model_path,
                 f"raw:convert_scores={tmp_path / 'scores.bin'}", "--json")
    assert result.code == 0, result.err
    doc = json.loads(result.out)
    assert doc["relayouted"] == ["convert_scores"]
    run = load_run(tmp_path / "r")
    got = np.fromfile(run.file_path(run.buffer("tensor", "convert_scores")), np.uint8)
    assert np.array_equal(got, tensor)
    entry = run.buffer("tensor", "convert_scores")
    assert entry.shape == (1, 1917, 91) and entry.role == "scores" and entry.scale == pytest.approx(1 / 256)
    assert run.model["sha256"] and run.buffer("raw").size == 176_368
    # a wrong-size raw dump says both sizes
    (tmp_path / "short.bin").write_bytes(raw.tobytes()[:1000])
    assert_one_line_error(cli("ingest", tmp_path / "r2", "--source", "ours", "--model", model_path,
                              f"raw:convert_scores={tmp_path / 'short.bin'}"), "176368 bytes (raw)")
    assert not (tmp_path / "r2").exists()
    # a tensor the model does not have is refused, naming it, before anything is written
    (tmp_path / "t.bin").write_bytes(tensor.tobytes())
    assert_one_line_error(cli("ingest", tmp_path / "r3", "--source", "ours", "--model", model_path,
                              f"tensor:convert_score={tmp_path / 't.bin'}"), "'convert_score'", model_path.name)
    assert not (tmp_path / "r3").exists()
