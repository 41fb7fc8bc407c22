"""Where output goes: one `Output` per CLI call, with a stdout console, a stderr console and JSON."""

from __future__ import annotations

import math
import re
import sys

# Characters a terminal acts on rather than shows: C0 controls but tab and line feed, DEL, the C1 controls (0x9b is
# a one-byte CSI on some terminals), and the Unicode line separators and bidirectional overrides (which reorder
# what follows). Text from input (file names, manifest strings, tensor names, labels, log lines) may hold them.
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
PIPED_WIDTH = 120  # columns of tables written to a pipe or a file (no terminal to ask); --width overrides it
MAX_LINE = 1000  # an error line longer than this (a 5,000-digit flag echoed) keeps its start and its end


def _escaped(match) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def escape_controls(text: str) -> str:
    """`text` with every control character spelled as `\\xNN` / `\\uNNNN`: nothing from input acts on the
    terminal. Idempotent (the spelling is printable), and free for text without controls."""
    return _CONTROL.sub(_escaped, text) if _CONTROL.search(text) else text


def safe_line(text: str) -> str:
    """One line for stderr: line breaks become spaces, control characters are escaped, and a line longer than
    MAX_LINE keeps its first and last characters around a note of how many were cut."""
    text = escape_controls(text.rstrip("\n").replace("\r\n", " ").replace("\n", " "))
    if len(text) > MAX_LINE:
        head, tail = MAX_LINE * 2 // 3, MAX_LINE // 3
        text = f"{text[:head]} ...[{len(text) - head - tail:,} characters cut]... {text[-tail:]}"
    return text


def _json_default(obj):
    try:
        import numpy as np

        if isinstance(obj, np.integer):
            return int(obj)
        if isinstance(obj, np.floating):
            return float(obj) if np.isfinite(obj) else None
        if isinstance(obj, np.bool_):
            return bool(obj)
        if isinstance(obj, np.ndarray):
            return obj.tolist()
    except ImportError:  # pragma: no cover - numpy is a core dependency
        pass
    if isinstance(obj, (set, frozenset, tuple)):
        return list(obj)
    if hasattr(obj, "to_dict"):
        return obj.to_dict()
    raise TypeError(f"not JSON serialisable: {type(obj).__name__}")


def _finite(obj):
    """JSON has no NaN/Infinity: write them as null so every consumer can parse the output."""
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    if isinstance(obj, dict):
        return {k: _finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_finite(v) for v in obj]
    return obj


def to_json(data, *, pretty: bool = True) -> str:
    """JSON text; `pretty=False` is one compact line, which json's C encoder writes (indent forces the slow
    pure-Python one, seconds for a 10^5-row document). NaN and infinities become null; the document is
    walked for them only when the encoder finds one, so the common case stays in C."""
    import json  # here: `--help`, which reads this module's PIPED_WIDTH, needs no JSON

    options = {"indent": 2} if pretty else {"separators": (",", ":")}
    try:
        text = json.dumps(data, default=_json_default, allow_nan=False, **options)
    except ValueError:  # "Out of range float values are not JSON compliant"
        text = json.dumps(_finite(data), default=_json_default, allow_nan=False, **options)
    return text + "\n"


# What a legacy code page (cp1252, cp437, ascii) cannot show, spelled in ASCII: block shades keep their
# order of darkness, box drawing becomes - | +, typography its ASCII twin. Anything else left becomes '?'.
ASCII_FALLBACK = str.maketrans({
    "█": "#", "▓": "%", "▒": "+", "░": ":", "▀": "^", "▄": "_", "▌": "[", "▐": "]", "·": ".",
    "─": "-", "━": "-", "│": "|", "┃": "|", "┌": "+", "┐": "+", "└": "+", "┘": "+", "├": "+", "┤": "+",
    "┬": "+", "┴": "+", "┼": "+", "╭": "+", "╮": "+", "╰": "+", "╯": "+", "═": "=", "║": "|",
    "…": "...", "—": "--", "–": "-", "−": "-", "≥": ">=", "≤": "<=", "±": "+/-", "→": "->", "←": "<-",
    "×": "x", "µ": "u", "°": "deg", "✓": "ok", "✗": "x",
})


def stream_encoding(stream) -> str:
    return (getattr(stream, "encoding", None) or "utf-8").lower().replace("_", "-")


def is_unicode(stream) -> bool:
    return stream_encoding(stream).startswith(("utf", "cp65001"))


class SafeStream:
    """A text stream that never raises UnicodeEncodeError: on a legacy encoding, characters it cannot
    encode fall back to ASCII (ASCII_FALLBACK, then '?'). Everything else is passed through."""

    def __init__(self, stream):
        self._stream = stream
        self.encoding = getattr(stream, "encoding", None) or "utf-8"

    def write(self, text: str) -> int:
        try:
            text.encode(self.encoding)
        except UnicodeEncodeError:
            text = text.translate(ASCII_FALLBACK).encode(self.encoding, errors="replace").decode(self.encoding)
        except LookupError:  # an encoding Python does not know: ASCII is always safe
            text = text.translate(ASCII_FALLBACK).encode("ascii", errors="replace").decode("ascii")
        return self._stream.write(text)

    def __getattr__(self, name):
        return getattr(self._stream, name)


def safe_stream(stream):
    return stream if stream is None or is_unicode(stream) or isinstance(stream, SafeStream) else SafeStream(stream)


