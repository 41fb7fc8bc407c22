"""The one command table: an entry per command, from which the CLI's parser, its lazy-loading homes, the output
guard's list and the `forensics.reports` namespace are made (CONTRIBUTING.md: adding a command).

Plain data, no imports: `import forensics.reports` and every CLI start read it (benchmarks/bench_startup.py).
"""

from __future__ import annotations


class Command:
    """One command.

    - `name`: the command word (`anchors-gen`).
    - `group`: `forensics/cli/<group>.py` registers its parser (its `register(subparsers, parents)` adds it with
      its arguments: the argument builder) and `forensics/reports/_<group>.py` holds its report function.
    - `function`: the report function's name in the namespace (default: the name with `_` for `-`, and `import_`
      for the keyword `import`).
    - `types`: the other names of the group module the namespace shows (the report classes, constants).
    - `positional`: the parsed arguments passed to the report function by position, in order (`*name` spreads a
      list); every other parsed option is passed as a keyword (forensics.cli.options). Used when the parser sets
      no handler of its own (forensics.cli.call_report).
    - `progress`: progress_for's description (and `unit`, `min_total`) when the function takes `progress=`.
    - `outputs`: (dest, kind) for every output flag: kind "file" (a file written), "dir" (a directory replaced
      whole), "into" (a directory written into) or "run" (a run added to in place); forensics.io.outputs.
    - `beside`: dest -> ((suffix, kind, what), ...): what the output writes beside itself, named by its path
      with the extension replaced by `suffix` (compare's summary writes SUMMARY.csv and SUMMARY.parquet).
    """

    __slots__ = ("name", "group", "function", "types", "positional", "progress", "outputs", "beside")

    def __init__(self, name: str, group: str, *, function: str | None = None, types: tuple = (),
                 positional: tuple = (), progress: dict | None = None, outputs: tuple = (), beside: dict | None = None):
        self.name, self.group = name, group
        ident = name.replace("-", "_")
        self.function = function or (ident + "_" if ident in ("import", "from", "global", "class") else ident)
        self.types, self.positional, self.progress = tuple(types), tuple(positional), progress
        self.outputs, self.beside = tuple(outputs), dict(beside or {})

    @property
    def cli_module(self) -> str:
        return f"forensics.cli.{self.group}"

    @property
    def reports_module(self) -> str:
        return f"forensics.reports._{self.group}"

    def __repr__(self) -> str:
        return f"Command({self.name!r}, {self.group!r})"


_SUMMARY = {"output": ((".csv", "file", "the summary's CSV"), (".parquet", "dir", "the summary's Parquet"))}
_PAIR_PAGES = {"html": (("_pairs", "into", "the batch page's pair pages"),)}

# In the order a bring-up goes (bytes, model, decode, runs, diagnosis, registers, evidence, link): `forensics
# --help` lists the commands in this order.
COMMANDS = (
    Command("crc", "buffers", types=("CrcReport",), positional=("*files",), progress={"description": "crc32"}),
    Command("diff", "buffers", types=("RecordsReport",), positional=("a", "b"), progress={"description": "diff"},
            outputs=(("plot", "file"), ("heatmap", "file"))),
    Command("anchors", "buffers", types=("RecordsReport",), positional=("file",),
            progress={"description": "anchors"}, outputs=(("heatmap", "file"),)),
    Command("coverage", "buffers", types=("CoverageReport",), positional=("file",)),
    Command("hexdump", "buffers", types=("HexdumpReport",), positional=("file", "file2")),
    Command("graph", "model", types=("GraphReport", "Document"), positional=("model",),
            outputs=(("params_out", "into"),)),
    Command("extract", "model", types=("ExtractReport",), positional=("model",), outputs=(("output", "dir"),)),
    Command("relayout", "model", types=("RelayoutReport",), positional=("input",), outputs=(("output", "file"),)),
    Command("decode", "decode", types=("DecodeReport", "ClassesReport"), positional=("boxes", "scores"),
            outputs=(("draw", "file"),)),
    Command("tail", "decode", types=("TailReport",), positional=("model",), outputs=(("output", "file"),)),
    Command("anchors-gen", "decode", types=("AnchorsGenReport",), outputs=(("output", "file"),)),
    Command("capture", "runs", types=("CaptureReport", "CaptureManyReport"),
            progress={"description": "capture", "min_total": 0, "unit": "steps"}, outputs=(("output", "dir"),)),
    Command("ingest", "runs", types=("IngestReport", "ArraysIngestReport"), positional=("run", "buffers"),
            outputs=(("run", "run"),)),
    Command("compare", "runs", types=("CompareReport", "BatchReport"), positional=("*runs",),
            outputs=(("html", "file"), ("output", "file"), ("junit", "file")), beside={**_SUMMARY, **_PAIR_PAGES}),
    Command("export", "runs", types=("ExportReport",), positional=("run",), outputs=(("output", "file"),)),
    Command("diagnose", "diagnose", types=("DiagnoseReport",), positional=("a", "b"),
            progress={"description": "diagnose"}),
    Command("simulate", "diagnose", types=("SimulateReport",), positional=("a",), outputs=(("output", "file"),)),
    Command("csr", "csr", types=("CsrReport", "RegisterReport"), positional=("a", "b")),
    Command("import", "evidence", types=("ImportReport",), positional=("text",), outputs=(("output", "file"),)),
    Command("fingerprint", "evidence", types=("FingerprintReport",), positional=("file",),
            progress={"description": "xor-fold"}),
    Command("verify", "evidence", types=("VerifyReport",), positional=("log", "*files")),
    Command("demo", "demo", types=("DemoReport", "DemoDocument", "DEMO_STEPS", "story_dumps")),
    Command("link", "link", types=("LinkReport",), positional=("model",), outputs=(("out", "file"),)),
    Command("repeat", "repeat", types=("RepeatReport", "CaptureRuntimesReport", "capture_all_runtimes"),
            positional=("*runs",), outputs=(("html", "file"), ("junit", "file"))),
    Command("tolerance", "repeat", types=("ToleranceReport",), positional=("*runs",)),
    Command("impact", "impact", types=("ImpactReport",), positional=("run_a", "run_b"), outputs=(("draw", "file"),)),
)

BY_NAME = {command.name: command for command in COMMANDS}


def namespace() -> dict[str, str]:
    """Every public name of forensics.reports -> the module that defines it."""
    names = {"Report": "forensics.reports.base"}
    for command in COMMANDS:
        for name in (command.function, *command.types):
            names.setdefault(name, command.reports_module)
    return names
