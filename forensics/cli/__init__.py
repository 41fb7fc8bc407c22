"""The `forensics` command line: arguments in, one library call, rendering, exit code out.

Exit codes follow cmp/diff: 0 same / ok, 1 differences found, 2 usage or input error. An internal bug
(not a ForensicsError) prints one line and exits 3; `--traceback` shows the stack for bug reports.
Command modules are imported to register their parsers, so they keep heavy imports inside handlers.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from forensics.core.errors import ForensicsError, InputError
from forensics.core.exitcodes import BROKEN_PIPE as EXIT_BROKEN_PIPE, BUG as EXIT_BUG, ERROR as EXIT_ERROR, \
    INTERRUPTED as EXIT_INTERRUPTED
from forensics.reports.commands import BY_NAME, COMMANDS

# A closed stdout exits EXIT_BROKEN_PIPE (128 + SIGPIPE), never 0 or 1, which would state a result the reader did
# not get; run() ends the process by SIGPIPE itself.

# Everything below is made from the one command table (forensics/reports/commands.py): an entry per command.
COMMAND_MODULES = tuple(dict.fromkeys(c.cli_module for c in COMMANDS))  # each defines register(subparsers, parents)

# Which module registers which command, so that running one command imports only its module (every command
# module costs start-up time; `--help` and unknown words still load them all).
COMMAND_HOMES = {c.name: c.cli_module for c in COMMANDS}

# Every output of every command: (dest, kind) as forensics.io.outputs.check_outputs takes them ("file", "dir"
# replaced whole, "into" a directory written into, "run" added to in place). main() passes them, with every
# other path on the command line as the inputs, through that one rule before the command runs; a test keeps
# the table equal to the parsers' output flags.
OUTPUT_FLAGS = {c.name: c.outputs for c in COMMANDS if c.outputs}


def _also_written(command: str, dest: str, path: str) -> list[tuple[str, str, str]]:
    """(path, kind, what) a command writes beside an output: the summary's CSV and Parquet, a batch page's pair
    pages (the table's `beside`); the output's own path is not repeated."""
    import os

    stem = os.path.splitext(path)[0]
    return [(stem + suffix, kind, what) for suffix, kind, what in BY_NAME[command].beside.get(dest, ())
            if os.path.normcase(stem + suffix) != os.path.normcase(path)]


def check_outputs(parser, args) -> None:
    """Refuse, before the command runs, an output that would overwrite or change one of its inputs, or be another
    of its outputs (forensics.io.outputs.check_outputs)."""
    from forensics.io.outputs import check_outputs as check

    spell = flag_speller(parser)
    outputs, dests = [], set()
    for dest, kind in OUTPUT_FLAGS.get(args.command, ()):
        dests.add(dest)
        path = getattr(args, dest, None)
        if isinstance(path, str):
            flag = spell(dest) if dest != "run" else "RUN"
            outputs += [(path, kind, flag)] + [(p, k, f"{flag} ({what})")
                                               for p, k, what in _also_written(args.command, dest, path)]
    if not outputs:
        return
    inputs = []
    for dest, value in vars(args).items():
        if dest in dests or dest in _CLI_ONLY:
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, str):  # a path, or NAME=PATH (ingest's STAGE=FILE, capture's --input NAME=FILE)
                inputs += [item, item.partition("=")[2] or None]
    check(outputs, inputs)


class UsageError(InputError):
    """A bad command line: argparse's complaint, reduced to one line."""


class ArgumentParser(argparse.ArgumentParser):
    def error(self, message):  # argparse prints usage + message and exits; we want one line and exit 2
        raise UsageError(f"{self.prog}: {message} (see {self.prog} --help)")


# Attributes of the parsed arguments that are the CLI's own; every other one is a keyword of the command's
# report function (forensics.reports), named after its long flag.
_CLI_ONLY = frozenset({"json", "traceback", "width", "color", "handler", "command", "typed_by_cli"})


def options(args, *positional: str) -> dict:
    """The report function's keywords from the parsed arguments (all but the CLI's own and `positional`); a
    value an argument type read (the library's grammar) is marked parsed, so the report does not parse it again."""
    from forensics.core.options import Parsed

    typed = getattr(args, "typed_by_cli", ())
    return {k: Parsed(v) if k in typed and v is not None else v
            for k, v in vars(args).items() if k not in _CLI_ONLY and k not in positional}


def call_report(args, out) -> int:
    """The handler of a command whose parser sets none of its own: the table entry's report function, given the
    entry's positional arguments in order (`*name` spread) and every other parsed option as a keyword, with a
    progress bar when the entry names one; then shown."""
    from forensics import reports

    command = BY_NAME[args.command]
    positional, names = [], []
    for name in command.positional:
        names.append(name.lstrip("*"))
        value = getattr(args, names[-1])
        positional += list(value or ()) if name.startswith("*") else [value]
    function, keywords = getattr(reports, command.function), options(args, *names)
    if command.progress is None:
        return show(function(*positional, **keywords), args, out)
    from forensics.render.progress import progress_for

    with progress_for(out, args, **command.progress) as progress:
        report = function(*positional, progress=progress, **keywords)
    return show(report, args, out)


def show(report, args, out) -> int:
    """Print a report (warnings on stderr, then JSON or tables) and return its exit code."""
    for line in report.warnings:
        out.warn(line)
    if args.json:
        out.json(report.to_dict())
    else:
        out.print(*report.renderables())
    return report.exit_code


def flag_speller(parser: argparse.ArgumentParser | None):
    """How the CLI spells a library parameter: the option that sets it in `parser` (`max_shift` ->
    `--max-shift`; `output` -> `-o/--output`, or `-o SUMMARY.csv` with a metavar), else `--name-with-dashes`."""
    options = {}
    for action in getattr(parser, "_actions", ()):
        if action.option_strings and action.dest not in options:
            options[action.dest] = action.option_strings

    def spell(name: str, metavar: str = "") -> str:
        strings = options.get(name) or ["--" + name.replace("_", "-")]
        return f"{strings[0]} {metavar}" if metavar else "/".join(strings)

    return spell


def _command_parser(parser: argparse.ArgumentParser, command: str | None):
    for action in parser._subparsers._group_actions if parser._subparsers else ():
        if command in getattr(action, "choices", {}):
            return action.choices[command]
    return None


def common_parents() -> list[argparse.ArgumentParser]:
    """Flags every command takes: --json, --width, --color / --no-color (and --traceback, for bug reports)."""
    from forensics.render.console import PIPED_WIDTH  # the console's own default, said as it is

    common = ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print a JSON object instead of tables")
    common.add_argument("--traceback", action="store_true", help=argparse.SUPPRESS)
    common.add_argument("--width", type=_width, default=None, metavar="COLUMNS",
                        help=f"lay tables out this many columns wide (default: the terminal's width; "
                             f"{PIPED_WIDTH} when the output is piped or redirected)")
    common.add_argument("--color", dest="color", action="store_true", default=None,
                        help="colours even when the output is piped or redirected")
    common.add_argument("--no-color", dest="color", action="store_false",
                        help="no colours (default: colours on a terminal only)")
    return [common]


def _width(text: str) -> int:
    from forensics.cli.args import positive_int

    width = positive_int(text)
    if width < MIN_WIDTH:
        raise argparse.ArgumentTypeError(f"at least {MIN_WIDTH} columns, got {width}")
    return width


MIN_WIDTH = 40  # --width: narrower, a table has no room for its columns

DISTRIBUTION = "npu-forensics"  # the name on the package index (`pip install npu-forensics`); the package is forensics


def version() -> str:
    """`forensics 0.2.0 (npu-forensics)`: the installed distribution's version, from its metadata; from the
    package itself when it runs without being installed (PYTHONPATH=a clone)."""
    from importlib import metadata

    try:
        return f"forensics {metadata.version(DISTRIBUTION)} ({DISTRIBUTION})"
    except metadata.PackageNotFoundError:
        from forensics import __version__

        return f"forensics {__version__} (not installed as {DISTRIBUTION}: run from its source)"


class _Version(argparse.Action):
    """--version, worked out when asked for (importlib.metadata costs start-up time every command would pay)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):  # noqa: A002
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, _option_string=None):
        sys.stdout.write(version() + "\n")
        parser.exit()


class _Skipped:
    """Stands in for the parser of a command that is not being run: every call is accepted and ignored."""

    def __getattr__(self, name):
        return lambda *args, **kwargs: self


class _OnlyCommand:
    """`subparsers` that builds the parser of one command only: a group module registers all of its commands,
    and building the others' arguments is start-up time the command does not need (benchmarks/bench_startup.py)."""

    def __init__(self, subparsers, command: str):
        self._subparsers, self._command = subparsers, command

    def add_parser(self, name, **kwargs):
        if name == self._command or self._command in kwargs.get("aliases", ()):
            return self._subparsers.add_parser(name, **kwargs)
        return _Skipped()


def build_parser(command: str | None = None) -> ArgumentParser:
    """The parser with every command, or (when `command` is a known command) that command's alone."""
    from forensics.render.console import PIPED_WIDTH

    parser = ArgumentParser(
        prog="forensics",
        description="Differential debugging of NPU output buffers (Google Coral Edge TPU).",
        epilog="Exit codes: 0 same/ok, 1 differences found, 2 usage or input error. Every command takes --json "
               f"(one JSON document), --width COLUMNS (default: the terminal's width; {PIPED_WIDTH} when piped) "
               "and --no-color.",
    )
    parser.add_argument("--version", action=_Version, help="the version installed, and the distribution's name")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=ArgumentParser)
    parents = common_parents()
    if command in COMMAND_HOMES:
        importlib.import_module(COMMAND_HOMES[command]).register(_OnlyCommand(subparsers, command), parents)
    else:
        for name in COMMAND_MODULES:
            importlib.import_module(name).register(subparsers, parents)
    return parser


