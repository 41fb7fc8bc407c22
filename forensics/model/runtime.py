"""The TFLite runtime, found once: ai-edge-litert (LiteRT) first, tflite-runtime 2.14 as the older name; and the
reference runtimes a capture can be made in, by name (`capture --runtime`).

Both packages are optional (`pip install 'npu-forensics[runtime]'`). The reference interpreter is always created
with the default delegates OFF (OpResolverType.BUILTIN_WITHOUT_DEFAULT_DELEGATES): LiteRT's default XNNPACK
delegate changes results (docs/pitfalls.md). The named references:
- `litert`: ai-edge-litert, default delegates off (the reference);
- `litert-xnnpack`: ai-edge-litert with its default delegates (XNNPACK), as an application gets it;
- `tflite-runtime`: tflite-runtime, default delegates off; it only works with numpy < 2.
"""

from __future__ import annotations

from dataclasses import dataclass

from forensics.core.errors import DependencyError

INSTALL_HINT = "pip install 'npu-forensics[runtime]' (ai-edge-litert)"
TFLITE_RUNTIME_HINT = "pip install tflite-runtime, in an environment with numpy < 2"
REFERENCES = ("litert", "litert-xnnpack", "tflite-runtime")  # `capture --runtime NAME`; `all`: each available


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


@dataclass(frozen=True)
class Reference:
    """A named reference: the runtime package and whether its default delegates (XNNPACK) are on."""

    name: str                 # one of REFERENCES
    runtime: Runtime
    default_delegates: bool = False


def _litert() -> Runtime | None:
    try:
        from ai_edge_litert.interpreter import (
            Interpreter,
            OpResolverType,
            load_delegate,
        )
    except ImportError:
        return None
    return Runtime("ai-edge-litert", Interpreter, OpResolverType, load_delegate)


def _numpy_major() -> int:
    import numpy

    return int(numpy.__version__.split(".")[0])


def _tflite_runtime(purpose: str) -> Runtime | None:
    """tflite-runtime, None when it is not installed; DependencyError when it is but cannot work (numpy 2)."""
    if _numpy_major() >= 2:
        try:
            import tflite_runtime  # noqa: F401  (present, but it cannot work with this numpy)
        except ImportError:
            return None
        import numpy

        raise DependencyError(f"{purpose} needs a TFLite runtime: tflite-runtime 2.14 only works with numpy < 2 "
                              f"(this is numpy {numpy.__version__}); {INSTALL_HINT}", params=True)
    try:
        from tflite_runtime.interpreter import (
            Interpreter,
            OpResolverType,
            load_delegate,
        )
    except ImportError:
        return None
    return Runtime("tflite-runtime", Interpreter, OpResolverType, load_delegate)


def load_runtime(purpose: str = "this command") -> Runtime:
    """The installed runtime, or a DependencyError saying how to install one (and why an old one fails).

    `purpose` starts the message; it may name a parameter as `{name}` (see forensics.core.errors)."""
    runtime = _litert() or _tflite_runtime(purpose)
    if runtime is None:
        raise DependencyError(f"{purpose} needs a TFLite runtime: {INSTALL_HINT}", params=True)
    return runtime


def load_reference(name: str) -> Reference:
    """The reference runtime `name` (one of REFERENCES), or a DependencyError saying why it is not available
    here and what to install."""
    if name not in REFERENCES:
        from forensics.core.errors import InputError

        raise InputError(f"unknown {{runtime}} {name!r} (choose {', '.join(REFERENCES)} or all)", params=True)
    if name in ("litert", "litert-xnnpack"):
        runtime = _litert()
        if runtime is None:
            raise DependencyError(f"{name} needs ai-edge-litert, which is not installed here: {INSTALL_HINT}")
        return Reference(name, runtime, default_delegates=name == "litert-xnnpack")
    try:
        runtime = _tflite_runtime(name)
    except DependencyError:
        import numpy

        raise DependencyError(f"tflite-runtime is installed but cannot run here: tflite-runtime 2.14 only works "
                              f"with numpy < 2 (this is numpy {numpy.__version__}); {TFLITE_RUNTIME_HINT}") from None
    if runtime is None:
        raise DependencyError(f"tflite-runtime is not installed here ({TFLITE_RUNTIME_HINT})")
    return Reference(name, runtime)


def available_references() -> tuple[tuple[str, DependencyError | None], ...]:
    """Every reference with None when it can run here, else the DependencyError saying why not."""
    out = []
    for name in REFERENCES:
        try:
            load_reference(name)
        except DependencyError as exc:
            out.append((name, exc))
        else:
            out.append((name, None))
    return tuple(out)


def reference_name(runtime: str, default_delegates: bool) -> str | None:
    """The REFERENCES name of an interpreter made with this runtime package and delegate setting."""
    if runtime == "ai-edge-litert":
        return "litert-xnnpack" if default_delegates else "litert"
    if runtime == "tflite-runtime" and not default_delegates:
        return "tflite-runtime"
    return None
