"""One function per command: what `forensics CMD ... --json` prints, as a frozen report object; one module
per command group, as in forensics/cli/ (buffers, model, decode, runs, diagnose, csr, evidence).

`reports.diff("a.bin", "b.bin", tolerance=1)` does what `forensics diff a.bin b.bin --tolerance 1` does: the
positional arguments in the command line's order, the options as keywords named after the long flags
(`--max-shift` -> `max_shift`, `--at` -> `at`). Every report has
- `to_dict()`: exactly the `--json` document,
- `verdict`: what a judging command concluded (forensics.verdict.Verdict: MATCH, DIFFER, ...; None for a
  command that judges nothing), also in the document with `exit_code`,
- `exit_code`: the command's exit code (forensics.exitcodes: 0 same/ok, 1 differences or findings), which
  follows from the verdict,
- `warnings`: the lines the command prints on stderr as warnings,
- `renderables()` / `__rich__` / `_repr_html_`: the command's tables (forensics/render), in a terminal or a
  notebook, and `to_frame()`: its rows as a pandas DataFrame (when it has rows).
Pictures and files the command writes (`--heatmap`, `--draw`, `-o`) are written by the report function when
their path is given, and recorded in the report. This module composes the library and the renderers; only
forensics/cli sits above it.
"""

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
from forensics.reports.model import (
    Document,
    ExtractReport,
    GraphReport,
    RelayoutReport,
    extract,
    graph,
    relayout,
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

__all__ = [
    "Report",
    "CrcReport",
    "crc",
    "RecordsReport",
    "diff",
    "anchors",
    "CoverageReport",
    "coverage",
    "HexdumpReport",
    "hexdump",
    "Document",
    "GraphReport",
    "graph",
    "ExtractReport",
    "extract",
    "RelayoutReport",
    "relayout",
    "DecodeReport",
    "ClassesReport",
    "decode",
    "TailReport",
    "tail",
    "AnchorsGenReport",
    "anchors_gen",
    "CaptureReport",
    "CaptureManyReport",
    "capture",
    "IngestReport",
    "ArraysIngestReport",
    "ingest",
    "ExportReport",
    "export",
    "CompareReport",
    "BatchReport",
    "compare",
    "DiagnoseReport",
    "diagnose",
    "SimulateReport",
    "simulate",
    "CsrReport",
    "RegisterReport",
    "csr",
    "ImportReport",
    "import_",
    "FingerprintReport",
    "fingerprint",
    "VerifyReport",
    "verify",
    "DemoDocument",
    "DemoReport",
    "demo",
    "DEMO_STEPS",
]
