"""Device address 0 on the real models: the story's add_model_test_console maps its input at device VA 0, which
PatchVAs writes over compiled zeros. The bits cannot tell that from a field never linked; `--expect` can, and
then the buffer is linked at 0 (and judged with the others: the outputs it overlaps are aliased). Expected answers
from the driver's arithmetic (tests/link/driver.py) and the layers' sizes, never from forensics' linker."""

from __future__ import annotations

import json

import pytest

from forensics.link import bitstream as lk
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from tests.link import driver
from tests.link.test_link_bits import KIND, REAL


def _setup(path):
    packages = read_packages(open_model(path))
    exe = packages[0].executables[0]
    fields = [f for f in exe.field_offsets if f.bitstream == 0]
    has_caching = any(e.type == "PARAMETER_CACHING" for e in packages[0].executables)
    addresses = driver.add_model_addresses(exe, has_caching)
    return packages, exe, fields, addresses, driver.driver_link(exe, fields, addresses)


@pytest.mark.parametrize("name", REAL)
def test_the_compiled_input_fields_are_zero(shared_data, name):
    """The fact the rest rests on: every real model's input fields are compiled as 0 (device address 0)."""
    _, exe, fields, _, dump = _setup(shared_data / name)
    inputs = [f for f in fields if KIND[f.desc] == "input"]
    assert inputs and all(driver.chip_reads(bytes(exe.bitstreams[0]), f.offset_bit) == 0 for f in inputs)
    assert all(driver.chip_reads(dump, f.offset_bit) == 0 for f in inputs)


@pytest.mark.parametrize("name", REAL)
def test_expect_address_0_settles_an_input_linked_at_0(shared_data, name):
    packages, exe, fields, addresses, dump = _setup(shared_data / name)
    bare = lk.check(packages, dump)
    (unlinked,) = [f for f in bare.findings if f["kind"] == "unlinked"]
    assert sorted(unlinked["names"]) == sorted(layer.name for layer in exe.input_layers)
    expect = [f"input:{layer.name}=0" for layer in exe.input_layers]
    result = lk.check(packages, dump, expect=expect)
    assert not [f for f in result.findings if f["kind"] in ("unlinked", "unexpected")]
    assert result.addresses["input"] == {layer.name: ["0x0"] for layer in exe.input_layers}
    # the add_model console's input at 0 and first output at 0x2000: an input larger than 0x2000 bytes runs into
    # it, whichever way the output was written (read 6 bits off it is 0x80, as bytes 0x2000)
    aliased = [set(f["buffers"]) for f in result.findings if f["kind"] == "aliased"]
    big = [layer for layer in exe.input_layers if layer.size_bytes > addresses["output_va"]]
    assert bool(big) == ({"input", "output"} in aliased)
    # several inputs at one address: the driver's one input address for every input layer
    if len(exe.input_layers) > 1:
        assert {"input"} in aliased


def test_expect_0_on_the_cli_one_verdict_line(shared_data, cli, tmp_path):
    """mobilenet: with the input expected at 0 the only finding is the input/output overlap; verdict line and
    --json agree, exit 1. Without --expect the unlinked finding says how to settle it."""
    model = shared_data / REAL[0]
    _, exe, _, _, dump = _setup(model)
    path = tmp_path / "linked.bin"
    path.write_bytes(dump)
    bare = cli("link", model, "--check", path)
    assert bare.code == 1 and "--expect KIND:NAME=0" in " ".join(bare.out.split())
    argv = ["link", model, "--check", path, "--expect", "input:0=0"]
    text, doc = cli(*argv), json.loads(cli(*argv, "--json").out)
    assert text.code == doc["exit_code"] == 1 and doc["verdict"] == "MISLINKED"
    assert [f["kind"] for f in doc["findings"]] == ["aliased"]
    assert text.out.splitlines()[0].startswith(f"{doc['verdict']} | ")
