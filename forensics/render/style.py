"""The look shared by every table: compact rich tables (the verdict line and other lines: forensics.render.line)."""

from __future__ import annotations

# rich is imported where a table is drawn: a command whose output is verdict lines only is written without it
# (forensics.render.line)
from forensics.render.line import Paste


def table(*columns, title=None, overflow="fold", whole=()) -> Table:
    """A borderless table with a rule under the header; a column is a name or (name, justify). A cell too long
    for a narrow console folds onto the next line, never cut with an ellipsis (what a reader must read or paste
    is never lost); the columns named in `whole` (byte records such as `01 ff 80 80`) never break, the others
    fold around them."""
    from rich import box
    from rich.table import Table  # here: a one-line verdict (`diff` of equal dumps) needs no table

    out = Table(box=box.SIMPLE_HEAD, title=title, title_justify="left", pad_edge=False, show_edge=False)
    for col in columns:
        name, justify = col if isinstance(col, tuple) else (col, "left")
        out.add_column(name, justify=justify, overflow=overflow, no_wrap=name in whole)
    return out


def paste(command: str, *, prompt: str = "$ ") -> Paste:
    """`$ forensics anchors B --nonuniform` as a Paste: what a report suggests running, or the demo ran."""
    return Paste(prompt + command, style="bold")


def titled_table(title: str | None, *columns) -> Table:
    """`table` with a title (model graphs, link plans, register traces)."""
    return table(*columns, title=title)


class RowsTable:
    """`table(*columns, title=title)` holding plain-text `rows`, laid out without rich measuring every cell.

    A rich Table measures and wraps each cell (~0.3 ms a row: most of `anchors --nonuniform`'s time for its
    1,000 rows). When the widest cells fit the console, rich draws only the title and header (over one
    stand-in row of the widest widths) and the rows are padded here the way rich pads them, so the text is
    the same; otherwise (cells would wrap) the rich table is drawn as usual.
    """

    def __init__(self, *columns, rows, title=None):
        self.columns = columns
        self.rows = [tuple(row) for row in rows]
        self.title = title

    def rich_table(self) -> Table:
        out = table(*self.columns, title=self.title)
        for row in self.rows:
            out.add_row(*row)
        return out

    def __rich_console__(self, console, options):
        from rich.cells import cell_len
        from rich.segment import Segment

        names = [c[0] if isinstance(c, tuple) else c for c in self.columns]
        justify = [c[1] if isinstance(c, tuple) else "left" for c in self.columns]
        widths = [max([cell_len(name)] + [cell_len(row[i]) for row in self.rows]) for i, name in enumerate(names)]
        if not self.rows or sum(widths) + 3 * (len(widths) - 1) > options.max_width:
            yield self.rich_table()
            return
        head = table(*self.columns, title=self.title)
        head.add_row(*("x" * w for w in widths))
        lines = console.render_lines(head, options, pad=False, new_lines=False)
        for line in lines[:-1]:  # the title and header rows, without the stand-in row
            yield from line
            yield Segment.line()
        for row in self.rows:
            cells = []
            for k, (cell, width, how) in enumerate(zip(row, widths, justify)):
                room = width - cell_len(cell)
                if how == "right":
                    cell = " " * room + cell
                elif how == "center":
                    cell = " " * (room // 2) + cell + " " * (room - room // 2)
                else:
                    cell = cell + " " * room
                cells.append(cell)
            yield Segment("   ".join(cells))
            yield Segment.line()


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
