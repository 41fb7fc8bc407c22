"""The look shared by every table: compact rich tables and one-line `VERDICT | message` lines."""

from __future__ import annotations

from rich import box
from rich.table import Table
from rich.text import Text

# Green for "the same / fine", red for "different / found", yellow for "look here", dim for "not compared".
VERDICT_STYLES = {
    "MATCH": "bold green", "IDENTICAL": "bold green", "OK": "bold green", "PASSED": "bold green",
    "CLEAN": "bold green", "WITHIN TOLERANCE": "bold green",
    "EXPLAINED": "bold red", "PARTLY EXPLAINED": "bold red", "UNEXPLAINED": "bold red",
    "DIFFER": "bold red", "FAILED": "bold red", "FOUND": "bold red", "MISMATCH": "bold red",
    "WARNING": "bold yellow", "CHANGED": "bold yellow", "MISSING": "bold yellow", "ERROR": "bold yellow",
    "ONLY_A": "dim", "ONLY_B": "dim",
}


def table(*columns, title=None) -> Table:
    """A borderless table with a rule under the header; a column is a name or (name, justify)."""
    out = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False, show_edge=False)
    for col in columns:
        if isinstance(col, tuple):
            out.add_column(col[0], justify=col[1])
        else:
            out.add_column(col)
    return out


def verdict(kind: str, message: str) -> Text:
    """`MATCH | 2 files, 307,200 bytes each`: the one line a reader looks at first."""
    text = Text()
    text.append(kind, style=VERDICT_STYLES.get(kind, "bold"))
    text.append(f" | {message}")
    return text


def wrote(path) -> str:
    """`wrote PATH (N bytes)`: what every command that writes a file says (a directory: its files' total)."""
    import os

    path = os.fspath(path)
    try:
        if os.path.isdir(path):
            sizes = [os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs]
            return f"wrote {path} ({len(sizes)} files, {sum(sizes):,} bytes)"
        return f"wrote {path} ({os.path.getsize(path):,} bytes)"
    except OSError:
        return f"wrote {path}"
