"""CLI for impact (arguments -> forensics.reports.impact -> render -> exit code)."""

from __future__ import annotations

from forensics.cli import options, show
from forensics.cli.args import cli_type, positive_int

size_wh = cli_type("size")


def cmd_impact(args, out) -> int:
    from forensics import reports

    return show(reports.impact(args.run_a, args.run_b, **options(args, "run_a", "run_b")), args, out)


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "impact", parents=parents, help="which differing anchors change the detections after NMS (or the top-k)",
        description="Decode two runs' SSD outputs (raw, tensor or dequantized stage) with the bit-exact "
                    "TFLite_Detection_PostProcess, match the detections by IoU, and attribute every change (added, "
                    "removed, moved, rescored, relabelled) to the 1-minimal set of differing anchors causing it, by "
                    "substituting B's records into A and decoding again; the rest are harmless. A classifier model "
                    "gets the same over its top-k. Exit 0 no detection changes, 1 some do, 2 error.")
    p.add_argument("run_a", metavar="RUN_A", help="the reference run (e.g. libedgetpu's)")
    p.add_argument("run_b", metavar="RUN_B", help="the run to judge (e.g. your driver's)")
    src = p.add_argument_group("where anchors, options and quantization come from (one of)")
    src.add_argument("--model", metavar="MODEL", help="a .tflite with TFLite_Detection_PostProcess, or a classifier")
    src.add_argument("--deps", metavar="DIR", help="anchors.bin + postprocess.json (the extract format)")
    p.add_argument("--dequantize", choices=("reference", "litert"), default="reference",
                   help="rounding of uint8 -> float: reference (one rounding, default) or litert (LiteRT x86)")
    p.add_argument("--labels", metavar="FILE", help="class names, one per line (line number = class id)")
    p.add_argument("--image", metavar="IMG", help="the original image (image-space boxes; drawn on with --draw)")
    p.add_argument("--image-size", type=size_wh, metavar="WxH", help="the original image's size instead of --image")
    p.add_argument("--input-size", type=size_wh, metavar="WxH",
                   help="the detector's input size: pixels of a move (default: from the model or postprocess.json)")
    p.add_argument("--draw", metavar="OUT.png",
                   help="draw the changed boxes (A's green, B's red) on --image, or a canvas of --image-size or "
                        "the input size")
    p.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                   help="a classifier --model: the top K whose changes are attributed (default 5)")
    p.add_argument("--max-decodes", type=positive_int, default=None, metavar="N",
                   help="at most N substituted decodes in all (default 2000); a search cut short keeps a causing "
                        "set that may not be minimal")
    p.set_defaults(handler=cmd_impact)
