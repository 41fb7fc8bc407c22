"""`link --check`: the executable a dump is, the addresses it holds, and each link bug named, on the real models
and the small model built here. Dumps are made by the reference bit loop (test_link_bits) and by re-creations
of the drivers' code, never by the code under test."""

from __future__ import annotations

import json
import random
import struct

import numpy as np
import pytest

from forensics.link import bitstream as lk
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from tests.link import dwn1
from tests.link.addresses import Layout, layer_addresses
from tests.link.test_link_bits import KIND, REAL, reference_link

SSD = [n for n in REAL if n.startswith("ssd")]


def _fields(exe, k=0):
    return [f for f in exe.field_offsets if f.bitstream == k]


def _addresses(exe, rng, space="extended"):
    return layer_addresses(exe, Layout(rng, space))


def _linked(exe, k, rng, parameter=None, scratch=None, space="extended"):
    layout = Layout(rng, space)
    inputs, outputs = layer_addresses(exe, layout)
    if exe.parameters_size and parameter is None:
        parameter = layout.next(exe.parameters_size)
    data = reference_link(bytes(exe.bitstreams[k]), _fields(exe, k), inputs, outputs, parameter, scratch)
    return data, inputs, outputs, parameter


def _packages(path):
    return read_packages(open_model(path))


@pytest.fixture
def small(tmp_path):
    path = tmp_path / "small.tflite"
    path.write_bytes(dwn1.model(dwn1.small_executables()))
    return path, _packages(path)


@pytest.mark.parametrize("space", ["extended", "simple"])
@pytest.mark.parametrize("name", REAL)
def test_a_correct_link_is_linked_and_reads_back_its_addresses(shared_data, name, space):
    """libedgetpu's link (the bit loop) at legal addresses, page-aligned or 64-byte aligned: LINKED, no finding."""
    packages = _packages(shared_data / name)
    rng = random.Random(name + space)
    for exe in packages[0].executables:
        data, inputs, outputs, parameter = _linked(exe, 0, rng, space=space)
        result = lk.check(packages, data)
        assert result.verdict == lk.LINKED and result.exit_code == 0, result.findings
        assert result.findings == ()
        if space == "extended":  # an upper half of 0x80000000 reaches the field's fifth byte: no memcpy did that
            assert result.notes == ()
        for note in result.notes:  # a simple address below 512 KiB: a memcpy of it << 6 would look the same
            assert int(note["as_bytes"], 16) == int(note["address"], 16) << 6 < 1 << 25
        assert result.executable == {"index": exe.index, "type": exe.type} and result.bitstream == 0
        assert result.addresses["input"] == {n: [hex(a) for a in v] for n, v in inputs.items()}
        assert result.addresses["output"] == {n: [hex(a) for a in v] for n, v in outputs.items()}
        assert result.addresses["parameter"] == (hex(parameter) if parameter is not None else None)
        # an execution-only executable's parameter and scratch fields stay as compiled: reported, no finding
        states = {f["buffer"]: f["state"] for f in result.to_dict()["fields"]}
        if exe.type == "EXECUTION_ONLY":
            assert states["parameter"] == "unused" and states["scratch"] == "unused"


@pytest.mark.parametrize("name", REAL)
def test_the_parameter_caching_bitstream_is_identified(shared_data, name):
    packages = _packages(shared_data / name)
    (cache,) = [e for e in packages[0].executables if e.type == "PARAMETER_CACHING"]
    result = lk.check(packages, bytes(cache.bitstreams[0]))
    assert result.executable == {"index": cache.index, "type": "PARAMETER_CACHING"}
    assert result.verdict == lk.MISLINKED
    assert result.findings == ({"kind": "unlinked", "names": ["parameter"]},)


@pytest.mark.parametrize("name", REAL)
def test_another_models_bitstream_is_foreign(shared_data, name):
    packages = _packages(shared_data / name)
    rng = random.Random(1)
    for other in REAL:
        if other == name:
            continue
        for exe in _packages(shared_data / other)[0].executables:
            data, *_ = _linked(exe, 0, rng)
            result = lk.check(packages, data)
            assert result.verdict == lk.FOREIGN and result.exit_code == 1, (other, exe.index)


