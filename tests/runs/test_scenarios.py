"""Whole bring-up captures of the real SSD MobileNet segments (v2, and v1 for some), each a reference run and a
driver run holding every stage a capture records (params, instructions, input, raw, tensor, dequantized,
detections; a driver log with [FP] fingerprints where one is the evidence), with ONE root cause planted upstream
and every later stage recomputed from the driver's own upstream stage (the chip's layout, the relayout, the
dequantize, the PostProcess kernel); 6 are harmless controls. Every buffer is made with numpy and every manifest
by hand (tests/runs/driver_runs.py), never through forensics' writers.

For each: compare's exit code, the first divergent stage, the finding named for it, every later differing stage
pointing at its cause (and never a DMA kind on the CPU tail's stages), the terminal's verdict line the JSON's."""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import dataclass, field

import numpy as np
import pytest

from forensics.runs.causes import CPU_STAGES, DMA_KINDS
from tests.runs.driver_runs import (CORAL_SSD_V1, CORAL_SSD_V2, SsdFacts, add_log, capture_buffers, chip_layout,
                                    dequantize_blocks, dequantize_once, fp_log_line, input_chk_log,
                                    replace_buffer, ssd_frame, u8,
                                    write_driver_run)


@dataclass
class Ctx:
    """One model's facts (its .tflite) and the PostProcess the model's tail runs (options, anchors)."""

    facts: SsdFacts
    deps: object

    def capture(self, **kw):
        return capture_buffers(self.facts, self.deps, **kw)

    def input_name(self, i: int = 0) -> str:
        return self.facts.inputs[i][0]

    def input_shape(self, i: int = 0) -> tuple:
        return self.facts.inputs[i][1]

    def reference_input(self, i: int = 0, seed: int = 0) -> np.ndarray:
        rng = np.random.default_rng(seed)
        for k, (_, shape) in enumerate(self.facts.inputs):
            data = rng.integers(0, 256, shape, dtype=np.uint8)
            if k == i:
                return data
        raise IndexError(i)

    def raw(self, frame=None, name: str = "convert_scores") -> bytearray:
        boxes, scores = ssd_frame() if frame is None else frame
        return bytearray(chip_layout(boxes if name == "Squeeze1" else scores, self.facts.raw_size[name]))

    def rows(self, boxes, scores, **changed):
        from tests.runs.driver_runs import postprocess_rows

        (bs, bz), (ss, sz) = self.facts.quant["Squeeze1"], self.facts.quant["convert_scores"]
        return postprocess_rows(self.deps, dequantize_once(boxes, bs, bz), dequantize_once(scores, ss, sz), **changed)


@pytest.fixture(scope="module")
def models():
    from forensics.decode.model_deps import deps_from_model
    from tests.conftest import SHARED_CORAL

    if not SHARED_CORAL.is_dir():
        pytest.skip("../shared/data/coral is absent (a fresh clone): real-model tests skipped")
    out = {}
    for key, name in (("v2", CORAL_SSD_V2), ("v1", CORAL_SSD_V1)):
        facts = SsdFacts(SHARED_CORAL / name)
        out[key] = Ctx(facts, deps_from_model(facts.path)[0])
    return out


@dataclass
class Built:
    ref: list
    drv: list
    ref_logs: list = field(default_factory=list)  # (name, text, tags)
    drv_logs: list = field(default_factory=list)
    model: bool = True
    shuffle: bool = False   # B's manifest lists its buffers in another order, under other file names
    drv_model: dict | None = None  # the model B's manifest records, when not A's


PREFILL = b"\xcc"  # what the driver fills an output buffer with before the chip writes it ("pre-filled with 0xCC")


def _changed_frame(seed: int):
    """What the model computed from other inputs or other weights: another frame."""
    return ssd_frame(seed)


# --- the root causes, planted upstream ---------------------------------------------------------------------

def bgr_input(m):
    rgb = m.reference_input(0)
    flat = rgb.reshape(-1).copy()
    n = flat.size // 3 * 3
    flat[:n] = flat[:n].reshape(-1, 3)[:, ::-1].reshape(-1)  # the colour order of every pixel swapped
    bgr = flat.reshape(rgb.shape)
    return Built(m.capture(), m.capture(inputs={m.input_name(0): bgr}, frame=_changed_frame(6)))


