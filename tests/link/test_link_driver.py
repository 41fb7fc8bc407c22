"""`link --check` on what the story's driver really links (issue 31 §1): its PatchVAs arithmetic and its device
addresses (tests/link/driver.py, from npu_driver's source), on the four real Edge TPU models and on DWN1 models
built here. The expected answers come from that arithmetic and a plain bit loop, never from forensics' linker."""

from __future__ import annotations

import random

import numpy as np
import pytest

from forensics.link import bitstream as lk
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from tests.link import driver, dwn1
from tests.link.addresses import Layout, layer_addresses
from tests.link.test_link_bits import KIND, REAL, reference_link


def _packages(path):
    return read_packages(open_model(path))


def _fields(exe, k=0):
    return [f for f in exe.field_offsets if f.bitstream == k]


def _has_caching(packages) -> bool:
    return any(e.type == "PARAMETER_CACHING" for e in packages[0].executables)


def _meant(exe, f, addresses: dict) -> int:
    """The address PatchVAs gives field `f` (its whole 64 bits)."""
    kind = KIND[f.desc]
    if kind == "input":
        return addresses["input_va"]
    if kind == "output":
        layers = [(layer.name, layer.size_bytes) for layer in exe.output_layers]
        return driver.output_address(layers, f.name, addresses["output_va"])
    return addresses["param_va" if kind == "parameter" else "scratch_va"]


def _reads(dump: bytes, fields, name, kind) -> int:
    """The 64-bit address the chip reads for a buffer: its two fields through the bit loop."""
    out = 0
    for f in fields:
        if KIND[f.desc] == kind and (kind not in ("input", "output") or f.name == name):
            out |= driver.chip_reads(dump, f.offset_bit) << (0 if f.position == "LOWER_32BIT" else 32)
    return out


def _driver_check(model, addresses_of):
    """Executable 0 of `model` linked by the driver's arithmetic with a console's addresses, and its check."""
    packages = _packages(model)
    exe = packages[0].executables[0]
    fields = _fields(exe)
    addresses = addresses_of(exe, _has_caching(packages))
    dump = driver.driver_link(exe, fields, addresses)
    return exe, fields, addresses, dump, lk.check(packages, dump)


# --- the fixture's own facts, checked against the driver's arithmetic -----------------------------------------

def test_the_drivers_addresses_are_ones_it_maps():
    # npu_test_console's comments: input "idx 4, host idx 0x80", output "idx 4, host idx 0x44"
    assert driver.map_pages(driver.CONSOLE["input"], 4096) == [(6144 + 4, 0x80)]
    assert driver.map_pages(driver.CONSOLE["output"], 8192) == [(6148, 0x44), (6148, 0x45)]
    assert driver.map_pages(driver.ADD_MODEL["output"], 4096) == [2]  # "PTE idx 2"
    for bad in (0x2040, driver.EXT_VA_BIT | 0x880040, 0x2000000):  # not page-aligned; past the page table
        with pytest.raises(ValueError):
            driver.map_pages(bad, 4096)
    # a buffer crossing a 2 MB extended region continues in the next subtable
    assert driver.map_pages(driver.EXT_VA_BIT | 0x1FF000, 8192) == [(6144, 0x1FF), (6145, 0)]
    assert driver.output_address([("a", 7672), ("b", 176368)], "b", 0x2000) == 0x4000
    assert driver.output_address([("a", 7672)], "nope", 0x2000) == 0x2000


@pytest.mark.parametrize("name", REAL)
def test_the_real_models_fields_start_at_bit_6_over_zero_bits(shared_data, name):
    """docs/link.md's facts: every field at bit 6 of its byte, the 6 instruction bits below it 0, the compiled
    field 0 and the 2 bits above it 0 — so a byte-aligned write of a 64-byte aligned address changes no bit
    outside the fields."""
    for exe in _packages(shared_data / name)[0].executables:
        for k, view in enumerate(exe.bitstreams):
            data = np.frombuffer(view, np.uint8)
            for f in _fields(exe, k):
                b = f.offset_bit // 8
                assert f.offset_bit % 8 == 6
                assert not data[b:b + 5].any(), (exe.index, f.offset_bit)


# --- the story driver on the real models ------------------------------------------------------------------------

