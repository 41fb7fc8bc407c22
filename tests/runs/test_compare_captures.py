"""compare on whole captures of the real SSD MobileNet segment (sizes, quantization, output layers' chip layouts,
executables from ../shared's models; every buffer made with numpy and every manifest written by hand): the six
harmless controls exit 0, and each planted root cause is named in its own vocabulary at the first divergent
stage, every later stage pointing at it (issue 32)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from forensics.runs.causes import DMA_KINDS
from forensics.runs.compare import compare_runs
from tests.runs.driver_runs import (CORAL_SSD_V1, CORAL_SSD_V2, DETECTIONS, SsdFacts, chip_layout, dequantize_blocks,
                                    dequantize_once, replace_buffer, ssd_buffers, ssd_frame, u8, write_driver_run)


@pytest.fixture(scope="module")
def facts(request):
    from tests.conftest import SHARED_CORAL

    if not SHARED_CORAL.is_dir():
        pytest.skip("../shared/data/coral is absent (a fresh clone): real-model tests skipped")
    return SsdFacts(SHARED_CORAL / CORAL_SSD_V2)


def _pair(tmp_path, facts, drv_buffers, *, ref_buffers=None, model=True):
    record = facts.record if model else None
    a = write_driver_run(tmp_path / "ref", "libedgetpu", ref_buffers or ssd_buffers(facts), model=record)
    b = write_driver_run(tmp_path / "drv", "ours", drv_buffers, model=record)
    return a, b


def _doc(cli, a, b, *extra):
    result = cli("compare", a, b, "--json", *extra)
    doc = json.loads(result.out) if result.out else None
    assert doc is not None and result.code == doc["exit_code"], result.err
    return result.code, doc


def _row(doc, label):
    return next(s for s in doc["stages"] if (s["stage"] if s["tensor"] == s["stage"] else
                                              f"{s['stage']}:{s['tensor']}") == label)


def _same_inputs(drv, ref):
    """`drv` with `ref`'s input buffers (the same feature maps fed to both)."""
    for stage, tensor, data, _ in ref:
        if stage == "input":
            drv = replace_buffer(drv, stage, tensor, data)
    return drv


def _kinds(row) -> list:
    return [f["kind"] for f in row.get("findings", ())]


# --- the harmless controls: exit 0, and said so -------------------------------------------------------------

def test_pad_lanes_and_tile_padding_from_the_model_are_ignored_by_compare_diff_and_diagnose(tmp_path, facts, cli):
    a, b = _pair(tmp_path, facts, ssd_buffers(facts, raw_pad=0xCC, raw_tail=0xCC))
    code, doc = _doc(cli, a, b)
    assert code == 0 and doc["verdict"] == "MATCH"
    scores = _row(doc, "raw:convert_scores")
    assert scores["status"] == "MATCH" and scores["crc32_a"] != scores["crc32_b"]
    assert [r["code"] for r in scores["reasons"]] == ["pad_lanes"]
    assert "pad lane 91" in scores["reasons"][0]["text"] and "4 bytes of tile padding" in scores["reasons"][0]["text"]
    assert "pad lane 91" in doc["message"] and {"pad_lanes"} <= {r["code"] for r in doc["reasons"]}
    # the same two files, as diff and diagnose read them with the model: the same answer (exit 0)
    for command in ("diff", "diagnose"):
        result = cli(command, a / "raw/convert_scores.bin", b / "raw/convert_scores.bin", "--model", facts.path,
                     "--tensor", "convert_scores")
        assert result.code == 0, (command, result.out)
        result = cli(command, a / "raw/Squeeze1.bin", b / "raw/Squeeze1.bin", "--model", facts.path,
                     "--tensor", "Squeeze1")
        assert result.code == 0, (command, result.out)
    # a data byte is not padding: the same runs with one score changed differ
    boxes, scores_u8 = ssd_frame()
    scores_u8 = scores_u8.copy()
    scores_u8[100, 5] ^= 1
    changed = replace_buffer(ssd_buffers(facts, raw_pad=0xCC), "raw", "convert_scores",
                             chip_layout(scores_u8, facts.raw_size["convert_scores"], 0xCC))
    a2, b2 = _pair(tmp_path / "2", facts, changed)
    code, doc = _doc(cli, a2, b2)
    assert code == 1 and doc["first_divergent_stage"] == "raw"


