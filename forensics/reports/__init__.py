"""One function per command: what `forensics CMD ... --json` prints, as a frozen report object; one module
per command group, as in forensics/cli/ (buffers, model, link, decode, runs, diagnose, csr, evidence, repeat).

`reports.diff("a.bin", "b.bin", tolerance=1)` does what `forensics diff a.bin b.bin --tolerance 1` does: the
positional arguments in the command line's order, the options as keywords named after the long flags
(`--max-shift` -> `max_shift`, `--at` -> `at`). Every report has
- `to_dict()`: exactly the `--json` document,
- `verdict`: what a judging command concluded (forensics.core.verdict.Verdict: MATCH, DIFFER, ...; None for a
  command that judges nothing), also in the document with `exit_code`,
- `exit_code`: the command's exit code (forensics.core.exitcodes: 0 same/ok, 1 differences or findings), which
  follows from the verdict,
- `warnings`: the lines the command prints on stderr as warnings,
- `renderables()` / `__rich__` / `_repr_html_`: the command's tables (forensics/render), in a terminal or a
  notebook, and `to_frame()`: its rows as a pandas DataFrame (when it has rows).
Pictures and files the command writes (`--heatmap`, `--draw`, `-o`) are written by the report function when
their path is given, and recorded in the report. This module composes the library and the renderers; only
forensics/cli sits above it.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what the names are, for readers and type checkers; at run time they load on first use
    from forensics.reports.base import Report
    from forensics.reports.buffers import (
        CoverageReport,
        CrcReport,
        HexdumpReport,
        RecordsReport,
        anchors,
        coverage,
        crc,
        diff,
        hexdump,
    )
    from forensics.reports.csr import CsrReport, RegisterReport, csr
    from forensics.reports.decode import (
        AnchorsGenReport,
        ClassesReport,
        DecodeReport,
        TailReport,
        anchors_gen,
        decode,
        tail,
    )
    from forensics.reports.diagnose import (
        DiagnoseReport,
        SimulateReport,
        diagnose,
        simulate,
    )
    from forensics.reports.evidence import (
        DEMO_STEPS,
        DemoDocument,
        DemoReport,
        FingerprintReport,
        ImportReport,
        VerifyReport,
        demo,
        fingerprint,
        import_,
        verify,
    )
    from forensics.reports.link import LinkReport, link
    from forensics.reports.model import (
        Document,
        ExtractReport,
        GraphReport,
        RelayoutReport,
        extract,
        graph,
        relayout,
    )
    from forensics.reports.repeat import (
        CaptureRuntimesReport,
        RepeatReport,
        ToleranceReport,
        repeat,
        tolerance,
    )
    from forensics.reports.runs import (
        ArraysIngestReport,
        BatchReport,
        CaptureManyReport,
        CaptureReport,
        CompareReport,
        ExportReport,
        IngestReport,
        capture,
        compare,
        export,
        ingest,
    )

# Where each public name lives. Importing forensics.reports loads none of the group modules: a name loads its
# module on first use, so `forensics diff` imports the buffer reports and not the runs, decode or model ones
# (start-up time is measured by benchmarks/bench_startup.py).
_HOMES = {
    "Report": "base",
    "CrcReport": "buffers",
    "crc": "buffers",
    "RecordsReport": "buffers",
    "diff": "buffers",
    "anchors": "buffers",
    "CoverageReport": "buffers",
    "coverage": "buffers",
    "HexdumpReport": "buffers",
    "hexdump": "buffers",
    "Document": "model",
    "GraphReport": "model",
    "graph": "model",
    "ExtractReport": "model",
    "extract": "model",
    "RelayoutReport": "model",
    "relayout": "model",
    "DecodeReport": "decode",
    "ClassesReport": "decode",
    "decode": "decode",
    "TailReport": "decode",
    "tail": "decode",
    "AnchorsGenReport": "decode",
    "anchors_gen": "decode",
    "CaptureReport": "runs",
    "CaptureManyReport": "runs",
    "capture": "runs",
    "IngestReport": "runs",
    "ArraysIngestReport": "runs",
    "ingest": "runs",
    "ExportReport": "runs",
    "export": "runs",
    "CompareReport": "runs",
    "BatchReport": "runs",
    "compare": "runs",
    "DiagnoseReport": "diagnose",
    "diagnose": "diagnose",
    "SimulateReport": "diagnose",
    "simulate": "diagnose",
    "CsrReport": "csr",
    "RegisterReport": "csr",
    "csr": "csr",
    "ImportReport": "evidence",
    "import_": "evidence",
    "FingerprintReport": "evidence",
    "fingerprint": "evidence",
    "VerifyReport": "evidence",
    "verify": "evidence",
    "DemoDocument": "evidence",
    "DemoReport": "evidence",
    "demo": "evidence",
    "DEMO_STEPS": "evidence",
    "LinkReport": "link",
    "link": "link",
    "RepeatReport": "repeat",
    "repeat": "repeat",
    "ToleranceReport": "repeat",
    "tolerance": "repeat",
    "CaptureRuntimesReport": "repeat",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """Keeps `reports.csr`, `reports.decode` and `reports.diagnose` the report functions: importing the group
    module of the same name would otherwise bind the package's attribute to that module (the submodule stays
    importable by its full name)."""

    def __setattr__(self, name: str, value) -> None:
        if name in _HOMES and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package