def _closest(word: str, choices) -> str:
    """`; did you mean X?` for the choice closest to a mistyped word, or nothing when none is close."""
    import difflib

    found = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {found[0]}?" if found else ""


def parse(argv: list[str]):
    """(parser, parsed arguments). A mistyped command or flag is one UsageError that names the closest command
    or flag, and the help of the command it was given to (`forensics diff --help`, not `forensics --help`)."""
    first = argv[0] if argv else None
    if first is not None and not first.startswith("-") and first not in BY_NAME:
        raise UsageError(f"forensics: unknown command {first!r}{_closest(first, BY_NAME)} (see forensics --help)")
    parser = build_parser(first)
    args, extras = parser.parse_known_args(argv)
    if extras:
        command = _command_parser(parser, args.command)
        where = command if command is not None else parser
        flags = [s for action in where._actions for s in action.option_strings if s.startswith("--")]
        unknown = next((word.partition("=")[0] for word in extras if word.startswith("-")), None)
        hint = _closest(unknown, flags) if unknown else ""
        raise UsageError(f"{where.prog}: unrecognized arguments: {' '.join(extras)}{hint} (see {where.prog} --help)")
    command = _command_parser(parser, args.command)
    args.typed_by_cli = frozenset(action.dest for action in (command._actions if command is not None else ())
                                  if action.option_strings and action.type is not None)
    return parser, args