def test_the_seed_drivers_missing_caching_run_is_named(tmp_path, shared_data):
    """The seed submits only executable 0: a run whose instructions hold no PARAMETER_CACHING bitstream."""
    from forensics import reports
    from forensics.link.bugs import check_stage
    from forensics.runs.run import load_run

    model = shared_data / SSD[0]
    packages = _packages(model)
    exe = packages[0].executables[0]
    rng = random.Random(2)
    data, *_ = _linked(exe, 0, rng)
    dump = tmp_path / "exe0.bin"
    dump.write_bytes(data)
    run_path = tmp_path / "run"
    reports.ingest(run_path, [f"instructions:0_0={dump}"], source="seed", model=str(model))
    run = load_run(run_path)
    result = check_stage(run, run.buffer("instructions", "0_0"))
    assert result.verdict == lk.MISLINKED
    (missing,) = [f for f in result.findings if f["kind"] == "not_submitted"]
    assert missing["executable"] == 1 and missing["type"] == "PARAMETER_CACHING"
    # with the caching bitstream in the run too, the link is clean
    cache = packages[0].executables[1]
    cdata, *_ = _linked(cache, 0, rng)
    (tmp_path / "exe1.bin").write_bytes(cdata)
    full = tmp_path / "full"
    reports.ingest(full, [f"instructions:0_0={dump}", f"instructions:1_0={tmp_path / 'exe1.bin'}"], source="ok",
                   model=str(model))
    run = load_run(full)
    assert check_stage(run, run.buffer("instructions", "0_0")).verdict == lk.LINKED
    assert check_stage(run, run.buffer("instructions", "1_0")).verdict == lk.LINKED


def test_each_bug_on_the_small_model(small):
    """Bit phases 0..7, batch 2, scratch: each bug made by hand from the reference link."""
    _, packages = small
    exe = packages[0].executables[0]
    rng = random.Random(9)
    for k in (0, 1):
        scratch = Layout(rng).next(4096) if k == 0 else None  # bitstream 1 has no scratch field
        data, inputs, outputs, _ = _linked(exe, k, rng, scratch=scratch)
        result = lk.check(packages, data)
        assert result.verdict == lk.LINKED and (result.executable["index"], result.bitstream) == (0, k)
        fields = _fields(exe, k)
        # unlinked: one layer left as compiled
        partial = reference_link(bytes(exe.bitstreams[k]), fields, inputs,
                                 {n: v for n, v in outputs.items() if n != "scores"}, None, scratch)
        got = lk.check(packages, partial, executable=0)
        assert {"kind": "unlinked", "names": ["scores", "scores (batch 1)"]} in got.findings
        if k == 1:  # bitstream 1 holds one half of each `in` address: no range to compare
            continue
        # aliased: batch 1 of scores linked over batch 0 of the input
        clash = dict(outputs, scores=[outputs["scores"][0], inputs["in"][0] + 8])
        got = lk.check(packages, reference_link(bytes(exe.bitstreams[k]), fields, inputs, clash, None, scratch))
        assert any(f["kind"] == "aliased" and f["names"] == ["in", "scores (batch 1)"] and f["overlap"] == 40
                   for f in got.findings), got.findings
        # halves_swapped and unexpected, with --expect
        a = outputs["scores"][0]
        swapped = dict(outputs, scores=[((a & 0xFFFFFFFF) << 32) | (a >> 32), outputs["scores"][1]])
        bad = reference_link(bytes(exe.bitstreams[k]), fields, inputs, swapped, None, scratch)
        got = lk.check(packages, bad, expect=[f"output:scores={hex(a)}", f"input:in={inputs['in'][0] + 1}"])
        kinds = {f["kind"]: f for f in got.findings}
        assert kinds["halves_swapped"]["name"] == "scores" and kinds["halves_swapped"]["expected"] == hex(a)
        assert kinds["unexpected"]["name"] == "in"
        # without --expect the swapped address is still named: its upper half is no extended segment's
        (illegal,) = [f for f in lk.check(packages, bad).findings if f["kind"] == "illegal_address"]
        assert illegal["name"] == "scores" and int(illegal["address"], 16) == int(swapped["scores"][0])