@pytest.mark.parametrize("name", REAL)
def test_the_consoles_extended_link_is_byte_aligned_and_illegal(shared_data, name):
    """npu_test_console: extended addresses written as 4 whole bytes. The chip reads them 6 bits off, with bit 57
    set (0x0200000000022000 for the input at 0x8000000000880000): named without --expect."""
    exe, fields, addresses, dump, result = _driver_check(shared_data / name, driver.console_addresses)
    assert result.verdict == lk.MISLINKED and result.executable["index"] == 0
    aligned = {(f["buffer"], f["name"]): f for f in result.findings if f["kind"] == "byte_aligned"}
    illegal = {(f["buffer"], f["name"]): f for f in result.findings if f["kind"] == "illegal_address"}
    layers = [("input", layer.name) for layer in exe.input_layers] + [("output", layer.name)
                                                                       for layer in exe.output_layers]
    assert set(layers) <= set(aligned) and set(illegal) == set(layers)
    for kind, layer in layers:
        f = next(f for f in fields if KIND[f.desc] == kind and f.name == layer)
        meant = _meant(exe, f, addresses)
        reads = _reads(dump, fields, layer, kind)
        assert int(aligned[kind, layer]["meant"], 16) == meant
        assert int(aligned[kind, layer]["reads"], 16) == reads == int(illegal[kind, layer]["address"], 16)
        assert reads >> 57 == 1  # 0x80000000 >> 6 in the upper half: bit 57, with bit 63 clear
        assert result.addresses[kind][layer] == [hex(meant)]
    if name.startswith("mobilenet"):
        assert int(illegal["input", "input"]["address"], 16) == 0x0200000000022000
    assert not [f for f in result.findings if f["kind"] == "corrupted"]  # no instruction bit changed
    # the driver gives one input address to every input layer: aliased stays, beside byte_aligned
    same = [f for f in result.findings if f["kind"] == "aliased"]
    if len(exe.input_layers) > 1:
        assert {n for f in same for n in f["names"]} == {layer.name for layer in exe.input_layers}
        assert all(f["same_address"] and f["addresses"][0] == hex(driver.CONSOLE["input"]) for f in same)
    else:
        assert same == []


@pytest.mark.parametrize("name", REAL)
def test_the_consoles_parameter_link_is_named(shared_data, name):
    packages = _packages(shared_data / name)
    (cache,) = [e for e in packages[0].executables if e.type == "PARAMETER_CACHING"]
    dump = driver.patch_param_bitstream_vas(bytes(cache.bitstreams[0]), _fields(cache), driver.CONSOLE["param"])
    result = lk.check(packages, dump)
    assert result.executable == {"index": cache.index, "type": "PARAMETER_CACHING"}
    kinds = {f["kind"]: f for f in result.findings}
    assert set(kinds) == {"byte_aligned", "illegal_address"}
    assert kinds["byte_aligned"]["meant"] == hex(driver.CONSOLE["param"])
    assert int(kinds["illegal_address"]["address"], 16) == _reads(dump, _fields(cache), None, "parameter")


@pytest.mark.parametrize("name", REAL)
def test_the_add_model_consoles_simple_link(shared_data, name):
    """add_model_test_console: simple addresses (input 0, outputs from 0x2000). Address 0 reads as unlinked. The
    outputs read 6 bits off are legal too (0x80, ...): where they then overlap (several outputs 64 bytes apart),
    the 4-byte reading, which does not, is named byte_aligned; a lone output is LINKED-looking with a note."""
    exe, fields, addresses, dump, result = _driver_check(shared_data / name, driver.add_model_addresses)
    packages = _packages(shared_data / name)
    (unlinked,) = [f for f in result.findings if f["kind"] == "unlinked"]
    assert sorted(unlinked["names"]) == sorted(layer.name for layer in exe.input_layers)
    outputs = [layer.name for layer in exe.output_layers]
    aligned = {f["name"]: f for f in result.findings if f["kind"] == "byte_aligned"}
    if len(outputs) > 1:
        assert set(aligned) == set(outputs) and {f["reason"] for f in aligned.values()} == {"overlap"}
        for layer in outputs:
            f = next(f for f in fields if f.name == layer)
            assert aligned[layer]["meant"] == hex(_meant(exe, f, addresses))
        assert not [f for f in result.findings if f["kind"] == "aliased"]
        assert result.notes == ()
    else:
        (layer,) = outputs
        assert aligned == {}
        (note,) = result.notes
        assert (note["name"], note["address"], note["as_bytes"]) == (layer, hex(0x2000 >> 6), hex(0x2000))
        # --expect settles it either way
        meant = lk.check(packages, dump, expect=[f"output:{layer}=0x2000"])
        assert [f["reason"] for f in meant.findings if f["kind"] == "byte_aligned"] == ["expected"]
        right = lk.check(packages, dump, expect=[f"output:{layer}=0x80"])
        assert right.notes == () and not [f for f in right.findings if f["kind"] == "byte_aligned"]


