"""The explanations compare takes from more than one buffer (forensics.runs.causes) on their own, and the whole
evidence a run holds: the image its input was made from, the driver's log with its fingerprints; and the
answers compare takes from the CPU tail's replay (forensics.decode.explain) and a run's own logs."""

from __future__ import annotations

import dataclasses
import json
import zlib

import numpy as np
import pytest

from forensics.runs import causes
from forensics.runs.compare import compare_runs
from forensics.runs.run import BufferEntry, load_run
from tests.runs.driver_runs import (CORAL_SSD_V2, DETECTIONS, SsdFacts, dequantize_once, input_chk_log,
                                    replace_buffer, ssd_buffers, ssd_frame, u8, write_driver_run)


# --- pure functions -----------------------------------------------------------------------------------------

def test_crossed_needs_every_differing_buffer_to_be_another_of_a():
    a1, a2, a3 = (10, 1), (20, 2), (30, 3)
    assert causes.crossed([("x", a1, a2), ("y", a2, a1), ("z", a3, a3)]) == {"x": "y", "y": "x"}
    assert causes.crossed([("x", a1, a2), ("y", a2, (20, 9))]) == {}  # y holds nobody's bytes
    assert causes.crossed([("x", a1, a1), ("y", a2, a2)]) == {}
    assert causes.crossed([("x", a1, a2), ("y", a2, a1), ("w", a2, a2)]) == {}  # A's a2 twice: ambiguous


def test_placement_finds_the_offset_and_nothing_else():
    rng = np.random.default_rng(0)
    pixels = rng.integers(1, 256, (20, 30, 3), dtype=np.uint8)
    a = np.zeros((40, 30, 3), np.uint8)
    a[:20] = pixels
    b = np.zeros_like(a)
    b[10:30] = pixels
    p = causes.placement(a, b)
    assert (p["rows"], p["columns"], p["centred_b"], p["top_left_a"]) == (10, 0, True, True)
    assert causes.placement(a, a) is None
    c = b.copy()
    c[15, 3, 1] ^= 1  # one pixel more than a move
    assert causes.placement(a, c) is None


def test_within_rounding_is_the_two_runtimes_difference_and_no_more():
    q = np.arange(256, dtype=np.uint8)
    for scale, zp in ((0.09133967, 179), (0.10822763, 144), (1e-3, 3)):
        once = (np.float32(scale) * (q.astype(np.float32) - np.float32(zp))).astype(np.float32)
        s, z = np.float32(scale), np.float32(zp)
        twice = (q.astype(np.float32) * s).astype(np.float32) - np.float32(z * s)
        delta = causes.within_rounding(once, twice, scale, zp)
        assert delta == pytest.approx(float(np.abs(once.astype(np.float64) - twice).max()))
        worse = twice.copy()
        worse[7] += np.float32(8 * np.spacing(np.float32(abs(worse[7]) + zp * scale)))
        assert causes.within_rounding(once, worse, scale, zp) is None
    nan = np.array([np.nan, 1.0], np.float32)
    assert causes.within_rounding(nan, np.array([0.0, 1.0], np.float32), 0.1, 0) is None
    assert causes.within_rounding(nan, nan.copy(), 0.1, 0) == 0.0


def test_stages_follow_from_what_they_are_computed_from():
    assert causes.upstream("input") == {"image"}
    assert causes.upstream("params") == frozenset()
    assert causes.upstream("detections") == {"dequantized", "tensor", "raw", "params", "instructions", "input",
                                              "image"}
    assert "input" not in causes.upstream("instructions")


# --- the whole evidence of a run: its image and its log -----------------------------------------------------

def _with(run_path, stage: str, name: str, data: bytes, **extra):
    """A loaded run with one more buffer of `stage` (`image`), or one more driver log (`log`: the manifest's
    `logs`), its file written into the run."""
    from forensics.runs.run import LogEntry

    run = load_run(run_path)
    (run_path / stage).mkdir(exist_ok=True)
    (run_path / stage / name).write_bytes(data)
    if stage == "log":
        return dataclasses.replace(run, logs=run.logs + (LogEntry(name, f"log/{name}", len(data), zlib.crc32(data)),))
    entry = BufferEntry(stage, name, f"{stage}/{name}", len(data), zlib.crc32(data), extra=extra)
    return dataclasses.replace(run, buffers=run.buffers + (entry,))


def _pycoral_input(image_path, size=300, method="lanczos"):
    """pycoral's set_resized_input, by hand: scale by min(W/w, H/h), resize, top-left of a zero tensor."""
    from PIL import Image

    with Image.open(image_path) as img:
        img = img.convert("RGB")
        scale = min(size / img.width, size / img.height)
        nw, nh = int(img.width * scale), int(img.height * scale)
        filters = {"lanczos": Image.Resampling.LANCZOS, "bilinear": Image.Resampling.BILINEAR}
        resized = np.asarray(img.resize((nw, nh), filters[method]), np.uint8)
    out = np.zeros((1, size, size, 3), np.uint8)
    out[0, :nh, :nw] = resized
    return out


