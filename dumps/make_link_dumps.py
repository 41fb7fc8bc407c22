"""Regenerate dumps/link (and the package's copy): a tiny Edge TPU model and the instruction bitstreams two drivers linked for it.

The model mirrors the SSD MobileNet v1 segment's patch tables: every field at bit 6 of its byte, over
instruction bits that are 0 (as in all four real Edge TPU models we have: a byte-aligned write of a 64-byte aligned
address changes no bit outside the fields), two input layers with TFLite's long fused names, two output layers
(Squeeze1, convert_scores) and a PARAMETER_CACHING executable; the rest of the bitstream is pseudo-random. It is
built with the tests' DWN1 builder (tests/link/dwn1.py).

- `libedgetpu_0_0.bin`, `libedgetpu_1_0.bin`: executables 0 and 1 linked the way libedgetpu links them (32 bits
  from offset_bit, LSB first: a plain bit loop here) at legal extended addresses;
- `seed_driver_0_0.bin`, `seed_driver_1_0.bin`: the same linked by the story's driver (PatchVAs and
  PatchParamBitstreamVAs with npu_test_console's addresses: tests/link/driver.py, from the driver's source).

docs/link.md walks the seed driver's from `forensics link --check` to the fix. Run from the repository root:
    python dumps/make_link_dumps.py [--check]
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tests.link import driver, dwn1  # noqa: E402

OUT = os.path.join(HERE, "link")
PACKAGE_COPY = os.path.join(os.path.dirname(HERE), "forensics", "data", "dumps", "link")  # as make_dumps.py's
INPUTS = [("FeatureExtractor/MobilenetV1/Conv2d_11_pointwise/Relu6;"
           "FeatureExtractor/MobilenetV1/Conv2d_11_pointwise/BatchNorm_Fold/bias", 184832),
          ("FeatureExtractor/MobilenetV1/Conv2d_13_pointwise/Relu6;"
           "FeatureExtractor/MobilenetV1/Conv2d_13_pointwise/BatchNorm_Fold/bias", 102400)]
OUTPUTS = [("Squeeze1", 7672), ("convert_scores", 176368)]
TOKEN = 0xAA514B815318EA97
# libedgetpu's link: extended addresses, page-aligned or (a tensor inside a mapped page) 64-byte aligned
LIBEDGETPU = {INPUTS[0][0]: 0x8000000000400040, INPUTS[1][0]: 0x8000000000440000,
              "Squeeze1": 0x8000000000480000, "convert_scores": 0x8000000000482000}
PARAMETERS = 0x8000000000000000


def _fields_at(pairs) -> list:
    """(desc, name, upper bit): each buffer's UPPER_32BIT field, then its LOWER_32BIT one 128 bits on."""
    out = []
    for desc, name, bit in pairs:
        out += [dwn1.Fld(desc, dwn1.UPPER, bit, name), dwn1.Fld(desc, dwn1.LOWER, bit + 128, name)]
    return out


def _compiled(rng, size: int, fields) -> bytes:
    """Pseudo-random instructions with each field's 5 bytes 0: the field, and the instruction bits around it."""
    data = bytearray(rng.integers(0, 256, size, dtype=np.uint8).tobytes())
    for f in fields:
        b = f.offset_bit // 8
        data[b:b + 5] = bytes(5)
    return bytes(data)


def executables() -> list:
    rng = np.random.default_rng(23)
    fields = [dwn1.Fld(dwn1.PARAMETER, dwn1.LOWER, 582), dwn1.Fld(dwn1.PARAMETER, dwn1.UPPER, 710),
              dwn1.Fld(dwn1.SCRATCH, dwn1.LOWER, 838), dwn1.Fld(dwn1.SCRATCH, dwn1.UPPER, 966)]
    fields += _fields_at([(dwn1.INPUT, INPUTS[0][0], 8902), (dwn1.INPUT, INPUTS[1][0], 9670),
                          (dwn1.OUTPUT, "Squeeze1", 10054), (dwn1.OUTPUT, "convert_scores", 12102)])
    exe0 = dwn1.Exe(2, [(_compiled(rng, 1600, fields), fields)], inputs=INPUTS, outputs=OUTPUTS, token=TOKEN)
    cache_fields = [dwn1.Fld(dwn1.PARAMETER, dwn1.LOWER, 582), dwn1.Fld(dwn1.PARAMETER, dwn1.UPPER, 710)]
    exe1 = dwn1.Exe(1, [(_compiled(rng, 512, cache_fields), cache_fields)],
                    parameters=rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(), token=TOKEN)
    return [exe0, exe1]


class _Row:
    """A patch-table row as the driver's arithmetic reads it (desc and position spelled as executable.fbs)."""

    DESC = {dwn1.OUTPUT: driver.OUTPUT, dwn1.INPUT: driver.INPUT, dwn1.PARAMETER: driver.PARAMETER,
            dwn1.SCRATCH: driver.SCRATCH}

    def __init__(self, f):
        self.desc, self.name, self.offset_bit = self.DESC[f.desc], f.name, f.offset_bit
        self.position = "LOWER_32BIT" if f.position == dwn1.LOWER else "UPPER_32BIT"


def libedgetpu_link(data: bytes, fields, addresses: dict) -> bytes:
    """32 bits from offset_bit, LSB first, for each field whose buffer has an address (others as compiled)."""
    bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
    for f in fields:
        key = f.name if f.desc in (dwn1.INPUT, dwn1.OUTPUT) else f.desc
        if key in addresses:
            address = addresses[key]
            value = address & 0xFFFFFFFF if f.position == dwn1.LOWER else address >> 32
            bits[f.offset_bit:f.offset_bit + 32] = [(value >> k) & 1 for k in range(32)]
    return np.packbits(bits, bitorder="little").tobytes()


def files() -> dict:
    exes = executables()
    data, fields = exes[0].bitstreams[0]
    cache, cache_fields = exes[1].bitstreams[0]
    seed = driver.CONSOLE  # the model has a caching executable and no scratch
    return {"tiny_edgetpu.tflite": dwn1.model(exes),
            "libedgetpu_0_0.bin": libedgetpu_link(data, fields, LIBEDGETPU),
            "libedgetpu_1_0.bin": libedgetpu_link(cache, cache_fields, {dwn1.PARAMETER: PARAMETERS}),
            "seed_driver_0_0.bin": driver.patch_vas(data, [_Row(f) for f in fields], OUTPUTS, seed["input"],
                                                    seed["output"], seed["param"], 0),
            "seed_driver_1_0.bin": driver.patch_param_bitstream_vas(cache, [_Row(f) for f in cache_fields],
                                                                    seed["param"])}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="compare with the files on disk instead of writing")
    args = parser.parse_args(argv)
    stale = []
    for out in (OUT, PACKAGE_COPY):
        for name, blob in files().items():
            path = os.path.join(out, name)
            if args.check:
                if not os.path.exists(path) or open(path, "rb").read() != blob:
                    stale.append(os.path.relpath(path))
                continue
            os.makedirs(out, exist_ok=True)
            with open(path, "wb") as fh:
                fh.write(blob)
            print(f"wrote {os.path.relpath(path)} ({len(blob):,} bytes)")
    if stale:
        print(f"stale: {', '.join(stale)} (run python dumps/make_link_dumps.py)")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
