"""The TFLite runtime, found once: ai-edge-litert (LiteRT) first, tflite-runtime 2.14 as the older name.

Both are optional (`pip install 'npu-forensics[runtime]'`). The reference interpreter is always created with
the default delegates OFF (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES): LiteRT's default XNNPACK
delegate changes uint8 results (docs/pitfalls.md).
"""

from __future__ import annotations

from dataclasses import dataclass

from forensics.core.errors import DependencyError

INSTALL_HINT = "pip install 'npu-forensics[runtime]' (ai-edge-litert)"


@dataclass(frozen=True)
class Runtime:
    name: str                 # "ai-edge-litert" or "tflite-runtime"
    Interpreter: type
    OpResolverType: object
    load_delegate: object

    @property
    def reference_kwargs(self) -> dict:
        """Interpreter arguments for the reference kernels: built-in ops, no default delegates."""
        return {"experimental_op_resolver_type": self.OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES}


def load_runtime(purpose: str = "this command") -> Runtime:
    """The installed runtime, or a DependencyError saying how to install one (and why an old one fails).

    `purpose` starts the message; it may name a parameter as `{name}` (see forensics.core.errors)."""
    try:
        from ai_edge_litert.interpreter import (
            Interpreter,
            OpResolverType,
            load_delegate,
        )

        return Runtime("ai-edge-litert", Interpreter, OpResolverType, load_delegate)
    except ImportError:
        pass
    import numpy

    if int(numpy.__version__.split(".")[0]) >= 2:
        try:
            import tflite_runtime  # noqa: F401  (present, but it cannot work with this numpy)
        except ImportError:
            pass
        else:
            raise DependencyError(f"{purpose} needs a TFLite runtime: tflite-runtime 2.14 only works with numpy < 2 "
                                  f"(this is numpy {numpy.__version__}); {INSTALL_HINT}", params=True)
    try:
        from tflite_runtime.interpreter import (
            Interpreter,
            OpResolverType,
            load_delegate,
        )

        return Runtime("tflite-runtime", Interpreter, OpResolverType, load_delegate)
    except ImportError:
        raise DependencyError(f"{purpose} needs a TFLite runtime: {INSTALL_HINT}", params=True) from None
