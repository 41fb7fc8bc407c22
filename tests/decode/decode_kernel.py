"""Test helpers: run the official TFLite_Detection_PostProcess in LiteRT and compare with forensics.decode."""

from __future__ import annotations

import numpy as np
import pytest


def interpreter(model: bytes):
    # Imported here, not at module level: modules importing these helpers also hold pure-numpy tests that
    # must run without the runtime extra; only the tests that reach LiteRT skip.
    litert = pytest.importorskip("ai_edge_litert.interpreter")
    it = litert.Interpreter(model_content=model, num_threads=1, experimental_preserve_all_tensors=True,
                            experimental_op_resolver_type=litert.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES)
    it.allocate_tensors()
    return it


def run(model: bytes, feeds: dict):
    """(outputs in output order, {tensor name: value} of every tensor) after one invoke()."""
    it = interpreter(model)
    for d in it.get_input_details():
        it.set_tensor(d["index"], np.asarray(feeds[d["name"]]).reshape(d["shape"]).astype(d["dtype"]))
    it.invoke()
    outs = [it.get_tensor(d["index"]) for d in it.get_output_details()]
    tensors = {}
    for d in it.get_tensor_details():
        try:
            tensors[d["name"]] = it.get_tensor(d["index"])
        except ValueError:
            pass
    return outs, tensors


def assert_same(result, outs, *, exact_boxes: bool = True, tol: float = 1e-6):
    """Every row the kernel writes: class, score and count equal; boxes bit-equal (or within tol)."""
    boxes, classes, scores, num = (np.asarray(o) for o in outs[:4])
    boxes, classes, scores = boxes.reshape(-1, 4), classes.reshape(-1), scores.reshape(-1)
    ob, oc, os_, onum, written = result.output_tensors()
    assert int(num.reshape(-1)[0]) == int(onum[0]), (num, onum)
    assert len(classes) == len(written)
    w = written
    np.testing.assert_array_equal(oc[w], classes[w])
    np.testing.assert_array_equal(os_[w], scores[w])
    if exact_boxes:
        np.testing.assert_array_equal(ob[w].view(np.uint32), boxes[w].view(np.uint32))
    else:
        # 1e-6 on normalised coordinates; relative for the huge boxes hostile inputs decode to
        np.testing.assert_allclose(ob[w], boxes[w], rtol=tol, atol=tol)
