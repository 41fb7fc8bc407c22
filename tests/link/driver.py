"""The story's driver (github wangki-kyu/npu_driver) as arithmetic, for fixtures: how it links a bitstream and which
device addresses it maps. Written here from the driver's facts, never by calling forensics:

- include/apex_model_fb.hpp `PatchVAs(model, input_va, output_va, param_va, scratch_va)`: for every field of
  executable 0's bitstream 0 (LoadModel keeps those whose 4 bytes fit), the address by description — the one
  input address for every input layer; per output layer `output_va` plus PageAlignUp(size_bytes) of each
  output layer before the one whose name is the field's, in output_layers order (`output_va` when the name is
  not found or that sum is 0); `param_va`; `scratch_va` — its LOWER_32BIT / UPPER_32BIT half, stored as
  4 little-endian bytes at offset_bit / 8 (`memcpy(bitstream + offset_bit / 8, &val, 4)`).
  `PatchParamBitstreamVAs` does the same for executable 1's PARAMETER fields.
- npu_driver/Memory.c `ApexPageTableMap` / `ApexExtMapBuffer`: a device address must be page-aligned; a simple one
  (bit 63 clear) fills chip PTE[VA >> 12 ...], all below PageTableSize (8192, Hardware.h); an extended one
  (bit 63 set) picks subtable (VA >> 21) & 0x1FFF (< 2048, chip PTE[6144 + subtable]) and host index
  (VA >> 12) & 0x1FF, a buffer that crosses a 2 MB subtable continuing in the next.
- The consoles' addresses: npu_test_console.cpp maps everything extended (input 0x8000000000880000, output
  0x8000000000844000, scratch 0x8000000000848000 when the model has scratch, parameters 0x8000000000000000 when it
  has a caching executable); add_model_test_console.cpp simple (input 0, output 0x2000, scratch 0x3000,
  parameters 0).
"""

from __future__ import annotations

import struct

PAGE = 4096
EXT_VA_BIT = 1 << 63
PAGE_TABLE_ENTRIES = 8192
EXTENDED_TABLE_BASE_INDEX = 6144
EXT_SUBTABLES = 2048
PAGES_PER_SUBTABLE = 512

CONSOLE = {"input": EXT_VA_BIT | 0x880000, "output": EXT_VA_BIT | 0x844000, "scratch": EXT_VA_BIT | 0x848000,
           "param": EXT_VA_BIT}
ADD_MODEL = {"input": 0x0, "output": 0x2000, "scratch": 0x3000, "param": 0x0}

INPUT, OUTPUT = "BASE_ADDRESS_INPUT_ACTIVATION", "BASE_ADDRESS_OUTPUT_ACTIVATION"
PARAMETER, SCRATCH = "BASE_ADDRESS_PARAMETER", "BASE_ADDRESS_SCRATCH"


def page_align_up(n: int) -> int:
    return (n + PAGE - 1) & ~(PAGE - 1)


def map_pages(va: int, size: int) -> list:
    """The page-table entries the driver writes for `size` bytes at device address `va`: simple PTE indices,
    or (chip PTE, host index) pairs for an extended address; ValueError where the driver refuses the mapping."""
    if va & (PAGE - 1):
        raise ValueError(f"0x{va:x} is not page-aligned")
    pages = (size + PAGE - 1) // PAGE
    if not va & EXT_VA_BIT:
        start = va >> 12
        if start + pages > PAGE_TABLE_ENTRIES:
            raise ValueError(f"PTE[{start}..{start + pages - 1}] > {PAGE_TABLE_ENTRIES}")
        return list(range(start, start + pages))
    out = []
    while pages:
        subtable, host = (va >> 21) & 0x1FFF, (va >> 12) & 0x1FF
        if subtable >= EXT_SUBTABLES:
            raise ValueError(f"subtable {subtable} out of range")
        chunk = min(pages, PAGES_PER_SUBTABLE - host)
        out += [(EXTENDED_TABLE_BASE_INDEX + subtable, host + i) for i in range(chunk)]
        va, pages = va + (chunk << 12), pages - chunk
    return out


def console_addresses(exe, has_caching: bool) -> dict:
    """npu_test_console's device addresses for a model (scratch and parameters only when it has them)."""
    return {"input_va": CONSOLE["input"], "output_va": CONSOLE["output"],
            "param_va": CONSOLE["param"] if has_caching else 0,
            "scratch_va": CONSOLE["scratch"] if exe.scratch_size_bytes > 0 else 0}


def add_model_addresses(exe, has_caching: bool) -> dict:
    return {"input_va": ADD_MODEL["input"], "output_va": ADD_MODEL["output"],
            "param_va": ADD_MODEL["param"] if has_caching else 0,
            "scratch_va": ADD_MODEL["scratch"] if exe.scratch_size_bytes > 0 else 0}


def output_address(output_layers, name, output_va: int) -> int:
    """PatchVAs' per-output address: output_va + PageAlignUp of each earlier output layer (by name)."""
    va, cur = 0, output_va
    for layer_name, size_bytes in output_layers:
        if layer_name == name:
            va = cur
            break
        cur += page_align_up(size_bytes)
    return va if va != 0 else output_va


def _store(buf: bytearray, field, va: int) -> None:
    val = va & 0xFFFFFFFF if field.position == "LOWER_32BIT" else va >> 32
    struct.pack_into("<I", buf, field.offset_bit // 8, val)


def patch_vas(bitstream: bytes, fields, output_layers, input_va: int, output_va: int, param_va: int = 0,
              scratch_va: int = 0) -> bytes:
    """PatchVAs on a copy of the compiled bitstream. `fields`: the bitstream's patch-table rows (desc, name,
    position, offset_bit); `output_layers`: [(name, size_bytes)] in the executable's order."""
    buf = bytearray(bitstream)
    for f in fields:
        if f.offset_bit // 8 + 4 > len(buf):
            continue
        if f.desc == INPUT:
            va = input_va
        elif f.desc == OUTPUT:
            va = output_address(output_layers, f.name, output_va)
        elif f.desc == PARAMETER:
            va = param_va
        elif f.desc == SCRATCH:
            va = scratch_va
        else:
            continue
        _store(buf, f, va)
    return bytes(buf)


def patch_param_bitstream_vas(bitstream: bytes, fields, param_va: int) -> bytes:
    """PatchParamBitstreamVAs: only the PARAMETER fields of the caching executable's bitstream."""
    buf = bytearray(bitstream)
    for f in fields:
        if f.offset_bit // 8 + 4 <= len(buf) and f.desc == PARAMETER:
            _store(buf, f, param_va)
    return bytes(buf)


def chip_reads(dump: bytes, offset_bit: int) -> int:
    """The 32 bits from `offset_bit`, LSB first: what the chip takes from a field (a plain bit loop)."""
    value = 0
    for k in range(32):
        bit = offset_bit + k
        value |= ((dump[bit // 8] >> (bit % 8)) & 1) << k
    return value


def driver_link(exe, fields, addresses: dict) -> bytes:
    """Executable `exe`'s bitstream 0 as the driver links it with `addresses` (console_addresses' keys)."""
    layers = [(layer.name, layer.size_bytes) for layer in exe.output_layers]
    return patch_vas(bytes(exe.bitstreams[0]), fields, layers, **addresses)