def test_corrupted_and_truncated(small):
    _, packages = small
    exe = packages[0].executables[0]
    data, *_ = _linked(exe, 0, random.Random(3))
    fields = _fields(exe)
    inside = np.zeros(len(data) * 8, bool)
    for f in fields:
        inside[f.offset_bit:f.offset_bit + 32] = True
    outside = np.flatnonzero(~inside)
    flips = [int(outside[3]), int(outside[-2])]
    bad = bytearray(data)
    for bit in flips:
        bad[bit // 8] ^= 1 << (bit % 8)
    result = lk.check(packages, bytes(bad))
    (corrupted,) = [f for f in result.findings if f["kind"] == "corrupted"]
    assert corrupted["offsets"] == sorted({b // 8 for b in flips})
    short = lk.check(packages, data[:60])
    assert {"kind": "truncated", "sizes": {"dump": 60, "bitstream": len(data)}} in short.findings
    missing = [f for f in short.to_dict()["fields"] if f["state"] == "missing"]
    assert missing and all(f["offset_bit"] + 32 > 60 * 8 for f in missing)


def test_byte_aligned_on_other_phases(small):
    """memcpy at offset_bit / 8 on fields at bit phases 6, 5, 2, 1 (the real models have only 6)."""
    _, packages = small
    exe = packages[0].executables[0]
    fields = _fields(exe)
    rng = random.Random(11)
    for _ in range(8):
        _, inputs, outputs, _ = _linked(exe, 0, rng)
        scratch = Layout(rng).next(4096)
        seeded = [f for f in fields if f.batch == 0 and f.name in ("in", "out/a;fused")]
        # the other fields linked correctly, these left as compiled and then written as 4 whole bytes
        rest = [f for f in fields if f not in seeded]
        buf = bytearray(reference_link(bytes(exe.bitstreams[0]), rest, inputs, outputs, None, scratch))
        for f in seeded:
            address = (inputs if f.name == "in" else outputs)[f.name][0]
            struct.pack_into("<I", buf, f.offset_bit // 8,
                             address & 0xFFFFFFFF if f.position == "LOWER_32BIT" else address >> 32)
        result = lk.check(packages, bytes(buf))
        named = {f["name"]: f for f in result.findings if f["kind"] == "byte_aligned"}
        assert set(named) <= {"in", "out/a;fused"}
        for name, f in named.items():  # each field named holds the half the driver meant
            address = (inputs if name == "in" else outputs)[name][0]
            for x in f["fields"]:
                half = address & 0xFFFFFFFF if x["position"] == "LOWER_32BIT" else address >> 32
                assert int(x["meant"], 16) == half
        # named without --expect: through the instruction bits each write overwrote, or, where it kept them, the
        # address the chip then reads (an upper half 0x80000000 read off its bit lands on reserved bits)
        assert set(named) == {"in", "out/a;fused"}, result.findings
        assert not [f for f in result.findings if f["kind"] in ("unexpected", "halves_swapped")]
        # with the addresses expected, every one of them is named
        expect = [f"input:in={hex(inputs['in'][0])}", f"output:out/a;fused={hex(outputs['out/a;fused'][0])}"]
        result = lk.check(packages, bytes(buf), expect=expect)
        named = {f["name"] for f in result.findings if f["kind"] == "byte_aligned"}
        assert named == {"in", "out/a;fused"}, result.findings
        assert not [f for f in result.findings if f["kind"] in ("corrupted", "unexpected")]


def test_a_parameter_buffer_matches_or_differs(small):
    _, packages = small
    cache = packages[0].executables[1]
    same = lk.check(packages, bytes(cache.parameters))
    assert same.verdict == lk.MATCH and same.exit_code == 0 and same.kind == "parameters"
    bad = bytearray(cache.parameters)
    bad[10] ^= 0xFF
    seen = []
    differ = lk.check(packages, bytes(bad), parameters_diagnosis=lambda a, b: seen.append((bytes(a), bytes(b))))
    assert differ.verdict == lk.DIFFER and differ.exit_code == 1
    assert differ.findings[0]["first_offset"] == 10 and differ.findings[0]["bytes"] == 1
    assert seen == [(bytes(cache.parameters), bytes(bad))]  # model parameters as A, the dump as B


def test_check_json_and_table(small, tmp_path, cli):
    path, packages = small
    exe = packages[0].executables[0]
    data, inputs, outputs, _ = _linked(exe, 0, random.Random(4))
    clash = dict(outputs, scores=outputs["out/a;fused"])
    dump = tmp_path / "dump.bin"
    dump.write_bytes(reference_link(bytes(exe.bitstreams[0]), _fields(exe), inputs, clash, None, None))
    r = cli("link", path, "--check", dump, "--json")
    assert r.code == 1, r.err
    d = json.loads(r.out)
    assert d["verdict"] == "MISLINKED" and d["executable"] == {"index": 0, "type": "EXECUTION_ONLY"}
    assert d["bitstream"] == 0 and d["addresses"]["scratch"] is None
    assert d["addresses"]["output"]["scores"] == [hex(a) for a in outputs["out/a;fused"]]
    assert set(d["fields"][0]) >= {"desc", "name", "batch", "position", "offset_bit", "value", "state"}
    r = cli("link", path, "--check", dump)
    assert r.code == 1
    a0 = hex(outputs["out/a;fused"][0])
    assert f"aliased: out/a (+fused) and scores were linked to one address {a0}: the chip uses one buffer for " \
           "both" in " ".join(r.out.split())
    assert r.out.startswith("MISLINKED | executable 0 EXECUTION_ONLY bitstream 0: ")
    assert r.out.splitlines()[0].split(" | ")[1] == d["message"]
    # scratch is mapped for this executable and the dump did not link it
    assert "unlinked: scratch" in " ".join(r.out.split())
