"""The runtime finder: LiteRT first, tflite-runtime as the fallback, and clear errors when neither works."""

import sys
import types

import numpy as np
import pytest

from forensics.core.errors import DependencyError
from forensics.model.runtime import load_runtime


def _hide(monkeypatch, *names):
    for name in names:
        monkeypatch.setitem(sys.modules, name, None)  # a None entry makes `import name` raise ImportError


def test_neither_runtime_installed_says_how_to_install(monkeypatch):
    _hide(monkeypatch, "ai_edge_litert", "ai_edge_litert.interpreter", "tflite_runtime", "tflite_runtime.interpreter")
    with pytest.raises(DependencyError, match=r"--replay needs a TFLite runtime: pip install 'npu-forensics\[runtime\]'"):
        load_runtime("--replay")


@pytest.mark.skipif(int(np.__version__.split(".")[0]) < 2, reason="the trap only exists with numpy 2")
def test_tflite_runtime_under_numpy_2_is_refused_with_the_reason(monkeypatch):
    _hide(monkeypatch, "ai_edge_litert", "ai_edge_litert.interpreter")
    monkeypatch.setitem(sys.modules, "tflite_runtime", types.ModuleType("tflite_runtime"))
    with pytest.raises(DependencyError, match="tflite-runtime 2.14 only works with numpy < 2"):
        load_runtime("capture")


def test_fallback_to_tflite_runtime_when_litert_is_absent(monkeypatch):
    _hide(monkeypatch, "ai_edge_litert", "ai_edge_litert.interpreter")
    monkeypatch.setattr(np, "__version__", "1.26.4")
    fake = types.ModuleType("tflite_runtime.interpreter")
    fake.Interpreter, fake.load_delegate = object, object
    fake.OpResolverType = types.SimpleNamespace(BUILTIN_WITHOUT_DEFAULT_DELEGATES="builtin-only")
    monkeypatch.setitem(sys.modules, "tflite_runtime", types.ModuleType("tflite_runtime"))
    monkeypatch.setitem(sys.modules, "tflite_runtime.interpreter", fake)
    runtime = load_runtime()
    assert runtime.name == "tflite-runtime"
    assert runtime.reference_kwargs == {"experimental_op_resolver_type": "builtin-only"}


def test_litert_is_preferred_and_default_delegates_are_off():
    pytest.importorskip("ai_edge_litert")
    runtime = load_runtime()
    assert runtime.name == "ai-edge-litert"
    assert runtime.reference_kwargs["experimental_op_resolver_type"] == \
        runtime.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES
