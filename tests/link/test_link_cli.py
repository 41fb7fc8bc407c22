"""`forensics link` on the command line: every mode's --json and table, bad input as one line and exit 2,
and the link bugs through simulate, diagnose and compare."""

from __future__ import annotations

import json
import random

import pytest

from forensics import reports
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from tests.conftest import assert_one_line_error
from tests.link import dwn1
from tests.link.addresses import Layout
from tests.link.test_link_bits import reference_link
from tests.link.test_link_check import SSD, _fields

# legal extended addresses (libedgetpu's segment 0x8000000000000000 + 4 GB), page-aligned or 64-byte aligned
A_IN, A_IN1, A_OUT, A_OUT1, A_SC = (0x8000_0000_0010_0000, 0x8000_0000_0010_1040, 0x8000_0000_0020_0000,
                                    0x8000_0000_0020_1000, 0x8000_0000_0030_0000)
A_SCORES = "0x8000_0000_0040_0000,0x8000_0000_0040_1000"


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.tflite"
    path.write_bytes(dwn1.model(dwn1.small_executables()))
    return path


def _link_args(model, out):
    return ["link", model, "--executable", "0", "--input", f"in={A_IN:#x},{A_IN1}", "--output",
            f"out/a;fused={A_OUT:#x},{A_OUT1:#x}", "--output", f"scores={A_SCORES}", "--scratch", hex(A_SC), "-o", out]


def test_link_writes_the_reference_bitstream(small, tmp_path, cli):
    out = tmp_path / "linked.bin"
    r = cli(*_link_args(small, out), "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    exe = read_packages(open_model(small))[0].executables[0]
    expected = reference_link(bytes(exe.bitstreams[0]), _fields(exe), {"in": [A_IN, A_IN1]},
                              {"out/a;fused": [A_OUT, A_OUT1], "scores": [0x8000_0000_0040_0000, 0x8000_0000_0040_1000]}, None, A_SC)
    assert out.read_bytes() == expected
    assert d["written"] == str(out) and d["what"] == "bitstream" and d["size"] == len(expected)
    assert {f["buffer"] for f in d["unlinked"]} == {"parameter"}  # not given: left as compiled
    assert d == reports.link(small, executable=0, input=[f"in={A_IN:#x},{A_IN1}"],
                             output=[f"out/a;fused={A_OUT:#x},{A_OUT1:#x}", f"scores={A_SCORES}"],
                             scratch=hex(A_SC), out=str(out), force=True).to_dict()
    # bitstream 1 of the same executable
    r = cli("link", small, "--executable", "0", "--bitstream", "1", "--input", "in=1,2", "--output", "scores=3,4",
            "-o", tmp_path / "b1.bin")
    assert r.code == 0, r.err
    assert (tmp_path / "b1.bin").read_bytes() == reference_link(
        bytes(exe.bitstreams[1]), _fields(exe, 1), {"in": [1, 2]}, {"scores": [3, 4]}, None, None)
    assert "wrote" in r.out and "INPUT" not in r.out  # the table names buffers, not descriptions
    # the check reads back what was linked
    r = cli("link", small, "--check", out, "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert d["verdict"] == "LINKED" and d["addresses"]["scratch"] == hex(A_SC)
    report = reports.link(small, check=str(out))
    assert report.to_dict() == d and report.exit_code == 0 and bool(report)
    assert d["addresses"]["input"] == {"in": [hex(A_IN), hex(A_IN1)]}


def test_existing_output_needs_force(small, tmp_path, cli):
    out = tmp_path / "linked.bin"
    out.write_bytes(b"keep")
    assert_one_line_error(cli(*_link_args(small, out)), "exists", "--force")
    assert out.read_bytes() == b"keep"
    assert cli(*_link_args(small, out), "--force").code == 0
    assert out.read_bytes() != b"keep"


def test_plan_json_and_table(small, cli):
    r = cli("link", small, "--plan", "--json")
    assert r.code == 0, r.err
    d = json.loads(r.out)
    assert [(s["executable"], s["type"]) for s in d["order"]] == [(1, "PARAMETER_CACHING"), (0, "EXECUTION_ONLY")]
    exe0 = d["executables"][0]
    assert exe0["batch_size"] == 2 and [b["size"] for b in exe0["bitstreams"]] == [96, 40]
    assert exe0["buffers"]["scratch"] == {"size_bytes": 4096} and exe0["buffers"]["parameter"] is None
    assert [f["offset_bit"] for f in exe0["bitstreams"][0]["fields"]][:3] == [6, 70, 134]
    assert {f["buffer"]: f["linked"] for f in exe0["bitstreams"][0]["fields"]}["parameter"] is False
    params = d["executables"][1]["buffers"]["parameter"]
    assert params["size_bytes"] == 64 and params["crc32"].startswith("0x")
    assert d == reports.link(small, plan=True).to_dict()
    r = cli("link", small, "--plan")
    assert r.code == 0
    assert "The order libedgetpu runs them" in r.out and "PARAMETER_CACHING" in r.out
    assert "out/a (+fused)" in r.out and "parameter (not mapped)" in r.out


def test_parameters_are_written(small, tmp_path, cli):
    out = tmp_path / "params.bin"
    r = cli("link", small, "--parameters", "-o", out, "--json")
    assert r.code == 0, r.err
    exe1 = read_packages(open_model(small))[0].executables[1]
    assert out.read_bytes() == bytes(exe1.parameters)
    assert json.loads(r.out)["executable"] == {"index": 1, "type": "PARAMETER_CACHING"}
    r = cli("link", small, "--check", out)
    assert r.code == 0 and r.out.startswith("MATCH | the parameters of executable 1 PARAMETER_CACHING")
    bad = bytearray(out.read_bytes())
    bad[5] ^= 1
    (tmp_path / "bad.bin").write_bytes(bad)
    r = cli("link", small, "--check", tmp_path / "bad.bin", "--json")
    d = json.loads(r.out)
    assert r.code == 1 and d["verdict"] == "DIFFER" and d["diagnosis"]["verdict"] != "IDENTICAL"
    assert_one_line_error(cli("link", small, "--parameters", "--executable", "0", "-o", tmp_path / "p0.bin"),
                          "executable 0 has no parameters")


def test_a_text_dump_is_checked(small, tmp_path, cli):
    import subprocess

    out = tmp_path / "linked.bin"
    assert cli(*_link_args(small, out)).code == 0
    text = tmp_path / "linked.txt"
    text.write_text(subprocess.run(["xxd", str(out)], capture_output=True, text=True, check=True).stdout)
    r = cli("link", small, "--check", text, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["verdict"] == "LINKED"


def test_foreign_and_longer_dumps(small, tmp_path, cli):
    other = tmp_path / "other.bin"
    other.write_bytes(bytes(range(96)))
    r = cli("link", small, "--check", other)
    assert r.code == 1 and r.out.startswith("FOREIGN")
    out = tmp_path / "linked.bin"
    assert cli(*_link_args(small, out)).code == 0
    longer = tmp_path / "page.bin"
    longer.write_bytes(out.read_bytes() + b"\0" * 4000)  # a page-rounded allocation
    r = cli("link", small, "--check", longer, "--json")
    assert r.code == 0, r.err
    assert "4,000 more than the 96 of the bitstream" in r.err and json.loads(r.out)["size"] == 4096


BAD_ADDRESSES = [(["--input", "in=0xZZ"], "not an address"),
                 (["--input", "in=0x1_0000_0000_0000_0000"], "does not fit in 64 bits"),
                 (["--input", "in=18446744073709551616"], "does not fit in 64 bits"),
                 (["--input", "in"], "expected NAME=ADDR"),
                 (["--input", "in=1,"], "not an address"),
                 (["--scratch", "-5"], "does not fit in 64 bits"),
                 (["--parameter", "1" * 30], "does not fit in 64 bits"),
                 (["--input", "in\x1b[31m=1"], "no input layer")]


@pytest.mark.parametrize("extra,fragment", BAD_ADDRESSES)
def test_bad_addresses_are_one_line(small, tmp_path, cli, extra, fragment):
    r = cli("link", small, "--executable", "0", "--output", "out/a;fused=1,2", "--output", "scores=3,4",
            "--input", "in=5,6", *extra, "-o", tmp_path / "x.bin")
    assert_one_line_error(r, fragment)
    assert "\x1b" not in r.err
    assert not (tmp_path / "x.bin").exists()


def test_missing_names_are_listed(small, tmp_path, cli):
    r = cli("link", small, "--executable", "0", "--output", "scores=1,2", "-o", tmp_path / "x.bin")
    assert_one_line_error(r, "need addresses for: in; out/a;fused", "--allow-unlinked")
    r = cli("link", small, "--executable", "0", "--output", "scores=1,2", "--allow-unlinked", "-o", tmp_path / "x.bin")
    assert r.code == 0, r.err


@pytest.mark.parametrize("argv,fragment", [
    (["--executable", "7", "-o", "X"], "executable 7 is not in the model"),
    (["--executable", "0", "--bitstream", "5", "--allow-unlinked", "-o", "X"], "has no bitstream 5"),
    (["--executable", "0"], "give -o OUT"),
    (["--plan", "--input", "in=1"], "give --executable E"),
    (["--plan", "-o", "X"], "-o OUT is for linking"),
    ([], "give one of --plan"),
    (["--plan", "--check", "X"], "not allowed with"),
    (["--check", "X", "--expect", "weights:x=1"], "KIND one of"),
    (["--plan", "--expect", "input:in=1"], "--expect is for --check"),
    (["--check", "NOPE.bin"], "NOPE.bin"),
])
def test_bad_flags_are_one_line(small, tmp_path, cli, argv, fragment):
    argv = [str(tmp_path / a) if a in ("X", "NOPE.bin") else a for a in argv]
    if "--check" in argv and argv[argv.index("--check") + 1].endswith("X"):
        (tmp_path / "X").write_bytes(b"\1" * 96)
    assert_one_line_error(cli("link", small, *argv), fragment)


def test_bad_models_are_one_line(tmp_path, cli, small, shared_data):
    missing = tmp_path / "missing.tflite"
    assert_one_line_error(cli("link", missing, "--plan"), "missing.tflite")
    empty = tmp_path / "empty.tflite"
    empty.write_bytes(b"")
    assert_one_line_error(cli("link", empty, "--plan"), "empty.tflite")
    truncated = tmp_path / "truncated.tflite"
    truncated.write_bytes(small.read_bytes()[:300])
    assert_one_line_error(cli("link", truncated, "--plan"), "truncated.tflite")
    head = shared_data / "ssd_mobilenet_v1_coco_quant_postprocess_head_layers.tflite"
    assert_one_line_error(cli("link", head, "--plan"), "has no edgetpu-custom-op")


def test_hostile_patch_tables_are_one_line(tmp_path, cli):
    exes = dwn1.small_executables()
    exes[0].bitstreams[0][1].append(dwn1.Fld(dwn1.OUTPUT, dwn1.LOWER, 96 * 8 - 8, "scores", 0))  # runs past the end
    past = tmp_path / "past.tflite"
    past.write_bytes(dwn1.model(exes))
    assert_one_line_error(cli("link", past, "--executable", "0", "--input", "in=1,2", "--output", "out/a;fused=1,2",
                              "--output", "scores=3,4", "-o", tmp_path / "x.bin"), "past.tflite", "runs past the end")
    dump = tmp_path / "d.bin"
    dump.write_bytes(bytes(exes[0].bitstreams[0][0]))
    assert_one_line_error(cli("link", past, "--check", dump), "past.tflite", "runs past the end")
    exes = dwn1.small_executables()
    exes[0].bitstreams[0][1][0].desc = 9  # a description libedgetpu does not know
    odd = tmp_path / "odd.tflite"
    odd.write_bytes(dwn1.model(exes))
    assert_one_line_error(cli("link", odd, "--plan"), "odd.tflite", "Description9")
    exes = dwn1.small_executables()
    exes[0].bitstreams[0][1][5].offset_bit = -40
    neg = tmp_path / "neg.tflite"
    neg.write_bytes(dwn1.model(exes))
    assert_one_line_error(cli("link", neg, "--check", dump), "neg.tflite")


def test_bad_dumps_are_one_line(small, tmp_path, cli):
    empty = tmp_path / "empty.bin"
    empty.write_bytes(b"")
    assert_one_line_error(cli("link", small, "--check", empty), "empty.bin")
    assert_one_line_error(cli("link", small, "--check", tmp_path), "directory")


@pytest.mark.parametrize("bug,kind", [("byte_aligned", "byte_aligned"), ("aliased", "aliased"),
                                      ("unlinked:Squeeze1", "unlinked"), ("halves_swapped:convert_scores", None)])
def test_simulated_link_bugs_are_named(shared_data, tmp_path, cli, bug, kind):
    model = shared_data / SSD[1]
    plan = json.loads(cli("link", model, "--plan", "--json").out)
    inputs = [layer["name"] for layer in plan["executables"][0]["buffers"]["input"]]
    good = tmp_path / "good.bin"
    rng = random.Random(bug)
    args = ["link", model, "--executable", "0", "-o", good]
    addresses = {}
    layout = Layout(rng)
    for kind_, names in (("input", inputs), ("output", ["Squeeze1", "convert_scores"])):
        for n in names:
            addresses[n] = layout.next(1 << 18)
            args += [f"--{kind_}", f"{n}={addresses[n]:#x}"]
    assert cli(*args).code == 0
    buggy = tmp_path / "buggy.bin"
    r = cli("simulate", good, "--bug", bug, "--model", model, "-o", buggy, "--json")
    assert r.code == 0, r.err
    assert json.loads(r.out)["kind"] == bug.split(":")[0]
    d = json.loads(cli("link", model, "--check", buggy, "--json").out)
    if kind is None:  # a swapped address: illegal on its own, halves_swapped against the one expected
        assert [f["name"] for f in d["findings"] if f["kind"] == "illegal_address"] == ["convert_scores"]
        d = json.loads(cli("link", model, "--check", buggy, "--expect",
                           f"output:convert_scores={addresses['convert_scores']:#x}", "--json").out)
        kind = "halves_swapped"
    assert d["verdict"] == "MISLINKED"
    assert kind in [f["kind"] for f in d["findings"]]
    # diagnose with the model answers a bitstream pair with the link check, A's addresses expected
    r = cli("diagnose", good, buggy, "--model", model, "--json")
    assert r.code == 1, r.err
    kinds = [f["kind"] for f in json.loads(r.out)["findings"]]
    assert kind in kinds
    assert cli("diagnose", good, good, "--model", model).code == 0


def test_simulate_lists_and_refuses(small, tmp_path, cli):
    r = cli("simulate", "--bug", "list", "--json")
    assert {"byte_aligned", "aliased", "unlinked", "halves_swapped"} <= {b["kind"] for b in json.loads(r.out)["bugs"]}
    a = tmp_path / "a.bin"
    a.write_bytes(b"\1" * 96)
    assert_one_line_error(cli("simulate", a, "--bug", "byte_aligned", "-o", tmp_path / "b.bin"), "--model MODEL")
    assert_one_line_error(cli("simulate", a, "--bug", "byte_aligned", "--model", small, "-o", tmp_path / "b.bin"),
                          "not an instruction bitstream")


def test_compare_answers_an_instructions_stage_with_the_link_check(shared_data, tmp_path, cli):
    model = shared_data / SSD[0]
    packages = read_packages(open_model(model))
    exe0, exe1 = packages[0].executables
    rng = random.Random(6)
    names = {"input": [layer.name for layer in exe0.input_layers], "output": ["Squeeze1", "convert_scores"]}

    def linked(out_addresses):
        layout = Layout(rng)
        ins = {n: [layout.next(1 << 18)] for n in names["input"]}
        return reference_link(bytes(exe0.bitstreams[0]), _fields(exe0), ins, out_addresses, None, None)

    good, bad = tmp_path / "good.bin", tmp_path / "bad.bin"
    base = 0x8000_0000_1000_0000  # above the inputs Layout puts in the first 64 MiB of the extended segment
    good.write_bytes(linked({"Squeeze1": [base], "convert_scores": [base + 0x2000]}))
    bad.write_bytes(linked({"Squeeze1": [base + 0x10_0000], "convert_scores": [base + 0x10_0000]}))
    cache = tmp_path / "cache.bin"
    cache.write_bytes(reference_link(bytes(exe1.bitstreams[0]), _fields(exe1), {}, {}, 1 << 63, None))
    ra, rb = tmp_path / "libedgetpu", tmp_path / "driver"
    assert cli("ingest", ra, f"instructions:0_0={good}", f"instructions:1_0={cache}", "--source", "libedgetpu",
               "--model", model).code == 0
    assert cli("ingest", rb, f"instructions:0_0={bad}", "--source", "driver", "--model", model).code == 0
    r = cli("compare", ra, rb, "--json")
    assert r.code == 1, r.err
    d = json.loads(r.out)
    (row,) = [s for s in d["stages"] if s["stage"] == "instructions" and s["tensor"] == "0_0"]
    assert row["verdict"] == "DIFFER" and row["summary"].startswith("link check of B: MISLINKED")
    kinds = [f["kind"] for f in row["findings"]]
    assert "aliased" in kinds and "not_submitted" in kinds
    assert d["first_divergent_stage"] == "instructions"
    # two correct links of one bitstream differ only in their addresses: the stage passes
    rc = tmp_path / "other"
    other = tmp_path / "other.bin"
    other.write_bytes(linked({"Squeeze1": [base + 0x20_0000], "convert_scores": [base + 0x20_2000]}))
    assert cli("ingest", rc, f"instructions:0_0={other}", f"instructions:1_0={cache}", "--source", "other",
               "--model", model).code == 0
    d = json.loads(cli("compare", ra, rc, "--json").out)
    (row,) = [s for s in d["stages"] if s["stage"] == "instructions" and s["tensor"] == "0_0"]
    assert row["verdict"] == "MATCH", row


def test_a_parameters_stage_is_the_params_stage(shared_data, tmp_path, cli):
    model = shared_data / SSD[0]
    blob = tmp_path / "p.bin"
    blob.write_bytes(b"\1\2\3\4")
    run = tmp_path / "run"
    assert cli("ingest", run, f"parameters:exe1={blob}", "--source", "x", "--model", model).code == 0
    manifest = json.loads((run / "manifest.json").read_text())
    assert [b["stage"] for b in manifest["buffers"]] == ["params"]


def test_a_huge_dump_is_read_only_as_far_as_the_largest_bitstream(small, tmp_path, cli):
    huge = tmp_path / "huge.bin"
    with open(huge, "wb") as fh:  # sparse: 2 GiB of zeros on disk in a few blocks
        fh.truncate(2 << 30)
    r = cli("link", small, "--check", huge, "--json")
    assert r.code == 1, r.err
    d = json.loads(r.out)
    assert d["verdict"] == "FOREIGN" and d["size"] == 2 << 30


def test_the_library_takes_the_command_lines_spellings():
    # reports.link(executable="0") is `--executable 0`; a bad spelling is one InputError naming the keyword.
    from forensics import reports
    from forensics.core.errors import InputError

    model, dump = "dumps/link/tiny_edgetpu.tflite", "dumps/link/seed_driver_0_0.bin"
    typed = reports.link(model, check=dump, executable=0).to_dict()
    spelled = reports.link(model, check=dump, executable="0x0").to_dict()
    assert typed == spelled and typed["verdict"] == "MISLINKED"
    with pytest.raises(InputError, match="executable: not an integer"):
        reports.link(model, check=dump, executable="first")
