"""CLI for model forensics: graph, extract, relayout (arguments -> forensics.tflite -> render -> exit code)."""

from __future__ import annotations

from forensics.cli.args import add_slice_flags, dump_options, parse_int

EXIT_OK = 0


def _open(path):
    from forensics.tflite.edgetpu import read_packages
    from forensics.tflite.model import open_model

    model = open_model(path)
    return model, read_packages(model)


def cmd_graph(args, out) -> int:
    from forensics.render.model import render_graph, render_params
    from forensics.tflite.graph import graph_summary

    model, packages = _open(args.model)
    summary = graph_summary(model, packages).to_dict()
    written = None
    if args.params_out:
        from forensics.errors import InputError
        from forensics.tflite.edgetpu import write_parameters

        if not packages:
            raise InputError("has no edgetpu-custom-op, so no parameter blobs to write (--params-out)", args.model)
        written = [w for pkg in packages for w in write_parameters(pkg, args.params_out)]
        summary["params_written"] = written
    if args.json:
        out.json(summary)
    else:
        out.print(*render_graph(summary))
        if written:
            out.print(*render_params(written))
    return EXIT_OK


def cmd_extract(args, out) -> int:
    from forensics.render.model import render_extract
    from forensics.tflite.extract import extract, write_extract

    model, packages = _open(args.model)
    result = extract(model, packages)
    files = write_extract(result, args.output, replace=args.force)
    if args.json:
        out.json(dict(result.to_dict(), files=files))
    else:
        out.print(*render_extract(result.to_dict(), files))
    return EXIT_OK


def cmd_relayout(args, out) -> int:
    from forensics.dump import open_dump
    from forensics.errors import InputError
    from forensics.outputs import write_bytes_atomic
    from forensics.render.model import render_relayout
    from forensics.tflite.relayout import inverse_relayout, layer_map, relayout

    model, packages = _open(args.model)
    layer = next((p.output_layer(args.layer) for p in packages if p.output_layer(args.layer) is not None), None)
    if layer is None:
        names = sorted({lay.name for p in packages for e in p.executables for lay in e.output_layers})
        raise InputError(f"no Edge TPU output layer named {args.layer!r} (output layers: "
                         f"{', '.join(names) or 'none: not an Edge TPU model'})", args.model)
    lmap = layer_map(layer)
    data = open_dump(args.input, use_sidecar=False, **dump_options(args)).read_array()  # .bin/.npy data/text
    try:
        result = inverse_relayout(data, lmap, args.pad_byte) if args.inverse else relayout(data, lmap)
    except InputError as exc:
        raise InputError(str(exc), args.input) from None
    write_bytes_atomic(args.output, result.tobytes())
    d = dict(lmap.to_dict(), inverse=bool(args.inverse), input=args.input, output=args.output,
             input_size=int(data.size), output_size=int(result.size), pad_byte=args.pad_byte)
    if args.json:
        out.json(d)
    else:
        out.print(*render_relayout(d))
    return EXIT_OK


def _byte(text: str) -> int:
    import argparse

    value = parse_int(text)
    if not 0 <= value <= 255:
        raise argparse.ArgumentTypeError(f"must be a byte 0..255 (e.g. 0x80), got {text}")
    return value


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
