"""`forensics diagnose`: exit codes 0 / 1 / 2, --json findings, golden text, and one-line errors for bad input."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.conftest import assert_one_line_error

SCORES = "dumps/libedgetpu/convert_scores.bin"
BROKEN = "dumps/broken/convert_scores.bin"

GOLDEN_BROKEN = """\
EXPLAINED | fill, truncation explain the differing bytes
1,068 bytes differ in 534 of 2,034 4-byte records; 1,068 more in pad lanes 2,3 (ignored, as diff)
A dumps/libedgetpu/convert_scores.bin  8,136 bytes  CRC32 0xb509329c
B dumps/broken/convert_scores.bin  8,136 bytes  CRC32 0xff7785a9
finding       explains   evidence                              what to do
────────────────────────────────────────────────────────────────────────────────────────────────────
fill              100%   B holds 0xCC in 1 run of 2,136        those bytes of
                         bytes (first at 0x1770-0x1fc8,        dumps/broken/convert_scores.bin were
                         records 1500-2033) where A has        never written: check the DMA length /
                         data: never written                   completion before reading the buffer
truncation        100%   B's last 2,136 bytes (from 0x1770,    the copy stopped early: check the
                         record 1500 of 2,034) are 0xCC        transfer size of
                         where A has data: the device          dumps/broken/convert_scores.bin
                         stopped writing at record 1500        against the output's size_bytes
                                                               (8,136)
head_window          -   the first 256 bytes are identical     judge every record, not the first
                         in A and B and all `ff 00 80 80`,     bytes (the command below)
                         yet 534 of 1,970 later records
                         differ (first at 0x1770, record
                         1500): the head alone would call
                         these buffers equal
  forensics diff dumps/libedgetpu/convert_scores.bin dumps/broken/convert_scores.bin
