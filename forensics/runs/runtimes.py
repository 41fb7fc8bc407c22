"""Capture one model and input in every reference runtime this machine has: one run each, side by side, for
`forensics tolerance` to measure the reference's own noise (docs/repeat.md).

`capture --runtime all -o DIR` writes DIR/<runtime> for each of forensics.model.runtime.REFERENCES that can run
here (litert: ai-edge-litert with default delegates off, the reference; litert-xnnpack: the same with its
default delegates, XNNPACK; tflite-runtime: where it is installed, which needs numpy < 2); a runtime that
cannot run is skipped with the reason. Each run's source is its runtime's name.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from forensics.core.errors import DependencyError, InputError


@dataclass(frozen=True)
class CaptureRuntimesResult:
    output: str
    runs: tuple  # forensics.runs.capture.CaptureResult, one per runtime that ran
    skipped: tuple[tuple[str, str], ...]  # (runtime, why it cannot run here)

    @property
    def runtimes(self) -> tuple[str, ...]:
        return tuple(r.run.source for r in self.runs)

    # kept: its runs are CaptureResults, whose documents do not read back (forensics.runs.capture)
    def to_dict(self) -> dict:
        return {"output": self.output, "runtimes": list(self.runtimes),
                "runs": [r.to_dict() for r in self.runs],
                "skipped": [{"runtime": name, "reason": why} for name, why in self.skipped]}

    @classmethod
    def from_dict(cls, doc: dict) -> "CaptureRuntimesResult":
        from forensics.runs.capture import CaptureResult

        return cls(doc["output"], tuple(CaptureResult.from_dict(r) for r in doc["runs"]),
                   tuple((s["runtime"], s["reason"]) for s in doc["skipped"]))


def capture_runtimes(model_path, output, *, replace: bool = False, **options) -> CaptureRuntimesResult:
    """One run per available reference runtime under `output` (a folder, created when missing), as
    output/<runtime>; `options` are forensics.runs.capture.capture's (image, inputs, resampling, tail_only).
    InputError when none can run (each one's reason is said)."""
    from forensics.model.runtime import available_references
    from forensics.runs.capture import capture

    output = os.fspath(output)
    if options.get("delegate"):
        raise InputError("give {runtime} all or {delegate}, not both: each reference runs with its own delegates "
                         "only", params=True)
    available = available_references()
    ready = [name for name, why in available if why is None]
    skipped = tuple((name, str(why)) for name, why in available if why is not None)
    if not ready:
        raise DependencyError("no reference runtime can run here: " + "; ".join(why for _, why in skipped))
    if os.path.exists(output) and not os.path.isdir(output):
        raise InputError("is not a directory (the folder to write one run per runtime into)", output)
    runs = []
    for name in ready:
        runs.append(capture(model_path, os.path.join(output, name), source=name, runtime=name, replace=replace,
                            **options))
    return CaptureRuntimesResult(output, tuple(runs), skipped)