class _notices_to:  # noqa: N801 - a context manager
    """Print the library's DumpNotice / DumpWarning (how a dump was read) as one stderr line each; silence
    numpy's RuntimeWarnings."""

    def __init__(self, out):
        self.out = out

    def __enter__(self):
        import warnings

        from forensics.io.dump import DumpNotice, DumpWarning

        self._catch = warnings.catch_warnings()
        self._catch.__enter__()
        warnings.simplefilter("always", DumpNotice)
        warnings.simplefilter("always", DumpWarning)
        # numpy's floating-point RuntimeWarnings (overflow, invalid value) on hostile values would reach
        # stderr before the one error line; results are checked for finiteness where it matters.
        warnings.simplefilter("ignore", RuntimeWarning)
        previous = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, DumpWarning):
                self.out.warn(str(message))
            elif issubclass(category, DumpNotice):
                self.out.error(f"forensics: note: {message}")
            else:
                previous(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        return self

    def __exit__(self, *exc):
        return self._catch.__exit__(*exc)


def main(argv=None, stdout=None, stderr=None) -> int:
    stdout = stdout if stdout is not None else sys.stdout
    stderr = stderr if stderr is not None else sys.stderr
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser, args = parse(argv)
    except UsageError as exc:
        from forensics.render.console import safe_line  # a flag's value is input: escaped, bounded

        stderr.write(safe_line(str(exc)) + "\n")
        return EXIT_ERROR
    except SystemExit as exc:  # --help / --version
        return int(exc.code or 0)
    if args.command is None:
        parser.print_help(stdout)
        return EXIT_ERROR
    if getattr(args, "handler", None) is None:  # the table's call: the entry's report function
        args.handler = call_report
    from forensics.render.console import Output  # after parsing: `--help` and usage errors need no renderer

    out = Output(stdout, stderr, width=args.width, color=args.color)
    try:
        with _notices_to(out):
            check_outputs(_command_parser(parser, args.command), args)
            return int(args.handler(args, out))
    except ForensicsError as exc:
        if args.traceback:
            import traceback

            traceback.print_exc(file=stderr)
        spell = flag_speller(_command_parser(parser, args.command))
        out.error(f"forensics {args.command}: error: {_swapped(args, argv, exc) or exc.worded(spell)}")
        return EXIT_ERROR
    except KeyboardInterrupt:
        out.error("forensics: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # `forensics diff ... | head`: the reader left, nothing more to say
        return _closed_stdout(stdout)
    except SystemExit as exc:  # rich ends with SystemExit(1) on a BrokenPipeError (Console.on_broken_pipe)
        if isinstance(exc.__context__, BrokenPipeError):
            return _closed_stdout(stdout)
        raise
    except Exception as exc:  # an internal bug: one line, no stack unless asked for
        if args.traceback:
            import traceback

            traceback.print_exc(file=stderr)
        out.error(f"forensics {args.command}: internal error (a bug, please report it with --traceback): "
                  f"{type(exc).__name__}: {exc}")
        return EXIT_BUG


_MODEL_DESTS = ("model", "check_model")  # the arguments that name a .tflite, wherever a command also takes dumps


def _is_tflite(path) -> bool:
    """A TFLite flatbuffer: its file identifier, bytes 4-7, is TFL3 (schema.fbs). Only a regular file is opened
    (a FIFO would wait for a writer)."""
    import os

    try:
        if not os.path.isfile(path):
            return False
        with open(path, "rb") as fh:
            return fh.read(8)[4:8] == b"TFL3"
    except (OSError, TypeError, ValueError):
        return False


def _swapped(args, argv: list[str], exc) -> str | None:
    """When the error is about the file given as the model, that file is no TFLite model and another file of the
    command line is one: the two were given in swapped order. Say so, with the command line that has them the
    other way round (the two words exchanged: it runs as printed), instead of the model reader's complaint about a
    file identifier."""
    import shlex

    given = {getattr(args, dest, None) for dest in _MODEL_DESTS} - {None}
    failed = getattr(exc, "path", None)
    if failed is None or failed not in given or _is_tflite(failed):
        return None
    models = [path for path in dict.fromkeys(_other_files(args)) if path != failed and _is_tflite(path)]
    if len(models) != 1 or argv.count(failed) != 1 or argv.count(models[0]) != 1:
        return None
    other = models[0]
    fixed = [other if word == failed else failed if word == other else word for word in argv]
    return (f"{failed} is not a TFLite model but {other} is: the model and the dump look swapped; the other way round: "
            f"forensics {shlex.join(fixed)}")


def _other_files(args) -> list[str]:
    """The existing files the command line names outside the model flags (a list option's every item), in the
    parsed arguments' order: where _swapped looks for the model given in the dump's place."""
    import os

    return [v for k, v in vars(args).items() if k not in _CLI_ONLY and k not in _MODEL_DESTS
            for v in (v if isinstance(v, (list, tuple)) else [v]) if isinstance(v, str) and os.path.isfile(v)]


def _closed_stdout(stream=None) -> int:
    """The reader of stdout left: point the process's stdout at the null device (the interpreter's last flush
    would complain again) and say so with EXIT_BROKEN_PIPE. A caller's own stream is left alone."""
    import os

    if stream is not None and stream is not sys.stdout:
        return EXIT_BROKEN_PIPE
    try:
        sys.stdout.flush()
    except (OSError, ValueError, AttributeError):
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # not a file descriptor (a test's stream)
        pass
    return EXIT_BROKEN_PIPE


def run() -> None:
    """Console-script entry point (and `python -m forensics`): main(), then a quick exit."""
    code = main()
    try:
        if sys.stdout is not None:
            sys.stdout.flush()  # what is still buffered (JSON) meets a closed pipe here
    except BrokenPipeError:
        code = _closed_stdout(sys.stdout)
    except (OSError, ValueError):
        pass
    if code == EXIT_BROKEN_PIPE:
        _end_by_sigpipe()
    _exit_quickly(code)
    sys.exit(code)


def _end_by_sigpipe() -> None:
    """End as `cat` or `cmp` do when their reader leaves: by SIGPIPE (status 141 in a shell), after the exit
    functions; where there is no SIGPIPE (Windows), with status 141."""
    import atexit
    import os
    import signal

    try:
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        pass
    atexit._run_exitfuncs()
    if hasattr(signal, "SIGPIPE"):
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGPIPE)
    os._exit(EXIT_BROKEN_PIPE)


def _exit_quickly(code: int) -> None:
    """End the process without the interpreter's teardown, when nothing can be lost by it.

    Why: tearing down numpy, rich and every module costs ~50-80 ms of a command that took 0.2-0.5 s (measured:
    benchmarks/bench_core.py, `forensics --help` and `crc`). Everything a command writes is flushed or closed
    by then (outputs are written atomically), the exit functions still run (atexit: logging, Dask clusters),
    and a program with a non-daemon thread still running, or a stream that cannot be flushed, takes the
    ordinary exit instead. Returns only in those cases."""
    import atexit
    import os
    import threading

    if any(t is not threading.main_thread() and t.is_alive() and not t.daemon for t in threading.enumerate()):
        return
    try:
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):  # a closed pipe or stream: let the interpreter deal with it as usual
        return
    atexit._run_exitfuncs()
    try:
        for stream in (sys.stdout, sys.stderr):  # what the exit functions printed
            if stream is not None:
                stream.flush()
    except (OSError, ValueError):
        pass
    os._exit(code)