def int8_input(m):
    x = m.reference_input(1)
    return Built(m.capture(), m.capture(inputs={m.input_name(1): x ^ np.uint8(0x80)}, frame=_changed_frame(7)))


def row_stride(m):
    x = m.reference_input(0)
    rows = x.reshape(x.shape[1], -1)  # 19 rows of 19 x C bytes, written at a 64-byte aligned pitch
    width = rows.shape[1]
    pitch = -(-width // 64) * 64 + 64
    flat = np.zeros(rows.shape[0] * pitch, np.uint8)
    for r in range(rows.shape[0]):
        flat[r * pitch:r * pitch + width] = rows[r]
    read = flat[:x.size].reshape(x.shape)  # the chip reads it packed
    return Built(m.capture(), m.capture(inputs={m.input_name(0): read}, frame=_changed_frame(8)))


def dma_stopped_early(m):
    raw = m.raw()
    raw[100_000:] = PREFILL * (len(raw) - 100_000)  # the output DMA stopped; the rest is the driver's prefill
    return Built(m.capture(), m.capture(raw={"convert_scores": bytes(raw)}))


def relayout_skipped(m):
    raw = m.raw()
    packed = np.frombuffer(bytes(raw), np.uint8)[:1917 * 91].reshape(1917, 91)  # the padded records read packed
    return Built(m.capture(), m.capture(tensors={"convert_scores": packed.copy()}))


def half_uploaded_params(m):
    name = "op0_exe1_parameter_caching"
    blob = bytearray(m.facts.params[name])
    blob[len(blob) // 2:] = bytes(len(blob) - len(blob) // 2)
    return Built(m.capture(), m.capture(params={name: bytes(blob)}, frame=_changed_frame(9)))


def aliased_outputs(m):
    raw = m.raw()  # both outputs linked to one address: the scores, written last, are in the boxes' buffer too
    return Built(m.capture(), m.capture(raw={"Squeeze1": bytes(raw[:m.facts.raw_size["Squeeze1"]])}))


def aliased_boxes_written_last(m):
    raw = m.raw()  # the boxes, written last, over the first bytes of the scores
    boxes = m.raw(name="Squeeze1")
    raw[:len(boxes)] = boxes
    return Built(m.capture(), m.capture(raw={"convert_scores": bytes(raw)}))


def dma_stopped_zeroed(m):
    raw = m.raw(name="Squeeze1")
    raw[4000:] = bytes(len(raw) - 4000)  # a buffer the driver zeroed; the DMA stopped at byte 4,000
    return Built(m.capture(), m.capture(raw={"Squeeze1": bytes(raw)}))


def bgr_image_input(m):
    rng = np.random.default_rng(5)
    rgb = rng.integers(0, 256, (1, 300, 300, 3), dtype=np.uint8)
    meta = u8((1, 300, 300, 3), scale=1 / 128, zero_point=128)

    def run(image, frame):
        return [("input", "normalized_input_image_tensor", image, meta)] + \
            [b for b in m.capture(frame=frame) if b[0] != "input"]

    return Built(run(rgb, None), run(rgb[..., ::-1].copy(), _changed_frame(15)), model=False)


def bit_cleared(m):
    raw = np.frombuffer(bytes(m.raw(name="Squeeze1")), np.uint8) & np.uint8(0xFE)  # data line 0 stuck at 0
    return Built(m.capture(), m.capture(raw={"Squeeze1": raw.tobytes()}))


def params_cut_short(m):
    name = "op0_exe1_parameter_caching"
    blob = m.facts.params[name]
    return Built(m.capture(), m.capture(params={name: blob[:len(blob) // 2]}, frame=_changed_frame(16)))


def _image_pair(m, make_b, seed=17, model=False):
    rgb = np.random.default_rng(seed).integers(0, 256, (1, 300, 300, 3), dtype=np.uint8)
    meta = u8((1, 300, 300, 3), scale=1 / 128, zero_point=128)

    def run(image, frame):
        return [("input", "normalized_input_image_tensor", image, meta)] + \
            [b for b in m.capture(frame=frame) if b[0] != "input"]

    return Built(run(rgb, None), run(make_b(rgb), _changed_frame(seed)), model=model)


def image_row_stride(m):
    def pitched(x):
        rows = x.reshape(300, 900)
        flat = np.zeros(300 * 912, np.uint8)  # rows written at a 16-byte aligned pitch, read packed
        for r in range(300):
            flat[r * 912:r * 912 + 900] = rows[r]
        return flat[:x.size].reshape(x.shape)

    return _image_pair(m, pitched)


def image_int8(m):
    return _image_pair(m, lambda x: x ^ np.uint8(0x80))


def half_params_prefill(m):
    name = "op0_exe1_parameter_caching"
    blob = bytearray(m.facts.params[name])
    blob[len(blob) // 2:] = PREFILL * (len(blob) - len(blob) // 2)  # the upload stopped; the rest is the prefill
    return Built(m.capture(), m.capture(params={name: bytes(blob)}, frame=_changed_frame(18)))


def anchors_in_xywh_order(m):
    return Built(m.capture(), m.capture(anchors=np.ascontiguousarray(m.deps.anchors[:, [1, 0, 3, 2]])))


def caching_never_run(m):
    return Built(m.capture(), m.capture(instructions={"1_0": None}, frame=_changed_frame(10)))


def stale_cache_lines(m):
    raw = m.raw()  # the driver prefilled the buffer through the cache; the lines never invalidated read the prefill
    old = PREFILL * len(raw)
    for line in (37, 410, 1111, 2048, 2500):
        raw[line * 64:(line + 1) * 64] = old[line * 64:(line + 1) * 64]
    return Built(m.capture(), m.capture(raw={"convert_scores": bytes(raw)}))


def page_hole(m):
    raw = m.raw()
    raw[3 * 4096:4 * 4096] = PREFILL * 4096  # one IOMMU page never mapped: left as the driver's prefill
    return Built(m.capture(), m.capture(raw={"convert_scores": bytes(raw)}))


def bit_stuck(m):
    raw = np.frombuffer(bytes(m.raw()), np.uint8) | np.uint8(0x20)  # data line 5 stuck at 1
    return Built(m.capture(), m.capture(raw={"convert_scores": raw.tobytes()}))


def wrong_order(m):
    boxes_raw, scores_raw = bytes(m.raw(name="Squeeze1")), bytes(m.raw(name="convert_scores"))
    relayouted = {"Squeeze1": np.frombuffer(scores_raw, np.uint8)[:1917 * 4].reshape(1917, 4).copy(),
                  "convert_scores": np.resize(np.frombuffer(boxes_raw, np.uint8), (1917, 91))}
    return Built(m.capture(), m.capture(raw={"Squeeze1": scores_raw, "convert_scores": boxes_raw},
                                         tensors=relayouted))


def foreign_params(m, other):
    name = "op0_exe1_parameter_caching"
    return Built(m.capture(), m.capture(params={name: other.facts.params[name]}, frame=_changed_frame(4)))


def shifted_output(m):
    raw = m.raw(name="Squeeze1")  # the DMA wrote 16 bytes past the buffer's start; its head is the prefill
    return Built(m.capture(), m.capture(raw={"Squeeze1": PREFILL * 16 + bytes(raw[:-16])}))


def ring_rotation(m):
    raw = np.frombuffer(bytes(m.raw(name="Squeeze1")), np.uint8)  # a ring buffer read from the wrong slot
    return Built(m.capture(), m.capture(raw={"Squeeze1": np.roll(raw, 2048).tobytes()}))


def never_written(m):
    raw = PREFILL * m.facts.raw_size["convert_scores"]  # the driver's prefill: nothing written
    return Built(m.capture(), m.capture(raw={"convert_scores": raw}))


def signed_fix_in_relayout(m):
    _, scores = ssd_frame()
    return Built(m.capture(), m.capture(tensors={"convert_scores": scores ^ np.uint8(0x80)}))


def _iou_pair(m, classes=(5, 5), low=0.52, high=0.58):
    """A frame in which two anchors of class 5, their boxes overlapping at IoU 0.52 ... 0.58, decide the NMS
    threshold (tail_pair's construction, test_compare_causes.py)."""
    from forensics.decode.ssd import iou_matrix

    a = m.deps.anchors
    corners = np.stack([a[:, 0] - a[:, 2] / 2, a[:, 1] - a[:, 3] / 2, a[:, 0] + a[:, 2] / 2,
                        a[:, 1] + a[:, 3] / 2], 1)
    base = 1500
    iou = iou_matrix(corners[base:], corners[base:])
    i, j = (int(k) + base for k in np.argwhere(np.triu((iou > low) & (iou < high), 1))[0])
    boxes, scores = ssd_frame()
    boxes, scores = boxes.copy(), scores.copy()
    boxes[[i, j]] = m.facts.quant["Squeeze1"][1]
    scores[i, classes[0]], scores[j, classes[1]] = 230, 220
    return boxes, scores


def nms_iou_changed(m):
    frame = _iou_pair(m)
    assert len(m.rows(*frame, nms_iou_threshold=np.float32(0.5))) != len(m.rows(*frame))
    return Built(m.capture(frame=frame), m.capture(frame=frame, options={"nms_iou_threshold": np.float32(0.5)}))


def score_threshold_changed(m):
    boxes, scores = ssd_frame()
    scores = scores.copy()
    scores[700, 33] = 60  # 0.234: over the model's threshold, under the 0.3 of the driver's host code
    frame = (boxes, scores)
    assert len(m.rows(*frame, nms_score_threshold=np.float32(0.3))) < len(m.rows(*frame))
    return Built(m.capture(frame=frame), m.capture(frame=frame, options={"nms_score_threshold": np.float32(0.3)}))


def other_anchors(m):
    anchors = m.deps.anchors.copy()
    anchors[:, 2:] *= np.float32(1.25)  # another model's anchor generator: the same centres, larger boxes
    return Built(m.capture(), m.capture(anchors=anchors))


def dequantize_swapped(m):
    q = m.facts.quant
    return Built(m.capture(), m.capture(quant={"Squeeze1": q["convert_scores"], "convert_scores": q["Squeeze1"]}))


def dequantize_zero_point(m):
    s, z = m.facts.quant["Squeeze1"]
    return Built(m.capture(), m.capture(quant={"Squeeze1": (s, z + 1)}))


def regular_nms(m):
    frame = _iou_pair(m, classes=(5, 7), low=0.7, high=0.9)  # class-blind NMS keeps one, per-class both
    assert len(m.rows(*frame, use_regular_nms=True)) != len(m.rows(*frame))
    return Built(m.capture(frame=frame), m.capture(frame=frame, options={"use_regular_nms": True}))


def input_read_early(m):
    """The driver's dump of the input is A's; its [FP] line, logged as the DMA read it, holds half of it."""
    name = m.input_name(0)
    x = bytearray(m.reference_input(0).tobytes())
    x[len(x) // 2:] = bytes(len(x) - len(x) // 2)
    return Built(m.capture(), m.capture(), drv_logs=[("dbgview.log", fp_log_line("INPUT0", bytes(x)),
                                                      {"INPUT0": f"input:{name}"})])


def input_chk_of_one_of_three(m):
    """The driver's [INPUT-CHK] of the segment's second input (no tag map: its `over N bytes` says which),
    logged while the DMA still read it: its last pages zero."""
    x = bytearray(m.reference_input(1).tobytes())
    x[8192:] = bytes(len(x) - 8192)
    return Built(m.capture(), m.capture(), drv_logs=[("dbgview.log", input_chk_log(bytes(x)), None)])


def input_chk_of_an_image(m):
    """A capture of the whole SSD (one image input, as the driver's [INPUT-CHK] checks it), read before done."""
    image = np.random.default_rng(4).integers(0, 256, (1, 300, 300, 3), dtype=np.uint8)
    rest = [b for b in m.capture() if b[0] != "input"]
    bufs = [("input", "normalized_input_image_tensor", image, u8((1, 300, 300, 3), scale=1 / 128, zero_point=128))]
    read = bytearray(image.tobytes())
    read[len(read) // 2:] = bytes(len(read) - len(read) // 2)
    return Built(bufs + rest, bufs + rest, drv_logs=[("dbgview.log", input_chk_log(bytes(read)), None)],
                 model=False)


def params_half_sent_logged(m):
    name = "op0_exe1_parameter_caching"
    blob = bytearray(m.facts.params[name])
    blob[len(blob) // 2:] = bytes(len(blob) - len(blob) // 2)
    log = fp_log_line("PARAMS", bytes(blob))
    return Built(m.capture(), m.capture(frame=_changed_frame(12)),
                 drv_logs=[("dbgview.log", log, {"PARAMS": f"params:{name}"})])


def _image_run(m, image: bytes, name: str, frame_seed: int, pixels_seed: int):
    bufs = m.capture(frame=_changed_frame(frame_seed), input_seed=pixels_seed)
    return [("image", name, image, {"format": os.path.splitext(name)[1][1:]})] + bufs


def different_images(m):
    from tests.conftest import SHARED_CORAL

    face, grace = (SHARED_CORAL / "face.jpg").read_bytes(), (SHARED_CORAL / "grace_hopper.bmp").read_bytes()
    return Built(_image_run(m, face, "face.jpg", 0, 0), _image_run(m, grace, "grace_hopper.bmp", 13, 21))


def letterbox_centred(m, model=False):
    rng = np.random.default_rng(8)
    pixels = rng.integers(1, 256, (202, 300, 3), dtype=np.uint8)
    top_left = np.zeros((1, 300, 300, 3), np.uint8)
    top_left[0, :202] = pixels  # pycoral pads right and bottom
    centred = np.zeros_like(top_left)
    centred[0, 49:251] = pixels
    meta = u8((1, 300, 300, 3), scale=1 / 128, zero_point=128)

    def run(image, frame):
        rest = [b for b in m.capture(frame=frame) if b[0] not in ("input", "params", "instructions")]
        return [("input", "normalized_input_image_tensor", image, meta)] + rest

    return Built(run(top_left, None), run(centred, _changed_frame(14)), model=model)


def letterbox_with_the_model(m):
    return letterbox_centred(m, model=True)


def page_hole_zero(m):
    raw = m.raw()  # one page never written in a buffer the driver zeroed: the scores are mostly 0 there too
    raw[5 * 4096:6 * 4096] = bytes(4096)
    return Built(m.capture(), m.capture(raw={"convert_scores": bytes(raw)}))


def stale_lines_other_frame(m):
    raw = m.raw(name="Squeeze1")  # lines never invalidated keep the previous frame's box deltas
    old = m.raw(_changed_frame(3), name="Squeeze1")
    for line in (5, 19, 42, 77, 101):
        raw[line * 64:(line + 1) * 64] = old[line * 64:(line + 1) * 64]
    return Built(m.capture(), m.capture(raw={"Squeeze1": bytes(raw)}))


def dma_stopped_zeroed_scores(m):
    raw = m.raw()  # the scores (99% zeros) into a buffer the driver zeroed; the DMA stopped at byte 60,000
    raw[60_000:] = bytes(len(raw) - 60_000)
    return Built(m.capture(), m.capture(raw={"convert_scores": bytes(raw)}))


def shifted_scores(m, head=PREFILL):
    raw = m.raw()  # the scores repeat every record: the DMA wrote 24 bytes late, its head the prefill
    return Built(m.capture(), m.capture(raw={"convert_scores": head * 24 + bytes(raw[:-24])}))


def shifted_scores_zeroed(m):
    return shifted_scores(m, head=b"\x00")


def rotated_scores(m):
    raw = np.frombuffer(bytes(m.raw()), np.uint8)  # the periodic scores read from a ring's wrong slot
    return Built(m.capture(), m.capture(raw={"convert_scores": np.roll(raw, 4096 + 24).tobytes()}))


# --- the harmless controls -----------------------------------------------------------------------------------

def pad_lanes_differ(m):
    return Built(m.capture(), m.capture(raw_pad=0xCC, raw_tail=0x5A))


def rows_past_num_detections(m):
    return Built(m.capture(), m.capture(garbage=np.random.default_rng(11)))


def another_runtimes_rounding(m):
    return Built(m.capture(), m.capture(dequantize=dequantize_blocks))


def identical(m):
    return Built(m.capture(), m.capture())


def fewer_stages(m):
    return Built(m.capture(), m.capture(drop=("params", "instructions", "dequantized")))


def only_the_ends(m):
    return Built(m.capture(), m.capture(drop=("params", "instructions", "raw", "tensor", "dequantized")))


def rounding_without_the_model(m):
    return Built(m.capture(), m.capture(dequantize=dequantize_blocks), model=False)


def pad_lanes_and_rows_past(m):
    return Built(m.capture(), m.capture(raw_pad=0x00, raw_tail=0xCC, garbage=np.random.default_rng(3)))


def renamed_and_reordered(m):
    return Built(m.capture(), m.capture(), shuffle=True)


@dataclass(frozen=True)
class Scenario:
    name: str
    build: object
    model: str = "v2"
    code: int = 1
    stage: str | None = None
    tensor: str | None = None
    kinds: tuple = ()     # the first divergent row's finding kinds: one of these
    words: str = ""       # what the message says of it


def _in(i):
    return lambda m: m.input_name(i)


S = Scenario
SCENARIOS = [
    S("bgr_input", bgr_input, stage="input", kinds=("lane_swap",)),
    S("bgr_input_v1", bgr_input, model="v1", stage="input", kinds=("lane_swap",)),
    S("int8_input", int8_input, stage="input", kinds=("signedness",)),
    S("row_stride", row_stride, stage="input", kinds=("stride", "pitch")),
    S("dma_stopped_early", dma_stopped_early, stage="raw", tensor="convert_scores", kinds=("truncation", "fill")),
    S("relayout_skipped", relayout_skipped, stage="tensor", tensor="convert_scores", kinds=("relayout",)),
    S("half_uploaded_params", half_uploaded_params, stage="params", kinds=("truncation", "fill")),
    S("aliased_outputs", aliased_outputs, stage="raw", tensor="Squeeze1", kinds=("aliased",)),
    S("aliased_boxes_written_last", aliased_boxes_written_last, stage="raw", tensor="convert_scores",
      kinds=("aliased",)),
    S("dma_stopped_zeroed_buffer", dma_stopped_zeroed, stage="raw", tensor="Squeeze1",
      kinds=("truncation", "fill")),
    S("bgr_image_input", bgr_image_input, stage="input", kinds=("lane_swap",)),
    S("bit_stuck_at_zero", bit_cleared, stage="raw", tensor="Squeeze1", kinds=("bits",)),
    S("params_cut_short", params_cut_short, stage="params", kinds=("truncation", "fill", "oversize")),
    S("image_row_stride", image_row_stride, stage="input", kinds=("stride", "pitch")),
    S("image_int8", image_int8, stage="input", kinds=("signedness",)),
    S("half_uploaded_params_prefill", half_params_prefill, stage="params", kinds=("truncation", "fill")),
    S("anchors_in_xywh_order", anchors_in_xywh_order, stage="detections", kinds=("anchors",), words="anchors"),
    S("caching_never_run", caching_never_run, stage="instructions", tensor="1_0", kinds=("not_submitted",)),
    S("stale_cache_lines", stale_cache_lines, stage="raw", tensor="convert_scores", kinds=("stale", "cacheline")),
    S("stale_cache_lines_v1", stale_cache_lines, model="v1", stage="raw", tensor="convert_scores",
      kinds=("stale", "cacheline")),
    S("page_hole", page_hole, stage="raw", tensor="convert_scores", kinds=("page", "fill")),
    S("bit_stuck", bit_stuck, stage="raw", tensor="convert_scores", kinds=("bits",)),
    S("outputs_bound_in_wrong_order", wrong_order, stage="raw", kinds=("buffer_order",),
      words="bound in the wrong order"),
    S("outputs_bound_in_wrong_order_v1", wrong_order, model="v1", stage="raw", kinds=("buffer_order",)),
    S("foreign_params", lambda m: None, stage="params", kinds=("foreign",), words="FOREIGN"),
    S("foreign_params_recorded", lambda m: None, stage="params", kinds=("foreign",), words="FOREIGN"),
    S("foreign_params_v1", lambda m: None, model="v1", stage="params", kinds=("foreign",), words="FOREIGN"),
    S("output_shifted", shifted_output, stage="raw", tensor="Squeeze1", kinds=("shift",)),
    S("ring_rotation", ring_rotation, stage="raw", tensor="Squeeze1", kinds=("rotation",)),
    S("output_never_written", never_written, stage="raw", tensor="convert_scores", kinds=("fill",)),
    S("signed_fix_in_relayout", signed_fix_in_relayout, stage="tensor", tensor="convert_scores",
      kinds=("signedness",)),
    S("letterbox_centred", letterbox_centred, stage="input", kinds=("placement",), words="49 rows lower"),
    S("letterbox_centred_model_recorded", letterbox_with_the_model, stage="input", kinds=("placement",),
      words="49 rows lower"),
    S("nms_iou_threshold", nms_iou_changed, stage="detections", kinds=("postprocess_option",),
      words="nms_iou_threshold"),
    S("nms_score_threshold", score_threshold_changed, stage="detections", kinds=("postprocess_option",),
      words="nms_score_threshold"),
    S("regular_nms", regular_nms, stage="detections", kinds=("postprocess_option",), words="regular NMS"),
    S("anchors_of_another_model", other_anchors, stage="detections", kinds=("anchors",), words="anchors"),
    S("dequantize_parameters_swapped", dequantize_swapped, stage="dequantized", kinds=("dequantize_swapped",)),
    S("dequantize_zero_point_off", dequantize_zero_point, stage="dequantized", tensor="Squeeze2",
      kinds=("dequantize_parameter",), words="zero"),
    S("input_read_before_complete", input_read_early, stage="input", kinds=("logged_fingerprint",),
      words="[FP]"),
    S("input_chk_one_of_three_inputs", input_chk_of_one_of_three, stage="input", tensor=_in(1),
      kinds=("logged_fingerprint",), words="[INPUT-CHK]"),
    S("input_chk_of_an_image", input_chk_of_an_image, stage="input", kinds=("logged_fingerprint",),
      words="[INPUT-CHK]"),
    S("params_half_sent_logged", params_half_sent_logged, stage="params", kinds=("logged_fingerprint",)),
    S("different_images", different_images, stage="input", kinds=("image",), words="different images"),
    S("page_hole_zero_in_mostly_zero", page_hole_zero, stage="raw", tensor="convert_scores", kinds=("page", "fill")),
    S("stale_lines_of_another_frame", stale_lines_other_frame, stage="raw", tensor="Squeeze1", kinds=("cacheline",)),
    S("dma_stopped_zeroed_scores", dma_stopped_zeroed_scores, stage="raw", tensor="convert_scores",
      kinds=("truncation", "fill")),
    S("scores_shifted", shifted_scores, stage="raw", tensor="convert_scores", kinds=("shift",)),
    S("scores_shifted_zero_head", shifted_scores_zeroed, stage="raw", tensor="convert_scores", kinds=("shift",)),
    S("scores_ring_rotation", rotated_scores, stage="raw", tensor="convert_scores", kinds=("rotation",)),
    # controls
    S("control_pad_lanes", pad_lanes_differ, code=0),
    S("control_rows_past_num_detections", rows_past_num_detections, code=0),
    S("control_dequantize_rounding", another_runtimes_rounding, code=0),
    S("control_identical", identical, code=0),
    S("control_fewer_stages", fewer_stages, code=0),
    S("control_renamed_reordered", renamed_and_reordered, code=0),
    S("control_only_input_and_detections", only_the_ends, code=0),
    S("control_dequantize_rounding_no_model", rounding_without_the_model, code=0),
    S("control_tile_padding_and_rows_past_v1", pad_lanes_and_rows_past, model="v1", code=0),
]


def _write(tmp_path, m, built: Built):
    record = m.facts.record if built.model else None
    a = write_driver_run(tmp_path / "ref", "libedgetpu", built.ref, model=record)
    drv = built.drv
    if built.shuffle:
        drv = list(reversed(drv))
    b = write_driver_run(tmp_path / "drv", "ours", drv, model=built.drv_model or record)
    if built.shuffle:  # other file names: every file moved, the manifest pointing at the new names
        manifest = json.loads((b / "manifest.json").read_text(encoding="utf-8"))
        for i, entry in enumerate(manifest["buffers"]):
            new = f"dump_{i:03d}.raw"
            os.replace(b / entry["file"], b / new)
            entry["file"] = new
        (b / "manifest.json").write_text(json.dumps(manifest), encoding="utf-8")
    for run, logs in ((a, built.ref_logs), (b, built.drv_logs)):
        for name, text, tags in logs:
            add_log(run, name, text, tags)
    return a, b


def _label(row) -> str:
    return row["stage"] if row["tensor"] == row["stage"] else f"{row['stage']}:{row['tensor']}"


def _verdict_line(text: str) -> str:
    from forensics.core.verdict import Verdict

    words = {str(v) for v in Verdict}
    lines = [ln for ln in text.splitlines() if ln.split(" | ", 1)[0] in words]
    assert lines, text
    return lines[-1].split(" | ", 1)[0]


@pytest.mark.parametrize("scenario", SCENARIOS, ids=[s.name for s in SCENARIOS])
def test_scenario(scenario, models, tmp_path, cli):
    m = models[scenario.model]
    if scenario.name.startswith("foreign_params"):
        other = models["v1" if scenario.model == "v2" else "v2"]
        built = foreign_params(m, other)
        if scenario.name.endswith("_recorded"):  # B's manifest says which model it ran: the other one
            built.drv_model = other.facts.record
    else:
        built = scenario.build(m)
    a, b = _write(tmp_path, m, built)
    result = cli("compare", a, b, "--json")
    assert result.code == scenario.code, result.out[-3000:] + result.err
    doc = json.loads(result.out)
    text = cli("compare", a, b, width=200)
    assert text.code == result.code and _verdict_line(text.out) == doc["verdict"]
    rows = doc["stages"]
    for row in rows:  # never a DMA name on what the CPU tail computed
        if row["stage"] in CPU_STAGES:
            assert not {f["kind"] for f in row.get("findings", ())} & DMA_KINDS, (row["stage"], row["findings"])
    if scenario.code == 0:
        assert doc["first_divergent_stage"] is None and doc["verdict"] in ("MATCH", "WITHIN TOLERANCE")
        return
    assert doc["first_divergent_stage"] == scenario.stage, doc["message"]
    if scenario.tensor is not None:
        tensor = scenario.tensor(m) if callable(scenario.tensor) else scenario.tensor
        assert doc["first_divergent_tensor"] == tensor, doc["message"]
    first = next(r for r in rows if r["status"] in ("DIFFER", "MISSING") and not r["follows"])
    assert first["stage"] == scenario.stage
    kinds = [f["kind"] for f in first.get("findings", ())]
    assert set(kinds) & set(scenario.kinds), (kinds, first.get("hint"), doc["message"])
    if scenario.words:
        assert scenario.words in doc["message"], doc["message"]
    # every later differing stage says it follows from its cause, with no cause of its own
    causes = {_label(r) for r in rows if r["status"] in ("DIFFER", "MISSING") and not r["follows"]}
    later = [r for r in rows if r["status"] in ("DIFFER", "MISSING") and _label(r) not in causes]
    for row in later:
        assert row["follows"] and not row.get("hint"), (_label(row), row["message"])
        assert not {f["kind"] for f in row.get("findings", ())} & DMA_KINDS, (_label(row), row["findings"])
        assert "expected: follows from" in row["message"]
    # one cause: the stages that differ of their own are the first's stage (a pair of crossed buffers)
    assert {c.split(":")[0] for c in causes} == {scenario.stage}, causes