def test_declared_pad_lanes_exit_0_in_compare_diff_and_diagnose(tmp_path, facts, cli):
    # issue 33: diff and diagnose exited 0, compare of runs holding the same files 1
    declared = {"dtype": "uint8", "record_size": 92, "pad_lanes": [91]}
    ref = replace_buffer(ssd_buffers(facts), "raw", "convert_scores", meta=declared)
    drv = replace_buffer(ssd_buffers(facts, raw_pad=0x5A), "raw", "convert_scores", meta=declared)
    drv = replace_buffer(drv, "raw", "Squeeze1", chip_layout(ssd_frame()[0], facts.raw_size["Squeeze1"]))
    a, b = _pair(tmp_path, facts, drv, ref_buffers=ref, model=False)
    code, doc = _doc(cli, a, b)
    assert code == 0 and doc["verdict"] == "MATCH" and _row(doc, "raw:convert_scores")["status"] == "MATCH"
    for command in ("diff", "diagnose"):
        result = cli(command, a / "raw/convert_scores.bin", b / "raw/convert_scores.bin", "--record", "92",
                     "--pad", "91")
        assert result.code == 0, (command, result.out)


def test_detection_rows_past_num_detections_are_not_compared(tmp_path, facts, cli):
    drv = ssd_buffers(facts, garbage=np.random.default_rng(11))  # LiteRT leaves the rows past it as they were
    a, b = _pair(tmp_path, facts, drv)
    code, doc = _doc(cli, a, b)
    assert code == 0 and doc["verdict"] == "MATCH"
    for tensor in ("TFLite_Detection_PostProcess", "TFLite_Detection_PostProcess:1", "TFLite_Detection_PostProcess:2"):
        row = _row(doc, f"detections:{tensor}")
        assert row["crc32_a"] != row["crc32_b"] and [r["code"] for r in row["reasons"]] == ["past_num_detections"]
    # a row below num_detections is compared
    moved = [DETECTIONS[0], (17, 0.71484375, (0.3, 0.1, 0.9, 0.45)), DETECTIONS[2]]
    a2, b2 = _pair(tmp_path / "2", facts, ssd_buffers(facts, detections=moved, garbage=np.random.default_rng(1)))
    code, doc = _doc(cli, a2, b2)
    assert code == 1 and doc["first_divergent_tensor"] == "TFLite_Detection_PostProcess"


@pytest.mark.parametrize("model", [True, False])
def test_another_runtimes_dequantize_rounding_is_within_tolerance_with_the_reason(tmp_path, facts, cli, model):
    a, b = _pair(tmp_path, facts, ssd_buffers(facts, dequantize=dequantize_blocks), model=model)
    code, doc = _doc(cli, a, b)
    assert code == 0 and doc["verdict"] == "WITHIN TOLERANCE"
    row = _row(doc, "dequantized:Squeeze2")  # scale 0.0913, zero point 179: the two roundings part
    assert row["status"] == "WITHIN TOLERANCE" and [r["code"] for r in row["reasons"]] == ["dequantize_rounding"]
    assert "dequantize rounding" in doc["message"]
    qa = ssd_frame()[0]
    assert row["stats"]["max_abs"] == pytest.approx(float(np.abs(
        dequantize_once(qa, *facts.quant["Squeeze1"]).astype(np.float64)
        - dequantize_blocks(qa, *facts.quant["Squeeze1"])).max()))
    # ten times that is no rounding: DIFFER
    off = dequantize_once(qa, *facts.quant["Squeeze1"]).copy()
    off[3, 1] += np.float32(2e-5)
    drv = replace_buffer(ssd_buffers(facts), "dequantized", "Squeeze2", off.reshape(1, 1917, 4))
    a2, b2 = _pair(tmp_path / "2", facts, drv, model=model)
    code, doc = _doc(cli, a2, b2)
    assert code == 1 and doc["first_divergent_stage"] == "dequantized"


