"""Issue 35's link cases: every field of a buffer checked on its own, one --expect per buffer, ASCII addresses,
layer names as forensics prints them, FOREIGN said as FOREIGN, the one judgement, and the parameter check the
compare command calls. Dumps are made by the bit loop (test_link_bits.reference_link) and plain struct writes."""

from __future__ import annotations

import json
import random
import re
import shlex
import struct

import numpy as np
import pytest

from forensics import reports
from forensics.core.errors import InputError
from forensics.link import bitstream as lk
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from tests.conftest import assert_one_line_error
from tests.link import dwn1
from tests.link.addresses import Layout, layer_addresses
from tests.link.test_link_bits import REAL, reference_link

SSD2 = "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"
X, Y = 0x8000_0000_0010_0000, 0x8000_0000_0020_0000


def _twice_model(path):
    """An executable whose input `x` is linked in four fields (two per half), over zero instruction bits at bit 6
    as in the real models; output `y` in two."""
    fields = [dwn1.Fld(dwn1.INPUT, dwn1.UPPER, 70, "x"), dwn1.Fld(dwn1.INPUT, dwn1.LOWER, 198, "x"),
              dwn1.Fld(dwn1.INPUT, dwn1.UPPER, 326, "x"), dwn1.Fld(dwn1.INPUT, dwn1.LOWER, 454, "x"),
              dwn1.Fld(dwn1.OUTPUT, dwn1.UPPER, 582, "y"), dwn1.Fld(dwn1.OUTPUT, dwn1.LOWER, 710, "y")]
    data = bytearray(np.random.default_rng(3).integers(0, 256, 128, dtype=np.uint8).tobytes())
    for f in fields:
        data[f.offset_bit // 8:f.offset_bit // 8 + 5] = bytes(5)
    exe = dwn1.Exe(2, [(bytes(data), fields)], inputs=[("x", 256)], outputs=[("y", 256)])
    path.write_bytes(dwn1.model([exe]))
    packages = read_packages(open_model(path))
    return packages, packages[0].executables[0]


def _rows(exe):
    return [f for f in exe.field_offsets if f.bitstream == 0]


def test_a_buffer_linked_in_only_some_of_its_fields(tmp_path):
    packages, exe = _twice_model(tmp_path / "twice.tflite")
    rows = _rows(exe)
    linked = reference_link(bytes(exe.bitstreams[0]), rows, {"x": [X]}, {"y": [Y]}, None, None)
    assert lk.check(packages, linked).verdict == lk.LINKED
    # the second LOWER_32BIT field of x left as compiled: x's address is in none of its fields alone
    partly = reference_link(bytes(exe.bitstreams[0]), [f for f in rows if f.offset_bit != 454], {"x": [X]},
                            {"y": [Y]}, None, None)
    result = lk.check(packages, partly)
    (f,) = [f for f in result.findings if f["kind"] == "inconsistent"]
    assert (f["name"], f["position"], f["reason"]) == ("x", "LOWER_32BIT", "partly_linked")
    assert [(x["offset_bit"], x["as_compiled"]) for x in f["fields"]] == [(198, False), (454, True)]
    assert result.verdict == lk.MISLINKED and result.addresses["input"]["x"] == [None]


def test_a_buffer_linked_to_different_addresses_is_never_their_or(tmp_path):
    packages, exe = _twice_model(tmp_path / "twice.tflite")
    rows = _rows(exe)
    other = X + 0x40_3000  # X | other is neither
    first = reference_link(bytes(exe.bitstreams[0]), [f for f in rows if f.offset_bit != 454], {"x": [X]},
                           {"y": [Y]}, None, None)
    both = reference_link(first, [f for f in rows if f.offset_bit == 454], {"x": [other]}, {}, None, None)
    result = lk.check(packages, both)
    (f,) = [f for f in result.findings if f["kind"] == "inconsistent"]
    assert f["reason"] == "different_addresses"
    assert [int(x["value"], 16) for x in f["fields"]] == [X & 0xFFFFFFFF, other & 0xFFFFFFFF]
    doc = json.dumps(reports.link(tmp_path / "twice.tflite", check=_write(tmp_path, both)).to_dict())
    assert hex(X | other) not in doc and hex((X | other) & 0xFFFFFFFF) not in doc


def test_every_field_written_as_4_bytes_is_one_buffer(tmp_path):
    """A memcpy of one address into all four of x's fields is byte_aligned, not inconsistent."""
    packages, exe = _twice_model(tmp_path / "twice.tflite")
    buf = bytearray(exe.bitstreams[0])
    for f in _rows(exe):
        address = X if f.name == "x" else Y
        struct.pack_into("<I", buf, f.offset_bit // 8, address & 0xFFFFFFFF if f.position == "LOWER_32BIT"
                         else address >> 32)
    result = lk.check(packages, bytes(buf))
    kinds = {(f["kind"], f.get("name")) for f in result.findings}
    assert kinds == {("byte_aligned", "x"), ("byte_aligned", "y"), ("illegal_address", "x"),
                     ("illegal_address", "y")}


def _write(tmp_path, data, name="dump.bin"):
    path = tmp_path / name
    path.write_bytes(data)
    return path


def test_a_repeated_expect_is_refused(tmp_path, cli):
    packages, exe = _twice_model(tmp_path / "twice.tflite")
    dump = _write(tmp_path, reference_link(bytes(exe.bitstreams[0]), _rows(exe), {"x": [X]}, {"y": [Y]}, None,
                                           None))
    with pytest.raises(InputError, match="given twice"):
        lk.check(packages, dump.read_bytes(), expect=[f"output:y={Y:#x}", f"output:y={Y + 64:#x}"])
    model = tmp_path / "twice.tflite"
    assert_one_line_error(cli("link", model, "--check", dump, "--expect", f"output:y={Y:#x}", "--expect",
                              f"output:y={Y:#x}"), "--expect is given twice for output 'y'")
    # one buffer named two ways (its name and its index) is one buffer
    assert_one_line_error(cli("link", model, "--check", dump, "--expect", f"input:x={X:#x}", "--expect",
                              f"input:0={X:#x}"), "given twice")
    assert_one_line_error(cli("link", model, "--check", dump, "--expect", "parameter=1", "--expect",
                              "parameter=2"), "given twice for parameter")
    assert cli("link", model, "--check", dump, "--expect", f"input:x={X:#x}", "--expect", f"output:y={Y:#x}").code \
        == 0


ARABIC = "\u0664\u0660\u0669\u0666"  # ٤٠٩٦ (4096 in Arabic-Indic digits: int() reads it)


@pytest.mark.parametrize("argv", [["--executable", "0", "--input", f"x={ARABIC}", "--output", "y=1"],
                                  ["--executable", "0", "--input", "x=1", "--output", "y=1", "--scratch", ARABIC],
                                  ["--executable", "0", "--input", "x=1", "--output", "y=\u0661,2"],
                                  ["--check", "DUMP", "--expect", f"input:x={ARABIC}"]])
def test_an_address_in_other_digits_is_refused(tmp_path, cli, argv):
    packages, exe = _twice_model(tmp_path / "twice.tflite")
    dump = _write(tmp_path, bytes(exe.bitstreams[0]))
    argv = [str(dump) if a == "DUMP" else a for a in argv]
    r = cli("link", tmp_path / "twice.tflite", *argv, "-o", tmp_path / "o.bin") if "--check" not in argv else \
        cli("link", tmp_path / "twice.tflite", *argv)
    assert_one_line_error(r, "not an address")
    assert not (tmp_path / "o.bin").exists()
    with pytest.raises(InputError, match="ASCII"):
        lk.parse_address(ARABIC)
    assert lk.parse_address(" 0x1_000 ") == 4096


# --- layer names as forensics prints them --------------------------------------------------------------------

def _plan_names(cli, model):
    return cli("link", model, "--plan", width=200).out


def test_layers_are_named_by_short_form_unique_part_or_index(shared_data, tmp_path, cli):
    model = shared_data / SSD2
    packages = read_packages(open_model(model))
    exe = packages[0].executables[0]
    inputs, outputs = layer_addresses(exe, Layout(random.Random(5)))
    names = [layer.name for layer in exe.input_layers]
    plan = _plan_names(cli, model)
    short13 = "...expanded_conv_13/expand/Relu6 (+fused)"
    assert short13 in plan  # what forensics prints is what it takes back
    spelled = {short13: names[0], "1": names[1], "layer_19_1_Conv2d_2_1x1_256/Relu6": names[2]}
    argv = ["link", model, "--executable", "0", "-o", tmp_path / "ours.bin"]
    for text, name in spelled.items():
        argv += ["--input", f"{text}={inputs[name][0]:#x}"]
    argv += ["--output", f"Squeeze1={outputs['Squeeze1'][0]:#x}", "--output",
             f"scores={outputs['convert_scores'][0]:#x}"]
    r = cli(*argv)
    assert r.code == 0, r.err
    rows = [f for f in exe.field_offsets if f.bitstream == 0]
    assert (tmp_path / "ours.bin").read_bytes() == reference_link(bytes(exe.bitstreams[0]), rows, inputs, outputs,
                                                                 None, None)
    # --expect takes the same spellings
    r = cli("link", model, "--check", tmp_path / "ours.bin", "--expect", f"input:{short13}={inputs[names[0]][0]:#x}",
            "--expect", f"input:2={inputs[names[2]][0]:#x}", "--json")
    assert r.code == 0, r.err
    # the short forms the check prints are taken back too
    shown = cli("link", model, "--check", tmp_path / "ours.bin", width=200).out
    for name in names:
        short = lk.short(name)
        assert short in shown and lk.resolve_layer(exe, "input", short) == name


def test_a_name_matching_several_layers_or_none_is_one_line_listing_whole_names(shared_data, tmp_path, cli):
    model = shared_data / SSD2
    exe = read_packages(open_model(model))[0].executables[0]
    for text, fragment in (("FeatureExtractor", "matches 3 input layers"), ("nope", "has no input layer 'nope'"),
                           ("7", "has no input layer '7'")):
        r = cli("link", model, "--executable", "0", "--input", f"{text}=0x1000", "--allow-unlinked", "-o",
                tmp_path / "x.bin")
        assert_one_line_error(r, fragment)
        assert "characters cut" not in r.err and len(r.err) < 1000
        listed = r.err.split(": ", 2)[-1]
        for i, layer in enumerate(exe.input_layers):  # each listed with its index, in a form that names it back
            short = lk.short(layer.name)
            assert f"{i} {short}" in listed
            assert lk.resolve_layer(exe, "input", short) == layer.name
    # a name listed whole when it is short
    r = cli("link", model, "--executable", "0", "--output", "Squeeze=1", "--allow-unlinked", "-o", tmp_path / "y.bin")
    assert r.code == 0, r.err  # a unique part
    assert_one_line_error(cli("link", model, "--executable", "0", "--output", "e=1", "--allow-unlinked", "-o",
                              tmp_path / "x.bin"), "matches 2 output layers", "0 Squeeze1, 1 convert_scores")
    assert_one_line_error(cli("link", model, "--executable", "0", "--output", "Squeeze1=1", "--output", "0=2",
                              "--allow-unlinked", "-o", tmp_path / "x.bin"), "given twice")


def test_braces_in_a_name_are_not_flags(tmp_path, cli):
    _twice_model(tmp_path / "twice.tflite")
    r = cli("link", tmp_path / "twice.tflite", "--executable", "0", "--input", "{model}=1", "--output", "y=1",
            "-o", tmp_path / "x.bin")
    assert_one_line_error(r, "'{model}'")
    assert "--model" not in r.err


# --- FOREIGN, the one judgement, and a byte-aligned write that looks the same ---------------------------------

def test_a_foreign_bitstream_is_said_to_be_foreign_in_compare(shared_data, tmp_path, cli):
    model = shared_data / SSD2
    other = read_packages(open_model(shared_data / REAL[0]))[0].executables[0]
    dump = _write(tmp_path, bytes(other.bitstreams[0]), "foreign.bin")
    ra, rb = tmp_path / "a", tmp_path / "b"
    exe = read_packages(open_model(model))[0].executables[0]
    inputs, outputs = layer_addresses(exe, Layout(random.Random(2)))
    good = _write(tmp_path, reference_link(bytes(exe.bitstreams[0]), [f for f in exe.field_offsets
                                                                       if f.bitstream == 0], inputs, outputs, None,
                                           None), "good.bin")
    assert cli("ingest", ra, f"instructions:0_0={good}", "--source", "a", "--model", model).code == 0
    assert cli("ingest", rb, f"instructions:0_0={dump}", "--source", "b", "--model", model).code == 0
    d = json.loads(cli("compare", ra, rb, "--json").out)
    (row,) = [s for s in d["stages"] if s["stage"] == "instructions"]
    assert row["verdict"] == "DIFFER" and row["summary"].startswith("link check of B: FOREIGN | ")
    assert "only in the addresses" not in row["summary"] and "none of this model's" in row["summary"]


@pytest.mark.parametrize("dump", ["libedgetpu_0_0", "libedgetpu_1_0", "seed_driver_0_0", "seed_driver_1_0"])
def test_every_face_says_the_one_judgement(cli, dump):
    model, path = "dumps/link/tiny_edgetpu.tflite", f"dumps/link/{dump}.bin"
    report = reports.link(model, check=path)
    judgement = lk.judge_link(report.result)
    assert report.judgement == judgement and report.verdict is judgement.verdict
    d = json.loads(cli("link", model, "--check", path, "--json").out)
    assert (d["verdict"], d["message"], [r["code"] for r in d["reasons"]]) == (
        judgement.verdict, judgement.message, [r.code for r in judgement.reasons])
    text = cli("link", model, "--check", path, width=300).out
    assert text.splitlines()[0] == judgement.line
    assert sum(line.startswith(("LINKED |", "MISLINKED |", "FOREIGN |")) for line in text.splitlines()) == 1


def test_a_simple_link_a_byte_aligned_write_would_leave_the_same_is_linked_with_a_note(tmp_path, cli):
    """Both readings legal, no overlap to tell: LINKED with a note, and each --expect the note prints, run as
    printed, settles it (one way LINKED without the note, the other byte_aligned)."""
    packages, exe = _twice_model(tmp_path / "twice.tflite")
    model = tmp_path / "twice.tflite"
    dump = _write(tmp_path, reference_link(bytes(exe.bitstreams[0]), _rows(exe), {"x": [0x3000]}, {"y": [0x5000]},
                                           None, None))
    r = cli("link", model, "--check", dump, "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["verdict"] == "LINKED" and d["findings"] == []
    assert {(n["name"], n["address"], n["as_bytes"]) for n in d["notes"]} == {("x", "0x3000", hex(0x3000 << 6)),
                                                                             ("y", "0x5000", hex(0x5000 << 6))}
    assert [r["code"] for r in d["reasons"]] == ["byte_aligned_possible"] * 2
    text = cli("link", model, "--check", dump, width=400).out
    (note,) = [line for line in text.splitlines() if "note: x " in line]
    specs = [shlex.split(spec)[0] for spec in re.findall(r"--expect ('[^']*'|\S+)", note)]
    assert specs == ["input:x=0x3000", f"input:x={0x3000 << 6:#x}"]
    for spec, aligned in zip(specs, (False, True)):
        r = cli("link", model, "--check", dump, "--expect", spec, "--json")
        d = json.loads(r.out)
        assert not [n for n in d["notes"] if n["name"] == "x"]
        assert bool([f for f in d["findings"] if f["kind"] == "byte_aligned" and f["name"] == "x"]) == aligned
        assert r.code == (1 if aligned else 0)


# --- the parameter check (issue 32's "another model's parameters uploaded") -----------------------------------

def test_check_parameters_says_match_differ_or_foreign(shared_data):
    ssd2 = read_packages(open_model(shared_data / SSD2))
    ssd1 = read_packages(open_model(shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu"
                                                  ".tflite"))
    mine = bytes(ssd2[0].executables[1].parameters)
    theirs = bytes(ssd1[0].executables[1].parameters)
    assert lk.check_parameters(ssd2, mine).verdict == lk.MATCH
    foreign = lk.check_parameters(ssd2, theirs)
    assert foreign.verdict == lk.FOREIGN and foreign.kind is None and foreign.exit_code == 1
    seen = []
    bad = bytearray(mine)
    bad[100] ^= 1
    differ = lk.check_parameters(ssd2, bytes(bad), explain=lambda a, b: seen.append(len(b)) or "explained")
    assert differ.verdict == lk.DIFFER and differ.diagnosis == "explained" and seen == [len(mine)]
    assert differ.findings[0]["first_offset"] == 100
    half = lk.check_parameters(ssd2, mine[:len(mine) // 2])  # an upload cut short is this model's, DIFFER
    assert half.verdict == lk.DIFFER and {"kind": "truncated", "sizes": {"dump": len(mine) // 2,
                                                                         "parameters": len(mine)}} in half.findings
    longer = lk.check_parameters(ssd2, mine + bytes(4096))  # a page-rounded dump: the rest is not compared
    assert longer.verdict == lk.MATCH and longer.judgement.has("longer")
    # a bitstream is no parameter buffer
    assert lk.check_parameters(ssd2, bytes(ssd2[0].executables[0].bitstreams[0])).verdict == lk.FOREIGN