@pytest.mark.parametrize("space", ["extended", "simple"])
@pytest.mark.parametrize("name", REAL)
def test_libedgetpus_link_at_legal_addresses_is_linked(shared_data, name, space):
    """`forensics link` and the bit loop agree byte for byte at legal addresses (page-aligned or a 64-byte offset),
    and the check of either is LINKED, exit 0, with no finding."""
    packages = _packages(shared_data / name)
    rng = random.Random(f"{name}/{space}")
    for exe in packages[0].executables:
        layout = Layout(rng, space)
        inputs, outputs = layer_addresses(exe, layout)
        parameter = layout.next(exe.parameters_size) if exe.parameters_size else None
        ours = lk.link(exe, 0, inputs=inputs, outputs=outputs, parameter=parameter).data
        assert ours == reference_link(bytes(exe.bitstreams[0]), _fields(exe), inputs, outputs, parameter, None)
        result = lk.check(packages, ours)
        assert result.verdict == lk.LINKED and result.exit_code == 0 and result.findings == ()
        assert all(b["legal"] for b in result.buffers if b["state"] == "linked")


@pytest.mark.parametrize("name", REAL)
def test_the_drivers_addresses_written_bit_exact(shared_data, name):
    """The fix: the console's own addresses linked with the bit-exact write. Only the one input address every
    input layer gets is left (aliased), with no byte_aligned or illegal_address."""
    packages = _packages(shared_data / name)
    exe = packages[0].executables[0]
    addresses = driver.console_addresses(exe, _has_caching(packages))
    inputs = {layer.name: [addresses["input_va"]] for layer in exe.input_layers}
    layers = [(layer.name, layer.size_bytes) for layer in exe.output_layers]
    outputs = {n: [driver.output_address(layers, n, addresses["output_va"])] for n, _ in layers}
    dump = reference_link(bytes(exe.bitstreams[0]), _fields(exe), inputs, outputs, None, None)
    result = lk.check(packages, dump)
    assert {f["kind"] for f in result.findings} <= {"aliased"}
    assert bool(result.findings) == (len(exe.input_layers) > 1)
    assert result.notes == ()


# --- DWN1 models built here -------------------------------------------------------------------------------------

def _real_like(path):
    """A model laid out as the real ones (tests/link's tiny model of dumps/make_link_dumps)."""
    import sys

    from tests.conftest import REPO

    sys.path.insert(0, str(REPO / "dumps"))
    try:
        import make_link_dumps
    finally:
        sys.path.remove(str(REPO / "dumps"))
    path.write_bytes(dwn1.model(make_link_dumps.executables()))
    return _packages(path)


def test_the_drivers_link_of_a_model_built_here(tmp_path):
    packages = _real_like(tmp_path / "tiny.tflite")
    exe = packages[0].executables[0]
    fields = _fields(exe)
    dump = driver.driver_link(exe, fields, driver.console_addresses(exe, True))
    result = lk.check(packages, dump)
    aligned = {(f["buffer"], f["name"]) for f in result.findings if f["kind"] == "byte_aligned"}
    assert aligned == {("input", layer.name) for layer in exe.input_layers} | {
        ("output", layer.name) for layer in exe.output_layers} | {("parameter", "parameter")}
    # the parameter fields of an executable without parameters: libedgetpu leaves them, the driver wrote them;
    # named byte_aligned (how they were written), no illegal_address (libedgetpu maps no buffer there)
    assert "parameter" not in {f["buffer"] for f in result.findings if f["kind"] == "illegal_address"}
    assert result.addresses["parameter"] == hex(driver.CONSOLE["param"])


def test_the_small_model_with_random_instruction_bits(tmp_path):
    """Fields at every bit phase over random instruction bits: the console's link is named through the bits it
    overwrites or the address format, for every input and output."""
    path = tmp_path / "small.tflite"
    path.write_bytes(dwn1.model(dwn1.small_executables()))
    packages = _packages(path)
    exe = packages[0].executables[0]
    fields = _fields(exe)
    dump = driver.driver_link(exe, fields, driver.console_addresses(exe, True))
    result = lk.check(packages, dump)
    named = {f["name"] for f in result.findings if f["kind"] == "byte_aligned"}
    assert {"in", "out/a;fused", "scores"} <= named
    for f in result.findings:
        if f["kind"] == "byte_aligned" and f["buffer"] in ("input", "output"):
            for x in f["fields"]:
                field = next(g for g in fields if g.offset_bit == x["offset_bit"])
                address = _meant(exe, field, driver.console_addresses(exe, True))
                half = address & 0xFFFFFFFF if x["position"] == "LOWER_32BIT" else address >> 32
                assert int(x["meant"], 16) == half