"""


def test_identical_exits_0(cli):
    result = cli("diagnose", SCORES, "dumps/ours/convert_scores.bin")
    assert result.code == 0 and result.err == ""
    assert result.out.startswith("IDENTICAL | A and B are byte-identical")


def test_broken_dma_exits_1_with_golden_text(cli):
    result = cli("diagnose", SCORES, BROKEN, width=100)
    assert result.code == 1 and result.err == ""
    assert [line.rstrip() for line in result.out.splitlines()] == GOLDEN_BROKEN.splitlines()
    assert all(len(line) <= 100 for line in result.out.splitlines())


def test_json_findings(cli):
    result = cli("diagnose", SCORES, BROKEN, "--json")
    doc = json.loads(result.out)
    assert result.code == 1
    assert [f["kind"] for f in doc["findings"]] == ["fill", "truncation", "head_window"]
    assert all(f["evidence"] for f in doc["findings"])
    assert doc["findings"][0]["ranges"] == [{"sentinel": "0xCC", "start": 6000, "end": 8136}]
    clean = json.loads(cli("diagnose", SCORES, SCORES, "--json").out)
    assert clean["findings"] == [] and clean["identical"] is True


def test_previous_and_sentinel_flags(cli, tmp_path):
    previous = tmp_path / "previous.bin"
    previous.write_bytes(np.random.default_rng(1).integers(0, 256, 8136, dtype=np.uint8).tobytes())
    stale = tmp_path / "stale.bin"
    stale.write_bytes(previous.read_bytes())
    doc = json.loads(cli("diagnose", SCORES, stale, "--previous", previous, "--json").out)
    assert "stale" in [f["kind"] for f in doc["findings"]]
    data = bytearray(open(SCORES, "rb").read())
    data[400:432] = b"\x12\x34" * 16
    odd = tmp_path / "odd.bin"
    odd.write_bytes(bytes(data))
    unexplained = cli("diagnose", SCORES, odd, "--json")
    assert unexplained.code == 1 and json.loads(unexplained.out)["verdict"] == "UNEXPLAINED"
    found = cli("diagnose", SCORES, odd, "--sentinel", "1234", "--json")
    assert found.code == 1 and json.loads(found.out)["findings"][0]["sentinels"] == ["0x1234"]


def test_layout_flags_reach_the_heuristics(cli, tmp_path):
    records = np.frombuffer(open(SCORES, "rb").read(), np.uint8).reshape(-1, 4)
    swapped = tmp_path / "swapped.bin"
    swapped.write_bytes(records[:, [1, 0, 2, 3]].tobytes())
    doc = json.loads(cli("diagnose", SCORES, swapped, "--record", "4", "--pad", "2,3", "--json").out)
    lane = [f for f in doc["findings"] if f["kind"] == "lane_swap"]
    assert lane and lane[0]["permutation"] == [1, 0]  # a 16-bit swap, named at its word size


def test_model_tensor_stride(cli, shared_data, tmp_path):
    from forensics.model.tflite.model import open_model
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.tensors import tensor_record_layout

    model = shared_data / "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
    tensor = np.random.default_rng(4).integers(0, 256, 174447, dtype=np.uint8)
    with open_model(model) as opened:
        view = tensor_record_layout(opened, "convert_scores", 176368)
    (tmp_path / "raw.bin").write_bytes(inverse_relayout(tensor, layer_map(view.layer)).tobytes())
    (tmp_path / "tensor.bin").write_bytes(tensor.tobytes())
    for a, b in (("tensor.bin", "raw.bin"), ("raw.bin", "tensor.bin")):  # the view fits either side's size
        result = cli("diagnose", tmp_path / a, tmp_path / b, "--model", model, "--tensor", "convert_scores", "--json")
        doc = json.loads(result.out)
        assert result.code == 1 and [f["kind"] for f in doc["findings"]] == ["stride"]
        assert doc["findings"][0]["records_equal"] == 1917
    wrong = tmp_path / "wrong.bin"
    wrong.write_bytes(b"\x00" * 1000)
    assert_one_line_error(cli("diagnose", wrong, wrong, "--model", model, "--tensor", "convert_scores"),
                          "176368", "174447")


@pytest.mark.parametrize("argv,fragment", [
    (["dumps/nope.bin", SCORES], "no such file"),
    ([SCORES, "dumps"], "is a directory"),
    ([SCORES, SCORES, "--model", "x.tflite"], "--model needs --tensor"),
    ([SCORES, SCORES, "--tensor", "convert_scores"], "--tensor needs --model"),
    ([SCORES, SCORES, "--sentinel", "xyz"], "expected hex bytes"),
    ([SCORES, SCORES, "--min-run", "0"], "positive"),
    ([SCORES, SCORES, "--previous", "dumps/nope.bin"], "no such file"),
    ([SCORES, SCORES, "--offset", "9000"], "offset 9000 is past the end"),
    ([SCORES], "required"),
])
def test_bad_input_is_one_line_exit_2(cli, argv, fragment):
    assert_one_line_error(cli("diagnose", *argv), fragment)


def test_empty_and_corrupt_sidecar(cli, tmp_path):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert_one_line_error(cli("diagnose", SCORES, empty), "empty")
    dump = tmp_path / "x.bin"
    dump.write_bytes(b"\x01" * 64)
    (tmp_path / "x.json").write_text("{not json")
    assert_one_line_error(cli("diagnose", dump, dump), "malformed sidecar JSON")


def test_corrupt_model_is_one_line(cli, tmp_path):
    model = tmp_path / "bad.tflite"
    model.write_bytes(b"\x10\x00\x00\x00TFL3" + b"\xff" * 40)
    assert_one_line_error(cli("diagnose", SCORES, SCORES, "--model", model, "--tensor", "convert_scores"))


# --- verdicts, tolerance, simulate -----------------------------------------------------------------------------

def test_verdicts_and_exit_codes(cli, tmp_path):
    data = np.frombuffer(open(SCORES, "rb").read(), np.uint8).copy()
    nudged = data.copy()
    nudged[1::4] = np.minimum(nudged[1::4].astype(np.int16) + 1, 255).astype(np.uint8)  # 1 LSB on every score
    (tmp_path / "nudged.bin").write_bytes(nudged.tobytes())
    plain = cli("diagnose", SCORES, tmp_path / "nudged.bin", "--json")
    doc = json.loads(plain.out)
    assert plain.code == 1 and doc["verdict"] == "UNEXPLAINED" and doc["exit_code"] == 1
    assert doc["findings"] == [] and doc["characterization"]["max_delta"] == 1
    for flags in (["--tolerance", "1"], ["--atol", "1lsb"]):
        ok = cli("diagnose", SCORES, tmp_path / "nudged.bin", *flags)
        assert ok.code == 0 and ok.out.startswith("WITHIN TOLERANCE | ")
    assert cli("diagnose", SCORES, tmp_path / "nudged.bin", "--tolerance", "0").code == 1
    half = data.copy()
    half[4000:4400] = 0xCC
    half[100:140] = np.random.default_rng(2).integers(0, 256, 40)  # and something no pattern explains
    (tmp_path / "half.bin").write_bytes(half.tobytes())
    partly = cli("diagnose", SCORES, tmp_path / "half.bin", "--json")
    doc = json.loads(partly.out)
    assert partly.code == 1 and doc["verdict"] == "PARTLY EXPLAINED"
    assert 0.8 < doc["explained_fraction"] < 1 and doc["findings"][0]["kind"] == "fill"
    assert doc["residual"]["ranges"][0][0] >= 100 and doc["residual"]["ranges"][-1][1] <= 140


def test_atol_must_be_whole_lsb(cli):
    assert_one_line_error(cli("diagnose", SCORES, BROKEN, "--atol", "0.5"), "--atol")


def test_simulate_writes_b_and_diagnose_names_it(cli, tmp_path):
    out = tmp_path / "shifted.bin"
    result = cli("simulate", SCORES, "--bug", "shift:-8", "-o", out)
    assert result.code == 0 and result.out.strip() == f"wrote {out} (8,136 bytes)"
    data = open(SCORES, "rb").read()
    assert out.read_bytes()[:-8] == data[8:]  # B[j] = A[j + 8]: A's data 8 bytes earlier
    doc = json.loads(cli("diagnose", SCORES, out, "--json").out)
    assert doc["findings"][0]["kind"] == "shift" and doc["findings"][0]["shift_bytes"] == -8
    listed = cli("simulate", "--bug", "list", "--json")
    kinds = [b["kind"] for b in json.loads(listed.out)["bugs"]]
    assert listed.code == 0 and {"shift", "stride", "pitch", "oversize", "lane_swap"} <= set(kinds)
    assert "shift:K[@START-END]" in cli("simulate", "--bug", "list", width=160).out


@pytest.mark.parametrize("argv,fragment", [
    ([SCORES, "--bug", "bogus", "-o", "x.bin"], "unknown bug kind"),
    ([SCORES, "--bug", "stride:3", "-o", "x.bin"], "missing parameters"),
    ([SCORES, "--bug", "shift:x", "-o", "x.bin"], "must be an integer"),
    ([SCORES, "--bug", "truncation:99999", "-o", "x.bin"], "KEEP"),
    ([SCORES, "--bug", "stale", "-o", "x.bin"], "previous"),
    ([SCORES, "--bug", "shift:4"], "-o"),
    (["dumps/nope.bin", "--bug", "shift:4", "-o", "x.bin"], "no such file"),
    ([SCORES, "--bug", "shift:4", "-o", "dumps/nodir/x.bin"], "does not exist"),
])
def test_simulate_bad_input_is_one_line_exit_2(cli, argv, fragment):
    assert_one_line_error(cli("simulate", *argv), fragment)
