"""`forensics tail`: write an Edge TPU model's CPU tail (the edgetpu-custom-op removed) for LiteRT."""

from __future__ import annotations

import os

from forensics.dump import check_readable_file
from forensics.errors import InputError
from forensics.outputs import write_bytes_atomic


def write_tail(model_path, output) -> dict:
    from forensics.tflite.model import read_model
    from forensics.tflite.tail import EDGETPU_CUSTOM_CODE, remove_custom_op

    model_path = os.fspath(model_path)
    size = check_readable_file(model_path)
    if size == 0:
        raise InputError("empty file", model_path)
    if os.path.abspath(os.fspath(output)) == os.path.abspath(model_path):
        raise InputError("refusing to overwrite the input model", output)
    with open(model_path, "rb") as fh:
        data = fh.read()
    try:
        tail = remove_custom_op(data)
    except InputError as exc:
        raise InputError(str(exc), model_path) from None
    except Exception as exc:  # FormatError carries no path from bytes; name the file here
        from forensics.errors import FormatError

        if isinstance(exc, FormatError):
            raise exc.with_path(model_path) from None
        raise
    model = read_model(tail)
    sg = model.main
    write_bytes_atomic(output, tail)
    return {"model": model_path, "output": os.fspath(output), "removed": EDGETPU_CUSTOM_CODE,
            "size_bytes": len(tail), "operators": len(sg.operators),
            "inputs": [sg.tensors[i].name for i in sg.inputs], "outputs": [sg.tensors[i].name for i in sg.outputs]}
