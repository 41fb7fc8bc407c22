"""One line of styled text that needs no rich until it is drawn: the verdict line, a note, a line to paste.

A command whose output is only such lines (`diff` of equal dumps: its verdict line) is written to a pipe or a
file as plain text without importing rich (forensics.render.console.Output.print): a third of a seed-size
command's start-up (benchmarks/bench_startup.py). On a terminal, in a table cell, in a notebook or in HTML, rich
draws it from `__rich__`, the same spans in the same styles."""

from __future__ import annotations

from forensics.core.verdict import Verdict

# Green for "the same / fine", red for "different / found", yellow for "look here", dim for "not compared".
# A verdict that exits 0 is green and one that exits 1 red, unless it is listed here; a stage's status that is
# no verdict (CHANGED after capture, a buffer in one run only) is styled by name.
_STYLES = {Verdict.WARNING: "bold yellow", Verdict.MISSING: "bold yellow", Verdict.ERROR: "bold yellow",
           Verdict.FOUND: "bold red", Verdict.NOT_FOUND: "bold yellow", Verdict.NONUNIFORM: "bold yellow",
           "CHANGED": "bold yellow", "ONLY_A": "dim", "ONLY_B": "dim"}
VERDICT_STYLES = {**{v: "bold green" if v.passed else "bold red" for v in Verdict}, **_STYLES}


class Line:
    """Text in spans of one style each (rich's Text, less everything a line of a report does not use):
    `Line("text", style="yellow")`, `.append(more, style=...)`, `.plain`."""

    __slots__ = ("spans", "style")
    whole_lines = False  # a Paste is printed whole at any width (forensics.render.console.print_all)

    def __init__(self, text: str = "", style: str | None = None):
        self.style = style  # the whole line's (rich: Text's own style), under the spans' own
        self.spans: list[tuple[str, str | None]] = [(text, None)] if text else []

    def append(self, text: str, style: str | None = None) -> "Line":
        self.spans.append((text, style))
        return self

    @property
    def plain(self) -> str:
        return "".join(text for text, _ in self.spans)

    def __str__(self) -> str:
        return self.plain

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.plain!r})"

    def __rich__(self):
        from rich.text import Text

        text = Text(style=self.style or "")
        for part, style in self.spans:
            text.append(part, style=style)
        return text


class Paste(Line):
    """A line to paste (a command, a `cd`): printed whole on its own line at any width, never wrapped or cut;
    a terminal folds it only on the screen, so that a copy of it is still the one line (forensics.render.console
    prints it soft-wrapped)."""

    whole_lines = True


def verdict(kind: str, message: str) -> Line:
    """`MATCH | 2 files, 307,200 bytes each`: the one line a reader looks at first."""
    return Line().append(kind, style=VERDICT_STYLES.get(kind, "bold")).append(f" | {message}")


def judgement_line(judgement) -> Line:
    """A result's one judgement as its verdict line (forensics.core.judgement.Judgement): printed, never re-derived."""
    return verdict(judgement.verdict, judgement.message)