def safe_console_options(stream) -> dict:
    """Console keywords for a stream: on a legacy encoding, ASCII boxes (rich substitutes them when the
    console's encoding is not UTF) and no emoji."""
    return {"emoji": False, "safe_box": True}


class Output:
    """Destinations for one command: `print()` renderables to stdout, `error()` one line to stderr.

    Everything printed passes through one escape of control characters (escape_controls): tables and text
    through the console (_console_class), plain lines through `lines()`, error lines through `error()`.
    """

    def __init__(self, stdout=None, stderr=None, *, width: int | None = None, color: bool | None = None):
        self.stdout = safe_stream(stdout if stdout is not None else sys.stdout)
        self.stderr = safe_stream(stderr if stderr is not None else sys.stderr)
        self.width = width
        self.color = color
        self._console = None

    @property
    def console(self):
        if self._console is None:
            is_tty = hasattr(self.stdout, "isatty") and self.stdout.isatty()
            color = is_tty if self.color is None else self.color
            self._console = make_console(self.stdout, width=self.width or (None if is_tty else PIPED_WIDTH),
                                         color_system="auto" if color else None,
                                         force_terminal=bool(color) if self.color is not None else None)
        return self._console

    def print(self, *renderables) -> None:
        plain = self._plain_lines(renderables)
        if plain is not None:
            self.stdout.write("".join(line + "\n" for line in plain))
            return
        print_all(self.console, renderables)

    def _plain_lines(self, renderables) -> list[str] | None:
        """The renderables as the plain text rich would write, when they are lines only (forensics.render.line)
        going where no colour is drawn, each one printable ASCII that fits the width: rich is then not needed
        (a third of `diff`'s start-up: benchmarks/bench_startup.py). None for anything else, which rich draws."""
        if self._console is not None or not renderables:
            return None
        from forensics.render.line import Line

        is_tty = hasattr(self.stdout, "isatty") and self.stdout.isatty()
        if (self.color if self.color is not None else is_tty) or (is_tty and self.width is None):
            return None  # colour, or a terminal whose width only rich asks for
        width = self.width or PIPED_WIDTH
        out = []
        for renderable in renderables:
            if type(renderable) is not Line:  # a Paste is printed whole (soft-wrapped): rich's way
                return None
            text = escape_controls(renderable.plain)
            # what rich writes unchanged: no wrapping, no tab expansion, no cell widths other than one
            if len(text) > width or not (text.isascii() and text.isprintable()) or text != text.rstrip():
                return None
            out.append(text)
        return out

    def lines(self, lines) -> None:
        """Plain lines to stdout, never wrapped (they are compared with a driver's log line by line)."""
        self.stdout.write("".join(escape_controls(line) + "\n" for line in lines))

    def json(self, data) -> None:
        """Indented for a person at a terminal; one compact line for a pipe or a file (scripts)."""
        is_tty = hasattr(self.stdout, "isatty") and self.stdout.isatty()
        self.stdout.write(to_json(data, pretty=is_tty))

    def error(self, line: str) -> None:
        self.stderr.write(safe_line(line) + "\n")

    def warn(self, line: str) -> None:
        self.error(f"forensics: warning: {line}")


def make_console(file, **options):
    """The one Console every face prints through (the terminal's stdout and stderr, a notebook's HTML,
    `export_html`): everything escaped (_console_class), no highlighting, no emoji, no wrapping of text it was
    not told to wrap, and never Jupyter's own display (rich would show a report a second time in a notebook,
    beside the HTML it is asked for). `options`: Console keywords (width, color_system, record, ...)."""
    defaults = {"highlight": False, "soft_wrap": False, "emoji": False, "force_jupyter": False}
    return _console_class()(file=file, **{**defaults, **options})


def print_all(console, renderables) -> None:
    """Print renderables one by one; a line to paste (forensics.render.line.Paste) whole, at any width, and a
    renderable whose lines already fit (forensics.render.buffers.Listing, 10^5 records) without rich cutting each
    line again: both say `whole_lines`."""
    for renderable in renderables:
        whole = getattr(renderable, "whole_lines", False)
        console.print(renderable, soft_wrap=True if whole else None)


def html_of(renderables, *, width: int = 120) -> str:
    """A report's tables as a self-contained HTML fragment (a notebook's `_repr_html_`), printed through the one
    console as the terminal prints them, in colour."""
    import io

    console = make_console(io.StringIO(), record=True, width=width, color_system="truecolor", force_terminal=True)
    print_all(console, renderables)
    return console.export_html(inline_styles=True)


_CONSOLE = None


def _console_class():
    """rich's Console, with every string it is given (render_str: table cells, measured after the escape) and
    every segment it renders (Text objects built elsewhere) escaped; control segments, rich's own styling, pass."""
    global _CONSOLE
    if _CONSOLE is None:
        from rich.console import Console
        from rich.segment import Segment

        class EscapingConsole(Console):
            def render_str(self, text, **kwargs):
                return super().render_str(escape_controls(text), **kwargs)

            def render(self, renderable, options=None):
                for segment in super().render(renderable, options):
                    text = segment.text
                    if not segment.control and _CONTROL.search(text):
                        segment = Segment(escape_controls(text), segment.style, segment.control)
                    yield segment

        _CONSOLE = EscapingConsole
    return _CONSOLE