@pytest.fixture
def images(shared_data):
    pytest.importorskip("PIL")
    return shared_data / "face.jpg", shared_data / "grace_hopper.bmp"


def _image_runs(tmp_path, input_a, input_b):
    meta = u8((1, 300, 300, 3))
    a = write_driver_run(tmp_path / "a", "libedgetpu", [("input", "input", input_a, meta)],
                         capture={"resampling": "lanczos"})
    b = write_driver_run(tmp_path / "b", "ours", [("input", "input", input_b, meta)])
    return a, b


def test_inputs_of_different_images_follow_from_the_images(tmp_path, images):
    face, grace = images
    a, b = _image_runs(tmp_path, _pycoral_input(face), _pycoral_input(grace))
    run_a = _with(a, "image", "face.jpg", face.read_bytes())
    run_b = _with(b, "image", "grace_hopper.bmp", grace.read_bytes())
    result = compare_runs(run_a, run_b)
    row = result.first_divergent
    assert row.label == "input" and [f.kind for f in row.findings] == ["image"]
    assert result.images["same"] is False and "images_differ" in [r.code for r in result.judgement.reasons]
    assert "different images" in result.judgement.message


def test_an_input_resized_with_another_filter_is_explained_by_the_resize(tmp_path, images):
    face, _ = images
    a, b = _image_runs(tmp_path, _pycoral_input(face), _pycoral_input(face, method="bilinear"))
    run_a, run_b = (_with(p, "image", "face.jpg", face.read_bytes()) for p in (a, b))
    result = compare_runs(run_a, run_b)
    found = result.first_divergent.finding("resize")
    assert found is not None and found.details["resampling_b"] == "bilinear"
    assert "resize" in result.judgement.message and "lanczos" in found.evidence


def test_the_same_image_placed_elsewhere_is_explained_by_the_placement(tmp_path, images):
    face, _ = images
    top_left = _pycoral_input(face)
    rows = int(np.flatnonzero(top_left[0].any(axis=(1, 2)))[-1]) + 1
    shift = (300 - rows) // 2
    centred = np.zeros_like(top_left)
    centred[0, shift:shift + rows] = top_left[0, :rows]
    a, b = _image_runs(tmp_path, top_left, centred)
    run_a, run_b = (_with(p, "image", "face.jpg", face.read_bytes()) for p in (a, b))
    result = compare_runs(run_a, run_b)
    if shift == 0:
        pytest.skip("the image fills the input")
    assert result.first_divergent.finding("placement").details["rows"] == shift
    assert f"{shift} rows lower" in result.judgement.message


