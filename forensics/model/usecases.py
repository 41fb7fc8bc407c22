"""The model commands as library calls: graph, extract and relayout open a .tflite model and its Edge TPU
package and do the command's whole work; forensics.reports wraps each result in a report."""

from __future__ import annotations

import os

from forensics.core.errors import InputError
from forensics.core.options import Slice


def open_model(path):
    """(the forensics.model.tflite.model.Model, its Edge TPU packages)."""
    from forensics.model.tflite.edgetpu import read_packages
    from forensics.model.tflite.model import open_model as open_tflite

    model = open_tflite(path)
    return model, read_packages(model)


def graph(model, *, params_out=None) -> dict:
    """`forensics graph MODEL` whole: the op chain, constants, CPU tail and Edge TPU package as the JSON
    document; `params_out` writes the parameter blobs (listed under `params_written`)."""
    from forensics.model.tflite.graph import graph_summary

    opened, packages = open_model(model)
    summary = graph_summary(opened, packages).to_dict()
    if params_out:
        from forensics.model.tflite.edgetpu import write_parameters

        if not packages:
            raise InputError("has no edgetpu-custom-op, so no parameter blobs to write ({params_out})", model,
                             params=True)
        summary["params_written"] = [w for pkg in packages for w in write_parameters(pkg, params_out)]
    return summary


def extract(model, output, *, force: bool = False) -> tuple:
    """`forensics extract MODEL -o DIR` whole: (the forensics.model.tflite.extract result, the files written:
    anchors.bin and postprocess.json for a standalone decoder)."""
    from forensics.io.outputs import check_not_input
    from forensics.model.tflite.extract import extract as extract_deps
    from forensics.model.tflite.extract import write_extract

    check_not_input(output, model)
    opened, packages = open_model(model)
    result = extract_deps(opened, packages)
    return result, tuple(write_extract(result, output, replace=force))


def relayout(input, model, layer: str, output, *, inverse: bool = False, pad_byte: int = 0x80,  # noqa: A002
             where: Slice = Slice()) -> dict:
    """`forensics relayout RAW --model M --layer NAME -o OUT` whole: the dump (`where`: its slice) between the
    chip's layout of output layer `layer` and the TFLite tensor's (`inverse`: back, padding with `pad_byte`),
    written atomically; the layer map and what was written, as the JSON document."""
    from forensics.core.errors import FormatError
    from forensics.io.dump import open_dump
    from forensics.io.outputs import check_not_input, write_bytes_atomic
    from forensics.model.tflite.relayout import inverse_relayout, layer_map
    from forensics.model.tflite.relayout import relayout as relayout_array

    _, packages = open_model(model)
    found = next((p.output_layer(layer) for p in packages if p.output_layer(layer) is not None), None)
    if found is None:
        names = sorted({lay.name for p in packages for e in p.executables for lay in e.output_layers})
        raise InputError(f"no Edge TPU output layer named {layer!r} (output layers: "
                         f"{', '.join(names) or 'none: not an Edge TPU model'})", model)
    check_not_input(output, input, model)
    dump = open_dump(input, use_sidecar=False, **where.dump_options())
    try:  # sizes first: a hostile layer or a wrong dump fails before the map is built
        lmap = layer_map(found, dump_size=dump.size)
    except FormatError as exc:
        raise exc.with_path(os.fspath(model)) from None
    except InputError as exc:
        raise InputError(str(exc), input) from None
    data = dump.read_array()  # a .bin, a .npy's data bytes, a text dump's bytes, or a slice
    try:
        result = inverse_relayout(data, lmap, pad_byte) if inverse else relayout_array(data, lmap)
    except InputError as exc:
        raise InputError(str(exc), input) from None
    write_bytes_atomic(output, result.tobytes())
    return dict(lmap.to_dict(), inverse=bool(inverse), input=os.fspath(input), output=os.fspath(output),
                input_size=int(data.size), output_size=int(result.size), pad_byte=pad_byte)
