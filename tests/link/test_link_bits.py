"""Linking against an independent implementation: libedgetpu's CopyUint32 rule as a plain loop over numpy bits.

The reference here never calls forensics.link.bitstream: it unpacks the bitstream to bits (LSB first in each byte),
sets bit offset_bit + k to bit k of the value, and packs it back; the order of the buffers is
instruction_buffers.cc's (scratch, parameter, inputs, outputs).
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from forensics.link import bitstream as lk
from forensics.core.errors import FormatError, InputError
from forensics.model.tflite.edgetpu import read_packages
from forensics.model.tflite.model import open_model
from tests.link import dwn1

REAL = ["mobilenet_v1_0.25_128_quant_edgetpu.tflite", "split_concat_edgetpu.tflite",
        "ssd_mobilenet_v1_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite",
        "ssd_mobilenet_v2_coco_quant_postprocess_segment_1_of_2_edgetpu.tflite"]
KIND = {"BASE_ADDRESS_INPUT_ACTIVATION": "input", "BASE_ADDRESS_OUTPUT_ACTIVATION": "output",
        "BASE_ADDRESS_PARAMETER": "parameter", "BASE_ADDRESS_SCRATCH": "scratch"}


def reference_link(bitstream: bytes, fields, inputs, outputs, parameter, scratch) -> bytes:
    bits = np.unpackbits(np.frombuffer(bitstream, np.uint8), bitorder="little").copy()

    def put(f, address):
        value = address & 0xFFFFFFFF if f.position == "LOWER_32BIT" else address >> 32
        for k in range(32):
            bits[f.offset_bit + k] = (value >> k) & 1

    for kind, address in (("scratch", scratch), ("parameter", parameter)):
        if address is not None:
            for f in fields:
                if KIND[f.desc] == kind:
                    put(f, address)
    for kind, given in (("input", inputs), ("output", outputs)):
        for name, addrs in given.items():
            for f in fields:
                if KIND[f.desc] == kind and f.name == name:
                    put(f, addrs[f.batch])
    return np.packbits(bits, bitorder="little").tobytes()


def _random_link(exe, k, rng):
    inputs = {layer.name: [rng.randrange(1 << 32, 1 << 64) for _ in range(exe.batch_size)]
              for layer in exe.input_layers}
    outputs = {layer.name: [rng.randrange(1 << 32, 1 << 64) for _ in range(exe.batch_size)]
               for layer in exe.output_layers}
    return inputs, outputs, rng.randrange(1 << 32, 1 << 64), rng.randrange(1 << 32, 1 << 64)


def _small(tmp_path):
    path = tmp_path / "small.tflite"
    path.write_bytes(dwn1.model(dwn1.small_executables()))
    return path, read_packages(open_model(path))


def test_every_bit_phase_matches_the_bit_loop():
    rng = np.random.default_rng(1)
    for size in (5, 6, 9):
        for offset_bit in range(0, size * 8 - 31):
            data = rng.integers(0, 256, size, dtype=np.uint8)
            value = int(rng.integers(0, 1 << 32, dtype=np.uint64))
            ours = bytearray(data.tobytes())
            lk.write_u32(ours, offset_bit, value)
            bits = np.unpackbits(data, bitorder="little")
            bits[offset_bit:offset_bit + 32] = [(value >> k) & 1 for k in range(32)]
            assert bytes(ours) == np.packbits(bits, bitorder="little").tobytes(), (size, offset_bit)
            assert lk.read_u32(bytes(ours), offset_bit) == value


def test_a_write_that_does_not_fit_is_refused():
    buf = bytearray(8)
    lk.write_u32(buf, 32, 0xFFFFFFFF)  # the last 32 bits fit exactly
    assert buf == bytearray(4) + b"\xff" * 4
    for offset_bit in (33, 64, -1):
        with pytest.raises(FormatError):
            lk.write_u32(bytearray(8), offset_bit, 1)


def test_small_model_links_as_the_reference(tmp_path):
    _, packages = _small(tmp_path)
    rng = random.Random(5)
    exe = packages[0].executables[0]
    for k in range(len(exe.bitstreams)):
        for _ in range(20):
            inputs, outputs, parameter, scratch = _random_link(exe, k, rng)
            result = lk.link(exe, k, inputs=inputs, outputs=outputs, parameter=parameter, scratch=scratch)
            fields = [f for f in exe.field_offsets if f.bitstream == k]
            assert result.data == reference_link(bytes(exe.bitstreams[k]), fields, inputs, outputs, parameter,
                                                 scratch)


@pytest.mark.parametrize("name", REAL)
def test_real_models_link_as_the_reference(shared_data, name):
    packages = read_packages(open_model(shared_data / name))
    rng = random.Random(name)
    for exe in packages[0].executables:
        for k in range(len(exe.bitstreams)):
            inputs, outputs, parameter, scratch = _random_link(exe, k, rng)
            result = lk.link(exe, k, inputs=inputs, outputs=outputs, parameter=parameter, scratch=scratch)
            fields = [f for f in exe.field_offsets if f.bitstream == k]
            expected = reference_link(bytes(exe.bitstreams[k]), fields, inputs, outputs, parameter, scratch)
            assert result.data == expected
            assert result.data != bytes(exe.bitstreams[k])
            # only the fields' bits changed
            differ = np.flatnonzero(np.unpackbits(np.frombuffer(result.data, np.uint8) ^
                                                  np.frombuffer(exe.bitstreams[k], np.uint8), bitorder="little"))
            inside = np.zeros(len(result.data) * 8, bool)
            for f in fields:
                inside[f.offset_bit:f.offset_bit + 32] = True
            assert inside[differ].all()


def test_missing_and_unknown_names(tmp_path):
    _, packages = _small(tmp_path)
    exe = packages[0].executables[0]
    with pytest.raises(InputError, match="need addresses for: in; scores"):
        lk.link(exe, 0, outputs={"out/a;fused": [1 << 40, 2 << 40]})
    with pytest.raises(InputError, match=r"scores \(batch 1: 1 address"):
        lk.link(exe, 0, inputs={"in": [1, 2]}, outputs={"out/a;fused": [1, 2], "scores": [3]})
    with pytest.raises(InputError, match="no output layer 'nope'"):
        lk.link(exe, 0, outputs={"nope": [1]})
    partial = lk.link(exe, 0, outputs={"scores": [1 << 40, 1 << 41]}, allow_unlinked=True)
    fields = [f for f in exe.field_offsets if f.bitstream == 0]
    assert partial.data == reference_link(bytes(exe.bitstreams[0]), fields, {}, {"scores": [1 << 40, 1 << 41]},
                                          None, None)
    assert {f["name"] for f in partial.unlinked if f["buffer"] in ("input", "output")} == {"in", "out/a;fused"}


@pytest.mark.parametrize("text,value", [("0x1_0000_0000", 1 << 32), ("4294967296", 1 << 32),
                                        ("0XFFFFFFFFFFFFFFFF", (1 << 64) - 1), ("0", 0)])
def test_addresses_parse(text, value):
    assert lk.parse_address(text) == value


@pytest.mark.parametrize("text", ["0x1_0000_0000_0000_0000", "-1", "0xZZ", "12ab", "", "1e9"])
def test_bad_addresses(text):
    with pytest.raises(InputError):
        lk.parse_address(text)


def test_expect_splits_at_the_first_colon_and_the_last_equals():
    e = lk.parse_expect("output:a/b;c=d:e=0x10")
    assert (e.kind, e.name, e.address) == ("output", "a/b;c=d:e", 0x10)
    assert lk.parse_expect("parameter=0x20").name is None
    for bad in ("output=1", "weights:x=1", "input:x", "output:x=0xZZ"):
        with pytest.raises(InputError):
            lk.parse_expect(bad)


def test_the_library_takes_address_strings(tmp_path):
    _, packages = _small(tmp_path)
    exe = packages[0].executables[0]
    as_text = lk.link(exe, 0, inputs={"in": ["0x1_0000_0000", "4294967297"]},
                      outputs={"out/a;fused": ["0x10", "0x20"], "scores": ["0x30", "0x40"]}, scratch="0x50")
    as_int = lk.link(exe, 0, inputs={"in": [1 << 32, (1 << 32) + 1]},
                     outputs={"out/a;fused": [0x10, 0x20], "scores": [0x30, 0x40]}, scratch=0x50)
    assert as_text.data == as_int.data
    with pytest.raises(InputError, match="not an address"):
        lk.link(exe, 0, inputs={"in": ["x", 1]}, allow_unlinked=True)