def test_the_same_capture_twice_and_a_driver_that_dumps_fewer_stages_match(tmp_path, facts, cli):
    a, b = _pair(tmp_path, facts, ssd_buffers(facts))
    code, doc = _doc(cli, a, b)
    assert code == 0 and doc["verdict"] == "MATCH" and doc["message"].startswith("all 16 common buffers match")
    fewer = [buf for buf in ssd_buffers(facts) if buf[0] not in ("dequantized", "params")]
    a2, b2 = _pair(tmp_path / "2", facts, fewer)
    code, doc = _doc(cli, a2, b2)
    assert code == 0 and doc["verdict"] == "MATCH"
    assert {s["status"] for s in doc["stages"] if s["stage"] in ("dequantized", "params")} == {"ONLY_A"}


# --- causes in their own vocabulary ----------------------------------------------------------------------

def test_a_cpu_tail_stage_gets_no_dma_names(tmp_path, facts, cli):
    # another NMS threshold: the same tensors, other detection rows
    other = [DETECTIONS[0], (17, 0.71484375, (0.31, 0.1, 0.9, 0.4)), (17, 0.6, (0.3, 0.12, 0.88, 0.4))]
    a, b = _pair(tmp_path, facts, ssd_buffers(facts, detections=other))
    code, doc = _doc(cli, a, b)
    assert code == 1 and doc["first_divergent_stage"] == "detections"
    for row in doc["stages"]:
        if row["stage"] == "detections":
            assert not set(_kinds(row)) & DMA_KINDS and not row.get("hint")
    assert "post-processing" in doc["message"]


def test_a_tensor_computed_from_a_matching_raw_output_gets_no_dma_names(tmp_path, facts, cli):
    boxes, scores = ssd_frame()
    swapped = scores.copy()
    swapped[:, 0:2] = scores[:, 1::-1]  # the relayout wrote the first two lanes the other way round
    drv = replace_buffer(ssd_buffers(facts), "tensor", "convert_scores", swapped)
    drv = replace_buffer(drv, "dequantized", "convert_scores1",
                         dequantize_once(swapped, *facts.quant["convert_scores"]).reshape(1, 1917, 91))
    a, b = _pair(tmp_path, facts, drv)
    code, doc = _doc(cli, a, b)
    assert code == 1 and doc["first_divergent_stage"] == "tensor" and "relayout" in doc["message"]
    row = _row(doc, "tensor:convert_scores")
    assert not set(_kinds(row)) & DMA_KINDS
    assert _row(doc, "dequantized:convert_scores1")["follows"] == "tensor:convert_scores"


def test_outputs_bound_in_the_wrong_order_are_named_by_crc(tmp_path, facts, cli):
    ref = ssd_buffers(facts)
    raw = {t: d for s, t, d, _ in ref if s == "raw"}
    drv = replace_buffer(ref, "raw", "Squeeze1", raw["convert_scores"])
    drv = replace_buffer(drv, "raw", "convert_scores", raw["Squeeze1"])
    rng = np.random.default_rng(2)  # what the driver's relayout made of the wrong buffers
    drv = replace_buffer(drv, "tensor", "Squeeze1", rng.integers(0, 256, (1917, 4), dtype=np.uint8))
    a, b = _pair(tmp_path, facts, drv)
    code, doc = _doc(cli, a, b)
    assert code == 1 and doc["first_divergent_stage"] == "raw"
    squeeze, scores = _row(doc, "raw:Squeeze1"), _row(doc, "raw:convert_scores")
    assert _kinds(squeeze) == ["buffer_order"] and squeeze["findings"][0]["holds"] == "raw:convert_scores"
    assert _kinds(scores) == ["buffer_order"] and scores["findings"][0]["holds"] == "raw:Squeeze1"
    assert "bound in the wrong order" in doc["message"]
    assert _row(doc, "tensor:Squeeze1")["follows"] == "raw:Squeeze1" and not _kinds(_row(doc, "tensor:Squeeze1"))


