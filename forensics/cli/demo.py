"""`forensics demo`: the story on the bundled dumps, step by step, in Python (no bash on Windows)."""

from __future__ import annotations

import io
import os
from pathlib import Path

from forensics.errors import InputError

# (what the step asks, expected exit code, arguments), in the order of the README's story.
STEPS = (
    ("1. Are the inputs even the same?", 0, ["crc", "dumps/libedgetpu/input.bin", "dumps/ours/input.bin"]),
    ("2. Did the chip write the same scores through both drivers?", 0,
     ["diff", "dumps/libedgetpu/convert_scores.bin", "dumps/ours/convert_scores.bin"]),
    ("3. The first 256 bytes repeat one record. Which anchors do not?", 0,
     ["anchors", "dumps/ours/convert_scores.bin", "--nonuniform", "--deps", "dumps/face_ssd"]),
    ("4. Decode them as TFLite_Detection_PostProcess would (anchors + options in dumps/face_ssd)", 0,
     ["decode", "--deps", "dumps/face_ssd", "dumps/ours/Squeeze1.bin", "dumps/ours/convert_scores.bin",
      "--image-size", "640x480"]),
    ("5. What a real bug looks like: a DMA that stopped early (0xCC prefill left) and a row-stride bug", 1,
     ["diff", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin", "--limit", "3"]),
    (None, 1, ["coverage", "dumps/broken/convert_scores.bin", "--sentinel", "cc"]),
    (None, 1, ["crc", "dumps/libedgetpu/input.bin", "dumps/broken/input.bin", "--chunk", "960"]),
    (None, 1, ["diagnose", "dumps/libedgetpu/convert_scores.bin", "dumps/broken/convert_scores.bin"]),
)


def bundled_root() -> Path:
    """The directory holding `dumps/` (the repository root of a clone)."""
    root = Path(__file__).resolve().parent.parent.parent
    if not (root / "dumps" / "ours" / "convert_scores.bin").is_file():
        raise InputError("the bundled dumps (dumps/ours, dumps/libedgetpu, dumps/broken) are not here: "
                         "run the demo from a clone of the repository", str(root / "dumps"))
    return root


def run_demo(out, *, json: bool = False) -> int:
    """Run every step against the bundled dumps; exit 0 when each step exits as the story expects."""
    from forensics.cli import main

    root = bundled_root()
    old = os.getcwd()
    results = []
    try:
        os.chdir(root)
        for question, expected, argv in STEPS:
            if json:
                sink_out, sink_err = io.StringIO(), io.StringIO()
                code = main(argv + ["--json"], stdout=sink_out, stderr=sink_err)
            else:
                if question:
                    out.stdout.write(f"\n{question}\n")
                out.stdout.write(f"\n$ forensics {' '.join(argv)}\n")
                out.stdout.flush()
                extra = ["--width", str(out.width)] if out.width else []
                code = main(argv + extra + ([] if out.color is None else ["--no-color"] if not out.color
                                            else ["--color"]), stdout=out.stdout, stderr=out.stderr)
            results.append({"step": question, "command": "forensics " + " ".join(argv), "expected_exit": expected,
                            "exit": code, "ok": code == expected})
            if code != expected and not json:
                out.error(f"demo: expected exit {expected} from 'forensics {' '.join(argv)}', got {code}")
    finally:
        os.chdir(old)
    ok = all(r["ok"] for r in results)
    if json:
        out.json({"steps": results, "ok": ok})
    return 0 if ok else 1
