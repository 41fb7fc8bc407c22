"""One function per command: what `forensics CMD ... --json` prints, as a frozen report object; one private
module per command group (`_buffers`, `_model`, `_decode`, `_runs`, `_diagnose`, `_csr`, `_evidence`, `_link`, as
forensics/cli/ has `buffers`, ...), whose names are this package's: forensics/reports/commands.py lists them.

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

from forensics.reports.commands import namespace

# Where each public name lives, from the one command table (forensics/reports/commands.py). Importing
# forensics.reports loads none of the group modules: a name loads its module on first use, so `forensics diff`
# imports the buffer reports and not the runs, decode or model ones (benchmarks/bench_startup.py). The group
# modules are private (`_diagnose`), so importing one never rebinds a name of this package: `reports.diagnose`
# is the report function and `forensics.reports._diagnose.DiagnoseReport` the class, in either order.
_HOMES = namespace()

__all__ = sorted(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
