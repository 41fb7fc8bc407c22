"""CLI for model forensics: graph, extract, relayout (arguments -> forensics.reports -> render -> exit code)."""

from __future__ import annotations

from forensics.cli import options, show
from forensics.cli.args import add_slice_flags, cli_type


def cmd_graph(args, out) -> int:
    from forensics import reports

    return show(reports.graph(args.model, **options(args, "model")), args, out)


def cmd_extract(args, out) -> int:
    from forensics import reports

    return show(reports.extract(args.model, **options(args, "model")), args, out)


def cmd_relayout(args, out) -> int:
    from forensics import reports

    return show(reports.relayout(args.input, **options(args, "input")), args, out)


_byte = cli_type("byte_value")  # the library's grammar: forensics.core.options


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "graph", parents=parents, help="a .tflite model's op chain, constants, CPU tail and Edge TPU package",
        description="Show the op chain (tensors with shape, dtype, scale, zero_point), constant tensors with their "
                    "CRC32, the accelerator boundary (which tensors edgetpu-custom-op produces and which CPU ops "
                    "read them), the TFLite_Detection_PostProcess options, and the Edge TPU DWN1 package "
                    "(executables, parameter CRC32, patch table, input/output layers with padded sizes).")
    p.add_argument("model", metavar="MODEL", help=".tflite file")
    p.add_argument("--params-out", metavar="DIR", help="write each executable's parameter blob into DIR")
    p.set_defaults(handler=cmd_graph)

    p = subparsers.add_parser(
        "extract", parents=parents, help="write anchors.bin and postprocess.json for a standalone decoder",
        description="For an SSD-style model with TFLite_Detection_PostProcess: anchors.bin (float32 LE [N,4] "
                    "ycenter,xcenter,h,w; dequantized from uint8 when needed) and postprocess.json (kernel options, "
                    "uint8 box/score quantization, input size, Edge TPU output layouts).")
    p.add_argument("model", metavar="MODEL", help=".tflite file")
    p.add_argument("-o", "--output", required=True, metavar="DIR", help="output directory (created)")
    p.add_argument("--force", action="store_true", help="replace DIR if it exists")
    p.set_defaults(handler=cmd_extract)

    p = subparsers.add_parser(
        "relayout", parents=parents, help="chip output layout <-> TFLite tensor layout for one output layer",
        description="Re-lay a raw Edge TPU output (z padded to 4-byte lanes, written tile by tile) into the TFLite "
                    "tensor as libedgetpu does, or with --inverse produce what the chip should have written.")
    p.add_argument("input", metavar="RAW", help="raw output dump (or the tensor with --inverse)")
    p.add_argument("--model", required=True, metavar="MODEL", help="the Edge TPU .tflite")
    p.add_argument("--layer", required=True, metavar="NAME", help="output layer name, e.g. convert_scores")
    p.add_argument("-o", "--output", required=True, metavar="OUT", help="output file")
    p.add_argument("--inverse", action="store_true", help="tensor -> raw")
    p.add_argument("--pad-byte", type=_byte, default=0x80, metavar="B",
                   help="value of padding bytes with --inverse (default 0x80)")
    add_slice_flags(p)
    p.set_defaults(handler=cmd_relayout)
