"""CLI for decode, tail and anchors-gen (arguments -> forensics.reports -> render -> exit code)."""

from __future__ import annotations


from forensics.cli import options, show
from forensics.cli.args import add_slice_flags, cli_type, non_negative_int, positive_float, positive_int


# The library's grammar (forensics.core.options), so that a flag and a report keyword take the same text.
size_wh = cli_type("size")
float_list = cli_type("numbers")
int_list = cli_type("positive_ints")
two_names = cli_type("two_names")
finite_float = cli_type("number")


def cmd_decode(args, out) -> int:
    from forensics import reports

    return show(reports.decode(args.boxes, args.scores, **options(args, "boxes", "scores")), args, out)


def cmd_tail(args, out) -> int:
    from forensics import reports

    return show(reports.tail(args.model, **options(args, "model")), args, out)


def cmd_anchors_gen(args, out) -> int:
    from forensics import reports

    return show(reports.anchors_gen(**options(args)), args, out)


def register(subparsers, parents) -> None:
    p = subparsers.add_parser(
        "decode", parents=parents, help="decode box deltas + scores exactly as TFLite_Detection_PostProcess",
        description="Decode uint8 box-delta and score dumps (tensor layout, 4-byte-lane padded records, the Edge "
                    "TPU raw layout, or .npy; a float32 .npy is taken as already dequantized) with the semantics "
                    "of the TFLite kernel as LiteRT runs it. Exit 0 ok, 1 --replay MISMATCH, 2 error.")
    p.add_argument("boxes", metavar="BOXES", help="box deltas dump (e.g. Squeeze1.bin)")
    p.add_argument("scores", metavar="SCORES", help="scores dump (e.g. convert_scores.bin)")
    src = p.add_argument_group("where anchors, options and quantization come from (one of)")
    src.add_argument("--model", metavar="MODEL", help="a .tflite with TFLite_Detection_PostProcess")
    src.add_argument("--deps", metavar="DIR", help="anchors.bin + postprocess.json (the extract format)")
    p.add_argument("--layout", choices=("auto", "tensor", "raw"), default="auto",
                   help="read the dumps as the tensor or the chip's raw layout (default: guess from the size)")
    p.add_argument("--dequantize", choices=("reference", "litert"), default="reference",
                   help="rounding of uint8 -> float: reference (one rounding, default) or litert (LiteRT x86)")
    p.add_argument("--labels", metavar="FILE", help="class names, one per line (line number = class id)")
    p.add_argument("--image", metavar="IMG", help="the original image (its size gives image-space boxes)")
    p.add_argument("--image-size", type=size_wh, metavar="WxH", help="the original image's size instead of --image")
    p.add_argument("--input-size", type=size_wh, metavar="WxH",
                   help="the detector's input size (default: from the model graph or postprocess.json)")
    p.add_argument("--draw", metavar="OUT.png", help="draw the boxes on --image and write this PNG")
    ov = p.add_argument_group("two decodes on one picture (with --draw)")
    ov.add_argument("--overlay", metavar="OTHER.json",
                    help="another decode's --json output (another run or dump pair), drawn in green beside this "
                         "decode's boxes in red")
    ov.add_argument("--overlay-boxes", metavar="BOXES2", help="or another dump pair, decoded here with the same "
                    "model/deps: its box deltas ...")
    ov.add_argument("--overlay-scores", metavar="SCORES2", help="... and its scores")
    ov.add_argument("--names", type=two_names, default=None, metavar="OTHER,THIS",
                    help="legend names, the overlay's first (default other,this), e.g. libedgetpu,ours")
    p.add_argument("--score-threshold", type=finite_float, default=None, metavar="S",
                   help="show (and draw) only rows scoring >= S; never changes the kernel's result")
    p.add_argument("--replay", action="store_true",
                   help="also run the official kernel in LiteRT on the same bytes: MATCH / MISMATCH")
    p.add_argument("--no-order-check", action="store_true",
                   help="decode BOXES and SCORES as given even when they look swapped (by shape, or the scores' "
                        "constant pad lanes)")
    add_slice_flags(p)
    p.add_argument("--top-k", type=positive_int, default=None, metavar="K",
                   help="a classifier (--model): BOXES and SCORES are then two dumps of its class scores; show "
                        "both sides' top K with dequantized scores and rank changes (exit 1 when the order differs)")
    p.set_defaults(handler=cmd_decode)

    p = subparsers.add_parser(
        "tail", parents=parents, help="write the model's CPU tail (edgetpu-custom-op removed) for LiteRT",
        description="Write MODEL without its edgetpu-custom-op; the op's outputs become graph inputs, so LiteRT "
                    "runs the official DEQUANTIZE and TFLite_Detection_PostProcess kernels on any dumped bytes.")
    p.add_argument("model", metavar="MODEL")
    p.add_argument("-o", "--output", required=True, metavar="TAIL.tflite")
    p.set_defaults(handler=cmd_tail)

    p = subparsers.add_parser(
        "anchors-gen", parents=parents, help="TF OD API SSD anchors (multiple grid); check a model's anchors",
        description="Generate SSD anchors as the TF Object Detection API's multiple-grid anchor generator does "
                    "([N, 4] ycenter, xcenter, h, w) and optionally check a model's (or deps') anchors against "
                    "them. Exit 0 ok / equal, 1 the anchors differ, 2 error.")
    p.add_argument("--input-size", type=size_wh, default=None, metavar="WxH",
                   help="SSD MobileNet feature maps for this input (300x300 -> 1917, 320x320 -> 2034 anchors)")
    p.add_argument("--feature-maps", type=int_list, default=None, metavar="SIZES",
                   help="square feature map sizes instead, e.g. 19,10,5,3,2,1")
    p.add_argument("--min-scale", type=positive_float, default=0.2)
    p.add_argument("--max-scale", type=positive_float, default=0.95)
    p.add_argument("--aspect-ratios", type=float_list, default=(1.0, 2.0, 0.5, 3.0, 0.3333), metavar="LIST",
                   help="default 1.0,2.0,0.5,3.0,0.3333 (as the sample pipeline configs)")
    p.add_argument("--interpolated-scale-aspect-ratio", type=finite_float, default=1.0, metavar="AR")
    p.add_argument("--no-reduce-lowest", action="store_true", help="reduce_boxes_in_lowest_layer: false")
    p.add_argument("-o", "--output", metavar="anchors.bin", help="write float32 [N, 4] little-endian")
    p.add_argument("--check-model", metavar="MODEL", help="compare a .tflite's PostProcess anchors")
    p.add_argument("--check-deps", metavar="DIR", help="compare a deps directory's anchors.bin")
    p.add_argument("--show", type=cli_type("integer"), default=5, metavar="N",
                   help="print the first N anchors (default 5)")
    p.add_argument("--anchor", type=non_negative_int, default=None, metavar="I", help="print anchor I")
    p.set_defaults(handler=cmd_anchors_gen)
