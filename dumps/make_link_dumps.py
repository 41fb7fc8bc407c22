"""Regenerate dumps/link (and the package's copy): a tiny Edge TPU model and the instruction bitstreams two drivers linked for it.

The model mirrors the SSD segments' patch tables (every field at bit 6 of its byte, two output layers,
Squeeze1 and convert_scores, and a PARAMETER_CACHING executable) over pseudo-random instruction bytes; it is
built with the tests' DWN1 builder (tests/link/dwn1.py). `libedgetpu_0_0.bin` is executable 0 linked the way
libedgetpu links it (32 bits from offset_bit, LSB first: a plain bit loop here), `seed_driver_0_0.bin` the way
the story's driver did (`memcpy(bitstream + offset_bit / 8, &value32, 4)`, one address for both outputs).
docs/link.md walks the second from `forensics link --check` to the fix. Run from the repository root:
    python dumps/make_link_dumps.py [--check]
"""

from __future__ import annotations

import argparse
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))

from tests.link import dwn1  # noqa: E402

OUT = os.path.join(HERE, "link")
PACKAGE_COPY = os.path.join(os.path.dirname(HERE), "forensics", "data", "dumps", "link")  # as make_dumps.py's
INPUT, SQUEEZE, SCORES = "input", "Squeeze1", "convert_scores"
INPUT_ADDRESS, OUTPUT_ADDRESS, SCORES_ADDRESS = 0x1_2340_0000, 0x1_5670_0000, 0x1_5680_0000


def executables() -> list:
    rng = np.random.default_rng(23)
    main = rng.integers(0, 256, 1600, dtype=np.uint8).tobytes()
    fields = [dwn1.Fld(dwn1.PARAMETER, dwn1.LOWER, 582), dwn1.Fld(dwn1.PARAMETER, dwn1.UPPER, 710),
              dwn1.Fld(dwn1.SCRATCH, dwn1.LOWER, 838), dwn1.Fld(dwn1.SCRATCH, dwn1.UPPER, 966),
              dwn1.Fld(dwn1.INPUT, dwn1.UPPER, 8902, INPUT), dwn1.Fld(dwn1.INPUT, dwn1.LOWER, 9030, INPUT),
              dwn1.Fld(dwn1.OUTPUT, dwn1.UPPER, 10054, SQUEEZE), dwn1.Fld(dwn1.OUTPUT, dwn1.LOWER, 10182, SQUEEZE),
              dwn1.Fld(dwn1.OUTPUT, dwn1.UPPER, 12102, SCORES), dwn1.Fld(dwn1.OUTPUT, dwn1.LOWER, 12230, SCORES)]
    exe0 = dwn1.Exe(2, [(main, fields)], inputs=[(INPUT, 102400)], outputs=[(SQUEEZE, 7672), (SCORES, 176368)],
                    token=0xAA514B815318EA97)
    cache = rng.integers(0, 256, 512, dtype=np.uint8).tobytes()
    cache_fields = [dwn1.Fld(dwn1.PARAMETER, dwn1.LOWER, 582), dwn1.Fld(dwn1.PARAMETER, dwn1.UPPER, 710)]
    exe1 = dwn1.Exe(1, [(cache, cache_fields)],
                    parameters=rng.integers(0, 256, 4096, dtype=np.uint8).tobytes(), token=0xAA514B815318EA97)
    return [exe0, exe1]


def _half(field, address: int) -> int:
    return address & 0xFFFFFFFF if field.position == dwn1.LOWER else address >> 32


def libedgetpu_link(data: bytes, fields, addresses: dict) -> bytes:
    bits = np.unpackbits(np.frombuffer(data, np.uint8), bitorder="little")
    for f in fields:
        if f.name in addresses:
            value = _half(f, addresses[f.name])
            bits[f.offset_bit:f.offset_bit + 32] = [(value >> k) & 1 for k in range(32)]
    return np.packbits(bits, bitorder="little").tobytes()


def seed_link(data: bytes, fields) -> bytes:
    buf = bytearray(data)
    for f in fields:
        if f.desc in (dwn1.INPUT, dwn1.OUTPUT):
            address = INPUT_ADDRESS if f.desc == dwn1.INPUT else OUTPUT_ADDRESS
            struct.pack_into("<I", buf, f.offset_bit // 8, _half(f, address))
    return bytes(buf)


def files() -> dict:
    exes = executables()
    data, fields = exes[0].bitstreams[0]
    right = {INPUT: INPUT_ADDRESS, SQUEEZE: OUTPUT_ADDRESS, SCORES: SCORES_ADDRESS}
    cache, cache_fields = exes[1].bitstreams[0]
    return {"tiny_edgetpu.tflite": dwn1.model(exes),
            "libedgetpu_0_0.bin": libedgetpu_link(data, fields, right),
            "libedgetpu_1_0.bin": libedgetpu_link(cache, [f for f in cache_fields], {None: 0x1_8000_0000}),
            "seed_driver_0_0.bin": seed_link(data, fields)}


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