def test_another_models_parameters_are_foreign_against_run_as_model(tmp_path, facts, cli):
    from tests.conftest import SHARED_CORAL

    v1 = SsdFacts(SHARED_CORAL / CORAL_SSD_V1)
    # the other model's weights, and what the chip computed with them from the same inputs
    drv = _same_inputs(replace_buffer(ssd_buffers(facts, seed=4), "params", "op0_exe1_parameter_caching",
                                      v1.params["op0_exe1_parameter_caching"]), ssd_buffers(facts))
    a, b = _pair(tmp_path, facts, drv)
    code, doc = _doc(cli, a, b)
    assert code == 1 and doc["first_divergent_stage"] == "params"
    params = _row(doc, "params:op0_exe1_parameter_caching")
    assert _kinds(params)[0] == "foreign" and params["findings"][0]["verdict"] == "FOREIGN"
    assert "FOREIGN" in doc["message"] and "another model's parameters" in doc["message"]
    import shlex  # the command the hint prints runs as printed and says the same

    hint = params["findings"][0]["hint"]
    command = shlex.split(hint[hint.index("forensics link ") + len("forensics "):].rstrip(")"))
    checked = cli(*command)
    assert checked.code == 1 and "FOREIGN" in checked.out, checked.out + checked.err
    for label in ("raw:Squeeze1", "raw:convert_scores", "tensor:convert_scores"):
        row = _row(doc, label)
        assert row["follows"] and not _kinds(row)


def test_a_parameter_caching_executable_never_submitted(tmp_path, facts, cli):
    # no caching run, and outputs computed on whatever the cache held, from the same inputs
    drv = _same_inputs(replace_buffer(ssd_buffers(facts, seed=9), "instructions", "1_0", ...), ssd_buffers(facts))
    a, b = _pair(tmp_path, facts, drv)
    code, doc = _doc(cli, a, b)
    assert code == 1 and doc["first_divergent_stage"] == "instructions" and doc["first_divergent_tensor"] == "1_0"
    row = _row(doc, "instructions:1_0")
    assert row["status"] == "DIFFER" and row["bookkeeping"] == "only_a" and _kinds(row) == ["not_submitted"]
    assert "not_submitted" in doc["message"]
    assert _row(doc, "raw:convert_scores")["follows"] == "instructions:1_0"
    # without the model, A's params name the caching executable
    a2, b2 = _pair(tmp_path / "2", facts, drv, model=False)
    code, doc = _doc(cli, a2, b2)
    assert code == 1 and _kinds(_row(doc, "instructions:1_0")) == ["not_submitted"]


def _image(shape=(300, 300, 3), content=(202, 300)):
    """An image of `content` (rows, cols) pixels, never zero, as a resized photo is."""
    rng = np.random.default_rng(8)
    return rng.integers(1, 256, (*content, shape[2]), dtype=np.uint8)


