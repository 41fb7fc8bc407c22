"""Regenerate the bundled dumps: a reconstruction of the story's buffers from its published numbers.

Deterministic to the byte on any machine (pure Python pseudo-random bytes from BLAKE2b, no numpy RNG):
`python dumps/make_dumps.py` rewrites dumps/{libedgetpu,ours,broken}/ and the package's copy of them
(forensics/data/dumps/), and the test suite checks that the committed files equal a fresh run. See dumps/README.md for what each file is.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import sys

NUM_ANCHORS = 2034              # the 320x320 face SSD: 20x20x3 + 10x10x6 + 5x5x6 + 3x3x6 + 2x2x6 + 1x1x6
INPUT_SHAPE = (320, 320, 3)
BOXES_SCALE, BOXES_ZERO_POINT = 0.10822763, 144
SCORES_SCALE, SCORES_ZERO_POINT = 0.00390625, 0

# convert_scores as the chip writes it: [background, face, pad, pad] per anchor (z=2 padded to a 4-byte lane).
NO_FACE = bytes.fromhex("ff008080")
SCORE_RECORDS = {
    143: "ff018080", 146: "ff018080",
    200: "fb058080", 203: "01ff8080", 206: "02fe8080",
    263: "80808080", 266: "80808080",
    1278: "f60a8080", 1284: "f60a8080",
}
# Squeeze1 (box deltas dy, dx, dh, dw): published records; the rest are small deltas around the zero point.
BOX_RECORDS = {0: "9488734b", 203: "929c8ba4"}

BROKEN_FROM_ANCHOR = 1500       # broken/: the DMA stopped here; the rest kept the driver's 0xCC prefill
BROKEN_INPUT_ROW = 117          # broken/: this image row holds the previous row's bytes (a row-stride bug)


def _stream(label: str, n: int) -> bytes:
    """n pseudo-random bytes, the same on every machine and Python version."""
    out = bytearray()
    counter = 0
    while len(out) < n:
        out += hashlib.blake2b(f"{label}:{counter}".encode(), digest_size=64).digest()
        counter += 1
    return bytes(out[:n])


def convert_scores() -> bytes:
    data = bytearray(NO_FACE * NUM_ANCHORS)
    for anchor, record in SCORE_RECORDS.items():
        data[anchor * 4:anchor * 4 + 4] = bytes.fromhex(record)
    return bytes(data)


def squeeze1() -> bytes:
    noise = _stream("Squeeze1", NUM_ANCHORS * 4)
    # Deltas near the zero point 144: a spread of about +-2 (in units of scale 0.108), like a trained regressor.
    data = bytearray(min(255, max(0, BOXES_ZERO_POINT + (b % 41) - 20)) for b in noise)
    for anchor, record in BOX_RECORDS.items():
        data[anchor * 4:anchor * 4 + 4] = bytes.fromhex(record)
    return bytes(data)


def input_image() -> bytes:
    """A 320x320 RGB test card: a gradient with a bright ellipse where the story's face is (anchor 203)."""
    h, w, _ = INPUT_SHAPE
    noise = _stream("input", h * w)
    data = bytearray(h * w * 3)
    for y in range(h):
        for x in range(w):
            i = (y * w + x) * 3
            inside = ((x - 125) / 35.0) ** 2 + ((y - 58) / 40.0) ** 2 <= 1.0
            base = 200 if inside else (x * 255) // w
            data[i] = base
            data[i + 1] = 170 if inside else (y * 255) // h
            data[i + 2] = (140 if inside else 96) + noise[y * w + x] % 16
    return bytes(data)


def sidecar(tensor: str, source: str, **fields) -> dict:
    return {"tensor": tensor, "source": source, **fields}


def build() -> dict[str, bytes | dict]:
    """Every file of dumps/ as {relative path: bytes or sidecar dict}."""
    scores, boxes, image = convert_scores(), squeeze1(), input_image()
    row = INPUT_SHAPE[1] * INPUT_SHAPE[2]
    broken_image = bytearray(image)
    broken_image[BROKEN_INPUT_ROW * row:(BROKEN_INPUT_ROW + 1) * row] = image[(BROKEN_INPUT_ROW - 1) * row:
                                                                            BROKEN_INPUT_ROW * row]
    broken_scores = bytearray(scores)
    broken_scores[BROKEN_FROM_ANCHOR * 4:] = b"\xcc" * (len(scores) - BROKEN_FROM_ANCHOR * 4)

    files: dict[str, bytes | dict] = {}
    for source, score_bytes, image_bytes in (("libedgetpu", scores, image), ("ours", scores, image),
                                             ("broken", bytes(broken_scores), bytes(broken_image))):
        files[f"{source}/convert_scores.bin"] = score_bytes
        files[f"{source}/convert_scores.json"] = sidecar(
            "convert_scores", source, shape=[1, NUM_ANCHORS, 2], dtype="uint8", layout="raw", record_size=4,
            fields=["background", "face", "pad", "pad"], pad_lanes=[2, 3],
            scale=SCORES_SCALE, zero_point=SCORES_ZERO_POINT)
        files[f"{source}/Squeeze1.bin"] = boxes
        files[f"{source}/Squeeze1.json"] = sidecar(
            "Squeeze1", source, shape=[1, NUM_ANCHORS, 4], dtype="uint8", layout="tensor", record_size=4,
            fields=["dy", "dx", "dh", "dw"], scale=BOXES_SCALE, zero_point=BOXES_ZERO_POINT)
        files[f"{source}/input.bin"] = image_bytes
        files[f"{source}/input.json"] = sidecar(
            "input", source, shape=[1, *INPUT_SHAPE], dtype="uint8", record_size=INPUT_SHAPE[1] * INPUT_SHAPE[2])
    return files


def write(directory: str, files: dict | None = None) -> list[str]:
    """Write `files` (default: this script's build()) under `directory`, each by a rename; JSON values as JSON."""
    written = []
    for rel, content in (build() if files is None else files).items():
        path = os.path.join(directory, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        data = content if isinstance(content, bytes) else (json.dumps(content, indent=2) + "\n").encode()
        tmp = path + ".tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        written.append(rel)
    return written


HERE = os.path.dirname(os.path.abspath(__file__))
# The copy the package ships (forensics/data/dumps: `forensics demo` and the notebook run on it wherever the package
# is installed); the generators write it with dumps/ and the tests check that both are what they make.
PACKAGE_COPY = os.path.join(os.path.dirname(HERE), "forensics", "data", "dumps")


def main(argv=None, build_files=None, description: str | None = None) -> int:
    """The generator's command line: `-o DIR` (default: this dumps/ folder, and for the story's own files also the
    package's copy); `build_files()` the files."""
    parser = argparse.ArgumentParser(description=description or __doc__.splitlines()[0])
    parser.add_argument("-o", "--out", default=None,
                        help="directory to write into (default: this dumps/ folder and the package's copy)")
    args = parser.parse_args(argv)
    files = build_files() if build_files else build()
    places = [args.out] if args.out else [HERE] + ([PACKAGE_COPY] if build_files is None else [])
    for place in places:
        for rel in write(place, files):
            print(os.path.join(place, rel))
    return 0


if __name__ == "__main__":
    sys.exit(main())