def test_a_logged_fingerprint_that_disagrees_with_its_dump_is_the_first_divergent_stage(tmp_path, shared_data):
    facts = SsdFacts(shared_data / CORAL_SSD_V2)
    image = np.random.default_rng(4).integers(0, 256, (1, 300, 300, 3), dtype=np.uint8)
    ref = [("input", "input", image, u8((1, 300, 300, 3)))] + [b for b in ssd_buffers(facts) if b[0] != "input"]
    a = write_driver_run(tmp_path / "a", "libedgetpu", ref, model=facts.record)
    b = write_driver_run(tmp_path / "b", "ours", ref, model=facts.record)  # the dumps match A's byte for byte
    read = bytearray(image.tobytes())
    read[len(read) // 2:] = bytes(len(read) - len(read) // 2)  # the DMA read the input before it was complete
    log = input_chk_log(bytes(read))
    result = compare_runs(load_run(a), _with(b, "log", "dbgview.log", log.encode()))
    first = result.first_divergent
    assert first.label == "input" and first.status == "DIFFER"
    logged = first.finding("logged_fingerprint")
    assert logged is not None and "[INPUT-CHK]" in logged.evidence
    line = logged.details["lines"][0]
    assert line["text"] == log.splitlines()[line["line"] - 1]
    assert result.judgement.message.startswith("first divergent stage: input: logged_fingerprint")
    assert all(r.follows for r in result.rows if r.diverges and r is not first)
    # the log of the bytes dumped agrees: nothing differs
    agreeing = _with(b, "log", "agree.log", input_chk_log(image.tobytes()).encode())
    assert compare_runs(load_run(a), agreeing).judgement.verdict == "MATCH"


# --- the other parts' answers, through compare ------------------------------------------------------------------------------------------

def test_a_log_ingested_into_a_run_is_checked_by_compare(tmp_path):
    log = tmp_path / "driver.log"
    log.write_text("[FP] input size=4 crc32=0x00000000 xor64=0x0000000000000000 head@0x0=00 mid@0x0=00 "
                   "tail@0x0=00\n", encoding="ascii")
    from forensics.runs.ingest import ingest

    (tmp_path / "in.bin").write_bytes(b"\x01\x02\x03\x04")
    ingest(tmp_path / "a", "ref", [f"input={tmp_path / 'in.bin'}"])
    ingest(tmp_path / "b", "ours", [f"input={tmp_path / 'in.bin'}", f"log={log}"])
    result = compare_runs(tmp_path / "a", tmp_path / "b")
    assert result.first_divergent.finding("logged_fingerprint") is not None


def _kernel_rows(boxes_f, scores_f, deps, **changed):
    """The PostProcess rows (class, score, box) of the kernel (forensics.decode.ssd, bit-exact with TFLite's) on
    dequantized boxes and scores, under the model's options with `changed` ones."""
    import dataclasses

    from forensics.decode.ssd import postprocess

    options = dataclasses.replace(deps.options, **changed)
    boxes, classes, scores, num, _ = postprocess(boxes_f.reshape(-1, 4), scores_f.reshape(1917, -1), deps.anchors,
                                                 options).output_tensors()
    return [(int(classes[i]), float(scores[i]), tuple(map(float, boxes[i]))) for i in range(int(num[0]))], options.rows


@pytest.fixture
def tail_pair(tmp_path, shared_data):
    from forensics.decode.model_deps import deps_from_model
    from forensics.decode.ssd import iou_matrix

    facts = SsdFacts(shared_data / CORAL_SSD_V2)
    deps = deps_from_model(facts.path)[0]
    boxes, scores = ssd_frame()
    # two anchors whose boxes overlap with IoU in (0.5, 0.6), both class 5 at the box deltas' zero point (a box
    # is its anchor): NMS at the model's 0.6 keeps both, at 0.5 one
    corners = np.stack([deps.anchors[:, 0] - deps.anchors[:, 2] / 2, deps.anchors[:, 1] - deps.anchors[:, 3] / 2,
                        deps.anchors[:, 0] + deps.anchors[:, 2] / 2, deps.anchors[:, 1] + deps.anchors[:, 3] / 2], 1)
    base = 1500  # the coarse layers' anchors overlap at many IoUs; the first layers' at 0.31 ... 0.69 only
    iou = iou_matrix(corners[base:], corners[base:])
    i, j = (int(k) + base for k in np.argwhere(np.triu((iou > 0.52) & (iou < 0.58), 1))[0])
    (bs, bz), (ss, sz) = facts.quant["Squeeze1"], facts.quant["convert_scores"]
    boxes[[i, j]] = bz
    scores[[i, j], 5] = (230, 220)
    boxes_f, scores_f = dequantize_once(boxes, bs, bz), dequantize_once(scores, ss, sz)
    rows_a, count = _kernel_rows(boxes_f, scores_f, deps)
    rows_b, _ = _kernel_rows(boxes_f, scores_f, deps, nms_iou_threshold=np.float32(0.5))
    assert len(rows_b) == len(rows_a) - 1  # the pair is one the threshold decides
    build = dict(boxes=boxes, scores=scores, max_rows=count)
    a = write_driver_run(tmp_path / "a", "libedgetpu", ssd_buffers(facts, detections=rows_a, **build),
                         model=facts.record)
    b = write_driver_run(tmp_path / "b", "ours", ssd_buffers(facts, detections=rows_b, **build), model=facts.record)
    return facts, a, b, tmp_path, dict(build, detections=rows_a)


def test_the_cpu_tail_names_the_postprocess_option(tail_pair):
    facts, a, b, _, _ = tail_pair
    row = compare_runs(a, b).first_divergent
    assert row.stage == "detections" and row.findings and "nms_iou_threshold" in row.findings[0].evidence


def test_the_cpu_tail_names_swapped_dequantize_parameters(tail_pair):
    facts, a, _, tmp_path, frame = tail_pair
    wrong = dequantize_once(frame["boxes"], *facts.quant["convert_scores"]).reshape(1, 1917, 4)
    drv = replace_buffer(ssd_buffers(facts, **frame), "dequantized", "Squeeze2", wrong)
    b = write_driver_run(tmp_path / "b2", "ours", drv, model=facts.record)
    row = compare_runs(a, b).first_divergent
    assert row.label == "dequantized:Squeeze2" and row.findings and "scale" in row.findings[0].evidence


def test_the_cpu_tail_is_replayed_once_per_pair_and_its_answer_is_the_stages_finding(tail_pair, monkeypatch):
    from forensics.decode.explain import Explanation, TailExplanation

    facts, a, b, _, _ = tail_pair
    calls = []

    def explain(run_a, run_b, model):
        calls.append(model)
        return TailExplanation(None, Explanation("detections", "option", option="nms_iou_threshold", value_a=0.6,
                                                 value_b=0.5, sentence="B = PostProcess(B's dequantized) with "
                                                                       "nms_iou_threshold 0.5 instead of 0.6"))

    monkeypatch.setattr(causes, "explain_tail", explain)
    result = compare_runs(a, b)
    assert calls == [facts.path]
    assert result.first_divergent.findings[0].kind == "postprocess_option"
    row = next(r for r in result.to_dict()["stages"] if r["follows"] is None and r["status"] == "DIFFER")
    assert row["findings"][0]["kind"] == "postprocess_option" and "postprocess_option" in result.judgement.message