def test_letterbox_placement_is_named_not_a_rotation(tmp_path, cli):
    from forensics.diagnose import diagnose_dumps

    pixels = _image()
    top_left = np.zeros((300, 300, 3), np.uint8)
    top_left[:202, :300] = pixels  # pycoral: top-left, zero padding right and bottom
    centred = np.zeros((300, 300, 3), np.uint8)
    centred[49:251, :300] = pixels
    meta = u8((1, 300, 300, 3), scale=1 / 255, zero_point=0)
    a = write_driver_run(tmp_path / "ref", "libedgetpu", [("input", "image", top_left, meta)])
    b = write_driver_run(tmp_path / "drv", "ours", [("input", "image", centred, meta)])
    code, doc = _doc(cli, a, b)
    row = _row(doc, "input:image")
    assert code == 1 and _kinds(row) == ["placement"]
    assert row["findings"][0]["rows"] == 49 and row["findings"][0]["columns"] == 0
    assert "49 rows lower" in doc["message"] and "top-left" in doc["message"]
    # what diagnose alone calls it, knowing no image: B moved, its vacated rows the letterbox's zeros
    assert {"rotation", "shift"} & set(diagnose_dumps(a / "input/image.bin", b / "input/image.bin").kinds)


def test_an_unexplained_stage_carries_diagnoses_hint_and_its_command_runs(tmp_path, facts, cli):
    boxes, scores = ssd_frame()
    bad = scores.copy()
    rng = np.random.default_rng(5)
    hit = rng.choice(1917, 6, replace=False)
    bad[hit, rng.integers(1, 91, 6)] ^= 0x40
    drv = replace_buffer(ssd_buffers(facts), "raw", "convert_scores",
                         chip_layout(bad, facts.raw_size["convert_scores"]))
    a, b = _pair(tmp_path, facts, drv)
    code, doc = _doc(cli, a, b)
    row = _row(doc, "raw:convert_scores")
    assert code == 1 and not _kinds(row) and row["hint"]
    text = cli("compare", a, b).out
    assert f"raw:convert_scores: {row['hint'][:40]}" in " ".join(text.split())
    if "forensics diff " in row["hint"]:  # the command it prints runs as printed and says they differ
        import shlex

        command = shlex.split(row["hint"].split("forensics ", 1)[1])
        assert cli(*command[:3]).code == 1


def test_a_bgr_input_is_the_cause_and_every_later_stage_follows_from_it(tmp_path, facts, cli):
    ref = ssd_buffers(facts)
    rgb = np.random.default_rng(3).integers(0, 256, (1, 19, 19, 576), dtype=np.uint8)
    name = facts.inputs[0][0]
    ref = replace_buffer(ref, "input", name, rgb)
    bgr = rgb.reshape(-1, 3)[:, ::-1].reshape(rgb.shape)  # colour order swapped in every pixel
    boxes, scores = ssd_frame(seed=6)  # what the model made of it
    drv = ssd_buffers(facts, seed=6, inputs={name: bgr}, boxes=boxes, scores=scores,
                      detections=[(0, 0.5, (0.1, 0.2, 0.6, 0.5))])
    drv = _same_inputs(drv, [buf for buf in ref if buf[1] != name])
    a, b = _pair(tmp_path, facts, drv, ref_buffers=ref)
    code, doc = _doc(cli, a, b)
    assert code == 1 and doc["first_divergent_stage"] == "input"
    assert "lane_swap" in _kinds(_row(doc, f"input:{name}"))
    later = [s for s in doc["stages"] if s["stage"] in ("raw", "tensor", "dequantized", "detections")
             and s["status"] == "DIFFER"]
    assert later and all(s["follows"] and not _kinds(s) and not s.get("hint") for s in later)
    assert all("expected: follows from" in s["message"] for s in later)
    text = " ".join(cli("compare", a, b, width=200).out.split())
    assert "raw convert_scores DIFFER" in text and "expected: follows from input" in text


# --- the library's result is the CLI's --------------------------------------------------------------------

def test_the_library_result_says_what_the_cli_says(tmp_path, facts, cli):
    a, b = _pair(tmp_path, facts, ssd_buffers(facts, raw_pad=0xCC, dequantize=dequantize_blocks))
    result = compare_runs(a, b)
    code, doc = _doc(cli, a, b)
    assert result.judgement.verdict == doc["verdict"] and result.judgement.message == doc["message"]
    assert result.to_dict()["reasons"] == doc["reasons"] and result.judgement.exit_code == code
