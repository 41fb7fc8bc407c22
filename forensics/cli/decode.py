"""CLI for decode, tail and anchors-gen (arguments -> one library call -> render -> exit code)."""

from __future__ import annotations

import argparse

from forensics.cli.args import positive_float, positive_int

EXIT_OK, EXIT_DIFFERENT = 0, 1


def size_wh(text: str) -> tuple[int, int]:
    """`640x480` -> (640, 480)."""
    parts = text.lower().replace("*", "x").split("x")
    try:
        w, h = (int(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected WIDTHxHEIGHT like 640x480, got {text!r}") from None
    if w <= 0 or h <= 0:
        raise argparse.ArgumentTypeError(f"width and height must be positive, got {text!r}")
    return w, h


def float_list(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(eval_fraction(p)) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}") from None
    if not values:
        raise argparse.ArgumentTypeError(f"expected comma-separated numbers, got {text!r}")
    return values


def eval_fraction(text: str) -> float:
    if "/" in text:
        num, den = text.split("/", 1)
        return float(num) / float(den)
    return float(text)


def int_list(text: str) -> tuple[int, ...]:
    try:
        values = tuple(int(p) for p in text.split(",") if p.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers like 19,10,5,3,2,1, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive integers like 19,10,5,3,2,1, got {text!r}")
    return values


# --- decode --------------------------------------------------------------------------------------------

def two_names(text: str) -> tuple[str, str]:
    """`libedgetpu,ours` -> ("libedgetpu", "ours"): the --overlay decode's name, then this decode's."""
    names = tuple(p.strip() for p in text.split(","))
    if len(names) != 2 or not all(names):
        raise argparse.ArgumentTypeError(f"expected two names like libedgetpu,ours (the --overlay decode, then "
                                         f"this one), got {text!r}")
    return names


def _check_decode_flags(args) -> bool:
    """Flag combinations argparse cannot express; returns whether an overlay was asked for."""
    from forensics.errors import InputError

    if (args.model is None) == (args.deps is None):
        raise InputError("give exactly one of --model MODEL or --deps DIR")
    if args.image and args.image_size:
        raise InputError("give --image or --image-size, not both")
    pair = (args.overlay_boxes, args.overlay_scores)
    if any(p is not None for p in pair) and not all(p is not None for p in pair):
        raise InputError("--overlay-boxes and --overlay-scores go together (the other decode's two dumps)")
    if args.overlay is not None and pair[0] is not None:
        raise InputError("give --overlay OTHER.json or --overlay-boxes/--overlay-scores, not both")
    overlaying = args.overlay is not None or pair[0] is not None
    if overlaying and not args.draw:
        raise InputError("--overlay needs --draw OUT.png (the picture with both decodes' boxes)")
    if args.names is not None and not overlaying:
        raise InputError("--names names the two decodes of an --overlay picture; there is no --overlay")
    if args.draw and not args.image and not (overlaying and args.image_size):
        raise InputError("--draw needs --image IMG (the original image to draw on; with --overlay, "
                         "--image-size WxH gives a blank canvas)")
    return overlaying


def cmd_decode(args, out) -> int:
    if args.top_k is not None:
        return _classes(args, out)
    from forensics.decode.report import decode_dumps
    from forensics.geometry import infer_geometry
    from forensics.render.decode import decode_document, render_decode

    overlaying = _check_decode_flags(args)
    relayouts, tail = {}, None
    if args.deps is not None:
        from forensics.decode.deps import read_deps

        deps = read_deps(args.deps)
    else:
        from forensics.decode.model_deps import deps_from_model

        deps, relayouts, tail = deps_from_model(args.model)
    report = decode_dumps(deps, args.boxes, args.scores, layout=args.layout, rounding=args.dequantize,
                          image=args.image, image_wh=args.image_size, input_wh=args.input_size,
                          labels_path=args.labels, replay=args.replay, relayouts=relayouts, tail_model=tail)
    geometry = infer_geometry(deps.anchors, source=deps.source)
    drawn = None
    if overlaying:
        from forensics.render.decode import render_overlay

        if args.overlay is not None:
            from forensics.render.overlay import load_detections

            other, source = load_detections(args.overlay), str(args.overlay)
        else:
            other = decode_dumps(deps, args.overlay_boxes, args.overlay_scores, layout=args.layout,
                                 rounding=args.dequantize, input_wh=args.input_size, labels_path=args.labels,
                                 relayouts=relayouts).rows()
            source = f"{args.overlay_boxes} + {args.overlay_scores}"
        picture, summary = render_overlay(report, other, names=args.names or ("other", "this"), image=args.image,
                                          image_size=args.image_size, score_threshold=args.score_threshold,
                                          source=source)
        drawn = {"output": picture.save(args.draw), **summary}
    elif args.draw:
        from forensics.decode.draw import draw_detections

        drawn = draw_detections(args.image, args.draw, report, score_threshold=args.score_threshold)
    if args.json:
        out.json(decode_document(report, geometry, drawing=drawn))
    else:
        out.print(*render_decode(report, score_threshold=args.score_threshold, geometry=geometry))
        if drawn and "overlay" in drawn:
            (name_a, name_b), (n_a, n_b) = drawn["overlay"]["names"], drawn["overlay"]["boxes"]
            out.print(f"drew {n_b} {name_b} box(es) in red and {n_a} {name_a} box(es) in green on {drawn['output']}")
        elif drawn:
            out.print(f"drew {drawn['boxes']} box(es) on {drawn['output']}")
    if report.replay is not None and not report.replay.match:
        return EXIT_DIFFERENT
    return EXIT_OK


# --- tail ----------------------------------------------------------------------------------------------

def _classes(args, out) -> int:
    """decode A B --model CLASSIFIER --top-k K: both sides' top-k, dequantized, with rank changes."""
    from forensics.classes import classify_dumps
    from forensics.errors import InputError
    from forensics.render.decode import render_classes

    if args.model is None:
        raise InputError("--top-k needs --model MODEL (the classifier: its output's size and quantization)")
    result = classify_dumps(args.boxes, args.scores, model=args.model, k=args.top_k, labels_path=args.labels)
    if args.json:
        out.json(result.to_dict())
    else:
        out.print(*render_classes(result, names=(args.boxes, args.scores)))
    return EXIT_OK if result.same_order else EXIT_DIFFERENT


def cmd_tail(args, out) -> int:
    from forensics.decode.tail_cmd import write_tail
    from forensics.render.decode import render_tail

    result = write_tail(args.model, args.output)
    if args.json:
        out.json(result)
    else:
        out.print(*render_tail(result))
    return EXIT_OK


# --- anchors-gen ---------------------------------------------------------------------------------------

def cmd_anchors_gen(args, out) -> int:
    from forensics.decode.anchors_cmd import anchors_gen
    from forensics.render.decode import render_anchors_gen

    result = anchors_gen(input_size=args.input_size, feature_maps=args.feature_maps, min_scale=args.min_scale,
                         max_scale=args.max_scale, aspect_ratios=args.aspect_ratios,
                         interpolated_scale_aspect_ratio=args.interpolated_scale_aspect_ratio,
                         reduce_boxes_in_lowest_layer=not args.no_reduce_lowest, output=args.output,
                         check_model=args.check_model, check_deps=args.check_deps, show=args.show,
                         anchor=args.anchor)
    if args.json:
        out.json(result)
    else:
        out.print(*render_anchors_gen(result, show=len(result["anchors"])))
    check = result.get("check")
    return EXIT_DIFFERENT if check is not None and not check["matches"] else EXIT_OK


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
    p.add_argument("--score-threshold", type=float, default=None, metavar="S",
                   help="show (and draw) only rows scoring >= S; never changes the kernel's result")
    p.add_argument("--replay", action="store_true",
                   help="also run the official kernel in LiteRT on the same bytes: MATCH / MISMATCH")
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
    p.add_argument("--interpolated-scale-aspect-ratio", type=float, default=1.0, metavar="AR")
    p.add_argument("--no-reduce-lowest", action="store_true", help="reduce_boxes_in_lowest_layer: false")
    p.add_argument("-o", "--output", metavar="anchors.bin", help="write float32 [N, 4] little-endian")
    p.add_argument("--check-model", metavar="MODEL", help="compare a .tflite's PostProcess anchors")
    p.add_argument("--check-deps", metavar="DIR", help="compare a deps directory's anchors.bin")
    p.add_argument("--show", type=int, default=5, metavar="N", help="print the first N anchors (default 5)")
    p.add_argument("--anchor", type=int, default=None, metavar="I", help="print anchor I")
    p.set_defaults(handler=cmd_anchors_gen)
